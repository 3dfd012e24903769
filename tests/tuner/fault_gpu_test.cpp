// Fault isolation on a real GPU: a family whose configs include deliberate faults is tuned end
// to end through the real worker process. Every fault must land in the store with the right
// status, the run must complete, and the best must be the fastest correct config.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "db/store.h"
#include "gpu_env.h"
#include "test_paths.h"
#include "tuner/session.h"
#include "ktune/gemm_problem.h"

using namespace ktune;

namespace {

// FAULT: 0 correct, 1 correct but slow, 2 out-of-bounds write, 3 infinite loop, 4 __trap(),
// 5 wrong answer, 6 more shared memory than any GPU has, 7 compile error.
const char* kFaultSource = R"(
#include "gemm_args.h"
template <int FAULT>
__global__ void fault_gemm(KtuneGemmArgs p) {
  static_assert(FAULT != 7, "deliberate compile error");
  extern __shared__ float scratch[];
  const int col = blockIdx.x * 16 + threadIdx.x, row = blockIdx.y * 16 + threadIdx.y;
  // Spins on a volatile global read whose exit condition never holds (inputs are in [-1, 1)); a
  // spin on a local was seen compiled away, so the loop must depend on memory.
  if (FAULT == 3) { while (*(volatile const float*)p.A < 1e30f) {} }
  if (FAULT == 4) __trap();
  if (FAULT == 1) { const long long t0 = clock64(); while (clock64() - t0 < 200000) {} }
  if (row >= p.M || col >= p.N) return;
  float acc = 0.0f;
  for (int k = 0; k < p.K; ++k) acc = fmaf(p.A[(long long)row * p.lda + k], p.B[(long long)k * p.ldb + col], acc);
  if (FAULT == 5) acc += 1.0f;
  if (FAULT == 6) scratch[threadIdx.x] = acc;
  float* c = p.C + (long long)row * p.ldc + col;
  if (FAULT == 2) c += (1ll << 40); // far outside any allocation: an illegal address
  *c = p.beta == 0.0f ? p.alpha * acc : p.alpha * acc + p.beta * *c;
}
)";

Family fault_family() {
  Family f("fault_test", "tests/fault_test.cu");
  f.source_text(kFaultSource)
      .param("FAULT", {0, 1, 2, 3, 4, 5, 6, 7})
      .restrict("NN layout only", {"FAULT"}, [](const Config&, const GemmProblem& p, const DeviceInfo&) {
        return p.a == Layout::row && p.b == Layout::row;
      })
      .kernels([](const Config& c, const GemmProblem&) {
        return std::vector<std::string>{"fault_gemm<" + std::to_string(c["FAULT"]) + ">"};
      })
      .launch([](const Config& c, const GemmProblem& p) {
        LaunchStep s;
        s.grid[0] = unsigned((p.n + 15) / 16);
        s.grid[1] = unsigned((p.m + 15) / 16);
        s.block[0] = s.block[1] = 16;
        s.dynamic_smem = c["FAULT"] == 6 ? (1u << 20) : 0;
        return LaunchPlan{{s}, 0, {}};
      });
  return f;
}

} // namespace

TEST(FaultGpu, EveryFaultIsRecordedAndTheBestIsTheFastestCorrectConfig) {
  std::string why;
  const DeviceInfo* dev = ktune::testing::first_gpu(&why);
  if (!dev) GTEST_SKIP() << "no GPU: " << why;
  const auto db = (std::filesystem::temp_directory_path() / ("ktune-fault-" + std::to_string(getpid()) + ".db")).string();
  TuneOptions o;
  o.families = {fault_family()};
  o.problems = {GemmProblem::parse("512x512x512")};
  o.strategy = "exhaustive";
  o.db_path = db;
  o.device = dev->ordinal;
  o.timeout_s = 15;
  o.worker_argv = {ktune::testing::ktune_binary(), "worker"};
  o.quiet = true;
  o.progress = false;
  const TuneResult r = tune(o);

  Store s(db);
  const auto rows = s.trials(s.device_id(r.device), s.problem_id(o.problems[0]));
  ASSERT_EQ(rows.size(), 8u);
  const TrialStatus expected[] = {TrialStatus::ok,           TrialStatus::ok,          TrialStatus::launch_error,
                                  TrialStatus::timeout,      TrialStatus::launch_error, TrialStatus::wrong_result,
                                  TrialStatus::launch_error, TrialStatus::compile_error};
  for (const auto& t : rows) {
    const int fault = Config::from_json(t.config_json)["FAULT"];
    EXPECT_EQ(to_string(t.status), std::string(to_string(expected[fault]))) << "FAULT " << fault << ": " << t.error;
    std::cout << "[ ktune    ] FAULT " << fault << " -> " << to_string(t.status) << ": " << t.error.substr(0, 160) << "\n";
  }
  const auto best = s.best(r.device.arch, o.problems[0].key());
  ASSERT_TRUE(best);
  EXPECT_EQ(best->config_json, "{\"FAULT\":0}");
  EXPECT_GE(r.worker_restarts, 3); // illegal address, trap, timeout each cost a worker
}
