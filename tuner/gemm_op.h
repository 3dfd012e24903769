// The GEMM op: allocates and fills inputs on the device, computes the FP64 reference, verifies a
// kernel's output against an FP64 product (cuBLAS DGEMM on widened inputs), and counts FLOPs
// and bytes. Verification follows docs/METHOD: fresh random
// inputs per check, C poisoned with NaN where it must not be read, every element checked, and
// C's row padding checked for stray writes.
#pragma once
#include <cuda.h>

#include <functional>
#include <memory>

#include "ktune/compiler.h"
#include "ktune/device.h"
#include "ktune/gemm_problem.h"
#include "runtime/module.h"
#include "runtime/cublas.h"
#include "tuner/op_runner.h"

namespace ktune {

class GemmOp {
 public:
  // Compiles the helper kernels for the device's arch and creates a cuBLAS handle; the device's
  // primary context must be current.
  GemmOp(Compiler& compiler, const DeviceInfo& device);
  ~GemmOp();

  // The verification kernels' compile request (fill, widen, compare; f32 and half forms).
  static CompileRequest reference_request(const std::string& arch);
  // Relative Frobenius error allowed for p's results (the rule for half precision is written out
  // in gemm_op.cpp and docs/TEMPLATES.md: output rounding plus FP32 accumulation over K).
  static double tolerance(const GemmProblem& p);
  // Fewest bytes a GEMM must move: A and B read once, C written once (and read when beta != 0),
  // in the problem's element size.
  static double min_bytes(const GemmProblem& p);

  // Fresh inputs for p from seed: A and B uniform in [-1, 1), C random (beta != 0) or NaN
  // (beta == 0). Buffers grow as needed and are reused across calls.
  void prepare(const GemmProblem& p, uint64_t seed);
  // Kernel arguments over the prepared buffers (workspace from ensure_workspace).
  KtuneGemmArgs args() const;
  void ensure_workspace(size_t bytes);
  // Restores C to its prepared initial contents (before re-running a kernel on the same inputs).
  void reset_c(CUstream stream);
  // Reference for the prepared inputs, compared with the current C. Synchronizes.
  VerifyResult verify(CUstream stream);

  // prepare + run + verify, the whole check for one problem and seed.
  VerifyResult check(const GemmProblem& p, uint64_t seed, const std::function<void(const KtuneGemmArgs&, CUstream)>& run,
                     CUstream stream);

  size_t a_elems() const;
  size_t b_elems() const;
  size_t c_elems() const;
  Cublas& cublas() { return *cublas_; }

 private:
  void grow(DeviceBuffer& b, size_t bytes, const char* what);
  void launch1d(size_t kernel, long long n, void** params, CUstream stream);

  DeviceInfo device_;
  std::unique_ptr<Module> ref_; // fill_uniform, f32_to_f64, gemm_compare
  std::unique_ptr<Cublas> cublas_;
  GemmProblem p_;
  DeviceBuffer a_, b_, c_, c0_, a64_, b64_, ref_out_, sums_, workspace_;
};

// GEMM's OpRunner (the worker's side of the op): GemmOp over the prepared problem, launch_gemm, and
// cuBLAS as the baseline.
std::unique_ptr<OpRunner> make_gemm_runner(Compiler& compiler, const DeviceInfo& device);

} // namespace ktune
