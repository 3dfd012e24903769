// The list of op runners: a new op adds its make function here.
#include "tuner/op_runner.h"

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
  if (op == "gemm") return make_gemm_runner(compiler, device);
  if (op == "softmax" || op == "layernorm" || op == "rmsnorm") return make_rows_runner(compiler, device);
  throw UsageError("no runner for op '" + op + "' (known: gemm, softmax, layernorm, rmsnorm)");
}

} // namespace ktune
