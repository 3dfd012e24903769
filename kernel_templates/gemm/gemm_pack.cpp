// Host side of gemm_pack.cuh: the packing kernel's name, the workspace its copies take (after
// the split-K slices) and its launch step, which runs before the main kernel.
#include <algorithm>

#include "gemm/gemm_families.h"

namespace ktune {
namespace {

int64_t round_up(int64_t x, int64_t q) { return (x + q - 1) / q * q; }

struct Packed { // the storage of A' and B', as PackedLayout (gemm_pack.cuh) computes it
  int64_t a_rows, a_ld, b_rows, b_ld;
};

Packed packed(const GemmPack& t, const GemmProblem& p) {
  const int64_t mp = round_up(p.m, t.mq), np = round_up(p.n, t.nq), kp = round_up(p.k, t.kq);
  const bool a_col = p.a == Layout::col, b_col = p.b == Layout::col;
  return {a_col ? kp : mp, a_col ? mp : kp, b_col ? np : kp, b_col ? kp : np};
}

} // namespace

std::string gemm_pack_name(const GemmPack& t, const GemmProblem& p) {
  return "gemm_pack<" + std::to_string(t.mq) + "," + std::to_string(t.nq) + "," + std::to_string(t.kq) + "," +
         std::to_string(t.slices > 1 ? t.slices : 0) + "," + gemm_layout_args(p) + ">";
}

size_t gemm_pack_workspace_bytes(const GemmPack& t, const GemmProblem& p) {
  const Packed q = packed(t, p);
  return size_t(q.a_rows * q.a_ld + q.b_rows * q.b_ld) * sizeof(float);
}

void add_pack(LaunchPlan& plan, const GemmProblem& p, const GemmPack& t, int kernel) {
  const Packed q = packed(t, p);
  LaunchStep pack;
  pack.kernel = kernel;
  // One float4 per thread (__launch_bounds__(256)); the kernel loops over rows past grid.y's
  // limit. At least one block each way: with K = 0 there may be nothing to pack.
  pack.grid[0] = std::max(1u, ceil_div(std::max(q.a_ld, q.b_ld) / 4, 256));
  pack.grid[1] = static_cast<unsigned>(std::clamp<int64_t>(std::max(q.a_rows, q.b_rows), 1, 65535));
  pack.grid[2] = 2; // A, then B
  pack.block[0] = 256;
  plan.steps.insert(plan.steps.begin(), pack);
  plan.workspace_bytes += gemm_pack_workspace_bytes(t, p); // after the split-K slices the plan already sized
}

} // namespace ktune

// Half-precision packing (gemm_pack16.cuh): the same storage, 2-byte elements, rows padded to a
// multiple of 8 halves (the tile quanta already are: asserted by the template).
namespace ktune {
namespace {

Packed packed16(const GemmPack& t, const GemmProblem& p) {
  Packed q = packed(t, p);
  q.a_ld = round_up(q.a_ld, 8), q.b_ld = round_up(q.b_ld, 8);
  return q;
}

} // namespace

std::string gemm_pack16_name(const GemmPack& t, const GemmProblem& p) {
  return "gemm_pack16<" + std::to_string(t.mq) + "," + std::to_string(t.nq) + "," + std::to_string(t.kq) + "," +
         std::to_string(t.slices > 1 ? t.slices : 0) + "," + gemm_layout_args(p) + ">";
}

size_t gemm_pack16_workspace_bytes(const GemmPack& t, const GemmProblem& p) {
  const Packed q = packed16(t, p);
  return size_t(q.a_rows * q.a_ld + q.b_rows * q.b_ld) * 2;
}

void add_pack16(LaunchPlan& plan, const GemmProblem& p, const GemmPack& t, int kernel) {
  const Packed q = packed16(t, p);
  LaunchStep pack;
  pack.kernel = kernel;
  // One 16-byte chunk (8 halves) per thread (__launch_bounds__(256)); the kernel loops over rows
  // past grid.y's limit. At least one block each way: with K = 0 there may be nothing to pack.
  pack.grid[0] = std::max(1u, ceil_div(std::max(q.a_ld, q.b_ld) / 8, 256));
  pack.grid[1] = static_cast<unsigned>(std::clamp<int64_t>(std::max(q.a_rows, q.b_rows), 1, 65535));
  pack.grid[2] = 2; // A, then B
  pack.block[0] = 256;
  plan.steps.insert(plan.steps.begin(), pack);
  plan.workspace_bytes += gemm_pack16_workspace_bytes(t, p); // after the split-K slices the plan already sized
}

} // namespace ktune
