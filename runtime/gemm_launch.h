// Launching a GEMM family's kernels: the steps of a launch plan over one argument block, with
// BLAS's quick returns. The one place the tuner's worker, the runtime, the bench tools and the
// tests launch a GEMM through (the generic module plumbing is runtime/module.h).
#pragma once
#include <cuda.h>

#include "gemm/gemm_args.h"
#include "ktune/family.h"
#include "runtime/module.h"

namespace ktune {

// Runs every step of a GEMM launch plan on stream. args.workspace must hold plan.workspace_bytes.
// BLAS semantics whatever the plan: M == 0 or N == 0 launches nothing; alpha == 0 or K == 0 gives
// C = beta * C without reading A or B (they may hold NaN or be null), launching nothing when
// beta == 1 and never reading C when beta == 0. Negative sizes throw Error. A step with
// LaunchStep::tma gets KtuneGemmTmaArgs: the argument block plus tensor maps of A and B encoded here
// for this launch's pointers (cuTensorMapEncodeTiled; errors name the maps' geometry).
void launch_gemm(Module& m, const LaunchPlan& plan, const KtuneGemmArgs& args, CUstream stream);

} // namespace ktune
