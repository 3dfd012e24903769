// For the GPU tests that build an FP64 reference from rounded half inputs (gemm_tc16,
// gemm_skinny16, gemm_wgmma): the library's host conversions, the tuner's tolerance rule, and
// (tc16, wgmma) one problem's inputs, reference and error.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <future>
#include <random>
#include <vector>

#include "core/half.h"
#include "ktune/gemm_problem.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/gemm_launch.h"
#include "runtime/module.h"
#include "tuner/gemm_op.h"

namespace ktune::testing::half_ref {

// The host conversions are the library's (core/half.h), so that the tests and the tuner agree.
using ktune::half::from_bf16;
using ktune::half::from_f16;
using ktune::half::to_bf16;
using ktune::half::to_f16;

// The tolerance of a half GEMM's relative Frobenius error: the tuner's rule (GemmOp::rule) for a
// result of m x n elements.
inline double half_tolerance(bool f16, int64_t k, int64_t m = 1024, int64_t n = 1024) {
  GemmProblem p;
  p.dtype = f16 ? DType::f16 : DType::bf16;
  p.m = m, p.n = n, p.k = k;
  return GemmOp::tolerance(p);
}

inline uint16_t to_half(float x, bool f16) { return f16 ? to_f16(x) : to_bf16(x); }
inline float from_half(uint16_t x, bool f16) { return f16 ? from_f16(x) : from_bf16(x); }

// A device copy of host halves, `shift` halves past the start of its allocation (shift = 1 gives
// a pointer that is only 2-byte aligned).
struct Buf {
  DeviceBuffer d;
  int64_t shift = 0;
  CUdeviceptr ptr() const { return d.ptr() + CUdeviceptr(shift * 2); }
};

inline Buf upload(const std::vector<uint16_t>& h, int64_t shift = 0) {
  Buf b{DeviceBuffer((std::max<size_t>(h.size(), 1) + size_t(shift)) * 2, "half test operand"), shift};
  if (!h.empty()) check_cu(driver().cuMemcpyHtoD(b.ptr(), h.data(), h.size() * 2), "cuMemcpyHtoD", "half test operand");
  return b;
}

// One problem with its inputs (uniform in [-1, 1), rounded to the dtype; C NaN where beta == 0,
// which must then never be read) and the FP64 reference computed from the rounded inputs.
struct Instance {
  GemmProblem p;
  int64_t shift = 0; // pointers `shift` halves off their allocation's 256-byte alignment
  std::vector<uint16_t> a, b, c0;
  std::vector<double> ref; // M x N
  std::vector<double> mag; // M x N: |alpha| |A| |B| + |beta| |C0|, what the per-element bound scales with
  double den = 0;          // squared Frobenius norm of ref (1 if 0)
  double tol = 0;
  GemmErrorRule rule;      // the tuner's rule (GemmOp::rule)

  Instance(const GemmProblem& prob, int64_t sh, uint64_t seed) : p(prob), shift(sh) {
    const bool f16 = p.dtype == DType::f16;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const bool a_col = p.a == Layout::col, b_col = p.b == Layout::col;
    a.resize(size_t((a_col ? std::max<int64_t>(p.k, 1) : p.m) * p.eff_lda()));
    b.resize(size_t((b_col ? p.n : std::max<int64_t>(p.k, 1)) * p.eff_ldb()));
    c0.resize(size_t(p.m * p.eff_ldc()));
    for (auto& x : a) x = to_half(u(rng), f16);
    for (auto& x : b) x = to_half(u(rng), f16);
    const uint16_t nan = f16 ? 0x7e00 : 0x7fc0;
    for (auto& x : c0) x = p.beta != 0.0f ? to_half(u(rng), f16) : nan;
    rule = GemmOp::rule(p);
    tol = rule.norm;
  }

  // Operands widened to FP64, A as M x K and B transposed (N x K), so the dot products are
  // contiguous; rows of C in `parts` interleaved slices on as many threads (large shapes).
  void compute_reference(int parts = 1) {
    const bool f16 = p.dtype == DType::f16;
    const int64_t M = p.m, N = p.n, K = p.k, lda = p.eff_lda(), ldb = p.eff_ldb(), ldc = p.eff_ldc();
    const bool a_col = p.a == Layout::col, b_col = p.b == Layout::col;
    std::vector<double> ad(size_t(M * K)), bt(size_t(N * K));
    for (int64_t i = 0; i < M; ++i)
      for (int64_t q = 0; q < K; ++q) ad[size_t(i * K + q)] = from_half(a[size_t(a_col ? q * lda + i : i * lda + q)], f16);
    for (int64_t j = 0; j < N; ++j)
      for (int64_t q = 0; q < K; ++q) bt[size_t(j * K + q)] = from_half(b[size_t(b_col ? j * ldb + q : q * ldb + j)], f16);
    ref.assign(size_t(M * N), 0.0);
    mag.assign(size_t(M * N), 0.0);
    std::vector<std::future<double>> slices;
    for (int s = 0; s < parts; ++s)
      slices.push_back(std::async(std::launch::async, [&, s] {
        double d = 0;
        for (int64_t i = s; i < M; i += parts)
          for (int64_t j = 0; j < N; ++j) {
            const double* x = &ad[size_t(i * K)];
            const double* y = &bt[size_t(j * K)];
            double acc = 0, abs_acc = 0;
            for (int64_t q = 0; q < K; ++q) acc += x[q] * y[q], abs_acc += std::abs(x[q] * y[q]);
            const double c = p.beta != 0.0f ? double(from_half(c0[size_t(i * ldc + j)], f16)) : 0.0;
            acc = double(p.alpha) * acc + double(p.beta) * c;
            ref[size_t(i * N + j)] = acc;
            mag[size_t(i * N + j)] = std::abs(double(p.alpha)) * abs_acc + std::abs(double(p.beta) * c);
            d += acc * acc;
          }
        return d;
      }));
    den = 0;
    for (auto& s : slices) den += s.get();
    if (den == 0) den = 1;
    double prod2 = 0; // the product's part of ref where beta != 0: the norm bound's second rounding
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const double c = p.beta != 0.0f ? double(p.beta) * double(from_half(c0[size_t(i * ldc + j)], f16)) : 0.0;
        prod2 += (ref[size_t(i * N + j)] - c) * (ref[size_t(i * N + j)] - c);
      }
    tol = rule.norm_bound(0, std::sqrt(prod2 / den));
  }

  // Relative Frobenius error of a result; NaN if any element is not finite, exceeds its own bound
  // (the tuner's per-element rule; per_element = false: counted in `violations` only, as for
  // cuBLAS, which is not held to it: some of its half kernels round split-K partials or the
  // product to the output type), or a padding column of C (ldc > N) was written.
  mutable size_t violations = 0;
  double error(const std::vector<uint16_t>& out, bool per_element = true) const {
    violations = 0;
    const bool f16 = p.dtype == DType::f16;
    const int64_t ldc = p.eff_ldc();
    double num = 0;
    bool ok = true;
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        const double got = from_half(out[size_t(i * ldc + j)], f16), d = got - ref[size_t(i * p.n + j)];
        const double c0v = p.beta != 0.0f ? double(from_half(c0[size_t(i * ldc + j)], f16)) : 0.0;
        const bool within = std::abs(d) <= rule.element_bound(ref[size_t(i * p.n + j)], mag[size_t(i * p.n + j)], c0v);
        violations += !within;
        ok = ok && std::isfinite(got) && (within || !per_element);
        num += d * d;
      }
      for (int64_t j = p.n; j < ldc; ++j) ok = ok && out[size_t(i * ldc + j)] == c0[size_t(i * ldc + j)];
    }
    return ok ? std::sqrt(num / den) : NAN;
  }

  KtuneGemmArgs args(const Buf& A, const Buf& B, const Buf& C, const DeviceBuffer* ws = nullptr) const {
    return gemm_args(p, reinterpret_cast<const float*>(A.ptr()), reinterpret_cast<const float*>(B.ptr()),
                     reinterpret_cast<float*>(C.ptr()), ws ? reinterpret_cast<float*>(ws->ptr()) : nullptr);
  }
};

} // namespace ktune::testing::half_ref
