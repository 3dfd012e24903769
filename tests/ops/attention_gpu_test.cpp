// The op attention (kernel_templates/attention/) on a GPU: the runner's FP64 check passes both
// families over shapes that exercise every edge (GQA, causal with q_len < kv_len and > kv_len,
// partial tiles, head dims 64 / 128 / 256, f16 and bf16, (B, H, S, D) views) and rejects planted
// kernels, each wrong in one way a flash kernel can be; `ktune tune` tunes it, and the runtime
// serves tuned and untuned shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include "core/embedded.h"
#include "gpu_env.h"
#include "ktune/compiler.h"
#include "ktune/family.h"
#include "ktune/ktune.h"
#include "ktune/runtime.h"
#include "ops/attention_combine_faults.h"
#include "ops/decode_config.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/module.h"
#include "test_paths.h"
#include "tuner/op_runner.h"

using namespace ktune;
using ktune::testing::decode_config;

namespace {

struct Planted {
  const char* name;
  const char* from;           // text of the family's kernel source (or of `header`)
  const char* to;             // what the planted kernel has instead
  const char* header = nullptr; // an embedded header the text is in, planted as the request's own copy
};

// The text a fault is planted in: its header's, or the family's source.
std::string planted_text(const Planted& fault, const std::string& source) {
  return fault.header ? std::string(embedded_file(fault.header)) : source;
}

// Each fault changes one thing of attention_fa2.cu.
const Planted kFaults[] = {
    {"the running max never rescales O", "acc[mt][dt][2 * r] *= corr, acc[mt][dt][2 * r + 1] *= corr;", ";"},
    {"causal aligned top-left", "j > i + off", "j > i"},
    {"the last key tile skipped", "for (long long n = 0; n < n_end; ++n)", "for (long long n = 0; n < n_end - 1; ++n)"},
    {"P kept to 3 mantissa bits", "s[mt][nt][2 * r + e] = p;", "s[mt][nt][2 * r + e] = __uint_as_float(__float_as_uint(p) & 0xfff00000u);"},
    {"the log-sum-exp without the sum", "(row_max[mt][r] + log2_approx(l))", "(row_max[mt][r])"},
    {"O rows assumed packed", "obase + i * os + ch * 8", "obase + i * (H * D) + ch * 8"},
    {"one element of q overwritten", "__syncthreads();\n\n  // O / l", "__syncthreads();\n if (tid == 0 && blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0) const_cast<unsigned short*>(q)[0] ^= 1;\n  // O / l"},
    {"the scale argument ignored", "scale_arg != 0.f ? scale_arg : 1.f / sqrtf((float)D)", "1.f / sqrtf((float)D)"},
};

// Each fault changes one thing of attention_wgmma.cu's split-KV (SPLIT > 1).
const Planted kWgmmaSplitFaults[] = {
    {"a split's run of keys one tile late", "n0 = split * split_tiles;", "n0 = split * split_tiles + (split > 0);"},
    {"a split's row sums not added over the quad (each thread's own columns only)",
     "l += __shfl_xor_sync(0xffffffffu, l, 1);\n        l += __shfl_xor_sync(0xffffffffu, l, 2);\n        const long long row = "
     "row_base + 8 * r;\n        if (row >= SQ) continue;",
     "const long long row = row_base + 8 * r;\n        if (row >= SQ) continue;"},
    {"every head's partials in the first head's rows", "const long long at = (T.b * H + T.h) * SQ + row;",
     "const long long at = T.b * H * SQ + row;"},
    {"a split's max of its first row for both", "make_float2(row_max[r], l)", "make_float2(row_max[0], l)"},
    {"the combine step merges one split fewer", "ktune_attn_wg::wgmma_splits<BN, SPLIT>(SKV, tiles_a_split), DR",
     "ktune_attn_wg::wgmma_splits<BN, SPLIT>(SKV, tiles_a_split) - 1, DR"},
};

VerifyResult check(OpRunner& runner, const Problem& p, Module& m, const LaunchPlan& plan, uint64_t seed) {
  runner.ensure_workspace(plan.workspace_bytes); // as the tuner's worker does before every config
  return check_as_served_and_timed(runner, p, seed, Numerics::standard, [&](CUstream st) { runner.launch(m, plan, st); });
}

// Config c of family f at p compiled and checked as the tuner's worker checks it, with a line of
// the result in the test's output.
VerifyResult check_config(OpRunner& runner, Compiler& compiler, const DeviceInfo& d, const Family& f, const Config& c,
                          const Problem& p, uint64_t seed) {
  const auto k = compiler.compile(compile_request(f, c, p, d.arch));
  Module m(k->cubin, k->lowered_names, f.name());
  const VerifyResult v = check(runner, p, m, f.launch_plan(c, p), seed);
  std::cout << "[ ktune    ] " << f.name() << " " << c.to_json() << " " << p.key() << ": " << v.summary() << "\n";
  return v;
}


// Config c of family f at p, compiled from `source` (the family's file) with `fault` planted, and
// checked; nullopt when the fault's text is no longer in the source.
std::optional<VerifyResult> check_planted(OpRunner& runner, Compiler& compiler, const DeviceInfo& d, const Family& f,
                                          const Config& c, const Problem& p, const std::string& source,
                                          const Planted& fault) {
  std::string s = planted_text(fault, source);
  const size_t at = s.find(fault.from);
  if (at == std::string::npos) return std::nullopt;
  s.replace(at, std::strlen(fault.from), fault.to);
  CompileRequest req = compile_request(f, c, p, d.arch);
  if (fault.header) { // NVRTC takes the request's header of that name instead of the embedded one
    const std::string name(fault.header);
    req.headers.emplace_back(name.substr(name.rfind('/') + 1), s);
  } else {
    req.source = s;
  }
  req.source_name = "planted_" + f.name() + ".cu";
  req.context = std::string("planted: ") + fault.name;
  const auto k = compiler.compile(req);
  Module m(k->cubin, k->lowered_names, req.context);
  const VerifyResult v = check(runner, p, m, f.launch_plan(c, p), 99);
  std::cout << "[ ktune    ] planted, " << fault.name << ": " << v.summary() << "\n";
  return v;
}

} // namespace

TEST(AttentionGpu, BothFamiliesPassOverEdgeShapesAndPlantedKernelsAreRejected) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner("attention", compiler, *d);
  // batch x heads x kv_heads x q_len x kv_len x head_dim, layout, dtype
  const std::vector<std::tuple<const char*, const char*, DType>> shapes = {
      {"1x4x2x200x333x64", "causal", DType::bf16},  {"2x4x4x130x130x128", "full", DType::f16},
      {"1x2x1x64x1000x256", "causal", DType::bf16}, {"1x2x2x300x100x64", "causal", DType::f16},
      {"1x8x1x1x517x128", "full", DType::bf16},     {"3x2x2x77x77x192", "causal", DType::bf16},
      // A short causal prompt: attention_wgmma's default is one consumer, two blocks an SM.
      {"1x8x2x256x256x128", "causal", DType::bf16},
  };
  uint64_t seed = 10;
  for (const auto& [shape, layout, t] : shapes) {
    const Problem p = Problem::parse("attention", shape, layout, t);
    for (const char* name : {"attention_wgmma", "attention_fa2", "attention_simple"}) {
      const Family f = find_family(name);
      if (std::string(name) == "attention_wgmma" && d->arch != "sm_90") continue; // sm_90a only
      std::vector<Config> cs = f.sample(p, *d, std::string(name) == "attention_simple" ? 1 : 4, ++seed);
      if (f.valid(f.default_config(p, *d), p, *d)) cs.push_back(f.default_config(p, *d));
      if (std::string(name) != "attention_simple") {
        EXPECT_FALSE(cs.empty()) << name << " " << p.key();
      }
      for (const Config& c : cs) {
        const VerifyResult v = check_config(*runner, compiler, *d, f, c, p, ++seed);
        EXPECT_TRUE(v.pass) << name << " " << c.to_json() << " " << p.key() << ": " << v.summary();
      }
    }
  }
  // Blocks that run no key tile (causal, q_len > kv_len: their rows see no key) write O where Q was
  // loaded by every thread: with 8 warps one warp's zeros could be overwritten by another's late Q.
  {
    const Problem p = Problem::parse("attention", "1x2x2x300x100x64", "causal", DType::f16);
    const Family f = find_family("attention_fa2");
    for (const auto& [bm, warps, bn, stages] : std::vector<std::array<int, 4>>{{128, 8, 32, 1}, {128, 8, 64, 2}, {64, 4, 64, 1}}) {
      Config c;
      c.set("BM", bm), c.set("WARPS", warps), c.set("BN", bn), c.set("STAGES", stages);
      const VerifyResult v = check_config(*runner, compiler, *d, f, c, p, ++seed);
      EXPECT_TRUE(v.pass) << c.to_json() << " " << p.key() << ": " << v.summary();
    }
  }
  // A negative scale: the row max of the scaled scores is then the min of the raw ones
  // (attention_wgmma computes S negated for it, through wgmma's imm-scale-b).
  {
    for (const auto& [name, shape] : std::vector<std::pair<const char*, const char*>>{
             {"attention_wgmma", "1x4x2x200x333x128"}, {"attention_fa2", "1x4x2x200x333x128"},
             {"attention_decode", "1x8x2x4x333x128"}}) {
      if (std::string(name) == "attention_wgmma" && d->arch != "sm_90") continue;
      Problem p = Problem::parse("attention", shape, "causal", DType::bf16);
      p.scalars["scale"] = -0.7;
      const Family f = find_family(name);
      const VerifyResult v = check_config(*runner, compiler, *d, f, f.default_config(p, *d), p, ++seed);
      EXPECT_TRUE(v.pass) << name << " " << p.key() << " scale -0.7: " << v.summary();
    }
  }
  // A (B, H, S, D) view: q, k, v and o with the head outside the sequence.
  for (const char* name : {"attention_wgmma", "attention_fa2"}) {
    Problem p = Problem::parse("attention", "2x4x2x96x160x64", "causal", DType::bf16);
    const int64_t H = 4, HK = 2, SQ = 96, SK = 160, D = 64; // batch 2
    p.ld = {H * SQ * D, D, SQ * D, HK * SK * D, D, SK * D, HK * SK * D, D, SK * D, H * SQ * D, D, SQ * D};
    validate(p);
    const Family f = find_family(name);
    if (std::string(name) == "attention_wgmma" && d->arch != "sm_90") continue;
    const Config c = f.default_config(p, *d);
    const auto k = compiler.compile(compile_request(f, c, p, d->arch));
    Module m(k->cubin, k->lowered_names, "bhsd");
    const VerifyResult v = check(*runner, p, m, f.launch_plan(c, p), 77);
    EXPECT_TRUE(v.pass) << name << " (B, H, S, D) view: " << v.summary();
  }

  // attention_wgmma's split-KV (SPLIT, sm_90): the default's tiles, one block a tile, the keys split
  // 2, 3 and 8 ways over causal GQA with q_len < kv_len, a causal square problem whose first query
  // tile's keys end before the later splits' runs start (those write nothing but (-inf, 0)), head
  // dim 256 in f16 and a padded head dim; then the split's planted faults.
  if (d->arch == "sm_90") {
    const Family f = find_family("attention_wgmma");
    for (const auto& [shape, layout, t] : std::vector<std::tuple<const char*, const char*, DType>>{
             {"1x4x2x192x1400x128", "causal", DType::bf16}, {"1x2x2x1024x1024x64", "causal", DType::bf16},
             {"2x4x4x130x700x256", "full", DType::f16}, {"1x4x1x100x1000x96", "full", DType::bf16}}) {
      const Problem p = Problem::parse("attention", shape, layout, t);
      for (int split : {2, 3, 8}) {
        Config c = f.default_config(p, *d);
        c.set("PERSIST", 0), c.set("OSTORE", 0), c.set("SPLIT", split);
        ASSERT_TRUE(f.valid(c, p, *d)) << c.to_json() << " " << p.key();
        ASSERT_EQ(f.launch_plan(c, p).steps.size(), 2u) << c.to_json() << " " << p.key();
        const VerifyResult v = check_config(*runner, compiler, *d, f, c, p, ++seed);
        EXPECT_TRUE(v.pass) << c.to_json() << " " << p.key() << ": " << v.summary();
      }
    }
    const Problem p = Problem::parse("attention", "1x4x2x192x1400x128", "causal", DType::bf16);
    Config c = f.default_config(p, *d);
    c.set("PERSIST", 0), c.set("OSTORE", 0), c.set("SPLIT", 3);
    const std::string source(embedded_file("attention/attention_wgmma.cu"));
    for (const Planted& fault : kWgmmaSplitFaults) {
      const auto v = check_planted(*runner, compiler, *d, f, c, p, source, fault);
      ASSERT_TRUE(v) << "planted fault '" << fault.name << "' no longer matches attention_wgmma.cu";
      EXPECT_FALSE(v->pass) << fault.name << ": " << v->summary();
    }
  }

  // Planted faults, on a causal GQA problem with q_len < kv_len and several key tiles.
  const Problem p = Problem::parse("attention", "1x4x2x192x448x128", "causal", DType::bf16);
  const Family f = find_family("attention_fa2");
  const Config c = f.default_config(p, *d);
  const std::string source(embedded_file("attention/attention_fa2.cu"));
  for (const Planted& fault : kFaults) {
    const auto v = check_planted(*runner, compiler, *d, f, c, p, source, fault);
    ASSERT_TRUE(v) << "planted fault '" << fault.name << "' no longer matches attention_fa2.cu";
    EXPECT_FALSE(v->pass) << fault.name << ": " << v->summary();
  }
  // Nothing launched: the poisoned outputs fail.
  runner->prepare(p, 3);
  EXPECT_GT(runner->verify(nullptr).nonfinite, 0u);
}

namespace {

// Each fault changes one thing of attention_decode.cu; planted on a causal problem except where
// causal masking would hide it (keys past the sequence are past every row's diagonal too).
struct DecodePlanted : Planted {
  const char* layout = "causal";
  const char* shape = "1x16x4x3x1000x128"; // 4 splits of 256 keys, the last one partial
  int chunk = 256;
  int cluster = 0; // 1: the splits merged in their cluster (sm_90)
  int ilv = 0;     // 1: the splits take turns along the keys
  int warps = 4;   // 2: the warps' O merged a warp at a time (4: in slots of their own, summed)
};
// A fault of the cluster's merge, at the default problem and split.
DecodePlanted in_cluster(const Planted& p) {
  DecodePlanted d{p};
  d.cluster = 1;
  return d;
}
// A fault of the warps' merge a warp at a time (2 warps), at the default problem and split.
DecodePlanted a_warp_at_a_time(const Planted& p) {
  DecodePlanted d{p};
  d.warps = 2;
  return d;
}
// A fault of the splits that take turns (ILV 1), at the default problem and split.
DecodePlanted interleaved(const Planted& p) {
  DecodePlanted d{p};
  d.ilv = 1;
  return d;
}
const DecodePlanted kDecodeFaults[] = {
    // The warps' merge: in slots of their own (4 warps), summed (sum_slots) where the output is
    // stored or, for the cluster, into the first slot; or a warp at a time (2).
    {{"the warps' slots summed from the third where stored", "for (int w = 1; w < N; ++w)", "for (int w = 2; w < N; ++w)"}},
    in_cluster({"the warps' slots summed from the third for the cluster", "for (int w = 1; w < N; ++w)",
                "for (int w = 2; w < N; ++w)"}),
    a_warp_at_a_time({"a warp's merge overwrites the one before", "if (w > 0) {", "if (w > 1) {"}),
    {{"every packed row reads the group's first head", "h = hk * G + (ok ? row % G : 0);", "h = hk * G;"}},
    {{"causal limit of the packed row, not of its query", "limit[mt][r] = (row < R ? row / G : 0) + off;",
     "limit[mt][r] = (row < R ? row : 0) + off;"}},
    {{"keys past the block's end not masked", "if (j >= k1 || (CAUSAL && j > limit[mt][r]))", "if (CAUSAL && j > limit[mt][r])"},
     "full"},
    // The loads of a tile a lane a chunk column (head dims 64, 128, 256): the swizzle and the V
    // rows stepped along the lane's rows.
    {{"the lane's rows all swizzled as its first", "(sw ^ unsigned(((it * RSTEP) & 7) << 4))", "(sw)"}},
    {{"the lane's V rows not stepped", "kp += RSTEP * ks, vp += RSTEP * vs;", "kp += RSTEP * ks;"}},
    // CLUSTER 1: the merge in the cluster's shared memory (12 packed rows x 32 groups of 4 columns,
    // more than one block's 128 threads).
    in_cluster({"the cluster's splits merged without their max", "const float w = exp2_approx(ml[s].x - m_use);",
                "const float w = 1.f;"}),
    in_cluster({"the cluster's last split left out of the merge", "    for (int s = 0; s < CL; ++s) {\n      const float w",
                "    for (int s = 0; s < CL - 1; ++s) {\n      const float w"}),
    in_cluster({"every split's (max, sum) read from the merging block",
                "cluster::load_v2(cluster::remote(block_ml + lr, s))", "cluster::load_v2(cluster::remote(block_ml + lr, rank))"}),
    in_cluster({"every block of the cluster merges the first block's share", "const int item0 = int(rank) * THREADS + tid;",
                "const int item0 = tid;"}),
    in_cluster({"the cluster's lse without the sum", "out.lse = l > 0.f ? (m_use + log2_approx(l))", "out.lse = l > 0.f ? (m_use)"}),
    // ILV 1: every split reads the same runs; the runs' keys taken from the contiguous split's start.
    interleaved({"the splits that take turns all step by one split's run", "step = ILV ? nsplit * WARPS : WARPS",
                 "step = ILV ? WARPS : WARPS"}),
    interleaved({"the splits that take turns start at their contiguous split's keys",
                 "const long long k0 = CHUNK && !ILV ? split * CHUNK : 0;", "const long long k0 = CHUNK ? split * CHUNK : 0;"}),
};

// The family's own faults, then those of the merge it shares with attention_wgmma
// (ops/attention_combine_faults.h), planted in its combine step at the shape each shows at.
std::vector<DecodePlanted> decode_faults() {
  std::vector<DecodePlanted> all(std::begin(kDecodeFaults), std::end(kDecodeFaults));
  for (const ktune::testing::CombineFault& f : ktune::testing::kCombineFaults) {
    DecodePlanted d{{f.name, f.from, f.to, ktune::testing::kCombineHeader}};
    d.shape = f.shape, d.chunk = f.chunk;
    all.push_back(d);
  }
  return all;
}

} // namespace

// attention_decode over decode and speculative shapes (GQA packing, q_len 1 to 16, a row with no
// key, partial tiles, many splits, head dims 64 to 256) and its own planted faults.
TEST(AttentionGpu, DecodeFamilyPassesOverDecodeShapesAndPlantedKernelsAreRejected) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner("attention", compiler, *d);
  const Family f = find_family("attention_decode");
  const std::vector<std::tuple<const char*, const char*, DType>> shapes = {
      {"1x32x8x1x5000x128", "full", DType::bf16},  {"2x8x2x7x1000x64", "causal", DType::f16},
      {"1x4x4x1x2048x256", "full", DType::bf16},   {"3x16x2x16x777x128", "causal", DType::bf16},
      {"1x8x1x4x3x64", "causal", DType::bf16},     {"1x2x2x1x20000x192", "full", DType::f16},
      // Head dims padded with zeros to whole 64-column blocks (96 and 80 as 128, 40 as 64).
      {"1x32x32x1x3000x96", "causal", DType::bf16}, {"2x16x4x3x1000x80", "full", DType::f16},
      {"2x8x8x1x777x40", "causal", DType::bf16},
  };
  uint64_t seed = 500;
  for (const auto& [shape, layout, t] : shapes) {
    const Problem p = Problem::parse("attention", shape, layout, t);
    std::vector<Config> cs = f.sample(p, *d, 4, ++seed);
    const Config dc = f.default_config(p, *d);
    ASSERT_TRUE(f.valid(dc, p, *d)) << p.key() << " " << dc.to_json();
    cs.push_back(dc);
    // The default's tiles with the splits merged in their cluster, at the shortest and the longest
    // split that makes one (sm_90).
    std::vector<Config> clustered;
    for (int chunk : {64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}) {
      Config cc = dc;
      cc.set("CHUNK", chunk);
      cc.set("CLUSTER", 1);
      if (f.valid(cc, p, *d)) clustered.push_back(cc);
    }
    if (!clustered.empty()) cs.push_back(clustered.front());
    if (clustered.size() > 1) cs.push_back(clustered.back());
    // The same splits taking turns along the keys (ILV 1), merged by the combine step and in the cluster.
    for (Config ic : {dc, clustered.empty() ? dc : clustered.back()}) {
      if (ic["CHUNK"] == 0) ic.set("CHUNK", 256), ic.set("CLUSTER", 0);
      ic.set("ILV", 1);
      if (f.valid(ic, p, *d) && std::find(cs.begin(), cs.end(), ic) == cs.end()) cs.push_back(ic);
    }
    for (const Config& c : cs) {
      const VerifyResult v = check_config(*runner, compiler, *d, f, c, p, ++seed);
      EXPECT_TRUE(v.pass) << c.to_json() << " " << p.key() << ": " << v.summary();
    }
  }
  // Planted faults: GQA with 3 queries (12 packed rows), 4 warps a block, each fault's splits; the
  // unplanted kernel passes at each fault's problem and config first.
  const std::string source(embedded_file("attention/attention_decode.cu"));
  std::set<std::string> clean_checked; // (problem, config) pairs the unplanted kernel passed
  for (const DecodePlanted& fault : decode_faults()) {
    const Problem p = Problem::parse("attention", fault.shape, fault.layout, DType::bf16);
    if (fault.cluster && d->arch_number() < 90) continue;
    const Config fc = decode_config(fault.chunk, 16, fault.warps, 16, 3, fault.cluster, fault.ilv);
    ASSERT_TRUE(f.valid(fc, p, *d)) << fault.name;
    if (clean_checked.insert(p.key() + " " + fc.to_json()).second) {
      const VerifyResult clean = check_config(*runner, compiler, *d, f, fc, p, 98);
      ASSERT_TRUE(clean.pass) << "the unplanted kernel at " << p.key() << ": " << clean.summary();
    }
    const auto v = check_planted(*runner, compiler, *d, f, fc, p, source, fault);
    ASSERT_TRUE(v) << "planted fault '" << fault.name << "' no longer matches attention_decode.cu";
    EXPECT_FALSE(v->pass) << fault.name << ": " << v->summary();
  }
}

// One attention_decode config that takes every path (two splits and the combine step, four warps
// merged, a partial last tile, causal over two queries of two packed heads) on a shape small enough
// for compute-sanitizer's memcheck and racecheck to run it in seconds; on sm_90 the same with the
// two splits merged in their cluster; each with contiguous splits and with splits taking turns
// (ILV 1: 300 keys of 16-key tiles in runs of 4, split 1's second run partial).
TEST(AttentionGpu, DecodeSplitsAndMergesOnATinyShape) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner("attention", compiler, *d);
  const Family f = find_family("attention_decode");
  const Problem p = Problem::parse("attention", "1x4x2x2x300x64", "causal", DType::bf16);
  for (int cluster : {0, 1}) // the combine step, or (sm_90) the merge in the splits' cluster
    for (int ilv : {0, 1}) {
      if (cluster && d->arch_number() < 90) continue;
      const Config c = decode_config(256, 16, 4, 16, 2, cluster, ilv);
      ASSERT_TRUE(f.valid(c, p, *d));
      const LaunchPlan plan = f.launch_plan(c, p);
      ASSERT_EQ(plan.steps.size(), cluster ? 1u : 2u);
      const auto k = compiler.compile(compile_request(f, c, p, d->arch));
      Module m(k->cubin, k->lowered_names, "attention_decode");
      const VerifyResult v = check(*runner, p, m, plan, 7);
      EXPECT_TRUE(v.pass) << c.to_json() << ": " << v.summary();
    }
}

// One attention_wgmma split config (3 splits of a causal GQA problem with q_len < kv_len, the
// combine step after them) on a shape small enough for compute-sanitizer's memcheck and racecheck.
TEST(AttentionGpu, WgmmaSplitsAndMergesOnATinyShape) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  if (d->arch != "sm_90") GTEST_SKIP() << "attention_wgmma is sm_90a only";
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner("attention", compiler, *d);
  const Family f = find_family("attention_wgmma");
  const Problem p = Problem::parse("attention", "1x2x1x100x700x64", "causal", DType::bf16);
  Config c = f.default_config(p, *d);
  c.set("BN", 64), c.set("PERSIST", 0), c.set("OSTORE", 0), c.set("SPLIT", 3);
  ASSERT_TRUE(f.valid(c, p, *d)) << c.to_json();
  const LaunchPlan plan = f.launch_plan(c, p);
  ASSERT_EQ(plan.steps.size(), 2u);
  const VerifyResult v = check_config(*runner, compiler, *d, f, c, p, 8);
  EXPECT_TRUE(v.pass) << c.to_json() << ": " << v.summary();
}

// attention_wgmma's neighbours (Family::neighbors), which first use may serve at a shape nobody
// tuned without a tuner's check: every valid neighbour of the default at a short causal prompt (one
// consumer, two blocks an SM), head dim 64 without a mask (three consumers, a split of 2), head
// dim 256 (80 against 64 keys, persistent) and a padded head dim, verified against FP64.
TEST(AttentionGpu, WgmmaNeighboursPassAtShapesNobodyTuned) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  if (d->arch != "sm_90") GTEST_SKIP() << "attention_wgmma is sm_90a only";
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner("attention", compiler, *d);
  const Family f = find_family("attention_wgmma");
  uint64_t seed = 900;
  int checked = 0, split = 0;
  for (const auto& [shape, layout, t] : std::vector<std::tuple<const char*, const char*, DType>>{
           {"1x8x2x256x256x128", "causal", DType::bf16},
           {"2x4x4x130x1100x64", "full", DType::f16},
           {"1x4x2x300x1200x256", "causal", DType::bf16},
           {"1x4x1x100x1000x96", "full", DType::bf16}}) {
    const Problem p = Problem::parse("attention", shape, layout, t);
    for (const Config& c : f.neighbors_of(f.default_config(p, *d), p, *d)) {
      if (!f.valid(c, p, *d)) continue;
      const VerifyResult v = check_config(*runner, compiler, *d, f, c, p, ++seed);
      EXPECT_TRUE(v.pass) << c.to_json() << " " << p.key() << ": " << v.summary();
      ++checked, split += c["SPLIT"] > 1;
    }
  }
  EXPECT_GE(checked, 12);
  EXPECT_GE(split, 2);
}

namespace {

// attention_decode_paged's, pages a multiple of the tile (a table entry a tile, read ahead).
const Planted kPagedFaults[] = {
    {"the block table ignored (pages taken in order)",
     "bt[b * PPS + page_of(unsigned(key))]", "int(b * PPS + page_of(unsigned(key)))"},
    {"the second 32 tiles' entries those of the first 32", "next_pages = whole ? tile_page(32 + lane) : 0;",
     "next_pages = whole ? tile_page(lane) : 0;"},
    {"the entries read again for the 32 tiles just read, not the next 32", "next_pages = tile_page(n + 32 + lane);",
     "next_pages = tile_page(n + lane);"},
    {"the entries never renewed after the first 32 tiles", "if (n % 32 == 0 && n > 0) pages = next_pages",
     "if (false) pages = next_pages"},
    {"a key's row in its page taken as if pages were a power of two", "page_pow2 ? key & (page_keys - 1) : key % page_keys",
     "key & (page_keys - 1)"},
    {"each tile's entry taken from the next tile's lane", "__shfl_sync(0xffffffffu, pages, int(n % 32))",
     "__shfl_sync(0xffffffffu, pages, int((n + 1) % 32))"},
    {"the sequence lengths ignored", "if (PAGED) len = lens[b]", "if (false) len = lens[b]"},
};
// Pages smaller than a tile (each key looked up).
const Planted kSmallPageFaults[] = {
    {"the block table ignored for small pages", "const long long page = bt[b * PPS + pg];",
     "const long long page = b * PPS + pg;"},
    {"a tile's keys past a page boundary read from its first page", "while (at >= page_keys) at -= page_keys, ++pg;",
     "while (at >= page_keys) at -= page_keys;"},
};

} // namespace

// attention_paged (attention_decode_paged): page sizes 16, 64 and 256 and one page a sequence,
// pages shared between sequences, per-sequence lengths from 0 to the capacity (the runner draws
// them), both ways of reading the table (an entry a tile where pages are a multiple of the tile,
// an entry a key where they are smaller) and planted faults of each.
TEST(AttentionGpu, PagedDecodePassesOverPageSizesAndPlantedKernelsAreRejected) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner("attention_paged", compiler, *d);
  const Family f = find_family("attention_decode_paged");
  // batch x heads x kv_heads x q_len x kv_len x head_dim x page_size x pages
  const std::vector<std::tuple<const char*, const char*, DType>> shapes = {
      {"3x16x4x1x1024x128x16x300", "full", DType::bf16},
      {"2x8x2x4x2048x128x64x70", "causal", DType::f16},
      {"3x4x4x1x768x64x256x5", "causal", DType::bf16}, // 9 table entries over 5 pages
      {"2x32x8x1x4096x128x4096x2", "full", DType::bf16}, // a contiguous cache: one page a sequence
      {"2x16x4x1x1008x128x1008x3", "causal", DType::bf16}, // one page, not a power of two (63 tiles of 16)
      {"2x32x32x1x1024x96x64x40", "causal", DType::bf16}, // head dim 96, padded to 128
  };
  uint64_t seed = 900;
  for (const auto& [shape, layout, t] : shapes) {
    const Problem p = Problem::parse("attention_paged", shape, layout, t);
    std::vector<Config> cs = f.sample(p, *d, 2, ++seed);
    cs.push_back(f.default_config(p, *d));
    Config cc = cs.back(); // the default's splits merged in their cluster, where it splits (sm_90)
    cc.set("CLUSTER", 1);
    if (f.valid(cc, p, *d)) cs.push_back(cc);
    // Splits of 256 keys taking turns (ILV 1), merged by the combine step: each sequence's own
    // length is dealt over all of them.
    Config ic = f.default_config(p, *d);
    ic.set("CHUNK", 256), ic.set("CLUSTER", 0), ic.set("ILV", 1);
    if (f.valid(ic, p, *d)) cs.push_back(ic);
    for (const Config& c : cs) {
      ASSERT_TRUE(f.valid(c, p, *d)) << c.to_json();
      const VerifyResult v = check_config(*runner, compiler, *d, f, c, p, ++seed);
      EXPECT_TRUE(v.pass) << c.to_json() << " " << p.key() << ": " << v.summary();
    }
  }
  // Planted, pages a multiple of the tile (a table entry a tile, a warp's entries read 32 tiles at a
  // time) and not a power of two (a key's page and row by division): 170 pages of 48 keys a
  // sequence, 350 in the cache (so the faults still read inside it). Two splits of 4096 keys,
  // taking turns in runs of 2 tiles, give each warp about 128 tiles: its entries are renewed three
  // times, each time from the 32 read ahead.
  const Problem p = Problem::parse("attention_paged", "2x8x2x2x8160x128x48x350", "causal", DType::bf16);
  Config c = decode_config(4096, 16, 2, 16, 3, 0, 1);
  ASSERT_TRUE(f.valid(c, p, *d));
  EXPECT_TRUE(check_config(*runner, compiler, *d, f, c, p, 99).pass) << "the unplanted kernel at " << p.key();
  const std::string source(embedded_file("attention/attention_decode.cu"));
  for (const Planted& fault : kPagedFaults) {
    const auto v = check_planted(*runner, compiler, *d, f, c, p, source, fault);
    ASSERT_TRUE(v) << "planted fault '" << fault.name << "' no longer matches attention_decode.cu";
    EXPECT_FALSE(v->pass) << fault.name << ": " << v->summary();
  }
  // Pages smaller than a tile (each key looked up): 64-key tiles over pages of 16.
  const Problem small = Problem::parse("attention_paged", "2x8x2x2x1024x128x16x160", "causal", DType::bf16);
  c = decode_config(256, 16, 2, 64, 2, 0, 1);
  ASSERT_TRUE(f.valid(c, small, *d));
  EXPECT_TRUE(check_config(*runner, compiler, *d, f, c, small, 99).pass) << "the unplanted kernel at " << small.key();
  for (const Planted& fault : kSmallPageFaults) {
    const auto v = check_planted(*runner, compiler, *d, f, c, small, source, fault);
    ASSERT_TRUE(v) << "planted fault '" << fault.name << "' no longer matches attention_decode.cu";
    EXPECT_FALSE(v->pass) << fault.name << ": " << v->summary();
  }
}

namespace {

// Each fault breaks how attention_fa2's body finds a packed sequence (attention_fa2_varlen).
const Planted kVarlenFaults[] = {
    {"keys read from the queries' first token", "seq.k_first * ks", "seq.q_first * ks"},
    {"every sequence as long as the longest", "const long long SQ = seq.sq, SKV = seq.skv;",
     "const long long SQ = SQ_MAX, SKV = SKV_MAX;"},
    {"causal aligned to the longest sequences", "off = SKV - SQ;", "off = SKV_MAX - SQ_MAX;"},
};

} // namespace

// attention_varlen: the three prefill families' varlen entries over ragged packed sequences (as
// served: one sequence empty, lengths off the tiles, q and kv lengths that differ, causal rows with
// no key), planted faults of the sequence lookup rejected, and the runtime serving a shape nobody
// tuned.
TEST(AttentionGpu, VarlenFamiliesPassOverRaggedSequencesAndPlantedKernelsAreRejected) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner("attention_varlen", compiler, *d);
  // batch x heads x kv_heads x q_len x kv_len x head_dim x total_q x total_kv
  const std::vector<std::tuple<const char*, const char*, DType>> shapes = {
      {"4x4x2x200x333x64x500x900", "causal", DType::bf16}, {"5x4x4x130x130x128x400x420", "full", DType::f16},
      {"3x2x1x64x1000x256x150x1500", "causal", DType::bf16}, {"6x8x2x300x300x128x1000x1000", "causal", DType::bf16},
      {"2x2x2x77x90x192x100x150", "full", DType::bf16}};
  uint64_t seed = 500;
  for (const auto& [shape, layout, t] : shapes) {
    const Problem p = Problem::parse("attention_varlen", shape, layout, t);
    for (const char* name : {"attention_wgmma_varlen", "attention_fa2_varlen", "attention_simple_varlen"}) {
      if (std::string(name) == "attention_wgmma_varlen" && d->arch != "sm_90") continue; // sm_90a only
      const Family f = find_family(name);
      std::vector<Config> cs = f.sample(p, *d, std::string(name) == "attention_simple_varlen" ? 1 : 3, ++seed);
      cs.push_back(f.default_config(p, *d));
      if (std::string(name) == "attention_wgmma_varlen") { // persistent blocks skip the short sequences' tiles
        Config pc = f.default_config(p, *d);
        pc.set("PERSIST", 1 - pc["PERSIST"]);
        cs.push_back(pc);
      }
      for (const Config& c : cs) {
        if (!f.valid(c, p, *d)) continue;
        const VerifyResult v = check_config(*runner, compiler, *d, f, c, p, ++seed);
        EXPECT_TRUE(v.pass) << name << " " << c.to_json() << " " << p.key() << ": " << v.summary();
      }
    }
  }
  const Problem p = Problem::parse("attention_varlen", "4x4x2x200x333x128x500x900", "causal", DType::bf16);
  const Family f = find_family("attention_fa2_varlen");
  const std::string source(embedded_file("attention/attention_fa2.cu"));
  for (const Planted& fault : kVarlenFaults) {
    const auto v = check_planted(*runner, compiler, *d, f, f.default_config(p, *d), p, source, fault);
    ASSERT_TRUE(v) << "planted fault '" << fault.name << "' no longer matches attention_fa2.cu";
    EXPECT_FALSE(v->pass) << fault.name << ": " << v->summary();
  }
  // Served by a runtime with nothing tuned (first use times the families' defaults).
  RuntimeOptions o;
  o.db_path = "";
  Runtime rt(o);
  for (const char* shape : {"3x8x2x700x700x128x1500x1600", "2x4x4x64x64x64x100x64"}) {
    const Problem q = Problem::parse("attention_varlen", shape, "causal", DType::bf16);
    for (Conditions c : {Conditions::as_served, Conditions::as_timed}) {
      runner->prepare(q, ++seed, c);
      runner->run_runtime(rt, nullptr);
      const VerifyResult v = runner->verify(nullptr);
      const Selection s = rt.best_config(q);
      EXPECT_TRUE(v.pass) << q.key() << " " << to_string(c) << " (" << s.family << "): " << v.summary();
    }
  }
}

TEST(AttentionGpu, TunedByTheCliThenServedByTheRuntime) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ktune_attention_gpu_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "k.db").string(), suite = (dir / "suite.json").string();
  std::ofstream(suite) << R"({"name": "attention", "op": "attention", "problems": [
    {"batch": 1, "heads": 8, "kv_heads": 2, "q_len": 1024, "kv_len": 1024, "head_dim": 128, "layout": "causal", "dtype": "bf16"},
    {"batch": 2, "heads": 4, "kv_heads": 4, "q_len": 512, "kv_len": 512, "head_dim": 64, "layout": "full", "dtype": "f16"}]})";
  const auto tuned = ktune::testing::run_ktune("tune --suite " + suite + " --db " + db + " --budget-evals 6");
  ASSERT_EQ(tuned.status, 0) << tuned.out;
  std::cout << tuned.out;
  const auto query = ktune::testing::run_ktune("query --db " + db + " --op attention --dtype bf16 --layout causal --problem 1x8x2x1024x1024x128");
  EXPECT_EQ(query.status, 0) << query.out;
  EXPECT_NE(query.out.find("exact"), std::string::npos) << query.out;

  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner("attention", compiler, *d);
  RuntimeOptions o;
  o.db_path = db;
  Runtime rt(o);
  uint64_t seed = 90;
  // The tuned shapes (exact), one near them (lent), one no fa2 config serves (head_dim 80), and a
  // decode shape nobody tuned (first use times the decode default and its neighbours).
  for (const auto& [shape, layout, t] : std::vector<std::tuple<const char*, const char*, DType>>{
           {"1x8x2x1024x1024x128", "causal", DType::bf16}, {"2x4x4x512x512x64", "full", DType::f16},
           {"1x8x2x1500x1500x128", "causal", DType::bf16}, {"1x2x2x100x100x80", "full", DType::bf16},
           {"2x32x8x1x3000x128", "causal", DType::bf16}}) {
    const Problem p = Problem::parse("attention", shape, layout, t);
    const Selection s = rt.best_config(p);
    for (Conditions c : {Conditions::as_served, Conditions::as_timed}) {
      runner->prepare(p, ++seed, c);
      runner->run_runtime(rt, nullptr);
      const VerifyResult v = runner->verify(nullptr);
      EXPECT_TRUE(v.pass) << p.key() << " " << to_string(c) << " (" << to_string(s.provenance) << " " << s.family
                          << "): " << v.summary();
    }
    // What first use measured (the runtime keeps it): every candidate that ran has its time, and
    // the fastest of them serves.
    const Selection m = rt.best_config(p);
    if (m.measured) {
      const CandidateConfig* fastest = nullptr;
      for (const CandidateConfig& c : m.candidates)
        if (c.measured_ms && (!fastest || *c.measured_ms < *fastest->measured_ms)) fastest = &c;
      ASSERT_NE(fastest, nullptr) << m.why;
      EXPECT_EQ(m.family + " " + m.config.to_json(), fastest->family + " " + fastest->config.to_json()) << m.why;
      // A neighbour of the default (or of a lent config) is named as one, not as the default itself.
      EXPECT_EQ(m.why.find("a neighbour of") != std::string::npos, fastest->neighbour) << m.why;
    }
    std::cout << "[ ktune    ] " << p.key() << ": " << to_string(m.provenance) << " " << m.family << " (" << m.why << ")\n";
  }
  fs::remove_all(dir);
}

// Every planted fault above still matches the text it plants into: a kernel edit that moves one
// fails here, on any machine, not only where a GPU runs the tests that plant it.
TEST(Attention, PlantedFaultsMatchTheirKernelSources) {
  const std::string fa2(embedded_file("attention/attention_fa2.cu")), decode(embedded_file("attention/attention_decode.cu")),
      wgmma(embedded_file("attention/attention_wgmma.cu"));
  auto in = [](const std::string& text, const char* from) { return text.find(from) != std::string::npos; };
  for (const Planted& f : kFaults) EXPECT_TRUE(in(fa2, f.from)) << f.name;
  for (const Planted& f : kVarlenFaults) EXPECT_TRUE(in(fa2, f.from)) << f.name;
  for (const DecodePlanted& f : decode_faults()) EXPECT_TRUE(in(planted_text(f, decode), f.from)) << f.name;
  for (const Planted& f : kWgmmaSplitFaults) EXPECT_TRUE(in(planted_text(f, wgmma), f.from)) << f.name;
  for (const Planted& f : kPagedFaults) EXPECT_TRUE(in(decode, f.from)) << f.name;
  for (const Planted& f : kSmallPageFaults) EXPECT_TRUE(in(decode, f.from)) << f.name;
  // and a fault that matches nothing is told apart
  EXPECT_FALSE(in(fa2, "no kernel has this line") || in(decode, "no kernel has this line"));
}
