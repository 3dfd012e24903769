#include "runtime/rows_launch.h"

#include <string>

#include "ktune/error.h"
#include "ktune/runtime.h"
#include "runtime/op_launcher.h"

namespace ktune {

KtuneRowsArgs rows_args(const Problem& p, const void* x, void* y, const void* weight, const void* bias) {
  KtuneRowsArgs a{};
  a.x = x, a.y = y, a.weight = weight, a.bias = bias;
  a.rows = p.dims.at(0), a.cols = p.dims.at(1), a.ldx = p.ld.at(0), a.ldy = p.ld.at(1);
  a.scale = 1.0f, a.eps = 0.0f;
  for (const auto& [name, dflt] : op_info(p.op).scalars) {
    if (name == "scale") a.scale = float(p.scalar(name));
    if (name == "eps") a.eps = float(p.scalar(name));
  }
  return a;
}

void launch_rows(Module& m, const LaunchPlan& plan, const KtuneRowsArgs& args, CUstream stream) {
  if (args.rows < 0 || args.cols < 0)
    throw Error(m.context() + ": negative size rows = " + std::to_string(args.rows) + ", cols = " + std::to_string(args.cols));
  if (args.rows == 0 || args.cols == 0) return;
  KtuneRowsArgs a = args; // cuLaunchKernel copies the parameter out of this before returning
  void* params[] = {&a};
  for (const auto& s : plan.steps) m.launch(s, stream, params);
}

// Row ops: x, y, weight, bias (null where none) as Runtime::rows takes them.
class RowsLauncher final : public OpLauncher {
 public:
  void run(Runtime& rt, const Problem& p, const std::vector<void*>& buffers, CUstream stream) const override {
    check_buffer_count(p, buffers, 4, "x, y, weight, bias; null where none");
    rt.rows(p, buffers[0], buffers[1], buffers[2], buffers[3], stream);
  }
};

const OpLauncher& rows_launcher() {
  static const RowsLauncher l;
  return l;
}

} // namespace ktune
