// gemm_wgmma_tf32x3 (FP32 as 3xTF32 on Hopper's wgmma, sm_90a) without a GPU: what it serves, its
// launch plan (the split first, the maps over the split copies), and NVRTC compiles of sampled and
// corner configs for sm_90a.
#include <gtest/gtest.h>

#include <set>

#include "gemm/gemm_families.h"
#include "ktune/compiler.h"
#include "ktune/family.h"
#include "tuner/compile_all.h"
#include "tuner/json_io.h"

using namespace ktune;

namespace {

const char* kLayouts[] = {"NN", "NT", "TN", "TT"};

} // namespace

// FP32 problems of every layout and alignment (odd extents, padded or odd leading dimensions,
// 4-byte pointers) on sm_90 only; never a half problem; opt-in (tuned only with --tf32x3).
TEST(Space, WgmmaTf32x3ServesEveryF32ProblemOnSm90Only) {
  const Family f = find_family("gemm_wgmma_tf32x3");
  EXPECT_TRUE(f.arch_specific());
  EXPECT_EQ(f.compile_arch("sm_90"), "sm_90a");
  const auto d = DeviceInfo::nominal("sm_90");
  for (const char* l : kLayouts)
    for (const char* shape : {"4096x4096x4096", "2999x2999x2999", "4095x4097x4093", "1x1x1", "7x13x5", "512x512x32768", "64x64x0"}) {
      GemmProblem p = GemmProblem::parse(shape, l);
      p.lda = std::max<int64_t>(1, p.min_lda()) + 1, p.ldb = std::max<int64_t>(1, p.min_ldb()) + 3, p.ldc = p.min_ldc() + 1;
      p.align = GemmProblem::alignment_of(p.lda, p.ldb, p.ldc);
      const Config c = f.default_config(p, d);
      const auto why = f.violations(c, p, d);
      EXPECT_TRUE(why.empty()) << p.key() << " " << l << ": " << (why.empty() ? "" : why[0]);
      EXPECT_GT(f.count(p, d), 20u) << p.key();
    }
  const auto p = GemmProblem::parse("4096x4096x4096");
  for (const char* arch : {"sm_80", "sm_89"}) EXPECT_EQ(f.count(p, DeviceInfo::nominal(arch)), 0u) << arch;
  EXPECT_EQ(f.count(GemmProblem::parse("4096x4096x4096", "NN", DType::bf16), d), 0u);
  const auto plain = tuning_family_names(false), opt_in = tuning_family_names(true);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), "gemm_wgmma_tf32x3"), 0);
  EXPECT_EQ(std::count(opt_in.begin(), opt_in.end(), "gemm_wgmma_tf32x3"), 1);
}

// The plan: gemm_tf32x3_split first (the last kernel), then the main kernel with the producer
// warpgroup and maps of 4-byte elements over the split copies (2 stacked halves, K-major, rows of
// K rounded up to 4 floats, after any split-K slices), then the reduction where K is sliced.
// The JSON the worker receives keeps every field of the maps.
TEST(Space, WgmmaTf32x3PlanSplitsFirstAndMapsTheSplitCopies) {
  const Family f = find_family("gemm_wgmma_tf32x3");
  const auto d = DeviceInfo::nominal("sm_90");
  for (const char* l : kLayouts)
    for (int splitk : {1, 4}) {
      const auto p = GemmProblem::parse("999x1001x4099", l);
      Config c = f.default_config(p, d);
      c.set("SPLITK", splitk), c.set("BK", 16), c.set("BN", 64), c.set("ST", 4);
      ASSERT_TRUE(f.valid(c, p, d)) << l << " " << c.to_json();
      const LaunchPlan plan = f.launch_plan(c, p);
      const auto names = f.kernel_names(c, p);
      ASSERT_EQ(plan.steps.size(), splitk > 1 ? 3u : 2u);
      ASSERT_EQ(names.size(), plan.steps.size());
      EXPECT_EQ(plan.steps[0].kernel, int(names.size()) - 1);
      EXPECT_EQ(names.back().rfind("gemm_tf32x3_split<" + std::to_string(splitk > 1 ? splitk : 0) + ",", 0), 0u) << names.back();
      EXPECT_EQ(plan.steps[0].grid[2], 2u);
      EXPECT_EQ(plan.steps[0].grid[0], (4099u + 31) / 32);
      const LaunchStep& s = plan.main_step();
      EXPECT_EQ(plan.steps[1].kernel, 0);
      EXPECT_EQ(s.block[0], 384u);
      EXPECT_EQ(s.grid[2], unsigned(splitk));
      EXPECT_EQ(s.grid[0], 8u * 16u); // ceil(999 / 128) x ceil(1001 / 64)
      ASSERT_TRUE(s.tma());
      const size_t slices = gemm_splitk_workspace_bytes(splitk, p), kp = 4100;
      EXPECT_EQ(s.tma_of(gemm_a)->packed_offset, static_cast<long long>(slices));
      EXPECT_EQ(s.tma_of(gemm_b)->packed_offset, static_cast<long long>(slices + 2 * 999 * kp * 4));
      EXPECT_EQ(plan.workspace_bytes, slices + 2 * (999 + 1001) * kp * 4);
      for (const auto* o : {s.tma_of(gemm_a), s.tma_of(gemm_b)}) {
        EXPECT_TRUE(o->k_inner);
        EXPECT_EQ(o->packed_ld, 4100);
        EXPECT_EQ(o->elem_bytes, 4u);
        EXPECT_EQ(o->swizzle_bytes, 64u);
        EXPECT_EQ(o->stacked, 2u);
        EXPECT_EQ(o->box_inner, 16u);
      }
      EXPECT_EQ(s.tma_of(gemm_a)->box_outer, 128u);
      EXPECT_EQ(s.tma_of(gemm_b)->box_outer, 64u);
      if (splitk > 1) {
        EXPECT_EQ(names[1], "gemm_splitk_reduce<4>");
        EXPECT_TRUE(plan.steps[2].overlap_previous);
      }
      const LaunchPlan back = plan_from_json(nlohmann::json::parse(plan_to_json(plan).dump()));
      const LaunchStep& b = back.main_step();
      for (auto [x, y] : {std::pair{*s.tma_of(gemm_a), *b.tma_of(gemm_a)}, std::pair{*s.tma_of(gemm_b), *b.tma_of(gemm_b)}}) {
        EXPECT_EQ(y.elem_bytes, x.elem_bytes);
        EXPECT_EQ(y.swizzle_bytes, x.swizzle_bytes);
        EXPECT_EQ(y.stacked, x.stacked);
        EXPECT_EQ(y.packed_offset, x.packed_offset);
        EXPECT_EQ(y.box_outer, x.box_outer);
      }
    }
  // The stages must fit: 128 x 128 tiles of 32-deep stages take 64 KB each, three at most.
  const auto p4096 = GemmProblem::parse("4096x4096x4096");
  Config big = f.default_config(p4096, d);
  big.set("BN", 128), big.set("BK", 32), big.set("ST", 3);
  EXPECT_TRUE(f.valid(big, p4096, d));
  big.set("ST", 4);
  EXPECT_FALSE(f.valid(big, p4096, d));
  // Registers: the sums and the chain sums of 128 x 128 rows on one warpgroup would take 256.
  Config one = f.default_config(p4096, d);
  one.set("WG", 1);
  EXPECT_FALSE(f.valid(one, p4096, d));
  one.set("BN", 64);
  EXPECT_TRUE(f.valid(one, p4096, d));
  // 8192^3: the split copies alone are 1 GiB, twice A and B, which the family may use.
  EXPECT_EQ(f.launch_plan(f.default_config(GemmProblem::parse("8192x8192x8192"), d), GemmProblem::parse("8192x8192x8192")).workspace_bytes,
            size_t(1) << 30);
  EXPECT_TRUE(f.valid(f.default_config(GemmProblem::parse("8192x8192x8192"), d), GemmProblem::parse("8192x8192x8192"), d));
  // ... up to 2 GiB: 16384^3's would be 4 GiB, beside 3 GiB of A, B and C.
  EXPECT_EQ(f.count(GemmProblem::parse("16384x16384x16384"), d), 0u);
}

// Sampled configs of every layout, one config for every value of every parameter, and the
// defaults, compiled by NVRTC for sm_90a (ptxas checks the TF32 wgmma and its descriptors' operands).
TEST(Compiler, SampledAndCornerWgmmaTf32x3ConfigsCompileForSm90a) {
  const Family f = find_family("gemm_wgmma_tf32x3");
  const auto d = DeviceInfo::nominal("sm_90");
  std::vector<std::pair<Config, GemmProblem>> cases;
  uint64_t seed = 11;
  for (const char* l : kLayouts) {
    const auto p = GemmProblem::parse("4096x4096x4096", l);
    for (const auto& c : f.sample(p, d, 1, ++seed)) cases.emplace_back(c, p);
    cases.emplace_back(f.default_config(p, d), p);
  }
  const auto p = GemmProblem::parse("512x4096x4096"); // SPLITK 16's slices fit the workspace's limit here
  std::set<std::string> corner_values;
  for (const auto& prm : f.params())
    for (int v : prm.values) {
      SpaceRestriction r;
      r.domains[prm.name] = {v};
      const auto one = f.restricted(r).sample(p, d, 1, 17 + v);
      ASSERT_EQ(one.size(), 1u) << prm.name << " = " << v << " has no valid config";
      cases.emplace_back(one[0], p);
      corner_values.insert(prm.name + std::to_string(v));
    }
  EXPECT_EQ(corner_values.size(), 3u + 2u + 2u + 2u + 6u + 2u + 4u + 5u);
  ktune::testing::compile_all(f, cases, "sm_90");
}
