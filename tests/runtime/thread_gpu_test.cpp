// One ktune::Runtime, and one C handle, shared by several threads, each on its own stream: the
// thread-safety runtime.h and ktune.h promise. Every thread runs the same mix of problems in its
// own order (tuned shapes, untuned ones that first use measures while other threads launch,
// decode shapes, alpha == 0), twice, and checks every result against the FP64 reference.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "gpu_env.h"
#include "ktune/ktune.h"
#include "ktune/runtime.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/module.h"
#include "tuner/gemm_op.h"
#include "ktune/gemm_problem.h"

using namespace ktune;

namespace {

constexpr int kThreads = 4;

std::vector<GemmProblem> mix() {
  std::vector<GemmProblem> out;
  for (const char* s : {"1024x1024x1024", "16x4096x4096", "1000x1100x1200", "8x4096x2000", "300x200x100", "2048x768x3072"})
    out.push_back(GemmProblem::parse(s));
  GemmProblem z = GemmProblem::parse("513x257x129");
  z.alpha = 0.0f, z.beta = 0.5f; // alpha == 0: C = beta * C, A and B unread
  out.push_back(z);
  return out;
}

// Runs body(thread index, its GemmOp, its stream) on kThreads threads at once; each thread has
// the primary context current, its own stream, compiler and reference (GemmOp is one thread's).
template <class F>
void on_threads(const DeviceInfo& dev, F body) {
  std::vector<std::thread> threads;
  std::mutex mu;
  std::vector<std::string> errors;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        CudaContext ctx(dev.ordinal);
        CUstream stream = nullptr;
        check_cu(driver().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate", "thread test");
        std::unique_ptr<CUstream_st, void (*)(CUstream)> guard(stream, [](CUstream s) { driver().cuStreamDestroy(s); });
        Compiler compiler(1);
        GemmOp op(compiler, dev);
        body(t, op, stream);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lk(mu);
        errors.push_back("thread " + std::to_string(t) + ": " + e.what());
      }
    });
  for (auto& th : threads) th.join();
  for (const auto& e : errors) ADD_FAILURE() << e;
}

} // namespace

TEST(ThreadsGpu, OneRuntimeServesThreadsOnTheirOwnStreams) {
  std::string why;
  const DeviceInfo* dev = ktune::testing::first_gpu(&why);
  if (!dev) GTEST_SKIP() << "no GPU: " << why;
  RuntimeOptions o;
  o.db_path = ""; // shipped tables only: untuned problems are measured at first use
  o.tf32x3 = true;
  Runtime rt(o);
  const auto problems = mix();
  std::atomic<int> checked{0};
  std::mutex fail_mu;
  on_threads(*dev, [&](int t, GemmOp& op, CUstream stream) {
    for (int round = 0; round < 2; ++round)
      for (size_t i = 0; i < problems.size(); ++i) {
        // Each thread starts the list elsewhere, so first uses of one problem race on purpose.
        const GemmProblem& p = problems[(i + size_t(t)) % problems.size()];
        const auto r = op.check(p, 7000 + 100 * t + 10 * round + i, [&](const KtuneGemmArgs& a, CUstream s) {
          rt.gemm(p, a.A, a.B, a.C, p.alpha, p.beta, s);
        }, stream);
        if (!r.pass) {
          std::lock_guard<std::mutex> lk(fail_mu);
          ADD_FAILURE() << "thread " << t << " " << p.key() << ": " << r.summary();
        }
        ++checked;
      }
  });
  EXPECT_EQ(checked.load(), kThreads * 2 * int(problems.size()));
  // Every untuned problem was measured once and the answer is the same for every thread.
  EXPECT_TRUE(rt.best_config(GemmProblem::parse("1000x1100x1200")).measured);
}

TEST(ThreadsGpu, OneCHandleServesThreadsOnTheirOwnStreams) {
  std::string why;
  const DeviceInfo* dev = ktune::testing::first_gpu(&why);
  if (!dev) GTEST_SKIP() << "no GPU: " << why;
  ktune_handle_t h = nullptr;
  ASSERT_EQ(ktune_create(&h, "/nonexistent/ktune.db"), KTUNE_SUCCESS) << ktune_last_error();
  const auto problems = mix();
  std::atomic<int> checked{0};
  std::mutex fail_mu;
  on_threads(*dev, [&](int t, GemmOp& op, CUstream stream) {
    for (size_t i = 0; i < problems.size(); ++i) {
      const GemmProblem& p = problems[(i + size_t(t)) % problems.size()];
      const auto r = op.check(p, 8000 + 100 * t + i, [&](const KtuneGemmArgs& a, CUstream s) {
        const ktune_status_t st = ktune_sgemm(h, KTUNE_ROW_MAJOR, KTUNE_OP_N, KTUNE_OP_N, a.M, a.N, a.K, a.alpha, a.A,
                                              int(a.lda), a.B, int(a.ldb), a.beta, a.C, int(a.ldc), s);
        // ktune_last_error is per thread: this thread's message, whatever the others do.
        if (st != KTUNE_SUCCESS) throw Error(std::string("ktune_sgemm: ") + ktune_last_error());
      }, stream);
      if (!r.pass) {
        std::lock_guard<std::mutex> lk(fail_mu);
        ADD_FAILURE() << "thread " << t << " " << p.key() << ": " << r.summary();
      }
      ++checked;
    }
  });
  EXPECT_EQ(checked.load(), kThreads * int(problems.size()));
  EXPECT_EQ(ktune_destroy(h), KTUNE_SUCCESS);
}
