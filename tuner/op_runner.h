// The device side of an op for the tuner: fresh inputs, launches of a family's plan, verification
// against an FP64 reference, and the op's baseline library. The worker holds one per op it has
// seen; each op implements it beside its own code (GEMM: tuner/gemm_op.cpp), and
// make_op_runner (tuner/op_runners.cpp) is the list of them.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <memory>
#include <string>

#include "ktune/compiler.h"
#include "ktune/device.h"
#include "ktune/family.h"
#include "ktune/problem.h"
#include "ktune/runtime.h"
#include "runtime/module.h"

namespace ktune {

struct VerifyResult {
  double rel_error = 0;      // ||out - ref||_F / ||ref||_F (absolute when ref is all zeros)
  uint64_t nonfinite = 0;    // NaN/Inf elements of the output: unwritten (poison) or overflowed
  uint64_t stray_writes = 0; // changed elements of the output's padding (between rows)
  bool pass = false;
  std::string summary() const;
};

class OpRunner {
 public:
  virtual ~OpRunner() = default;
  // Fresh random inputs for p from seed, the output poisoned where it must not be read. Buffers
  // grow as needed and are reused across calls.
  virtual void prepare(const Problem& p, uint64_t seed) = 0;
  // Scratch device memory for plans that need it (LaunchPlan::workspace_bytes).
  virtual void ensure_workspace(size_t bytes) = 0;
  // Launches every step of plan, the kernels of m, over the prepared buffers, on stream.
  virtual void launch(Module& m, const LaunchPlan& plan, CUstream stream) = 0;
  // The prepared inputs' FP64 reference against the current output; synchronizes.
  virtual VerifyResult verify(CUstream stream) = 0;
  // Runs the op's baseline (OpInfo::baseline) on the prepared buffers; throws Error for an op
  // without one.
  virtual void run_baseline(CUstream stream) = 0;
  // Runs the runtime's entry point for the op on the prepared buffers, as an application calls
  // it (ktune bench).
  virtual void run_runtime(Runtime& rt, CUstream stream) = 0;
};

// The runner of op; the device's primary context must be current. Throws UsageError for an op
// no runner serves.
std::unique_ptr<OpRunner> make_op_runner(const std::string& op, Compiler& compiler, const DeviceInfo& device);

// Launches a grid-stride verification kernel (fill, widen, compare) over n elements on `stream`:
// 256 threads a block, a few waves of blocks (enough to saturate memory bandwidth).
void launch_grid_stride(Module& m, size_t kernel, long long n, const DeviceInfo& device, void** params, CUstream stream);

} // namespace ktune
