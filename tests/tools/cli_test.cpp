// The ktune program as a user runs it: exit codes and output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "test_paths.h"

namespace {

struct CliRun {
  int status;
  std::string out; // stdout and stderr together
};

CliRun run_ktune(const std::string& args) {
  const std::string cmd = ktune::testing::ktune_binary() + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

} // namespace

TEST(Cli, HelpListsTheSubcommands) {
  const CliRun r = run_ktune("--help");
  EXPECT_EQ(r.status, 0);
  for (const char* sub : {"space", "devices", "compile"}) EXPECT_NE(r.out.find(sub), std::string::npos) << r.out;
}

TEST(Cli, UnknownSubcommandOrFlagExitsTwoWithAMessage) {
  CliRun r = run_ktune("frobnicate");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("unknown subcommand 'frobnicate'"), std::string::npos) << r.out;
  r = run_ktune("space --frobnicate");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--frobnicate"), std::string::npos) << r.out;
  r = run_ktune("");
  EXPECT_EQ(r.status, 2);
}

TEST(Cli, SpaceCountPrintsOneIntegerOfAtLeastAThousand) {
  const CliRun r = run_ktune("space --family gemm_simt --arch sm_90 --count");
  ASSERT_EQ(r.status, 0) << r.out;
  size_t used = 0;
  const long long n = std::stoll(r.out, &used);
  EXPECT_EQ(r.out.substr(used), "\n");
  EXPECT_GE(n, 1000);
}

TEST(Cli, SpaceSummaryShowsParametersConstraintsAndASample) {
  const CliRun r = run_ktune("space --family gemm_smem --arch sm_80");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("TILE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 valid"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("{\"TILE\":"), std::string::npos) << r.out;
}

TEST(Cli, AnEmptySpaceSaysWhy) {
  const CliRun r = run_ktune("space --family gemm_skinny --problem 4096x4096x4096");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("space    0 valid"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("M <= 64"), std::string::npos) << r.out;
  const CliRun ok = run_ktune("space --family gemm_skinny --problem 16x4096x4096 --count");
  EXPECT_EQ(ok.status, 0) << ok.out;
  EXPECT_GT(std::stoull(ok.out), 1000u) << ok.out;
}

TEST(Cli, CompileWritesTheCubinWhereAsked) {
  const std::string out = ::testing::TempDir() + "ktune-cli-test.cubin";
  std::remove(out.c_str());
  const CliRun r = run_ktune("compile --family gemm_skinny --problem 1x4096x4096 --config "
                             "'{\"MT\":1,\"NT\":256,\"VEC\":4,\"KG\":8,\"NC\":1,\"UNROLL\":2,\"KC\":256,\"LDH\":1,\"CL\":1,\"SPLITK\":2}' -o " + out);
  EXPECT_EQ(r.status, 0) << r.out;
  FILE* f = std::fopen(out.c_str(), "rb");
  ASSERT_NE(f, nullptr) << r.out;
  char magic[4] = {};
  EXPECT_EQ(std::fread(magic, 1, 4, f), 4u);
  std::fclose(f);
  EXPECT_EQ(std::string(magic + 1, 3), "ELF"); // a cubin is an ELF image
  std::remove(out.c_str());
}

TEST(Cli, BadArgumentsAreUsageErrors) {
  EXPECT_EQ(run_ktune("space --family nope --count").status, 2);
  EXPECT_EQ(run_ktune("space --arch sm_7 --count").status, 2);
  EXPECT_EQ(run_ktune("space --problem 12x12 --count").status, 2);
  EXPECT_EQ(run_ktune("space --restrict /nonexistent.json --count").status, 2);
  EXPECT_EQ(run_ktune("compile --family gemm_smem --config '{\"TILE\":12}'").status, 2);
  EXPECT_EQ(run_ktune("compile --family gemm_smem --config 'nope'").status, 2);
}

TEST(Cli, CompileReportsTheCubin) {
  const CliRun r = run_ktune("compile --family gemm_smem --config '{\"TILE\":16}' --arch sm_80");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("byte cubin"), std::string::npos) << r.out;
}

TEST(Cli, TuneRejectsBadInputBeforeLookingForADevice) {
  CliRun r = run_ktune("tune --suite /nonexistent/suite.json");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("cannot read suite file '/nonexistent/suite.json'"), std::string::npos) << r.out;
  r = run_ktune("tune --problem 12x12");
  EXPECT_EQ(r.status, 2);
  r = run_ktune("tune --problem 64x64x64 --strategy sideways");
  EXPECT_EQ(r.status, 2);
  r = run_ktune("tune --problem 64x64x64 --budget-evals 0");
  EXPECT_EQ(r.status, 2);
  r = run_ktune("tune --problem 64x64x64 --dtype int8");
  EXPECT_EQ(r.status, 2);
  r = run_ktune("tune --problem 64x64x64 --family gemm_nope");
  EXPECT_EQ(r.status, 2);
  r = run_ktune("tune --problem 64x64x64 --budget-evals");
  EXPECT_EQ(r.status, 2);
}

TEST(Cli, TuneAndDevicesWithoutADeviceSaySoInOneLineAndExitOne) {
  const CliRun probe = run_ktune("devices");
  if (probe.status == 0) GTEST_SKIP() << "this machine has a GPU";
  for (const char* cmd : {"devices", "tune --problem 64x64x64 --db /tmp/ktune-nogpu-test.db"}) {
    const CliRun r = run_ktune(cmd);
    EXPECT_EQ(r.status, 1) << cmd;
    EXPECT_NE(r.out.find("no GPU available"), std::string::npos) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  }
}

TEST(Cli, UnreadableSuiteContentIsAUsageError) {
  const std::string bad = "/tmp/ktune-bad-suite.json";
  FILE* f = std::fopen(bad.c_str(), "w");
  ASSERT_TRUE(f);
  std::fputs("{\"problems\": [{\"m\": 4, \"n\": 4}]}", f);
  std::fclose(f);
  const CliRun r = run_ktune("tune --suite " + bad);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("problem 0: missing \"k\""), std::string::npos) << r.out;
}

TEST(Cli, QueryAnswersFromTheShippedTableWithoutADevice) {
  CliRun r = run_ktune("query --arch sm_90 --problem 4096x4096x4096 --json --db /nonexistent.db");
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tuned_problem"], "gemm/f32/NN/4096x4096x4096/a16");
  EXPECT_EQ(j["distance"], 0.0);
  EXPECT_EQ(j["source"], "shipped table sm_90");
  // exact, or cublas where the table itself records cuBLAS as faster for the problem
  EXPECT_EQ(j["provenance"], j["cublas_ms"].get<double>() < j["time_ms"].get<double>() ? "cublas" : "exact");

  r = run_ktune("query --arch sm_90 --problem 4000x4000x4000 --json --db /nonexistent.db");
  ASSERT_EQ(r.status, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tuned_problem"], "gemm/f32/NN/4096x4096x4096/a16");
  EXPECT_GT(j["distance"].get<double>(), 0.0);
  EXPECT_EQ(j["provenance"], j["cublas_ms"].get<double>() < j["time_ms"].get<double>() ? "cublas" : "nearest");

  r = run_ktune("query --arch sm_90 --problem 16x4000x4000 --json --db /nonexistent.db");
  ASSERT_EQ(r.status, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tuned_problem"], "gemm/f32/NN/16x4096x4096/a16");
  EXPECT_EQ(j["provenance"], j["cublas_ms"].get<double>() < j["time_ms"].get<double>() ? "cublas" : "nearest");
}

TEST(Cli, QueryTf32x3OptsIntoTheTensorCoreTable) {
  const CliRun r = run_ktune("query --arch sm_90 --problem 4000x4000x4000 --json --db /nonexistent.db --tf32x3");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["family"], "gemm_tf32x3");
  EXPECT_EQ(j["source"], "shipped table sm_90-tf32x3");
  EXPECT_EQ(j["tuned_problem"], "gemm/f32/NN/4096x4096x4096/a16");
  EXPECT_EQ(j["provenance"], "nearest");
}

TEST(Cli, QueryWithoutArchOrDeviceIsAUsageError) {
  if (run_ktune("devices").status == 0) GTEST_SKIP() << "this machine has a GPU";
  const CliRun r = run_ktune("query --problem 64x64x64");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--arch"), std::string::npos) << r.out;
}

TEST(Cli, BenchNeedsASuiteOrALadderAndSaysWhenThereIsNoDevice) {
  EXPECT_EQ(run_ktune("bench").status, 2);
  EXPECT_EQ(run_ktune("bench --suite configs/suites/quick.json --ladder configs/ladder.json").status, 2);
  EXPECT_EQ(run_ktune("bench --suite /nonexistent.json").status, 2);
  if (run_ktune("devices").status == 0) GTEST_SKIP() << "this machine has a GPU";
  const std::string suite = std::string(KTUNE_SOURCE_DIR) + "/configs/suites/quick.json";
  const CliRun r = run_ktune("bench --suite " + suite);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("no GPU available"), std::string::npos) << r.out;
}

TEST(Cli, SimulateReplaysARecordedRun) {
  const std::string log = std::string(KTUNE_SOURCE_DIR) + "/tests/data/h100-gemm_simt-exhaustive-replay.json";
  CliRun r = run_ktune("simulate --trials " + log + " --strategy genetic --repeat 2");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("median over problems"), std::string::npos) << r.out;
  EXPECT_EQ(run_ktune("simulate --trials " + log + " --strategy sideways").status, 2);
  EXPECT_EQ(run_ktune("simulate --trials /nonexistent.json").status, 2);
}
