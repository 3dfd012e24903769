#include "runtime/gemm_launch.h"

#include <string>

#include "ktune/error.h"

namespace ktune {

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
  void* params[] = {&a};
  for (const auto& s : plan.steps) m.launch(static_cast<size_t>(s.kernel), s.grid, s.block, s.dynamic_smem, stream, params, s.overlap_previous);
}

} // namespace ktune
