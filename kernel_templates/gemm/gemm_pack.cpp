// Host side of gemm_pack.cuh (f32) and gemm_pack16.cuh (bf16 / f16): the packing kernel's name,
// the workspace its copies take (after the split-K slices) and its launch step, which runs before
// the main kernel. The two kernels pack the same storage; the element size of the problem's dtype
// picks the kernel, the bytes, the row padding and the copy width.
#include <algorithm>

#include "gemm/gemm_families.h"
#include "ktune/error.h"
#include "ktune/gemm_problem.h"

namespace ktune {
namespace {

int64_t round_up(int64_t x, int64_t q) { return (x + q - 1) / q * q; }

bool half_elements(const GemmProblem& p) { return element_bytes(p.dtype) == 2; }

struct Packed { // the storage of A' and B', as PackedLayout (gemm_pack.cuh / gemm_pack16.cuh) computes it
  int64_t a_rows, a_ld, b_rows, b_ld;
};

Packed packed(const GemmPack& t, const GemmProblem& p) {
  const int64_t mp = round_up(p.m, t.mq), np = round_up(p.n, t.nq), kp = round_up(p.k, t.kq);
  const bool a_col = p.a == Layout::col, b_col = p.b == Layout::col;
  Packed q{a_col ? kp : mp, a_col ? mp : kp, b_col ? np : kp, b_col ? kp : np};
  // Half rows are padded to a multiple of 8 (16 bytes; the tile quanta already are: asserted by
  // the template).
  if (half_elements(p)) q.a_ld = round_up(q.a_ld, 8), q.b_ld = round_up(q.b_ld, 8);
  return q;
}

} // namespace

std::string gemm_pack_name(const GemmPack& t, const GemmProblem& p) {
  return std::string(half_elements(p) ? "gemm_pack16<" : "gemm_pack<") + std::to_string(t.mq) + "," + std::to_string(t.nq) +
         "," + std::to_string(t.kq) + "," + std::to_string(t.slices > 1 ? t.slices : 0) + "," + gemm_layout_args(p) + ">";
}

size_t gemm_pack_workspace_bytes(const GemmPack& t, const GemmProblem& p) {
  const Packed q = packed(t, p);
  return size_t(q.a_rows * q.a_ld + q.b_rows * q.b_ld) * size_t(element_bytes(p.dtype));
}

GemmPackedOperands gemm_packed_operands(const GemmPack& t, const GemmProblem& p, size_t base) {
  const Packed q = packed(t, p);
  GemmPackedOperands o;
  o.a_offset = base;
  o.a_ld = q.a_ld;
  o.b_offset = base + size_t(q.a_rows * q.a_ld) * size_t(element_bytes(p.dtype));
  o.b_ld = q.b_ld;
  return o;
}

void add_pack(LaunchPlan& plan, const GemmProblem& p, const GemmPack& t, int kernel) {
  const Packed q = packed(t, p);
  LaunchStep pack;
  pack.kernel = kernel;
  // pack_chunks: 1024 16-byte chunks (4 floats or 8 halves) a block of 256 threads, over the larger
  // operand (the other one's blocks past its end return at once). At least one block: with K = 0
  // there may be nothing to pack. Its walk counts chunks in 32 bits.
  const int64_t chunk = 16 / element_bytes(p.dtype);
  const int64_t chunks = std::max(q.a_rows * q.a_ld, q.b_rows * q.b_ld) / chunk;
  if (chunks >= (int64_t(1) << 31))
    throw Error("gemm_pack: " + std::to_string(chunks) + " 16-byte chunks in one packed operand of " + p.key() +
                " (at most 2^31)");
  pack.grid[0] = std::max(1u, ceil_div(chunks, 1024));
  pack.grid[2] = 2; // A, then B
  pack.block[0] = 256;
  plan.steps.insert(plan.steps.begin(), pack);
  plan.workspace_bytes += gemm_pack_workspace_bytes(t, p); // after the split-K slices the plan already sized
}

} // namespace ktune
