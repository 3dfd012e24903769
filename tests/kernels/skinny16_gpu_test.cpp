// gemm_skinny16 (BF16 / FP16 decode on mma.sync) against an FP64 reference computed on the CPU
// from the same rounded inputs, with cuBLAS (cublasGemmEx, FP32 compute) run on the same inputs
// and held to the same rule. The first version passed it on an H100; the register-ring version
// (DEPTH, CL, MINB, AV) and its cases here were written without a GPU: this is the test that must
// pass before the family is offered anywhere (see gemm_skinny16.cu's header).
//
// Tolerance rule (relative Frobenius error of C, as tc16_gpu_test.cpp): bf16 2^-8, fp16 2^-11,
// plus K * 2^-23 for FP32 accumulation. beta == 0 runs start from a C full of NaN (BLAS: C is not
// read); no result may be NaN, and padding columns of C (ldc > N) are never written.
#include <gtest/gtest.h>

#include <cmath>
#include <future>
#include <iostream>
#include <random>

#include "gemm/gemm_families.h"
#include "gpu_env.h"
#include "kernels/half_reference.h"
#include "ktune/compiler.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/gemm_launch.h"
#include "runtime/module.h"
#include "runtime/cublas.h"
#include "ktune/gemm_problem.h"

using namespace ktune;
using namespace ktune::testing::half_ref;

namespace {

struct Operand {
  DeviceBuffer d;
  std::vector<uint16_t> h;
};

Operand upload_operand(std::vector<uint16_t> h) {
  Operand b{DeviceBuffer(std::max<size_t>(h.size(), 1) * 2, "skinny16 test operand"), std::move(h)};
  if (!b.h.empty())
    check_cu(driver().cuMemcpyHtoD(b.d.ptr(), b.h.data(), b.h.size() * 2), "cuMemcpyHtoD", "skinny16 test");
  return b;
}

std::vector<uint16_t> download(const Operand& b) {
  std::vector<uint16_t> out(b.h.size());
  if (!out.empty()) check_cu(driver().cuMemcpyDtoH(out.data(), b.d.ptr(), out.size() * 2), "cuMemcpyDtoH", "skinny16 test");
  return out;
}

// One problem's operands on the host and the device, and the FP64 product of the rounded inputs.
struct Inputs {
  GemmProblem p;
  std::vector<uint16_t> a, b, c0; // c0: random C for beta != 0
  std::vector<double> ab;         // M x N, row-major
  std::vector<double> abs_ab;     // M x N: |A| |B|, what the per-element bound scales with
  Operand A, B;
};

Inputs make_inputs(const GemmProblem& p, uint64_t seed) {
  const bool f16 = p.dtype == DType::f16;
  auto to = [&](float x) { return f16 ? to_f16(x) : to_bf16(x); };
  auto from = [&](uint16_t x) { return f16 ? from_f16(x) : from_bf16(x); };
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t M = p.m, N = p.n, K = p.k, lda = p.eff_lda(), ldb = p.eff_ldb(), ldc = p.eff_ldc();
  const bool a_row = p.a == Layout::row, b_row = p.b == Layout::row;
  std::vector<uint16_t> a(size_t((a_row ? M : std::max<int64_t>(K, 1)) * lda)), b(size_t((b_row ? std::max<int64_t>(K, 1) : N) * ldb)),
      c0(size_t(M * ldc));
  for (auto& x : a) x = to(u(rng));
  for (auto& x : b) x = to(u(rng));
  for (auto& x : c0) x = to(u(rng));
  std::vector<double> af(a.size()), bf(b.size());
  for (size_t i = 0; i < a.size(); ++i) af[i] = from(a[i]);
  for (size_t i = 0; i < b.size(); ++i) bf[i] = from(b[i]);
  std::vector<double> ab(size_t(M * N), 0.0), abs_ab(size_t(M * N), 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t q = 0; q < K; ++q) {
      const double x = af[size_t(a_row ? i * lda + q : q * lda + i)];
      double* const row = ab.data() + i * N;
      double* const abs_row = abs_ab.data() + i * N;
      for (int64_t j = 0; j < N; ++j) {
        const double y = b_row ? bf[size_t(q * ldb + j)] : bf[size_t(j * ldb + q)];
        row[j] += x * y;
        abs_row[j] += std::abs(x * y);
      }
    }
  Inputs in{p, std::move(a), std::move(b), std::move(c0), std::move(ab), std::move(abs_ab), {}, {}};
  in.A = upload_operand(in.a);
  in.B = upload_operand(in.b);
  return in;
}

// Relative Frobenius error of out (C after the product with the given alpha and beta) against the
// reference; NaN if any element of C is not finite, exceeds its own bound (the tuner's per-element
// rule, GemmOp::rule) or a padding column changed.
double error_of(const Inputs& in, const std::vector<uint16_t>& c_before, const std::vector<uint16_t>& out, float alpha, float beta,
                double* norm_bound = nullptr, size_t* violations = nullptr) {
  GemmProblem p = in.p;
  p.alpha = alpha, p.beta = beta;
  const bool f16 = p.dtype == DType::f16;
  auto from = [&](uint16_t x) { return f16 ? from_f16(x) : from_bf16(x); };
  const int64_t ldc = p.eff_ldc();
  const GemmErrorRule rule = GemmOp::rule(p);
  double prod2 = 0;
  double num = 0, den = 0;
  bool ok = true;
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      const double ref = double(alpha) * in.ab[size_t(i * p.n + j)] +
                         (beta != 0.0f ? double(beta) * double(from(c_before[size_t(i * ldc + j)])) : 0.0);
      const double got = from(out[size_t(i * ldc + j)]);
      const double mag = std::abs(double(alpha)) * in.abs_ab[size_t(i * p.n + j)] +
                         (beta != 0.0f ? std::abs(double(beta) * double(from(c_before[size_t(i * ldc + j)]))) : 0.0);
      const double c0 = beta != 0.0f ? double(from(c_before[size_t(i * ldc + j)])) : 0.0;
      const bool within = std::abs(got - ref) <= rule.element_bound(ref, mag, c0);
      if (violations) *violations += !within; // counted, not failed: cuBLAS's check (below)
      ok = ok && std::isfinite(got) && (within || violations);
      prod2 += (ref - double(beta) * c0) * (ref - double(beta) * c0);
      num += (got - ref) * (got - ref);
      den += ref * ref;
    }
    for (int64_t j = p.n; j < ldc; ++j) ok = ok && out[size_t(i * ldc + j)] == c_before[size_t(i * ldc + j)];
  }
  if (norm_bound) *norm_bound = rule.norm_bound(0, den > 0 ? std::sqrt(prod2 / den) : 0.0);
  return ok ? std::sqrt(num / (den > 0 ? den : 1.0)) : NAN;
}

// C after config c (or cuBLAS, when m is null) on in with alpha and beta; beta == 0 starts from a
// C full of NaN.
std::vector<uint16_t> run(const Inputs& in, Module* m, const LaunchPlan* plan, Cublas& cublas, float alpha, float beta,
                          std::vector<uint16_t>& c_before) {
  GemmProblem p = in.p;
  p.alpha = alpha, p.beta = beta;
  const uint16_t nan = p.dtype == DType::f16 ? 0x7e00 : 0x7fc0;
  c_before = beta != 0.0f ? in.c0 : std::vector<uint16_t>(in.c0.size(), nan);
  Operand C = upload_operand(c_before);
  DeviceBuffer ws;
  if (plan && plan->workspace_bytes) ws = DeviceBuffer(plan->workspace_bytes, "skinny16 test workspace");
  KtuneGemmArgs args = gemm_args(p, reinterpret_cast<const float*>(in.A.d.ptr()), reinterpret_cast<const float*>(in.B.d.ptr()),
                                 reinterpret_cast<float*>(C.d.ptr()), ws.bytes() ? ws.as<float>() : nullptr);
  if (m)
    launch_gemm(*m, *plan, args, nullptr);
  else
    cublas.gemm_half(p, args, nullptr);
  check_cu(driver().cuCtxSynchronize(), "cuCtxSynchronize", "skinny16 test " + p.key());
  return download(C);
}

} // namespace

TEST(Skinny16Gpu, SampledConfigsMatchFp64ReferenceInBf16AndFp16) {
  std::string why;
  const DeviceInfo* dev = ktune::testing::first_gpu(&why);
  if (!dev) GTEST_SKIP() << "no GPU: " << why;
  if (dev->arch_number() < 80) GTEST_SKIP() << "gemm_skinny16 needs sm_80";
  CudaContext ctx(dev->ordinal);
  Compiler compiler;
  Cublas cublas;
  const Family f = find_family("gemm_skinny16");
  SpaceRestriction split_only;
  split_only.domains = {{"SPLITK", {2, 4, 8, 16}}};
  const Family fs = f.restricted(split_only);
  // Thread block clusters (sm_90): K slices added through distributed shared memory, alone and
  // with split-K slices of clusters; deep rings; the loads without the L2 hint and plain loads.
  const bool clusters = dev->arch_number() >= 90;
  SpaceRestriction cluster_only, cluster_split, deep, loads;
  cluster_only.domains = {{"CL", {2, 4, 8}}};
  cluster_split.domains = {{"CL", {2, 4, 8}}, {"SPLITK", {2, 4}}};
  deep.domains = {{"DEPTH", {6, 8}}};
  loads.domains = {{"LDH", {0, 2}}, {"MINB", {2, 3, 4}}};
  const Family fc = f.restricted(cluster_only), fcs = f.restricted(cluster_split), fd = f.restricted(deep), fl = f.restricted(loads);
  struct Shape {
    int64_t m, n, k, pad;
    bool all_layouts;
  };
  // The decode targets, an unaligned shape with padded operands (single-half loads, A element by
  // element), a full 64-row tile with a short K, K = 0 (C = beta * C), 8-byte and 4-byte
  // alignment classes (VEC 4 / 2; A's fragments element by element where they are not aligned
  // for one load), two row tiles (M = 40) with a K that ends inside a warp step, and a narrow N
  // with a deep K (many slices).
  const Shape shapes[] = {{1, 4096, 4096, 0, false}, {16, 4096, 4096, 0, false}, {5, 1000, 999, 3, true},
                          {64, 768, 64, 0, true},    {24, 520, 0, 0, false},     {16, 2000, 1000, 4, true},
                          {3, 3000, 1500, 2, true},  {40, 1536, 1224, 0, true},  {1, 256, 8200, 0, false}};
  int checked = 0, split = 0, clustered = 0;
  uint64_t seed = 300;
  for (DType t : {DType::bf16, DType::f16}) {
    for (const Shape& s : shapes)
      for (const char* layout : {"NN", "NT", "TN", "TT"}) {
        if (!s.all_layouts && layout[0] == 'T') continue;
        GemmProblem p = GemmProblem::make(s.m, s.n, s.k, layout, t);
        p.lda = p.eff_lda() + s.pad, p.ldb = p.eff_ldb() + s.pad, p.ldc = p.eff_ldc() + s.pad;
        p.align = GemmProblem::alignment_of(p.eff_lda(), p.eff_ldb(), p.eff_ldc(), element_bytes(p.dtype));
        const Inputs in = make_inputs(p, ++seed);
        // The default, two sampled configs and a split-K one, compiled side by side.
        std::vector<Config> configs{f.default_config(p, *dev)};
        for (const auto& c : f.sample(p, *dev, 2, ++seed)) configs.push_back(c);
        for (const auto& c : fs.sample(p, *dev, 1, ++seed)) configs.push_back(c);
        for (const Family* g : {&fd, &fl}) // (deep rings, load variants: where the shape has them)
          for (const auto& c : g->sample(p, *dev, 1, ++seed)) configs.push_back(c);
        if (clusters)
          for (const Family* g : {&fc, &fcs})
            for (const auto& c : g->sample(p, *dev, 1, ++seed)) configs.push_back(c);
        std::vector<std::future<std::shared_ptr<const CompiledKernel>>> kernels;
        for (const auto& c : configs) kernels.push_back(compiler.compile_async(compile_request(f, c, p, dev->arch)));
        // A future gives its value once; both beta cases run the same kernels.
        std::vector<std::shared_ptr<const CompiledKernel>> compiled;
        for (auto& fu : kernels) compiled.push_back(fu.get());
        for (const float beta : {0.0f, 0.5f}) {
          const float alpha = beta == 0.0f ? 1.0f : 0.75f;
          std::vector<uint16_t> before;
          double cublas_error = NAN;
          if (s.k > 0) { // cuBLAS's own checks want lda >= 1 row
            const auto out = run(in, nullptr, nullptr, cublas, alpha, beta, before);
            // cuBLAS is not held to the gate (some of its half kernels round split-K partials or
            // the product to the output type; its violations are printed), but within 2x the norm
            // bound it says the reference is right.
            double bound = 0;
            size_t violations = 0;
            cublas_error = error_of(in, before, out, alpha, beta, &bound, &violations);
            EXPECT_LE(cublas_error, 2 * bound) << "cuBLAS on " << p.key();
            if (violations)
              std::cout << "[ ktune    ] cuBLAS on " << p.key() << " beta " << beta << ": " << violations
                        << " elements over the per-element bound\n";
          }
          for (size_t i = 0; i < configs.size(); ++i) {
            const auto& k = compiled[i];
            Module m(k->cubin, k->lowered_names, "gemm_skinny16 " + configs[i].to_json());
            const LaunchPlan plan = f.launch_plan(configs[i], p);
            const auto out = run(in, &m, &plan, cublas, alpha, beta, before);
            double bound = 0;
            const double e = error_of(in, before, out, alpha, beta, &bound);
            EXPECT_LE(e, bound) << p.key() << " pad " << s.pad << " alpha=" << alpha << " beta=" << beta << " "
                              << configs[i].to_json() << " (NaN: a non-finite result or a write beyond N)";
            std::cout << "[ ktune    ] " << p.key() << " beta " << beta << " " << configs[i].short_string() << ": error " << e
                      << ", cuBLAS " << cublas_error << "\n";
            ++checked;
            split += configs[i]["SPLITK"] > 1;
            clustered += configs[i]["CL"] > 1;
          }
        }
      }
  }
  EXPECT_GE(checked, 200);
  EXPECT_GE(split, 20);
  if (clusters) {
    EXPECT_GE(clustered, 40);
  }
}

// The test's own conversions (no GPU needed): known encodings and round trips.
TEST(Skinny16Reference, HostHalfConversionsRoundTrip) {
  EXPECT_EQ(to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(to_f16(1.0f), 0x3c00);
  EXPECT_EQ(to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  for (uint32_t h = 0; h < 0x10000; h += 7) {
    if ((h & 0x7c00) == 0x7c00) continue;
    EXPECT_EQ(to_f16(from_f16(uint16_t(h))) & 0x7fff, h & 0x7fff);
    EXPECT_EQ(to_bf16(from_bf16(uint16_t(h))), uint16_t(h));
  }
  // The rule of docs/TEMPLATES.md: (0.5 + 1.5 / sqrt(M N)) u in quadrature with 0.1 K 2^-24 in the norm.
  EXPECT_DOUBLE_EQ(half_tolerance(false, 0, 1, 1), (0.5 + 1.5) * std::ldexp(1.0, -8));
  EXPECT_DOUBLE_EQ(half_tolerance(true, 1024, 64, 1024),
                   std::hypot((0.5 + 1.5 / 256) * std::ldexp(1.0, -11), 102.4 * std::ldexp(1.0, -24)));
}
