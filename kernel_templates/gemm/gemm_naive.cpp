// Descriptor of gemm_naive.cu.
#include "gemm/gemm_families.h"
#include "ktune/gemm_problem.h"

namespace ktune {

Family gemm_naive_family() {
  Family f("gemm_naive", "gemm/gemm_naive.cu");
  f.describe("one thread per element of C (ladder rung 1)")
      .param("BX", {8, 16, 32, 64}, "threads per block along N")
      .param("BY", {1, 2, 4, 8, 16, 32}, "threads per block along M")
      .restrict("block of 32 to max_threads_per_block threads", {"BX", "BY"},
                [](const Config& c, const GemmProblem&, const DeviceInfo& d) {
                  const int t = c["BX"] * c["BY"];
                  return t >= 32 && t <= d.max_threads_per_block;
                })
      .restrict("grid.y = ceil(M / BY) fits 65535", {"BY"},
                [](const Config& c, const GemmProblem& p, const DeviceInfo&) { return ceil_div(p.m, c["BY"]) <= 65535; })
      .kernels([](const Config& c, const GemmProblem& p) {
        return std::vector<std::string>{gemm_instance("gemm_naive", c, {"BX", "BY"}, p)};
      })
      .launch([](const Config& c, const GemmProblem& p) {
        LaunchStep s;
        s.grid[0] = ceil_div(p.n, c["BX"]);
        s.grid[1] = ceil_div(p.m, c["BY"]);
        s.block[0] = c["BX"];
        s.block[1] = c["BY"];
        return LaunchPlan{{s}, 0, {}};
      });
  return f;
}

} // namespace ktune
