// The ktune program as a user runs it: exit codes and output.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "core/trial.h"
#include "ktune/config.h"
#include "db/store.h"
#include "poisoned_db.h"
#include "test_paths.h"

namespace {

using ktune::testing::CliRun;
using ktune::testing::file_bytes;
using ktune::testing::run_command;
using ktune::testing::run_ktune;

// stderr alone (stdout discarded): where a refusal must say why.
CliRun run_ktune_stderr(const std::string& args) { return run_ktune(args, " 2>&1 >/dev/null"); }

// With no user database (the default one not written yet; --db names an existing file only): the
// shipped tables answer.
CliRun run_ktune_without_db(const std::string& args) {
  return ktune::testing::run_command("KTUNE_DB=/nonexistent.db " + ktune::testing::ktune_binary() + " " + args +
                                     " 2>&1");
}

std::string scratch(const std::string& name) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / ("ktune-cli-import-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = scratch(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// A table of one entry for Mx64x64 with the given family and config (JSON text).
std::string one_entry_table(const std::string& family, const std::string& config, const std::string& arch = "sm_90",
                            int64_t m = 64, double time_ms = 1e-4) {
  const nlohmann::ordered_json entry = {{"op", "gemm"},
                                        {"dtype", "f32"},
                                        {"layout", "NN"},
                                        {"m", m},
                                        {"n", 64},
                                        {"k", 64},
                                        {"align", 16},
                                        {"family", family},
                                        {"config", nlohmann::ordered_json::parse(config)},
                                        {"time_ms", time_ms},
                                        {"tflops", 5.0},
                                        {"cublas_ms", 0.02},
                                        {"template_hash", "abc"},
                                        {"gate", ktune::kGateVersion}};
  const nlohmann::ordered_json table = {{"schema", "ktune.table/1"},
                                        {"device", {{"name", "GPU X"}, {"arch", arch}, {"sm_count", 132}}},
                                        {"entries", nlohmann::ordered_json::array({entry})}};
  return table.dump(1);
}

// A fresh database `name` (under scratch) holding one gemm_smem entry imported from table file
// `table`; "" (with the import's output as a failure) when the import does not succeed.
std::string db_with_one_entry(const std::string& name, const std::string& table) {
  const std::string db = scratch(name);
  std::filesystem::remove(db);
  const CliRun r = run_ktune("import " + write_file(table, one_entry_table("gemm_smem", R"({"TILE": 16})")) + " --db " + db);
  EXPECT_EQ(r.status, 0) << r.out;
  return r.status == 0 ? db : "";
}

// Each bad table and a phrase its refusal must contain. Every entry is faster than anything in
// the database, so an import that slipped through would change the best.
const std::vector<std::pair<std::string, std::string>>& bad_tables() {
  static const std::vector<std::pair<std::string, std::string>> bad = {
      {one_entry_table("gemm_smem", R"({"TILE": -5})"), "value -5 is outside the domain of 'TILE'"},
      {one_entry_table("gemm_smem", R"({"TILE": 7})"), "value 7 is outside the domain of 'TILE'"},
      {one_entry_table("gemm_evil", R"({"TILE": 16})"), "unknown family 'gemm_evil'"},
      {one_entry_table("gemm_smem", R"({"TILE": 16, "ZZ": 1})"), "unknown parameter 'ZZ'"},
      {one_entry_table("gemm_naive", R"({"BX": 32})"), "parameter 'BY' is missing"},
      {one_entry_table(
           "gemm_skinny",
           R"({"MT":16,"NT":128,"VEC":4,"KG":4,"NC":1,"UNROLL":1,"KC":32,"LDH":0,"CL":0,"SPLITK":4,"ST":4,"MINB":3})",
           "sm_90", 4096),
       "breaks constraint 'M <= 64 (skinny problems only)' for gemm/f32/NN/4096x64x64/a16"},
      {one_entry_table("gemm_smem", R"({"TILE": 16})", "sm_70"), "no nominal limits for arch 'sm_70'"},
      // Well-formed, but a key no reader could parse back: once imported, it failed every query.
      {one_entry_table("gemm_smem", R"({"TILE": 16})", "sm_90", int64_t(1) << 40),
       "m = 1099511627776 is out of range (at most 2147483647 for gemm)"},
      {one_entry_table("gemm_smem", R"({"TILE": 16})", "sm_90", int64_t(1) << 31),
       "m = 2147483648 is out of range (at most 2147483647 for gemm)"},
  };
  return bad;
}

} // namespace

TEST(Cli, HelpListsTheSubcommands) {
  const CliRun r = run_ktune("--help");
  EXPECT_EQ(r.status, 0);
  for (const char* sub : {"space", "devices", "compile"}) EXPECT_NE(r.out.find(sub), std::string::npos) << r.out;
}

// ktune cache lists the runtime's cubin cache per arch and --clear empties it; a missing file and
// a cache turned off are said so (exit 0).
TEST(Cli, CacheListsAndClearsTheCubinCache) {
  const std::string path = scratch("cubins.db");
  std::filesystem::remove(path);
  CliRun r = run_ktune("cache --path " + path);
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("none yet"), std::string::npos) << r.out;
  {
    ktune::Store st(path);
    st.put_binary("k1", "sm_90", std::vector<char>(1000, 'x'), {"_Z1fv"});
    st.put_binary("k2", "sm_90", std::vector<char>(500, 'y'), {"_Z1gv"});
    st.put_binary("k3", "sm_80", std::vector<char>(250, 'z'), {"_Z1hv"});
  }
  r = run_ktune("cache --path " + path);
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("3 cubins"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(sm_90 +2 cubins)"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(sm_80 +1 cubins)"))) << r.out;
  r = run_ktune("cache --clear --path " + path);
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("deleted 3 cubins"), std::string::npos) << r.out;
  std::vector<char> cubin;
  std::vector<std::string> names;
  EXPECT_FALSE(ktune::Store(path, true).get_binary("k1", &cubin, &names));
  setenv("KTUNE_CUBIN_CACHE", "", 1); // the child inherits it: no cache
  r = run_ktune("cache");
  unsetenv("KTUNE_CUBIN_CACHE");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("set empty"), std::string::npos) << r.out;
}

TEST(Cli, CacheTrimsTheLeastRecentlyUsedCubinsToASize) {
  const std::string path = scratch("cubins-trim.db");
  std::filesystem::remove(path);
  unsetenv("KTUNE_CUBIN_CACHE_MAX_MB"); // the default limit is printed below
  {
    ktune::Store st(path);
    st.put_binary("k1", "sm_90", std::vector<char>(600000, 'x'), {"_Z1fv"});
    st.put_binary("k2", "sm_90", std::vector<char>(500000, 'y'), {"_Z1gv"});
    st.put_binary("k3", "sm_90", std::vector<char>(250000, 'z'), {"_Z1hv"});
    EXPECT_TRUE(st.touch_binary("k1")); // k2 is now the least recently used
  }
  CliRun r = run_ktune("cache --path " + path + " --max-mb 1");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("deleted 1 least recently used cubins (0.5 MB)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 cubins"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("at most 512 MB"), std::string::npos) << r.out;
  std::vector<char> cubin;
  std::vector<std::string> names;
  EXPECT_FALSE(ktune::Store(path, true).get_binary("k2", &cubin, &names));
  EXPECT_TRUE(ktune::Store(path, true).get_binary("k1", &cubin, &names));
  r = run_ktune("cache --path " + path + " --max-mb -3");
  EXPECT_NE(r.status, 0);
  r = run_ktune("cache --path " + path + " --max-mb 1 --clear");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(ktune::Store(path, true).get_binary("k1", &cubin, &names)); // nothing done
  setenv("KTUNE_CUBIN_CACHE_MAX_MB", "lots", 1);
  r = run_ktune("cache --path " + path);
  unsetenv("KTUNE_CUBIN_CACHE_MAX_MB");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("KTUNE_CUBIN_CACHE_MAX_MB='lots'"), std::string::npos) << r.out;
}

TEST(Cli, VersionNamesTheReleaseAndTheGitCommit) {
  const CliRun r = run_ktune("--version");
  EXPECT_EQ(r.status, 0);
  // A checkout gives 12 hex digits (with -dirty for uncommitted changes); a tarball "unknown".
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(^ktune [0-9]+\.[0-9]+\.[0-9]+ \(git ([0-9a-f]{12}(-dirty)?|unknown)\)\n$)")))
      << r.out;
}

TEST(Cli, UnknownSubcommandOrFlagExitsTwoWithAMessage) {
  CliRun r = run_ktune("frobnicate");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("unknown subcommand 'frobnicate'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("known: space, "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("worker"), std::string::npos) << "the internal subcommand is listed: " << r.out;
  // A flag before any subcommand is named, not taken for a missing subcommand.
  for (const char* flag : {"--bogus-flag", "--bogus=3", "-x"}) {
    r = run_ktune(std::string(flag) + " space");
    EXPECT_EQ(r.status, 2) << flag;
    EXPECT_NE(r.out.find("unknown flag '" + std::string(flag) + "'"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("A subcommand is required"), std::string::npos) << r.out;
  }
  r = run_ktune("--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.find("worker"), std::string::npos) << r.out;
  r = run_ktune("space --frobnicate");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--frobnicate"), std::string::npos) << r.out;
  r = run_ktune("");
  EXPECT_EQ(r.status, 2);
}

// gemm_simt at 4096^3 has 60.8 M valid configs, most of a minute to count: stdout holds the
// number alone, stderr says how far the count got every few seconds (not a terminal here).
TEST(Cli, SpaceCountPrintsOneIntegerOfAtLeastAThousand) {
  const std::string err = scratch("space-count.err");
  const auto t0 = std::chrono::steady_clock::now();
  const CliRun r = run_ktune("space --family gemm_simt --arch sm_90 --count", (" 2>" + err).c_str());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.status, 0) << r.out;
  size_t used = 0;
  const long long n = std::stoll(r.out, &used);
  EXPECT_EQ(r.out.substr(used), "\n");
  EXPECT_GE(n, 1000);
  const std::string progress = file_bytes(err);
  if (s > 4) {
    EXPECT_NE(progress.find("ktune: counting the valid configs of gemm_simt: "), std::string::npos) << progress;
  }
  EXPECT_EQ(progress.find('\r'), std::string::npos) << "stderr is not a terminal: whole lines only";
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

// --default prints the family's default config as JSON, the one the summary shows; a family
// without one is an error, not an empty line.
TEST(Cli, SpaceDefaultPrintsTheFamilysDefaultConfig) {
  const CliRun r = run_ktune("space --family attention_decode --problem 48x12x2x1x2048x128 --dtype bf16 --layout causal "
                             "--arch sm_90 --default");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "{\"CHUNK\":0,\"ROWS\":16,\"WARPS\":4,\"BN\":16,\"STAGES\":3,\"CLUSTER\":0,\"ILV\":0}\n");
  const CliRun summary = run_ktune("space --family attention_decode --problem 48x12x2x1x2048x128 --dtype bf16 "
                                   "--layout causal --arch sm_90");
  ASSERT_EQ(summary.status, 0) << summary.out;
  EXPECT_NE(summary.out.find("default  {\"CHUNK\":0,"), std::string::npos) << summary.out;
  // Paged at pages of 16: the tile of 32 keys (contiguous) shrinks to the page, and the splits
  // take turns along the keys.
  const CliRun split = run_ktune("space --family attention_decode --problem 1x32x8x1x32768x128 --dtype bf16 "
                                 "--layout causal --arch sm_90 --default");
  ASSERT_EQ(split.status, 0) << split.out;
  EXPECT_NE(split.out.find("\"BN\":32"), std::string::npos) << split.out;
  const CliRun paged = run_ktune("space --family attention_decode_paged --problem 1x32x8x1x32768x128x16x2048 "
                                 "--dtype bf16 --layout causal --arch sm_90 --default");
  ASSERT_EQ(paged.status, 0) << paged.out;
  EXPECT_NE(paged.out.find("\"BN\":16"), std::string::npos) << paged.out;
  EXPECT_NE(paged.out.find("\"ILV\":1"), std::string::npos) << paged.out; // paged splits take turns
  const CliRun none = run_ktune("space --family gemm_naive --problem 64x64x64 --default");
  EXPECT_NE(none.status, 0) << none.out;
  EXPECT_NE(none.out.find("declares no default"), std::string::npos) << none.out;
}

// --devices and --device name the run's GPUs two ways: one of them only, refused before anything
// runs (with or without a GPU).
TEST(Cli, TuneTakesDeviceOrDevicesNotBoth) {
  const CliRun r = run_ktune("tune --device 0 --devices all --problem 64x64x64");
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("--devices"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("excludes"), std::string::npos) << r.out;
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
  // Every arch CUDA 13 compiles for has nominal limits (a T4's, Blackwell's): a config is checked
  // against them and compiled, where before each was "no nominal limits".
  for (const char* arch : {"sm_75", "sm_87", "sm_100", "sm_103", "sm_110", "sm_120", "sm_121"}) {
    const CliRun a = run_ktune(std::string("compile --family gemm_smem --config '{\"TILE\":16}' --arch ") + arch);
    EXPECT_EQ(a.status, 0) << arch << ": " << a.out;
    EXPECT_NE(a.out.find(std::string("for ") + arch + " in"), std::string::npos) << a.out;
  }
  // A value the family reads as another (attention_decode_paged's splits always take turns): the
  // kernel compiled is the one read, and the command says so.
  const CliRun paged = run_ktune_stderr(
      "compile --family attention_decode_paged --problem 1x32x8x1x4096x128x64x256 --dtype bf16 --layout causal "
      "--arch sm_90 --config '{\"CHUNK\":1024,\"ROWS\":16,\"WARPS\":4,\"BN\":32,\"STAGES\":3,\"CLUSTER\":0,\"ILV\":0}'");
  EXPECT_EQ(paged.status, 0) << paged.out;
  EXPECT_NE(paged.out.find("family attention_decode_paged reads ILV 0 as 1"), std::string::npos) << paged.out;
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
  // --tf32x3 adds to the default families; with --family the family is named instead.
  r = run_ktune("tune --problem 64x64x64 --tf32x3 --family gemm_simt");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--tf32x3"), std::string::npos) << r.out;
  // A restriction must narrow a family the run tunes (gemm_tf32x3 is not among the defaults).
  const std::string tf32x3_space = std::string(KTUNE_SOURCE_DIR) + "/configs/spaces/gemm_tf32x3.h100.json";
  r = run_ktune("tune --problem 64x64x64 --restrict " + tf32x3_space);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("gemm_tf32x3, which this run does not tune"), std::string::npos) << r.out;
  r = run_ktune("tune --problem 64x64x64 --warm-start /nonexistent/seeds.db");
  EXPECT_EQ(r.status, 2);
}

TEST(Cli, TuneWithoutFamilyGetsAsFarAsTheDevice) {
  // No --family, the opt-in family added, a restriction of it, a model search, the shipped warm
  // start: all accepted; without a GPU the run then stops at the device, with exit 1.
  if (run_ktune("devices").status == 0) GTEST_SKIP() << "this machine has a GPU";
  const std::string tf32x3_space = std::string(KTUNE_SOURCE_DIR) + "/configs/spaces/gemm_tf32x3.h100.json";
  for (const std::string& args : {std::string("--strategy model"), "--tf32x3 --restrict " + tf32x3_space + " --strategy model",
                                  std::string("--warm-start none --strategy annealing")}) {
    const CliRun r = run_ktune("tune --problem 64x64x64 --budget-seconds 5 --db /tmp/ktune-nogpu-test.db " + args);
    EXPECT_EQ(r.status, 1) << args << ": " << r.out;
    EXPECT_NE(r.out.find("no GPU available"), std::string::npos) << r.out;
  }
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
  CliRun r = run_ktune_without_db("query --arch sm_90 --problem 4096x4096x4096 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tuned_problem"], "gemm/f32/NN/4096x4096x4096/a16");
  EXPECT_EQ(j["distance"], 0.0);
  EXPECT_EQ(j["source"], "shipped table sm_90");
  // exact, or cublas where the table itself records cuBLAS as faster for the problem
  EXPECT_EQ(j["provenance"], j["cublas_ms"].get<double>() < j["time_ms"].get<double>() ? "cublas" : "exact");

  // Untuned, near a tuned problem where cuBLAS won by 5 %: that config is still worth timing
  // here (first use decides), but no promise is made before.
  r = run_ktune_without_db("query --arch sm_90 --problem 4000x4000x4000 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["provenance"], "nearest");
  EXPECT_EQ(j["measure_pending"], true);
  EXPECT_EQ(j["tuned_problem"], "gemm/f32/NN/4096x4096x4096/a16");
  EXPECT_LT(j["candidates"][0]["predicted_ratio"].get<double>(), 1.0);

  // Far from every tuned problem: no candidate is predicted within reach, and the answer says
  // so, naming the best lender it considered.
  r = run_ktune_without_db("query --arch sm_90 --problem 3000x200x100 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["provenance"], "cublas");
  EXPECT_TRUE(j["candidates"].empty());
  EXPECT_NE(j["why"].get<std::string>().find("predicted"), std::string::npos) << j["why"];

  // Untuned decode shape: gemm_skinny's 2.6x at 16x4096x4096 makes it a candidate, timed
  // against cuBLAS at first use.
  r = run_ktune_without_db("query --arch sm_90 --problem 16x4000x4000 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tuned_problem"], "gemm/f32/NN/16x4096x4096/a16");
  EXPECT_EQ(j["provenance"], "nearest");
  EXPECT_EQ(j["measure_pending"], true);
  ASSERT_FALSE(j["candidates"].empty());
  EXPECT_EQ(j["candidates"][0]["family"], "gemm_skinny");
  EXPECT_GT(j["candidates"][0]["predicted_ratio"].get<double>(), 1.0);
  EXPECT_GT(j["cublas_ms"].get<double>(), j["time_ms"].get<double>()); // recorded at the lender's home

  // The text form says why.
  const CliRun t = run_ktune_without_db("query --arch sm_90 --problem 16x4000x4000");
  ASSERT_EQ(t.status, 0) << t.out;
  EXPECT_NE(t.out.find("why"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("candidates"), std::string::npos) << t.out;

  // An untuned aligned bf16 shape: the aligned gemm_wgmma entries lend (the unaligned ones' leads
  // over cuBLAS do not carry over to it), and the best lender's neighbours follow, marked as such,
  // with no predicted ratio.
  r = run_ktune_without_db("query --arch sm_90 --dtype bf16 --problem 3072x3072x3072 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["candidates"].empty());
  EXPECT_EQ(j["candidates"][0]["family"], "gemm_wgmma");
  EXPECT_EQ(j["candidates"][0]["neighbour"], false);
  EXPECT_TRUE(j["candidates"][0]["tuned_problem"].get<std::string>().find("/a16") != std::string::npos) << r.out;
  int neighbours = 0;
  for (const auto& c : j["candidates"])
    if (c["neighbour"].get<bool>()) {
      ++neighbours;
      EXPECT_TRUE(c["predicted_ratio"].is_null()) << c;
      EXPECT_EQ(c["tuned_problem"], j["candidates"][0]["tuned_problem"]) << c;
    }
  EXPECT_GE(neighbours, 1) << r.out;
  const CliRun tn = run_ktune_without_db("query --arch sm_90 --dtype bf16 --problem 3072x3072x3072");
  ASSERT_EQ(tn.status, 0) << tn.out;
  EXPECT_NE(tn.out.find("no prediction"), std::string::npos) << tn.out;

  // An untuned attention decode shape: candidates timed against each other (no baseline library),
  // attention_decode's neighbours among them, marked as such in both forms.
  const std::string decode = "query --arch sm_90 --op attention --dtype bf16 --layout causal --problem 3x48x1x1x8192x64";
  r = run_ktune_without_db(decode + " --json");
  ASSERT_EQ(r.status, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["measure_pending"], true);
  int decode_neighbours = 0;
  for (const auto& c : j["candidates"]) decode_neighbours += c["neighbour"].get<bool>() && c["family"] == "attention_decode";
  EXPECT_GE(decode_neighbours, 4) << r.out;
  const CliRun td = run_ktune_without_db(decode);
  ASSERT_EQ(td.status, 0) << td.out;
  EXPECT_NE(td.out.find("a neighbour of the family's default"), std::string::npos) << td.out;
}

TEST(Cli, QueryTf32x3OptsIntoTheTensorCoreTable) {
  const CliRun r = run_ktune_without_db("query --arch sm_90 --problem 4000x4000x4000 --json --tf32x3");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["family"], "gemm_wgmma_tf32x3"); // the H100 table's entry there (sm_90: the wgmma form won)
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

TEST(Cli, ImportRefusesAnEntryItsFamilyCannotServeAndLeavesTheDatabaseAlone) {
  const std::string db = scratch("existing.db");
  std::filesystem::remove(db);
  const std::string good = write_file("good.json", one_entry_table("gemm_smem", R"({"TILE": 16})", "sm_90", 64, 1.0));
  CliRun r = run_ktune("import " + good + " --db " + db);
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string before = file_bytes(db);
  ASSERT_FALSE(before.empty());
  for (size_t i = 0; i < bad_tables().size(); ++i) {
    const auto& [text, why] = bad_tables()[i];
    const std::string f = write_file("bad" + std::to_string(i) + ".json", text);
    r = run_ktune_stderr("import " + f + " --db " + db);
    EXPECT_EQ(r.status, 2) << text << "\n" << r.out;
    EXPECT_NE(r.out.find(f + " entry 0 (gemm/f32/NN/"), std::string::npos) << r.out; // names the entry
    EXPECT_NE(r.out.find(why), std::string::npos) << r.out;
    EXPECT_EQ(file_bytes(db), before) << "importing " << text << " changed the database";
    EXPECT_FALSE(std::filesystem::exists(db + "-wal") && std::filesystem::file_size(db + "-wal") > 0);
  }
  // A good table still imports, and is the one that sets the best.
  r = run_ktune("import " + write_file("better.json", one_entry_table("gemm_smem", R"({"TILE": 32})")) + " --db " + db);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("1 problems got a new or faster best"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("older verification gate"), std::string::npos) << r.out;
  // A table written before the gate had a number imports, with a note that it is not served.
  std::string old = one_entry_table("gemm_smem", R"({"TILE": 8})", "sm_90", 128);
  old.erase(old.find(",\n   \"gate\""), std::string(",\n   \"gate\": 2").size());
  ASSERT_EQ(old.find("gate"), std::string::npos) << old;
  r = run_ktune("import " + write_file("old.json", old) + " --db " + db);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("1 of them passed only an older verification gate"), std::string::npos) << r.out;
}

TEST(Cli, ImportOfAnInvalidTableDoesNotCreateTheDatabase) {
  const std::string db = scratch("never") + "/created.db";
  std::filesystem::remove_all(scratch("never"));
  for (size_t i = 0; i < bad_tables().size(); ++i) {
    const std::string f = write_file("absent" + std::to_string(i) + ".json", bad_tables()[i].first);
    const CliRun r = run_ktune_stderr("import " + f + " --db " + db);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find(bad_tables()[i].second), std::string::npos) << r.out;
    EXPECT_FALSE(std::filesystem::exists(db)) << bad_tables()[i].first;
    EXPECT_FALSE(std::filesystem::exists(scratch("never"))) << "the database's folder was created";
  }
}

// --dtype filters what export writes and what import reads; a dtype with no entries is a usage
// error that leaves the database as it was. Half precision is tunable: tune --dtype bf16 gets as
// far as the device, and tf32 (a compute mode) is refused as a storage type.
TEST(Cli, ExportAndImportFilterByDtypeAndTuneAcceptsHalfPrecision) {
  const std::string db = scratch("dtype.db");
  std::filesystem::remove(db);
  const std::string shipped = std::string(KTUNE_SOURCE_DIR) + "/configs/tables/sm_90.json";
  CliRun r = run_ktune("import " + shipped + " --db " + db + " --dtype f32");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string before = file_bytes(db);
  r = run_ktune_stderr("import " + shipped + " --db " + db + " --dtype int8");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("unknown dtype 'int8'"), std::string::npos) << r.out;
  const nlohmann::json table = nlohmann::json::parse(file_bytes(shipped));
  const bool ships_bf16 = std::any_of(table["entries"].begin(), table["entries"].end(),
                                      [](const auto& e) { return e["dtype"] == "bf16"; });
  if (!ships_bf16) {
    r = run_ktune_stderr("import " + shipped + " --db " + db + " --dtype bf16");
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("has no entries in bf16"), std::string::npos) << r.out;
  }
  EXPECT_EQ(file_bytes(db), before);
  const std::string out = scratch("f32-only.json");
  r = run_ktune("export --db " + db + " --arch sm_90 --dtype f32 -o " + out);
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json exported = nlohmann::json::parse(file_bytes(out));
  ASSERT_FALSE(exported["entries"].empty());
  for (const auto& e : exported["entries"]) EXPECT_EQ(e["dtype"], "f32");
  r = run_ktune_stderr("export --db " + db + " --arch sm_90 --dtype f16 -o " + scratch("none.json"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("in f16"), std::string::npos) << r.out;
  r = run_ktune_stderr("export --db " + db + " --trials --arch sm_90 --dtype f16 -o " + scratch("none.json"));
  EXPECT_EQ(r.status, 2) << r.out;

  r = run_ktune_stderr("tune --problem 64x64x64 --dtype tf32");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("not a storage type"), std::string::npos) << r.out;
  r = run_ktune_stderr("tune --problem 64x64x64 --dtype bf16 --tf32x3");
  EXPECT_EQ(r.status, 2) << r.out;
  // bf16 is accepted: without a GPU the run stops at the device (exit 1), not at the dtype.
  r = run_ktune_stderr("tune --problem 64x64x64 --dtype bf16 --db " + scratch("bf16.db"));
  if (r.status != 0) {
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_EQ(r.out.find("dtype"), std::string::npos) << r.out;
  }
}

// JSON nested past any file ktune writes is refused before it is parsed: 300000 arrays in a config
// parameter once overflowed the stack of ktune import (exit 139).
TEST(Cli, ImportRefusesDeepNestingAndLeavesTheDatabaseAlone) {
  const std::string db = db_with_one_entry("deep.db", "deep-good.json");
  ASSERT_FALSE(db.empty());
  const std::string before = file_bytes(db);
  for (const size_t depth : {65, 300000}) {
    std::string text = one_entry_table("gemm_smem", R"({"TILE": 16})");
    text.replace(text.find("\"TILE\": 16") + 8, 2, std::string(depth, '[') + std::string(depth, ']'));
    const std::string f = write_file("deep" + std::to_string(depth) + ".json", text);
    const CliRun r = run_ktune_stderr("import " + f + " --db " + db);
    EXPECT_EQ(r.status, 2) << r.out.substr(0, 500);
    EXPECT_NE(r.out.find(f + ": JSON nested deeper than 64 levels"), std::string::npos) << r.out.substr(0, 500);
    EXPECT_EQ(file_bytes(db), before);
  }
  // Suites and restrictions go through the same check.
  const std::string suite =
      write_file("deep-suite.json", "{\"problems\": " + std::string(100000, '[') + std::string(100000, ']') + "}");
  CliRun r = run_ktune_stderr("tune --suite " + suite + " --db " + scratch("never-tuned.db"));
  EXPECT_EQ(r.status, 2) << r.out.substr(0, 500);
  EXPECT_NE(r.out.find("nested deeper than 64 levels"), std::string::npos) << r.out.substr(0, 500);
  const std::string restriction = write_file(
      "deep-restrict.json", "{\"domains\": {\"TILE\": " + std::string(100000, '[') + std::string(100000, ']') + "}}");
  r = run_ktune_stderr("space --family gemm_smem --count --restrict " + restriction);
  EXPECT_EQ(r.status, 2) << r.out.substr(0, 500);
  EXPECT_NE(r.out.find("nested deeper than 64 levels"), std::string::npos) << r.out.substr(0, 500);
}

// A database holding rows no ktune writes (tests/poisoned_db.h: m = 2^40, a config that is not
// JSON, an unknown status) still answers: query, export (table and trials) and report skip those
// rows with one warning each and serve the rest.
TEST(Cli, EveryReaderAnswersForADatabaseWithUnreadableRows) {
  const std::string db = db_with_one_entry("poisoned.db", "poison-base.json");
  ASSERT_FALSE(db.empty());
  ASSERT_EQ(ktune::testing::poison_database(db), "");
  auto warnings = [](const std::string& out) {
    size_t n = 0;
    for (size_t at = out.find("ktune: skipped"); at != std::string::npos; at = out.find("ktune: skipped", at + 1)) ++n;
    return n;
  };
  CliRun r = run_ktune("query --arch sm_90 --problem 64x64x64 --db " + db);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("problem     gemm/f32/NN/64x64x64/a16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(store " + db + ")"), std::string::npos) << r.out;
  EXPECT_EQ(warnings(r.out), 1u) << r.out;
  EXPECT_NE(r.out.find("skipped 2 unreadable best entries of database " + db), std::string::npos) << r.out;

  const std::string out = scratch("poisoned-export.json");
  r = run_ktune("export --arch sm_90 --db " + db + " -o " + out);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(warnings(r.out), 1u) << r.out;
  EXPECT_NE(r.out.find("exported 1 entries"), std::string::npos) << r.out;
  EXPECT_EQ(run_ktune("import " + out + " --db " + scratch("poisoned-reimport.db")).status,
            0); // what export writes, import reads

  r = run_ktune("export --trials --arch sm_90 --db " + db + " -o " + scratch("poisoned-trials.json"));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(warnings(r.out), 1u) << r.out;
  EXPECT_EQ(run_ktune("simulate --trials " + scratch("poisoned-trials.json")).status, 0);

  r = run_ktune("report --arch sm_90 --db " + db + " -o " + scratch("poisoned-report"));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(warnings(r.out), 1u) << r.out;
  EXPECT_TRUE(std::filesystem::exists(scratch("poisoned-report") + "/index.html"));
  // The shape itself, asked for, is out of range: a usage error with the limit.
  r = run_ktune("query --arch sm_90 --problem 1099511627776x64x64 --db " + db);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("m = 1099511627776 is out of range (at most 2147483647 for gemm)"), std::string::npos) << r.out;
}

TEST(Cli, AShapeBeyondTheOpsLimitIsOutOfRangeNotBad) {
  for (const char* shape : {"99999999999x1x1", "1x1x2147483648"}) {
    const CliRun r = run_ktune(std::string("query --arch sm_90 --problem ") + shape);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("is out of range (at most 2147483647 for gemm)"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("bad problem shape"), std::string::npos) << r.out;
  }
  const CliRun r = run_ktune("space --family softmax_warp --problem 2147483648x64 --count");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("rows = 2147483648 is out of range (at most 2147483647 for softmax)"), std::string::npos)
      << r.out;
}

// Every numeric option refuses a negative (or otherwise impossible) value by name, exit 2, before
// any work: "-1" into a size_t option once wrapped to 2^64 - 1 (space --sample -1 ran out of
// memory), and CLI11's own range check printed a 310-digit bound.
TEST(Cli, NumericOptionsRefuseImpossibleValuesByName) {
  const std::string log = std::string(KTUNE_SOURCE_DIR) + "/tests/data/h100-gemm_simt-exhaustive-replay.json";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"space --sample -1", "--sample: '-1' is not a whole number from 0 to 100000"},
      {"space --sample 18446744073709551615", "--sample: '18446744073709551615' is not a whole number"},
      {"space --seed -1", "--seed: '-1' is not a whole number >= 0"},
      {"tune --problem 64x64x64 --budget-evals -1", "--budget-evals: '-1' is not a whole number >= 1"},
      {"tune --problem 64x64x64 --budget-evals 0", "--budget-evals: '0' is not a whole number >= 1"},
      {"tune --problem 64x64x64 --budget-seconds -1", "--budget-seconds: '-1' is not a finite number > 0"},
      {"tune --problem 64x64x64 --budget-seconds nan", "--budget-seconds: 'nan' is not a finite number > 0"},
      {"tune --problem 64x64x64 --seed -1", "--seed: '-1' is not a whole number >= 0"},
      {"tune --problem 64x64x64 --device -1", "--device: '-1' is not a whole number from 0 to"},
      {"tune --problem 64x64x64 --timeout -5", "--timeout: '-5' is not a finite number > 0"},
      {"simulate --trials " + log + " --repeat -1", "--repeat: '-1' is not a whole number from 1 to"},
      {"simulate --trials " + log + " --seed -1", "--seed: '-1' is not a whole number >= 0"},
      {"cache --max-mb -5 --path " + scratch("no-cache.db"),
       "--max-mb: '-5' is not a whole number from 0 to 1099511627776"},
      {"cache --max-mb 1e3 --path " + scratch("no-cache.db"), "--max-mb: '1e3' is not a whole number"},
      {"bench --suite configs/suites/quick.json --device -1", "--device: '-1' is not a whole number from 0 to"},
      {"compile --family gemm_smem --config '{\"TILE\":16}' --device -1",
       "--device: '-1' is not a whole number from 0 to"},
  };
  for (const auto& [args, why] : cases) {
    const CliRun r = run_command("timeout 60 " + ktune::testing::ktune_binary() + " " + args + " 2>&1");
    EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(why), std::string::npos) << args << "\n" << r.out;
    EXPECT_LT(r.out.size(), 400u) << args << "\n" << r.out;
  }
}

TEST(Cli, QueryOfADatabaseThatDoesNotExistIsAUsageError) {
  CliRun r = run_ktune("query --arch sm_90 --problem 64x64x64 --db /no/such/dir/x.db");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--db: database /no/such/dir/x.db does not exist"), std::string::npos) << r.out;
  // bench likewise, before it looks for a GPU (here: none) or reads the suite.
  r = run_ktune("bench --suite " + std::string(KTUNE_SOURCE_DIR) + "/configs/suites/quick.json --db /no/such/dir/x.db");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--db: database /no/such/dir/x.db does not exist"), std::string::npos) << r.out;
  r = run_ktune("query --arch sm_90 --problem 64x64x64 --db " +
                std::filesystem::path(scratch("x")).parent_path().string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("is not a file"), std::string::npos) << r.out;
  // An empty file is a database with nothing tuned in it: query answers from the tables; export,
  // which reads the database itself, says what the file is (exit 2) and leaves it as it was.
  const std::string empty = scratch("empty.db");
  std::ofstream(empty).close();
  r = run_ktune("query --arch sm_90 --problem 64x64x64 --db " + empty);
  EXPECT_EQ(r.status, 0) << r.out;
  r = run_ktune("export --db " + empty + " -o " + scratch("empty-export.json"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("holds no ktune tables"), std::string::npos) << r.out;
  EXPECT_EQ(std::filesystem::file_size(empty), 0u);
  // Without --db, a default database not written yet is no error: the shipped tables answer.
  setenv("KTUNE_DB", scratch("not-yet.db").c_str(), 1);
  r = run_ktune("query --arch sm_90 --problem 64x64x64");
  unsetenv("KTUNE_DB");
  EXPECT_EQ(r.status, 0) << r.out;
}

// An output that cannot be a file is bad usage (exit 2) found before any work, and no failure
// leaves a file behind: neither the output nor its temporary (DIR.tmp, ./.tmp).
TEST(Cli, ExportToAnImpossibleOutputExitsTwoAndLeavesNothing) {
  const std::string db = db_with_one_entry("export-out.db", "export-out.json");
  ASSERT_FALSE(db.empty());
  const std::string dir = scratch("an-output-folder");
  std::filesystem::create_directories(dir);
  CliRun r = run_ktune("export --arch sm_90 --db " + db + " -o " + dir);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--output: " + dir + " is a folder, not a file"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir + ".tmp"));
  const std::string cwd = scratch("export-cwd");
  std::filesystem::create_directories(cwd);
  r = run_command("cd " + cwd + " && " + ktune::testing::ktune_binary() + " export --arch sm_90 --db " + db +
                  " -o '' 2>&1");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--output: an output file is needed"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::is_empty(cwd)) << "left " << std::filesystem::directory_iterator(cwd)->path();
  r = run_ktune("export --arch sm_90 --db " + db + " -o " + scratch("no-such-folder") + "/t.json");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
  r = run_ktune("export --trials --arch sm_90 --db " + db + " -o " + dir);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir + ".tmp"));
  // The same for the other files ktune writes.
  r = run_command("cd " + cwd + " && " + ktune::testing::ktune_binary() + " report --arch sm_90 --db " + db +
                  " -o '' 2>&1");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--output: a folder for the report is needed"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::is_empty(cwd));
  r = run_ktune("compile --family gemm_smem --config '{\"TILE\":16}' --arch sm_80 -o " + dir);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir + ".tmp"));
  // And a good one still works.
  r = run_ktune("export --arch sm_90 --db " + db + " -o " + dir + "/t.json");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/t.json.tmp"));
}

namespace {

// A gemm_simt space the H100 replay log covers (its domains; LN at the values its configs
// upgrade to): most configs drawn from it are in the recording.
std::string replay_restriction() {
  return write_file("replay-restrict.json",
                    R"({"family":"gemm_simt","domains":{"BM":[32,64,128],"BN":[64,128,256],"WM":[32,64],"WN":[32,64],)"
                    R"("TM":[4,8],"TN":[4,8],"LN":[4,8,16],"BK":[8,16],"VEC":[4],"AT":[1],"PAD":[4],"PIPE":[1,3],)"
                    R"("SPLITK":[1,4],"SWZ":[8],"EVEN":[0],"PACK":[0]}})");
}

} // namespace

// ktune tune records each problem as its calls are served (OpInfo::serve_as), where the runtime
// looks it up: two pools of one paged shape are one problem, its cache as many pages as its table
// names, and the run says so.
TEST(Cli, TuneRecordsPagedProblemsAsTheyAreServed) {
  const std::string args = "tune --op attention_paged --layout causal --dtype bf16 --problem 4x32x8x1x4096x128x16x200000 "
                           "--problem 4x32x8x1x4096x128x16x5000 --problem 4x32x8x1x4096x128x16x700 --dry-run";
  CliRun dry = run_ktune(args, " 2>/dev/null");
  ASSERT_EQ(dry.status, 0) << dry.out;
  const auto suite = nlohmann::json::parse(dry.out);
  ASSERT_EQ(suite["problems"].size(), 2u) << dry.out;
  EXPECT_EQ(suite["problems"][0]["key"], "attention_paged/bf16/causal/4x32x8x1x4096x128x16x1024/a16");
  EXPECT_EQ(suite["problems"][1]["key"], "attention_paged/bf16/causal/4x32x8x1x4096x128x16x700/a16");
  const CliRun err = run_ktune_stderr(args);
  EXPECT_NE(err.out.find("attention_paged/bf16/causal/4x32x8x1x4096x128x16x200000/a16 is tuned as "
                         "attention_paged/bf16/causal/4x32x8x1x4096x128x16x1024/a16"),
            std::string::npos)
      << err.out;
}

// --dry-run prints the problems as a suite (each with every field and its key) and touches no
// database; --replay tunes with real compiles and recorded outcomes, under the uuid given; the
// trial set of that run moves to another database through export/import, once.
TEST(Cli, ReplayRunsAWholeTuneWithoutAGpuAndItsTrialsMoveAsATrialSet) {
  const std::string log = std::string(KTUNE_SOURCE_DIR) + "/tests/data/h100-gemm_simt-exhaustive-replay.json";
  CliRun dry = run_ktune("tune --problem 1024x1024x1024 --problem 16x4096x4096 --dry-run --db /nonexistent/dir/x.db");
  ASSERT_EQ(dry.status, 0) << dry.out;
  const auto suite = nlohmann::json::parse(dry.out);
  ASSERT_EQ(suite["problems"].size(), 2u);
  EXPECT_EQ(suite["problems"][0]["key"], "gemm/f32/NN/1024x1024x1024/a16");
  EXPECT_EQ(suite["problems"][1]["m"], 16);
  EXPECT_FALSE(std::filesystem::exists("/nonexistent/dir/x.db"));

  const std::string db = scratch("replay.db"), other = scratch("replay-other.db"), set = scratch("replay-set.json");
  for (const auto& p : {db, other}) std::filesystem::remove(p);
  CliRun r = run_ktune("tune --problem 1024x1024x1024 --family gemm_simt --restrict " + replay_restriction() +
                       " --strategy random --budget-evals 4 --warm-start none --replay " + log +
                       " --replay-uuid node-a-gpu0 --db " + db + " --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(j["device"]["name"], "NVIDIA H100 80GB HBM3");
  const auto& p = j["problems"][0];
  int evaluated = 0;
  for (const auto& [status, n] : p["trials"].items()) evaluated += n.get<int>();
  EXPECT_EQ(evaluated, 4);
  ASSERT_TRUE(p.contains("time_ms")) << r.out; // one of four is in the recording, or the space moved
  EXPECT_NEAR(p["cublas_ms"].get<double>(), 0.0627, 0.01);

  ASSERT_EQ(run_ktune("export --trial-set --db " + db + " -o " + set).status, 0);
  const auto exported = nlohmann::json::parse(file_bytes(set));
  ASSERT_EQ(exported["trials"].size(), 4u);
  EXPECT_EQ(exported["devices"][0]["uuid"], "node-a-gpu0");
  CliRun im = run_ktune("import --trial-set " + set + " --db " + other);
  ASSERT_EQ(im.status, 0) << im.out;
  EXPECT_NE(im.out.find("4 new, 0 recorded there already; 1 baseline readings kept"), std::string::npos) << im.out;
  im = run_ktune("import --trial-set " + set + " --db " + other);
  EXPECT_NE(im.out.find("0 new, 4 recorded there already"), std::string::npos) << im.out;
  // The same run again on the other database resumes: every trial is skipped.
  r = run_ktune("tune --problem 1024x1024x1024 --family gemm_simt --restrict " + replay_restriction() +
                " --strategy random --budget-evals 4 --warm-start none --replay " + log +
                " --replay-uuid node-a-gpu0 --db " + other + " --json");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out.substr(r.out.find('{')))["problems"][0]["skipped"], 4) << r.out;
}

TEST(Cli, TrialSetAndRayOptionsRefuseWhatTheyCannotDo) {
  const std::string log = std::string(KTUNE_SOURCE_DIR) + "/tests/data/h100-gemm_simt-exhaustive-replay.json";
  const std::string db = db_with_one_entry("set-usage.db", "set-usage-table.json");
  ASSERT_FALSE(db.empty());
  const std::pair<std::string, std::string> cases[] = {
      {"export --db " + db + " -o " + scratch("x.json") + " --after-id 3", "filter a --trial-set"},
      {"export --trial-set --trials --db " + db + " -o " + scratch("x.json"), "not both"},
      {"export --trial-set --arch sm_90 --db " + db + " -o " + scratch("x.json"), "--device-uuid, --problem and --after-id"},
      {"export --trial-set --problem gemm/f32/NN/64x64/a16 --db " + db + " -o " + scratch("x.json"), "64x64"},
      {"import --trial-set " + log + " --db " + db, "unknown schema 'ktune.trials/1'"},
      {"tune --problem 64x64x64 --replay-uuid x", "--replay-uuid requires --replay"},
      {"tune --problem 64x64x64 --replay " + log + " --devices 0,1", "--replay answers as one GPU"},
  };
  for (const auto& [args, want] : cases) {
    const CliRun r = run_ktune_stderr(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(want), std::string::npos) << args << "\n" << r.out;
  }
  // --ray hands the run to the Python driver; an interpreter that is not there is named.
  const CliRun r = run_command("KTUNE_PYTHON=/nonexistent/python3 " + ktune::testing::ktune_binary() +
                               " tune --problem 64x64x64 --ray auto 2>&1");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("cannot start the Python driver (/nonexistent/python3"), std::string::npos) << r.out;
}

// A best row whose config this build's family does not admit (TILE 12 is outside gemm_smem's
// domain, as a value a family's space dropped would be), written by an older ktune, is left out of
// `ktune export`, named on stderr, and the table of the rest imports.
TEST(Cli, ExportLeavesOutEntriesThisBuildDoesNotServe) {
  const std::string db = db_with_one_entry("export-refused.db", "export-refused.json");
  ASSERT_FALSE(db.empty());
  {
    ktune::Store st(db);
    ktune::DeviceInfo d = ktune::DeviceInfo::nominal("sm_90");
    d.name = "GPU X", d.uuid = "table:GPU X/sm_90";
    const ktune::Problem p = ktune::Problem::parse("gemm", "128x64x64", "NN", ktune::DType::f32);
    ktune::TrialRecord t;
    t.family = "gemm_smem", t.config_json = R"({"TILE":12})", t.config_hash = ktune::fnv1a_hex(t.config_json);
    t.template_hash = "abc", t.status = ktune::TrialStatus::ok, t.timing = {1e-4, 1e-4, 1e-4, 1e-4, 1}, t.tflops = 5.0;
    t.gate = ktune::kGateVersion;
    st.record_trial(st.device_id(d), st.problem_id(p), "sm_90", t);
    EXPECT_FALSE(st.best("sm_90", p.key())); // this ktune never makes it the best
  }
  // The best row an older ktune, whose family admitted TILE 12, would have written.
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  const int rc = sqlite3_exec(h,
                              "INSERT OR REPLACE INTO best (arch, problem_id, family, config, time_ms, tflops, trial_id) "
                              "SELECT 'sm_90', problem_id, family, config, median_ms, tflops, id FROM trials "
                              "WHERE config = '{\"TILE\":12}'",
                              nullptr, nullptr, nullptr);
  const std::string why = sqlite3_errmsg(h);
  sqlite3_close(h);
  ASSERT_EQ(rc, SQLITE_OK) << why;
  const std::string out = scratch("export-refused-out.json");
  CliRun r = run_ktune_stderr("export --arch sm_90 --db " + db + " -o " + out);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("left out gemm/f32/NN/128x64x64"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("outside the domain of 'TILE'"), std::string::npos) << r.out;
  const nlohmann::json exported = nlohmann::json::parse(file_bytes(out));
  ASSERT_EQ(exported["entries"].size(), 1u);
  EXPECT_EQ(exported["entries"][0]["config"]["TILE"], 16);
  r = run_ktune("import " + out + " --db " + scratch("export-refused-2.db"));
  EXPECT_EQ(r.status, 0) << r.out;
}
