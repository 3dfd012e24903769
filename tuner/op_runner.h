// The device side of an op for the tuner: fresh inputs, launches of a family's plan, verification
// against an FP64 reference, and the op's baseline library. The worker holds one per op it has
// seen; each op implements it beside its own code (GEMM: tuner/gemm_op.cpp), and
// make_op_runner (tuner/op_runners.cpp) is the list of them.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ktune/compiler.h"
#include "ktune/device.h"
#include "ktune/family.h"
#include "ktune/problem.h"
#include "ktune/runtime.h"
#include "runtime/module.h"

namespace ktune {

// What the tuner checks a config under. as_timed: the problem as asked, every buffer 256-byte
// aligned (what the timing sees). as_served: what the runtime may call the config with that
// as_timed does not cover: scalars away from their defaults (GEMM: alpha = kServedAlpha, beta =
// kServedBeta with C preloaded) and every pointer at the least-aligned offset the problem's
// alignment class admits (16 bytes past a 256-byte boundary for class 16, and so on). A config is
// kept only when it passes both (tuner/worker.cpp).
enum class Conditions { as_timed, as_served };
const char* to_string(Conditions c);
// The offset from a 256-byte boundary at which Conditions::as_served places every buffer: p's
// alignment class (16 B for class 16, ...), never below an element.
size_t least_aligned_offset(const Problem& p);
// What a VerifyResult's `conditions` says for buffers placed `offset` bytes past a 256-byte
// boundary: "as timed" at 0, else "as served (...)".
std::string conditions_text(size_t offset);

struct VerifyResult {
  double rel_error = 0;      // ||out - ref||_F / ||ref||_F (absolute when ref is all zeros)
  uint64_t nonfinite = 0;    // NaN/Inf elements of the output: unwritten (poison) or overflowed
  uint64_t stray_writes = 0; // changed elements of the output's padding (between rows)
  uint64_t violations = 0;   // elements whose error exceeds their own bound (the op's per-element rule)
  double worst_ratio = 0;    // the largest error / bound over the elements (> 1: a violation)
  int64_t worst_index = -1;  // an element over its bound (offset in the output), -1 when none
  uint64_t input_writes = 0; // elements of an input that changed (the kernel wrote into A, B, x, ...)
  uint64_t guard_writes = 0; // bytes changed in the guard regions around the buffers
  double norm_bound = 0;     // the relative Frobenius error allowed (0: none applied)
  double baseline_error = -1; // the baseline library's relative error on the same inputs (-1: not measured)
  std::string conditions;    // what the check ran under, e.g. "alpha -1.25, beta 0.5, pointers 16 B past 256"
  bool pass = false;
  std::string summary() const;
};

class OpRunner {
 public:
  virtual ~OpRunner() = default;
  // Fresh random inputs for p from seed, the output poisoned where it must not be read. Buffers
  // grow as needed and are reused across calls.
  virtual void prepare(const Problem& p, uint64_t seed) = 0;
  // The same under Conditions c (as_timed: prepare(p, seed)). An op that has no as_served form
  // throws Error, so a config of it is never kept unchecked.
  virtual void prepare(const Problem& p, uint64_t seed, Conditions c);
  // Scratch device memory for plans that need it (LaunchPlan::workspace_bytes).
  virtual void ensure_workspace(size_t bytes) = 0;
  // Launches every step of plan, the kernels of m, over the prepared buffers, on stream.
  virtual void launch(Module& m, const LaunchPlan& plan, CUstream stream) = 0;
  // The prepared inputs' FP64 reference against the current output, under the op's error rule for
  // a family of these numerics (docs/TEMPLATES.md, "Verification"); synchronizes.
  virtual VerifyResult verify(CUstream stream, Numerics numerics) = 0;
  VerifyResult verify(CUstream stream) { return verify(stream, Numerics::standard); }
  // Puts back, on stream, the state a timed run must start from, which the runs before changed (a
  // user's kernel's inout buffers, as filled); the timer calls it untimed before every run. By
  // default nothing: an op's runs leave its inputs as they were.
  virtual void restore(CUstream) {}
  // Runs the op's baseline (OpInfo::baseline) on the prepared buffers; by default (an op without
  // one) throws Error.
  virtual void run_baseline(CUstream stream);
  // Compiles and loads what run_baseline runs, where that is work of its own (a user kernel's
  // baseline: seconds under heavy headers), so that the baseline's timing starts without it.
  virtual void load_baseline() {}
  // Compiles and loads every kernel that checking and timing p runs besides the config under test
  // (a user kernel's reference, setup, post and baseline kernels), ahead of p's first trial: under
  // heavy headers that is tens of seconds of NVRTC, once a worker, which the session gives a limit
  // of its own rather than counting it in one trial's (tuner/worker.h, "load"). By default
  // nothing: an op's own checks are compiled with its runner.
  virtual void load(const Problem&) {}
  // Runs the runtime's entry point for the op on the prepared buffers, as an application calls
  // it (ktune bench).
  virtual void run_runtime(Runtime& rt, CUstream stream) = 0;
};

// The runner of op; the device's primary context must be current. Throws UsageError for an op
// no runner serves.
std::unique_ptr<OpRunner> make_op_runner(const std::string& op, Compiler& compiler, const DeviceInfo& device);

// The tuner's gate for one config: the check under Conditions::as_served on inputs of `seed` (the
// config's own), then under as_timed on inputs of `timed_seed`, which it leaves prepared for
// timing. The tuner gives every config of a problem one timed_seed, so that a kernel whose speed
// follows its data (a BFS, whose source may reach few nodes) is timed on the same inputs for every
// config and the baseline. launch runs the config on the prepared buffers. Returns the first
// failing result (its `conditions` say which), else the as_timed one.
VerifyResult check_as_served_and_timed(OpRunner& op, const Problem& p, uint64_t seed, uint64_t timed_seed, Numerics numerics,
                                       const std::function<void(CUstream)>& launch);
// The same with the timed inputs of the config's own seed (one config checked alone).
inline VerifyResult check_as_served_and_timed(OpRunner& op, const Problem& p, uint64_t seed, Numerics numerics,
                                              const std::function<void(CUstream)>& launch) {
  return check_as_served_and_timed(op, p, seed, seed, numerics, launch);
}

// Launches a grid-stride verification kernel (fill, widen, compare) over n elements on `stream`:
// 256 threads a block, a few waves of blocks (enough to saturate memory bandwidth).
void launch_grid_stride(Module& m, size_t kernel, long long n, const DeviceInfo& device, void** params, CUstream stream);

} // namespace ktune
