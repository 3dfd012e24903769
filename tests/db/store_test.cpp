#include "db/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "jit/load_or_compile.h"
#include "ktune/compiler.h"
#include "ktune/config.h"
#include "ktune/error.h"
#include "ktune/gemm_problem.h"
#include "ktune/runtime.h"
#include "poisoned_db.h"

using namespace ktune;

namespace {

std::string temp_db(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("ktune-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  for (const char* ext : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + ext);
  return path.string();
}

// Runs sql on the database at path with plain SQLite: turns a current file into an older schema.
void downgrade(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

DeviceInfo fake_device() {
  DeviceInfo d = DeviceInfo::nominal("sm_90");
  d.name = "Test GPU";
  d.uuid = "0123456789abcdef";
  return d;
}

TrialRecord trial(const std::string& cfg, TrialStatus st, double ms) {
  TrialRecord t;
  t.family = "gemm_smem";
  t.config_json = cfg;
  t.config_hash = fnv1a_hex(cfg);
  t.template_hash = "t1";
  t.status = st;
  t.timing = {ms, ms * 0.9, ms * 0.95, ms * 1.05, 10};
  t.tflops = 1.0 / ms;
  return t;
}

} // namespace

TEST(Store, CreatesTheCurrentSchema) {
  Store s(temp_db("create.db"));
  EXPECT_EQ(s.schema_version(), Store::kSchemaVersion);
  EXPECT_EQ(s.count_trials(), 0);
}

TEST(Store, MigratesAVersionOneDatabaseKeepingItsRows) {
  const std::string path = temp_db("v1.db");
  {
    Store s(path);
    const int64_t d = s.device_id(fake_device()), p = s.problem_id(GemmProblem::parse("64x64x64"));
    s.record_trial(d, p, "sm_90", trial("{\"TILE\":16}", TrialStatus::ok, 2.0));
  }
  // Turn it back into a version-1 file: drop what migrations 2 and 3 added.
  downgrade(path, "ALTER TABLE trials DROP COLUMN gate; DROP INDEX binaries_by_use; ALTER TABLE binaries DROP COLUMN used; "
                  "DROP INDEX trials_by_problem; ALTER TABLE trials DROP COLUMN rel_error; PRAGMA user_version = 1;");
  Store s(path);
  EXPECT_EQ(s.schema_version(), Store::kSchemaVersion);
  const int64_t d = s.device_id(fake_device()), p = s.problem_id(GemmProblem::parse("64x64x64"));
  const auto rows = s.trials(d, p);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].rel_error, -1); // the migration's default for rows that predate the column
  EXPECT_TRUE(s.best("sm_90", GemmProblem::parse("64x64x64").key()).has_value());
}

TEST(Store, TrimsTheLeastRecentlyUsedCubinsFirst) {
  Store s(temp_db("lru.db"));
  s.put_binary("a", "sm_90", std::vector<char>(100, 'a'), {"_Z1av"});
  s.put_binary("b", "sm_90", std::vector<char>(200, 'b'), {"_Z1bv"});
  s.put_binary("c", "sm_90", std::vector<char>(300, 'c'), {"_Z1cv"});
  s.put_binary("d", "sm_80", std::vector<char>(400, 'd'), {"_Z1dv"});
  EXPECT_EQ(s.touch_binaries({"b", "nope", "a"}), 2); // a is now the most recently used, b the one before
  EXPECT_FALSE(s.touch_binary("nope"));
  auto held = [&](const char* key) {
    std::vector<char> cubin;
    std::vector<std::string> names;
    return s.get_binary(key, &cubin, &names);
  };
  Store::Trimmed t = s.trim_binaries(1000, 0); // 1000 bytes: not above the limit
  EXPECT_EQ(t.cubins, 0);
  EXPECT_TRUE(held("a") && held("b") && held("c") && held("d"));
  t = s.trim_binaries(900, 250); // c, then d, then b (700 left, 300, then 100)
  EXPECT_EQ(t.cubins, 3);
  EXPECT_EQ(t.bytes, 900);
  EXPECT_TRUE(held("a"));
  EXPECT_FALSE(held("b") || held("c") || held("d"));
  // A put of a cubin already there marks it used as well.
  s.put_binary("e", "sm_90", std::vector<char>(100, 'e'), {"_Z1ev"});
  s.put_binary("a", "sm_90", std::vector<char>(100, 'a'), {"_Z1av"});
  t = s.trim_binaries(150, 150);
  EXPECT_EQ(t.cubins, 1);
  EXPECT_TRUE(held("a"));
  EXPECT_FALSE(held("e"));
}

TEST(Store, MigratesAVersionTwoCacheKeepingItsCubinsInTheirOrder) {
  const std::string path = temp_db("v2.db");
  {
    Store s(path);
    s.put_binary("old", "sm_90", std::vector<char>(100, 'o'), {"_Z1ov"});
    s.put_binary("new", "sm_90", std::vector<char>(100, 'n'), {"_Z1nv"});
  }
  downgrade(path, "ALTER TABLE trials DROP COLUMN gate; DROP INDEX binaries_by_use; ALTER TABLE binaries DROP COLUMN used; "
                  "PRAGMA user_version = 2;");
  Store s(path);
  EXPECT_EQ(s.schema_version(), Store::kSchemaVersion);
  const Store::Trimmed t = s.trim_binaries(150, 150);
  EXPECT_EQ(t.cubins, 1);
  std::vector<char> cubin;
  std::vector<std::string> names;
  EXPECT_TRUE(s.get_binary("new", &cubin, &names));
  EXPECT_FALSE(s.get_binary("old", &cubin, &names));
}

// A database of schema 3 predates the gate: read-only it answers with every trial at gate 0;
// opened for writing it migrates, and its ok trials count as not recorded, so that a re-run
// verifies them again; the re-verified trial replaces the old row and becomes the best.
TEST(Store, MigratesAVersionThreeDatabaseAndReverifiesItsTrials) {
  const std::string path = temp_db("v3.db");
  const auto prob = GemmProblem::parse("64x64x64");
  {
    Store s(path);
    const int64_t d = s.device_id(fake_device()), p = s.problem_id(prob);
    s.record_trial(d, p, "sm_90", trial("{\"TILE\":16}", TrialStatus::ok, 2.0));
    s.record_trial(d, p, "sm_90", trial("{\"TILE\":8}", TrialStatus::compile_error, 0));
  }
  downgrade(path, "ALTER TABLE trials DROP COLUMN gate; PRAGMA user_version = 3;");
  {
    const Store ro(path, /*read_only=*/true);
    EXPECT_EQ(ro.schema_version(), 3);
    const Table t = ro.export_table("sm_90");
    ASSERT_EQ(t.entries.size(), 1u);
    EXPECT_EQ(t.entries[0].gate, 0);
  }
  Store s(path);
  EXPECT_EQ(s.schema_version(), Store::kSchemaVersion);
  const int64_t d = s.device_id(fake_device()), p = s.problem_id(prob);
  ASSERT_EQ(s.trials(d, p).size(), 2u);
  EXPECT_EQ(s.trials(d, p)[0].gate, 0);
  EXPECT_FALSE(s.has_trial(d, p, "gemm_smem", "t1", fnv1a_hex("{\"TILE\":16}"))); // ok at gate 0: again
  EXPECT_TRUE(s.has_trial(d, p, "gemm_smem", "t1", fnv1a_hex("{\"TILE\":8}")));   // a compile error stays
  EXPECT_EQ(s.export_table("sm_90").entries.at(0).gate, 0);
  s.record_trial(d, p, "sm_90", trial("{\"TILE\":16}", TrialStatus::ok, 2.5)); // re-verified, timed again
  ASSERT_EQ(s.trials(d, p).size(), 2u);
  EXPECT_EQ(s.trials(d, p)[0].gate, kGateVersion);
  EXPECT_DOUBLE_EQ(s.trials(d, p)[0].timing.median_ms, 2.5);
  EXPECT_TRUE(s.has_trial(d, p, "gemm_smem", "t1", fnv1a_hex("{\"TILE\":16}")));
  EXPECT_DOUBLE_EQ(s.best("sm_90", prob.key())->time_ms, 2.5);
  EXPECT_EQ(s.export_table("sm_90").entries.at(0).gate, kGateVersion);
  // Recording it once more changes nothing: the row of the current gate stays.
  s.record_trial(d, p, "sm_90", trial("{\"TILE\":16}", TrialStatus::ok, 0.1));
  EXPECT_DOUBLE_EQ(s.best("sm_90", prob.key())->time_ms, 2.5);
}

// The best of a problem is the fastest ok trial of the newest gate: a faster one of an older gate
// does not hold it, and a re-verification that fails takes it away.
TEST(Store, TheBestIsTheFastestOfTheNewestGate) {
  Store s(temp_db("gate-best.db"));
  const int64_t d = s.device_id(fake_device());
  const auto prob = GemmProblem::parse("128x64x64");
  const int64_t p = s.problem_id(prob);
  TrialRecord old = trial("{\"TILE\":8}", TrialStatus::ok, 1.0);
  old.gate = 0;
  s.record_trial(d, p, "sm_90", old);
  EXPECT_EQ(s.best("sm_90", prob.key())->config_json, "{\"TILE\":8}");
  s.record_trial(d, p, "sm_90", trial("{\"TILE\":16}", TrialStatus::ok, 3.0));
  EXPECT_EQ(s.best("sm_90", prob.key())->config_json, "{\"TILE\":16}"); // slower, but verified as served
  s.record_trial(d, p, "sm_90", trial("{\"TILE\":32}", TrialStatus::ok, 2.0));
  EXPECT_EQ(s.best("sm_90", prob.key())->config_json, "{\"TILE\":32}");
  // The old entry re-verified and found wrong: recorded as such, and never the best again.
  TrialRecord wrong = trial("{\"TILE\":8}", TrialStatus::wrong_result, 0);
  s.record_trial(d, p, "sm_90", wrong);
  EXPECT_EQ(s.trials(d, p)[0].status, TrialStatus::wrong_result);
  EXPECT_EQ(s.best("sm_90", prob.key())->config_json, "{\"TILE\":32}");
  // A problem whose only ok trial fails its re-verification has no best any more.
  const auto lone = GemmProblem::parse("32x32x32");
  const int64_t q = s.problem_id(lone);
  s.record_trial(d, q, "sm_90", old);
  ASSERT_TRUE(s.best("sm_90", lone.key()));
  s.record_trial(d, q, "sm_90", wrong);
  EXPECT_FALSE(s.best("sm_90", lone.key()));
  EXPECT_TRUE(s.export_table("sm_90").entries.size() == 1u);
}

// A config the family rejects for its problem (recorded by a ktune whose rules were looser) is
// never the best, however fast: the next fastest servable trial is, and a problem with no other
// has none. A trial of a family this process does not know (a user kernel whose spec is not
// loaded) is taken as it is.
TEST(Store, TheBestIsNeverAConfigTheFamilyRejects) {
  Store s(temp_db("servable-best.db"));
  const int64_t d = s.device_id(fake_device());
  const auto prob = GemmProblem::parse("96x64x64");
  const int64_t p = s.problem_id(prob);
  s.record_trial(d, p, "sm_90", trial("{\"TILE\":16}", TrialStatus::ok, 2.0));
  s.record_trial(d, p, "sm_90", trial("{\"TILE\":12}", TrialStatus::ok, 1.0)); // 12: outside TILE's domain
  ASSERT_TRUE(s.best("sm_90", prob.key()));
  EXPECT_EQ(s.best("sm_90", prob.key())->config_json, "{\"TILE\":16}");
  EXPECT_EQ(s.export_table("sm_90").entries.size(), 1u);
  EXPECT_TRUE(invalid_entries(s.export_table("sm_90")).empty());
  // The only ok trial rejected: no best.
  const auto lone = GemmProblem::parse("48x48x48");
  const int64_t q = s.problem_id(lone);
  s.record_trial(d, q, "sm_90", trial("{\"TILE\":12}", TrialStatus::ok, 1.0));
  EXPECT_FALSE(s.best("sm_90", lone.key()));
  // A family nobody registered in this process: its fastest trial is the best, as recorded.
  TrialRecord other = trial("{\"X\":1}", TrialStatus::ok, 0.5);
  other.family = "not_a_builtin_family";
  s.record_trial(d, q, "sm_90", other);
  ASSERT_TRUE(s.best("sm_90", lone.key()));
  EXPECT_EQ(s.best("sm_90", lone.key())->family, "not_a_builtin_family");
}

TEST(Store, CubinCacheLimitComesFromTheEnvironmentOrTheDefault) {
  unsetenv("KTUNE_CUBIN_CACHE_MAX_MB");
  EXPECT_EQ(default_cubin_cache_max_mb(), kDefaultCubinCacheMaxMb);
  setenv("KTUNE_CUBIN_CACHE_MAX_MB", "64", 1);
  EXPECT_EQ(default_cubin_cache_max_mb(), 64);
  setenv("KTUNE_CUBIN_CACHE_MAX_MB", "0", 1);
  EXPECT_EQ(default_cubin_cache_max_mb(), 0);
  for (const char* bad : {"", "-1", "12MB", "lots"}) {
    setenv("KTUNE_CUBIN_CACHE_MAX_MB", bad, 1);
    try {
      default_cubin_cache_max_mb();
      ADD_FAILURE() << "accepted KTUNE_CUBIN_CACHE_MAX_MB='" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("KTUNE_CUBIN_CACHE_MAX_MB"), std::string::npos) << e.what();
    }
  }
  unsetenv("KTUNE_CUBIN_CACHE_MAX_MB");
}

TEST(Store, RefusesANewerSchema) {
  const std::string path = temp_db("future.db");
  { Store s(path); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  try {
    Store s(path);
    FAIL() << "opened a schema from the future";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99"), std::string::npos) << e.what();
  }
}

TEST(Store, RecordsEveryTrialAndKeepsTheFastestOkAsBest) {
  Store s(temp_db("best.db"));
  const int64_t d = s.device_id(fake_device());
  const auto prob = GemmProblem::parse("64x64x64");
  const int64_t p = s.problem_id(prob);
  s.record_trial(d, p, "sm_90", trial("{\"TILE\":8}", TrialStatus::ok, 3.0));
  s.record_trial(d, p, "sm_90", trial("{\"TILE\":16}", TrialStatus::wrong_result, 0.5)); // fast but wrong
  s.record_trial(d, p, "sm_90", trial("{\"TILE\":32}", TrialStatus::ok, 2.0));
  auto t = trial("{\"TILE\":64}", TrialStatus::crash, 0);
  t.error = "worker killed by signal Segmentation fault";
  s.record_trial(d, p, "sm_90", t);
  EXPECT_EQ(s.count_trials(), 4);
  const auto best = s.best("sm_90", prob.key());
  ASSERT_TRUE(best);
  EXPECT_EQ(best->config_json, "{\"TILE\":32}");
  EXPECT_DOUBLE_EQ(best->time_ms, 2.0);
  EXPECT_FALSE(best->cublas_ms);
  s.record_baseline(d, p, "cublas", Timing{1.5, 1.4, 1.45, 1.6, 20}, 0.3);
  EXPECT_DOUBLE_EQ(*s.best("sm_90", prob.key())->cublas_ms, 1.5);
  EXPECT_EQ(s.trials(d, p)[3].error, "worker killed by signal Segmentation fault");
  // The same key recorded again keeps the first row.
  s.record_trial(d, p, "sm_90", trial("{\"TILE\":8}", TrialStatus::ok, 0.1));
  EXPECT_EQ(s.count_trials(), 4);
  EXPECT_EQ(s.best("sm_90", prob.key())->config_json, "{\"TILE\":32}");
  EXPECT_TRUE(s.has_trial(d, p, "gemm_smem", "t1", fnv1a_hex("{\"TILE\":8}")));
  EXPECT_FALSE(s.has_trial(d, p, "gemm_smem", "t2", fnv1a_hex("{\"TILE\":8}")));
}

TEST(Store, BinariesRoundTrip) {
  Store s(temp_db("bin.db"));
  const std::vector<char> cubin = {'\x7f', 'E', 'L', 'F', '\0', '\x01'};
  s.put_binary("key1", "sm_90", cubin, {"_Z1fv", "_Z1gv"});
  std::vector<char> got;
  std::vector<std::string> names;
  ASSERT_TRUE(s.get_binary("key1", &got, &names));
  EXPECT_EQ(got, cubin);
  EXPECT_EQ(names, (std::vector<std::string>{"_Z1fv", "_Z1gv"}));
  EXPECT_FALSE(s.get_binary("key2", &got, &names));
}

TEST(Store, TwoProcessesWritingOneDatabaseLoseNoRows) {
  const std::string path = temp_db("concurrent.db");
  { Store s(path); }
  constexpr int kPerWriter = 150;
  std::vector<pid_t> kids;
  for (int w = 0; w < 2; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 0;
      try {
        Store s(path);
        const int64_t d = s.device_id(fake_device()), p = s.problem_id(GemmProblem::parse("64x64x64"));
        for (int i = 0; i < kPerWriter; ++i)
          s.record_trial(d, p, "sm_90", trial("{\"W\":" + std::to_string(w) + ",\"I\":" + std::to_string(i) + "}",
                                              TrialStatus::ok, 1.0 + i));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "writer %d: %s\n", w, e.what());
        rc = 1;
      }
      _exit(rc);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int st = 0;
    ASSERT_EQ(waitpid(k, &st, 0), k);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  Store s(path);
  EXPECT_EQ(s.count_trials(), 2 * kPerWriter);
}

TEST(Store, DefaultPathHonoursKtuneDb) {
  setenv("KTUNE_DB", "/tmp/elsewhere/k.db", 1);
  EXPECT_EQ(default_db_path(), "/tmp/elsewhere/k.db");
  unsetenv("KTUNE_DB");
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(default_db_path(), "/tmp/xdg/ktune/ktune.db");
  unsetenv("XDG_CACHE_HOME");
}

// The runtime's cubin cache: $KTUNE_CUBIN_CACHE, "" when it is set empty (no cache), else
// cubins.db in ktune's cache folder (beside the default database, whatever KTUNE_DB says).
TEST(Store, CubinCachePathHonoursItsVariable) {
  setenv("KTUNE_CUBIN_CACHE", "/tmp/elsewhere/c.db", 1);
  EXPECT_EQ(default_cubin_cache_path(), "/tmp/elsewhere/c.db");
  setenv("KTUNE_CUBIN_CACHE", "", 1);
  EXPECT_EQ(default_cubin_cache_path(), "");
  unsetenv("KTUNE_CUBIN_CACHE");
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  setenv("KTUNE_DB", "/tmp/elsewhere/k.db", 1);
  EXPECT_EQ(default_cubin_cache_path(), "/tmp/xdg/ktune/cubins.db");
  unsetenv("KTUNE_DB");
  unsetenv("XDG_CACHE_HOME");
}

// load_or_compile reads the stores in order and skips null ones; a hit is a ready future marked
// from_cache (no compile is started: the request's source would not compile).
TEST(Store, LoadOrCompileTakesTheFirstStoreThatHoldsTheKey) {
  Store first(temp_db("first.db")), second(temp_db("second.db"));
  CompileRequest req;
  req.source = "this is not CUDA";
  req.source_name = "broken.cu";
  req.arch = "sm_90";
  const std::vector<char> a = {'A'}, b = {'B'};
  second.put_binary(req.cache_key(), "sm_90", b, {"_Z1bv"});
  Compiler compiler(1);
  auto k = load_or_compile({nullptr, &first, &second}, compiler, req).get();
  EXPECT_TRUE(k->from_cache);
  EXPECT_EQ(k->cubin, b);
  first.put_binary(req.cache_key(), "sm_90", a, {"_Z1av"});
  k = load_or_compile({&first, &second}, compiler, req).get();
  EXPECT_EQ(k->cubin, a);
  EXPECT_EQ(k->lowered_names, (std::vector<std::string>{"_Z1av"}));
  EXPECT_EQ(compiler.cache_size(), 0u);
}

// A write behind another connection's write lock fails after the busy timeout, naming the file,
// instead of waiting the constructor's 60 s (the runtime's cubin cache waits 1 s).
TEST(Store, AWriteBehindAnotherWriterFailsAfterTheBusyTimeout) {
  const std::string path = temp_db("busy.db");
  Store writer(path), cache(path);
  cache.set_busy_timeout(100);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK); // holds the write lock
  const auto t0 = std::chrono::steady_clock::now();
  try {
    cache.put_binary("key", "sm_90", {'x'}, {"_Z1fv"});
    ADD_FAILURE() << "the write went through another connection's lock";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  cache.put_binary("key", "sm_90", {'x'}, {"_Z1fv"}); // the lock released: it goes through
  std::vector<char> cubin;
  std::vector<std::string> names;
  EXPECT_TRUE(writer.get_binary("key", &cubin, &names));
}

TEST(Store, UnopenablePathNamesTheFile) {
  try {
    Store s("/proc/no/such/dir/k.db");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/no/such/dir"), std::string::npos) << e.what();
  }
}

// Rows ktune never writes (tests/poisoned_db.h: a key with m = 2^40, a config that is not JSON,
// an unknown status) make no reader fail: each skips them with one line on stderr naming how
// many and the first, and answers for the rest.
TEST(Store, ReadersSkipRowsTheyCannotParseWithOneWarningEach) {
  const std::string path = temp_db("poisoned.db");
  DeviceInfo d = fake_device();
  {
    Store s(path);
    const int64_t dev = s.device_id(d);
    const auto prob = GemmProblem::parse("64x64x64");
    s.record_trial(dev, s.problem_id(prob), "sm_90", trial("{\"TILE\":16}", TrialStatus::ok, 1.0));
  }
  ASSERT_EQ(ktune::testing::poison_database(path), "");
  const Store s(path, /*read_only=*/true);
  ASSERT_EQ(s.count_trials(), 4);
  auto warnings = [](const std::string& err) {
    size_t n = 0;
    for (size_t at = err.find("ktune: skipped"); at != std::string::npos; at = err.find("ktune: skipped", at + 1)) ++n;
    return n;
  };

  ::testing::internal::CaptureStderr();
  const Table t = s.export_table("sm_90");
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(t.entries.size(), 1u);
  EXPECT_EQ(t.entries[0].problem.key(), "gemm/f32/NN/64x64x64/a16");
  EXPECT_EQ(warnings(err), 1u) << err;
  EXPECT_NE(err.find("skipped 2 unreadable best entries of database " + path +
                     " (first: problem 'gemm/f32/NN/1099511627776x64x64/a16'"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("out of range"), std::string::npos) << err;
  EXPECT_EQ(s.export_table().entries.size(), 1u); // without an arch filter too

  ::testing::internal::CaptureStderr();
  const auto rows = s.trial_rows();
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rows.size(), 2u); // the 64x64x64 trial and the 96x64x64 one whose config only a table reads
  EXPECT_EQ(warnings(err), 1u) << err;
  EXPECT_NE(err.find("skipped 2 unreadable trials"), std::string::npos) << err;

  ::testing::internal::CaptureStderr();
  const TrialLog log = s.export_trials("sm_90");
  err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(log.problems.size(), 1u);
  EXPECT_EQ(log.problems[0].trials.size(), 1u);
  EXPECT_EQ(warnings(err), 1u) << err;
  EXPECT_NE(err.find("skipped 3 unreadable trials"), std::string::npos) << err;
  EXPECT_NO_THROW(parse_trial_log(trial_log_to_json(log), "exported")); // what export writes, simulate reads

  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(s.best("sm_90", "gemm/f32/NN/96x64x64/a16"));
  EXPECT_FALSE(s.best("sm_90", "gemm/f32/NN/1099511627776x64x64/a16"));
  EXPECT_TRUE(s.best("sm_90", "gemm/f32/NN/64x64x64/a16"));
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(warnings(err), 2u) << err;

  // The runtime reads the store through export_table: the good entry is served.
  RuntimeOptions o;
  o.arch = "sm_90";
  o.db_path = path;
  o.shipped_tables = false;
  o.cubin_cache = "";
  ::testing::internal::CaptureStderr();
  const Runtime rt(o);
  const Selection sel = rt.best_config(GemmProblem::parse("64x64x64"));
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(sel.source, "store " + path);
  EXPECT_EQ(warnings(err), 1u) << err;
}

namespace {

TrialRecord set_trial(int tile, TrialStatus st, double ms) {
  const std::string cfg = "{\"TILE\":" + std::to_string(tile) + "}";
  TrialRecord t = trial(cfg, st, ms);
  t.config_hash = Config::from_json(cfg).hash();
  if (st != TrialStatus::ok) t.timing = {}, t.tflops = 0, t.error = "worker killed by signal Segmentation fault";
  t.rel_error = st == TrialStatus::ok ? 1e-6 : -1;
  t.registers = 96, t.smem_bytes = 4096, t.compile_s = 0.5, t.bench_s = 0.01;
  return t;
}

} // namespace

// Trial sets move trials between databases as measured: everything a trial carries survives the
// JSON, the filters select, a second import adds nothing, and the best follows the trials.
TEST(Store, TrialSetsCarryTrialsAndBaselinesBetweenDatabasesOnceEach) {
  Store a(temp_db("set-a.db"));
  DeviceInfo d2 = fake_device();
  d2.uuid = "second-gpu";
  const int64_t d1 = a.device_id(fake_device()), dd2 = a.device_id(d2);
  const auto p1 = GemmProblem::parse("64x64x64"), p2 = GemmProblem::parse("128x64x64");
  const int64_t i1 = a.problem_id(p1), i2 = a.problem_id(p2);
  const int64_t first = a.record_trial(d1, i1, "sm_90", set_trial(8, TrialStatus::ok, 3.0));
  a.record_trial(d1, i1, "sm_90", set_trial(16, TrialStatus::crash, 0));
  a.record_trial(d1, i1, "sm_90", set_trial(32, TrialStatus::ok, 2.0));
  a.record_trial(dd2, i2, "sm_90", set_trial(8, TrialStatus::ok, 5.0));
  a.record_baseline(d1, i1, "cublas", Timing{1.5, 1.4, 1.45, 1.6, 20}, 0.3);

  const TrialSet all = parse_trial_set(trial_set_to_json(a.export_trial_set({})), "test");
  ASSERT_EQ(all.trials.size(), 4u);
  ASSERT_EQ(all.devices.size(), 2u);
  ASSERT_EQ(all.baselines.size(), 1u);
  EXPECT_EQ(a.export_trial_set({"second-gpu", {}, 0}).trials.size(), 1u);
  EXPECT_EQ(a.export_trial_set({"", {p1.key()}, 0}).trials.size(), 3u);
  EXPECT_EQ(a.export_trial_set({"", {p1.key(), p2.key()}, 0}).trials.size(), 4u);
  EXPECT_EQ(a.export_trial_set({"second-gpu", {p1.key()}, 0}).trials.size(), 0u);
  EXPECT_EQ(a.export_trial_set({"", {p1.key()}, 0}).baselines.size(), 1u);
  EXPECT_EQ(a.export_trial_set({"", {p2.key()}, 0}).baselines.size(), 0u);
  const TrialSet after = a.export_trial_set({"", {}, first});
  ASSERT_EQ(after.trials.size(), 3u);
  EXPECT_GT(after.trials[0].id, first);

  Store b(temp_db("set-b.db"));
  const Store::SetImport r = b.import_trial_set(all);
  EXPECT_EQ(r.added, 4u);
  EXPECT_EQ(r.already, 0u);
  EXPECT_EQ(r.baselines, 1u);
  const int64_t bd1 = b.device_id(fake_device()), bi1 = b.problem_id(p1);
  const auto got = b.trials(bd1, bi1), want = a.trials(d1, i1);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].config_json, want[i].config_json);
    EXPECT_EQ(got[i].config_hash, want[i].config_hash);
    EXPECT_EQ(got[i].status, want[i].status);
    EXPECT_EQ(got[i].error, want[i].error);
    EXPECT_DOUBLE_EQ(got[i].timing.p80_ms, want[i].timing.p80_ms);
    EXPECT_EQ(got[i].timing.reps, want[i].timing.reps);
    EXPECT_DOUBLE_EQ(got[i].rel_error, want[i].rel_error);
    EXPECT_EQ(got[i].registers, want[i].registers);
    EXPECT_DOUBLE_EQ(got[i].compile_s, want[i].compile_s);
    EXPECT_EQ(got[i].gate, want[i].gate);
  }
  ASSERT_TRUE(b.best("sm_90", p1.key()));
  EXPECT_EQ(b.best("sm_90", p1.key())->config_json, "{\"TILE\":32}");
  EXPECT_DOUBLE_EQ(*b.best("sm_90", p1.key())->cublas_ms, 1.5);
  EXPECT_TRUE(b.recorded_outcome(bd1, bi1, "gemm_smem", "t1", Config::from_json("{\"TILE\":8}").hash()));

  // Again: nothing new. A slower baseline reading is not kept, a faster one is.
  const Store::SetImport again = b.import_trial_set(all);
  EXPECT_EQ(again.added, 0u);
  EXPECT_EQ(again.already, 4u);
  EXPECT_EQ(again.baselines, 0u);
  EXPECT_EQ(b.count_trials(), 4);
  TrialSet faster = all;
  faster.trials.clear();
  faster.baselines[0].timing.median_ms = 1.2;
  EXPECT_EQ(b.import_trial_set(faster).baselines, 1u);
  EXPECT_DOUBLE_EQ(b.baseline(bd1, bi1, "cublas")->median_ms, 1.2);
}

TEST(Store, ABadTrialSetIsRefusedWhole) {
  Store a(temp_db("set-bad-a.db"));
  const int64_t d = a.device_id(fake_device());
  const int64_t p = a.problem_id(GemmProblem::parse("64x64x64"));
  a.record_trial(d, p, "sm_90", set_trial(8, TrialStatus::ok, 3.0));
  a.record_trial(d, p, "sm_90", set_trial(16, TrialStatus::ok, 2.0));
  const std::string good = trial_set_to_json(a.export_trial_set({}));
  auto bad = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  // Each planted fault names what is wrong.
  const std::pair<std::string, std::string> faults[] = {
      {bad("\"device\":\"0123456789abcdef\"", "\"device\":\"elsewhere\""), "not among the set's devices"},
      {bad("\"config_hash\":\"", "\"config_hash\":\"0"), "does not match the config"},
      {bad("\"status\":\"ok\"", "\"status\":\"fine\""), "fine"},
      {bad("\"problem\":\"gemm/f32/NN/64x64x64/a16\"", "\"problem\":\"gemm/f32/NN/64x64/a16\""), "trial 0"},
      {bad("\"median_ms\":3.0", "\"median_ms\":-3.0"), "median_ms"},
      {bad("\"schema\":\"ktune.trialset/1\"", "\"schema\":\"ktune.trialset/2\""), "unknown schema"},
  };
  for (const auto& [text, what] : faults) {
    try {
      parse_trial_set(text, "planted");
      ADD_FAILURE() << "accepted a set with " << what;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  }
  // A set that parses but names a device it does not carry writes nothing.
  Store b(temp_db("set-bad-b.db"));
  TrialSet s = parse_trial_set(good, "good");
  s.devices.clear();
  EXPECT_THROW(b.import_trial_set(s), UsageError);
  EXPECT_EQ(b.count_trials(), 0);
}
