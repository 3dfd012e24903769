// Launching a row kernel's plan (softmax, LayerNorm, RMSNorm): every step gets the one argument
// block KtuneRowsArgs by value (kernel_templates/rows/rows_args.h).
#pragma once
#include <cuda.h>

#include "ktune/family.h"
#include "rows/rows_args.h"
#include "runtime/module.h"

namespace ktune {

// Launches nothing for rows == 0; throws Error naming the module on a negative size.
void launch_rows(Module& m, const LaunchPlan& plan, const KtuneRowsArgs& args, CUstream stream);

} // namespace ktune
