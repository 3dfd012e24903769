// The ktune program as a user runs it: exit codes and output.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <sys/wait.h>

namespace {

struct CliRun {
  int status;
  std::string out; // stdout and stderr together
};

// The ktune binary beside this test's build tree (tests/ktune_tests -> ../ktune), found from
// /proc/self/exe so that a build folder copied elsewhere (the GPU machine) still finds it.
std::string ktune_path() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return std::string(KTUNE_BINARY_DIR) + "/ktune";
  return (self.parent_path().parent_path() / "ktune").string();
}

CliRun ktune(const std::string& args) {
  const std::string cmd = ktune_path() + " " + args + " 2>&1";
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
  const CliRun r = ktune("--help");
  EXPECT_EQ(r.status, 0);
  for (const char* sub : {"space", "devices", "compile"}) EXPECT_NE(r.out.find(sub), std::string::npos) << r.out;
}

TEST(Cli, UnknownSubcommandOrFlagExitsTwoWithAMessage) {
  CliRun r = ktune("frobnicate");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("unknown subcommand 'frobnicate'"), std::string::npos) << r.out;
  r = ktune("space --frobnicate");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--frobnicate"), std::string::npos) << r.out;
  r = ktune("");
  EXPECT_EQ(r.status, 2);
}

TEST(Cli, SpaceCountPrintsOneIntegerOfAtLeastAThousand) {
  const CliRun r = ktune("space --family gemm_simt --arch sm_90 --count");
  ASSERT_EQ(r.status, 0) << r.out;
  size_t used = 0;
  const long long n = std::stoll(r.out, &used);
  EXPECT_EQ(r.out.substr(used), "\n");
  EXPECT_GE(n, 1000);
}

TEST(Cli, SpaceSummaryShowsParametersConstraintsAndASample) {
  const CliRun r = ktune("space --family gemm_smem --arch sm_80");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("TILE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 valid"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("{\"TILE\":"), std::string::npos) << r.out;
}

TEST(Cli, BadArgumentsAreUsageErrors) {
  EXPECT_EQ(ktune("space --family nope --count").status, 2);
  EXPECT_EQ(ktune("space --arch sm_7 --count").status, 2);
  EXPECT_EQ(ktune("space --problem 12x12 --count").status, 2);
  EXPECT_EQ(ktune("space --restrict /nonexistent.json --count").status, 2);
  EXPECT_EQ(ktune("compile --family gemm_smem --config '{\"TILE\":12}'").status, 2);
  EXPECT_EQ(ktune("compile --family gemm_smem --config 'nope'").status, 2);
}

TEST(Cli, CompileReportsTheCubin) {
  const CliRun r = ktune("compile --family gemm_smem --config '{\"TILE\":16}' --arch sm_80");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("byte cubin"), std::string::npos) << r.out;
}
