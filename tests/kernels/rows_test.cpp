// The row ops (softmax, LayerNorm, RMSNorm) without a GPU: problems and keys, tables that hold
// them, the spaces of their families, and every kind of row kernel compiled by NVRTC for sm_90.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "db/table.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "ktune/runtime.h"
#include "tuner/compile_all.h"
#include "tuner/rows_op.h"

using namespace ktune;

namespace {

const char* kOps[] = {"softmax", "layernorm", "rmsnorm"};

std::vector<Family> families_of(const std::string& op) {
  std::vector<Family> out;
  for (auto& f : builtin_families())
    if (f.op() == op) out.push_back(std::move(f));
  return out;
}

} // namespace

TEST(RowsOp, ProblemsNameRowsAndColsAndRoundTripTheirKeys) {
  const Problem p = Problem::parse("softmax", "4096x32000", "", DType::bf16);
  EXPECT_EQ(p.key(), "softmax/bf16/4096x32000/a16");
  EXPECT_EQ(p.dim("rows"), 4096);
  EXPECT_EQ(p.dim("cols"), 32000);
  EXPECT_EQ(Problem::parse_key(p.key()), p);
  EXPECT_EQ(Problem::parse("rmsnorm", "7x4095", "", DType::f16).key(), "rmsnorm/f16/7x4095/a2");
  EXPECT_DOUBLE_EQ(min_bytes(Problem::parse("layernorm", "10x100", "", DType::f32)), 4.0 * (2 * 10 * 100 + 2 * 100));
  EXPECT_DOUBLE_EQ(Problem::parse("softmax", "2x8").scalar("scale"), 1.0);
  EXPECT_DOUBLE_EQ(Problem::parse("layernorm", "2x8").scalar("eps"), 1e-5);
  EXPECT_THROW(Problem::parse("softmax", "4096x32000x1"), UsageError);
  EXPECT_THROW(Problem::parse("softmax", "0x8"), UsageError);
  EXPECT_THROW(Problem::parse("softmax", "8x8", "NN"), UsageError); // row ops have no layouts
  EXPECT_THROW(Problem::parse("softmax", "8x8", "", DType::tf32), UsageError);
}

TEST(RowsOp, TablesHoldRowProblemsUnderTheirOwnDimensionNames) {
  Table t;
  t.device_name = "NVIDIA H100 80GB HBM3", t.arch = "sm_90", t.sm_count = 132;
  TableEntry e;
  e.problem = Problem::parse("rmsnorm", "16x2048", "", DType::bf16);
  e.arch = "sm_90", e.family = "rmsnorm_warp", e.config_json = R"({"VEC": 8, "CHUNKS": 8, "WARPS": 4})";
  e.template_hash = "x", e.time_ms = 0.01, e.tflops = 0.1;
  t.entries.push_back(e);
  const std::string json = table_to_json(t);
  EXPECT_NE(json.find("\"rows\": 16"), std::string::npos) << json;
  EXPECT_EQ(json.find("\"m\""), std::string::npos) << json;
  const Table back = parse_table(json, "test");
  ASSERT_EQ(back.entries.size(), 1u);
  EXPECT_EQ(back.entries[0].problem.key(), e.problem.key());
  EXPECT_EQ(invalid_reason(back.entries[0]), "");
  // A config that breaks a constraint for its problem is refused with the constraint's name.
  TableEntry bad = back.entries[0];
  bad.config_json = R"({"VEC": 8, "CHUNKS": 1, "WARPS": 4})"; // 256 columns a warp < 2048
  EXPECT_NE(invalid_reason(bad).find("the row fits the warp's registers"), std::string::npos) << invalid_reason(bad);
}

TEST(RowsOp, EveryOpHasFiveFamiliesAndADefaultForEveryShape) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  for (const char* op : kOps) {
    const auto fams = families_of(op);
    std::set<std::string> names;
    for (const auto& f : fams) names.insert(f.name());
    EXPECT_EQ(names, (std::set<std::string>{std::string(op) + "_warp", std::string(op) + "_block", std::string(op) + "_stream",
                                            std::string(op) + "_cluster", std::string(op) + "_bulk"}));
    // ktune tune without --family searches all of them.
    const auto tuned = tuning_family_names(false);
    for (const auto& n : names) EXPECT_NE(std::find(tuned.begin(), tuned.end(), n), tuned.end()) << n;
    for (DType dt : {DType::f32, DType::bf16, DType::f16})
      for (const char* shape : {"1x1", "1x768", "3x4095", "4096x4096", "16384x8192", "8x32000", "2x128256", "5x1000001"}) {
        const Problem p = Problem::parse(op, shape, "", dt);
        const Family& stream = *std::find_if(fams.begin(), fams.end(), [&](const Family& f) { return f.name() == std::string(op) + "_stream"; });
        const Config c = stream.default_config(p, d);
        EXPECT_TRUE(stream.valid(c, p, d)) << p.key() << " " << c.to_json();
        uint64_t n = 0;
        for (const auto& f : fams) n += f.count(p, d);
        EXPECT_GT(n, 1u) << p.key();
        // No GEMM family serves a row problem, and no row family a GEMM one.
        EXPECT_EQ(find_family("gemm_simt").count(p, d), 0u);
      }
  }
}

TEST(RowsOp, FamilyDefaultsAreValidWhereTheFamilyCanHoldTheRow) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  for (const char* op : kOps)
    for (DType dt : {DType::f32, DType::bf16, DType::f16})
      for (const char* shape : {"1x1", "7x100", "64x768", "3x1001", "8192x2048", "16x3072", "4096x4099", "16x8192", "8x16384",
                                "8x32000", "2x50257", "2x128256", "2x256000"}) {
        const Problem p = Problem::parse(op, shape, "", dt);
        for (const char* kind : {"_warp", "_block", "_bulk"}) {
          const Family f = find_family(std::string(op) + kind);
          ASSERT_TRUE(f.has_default()) << f.name();
          const Config c = f.default_config(p, d);
          const int64_t cols = p.dims[1], bytes = cols * element_bytes(dt);
          // Where the row fits what the family can hold, its default serves it: a warp holds 2048
          // columns at any vector width (64 floats a lane), a block of 1024 threads 16384, and the
          // bulk kernel any row of whole 16-byte granules from about 2 KB (a 16-byte vector for each
          // of 128 threads) up to 16 CTAs of its shared memory.
          const std::string k = kind;
          // softmax's bulk kernel also takes rows that start inside a line (no weight vectors).
          const bool lines = bytes % 16 == 0 || std::string(op) == "softmax";
          const bool holds = k == "_warp" ? cols <= 2048 : k == "_block" ? cols <= 16384 : lines && bytes >= 1600 && bytes <= 16LL * 200 * 1024;
          EXPECT_EQ(f.valid(c, p, d), holds) << f.name() << " " << p.key() << " " << c.to_json() << ": "
                                             << (f.violations(c, p, d).empty() ? "" : f.violations(c, p, d).front());
          // ... and launches: a block per row, or per WARPS rows, or per slice of CL.
          if (holds) {
            EXPECT_GE(f.launch_plan(c, p).steps.at(0).grid[0], 1u) << f.name() << " " << p.key();
          }
        }
      }
}

TEST(RowsOp, CachedFamiliesServeTheRowLengthsTheyAreFor) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  const Family warp = find_family("softmax_warp"), block = find_family("softmax_block"), cluster = find_family("softmax_cluster");
  EXPECT_GT(warp.count(Problem::parse("softmax", "64x1024", "", DType::bf16), d), 0u);
  EXPECT_EQ(warp.count(Problem::parse("softmax", "64x8192", "", DType::f32), d), 0u); // 8192 floats exceed a warp's budget
  EXPECT_GT(block.count(Problem::parse("softmax", "64x8192", "", DType::f32), d), 0u);
  EXPECT_EQ(block.count(Problem::parse("softmax", "64x128256", "", DType::f32), d), 0u);
  EXPECT_GT(cluster.count(Problem::parse("softmax", "64x128256", "", DType::f32), d), 0u);
  EXPECT_EQ(cluster.count(Problem::parse("softmax", "64x128256", "", DType::f32), DeviceInfo::nominal("sm_80")), 0u);
  EXPECT_EQ(cluster.count(Problem::parse("softmax", "64x1024", "", DType::bf16), d), 0u);
  // Bulk copies: any row length whose slices fit shared memory (a 513 KB f32 vocab row needs a
  // cluster: no CL = 1 config), sm_90 only.
  const Family bulk = find_family("softmax_bulk");
  const Problem vocab = Problem::parse("softmax", "64x128256", "", DType::f32);
  EXPECT_GT(bulk.count(vocab, d), 0u);
  for (const Config& c : bulk.sample(vocab, d, 50, 7)) EXPECT_GE(c["CL"], 4) << c.to_json();
  EXPECT_GT(bulk.count(Problem::parse("softmax", "4096x32000", "", DType::bf16), d), 0u);
  // Rows that do not start on 16-byte lines (2002-byte rows): softmax's bulk kernel copies their
  // ragged ends element by element, with 16-byte shared-memory vectors whatever x's alignment, and
  // never stores through bulk copies there; the norms, which read weight vectors at the row's
  // columns, keep to whole lines.
  const Problem odd = Problem::parse("softmax", "64x1001", "", DType::bf16);
  EXPECT_GT(bulk.count(odd, d), 0u);
  for (const Config& c : bulk.sample(odd, d, 200, 3)) EXPECT_EQ(c["STORE"], 0) << c.to_json();
  Config v8 = bulk.default_config(odd, d);
  EXPECT_EQ(v8["VEC"], 8);
  EXPECT_TRUE(bulk.valid(v8, odd, d)) << v8.to_json();
  // Its buffer is 16 bytes longer than the slice (a slice may begin 15 bytes into its line).
  EXPECT_EQ(bulk.launch_plan(v8, odd).steps[0].dynamic_smem, 2048u + 16u);
  EXPECT_EQ(bulk.launch_plan(v8, Problem::parse("softmax", "64x1024", "", DType::bf16)).steps[0].dynamic_smem, 2048u);
  EXPECT_EQ(find_family("layernorm_bulk").count(Problem::parse("layernorm", "64x1001", "", DType::bf16), d), 0u);
  EXPECT_EQ(find_family("rmsnorm_bulk").count(Problem::parse("rmsnorm", "64x4099", "", DType::f32), d), 0u);
  EXPECT_EQ(bulk.count(vocab, DeviceInfo::nominal("sm_80")), 0u);
  // Several rows a cluster: a second buffer only when a next row can use it, both buffers in
  // shared memory, never more rows a cluster than the problem has; configs recorded before RPC
  // and STAGES mean one row, one buffer.
  const Problem few = Problem::parse("softmax", "3x32000", "", DType::bf16);
  const Config two{{"VEC", 8}, {"THREADS", 256}, {"CL", 1}, {"PIECES", 2}, {"RPC", 2}, {"STAGES", 2}, {"STORE", 1}, {"LB", 0}};
  EXPECT_TRUE(bulk.violations(two, few, d).empty());
  Config c = two;
  c.set("RPC", 1);
  EXPECT_FALSE(bulk.violations(c, few, d).empty()); // two buffers, one row
  c.set("RPC", 4);
  EXPECT_FALSE(bulk.violations(c, few, d).empty()); // 4 rows a cluster, 3 rows
  EXPECT_FALSE(bulk.violations(two, Problem::parse("softmax", "64x128256", "", DType::bf16), d).empty()); // 2 x 256 KB
  const Config old_cfg{{"VEC", 8}, {"THREADS", 256}, {"CL", 1}, {"PIECES", 2}};
  const Config up = bulk.canonical(old_cfg);
  EXPECT_EQ(up["RPC"], 1);
  EXPECT_EQ(up["STAGES"], 1);
  EXPECT_EQ(up["STORE"], 0);
  EXPECT_EQ(up["LB"], 0);
  Config lb = two;
  lb.set("LB", 1);
  EXPECT_FALSE(bulk.violations(lb, few, d).empty()); // a cluster policy without a cluster
  lb.set("CL", 2);
  EXPECT_TRUE(bulk.violations(lb, few, d).empty());
  EXPECT_TRUE(bulk.launch_plan(lb, few).steps[0].balance_clusters);
  EXPECT_FALSE(bulk.launch_plan(two, few).steps[0].balance_clusters);
  Problem padded_y = Problem::parse("softmax", "3x32000", "", DType::bf16);
  padded_y.ld = {32000, 32004}; // 8-byte rows of y: no bulk stores
  padded_y.align = Problem::alignment_of(padded_y.ld, 2);
  EXPECT_FALSE(bulk.violations(two, padded_y, d).empty());
  EXPECT_EQ(bulk.launch_plan(two, Problem::parse("softmax", "5x32000", "", DType::bf16)).steps[0].grid[0], 3u);
  EXPECT_EQ(bulk.launch_plan(two, Problem::parse("softmax", "5x32000", "", DType::bf16)).steps[0].dynamic_smem, 2u * 64000u);
}

// Rows not made of whole vectors (an odd number of 16-bit columns: no row after the first starts
// on a 16-byte line) of 4 KB and more take full 16-byte vectors in rows_warp's and rows_block's
// SHIFT form, which loads the aligned vectors over the row and handles its ragged ends apart;
// shorter ones keep VEC 1 by default; rows of whole vectors keep the plain form (the same kernels
// as before it existed).
TEST(RowsOp, CachedFamiliesTakeFullVectorsOnRowsOffTheirLines) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  for (const char* op : kOps)
    for (const char* kind : {"_warp", "_block"}) {
      const Family f = find_family(std::string(op) + kind);
      // The defaults keep VEC 1 on odd rows under 4 KB (below); these are 8 KB in bf16 (rows_block)
      // and 6 KB in f32 (rows_warp, whose registers hold 2048 columns at most).
      const bool block = std::string(kind) == "_block";
      const DType dt = block ? DType::bf16 : DType::f32;
      const Problem odd = Problem::parse(op, block ? "3000x4099" : "3000x1501", "", dt),
                    even = Problem::parse(op, block ? "3000x4096" : "3000x1536", "", dt);
      const Config c = f.default_config(odd, d);
      EXPECT_EQ(c["VEC"], 16 / element_bytes(dt)) << f.name();
      ASSERT_TRUE(f.valid(c, odd, d)) << f.name() << " " << c.to_json();
      const std::string shifted = f.kernel_names(c, odd).at(0), plain = f.kernel_names(f.default_config(even, d), even).at(0);
      EXPECT_EQ(shifted.substr(shifted.size() - 3), ",1>") << shifted;
      EXPECT_EQ(plain.substr(plain.size() - 3), ",0>") << plain;
      // The SHIFT form's chunks cover the row plus the first vector's offset (up to 7 columns):
      // 1018..1023 columns need a fifth chunk of 32 x 8 where whole vectors would not.
      if (std::string(kind) == "_warp") {
        const Config four{{"VEC", 8}, {"CHUNKS", 4}, {"WARPS", 4}};
        EXPECT_TRUE(f.valid(four, Problem::parse(op, "64x1017", "", DType::bf16), d));
        EXPECT_FALSE(f.valid(four, Problem::parse(op, "64x1018", "", DType::bf16), d));
        EXPECT_TRUE(f.valid(four, Problem::parse(op, "64x1024", "", DType::bf16), d)); // whole vectors
      }
      // Short odd rows (under 4 KB): the plain VEC 1 form; rows_block with about 8 columns a thread
      // (LayerNorm 3000x1001: 128 threads of 8, the sweep's best).
      const Problem short_odd = Problem::parse(op, "3000x1001", "", DType::bf16);
      const Config s = f.default_config(short_odd, d);
      EXPECT_EQ(s["VEC"], 1) << f.name();
      EXPECT_TRUE(f.valid(s, short_odd, d)) << f.name();
      if (block) {
        EXPECT_EQ(s["THREADS"], 128) << op;
        EXPECT_EQ(s["CHUNKS"], 8) << op;
      }
    }
}

// Each row op declares its runner, its weight/bias vectors and its FP64 reference in its own file
// (kernel_templates/<op>/<op>.cpp); the references follow PyTorch's semantics.
TEST(RowsOp, EachOpDeclaresItsRunnerVectorsAndReference) {
  EXPECT_EQ(op_info("gemm").runner, "gemm");
  const std::map<std::string, int> vectors = {{"softmax", 0}, {"layernorm", 2}, {"rmsnorm", 1}};
  for (const auto& [op, n] : vectors) {
    EXPECT_EQ(op_info(op).runner, "rows") << op;
    EXPECT_EQ(op_info(op).row_vectors, n) << op;
    ASSERT_TRUE(op_info(op).reference_row) << op;
  }
  auto run = [](const char* op, std::vector<double> x, const std::vector<double>* w, const std::vector<double>* b,
                std::pair<const char*, double> scalar) {
    Problem p = Problem::parse(op, "1x" + std::to_string(x.size()), "", DType::f32);
    p.scalars[scalar.first] = scalar.second;
    std::vector<double> y(x.size());
    op_info(op).reference_row(p, x.data(), w ? w->data() : nullptr, b ? b->data() : nullptr, y.data());
    return y;
  };
  // softmax(scale * x): [0, ln 2] -> [1/3, 2/3]; scale 2 on [0, ln 2 / 2] the same.
  for (auto [x1, scale] : {std::pair{std::log(2.0), 1.0}, std::pair{std::log(2.0) / 2, 2.0}}) {
    const auto y = run("softmax", {0.0, x1}, nullptr, nullptr, {"scale", scale});
    EXPECT_NEAR(y[0], 1.0 / 3, 1e-15);
    EXPECT_NEAR(y[1], 2.0 / 3, 1e-15);
  }
  // LayerNorm of [1, 3] (mean 2, biased variance 1): [-1, 1], then * w + b.
  const std::vector<double> w = {2.0, 0.5}, b = {1.0, -1.0};
  auto ln = run("layernorm", {1.0, 3.0}, nullptr, nullptr, {"eps", 0.0});
  EXPECT_NEAR(ln[0], -1.0, 1e-15);
  EXPECT_NEAR(ln[1], 1.0, 1e-15);
  ln = run("layernorm", {1.0, 3.0}, &w, &b, {"eps", 0.0});
  EXPECT_NEAR(ln[0], -1.0, 1e-15);
  EXPECT_NEAR(ln[1], -0.5, 1e-15);
  // RMSNorm of [3, 4]: mean square 12.5, eps added under the root, then * w.
  const auto rms = run("rmsnorm", {3.0, 4.0}, &w, nullptr, {"eps", 0.5});
  EXPECT_NEAR(rms[0], 3.0 / std::sqrt(13.0) * 2.0, 1e-15);
  EXPECT_NEAR(rms[1], 4.0 / std::sqrt(13.0) * 0.5, 1e-15);
}

TEST(RowsOp, ToleranceIsTheOutputRoundingPlusFp32Math) {
  EXPECT_DOUBLE_EQ(rows_tolerance(DType::f32), 1e-5);
  EXPECT_DOUBLE_EQ(rows_tolerance(DType::bf16), 1.0 / 256 + 1e-5);
  EXPECT_DOUBLE_EQ(rows_tolerance(DType::f16), 1.0 / 2048 + 1e-5);
  EXPECT_DOUBLE_EQ(rows_subnormal_half_spacing(DType::f16), std::ldexp(1.0, -25)); // f16 subnormals are 2^-24 apart
}

// NVRTC for sm_90: a sample of every row family's configs for each op and dtype.
TEST(RowsCompile, SampledConfigsOfEveryRowFamilyCompile) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  for (const char* op : kOps)
    for (const auto& f : families_of(op)) {
      std::vector<std::pair<Config, Problem>> cases;
      uint64_t seed = 1;
      for (DType dt : {DType::f32, DType::bf16, DType::f16})
        for (const char* shape : {"33x1000", "8x4096", "4x131072", "5x50257", "7x1001"}) {
          const Problem p = Problem::parse(op, shape, "", dt);
          for (const Config& c : f.sample(p, d, 2, seed++)) cases.emplace_back(c, p);
        }
      if (f.name() == std::string(op) + "_bulk") // several rows a cluster, two buffers
        cases.emplace_back(Config{{"VEC", 4}, {"THREADS", 256}, {"CL", 4}, {"PIECES", 2}, {"RPC", 4}, {"STAGES", 2}, {"STORE", 1}, {"LB", 1}},
                           Problem::parse(op, "33x16384", "", DType::f32));
      ASSERT_FALSE(cases.empty()) << f.name();
      ktune::testing::compile_all(f, cases, "sm_90");
    }
}

// The runtime's choice for a row problem without a GPU: the shipped table's exact entry, the
// nearest entry that serves another shape, a family default when no table is read.
TEST(RowsOp, RuntimeChoosesExactNearestOrDefault) {
  RuntimeOptions o;
  o.arch = "sm_90";
  o.db_path = "";
  const Runtime rt(o);
  const Selection exact = rt.best_config(Problem::parse("rmsnorm", "4096x4096", "", DType::bf16));
  EXPECT_EQ(exact.provenance, Provenance::exact);
  EXPECT_EQ(exact.source, "shipped table sm_90-rows");
  const Selection near = rt.best_config(Problem::parse("rmsnorm", "3000x4000", "", DType::bf16));
  EXPECT_EQ(near.provenance, Provenance::nearest) << near.why;
  ASSERT_TRUE(near.tuned);
  EXPECT_EQ(near.tuned->rfind("rmsnorm/bf16/", 0), 0u) << *near.tuned; // never another op's entry
  // An untuned shape gets candidates of several families, lenders first, then the defaults, to be
  // timed against each other at first use (no baseline library to promise against).
  EXPECT_TRUE(near.measure_pending) << near.why;
  std::set<std::string> fams;
  for (const auto& c : near.candidates) {
    fams.insert(c.family);
    EXPECT_EQ(c.family.rfind("rmsnorm_", 0), 0u) << c.family;
  }
  EXPECT_GE(fams.size(), 3u) << near.why;
  EXPECT_NE(near.candidates.front().source, "default") << near.why;
  EXPECT_EQ(near.candidates.back().source, "default") << near.why;
  // 8192x2048: the nearest lenders are bulk and block configs tuned for other lengths; the
  // warp-per-row default is offered beside them (it was the fastest there on an H100).
  const Selection attn = rt.best_config(Problem::parse("softmax", "8192x2048", "", DType::bf16));
  EXPECT_TRUE(std::any_of(attn.candidates.begin(), attn.candidates.end(),
                          [](const CandidateConfig& c) { return c.family == "softmax_warp" && c.source == "default"; }))
      << attn.why;
  // Measuring off: the first candidate, nothing pending.
  RuntimeOptions off = o;
  off.measure_untuned = false;
  EXPECT_FALSE(Runtime(off).best_config(Problem::parse("rmsnorm", "3000x4000", "", DType::bf16)).measure_pending);
  o.shipped_tables = false;
  const Selection dflt = Runtime(o).best_config(Problem::parse("softmax", "7x100000", "", DType::f16));
  EXPECT_EQ(dflt.provenance, Provenance::default_config);
  EXPECT_EQ(dflt.family, "softmax_stream");
  EXPECT_THROW(Runtime(o).best_config(Problem::parse("softmax", "0x8")), UsageError);
}
