// The list of op runners, by OpInfo::runner: a new kind of op adds its make function here (a new
// row op needs nothing: its OpInfo names the "rows" runner and carries its reference).
#include "tuner/op_runner.h"

#include <algorithm>
#include <cstdio>

#include "ktune/error.h"
#include "tuner/gemm_op.h"
#include "tuner/rows_op.h"

namespace ktune {

std::string VerifyResult::summary() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "rel_error=%.3g nonfinite=%llu stray_writes=%llu", rel_error,
                static_cast<unsigned long long>(nonfinite), static_cast<unsigned long long>(stray_writes));
  return buf;
}

std::unique_ptr<OpRunner> make_op_runner(const std::string& op, Compiler& compiler, const DeviceInfo& device) {
  const OpInfo& info = op_info(op); // an unknown op is a UsageError naming the known ones
  if (info.runner == "gemm") return make_gemm_runner(compiler, device);
  if (info.runner == "rows") return make_rows_runner(compiler, device);
  throw UsageError("op '" + op + "' names runner '" + info.runner + "', which the tuner does not have (known: gemm, rows)");
}

void launch_grid_stride(Module& m, size_t kernel, long long n, const DeviceInfo& device, void** params, CUstream stream) {
  const unsigned blocks = static_cast<unsigned>(std::clamp<long long>((n + 255) / 256, 1, 32LL * std::max(1, device.sm_count)));
  const unsigned grid[3] = {blocks, 1, 1}, block[3] = {256, 1, 1};
  m.launch(kernel, grid, block, 0, stream, params);
}

} // namespace ktune
