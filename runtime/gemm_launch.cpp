#include "runtime/gemm_launch.h"

#include <cstring>
#include <string>
#include <utility>

#include "ktune/error.h"
#include "ktune/gemm_problem.h"
#include "ktune/runtime.h"
#include "runtime/cuda_check.h"
#include "runtime/op_launcher.h"
#include "runtime/tensor_maps.h"

namespace ktune {
namespace {

static_assert(sizeof(KtuneTensorMap) == sizeof(CUtensorMap) && alignof(KtuneTensorMap) == alignof(CUtensorMap),
              "gemm_args.h's KtuneTensorMap must match cuda.h's CUtensorMap");

// The 2D tensor map of one operand (A or B) as a TMA step reads it: the contiguous dimension first
// (K, or M / N), leading-dimension stride, the box's contiguous extent swizzled (128 bytes: 64
// halves or 32 floats; 64 bytes: 16 floats), elements outside the operand read as zeros. Encoding
// is host-only work (no GPU call), cached per pointer set (encode_tensor_map).
KtuneTensorMap encode_operand(const void* ptr, long long ld, long long mn, long long k, const LaunchStep::TmaOperand& o,
                              const std::string& context, const char* which) {
  // The kernels' descriptors assume the box's contiguous bytes are one swizzle span.
  if ((o.elem_bytes != 2 && o.elem_bytes != 4) || (o.swizzle_bytes != 128 && o.swizzle_bytes != 64) || o.stacked < 1 ||
      o.box_inner * o.elem_bytes != o.swizzle_bytes)
    throw Error(context + ", " + which + ": unsupported TMA operand (" + std::to_string(o.elem_bytes) +
                "-byte elements, box of " + std::to_string(o.box_inner) + " along the contiguous dimension, " +
                std::to_string(o.swizzle_bytes) + "-byte swizzle, " + std::to_string(o.stacked) + " stacked copies)");
  mn *= o.stacked;
  TensorMapKey key;
  key.ptr = ptr;
  key.rank = 2;
  key.dims[0] = cuuint64_t(o.k_inner ? k : mn), key.dims[1] = cuuint64_t(o.k_inner ? mn : k);
  key.strides[0] = cuuint64_t(ld) * o.elem_bytes;
  key.box[0] = o.box_inner, key.box[1] = o.box_outer;
  key.type = o.elem_bytes == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_UINT16;
  key.swizzle = o.swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B;
  const CUtensorMap m = encode_tensor_map(key, [&] { return context + ", " + which; });
  KtuneTensorMap out;
  std::memcpy(&out, &m, sizeof out);
  return out;
}

// The TMA argument block of a step: with K = 0 nothing is loaded (the kernels' K loops are empty),
// so no map is encoded (a zero extent is not a valid tensor).
KtuneGemmTmaArgs tma_args(const LaunchStep& s, const KtuneGemmArgs& a, const std::string& context) {
  KtuneGemmTmaArgs t{};
  t.g = a;
  // A packed operand (LaunchStep::TmaOperand::packed_offset) is read from its workspace copy;
  // the true M, N, K stay the map's extents (M and N times the stacked copies), so the zero
  // padding is never needed (TMA fills zeros).
  auto source = [&](const void* ptr, long long ld, const LaunchStep::TmaOperand& o) {
    return o.packed_offset < 0 ? std::pair<const void*, long long>{ptr, ld}
                               : std::pair<const void*, long long>{reinterpret_cast<const char*>(a.workspace) + o.packed_offset, o.packed_ld};
  };
  // Every TMA step maps A and B; C only where the kernel stores it with TMA.
  const LaunchStep::TmaOperand* ma = s.tma_of(gemm_a);
  const LaunchStep::TmaOperand* mb = s.tma_of(gemm_b);
  if (!ma || !mb) throw Error(context + ": a TMA step without tensor maps of A and B");
  if (a.K > 0) {
    const auto [pa, lda] = source(a.A, a.lda, *ma);
    const auto [pb, ldb] = source(a.B, a.ldb, *mb);
    t.a = encode_operand(pa, lda, a.M, a.K, *ma, context, "tensor map of A");
    t.b = encode_operand(pb, ldb, a.N, a.K, *mb, context, "tensor map of B");
  }
  // C (row-major: N contiguous, M rows of ldc) for kernels that store it with TMA; needed with
  // K = 0 too (C = beta * C is then stored through it). A swapped step (LaunchStep::swap_ab) has
  // M and N swapped in a, but C is the caller's: its rows are a.N, its contiguous extent a.M.
  if (const LaunchStep::TmaOperand* mc = s.tma_of(gemm_c))
    t.c = s.swap_ab ? encode_operand(a.C, a.ldc, a.N, a.M, *mc, context, "tensor map of C")
                    : encode_operand(a.C, a.ldc, a.M, a.N, *mc, context, "tensor map of C");
  return t;
}

} // namespace

void launch_gemm(Module& m, const LaunchPlan& plan, const KtuneGemmArgs& args, CUstream stream) {
  if (args.M < 0 || args.N < 0 || args.K < 0)
    throw Error(m.context() + ": negative GEMM size M = " + std::to_string(args.M) + ", N = " + std::to_string(args.N) +
                ", K = " + std::to_string(args.K));
  // BLAS quick returns (reference SGEMM's): an empty C launches nothing, and nor does C = 1 * C,
  // which is all that is left when there is no product (alpha == 0 or K == 0) and beta == 1.
  // Both come before the workspace check: a launch that does nothing needs none.
  const bool no_product = args.alpha == 0.0f || args.K == 0;
  if (args.M == 0 || args.N == 0 || (no_product && args.beta == 1.0f)) return;
  if (plan.workspace_bytes && !args.workspace)
    throw Error(m.context() + ": the launch plan needs a " + std::to_string(plan.workspace_bytes) +
                "-byte workspace (KtuneGemmArgs::workspace) and none was given");
  KtuneGemmArgs a = args; // cuLaunchKernel copies the parameter out of this before returning
  if (no_product) {
    // BLAS reads neither A nor B when alpha == 0, so NaN or Inf there (or a null pointer) cannot
    // reach C, whereas the plan as built would compute 0 * (A * B) and turn a NaN product into a
    // NaN result. K is a run-time argument of every kernel, so the same plan runs with K = 0: no
    // step then loads A or B (every K loop, cp.async prologue and split-K slice is bounded by K;
    // gemm_pack packs nothing and the main kernel reads no packed tile), the accumulators stay
    // 0, split-K slices and their reduce add zeros, and the epilogues write 0 + beta * C, which
    // is beta * C exactly (zeros, C unread, when beta == 0). alpha = 0 as well, because with
    // K == 0 an infinite or NaN alpha would give alpha * 0 = NaN where BLAS gives beta * C.
    // tests/kernels/blas_semantics_gpu_test.cpp checks this for every family.
    a.K = 0;
    a.alpha = 0.0f;
  }
  KtuneGemmArgs swapped = a; // for steps that compute C^T = B^T A^T (LaunchStep::swap_ab)
  std::swap(swapped.A, swapped.B), std::swap(swapped.lda, swapped.ldb), std::swap(swapped.M, swapped.N);
  for (const auto& s : plan.steps) {
    KtuneGemmArgs& sa = s.swap_ab ? swapped : a;
    void* params[] = {&sa};
    if (s.tma()) {
      KtuneGemmTmaArgs t = tma_args(s, sa, m.context());
      void* tma_params[] = {&t};
      m.launch(s, stream, tma_params);
    } else {
      m.launch(s, stream, params);
    }
  }
}

// GEMM: A, B, C as gemm_ex takes them, alpha and beta from the problem's scalars.
class GemmLauncher final : public OpLauncher {
 public:
  void run(Runtime& rt, const Problem& p, const std::vector<void*>& buffers, CUstream stream) const override {
    check_buffer_count(p, buffers, 3, "A, B, C");
    const GemmProblem g = GemmProblem::from(p);
    rt.gemm_ex(g, buffers[0], buffers[1], buffers[2], g.alpha, g.beta, stream);
  }
};

const OpLauncher& gemm_launcher() {
  static const GemmLauncher l;
  return l;
}

} // namespace ktune
