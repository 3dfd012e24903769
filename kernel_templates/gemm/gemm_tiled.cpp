// Host side shared by the block-tiled GEMM families (gemm_families.h: GemmTiling).
#include "gemm/gemm_families.h"
#include "ktune/gemm_problem.h"

namespace ktune {

GemmPack gemm_pack_tiles(const GemmTiling& t) { return {t.bm, t.bn, t.bk * t.splitk, t.splitk}; }

size_t gemm_tiled_workspace_bytes(const GemmTiling& t, const GemmProblem& p) {
  return gemm_splitk_workspace_bytes(t.splitk, p) + (t.pack ? gemm_pack_workspace_bytes(gemm_pack_tiles(t), p) : 0);
}

std::vector<std::string> gemm_tiled_kernels(std::string main, const GemmTiling& t, const GemmProblem& p) {
  std::vector<std::string> names{std::move(main)};
  if (t.splitk > 1) names.push_back(gemm_splitk_reduce_name(t.splitk));
  if (t.pack) names.push_back(gemm_pack_name(gemm_pack_tiles(t), p));
  return names;
}

LaunchPlan gemm_tiled_plan(const GemmTiling& t, const GemmProblem& p, unsigned threads, size_t dynamic_smem) {
  LaunchPlan plan;
  LaunchStep main;
  main.grid[0] = ceil_div(p.m, t.bm) * ceil_div(p.n, t.bn);
  main.grid[2] = static_cast<unsigned>(t.splitk);
  main.block[0] = threads;
  main.dynamic_smem = static_cast<unsigned>(dynamic_smem);
  plan.steps.push_back(main);
  add_splitk_reduce(plan, p, t.splitk);
  if (t.pack) add_pack(plan, p, gemm_pack_tiles(t), static_cast<int>(plan.steps.size()));
  return plan;
}

} // namespace ktune
