// Config selection without a GPU: exact, nearest, default and cuBLAS, over tables and stores.
#include "ktune/runtime.h"

#include <gtest/gtest.h>

#include <functional>

#include <map>
#include <tuple>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "db/lending.h"
#include "db/store.h"
#include "db/table.h"
#include "ktune/error.h"
#include "ktune/device.h"
#include "ktune/family.h"
#include "ktune/gemm_problem.h"

using namespace ktune;

namespace {

const char* kSimt = R"({"BM":64,"BN":64,"WM":32,"WN":32,"TM":4,"TN":4,"BK":8,"VEC":4,"AT":1,"PAD":4,"PIPE":2,"SPLITK":1,"SWZ":1,"EVEN":0})";

std::string tmp(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("ktune-rt-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

TableEntry entry(const std::string& shape, const std::string& cfg, double ms, std::optional<double> cublas, int align = 16,
                 const std::string& layout = "NN") {
  TableEntry e;
  e.problem = GemmProblem::parse(shape, layout);
  e.problem.align = align;
  e.arch = "sm_90";
  e.family = "gemm_simt";
  e.config_json = cfg;
  e.time_ms = ms;
  e.tflops = 1;
  e.cublas_ms = cublas;
  e.template_hash = "h";
  e.gate = kGateVersion;
  return e;
}

std::string write_table(const std::string& name, const std::vector<TableEntry>& entries) {
  Table t;
  t.device_name = "Test GPU";
  t.arch = "sm_90";
  t.sm_count = 132;
  t.entries = entries;
  const std::string path = tmp(name);
  std::ofstream(path) << table_to_json(t);
  return path;
}

Runtime runtime_with(const std::vector<std::string>& tables, const std::string& db = "") {
  RuntimeOptions o;
  o.arch = "sm_90";
  o.tables = tables;
  o.db_path = db;
  o.shipped_tables = false;
  return Runtime(o);
}

// A runtime for sm_90 that reads the shipped tables and no database.
Runtime shipped_only() {
  RuntimeOptions o;
  o.arch = "sm_90";
  o.db_path = "";
  return Runtime(o);
}

std::string with_even(std::string cfg) { return cfg.replace(cfg.find("\"EVEN\":0"), 8, "\"EVEN\":1"); }

} // namespace

TEST(Runtime, ExactNearestDefaultAndCublas) {
  const auto t = write_table("a.json", {entry("1024x1024x1024", kSimt, 1.0, 1.2), entry("4096x4096x4096", kSimt, 3.0, 1.5)});
  Runtime rt = runtime_with({t});
  EXPECT_EQ(rt.entries(), 2u);
  auto s = rt.best_config(GemmProblem::parse("1024x1024x1024"));
  EXPECT_EQ(s.provenance, Provenance::exact);
  EXPECT_EQ(*s.tuned, "gemm/f32/NN/1024x1024x1024/a16");
  EXPECT_DOUBLE_EQ(*s.time_ms, 1.0);
  EXPECT_DOUBLE_EQ(*s.cublas_ms, 1.2);
  EXPECT_FALSE(s.measure_pending);
  // Near a config that beat cuBLAS by 1.2x: a candidate, timed against cuBLAS at first use.
  s = rt.best_config(GemmProblem::parse("1100x900x1000"));
  EXPECT_EQ(s.provenance, Provenance::nearest);
  EXPECT_TRUE(s.measure_pending);
  EXPECT_EQ(*s.tuned, "gemm/f32/NN/1024x1024x1024/a16");
  EXPECT_GT(s.distance, 0);
  ASSERT_EQ(s.candidates.size(), 1u); // one config, lent by two problems
  EXPECT_NEAR(s.candidates[0].score, 1.2 * std::exp(-kLendDecay * s.distance), 1e-9);
  // cuBLAS was faster for the tuned 4096^3: it is dispatched there, and its neighbours have no
  // candidate predicted within reach (0.5x at home).
  EXPECT_EQ(rt.best_config(GemmProblem::parse("4096x4096x4096")).provenance, Provenance::cublas);
  s = rt.best_config(GemmProblem::parse("4000x4000x4000"));
  EXPECT_EQ(s.provenance, Provenance::cublas);
  EXPECT_TRUE(s.candidates.empty());
  EXPECT_NE(s.why.find("cuBLAS"), std::string::npos) << s.why;
  // Another layout: the NN entry lends its tiling, at a penalty of 0.5 per operand stored the
  // other way round, still to be measured.
  s = rt.best_config(GemmProblem::parse("1024x1024x1024", "TN"));
  EXPECT_EQ(s.provenance, Provenance::nearest);
  EXPECT_TRUE(s.measure_pending);
  ASSERT_TRUE(s.tuned);
  EXPECT_EQ(*s.tuned, "gemm/f32/NN/1024x1024x1024/a16");
  EXPECT_NEAR(s.distance, kLayoutPenalty, 1e-12);
  EXPECT_NEAR(rt.best_config(GemmProblem::parse("1024x1024x1024", "TT")).distance, 2 * kLayoutPenalty, 1e-12);
}

// A tuned entry runs only where it beat cuBLAS by measure_margin, the bar first use sets for
// untuned problems: a smaller recorded lead is within the noise of two timings.
TEST(Runtime, ATunedEntryMustBeatCublasByTheMargin) {
  const std::string t = write_table("margin.json", {entry("512x512x512", kSimt, 1.0, 1.02), entry("1024x1024x1024", kSimt, 1.0, 1.05)});
  Runtime rt = runtime_with({t});
  const Selection close = rt.best_config(GemmProblem::parse("512x512x512"));
  EXPECT_EQ(close.provenance, Provenance::cublas);
  EXPECT_NE(close.why.find("not faster than cuBLAS there by the margin"), std::string::npos) << close.why;
  EXPECT_EQ(rt.best_config(GemmProblem::parse("1024x1024x1024")).provenance, Provenance::exact);
  RuntimeOptions o;
  o.arch = "sm_90", o.tables = {t}, o.shipped_tables = false, o.measure_margin = 0.01;
  EXPECT_EQ(Runtime(o).best_config(GemmProblem::parse("512x512x512")).provenance, Provenance::exact);
}

TEST(Runtime, NothingTunedOfADtypeMeansTheFamilyDefaultsAreMeasured) {
  RuntimeOptions o;
  o.arch = "sm_90";
  o.db_path = "";
  o.shipped_tables = false;
  const Runtime rt(o);
  for (const char* l : {"NN", "TN"}) {
    const Selection s = rt.best_config(GemmProblem::parse("1024x1024x1024", l));
    EXPECT_EQ(s.provenance, Provenance::default_config) << l;
    EXPECT_TRUE(s.measure_pending) << l;
    EXPECT_EQ(s.family, "gemm_simt") << l;
    EXPECT_FALSE(s.tuned) << l;
    EXPECT_NE(s.why.find("default"), std::string::npos) << s.why;
  }
}

TEST(Runtime, LendersOfAnotherAlignmentClassPayAPenaltyAndServeInAValidForm) {
  std::string vec1 = kSimt;
  vec1.replace(vec1.find("\"VEC\":4"), 7, "\"VEC\":1");
  const auto t = write_table("b.json", {entry("1024x1024x1024", kSimt, 1.0, 2.0), entry("3000x3000x3001", vec1, 5.0, 6.0, 4)});
  Runtime rt = runtime_with({t});
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  const Family simt = find_family("gemm_simt");
  for (const char* shape : {"1023x1023x1023", "2900x2900x2900", "1000x1000x1000"}) {
    const GemmProblem p = GemmProblem::parse(shape);
    const Selection s = rt.best_config(p);
    ASSERT_FALSE(s.candidates.empty()) << shape;
    for (const auto& c : s.candidates) {
      EXPECT_TRUE(simt.valid(simt.canonical(c.config), p, d)) << shape << " " << c.config.to_json();
      const GemmProblem home = GemmProblem::parse(c.tuned.substr(c.tuned.find("NN/") + 3, c.tuned.rfind('/') - c.tuned.find("NN/") - 3));
      const std::string own_class = std::string("a").append(std::to_string(p.align));
      const bool other_class = c.tuned.substr(c.tuned.rfind('/') + 1) != own_class;
      EXPECT_NEAR(c.distance, log_distance(p, home) + (other_class ? kAlignPenalty : 0.0), 1e-9) << shape << " " << c.tuned;
    }
  }
  // 1023 is in class a4: the a16 1024^3 entry lends its bounds-checked form, VEC within a4 or packed.
  const Selection s = rt.best_config(GemmProblem::parse("1023x1023x1023"));
  EXPECT_EQ(*s.tuned, "gemm/f32/NN/1024x1024x1024/a16");
  EXPECT_TRUE(s.generalized);
}

TEST(Runtime, AnEvenConfigServesOnlyShapesItDividesElseItsGeneralTwin) {
  const auto t = write_table("c.json", {entry("1024x1024x1024", with_even(kSimt), 1.0, 2.0)});
  Runtime rt = runtime_with({t});
  auto s = rt.best_config(GemmProblem::parse("1024x1024x1024"));
  EXPECT_EQ(s.config["EVEN"], 1);
  EXPECT_FALSE(s.generalized);
  s = rt.best_config(GemmProblem::parse("1000x1000x1000")); // 64 does not divide 1000
  EXPECT_EQ(s.provenance, Provenance::nearest);
  EXPECT_EQ(s.config["EVEN"], 0);
  EXPECT_TRUE(s.generalized);
  EXPECT_EQ(rt.best_config(GemmProblem::parse("2048x512x4096")).config["EVEN"], 1);
}

TEST(Runtime, TiesGoToTheSmallerKeyWhateverTheLoadOrder) {
  // 2048 and 512 are equally far from 1024 in log space.
  const auto a = write_table("t1.json", {entry("2048x1024x1024", kSimt, 1.0, 2.0), entry("512x1024x1024", kSimt, 1.0, 2.0)});
  const auto b = write_table("t2.json", {entry("512x1024x1024", kSimt, 1.0, 2.0), entry("2048x1024x1024", kSimt, 1.0, 2.0)});
  const auto p = GemmProblem::parse("1024x1024x1024");
  const auto sa = runtime_with({a}).best_config(p), sb = runtime_with({b}).best_config(p);
  EXPECT_EQ(*sa.tuned, *sb.tuned);
  EXPECT_DOUBLE_EQ(sa.distance, sb.distance);
  EXPECT_EQ(*sa.tuned, "gemm/f32/NN/2048x1024x1024/a16"); // "2048..." < "512..." as strings
}

TEST(Runtime, TheStoreWinsOverTablesAndTablesOverShippedOnes) {
  std::string other = kSimt;
  other.replace(other.find("\"BM\":64"), 7, "\"BM\":32");
  const auto t = write_table("d.json", {entry("1024x1024x1024", other, 1.0, 2.0)});
  const std::string db = tmp("prec.db");
  std::filesystem::remove(db);
  {
    Store s(db);
    Table tab;
    tab.device_name = "Test GPU", tab.arch = "sm_90", tab.sm_count = 132;
    tab.entries = {entry("1024x1024x1024", kSimt, 0.9, 2.0)};
    s.import_table(tab);
  }
  EXPECT_EQ(runtime_with({t}, db).best_config(GemmProblem::parse("1024x1024x1024")).config["BM"], 64);
  EXPECT_EQ(runtime_with({t}).best_config(GemmProblem::parse("1024x1024x1024")).config["BM"], 32);
  RuntimeOptions o;
  o.arch = "sm_90";
  o.tables = {t};
  EXPECT_EQ(Runtime(o).best_config(GemmProblem::parse("1024x1024x1024")).source, "table " + t);
}

// An entry that passed only an older verification gate was never checked as it would be served
// (alpha, beta, least-aligned pointers): neither a table's nor a database's is served; once the
// database's trial is verified again it is.
TEST(Runtime, EntriesOfAnOlderGateAreNotServed) {
  TableEntry old = entry("1024x1024x1024", kSimt, 0.5, 2.0);
  old.gate = 0;
  const auto p = GemmProblem::parse("1024x1024x1024");
  // (Nothing else of f32 is tuned here: the families' defaults are measured at first use instead.)
  EXPECT_EQ(runtime_with({write_table("old.json", {old})}).best_config(p).provenance, Provenance::default_config);
  EXPECT_EQ(runtime_with({write_table("new.json", {entry("1024x1024x1024", kSimt, 0.5, 2.0)})}).best_config(p).provenance,
            Provenance::exact);
  const std::string db = tmp("old-gate.db");
  std::filesystem::remove(db);
  {
    Store s(db);
    Table tab;
    tab.device_name = "Test GPU", tab.arch = "sm_90", tab.sm_count = 132;
    tab.entries = {old};
    s.import_table(tab);
  }
  EXPECT_EQ(runtime_with({}, db).entries(), 0u);
  EXPECT_EQ(runtime_with({}, db).best_config(p).provenance, Provenance::default_config);
  {
    Store s(db);
    Table tab;
    tab.device_name = "Test GPU", tab.arch = "sm_90", tab.sm_count = 132;
    tab.entries = {entry("1024x1024x1024", kSimt, 0.6, 2.0)}; // the same config, verified again
    s.import_table(tab);
  }
  const Selection s = runtime_with({}, db).best_config(p);
  EXPECT_EQ(s.provenance, Provenance::exact);
  EXPECT_DOUBLE_EQ(*s.time_ms, 0.6);
}

TEST(Runtime, TheShippedSm90TableAnswersItsOwnProblems) {
  RuntimeOptions o;
  o.arch = "sm_90";
  Runtime rt(o);
  ASSERT_GE(rt.entries(), 15u);
  for (const char* shape : {"4096x4096x4096", "256x256x256", "16x4096x4096", "2999x2999x2999"}) {
    const auto p = GemmProblem::parse(shape);
    const auto s = rt.best_config(p);
    ASSERT_TRUE(s.tuned) << shape;
    EXPECT_EQ(*s.tuned, p.key());
    EXPECT_EQ(s.source, "shipped table sm_90");
    // exact, unless the table records the kernel no more than the margin ahead of cuBLAS
    EXPECT_EQ(s.provenance, *s.time_ms >= *s.cublas_ms * (1 - o.measure_margin) ? Provenance::cublas : Provenance::exact)
        << shape;
  }
}

TEST(Runtime, TheTf32x3TableIsOptInAndWinsOverThePlainShippedOne) {
  RuntimeOptions o;
  o.arch = "sm_90";
  const auto p = GemmProblem::parse("4096x4096x4096");
  const auto plain = Runtime(o).best_config(p);
  // Off by default: FFMA semantics unless asked, neither 3xTF32 family.
  EXPECT_NE(plain.family, "gemm_tf32x3");
  EXPECT_NE(plain.family, "gemm_wgmma_tf32x3");
  EXPECT_EQ(plain.source, "shipped table sm_90");
  o.tf32x3 = true;
  Runtime rt(o);
  // The H100 table: gemm_wgmma_tf32x3 won the squares, gemm_tf32x3 (mma.sync) the split-K shape.
  for (auto [shape, family] : {std::pair{"4096x4096x4096", "gemm_wgmma_tf32x3"}, std::pair{"2999x2999x2999", "gemm_wgmma_tf32x3"},
                               std::pair{"512x512x32768", "gemm_tf32x3"}}) {
    const auto s = rt.best_config(GemmProblem::parse(shape));
    EXPECT_EQ(s.family, family) << shape;
    EXPECT_EQ(s.source, "shipped table sm_90-tf32x3") << shape;
    EXPECT_EQ(s.provenance, Provenance::exact) << shape;
  }
  // Problems the tf32x3 table has no entry for near them still come from the plain table.
  const auto decode = rt.best_config(GemmProblem::parse("16x4096x4096"));
  EXPECT_EQ(decode.family, "gemm_skinny");
  EXPECT_EQ(decode.source, "shipped table sm_90");
}

TEST(Runtime, RuntimeWithoutArchOrDeviceFailsClearly) {
  RuntimeOptions o;
  if (!list_devices().empty()) GTEST_SKIP() << "this machine has a GPU";
  try {
    Runtime rt(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no GPU"), std::string::npos) << e.what();
  }
}

// An untuned half shape also times the neighbours of its best gemm_wgmma lender (its config retiled
// to fill the shape's waves, unswapped and swapped; the same tiling with multicast, or persistent
// with stream-K): valid for the shape, distinct, after the lenders, at most 7, and without a
// prediction of their own, so they can only win by first use's measurement.
TEST(Runtime, UntunedHalfShapesAlsoTimeTheBestLendersNeighbours) {
  Runtime rt = shipped_only();
  const DeviceInfo dev = DeviceInfo::nominal("sm_90");
  int shapes_with_neighbours = 0;
  for (const char* shape : {"3072x3072x3072", "5000x3000x1000", "2500x8192x1536", "1536x6144x2048"}) {
    const auto p = GemmProblem::parse(shape, "NN", DType::bf16);
    const Selection s = rt.best_config(p);
    ASSERT_FALSE(s.candidates.empty()) << shape << ": " << s.why;
    EXPECT_FALSE(s.candidates.front().neighbour) << shape;
    const CandidateConfig* lender = nullptr;
    int neighbours = 0;
    for (size_t i = 0; i < s.candidates.size(); ++i) {
      const CandidateConfig& c = s.candidates[i];
      if (!c.neighbour) {
        EXPECT_EQ(neighbours, 0) << shape << ": neighbours come after every lender";
        if (!lender && c.family == "gemm_wgmma") lender = &c;
        continue;
      }
      ++neighbours;
      ASSERT_NE(lender, nullptr) << shape;
      const Family f = find_family(c.family);
      EXPECT_EQ(c.family, lender->family) << shape;
      EXPECT_EQ(c.tuned, lender->tuned) << shape;
      EXPECT_TRUE(f.valid(c.config, p, dev)) << shape << " " << c.config.to_json();
      const auto near = f.neighbors_of(lender->config, p, dev);
      EXPECT_NE(std::find(near.begin(), near.end(), c.config), near.end()) << shape << " " << c.config.to_json();
      EXPECT_EQ(c.score, 0) << shape;
      EXPECT_FALSE(c.time_ms) << shape;
      for (size_t j = 0; j < i; ++j)
        EXPECT_FALSE(s.candidates[j].family == c.family && s.candidates[j].config == c.config)
            << shape << ": " << c.config.to_json() << " offered twice";
    }
    EXPECT_LE(neighbours, 9) << shape; // runtime.cpp's kMaxNeighbours
    shapes_with_neighbours += neighbours > 0;
  }
  EXPECT_EQ(shapes_with_neighbours, 4);
  // f32 families declare no neighbours: an untuned f32 shape offers lenders only.
  for (const auto& c : rt.best_config(GemmProblem::parse("3072x3072x3072")).candidates) EXPECT_FALSE(c.neighbour);
}

// At a decode batch both gemm_skinny16 and gemm_wgmma lend, and each family's best lender brings
// its own neighbours: the decode family's streaming forms and wgmma's retiled forms (when the decode
// family alone brought them, 32x6144x4096 lost the swapped wgmma form that ran fastest there). Each
// neighbour belongs to the family of a lender, and no family brings more than kMaxNeighbours (9).
TEST(Runtime, DecodeShapesTimeTheNeighboursOfEveryLendingFamily) {
  Runtime rt = shipped_only();
  const auto p = GemmProblem::parse("32x6144x4096", "NN", DType::bf16);
  const Selection s = rt.best_config(p);
  std::map<std::string, int> lenders, neighbours;
  for (const auto& c : s.candidates) (c.neighbour ? neighbours : lenders)[c.family]++;
  EXPECT_GT(lenders["gemm_skinny16"], 0) << s.why;
  EXPECT_GT(lenders["gemm_wgmma"], 0) << s.why;
  EXPECT_GT(neighbours["gemm_skinny16"], 0) << s.why;
  EXPECT_GT(neighbours["gemm_wgmma"], 0) << s.why;
  for (const auto& [family, n] : neighbours) {
    EXPECT_GT(lenders[family], 0) << family;
    EXPECT_LE(n, 9) << family;
  }
}

// An attention shape nobody tuned also times the neighbours (Family::neighbors_of) of its family's
// default, then of its lender: valid, distinct, after every lender and default, at most
// kMaxNeighbours (9), without a prediction of their own. Decode contiguous (Phi-2's padded head dim,
// a table entry lends; MQA with splits) and paged, and attention_wgmma's prefill.
TEST(Runtime, UntunedAttentionShapesTimeTheDefaultsNeighbours) {
  Runtime rt = shipped_only();
  const DeviceInfo dev = DeviceInfo::nominal("sm_90");
  for (const auto& [op, shape, layout, family, fewest] :
       std::vector<std::tuple<const char*, const char*, const char*, const char*, int>>{
           {"attention", "8x32x32x1x2048x80", "causal", "attention_decode", 4},
           {"attention", "3x48x1x1x8192x64", "causal", "attention_decode", 4},
           {"attention_paged", "2x40x8x1x4096x128x64x128", "causal", "attention_decode_paged", 4},
           // prefill (attention_wgmma): a prompt of 1000 tokens, a chunk over a cache (split),
           // T5's cross-attention at head dim 64 (three consumers against two)
           {"attention", "1x32x8x1000x1000x128", "causal", "attention_wgmma", 3},
           {"attention", "1x32x8x128x8192x128", "causal", "attention_wgmma", 3},
           {"attention", "16x12x12x128x512x64", "full", "attention_wgmma", 4}}) {
    const Problem p = Problem::parse(op, shape, layout, DType::bf16);
    const Selection s = rt.best_config(p);
    const Family f = find_family(family);
    const Config dflt = f.default_config(p, dev);
    // Candidates hold canonical configs (the family's parameter order).
    const auto canonical_neighbours = [&](const Config& src) {
      std::vector<Config> near;
      for (const Config& x : f.neighbors_of(src, p, dev)) near.push_back(f.canonical(x));
      return near;
    };
    const auto near_default = canonical_neighbours(dflt);
    std::vector<Config> sources; // the family's default and lenders, in the order offered
    int neighbours = 0;
    for (size_t i = 0; i < s.candidates.size(); ++i) {
      const CandidateConfig& c = s.candidates[i];
      for (size_t j = 0; j < i; ++j)
        EXPECT_FALSE(s.candidates[j].family == c.family && s.candidates[j].config == c.config)
            << shape << ": " << c.config.to_json() << " offered twice";
      if (c.family != family) continue;
      if (!c.neighbour) {
        EXPECT_EQ(neighbours, 0) << shape << ": neighbours come after every lender and default";
        sources.push_back(c.config);
        continue;
      }
      EXPECT_TRUE(f.valid(c.config, p, dev)) << shape << " " << c.config.to_json();
      EXPECT_EQ(c.score, 0) << shape;
      EXPECT_FALSE(c.time_ms) << shape;
      bool of_a_source = false;
      for (const Config& src : sources) {
        const auto near = canonical_neighbours(src);
        of_a_source |= std::find(near.begin(), near.end(), c.config) != near.end();
      }
      EXPECT_TRUE(of_a_source) << shape << " " << c.config.to_json();
      // The default's own first: the first neighbour offered is one of the default's.
      if (neighbours == 0)
        EXPECT_NE(std::find(near_default.begin(), near_default.end(), c.config), near_default.end())
            << shape << " " << c.config.to_json();
      ++neighbours;
    }
    EXPECT_NE(std::find(sources.begin(), sources.end(), f.canonical(dflt)), sources.end()) << shape << ": " << s.why;
    EXPECT_GE(neighbours, fewest) << shape << ": " << s.why;
    EXPECT_LE(neighbours, 9) << shape;
    EXPECT_TRUE(s.measure_pending) << shape;
  }
}

// RuntimeOptions::time_neighbours off: an untuned shape's first use offers the same lenders and
// defaults, in the same order, and no neighbour (GEMM's half shapes and attention's alike).
TEST(Runtime, NeighboursOffLeavesTheLendersAndDefaults) {
  Runtime with = shipped_only();
  RuntimeOptions o;
  o.arch = "sm_90";
  o.cubin_cache = "";
  o.time_neighbours = false;
  Runtime without(o);
  auto compare = [](const Selection& a, const Selection& b, const std::string& what) {
    std::vector<std::string> kept, offered;
    for (const auto& c : a.candidates)
      if (!c.neighbour) kept.push_back(c.family + c.config.to_json());
    for (const auto& c : b.candidates) {
      EXPECT_FALSE(c.neighbour) << what << " " << c.config.to_json();
      offered.push_back(c.family + c.config.to_json());
    }
    EXPECT_GT(a.candidates.size(), kept.size()) << what << ": the default runtime offers neighbours";
    EXPECT_EQ(offered, kept) << what;
  };
  compare(with.best_config(GemmProblem::parse("3072x3072x3072", "NN", DType::bf16)),
          without.best_config(GemmProblem::parse("3072x3072x3072", "NN", DType::bf16)), "gemm 3072^3 bf16");
  for (const char* shape : {"1x32x8x1000x1000x128", "8x32x32x1x2048x80"}) {
    const Problem p = Problem::parse("attention", shape, "causal", DType::bf16);
    compare(with.best_config(p), without.best_config(p), shape);
  }
}

TEST(Runtime, HalfProblemsAreServedAndTf32IsRefusedClearly) {
  Runtime rt = shipped_only();
  // bf16 and f16 have answers (a tuned entry, candidates, or cuBLAS), never an error.
  for (DType t : {DType::bf16, DType::f16}) {
    for (const char* shape : {"1024x1024x1024", "2999x2999x2999", "1x4096x4096"}) {
      const Selection s = rt.best_config(GemmProblem::parse(shape, "NN", t));
      EXPECT_FALSE(s.why.empty()) << shape;
      for (const auto& c : s.candidates) {
        const Family f = find_family(c.family);
        EXPECT_TRUE(std::find(f.dtypes().begin(), f.dtypes().end(), t) != f.dtypes().end()) << c.family << " for " << shape;
      }
    }
  }
  // tf32 is a compute mode, not a storage type.
  try {
    rt.best_config(GemmProblem::parse("1024x1024x1024", "NN", DType::tf32));
    ADD_FAILURE() << "no error for tf32";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("not a storage type"), std::string::npos) << e.what();
  }
  // gemm() takes float pointers: it refuses another dtype before anything else, the quick
  // returns (alpha == 0, K == 0) included, and points to gemm_ex.
  for (float alpha : {1.0f, 0.0f}) {
    try {
      rt.gemm(GemmProblem::parse("64x64x64", "NN", DType::bf16), nullptr, nullptr, nullptr, alpha, 0.0f);
      ADD_FAILURE() << "no error for bf16 through gemm()";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("gemm_ex"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(rt.gemm_ex(GemmProblem::parse("64x64x64", "NN", DType::tf32), nullptr, nullptr, nullptr, 1.0f, 0.0f), UsageError);
}

// Call handles check their problem once, when made, and name what is wrong; made by a runtime
// without a GPU (an arch given) they exist, and a call says there is no GPU instead of launching.
TEST(Runtime, CallHandlesRefuseBadProblemsWhenMadeAndNeedAGpuToRun) {
  Runtime rt = shipped_only();
  auto refused = [](const std::function<void()>& make, const std::string& word) {
    try {
      make();
      ADD_FAILURE() << "accepted; expected an error naming " << word;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
    }
  };
  GemmProblem short_lda = GemmProblem::make(64, 64, 64);
  short_lda.lda = 32;
  refused([&] { rt.gemm_call(short_lda); }, "lda");
  refused([&] { rt.gemm_call(GemmProblem::parse("64x64x64", "NN", DType::tf32)); }, "not a storage type");
  refused([&] { rt.gemm_call(GemmProblem::make(-1, 64, 64)); }, "M and N");
  Problem rows = Problem::parse("softmax", "8x100");
  rows.ld = {50, 100};
  refused([&] { rt.rows_call(rows); }, "ldx");
  refused([&] { rt.rows_call(GemmProblem::make(64, 64, 64)); }, "is a GEMM");

  const auto g = rt.gemm_call(GemmProblem::parse("64x64x64", "NN", DType::bf16));
  EXPECT_EQ(g->problem().key(), "gemm/bf16/NN/64x64x64/a16");
  int word = 0;
  try {
    (*g)(&word, &word, &word, 1.0f, 0.0f);
    ADD_FAILURE() << "a call ran without a GPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("without a GPU"), std::string::npos) << e.what();
  }
  const auto r = rt.rows_call(Problem::parse("rmsnorm", "8x100"));
  EXPECT_EQ(r->problem().key(), "rmsnorm/f32/8x100/a16");
  EXPECT_THROW((*r)(&word, &word, nullptr, nullptr), Error);
  // An empty problem computes nothing, as rows() takes it: no GPU needed.
  Problem none = Problem::make("softmax", {0, 100}, "", DType::f32);
  none.ld = {100, 100};
  const auto empty = rt.rows_call(none);
  EXPECT_NO_THROW((*empty)(nullptr, nullptr, nullptr, nullptr));
}
