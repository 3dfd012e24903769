// The lending rule (db/lending.h) and the runtime's use of it, without a GPU: which tuned entries
// answer exactly, which lend to a problem nobody tuned, that the opt-in table only adds
// candidates, and that the generalization suite is in no shipped table.
#include "db/lending.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "ktune/runtime.h"
#include "tuner/json_io.h"
#include "ktune/gemm_problem.h"

using namespace ktune;

namespace {

TableEntry entry(const std::string& shape, const std::string& family, const std::string& config, double ms,
                 std::optional<double> cublas_ms) {
  TableEntry e;
  e.problem = GemmProblem::parse(shape);
  e.arch = "sm_90";
  e.family = family;
  e.config_json = config;
  e.time_ms = ms;
  e.tflops = tflops(e.problem, ms);
  e.cublas_ms = cublas_ms;
  e.template_hash = "test";
  return e;
}

Table table(std::vector<TableEntry> entries) {
  Table t;
  t.device_name = "test";
  t.arch = "sm_90";
  t.sm_count = 132;
  t.entries = std::move(entries);
  return t;
}

const char* kNaive = R"({"BX": 16, "BY": 8})";
const char* kNaive2 = R"({"BX": 32, "BY": 4})";

std::string source_path(const std::string& rel) { return std::string(KTUNE_SOURCE_DIR) + "/" + rel; }

std::vector<GemmProblem> shapes_of(const std::string& suite) {
  std::vector<GemmProblem> out;
  for (const Problem& p : load_suite(source_path(suite), "NN", DType::f32)) out.push_back(GemmProblem::from(p));
  return out;
}

std::vector<GemmProblem> probe_shapes() {
  std::vector<GemmProblem> out = shapes_of("configs/suites/models.json");
  for (const auto& p : shapes_of("configs/suites/public.json")) out.push_back(p);
  for (const char* s : {"8x4096x4096", "33x4097x4096", "64x1024x1024", "200x4096x200", "3000x3000x3000", "4096x512x512",
                        "100x100x100", "1x1x1", "5000x7000x300", "2x3x40000"})
    out.push_back(GemmProblem::parse(s));
  return out;
}

} // namespace

TEST(Lending, ExactAnswersComeFromTheMostTrustedSourceFastestFirst) {
  TunedIndex idx(DeviceInfo::nominal("sm_90"));
  idx.add(table({entry("256x256x256", "gemm_naive", kNaive, 2.0, 1.0)}), "user", SourceTier::user);
  idx.add(table({entry("256x256x256", "gemm_smem", R"({"TILE": 16})", 0.5, 1.0),
                 entry("512x512x512", "gemm_naive", kNaive2, 1.0, 2.0)}),
          "shipped", SourceTier::shipped);
  const auto ex = idx.exact(GemmProblem::parse("256x256x256"));
  ASSERT_EQ(ex.size(), 1u); // the user's entry, although the shipped one recorded a faster time
  EXPECT_EQ(ex[0].from->source, "user");
  EXPECT_DOUBLE_EQ(ex[0].home_ratio, 0.5);

  TunedIndex two(DeviceInfo::nominal("sm_90"));
  two.add(table({entry("256x256x256", "gemm_naive", kNaive, 2.0, 1.0)}), "a", SourceTier::shipped);
  two.add(table({entry("256x256x256", "gemm_naive", kNaive2, 1.5, 1.0)}), "b", SourceTier::shipped);
  // Same (problem, family) in two sources of one tier: the first added wins.
  ASSERT_EQ(two.exact(GemmProblem::parse("256x256x256")).size(), 1u);
  EXPECT_EQ(two.exact(GemmProblem::parse("256x256x256"))[0].from->source, "a");
}

TEST(Lending, LendersAreRankedByPredictedSpeedupAndCappedPerFamily) {
  TunedIndex idx(DeviceInfo::nominal("sm_90"));
  idx.add(table({entry("256x256x256", "gemm_naive", kNaive, 1.0, 1.0),    // ratio 1.0, near
                 entry("512x512x512", "gemm_naive", kNaive2, 1.0, 4.0),   // ratio 4.0, farther
                 entry("1024x1024x1024", "gemm_naive", kNaive, 1.0, 8.0)}), // same config as the first
          "t", SourceTier::shipped);
  const GemmProblem p = GemmProblem::parse("300x300x300");
  const auto all = idx.lenders(p, 10);
  ASSERT_EQ(all.size(), 2u); // one config lent by two problems is one candidate
  EXPECT_EQ(all[0].from->entry.problem.key(), GemmProblem::parse("1024x1024x1024").key());
  for (size_t i = 1; i < all.size(); ++i) EXPECT_GE(all[i - 1].score, all[i].score);
  for (const auto& l : all) {
    EXPECT_NEAR(l.score, l.home_ratio * std::exp(-kLendDecay * l.distance), 1e-12);
    EXPECT_NEAR(l.distance, log_distance(p, l.from->entry.problem), 1e-12);
  }
  EXPECT_EQ(idx.lenders(p, 1).size(), 1u);
  EXPECT_TRUE(idx.lenders(p, 10, "gemm_simt").empty());
  EXPECT_TRUE(idx.lenders(GemmProblem::parse("256x256x256"), 10).size() == 2u); // not its own exact entry
}

// A family may declare its own decay (Family::lend_decay): gemm_skinny16's decode configs keep
// their speed at far decode shapes (their neighbours refit the grid), so its lenders are scored
// with its slower decay, and other families' with kLendDecay, in one index.
TEST(Lending, AFamilysOwnDecayScoresItsLenders) {
  const Family skinny = find_family("gemm_skinny16");
  ASSERT_TRUE(skinny.lend_decay().has_value());
  EXPECT_LT(*skinny.lend_decay(), kLendDecay);
  EXPECT_FALSE(find_family("gemm_naive").lend_decay().has_value());
  TunedIndex idx(DeviceInfo::nominal("sm_90"));
  TableEntry decode = entry("1x4096x4096", "gemm_skinny16",
                            R"({"MT":8,"NT":256,"KG":4,"VEC":8,"DEPTH":2,"LDH":2,"CL":1,"SPLITK":8,"MINB":2})", 1.0, 1.0);
  decode.problem.dtype = DType::bf16;
  idx.add(table({decode}), "t", SourceTier::shipped);
  GemmProblem far = GemmProblem::parse("4x18944x3584");
  far.dtype = DType::bf16;
  const auto l = idx.lenders(far, 10);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_NEAR(l[0].score, std::exp(-*skinny.lend_decay() * l[0].distance), 1e-12);
  // Measured at first use under the family's decay, not under the default one.
  EXPECT_GE(l[0].score, kMeasureFloor);
  EXPECT_LT(std::exp(-kLendDecay * l[0].distance), kMeasureFloor);
}

// A speedup recorded in another alignment class says how cuBLAS handles that class (cuBLAS bf16
// runs 2999^3 at a seventh of its aligned rate), so it carries over as a neutral 1x: an aligned
// entry at par with cuBLAS outranks an unaligned one recorded 4x ahead at an aligned problem, and the
// unaligned one keeps its lead at problems of its own class. The recorded ratio is still reported.
TEST(Lending, LeadsRecordedInAnotherAlignmentClassCountAsNeutral) {
  TunedIndex idx(DeviceInfo::nominal("sm_90"));
  idx.add(table({entry("1024x1024x1024", "gemm_naive", kNaive, 1.0, 1.0),   // a16, at par
                 entry("1023x1023x1023", "gemm_naive", kNaive2, 1.0, 4.0)}), // a4, 4x ahead
          "t", SourceTier::shipped);
  const GemmProblem aligned = GemmProblem::parse("1000x1000x1000"), odd = GemmProblem::parse("1001x1001x1001");
  ASSERT_NE(aligned.align, odd.align);
  ASSERT_EQ(odd.align, GemmProblem::parse("1023x1023x1023").align);
  const auto at_aligned = idx.lenders(aligned, 10);
  ASSERT_EQ(at_aligned.size(), 2u);
  EXPECT_EQ(at_aligned[0].from->entry.problem.key(), GemmProblem::parse("1024x1024x1024").key());
  const Lent& other = at_aligned[1];
  EXPECT_DOUBLE_EQ(other.home_ratio, 4.0);
  EXPECT_NEAR(other.score, std::exp(-kLendDecay * other.distance), 1e-12);
  EXPECT_NEAR(other.distance, log_distance(aligned, other.from->entry.problem) + kAlignPenalty, 1e-12);
  const auto at_odd = idx.lenders(odd, 10);
  ASSERT_EQ(at_odd.size(), 2u);
  EXPECT_EQ(at_odd[0].from->entry.problem.key(), GemmProblem::parse("1023x1023x1023").key());
  EXPECT_NEAR(at_odd[0].score, 4.0 * std::exp(-kLendDecay * at_odd[0].distance), 1e-12);
}

// bf16 and f16 lend to each other at a small penalty (the same kernels but for conversions); f32
// and the half types never do. An entry of the problem's own dtype at the same shape is exact.
TEST(Lending, HalfTypesLendToEachOtherButNotToF32) {
  const char* tc = R"({"BM":128,"BN":128,"WM":64,"WN":64,"BK":32,"ST":4,"SWZ":8,"SPLITK":1,"PACK":0})";
  auto half_entry = [&](const char* shape, DType t, double ms) {
    TableEntry e = entry(shape, "gemm_tc16", tc, ms, 2 * ms);
    e.problem = GemmProblem::parse(shape, "NN", t);
    e.tflops = tflops(e.problem, ms);
    return e;
  };
  TunedIndex idx(DeviceInfo::nominal("sm_90"));
  std::vector<std::string> skipped;
  idx.add(table({half_entry("4096x4096x4096", DType::bf16, 0.2), entry("4096x4096x4096", "gemm_naive", kNaive, 9.0, 1.0)}), "t",
          SourceTier::shipped, &skipped);
  ASSERT_TRUE(skipped.empty()) << skipped.front();
  const GemmProblem f16 = GemmProblem::parse("4096x4096x4096", "NN", DType::f16);
  EXPECT_TRUE(idx.exact(f16).empty());
  const auto l = idx.lenders(f16, 10);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].from->entry.problem.dtype, DType::bf16);
  EXPECT_NEAR(l[0].distance, kDtypePenalty, 1e-12);
  EXPECT_NEAR(l[0].score, 2.0 * std::exp(-kLendDecay * kDtypePenalty), 1e-12);
  // The bf16 problem itself answers exactly; f32 problems borrow nothing from half entries.
  EXPECT_EQ(idx.exact(GemmProblem::parse("4096x4096x4096", "NN", DType::bf16)).size(), 1u);
  for (const auto& x : idx.lenders(GemmProblem::parse("4000x4000x4000"), 10)) EXPECT_EQ(x.from->entry.family, "gemm_naive");
  EXPECT_FALSE(lends_across(DType::f32, DType::bf16));
  EXPECT_FALSE(lends_across(DType::f16, DType::f32));
  EXPECT_TRUE(lends_across(DType::f16, DType::bf16));
}

TEST(Lending, InvalidEntriesAreSkippedAndReported) {
  TunedIndex idx(DeviceInfo::nominal("sm_90"));
  std::vector<std::string> skipped;
  const size_t added = idx.add(table({entry("256x256x256", "gemm_naive", R"({"BX": 7, "BY": 8})", 1, 1),
                                      entry("256x256x256", "gemm_evil", kNaive, 1, 1),
                                      entry("256x256x256", "gemm_naive", R"({"BX": 16, "BY": 8, "ZZ": 1})", 1, 1),
                                      entry("512x512x512", "gemm_naive", kNaive, 1, 1)}),
                               "bad table", SourceTier::user, &skipped);
  EXPECT_EQ(added, 1u);
  ASSERT_EQ(skipped.size(), 3u);
  for (const auto& s : skipped) EXPECT_NE(s.find("bad table"), std::string::npos) << s;
  EXPECT_NE(skipped[1].find("gemm_evil"), std::string::npos) << skipped[1];
}

TEST(Lending, SkinnyConfigsOfOneBatchServeEveryDecodeBatch) {
  // The shipped table tunes gemm_skinny at M = 1 and 16 only; its configs, with the row tile
  // moved, must serve M = 2..64 (Family::generalized).
  RuntimeOptions o;
  o.arch = "sm_90";
  o.db_path = "";
  Runtime rt(o);
  for (int m : {2, 3, 4, 8, 24, 32, 33, 48, 64}) {
    const GemmProblem p = GemmProblem::parse(std::to_string(m) + "x4096x4096");
    const Selection s = rt.best_config(p);
    ASSERT_FALSE(s.candidates.empty()) << p.key() << ": " << s.why;
    EXPECT_EQ(s.candidates.front().family, "gemm_skinny") << p.key();
    EXPECT_TRUE(s.measure_pending) << p.key();
    EXPECT_EQ(s.provenance, Provenance::nearest);
  }
}

TEST(Lending, Tf32x3TableOnlyAddsCandidates) {
  RuntimeOptions plain_o, opt_o;
  plain_o.arch = opt_o.arch = "sm_90";
  plain_o.db_path = opt_o.db_path = "";
  opt_o.tf32x3 = true;
  const Runtime plain(plain_o), opt(opt_o);
  int added = 0;
  for (const GemmProblem& p : probe_shapes()) {
    const Selection a = plain.best_config(p), b = opt.best_config(p);
    if (a.provenance == Provenance::exact || (a.tuned && !a.measure_pending && a.candidates.empty() && a.time_ms)) {
      // A tuned problem: the choice with the opt-in is at least as fast as recorded without it.
      const double ta = a.provenance == Provenance::cublas ? *a.cublas_ms : *a.time_ms;
      const double tb = b.provenance == Provenance::cublas ? b.cublas_ms.value_or(ta) : b.time_ms.value_or(ta);
      EXPECT_LE(tb, ta * (1 + 1e-9)) << p.key();
      continue;
    }
    // Untuned: every candidate without the opt-in is still a candidate with it, so first use
    // measures at least what it measured before and cannot pick anything slower.
    for (const auto& c : a.candidates) {
      const bool kept = std::any_of(b.candidates.begin(), b.candidates.end(), [&](const CandidateConfig& d) {
        return d.family == c.family && d.config == c.config;
      });
      EXPECT_TRUE(kept) << p.key() << ": " << c.family << " " << c.config.to_json() << " dropped with --tf32x3";
    }
    EXPECT_GE(b.candidates.size(), a.candidates.size()) << p.key();
    added += b.candidates.size() > a.candidates.size();
    // Where nothing is measured, the opt-in cannot turn a cuBLAS answer into a kernel unmeasured.
    if (!b.measure_pending) {
      EXPECT_EQ(b.provenance, Provenance::cublas) << p.key();
    }
  }
  EXPECT_GT(added, 5); // the opt-in table does lend somewhere
}

TEST(Lending, UnmeasuredChoiceNeedsAClearPredictedWin) {
  RuntimeOptions o;
  o.arch = "sm_90";
  o.db_path = "";
  o.tf32x3 = true;
  o.measure_untuned = false;
  const Runtime rt(o);
  for (const GemmProblem& p : probe_shapes()) {
    const Selection s = rt.best_config(p);
    EXPECT_FALSE(s.measure_pending) << p.key();
    EXPECT_FALSE(s.why.empty()) << p.key();
    if (s.provenance == Provenance::nearest) {
      ASSERT_FALSE(s.candidates.empty());
      EXPECT_GE(s.candidates.front().score, kTrustUnmeasured) << p.key();
    }
  }
}

TEST(Lending, GeneralizationSuiteIsInNoShippedTable) {
  const auto models = shapes_of("configs/suites/models.json");
  EXPECT_GE(models.size(), 20u);
  std::set<std::string> tuned;
  for (auto& [t, name] : shipped_tables("sm_90", /*tf32x3=*/true))
    for (const auto& e : t.entries) tuned.insert(e.problem.shape_string());
  int decode = 0, prefill = 0;
  for (const auto& p : models) {
    EXPECT_EQ(tuned.count(p.shape_string()), 0u) << p.key() << " is in a shipped table";
    (p.m <= 64 ? decode : prefill)++;
  }
  EXPECT_GE(decode, 5);
  EXPECT_GE(prefill, 10);
  // The decode generalization suite: decode shapes only, in no shipped table and not in the models
  // suite (whose decode rows the decode family's lending rule was read from).
  std::set<std::string> in_models;
  for (const auto& p : models) in_models.insert(p.shape_string());
  const auto unseen = shapes_of("configs/suites/decode-unseen.json");
  EXPECT_GE(unseen.size(), 10u);
  for (const auto& p : unseen) {
    EXPECT_EQ(tuned.count(p.shape_string()), 0u) << p.key() << " is in a shipped table";
    EXPECT_EQ(in_models.count(p.shape_string()), 0u) << p.key() << " is in the models suite";
    EXPECT_LE(p.m, 64) << p.key();
  }
  // Each problem names its model and layer.
  for (const char* suite : {"configs/suites/models.json", "configs/suites/decode-unseen.json"}) {
    std::ifstream f(source_path(suite));
    const auto j = nlohmann::json::parse(f);
    for (const auto& p : j.at("problems")) {
      EXPECT_FALSE(p.value("model", "").empty()) << suite;
      EXPECT_FALSE(p.value("layer", "").empty()) << suite;
    }
  }
}

TEST(Lending, EveryAnswerSaysWhy) {
  RuntimeOptions o;
  o.arch = "sm_90";
  o.db_path = "";
  o.tf32x3 = true;
  const Runtime rt(o);
  std::set<Provenance> seen;
  for (const GemmProblem& p : probe_shapes()) {
    const Selection s = rt.best_config(p);
    EXPECT_FALSE(s.why.empty()) << p.key();
    seen.insert(s.provenance);
    for (const auto& c : s.candidates) {
      if (!c.neighbour) { // neighbours carry no score
        EXPECT_GE(c.score, kMeasureFloor) << p.key();
      }
    }
  }
  EXPECT_TRUE(seen.count(Provenance::exact) && seen.count(Provenance::cublas) && seen.count(Provenance::nearest));
}

namespace {

// A tuned entry of a causal bf16 attention problem (batch x heads x kv_heads x q_len x kv_len x head_dim).
TableEntry attention_entry(const std::string& shape, const std::string& family, const std::string& config) {
  TableEntry e;
  e.problem = Problem::parse("attention", shape, "causal", DType::bf16);
  e.arch = "sm_90";
  e.family = family;
  e.config_json = config;
  e.time_ms = 0.1;
  e.template_hash = "test";
  return e;
}

} // namespace

// attention_paged lends from attention (OpInfo::lends_from): a decode entry's config serves the
// paged problem of its shape in attention_decode_paged, at the distance of the problem the paged
// one stands for (0 at the same shape, whatever the page size); families without a paged
// counterpart (the prefill ones) lend nothing, and nothing lends the other way.
TEST(Lending, ContiguousDecodeEntriesLendToPagedProblemsOfTheirShape) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  const char* decode = R"({"CHUNK": 4096, "ROWS": 16, "WARPS": 4, "BN": 16, "STAGES": 2})";
  const char* short_chunk = R"({"CHUNK": 1024, "ROWS": 16, "WARPS": 2, "BN": 32, "STAGES": 2})";
  TunedIndex idx(d);
  ASSERT_EQ(idx.add(table({attention_entry("8x16x8x1x8192x256", "attention_decode", decode),
                           attention_entry("8x16x8x1x8192x256", "attention_fa2",
                                           R"({"BM": 64, "BN": 32, "WARPS": 4, "STAGES": 2})"),
                           attention_entry("8x16x8x1x2048x256", "attention_decode", short_chunk)}),
                    "shipped", SourceTier::shipped),
            3u);
  for (const char* paged : {"8x16x8x1x8192x256x64x1100", "8x16x8x1x8192x256x16x4096"}) {
    const Problem p = Problem::parse("attention_paged", paged, "causal", DType::bf16);
    EXPECT_TRUE(idx.exact(p).empty()) << "a contiguous entry is not a measurement of the paged kernel";
    const auto lent = idx.lenders(p, 4);
    ASSERT_EQ(lent.size(), 2u) << paged; // both decode entries, the one of this shape first
    EXPECT_EQ(lent[1].family, "attention_decode_paged");
    EXPECT_EQ(lent[0].family, "attention_decode_paged");
    EXPECT_EQ(lent[0].from->entry.family, "attention_decode");
    // Recorded before CLUSTER and ILV: lent upgraded in the paged family (merged by the combine
    // step, its split taking turns along the keys as every paged split does).
    EXPECT_EQ(lent[0].config,
              Config::from_json(R"({"CHUNK": 4096, "ROWS": 16, "WARPS": 4, "BN": 16, "STAGES": 2, "CLUSTER": 0, "ILV": 1})"));
    EXPECT_EQ(lent[1].config["ILV"], 1);
    EXPECT_DOUBLE_EQ(lent[0].distance, 0.0);
    EXPECT_FALSE(idx.lenders(p, 4, "attention_decode_paged").empty());
    EXPECT_TRUE(idx.lenders(p, 4, "attention_decode").empty());
  }
  // At another capacity the nearer of the two decode entries ranks first, its distance the
  // contiguous problems' own.
  const Problem p = Problem::parse("attention_paged", "8x16x8x1x6144x256x64x800", "causal", DType::bf16);
  const auto lent = idx.lenders(p, 4);
  ASSERT_EQ(lent.size(), 2u);
  EXPECT_EQ(lent[0].from->entry.problem.dims[4], 8192);
  EXPECT_NEAR(lent[0].distance,
              log_distance(Problem::parse("attention", "8x16x8x1x6144x256", "causal", DType::bf16),
                           lent[0].from->entry.problem),
              1e-12);
  EXPECT_GT(lent[1].distance, lent[0].distance);
  // Nothing lends from attention_paged to attention.
  TunedIndex paged(d);
  TableEntry e = attention_entry("8x16x8x1x8192x256", "attention_decode", decode);
  e.problem = Problem::parse("attention_paged", "8x16x8x1x8192x256x64x1100", "causal", DType::bf16);
  e.family = "attention_decode_paged";
  ASSERT_EQ(paged.add(table({e}), "shipped", SourceTier::shipped), 1u);
  // A paged entry recorded with contiguous splits (before ILV, or ILV 0 before the paged family
  // kept only the turns) still answers, its splits taking turns.
  TableEntry contiguous = e;
  contiguous.config_json = R"({"CHUNK": 2048, "ROWS": 16, "WARPS": 4, "BN": 16, "STAGES": 2, "CLUSTER": 0, "ILV": 0})";
  contiguous.problem = Problem::parse("attention_paged", "8x16x8x1x8192x256x16x4200", "causal", DType::bf16);
  ASSERT_EQ(paged.add(table({contiguous}), "old", SourceTier::user), 1u);
  for (const Problem& q : {e.problem, contiguous.problem}) {
    const auto served = paged.exact(q);
    ASSERT_EQ(served.size(), 1u) << q.key();
    EXPECT_EQ(served[0].config["ILV"], 1) << q.key();
  }
  EXPECT_TRUE(paged.lenders(Problem::parse("attention", "8x16x8x1x8192x256", "causal", DType::bf16), 4).empty());
}

// A dimension serve_as derives (OpInfo::derived_dims) does not count in the distance: a paged entry
// recorded at another pool size (before problems were served as their table's pages, or tuned with a
// cache of shared pages) lends at distance 0, and a batch twice as large is as far as it is for
// contiguous attention (not again through the page count it implies).
TEST(Lending, PagedEntriesAtAnotherPoolSizeLendAtDistanceZero) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  TableEntry e = attention_entry("2x32x8x1x1024x128", "attention_decode",
                                 R"({"CHUNK": 128, "ROWS": 16, "WARPS": 4, "BN": 32, "STAGES": 3})");
  e.problem = Problem::parse("attention_paged", "2x32x8x1x1024x128x64x90000", "causal", DType::bf16);
  e.family = "attention_decode_paged";
  TunedIndex idx(d);
  ASSERT_EQ(idx.add(table({e}), "old", SourceTier::user), 1u);
  const Problem served = serving_problem(e.problem);
  ASSERT_EQ(served.dims[7], 32);
  auto lent = idx.lenders(served, 4);
  ASSERT_EQ(lent.size(), 1u);
  EXPECT_DOUBLE_EQ(lent[0].distance, 0.0);
  EXPECT_DOUBLE_EQ(lent[0].score, lent[0].home_ratio);
  const Problem twice = serving_problem(Problem::parse("attention_paged", "4x32x8x1x1024x128x64x90000", "causal", DType::bf16));
  lent = idx.lenders(twice, 4);
  ASSERT_EQ(lent.size(), 1u);
  EXPECT_NEAR(lent[0].distance, std::log(2.0), 1e-12);
  // Varlen's token totals, likewise.
  EXPECT_NEAR(log_distance(Problem::parse("attention_varlen", "4x8x8x512x512x64x2048x2048", "full", DType::bf16),
                           Problem::parse("attention_varlen", "4x8x8x512x512x64x1500x1700", "full", DType::bf16)),
              0.0, 1e-12);
}

// attention_varlen lends from attention: a tuned prefill entry serves the varlen problem whose
// longest sequences are its shape, in the family's _varlen twin, at the dense problems' distance;
// the decode family has no varlen twin and lends nothing.
TEST(Lending, DensePrefillEntriesLendToVarlenProblemsOfTheirLongestSequences) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  const char* wgmma = R"({"CWG": 2, "BN": 112, "STAGES": 2, "OVERLAP": 1, "PINGPONG": 1, "PERSIST": 0})";
  TunedIndex idx(d);
  ASSERT_EQ(idx.add(table({attention_entry("4x32x8x4096x4096x128", "attention_wgmma", wgmma),
                           attention_entry("4x32x8x4x4096x128", "attention_decode",
                                 R"({"CHUNK": 0, "ROWS": 16, "WARPS": 4, "BN": 16, "STAGES": 2})")}),
                    "shipped", SourceTier::shipped),
            2u);
  const Problem p = Problem::parse("attention_varlen", "4x32x8x4096x4096x128x10000x12000", "causal", DType::bf16);
  EXPECT_TRUE(idx.exact(p).empty());
  const auto lent = idx.lenders(p, 4);
  ASSERT_EQ(lent.size(), 1u);
  EXPECT_EQ(lent[0].family, "attention_wgmma_varlen");
  EXPECT_EQ(lent[0].from->entry.family, "attention_wgmma");
  // Recorded without OCC, OSTORE and SPLIT (as older table entries are), lent with OCC 1, OSTORE 0
  // and SPLIT 1.
  Config upgraded = Config::from_json(wgmma);
  upgraded.set("OCC", 1);
  upgraded.set("OSTORE", 0);
  upgraded.set("SPLIT", 1);
  EXPECT_EQ(lent[0].config, upgraded);
  EXPECT_DOUBLE_EQ(lent[0].distance, 0.0);
  // A persistent entry that stores O by TMA (which varlen cannot: a box would run into the next
  // sequence) lends its tiles with O stored from registers.
  const char* tma = R"({"CWG": 2, "BN": 128, "STAGES": 2, "OVERLAP": 1, "PINGPONG": 1, "PERSIST": 1, "OCC": 1, "OSTORE": 1})";
  TunedIndex idx2(d);
  ASSERT_EQ(idx2.add(table({attention_entry("4x32x8x4096x4096x128", "attention_wgmma", tma)}), "shipped",
                     SourceTier::shipped),
            1u);
  const auto lent2 = idx2.lenders(p, 4);
  ASSERT_EQ(lent2.size(), 1u);
  Config stored = Config::from_json(tma);
  stored.set("OSTORE", 0);
  stored.set("SPLIT", 1);
  EXPECT_EQ(lent2[0].config, stored);
  Config tuned = Config::from_json(tma);
  tuned.set("SPLIT", 1);
  EXPECT_EQ(idx2.exact(Problem::parse("attention", "4x32x8x4096x4096x128", "causal", DType::bf16)).at(0).config,
            tuned); // served as tuned where it was tuned
  const Problem longer = Problem::parse("attention_varlen", "4x32x8x8192x8192x128x10000x12000", "causal", DType::bf16);
  ASSERT_EQ(idx.lenders(longer, 4).size(), 1u);
  EXPECT_GT(idx.lenders(longer, 4)[0].distance, 0.0);
}
