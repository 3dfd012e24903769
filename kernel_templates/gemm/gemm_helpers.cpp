// The helpers every GEMM descriptor shares (declared in gemm_families.h): the layout template
// arguments, a kernel's name expression from its config, and grid arithmetic.
#include "gemm/gemm_families.h"
#include "ktune/gemm_problem.h"

namespace ktune {

std::string gemm_layout_args(const GemmProblem& p) {
  return std::string(p.a == Layout::col ? "1" : "0") + "," + (p.b == Layout::col ? "1" : "0");
}

std::string gemm_instance(const char* kernel, const Config& c, std::initializer_list<const char*> params, const GemmProblem& p) {
  std::string name = std::string(kernel) + "<";
  for (const char* prm : params) name += std::to_string(c[prm]) + ",";
  return name + gemm_layout_args(p) + ">";
}

unsigned ceil_div(int64_t a, int64_t b) { return static_cast<unsigned>((a + b - 1) / b); }

bool gemm_slices_reach_k(int64_t k, int64_t bk, int64_t slices) {
  const int64_t tiles = (k + bk - 1) / bk;
  return slices == 1 || (slices - 1) * ((tiles + slices - 1) / slices) < tiles;
}

} // namespace ktune
