// ktune::gemm and ktune_sgemm on a real GPU against the FP64 reference, for tuned and untuned
// shapes, every layout, alpha and beta cases, and padded leading dimensions.
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/trial.h"
#include "db/table.h"
#include "gpu_env.h"
#include "ktune/family.h"
#include "ktune/ktune.h"
#include "ktune/runtime.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/gemm_launch.h"
#include "runtime/module.h"
#include "tuner/gemm_op.h"
#include "ktune/gemm_problem.h"

using namespace ktune;

namespace {

struct Case {
  int64_t m, n, k;
  const char* layout;
  float alpha, beta;
  int64_t pad;
};

// Tuned shapes of the shipped table, untuned ones near them, odd sizes, K = 0.
const Case kCases[] = {
    {1024, 1024, 1024, "NN", 1, 0, 0},   {4000, 4000, 4000, "NN", 0.5f, 1, 0}, {2999, 2999, 2999, "NN", 1, -2, 0},
    {16, 4096, 4096, "NN", 1, 0, 0},     {1, 4096, 4096, "NN", 1, 1, 0},       {300, 200, 100, "NT", 0.5f, 0, 4},
    {127, 129, 131, "TN", 1, -2, 1},     {64, 64, 64, "TT", 1, 1, 8},          {513, 1025, 77, "NT", 1, 0, 3},
    {7, 13, 5, "TT", 0.5f, -2, 2},       {5, 3, 0, "NN", 1, -2, 0},            {2048, 512, 2048, "TN", 1, 0, 4},
    {512, 512, 32768, "NN", 1, 0, 0},
};

GemmProblem make(const Case& c) {
  GemmProblem p = GemmProblem::make(c.m, c.n, c.k, c.layout);
  p.lda = std::max<int64_t>(1, p.min_lda()) + c.pad;
  p.ldb = std::max<int64_t>(1, p.min_ldb()) + c.pad;
  p.ldc = p.min_ldc() + c.pad;
  p.align = GemmProblem::alignment_of(p.lda, p.ldb, p.ldc);
  p.alpha = c.alpha, p.beta = c.beta;
  return p;
}

class RuntimeGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    dev_ = ktune::testing::first_gpu(&why);
    if (!dev_) GTEST_SKIP() << "no GPU: " << why;
    ctx_ = std::make_unique<CudaContext>(dev_->ordinal);
    compiler_ = std::make_unique<Compiler>();
    op_ = std::make_unique<GemmOp>(*compiler_, *dev_);
  }
  const DeviceInfo* dev_ = nullptr;
  std::unique_ptr<CudaContext> ctx_;
  std::unique_ptr<Compiler> compiler_;
  std::unique_ptr<GemmOp> op_;
};

} // namespace

TEST_F(RuntimeGpu, GemmMatchesFp64ReferenceOnTunedAndUntunedShapes) {
  GemmOp& op = *op_;
  RuntimeOptions o;
  o.db_path = ""; // the shipped table alone: a reproducible selection
  Runtime rt(o);
  std::set<std::string> provenances;
  uint64_t seed = 900;
  for (const Case& c : kCases) {
    const GemmProblem p = make(c);
    provenances.insert(to_string(rt.best_config(p).provenance));
    const auto r = op.check(p, ++seed, [&](const KtuneGemmArgs& a, CUstream s) {
      rt.gemm(p, a.A, a.B, a.C, p.alpha, p.beta, s);
    }, nullptr);
    EXPECT_TRUE(r.pass) << p.key() << " lda=" << p.lda << " alpha=" << p.alpha << " beta=" << p.beta << " ("
                        << to_string(rt.best_config(p).provenance) << "): " << r.summary();
    // A correct lender that won first use also agreed with cuBLAS there (runtime/agreement.h):
    // the check must not reject right kernels.
    const std::string why = rt.best_config(p).why;
    EXPECT_EQ(why.find("disagrees"), std::string::npos) << p.key() << ": " << why;
  }
  std::cout << "[ ktune    ] provenances exercised:";
  for (const auto& s : provenances) std::cout << " " << s;
  std::cout << "\n";
  EXPECT_GE(provenances.size(), 2u);
}

// The cubins a Runtime compiles (a tuned shape's kernel, an untuned shape's candidates) go into
// its cubin cache, which the next Runtime loads them from; results stay verified either way. A
// cache that cannot be created is reported and left alone: the GEMMs still run.
TEST_F(RuntimeGpu, CompiledKernelsAreKeptForTheNextRuntime) {
  GemmOp& op = *op_;
  const std::string path = (std::filesystem::temp_directory_path() / ("ktune-cubin-cache-" + std::to_string(getpid()) + ".db")).string();
  std::filesystem::remove(path);
  auto query = [&](const std::string& file, const char* sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(st), SQLITE_ROW);
    const int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
  };
  auto count = [&] { return query(path, "SELECT COUNT(*) FROM binaries"); };
  auto last_use = [&] { return query(path, "SELECT MAX(used) FROM binaries"); };
  const GemmProblem tuned = make(kCases[0]), untuned = make(kCases[1]); // 1024^3 (a table entry), 4000^3
  auto run_all = [&](const std::string& cache, uint64_t seed, const std::vector<GemmProblem>& problems,
                     int64_t max_mb = kDefaultCubinCacheLimit) {
    RuntimeOptions o;
    o.db_path = "";
    o.cubin_cache = cache;
    o.cubin_cache_max_mb = max_mb;
    Runtime rt(o);
    for (const GemmProblem& p : problems) {
      const auto r = op.check(p, seed++, [&](const KtuneGemmArgs& a, CUstream s) { rt.gemm_ex(p, a.A, a.B, a.C, p.alpha, p.beta, s); },
                              nullptr);
      EXPECT_TRUE(r.pass) << p.key() << " with cubin cache '" << cache << "': " << r.summary();
    }
    return rt.best_config(problems.back()).candidates.size();
  };
  auto run = [&](const std::string& cache, uint64_t seed) { return run_all(cache, seed, {tuned, untuned}); };
  const size_t candidates = run(path, 3100);
  ASSERT_TRUE(std::filesystem::exists(path));
  const int64_t kept = count(), stamp = last_use();
  EXPECT_GE(kept, 2) << "the tuned kernel and at least one candidate of " << candidates;
  run(path, 3200); // from the cache: nothing new to keep, but what was loaded is marked used
  EXPECT_EQ(count(), kept);
  EXPECT_GT(last_use(), stamp);
  run("/proc/ktune-no-such-dir/cubins.db", 3300);
  // A 1 MB limit over two bf16 shapes nobody tuned, whose candidates' kernels (9 each, ~0.1-0.3 MB a
  // cubin) add up to more: without a limit the cache holds them all, with it the least recently
  // used go as new ones come.
  std::vector<GemmProblem> shapes;
  for (const char* s : {"2900x1900x1000", "1900x2900x1000"}) {
    GemmProblem p = GemmProblem::parse(s, "NN", DType::bf16);
    p.alpha = 0.5f, p.beta = 0.0f;
    shapes.push_back(p);
  }
  const std::string big = path + ".big", small = path + ".small";
  std::filesystem::remove(big);
  std::filesystem::remove(small);
  const char* bytes_sql = "SELECT COALESCE(SUM(LENGTH(cubin)), 0) FROM binaries";
  run_all(big, 3400, shapes, 0);
  const int64_t all_bytes = query(big, bytes_sql), all_cubins = query(big, "SELECT COUNT(*) FROM binaries");
  ASSERT_GT(all_bytes, 1000000) << "the shapes' kernels must exceed the limit for this test to trim anything";
  run_all(small, 3500, shapes, 1);
  const int64_t bytes = query(small, bytes_sql), cubins = query(small, "SELECT COUNT(*) FROM binaries");
  EXPECT_LE(bytes, 1000000);
  EXPECT_GE(cubins, 1);
  EXPECT_LT(cubins, all_cubins);
  std::cout << "[ ktune    ] cubin cache: " << all_cubins << " cubins (" << all_bytes << " bytes) without a limit; with 1 MB, "
            << cubins << " (" << bytes << " bytes)\n";
  for (const std::string& f : {path, big, small}) {
    std::filesystem::remove(f);
    std::filesystem::remove(f + "-wal");
    std::filesystem::remove(f + "-shm");
  }
}

TEST_F(RuntimeGpu, Tf32x3OptInMatchesFp64ReferenceOnTunedAndUntunedShapes) {
  // With the opt-in 3xTF32 table (gemm_tf32x3 and, on sm_90, gemm_wgmma_tf32x3 entries): its own
  // shapes run their tuned configs; shapes near them
  // (other sizes, odd leading dimensions, other layouts) run a tf32x3 config in the form that
  // serves them (packed or not) or fall back to the plain table.
  GemmOp& op = *op_;
  RuntimeOptions o;
  o.db_path = "";
  o.tf32x3 = true;
  Runtime rt(o);
  int tf32x3 = 0, wgmma = 0;
  uint64_t seed = 2900;
  std::vector<Case> cases(std::begin(kCases), std::end(kCases));
  cases.push_back({2048, 2048, 2048, "NN", 1, 0, 0});
  cases.push_back({4095, 4097, 4093, "NN", 0.5f, 1, 0});
  for (const Case& c : cases) {
    const GemmProblem p = make(c);
    const Selection sel = rt.best_config(p);
    tf32x3 += sel.family == "gemm_tf32x3" || sel.family == "gemm_wgmma_tf32x3";
    wgmma += sel.family == "gemm_wgmma_tf32x3";
    const auto r = op.check(p, ++seed, [&](const KtuneGemmArgs& a, CUstream s) {
      rt.gemm(p, a.A, a.B, a.C, p.alpha, p.beta, s);
    }, nullptr);
    EXPECT_TRUE(r.pass) << p.key() << " lda=" << p.lda << " (" << sel.family << " " << sel.config.to_json() << "): " << r.summary();
  }
  std::cout << "[ ktune    ] " << tf32x3 << " of " << cases.size() << " problems ran a 3xTF32 family (" << wgmma
            << " of them gemm_wgmma_tf32x3)\n";
  EXPECT_GE(tf32x3, 2);
}

// A GemmCall handle serves as gemm_ex does: in f32, bf16 and f16, on tuned and untuned shapes,
// with the one handle called first on 256-byte aligned pointers and then on pointers at the least
// aligned offset of a narrower class (another prepared launch of the same handle), alpha and beta
// as the check sets them each time.
TEST_F(RuntimeGpu, GemmCallHandlesMatchFp64ReferenceAcrossAlignmentClasses) {
  GemmOp& op = *op_;
  RuntimeOptions o;
  o.db_path = "";
  Runtime rt(o);
  uint64_t seed = 2900;
  int checked = 0;
  for (const DType dt : {DType::f32, DType::bf16, DType::f16})
    for (const Case& c : {Case{1024, 1024, 1024, "NN", 1, 0, 0}, Case{512, 512, 512, "NN", 1, 0, 0},
                          Case{300, 200, 104, "NT", 0.5f, 0, 8}, Case{127, 129, 131, "TN", 1, -2, 1}}) {
      GemmProblem p = make(c);
      p.dtype = dt;
      p.align = GemmProblem::alignment_of(p.lda, p.ldb, p.ldc, element_bytes(dt));
      const auto call = rt.gemm_call(p);
      EXPECT_EQ(call->problem().key(), p.key());
      auto run = [&](const KtuneGemmArgs& a, CUstream s) { (*call)(a.A, a.B, a.C, a.alpha, a.beta, s); };
      auto r = op.check(p, ++seed, run, nullptr);
      EXPECT_TRUE(r.pass) << "handle, aligned pointers, " << p.key() << ": " << r.summary();
      GemmProblem narrow = p;
      narrow.align = element_bytes(dt) == 2 ? 2 : 4;
      r = op.check(narrow, ++seed, run, nullptr, Numerics::standard, Conditions::as_served);
      EXPECT_TRUE(r.pass) << "handle, pointers of class " << narrow.align << ", " << narrow.key() << ": " << r.summary();
      checked += 2;
    }
  EXPECT_EQ(checked, 24);
  // A problem no call can serve is refused when the handle is made, naming the field.
  GemmProblem bad = GemmProblem::make(64, 64, 64);
  bad.lda = 3;
  try {
    rt.gemm_call(bad);
    ADD_FAILURE() << "gemm_call accepted lda 3 < 64";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("lda"), std::string::npos) << e.what();
  }
}

TEST_F(RuntimeGpu, CApiSgemmMatchesFp64ReferenceInBothStorageOrders) {
  GemmOp& op = *op_;
  ktune_handle_t h = nullptr;
  ASSERT_EQ(ktune_create(&h, "/nonexistent/ktune.db"), KTUNE_SUCCESS) << ktune_last_error();
  uint64_t seed = 1900;
  int checked = 0;
  for (const Case& c : kCases) {
    if (c.m * c.n * c.k > (int64_t(1) << 33)) continue;
    const GemmProblem p = make(c);
    const ktune_op_t ta = p.a == Layout::col ? KTUNE_OP_T : KTUNE_OP_N, tb = p.b == Layout::col ? KTUNE_OP_T : KTUNE_OP_N;
    // Row-major: the problem as it is.
    auto r = op.check(p, ++seed, [&](const KtuneGemmArgs& a, CUstream s) {
      ASSERT_EQ(ktune_sgemm(h, KTUNE_ROW_MAJOR, ta, tb, a.M, a.N, a.K, a.alpha, a.A, int(a.lda), a.B, int(a.ldb), a.beta,
                            a.C, int(a.ldc), s),
                KTUNE_SUCCESS)
          << ktune_last_error();
    }, nullptr);
    EXPECT_TRUE(r.pass) << "row-major " << p.key() << ": " << r.summary();
    // Column-major: the same memory read as C^T = B^T A^T, so the reference still applies.
    r = op.check(p, ++seed, [&](const KtuneGemmArgs& a, CUstream s) {
      const ktune_op_t tb_t = tb, ta_t = ta; // op(B^T) stays as B was stored, likewise A
      ASSERT_EQ(ktune_sgemm(h, KTUNE_COL_MAJOR, tb_t, ta_t, a.N, a.M, a.K, a.alpha, a.B, int(a.ldb), a.A, int(a.lda),
                            a.beta, a.C, int(a.ldc), s),
                KTUNE_SUCCESS)
          << ktune_last_error();
    }, nullptr);
    EXPECT_TRUE(r.pass) << "column-major " << p.key() << ": " << r.summary();
    checked += 2;
  }
  EXPECT_GE(checked, 20);
  EXPECT_EQ(ktune_destroy(h), KTUNE_SUCCESS);

  // The opt-in flag: a shape of the gemm_tf32x3 table and one near it, row-major.
  ASSERT_EQ(ktune_create_ex(&h, "/nonexistent/ktune.db", KTUNE_FLAG_TF32X3), KTUNE_SUCCESS) << ktune_last_error();
  for (const Case& c : {Case{2048, 2048, 2048, "NN", 1, 0, 0}, Case{1000, 1100, 1200, "NN", 0.5f, 1, 0}}) {
    const GemmProblem p = make(c);
    const auto r = op.check(p, ++seed, [&](const KtuneGemmArgs& a, CUstream s) {
      ASSERT_EQ(ktune_sgemm(h, KTUNE_ROW_MAJOR, KTUNE_OP_N, KTUNE_OP_N, a.M, a.N, a.K, a.alpha, a.A, int(a.lda), a.B,
                            int(a.ldb), a.beta, a.C, int(a.ldc), s),
                KTUNE_SUCCESS)
          << ktune_last_error();
    }, nullptr);
    EXPECT_TRUE(r.pass) << "tf32x3 " << p.key() << ": " << r.summary();
  }
  EXPECT_EQ(ktune_destroy(h), KTUNE_SUCCESS);
}

namespace {

std::vector<float> download(const DeviceBuffer& b, size_t n) {
  std::vector<float> h(n);
  check_cu(driver().cuCtxSynchronize(), "cuCtxSynchronize", "test");
  check_cu(driver().cuMemcpyDtoH(h.data(), b.ptr(), n * sizeof(float)), "cuMemcpyDtoH", "test");
  return h;
}

void upload(DeviceBuffer& b, const std::vector<float>& h) {
  check_cu(driver().cuMemcpyHtoD(b.ptr(), h.data(), h.size() * sizeof(float)), "cuMemcpyHtoD", "test");
}

} // namespace

// BLAS semantics through the runtime and the C API (launch_gemm's own are checked per family in
// tests/kernels/blas_semantics_gpu_test.cpp): alpha == 0 never reads A or B (NaN there, or null
// pointers), K == 0 gives beta * C, M or N == 0 leaves C alone, with and without the opt-in table.
TEST_F(RuntimeGpu, AlphaZeroKZeroAndEmptyProblemsFollowBlas) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int64_t M = 16, N = 512, K = 300;
  DeviceBuffer a(M * K * sizeof(float), "A"), b(K * N * sizeof(float), "B"), c(M * N * sizeof(float), "C");
  upload(a, std::vector<float>(M * K, nan));
  upload(b, std::vector<float>(K * N, nan));
  std::vector<float> c0(M * N);
  for (size_t i = 0; i < c0.size(); ++i) c0[i] = float(int(i % 97) - 48) / 8.0f;
  for (bool tf32x3 : {false, true}) {
    RuntimeOptions o;
    o.db_path = "";
    o.tf32x3 = tf32x3;
    Runtime rt(o);
    ktune_handle_t h = nullptr;
    ASSERT_EQ(ktune_create_ex(&h, "/nonexistent/ktune.db", tf32x3 ? KTUNE_FLAG_TF32X3 : 0), KTUNE_SUCCESS) << ktune_last_error();
    const int64_t shapes[][3] = {{16, 512, 300}, {2, 2, 300}, {16, 512, 0}};
    for (const auto& mnk : shapes) {
      const GemmProblem p = GemmProblem::make(mnk[0], mnk[1], mnk[2]);
      const std::string shape = p.shape_string();
      for (float beta : {0.0f, 0.5f}) {
        for (int path = 0; path < 3; ++path) { // runtime with NaN A and B, runtime with null, C API with null
          upload(c, c0);
          const float* A = path == 0 ? a.as<const float>() : nullptr;
          const float* B = path == 0 ? b.as<const float>() : nullptr;
          const float alpha = p.k == 0 ? 1.0f : 0.0f; // K == 0: any alpha, even 1, multiplies nothing
          if (path < 2) {
            rt.gemm(p, A, B, c.as<float>(), alpha, beta, nullptr);
          } else {
            ASSERT_EQ(ktune_sgemm(h, KTUNE_ROW_MAJOR, KTUNE_OP_N, KTUNE_OP_N, int(p.m), int(p.n), int(p.k), alpha, A,
                                  int(std::max<int64_t>(1, p.k)), B, int(p.n), beta, c.as<float>(), int(p.n), nullptr),
                      KTUNE_SUCCESS)
                << ktune_last_error();
          }
          const auto got = download(c, c0.size());
          int bad = 0;
          for (int64_t i = 0; i < p.m * p.n; ++i) bad += got[size_t(i)] != beta * c0[size_t(i)];
          for (size_t i = size_t(p.m * p.n); i < c0.size(); ++i) bad += got[i] != c0[i]; // beyond C: untouched
          EXPECT_EQ(bad, 0) << shape << " beta " << beta << " path " << path << " tf32x3 " << tf32x3;
        }
      }
    }
    // M == 0 and N == 0: nothing is written, whatever the pointers.
    upload(c, c0);
    rt.gemm(GemmProblem::make(0, 512, 300), nullptr, nullptr, c.as<float>(), 1.0f, 0.0f, nullptr);
    ASSERT_EQ(ktune_sgemm(h, KTUNE_ROW_MAJOR, KTUNE_OP_N, KTUNE_OP_N, 16, 0, 300, 1.0f, nullptr, 300, nullptr, 1, 0.0f,
                          c.as<float>(), 1, nullptr),
              KTUNE_SUCCESS)
        << ktune_last_error();
    EXPECT_EQ(download(c, c0.size()), c0);
    EXPECT_EQ(ktune_destroy(h), KTUNE_SUCCESS);
  }
}

// A table measured on another device model of the same arch (the shipped sm_90 tables come from an
// H100 or an H200) keeps its config, but a small recorded lead over cuBLAS is timed here at first
// use before it is trusted; the same table from this very device is trusted as recorded.
TEST_F(RuntimeGpu, EntryFromAnotherDeviceIsMeasuredBeforeItIsTrusted) {
  const GemmProblem p = GemmProblem::parse("1000x1000x1000");
  const Family f = find_family("gemm_simt");
  TableEntry e;
  e.problem = p;
  e.arch = dev_->arch;
  e.family = f.name();
  e.config_json = f.default_config(p, *dev_).to_json();
  e.time_ms = 1.0, e.tflops = 2.0, e.cublas_ms = 1.05, e.template_hash = "h", e.gate = kGateVersion; // 5 % ahead of cuBLAS there
  const auto dir = std::filesystem::temp_directory_path() / ("ktune-rtgpu-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto runtime_for = [&](const std::string& device_name) {
    Table t;
    t.device_name = device_name, t.arch = dev_->arch, t.sm_count = dev_->sm_count, t.entries = {e};
    const std::string path = (dir / (device_name.empty() ? "none.json" : "t.json")).string();
    std::ofstream(path) << table_to_json(t);
    RuntimeOptions o;
    o.db_path = "";
    o.shipped_tables = false;
    o.tables = {path};
    return std::make_unique<Runtime>(o);
  };
  const auto other = runtime_for("Another GPU of " + dev_->arch);
  Selection s = other->best_config(p);
  EXPECT_EQ(s.provenance, Provenance::exact) << s.why;
  EXPECT_TRUE(s.measure_pending) << s.why;
  EXPECT_NE(s.why.find("at first use"), std::string::npos) << s.why;
  const auto r = op_->check(p, 77, [&](const KtuneGemmArgs& a, CUstream st) {
    other->gemm(p, a.A, a.B, a.C, p.alpha, p.beta, st);
  }, nullptr);
  EXPECT_TRUE(r.pass) << r.summary();
  s = other->best_config(p);
  EXPECT_TRUE(s.measured) << s.why;
  EXPECT_FALSE(s.measure_pending);
  ASSERT_FALSE(s.candidates.empty());
  EXPECT_TRUE(s.candidates.front().measured_ms.has_value());
  std::cout << "[ ktune    ] " << s.why << "\n";

  const auto same = runtime_for(dev_->name);
  s = same->best_config(p);
  EXPECT_EQ(s.provenance, Provenance::exact) << s.why;
  EXPECT_FALSE(s.measure_pending) << s.why;
  std::filesystem::remove_all(dir);
}
