#include <gtest/gtest.h>

#include <map>
#include <set>

#include "ktune/error.h"
#include "ktune/family.h"
#include "ktune/gemm_problem.h"

using namespace ktune;

namespace {
const GemmProblem k4096 = GemmProblem::parse("4096x4096x4096");
}

TEST(Space, BuiltinFamiliesAreRegistered) {
  std::set<std::string> names;
  for (const auto& f : builtin_families())
    if (f.op() == "gemm") names.insert(f.name());
  EXPECT_EQ(names, (std::set<std::string>{"gemm_naive", "gemm_smem", "gemm_simt", "gemm_skinny", "gemm_tf32x3", "gemm_tc16",
                                           "gemm_skinny16", "gemm_wgmma", "gemm_wgmma_tf32x3"}));
  // Every family computes a registered op.
  for (const auto& f : builtin_families()) EXPECT_NO_THROW(op_info(f.op())) << f.name();
  EXPECT_THROW(find_family("gemm_nope"), UsageError);
}

TEST(Space, Tf32x3RunsUnpackedExactlyWhereAlignedAndDividedAndNeedsSm80) {
  const Family f = find_family("gemm_tf32x3");
  const auto d = DeviceInfo::nominal("sm_90");
  auto packs = [&](const char* shape) {
    std::set<int> out;
    f.enumerate(GemmProblem::parse(shape), d, [&](const Config& c) {
      out.insert(c["PACK"]);
      EXPECT_EQ(c["BK"] / 8 % c["FOLD"], 0) << c.to_json();
      return true;
    });
    return out;
  };
  EXPECT_EQ(packs("4096x4096x4096"), (std::set<int>{0})); // every tile and slice count divides it
  EXPECT_EQ(packs("2999x2999x2999"), (std::set<int>{1})); // unaligned rows
  EXPECT_EQ(packs("4096x4096x4000"), (std::set<int>{0, 1})); // K divides by some BK * SPLITK only
  const Config c = Config::from_json(
      R"({"BM":128,"BN":128,"WM":64,"WN":32,"BK":32,"ST":3,"KU":1,"FOLD":4,"CVT":0,"SPLITK":1,"SWZ":8,"PACK":0})");
  EXPECT_TRUE(f.valid(c, k4096, d));
  EXPECT_TRUE(f.valid(c, k4096, DeviceInfo::nominal("sm_80")));
  EXPECT_EQ(f.min_arch(), 80); // mma.sync with tf32 and cp.async
  // A config recorded before CVT existed was measured with cvt.rna.tf32 (CVT = 1).
  const Config old = Config::from_json(
      R"({"BM":128,"BN":128,"WM":64,"WN":32,"BK":32,"ST":3,"KU":1,"FOLD":4,"SPLITK":1,"SWZ":8,"PACK":0})");
  EXPECT_EQ(f.canonical(old)["CVT"], 1);
}

TEST(Space, SimtHasAtLeastAThousandValidConfigsOnSm90) {
  EXPECT_GE(find_family("gemm_simt").count(k4096, DeviceInfo::nominal("sm_90")), 1000u);
}

TEST(Space, PrunedEnumerationAgreesWithFullValidation) {
  // Every enumerated config passes violations(), and the count matches a brute-force filter
  // over the whole Cartesian product of a narrowed space.
  SpaceRestriction r;
  r.domains = {{"BM", {32, 64}}, {"BN", {64, 128}}, {"WM", {16, 32}}, {"WN", {32, 64}}, {"TM", {1, 4}}, {"TN", {4, 8}},
               {"BK", {8, 32}}, {"PIPE", {1, 4}}, {"SPLITK", {1, 16}}, {"SWZ", {1}}};
  const Family f = find_family("gemm_simt").restricted(r);
  const auto p = GemmProblem::parse("96x200x136");
  const auto d = DeviceInfo::nominal("sm_86");
  uint64_t enumerated = 0;
  f.enumerate(p, d, [&](const Config& c) {
    EXPECT_TRUE(f.valid(c, p, d)) << c.to_json();
    ++enumerated;
    return true;
  });
  uint64_t brute = 0;
  std::function<void(size_t, Config&)> all = [&](size_t i, Config& c) {
    if (i == f.params().size()) {
      brute += f.valid(c, p, d);
      return;
    }
    for (int v : f.params()[i].values) {
      c.set(f.params()[i].name, v);
      all(i + 1, c);
    }
  };
  Config c;
  all(0, c);
  EXPECT_EQ(enumerated, brute);
  EXPECT_GT(enumerated, 0u);
}

TEST(Space, BrokenConstraintsAreNamed) {
  const Family f = find_family("gemm_simt");
  Config c{{"BM", 128}, {"BN", 128}, {"WM", 64}, {"WN", 64}, {"TM", 8}, {"TN", 8}, {"LN", 8}, {"BK", 8}, {"VEC", 4}, {"AT", 1},
           {"PAD", 4}, {"PIPE", 2}, {"SPLITK", 1}, {"SWZ", 1}, {"EVEN", 0}, {"PACK", 0}};
  EXPECT_TRUE(f.valid(c, k4096, DeviceInfo::nominal("sm_90")));
  const auto unaligned = GemmProblem::parse("2999x2999x2999");
  const auto why = f.violations(c, unaligned, DeviceInfo::nominal("sm_90"));
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("alignment"), std::string::npos);
  // Packed operands are aligned whatever the problem: the same config is valid with PACK = 1,
  // which in turn has nothing to do where the plain kernel already runs aligned and unchecked.
  c.set("PACK", 1);
  EXPECT_TRUE(f.valid(c, unaligned, DeviceInfo::nominal("sm_90")));
  const auto pointless = f.violations(c, k4096, DeviceInfo::nominal("sm_90"));
  ASSERT_EQ(pointless.size(), 1u);
  EXPECT_NE(pointless[0].find("PACK only"), std::string::npos) << pointless[0];
  EXPECT_TRUE(f.valid(c, GemmProblem::parse("4000x4000x4000"), DeviceInfo::nominal("sm_90"))); // 4000 % 128 != 0
  c.set("PACK", 0);
  c.set("EVEN", 1);
  EXPECT_FALSE(f.valid(c, GemmProblem::parse("4000x4096x4096"), DeviceInfo::nominal("sm_90")));
  c.set("BM", 48);
  EXPECT_FALSE(f.valid(c, k4096, DeviceInfo::nominal("sm_90"))); // outside the domain
}

TEST(Space, SharedMemoryLimitDependsOnArch) {
  const Family f = find_family("gemm_simt");
  Config c{{"BM", 256}, {"BN", 128}, {"WM", 64}, {"WN", 64}, {"TM", 8}, {"TN", 8}, {"LN", 8}, {"BK", 32}, {"VEC", 4}, {"AT", 1},
           {"PAD", 4}, {"PIPE", 3}, {"SPLITK", 1}, {"SWZ", 1}, {"EVEN", 0}, {"PACK", 0}};
  // 3 stages x (32 x 260 + 32 x 132) floats = 150528 bytes: fits sm_90's 227 KB, not sm_86's 99 KB.
  EXPECT_TRUE(f.valid(c, k4096, DeviceInfo::nominal("sm_90")));
  EXPECT_FALSE(f.valid(c, k4096, DeviceInfo::nominal("sm_86")));
}

TEST(Space, SampleIsSeededDistinctAndValid) {
  const Family f = find_family("gemm_simt");
  const auto d = DeviceInfo::nominal("sm_90");
  const auto a = f.sample(k4096, d, 50, 7), b = f.sample(k4096, d, 50, 7), c = f.sample(k4096, d, 50, 8);
  ASSERT_EQ(a.size(), 50u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::set<std::string> uniq;
  for (const auto& x : a) {
    EXPECT_TRUE(f.valid(x, k4096, d));
    uniq.insert(x.to_json());
  }
  EXPECT_EQ(uniq.size(), 50u);
  // A space smaller than the request is returned whole.
  EXPECT_EQ(find_family("gemm_smem").sample(k4096, d, 10, 1).size(), 3u);
}

TEST(Space, RestrictionFromJsonNarrowsAndRejectsTypos) {
  const Family f = find_family("gemm_simt");
  const auto d = DeviceInfo::nominal("sm_90");
  const auto r = SpaceRestriction::from_json(R"({"family": "gemm_simt", "domains": {"BK": [8], "SPLITK": [1]}})", "test");
  const Family g = f.restricted(r);
  EXPECT_LT(g.count(k4096, d), f.count(k4096, d));
  g.enumerate(k4096, d, [](const Config& c) {
    EXPECT_EQ(c["BK"], 8);
    return c["SPLITK"] == 1;
  });
  EXPECT_THROW(f.restricted(SpaceRestriction::from_json(R"({"domains": {"BK": [12]}})", "t")), UsageError);
  EXPECT_THROW(f.restricted(SpaceRestriction::from_json(R"({"domains": {"BQ": [8]}})", "t")), UsageError);
  EXPECT_THROW(f.restricted(SpaceRestriction::from_json(R"({"family": "gemm_naive", "domains": {}})", "t")), UsageError);
  // A user kernel's family is named by its spec's name alone, or with its exact version.
  const auto by_name = SpaceRestriction::from_json(R"({"family": "conv2d", "domains": {}})", "t");
  EXPECT_TRUE(by_name.narrows("conv2d@36451a48"));
  EXPECT_TRUE(by_name.narrows("conv2d"));
  EXPECT_FALSE(by_name.narrows("conv2d_tiled@36451a48"));
  const auto by_version = SpaceRestriction::from_json(R"({"family": "conv2d@36451a48", "domains": {}})", "t");
  EXPECT_TRUE(by_version.narrows("conv2d@36451a48"));
  EXPECT_FALSE(by_version.narrows("conv2d@00000000")) << "another version of the kernel";
  EXPECT_THROW(SpaceRestriction::from_json("{not json", "t"), UsageError);
  EXPECT_THROW(SpaceRestriction::from_json(R"({"domains": {"BK": "8"}})", "t"), UsageError);
}

TEST(Space, ConstraintReadingAnUndeclaredParameterFailsLoudly) {
  Family f("t", "gemm/gemm_naive.cu");
  f.param("X", {1, 2});
  EXPECT_THROW(f.restrict("reads Y", {"Y"}, [](const Config&, const GemmProblem&, const DeviceInfo&) { return true; }),
               Error);
  // A predicate that reads a parameter it did not declare sees an error, not a default.
  f.restrict("lies about reads", {"X"}, [](const Config& c, const GemmProblem&, const DeviceInfo&) { return c["Z"] > 0; });
  EXPECT_THROW(f.count(k4096, DeviceInfo::nominal("sm_90")), Error);
}

TEST(Space, ConfigJsonRoundTripsAndCanonicalizes) {
  const Family f = find_family("gemm_smem");
  const Config c = Config::from_json(R"({"TILE": 16})");
  EXPECT_EQ(c.to_json(), R"({"TILE":16})");
  EXPECT_EQ(c.hash(), Config::from_json(c.to_json()).hash());
  EXPECT_THROW(Config::from_json(R"({"TILE": 1.5})"), UsageError);
  EXPECT_THROW(f.canonical(Config::from_json(R"({"TILE": 16, "X": 1})")), UsageError);
  const Family s = find_family("gemm_naive");
  EXPECT_EQ(s.canonical(Config::from_json(R"({"BY": 4, "BX": 32})")).to_json(), R"({"BX":32,"BY":4})");
}

TEST(Space, ValidityChecksConstraintsInOrderSoLaterOnesMayRelyOnEarlierOnes) {
  // BM < WM gives zero warps; the register constraint divides by the thread count and must
  // never see such a config (a strategy stepping BM down once crashed the tuner with SIGFPE).
  const Family f = find_family("gemm_simt");
  Config c{{"BM", 16}, {"BN", 128}, {"WM", 64}, {"WN", 64}, {"TM", 8}, {"TN", 8}, {"LN", 8}, {"BK", 8}, {"VEC", 4}, {"AT", 1},
           {"PAD", 4}, {"PIPE", 2}, {"SPLITK", 1}, {"SWZ", 1}, {"EVEN", 0}, {"PACK", 0}};
  const auto why = f.violations(c, k4096, DeviceInfo::nominal("sm_90"));
  ASSERT_EQ(why.size(), 1u);
  EXPECT_EQ(why[0], "warp tile divides block tile");
  // Every one-step neighbour of valid configs can be asked about without a crash.
  const auto d = DeviceInfo::nominal("sm_90");
  for (const auto& v : f.sample(k4096, d, 50, 9))
    for (const auto& prm : f.params())
      for (int x : prm.values) {
        Config n = v;
        n.set(prm.name, x);
        f.valid(n, k4096, d);
      }
}

TEST(Space, ConfigsRecordedBeforeLnGetTheLaneLayoutTheyWereMeasuredWith) {
  // Tables and trial logs written before gemm_simt had LN: the kernel then derived
  // LN = min(32, WN / TN), and canonical() fills in exactly that.
  const Family f = find_family("gemm_simt");
  const char* old = R"({"BM":128,"BN":128,"WM":32,"WN":128,"TM":8,"TN":2,"BK":8,"VEC":2,"AT":1,"PAD":0,"PIPE":1,"SPLITK":4,"SWZ":1,"EVEN":1})";
  EXPECT_EQ(f.canonical(Config::from_json(old))["LN"], 32);
  const char* old2 = R"({"BM":128,"BN":128,"WM":64,"WN":32,"TM":8,"TN":8,"BK":8,"VEC":4,"AT":1,"PAD":4,"PIPE":0,"SPLITK":1,"SWZ":1,"EVEN":1})";
  const Config c = f.canonical(Config::from_json(old2));
  EXPECT_EQ(c["LN"], 4);
  EXPECT_EQ(c["PACK"], 0); // nothing was packed before PACK existed
  EXPECT_TRUE(f.valid(c, k4096, DeviceInfo::nominal("sm_90")));
  // A config that names LN keeps it, and validity still requires it.
  Config given = Config::from_json(old2);
  given.set("LN", 2);
  EXPECT_EQ(f.canonical(given)["LN"], 2);
  EXPECT_FALSE(f.valid(Config::from_json(old2), k4096, DeviceInfo::nominal("sm_90")));
}

TEST(Space, SkinnyFamilyIsOnlyForFewRowsAndFollowsBsLayout) {
  const Family f = find_family("gemm_skinny");
  const auto d = DeviceInfo::nominal("sm_90");
  EXPECT_EQ(f.count(GemmProblem::parse("65x4096x4096"), d), 0u);
  EXPECT_EQ(f.count(k4096, d), 0u);
  for (const char* l : {"NN", "TN"})
    for (const auto& c : f.sample(GemmProblem::parse("16x4096x4096", l), d, 40, 3)) EXPECT_EQ(c["NC"], 1) << l;
  for (const char* l : {"NT", "TT"})
    for (const auto& c : f.sample(GemmProblem::parse("16x4096x4096", l), d, 40, 3)) {
      EXPECT_EQ(c["KG"], 1) << l;
      EXPECT_EQ(c["ST"], 0) << l; // cp.async stages only for row-major B
    }
  // Stages replace the register ping-pong (UNROLL fixed at 1); KC below 64 is a stage depth only.
  int staged = 0;
  for (const auto& c : f.sample(GemmProblem::parse("16x4096x4096"), d, 400, 4)) {
    staged += c["ST"] > 0;
    if (c["ST"] > 0) {
      EXPECT_EQ(c["UNROLL"], 1) << c.to_json();
      EXPECT_EQ(c["KC"] % (4 * c["KG"]), 0) << c.to_json();
    } else {
      EXPECT_GE(c["KC"], 64) << c.to_json();
    }
  }
  EXPECT_GT(staged, 0);
  // Configs from before ST stream B through registers.
  const Config old = Config::from_json(R"({"MT":1,"NT":512,"VEC":4,"KG":32,"NC":1,"UNROLL":1,"KC":256,"LDH":1,"CL":1,"SPLITK":2})");
  EXPECT_EQ(f.canonical(old)["ST"], 0);
  EXPECT_TRUE(f.valid(f.canonical(old), GemmProblem::parse("1x4096x4096"), d));
  EXPECT_GE(f.count(GemmProblem::parse("1x4096x4096"), d), 1000u);
  EXPECT_GE(f.count(GemmProblem::parse("16x4096x4096", "NT"), d), 1000u);
}

TEST(Space, SimtGeneralFormsDropEvenAndPackWhereTheAlignmentForbidsVectorLoads) {
  const Family f = find_family("gemm_simt");
  const auto d = DeviceInfo::nominal("sm_90");
  Config even{{"BM", 128}, {"BN", 128}, {"WM", 64}, {"WN", 32}, {"TM", 8}, {"TN", 4}, {"LN", 8}, {"BK", 8}, {"VEC", 4}, {"AT", 1},
              {"PAD", 4}, {"PIPE", 1}, {"SPLITK", 1}, {"SWZ", 8}, {"EVEN", 1}, {"PACK", 0}};
  ASSERT_TRUE(f.valid(even, k4096, d));
  const auto general = f.generalized(even);
  ASSERT_EQ(general.size(), 2u);
  EXPECT_EQ(general[0]["EVEN"], 0);
  EXPECT_EQ(general[0]["PACK"], 0);
  EXPECT_EQ(general[1]["EVEN"], 0);
  EXPECT_EQ(general[1]["PACK"], 1);
  // The first general form valid for a shape is what the runtime launches there.
  auto first_valid = [&](const GemmProblem& p) {
    for (const auto& g : general)
      if (f.valid(g, p, d)) return g["PACK"];
    return -1;
  };
  EXPECT_EQ(first_valid(GemmProblem::parse("4000x4000x4000")), 0); // aligned: bounds checks suffice
  EXPECT_EQ(first_valid(GemmProblem::parse("2999x2999x2999")), 1); // a4: VEC = 4 only on packed copies
  // A packed config's general forms include the unpacked one, for shapes that need no packing.
  Config packed = general[1];
  const auto back = f.generalized(packed);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0]["PACK"], 0);
  EXPECT_TRUE(f.valid(back[0], k4096, d));
}

TEST(Space, PackedSplitKPlanRunsPackFirstAndSizesSlicesThenCopies) {
  // Workspace of a packed split-K config: the SPLITK slices (M x ws_ld) that gemm_splitk_reduce
  // reads from the start, then A' and B' padded to whole tiles (gemm_pack.cuh's PackedLayout).
  const Family f = find_family("gemm_simt");
  const Config c{{"BM", 128}, {"BN", 128}, {"WM", 64}, {"WN", 32}, {"TM", 8}, {"TN", 4}, {"LN", 8}, {"BK", 8}, {"VEC", 4},
                 {"AT", 1}, {"PAD", 4}, {"PIPE", 3}, {"SPLITK", 4}, {"SWZ", 8}, {"EVEN", 0}, {"PACK", 1}};
  const auto p = GemmProblem::parse("2999x2999x2999");
  ASSERT_TRUE(f.valid(c, p, DeviceInfo::nominal("sm_90")));
  const LaunchPlan plan = f.launch_plan(c, p);
  const size_t slices = size_t(4) * 2999 * 3000;     // ws_ld = 2999 rounded up to 4
  const size_t a = size_t(3072) * 3008;              // M to BM = 128 rows, K to BK * SPLITK = 32
  const size_t b = size_t(3008) * 3072;              // K rows, N to BN = 128
  EXPECT_EQ(plan.workspace_bytes, (slices + a + b) * sizeof(float));
  ASSERT_EQ(plan.steps.size(), 3u);
  EXPECT_EQ(plan.steps[0].kernel, 2); // gemm_pack, named last by kernels()
  EXPECT_EQ(plan.steps[1].kernel, 0); // the main kernel
  EXPECT_EQ(plan.steps[2].kernel, 1); // gemm_splitk_reduce
  EXPECT_EQ(&plan.main_step(), &plan.steps[1]);
  const auto names = f.kernel_names(c, p);
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[2].rfind("gemm_pack<128,128,32,4,", 0), 0u) << names[2];
}

TEST(Space, SplitKReduceFollowsTheMainKernelAsADependentLaunchFourColumnsAThread) {
  // The reduction may be scheduled while the main kernel ends (it waits for the main grid
  // itself); nothing else in a plan overlaps its predecessor. Each of its threads adds 4 columns.
  const Family f = find_family("gemm_skinny");
  const auto d = DeviceInfo::nominal("sm_90");
  const Config split = Config::from_json(
      R"({"MT":16,"NT":256,"VEC":4,"KG":8,"NC":1,"UNROLL":1,"KC":32,"LDH":1,"CL":0,"SPLITK":8,"ST":6,"MINB":2})");
  // 16 rows of 1024 (4096 / 4) or 1025 (4100 / 4) groups of 4 columns, 256 threads a block.
  for (const auto& [shape, blocks] : std::vector<std::pair<const char*, unsigned>>{{"16x4096x4096", 64u}, {"16x4100x4096", 65u}}) {
    const auto p = GemmProblem::parse(shape);
    ASSERT_TRUE(f.valid(split, p, d)) << shape;
    const LaunchPlan plan = f.launch_plan(split, p);
    ASSERT_EQ(plan.steps.size(), 2u);
    EXPECT_FALSE(plan.steps[0].overlap_previous);
    EXPECT_EQ(plan.steps[1].kernel, 1);
    EXPECT_TRUE(plan.steps[1].overlap_previous);
    EXPECT_EQ(plan.steps[1].grid[0], blocks) << shape;
    EXPECT_EQ(plan.steps[1].block[0], 256u);
    EXPECT_EQ(f.kernel_names(split, p).at(1), "gemm_splitk_reduce<8>");
  }
  // A cluster of 8 adds all 8 slices itself: no reduction, nothing to overlap.
  Config clustered = split;
  clustered.set("CL", 1);
  const auto p = GemmProblem::parse("1x4096x4096");
  clustered.set("MT", 1);
  clustered.set("MINB", 1);
  ASSERT_TRUE(f.valid(clustered, p, d)) << clustered.to_json();
  const LaunchPlan plan = f.launch_plan(clustered, p);
  ASSERT_EQ(plan.steps.size(), 1u);
  EXPECT_FALSE(plan.steps[0].overlap_previous);
  EXPECT_EQ(plan.workspace_bytes, 0u);
}

TEST(Space, Tc16ServesHalfPrecisionProblemsOfEveryLayoutOnSm80AndUp) {
  const Family f = find_family("gemm_tc16");
  const auto d = DeviceInfo::nominal("sm_90");
  auto count = [&](const char* shape, DType t, const char* layout = "NN", const char* arch = "sm_90") {
    return f.count(GemmProblem::parse(shape, layout, t), DeviceInfo::nominal(arch));
  };
  EXPECT_GT(count("4096x4096x4096", DType::bf16), 500u);
  EXPECT_EQ(count("4096x4096x4096", DType::bf16), count("4096x4096x4096", DType::f16));
  EXPECT_GT(count("4096x4096x4096", DType::bf16, "NN", "sm_80"), 0u);
  EXPECT_EQ(count("4096x4096x4096", DType::f32), 0u); // FP32 is not its dtype
  for (const char* l : {"NT", "TN", "TT"}) EXPECT_GT(count("4096x4096x4096", DType::bf16, l), 500u) << l;
  EXPECT_GT(count("4096x4096x4100", DType::bf16), 0u); // K not a multiple of 8 halves: packed
  EXPECT_GT(count("4096x4100x4096", DType::f16), 0u);  // N likewise
  EXPECT_GT(count("1001x4096x4096", DType::bf16), 0u); // any M
  // Every valid config's plan at an aligned shape that M does not divide, unpacked and unsplit:
  // one step, the threads and shared memory the template uses.
  const auto p = GemmProblem::parse("1001x4096x4096", "NN", DType::bf16);
  SpaceRestriction plain;
  plain.domains = {{"SPLITK", {1}}, {"PACK", {0}}};
  for (const auto& c : f.restricted(plain).sample(p, d, 50, 3)) {
    const LaunchPlan plan = f.launch_plan(c, p);
    ASSERT_EQ(plan.steps.size(), 1u);
    EXPECT_EQ(plan.workspace_bytes, 0u);
    const auto& s = plan.main_step();
    EXPECT_EQ(s.block[0], unsigned(32 * (c["BM"] / c["WM"]) * (c["BN"] / c["WN"])));
    EXPECT_EQ(s.grid[0], unsigned((1001 + c["BM"] - 1) / c["BM"] * (4096 / c["BN"])));
    const int pad = c["SMEM"] == 1 ? 8 : 0; // rows padded by 16 bytes, or not (plain, swizzled)
    EXPECT_EQ(s.dynamic_smem, unsigned(c["ST"] * (c["BM"] * (c["BK"] + pad) + c["BK"] * (c["BN"] + pad)) * 2));
    EXPECT_LE(s.dynamic_smem, unsigned(d.max_smem_per_block_optin));
  }
  // Column-major tiles are stored K-major (A) and N-major (B): [BK][BM (+ 8)] and [BN][BK (+ 8)].
  const auto tt = GemmProblem::parse("1001x4096x4096", "TT", DType::bf16);
  for (const auto& c : f.restricted(plain).sample(tt, d, 20, 4)) {
    const int pad = c["SMEM"] == 1 ? 8 : 0;
    EXPECT_EQ(f.launch_plan(c, tt).main_step().dynamic_smem,
              unsigned(c["ST"] * (c["BK"] * (c["BM"] + pad) + c["BN"] * (c["BK"] + pad)) * 2));
  }
}

// The half ladder's parameters (SMEM, LDM, CPA): every value is offered at an aligned shape;
// loads through registers come with two stages only and never where the kernel loads elements
// (the same kernel twice); a ladder config lent to such a shape falls back to its cp.async form.
TEST(Space, Tc16LadderParametersAreChoicesWithTheirConstraints) {
  const Family f = find_family("gemm_tc16");
  const auto d = DeviceInfo::nominal("sm_90");
  std::map<std::string, std::set<int>> seen;
  const auto aligned = GemmProblem::parse("4096x4096x4096", "NN", DType::bf16);
  f.enumerate(aligned, d, [&](const Config& c) {
    for (const char* k : {"SMEM", "LDM", "CPA"}) seen[k].insert(c[k]);
    if (c["CPA"] == 0) {
      EXPECT_EQ(c["ST"], 2) << c.to_json();
    }
    return true;
  });
  EXPECT_EQ(seen["SMEM"], (std::set<int>{0, 1, 2}));
  EXPECT_EQ(seen["LDM"], (std::set<int>{0, 1}));
  EXPECT_EQ(seen["CPA"], (std::set<int>{0, 1}));
  // Beyond the workspace cap an unaligned shape takes element loads: CPA = 1 only.
  const auto huge = GemmProblem::parse("16383x16385x16387", "NT", DType::f16);
  std::set<int> cpa;
  f.enumerate(huge, d, [&](const Config& c) {
    cpa.insert(c["CPA"]);
    return cpa.size() < 2;
  });
  EXPECT_EQ(cpa, (std::set<int>{1}));
  const Config naive = Config::from_json(
      R"({"BM":128,"BN":128,"WM":64,"WN":64,"BK":32,"ST":2,"SWZ":1,"SPLITK":1,"PACK":0,"SMEM":0,"LDM":0,"CPA":0})");
  ASSERT_TRUE(f.valid(naive, aligned, d)) << f.violations(naive, aligned, d)[0];
  EXPECT_FALSE(f.valid(naive, huge, d));
  bool served = false;
  for (const auto& g : f.generalized(naive))
    if (f.valid(g, huge, d)) {
      EXPECT_EQ(g["CPA"], 1);
      EXPECT_EQ(g["LDM"], 0); // the rest of the config stays
      EXPECT_EQ(g["SMEM"], 0);
      served = true;
      break;
    }
  EXPECT_TRUE(served);
  // Unpadded rows (plain or swizzled) need 16 bytes a row less of shared memory.
  Config swz = naive;
  swz.set("SMEM", 2);
  Config pad = naive;
  pad.set("SMEM", 1);
  EXPECT_EQ(f.launch_plan(swz, aligned).main_step().dynamic_smem, 2u * (128 * 32 + 32 * 128) * 2);
  EXPECT_EQ(f.launch_plan(pad, aligned).main_step().dynamic_smem, 2u * (128 * 40 + 32 * 136) * 2);
}

TEST(Space, Tc16PacksExactlyWhereUnalignedOrUndividedAndFallsBackToElementLoadsBeyondTheWorkspaceCap) {
  const Family f = find_family("gemm_tc16");
  const auto d = DeviceInfo::nominal("sm_90");
  auto packs = [&](const GemmProblem& p) {
    std::set<int> out;
    f.enumerate(p, d, [&](const Config& c) {
      out.insert(c["PACK"]);
      return true;
    });
    return out;
  };
  for (DType t : {DType::bf16, DType::f16})
    for (const char* l : {"NN", "NT", "TN", "TT"}) {
      EXPECT_EQ(packs(GemmProblem::parse("4096x4096x4096", l, t)), (std::set<int>{0})) << l; // aligned, divided
      EXPECT_EQ(packs(GemmProblem::parse("2999x2999x2999", l, t)), (std::set<int>{1})) << l; // unaligned rows
      EXPECT_EQ(packs(GemmProblem::parse("1000x1032x520", l, t)), (std::set<int>{0, 1})) << l; // aligned, undivided
    }
  // The contiguous dimension decides: M = 1001 is fine for row-major A, not for column-major A.
  EXPECT_EQ(packs(GemmProblem::parse("1001x4096x4096", "NN", DType::bf16)), (std::set<int>{0, 1}));
  EXPECT_EQ(packs(GemmProblem::parse("1001x4096x4096", "TN", DType::bf16)), (std::set<int>{1}));
  auto odd_ldc = GemmProblem::parse("4096x4096x4096", "NN", DType::bf16);
  odd_ldc.ldc = 4097, odd_ldc.align = 2; // C's alignment class covers A and B too: packed
  EXPECT_EQ(packs(odd_ldc), (std::set<int>{1}));
  // Packed copies beyond 512 MiB: the unpacked kernel (element loads) is what remains.
  const auto huge = GemmProblem::parse("16383x16385x16387", "NT", DType::f16);
  EXPECT_EQ(packs(huge), (std::set<int>{0}));

  // A packed split-K plan: gemm_pack16 first (kernel 2), the main kernel, gemm_splitk_reduce16
  // (kernel 1, a dependent launch). Workspace: SPLITK FP32 slices of M x ws_ld, then A' and B' in
  // halves, padded to whole tiles and K to BK * SPLITK.
  const Config c = Config::from_json(
      R"({"BM":128,"BN":256,"WM":64,"WN":64,"BK":32,"ST":4,"SWZ":8,"SPLITK":4,"PACK":1,"SMEM":1,"LDM":1,"CPA":1})");
  for (const char* l : {"NN", "NT", "TN", "TT"}) {
    const auto p = GemmProblem::parse("2999x2999x2999", l, DType::bf16);
    ASSERT_TRUE(f.valid(c, p, d)) << l << ": " << f.violations(c, p, d)[0];
    const LaunchPlan plan = f.launch_plan(c, p);
    const size_t slices = size_t(4) * 2999 * 3000 * 4; // ws_ld = 2999 rounded up to 4, floats
    const size_t a = size_t(3072) * 3072 * 2;          // M to BM = 128, K to BK * SPLITK = 128
    const size_t b = size_t(3072) * 3072 * 2;          // N to BN = 256
    EXPECT_EQ(plan.workspace_bytes, slices + a + b) << l;
    ASSERT_EQ(plan.steps.size(), 3u);
    EXPECT_EQ(plan.steps[0].kernel, 2);
    EXPECT_EQ(plan.steps[0].grid[0], 3072u * 3072 / 8 / 1024); // 1024 chunks of 8 halves a block
    EXPECT_EQ(plan.steps[0].grid[1], 1u);
    EXPECT_EQ(plan.steps[0].grid[2], 2u);
    EXPECT_EQ(plan.steps[1].kernel, 0);
    EXPECT_EQ(plan.steps[1].grid[0], 24u * 12u);
    EXPECT_EQ(plan.steps[1].grid[2], 4u);
    EXPECT_EQ(plan.steps[1].block[0], 256u);
    EXPECT_EQ(plan.steps[2].kernel, 1);
    EXPECT_TRUE(plan.steps[2].overlap_previous);
    const auto names = f.kernel_names(c, p);
    ASSERT_EQ(names.size(), 3u);
    const std::string layout = std::string(l[0] == 'T' ? "1" : "0") + "," + (l[1] == 'T' ? "1" : "0");
    EXPECT_EQ(names[0], "gemm_tc16<128,256,32,64,64,4,8,4,1,1,1,1,1,0," + layout + ">");
    EXPECT_EQ(names[1], "gemm_splitk_reduce16<4,0>");
    EXPECT_EQ(names[2], "gemm_pack16<128,256,128,4," + layout + ">");
  }
  // Every split reaches real K: K = 33 takes two 32-deep slices at most.
  const auto short_k = GemmProblem::parse("77x1001x33", "NN", DType::bf16);
  f.enumerate(short_k, d, [&](const Config& x) {
    EXPECT_TRUE(x["SPLITK"] == 1 || (x["SPLITK"] == 2 && x["BK"] == 32)) << x.to_json();
    return true;
  });
}

TEST(Space, Tc16DefaultIsValidForEveryHalfProblemAndLayoutAndAlignment) {
  const Family f = find_family("gemm_tc16");
  ASSERT_TRUE(f.has_default());
  int checked = 0, packed = 0;
  for (const char* arch : {"sm_80", "sm_86", "sm_89", "sm_90"})
    for (DType t : {DType::bf16, DType::f16})
      for (const char* l : {"NN", "NT", "TN", "TT"})
        for (const char* shape : {"4096x4096x4096", "2999x2999x2999", "4095x4097x4093", "128x4096x4096", "1x1x1",
                                  "1x4096x4096", "4096x1x4096", "77x1001x33", "301x203x137", "64x64x0",
                                  "7x9x11", "16383x16385x16387", "20000x20000x8"})
          for (int pad : {0, 1, 8}) {
            const auto d = DeviceInfo::nominal(arch);
            GemmProblem p = GemmProblem::parse(shape, l, t);
            p.lda = std::max<int64_t>(1, p.min_lda()) + pad, p.ldb = std::max<int64_t>(1, p.min_ldb()) + pad;
            p.ldc = p.min_ldc() + pad;
            for (int align : {16, 8, 4, 2}) {
              p.align = align;
              const Config c = f.default_config(p, d);
              const auto why = f.violations(c, p, d);
              EXPECT_TRUE(why.empty()) << arch << " " << p.key() << " pad " << pad << " align " << align << ": "
                                       << (why.empty() ? "" : why[0]);
              ++checked;
              packed += c["PACK"];
            }
          }
  EXPECT_GT(checked, 1000);
  EXPECT_GT(packed, 0);
}

TEST(Space, Tc16GeneralFormsServeUnalignedShapesAndOldConfigsUpgrade) {
  const Family f = find_family("gemm_tc16");
  const auto d = DeviceInfo::nominal("sm_90");
  // Tuned on an aligned square, split in 4: its general forms, nearest first.
  const Config tuned = Config::from_json(
      R"({"BM":128,"BN":256,"WM":64,"WN":64,"BK":64,"ST":3,"SWZ":8,"SPLITK":4,"PACK":0,"SMEM":1,"LDM":1,"CPA":1})");
  ASSERT_TRUE(f.valid(tuned, GemmProblem::parse("4096x4096x4096", "NN", DType::bf16), d));
  const auto general = f.generalized(tuned);
  ASSERT_EQ(general.size(), 3u);
  EXPECT_EQ(general[0]["SPLITK"], 4);
  EXPECT_EQ(general[0]["PACK"], 1);
  EXPECT_EQ(general[1]["SPLITK"], 1);
  EXPECT_EQ(general[1]["PACK"], 0);
  EXPECT_EQ(general[2]["SPLITK"], 1);
  EXPECT_EQ(general[2]["PACK"], 1);
  for (const auto& g : general) {
    EXPECT_EQ(g["BM"], 128);
    EXPECT_EQ(g["BN"], 256);
    EXPECT_EQ(g["BK"], 64);
  }
  auto first_valid = [&](const GemmProblem& p) {
    for (const auto& g : general)
      if (f.valid(g, p, d)) return g;
    return Config{};
  };
  for (DType t : {DType::bf16, DType::f16})
    for (const char* l : {"NN", "NT", "TN", "TT"}) {
      const Config a = first_valid(GemmProblem::parse("2999x2999x2999", l, t));
      EXPECT_EQ(a["PACK"], 1) << l;
      EXPECT_EQ(a["SPLITK"], 4) << l;
      const Config b = first_valid(GemmProblem::parse("77x1001x33", l, t)); // K too short for 4 slices
      EXPECT_EQ(b["PACK"], 1) << l;
      EXPECT_EQ(b["SPLITK"], 1) << l;
      // Aligned, not divided, K too short for 4 slices of 64: unsplit, and unpacked (bounds-checked loads).
      const Config c = first_valid(GemmProblem::parse("1000x1032x520", l, t));
      EXPECT_EQ(c["PACK"], 0) << l;
      EXPECT_EQ(c["SPLITK"], 1) << l;
      // Aligned, not divided, K long enough: the packed form of the same split.
      const Config e = first_valid(GemmProblem::parse("1000x1032x2048", l, t));
      EXPECT_EQ(e["PACK"], 1) << l;
      EXPECT_EQ(e["SPLITK"], 4) << l;
    }
  // A packed config's first general form is the unpacked one, for aligned shapes.
  const auto back = f.generalized(general[0]);
  ASSERT_FALSE(back.empty());
  EXPECT_EQ(back[0]["PACK"], 0);
  EXPECT_EQ(back[0]["SPLITK"], 4);
  EXPECT_TRUE(f.valid(back[0], GemmProblem::parse("4096x4096x4096", "TN", DType::f16), d));
  // An unsplit, unpacked config's only general form is the packed one.
  Config plain = tuned;
  plain.set("SPLITK", 1);
  ASSERT_EQ(f.generalized(plain).size(), 1u);
  EXPECT_EQ(f.generalized(plain)[0]["PACK"], 1);

  // Configs recorded before SPLITK and PACK existed were neither split nor packed; before SMEM,
  // LDM and CPA, rows were padded, fragments came from ldmatrix and loads from cp.async.
  const Config old = Config::from_json(R"({"BM":128,"BN":128,"WM":64,"WN":64,"BK":32,"ST":4,"SWZ":8})");
  const Config up = f.canonical(old);
  EXPECT_EQ(up["SPLITK"], 1);
  EXPECT_EQ(up["PACK"], 0);
  EXPECT_EQ(up.to_json(),
            R"({"BM":128,"BN":128,"WM":64,"WN":64,"BK":32,"ST":4,"SWZ":8,"SPLITK":1,"PACK":0,"SMEM":1,"LDM":1,"CPA":1})");
  EXPECT_TRUE(f.valid(f.upgraded(old), GemmProblem::parse("4096x4096x4096", "NN", DType::bf16), d));
}

// A config's short label reads back unambiguously: a name that ends in a digit (Rodinia's
// RD_WG_SIZE_0_0) is parted from its value.
TEST(Space, AConfigsShortLabelPartsADigitNameFromItsValue) {
  Config c;
  c.set("BM", 128);
  c.set("RD_WG_SIZE_0_0", 16);
  EXPECT_EQ(c.short_string(), "BM128.RD_WG_SIZE_0_0=16");
}
