// Launching a row kernel's plan (softmax, LayerNorm, RMSNorm): every step gets the one argument
// block KtuneRowsArgs by value (kernel_templates/rows/rows_args.h).
#pragma once
#include <cuda.h>

#include "ktune/family.h"
#include "ktune/problem.h"
#include "rows/rows_args.h"
#include "runtime/module.h"

namespace ktune {

// The argument block for p (rows x cols, leading dimensions, the op's scale or eps; scale 1 and
// eps 0 where the op has none) over these pointers (weight and bias may be null).
KtuneRowsArgs rows_args(const Problem& p, const void* x, void* y, const void* weight, const void* bias);

// Launches nothing for rows == 0; throws Error naming the module on a negative size.
void launch_rows(Module& m, const LaunchPlan& plan, const KtuneRowsArgs& args, CUstream stream);

} // namespace ktune
