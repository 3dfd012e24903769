// Half precision (bf16, f16) through the tuner's own chain on a real GPU: GemmOp's half inputs,
// FP64 reference and tolerance rule (tuner/gemm_op.cpp), the cuBLAS baseline (cublasGemmEx), and
// the runtime's gemm_ex and ktune_gemm_ex. The verification is checked to have teeth at the half
// tolerance: an unwritten C and a 1 % scaling error must both fail.
#include <gtest/gtest.h>

#include <iostream>

#include "gpu_env.h"
#include "ktune/compiler.h"
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

class HalfGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    dev_ = ktune::testing::first_gpu(&why);
    if (!dev_) GTEST_SKIP() << "no GPU: " << why;
    if (dev_->arch_number() < 80) GTEST_SKIP() << "the half-precision families need sm_80";
    ctx_ = std::make_unique<CudaContext>(dev_->ordinal);
    compiler_ = std::make_unique<Compiler>();
    op_ = std::make_unique<GemmOp>(*compiler_, *dev_);
  }
  const DeviceInfo* dev_ = nullptr;
  std::unique_ptr<CudaContext> ctx_;
  std::unique_ptr<Compiler> compiler_;
  std::unique_ptr<GemmOp> op_;
};

GemmProblem half_problem(const char* shape, DType t, float alpha, float beta) {
  GemmProblem p = GemmProblem::parse(shape, "NN", t);
  p.alpha = alpha, p.beta = beta;
  return p;
}

} // namespace

TEST_F(HalfGpu, VerificationHasTeethAndCublasPassesInBf16AndF16) {
  GemmOp& op = *op_;
  const Family f = find_family("gemm_tc16");
  uint64_t seed = 300;
  for (DType t : {DType::bf16, DType::f16}) {
    for (const char* shape : {"256x512x128", "1000x1032x520", "64x4096x4096"}) {
      for (float beta : {0.0f, 0.5f}) {
        const GemmProblem p = half_problem(shape, t, 1.0f, beta);
        const double tol = GemmOp::tolerance(p);
        // cuBLAS (the baseline) on the same inputs is within the rule.
        const auto cu = op.check(p, ++seed, [&](const KtuneGemmArgs& a, CUstream s) { op.cublas().gemm(p, a, s); }, nullptr);
        EXPECT_TRUE(cu.pass) << p.key() << " cuBLAS: " << cu.summary() << " tolerance " << tol;
        // A kernel of the family, the first sampled config, on fresh inputs.
        const auto cfgs = f.sample(p, *dev_, 1, 7);
        ASSERT_EQ(cfgs.size(), 1u) << p.key();
        const auto k = compiler_->compile(compile_request(f, cfgs[0], p, dev_->arch));
        Module m(k->cubin, k->lowered_names, "gemm_tc16 " + cfgs[0].to_json());
        const LaunchPlan plan = f.launch_plan(cfgs[0], p);
        op.ensure_workspace(plan.workspace_bytes);
        const auto ours = op.check(p, ++seed, [&](const KtuneGemmArgs& a, CUstream s) { launch_gemm(m, plan, a, s); }, nullptr);
        EXPECT_TRUE(ours.pass) << p.key() << " " << cfgs[0].to_json() << ": " << ours.summary() << " tolerance " << tol;
        std::cout << "[ ktune    ] " << p.key() << " beta " << beta << ": gemm_tc16 " << ours.rel_error << ", cuBLAS "
                  << cu.rel_error << ", tolerance " << tol << "\n";
        // The same kernel with alpha off by 1 % must fail: the rule is tight enough to see it.
        const auto off = op.check(p, ++seed, [&](const KtuneGemmArgs& a, CUstream s) {
          KtuneGemmArgs b = a;
          b.alpha *= 1.01f;
          launch_gemm(m, plan, b, s);
        }, nullptr);
        EXPECT_FALSE(off.pass) << p.key() << " alpha * 1.01 passed: " << off.summary();
        // Nothing written: the poisoned C (beta = 0) or the untouched C (beta != 0) must fail.
        const auto none = op.check(p, ++seed, [](const KtuneGemmArgs&, CUstream) {}, nullptr);
        EXPECT_FALSE(none.pass) << p.key() << " an unwritten C passed: " << none.summary();
        if (beta == 0.0f) {
          EXPECT_EQ(none.nonfinite, uint64_t(p.m * p.n)) << p.key();
        }
      }
    }
  }
}

TEST_F(HalfGpu, RuntimeGemmExAndCApiMatchFp64Reference) {
  GemmOp& op = *op_;
  RuntimeOptions o;
  o.db_path = "";
  Runtime rt(o);
  const Family f = find_family("gemm_tc16");
  uint64_t seed = 700;
  for (DType t : {DType::bf16, DType::f16}) {
    for (const char* shape : {"128x256x64", "2048x2048x2048", "2999x2999x2999", "1x4096x4096", "77x1001x33"}) {
      for (float beta : {0.0f, -2.0f}) {
        const GemmProblem p = half_problem(shape, t, 0.5f, beta);
        const auto r = op.check(p, ++seed, [&](const KtuneGemmArgs& a, CUstream s) {
          rt.gemm_ex(p, a.A, a.B, a.C, p.alpha, p.beta, s);
        }, nullptr);
        const Selection sel = rt.best_config(p);
        EXPECT_TRUE(r.pass) << p.key() << " (" << to_string(sel.provenance) << " " << sel.family << "): " << r.summary();
        std::cout << "[ ktune    ] runtime " << p.key() << ": " << to_string(sel.provenance) << " " << sel.family << " "
                  << r.rel_error << " (" << sel.why << ")\n";
        EXPECT_EQ(sel.why.find("disagrees"), std::string::npos) << p.key() << ": a correct lender rejected: " << sel.why;
        // A pinned tc16 config where the family serves the shape: the kernel path, not cuBLAS.
        const auto cfgs = f.sample(p, *dev_, 1, 11);
        if (!cfgs.empty()) {
          Selection pin;
          pin.provenance = Provenance::exact;
          pin.family = f.name();
          pin.config = cfgs[0];
          const auto k = op.check(p, ++seed, [&](const KtuneGemmArgs& a, CUstream s) {
            rt.gemm_ex(p, pin, a.A, a.B, a.C, p.alpha, p.beta, s);
          }, nullptr);
          EXPECT_TRUE(k.pass) << p.key() << " pinned " << cfgs[0].to_json() << ": " << k.summary();
        }
      }
    }
  }
  // The C API, row- and column-major, both element types; and the refusals.
  ktune_handle_t h = nullptr;
  ASSERT_EQ(ktune_create(&h, ""), KTUNE_SUCCESS) << ktune_last_error();
  for (DType t : {DType::bf16, DType::f16}) {
    const ktune_datatype_t kt = t == DType::bf16 ? KTUNE_R_16BF : KTUNE_R_16F;
    const GemmProblem p = half_problem("300x200x136", t, 1.0f, 1.0f);
    // Row-major C = A B is column-major C^T = B^T A^T: the same buffers serve both orders.
    for (ktune_order_t order : {KTUNE_ROW_MAJOR, KTUNE_COL_MAJOR}) {
      const auto r = op.check(p, ++seed, [&](const KtuneGemmArgs& a, CUstream s) {
        const bool row = order == KTUNE_ROW_MAJOR;
        const ktune_status_t st =
            row ? ktune_gemm_ex(h, order, KTUNE_OP_N, KTUNE_OP_N, int(p.m), int(p.n), int(p.k), p.alpha, a.A, kt, int(a.lda),
                                a.B, kt, int(a.ldb), p.beta, a.C, kt, int(a.ldc), KTUNE_COMPUTE_32F, s)
                : ktune_gemm_ex(h, order, KTUNE_OP_N, KTUNE_OP_N, int(p.n), int(p.m), int(p.k), p.alpha, a.B, kt, int(a.ldb),
                                a.A, kt, int(a.lda), p.beta, a.C, kt, int(a.ldc), KTUNE_COMPUTE_32F, s);
        ASSERT_EQ(st, KTUNE_SUCCESS) << ktune_last_error();
      }, nullptr);
      EXPECT_TRUE(r.pass) << p.key() << " order " << order << ": " << r.summary();
    }
  }
  ktune_destroy(h);
}
