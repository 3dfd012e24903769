// The GEMM op: allocates and fills inputs on the device, computes the FP64 reference, verifies a
// kernel's output against it, and counts FLOPs and bytes. Verification follows docs/METHOD and
// docs/TEMPLATES.md ("Verification"): fresh random inputs per check; the reference (cuBLAS DGEMM on
// the widened inputs) and the magnitudes the rounding errors scale with are computed before the
// kernel runs, so a kernel that overwrites its inputs cannot move them; every element is held to
// its own bound and the whole to a Frobenius bound; C is poisoned with NaN where it must not be
// read; C's row padding, every input and a guard region around every buffer are checked for writes.
#pragma once
#include <cuda.h>

#include <cmath>
#include <functional>
#include <memory>

#include "ktune/compiler.h"
#include "ktune/device.h"
#include "ktune/family.h"
#include "ktune/gemm_problem.h"
#include "runtime/module.h"
#include "runtime/cublas.h"
#include "tuner/op_runner.h"

namespace ktune {

// The scalars of Conditions::as_served: away from 1 and 0, of both signs, exact in every dtype.
constexpr float kServedAlpha = -1.25f, kServedBeta = 0.5f;

// The error a GEMM result may have (docs/TEMPLATES.md, "Verification"). Per element:
//   |c - ref| <= u_out |ref| + u_prod |ref - beta C0| + gamma mag + tiny,
//   mag = |alpha| |A| |B| + |beta| |C0|,
// and in the relative Frobenius norm: norm (times sqrt(1 + ||ref - beta C0||^2 / ||ref||^2) where
// beta != 0: the product may be rounded before beta C is added), or for FP32 families the larger of
// baseline_factor x the baseline's error on the same inputs and norm_floor.
struct GemmErrorRule {
  double u_out = 0;  // unit roundoff of the output type: the one rounding of the result
  double gamma = 0;  // FP32 accumulation over K (and 3xTF32's split), relative to mag
  double tiny = 0;   // absolute: results near the output type's subnormals, flushed or rounded
  double u_prod = 0; // half precision with beta != 0: alpha A B rounded to the output type first
  double beta = 0;
  double norm = 0;   // half precision: the relative Frobenius bound
  double baseline_factor = 0; // f32: times cuBLAS SGEMM's relative error on the same inputs
  double norm_floor = 0;      // f32: below this the baseline's error is not a yardstick
  double element_bound(double ref, double mag, double c0 = 0) const {
    return u_out * std::abs(ref) + u_prod * std::abs(ref - beta * c0) + gamma * mag + tiny;
  }
  // The Frobenius bound given the baseline's error (f32) or the ratio ||ref - beta C0|| / ||ref||
  // (half precision with beta != 0).
  double norm_bound(double baseline_error, double product_ratio = 0) const;
};

class GemmOp {
 public:
  // Compiles the helper kernels for the device's arch and creates a cuBLAS handle; the device's
  // primary context must be current.
  GemmOp(Compiler& compiler, const DeviceInfo& device);
  ~GemmOp();

  // The verification kernels' compile request (fill, widen, compare; f32 and half forms).
  static CompileRequest reference_request(const std::string& arch);
  // The rule p's results are held to, for a family of these numerics.
  static GemmErrorRule rule(const GemmProblem& p, Numerics numerics = Numerics::standard);
  // The relative Frobenius bound of a half-precision problem (rule(p).norm); f32 bounds depend on
  // the baseline's measured error, so this is their floor.
  static double tolerance(const GemmProblem& p);
  // Fewest bytes a GEMM must move: A and B read once, C written once (and read when beta != 0),
  // in the problem's element size.
  static double min_bytes(const GemmProblem& p);

  // Fresh inputs for p from seed: A and B uniform in [-1, 1), C random (beta != 0) or NaN
  // (beta == 0), guard regions around A, B, C and the workspace; then the FP64 reference and
  // magnitudes. Buffers grow as needed and are reused across calls. as_served: p with alpha and
  // beta set to kServedAlpha / kServedBeta, A, B and C at the least-aligned offset of p's class.
  void prepare(const GemmProblem& p, uint64_t seed, Conditions conditions = Conditions::as_timed);
  // Kernel arguments over the prepared buffers (workspace from ensure_workspace).
  KtuneGemmArgs args() const;
  // The problem as prepared (as_served: its alpha and beta).
  const GemmProblem& problem() const { return p_; }
  void ensure_workspace(size_t bytes);
  // Restores C to its prepared initial contents (before re-running a kernel on the same inputs).
  void reset_c(CUstream stream);
  // The prepared reference against the current C, inputs and guards. Synchronizes.
  VerifyResult verify(CUstream stream, Numerics numerics = Numerics::standard);

  // prepare + run + verify, the whole check for one problem and seed.
  VerifyResult check(const GemmProblem& p, uint64_t seed, const std::function<void(const KtuneGemmArgs&, CUstream)>& run,
                     CUstream stream, Numerics numerics = Numerics::standard, Conditions conditions = Conditions::as_timed);

  size_t a_elems() const;
  size_t b_elems() const;
  size_t c_elems() const;
  Cublas& cublas() { return *cublas_; }

  // A device allocation with a guard region on each side, filled with a known byte before the
  // kernel runs, and the data `offset` bytes past the first guard's end (256-byte aligned + offset).
  struct Guarded {
    DeviceBuffer mem;
    size_t bytes = 0, offset = 0;
    CUdeviceptr ptr() const;
  };

 private:
  void grow(DeviceBuffer& b, size_t bytes, const char* what);
  void place(Guarded& g, size_t bytes, size_t offset, const char* what);
  void launch1d(size_t kernel, long long n, void** params, CUstream stream);
  void compute_reference();
  void changed_guard_bytes(const Guarded& g, CUstream stream);
  void changed_inputs(const Guarded& g, size_t elems, unsigned long long seed, CUstream stream);
  double baseline_error(CUstream stream); // cuBLAS on the same inputs; cached per prepare
  // compare()'s readings; inputs and guards are counted for the kernel under test's C only.
  struct Sums {
    double d2, r2, p2;
    unsigned long long nonfinite, stray, over, worst_bits, where, inputs, guards;
    double rel_error() const { return r2 > 0 ? std::sqrt(d2 / r2) : std::sqrt(d2); }
  };
  Sums compare(CUdeviceptr c, const GemmErrorRule& rule, CUstream stream);

  DeviceInfo device_;
  std::unique_ptr<Module> ref_; // gemm_reference.cu
  std::unique_ptr<Cublas> cublas_;
  GemmProblem p_;
  uint64_t seed_ = 0;
  std::string conditions_;
  double baseline_error_ = -1;
  Guarded a_, b_, c_, workspace_;
  DeviceBuffer c0_, a64_, b64_, ref_out_, mag_, base_c_, sums_, counts_;
};

// GEMM's OpRunner (the worker's side of the op): GemmOp over the prepared problem, launch_gemm, and
// cuBLAS as the baseline.
std::unique_ptr<OpRunner> make_gemm_runner(Compiler& compiler, const DeviceInfo& device);

} // namespace ktune
