// The op attention (kernel_templates/attention/) without a GPU: registered from its folder, keyed
// and validated, its FLOP count (causal included) and bytes, its families' spaces, and every
// family's kernels and the check kernels compiled by NVRTC.
#include <gtest/gtest.h>
#include <tuple>

#include <cmath>

#include "attention/attention_varlen.h"
#include "ktune/compiler.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "ktune/ktune.h"
#include "ktune/runtime.h"
#include "ops/decode_config.h"
#include "tuner/attention_op.h"
#include "tuner/compile_all.h"

using namespace ktune;

namespace {

// Family f's default config and `seed`'s sampled one at each shape of op, in bf16 and f16, full
// and causal: what the compile tests compile.
std::vector<std::pair<Config, Problem>> default_and_sampled(const Family& f, const char* op,
                                                            std::initializer_list<const char*> shapes, uint64_t seed) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  std::vector<std::pair<Config, Problem>> cases;
  for (const char* shape : shapes)
    for (DType t : {DType::bf16, DType::f16})
      for (const char* layout : {"full", "causal"}) {
        const Problem p = Problem::parse(op, shape, layout, t);
        cases.emplace_back(f.default_config(p, d), p);
        for (const Config& c : f.sample(p, d, 1, seed)) cases.emplace_back(c, p);
      }
  return cases;
}

// A problem of an op with OpInfo::serve_as is launched with the prepared kernel and plan of the
// problem it is served as: config c must name the same kernels and launch the same grids, shared
// memory and workspace at both.
void expect_served_alike(const Family& f, const Config& c, const Problem& p, const Problem& served) {
  EXPECT_EQ(f.kernel_names(c, p), f.kernel_names(c, served)) << f.name() << " " << c.to_json();
  const LaunchPlan a = f.launch_plan(c, p), b = f.launch_plan(c, served);
  ASSERT_EQ(a.steps.size(), b.steps.size()) << f.name() << " " << c.to_json();
  EXPECT_EQ(a.workspace_bytes, b.workspace_bytes) << f.name() << " " << c.to_json();
  for (size_t i = 0; i < a.steps.size(); ++i) {
    EXPECT_EQ(std::vector<unsigned>(a.steps[i].grid, a.steps[i].grid + 3),
              std::vector<unsigned>(b.steps[i].grid, b.steps[i].grid + 3)) << f.name() << " " << c.to_json();
    EXPECT_EQ(a.steps[i].dynamic_smem, b.steps[i].dynamic_smem) << f.name() << " " << c.to_json();
  }
}

} // namespace

TEST(Attention, IsRegisteredKeyedAndValidated) {
  const OpInfo& op = op_info("attention");
  EXPECT_EQ(op.runner, "attention");
  EXPECT_EQ(op.dims, (std::vector<std::string>{"batch", "heads", "kv_heads", "q_len", "kv_len", "head_dim"}));
  ASSERT_EQ(op.operands.size(), 5u);
  EXPECT_TRUE(op.operands[3].output && op.operands[4].output);
  EXPECT_EQ(op.operands[4].elem_bytes, 4); // the log-sum-exp is FP32
  // Strides of q, k, v and o (three each: batch, sequence, head).
  EXPECT_EQ(op.ld_names.size(), 12u);
  const Problem p = Problem::parse("attention", "1x32x8x4096x4096x128", "causal", DType::bf16);
  EXPECT_EQ(p.key(), "attention/bf16/causal/1x32x8x4096x4096x128/a16");
  EXPECT_EQ(Problem::parse_key(p.key()), p);
  // Causal, q_len = kv_len: n (n + 1) / 2 visible pairs.
  EXPECT_DOUBLE_EQ(flops(p), 4.0 * 32 * (4096.0 * 4097 / 2) * 128);
  EXPECT_DOUBLE_EQ(flops(Problem::parse("attention", "2x4x4x100x300x64", "full", DType::f16)), 4.0 * 2 * 4 * 100 * 300 * 64);
  // Bottom-right: q_len 4 over 10 keys sees 7, 8, 9, 10; q_len 10 over 4 keys: rows 6..9 see 1..4.
  EXPECT_DOUBLE_EQ(flops(Problem::parse("attention", "1x1x1x4x10x64", "causal", DType::bf16)), 4.0 * 34 * 64);
  EXPECT_DOUBLE_EQ(flops(Problem::parse("attention", "1x1x1x10x4x64", "causal", DType::bf16)), 4.0 * 10 * 64);
  EXPECT_DOUBLE_EQ(min_bytes(p), (2.0 * 32 * 4096 * 128 + 2.0 * 8 * 4096 * 128) * 2 + 4.0 * 32 * 4096);
  for (const char* bad : {"1x32x7x4096x4096x128", "1x32x8x4096x4096x512", "0x32x8x4096x4096x128", "1x32x8x4096x4096"})
    EXPECT_THROW(Problem::parse("attention", bad, "causal", DType::bf16), UsageError) << bad;
  EXPECT_THROW(Problem::parse("attention", "1x32x8x64x64x128", "causal", DType::f32), UsageError);
  EXPECT_THROW(Problem::parse("attention", "1x32x8x64x64x128", "NN", DType::bf16), UsageError);
  // A (B, H, S, D) view is the same op through strides; overlapping ones are refused.
  Problem bhsd = Problem::parse("attention", "2x4x2x96x160x64", "full", DType::bf16);
  bhsd.ld = {4 * 96 * 64, 64, 96 * 64, 2 * 160 * 64, 64, 160 * 64, 2 * 160 * 64, 64, 160 * 64, 4 * 96 * 64, 64, 96 * 64};
  EXPECT_NO_THROW(validate(bhsd));
  bhsd.ld[1] = 32;
  EXPECT_THROW(validate(bhsd), UsageError);
}

TEST(Attention, FamiliesDeclareTheirSpaces) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  const Family fa2 = find_family("attention_fa2"), simple = find_family("attention_simple");
  const Problem p = Problem::parse("attention", "1x32x8x4096x4096x128", "causal", DType::bf16);
  EXPECT_GT(fa2.count(p, d), 8u);
  for (const Config& c : fa2.sample(p, d, 100, 1)) {
    const LaunchPlan plan = fa2.launch_plan(c, p);
    EXPECT_EQ(plan.steps[0].grid[0] * c["BM"] >= 4096u, true);
    EXPECT_EQ(plan.steps[0].grid[1], 32u);
    EXPECT_LE(plan.steps[0].dynamic_smem, unsigned(d.max_smem_per_block_optin));
  }
  EXPECT_TRUE(fa2.valid(fa2.default_config(p, d), p, d));
  // head_dim 80 or 2-byte alignment: only the simple family serves.
  const Problem odd = Problem::parse("attention", "1x4x4x100x100x80", "full", DType::bf16);
  EXPECT_EQ(fa2.count(odd, d), 0u);
  EXPECT_TRUE(simple.valid(simple.default_config(odd, d), odd, d));
  EXPECT_EQ(fa2.min_arch(), 80); // mma.sync with bf16
}

// attention_decode: GQA rows packed, the split chosen by rule (enough blocks for the device), a
// combine step and its workspace only when the keys are split, nothing for prefill shapes.
TEST(Attention, DecodeFamilySplitsByRuleAndDeclaresItsWorkspace) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  ASSERT_GT(d.sm_count, 0);
  const Family f = find_family("attention_decode");
  EXPECT_EQ(f.min_arch(), 80);
  EXPECT_EQ(f.count(Problem::parse("attention", "1x32x8x512x4096x128", "causal", DType::bf16), d), 0u);
  // Llama-3 8B decode, batch 1 at 32k: 8 kv heads x 4 packed rows, split to fill the device.
  const Problem one = Problem::parse("attention", "1x32x8x1x32768x128", "full", DType::bf16);
  const Config c = f.default_config(one, d);
  ASSERT_TRUE(f.valid(c, one, d)) << c.to_json();
  EXPECT_EQ(c["ROWS"], 16);
  ASSERT_GT(c["CHUNK"], 0);
  const LaunchPlan plan = f.launch_plan(c, one);
  ASSERT_EQ(plan.steps.size(), 2u);
  const int64_t splits = (32768 + c["CHUNK"] - 1) / c["CHUNK"];
  EXPECT_EQ(plan.steps[0].grid[0], unsigned(splits));
  EXPECT_EQ(plan.steps[0].grid[1], 8u);
  EXPECT_GE(int64_t(plan.steps[0].grid[0]) * 8, 2 * d.sm_count / 3); // the rule's aim: 2/3 of the SMs
  EXPECT_EQ(plan.steps[1].kernel, 1);
  // The combine step: a warp a (b, h, i) row at head dim 128 (two at 64), in blocks of one warp
  // where the warps are few, as a decode step's 32 rows here (attention_combine.cuh).
  EXPECT_EQ(plan.steps[1].grid[0], 32u);
  EXPECT_EQ(plan.steps[1].block[0], 32u);
  for (const auto& [hd, warps] : std::vector<std::pair<int, unsigned>>{{64, 18}, {80, 36}, {128, 36}, {192, 36}, {256, 36}}) {
    const Problem p = Problem::parse("attention", "1x12x4x3x4096x" + std::to_string(hd), "full", DType::bf16); // 36 rows
    Config x = f.default_config(p, d);
    x.set("CHUNK", 1024);
    x.set("CLUSTER", 0);
    ASSERT_TRUE(f.valid(x, p, d)) << p.key() << " " << x.to_json();
    const LaunchPlan pl = f.launch_plan(x, p);
    ASSERT_EQ(pl.steps.size(), 2u) << p.key();
    EXPECT_EQ(pl.steps[1].grid[0], warps) << p.key();
    EXPECT_EQ(pl.steps[1].block[0], 32u) << p.key();
  }
  EXPECT_EQ(plan.workspace_bytes, size_t(splits * 32 * (128 + 2) * 4));
  EXPECT_EQ(f.kernel_names(c, one).size(), 2u);
  // Batch 64: enough blocks without a split, so one step and no workspace.
  const Problem many = Problem::parse("attention", "64x32x8x1x4096x128", "full", DType::bf16);
  const Config m = f.default_config(many, d);
  EXPECT_EQ(m["CHUNK"], 0);
  EXPECT_EQ(f.launch_plan(m, many).steps.size(), 1u);
  EXPECT_EQ(f.launch_plan(m, many).workspace_bytes, 0u);
  // Speculative decoding, 16 queries x 8 packed heads: row blocks of 32.
  const Problem spec = Problem::parse("attention", "2x64x8x16x8192x128", "causal", DType::f16);
  const Config sc = f.default_config(spec, d);
  EXPECT_EQ(sc["ROWS"], 32);
  EXPECT_EQ(f.launch_plan(sc, spec).steps[0].grid[1], 8u * (16 * 8 / 32));
  // Head dim 96 (Phi-3): the tiles take 128 columns, the last 32 zeros (PAD 1 in both kernels' names),
  // and the partials are 128 wide. A head dim that is no multiple of 8 (no whole 16-byte chunks) is
  // refused.
  const Problem phi = Problem::parse("attention", "1x32x32x1x4096x96", "causal", DType::bf16);
  const Config pc = f.default_config(phi, d);
  ASSERT_TRUE(f.valid(pc, phi, d)) << pc.to_json();
  ASSERT_GT(pc["CHUNK"], 0);
  const std::vector<std::string> names = f.kernel_names(pc, phi);
  ASSERT_EQ(names.size(), 2u);
  EXPECT_NE(names[0].find("<0,128,"), std::string::npos) << names[0];
  EXPECT_EQ(names[0], "attention_decode<0,128,16," + std::to_string(pc["WARPS"]) + "," + std::to_string(pc["BN"]) + "," +
                          std::to_string(pc["STAGES"]) + "," + std::to_string(pc["CHUNK"]) + ",1,1>"); // causal, PAD
  EXPECT_EQ(names[1], "attention_decode_combine<0,128," + std::to_string(pc["CHUNK"]) + ",1>");
  EXPECT_EQ(f.launch_plan(pc, phi).workspace_bytes, size_t((4096 + pc["CHUNK"] - 1) / pc["CHUNK"] * 32 * (128 + 2) * 4));
  EXPECT_EQ(f.kernel_names(c, one)[1].substr(f.kernel_names(c, one)[1].size() - 3), ",0>"); // 128: PAD 0
  EXPECT_EQ(f.count(Problem::parse("attention", "1x32x32x1x4096x100", "causal", DType::bf16), d), 0u);
  // The rule's branches at rows of its sweeps (docs/runs/2026-11-29-decode-rule.md), on the nominal
  // sm_90 (132 SMs, as the H200 it was fit on): CHUNK, ROWS, WARPS, BN, STAGES, CLUSTER.
  ASSERT_EQ(d.sm_count, 132);
  const std::vector<std::pair<const char*, std::vector<int>>> fit = {
      {"16x32x8x1x4096x128", {0, 16, 4, 16, 3, 0}},     // 128 blocks: no split, a block alone on its SM
      {"128x32x8x1x1024x128", {0, 16, 2, 16, 3, 0}},    // blocks for every SM: 2 warps
      {"16x48x1x1x8192x128", {2048, 32, 8, 16, 3, 0}},  // MQA, 48 rows over 64 MiB: ROWS 32; 4 splits, combined
      {"32x12x12x1x1024x64", {0, 16, 2, 16, 4, 0}},     // head_dim 64: four deep
      {"8x16x8x1x8192x256", {4096, 16, 4, 16, 2, 1}},   // head_dim 256; 2 splits merged in their cluster
      {"1x32x8x1x32768x128", {2048, 16, 4, 32, 3, 0}},  // 8 blocks, 16 splits
      {"1x32x8x1x1024x128", {128, 16, 4, 32, 3, 1}},    // 8 blocks: 8 splits of 128 (not 16 of 64), a cluster
      {"2x32x8x1x1024x128", {128, 16, 2, 16, 3, 1}},    // 8 MiB, 16 row blocks: small tiles, 8-way clusters
      {"8x71x1x1x2048x64", {256, 16, 2, 32, 4, 1}},     // MQA, 4 MiB: 5 blocks of 16 rows, 8-way clusters
      {"16x48x1x1x2048x64", {512, 16, 2, 32, 4, 1}},    // MQA, 8 MiB: 4 splits (8 need 384 of 356 places)
      {"2x16x8x1x4096x128", {512, 16, 4, 32, 3, 0}},    // 32 MiB: the general rule; 8 splits, 128 blocks: no cluster
      {"2x71x1x1x2048x64", {256, 16, 4, 32, 3, 1}},     // MQA, 1 MiB, 10 row blocks: the general rule with 16 rows
      {"1x32x8x1x4096x64", {256, 16, 4, 32, 3, 0}},     // 16 splits of 256: no cap above 256 keys a split
      {"48x12x2x1x2048x128", {0, 16, 4, 16, 3, 0}},     // 96 blocks: 2/3 of the SMs, no split
      {"6x40x10x1x6000x128", {2048, 16, 2, 16, 3, 1}},  // 60 blocks: 3 even splits (not 4096 + 1904), 180 blocks
      {"4x32x8x1x4096x128", {1024, 16, 4, 32, 3, 0}}};  // 32 blocks, 4 splits: 128 blocks, alone on their SMs
  for (const auto& [shape, want] : fit) {
    const Problem p = Problem::parse("attention", shape, "causal", DType::bf16);
    const Config dc = f.default_config(p, d);
    EXPECT_TRUE(f.valid(dc, p, d)) << shape << " " << dc.to_json();
    EXPECT_EQ((std::vector<int>{dc["CHUNK"], dc["ROWS"], dc["WARPS"], dc["BN"], dc["STAGES"], dc["CLUSTER"]}), want)
        << shape << " " << dc.to_json();
  }
  // Before sm_90 no cluster: the combine step merges 2 splits.
  const Config ampere = f.default_config(Problem::parse("attention", "8x16x8x1x8192x256", "causal", DType::bf16),
                                         DeviceInfo::nominal("sm_80"));
  EXPECT_EQ(ampere["CLUSTER"], 0);
  // Defaults valid wherever the family serves at all; every sampled plan fits the device.
  for (const char* shape : {"1x32x8x1x1000x64", "4x8x8x3x300x192", "1x1x1x1x17x256", "8x64x1x64x70000x128",
                            "1x16x16x1x131072x128", "32x32x8x2x65536x128"})
    for (const char* layout : {"full", "causal"}) {
      const Problem p = Problem::parse("attention", shape, layout, DType::bf16);
      const Config dc = f.default_config(p, d);
      EXPECT_TRUE(f.valid(dc, p, d)) << shape << " " << dc.to_json();
      for (const Config& x : f.sample(p, d, 50, 2)) {
        const LaunchPlan pl = f.launch_plan(x, p);
        EXPECT_LE(pl.steps[0].dynamic_smem, unsigned(d.max_smem_per_block_optin)) << x.to_json();
        EXPECT_LE(pl.steps[0].grid[0], 128u) << x.to_json();
        EXPECT_LE(pl.workspace_bytes, size_t(1) << 30) << x.to_json();
        EXPECT_EQ(pl.steps.size(), x["CHUNK"] && !x["CLUSTER"] ? 2u : 1u) << x.to_json();
        if (x["CLUSTER"]) {
          EXPECT_EQ(pl.workspace_bytes, 0u) << x.to_json();
        }
      }
    }
}

// CLUSTER 1: the splits of a row block as one thread block cluster (the _cl entry point, its
// cluster size the split count compiled in), merged in shared memory: one launch, no workspace, the
// block's (max, sum) a row more shared memory; only on sm_90, only for 2 to 16 splits; configs
// recorded before the parameter upgrade to the combine step.
TEST(Attention, DecodeSplitsMergeInTheirClusterOnSm90) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  const Family f = find_family("attention_decode");
  const Problem p = Problem::parse("attention", "1x32x8x1x1024x128", "causal", DType::bf16);
  Config c = ktune::testing::decode_config(64, 16, 4, 16, 3, 1);
  ASSERT_TRUE(f.valid(c, p, d)) << f.violations(c, p, d).front();
  EXPECT_EQ(f.kernel_names(c, p), std::vector<std::string>{"attention_decode_cl<0,128,16,4,16,3,64,1,0,16>"});
  const LaunchPlan plan = f.launch_plan(c, p);
  ASSERT_EQ(plan.steps.size(), 1u);
  EXPECT_EQ(plan.steps[0].grid[0], 16u);
  EXPECT_EQ(plan.workspace_bytes, 0u);
  Config combine = c;
  combine.set("CLUSTER", 0);
  EXPECT_EQ(f.launch_plan(combine, p).steps.size(), 2u);
  EXPECT_EQ(plan.steps[0].dynamic_smem, f.launch_plan(combine, p).steps[0].dynamic_smem + 16 * 8);
  // 32 splits, one split, no split, an older GPU: no cluster.
  const Problem longer = Problem::parse("attention", "1x32x8x1x2048x128", "causal", DType::bf16);
  EXPECT_FALSE(f.valid(c, longer, d));
  c.set("CHUNK", 128);
  EXPECT_TRUE(f.valid(c, longer, d)); // 16 splits
  c.set("CHUNK", 0);
  EXPECT_FALSE(f.valid(c, p, d));
  c.set("CHUNK", 2048);
  EXPECT_FALSE(f.valid(c, longer, d));
  c.set("CHUNK", 512);
  EXPECT_TRUE(f.valid(c, p, d)); // 2 splits
  EXPECT_FALSE(f.valid(c, p, DeviceInfo::nominal("sm_80")));
  // The paged family's entry point likewise.
  const Family paged = find_family("attention_decode_paged");
  const Problem pp = Problem::parse("attention_paged", "1x32x8x1x1024x128x256x4", "causal", DType::bf16);
  EXPECT_FALSE(paged.valid(c, pp, d)); // a paged split takes turns
  Config turns = c;
  turns.set("ILV", 1);
  ASSERT_TRUE(paged.valid(turns, pp, d));
  EXPECT_EQ(paged.kernel_names(turns, pp),
            std::vector<std::string>{"attention_decode_paged_cl<0,128,16,4,16,3,512,1,1,0,2,1>"});
  // A config recorded before CLUSTER: the combine step.
  Config old;
  old.set("CHUNK", 64), old.set("ROWS", 16), old.set("WARPS", 4), old.set("BN", 16), old.set("STAGES", 3);
  EXPECT_EQ(f.upgraded(old)["CLUSTER"], 0);
  EXPECT_TRUE(f.valid(f.upgraded(old), p, d));
  // Both entry points compile for sm_90 at 2, 8 and 16 splits, head dims 64, 96 (padded) and 256.
  std::vector<std::pair<Config, Problem>> cases;
  for (const auto& [shape, chunk] : std::vector<std::pair<const char*, int>>{
           {"1x32x8x1x1024x64", 512}, {"2x32x32x1x1024x96", 128}, {"1x16x8x1x4096x256", 256}}) {
    const Problem q = Problem::parse("attention", shape, "causal", DType::f16);
    Config x = f.default_config(q, d);
    x.set("CHUNK", chunk), x.set("CLUSTER", 1);
    ASSERT_TRUE(f.valid(x, q, d)) << shape << " " << f.violations(x, q, d).front();
    cases.emplace_back(x, q);
  }
  ktune::testing::compile_all(f, cases, "sm_90");
  ktune::testing::compile_all(paged, std::vector<std::pair<Config, Problem>>{{turns, pp}}, "sm_90");
}

// attention_decode's neighbours (what first use times beside the rule's config at a shape nobody
// tuned): each one or two parameters from the config, never the config itself, no two alike, the
// warps first; a split keeps its cluster only where its splits still fit one; paged, no step that
// leaves the page when the config's divides it.
TEST(Attention, DecodeNeighboursAreOneChoiceAway) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  const Family f = find_family("attention_decode");
  const Problem p = Problem::parse("attention", "2x32x8x1x8192x128", "causal", DType::bf16);
  const Config c = ktune::testing::decode_config(1024, 16, 2, 16, 3, 1);
  ASSERT_TRUE(f.valid(c, p, d)) << f.violations(c, p, d).front();
  const std::vector<Config> near = f.neighbors_of(c, p, d);
  ASSERT_GE(near.size(), 7u);
  EXPECT_EQ(near.front()["WARPS"], 4);
  for (size_t i = 0; i < near.size(); ++i) {
    int differ = 0;
    for (const char* k : {"CHUNK", "ROWS", "WARPS", "BN", "STAGES", "CLUSTER", "ILV"}) differ += near[i][k] != c[k];
    EXPECT_TRUE(differ == 1 || differ == 2) << near[i].to_json();
    for (size_t j = 0; j < i; ++j) EXPECT_NE(near[i], near[j]);
    // 8 splits of 1024 halved: 16 splits, still a cluster; doubled: 4
    if (near[i]["CHUNK"] != c["CHUNK"]) {
      EXPECT_EQ(near[i]["CLUSTER"], 1) << near[i].to_json();
    }
  }
  const auto has = [&](std::initializer_list<std::pair<const char*, int>> changes) {
    Config x = c;
    for (const auto& [k, v] : changes) x.set(k, v);
    return std::find(near.begin(), near.end(), x) != near.end();
  };
  EXPECT_TRUE(has({{"BN", 32}, {"STAGES", 2}}));  // the same ring's bytes in 32-key steps
  EXPECT_TRUE(has({{"STAGES", 4}}) && has({{"STAGES", 2}}) && has({{"CLUSTER", 0}}) && has({{"ILV", 1}}));
  EXPECT_TRUE(has({{"CHUNK", 512}}) && has({{"CHUNK", 2048}}));
  // 32 splits of 256 keys halved to 128: more than a cluster holds, so merged by the combine step.
  Config small = c;
  small.set("CHUNK", 512);
  const Problem longer = Problem::parse("attention", "1x32x8x1x8192x128", "causal", DType::bf16);
  for (const Config& x : f.neighbors_of(small, longer, d))
    if (x["CHUNK"] == 256) {
      EXPECT_EQ(x["CLUSTER"], 0) << x.to_json();
    }
  // Paged at page 16: a 16-key step stays one, and a split keeps taking turns (the paged family
  // has no other order).
  const Family paged = find_family("attention_decode_paged");
  const Problem pp = Problem::parse("attention_paged", "2x32x8x1x8192x128x16x1024", "causal", DType::bf16);
  Config turns = c;
  turns.set("ILV", 1);
  ASSERT_TRUE(paged.valid(turns, pp, d)) << paged.violations(turns, pp, d).front();
  const std::vector<Config> paged_near = paged.neighbors_of(turns, pp, d);
  EXPECT_GE(paged_near.size(), 6u);
  for (const Config& x : paged_near) {
    EXPECT_EQ(x["BN"], 16) << x.to_json();
    EXPECT_EQ(x["ILV"], 1) << x.to_json();
  }
}

// A paged problem is served as the one whose cache holds no more pages than its block table names
// (OpInfo::serve_as): one choice for every pool size, measured on a cache of what a call can read.
// Which holds only because no kernel name, grid or shared memory depends on the page count.
TEST(Attention, PagedProblemsAreServedWithACacheOfTheirTablesPages) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  const Problem big = Problem::parse("attention_paged", "4x32x8x1x4096x128x16x200000", "causal", DType::bf16);
  const Problem served = serving_problem(big);
  EXPECT_EQ(served.key(), "attention_paged/bf16/causal/4x32x8x1x4096x128x16x1024/a16");
  EXPECT_EQ(serving_key(Problem::parse("attention_paged", "4x32x8x1x4096x128x16x1025", "causal", DType::bf16)),
            served.key());
  EXPECT_EQ(serving_key(served), served.key());
  // A cache with fewer pages than the table's entries (pages shared between sequences) is its own.
  const Problem shared = Problem::parse("attention_paged", "4x32x8x1x4096x128x16x700", "causal", DType::bf16);
  EXPECT_EQ(serving_key(shared), shared.key());
  EXPECT_EQ(served.ld, big.ld);
  const Family f = find_family("attention_decode_paged");
  for (const Problem& p : {big, Problem::parse("attention_paged", "1x32x8x1x1024x128x64x90000", "causal", DType::bf16),
                           Problem::parse("attention_paged", "2x8x2x3x1024x48x16x9000", "causal", DType::bf16)}) {
    const Problem s = serving_problem(p);
    EXPECT_LT(s.dims[7], p.dims[7]) << p.key();
    for (const Config& c : f.sample(p, d, 6, 5)) {
      ASSERT_TRUE(f.valid(c, s, d)) << p.key() << " " << c.to_json();
      ASSERT_NO_FATAL_FAILURE(expect_served_alike(f, c, p, s));
    }
  }
}

// attention_paged: a paged KV cache; its one family is attention_decode over the block table.
TEST(Attention, PagedOpIsValidatedAndItsFamilyCompiles) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  const Problem p = Problem::parse("attention_paged", "4x32x8x1x4096x128x16x2000", "full", DType::bf16);
  EXPECT_EQ(p.key(), "attention_paged/bf16/full/4x32x8x1x4096x128x16x2000/a16");
  const OpInfo& info = op_info("attention_paged");
  ASSERT_EQ(info.operands.size(), 7u);
  EXPECT_EQ(operand_elements(p, 3), 4 * 4096 / 16); // block_table
  EXPECT_EQ(operand_elements(p, 4), 4);             // seq_lens
  EXPECT_EQ(operand_elements(p, 1), int64_t(2000) * 16 * 8 * 128); // k_cache
  EXPECT_EQ(p.ld.size(), 12u);
  for (const char* bad : {"4x32x8x1x4000x128x64x100", // kv_len not whole pages
                          "4x32x8x65x4096x128x16x100", // q_len past decode
                          "4x32x6x1x4096x128x16x100", "4x32x8x1x4096x320x16x100", "4x32x8x1x4096x128x16x0"})
    EXPECT_THROW(Problem::parse("attention_paged", bad, "full", DType::bf16), UsageError) << bad;
  EXPECT_THROW(Problem::parse("attention_paged", "4x32x8x1x4096x128x16x100", "full", DType::f32), UsageError);
  const Family f = find_family("attention_decode_paged");
  EXPECT_EQ(f.op(), "attention_paged");
  const Config c = f.default_config(p, d);
  ASSERT_TRUE(f.valid(c, p, d)) << c.to_json();
  EXPECT_EQ(f.kernel_names(c, p).front().rfind("attention_decode_paged<", 0), 0u);
  // A contiguous cache as one page a sequence, and a decode row served by nothing else.
  const Problem one = Problem::parse("attention_paged", "1x32x8x1x32768x128x32768x1", "causal", DType::bf16);
  const Config oc = f.default_config(one, d);
  ASSERT_TRUE(f.valid(oc, one, d));
  EXPECT_EQ(f.launch_plan(oc, one).steps.size(), 2u); // split: one sequence fills no device
  // Paged splits take turns along the keys (a sequence shorter than the capacity is dealt over all
  // of them); the contiguous family's keep contiguous splits.
  EXPECT_EQ(oc["ILV"], 1);
  const Problem flat = Problem::parse("attention", "1x32x8x1x32768x128", "causal", DType::bf16);
  const Config fc = find_family("attention_decode").default_config(flat, d);
  EXPECT_GT(fc["CHUNK"], 0);
  EXPECT_EQ(fc["ILV"], 0);
  EXPECT_EQ(c["ILV"], 1) << c.to_json();
  // Unsplit (enough row blocks), ILV 1 is the one kernel both orders make: no ",1" in its name.
  const Problem many = Problem::parse("attention_paged", "64x32x8x1x4096x128x16x20000", "causal", DType::bf16);
  const Config mc = f.default_config(many, d);
  EXPECT_EQ(mc["CHUNK"], 0);
  EXPECT_EQ(mc["ILV"], 1);
  ASSERT_TRUE(f.valid(mc, many, d)) << f.violations(mc, many, d).front();
  Config mc0 = mc;
  mc0.set("ILV", 0);
  EXPECT_EQ(f.kernel_names(mc, many), f.kernel_names(mc0, many));
  ktune::testing::compile_all(
      f, default_and_sampled(f, "attention_paged",
                             {"2x8x2x3x1024x128x16x200", "1x4x4x1x768x64x256x3", "2x32x32x1x1024x96x64x40"}, 5),
      "sm_90");
  // ILV 1 (the splits take turns): the entry points' last template argument, in both merges and
  // both ways through the table; without it the name is the one before ILV.
  const Problem pages16 = Problem::parse("attention_paged", "2x8x2x3x1024x128x16x200", "causal", DType::bf16);
  std::vector<std::pair<Config, Problem>> ilv;
  for (const auto& [bn, cluster] : std::vector<std::pair<int, int>>{{16, 0}, {32, 1}}) {
    const Config x = ktune::testing::decode_config(256, 16, 4, bn, 3, cluster, 1);
    ASSERT_TRUE(f.valid(x, pages16, d)) << f.violations(x, pages16, d).front();
    const std::string name = f.kernel_names(x, pages16).front();
    EXPECT_EQ(name.substr(name.size() - 3), ",1>") << name;
    Config off = x;
    off.set("ILV", 0);
    const std::string before = f.kernel_names(off, pages16).front();
    EXPECT_EQ(name, before.substr(0, before.size() - 1) + ",1>");
    ilv.emplace_back(x, pages16);
  }
  // Paged, ILV is 1 only: the contiguous order is outside the family's space, so neither the tuner
  // nor first use picks it; a config recorded with it (or before ILV, or lent from attention's
  // contiguous family) reads as taking turns (Family::upgrade), unsplit or split.
  EXPECT_FALSE(f.valid(ktune::testing::decode_config(256, 16, 4, 16, 3, 0, 0), pages16, d));
  EXPECT_FALSE(f.valid(ktune::testing::decode_config(0, 16, 4, 16, 3, 0, 0), pages16, d));
  EXPECT_TRUE(f.valid(ktune::testing::decode_config(0, 16, 4, 16, 3, 0, 1), pages16, d));
  for (const Config& x : f.sample(one, d, 40, 7)) EXPECT_EQ(x["ILV"], 1) << x.to_json();
  EXPECT_EQ(f.canonical(ktune::testing::decode_config(256, 16, 4, 16, 3, 0, 0))["ILV"], 1);
  Config recorded = ktune::testing::decode_config(256, 16, 4, 16, 3);
  recorded.pop_back(); // ILV, the last parameter
  EXPECT_EQ(f.canonical(recorded)["ILV"], 1);
  EXPECT_EQ(find_family("attention_decode").canonical(recorded)["ILV"], 0); // contiguous: as measured
  ktune::testing::compile_all(f, ilv, "sm_90");
  const Family contiguous = find_family("attention_decode");
  const Problem c1 = Problem::parse("attention", "1x32x8x1x8192x128", "full", DType::f16);
  ktune::testing::compile_all(contiguous, std::vector<std::pair<Config, Problem>>{
                                              {ktune::testing::decode_config(1024, 16, 4, 16, 3, 0, 1), c1},
                                              {ktune::testing::decode_config(1024, 16, 4, 32, 3, 1, 1), c1}},
                              "sm_90");
}

// attention_varlen: packed sequences; its families are the prefill ones with the _varlen entry.
TEST(Attention, VarlenOpIsValidatedSplitsEvenlyForTimingAndItsFamiliesCompile) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  const Problem p = Problem::parse("attention_varlen", "4x32x8x4096x4096x128x10000x12000", "causal", DType::bf16);
  EXPECT_EQ(p.key(), "attention_varlen/bf16/causal/4x32x8x4096x4096x128x10000x12000/a16");
  const OpInfo& info = op_info("attention_varlen");
  ASSERT_EQ(info.operands.size(), 7u);
  EXPECT_EQ(operand_elements(p, 0), int64_t(10000) * 32 * 128); // q: (total_q, heads, head_dim)
  EXPECT_EQ(operand_elements(p, 1), int64_t(12000) * 8 * 128);  // k
  EXPECT_EQ(operand_elements(p, 3), 5);                          // cu_seqlens_q
  EXPECT_EQ(operand_elements(p, 6), int64_t(32) * 10000);        // lse: (heads, total_q)
  EXPECT_EQ(p.ld.size(), 8u);                                    // token and head strides of q, k, v, o
  for (const char* bad : {"4x32x8x4096x4096x128x20000x12000", // more tokens than 4 sequences of 4096
                          "4x32x8x4096x4096x128x10000x0", "4x32x6x4096x4096x128x10000x10000",
                          "4x32x8x4096x4096x320x10000x10000", "1x1x1x3000000000x1x64x3000000000x1"})
    EXPECT_THROW(Problem::parse("attention_varlen", bad, "full", DType::bf16), UsageError) << bad;
  // Equal sequences that fill the batch are the dense problem: the same work.
  for (const char* layout : {"full", "causal"}) {
    const Problem dense = Problem::parse("attention", "3x8x2x1000x1500x64", layout, DType::bf16);
    const Problem packed = Problem::parse("attention_varlen", "3x8x2x1000x1500x64x3000x4500", layout, DType::bf16);
    EXPECT_DOUBLE_EQ(info.flops(packed), op_info("attention").flops(dense)) << layout;
  }
  // The timed split (even) and the verified one (ragged, one sequence empty): every length within
  // the longest, the totals kept.
  EXPECT_EQ(varlen_cu_seqlens(10, 4, 3, 0), (std::vector<int32_t>{0, 3, 6, 8, 10}));
  for (uint64_t seed : {1ull, 2ull, 77ull}) {
    const std::vector<int32_t> cu = varlen_cu_seqlens(10000, 4, 4096, seed);
    ASSERT_EQ(cu.size(), 5u);
    EXPECT_EQ(cu.front(), 0);
    EXPECT_EQ(cu.back(), 10000);
    int empty = 0;
    for (size_t b = 0; b < 4; ++b) {
      EXPECT_GE(cu[b + 1] - cu[b], 0);
      EXPECT_LE(cu[b + 1] - cu[b], 4096);
      empty += cu[b + 1] == cu[b];
    }
    EXPECT_GE(empty, 1) << seed;
    EXPECT_NE(cu, varlen_cu_seqlens(10000, 4, 4096, 0));
    EXPECT_EQ(cu, varlen_cu_seqlens(10000, 4, 4096, seed)); // from the seed alone
  }
  const std::vector<int32_t> last_empty = varlen_cu_seqlens(10000, 4, 4096, 9, 3); // the keys' choice
  EXPECT_EQ(last_empty[4], last_empty[3]);
  EXPECT_EQ(varlen_cu_seqlens(8, 2, 4, 5), (std::vector<int32_t>{0, 4, 8})); // full: nothing can move
  EXPECT_THROW(varlen_cu_seqlens(9, 2, 4, 0), Error);
  for (const char* name : {"attention_wgmma_varlen", "attention_fa2_varlen", "attention_simple_varlen"}) {
    const Family f = find_family(name);
    EXPECT_EQ(f.op(), "attention_varlen");
    const Config c = f.default_config(p, d);
    ASSERT_TRUE(f.valid(c, p, d)) << name << " " << c.to_json();
    EXPECT_EQ(f.kernel_names(c, p).front().rfind(std::string(name) + "<", 0), 0u);
    ktune::testing::compile_all(
        f, default_and_sampled(f, "attention_varlen", {"3x8x2x1000x1000x64x2500x2900", "2x4x4x256x512x256x300x1000"}, 3),
        "sm_90");
  }
  // The dense problem of the longest sequences lends its tuned configs.
  const Problem as = info.lends_from.as(p);
  EXPECT_EQ(as.key(), "attention/bf16/causal/4x32x8x4096x4096x128/a16");
  // Served as the batch's capacity of tokens (one choice for every step's token counts): which
  // holds only because no family's kernels or launch grid depend on the totals.
  const Problem served = serving_problem(p);
  EXPECT_EQ(served.key(), "attention_varlen/bf16/causal/4x32x8x4096x4096x128x16384x16384/a16");
  EXPECT_EQ(serving_problem(Problem::parse("attention_varlen", "4x32x8x4096x4096x128x100x12000", "causal", DType::bf16))
                .key(),
            served.key());
  for (const char* name : {"attention_wgmma_varlen", "attention_fa2_varlen", "attention_simple_varlen"}) {
    const Family f = find_family(name);
    for (const Config& c : f.sample(p, d, 4, 11)) ASSERT_NO_FATAL_FAILURE(expect_served_alike(f, c, p, served));
  }
  // The cumulative lengths and the log-sum-exp are read one element at a time: a 4-byte aligned
  // view of them leaves the class at 16; q at 4 bytes narrows it.
  alignas(256) static unsigned char buf[1024];
  const void* at16[] = {buf, buf, buf, buf + 4, buf + 8, buf, buf + 4};
  EXPECT_EQ(operands_alignment(p, 16, at16, 7), 16);
  const void* q4[] = {buf + 4, buf, buf, buf, buf, buf, buf};
  EXPECT_EQ(operands_alignment(p, 16, q4, 7), 4);
}

TEST(Attention, KernelsOfEveryFamilyAndTheCheckKernelsCompile) {
  for (const char* name : {"attention_wgmma", "attention_fa2", "attention_simple"}) {
    const Family f = find_family(name);
    ktune::testing::compile_all(
        f, default_and_sampled(f, "attention", {"1x8x2x1000x1000x64", "1x8x8x512x512x128", "1x4x1x256x256x256"}, 3),
        "sm_90");
  }
  // Head dims that attention_wgmma pads with zeros to whole 64-column blocks.
  const Family wgmma = find_family("attention_wgmma");
  ktune::testing::compile_all(wgmma, default_and_sampled(wgmma, "attention", {"1x8x2x700x700x96", "1x4x4x300x300x160"}, 5),
                              "sm_90");
  const Family decode = find_family("attention_decode");
  ktune::testing::compile_all(
      decode, default_and_sampled(decode, "attention",
                                  {"1x32x8x1x5000x128", "2x8x2x7x1000x64", "1x4x4x1x2048x256", "1x32x32x1x3000x96",
                                   "2x16x4x3x1000x80"},
                                  3),
      "sm_90");
  Compiler compiler;
  for (const char* arch : {"sm_80", "sm_90"}) {
    const auto k = compiler.compile(attention_check_request(arch));
    EXPECT_EQ(k->lowered_names.size(), 5u);
  }
}

TEST(Attention, RuntimeAndCEntriesRefuseBadInputWithoutAGpu) {
  RuntimeOptions o;
  o.arch = "sm_90", o.db_path = "";
  Runtime rt(o);
  int x = 0;
  float l = 0;
  // f32, kv_heads not dividing heads, a null lse, a wrong number of strides: refused before any launch.
  EXPECT_THROW(rt.attention(DType::f32, 1, 4, 4, 16, 16, 64, false, &x, &x, &x, &x, &l), UsageError);
  EXPECT_THROW(rt.attention(DType::bf16, 1, 4, 3, 16, 16, 64, false, &x, &x, &x, &x, &l), UsageError);
  EXPECT_THROW(rt.attention(DType::bf16, 1, 4, 4, 16, 16, 64, true, &x, &x, &x, &x, nullptr), UsageError);
  EXPECT_THROW(rt.attention(DType::bf16, 1, 4, 4, 16, 16, 64, true, &x, &x, &x, &x, &l, {1, 2, 3}), UsageError);
  EXPECT_EQ(ktune_attention(nullptr, KTUNE_R_16BF, 1, 4, 4, 16, 16, 64, 0, &x, &x, &x, &x, &l, nullptr, 0.f, nullptr),
            KTUNE_INVALID_VALUE);
  EXPECT_NE(std::string(ktune_last_error()).find("handle is NULL"), std::string::npos) << ktune_last_error();
  // The paged entry: a capacity of no page, q_len past decode's 64, a wrong number of strides.
  int32_t t = 0;
  EXPECT_THROW(rt.attention_paged(DType::bf16, 1, 4, 4, 1, 64, 16, 4, 0, false, &x, &x, &x, &t, &t, &x, &l), UsageError);
  EXPECT_THROW(rt.attention_paged(DType::bf16, 1, 4, 4, 65, 64, 16, 4, 2, false, &x, &x, &x, &t, &t, &x, &l), UsageError);
  EXPECT_THROW(rt.attention_paged(DType::bf16, 1, 4, 4, 1, 64, 16, 4, 2, true, &x, &x, &x, &t, &t, &x, &l, {1, 2}),
               UsageError);
  EXPECT_THROW(rt.attention_paged(DType::bf16, 1, 4, 4, 1, 64, 1 << 20, 4, 1 << 12, true, &x, &x, &x, &t, &t, &x, &l),
               UsageError);
  EXPECT_EQ(ktune_attention_paged(nullptr, KTUNE_R_16BF, 1, 4, 4, 1, 64, 16, 4, 2, 0, &x, &x, &x, &t, &t, &x, &l, nullptr,
                                  0.f, nullptr),
            KTUNE_INVALID_VALUE);
  EXPECT_NE(std::string(ktune_last_error()).find("ktune_attention_paged: handle is NULL"), std::string::npos)
      << ktune_last_error();
  // The prepared handle: only for ops of plain buffers, validated when made, the count and the
  // nulls checked at the first call (before any lookup, so without a GPU too).
  EXPECT_THROW(rt.buffers_call(Problem::parse("gemm", "64x64x64", "NN", DType::f32)), UsageError);
  EXPECT_THROW(rt.buffers_call(Problem::parse("softmax", "4x64", "", DType::f32)), UsageError);
  EXPECT_THROW(rt.buffers_call(Problem::make("attention", {1, 4, 3, 16, 16, 64}, "full", DType::bf16)), UsageError);
  const auto call = rt.buffers_call(Problem::make("attention", {1, 4, 2, 16, 16, 64}, "causal", DType::bf16));
  const void* four[] = {&x, &x, &x, &x};
  EXPECT_THROW((*call)(four, 4), UsageError);
  const void* with_null[] = {&x, &x, nullptr, &x, &l};
  EXPECT_THROW((*call)(with_null, 5), UsageError);
  EXPECT_FALSE(call->ready(with_null, 5));
}

// attention_wgmma serves head dims 96, 160 and 224 with the kernel of the next multiple of 64 (TMA
// fills the columns past the operand's head dim with zeros; the kernel takes the real one for the
// scale and the stores), its tiles sized for that; 32 and other head dims are not its, nor are
// padded head dims attention_fa2's.
TEST(Attention, WgmmaPadsHeadDimsToWholeColumnBlocks) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  const Family f = find_family("attention_wgmma");
  for (const auto& [odd, whole] : {std::pair{"96", "128"}, std::pair{"160", "192"}, std::pair{"224", "256"}}) {
    const Problem p = Problem::parse("attention", std::string("2x8x2x1000x1000x") + odd, "causal", DType::bf16);
    const Problem q = Problem::parse("attention", std::string("2x8x2x1000x1000x") + whole, "causal", DType::bf16);
    const Config c = f.default_config(p, d);
    EXPECT_EQ(c.to_json(), f.default_config(q, d).to_json()) << odd;
    EXPECT_EQ(f.kernel_names(c, p), f.kernel_names(c, q)) << odd;
    EXPECT_EQ(f.launch_plan(c, p).steps[0].dynamic_smem, f.launch_plan(c, q).steps[0].dynamic_smem) << odd;
    for (const Config& x : f.sample(p, d, 20, 3)) EXPECT_EQ(f.valid(x, p, d), f.valid(x, q, d)) << odd << x.to_json();
  }
  // Below 64 and between the 32-multiples too: 40 and 48 as 64, 80 as 128 (Stable Diffusion's and
  // ViT-H's head dims); not a head dim whose rows are not whole 16-byte TMA units.
  for (const auto& [odd, whole] : {std::pair{"40", "64"}, std::pair{"48", "64"}, std::pair{"80", "128"}}) {
    const Problem p = Problem::parse("attention", std::string("2x8x2x1000x1000x") + odd, "full", DType::bf16);
    const Problem q = Problem::parse("attention", std::string("2x8x2x1000x1000x") + whole, "full", DType::bf16);
    EXPECT_TRUE(f.valid(f.default_config(p, d), p, d)) << odd;
    EXPECT_EQ(f.kernel_names(f.default_config(p, d), p), f.kernel_names(f.default_config(q, d), q)) << odd;
  }
  Problem ragged = Problem::parse("attention", "2x8x2x1000x1000x36", "full", DType::bf16);
  EXPECT_FALSE(f.valid(f.default_config(ragged, d), ragged, d));
  const Family fa2 = find_family("attention_fa2");
  const Problem p96 = Problem::parse("attention", "2x8x2x1000x1000x96", "full", DType::bf16);
  EXPECT_FALSE(fa2.valid(fa2.default_config(p96, d), p96, d));
}

// PERSIST's grid is every (query block, head, batch) tile, capped at launch by the blocks resident
// at once (LaunchStep::persistent); without it, one block a tile over (query blocks, heads, batch).
// Problems default to it up to 64 key steps a tile, causal or not.
TEST(Attention, WgmmaPersistentPlanCoversEveryTile) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  const Family f = find_family("attention_wgmma");
  const Problem causal = Problem::parse("attention", "3x8x2x1000x900x128", "causal", DType::bf16);
  const Problem full = Problem::parse("attention", "3x8x2x1000x900x128", "full", DType::bf16);
  const Config c = f.default_config(causal, d);
  ASSERT_EQ(c["PERSIST"], 1);
  EXPECT_EQ(f.default_config(full, d)["PERSIST"], 1); // 900 keys: 10 steps of 96
  const Problem longer = Problem::parse("attention", "3x8x2x1000x4096x128", "full", DType::bf16);
  EXPECT_EQ(f.default_config(longer, d)["PERSIST"], 1); // 26 steps of 160
  for (const char* layout : {"full", "causal"}) // 16384 keys: 94 or 128 steps
    EXPECT_EQ(f.default_config(Problem::parse("attention", "1x16x16x16384x16384x128", layout, DType::bf16), d)["PERSIST"], 0)
        << layout;
  const int64_t blocks = (1000 + 64 * c["CWG"] - 1) / (64 * c["CWG"]);
  const LaunchStep s = f.launch_plan(c, causal).steps.at(0);
  EXPECT_TRUE(s.persistent);
  EXPECT_EQ(s.grid[0], unsigned(blocks * 8 * 3));
  EXPECT_EQ(s.grid[1] * s.grid[2], 1u);
  Config one = c;
  one.set("PERSIST", 0);
  const LaunchStep t = f.launch_plan(one, causal).steps.at(0);
  EXPECT_FALSE(t.persistent);
  EXPECT_EQ(t.grid[0], unsigned(blocks));
  EXPECT_EQ(t.grid[1], 8u);
  EXPECT_EQ(t.grid[2], 3u);
}

// The default step of keys pads short sequences the least (ties: the larger step), from 64 to
// 128 keys; longer ones keep FlashAttention-3's tiles, 16 keys fewer at head dim 128 where that
// makes room for a persistent block's O tile. Persistent blocks where a tile has at most 64 key
// steps. Three consumers at head dim 64 without a mask where 1.5x their rounds of tiles over the
// 132 SMs come to less than 1.16x two consumers' rounds; at head dim 64 with turns, no
// intra-warpgroup overlap for three consumers or causal, overlap for two without a mask.
TEST(Attention, WgmmaDefaultsFitShortSequences) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  const Family f = find_family("attention_wgmma");
  struct Case {
    const char* shape;
    const char* layout;
    int cwg, bn, persist, overlap = 1;
  };
  for (const Case& k : {Case{"64x16x16x197x197x64", "full", 2, 112, 1, 1},  // 224 keys, not 256; 16 rounds either way
                        Case{"32x16x16x512x512x64", "full", 3, 128, 1, 0},  // 64 and 128 tie; 12 rounds against 16
                        Case{"16x12x12x512x512x64", "full", 2, 128, 1, 1},  // 5 rounds against 6
                        Case{"8x20x20x1500x1500x64", "full", 3, 128, 1, 0}, // 10 rounds against 15
                        Case{"2x8x8x4096x4096x40", "full", 3, 128, 1, 0},   // head dim 40 as 64; 3 rounds against 4
                        Case{"2x10x10x4096x4096x64", "full", 2, 128, 1, 1}, // 4 rounds against 5
                        Case{"64x12x12x128x128x64", "full", 1, 128, 1},     // one key step: OCC 2, below
                        Case{"4x16x16x300x300x128", "full", 2, 80, 1},      // 320 keys, not 384 or 352 (176)
                        Case{"1x32x8x4096x4096x128", "full", 2, 160, 1},    // 128 x 176 less 16 for the O tile; 26 steps
                        Case{"1x16x16x16384x16384x128", "full", 2, 176, 0}, // FlashAttention-3's 128 x 176; 94 steps
                        Case{"1x32x8x2000x2000x128", "full", 2, 160, 1},    // 13 steps of 160
                        Case{"1x32x8x10500x10500x128", "full", 2, 176, 1},  // 160 would take 66 steps
                        Case{"8x12x12x1024x1024x64", "causal", 2, 128, 1, 0},
                        Case{"8x64x8x512x512x128", "causal", 2, 128, 1},
                        Case{"4x8x4x1000x1000x256", "full", 2, 80, 1},    // head dim 256: 80 (registers)
                        // 64 tiles of 13 steps: the keys split 2 ways, one block a tile (SPLIT below)
                        Case{"1x8x4x1000x1000x256", "full", 2, 80, 0}}) {
    const Problem p = Problem::parse("attention", k.shape, k.layout, DType::bf16);
    const Config c = f.default_config(p, d);
    EXPECT_EQ(c["CWG"], k.cwg) << k.shape;
    EXPECT_EQ(c["BN"], k.bn) << k.shape;
    EXPECT_EQ(c["PERSIST"], k.persist) << k.shape;
    EXPECT_EQ(c["OVERLAP"], k.overlap) << k.shape;
    EXPECT_TRUE(f.valid(c, p, d)) << k.shape;
  }
}

// OCC 2 (registers capped for two blocks an SM) only with one consumer, and only where two blocks'
// tiles fit sm_90's 228 KiB of shared memory an SM.
TEST(Attention, WgmmaTwoBlocksAnSmTakeOneConsumerAndFitSharedMemory) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  const Family f = find_family("attention_wgmma");
  auto config = [](int cwg, int bn, int stages) {
    Config c;
    c.set("CWG", cwg), c.set("BN", bn), c.set("STAGES", stages), c.set("OVERLAP", 1), c.set("PINGPONG", 0);
    c.set("PERSIST", 1), c.set("OCC", 2), c.set("OSTORE", 0), c.set("SPLIT", 1);
    return c;
  };
  const Problem d64 = Problem::parse("attention", "64x12x12x128x128x64", "full", DType::bf16);
  const Problem d128 = Problem::parse("attention", "64x12x12x128x128x128", "full", DType::bf16);
  EXPECT_TRUE(f.valid(config(1, 128, 2), d64, d));  // 2 x 74 KiB
  EXPECT_FALSE(f.valid(config(2, 128, 2), d64, d)); // two consumers: registers for one block only
  EXPECT_FALSE(f.valid(config(1, 176, 3), d64, d)); // 2 x 141 KiB
  EXPECT_TRUE(f.valid(config(1, 64, 2), d128, d));  // 2 x 81 KiB
  EXPECT_FALSE(f.valid(config(1, 128, 2), d128, d)); // 2 x 145 KiB
  // One key step and one query tile at head dim 64 (BERT's 128 tokens, or fewer): one consumer,
  // two blocks an SM. Longer queries against one key step (cross-attention) take the consumer
  // rule's two or three.
  for (const char* shape : {"64x12x12x128x128x64", "8x8x8x77x77x40", "4x8x8x100x100x64"}) {
    const Problem p = Problem::parse("attention", shape, "full", DType::bf16);
    const Config c = f.default_config(p, d);
    EXPECT_EQ(c["OCC"], 2) << shape;
    EXPECT_EQ(c["CWG"], 1) << shape;
    EXPECT_TRUE(f.valid(c, p, d)) << shape;
  }
  for (const auto& [shape, cwg] : std::vector<std::pair<const char*, int>>{
           {"4x8x8x1000x100x64", 2}, {"2x8x8x4096x77x40", 3}, {"2x10x10x4096x77x64", 2}}) {
    const Problem p = Problem::parse("attention", shape, "full", DType::bf16);
    const Config c = f.default_config(p, d);
    EXPECT_EQ(c["OCC"], 1) << shape;
    EXPECT_EQ(c["CWG"], cwg) << shape;
    EXPECT_TRUE(f.valid(c, p, d)) << shape;
  }
  EXPECT_EQ(f.default_config(Problem::parse("attention", "64x16x16x197x197x64", "full", DType::bf16), d)["OCC"], 1);
  EXPECT_EQ(f.default_config(d128, d)["OCC"], 1);
  // The kernel's name carries it (its launch bounds differ).
  EXPECT_NE(f.kernel_names(config(1, 128, 2), d64).at(0).find(",1,2,0,1>"), std::string::npos);
}

// OSTORE 1 (O staged in shared memory of its own, stored by TMA): persistent blocks over the 4-D
// maps only, its O tile counted in the shared memory, and a fourth tensor map (o) in the plan.
TEST(Attention, WgmmaStoresOByTmaOnlyWherePersistentAndItFits) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  const Family f = find_family("attention_wgmma"), fv = find_family("attention_wgmma_varlen");
  auto config = [](int cwg, int bn, int persist, int ostore) {
    Config c;
    c.set("CWG", cwg), c.set("BN", bn), c.set("STAGES", 2), c.set("OVERLAP", 1), c.set("PINGPONG", cwg > 1);
    c.set("PERSIST", persist), c.set("OCC", 1), c.set("OSTORE", ostore), c.set("SPLIT", 1);
    return c;
  };
  const Problem d128 = Problem::parse("attention", "1x32x8x4096x4096x128", "causal", DType::bf16);
  EXPECT_TRUE(f.valid(config(2, 128, 1, 1), d128, d));
  EXPECT_FALSE(f.valid(config(2, 128, 0, 1), d128, d)); // one block a tile: O goes through its Q buffer
  EXPECT_TRUE(f.valid(config(2, 176, 1, 0), d128, d));  // 209 KiB
  EXPECT_FALSE(f.valid(config(2, 176, 1, 1), d128, d)); // 241 KiB with the 32 KiB O tile
  const Problem v = Problem::parse("attention_varlen", "4x8x8x512x512x128x1024x1024", "causal", DType::bf16);
  EXPECT_FALSE(fv.valid(config(2, 128, 1, 1), v, d)); // a box would run into the next sequence
  EXPECT_TRUE(fv.valid(config(2, 128, 1, 0), v, d));
  const LaunchPlan plan = f.launch_plan(config(2, 128, 1, 1), d128);
  ASSERT_EQ(plan.steps.at(0).tma_maps.size(), 4u);
  EXPECT_EQ(plan.steps[0].tma_maps[3].operand, 3);
  EXPECT_EQ(plan.steps[0].tma_maps[3].box, (std::vector<unsigned>{1, 64, 1, 64}));
  EXPECT_EQ(fv.launch_plan(config(2, 128, 1, 0), v).steps.at(0).tma_maps.size(), 3u);
  // The dense kernel declares the o map whether it stores by TMA or not.
  EXPECT_EQ(f.launch_plan(config(2, 128, 0, 0), d128).steps.at(0).tma_maps.size(), 4u);
  // Entries recorded before OSTORE read as stores from registers.
  Config old;
  old.set("CWG", 2), old.set("BN", 128), old.set("STAGES", 2), old.set("OVERLAP", 1), old.set("PINGPONG", 1);
  old.set("PERSIST", 1), old.set("OCC", 1);
  EXPECT_EQ(f.upgraded(old)["OSTORE"], 0);
  // The default: by TMA wherever a persistent block's O tile fits (not at head dim 256's 128 x 80
  // causal tile, whose ring leaves no room), never for varlen; every default valid.
  for (const auto& [shape, layout, want] : std::vector<std::tuple<const char*, const char*, int>>{
           {"64x12x12x128x128x64", "full", 1}, {"8x64x8x512x512x128", "causal", 1},
           {"1x16x16x4096x4096x256", "causal", 0}, {"1x16x16x16384x16384x128", "full", 0},
           {"1x32x8x4096x4096x128", "full", 1}, {"1x32x8x10500x10500x128", "full", 0}}) {
    const Problem p = Problem::parse("attention", shape, layout, DType::bf16);
    const Config c = f.default_config(p, d);
    EXPECT_EQ(c["OSTORE"], want) << shape;
    EXPECT_TRUE(f.valid(c, p, d)) << shape;
  }
  EXPECT_EQ(fv.default_config(v, d)["OSTORE"], 0);
  EXPECT_TRUE(fv.valid(fv.default_config(v, d), v, d));
  // The 16 keys given up for the O tile are not given up where O is stored from registers.
  const Problem vfull = Problem::parse("attention_varlen", "2x32x8x4096x4096x128x8192x8192", "full", DType::bf16);
  EXPECT_EQ(fv.default_config(vfull, d)["BN"], 176);
}

// SPLIT (split-KV in attention_wgmma): the default splits a query tile's keys where one block a
// tile leaves SMs idle over many keys, into the most splits that fit one wave with 512 keys or
// more each; the plan adds the combine step and the partials' workspace; a split is one block a
// tile and not varlen, and a config lent where its keys do not split falls back to one block a tile.
TEST(Attention, WgmmaSplitsTheKeysWhereItsTilesLeaveSmsIdle) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90"); // 132 SMs
  const Family f = find_family("attention_wgmma");
  for (const auto& [shape, want] : std::vector<std::pair<const char*, int>>{
           {"1x32x8x128x8192x128", 4},   // 32 tiles, 64 steps: 4 x 32 blocks, 16 steps a split
           {"1x32x8x256x16384x128", 2},  // 64 tiles: 2 x 64 fill one wave, 3 x 64 do not
           {"1x16x16x128x8192x256", 8},  // 16 tiles of 103 steps of 80 keys
           {"1x32x8x128x2048x128", 4},   // 16 steps, 4 a split
           {"1x32x8x128x1024x128", 2},   // 8 steps: 4 splits would take 2 each
           {"1x32x8x128x512x128", 1},    // 4 steps
           {"1x28x4x512x32768x128", 1},  // 112 tiles: 2 x 112 do not fit one wave
           {"1x32x8x256x256x128", 1},    // 2 steps
           {"1x32x8x4096x4096x128", 1}}) {
    const Problem p = Problem::parse("attention", shape, "causal", DType::bf16);
    const Config c = f.default_config(p, d);
    EXPECT_EQ(c["SPLIT"], want) << shape;
    EXPECT_TRUE(f.valid(c, p, d)) << shape;
    if (want > 1) {
      EXPECT_EQ(c["PERSIST"], 0) << shape;
      EXPECT_EQ(c["OSTORE"], 0) << shape;
    }
  }
  // Full attention at head dim 128: FlashAttention-3's 176-key step, not the 160 that persistent
  // blocks take to fit their O tile (a split block has none): 12 steps, 4 splits of 3 (528 keys).
  {
    const Problem full = Problem::parse("attention", "1x32x8x128x2048x128", "full", DType::bf16);
    const Config c = f.default_config(full, d);
    EXPECT_EQ(c["SPLIT"], 4);
    EXPECT_EQ(c["BN"], 176);
    EXPECT_TRUE(f.valid(c, full, d));
  }
  // The plan: 11 tiles of 128 keys in runs of 3 for SPLIT 4 (4 splits), 9 in runs of 2 for SPLIT 8
  // (5 splits, not 8), each query block once a split, then the combine step: a warp a (b, h, i) row
  // at the tiles' head dim 128, 1600 of them in blocks of 4 warps (more than 1024 warps).
  const Problem p = Problem::parse("attention", "2x4x2x200x1400x96", "causal", DType::bf16);
  Config c = f.default_config(p, d);
  c.set("BN", 128), c.set("PERSIST", 0), c.set("OSTORE", 0), c.set("SPLIT", 4);
  ASSERT_TRUE(f.valid(c, p, d)) << c.to_json();
  LaunchPlan plan = f.launch_plan(c, p);
  ASSERT_EQ(plan.steps.size(), 2u);
  const int64_t qblocks = (200 + 64 * c["CWG"] - 1) / (64 * c["CWG"]);
  EXPECT_EQ(plan.steps[0].grid[0], unsigned(qblocks * 4));
  EXPECT_EQ(plan.steps[1].kernel, 1);
  EXPECT_EQ(plan.steps[1].grid[0], unsigned(2 * 4 * 200 / 4));
  EXPECT_EQ(plan.steps[1].block[0], 128u);
  EXPECT_TRUE(plan.steps[1].overlap_previous);
  EXPECT_TRUE(plan.steps[1].tma_maps.empty());
  EXPECT_EQ(plan.workspace_bytes, size_t(4) * 2 * 4 * 200 * (128 + 2) * 4); // head dim 96 in 128-column tiles
  const std::vector<std::string> names = f.kernel_names(c, p);
  ASSERT_EQ(names.size(), 2u);
  EXPECT_NE(names[0].find(",0,4>"), std::string::npos) << names[0];
  EXPECT_EQ(names[1], "attention_wgmma_combine<0,128,128,4,1>"); // PAD 1: 96 of 128 columns stored
  c.set("BN", 160), c.set("SPLIT", 8); // 9 tiles in runs of 2
  ASSERT_TRUE(f.valid(c, p, d)) << c.to_json();
  plan = f.launch_plan(c, p);
  EXPECT_EQ(plan.steps.at(0).grid[0], unsigned(qblocks * 5));
  EXPECT_EQ(plan.workspace_bytes, size_t(5) * 2 * 4 * 200 * (128 + 2) * 4);
  // Where a split may not run.
  Config persistent = c;
  persistent.set("PERSIST", 1);
  EXPECT_FALSE(f.valid(persistent, p, d));
  const Problem one_step = Problem::parse("attention", "2x4x2x200x100x96", "causal", DType::bf16);
  EXPECT_FALSE(f.valid(c, one_step, d));
  Config one_block = c;
  one_block.set("SPLIT", 1);
  const std::vector<Config> g = f.generalized(c);
  EXPECT_NE(std::find(g.begin(), g.end(), one_block), g.end());
  EXPECT_TRUE(f.valid(one_block, one_step, d));
  // Nor where the query tiles come to more than one wave of blocks (132 SMs, OCC blocks each): 4 x 33
  // tiles of 128 rows are 132, 5 x 33 are 165; one consumer's 64-row tiles at two blocks an SM,
  // 8 x 33 = 264, are one wave of 264.
  {
    const Problem four = Problem::parse("attention", "1x33x33x512x512x128", "full", DType::bf16);
    const Problem more = Problem::parse("attention", "1x33x33x513x513x128", "full", DType::bf16);
    Config x = f.default_config(four, d);
    x.set("CWG", 2), x.set("OCC", 1), x.set("BN", 128), x.set("PERSIST", 0), x.set("OSTORE", 0), x.set("SPLIT", 2);
    EXPECT_TRUE(f.valid(x, four, d)) << x.to_json();
    EXPECT_FALSE(f.valid(x, more, d)) << x.to_json();
    const std::vector<Config> gx = f.generalized(x);
    EXPECT_TRUE(std::any_of(gx.begin(), gx.end(), [&](const Config& y) { return f.valid(y, more, d); }));
    x.set("CWG", 1), x.set("OCC", 2), x.set("BN", 64), x.set("PINGPONG", 0);
    EXPECT_TRUE(f.valid(x, four, d)) << x.to_json();
    EXPECT_FALSE(f.valid(x, more, d)) << x.to_json();
    // A 4096-token causal prompt of 32 heads (1024 tiles): no split in the tuner's space.
    const Problem prompt = Problem::parse("attention", "1x32x8x4096x4096x128", "causal", DType::bf16);
    uint64_t configs = 0, splits = 0;
    f.enumerate(prompt, d, [&](const Config& y) {
      ++configs, splits += y["SPLIT"] > 1;
      return true;
    });
    EXPECT_GT(configs, 0u);
    EXPECT_EQ(splits, 0u);
  }
  const Family fv = find_family("attention_wgmma_varlen");
  const Problem v = Problem::parse("attention_varlen", "2x4x2x1400x1400x96x2000x2000", "causal", DType::bf16);
  EXPECT_FALSE(fv.valid(c, v, d));
  EXPECT_EQ(fv.default_config(v, d)["SPLIT"], 1);
  // Entries recorded before SPLIT read as one block a tile.
  Config old;
  for (const auto& [name, value] : c.items())
    if (name != "SPLIT") old.set(name, value);
  EXPECT_EQ(f.upgraded(old)["SPLIT"], 1);
  // Both kernels compile (NVRTC, no GPU).
  ktune::testing::compile_all(f, std::vector<std::pair<Config, Problem>>{{c, p}}, "sm_90");
}

// A short causal prompt at head dim 128 whose 128-row tiles take one round over the SMs or less
// runs one consumer with two blocks an SM and 64-key steps; longer prompts, other head dims and
// full attention keep their rules.
TEST(Attention, WgmmaShortCausalPromptsTakeOneConsumerTwoBlocksAnSm) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90"); // 132 SMs
  const Family f = find_family("attention_wgmma");
  for (const auto& [shape, layout, cwg] : std::vector<std::tuple<const char*, const char*, int>>{
           {"1x32x8x128x128x128", "causal", 1},   // 32 tiles of 128 rows
           {"1x32x8x512x512x128", "causal", 1},   // 128 tiles: one round
           {"1x64x8x256x256x128", "causal", 1},   // 128 tiles
           {"1x32x32x300x300x96", "causal", 1},   // head dim 96 runs as 128
           {"1x32x8x1024x1024x128", "causal", 2}, // 256 tiles: two rounds
           {"1x32x8x128x1024x128", "causal", 2},  // a chunk over a cache: split instead (above)
           {"2x32x8x512x512x128", "causal", 2},   // 256 tiles
           {"1x32x8x512x512x128", "full", 2},     // not measured without a mask
           {"1x32x8x512x512x256", "causal", 2}}) {
    const Problem p = Problem::parse("attention", shape, layout, DType::bf16);
    const Config c = f.default_config(p, d);
    EXPECT_EQ(c["CWG"], cwg) << shape << " " << layout;
    if (cwg == 1) {
      EXPECT_EQ(c["OCC"], 2) << shape;
      EXPECT_EQ(c["BN"], 64) << shape;
      EXPECT_EQ(c["PERSIST"], 1) << shape;
      EXPECT_EQ(c["OSTORE"], 1) << shape;
      EXPECT_EQ(c["SPLIT"], 1) << shape;
    }
    EXPECT_TRUE(f.valid(c, p, d)) << shape << " " << layout;
  }
}

// attention_wgmma's neighbours (first use times them beside the default at a shape nobody tuned):
// the other key step, one consumer with two blocks an SM against two consumers, three consumers
// against two at head dim 64, persistent against one block a tile, and the keys split 2 ways
// unsplit (one step fewer split), each settled as the rule settles it; those the problem allows
// are valid.
TEST(Attention, WgmmaNeighboursAreTheRulesOneChoiceAlternatives) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  const Family f = find_family("attention_wgmma");
  auto has = [](const std::vector<Config>& v, std::initializer_list<std::pair<const char*, int>> want) {
    return std::any_of(v.begin(), v.end(), [&](const Config& x) {
      return std::all_of(want.begin(), want.end(), [&](const auto& kv) { return x[kv.first] == kv.second; });
    });
  };
  {
    // A 1000-token causal prompt: two consumers, 112-key steps (1008 keys padded), persistent
    // with O by TMA.
    const Problem p = Problem::parse("attention", "1x32x8x1000x1000x128", "causal", DType::bf16);
    const Config c = f.default_config(p, d);
    ASSERT_EQ(c["CWG"], 2);
    ASSERT_EQ(c["BN"], 112);
    ASSERT_EQ(c["PERSIST"], 1);
    const std::vector<Config> n = f.neighbors_of(c, p, d);
    EXPECT_TRUE(has(n, {{"CWG", 2}, {"BN", 128}, {"PERSIST", 1}})) << "the other key step";
    EXPECT_TRUE(has(n, {{"CWG", 1}, {"OCC", 2}, {"BN", 64}, {"PINGPONG", 0}})) << "one consumer, two blocks an SM";
    EXPECT_TRUE(has(n, {{"CWG", 2}, {"PERSIST", 0}, {"OSTORE", 0}, {"SPLIT", 1}})) << "one block a tile";
    // No split: 256 tiles are past one wave (132 SMs), where no split paid.
    EXPECT_FALSE(has(n, {{"SPLIT", 2}})) << "256 tiles";
    for (const Config& x : n) {
      EXPECT_NE(x, c);
      EXPECT_TRUE(f.valid(x, p, d)) << x.to_json();
      if (x["CWG"] == 1) {
        EXPECT_EQ(x["PINGPONG"], 0) << x.to_json();
      }
      if (x["PERSIST"] == 0) {
        EXPECT_EQ(x["OSTORE"], 0) << x.to_json();
      }
    }
    EXPECT_LE(n.size(), 9u);
  }
  for (const char* shape : {"1x32x8x256x256x128", "1x32x8x512x512x128"}) {
    // A short causal prompt: one consumer, two blocks an SM, 64-key steps. Its neighbours: the
    // 128-key step (two such blocks do not fit an SM: one), two consumers at the rule's 128-key
    // step, and one block a tile.
    const Problem p = Problem::parse("attention", shape, "causal", DType::bf16);
    const Config c = f.default_config(p, d);
    ASSERT_EQ(c["CWG"], 1) << shape;
    ASSERT_EQ(c["OCC"], 2) << shape;
    const std::vector<Config> n = f.neighbors_of(c, p, d);
    EXPECT_TRUE(has(n, {{"CWG", 1}, {"BN", 128}, {"OCC", 1}, {"PERSIST", 1}})) << shape;
    EXPECT_TRUE(has(n, {{"CWG", 2}, {"BN", 128}, {"PINGPONG", 1}, {"OCC", 1}, {"OVERLAP", 1}})) << shape;
    EXPECT_TRUE(has(n, {{"CWG", 1}, {"BN", 64}, {"OCC", 2}, {"PERSIST", 0}, {"OSTORE", 0}})) << shape;
    for (const Config& x : n) EXPECT_TRUE(f.valid(x, p, d)) << shape << " " << x.to_json();
  }
  {
    // Head dim 256, long keys (80-key steps, one block a tile): the 64-key step, and persistent
    // blocks, with O by TMA only where its tile fits.
    const Problem p = Problem::parse("attention", "1x16x16x16384x16384x256", "full", DType::bf16);
    const Config c = f.default_config(p, d);
    ASSERT_EQ(c["BN"], 80);
    const std::vector<Config> n = f.neighbors_of(c, p, d);
    EXPECT_TRUE(has(n, {{"BN", 64}})) << c.to_json();
    EXPECT_TRUE(has(n, {{"PERSIST", 1 - c["PERSIST"]}})) << c.to_json();
    for (const Config& x : n) {
      EXPECT_EQ(x["SPLIT"], 1) << x.to_json(); // 1024 tiles, past one wave: no split neighbour
      EXPECT_TRUE(f.valid(x, p, d)) << x.to_json();
    }
  }
  {
    // The shapes AttentionGpu.WgmmaNeighboursPassAtShapesNobodyTuned verifies every valid neighbour
    // at: 12 or more of them, 2 or more split.
    int valid = 0, split = 0;
    for (const auto& [shape, layout] : std::vector<std::pair<const char*, const char*>>{
             {"1x8x2x256x256x128", "causal"},
             {"2x4x4x130x1100x64", "full"},
             {"1x4x2x300x1200x256", "causal"},
             {"1x4x1x100x1000x96", "full"}}) {
      const Problem p = Problem::parse("attention", shape, layout, DType::bf16);
      for (const Config& x : f.neighbors_of(f.default_config(p, d), p, d))
        if (f.valid(x, p, d)) ++valid, split += x["SPLIT"] > 1;
    }
    EXPECT_GE(valid, 12);
    EXPECT_GE(split, 2);
  }
  {
    // Where attention_decode serves (q_len <= 64), none: a 64-row tile a head is mostly padding.
    const Problem dec = Problem::parse("attention", "2x32x8x1x3000x128", "causal", DType::bf16);
    EXPECT_TRUE(f.neighbors_of(f.default_config(dec, d), dec, d).empty());
    const Problem draft = Problem::parse("attention", "1x32x8x64x4096x64", "causal", DType::bf16);
    EXPECT_TRUE(f.neighbors_of(f.default_config(draft, d), draft, d).empty());
  }
  {
    // A chunk over a cache: split 4 ways; the neighbour splits 3 ways.
    const Problem p = Problem::parse("attention", "1x32x8x128x8192x128", "causal", DType::bf16);
    const Config c = f.default_config(p, d);
    ASSERT_EQ(c["SPLIT"], 4);
    const std::vector<Config> n = f.neighbors_of(c, p, d);
    EXPECT_TRUE(has(n, {{"SPLIT", 3}, {"PERSIST", 0}}));
    EXPECT_FALSE(has(n, {{"SPLIT", 4}, {"PERSIST", 1}}));
  }
  {
    // Head dim 64 without a mask: three consumers against the rule's two.
    const Problem p = Problem::parse("attention", "16x12x12x128x512x64", "full", DType::bf16);
    const Config c = f.default_config(p, d);
    const std::vector<Config> n = f.neighbors_of(c, p, d);
    EXPECT_TRUE(has(n, {{"CWG", c["CWG"] == 3 ? 2 : 3}})) << c.to_json();
  }
  {
    // Past one wave of tiles no split neighbour, though the keys would split (1024 tiles: a
    // 4096-token causal prompt of 32 heads; 133 tiles of 128 rows, one past the 132 SMs); at
    // exactly one wave (132 tiles) the split is offered.
    for (const auto& [shape, split] : std::vector<std::pair<const char*, bool>>{
             {"1x32x8x4096x4096x128", false}, {"1x133x133x128x2048x128", false}, {"1x132x132x128x2048x128", true}}) {
      const Problem p = Problem::parse("attention", shape, "causal", DType::bf16);
      const Config c = f.default_config(p, d);
      ASSERT_EQ(c["SPLIT"], 1) << shape;
      const std::vector<Config> n = f.neighbors_of(c, p, d);
      EXPECT_FALSE(n.empty()) << shape;
      EXPECT_EQ(has(n, {{"SPLIT", 2}}), split) << shape;
      for (const Config& x : n) EXPECT_TRUE(f.valid(x, p, d)) << shape << " " << x.to_json();
    }
  }
}
