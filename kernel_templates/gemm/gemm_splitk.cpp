// Host side of gemm_splitk.cuh, the split-K epilogue the GEMM families share.
#include "gemm/gemm_families.h"
#include "ktune/gemm_problem.h"

namespace ktune {

std::string gemm_splitk_reduce_name(int slices) { return "gemm_splitk_reduce<" + std::to_string(slices) + ">"; }

size_t gemm_splitk_workspace_bytes(int slices, const GemmProblem& p) {
  if (slices <= 1) return 0;
  return size_t(slices) * size_t(p.m) * size_t(gemm_workspace_ld(p.n)) * sizeof(float);
}

void add_splitk_reduce(LaunchPlan& plan, const GemmProblem& p, int slices) {
  if (slices <= 1) return;
  LaunchStep reduce;
  reduce.kernel = 1; // kernels() names the reduction right after the main kernel
  reduce.grid[0] = ceil_div(p.m * int64_t(ceil_div(p.n, KTUNE_SPLITK_REDUCE_VEC)), 256); // __launch_bounds__(256)
  reduce.block[0] = 256;
  reduce.overlap_previous = true; // it waits for the main kernel itself (griddepcontrol.wait)
  plan.steps.push_back(reduce);
  plan.workspace_bytes = gemm_splitk_workspace_bytes(slices, p);
}

} // namespace ktune

namespace ktune {

// gemm_splitk16.cuh's reduction, writing a bf16 (F16 = 0) or fp16 (F16 = 1) C.
std::string gemm_splitk_reduce16_name(int slices, const GemmProblem& p) {
  return "gemm_splitk_reduce16<" + std::to_string(slices) + "," + (p.dtype == DType::f16 ? "1" : "0") + ">";
}

} // namespace ktune
