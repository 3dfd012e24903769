// Descriptor of gemm_smem.cu.
#include "gemm/gemm_families.h"
#include "ktune/gemm_problem.h"

namespace ktune {

Family gemm_smem_family() {
  Family f("gemm_smem", "gemm/gemm_smem.cu");
  f.describe("square shared-memory tiles, one thread per element of C (ladder rung 2)")
      .param("TILE", {8, 16, 32}, "tile edge; the block is TILE x TILE threads")
      .restrict("TILE^2 threads fit a block", {"TILE"},
                [](const Config& c, const GemmProblem&, const DeviceInfo& d) {
                  return c["TILE"] * c["TILE"] <= d.max_threads_per_block;
                })
      .restrict("grid.y = ceil(M / TILE) fits 65535", {"TILE"},
                [](const Config& c, const GemmProblem& p, const DeviceInfo&) { return ceil_div(p.m, c["TILE"]) <= 65535; })
      .kernels([](const Config& c, const GemmProblem& p) {
        return std::vector<std::string>{gemm_instance("gemm_smem", c, {"TILE"}, p)};
      })
      .launch([](const Config& c, const GemmProblem& p) {
        LaunchStep s;
        s.grid[0] = ceil_div(p.n, c["TILE"]);
        s.grid[1] = ceil_div(p.m, c["TILE"]);
        s.block[0] = s.block[1] = c["TILE"];
        return LaunchPlan{{s}, 0, {}};
      });
  return f;
}

} // namespace ktune
