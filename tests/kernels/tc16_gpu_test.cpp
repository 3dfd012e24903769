// gemm_tc16 (BF16 / FP16 on mma.sync) against an FP64 reference computed on the CPU from the same
// rounded inputs: aligned and unaligned shapes and pointers (packed operands, the element-load
// form), every layout, split-K, beta 0 on a NaN C and beta != 0, both dtypes. Passes on an H100
// and an H200 (logs in docs/runs).
//
// Tolerance rule (relative Frobenius error of C): GemmOp::tolerance, the tuner's own rule
// (u(out) + K * 2^-23; docs/TEMPLATES.md, "Verification"), through half_reference.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <future>
#include <iostream>
#include <random>
#include <set>

#include "gemm/gemm_families.h"
#include "kernels/half_reference.h"
#include "gpu_env.h"
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

struct Case {
  size_t inst;
  Config c;
  bool forced; // PACK = 0 on an unaligned problem: the element-load kernel (CP16 = 0), which the
               // descriptor offers only beyond the workspace cap, run here on a small problem
  std::future<std::shared_ptr<const CompiledKernel>> kernel;
};

} // namespace

// Sampled configs of every path against the FP64 reference, both dtypes: aligned row-major
// problems (the first version's), column-major A and B, unaligned shapes (packed), 2-byte-aligned
// pointers, split-K, beta 0 on a NaN C and beta != 0, K = 0, a single row; the element-load form
// on small unaligned shapes; cuBLAS on the same inputs held to the same rule. Compiles are queued
// at once (every core) and the references computed while they run.
TEST(Tc16Gpu, SampledConfigsMatchFp64ReferenceInBf16AndFp16) {
  std::string why;
  const DeviceInfo* dev = ktune::testing::first_gpu(&why);
  if (!dev) GTEST_SKIP() << "no GPU: " << why;
  if (dev->arch_number() < 80) GTEST_SKIP() << "gemm_tc16 needs sm_80";
  CudaContext ctx(dev->ordinal);
  Compiler compiler;
  Cublas cublas;
  const Family f = find_family("gemm_tc16");
  SpaceRestriction split;
  split.domains = {{"SPLITK", {2, 4, 8}}};
  const Family fs = f.restricted(split);
  struct Shape {
    int64_t m, n, k, pad;
    float alpha, beta;
    const char* layout;
    int64_t shift; // pointers this many halves off alignment (then the alignment class is 2)
    int sampled, split; // configs drawn from the whole space, and with SPLITK > 1
    bool elements;      // also the element-load form (unaligned shapes)
    bool ladder = false; // also one config of every (SMEM, LDM, CPA) the shape allows (the ladder's rungs)
  };
  const Shape shapes[] = {
      // Aligned, row-major (the first version's cases): dividing and not, padded rows, K = 0, one row.
      {256, 256, 256, 0, 1, 0, "NN", 0, 2, 1, false},
      {1000, 1032, 520, 8, 0.75f, 0.5f, "NN", 0, 2, 1, false, true},
      {64, 128, 1024, 0, 1, -1, "NN", 0, 2, 1, false},
      {7, 1024, 64, 16, 1, 0, "NN", 0, 2, 0, false},
      {1, 4096, 512, 0, 1, 0, "NN", 0, 2, 1, false},
      {128, 256, 0, 0, 1, 0.5f, "NN", 0, 2, 0, false},
      {300, 200, 136, 0, 1, 1, "NN", 0, 2, 1, false},
      // Aligned, column-major A and / or B.
      {512, 384, 1024, 0, 1, 0, "NT", 0, 2, 1, false, true},
      {256, 512, 512, 0, 1, 1, "TN", 0, 2, 1, false, true},
      {1000, 1032, 520, 8, 0.5f, 0.5f, "TT", 0, 2, 1, false, true},
      {128, 1024, 2048, 0, 1, 0, "NT", 0, 1, 2, false},
      // Unaligned (odd M, N, K, odd leading dimensions): packed, or the element-load form.
      {301, 203, 137, 0, 1, 0.5f, "NN", 0, 2, 1, true, true},
      {77, 1001, 33, 3, 0.75f, 0, "NT", 0, 2, 1, true},
      {1, 4095, 4093, 0, 1, 0, "TN", 0, 2, 1, false},
      {301, 203, 137, 1, 1, -1, "TT", 0, 2, 1, true},
      {129, 257, 65, 0, 1, 0.5f, "TN", 1, 2, 1, true, true}, // 2-byte-aligned pointers
      {256, 256, 256, 0, 1, 0, "NT", 1, 1, 1, false},  // aligned shape, unaligned pointers
  };
  std::vector<Instance> insts;
  std::vector<Case> cases;
  uint64_t seed = 100;
  int ladder_configs = 0;
  for (DType t : {DType::bf16, DType::f16})
    for (const Shape& s : shapes) {
      GemmProblem p = GemmProblem::make(s.m, s.n, s.k, s.layout, t);
      p.lda = std::max<int64_t>(1, p.min_lda()) + s.pad, p.ldb = std::max<int64_t>(1, p.min_ldb()) + s.pad;
      p.ldc = p.min_ldc() + s.pad;
      p.alpha = s.alpha, p.beta = s.beta;
      p.align = s.shift ? 2 : GemmProblem::alignment_of(p.lda, p.ldb, p.ldc, 2);
      insts.emplace_back(p, s.shift, ++seed);
      const size_t i = insts.size() - 1;
      std::vector<std::pair<Config, bool>> configs;
      for (const Config& c : f.sample(p, *dev, size_t(s.sampled), ++seed)) configs.emplace_back(c, false);
      for (const Config& c : fs.sample(p, *dev, size_t(s.split), ++seed)) configs.emplace_back(c, false);
      if (s.ladder)
        for (int smem : {0, 1, 2})
          for (int ldm : {0, 1})
            for (int cpa : {0, 1}) {
              SpaceRestriction r;
              r.domains = {{"SMEM", {smem}}, {"LDM", {ldm}}, {"CPA", {cpa}}};
              for (const Config& c : f.restricted(r).sample(p, *dev, 1, ++seed)) {
                configs.emplace_back(c, false);
                ++ladder_configs;
              }
            }
      if (s.elements) {
        // Packed configs' tilings, unpacked: CP16 = 0 since the problem is unaligned. One unsplit,
        // one split.
        for (Config c : f.sample(p, *dev, 1, ++seed)) {
          c.set("PACK", 0), c.set("SPLITK", 1);
          configs.emplace_back(c, true);
        }
        for (Config c : fs.sample(p, *dev, 1, ++seed)) {
          c.set("PACK", 0);
          configs.emplace_back(c, true);
        }
      }
      for (auto& [c, forced] : configs) {
        CompileRequest r;
        if (forced) {
          r.source = f.source(), r.source_name = f.source_path(), r.name_expressions = f.kernel_names(c, p);
          r.arch = dev->arch, r.context = "gemm_tc16 element loads " + c.to_json() + " " + p.key();
        } else {
          r = compile_request(f, c, p, dev->arch);
        }
        cases.push_back(Case{i, c, forced, compiler.compile_async(std::move(r))});
      }
    }
  {
    std::vector<std::future<void>> refs;
    for (auto& in : insts) refs.push_back(std::async(std::launch::async, [&in] { in.compute_reference(); }));
    for (auto& r : refs) r.get();
  }

  int checked = 0, packed = 0, split_k = 0, elements = 0;
  std::set<std::string> layouts;
  for (size_t i = 0; i < insts.size(); ++i) {
    const Instance& in = insts[i];
    const GemmProblem& p = in.p;
    const Buf A = upload(in.a, in.shift), B = upload(in.b, in.shift), Cb = upload(in.c0, in.shift);
    double cublas_error = 0;
    if (p.k > 0) { // K = 0: cuBLAS's own checks want lda >= 1 row
      cublas.gemm_half(p, in.args(A, B, Cb, nullptr), nullptr);
      check_cu(driver().cuCtxSynchronize(), "cuCtxSynchronize", "cuBLAS " + p.key());
      std::vector<uint16_t> outb(in.c0.size());
      check_cu(driver().cuMemcpyDtoH(outb.data(), Cb.ptr(), outb.size() * 2), "cuMemcpyDtoH", "tc16 test");
      // cuBLAS is not held to the gate (some of its half kernels round split-K partials or the
      // product to the output type; its violations are printed), but within 2x the norm bound it
      // says the reference is right.
      cublas_error = in.error(outb, false);
      EXPECT_LE(cublas_error, 2 * in.tol) << "cuBLAS on " << p.key();
      if (in.violations) std::cout << "[ ktune    ] cuBLAS on " << p.key() << ": " << in.violations << " elements over the per-element bound\n";
    }
    for (auto& cs : cases) {
      if (cs.inst != i) continue;
      const std::string what = p.key() + " " + p.layout_string() + " lda=" + std::to_string(p.eff_lda()) +
                               " ldc=" + std::to_string(p.eff_ldc()) + " shift=" + std::to_string(in.shift) +
                               " alpha=" + std::to_string(p.alpha) + " beta=" + std::to_string(p.beta) + " " +
                               cs.c.to_json() + (cs.forced ? " (element loads)" : "");
      std::shared_ptr<const CompiledKernel> k;
      try {
        k = cs.kernel.get();
      } catch (const std::exception& e) {
        ADD_FAILURE() << what << ": " << e.what();
        continue;
      }
      Module m(k->cubin, k->lowered_names, "gemm_tc16 " + what);
      const LaunchPlan plan = f.launch_plan(cs.c, p);
      const Buf C = upload(in.c0, in.shift);
      DeviceBuffer ws;
      if (plan.workspace_bytes) {
        ws = DeviceBuffer(plan.workspace_bytes, "tc16 test workspace");
        // NaN bytes: nothing may depend on the workspace's contents before the plan runs.
        check_cu(driver().cuMemsetD8Async(ws.ptr(), 0xff, plan.workspace_bytes, nullptr), "cuMemsetD8Async", what);
      }
      launch_gemm(m, plan, in.args(A, B, C, plan.workspace_bytes ? &ws : nullptr), nullptr);
      check_cu(driver().cuCtxSynchronize(), "cuCtxSynchronize", "tc16 test " + what);
      std::vector<uint16_t> out(in.c0.size());
      check_cu(driver().cuMemcpyDtoH(out.data(), C.ptr(), out.size() * 2), "cuMemcpyDtoH", "tc16 test");
      const double e = in.error(out);
      EXPECT_LE(e, in.tol) << what << " (NaN: a non-finite result or a write beyond N)";
      std::cout << "[ ktune    ] " << p.key() << " " << p.layout_string() << (in.shift ? " shifted" : "") << " "
                << cs.c.short_string() << (cs.forced ? " elements" : "") << ": error " << e << ", cuBLAS "
                << cublas_error << "\n";
      ++checked;
      packed += cs.c["PACK"];
      split_k += cs.c["SPLITK"] > 1;
      elements += cs.forced;
      layouts.insert(p.layout_string());
    }
  }
  EXPECT_GE(checked, 100);
  EXPECT_GE(packed, 12);
  EXPECT_GE(split_k, 20);
  EXPECT_GE(elements, 8);
  EXPECT_EQ(layouts.size(), 4u);
  // Every combination on each of the six ladder shapes (the unaligned ones packed), both dtypes.
  EXPECT_EQ(ladder_configs, 2 * 6 * 12);
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
