// Correctness of every GEMM family on a real GPU against the FP64 reference (tuner/gemm_op.h):
// fresh random inputs per case, C poisoned with NaN when beta = 0, every element checked, and
// C's padding checked for stray writes. Cases rotate through layouts, alpha, beta and padded
// leading dimensions so that the product of all of them is covered across configs.
#include <gtest/gtest.h>

#include <iostream>

#include "gpu_env.h"
#include "ktune/compiler.h"
#include "runtime/cuda_check.h"
#include "runtime/cublas.h"
#include "tuner/gemm_op.h"
#include "runtime/gemm_launch.h"
#include "ktune/gemm_problem.h"

using namespace ktune;

namespace {

const char* kLayouts[] = {"NN", "NT", "TN", "TT"};

struct Shape {
  int64_t m, n, k;
};

const std::vector<Shape> kSmallShapes = {{1, 1, 1}, {7, 13, 5}, {33, 65, 17}, {127, 129, 131}, {1000, 1000, 1000}, {5, 3, 0}};

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// Case i of a config whose global loads are vec floats wide: alpha in {1, 0.5}, beta in
// {0, 1, -2}, leading dimensions at the minimum or padded by one or two vectors beyond it (kept
// a multiple of vec so the config stays valid).
GemmProblem make_case(const Shape& s, const char* layout, uint64_t i, int vec) {
  GemmProblem p = GemmProblem::make(s.m, s.n, s.k, layout);
  const int64_t pad = int64_t(i % 3) * vec;
  p.lda = round_up(std::max<int64_t>(1, p.min_lda()), vec) + pad;
  p.ldb = round_up(std::max<int64_t>(1, p.min_ldb()), vec) + pad;
  p.ldc = round_up(p.min_ldc(), vec) + pad;
  p.align = GemmProblem::alignment_of(p.lda, p.ldb, p.ldc);
  p.alpha = i % 2 ? 0.5f : 1.0f;
  const float betas[] = {0.0f, 1.0f, -2.0f};
  p.beta = betas[(i / 2) % 3];
  return p;
}

// Floats the config's loads need leading dimensions aligned to. Packing configs take any
// alignment, so their cases keep odd leading dimensions; gemm_tf32x3's unpacked form copies 16 bytes.
int load_width(const Family& f, const Config& c) {
  if (c.has("PACK") && c["PACK"]) return 1;
  if (c.has("VEC")) return c["VEC"];
  return f.name() == "gemm_tf32x3" ? 4 : 1;
}

struct Tally {
  uint64_t passed = 0, failed = 0, invalid = 0;
  std::set<std::string> layouts, alphas, betas;
  // Folds in the tally of another run (tests that run configs in several batches).
  void add(const Tally& t) {
    passed += t.passed, failed += t.failed, invalid += t.invalid;
    layouts.insert(t.layouts.begin(), t.layouts.end());
    alphas.insert(t.alphas.begin(), t.alphas.end());
    betas.insert(t.betas.begin(), t.betas.end());
  }
};

class GemmGpu : public ::testing::Test {
 protected:
  // Compiles every (config, layout) ahead on all cores, then runs each config on every shape it
  // is valid for. A CUDA error aborts the test: after a sticky error the context is unusable.
  Tally run(const Family& f, const std::vector<Config>& configs, const std::vector<Shape>& shapes,
            const std::vector<const char*>& layouts, uint64_t seed_base, const char* compile_shape = "2048x2048x2048") {
    const DeviceInfo& dev = *dev_;
    Compiler compiler;
    GemmOp op(compiler, dev);
    struct Job {
      Config c;
      const char* layout;
      std::future<std::shared_ptr<const CompiledKernel>> cubin;
    };
    std::vector<Job> jobs;
    // The cubin does not depend on the shape; compile_shape is one the given configs are valid
    // for (2048^3 for the general families: tiles and split-K divide it, its workspace fits), so
    // compile_request accepts it. Packing configs are for unaligned or undivided shapes only, so
    // they compile at 2047x2049x2051 instead.
    for (const auto& c : configs)
      for (const char* l : layouts) {
        GemmProblem at = GemmProblem::parse(compile_shape, l);
        if (!f.valid(c, at, dev)) at = GemmProblem::parse("2047x2049x2051", l);
        jobs.push_back({c, l, compiler.compile_async(compile_request(f, c, at, dev.arch))});
      }
    Tally t;
    uint64_t i = seed_base;
    for (auto& job : jobs) {
      const auto k = job.cubin.get();
      Module m(k->cubin, k->lowered_names, f.name() + " " + job.c.to_json());
      const int vec = load_width(f, job.c);
      for (const Shape& s : shapes) {
        const GemmProblem p = make_case(s, job.layout, i++, vec);
        if (!f.valid(job.c, p, dev)) {
          ++t.invalid;
          continue;
        }
        const LaunchPlan plan = f.launch_plan(job.c, p);
        op.ensure_workspace(plan.workspace_bytes);
        const auto r = op.check(p, i, [&](const KtuneGemmArgs& a, CUstream st) { launch_gemm(m, plan, a, st); }, nullptr,
                                f.numerics()); // the family's rule, as the tuner's gate applies it
        if (r.pass) {
          ++t.passed;
          t.layouts.insert(job.layout);
          t.alphas.insert(std::to_string(p.alpha));
          t.betas.insert(std::to_string(p.beta));
        } else {
          ++t.failed;
          ADD_FAILURE() << f.name() << " " << job.c.to_json() << " on " << p.key() << " lda=" << p.lda << " ldb=" << p.ldb
                        << " ldc=" << p.ldc << " alpha=" << p.alpha << " beta=" << p.beta << ": " << r.summary();
        }
      }
    }
    std::cout << "[ ktune    ] " << f.name() << ": " << configs.size() << " configs, " << t.passed << " cases passed, "
              << t.failed << " failed, " << t.invalid << " (config, shape) pairs not valid and skipped\n";
    return t;
  }

  void SetUp() override {
    std::string why;
    dev_ = ktune::testing::first_gpu(&why);
    if (!dev_) GTEST_SKIP() << "no GPU: " << why;
    ctx_ = std::make_unique<CudaContext>(dev_->ordinal);
  }

  const DeviceInfo* dev_ = nullptr;
  std::unique_ptr<CudaContext> ctx_;
};

std::vector<Config> all_configs(const Family& f, const GemmProblem& p, const DeviceInfo& d) {
  std::vector<Config> out;
  f.enumerate(p, d, [&](const Config& c) {
    out.push_back(c);
    return true;
  });
  return out;
}

// A family with one parameter's domain cut to values, and n configs of it sampled at shape.
std::vector<Config> sample_with(const char* family, const char* param, std::vector<int> values, const GemmProblem& at,
                                const DeviceInfo& d, size_t n, uint64_t seed, Family* out) {
  SpaceRestriction r;
  r.domains[param] = std::move(values);
  *out = find_family(family).restricted(r);
  return out->sample(at, d, n, seed);
}
std::vector<Config> simt_sample_with(const char* param, int value, const char* shape, const DeviceInfo& d, size_t n,
                                     uint64_t seed, Family* out) {
  return sample_with("gemm_simt", param, {value}, GemmProblem::parse(shape), d, n, seed, out);
}

// Config c of family f at p and cuBLAS SGEMM, each checked against the FP64 reference on the same
// inputs (seed): the two checks, ours first (the 3xTF32 families' accuracy tests).
std::pair<VerifyResult, VerifyResult> ours_and_sgemm(Compiler& compiler, GemmOp& op, Cublas& cublas, const Family& f,
                                                     const Config& c, const GemmProblem& p, const DeviceInfo& dev,
                                                     uint64_t seed) {
  const auto k = compiler.compile(compile_request(f, c, p, dev.arch));
  Module m(k->cubin, k->lowered_names, f.name() + " " + c.to_json());
  const LaunchPlan plan = f.launch_plan(c, p);
  op.ensure_workspace(plan.workspace_bytes);
  auto ours = op.check(p, seed, [&](const KtuneGemmArgs& a, CUstream st) { launch_gemm(m, plan, a, st); }, nullptr);
  auto theirs = op.check(p, seed, [&](const KtuneGemmArgs& a, CUstream st) { cublas.sgemm(p, a, st); }, nullptr);
  return {std::move(ours), std::move(theirs)};
}

void expect_full_coverage(const Tally& t) {
  EXPECT_EQ(t.failed, 0u);
  EXPECT_GT(t.passed, 0u);
  EXPECT_EQ(t.layouts.size(), 4u);
  EXPECT_EQ(t.alphas.size(), 2u);
  EXPECT_EQ(t.betas.size(), 3u);
}

} // namespace

TEST_F(GemmGpu, NaiveEveryConfigMatchesFp64Reference) {
  const Family f = find_family("gemm_naive");
  const auto configs = all_configs(f, GemmProblem::parse("1000x1000x1000"), *dev_);
  expect_full_coverage(run(f, configs, kSmallShapes, {"NN", "NT", "TN", "TT"}, 1000));
}

TEST_F(GemmGpu, SmemEveryConfigMatchesFp64Reference) {
  const Family f = find_family("gemm_smem");
  const auto configs = all_configs(f, GemmProblem::parse("1000x1000x1000"), *dev_);
  expect_full_coverage(run(f, configs, kSmallShapes, {"NN", "NT", "TN", "TT"}, 2000));
}

TEST_F(GemmGpu, Simt300SampledConfigsMatchFp64Reference) {
  const Family f = find_family("gemm_simt");
  const auto configs = f.sample(GemmProblem::parse("1000x1000x1000"), *dev_, 300, 20261121);
  ASSERT_EQ(configs.size(), 300u);
  expect_full_coverage(run(f, configs, kSmallShapes, {"NN", "NT", "TN", "TT"}, 3000));
}

TEST_F(GemmGpu, SimtEvenConfigsMatchFp64ReferenceOnDividingShapes) {
  Family f = find_family("gemm_simt");
  const auto configs = simt_sample_with("EVEN", 1, "512x512x512", *dev_, 40, 77, &f);
  ASSERT_EQ(configs.size(), 40u);
  const Tally t = run(f, configs, {{512, 512, 512}, {4096, 4096, 4096}}, {"NN", "NT", "TN", "TT"}, 4000);
  EXPECT_EQ(t.failed, 0u);
  EXPECT_GE(t.passed, 40u * 4);
}

TEST_F(GemmGpu, SimtSubsetMatchesFp64ReferenceAt2999And4096) {
  const Family f = find_family("gemm_simt");
  const auto& d = *dev_;
  // Configs valid for the unaligned 2999^3 (VEC = 1, or packed) and for 4096^3 without EVEN; one
  // layout each, rotating, to bound the cost of the FP64 reference at these sizes.
  const auto at2999 = f.sample(GemmProblem::parse("2999x2999x2999"), d, 12, 5);
  const auto at4096 = f.sample(GemmProblem::parse("4096x4096x4096"), d, 12, 6);
  Tally total;
  for (size_t i = 0; i < at2999.size(); ++i) {
    total.add(run(f, {at2999[i]}, {{2999, 2999, 2999}}, {kLayouts[i % 4]}, 5000 + 10 * i));
  }
  for (size_t i = 0; i < at4096.size(); ++i) {
    total.add(run(f, {at4096[i]}, {{4096, 4096, 4096}}, {kLayouts[i % 4]}, 6000 + 10 * i));
  }
  EXPECT_EQ(total.failed, 0u);
  EXPECT_EQ(total.passed, at2999.size() + at4096.size());
}

TEST_F(GemmGpu, SimtPackedConfigsMatchFp64ReferenceOnAnyShapeAndAlignment) {
  // PACK = 1: gemm_pack's aligned, tile-padded copies of A and B (after the split-K slices in the
  // workspace), the main kernel's unchecked vector loads of them, and C stored by element.
  Family f = find_family("gemm_simt");
  const auto configs = simt_sample_with("PACK", 1, "1000x1000x1001", *dev_, 60, 91, &f);
  ASSERT_EQ(configs.size(), 60u);
  int split = 0;
  for (const auto& c : configs) split += c["SPLITK"] > 1;
  EXPECT_GT(split, 0);
  const std::vector<Shape> shapes = {{1, 1, 1}, {7, 13, 5}, {33, 65, 17}, {127, 129, 131}, {300, 301, 299}, {5, 3, 0}};
  expect_full_coverage(run(f, configs, shapes, {"NN", "NT", "TN", "TT"}, 8000));
}

TEST_F(GemmGpu, SkinnySampledConfigsMatchFp64Reference) {
  const Family f = find_family("gemm_skinny");
  // Which parameters apply depends on B's layout and on M, so configs are drawn per layout and
  // per row count; each then runs on every test shape it is valid for.
  const std::vector<Shape> shapes = {{1, 1, 1},       {1, 4099, 333}, {3, 13, 5},    {16, 257, 131},
                                     {16, 4096, 4096}, {48, 1000, 1000}, {64, 65, 17}, {5, 3, 0}};
  Tally total;
  uint64_t seed = 7000;
  for (const char* rows : {"1", "16", "48"})
    for (const char* l : kLayouts) {
      const std::string at = std::string(rows) + "x2048x2048";
      const auto configs = f.sample(GemmProblem::parse(at, l), *dev_, 16, seed);
      ASSERT_EQ(configs.size(), 16u) << at << " " << l;
      total.add(run(f, configs, shapes, {l}, seed * 10, at.c_str()));
      seed += 1;
    }
  expect_full_coverage(total);
}

TEST_F(GemmGpu, SkinnyStagedConfigsMatchFp64Reference) {
  // ST >= 2: A and B through a ring of cp.async stages (zero-filled beyond M, N and each K slice),
  // with and without clusters and split-K; row-major B only (layouts NN and TN).
  const std::vector<Shape> shapes = {{1, 1, 1},       {1, 4099, 333},   {3, 13, 5},   {16, 257, 131},
                                     {16, 4096, 4096}, {48, 1000, 1000}, {64, 65, 17}, {5, 3, 0}};
  Tally total;
  uint64_t seed = 9100;
  int clustered = 0, split = 0;
  for (const char* rows : {"1", "16", "48"})
    for (const char* l : {"NN", "TN"}) {
      Family f = find_family("gemm_skinny");
      const std::string at = std::string(rows) + "x2048x2048";
      const auto configs = sample_with("gemm_skinny", "ST", {2, 3, 4, 6}, GemmProblem::parse(at, l), *dev_, 16, seed, &f);
      ASSERT_EQ(configs.size(), 16u) << at << " " << l;
      for (const auto& c : configs) clustered += c["CL"], split += c["SPLITK"] > 1;
      total.add(run(f, configs, shapes, {l}, seed * 10, at.c_str()));
      seed += 1;
    }
  EXPECT_GT(clustered, 0);
  EXPECT_GT(split, 0);
  EXPECT_EQ(total.failed, 0u);
  EXPECT_GT(total.passed, 96u);
  EXPECT_EQ(total.layouts.size(), 2u);
  EXPECT_EQ(total.alphas.size(), 2u);
  EXPECT_EQ(total.betas.size(), 3u);
}

TEST_F(GemmGpu, Tf32x3SampledConfigsMatchFp64Reference) {
  // Both forms over all four layouts: unpacked (16-byte cp.async, no bounds checks) on shapes the
  // tiles divide, packed on odd shapes and leading dimensions; split-K in both.
  const std::vector<Shape> dividing = {{512, 512, 512}, {256, 768, 1024}, {1024, 256, 2048}};
  const std::vector<Shape> odd = {{1, 1, 1}, {7, 13, 5}, {33, 65, 17}, {127, 129, 131}, {300, 301, 299}, {5, 3, 0}};
  Tally total;
  int split = 0;
  uint64_t seed = 12000;
  for (const char* l : kLayouts) {
    Family f = find_family("gemm_tf32x3");
    const auto unpacked = sample_with("gemm_tf32x3", "PACK", {0}, GemmProblem::parse("2048x2048x2048", l), *dev_, 10, seed, &f);
    ASSERT_EQ(unpacked.size(), 10u) << l;
    for (const auto& c : unpacked) split += c["SPLITK"] > 1;
    const Tally t = run(f, unpacked, dividing, {l}, seed * 10);
    EXPECT_GE(t.passed, 10u) << l; // 512^3 is divided by every tile and slice count of the space
    total.add(t);
    const auto packed = sample_with("gemm_tf32x3", "PACK", {1}, GemmProblem::parse("1000x1000x1001", l), *dev_, 10, seed + 1, &f);
    ASSERT_EQ(packed.size(), 10u) << l;
    for (const auto& c : packed) split += c["SPLITK"] > 1;
    total.add(run(f, packed, odd, {l}, seed * 10 + 5));
    seed += 2;
  }
  EXPECT_GT(split, 0);
  expect_full_coverage(total);
}

TEST_F(GemmGpu, Tf32x3ErrorIsComparableToCublasSgemm) {
  // The point of the family: FP32 accuracy from TF32 tensor cores. On the same inputs (same
  // seed), its error against the FP64 product must stay within twice cuBLAS's FP32 SGEMM error
  // (measured on the H100, 2026-11-22: 0.4-0.6 of it with CVT = 1), at a long K where
  // accumulation error dominates and at an unaligned shape.
  const Family f = find_family("gemm_tf32x3");
  Compiler compiler;
  GemmOp op(compiler, *dev_);
  Cublas cublas;
  struct Case {
    const char* shape;
    Config c;
  };
  const std::vector<Case> cases = {
      {"1024x1024x1024", Config::from_json(R"({"BM":128,"BN":128,"WM":64,"WN":64,"BK":16,"ST":4,"KU":1,"FOLD":1,"SPLITK":1,"SWZ":8,"PACK":0})")},
      {"512x512x32768", Config::from_json(R"({"BM":128,"BN":128,"WM":64,"WN":32,"BK":32,"ST":3,"KU":1,"FOLD":4,"SPLITK":8,"SWZ":8,"PACK":0})")},
      {"999x1001x4099", Config::from_json(R"({"BM":128,"BN":128,"WM":64,"WN":32,"BK":16,"ST":4,"KU":0,"FOLD":2,"SPLITK":2,"SWZ":8,"PACK":1})")}};
  for (const auto& cs : cases)
    for (int cvt : {0, 1}) { // both ways of splitting the operands
      Config c = cs.c;
      c.set("CVT", cvt);
      const GemmProblem p = GemmProblem::parse(cs.shape);
      ASSERT_TRUE(f.valid(c, p, *dev_)) << cs.shape << " " << c.to_json();
      const auto [ours, theirs] = ours_and_sgemm(compiler, op, cublas, f, c, p, *dev_, 31);
      std::cout << "[ ktune    ] " << cs.shape << " CVT = " << cvt << ": relative error gemm_tf32x3 " << ours.rel_error
                << ", cuBLAS SGEMM " << theirs.rel_error << "\n";
      EXPECT_TRUE(ours.pass) << ours.summary();
      EXPECT_TRUE(theirs.pass) << theirs.summary();
      EXPECT_LE(ours.rel_error, 2 * theirs.rel_error) << cs.shape << " " << c.to_json();
    }
}

TEST_F(GemmGpu, WgmmaTf32x3SampledConfigsMatchFp64Reference) {
  // gemm_wgmma_tf32x3 (sm_90a): the split pass (every layout: transposes and packs into K-major
  // copies), TMA over the stacked big / small halves with both swizzles (BK 16 and 32), one and
  // two consumer warpgroups, split-K, on odd shapes and leading dimensions and on shapes with
  // several K tiles and tiles of C.
  if (dev_->arch_number() != 90) GTEST_SKIP() << "gemm_wgmma_tf32x3 is sm_90a only; this GPU is " << dev_->arch;
  const std::vector<Shape> shapes = {{1, 1, 1},     {7, 13, 5},      {33, 65, 17},     {127, 129, 131},
                                     {300, 301, 299}, {512, 512, 512}, {1000, 1000, 1000}, {5, 3, 0}};
  Tally total;
  int split = 0, bk16 = 0, one_wg = 0, folded = 0;
  uint64_t seed = 15000;
  for (const char* l : kLayouts) {
    const Family f = find_family("gemm_wgmma_tf32x3");
    auto configs = f.sample(GemmProblem::parse("2048x2048x2048", l), *dev_, 12, seed);
    ASSERT_EQ(configs.size(), 12u) << l;
    configs.push_back(f.default_config(GemmProblem::parse("2048x2048x2048", l), *dev_));
    for (const auto& c : configs)
      split += c["SPLITK"] > 1, bk16 += c["BK"] == 16, one_wg += c["WG"] == 1, folded += c["FOLD"] > 1;
    total.add(run(f, configs, shapes, {l}, seed * 10));
    seed += 1;
  }
  EXPECT_GT(split, 0);
  EXPECT_GT(bk16, 0);
  EXPECT_GT(one_wg, 0);
  EXPECT_GT(folded, 0);
  expect_full_coverage(total);
}

TEST_F(GemmGpu, WgmmaTf32x3ErrorIsComparableToCublasSgemm) {
  // As Tf32x3ErrorIsComparableToCublasSgemm for the wgmma form: on the same inputs its error
  // against the FP64 product must stay at or below cuBLAS's FP32 SGEMM error (issue 16: "at or
  // below"), at square, long-K and unaligned shapes.
  if (dev_->arch_number() != 90) GTEST_SKIP() << "gemm_wgmma_tf32x3 is sm_90a only; this GPU is " << dev_->arch;
  const Family f = find_family("gemm_wgmma_tf32x3");
  Compiler compiler;
  GemmOp op(compiler, *dev_);
  Cublas cublas;
  struct Case {
    const char* shape;
    const char* layout;
    Config c;
  };
  const std::vector<Case> cases = {
      {"1024x1024x1024", "NN", Config::from_json(R"({"BM":128,"BN":128,"BK":32,"WG":2,"ST":3,"FOLD":1,"SWZ":8,"SPLITK":1})")},
      {"2048x2048x2048", "TN", Config::from_json(R"({"BM":128,"BN":128,"BK":16,"WG":2,"ST":6,"FOLD":2,"SWZ":8,"SPLITK":1})")},
      {"4096x4096x4096", "NN", Config::from_json(R"({"BM":128,"BN":128,"BK":32,"WG":2,"ST":3,"FOLD":2,"SWZ":8,"SPLITK":1})")},
      {"512x512x32768", "NN", Config::from_json(R"({"BM":128,"BN":128,"BK":32,"WG":2,"ST":3,"FOLD":1,"SWZ":8,"SPLITK":8})")},
      {"999x1001x4099", "NT", Config::from_json(R"({"BM":128,"BN":64,"BK":16,"WG":1,"ST":6,"FOLD":2,"SWZ":4,"SPLITK":2})")}};
  for (const auto& cs : cases) {
    const GemmProblem p = GemmProblem::parse(cs.shape, cs.layout);
    ASSERT_TRUE(f.valid(cs.c, p, *dev_)) << cs.shape << " " << cs.c.to_json();
    const auto [ours, theirs] = ours_and_sgemm(compiler, op, cublas, f, cs.c, p, *dev_, 37);
    std::cout << "[ ktune    ] " << cs.shape << " " << cs.layout << ": relative error gemm_wgmma_tf32x3 " << ours.rel_error
              << ", cuBLAS SGEMM " << theirs.rel_error << "\n";
    EXPECT_TRUE(ours.pass) << ours.summary();
    EXPECT_TRUE(theirs.pass) << theirs.summary();
    EXPECT_LE(ours.rel_error, theirs.rel_error) << cs.shape << " " << cs.c.to_json();
  }
}
