// Descriptors of the built-in GEMM families (host code; the .cu files beside them are the kernels).
#pragma once
#include <initializer_list>

#include "gemm/gemm_args.h"
#include "ktune/family.h"
#include "ktune/gemm_problem.h"

namespace ktune {

Family gemm_naive_family();
Family gemm_smem_family();
Family gemm_simt_family();
Family gemm_skinny_family();
Family gemm_tf32x3_family();
Family gemm_tc16_family();
Family gemm_skinny16_family();
Family gemm_wgmma_family();
Family gemm_wgmma_tf32x3_family();

// Template arguments that come from the problem, not the config: "A_COL,B_COL".
std::string gemm_layout_args(const GemmProblem& p);
// The name expression of a GEMM kernel template: the config's values of `params`, in the
// template's parameter order, then the layout arguments, e.g. "gemm_smem<32,0,1>".
std::string gemm_instance(const char* kernel, const Config& c, std::initializer_list<const char*> params, const GemmProblem& p);
// Leading dimension of each split-K workspace slice: N rounded up to 4 floats, so that vector
// stores into the workspace are 16-byte aligned whatever N is. Launchers set args.ws_ld to it.
inline long long gemm_workspace_ld(long long n) { return (n + 3) / 4 * 4; }
// The argument block for p over the given device pointers (workspace may be null when the
// launch plan needs none): leading dimensions, sizes, alpha and beta all come from p.
inline KtuneGemmArgs gemm_args(const GemmProblem& p, const float* A, const float* B, float* C, float* workspace) {
  KtuneGemmArgs a{};
  a.A = A, a.B = B, a.C = C, a.workspace = workspace;
  a.lda = p.eff_lda(), a.ldb = p.eff_ldb(), a.ldc = p.eff_ldc();
  a.ws_ld = gemm_workspace_ld(p.n);
  a.M = int(p.m), a.N = int(p.n), a.K = int(p.k);
  a.alpha = p.alpha, a.beta = p.beta;
  return a;
}
// ceil(a / b) for positive sizes, as the unsigned a grid dimension needs.
unsigned ceil_div(int64_t a, int64_t b);
// Split-K as the kernels cut it (k_slice in gemm_wgmma_common.cuh, gemm_tc16's slices): slice z
// takes BK-deep K tiles [z * per, (z + 1) * per), per = ceil(tiles / slices). True when every
// slice gets at least one tile, i.e. no block computes zeros only.
bool gemm_slices_reach_k(int64_t k, int64_t bk, int64_t slices);

// The split-K epilogue of gemm_splitk.cuh, shared by the families that cut K across blocks:
// the name expression of gemm_splitk_reduce over `slices` workspace slices, the workspace those
// need (0 for one slice: the main kernel then writes C itself), and its launch step, appended to
// a plan whose main kernel is already in it (nothing for one slice); the step may overlap the
// main kernel's end (programmatic dependent launch).
std::string gemm_splitk_reduce_name(int slices);
// Configs whose workspace would exceed this are not worth a tuning slot (a constraint of each family;
// gemm_wgmma_tf32x3's split operands, twice A and B, have their own 2 GiB cap on top).
constexpr size_t kGemmMaxWorkspace = size_t(512) << 20;
size_t gemm_splitk_workspace_bytes(int slices, const GemmProblem& p);
// The reduction is kernel 1 of the family's kernels() (named right after the main kernel).
void add_splitk_reduce(LaunchPlan& plan, const GemmProblem& p, int slices);

// Operand packing of gemm_pack.cuh (f32) or gemm_pack16.cuh (bf16 / f16: halves, each storage row
// padded to a multiple of 8), by the problem's dtype, for a main kernel with mq x nq tiles of C
// that takes K kq at a time (BK times its K slices) and cuts K into `slices` split-K slices (1: none).
struct GemmPack {
  int mq, nq, kq, slices;
};
std::string gemm_pack_name(const GemmPack& t, const GemmProblem& p);
size_t gemm_pack_workspace_bytes(const GemmPack& t, const GemmProblem& p);
// Puts the packing step (kernel index `kernel` of kernels()) first in a plan that holds the main
// kernel and any reduction (add_splitk_reduce already applied), and adds the packed copies to
// the plan's workspace, after its split-K slices.
void add_pack(LaunchPlan& plan, const GemmProblem& p, const GemmPack& t, int kernel);
// Where add_pack's copies lie when they start `base` bytes into the workspace (the plan's
// workspace_bytes before add_pack): byte offsets and leading dimensions (elements) of A' and B'.
struct GemmPackedOperands {
  size_t a_offset = 0, b_offset = 0;
  int64_t a_ld = 0, b_ld = 0;
};
GemmPackedOperands gemm_packed_operands(const GemmPack& t, const GemmProblem& p, size_t base);

// The half-precision (bf16 / fp16) twin of the split-K reduction, for families whose C is 16-bit
// (gemm_splitk16.cuh; the FP32 one is unchanged): launched by add_splitk_reduce (same geometry
// and FP32 workspace slices) under the name this gives.
std::string gemm_splitk_reduce16_name(int slices, const GemmProblem& p); // F16 from p.dtype

// The block-tiled families (gemm_simt, gemm_tf32x3): BM x BN tiles of C on a 1D grid (rasterized
// in the kernel), K in BK-deep steps cut into SPLITK slices (blockIdx.z), optionally packed
// operands. Their kernel lists and launch plans differ only in the main kernel.
struct GemmTiling {
  int bm, bn, bk, splitk;
  bool pack;
};
GemmPack gemm_pack_tiles(const GemmTiling& t); // the packing a tiling needs: whole tiles, K to BK * SPLITK
size_t gemm_tiled_workspace_bytes(const GemmTiling& t, const GemmProblem& p);
// The main kernel's name expression, then the split-K reduction's and the packing kernel's where used.
std::vector<std::string> gemm_tiled_kernels(std::string main, const GemmTiling& t, const GemmProblem& p);
// The main kernel's step (threads, dynamic shared memory), the reduction after it, the packing before it.
LaunchPlan gemm_tiled_plan(const GemmTiling& t, const GemmProblem& p, unsigned threads, size_t dynamic_smem);

} // namespace ktune
