#include "runtime/rows_launch.h"

#include <string>

#include "ktune/error.h"

namespace ktune {

void launch_rows(Module& m, const LaunchPlan& plan, const KtuneRowsArgs& args, CUstream stream) {
  if (args.rows < 0 || args.cols < 0)
    throw Error(m.context() + ": negative size rows = " + std::to_string(args.rows) + ", cols = " + std::to_string(args.cols));
  if (args.rows == 0 || args.cols == 0) return;
  KtuneRowsArgs a = args; // cuLaunchKernel copies the parameter out of this before returning
  void* params[] = {&a};
  for (const auto& s : plan.steps) m.launch(static_cast<size_t>(s.kernel), s.grid, s.block, s.dynamic_smem, stream, params, s.overlap_previous);
}

} // namespace ktune
