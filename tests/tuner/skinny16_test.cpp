// gemm_skinny16 (bf16/f16 decode on mma.sync) without a GPU: its space (which problems it serves,
// defaults, general forms, launch plans) and NVRTC compiles of sampled and corner configs for
// sm_80 and sm_90. Kept in its own file (suites Space and Compiler) so that it does not collide
// with edits of the shared test files.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <set>

#include "gemm/gemm_families.h"
#include "ktune/compiler.h"
#include "ktune/family.h"
#include "tuner/compile_all.h"
#include "ktune/gemm_problem.h"

using namespace ktune;

namespace {

const char* kLayouts[] = {"NN", "NT", "TN", "TT"};


GemmProblem half_problem(int64_t m, int64_t n, int64_t k, const char* layout, DType t, int64_t pad = 0) {
  GemmProblem p = GemmProblem::make(m, n, k, layout, t);
  p.lda = p.eff_lda() + pad, p.ldb = p.eff_ldb() + pad, p.ldc = p.eff_ldc() + pad;
  p.align = GemmProblem::alignment_of(p.eff_lda(), p.eff_ldb(), p.eff_ldc(), element_bytes(p.dtype));
  return p;
}

using ktune::testing::compile_all;

} // namespace

// Sampled configs of both dtypes at the target decode shapes (all four layouts), an unaligned
// shape (single-half loads, A element-wise), a wide one with a short K; one config for every value
// of every parameter; and the defaults of a few shapes; on sm_80 and sm_90. It has not run on a
// GPU yet (tests/kernels/skinny16_gpu_test.cpp): compiling is what CI can check.
TEST(Compiler, SampledAndCornerSkinny16ConfigsCompileForSm80AndSm90) {
  const Family f = find_family("gemm_skinny16");
  for (const char* arch : {"sm_80", "sm_90"}) {
    const auto d = DeviceInfo::nominal(arch);
    std::vector<std::pair<Config, GemmProblem>> cases;
    uint64_t seed = 31;
    int split = 0;
    for (DType t : {DType::bf16, DType::f16})
      for (size_t l = 0; l < 4; ++l) {
        const char* layout = kLayouts[l];
        for (const auto& p : {half_problem(1, 4096, 4096, layout, t), half_problem(16, 4096, 4096, layout, t)})
          for (const auto& c : f.sample(p, d, 1, ++seed)) cases.emplace_back(c, p);
        // Unaligned (7x1001x77) in every layout, the wide vocabulary shape in two of them.
        const auto odd = half_problem(7, 1001, 77, layout, t);
        EXPECT_EQ(odd.align, 2);
        for (const auto& c : f.sample(odd, d, 1, ++seed)) {
          EXPECT_EQ(c["VEC"], 1) << c.to_json();
          cases.emplace_back(c, odd);
        }
        if (l % 2 == (t == DType::f16))
          for (const auto& c : f.sample(half_problem(64, 50257, 768, layout, t), d, 1, ++seed))
            cases.emplace_back(c, half_problem(64, 50257, 768, layout, t));
      }
    // One config for every value of every parameter, at the first shape where it is valid.
    // (VEC is the widest the alignment allows: padded leading dimensions give VEC 4 and 2; a
    // narrow N gives the grids that want 16 or 32 K slices; clusters exist on sm_90 only.)
    std::vector<GemmProblem> corners;
    for (const char* layout : {"NN", "NT"})
      for (int64_t m : {16, 64, 1})
        corners.push_back(half_problem(m, 4096, 4096, layout, m == 64 ? DType::f16 : DType::bf16));
    corners.push_back(half_problem(7, 1001, 77, "TN", DType::bf16));
    corners.push_back(half_problem(16, 4096, 4096, "NN", DType::bf16, 4));
    corners.push_back(half_problem(16, 4096, 4096, "NT", DType::f16, 2));
    corners.push_back(half_problem(1, 256, 8192, "NN", DType::bf16));
    for (const auto& prm : f.params())
      for (int v : prm.values) {
        if (prm.name == "CL" && v > 1 && std::string(arch) == "sm_80") continue;
        SpaceRestriction r;
        r.domains[prm.name] = {v};
        const Family one_value = f.restricted(r);
        bool found = false;
        for (const auto& p : corners) {
          const auto one = one_value.sample(p, d, 1, 13 + v);
          if (one.empty()) continue;
          cases.emplace_back(one[0], p);
          found = true;
          break;
        }
        EXPECT_TRUE(found) << "no valid config with " << prm.name << "=" << v;
      }
    // The defaults the runtime falls back to.
    for (const auto& p : {half_problem(1, 4096, 4096, "NN", DType::f16), half_problem(16, 4096, 4096, "NT", DType::bf16),
                          half_problem(5, 1000, 999, "TN", DType::bf16), half_problem(64, 768, 64, "TT", DType::f16)})
      cases.emplace_back(f.default_config(p, d), p);
    for (const auto& [c, p] : cases) split += c["CL"] * c["SPLITK"] > 1; // K slices across blocks
    EXPECT_GE(split, 5);
    EXPECT_GE(cases.size(), 50u);
    compile_all(f, cases, arch);
  }
}

TEST(Space, Skinny16ServesHalfDecodeProblemsOnly) {
  const Family f = find_family("gemm_skinny16");
  const auto d = DeviceInfo::nominal("sm_90");
  EXPECT_EQ(f.min_arch(), 80);
  EXPECT_EQ(f.count(half_problem(65, 4096, 4096, "NN", DType::bf16), d), 0u);  // M > 64
  EXPECT_EQ(f.count(GemmProblem::parse("16x4096x4096", "NN", DType::f32), d), 0u); // FP32 is gemm_skinny's
  EXPECT_EQ(f.count(GemmProblem::parse("16x4096x4096", "NN", DType::tf32), d), 0u);
  EXPECT_FALSE(f.valid(f.default_config(half_problem(16, 4096, 4096, "NN", DType::bf16), d),
                       GemmProblem::parse("16x4096x4096", "NN", DType::f32), d));
  for (DType t : {DType::bf16, DType::f16})
    for (const char* layout : kLayouts) {
      EXPECT_GE(f.count(half_problem(16, 4096, 4096, layout, t), d), 500u) << layout;
      EXPECT_GE(f.count(half_problem(1, 4096, 4096, layout, t), d), 500u) << layout;
      EXPECT_GT(f.count(half_problem(64, 50257, 768, layout, t), d), 0u) << layout;
      EXPECT_GT(f.count(half_problem(7, 1001, 77, layout, t), d), 0u) << layout;
      EXPECT_GT(f.count(half_problem(3, 5, 0, layout, t), d), 0u) << layout; // K = 0: C = beta * C
    }
  EXPECT_EQ(f.count(half_problem(16, 4096, 4096, "NN", DType::bf16), d), f.count(half_problem(16, 4096, 4096, "NN", DType::f16), d));
  EXPECT_GT(f.count(half_problem(16, 4096, 4096, "NN", DType::bf16), DeviceInfo::nominal("sm_80")), 0u);
  // The vector width follows the alignment: 16-byte loads only where B and its rows allow them.
  auto max_vec = [&](const GemmProblem& p) {
    int v = 0;
    f.enumerate(p, d, [&](const Config& c) {
      v = std::max(v, c["VEC"]);
      return true;
    });
    return v;
  };
  EXPECT_EQ(max_vec(half_problem(16, 4096, 4096, "NN", DType::bf16)), 8);
  EXPECT_EQ(max_vec(half_problem(16, 4096, 4096, "NN", DType::bf16, 4)), 4); // ldb = 4100: 8-byte rows
  EXPECT_EQ(max_vec(half_problem(16, 4096, 4096, "NN", DType::bf16, 2)), 2);
  EXPECT_EQ(max_vec(half_problem(16, 4096, 4096, "NN", DType::bf16, 1)), 1);
  auto narrow = half_problem(16, 4096, 4096, "NT", DType::f16);
  narrow.align = 4; // a B pointer aligned to 4 bytes only
  EXPECT_EQ(max_vec(narrow), 2);
  // Only the widest loads; rings no deeper than a warp's steps; a grid with K slices still has
  // < 4 blocks per SM with half of them (no useless partial sums); clusters on sm_90 only.
  for (const char* layout : kLayouts)
    for (const auto& c : f.sample(half_problem(16, 4096, 4096, layout, DType::bf16), d, 200, 5)) {
      EXPECT_EQ(c["VEC"], 8) << c.to_json();
      const int64_t cols = c["NT"] / 32 / c["KG"] * (layout[1] == 'T' ? 32 : 64);
      const int64_t blocks = (4096 + cols - 1) / cols * ((16 + c["MT"] - 1) / c["MT"]) * c["CL"] * c["SPLITK"];
      if (c["CL"] * c["SPLITK"] > 1) {
        EXPECT_LT(blocks / 2, 2 * d.sm_count) << c.to_json();
      }
      const int64_t slice = ((4096 + c["CL"] * c["SPLITK"] - 1) / (c["CL"] * c["SPLITK"]) + 31) / 32 * 32;
      const int64_t steps = (slice / (layout[1] == 'T' ? 32 : 16) + c["KG"] - 1) / c["KG"];
      EXPECT_LE(c["DEPTH"], std::max<int64_t>(2, steps)) << c.to_json();
    }
  const auto a100 = DeviceInfo::nominal("sm_80");
  f.enumerate(half_problem(1, 4096, 4096, "NN", DType::bf16), a100, [&](const Config& c) {
    EXPECT_EQ(c["CL"], 1) << c.to_json();
    return true;
  });
  EXPECT_GT(f.count(half_problem(1, 4096, 4096, "NN", DType::bf16), a100), 100u);
}

// Records of the first version (UNROLL, KC: A staged in shared memory) load as the ring.
TEST(Space, Skinny16UpgradesConfigsOfTheFirstVersion) {
  const Family f = find_family("gemm_skinny16");
  const Config old{{"MT", 16}, {"NT", 256}, {"KG", 8}, {"VEC", 8}, {"UNROLL", 2}, {"KC", 256}, {"LDH", 1}, {"SPLITK", 4}};
  const Config c = f.canonical(old);
  EXPECT_FALSE(c.has("UNROLL"));
  EXPECT_FALSE(c.has("KC"));
  EXPECT_EQ(c["DEPTH"], 4);
  EXPECT_EQ(c["CL"], 1);
  EXPECT_EQ(c["MINB"], 1);
  EXPECT_EQ(c["SPLITK"], 4);
}

// The default must be valid for every problem the family serves: every M <= 64, both dtypes,
// every layout, N and K from 1 (and K = 0) to vocabulary sizes, packed and odd leading dimensions
// (every alignment class down to 2 bytes).
TEST(Space, Skinny16DefaultsServeEveryHalfProblemWithUpTo64Rows) {
  const Family f = find_family("gemm_skinny16");
  int checked = 0, vec8 = 0;
  for (const char* arch : {"sm_90", "sm_80"}) {
    const auto d = DeviceInfo::nominal(arch);
    for (DType t : {DType::bf16, DType::f16})
      for (int64_t m : {1, 2, 5, 8, 9, 16, 17, 31, 32, 33, 48, 63, 64})
        for (int64_t n : {1, 7, 8, 63, 100, 1001, 4096, 50257})
          for (int64_t k : {0, 1, 7, 77, 768, 4096, 11008})
            for (const char* layout : kLayouts)
              for (int64_t pad : {0, 1, 4}) {
                const auto p = half_problem(m, n, k, layout, t, pad);
                const Config c = f.default_config(p, d);
                const auto why = f.violations(c, p, d);
                EXPECT_TRUE(why.empty()) << p.key() << " pad " << pad << " " << c.to_json() << ": " << why[0];
                ++checked;
                vec8 += c["VEC"] == 8;
              }
  }
  EXPECT_GT(checked, 10000);
  EXPECT_GT(vec8, 400);
  // The target shapes get 16-byte loads, enough blocks to cover the SMs (one wave), >= 3 MB of B
  // in flight; on sm_90 the streaming form (256 threads all along K, a 2-step ring, no cluster,
  // split-K to >= 1.4 blocks an SM), elsewhere the bandwidth model's choice.
  for (const char* arch : {"sm_90", "sm_80"}) {
    const auto d = DeviceInfo::nominal(arch);
    for (int64_t m : {1, 16, 32, 64})
      for (const char* layout : {"NN", "NT"}) {
        const auto p = half_problem(m, 4096, 4096, layout, DType::bf16);
        const Config c = f.default_config(p, d);
        EXPECT_EQ(c["VEC"], 8) << c.to_json();
        if (std::string(arch) == "sm_90") {
          EXPECT_EQ(c["NT"], 256) << c.to_json();
          EXPECT_EQ(c["KG"], 8) << c.to_json();
          EXPECT_EQ(c["DEPTH"], 2) << c.to_json();
          EXPECT_EQ(c["CL"], 1) << c.to_json();
          EXPECT_EQ(c["LDH"], 2) << c.to_json();
        } else {
          EXPECT_EQ(c["LDH"], 1) << c.to_json();
        }
        const LaunchPlan plan = f.launch_plan(c, p);
        const auto& s = plan.main_step();
        const int64_t blocks = int64_t(s.grid[0]) * s.grid[1] * s.grid[2];
        EXPECT_GE(blocks, std::string(arch) == "sm_90" ? d.sm_count * 9 / 10 : d.sm_count / 2) << arch << " " << p.key() << " " << c.to_json();
        EXPECT_GE(double(std::min<int64_t>(blocks, 4 * d.sm_count)) * c["NT"] * (c["DEPTH"] - 1) * 64, 3e6)
            << arch << " " << p.key() << " " << c.to_json();
        if (std::string(arch) == "sm_90") {
          EXPECT_GE(blocks, 185) << "1.4 blocks of 256 threads an SM: " << p.key() << " " << c.to_json();
          EXPECT_LT(blocks / 2, 185) << "no more K slices than that needs: " << p.key() << " " << c.to_json();
        }
        std::cout << "[ default  ] " << arch << " " << p.key() << " " << c.to_json() << " grid " << s.grid[0] << "x" << s.grid[1]
                  << "x" << s.grid[2] << " smem " << s.dynamic_smem << "\n";
      }
    for (const auto& p : {half_problem(1, 50257, 768, "NN", DType::bf16), half_problem(1, 50257, 768, "NT", DType::bf16),
                          half_problem(32, 11008, 4096, "NN", DType::bf16), half_problem(32, 11008, 4096, "NT", DType::bf16),
                          half_problem(1, 4096, 11008, "NT", DType::bf16), half_problem(16, 12288, 4096, "NT", DType::bf16)}) {
      const Config c = f.default_config(p, d);
      const LaunchPlan plan = f.launch_plan(c, p);
      const auto& s = plan.main_step();
      std::cout << "[ default  ] " << arch << " " << p.key() << " " << c.to_json() << " grid " << s.grid[0] << "x" << s.grid[1]
                << "x" << s.grid[2] << " smem " << s.dynamic_smem << "\n";
    }
  }
}

// A config tuned at one M and alignment has general forms (other row tiles, narrower loads) valid
// for every other decode batch and alignment class.
TEST(Space, Skinny16GeneralFormsServeEveryBatchAndAlignment) {
  const Family f = find_family("gemm_skinny16");
  const auto d = DeviceInfo::nominal("sm_90");
  SpaceRestriction r;
  r.domains = {{"NT", {128, 256}}};
  const Family g = f.restricted(r);
  for (const char* layout : {"NN", "NT"}) {
    const auto tuned_at = half_problem(16, 4096, 4096, layout, DType::bf16);
    for (const Config& c : g.sample(tuned_at, d, 30, 21)) {
      const auto general = f.generalized(c);
      ASSERT_FALSE(general.empty()) << c.to_json();
      for (const auto& x : general) EXPECT_LE(x["VEC"], c["VEC"]) << x.to_json();
      for (int64_t m = 1; m <= 64; ++m)
        for (int64_t pad : {0, 1, 2}) {
          const auto p = half_problem(m, 4096, 4096, layout, DType::f16, pad);
          bool served = f.valid(c, p, d);
          for (const auto& x : general) served = served || f.valid(x, p, d);
          EXPECT_TRUE(served) << c.to_json() << " for " << p.key() << " pad " << pad;
        }
      // The nearest row tile first: a config tuned at MT = 16 offers MT = 8, then 32 (M = 33..64
      // as two 32-row tiles; there is no 64-row tile).
      // (narrower loads of the same tile first, where there are narrower loads).
      if (c["MT"] == 16) {
        std::vector<int> order;
        for (const auto& x : general)
          if (order.empty() || order.back() != x["MT"]) order.push_back(x["MT"]);
        EXPECT_EQ(order, (c["VEC"] > 1 ? std::vector<int>{16, 8, 32} : std::vector<int>{8, 32})) << c.to_json();
      }
    }
  }
}

// The shipped 1x4096x4096 config lent to 1x14336x4096 (NN, bf16): its neighbours are valid and new.
// First the streaming form (all warps along K, a 2-step ring, no cluster, no register cap) with 256
// threads, then with 512; the lent block and ring with the K split the bandwidth model rates
// fastest there, and the model's own config for the shape (defaults), are among the rest.
TEST(Space, Skinny16NeighboursOfferTheStreamingFormsTheRefitSplitAndTheModelsConfig) {
  const Family f = find_family("gemm_skinny16");
  const auto d = DeviceInfo::nominal("sm_90");
  const Config lent = Config::from_json(R"({"MT":8,"NT":256,"KG":4,"VEC":8,"DEPTH":2,"LDH":2,"CL":1,"SPLITK":1,"MINB":1})");
  const auto p = half_problem(1, 14336, 4096, "NN", DType::bf16);
  ASSERT_TRUE(f.valid(lent, p, d));
  const auto near = f.neighbors_of(lent, p, d);
  ASSERT_GE(near.size(), 3u);
  for (size_t i = 0; i < near.size(); ++i) {
    EXPECT_TRUE(f.valid(near[i], p, d)) << near[i].to_json();
    EXPECT_NE(near[i], lent);
    for (size_t j = 0; j < i; ++j) EXPECT_NE(near[i], near[j]);
  }
  for (int i : {0, 1, 2}) {
    const Config& s = near[i];
    EXPECT_EQ(s["NT"], i == 0 ? 256 : i == 1 ? 512 : 128) << s.to_json();
    EXPECT_EQ(s["KG"], s["NT"] / 32) << s.to_json();
    EXPECT_EQ(s["DEPTH"], 2);
    EXPECT_EQ(s["CL"], 1);
    EXPECT_EQ(s["MINB"], 1);
    EXPECT_EQ(s["SPLITK"], i == 2 ? 2 : 1) << "224 column strips: >= 1.4 x 256 threads an SM but for 128-thread blocks";
  }
  bool refit = false;
  for (const Config& n : near) {
    Config x = n;
    x.set("CL", lent["CL"]), x.set("SPLITK", lent["SPLITK"]);
    refit = refit || (x == lent && n != lent);
  }
  EXPECT_TRUE(refit);
  EXPECT_NE(std::find(near.begin(), near.end(), f.default_config(p, d)), near.end());
  // A config is never its own neighbour: the streaming form's own neighbours omit it.
  const auto again = f.neighbors_of(near[0], p, d);
  EXPECT_EQ(std::find(again.begin(), again.end(), near[0]), again.end());
}

// The streaming form splits K only as far as the grid needs to hold 1.4 x 256 threads an SM (185
// blocks of 256 on 132 SMs, 93 of 512, 370 of 128): 64 column strips at 1x4096x4096 take 4 slices
// (256 blocks; 2 would make 128), 224 at 1x14336x4096 none; 16-row tiles at 16x8192x8192 take 2 (128
// strips) with 256 threads and none with 512; 500 strips at 1x32000x4096 need no slices even with
// 128 threads. Single halves (N odd) load plainly (LDH 0).
TEST(Space, Skinny16StreamingFormFillsTheGrid) {
  const Family f = find_family("gemm_skinny16");
  const auto d = DeviceInfo::nominal("sm_90");
  const Config lent = Config::from_json(R"({"MT":8,"NT":256,"KG":4,"VEC":8,"DEPTH":2,"LDH":2,"CL":1,"SPLITK":1,"MINB":1})");
  auto first = [&](const GemmProblem& p) {
    const auto near = f.neighbors_of(lent, p, d);
    EXPECT_FALSE(near.empty());
    return near.empty() ? Config{} : near.front();
  };
  EXPECT_EQ(first(half_problem(1, 4096, 4096, "NN", DType::bf16))["SPLITK"], 4);
  EXPECT_EQ(first(half_problem(1, 14336, 4096, "NN", DType::f16))["SPLITK"], 1);
  Config lent16 = lent;
  lent16.set("MT", 16);
  const auto p16 = half_problem(16, 8192, 8192, "NN", DType::bf16);
  const auto near16 = f.neighbors_of(lent16, p16, d);
  ASSERT_FALSE(near16.empty());
  EXPECT_EQ(near16.front()["MT"], 16);
  EXPECT_EQ(near16.front()["SPLITK"], 2);
  ASSERT_GE(near16.size(), 2u);
  EXPECT_EQ(near16[1]["NT"], 512);
  EXPECT_EQ(near16[1]["SPLITK"], 1);
  const auto vocab = f.neighbors_of(lent, half_problem(1, 32000, 4096, "NN", DType::bf16), d);
  ASSERT_GE(vocab.size(), 3u);
  EXPECT_EQ(vocab[2]["NT"], 128);
  EXPECT_EQ(vocab[2]["SPLITK"], 1);
  const auto odd = half_problem(1, 50257, 768, "NN", DType::bf16);
  Config narrow = lent;
  narrow.set("VEC", 1);
  ASSERT_TRUE(f.valid(narrow, odd, d)) << f.violations(narrow, odd, d).front();
  const auto near_odd = f.neighbors_of(narrow, odd, d);
  ASSERT_FALSE(near_odd.empty());
  EXPECT_EQ(near_odd.front()["VEC"], 1);
  EXPECT_EQ(near_odd.front()["LDH"], 0);
}

// The plan: a grid of column strips x row tiles x K slices, the template's shared memory; with
// K slices, gemm_splitk_reduce16 after it as a dependent launch over the FP32 workspace.
TEST(Space, Skinny16PlanAndKernelNames) {
  const Family f = find_family("gemm_skinny16");
  const auto d = DeviceInfo::nominal("sm_90");
  for (const char* layout : kLayouts)
    for (DType t : {DType::bf16, DType::f16}) {
      const auto p = half_problem(24, 11008, 4096, layout, t);
      const bool bcol = layout[1] == 'T';
      for (const auto& c : f.sample(p, d, 40, 9)) {
        const LaunchPlan plan = f.launch_plan(c, p);
        const auto names = f.kernel_names(c, p);
        const auto& s = plan.main_step();
        const int cols = c["NT"] / 32 / c["KG"] * (bcol ? 32 : 64);
        EXPECT_EQ(s.grid[0], unsigned((11008 + cols - 1) / cols));
        EXPECT_EQ(s.grid[1], unsigned((24 + c["MT"] - 1) / c["MT"]));
        EXPECT_EQ(s.grid[2], unsigned(c["CL"] * c["SPLITK"])); // CL consecutive slices form a cluster
        EXPECT_EQ(s.block[0], unsigned(c["NT"]));
        EXPECT_EQ(s.dynamic_smem, unsigned(size_t(c["KG"]) * c["MT"] * cols * 4)); // the warp groups' sums only
        // AV (A's fragments in one vector load): row-major A, 8 or 16 bytes aligned.
        const std::string av = layout[0] == 'N' ? "1," : "0,";
        const std::string tail = av + (t == DType::f16 ? "1," : "0,") + (layout[0] == 'T' ? "1," : "0,") + (bcol ? "1>" : "0>");
        EXPECT_EQ(names[0].rfind("gemm_skinny16<", 0), 0u);
        EXPECT_EQ(names[0].substr(names[0].size() - tail.size()), tail) << names[0];
        if (c["SPLITK"] > 1) {
          ASSERT_EQ(plan.steps.size(), 2u);
          ASSERT_EQ(names.size(), 2u);
          EXPECT_EQ(names[1], "gemm_splitk_reduce16<" + std::to_string(c["SPLITK"]) + (t == DType::f16 ? ",1>" : ",0>"));
          EXPECT_EQ(plan.steps[1].kernel, 1);
          EXPECT_TRUE(plan.steps[1].overlap_previous);
          EXPECT_EQ(plan.workspace_bytes, size_t(c["SPLITK"]) * 24 * gemm_workspace_ld(11008) * 4);
        } else {
          EXPECT_EQ(plan.steps.size(), 1u);
          EXPECT_EQ(names.size(), 1u);
          EXPECT_EQ(plan.workspace_bytes, 0u);
        }
      }
    }
}
