// ktune simulate on the committed recorded run (tests/data/, an exhaustive gemm_simt run on an
// H100 over four public-suite problems): issue 6's acceptance figure, checked in CI.
#include "tuner/simulate.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "ktune/error.h"
#include "test_paths.h"

using namespace ktune;

namespace {
const std::string kLog = std::string(KTUNE_SOURCE_DIR) + "/tests/data/h100-gemm_simt-exhaustive-replay.json";
}

TEST(Simulate, TheRecordedRunIsAWholeExhaustiveRun) {
  const TrialLog log = read_trial_log_file(kLog);
  EXPECT_EQ(log.device_name, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(log.problems.size(), 4u);
  for (const auto& p : log.problems) EXPECT_EQ(p.trials.size(), 864u) << p.problem.key();
}

TEST(Simulate, ModelGuidedSearchNeedsAtMostTenPercentOfTheSpaceToComeWithinThreePercent) {
  // The acceptance command, as a user runs it.
  const std::string cmd = ktune::testing::ktune_binary() + " simulate --trials " + kLog + " --strategy model --repeat 20 --json";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_TRUE(f);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  const int st = pclose(f);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << out;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["repeats"], 20);
  EXPECT_EQ(j["problems"].size(), 4u);
  const double frac = j["median"]["within_percent"]["3"]["fraction"];
  EXPECT_LE(frac, 0.10);
  std::cout << "[ ktune    ] model: median fraction of the space to within 3 %: " << frac << "\n";
}

TEST(Simulate, ModelBeatsRandomAndResultsAreReproducible) {
  const TrialLog log = read_trial_log_file(kLog);
  const auto model = simulate(log, "model", 1, 10), random = simulate(log, "random", 1, 10);
  EXPECT_LT(model.median[1].fraction, random.median[1].fraction);
  EXPECT_EQ(simulation_json(simulate(log, "genetic", 4, 3)), simulation_json(simulate(log, "genetic", 4, 3)));
  // Exhaustive replays the recorded order: it needs exactly as many evaluations as the run did
  // to pass the best.
  const auto ex = simulate(log, "exhaustive", 1, 1);
  for (const auto& p : ex.problems) EXPECT_LE(p.reach[0].evals, double(p.space));
}

TEST(Simulate, BadInputIsAUsageError) {
  const TrialLog log = read_trial_log_file(kLog);
  EXPECT_THROW(simulate(log, "hill-climbing", 1, 1), UsageError);
  EXPECT_THROW(simulate(log, "model", 1, 0), UsageError);
  EXPECT_THROW(parse_trial_log(R"({"schema": "ktune.trials/2"})", "t"), UsageError);
}

// Two records that one config names once upgraded (attention_decode_paged reads a recorded ILV 0
// as 1, the order it kept): the replay answers with the faster ok one, so the recorded best is
// reached; a trial that failed does not hide an ok one.
TEST(Simulate, RecordsOneUpgradedConfigNamesAnswerWithTheFasterOk) {
  TrialLog log;
  log.device_name = "GPU X", log.arch = "sm_90", log.sm_count = 132;
  ProblemLog pl;
  pl.problem = Problem::parse("attention_paged", "1x32x8x1x32768x128x64x4096", "causal", DType::bf16);
  const std::string split = R"({"CHUNK":2048,"ROWS":16,"WARPS":4,"BN":32,"STAGES":3,"CLUSTER":0,"ILV":)";
  const std::string unsplit = R"({"CHUNK":0,"ROWS":16,"WARPS":4,"BN":16,"STAGES":3,"CLUSTER":0,"ILV":)";
  pl.trials = {{"attention_decode_paged", split + "0}", "ok", 0.060, 1, 1},
               {"attention_decode_paged", split + "1}", "ok", 0.050, 1, 1},
               {"attention_decode_paged", unsplit + "1}", "wrong_result", 0, 1, 1},
               {"attention_decode_paged", unsplit + "0}", "ok", 0.300, 1, 1}};
  log.problems.push_back(pl);
  const SimResult r = simulate(log, "random", 1, 3);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].space, 2u);
  EXPECT_DOUBLE_EQ(r.problems[0].best_ms, 0.050);
  EXPECT_EQ(r.problems[0].reach[0].missed, 0);
}
