// ktune::gemm and ktune_sgemm on a real GPU against the FP64 reference, for tuned and untuned
// shapes, every layout, alpha and beta cases, and padded leading dimensions.
#include <gtest/gtest.h>

#include "gpu_env.h"
#include "ktune/ktune.h"
#include "ktune/runtime.h"
#include "runtime/module.h"
#include "tuner/gemm_op.h"

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
  }
  std::cout << "[ ktune    ] provenances exercised:";
  for (const auto& s : provenances) std::cout << " " << s;
  std::cout << "\n";
  EXPECT_GE(provenances.size(), 2u);
}

TEST_F(RuntimeGpu, Tf32x3OptInMatchesFp64ReferenceOnTunedAndUntunedShapes) {
  // With the opt-in gemm_tf32x3 table: its own shapes run their tuned configs; shapes near them
  // (other sizes, odd leading dimensions, other layouts) run a tf32x3 config in the form that
  // serves them (packed or not) or fall back to the plain table.
  GemmOp& op = *op_;
  RuntimeOptions o;
  o.db_path = "";
  o.tf32x3 = true;
  Runtime rt(o);
  int tf32x3 = 0;
  uint64_t seed = 2900;
  std::vector<Case> cases(std::begin(kCases), std::end(kCases));
  cases.push_back({2048, 2048, 2048, "NN", 1, 0, 0});
  cases.push_back({4095, 4097, 4093, "NN", 0.5f, 1, 0});
  for (const Case& c : cases) {
    const GemmProblem p = make(c);
    const Selection sel = rt.best_config(p);
    tf32x3 += sel.family == "gemm_tf32x3";
    const auto r = op.check(p, ++seed, [&](const KtuneGemmArgs& a, CUstream s) {
      rt.gemm(p, a.A, a.B, a.C, p.alpha, p.beta, s);
    }, nullptr);
    EXPECT_TRUE(r.pass) << p.key() << " lda=" << p.lda << " (" << sel.family << " " << sel.config.to_json() << "): " << r.summary();
  }
  std::cout << "[ ktune    ] " << tf32x3 << " of " << cases.size() << " problems ran gemm_tf32x3\n";
  EXPECT_GE(tf32x3, 2);
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
