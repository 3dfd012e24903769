// The row ops (softmax, LayerNorm, RMSNorm) without a GPU: problems and keys, tables that hold
// them, the spaces of their families, and every kind of row kernel compiled by NVRTC for sm_90.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <random>
#include <set>
#include <type_traits>

#include "core/half.h"
#include "db/table.h"
#include "kernels/rows_planted.h"
#include "ktune/compiler.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "ktune/runtime.h"
#include "rows/rows_args.h"
#include "layernorm/layernorm_check.h"
#include "rmsnorm/rmsnorm_check.h"
#include "rows/rows_check.h"
#include "softmax/softmax_check.h"
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

// Each row op declares its runner, its weight/bias vectors, its FP64 reference and its code for
// the row kernels in its own file (kernel_templates/<op>/<op>.cpp); the references follow
// PyTorch's semantics.
TEST(RowsOp, EachOpDeclaresItsRunnerVectorsAndReference) {
  EXPECT_EQ(op_info("gemm").runner, "gemm");
  EXPECT_EQ(op_info("gemm").row_op, -1);
  const std::map<std::string, int> vectors = {{"softmax", 0}, {"layernorm", 2}, {"rmsnorm", 1}};
  const std::map<std::string, int> codes = {
      {"softmax", KTUNE_ROWS_SOFTMAX}, {"layernorm", KTUNE_ROWS_LAYERNORM}, {"rmsnorm", KTUNE_ROWS_RMSNORM}};
  for (const auto& [op, n] : vectors) {
    EXPECT_EQ(op_info(op).runner, "rows") << op;
    EXPECT_EQ(op_info(op).row_vectors, n) << op;
    EXPECT_EQ(op_info(op).row_op, codes.at(op)) << op;
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

using ktune::testing::RowsFault;

// The verification's device kernels, and every planted kernel of the GPU teeth tests
// (kernels/rows_planted.h), compile with NVRTC: a compile error there would only show on a GPU.
TEST(RowsCompile, VerificationAndPlantedKernelsCompile) {
  Compiler compiler;
  for (const char* arch : {"sm_80", "sm_90"}) {
    for (const char* op : kOps) {
      const auto k = compiler.compile(rows_reference_request(arch, op_info(op)));
      EXPECT_GT(k->cubin.size(), 0u) << arch << " " << op;
      EXPECT_EQ(k->lowered_names.size(), 2u) << arch << " " << op;
    }
  }
  std::vector<std::future<std::shared_ptr<const CompiledKernel>>> planted;
  for (int op : {KTUNE_ROWS_SOFTMAX, KTUNE_ROWS_LAYERNORM, KTUNE_ROWS_RMSNORM})
    for (DType dt : {DType::f32, DType::bf16, DType::f16})
      for (int f = 0; f <= 5; ++f) {
        const auto fault = static_cast<RowsFault>(f);
        planted.push_back(compiler.compile_async(ktune::testing::planted_rows_request(
            op, dt, fault, "sm_80", fault == RowsFault::wrong_eps ? 1e-5f : 0.0f))); // as rows_gpu_test.cpp asks
      }
  for (auto& k : planted) {
    try {
      EXPECT_EQ(k.get()->lowered_names.size(), 1u);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

namespace {

// A row problem's inputs as the rows runner makes them (x uniform in [-3, 3), weight in
// [0.5, 1.5), bias in [-0.5, 0.5), all rounded to the dtype), packed (ld = cols).
struct HostRows {
  Problem p;
  int op = 0, dt = 0;
  int64_t rows = 0, cols = 0;
  std::vector<double> x, w, b;
  double scalar = 0; // scale or eps as the kernels get it (a float)
};

int dt_code(DType d) { return d == DType::f32 ? 0 : d == DType::bf16 ? 1 : 2; }

float rounded(float v, int dt) {
  if (dt == 0) return v;
  return dt == 1 ? half::from_bf16(half::to_bf16(v)) : half::from_f16(half::to_f16(v));
}

HostRows host_rows(const char* op, const char* shape, DType dtype, double scalar, uint64_t seed = 1) {
  HostRows h;
  h.p = Problem::parse(op, shape, "", dtype);
  h.op = op_info(op).row_op, h.dt = dt_code(dtype);
  h.rows = h.p.dims[0], h.cols = h.p.dims[1];
  const char* name = h.op == KTUNE_ROWS_SOFTMAX ? "scale" : "eps";
  h.p.scalars[name] = scalar;
  h.scalar = double(float(scalar));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> ux(-3.0f, 3.0f), uw(0.5f, 1.5f), ub(-0.5f, 0.5f);
  for (int64_t i = 0; i < h.rows * h.cols; ++i) h.x.push_back(rounded(ux(rng), h.dt));
  const int vectors = op_info(op).row_vectors;
  for (int64_t j = 0; j < h.cols; ++j) {
    h.w.push_back(vectors >= 1 ? rounded(uw(rng), h.dt) : 1.0);
    h.b.push_back(vectors >= 2 ? rounded(ub(rng), h.dt) : 0.0);
  }
  return h;
}

// A row as KtuneRowCheck<OP>::stats reads it, reduced in FP64 in sequence (ktune_rows_verify
// reduces in a block).
struct HostRow {
  const double* x;
  int64_t cols;
  double n() const { return double(cols); }
  template <class F>
  double sum(F f) const {
    double v = 0;
    for (int64_t j = 0; j < cols; ++j) v += f(x[j]);
    return v;
  }
  template <class F>
  double max(F f) const {
    double v = -INFINITY;
    for (int64_t j = 0; j < cols; ++j) v = std::max(v, f(x[j]));
    return v;
  }
};

// f(std::integral_constant<int, OP>) for the op of code op (the test knows the three row ops).
template <class F>
void with_row_op(int op, F f) {
  if (op == KTUNE_ROWS_SOFTMAX) return f(std::integral_constant<int, KTUNE_ROWS_SOFTMAX>());
  if (op == KTUNE_ROWS_LAYERNORM) return f(std::integral_constant<int, KTUNE_ROWS_LAYERNORM>());
  ASSERT_EQ(op, KTUNE_ROWS_RMSNORM);
  f(std::integral_constant<int, KTUNE_ROWS_RMSNORM>());
}

// The statistics of row r as ktune_rows_verify computes them (the op's KtuneRowCheck::stats).
template <int OP>
typename KtuneRowCheck<OP>::Stats host_stats(const HostRows& h, int64_t r) {
  return KtuneRowCheck<OP>::stats(HostRow{&h.x[size_t(r * h.cols)], h.cols}, h.scalar, h.scalar);
}

// ktune_rows_verify on the host: the same rule (rows_check.h) over y (NaN where unwritten).
template <int OP>
RowsCheckSums host_check_op(const HostRows& h, const std::vector<double>& y) {
  RowsCheckSums c;
  for (int64_t r = 0; r < h.rows; ++r) {
    const auto s = host_stats<OP>(h, r);
    for (int64_t j = 0; j < h.cols; ++j) {
      const size_t i = size_t(r * h.cols + j);
      if (!std::isfinite(y[i])) {
        ++c.nonfinite;
        continue;
      }
      const KtuneRowsJudgement g = ktune_rows_judge<OP>(h.dt, s, h.x[i], h.w[size_t(j)], h.b[size_t(j)], y[i]);
      if (g.over) c.first_violation = std::min<uint64_t>(c.first_violation, i), ++c.violations;
      c.worst_ratio = std::max(c.worst_ratio, g.ratio);
      c.err2 += (y[i] - g.ref) * (y[i] - g.ref), c.ref2 += g.ref * g.ref;
      c.ideal2 += g.ideal * g.ideal, c.allow2 += g.allow * g.allow;
    }
  }
  return c;
}

RowsCheckSums host_check(const HostRows& h, const std::vector<double>& y) {
  RowsCheckSums c;
  with_row_op(h.op, [&](auto op) { c = host_check_op<decltype(op)::value>(h, y); });
  return c;
}

// The bits a float is stored as in dt, rounded to nearest-even (truncate: toward zero, bf16 only).
uint32_t stored_bits(float v, int dt, bool truncate = false) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if (dt == 0) return u;
  if (dt == 1) return truncate ? u >> 16 : half::to_bf16(v);
  return half::to_f16(v);
}
double stored_value(uint32_t bits, int dt) {
  if (dt == 0) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  return dt == 1 ? half::from_bf16(uint16_t(bits)) : half::from_f16(uint16_t(bits));
}

// planted_rows (kernels/rows_planted.h) on the host: FP32 math, each row's sums over 256 strided
// lanes then the lanes in a tree, rounded to nearest into the dtype; with one fault, or rows_fault
// truncation (bf16: rounding toward zero) that the device kernel does not plant.
enum HostFault { kTruncate = 100 };
std::vector<double> host_kernel(const HostRows& h, int fault, float planted_eps = 0.0f) {
  const int lanes = 256;
  auto reduce = [&](const std::function<float(int64_t)>& term, bool max) {
    std::vector<float> part(lanes, max ? -INFINITY : 0.0f);
    for (int64_t j = 0; j < h.cols; ++j)
      part[size_t(j % lanes)] = max ? std::max(part[size_t(j % lanes)], term(j)) : part[size_t(j % lanes)] + term(j);
    for (int w = lanes / 2; w >= 1; w /= 2)
      for (int l = 0; l < w; ++l)
        part[size_t(l)] = max ? std::max(part[size_t(l)], part[size_t(l + w)]) : part[size_t(l)] + part[size_t(l + w)];
    return part[0];
  };
  std::vector<double> y(h.x.size(), NAN);
  const float scalar = float(h.scalar), n = float(h.cols);
  for (int64_t r = 0; r < h.rows; ++r) {
    const bool victim = r == h.rows / 2;
    if (fault == int(RowsFault::skip_row) && victim) continue;
    const double* xd = &h.x[size_t(r * h.cols)];
    auto x = [&](int64_t j) { return float(xd[j]); };
    const float eps = fault == int(RowsFault::wrong_eps) ? planted_eps : scalar;
    float m = 0, s = 0, mean = 0, inv = 1;
    if (h.op == KTUNE_ROWS_SOFTMAX) {
      m = fault == int(RowsFault::no_max) ? 0.0f : reduce([&](int64_t j) { return scalar * x(j); }, true);
      s = reduce([&](int64_t j) { return std::exp(scalar * x(j) - m); }, false);
    } else if (h.op == KTUNE_ROWS_LAYERNORM) {
      mean = reduce(x, false) / n;
      inv = 1.0f / std::sqrt(reduce([&](int64_t j) { return (x(j) - mean) * (x(j) - mean); }, false) / n + eps);
    } else {
      inv = 1.0f / std::sqrt(reduce([&](int64_t j) { return x(j) * x(j); }, false) / n + eps);
    }
    const bool use_w = fault != int(RowsFault::no_weight);
    bool planted = false;
    for (int64_t j = 0; j < h.cols; ++j) {
      const float w = use_w ? float(h.w[size_t(j)]) : 1.0f, b = float(h.b[size_t(j)]);
      const float v = h.op == KTUNE_ROWS_SOFTMAX     ? std::exp(scalar * x(j) - m) / s
                      : h.op == KTUNE_ROWS_LAYERNORM ? (x(j) - mean) * inv * w + b
                                                     : x(j) * inv * w;
      uint32_t bits = stored_bits(v, h.dt, fault == kTruncate);
      const uint32_t mant = h.dt == 0 ? 0x7fffffu : h.dt == 1 ? 0x7fu : 0x3ffu;
      if (fault == int(RowsFault::one_ulp) && victim && !planted && (bits & mant) != 0 && (bits & mant) != mant) {
        bits = std::fabs(stored_value(bits, h.dt)) >= std::fabs(v) ? bits + 1 : bits - 1;
        planted = true;
      }
      y[size_t(r * h.cols + j)] = stored_value(bits, h.dt);
    }
  }
  return y;
}

VerifyResult host_verdict(const HostRows& h, int fault, float planted_eps = 0.0f) {
  return rows_verdict(host_check(h, host_kernel(h, fault, planted_eps)), h.p.dtype);
}

} // namespace

// The device reference's element formula and statistics (rows_check.h, as ktune_rows_verify runs
// them) agree with each op's host reference (OpInfo::reference_row) on the runner's inputs.
TEST(RowsCheck, DeviceFormulasMatchEachOpsReference) {
  for (const char* op : kOps)
    for (const char* shape : {"3x1", "3x2", "4x7", "2x1000"}) {
      const HostRows h = host_rows(op, shape, DType::bf16, std::string(op) == "softmax" ? 0.7 : 1e-5);
      std::vector<double> ref(size_t(h.cols));
      for (int64_t r = 0; r < h.rows; ++r) {
        op_info(op).reference_row(h.p, &h.x[size_t(r * h.cols)], h.w.data(), h.b.data(), ref.data());
        with_row_op(h.op, [&](auto code) {
          constexpr int OP = decltype(code)::value;
          const auto s = host_stats<OP>(h, r);
          for (int64_t j = 0; j < h.cols; ++j) {
            const double mine = KtuneRowCheck<OP>::ref(s, h.x[size_t(r * h.cols + j)], h.w[size_t(j)], h.b[size_t(j)]);
            EXPECT_NEAR(mine, ref[size_t(j)], 1e-13 * std::max(1.0, std::fabs(ref[size_t(j)])))
                << op << " " << shape << " " << r << " " << j;
          }
        });
      }
    }
}

// ktune_rows_round is the dtype's round-to-nearest-even, subnormals included (against the host's
// conversions, on values that are floats, so those round once too).
TEST(RowsCheck, RoundingIsToNearestEvenInEachDtype) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  std::uniform_int_distribution<int> ex(-150, 20);
  for (int i = 0; i < 200000; ++i) {
    const float f = float(std::ldexp(mant(rng), ex(rng)) * (i % 2 ? -1 : 1));
    EXPECT_EQ(ktune_rows_round(f, 1), double(half::from_bf16(half::to_bf16(f)))) << f;
    if (std::fabs(f) < 65504.0f) {
      EXPECT_EQ(ktune_rows_round(f, 2), double(half::from_f16(half::to_f16(f)))) << f;
    }
    const double d = std::ldexp(mant(rng), ex(rng));
    EXPECT_EQ(ktune_rows_round(d, 0), double(float(d))) << d;
  }
  EXPECT_EQ(ktune_rows_round(0.0, 1), 0.0);
  EXPECT_EQ(ktune_rows_round(1.0 + std::ldexp(1.0, -8), 1), 1.0);                           // a tie: to even
  EXPECT_EQ(ktune_rows_round(1.0 + 3 * std::ldexp(1.0, -8), 1), 1.0 + std::ldexp(1.0, -6)); // a tie: to even
}

// The rule on a correct FP32 kernel (planted_rows' arithmetic on the host) and on the faults the
// GPU tests plant, judged by the host model of ktune_rows_verify and rows_verdict.
TEST(RowsCheck, CorrectKernelPassesAndPlantedFaultsFail) {
  for (const char* op : kOps)
    for (DType dt : {DType::f32, DType::bf16, DType::f16})
      for (const char* shape : {"64x1000", "9x4099", "2x32768", "256x1", "512x2"})
        for (double scalar : {0.7, 40.0}) {
          const bool softmax = std::string(op) == "softmax";
          if (!softmax && scalar != 0.7) continue;
          const HostRows h = host_rows(op, shape, dt, softmax ? scalar : std::string(op) == "layernorm" ? 1e-5 : 1e-6);
          const VerifyResult v = host_verdict(h, int(RowsFault::none));
          EXPECT_TRUE(v.pass) << h.p.key() << " " << scalar << ": " << v.summary();
          EXPECT_LT(v.worst_ratio, 1.0) << h.p.key() << " " << scalar << ": " << v.summary();
        }
  // (a) One element one unit in the last place off: that element alone (16-bit outputs).
  for (const char* op : kOps)
    for (DType dt : {DType::bf16, DType::f16}) {
      const HostRows h = host_rows(op, "64x1000", dt, std::string(op) == "softmax" ? 0.7 : 1e-5);
      const VerifyResult v = host_verdict(h, int(RowsFault::one_ulp));
      EXPECT_FALSE(v.pass) << h.p.key();
      EXPECT_EQ(v.violations, 1u) << h.p.key() << ": " << v.summary();
      EXPECT_EQ(v.worst_index / h.cols, h.rows / 2) << h.p.key() << ": " << v.summary();
    }
  // (b) The wrong eps, where it shows (planted_eps_cases).
  for (const ktune::testing::PlantedEpsCase& c : ktune::testing::planted_eps_cases()) {
    const HostRows h = host_rows(c.op, c.shape, c.dt, c.eps);
    const VerifyResult v = host_verdict(h, int(RowsFault::wrong_eps), c.planted);
    EXPECT_FALSE(v.pass) << h.p.key() << " eps " << c.eps << " planted " << c.planted << ": " << v.summary();
    EXPECT_GT(v.violations, 0u) << h.p.key() << " eps " << c.eps << " planted " << c.planted << ": " << v.summary();
  }
  // (c) softmax without the max, at scale 40: overflow.
  for (DType dt : {DType::f32, DType::bf16}) {
    const VerifyResult v = host_verdict(host_rows("softmax", "64x1000", dt, 40.0), int(RowsFault::no_max));
    EXPECT_FALSE(v.pass);
    EXPECT_GT(v.nonfinite + v.violations, 1000u) << v.summary();
  }
  // (d) A row skipped.
  const VerifyResult skipped =
      host_verdict(host_rows("layernorm", "64x1000", DType::bf16, 1e-5), int(RowsFault::skip_row));
  EXPECT_FALSE(skipped.pass);
  EXPECT_EQ(skipped.nonfinite, 1000u);
  // (e) The weight ignored.
  for (const char* op : {"layernorm", "rmsnorm"}) {
    const VerifyResult v = host_verdict(host_rows(op, "64x1000", DType::bf16, 1e-5), int(RowsFault::no_weight));
    EXPECT_FALSE(v.pass);
    EXPECT_GT(v.violations, 1000u) << v.summary();
  }
  // Truncation instead of rounding to nearest (bf16): about half the elements over their bound,
  // and the norm about twice the correctly rounded output's.
  for (const char* op : kOps) {
    const HostRows h = host_rows(op, "64x1000", DType::bf16, std::string(op) == "softmax" ? 0.7 : 1e-5);
    const VerifyResult v = host_verdict(h, kTruncate);
    EXPECT_FALSE(v.pass) << op;
    EXPECT_GT(v.violations, 64u * 1000 / 4) << op << ": " << v.summary();
    EXPECT_GT(v.rel_error, 1.5 * v.norm_bound) << op << ": " << v.summary();
  }
}

// The verdict: every count zero and the norm within its bound.
TEST(RowsCheck, VerdictNeedsCleanCountsAndTheNormWithinBound) {
  RowsCheckSums s;
  s.ref2 = 100, s.ideal2 = 1e-4, s.allow2 = 1e-6, s.err2 = 1e-4;
  EXPECT_TRUE(rows_verdict(s, DType::bf16).pass);
  EXPECT_DOUBLE_EQ(rows_verdict(s, DType::bf16).rel_error, 1e-3);
  EXPECT_DOUBLE_EQ(rows_verdict(s, DType::bf16).norm_bound, (1e-2 + 1e-3) / 10);
  EXPECT_DOUBLE_EQ(rows_verdict(s, DType::f32).norm_bound, (1e-2 + 1e-3 * rows_allowance_share(DType::f32)) / 10);
  EXPECT_EQ(rows_verdict(s, DType::bf16).worst_index, -1);
  for (int k = 0; k < 4; ++k) {
    RowsCheckSums bad = s;
    if (k == 0) bad.nonfinite = 1;
    if (k == 1) bad.stray_writes = 1;
    if (k == 2) bad.violations = 1, bad.first_violation = 7;
    if (k == 3) bad.err2 = 1.3e-4; // ||err|| 0.0114 > 0.011
    const VerifyResult v = rows_verdict(bad, DType::bf16);
    EXPECT_FALSE(v.pass) << k;
    if (k == 2) {
      EXPECT_EQ(v.worst_index, 7);
    }
  }
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
