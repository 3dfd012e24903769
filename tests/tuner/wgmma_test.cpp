// gemm_wgmma (bf16/f16 on Hopper's wgmma, sm_90a) without a GPU: which devices and problems it
// serves, the sm_90a compile target, its defaults, and NVRTC compiles of sampled and corner configs.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <set>

#include "gemm/gemm_families.h"
#include "ktune/compiler.h"
#include "ktune/family.h"
#include "tuner/compile_all.h"
#include "tuner/warm_start.h"

using namespace ktune;

namespace {

const char* kLayouts[] = {"NN", "NT", "TN", "TT"};

GemmProblem half_problem(int64_t m, int64_t n, int64_t k, const char* layout, DType t, int64_t pad = 0) {
  GemmProblem p = GemmProblem::make(m, n, k, layout, t);
  p.lda = std::max<int64_t>(1, p.min_lda()) + pad, p.ldb = std::max<int64_t>(1, p.min_ldb()) + pad;
  p.ldc = p.min_ldc() + pad;
  p.align = GemmProblem::alignment_of(p.eff_lda(), p.eff_ldb(), p.eff_ldc(), element_bytes(p.dtype));
  return p;
}

// A parameter value that needs the TMA kernel and whole tiles (PT > 1, MC, EPI): the config with it
// is refused with K slices (SPLITK or CL 2) and on the cp.async kernel.
// c with each of the changes in turn (one parameter set to one value) is refused.
void expect_each_refused(const Family& f, const Config& c, const GemmProblem& p, const DeviceInfo& d,
                         std::initializer_list<std::pair<const char*, int>> changes) {
  for (auto [k, v] : changes) {
    Config bad = c;
    bad.set(k, v);
    EXPECT_FALSE(f.valid(bad, p, d)) << k << " = " << v << " with " << c.to_json();
  }
}

void expect_tma_and_whole_tiles_only(const Family& f, const Config& c, const GemmProblem& p, const DeviceInfo& d) {
  expect_each_refused(f, c, p, d, {{"SPLITK", 2}, {"CL", 2}, {"TMA", 0}}); // K slices; cp.async
}

} // namespace

// wgmma exists on sm_90a only: the family compiles for "sm_90a" whatever the device reports, is
// refused on every other arch (older ones lack wgmma; an sm_90a cubin does not load on newer ones),
// and the target is part of the compile cache key.
TEST(Space, WgmmaCompilesForSm90aAndServesSm90Only) {
  const Family f = find_family("gemm_wgmma");
  EXPECT_TRUE(f.arch_specific());
  EXPECT_EQ(f.compile_arch("sm_90"), "sm_90a");
  EXPECT_EQ(f.compile_arch("sm_90a"), "sm_90a");
  EXPECT_EQ(find_family("gemm_tc16").compile_arch("sm_90"), "sm_90");
  const auto p = half_problem(4096, 4096, 4096, "NN", DType::bf16);
  for (const char* arch : {"sm_80", "sm_86", "sm_89"}) {
    const auto d = DeviceInfo::nominal(arch);
    EXPECT_EQ(f.count(p, d), 0u) << arch;
    const auto why = f.violations(f.default_config(p, d), p, d);
    ASSERT_FALSE(why.empty()) << arch;
  }
  const auto d90 = DeviceInfo::nominal("sm_90");
  EXPECT_GT(f.count(p, d90), 20u);
  const Config c = f.default_config(p, d90);
  const CompileRequest r = compile_request(f, c, p, "sm_90");
  EXPECT_EQ(r.arch, "sm_90a");
  EXPECT_NE(r.cache_key().find("|sm_90a|"), std::string::npos);
  // The same config through another family's target would differ in the key: the arch is in it.
  CompileRequest plain = r;
  plain.arch = "sm_90";
  EXPECT_NE(plain.cache_key(), r.cache_key());
}

// Aligned problems of every layout and dtype, including shapes the tiles do not divide, are
// served by the default unpacked; unaligned ones (odd extents, unaligned rows or pointers) by the
// default packed (PACK = 1, TMA), and only packed; FP32 by nothing.
TEST(Space, WgmmaDefaultServesEveryHalfProblemPackingTheUnalignedOnes) {
  const Family f = find_family("gemm_wgmma");
  const auto d = DeviceInfo::nominal("sm_90");
  int served = 0;
  for (DType t : {DType::bf16, DType::f16})
    for (const char* l : kLayouts) {
      for (const char* shape : {"4096x4096x4096", "2048x4096x4096", "64x64x64", "1000x1032x520", "8x1024x64", "8192x8x64",
                                "64x64x0", "20000x20000x8", "16384x16384x16384"})
        for (int pad : {0, 8, 64}) {
          GemmProblem p = GemmProblem::parse(shape, l, t);
          p.lda = std::max<int64_t>(1, p.min_lda()) + pad, p.ldb = std::max<int64_t>(1, p.min_ldb()) + pad;
          p.ldc = p.min_ldc() + pad;
          p.align = GemmProblem::alignment_of(p.eff_lda(), p.eff_ldb(), p.eff_ldc(), 2);
          // K = 0 has leading dimensions of 0 + pad along K: aligned only with a padded one.
          if (p.align < 16 || p.eff_lda() % 8 || p.eff_ldb() % 8) continue;
          const Config c = f.default_config(p, d);
          const auto why = f.violations(c, p, d);
          EXPECT_TRUE(why.empty()) << p.key() << " " << l << " pad " << pad << ": " << (why.empty() ? "" : why[0]);
          EXPECT_EQ(c["PACK"], 0) << p.key();
          ++served;
        }
      GemmProblem shifted = half_problem(4096, 4096, 4096, l, t);
      shifted.align = 2; // pointers 2-byte aligned
      for (const auto& p : {half_problem(301, 203, 137, l, t), half_problem(4096, 4096, 4096, l, t, 1),
                            half_problem(4095, 4097, 4093, l, t), shifted}) {
        const Config c = f.default_config(p, d);
        const auto why = f.violations(c, p, d);
        EXPECT_TRUE(why.empty()) << p.key() << " " << l << ": " << (why.empty() ? "" : why[0]);
        EXPECT_EQ(c["PACK"], 1) << p.key();
        EXPECT_GT(f.count(p, d), 0u) << p.key() << " " << l;
        for (const Config& x : f.sample(p, d, 20, 3)) EXPECT_TRUE(x["PACK"] == 1 && x["TMA"] == 1) << p.key() << " " << x.to_json();
      }
      // Packing an aligned problem would only add a pass over A and B.
      Config packed = f.default_config(half_problem(4096, 4096, 4096, l, t), d);
      packed.set("PACK", 1);
      EXPECT_FALSE(f.valid(packed, half_problem(4096, 4096, 4096, l, t), d));
    }
  EXPECT_GT(served, 100);
  EXPECT_EQ(f.count(GemmProblem::parse("4096x4096x4096", "NN", DType::f32), d), 0u);
}

// Sampled configs of both dtypes and all layouts, one config for every value of every parameter,
// and the defaults, compiled by NVRTC for sm_90a (compile_request turns the device's sm_90 into it).
TEST(Compiler, SampledAndCornerWgmmaConfigsCompileForSm90a) {
  const Family f = find_family("gemm_wgmma");
  const auto d = DeviceInfo::nominal("sm_90");
  std::vector<std::pair<Config, GemmProblem>> cases;
  uint64_t seed = 7;
  for (DType t : {DType::bf16, DType::f16})
    for (const char* l : kLayouts) {
      const auto p = half_problem(4096, 4096, 4096, l, t);
      for (const auto& c : f.sample(p, d, 2, ++seed)) cases.emplace_back(c, p);
      Config c = f.default_config(p, d);
      cases.emplace_back(c, p);
      c.set("TMA", 1);
      cases.emplace_back(c, p);
    }
  const auto aligned = half_problem(2048, 4096, 4096, "NN", DType::bf16), unaligned = half_problem(2999, 2999, 2999, "NT", DType::f16);
  std::set<std::string> corner_values;
  for (const auto& prm : f.params())
    for (int v : prm.values) {
      SpaceRestriction r;
      r.domains[prm.name] = {v};
      const GemmProblem& p = prm.name == "PACK" && v == 1 ? unaligned : aligned; // packing is for unaligned problems only
      const auto one = f.restricted(r).sample(p, d, 1, 13 + v);
      ASSERT_EQ(one.size(), 1u) << prm.name << " = " << v << " has no valid config";
      cases.emplace_back(one[0], p);
      corner_values.insert(prm.name + std::to_string(v));
    }
  EXPECT_EQ(corner_values.size(), 4u + 13u + 3u + 7u + 4u + 2u + 2u + 4u + 4u + 4u + 4u + 3u + 2u + 2u + 4u + 2u);
  ktune::testing::compile_all(f, cases, "sm_90");
}

// The TMA form's launch plan asks launch_gemm for tensor maps whose boxes match what the kernel
// copies (tma_tile): a K-major operand in one 64 x tile box, an MN-major one in 64 x 64 blocks;
// its block has the producer warpgroup on top of the consumers. Configs recorded before TMA existed
// upgrade to the cp.async form.
TEST(Space, WgmmaTmaPlansDescribeTheBoxesTheKernelCopies) {
  const Family f = find_family("gemm_wgmma");
  const auto d = DeviceInfo::nominal("sm_90");
  const Config tma = Config::from_json(R"({"BM":128,"BN":256,"WG":2,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":1,"MC":0,"EPI":0,"PP":0,"SK":0,"SWAP":0,"AR":0})");
  for (const char* l : kLayouts) {
    const auto p = half_problem(4096, 4096, 4096, l, DType::bf16);
    ASSERT_TRUE(f.valid(tma, p, d)) << l;
    const LaunchStep s = f.launch_plan(tma, p).main_step();
    EXPECT_TRUE(s.tma());
    EXPECT_EQ(s.block[0], 384u);
    const bool a_k = p.a == Layout::row, b_k = p.b == Layout::col;
    EXPECT_EQ(s.tma_of(gemm_a)->k_inner, a_k) << l;
    EXPECT_EQ(s.tma_of(gemm_b)->k_inner, b_k) << l;
    EXPECT_EQ(s.tma_of(gemm_a)->box_inner, 64u);
    EXPECT_EQ(s.tma_of(gemm_a)->box_outer, a_k ? 128u : 64u) << l;
    EXPECT_EQ(s.tma_of(gemm_b)->box_outer, b_k ? 256u : 64u) << l;
    Config plain = tma;
    plain.set("TMA", 0);
    EXPECT_FALSE(f.launch_plan(plain, p).main_step().tma());
    EXPECT_EQ(f.launch_plan(plain, p).main_step().block[0], 256u);
  }
  const Config old = f.canonical(Config::from_json(R"({"BM":256,"BN":128,"WG":2,"ST":4,"SWZ":8})"));
  EXPECT_EQ(old["TMA"], 0);
  EXPECT_EQ(old["PACK"], 0);
  // PACK = 1: gemm_pack16 (kernel 1) runs first and the maps read its copies in the workspace:
  // A' at the start, B' after it, every dimension padded to 64 (rows of whole 128-byte lines); the
  // main kernel a programmatic dependent of the copy (it waits for it before its first load).
  Config packed = tma;
  packed.set("PACK", 1);
  for (const char* l : kLayouts) {
    const auto p = half_problem(2999, 1001, 777, l, DType::bf16);
    ASSERT_TRUE(f.valid(packed, p, d)) << l;
    const LaunchPlan plan = f.launch_plan(packed, p);
    ASSERT_EQ(plan.steps.size(), 2u);
    EXPECT_EQ(plan.steps[0].kernel, 1);
    EXPECT_EQ(plan.steps[1].kernel, 0);
    const LaunchStep& s = plan.main_step();
    const int64_t a_rows = p.a == Layout::row ? 3008 : 832, a_ld = p.a == Layout::row ? 832 : 3008;
    const int64_t b_rows = p.b == Layout::row ? 832 : 1024, b_ld = p.b == Layout::row ? 1024 : 832;
    EXPECT_EQ(s.tma_of(gemm_a)->packed_offset, 0) << l;
    EXPECT_EQ(s.tma_of(gemm_a)->packed_ld, a_ld) << l;
    EXPECT_EQ(s.tma_of(gemm_b)->packed_offset, a_rows * a_ld * 2) << l;
    EXPECT_EQ(s.tma_of(gemm_b)->packed_ld, b_ld) << l;
    EXPECT_EQ(plan.workspace_bytes, size_t(a_rows * a_ld + b_rows * b_ld) * 2) << l;
    EXPECT_EQ(f.kernel_names(packed, p).at(1).rfind("gemm_pack16<64,64,64,0,", 0), 0u) << f.kernel_names(packed, p).at(1);
    EXPECT_TRUE(s.overlap_previous) << l;
    EXPECT_FALSE(plan.steps[0].overlap_previous) << l;
    // 1024 chunks of 8 halves a block, over the larger copy (A': 3008 x 832 halves).
    EXPECT_EQ(plan.steps[0].grid[0], unsigned((3008 * 832 / 8 + 1023) / 1024)) << l;
    EXPECT_EQ(plan.steps[0].grid[1], 1u) << l;
    EXPECT_EQ(plan.steps[0].grid[2], 2u) << l;
  }
  // An aligned problem is never packed, its rows whole 128-byte lines or not (4104 halves).
  for (const char* l : kLayouts) {
    EXPECT_FALSE(f.valid(packed, half_problem(4096, 4096, 4096, l, DType::bf16), d)) << l;
    EXPECT_FALSE(f.valid(packed, half_problem(4096, 4096, 4096, l, DType::bf16, 8), d)) << l;
    EXPECT_TRUE(f.valid(tma, half_problem(4096, 4096, 4096, l, DType::bf16, 8), d)) << l;
  }
  // SPLITK = 4 (TMA only): grid.z = 4 slices of K, the FP32 reduction (kernel 1) after the main
  // kernel as a programmatic dependent; packed copies after the slices in the workspace.
  Config split = tma;
  split.set("SPLITK", 4);
  const auto p128 = half_problem(128, 4096, 4096, "NN", DType::bf16);
  ASSERT_TRUE(f.valid(split, p128, d));
  const LaunchPlan sp = f.launch_plan(split, p128);
  ASSERT_EQ(sp.steps.size(), 2u);
  EXPECT_EQ(sp.steps[0].grid[2], 4u);
  EXPECT_EQ(sp.steps[1].kernel, 1);
  EXPECT_TRUE(sp.steps[1].overlap_previous);
  EXPECT_EQ(sp.workspace_bytes, size_t(4) * 128 * gemm_workspace_ld(4096) * 4);
  EXPECT_EQ(f.kernel_names(split, p128).at(1).rfind("gemm_splitk_reduce16<4,0>", 0), 0u);
  split.set("TMA", 0);
  EXPECT_FALSE(f.valid(split, p128, d)); // the cp.async kernel has no split-K
  Config split_packed = tma;
  split_packed.set("SPLITK", 2), split_packed.set("PACK", 1);
  const auto odd = half_problem(128, 4097, 4095, "NN", DType::bf16);
  ASSERT_TRUE(f.valid(split_packed, odd, d));
  const LaunchPlan spp = f.launch_plan(split_packed, odd);
  ASSERT_EQ(spp.steps.size(), 3u);
  EXPECT_EQ(spp.steps[0].kernel, 2); // the packing first
  EXPECT_EQ(spp.main_step().tma_of(gemm_a)->packed_offset, static_cast<long long>(gemm_splitk_workspace_bytes(2, odd)));
  // More slices than K tiles is refused (K = 64: one tile).
  EXPECT_FALSE(f.valid(split, half_problem(128, 4096, 64, "NN", DType::bf16), d));
  // CL = 4 (TMA only): grid.z = 4 slices, one cluster per tile (the kernel's __cluster_dims__),
  // added in distributed shared memory: one kernel, no workspace. Not with SPLITK, nor cp.async,
  // nor with more slices than K tiles; configs from before CL upgrade to CL = 1.
  Config cl = tma;
  cl.set("CL", 4);
  ASSERT_TRUE(f.valid(cl, p128, d));
  const LaunchPlan cp = f.launch_plan(cl, p128);
  ASSERT_EQ(cp.steps.size(), 1u);
  EXPECT_EQ(cp.steps[0].grid[2], 4u);
  EXPECT_EQ(cp.steps[0].grid[0], 16u); // 4096 / BN 256
  EXPECT_EQ(cp.workspace_bytes, 0u);
  EXPECT_NE(f.kernel_names(cl, p128).at(0).find("<128,256,2,4,8,1,4,1,0,"), std::string::npos) << f.kernel_names(cl, p128).at(0);
  Config cl_split = cl;
  cl_split.set("SPLITK", 2);
  EXPECT_FALSE(f.valid(cl_split, p128, d));
  Config cl_cp = cl;
  cl_cp.set("TMA", 0);
  EXPECT_FALSE(f.valid(cl_cp, p128, d));
  EXPECT_FALSE(f.valid(cl, half_problem(128, 4096, 192, "NN", DType::bf16), d)); // 3 K tiles for 4 slices
  EXPECT_EQ(f.canonical(Config::from_json(R"({"BM":128,"BN":256,"WG":2,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":2})"))["CL"], 1);
  // PT = 4 (TMA only): 4096 x 4096 has 16 x 32 tiles of 128 x 256, in 128 blocks of 4 (one kernel,
  // no workspace, grid.z 1). Not with K slices, nor cp.async, nor where PT - 1 gives the same grid
  // (a repeat of a smaller PT's launch).
  const auto p4096 = half_problem(4096, 4096, 4096, "NN", DType::bf16);
  Config pt = tma;
  pt.set("PT", 4);
  ASSERT_TRUE(f.valid(pt, p4096, d));
  const LaunchPlan pp = f.launch_plan(pt, p4096);
  ASSERT_EQ(pp.steps.size(), 1u);
  EXPECT_EQ(pp.steps[0].grid[0], 128u);
  EXPECT_EQ(pp.steps[0].grid[2], 1u);
  EXPECT_EQ(pp.workspace_bytes, 0u);
  EXPECT_NE(f.kernel_names(pt, p4096).at(0).find("<128,256,2,4,8,1,1,4,0,"), std::string::npos) << f.kernel_names(pt, p4096).at(0);
  EXPECT_EQ(f.launch_plan(pt, half_problem(4000, 4000, 512, "NN", DType::bf16)).steps[0].grid[0], 128u); // 32 x 16 = 512 tiles
  expect_tma_and_whole_tiles_only(f, pt, p4096, d);
  EXPECT_FALSE(f.valid(pt, half_problem(128, 768, 4096, "NN", DType::bf16), d)); // 3 tiles: PT 3 gives one block already
  EXPECT_TRUE(f.valid(pt, half_problem(128, 1024, 4096, "NN", DType::bf16), d)); // 4 tiles: one block, PT 3 two
  EXPECT_EQ(f.canonical(Config::from_json(R"({"BM":128,"BN":256,"WG":2,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1})"))["PT"], 1);

  // MC (TMA multicast in a 2-CTA cluster): MC 1 pairs two M tiles sharing B, MC 2 two N tiles
  // sharing A. 4000 x 4000 in 128 x 256 tiles: 32 x 16 tiles, 16 x 16 pairs along M (512 CTAs) or
  // 32 x 8 along N (512 CTAs); with PT 4, 64 clusters of 2. A K-major shared operand is loaded in
  // halves (the box half as tall); an MN-major one in 64 x 64 blocks as before (one 64 wide: in
  // halves along K).
  const auto p4000 = half_problem(4000, 4000, 512, "NN", DType::bf16);
  for (int mc : {1, 2}) {
    Config m = tma;
    m.set("MC", mc);
    ASSERT_TRUE(f.valid(m, p4000, d)) << mc;
    EXPECT_EQ(f.launch_plan(m, p4000).steps[0].grid[0], 512u) << mc;
    EXPECT_NE(f.kernel_names(m, p4000).at(0).find("<128,256,2,4,8,1,1,1," + std::to_string(mc) + ",0,"), std::string::npos);
    m.set("PT", 4);
    ASSERT_TRUE(f.valid(m, p4000, d)) << mc;
    EXPECT_EQ(f.launch_plan(m, p4000).steps[0].grid[0], 128u) << mc;
  }
  // 33 M tiles of 128 (4100 rows): 17 pairs, the last pair's second tile past M (its CTA still loads).
  Config mc1 = tma;
  mc1.set("MC", 1);
  EXPECT_EQ(f.launch_plan(mc1, half_problem(4100, 4096, 512, "NN", DType::bf16)).steps[0].grid[0], 2u * 17 * 16);
  for (const char* l : kLayouts) {
    const auto p = half_problem(4096, 4096, 4096, l, DType::bf16);
    const bool a_k = p.a == Layout::row, b_k = p.b == Layout::col;
    const LaunchStep s1 = f.launch_plan(mc1, p).main_step();
    EXPECT_EQ(s1.tma_of(gemm_a)->box_outer, a_k ? 128u : 64u) << l;
    EXPECT_EQ(s1.tma_of(gemm_b)->box_outer, b_k ? 128u : 64u) << l; // half of BN 256 when K-major
    Config mc2 = tma;
    mc2.set("MC", 2);
    const LaunchStep s2 = f.launch_plan(mc2, p).main_step();
    EXPECT_EQ(s2.tma_of(gemm_a)->box_outer, 64u) << l; // K-major: half of BM 128; else 64 x 64 blocks
    EXPECT_EQ(s2.tma_of(gemm_b)->box_outer, b_k ? 256u : 64u) << l;
    // A shared tile 64 wide: K-major, 32 rows a CTA; MN-major (one 64 x 64 block), 32 K lines a CTA.
    Config narrow = Config::from_json(R"({"BM":64,"BN":64,"WG":1,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":1,"MC":1,"EPI":0,"PP":0,"SK":0,"SWAP":0,"AR":0})");
    ASSERT_TRUE(f.valid(narrow, p, d)) << l;
    EXPECT_EQ(f.launch_plan(narrow, p).main_step().tma_of(gemm_b)->box_outer, 32u) << l;
    EXPECT_EQ(f.launch_plan(narrow, p).main_step().tma_of(gemm_a)->box_outer, 64u) << l; // A unshared: 64 rows or one 64 x 64 block
    narrow.set("MC", 2);
    ASSERT_TRUE(f.valid(narrow, p, d)) << l;
    EXPECT_EQ(f.launch_plan(narrow, p).main_step().tma_of(gemm_a)->box_outer, 32u) << l;
    EXPECT_EQ(f.launch_plan(narrow, p).main_step().tma_of(gemm_b)->box_outer, 64u) << l;
  }
  // MC needs the TMA kernel and no CL; with SPLITK the pair shares a K slice (grid.z), as cuBLAS's
  // split-K at 512x512x32768 runs 128 x 64 tiles in 2-CTA clusters: 4 x 8 tiles, 4 x 4 pairs along
  // N, 2 CTAs each, 4 slices.
  expect_each_refused(f, mc1, p4096, d, {{"CL", 2}, {"TMA", 0}});
  Config mc_split = Config::from_json(R"({"BM":128,"BN":64,"WG":2,"ST":8,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":4,"CL":1,"PT":1,"MC":2,"EPI":0,"PP":0,"SK":0,"SWAP":0,"AR":0})");
  const auto p512 = half_problem(512, 512, 32768, "NN", DType::bf16);
  ASSERT_TRUE(f.valid(mc_split, p512, d)) << f.violations(mc_split, p512, d)[0];
  const LaunchPlan msp = f.launch_plan(mc_split, p512);
  EXPECT_EQ(msp.main_step().grid[0], 2u * 4 * 4);
  EXPECT_EQ(msp.main_step().grid[2], 4u);
  EXPECT_EQ(msp.steps.size(), 2u); // the reduction after it
  EXPECT_EQ(msp.main_step().tma_of(gemm_a)->box_outer, 64u); // A shared: half of BM 128 a CTA
  EXPECT_NE(f.kernel_names(mc_split, p512).at(0).find("<128,64,2,8,8,4,1,1,2,0,0,0,"), std::string::npos) << f.kernel_names(mc_split, p512).at(0);
  EXPECT_EQ(f.canonical(Config::from_json(R"({"BM":128,"BN":256,"WG":2,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":1})"))["MC"], 0);

  // EPI (C through shared memory and TMA stores): the plan asks for a map of C in boxes of 64
  // columns by one consumer warpgroup's rows; shared memory grows by the C tile. Aligned C only,
  // TMA only, no K slices; configs from before EPI upgrade to EPI 0 (no C map).
  Config epi = tma;
  epi.set("EPI", 1);
  EXPECT_FALSE(f.valid(epi, p4096, d)); // 4 stages of 128 x 256 and the C tile: 257 KB
  epi.set("ST", 3);
  ASSERT_TRUE(f.valid(epi, p4096, d));
  Config no_epi = epi;
  no_epi.set("EPI", 0);
  const LaunchStep es = f.launch_plan(epi, p4096).main_step();
  EXPECT_EQ(es.tma_of(gemm_c)->box_inner, 64u);
  EXPECT_EQ(es.tma_of(gemm_c)->box_outer, 64u);
  EXPECT_EQ(es.dynamic_smem, f.launch_plan(no_epi, p4096).main_step().dynamic_smem + 128u * 256 * 2);
  EXPECT_EQ(f.launch_plan(no_epi, p4096).main_step().tma_of(gemm_c), nullptr);
  // EPI 2 stages the columns in two halves: half the staging memory, so 128 x 256 keeps 4 stages
  // (225 KB); the same C map. Not for 64-column tiles (a half would be 32 columns).
  Config epi2 = epi;
  epi2.set("EPI", 2), epi2.set("ST", 4);
  ASSERT_TRUE(f.valid(epi2, p4096, d));
  EXPECT_EQ(f.launch_plan(epi2, p4096).main_step().dynamic_smem, 4u * (128 + 256) * 64 * 2 + 1024 + 128u * 256);
  EXPECT_EQ(f.launch_plan(epi2, p4096).main_step().tma_of(gemm_c)->box_inner, 64u);
  EXPECT_EQ(f.launch_plan(epi2, p4096).main_step().tma_of(gemm_c)->box_outer, 64u);
  EXPECT_NE(f.kernel_names(epi2, p4096).at(0).find("<128,256,2,4,8,1,1,1,0,2,0,0,"), std::string::npos) << f.kernel_names(epi2, p4096).at(0);
  expect_tma_and_whole_tiles_only(f, epi2, half_problem(128, 4096, 4096, "NN", DType::bf16), d);
  epi2.set("BN", 64);
  EXPECT_FALSE(f.valid(epi2, p4096, d));
  Config epi256 = Config::from_json(R"({"BM":256,"BN":128,"WG":2,"ST":3,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":2,"MC":2,"EPI":1,"PP":0,"SK":0,"SWAP":0,"AR":0})");
  ASSERT_TRUE(f.valid(epi256, p4096, d));
  EXPECT_EQ(f.launch_plan(epi256, p4096).main_step().tma_of(gemm_c)->box_outer, 128u);
  EXPECT_NE(f.kernel_names(epi256, p4096).at(0).find("<256,128,2,3,8,1,1,2,2,1,0,"), std::string::npos) << f.kernel_names(epi256, p4096).at(0);
  Config epi_odd = epi;
  epi_odd.set("PACK", 1);
  const auto p2999 = half_problem(2999, 2999, 2999, "NN", DType::bf16);
  EXPECT_FALSE(f.valid(epi_odd, p2999, d));
  // EPI 3 stages as EPI 1 (the same shared memory) and stores without TMA (no C map): any C
  // alignment, with or without PACK; whole tiles on the TMA kernel; no SK or PP.
  Config epi3 = epi_odd;
  epi3.set("EPI", 3);
  ASSERT_TRUE(f.valid(epi3, p2999, d)) << f.violations(epi3, p2999, d)[0];
  EXPECT_EQ(f.launch_plan(epi3, p2999).main_step().tma_of(gemm_c), nullptr);
  EXPECT_EQ(f.launch_plan(epi3, p2999).main_step().dynamic_smem, f.launch_plan(epi_odd, p4096).main_step().dynamic_smem);
  EXPECT_NE(f.kernel_names(epi3, p2999).at(0).find("<128,256,2,3,8,1,1,1,0,3,0,0,"), std::string::npos) << f.kernel_names(epi3, p2999).at(0);
  Config epi3_aligned = epi;
  epi3_aligned.set("EPI", 3);
  ASSERT_TRUE(f.valid(epi3_aligned, p4096, d));
  expect_tma_and_whole_tiles_only(f, epi3_aligned, half_problem(128, 4096, 4096, "NN", DType::bf16), d);
  Config epi3_sk = epi3_aligned;
  epi3_sk.set("PT", 0);
  ASSERT_TRUE(f.valid(epi3_sk, p4096, d));
  epi3_sk.set("SK", 2);
  EXPECT_FALSE(f.valid(epi3_sk, p4096, d));
  Config epi3_pp = epi3_aligned;
  epi3_pp.set("BM", 64), epi3_pp.set("PT", 2), epi3_pp.set("EPI", 1), epi3_pp.set("PP", 1);
  ASSERT_TRUE(f.valid(epi3_pp, p4096, d)) << f.violations(epi3_pp, p4096, d)[0];
  epi3_pp.set("EPI", 3);
  EXPECT_FALSE(f.valid(epi3_pp, p4096, d));
  expect_tma_and_whole_tiles_only(f, epi, half_problem(128, 4096, 4096, "NN", DType::bf16), d);
  EXPECT_EQ(f.canonical(Config::from_json(R"({"BM":128,"BN":256,"WG":2,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":1,"MC":0})"))["EPI"], 0);

  // PT 0 (persistent): one block a tile in the plan (4096^3: 16 x 32 tiles of 128 x 256), marked
  // persistent so that the launch caps the grid at the resident blocks. TMA and whole tiles only.
  Config per = tma;
  per.set("PT", 0);
  ASSERT_TRUE(f.valid(per, p4096, d));
  EXPECT_EQ(f.launch_plan(per, p4096).main_step().grid[0], 512u);
  EXPECT_TRUE(f.launch_plan(per, p4096).main_step().persistent);
  EXPECT_FALSE(f.launch_plan(pt, p4096).main_step().persistent);
  EXPECT_NE(f.kernel_names(per, p4096).at(0).find("<128,256,2,4,8,1,1,0,0,0,0,"), std::string::npos) << f.kernel_names(per, p4096).at(0);
  expect_tma_and_whole_tiles_only(f, per, p4096, d);

  // PP (ping-pong consumers): each consumer warpgroup computes whole 64 x 256 tiles, so each stores
  // 64 rows (the C box) from its own staging buffer (2 x 64 x 256 halves beside 4 stages of 40 KB).
  // Two consumers, several tiles a block, whole tiles, no MC; a consumer's tile within 128 accumulators.
  const Config pp1 = Config::from_json(R"({"BM":64,"BN":256,"WG":2,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":2,"MC":0,"EPI":1,"PP":1,"SK":0,"SWAP":0,"AR":0})");
  ASSERT_TRUE(f.valid(pp1, p4096, d));
  const LaunchStep ps = f.launch_plan(pp1, p4096).main_step();
  EXPECT_EQ(ps.tma_of(gemm_c)->box_outer, 64u);
  EXPECT_EQ(ps.dynamic_smem, 4u * (64 + 256) * 128 + 1024 + 2u * 64 * 256 * 2);
  EXPECT_EQ(ps.grid[0], 64u * 16 / 2);
  EXPECT_NE(f.kernel_names(pp1, p4096).at(0).find("<64,256,2,4,8,1,1,2,0,1,1,0,"), std::string::npos) << f.kernel_names(pp1, p4096).at(0);
  expect_tma_and_whole_tiles_only(f, pp1, p4096, d);
  expect_each_refused(f, pp1, p4096, d, {{"PT", 1}, {"WG", 1}, {"MC", 2}});
  Config wide = pp1;
  wide.set("BM", 128), wide.set("EPI", 0), wide.set("ST", 3); // 128 x 256 a consumer: 256 accumulators
  EXPECT_FALSE(f.valid(wide, p4096, d));
  wide.set("PP", 0);
  EXPECT_TRUE(f.valid(wide, p4096, d));
  EXPECT_EQ(f.canonical(Config::from_json(R"({"BM":128,"BN":256,"WG":2,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":1,"MC":0,"EPI":0,"PP":0,"SK":0,"SWAP":0,"AR":0})"))["PP"], 0);

  // SK (stream-K on the persistent grid): kernel 1 first, one block zeroing the flags, then the
  // main kernel on at most 132 blocks as its programmatic dependent; the workspace holds the flags
  // and one FP32 tile per block. A problem of fewer (unit, K tile) iterations than that gets one
  // block each.
  Config sk = per;
  sk.set("SK", 1), sk.set("EPI", 1), sk.set("ST", 3);
  ASSERT_TRUE(f.valid(sk, p4096, d));
  const LaunchPlan kp = f.launch_plan(sk, p4096);
  ASSERT_EQ(kp.steps.size(), 2u);
  EXPECT_EQ(kp.steps[0].kernel, 1);
  EXPECT_EQ(kp.steps[0].grid[0] * kp.steps[0].grid[1] * kp.steps[0].grid[2], 1u);
  EXPECT_EQ(kp.steps[0].block[0], 256u);
  EXPECT_FALSE(kp.steps[0].overlap_previous);
  EXPECT_EQ(kp.main_step().grid[0], 132u);
  EXPECT_TRUE(kp.main_step().persistent);
  EXPECT_TRUE(kp.main_step().overlap_previous);
  EXPECT_EQ(kp.workspace_bytes, size_t(KTUNE_SK_HEADER_BYTES) + 132u * 128 * 256 * 4);
  EXPECT_EQ(f.kernel_names(sk, p4096).at(1), "gemm_wgmma_sk_clear");
  EXPECT_NE(f.kernel_names(sk, p4096).at(0).find("<128,256,2,3,8,1,1,0,0,1,0,1,0,"), std::string::npos) << f.kernel_names(sk, p4096).at(0);
  EXPECT_EQ(f.launch_plan(sk, half_problem(128, 512, 128, "NN", DType::bf16)).main_step().grid[0], 4u); // 2 tiles x 2 K tiles
  expect_tma_and_whole_tiles_only(f, sk, p4096, d);
  expect_each_refused(f, sk, p4096, d, {{"PT", 2}, {"MC", 1}, {"PACK", 1}});
  // SK = 2 (the last partial wave's tiles split in K) and 3 (the same split, each part's block
  // adding its share): the same plan, kernels and refusals.
  for (int v : {2, 3}) {
    Config sk2 = sk;
    sk2.set("SK", v);
    ASSERT_TRUE(f.valid(sk2, p4096, d)) << v;
    EXPECT_EQ(f.launch_plan(sk2, p4096).steps.size(), 2u);
    EXPECT_EQ(f.launch_plan(sk2, p4096).workspace_bytes, kp.workspace_bytes);
    EXPECT_EQ(f.kernel_names(sk2, p4096).at(1), "gemm_wgmma_sk_clear");
    const std::string args = "<128,256,2,3,8,1,1,0,0,1,0," + std::to_string(v) + ",0,";
    EXPECT_NE(f.kernel_names(sk2, p4096).at(0).find(args), std::string::npos) << f.kernel_names(sk2, p4096).at(0);
    expect_tma_and_whole_tiles_only(f, sk2, p4096, d);
    expect_each_refused(f, sk2, p4096, d, {{"PT", 2}, {"MC", 1}, {"PACK", 1}});
  }
  EXPECT_EQ(f.canonical(Config::from_json(R"({"BM":128,"BN":256,"WG":2,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":1,"MC":0,"EPI":0,"PP":0})"))["SK"], 0);
}

// A tuned config serves shapes its own form cannot through generalized(): an aligned EPI config is
// offered packed (its TMA store as EPI 3 where C's rows are not 16-byte aligned) for unaligned shapes, a packed
// one unpacked for aligned shapes, a split one unsplit where K is too short; nearest form first.
TEST(Space, WgmmaGeneralizesTunedConfigsToShapesTheirFormCannotServe) {
  const Family f = find_family("gemm_wgmma");
  const auto d = DeviceInfo::nominal("sm_90");
  auto first_valid = [&](const Config& c, const GemmProblem& p) -> std::optional<Config> {
    for (const Config& g : f.generalized(c))
      if (f.valid(g, p, d)) return g;
    return std::nullopt;
  };
  const Config epi = Config::from_json(R"({"BM":128,"BN":256,"WG":2,"ST":3,"SWZ":16,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":2,"MC":0,"EPI":1,"PP":0,"SK":0,"SWAP":0,"AR":0})");
  const auto odd = half_problem(2999, 2999, 2999, "NN", DType::bf16);
  ASSERT_FALSE(f.valid(epi, odd, d));
  const auto packed = first_valid(epi, odd);
  ASSERT_TRUE(packed);
  EXPECT_EQ((*packed)["PACK"], 1);
  EXPECT_EQ((*packed)["EPI"], 3);
  EXPECT_EQ((*packed)["BN"], 256);
  EXPECT_EQ((*packed)["PT"], 2);
  // Packed back to aligned: the unpacked form comes first.
  const auto back = first_valid(*packed, half_problem(4096, 4096, 4096, "NN", DType::bf16));
  ASSERT_TRUE(back);
  EXPECT_EQ((*back)["PACK"], 0);
  // A split-K config at a K of one tile: unsplit.
  Config split = Config::from_json(R"({"BM":128,"BN":128,"WG":2,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":2,"CL":1,"PT":1,"MC":0,"EPI":0,"PP":0,"SK":0,"SWAP":0,"AR":0})");
  const auto short_k = half_problem(128, 4096, 64, "NN", DType::bf16);
  ASSERT_FALSE(f.valid(split, short_k, d));
  const auto unsplit = first_valid(split, short_k);
  ASSERT_TRUE(unsplit);
  EXPECT_EQ((*unsplit)["SPLITK"], 1);
  EXPECT_EQ((*unsplit)["PACK"], 0);
  for (const Config& g : f.generalized(epi)) EXPECT_NE(g, epi);
}

// A warm start from the shipped tables offers, for a shape in no table, the configs the nearest
// entries lend and then their neighbours (Family::neighbors_of): multicast either way and the
// persistent grid with stream-K or multicast, which decided the shapes a short default tune saw
// (5000x3000x1000: a lent tiling with MC 2).
TEST(Space, WgmmaWarmStartsOfferMulticastAndStreamKNeighbours) {
  const Family f = find_family("gemm_wgmma");
  const auto d = DeviceInfo::nominal("sm_90");
  const WarmStart warm("shipped", d);
  const auto p = half_problem(5000, 3000, 1000, "NN", DType::bf16);
  const std::vector<Config> seeds = warm.configs(f, p);
  ASSERT_FALSE(seeds.empty());
  const std::vector<Config> first = f.neighbors_of(seeds[0], p, d);
  const size_t lent = size_t(std::find_first_of(seeds.begin(), seeds.end(), first.begin(), first.end()) - seeds.begin());
  ASSERT_LT(lent, seeds.size()) << "no neighbour of the first lent config among the seeds";
  // The lent configs come first, each once; the first one's neighbours follow.
  for (size_t i = 0; i < seeds.size(); ++i)
    for (size_t j = i + 1; j < seeds.size(); ++j) EXPECT_NE(seeds[i], seeds[j]);
  bool mc2 = false, sk2 = false;
  for (size_t i = lent; i < seeds.size(); ++i) {
    mc2 |= seeds[i]["MC"] == 2 && f.valid(seeds[i], p, d);
    sk2 |= seeds[i]["SK"] == 2 && seeds[i]["PT"] == 0 && f.valid(seeds[i], p, d);
  }
  EXPECT_TRUE(mc2);
  EXPECT_TRUE(sk2);
  // Neighbours differ from their config in the tiling (BM, BN, WG and the orientation, with the
  // ring depth and the epilogue that fit them; swapped: whole tiles, unpacked), in MC, or in PT
  // with SK or MC.
  const Config c = seeds[0];
  const std::set<std::string> tiling = {"BM", "BN", "WG", "ST", "PP", "EPI", "SWAP", "SPLITK", "PACK"};
  for (const Config& n : f.neighbors_of(c, p, d)) {
    EXPECT_NE(n, c);
    const bool retiled = n["BM"] != c["BM"] || n["BN"] != c["BN"] || n["SWAP"] != c["SWAP"];
    for (const auto& [k, v] : c.items()) {
      if (k != "MC" && k != "PT" && k != "SK" && !(retiled && tiling.count(k))) {
        EXPECT_EQ(n[k], v) << k;
      }
    }
  }
}

// The first neighbours of a lent config are its tiling changed to the one that fills the problem's
// waves best (tiles over 132 SMs), as lent and persistent with multicast: 192 x 192 on three
// consumer warpgroups at 2048x11008x4096 (638 tiles, 4.8 waves, against 688 of 128 x 256), 128 x
// 192 at 512x4608x3584 (96 tiles, one wave), none where the lent tiling fills best (4096^3, 128 x
// 256). The ring keeps the lender's depth where it fits shared memory, else the deepest that does.
TEST(Space, WgmmaNeighboursRetileToFillTheWaves) {
  const Family f = find_family("gemm_wgmma");
  const auto d = DeviceInfo::nominal("sm_90");
  const Config lent = Config::from_json(R"({"BM":128,"BN":256,"WG":2,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":1,"MC":0,"EPI":2,"PP":0,"SK":0,"SWAP":0,"AR":0})");
  struct Want {
    const char* shape;
    int bm, bn, wg, st, epi;
  };
  for (const Want& w : {Want{"2048x11008x4096", 192, 192, 3, 3, 1}, Want{"512x4608x3584", 128, 192, 2, 4, 1}}) {
    const auto q = GemmProblem::parse(w.shape, "NN", DType::bf16);
    const auto near = f.neighbors_of(lent, q, d);
    ASSERT_GE(near.size(), 2u) << w.shape;
    const Config& t = near[0];
    EXPECT_EQ(t["BM"], w.bm) << w.shape;
    EXPECT_EQ(t["BN"], w.bn) << w.shape;
    EXPECT_EQ(t["WG"], w.wg) << w.shape;
    EXPECT_EQ(t["ST"], w.st) << w.shape;
    EXPECT_EQ(t["EPI"], w.epi) << w.shape;
    EXPECT_TRUE(f.valid(t, q, d)) << w.shape << ": " << ::testing::PrintToString(f.violations(t, q, d));
    EXPECT_EQ(near[1]["BN"], w.bn) << w.shape;
    EXPECT_EQ(near[1]["PT"], 0) << w.shape;
    EXPECT_EQ(near[1]["MC"], 1) << w.shape;
    EXPECT_TRUE(f.valid(near[1], q, d)) << w.shape;
  }
  const auto square = GemmProblem::parse("4096x4096x4096", "NN", DType::bf16);
  for (const Config& n : f.neighbors_of(lent, square, d)) {
    if (n["SWAP"]) continue; // the swapped tiling is offered on its own (below)
    EXPECT_EQ(n["BM"], 128);
    EXPECT_EQ(n["BN"], 256);
  }
  // The swapped tiling that fills the waves best, C staged transposed (EPI 1): at 1000x4672x4544,
  // 128 rows of N by 144 columns of M (37 x 7 = 259 tiles, two waves of 132 less 5 slots; the tune
  // measured it at 0.98x cuBLAS). With A column-major the kernel's B is MN-major: whole 64 columns.
  for (const char* layout : {"NN", "TN"}) {
    const auto q = GemmProblem::parse("1000x4672x4544", layout, DType::bf16);
    const auto near = f.neighbors_of(lent, q, d);
    const auto sw = std::find_if(near.begin(), near.end(), [](const Config& n) { return n["SWAP"] == 1; });
    ASSERT_NE(sw, near.end()) << layout;
    EXPECT_TRUE(f.valid(*sw, q, d)) << layout << ": " << ::testing::PrintToString(f.violations(*sw, q, d));
    EXPECT_EQ((*sw)["EPI"], 1) << layout;
    if (std::string(layout) == "NN") {
      EXPECT_EQ((*sw)["BM"], 128);
      EXPECT_EQ((*sw)["BN"], 144);
    } else {
      EXPECT_EQ((*sw)["BN"] % 64, 0);
    }
  }
  // A lender of 3 stages (the shipped 128 x 256 configs) retiles with 4 where they fit: 128 x 192
  // at 512x4608x3584, 128 x 144 swapped at 3072x768x3072 (132 tiles; cuBLAS's 192 x 96 makes 128
  // of the same area, but its wgmma N of 96 scores lower).
  Config three = lent;
  three.set("ST", 3), three.set("EPI", 1);
  const auto q1 = GemmProblem::parse("512x4608x3584", "NN", DType::bf16), q2 = GemmProblem::parse("3072x768x3072", "NN", DType::bf16);
  const auto n1 = f.neighbors_of(three, q1, d), n2 = f.neighbors_of(three, q2, d);
  ASSERT_FALSE(n1.empty());
  EXPECT_EQ(n1[0]["BN"], 192);
  EXPECT_EQ(n1[0]["ST"], 4);
  const auto sw = std::find_if(n2.begin(), n2.end(), [](const Config& n) { return n["SWAP"] == 1; });
  ASSERT_NE(sw, n2.end());
  EXPECT_EQ((*sw)["BM"], 128);
  EXPECT_EQ((*sw)["BN"], 144);
  EXPECT_EQ((*sw)["ST"], 4);
  EXPECT_TRUE(f.valid(*sw, q2, d)) << ::testing::PrintToString(f.violations(*sw, q2, d));
}

// The shipped 2048x4096x11008 config (128 x 256, PT 2, EPI 2) lent to `shape` (NN, bf16): the
// problem and its neighbours there, each checked valid.
struct LentAt {
  Family f = find_family("gemm_wgmma");
  DeviceInfo d = DeviceInfo::nominal("sm_90");
  Config lent = Config::from_json(R"({"BM":128,"BN":256,"WG":2,"ST":4,"SWZ":16,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":2,"MC":0,"EPI":2,"PP":0,"SK":0,"SWAP":0,"AR":0})");
  GemmProblem q;
  std::vector<Config> near;
  explicit LentAt(const char* shape) : q(GemmProblem::parse(shape, "NN", DType::bf16)), near(f.neighbors_of(lent, q, d)) {
    for (const Config& n : near) EXPECT_TRUE(f.valid(n, q, d)) << shape << ": " << ::testing::PrintToString(f.violations(n, q, d));
  }
};

// Where the lent tiling makes fewer tiles than the GPU has SMs, no stream-K neighbour: SK 2 and 3
// cut nothing there and SK 1 (every tile's K cut) measured 1.3-1.9x slower than the uncut grid at
// such shapes. Where there is a partial wave to cut, SK 2 and 3 on the persistent grid (valid).
// 777x3584x18944 with 128 x 256: 98 tiles; 2048x11008x4096: 688.
TEST(Space, WgmmaNeighboursStreamKOnlyPastOneWave) {
  auto sks = [](const char* shape) {
    std::set<int> out;
    for (const Config& n : LentAt(shape).near)
      if (n["SK"]) {
        EXPECT_EQ(n["PT"], 0) << shape;
        EXPECT_EQ(n["BM"], 128) << shape; // the lender's tiling, streamed
        EXPECT_EQ(n["BN"], 256) << shape;
        out.insert(n["SK"]);
      }
    return out;
  };
  EXPECT_TRUE(sks("777x3584x18944").empty());
  EXPECT_EQ(sks("2048x11008x4096"), (std::set<int>{2, 3}));
}

// Under one wave, beside the wave-filling swapped tiling (as lent, then PT 0 MC 1), the swapped one that pads C least (also
// under a wave, padding 5 % less): 777x3584x18944, 256 x 96 (126 tiles, 864 rows for 777) and
// 256 x 112 (98 tiles, 784 rows), both with 4 stages (256 x 112 then stores C plainly), valid. Past a wave (2048x11008x4096)
// only the wave-filling one (as lent, then persistent with multicast).
TEST(Space, WgmmaNeighboursUnderAWaveOfferTheLeastPaddedSwappedTiling) {
  auto swapped = [](const char* shape) {
    std::vector<std::pair<int, int>> out;
    for (const Config& n : LentAt(shape).near)
      if (n["SWAP"]) {
        EXPECT_EQ(n["EPI"], n["BM"] * n["BN"] > 256 * 96 ? 0 : 1) << shape; // 4 stages beside the staging, or plain stores
        EXPECT_EQ(n["ST"], 4) << shape;
        out.emplace_back(n["BM"], n["BN"]);
      }
    return out;
  };
  EXPECT_EQ(swapped("777x3584x18944"), (std::vector<std::pair<int, int>>{{256, 96}, {256, 96}, {256, 112}}));
  EXPECT_EQ(swapped("2048x11008x4096"), (std::vector<std::pair<int, int>>{{192, 192}, {192, 192}}));
}

// The swapped tiling comes as lent and on the persistent grid with multicast (PT 0), which ran
// 1.07x its PT 1 form past a wave over the mid-shape tunes; the multicast shares the tile's larger
// operand (MC 2 for A where BM > BN, else MC 1 for B). A lender's PT 4 (tuned for its own tile
// count) comes to a retiled neighbour as at most 2.
TEST(Space, WgmmaNeighboursOfferTheSwappedTilingPersistentWithMulticast) {
  auto swapped_forms = [](const LentAt& at) {
    std::vector<std::pair<int, int>> out; // (PT, MC) of each swapped neighbour
    for (const Config& n : at.near)
      if (n["SWAP"]) out.emplace_back(n["PT"], n["MC"]);
    return out;
  };
  // 192 x 192: a square tile, B shared.
  EXPECT_EQ(swapped_forms(LentAt("2048x11008x4096")), (std::vector<std::pair<int, int>>{{2, 0}, {0, 1}}));
  // Under a wave: 256 x 96 with PT 1 and PT 0 MC 2 (A's 256 rows shared), then the least padded 256 x 112.
  EXPECT_EQ(swapped_forms(LentAt("777x3584x18944")), (std::vector<std::pair<int, int>>{{1, 0}, {0, 2}, {1, 0}}));

  LentAt at("2048x11008x4096");
  at.lent.set("PT", 4);
  at.near = at.f.neighbors_of(at.lent, at.q, at.d);
  int retiled = 0;
  for (const Config& n : at.near)
    if (n["BM"] != 128 || n["BN"] != 256 || n["SWAP"]) {
      ++retiled;
      EXPECT_LE(n["PT"], 2) << n.to_json();
      EXPECT_TRUE(at.f.valid(n, at.q, at.d)) << ::testing::PrintToString(at.f.violations(n, at.q, at.d));
    }
  EXPECT_GE(retiled, 3); // unswapped 192 x 192 as lent and PT 0 MC 1, swapped 192 x 192 (both forms)

  // A ping-pong lender (PP 1: 128 x 128, PT 2) retiled to a swapped tiling of two consumers
  // (1576x3072x768: 128 x 144, 144 accumulators a thread for one consumer's whole tile) comes with
  // plain consumers (PP 0), as lent otherwise, and valid; its multicast form drops PP too (MC
  // excludes it). Every neighbour is valid, so the runtime drops none of them.
  LentAt pp("1576x3072x768");
  pp.lent = Config::from_json(R"({"BM":128,"BN":128,"WG":2,"ST":4,"SWZ":16,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":2,"MC":0,"EPI":1,"PP":1,"SK":0,"SWAP":0,"AR":0})");
  ASSERT_TRUE(pp.f.valid(pp.lent, pp.q, pp.d)) << ::testing::PrintToString(pp.f.violations(pp.lent, pp.q, pp.d));
  bool as_lent = false, multicast = false;
  for (const Config& n : pp.f.neighbors_of(pp.lent, pp.q, pp.d)) {
    EXPECT_TRUE(pp.f.valid(n, pp.q, pp.d)) << n.to_json() << ": " << ::testing::PrintToString(pp.f.violations(n, pp.q, pp.d));
    if (n["SWAP"] != 1 || n["BN"] != 144) continue;
    EXPECT_EQ(n["PP"], 0) << n.to_json();
    EXPECT_EQ(n["PT"], n["MC"] == 1 ? 0 : 2) << n.to_json();
    (n["MC"] == 1 ? multicast : as_lent) = true;
  }
  EXPECT_TRUE(as_lent);
  EXPECT_TRUE(multicast);
}

// The lender's own tiling on the persistent grid with multicast shares its larger operand: a 128 x
// 256 lender at 5000x3000x1000 comes as PT 0 MC 1 (B's 256 columns), where MC 2 (A's 128 rows) was
// offered before; in the H100 trials MC 1 ran 0.94x MC 2's time on tiles wider than tall.
TEST(Space, WgmmaPersistentMulticastNeighbourSharesTheLargerOperand) {
  const LentAt at("5000x3000x1000");
  ASSERT_EQ(at.lent["BM"], 128);
  ASSERT_EQ(at.lent["BN"], 256);
  int persistent_mc = 0;
  for (const Config& n : at.near)
    if (n["BM"] == 128 && n["BN"] == 256 && n["SWAP"] == 0 && n["PT"] == 0 && n["MC"] > 0) {
      ++persistent_mc;
      EXPECT_EQ(n["MC"], 1) << n.to_json();
    }
  EXPECT_EQ(persistent_mc, 1);
}

// A lender that runs PT tiles a block where the problem has few (PT 2 at 777x3584x18944: 98 tiles
// of 128 x 256 on 49 blocks) comes back first as it is with PT 1, and no neighbour leaves a
// quarter of the SMs without a block; where the tiles are many (2048x11008x4096) PT stays.
TEST(Space, WgmmaNeighboursKeepEverySmBusy) {
  const LentAt few("777x3584x18944");
  ASSERT_FALSE(few.near.empty());
  Config one = few.lent;
  one.set("PT", 1);
  EXPECT_EQ(few.near[0], one);
  for (const Config& n : few.near) {
    EXPECT_NE(n, few.lent);
    const unsigned blocks = few.f.launch_plan(n, few.q).main_step().grid[0];
    if (n["PT"] > 1 && 4 * blocks < 3 * 132u) ADD_FAILURE() << "PT " << n["PT"] << " with " << blocks << " blocks";
  }
  const LentAt many("2048x11008x4096");
  ASSERT_FALSE(many.near.empty());
  EXPECT_NE(many.near[0]["PT"], 1);
}

// Tiles of 192 (three 64-row or 64-column blocks): TMA only; three consumer warpgroups of 64 rows
// for BM 192, at most 96 accumulators a thread there (152 registers); EPI 2's halves need BN 128 or
// 256. The plan has four warpgroups (512 threads), K-major boxes of 192 rows, and under MC the
// shared K-major operand in two boxes of 96.
TEST(Space, WgmmaTilesOf192NeedTheTmaKernelAndFitTheirRegisters) {
  const Family f = find_family("gemm_wgmma");
  const auto d = DeviceInfo::nominal("sm_90");
  const auto p = half_problem(2048, 11008, 4096, "NN", DType::bf16);
  const Config wide = Config::from_json(R"({"BM":192,"BN":192,"WG":3,"ST":3,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":0,"MC":0,"EPI":1,"PP":0,"SK":2,"SWAP":0,"AR":0})");
  ASSERT_TRUE(f.valid(wide, p, d)) << ::testing::PrintToString(f.violations(wide, p, d));
  expect_each_refused(f, wide, p, d, {{"TMA", 0}, {"BN", 256}, {"WG", 2}, {"WG", 1}, {"ST", 4}, {"EPI", 2}});
  const LaunchStep s = f.launch_plan(wide, p).main_step();
  EXPECT_EQ(s.block[0], 512u);
  EXPECT_EQ(s.tma_of(gemm_a)->box_outer, 192u); // A row-major: K-major, one box of the tile's rows
  EXPECT_EQ(s.tma_of(gemm_b)->box_outer, 64u);  // B row-major: MN-major, three 64 x 64 blocks
  EXPECT_EQ(s.dynamic_smem, 3u * (192 + 192) * 128 + 1024 + 3u * 64 * 192 * 2);

  Config narrow = Config::from_json(R"({"BM":128,"BN":192,"WG":2,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":1,"MC":1,"EPI":1,"PP":0,"SK":0,"SWAP":0,"AR":0})");
  const auto nt = half_problem(1024, 3072, 768, "NT", DType::f16);
  ASSERT_TRUE(f.valid(narrow, nt, d)) << ::testing::PrintToString(f.violations(narrow, nt, d));
  expect_each_refused(f, narrow, nt, d, {{"TMA", 0}, {"EPI", 2}, {"WG", 3}});
  const LaunchStep m = f.launch_plan(narrow, nt).main_step();
  EXPECT_EQ(m.block[0], 384u);
  EXPECT_EQ(m.tma_of(gemm_b)->box_outer, 96u); // B column-major (K-major) shared by the pair: 96 rows each
  narrow.set("BN", 256), narrow.set("EPI", 2);
  EXPECT_TRUE(f.valid(narrow, nt, d)) << ::testing::PrintToString(f.violations(narrow, nt, d));
}

// SWAP: the kernel computes C^T = B^T A^T. Its plan swaps A and B for the launch (LaunchStep::swap_ab),
// its tile's rows run along N and its columns along M, and its layouts are those of B^T and A^T:
// with A row-major its B is K-major, so the tile's columns may be any multiple of 16 (96 here); with
// A column-major they must be whole 64-column blocks. TMA, EPI 0 or 1 (staged transposed), no SPLITK or PACK.
TEST(Space, WgmmaSwapTilesMAlongTheWgmmaN) {
  const Family f = find_family("gemm_wgmma");
  const auto d = DeviceInfo::nominal("sm_90");
  const Config sw = Config::from_json(R"({"BM":128,"BN":96,"WG":2,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":1,"MC":0,"EPI":0,"PP":0,"SK":0,"SWAP":1,"AR":0})");
  const auto nn = half_problem(3072, 768, 3072, "NN", DType::bf16);
  ASSERT_TRUE(f.valid(sw, nn, d)) << ::testing::PrintToString(f.violations(sw, nn, d));
  expect_each_refused(f, sw, nn, d, {{"TMA", 0}, {"EPI", 2}, {"EPI", 3}, {"SPLITK", 2}, {"SWAP", 0}, {"PACK", 1}});
  const LaunchPlan plan = f.launch_plan(sw, nn);
  const LaunchStep& s = plan.main_step();
  EXPECT_TRUE(s.swap_ab);
  EXPECT_EQ(s.grid[0], 6u * 32u); // N / BM = 768 / 128 rows of tiles by M / BN = 3072 / 96 columns
  EXPECT_FALSE(s.tma_of(gemm_a)->k_inner);  // its A is B^T: B row-major, so N is contiguous (MN-major)
  EXPECT_EQ(s.tma_of(gemm_a)->box_outer, 64u);
  EXPECT_TRUE(s.tma_of(gemm_b)->k_inner);   // its B is A^T: A row-major, K contiguous
  EXPECT_EQ(s.tma_of(gemm_b)->box_outer, 96u);
  EXPECT_NE(f.kernel_names(sw, nn).at(0).find(",0,1,0,0,1,1>"), std::string::npos) << f.kernel_names(sw, nn).at(0); // SK 0, SWAP 1, AR 0, bf16, A_COL 1, B_COL 1
  // EPI 1: C staged transposed, stored by TMA in boxes of 64 of C's columns by the tile's 96 rows.
  Config staged = sw;
  staged.set("EPI", 1);
  ASSERT_TRUE(f.valid(staged, nn, d)) << ::testing::PrintToString(f.violations(staged, nn, d));
  const LaunchStep e = f.launch_plan(staged, nn).main_step();
  EXPECT_TRUE(e.tma_of(gemm_c)->k_inner);
  EXPECT_EQ(e.tma_of(gemm_c)->box_inner, 64u);
  EXPECT_EQ(e.tma_of(gemm_c)->box_outer, 96u);
  // A column-major (TN): the kernel's B is MN-major, so 96 columns are refused and 128 serve.
  const auto tn = half_problem(3072, 768, 3072, "TN", DType::bf16);
  EXPECT_FALSE(f.valid(sw, tn, d));
  Config wide = sw;
  wide.set("BN", 128);
  EXPECT_TRUE(f.valid(wide, tn, d)) << ::testing::PrintToString(f.violations(wide, tn, d));
  EXPECT_NE(f.kernel_names(wide, tn).at(0).find(",0,1,0,0,1,0>"), std::string::npos) << f.kernel_names(wide, tn).at(0);
  // Unaligned problems need the packed copies, which SWAP does not read.
  const auto odd = half_problem(2999, 2999, 2999, "NN", DType::bf16);
  EXPECT_FALSE(f.valid(sw, odd, d));
  // Without SWAP, 96 columns need a column-major (K-major) B.
  Config plain = sw;
  plain.set("SWAP", 0);
  EXPECT_FALSE(f.valid(plain, nn, d));
  EXPECT_TRUE(f.valid(plain, half_problem(3072, 768, 3072, "NT", DType::bf16), d));
}

// AR (A from registers): the TMA kernel only, and only where a consumer thread's accumulators and
// its K tile of A (16 registers an m64 block) fit 160 registers (112 with three consumer
// warpgroups); the kernel's template argument follows SWAP.
TEST(Space, WgmmaARegistersNeedTheTmaKernelAndFitTheirRegisters) {
  const Family f = find_family("gemm_wgmma");
  const auto d = DeviceInfo::nominal("sm_90");
  const auto p = half_problem(4096, 4096, 4096, "NN", DType::bf16);
  const Config ar = Config::from_json(R"({"BM":128,"BN":256,"WG":2,"ST":4,"SWZ":16,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":0,"MC":0,"EPI":2,"PP":0,"SK":0,"SWAP":0,"AR":1})");
  ASSERT_TRUE(f.valid(ar, p, d)) << ::testing::PrintToString(f.violations(ar, p, d));
  EXPECT_NE(f.kernel_names(ar, p).at(0).find(",0,0,1,0,0,0>"), std::string::npos) << f.kernel_names(ar, p).at(0); // SWAP 0, AR 1, bf16, NN
  Config two = ar; // two m64 blocks a consumer: 128 accumulators and 32 registers of A
  two.set("BM", 256), two.set("BN", 128);
  EXPECT_TRUE(f.valid(two, p, d)) << ::testing::PrintToString(f.violations(two, p, d));
  Config three = ar; // three consumer warpgroups of 64 x 192: 96 and 16
  three.set("BM", 192), three.set("BN", 192), three.set("WG", 3), three.set("ST", 3), three.set("EPI", 1);
  EXPECT_TRUE(f.valid(three, p, d)) << ::testing::PrintToString(f.violations(three, p, d));
  Config tall = ar; // one consumer of 256 x 64: 128 accumulators and 64 registers of A
  tall.set("BM", 256), tall.set("BN", 64), tall.set("WG", 1), tall.set("EPI", 1), tall.set("PT", 1);
  tall.set("AR", 0);
  EXPECT_TRUE(f.valid(tall, p, d)) << ::testing::PrintToString(f.violations(tall, p, d));
  expect_each_refused(f, tall, p, d, {{"AR", 1}});
  Config cp = ar; // the cp.async kernel
  cp.set("TMA", 0), cp.set("EPI", 0), cp.set("PT", 1), cp.set("ST", 3), cp.set("AR", 0);
  EXPECT_TRUE(f.valid(cp, p, d)) << ::testing::PrintToString(f.violations(cp, p, d));
  expect_each_refused(f, cp, p, d, {{"AR", 1}});
  // Configs recorded before AR existed read as AR 0.
  EXPECT_EQ(f.canonical(Config::from_json(R"({"BM":128,"BN":256,"WG":2,"ST":3,"SWZ":8,"TMA":1})"))["AR"], 0);
}
