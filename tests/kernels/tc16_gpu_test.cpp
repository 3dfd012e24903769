// gemm_tc16 (BF16 / FP16 on mma.sync) against an FP64 reference computed on the CPU from the same
// rounded inputs. Written when no GPU was at hand: this is the test that must pass before the
// family is offered anywhere (see gemm_tc16.cu's header).
//
// Tolerance rule (relative Frobenius error of C): the result is rounded to the output dtype once,
// at most half an ulp, i.e. a relative 2^-9 (bf16, 8 significant bits) or 2^-12 (fp16, 11 bits) of
// each element; FP32 accumulation over K adds at most ~K * 2^-24 relative for the inputs here
// (uniform in [-1, 1), sums of mixed signs). So: bf16 2^-8, fp16 2^-11 + K * 2^-23, twice the
// rounding bound and more than the worst-case accumulation drift.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <random>

#include "gemm/gemm_families.h"
#include "gpu_env.h"
#include "ktune/compiler.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/module.h"
#include "tuner/cublas.h"

using namespace ktune;

namespace {

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0; // NaN
  u += 0x7fffu + ((u >> 16) & 1u);                     // round to nearest even
  return uint16_t(u >> 16);
}
float from_bf16(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// IEEE binary16, round to nearest even; subnormals and overflow to infinity handled.
uint16_t to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const float a = std::fabs(f);
  if (std::isnan(f)) return uint16_t(sign | 0x7e00u);
  if (a >= 65520.0f) return uint16_t(sign | 0x7c00u);
  if (a < 6.103515625e-05f) { // subnormal: multiples of 2^-24
    const float q = std::nearbyint(a * 16777216.0f); // current rounding mode: to nearest even
    return uint16_t(sign | uint32_t(q));
  }
  int e;
  const float m = std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
  float q = std::nearbyint(m * 2048.0f); // 11 significant bits
  if (q == 2048.0f) q = 1024.0f, ++e;
  return uint16_t(sign | uint32_t(e + 14) << 10 | (uint32_t(q) - 1024u));
}
float from_f16(uint16_t h) {
  const uint32_t sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0) v = std::ldexp(float(man), -24);
  else if (exp == 31) v = man ? NAN : INFINITY;
  else v = std::ldexp(float(man | 0x400), int(exp) - 25);
  return sign ? -v : v;
}

struct Buf {
  DeviceBuffer d;
  std::vector<uint16_t> h;
};

Buf upload(std::vector<uint16_t> h) {
  Buf b{DeviceBuffer(std::max<size_t>(h.size(), 1) * 2, "tc16 test operand"), std::move(h)};
  if (!b.h.empty())
    check_cu(driver().cuMemcpyHtoD(b.d.ptr(), b.h.data(), b.h.size() * 2), "cuMemcpyHtoD", "tc16 test");
  return b;
}

struct Errors {
  double ours, cublas; // relative Frobenius errors of C against the FP64 reference
};

// Runs config c of gemm_tc16, and cuBLAS (cublasGemmEx, FP32 compute), on p with the same random
// inputs; NaN for ours if any element of C is not finite or a padding column was written.
Errors run_case(Compiler& compiler, Cublas& cublas, const DeviceInfo& dev, const Config& c, const GemmProblem& p,
                uint64_t seed) {
  const Family f = find_family("gemm_tc16");
  const bool f16 = p.dtype == DType::f16;
  auto to = [&](float x) { return f16 ? to_f16(x) : to_bf16(x); };
  auto from = [&](uint16_t x) { return f16 ? from_f16(x) : from_bf16(x); };
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t M = p.m, N = p.n, K = p.k, lda = p.eff_lda(), ldb = p.eff_ldb(), ldc = p.eff_ldc();
  std::vector<uint16_t> a(size_t(M * lda)), b(size_t(std::max<int64_t>(K, 1) * ldb)), c0(size_t(M * ldc));
  for (auto& x : a) x = to(u(rng));
  for (auto& x : b) x = to(u(rng));
  for (auto& x : c0) x = to(u(rng));
  Buf A = upload(a), B = upload(b), C = upload(c0), Cb = upload(c0);
  const auto k = compiler.compile(compile_request(f, c, p, dev.arch));
  Module m(k->cubin, k->lowered_names, "gemm_tc16 " + c.to_json());
  KtuneGemmArgs args = gemm_args(p, reinterpret_cast<const float*>(A.d.ptr()), reinterpret_cast<const float*>(B.d.ptr()),
                                 reinterpret_cast<float*>(C.d.ptr()), nullptr);
  launch_gemm(m, f.launch_plan(c, p), args, nullptr);
  check_cu(driver().cuCtxSynchronize(), "cuCtxSynchronize", "tc16 test " + c.to_json() + " " + p.key());
  KtuneGemmArgs cargs = args;
  cargs.C = reinterpret_cast<float*>(Cb.d.ptr());
  if (K > 0) cublas.gemm_half(p, cargs, nullptr); // K = 0: cuBLAS's own checks want lda >= 1 row
  check_cu(driver().cuCtxSynchronize(), "cuCtxSynchronize", "cuBLAS " + p.key());
  std::vector<uint16_t> out(c0.size()), outb(c0.size());
  check_cu(driver().cuMemcpyDtoH(out.data(), C.d.ptr(), out.size() * 2), "cuMemcpyDtoH", "tc16 test");
  check_cu(driver().cuMemcpyDtoH(outb.data(), Cb.d.ptr(), outb.size() * 2), "cuMemcpyDtoH", "tc16 test");
  double num = 0, numb = 0, den = 0;
  bool finite = true;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double ref = 0;
      for (int64_t q = 0; q < K; ++q) ref += double(from(a[size_t(i * lda + q)])) * double(from(b[size_t(q * ldb + j)]));
      ref = double(p.alpha) * ref + (p.beta != 0.0f ? double(p.beta) * double(from(c0[size_t(i * ldc + j)])) : 0.0);
      const double got = from(out[size_t(i * ldc + j)]), gotb = K > 0 ? from(outb[size_t(i * ldc + j)]) : ref;
      finite = finite && std::isfinite(got);
      num += (got - ref) * (got - ref);
      numb += (gotb - ref) * (gotb - ref);
      den += ref * ref;
    }
  // Padding columns of C (ldc > N) are never written.
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = N; j < ldc; ++j) finite = finite && out[size_t(i * ldc + j)] == c0[size_t(i * ldc + j)];
  const double scale = den > 0 ? den : 1.0;
  return {finite ? std::sqrt(num / scale) : NAN, std::sqrt(numb / scale)};
}

} // namespace

TEST(Tc16Gpu, SampledConfigsMatchFp64ReferenceInBf16AndFp16) {
  std::string why;
  const DeviceInfo* dev = ktune::testing::first_gpu(&why);
  if (!dev) GTEST_SKIP() << "no GPU: " << why;
  if (dev->arch_number() < 80) GTEST_SKIP() << "gemm_tc16 needs sm_80";
  CudaContext ctx(dev->ordinal);
  Compiler compiler;
  Cublas cublas;
  const Family f = find_family("gemm_tc16");
  struct Shape {
    int64_t m, n, k, pad;
    float alpha, beta;
  };
  // Dividing and not (M any; N and K multiples of 8), padded C and operand rows, beta on and off,
  // K = 0 (C = beta * C), a single row.
  const Shape shapes[] = {{256, 256, 256, 0, 1, 0},   {1000, 1032, 520, 8, 0.75f, 0.5f}, {64, 128, 1024, 0, 1, -1},
                          {7, 1024, 64, 16, 1, 0},     {1, 4096, 512, 0, 1, 0},           {128, 256, 0, 0, 1, 0.5f},
                          {300, 200, 136, 0, 1, 1}};
  int checked = 0;
  for (DType t : {DType::bf16, DType::f16}) {
    const double base_tol = t == DType::bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
    uint64_t seed = t == DType::bf16 ? 100 : 200;
    for (const Shape& s : shapes) {
      GemmProblem p = GemmProblem::make(s.m, s.n, s.k, "NN", t);
      p.lda = std::max<int64_t>(8, s.k + s.pad), p.ldb = s.n + s.pad, p.ldc = s.n + s.pad;
      p.alpha = s.alpha, p.beta = s.beta;
      p.align = 16;
      const double tol = base_tol + double(s.k) * std::ldexp(1.0, -23);
      for (const Config& c : f.sample(p, *dev, 3, ++seed)) {
        const Errors e = run_case(compiler, cublas, *dev, c, p, ++seed);
        EXPECT_LE(e.ours, tol) << p.key() << " lda=" << p.lda << " alpha=" << p.alpha << " beta=" << p.beta << " "
                               << c.to_json() << " (NaN: a non-finite result or a write beyond N)";
        // The rule must hold for cuBLAS too, or the rule (or the reference) is wrong.
        EXPECT_LE(e.cublas, tol) << "cuBLAS on " << p.key();
        std::cout << "[ ktune    ] " << p.key() << " " << c.short_string() << ": error " << e.ours << ", cuBLAS "
                  << e.cublas << "\n";
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 30);
}

// The reference's own conversions (no GPU needed): known encodings, ties to even, subnormals,
// overflow, and an exhaustive round trip of every finite half.
TEST(Tc16Reference, HostHalfConversionsAreExact) {
  EXPECT_EQ(to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(to_bf16(-2.0f), 0xc000);
  EXPECT_EQ(to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie: to even (down)
  EXPECT_EQ(to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82); // tie: to even (up)
  EXPECT_EQ(to_f16(1.0f), 0x3c00);
  EXPECT_EQ(to_f16(-2.0f), 0xc000);
  EXPECT_EQ(to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(to_f16(70000.0f), 0x7c00);
  EXPECT_EQ(to_f16(std::ldexp(1.0f, -24)), 0x0001);           // smallest subnormal
  EXPECT_EQ(to_f16(std::ldexp(1.0f, -14)), 0x0400);           // smallest normal
  EXPECT_EQ(to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);    // tie: to even (down)
  EXPECT_EQ(to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02); // tie: to even (up)
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue; // inf and NaN
    EXPECT_EQ(to_f16(from_f16(uint16_t(h))) & 0x7fff, h & 0x7fff) << std::hex << h;
    EXPECT_EQ(to_bf16(from_bf16(uint16_t(h))), uint16_t(h)) << std::hex << h;
  }
}
