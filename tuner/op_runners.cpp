// The list of op runners, by OpInfo::runner: a new kind of op adds its make function here (a new
// row op, or an op of plain buffers, needs nothing: its OpInfo names the "rows" or "buffers"
// runner and carries its reference).
#include "tuner/op_runner.h"

#include <algorithm>
#include <cstdio>

#include "ktune/error.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "tuner/attention_op.h"
#include "tuner/buffers_op.h"
#include "tuner/gemm_op.h"
#include "tuner/rows_op.h"
#include "tuner/spec_op.h"

namespace ktune {

std::string VerifyResult::summary() const {
  std::string s = conditions.empty() ? "" : conditions + ": ";
  char buf[256];
  std::snprintf(buf, sizeof buf, "rel_error=%.3g", rel_error);
  s += buf;
  if (norm_bound > 0) {
    std::snprintf(buf, sizeof buf, " (bound %.3g)", norm_bound);
    s += buf;
  }
  if (baseline_error >= 0) {
    std::snprintf(buf, sizeof buf, " baseline_error=%.3g", baseline_error);
    s += buf;
  }
  std::snprintf(buf, sizeof buf, " violations=%llu worst=%.3g", static_cast<unsigned long long>(violations), worst_ratio);
  s += buf;
  if (worst_index >= 0) s += " (element " + std::to_string(worst_index) + ")";
  std::snprintf(buf, sizeof buf, " nonfinite=%llu stray_writes=%llu input_writes=%llu guard_writes=%llu",
                static_cast<unsigned long long>(nonfinite), static_cast<unsigned long long>(stray_writes),
                static_cast<unsigned long long>(input_writes), static_cast<unsigned long long>(guard_writes));
  s += buf;
  return s;
}

const char* to_string(Conditions c) { return c == Conditions::as_served ? "as served" : "as timed"; }

size_t least_aligned_offset(const Problem& p) { return size_t(std::max(p.align, element_bytes(p.dtype))); }

std::string conditions_text(size_t offset) {
  return offset ? "as served (scalars away from their defaults, pointers " + std::to_string(offset) +
                      " B past a 256-byte boundary)"
                : "as timed";
}

void OpRunner::run_baseline(CUstream) { throw Error("this op has no baseline library in C++"); }

void OpRunner::prepare(const Problem& p, uint64_t seed, Conditions c) {
  if (c == Conditions::as_timed) return prepare(p, seed);
  throw Error("op " + p.op + " has no check as served: its configs cannot be verified for the runtime");
}

VerifyResult check_as_served_and_timed(OpRunner& op, const Problem& p, uint64_t seed, uint64_t timed_seed, Numerics numerics,
                                       const std::function<void(CUstream)>& launch) {
  auto check = [&](Conditions c, uint64_t s) {
    op.prepare(p, s, c);
    launch(nullptr);
    check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize",
             std::string("running the kernel under test ") + to_string(c) + " on " + p.key());
    return op.verify(nullptr, numerics);
  };
  // Another seed for the served check: a kernel is not judged twice on one set of inputs.
  VerifyResult served = check(Conditions::as_served, seed ^ 0x5e17edull);
  if (!served.pass) return served;
  return check(Conditions::as_timed, timed_seed);
}

std::unique_ptr<OpRunner> make_op_runner(const std::string& op, Compiler& compiler, const DeviceInfo& device) {
  const OpInfo& info = op_info(op); // an unknown op is a UsageError naming the known ones
  if (info.runner == "gemm") return make_gemm_runner(compiler, device);
  if (info.runner == "rows") return make_rows_runner(compiler, device);
  if (info.runner == "buffers") return make_buffers_runner(device);
  if (info.runner == "spec") return make_spec_runner(compiler, device);
  if (info.runner == "attention") return make_attention_runner(compiler, device);
  throw UsageError("op '" + op + "' names runner '" + info.runner +
                   "', which the tuner does not have (known: gemm, rows, buffers, spec, attention)");
}

void launch_grid_stride(Module& m, size_t kernel, long long n, const DeviceInfo& device, void** params, CUstream stream) {
  const unsigned blocks = static_cast<unsigned>(std::clamp<long long>((n + 255) / 256, 1, 32LL * std::max(1, device.sm_count)));
  const unsigned grid[3] = {blocks, 1, 1}, block[3] = {256, 1, 1};
  m.launch(kernel, grid, block, 0, stream, params);
}

} // namespace ktune
