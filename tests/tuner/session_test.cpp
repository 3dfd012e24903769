// The whole tuning loop (strategy, compile ahead with NVRTC, store, resume, fault statuses) on a
// CPU: the device is described rather than queried, and a shell script plays the worker.
#include "tuner/session.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "db/store.h"
#include "db/table.h"
#include "tuner/worker.h"
#include "ktune/error.h"
#include "ktune/gemm_problem.h"

using namespace ktune;

namespace {

const char* kOk =
    R"({"status":"ok","timing":{"median_ms":1.0,"min_ms":0.9,"p20_ms":0.95,"p80_ms":1.1,"reps":10},"registers":32,"smem":0,"local":0,"rel_error":1e-7})";
const char* kBaseline = R"({"status":"ok","timing":{"median_ms":2.0,"min_ms":1.9,"p20_ms":1.95,"p80_ms":2.1,"reps":10}})";

// A worker that answers every request from a table of (substring of the request, action).
std::string script(const std::string& cases) {
  return std::string("while read line; do case \"$line\" in *baseline*) echo '") + kBaseline + "';; " + cases +
         " *) echo '" + kOk + "';; esac; done";
}

TuneOptions options(const std::string& db, const std::string& worker_script, size_t budget) {
  TuneOptions o;
  o.families = {find_family("gemm_naive")};
  o.problems = {GemmProblem::parse("256x256x256")};
  o.strategy = "random";
  o.budget_evals = budget;
  o.seed = 5;
  o.db_path = db;
  o.device_info = DeviceInfo::nominal("sm_90");
  o.device_info->name = "Scripted GPU";
  o.device_info->uuid = "scripted";
  o.worker_argv = {"/bin/sh", "-c", worker_script};
  o.quiet = true;
  o.progress = false;
  o.timeout_s = 1.0;
  return o;
}

// Every config of gemm_naive with BY in by_values (a JSON array), no budget.
TuneOptions exhaustive_options(const std::string& db, const std::string& by_values) {
  TuneOptions o = options(db, script(""), 0);
  o.budget_evals.reset();
  o.strategy = "exhaustive";
  o.families = {find_family("gemm_naive").restricted(
      SpaceRestriction::from_json(R"({"domains": {"BY": )" + by_values + "}}", "test restriction"))};
  return o;
}

std::string fresh_db(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("ktune-session-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  for (const char* ext : {"", "-wal", "-shm"}) std::filesystem::remove(path + ext);
  return path;
}

int count(const ProblemResult& r, TrialStatus s) {
  auto it = r.by_status.find(s);
  return it == r.by_status.end() ? 0 : it->second;
}

} // namespace

// The worker's time on the baseline (a reading before the trials and one after) is reported
// apart from its time on evaluations: a worker taking 0.3 s a baseline reading and none an
// evaluation shows at least 0.6 s of baseline, and the evaluations far less.
TEST(Session, BaselineTimeIsReportedApartFromTheEvaluations) {
  const std::string db = fresh_db("baseline-time.db");
  const std::string slow_baseline = std::string("while read line; do case \"$line\" in *baseline*) sleep 0.3; echo '") +
                                    kBaseline + "';; *) echo '" + kOk + "';; esac; done";
  const TuneResult r = tune(options(db, slow_baseline, 3));
  ASSERT_EQ(r.problems.size(), 1u);
  const ProblemResult& p = r.problems[0];
  EXPECT_EQ(count(p, TrialStatus::ok), 3);
  EXPECT_GE(p.baseline_s, 0.6);
  EXPECT_LE(p.baseline_s, p.wall_s);
  EXPECT_LT(p.bench_s, 0.3) << "evaluations answered at once";
  EXPECT_DOUBLE_EQ(r.baseline_s, p.baseline_s);
}

// --compile-processes: the same run with NVRTC in `ktune compile-worker` processes tries the same
// configs, records the same trials and keeps the cubins in the database as a run on threads does.
TEST(Session, CompilesInWorkerProcessesRecordWhatThreadsRecord) {
  const std::string threads_db = fresh_db("compile-threads.db"), procs_db = fresh_db("compile-processes.db");
  const TuneResult a = tune(options(threads_db, script(""), 4));
  TuneOptions o = options(procs_db, script(""), 4);
  o.compile_argv = {std::string(KTUNE_BINARY_DIR) + "/ktune", "compile-worker"};
  const TuneResult b = tune(o);
  ASSERT_EQ(b.problems.size(), 1u);
  EXPECT_EQ(count(b.problems[0], TrialStatus::ok), 4);
  EXPECT_EQ(b.compiled, a.compiled);
  Store sa(threads_db), sb(procs_db);
  const auto ta = sa.trials(sa.device_id(*o.device_info), sa.problem_id(o.problems[0]));
  const auto tb = sb.trials(sb.device_id(*o.device_info), sb.problem_id(o.problems[0]));
  ASSERT_EQ(tb.size(), 4u);
  std::multiset<std::string> ca, cb;
  for (const auto& t : ta) ca.insert(t.config_json);
  for (const auto& t : tb) cb.insert(t.config_json);
  EXPECT_EQ(ca, cb);
  const auto cubins = [](const Store& s) {
    int64_t n = 0;
    for (const auto& c : s.binary_counts()) n += c.cubins;
    return n;
  };
  EXPECT_EQ(cubins(sb), cubins(sa));
  EXPECT_GT(cubins(sb), 0);
}

TEST(Session, RecordsEveryTrialAndResumesWithoutRepeating) {
  const std::string db = fresh_db("resume.db");
  auto r1 = tune(options(db, script(""), 5));
  ASSERT_EQ(r1.problems.size(), 1u);
  EXPECT_EQ(count(r1.problems[0], TrialStatus::ok), 5);
  EXPECT_EQ(r1.problems[0].skipped, 0);
  ASSERT_TRUE(r1.problems[0].cublas);
  EXPECT_DOUBLE_EQ(r1.problems[0].cublas->median_ms, 2.0);
  ASSERT_TRUE(r1.problems[0].best);

  // The same command with a larger budget: the first 5 are recognised and skipped.
  auto r2 = tune(options(db, script(""), 12));
  EXPECT_EQ(r2.problems[0].skipped, 5);
  EXPECT_EQ(count(r2.problems[0], TrialStatus::ok), 7);
  auto r3 = tune(options(db, script(""), 12));
  EXPECT_EQ(r3.problems[0].skipped, 12);
  EXPECT_TRUE(r3.problems[0].by_status.empty());
  Store s(db);
  EXPECT_EQ(s.count_trials(), 12);
  const std::string table = format_summary(r2);
  EXPECT_NE(table.find("gemm/f32/NN/256x256x256/a16"), std::string::npos) << table;
  EXPECT_NE(table.find("gemm_naive:"), std::string::npos) << table;
}

// The baseline is timed again after the problem's trials and the faster reading kept, in the
// result, the store and the exported table (a slow first reading would inflate the kernel's
// recorded lead over it); a slower second reading changes nothing.
TEST(Session, TheBaselineIsTimedAgainAfterTheTrialsAndTheFasterReadingKept) {
  for (const bool second_faster : {true, false}) {
    const std::string db = fresh_db(second_faster ? "rebaseline-fast.db" : "rebaseline-slow.db");
    const std::string second = second_faster ? "1.5" : "2.5";
    // The worker's first baseline reply reads 2.0 ms, its second `second` ms.
    const std::string worker =
        std::string("n=0; while read line; do case \"$line\" in *baseline*) n=$((n+1)); if [ $n -eq 1 ]; then echo '") +
        kBaseline + "'; else echo '{\"status\":\"ok\",\"timing\":{\"median_ms\":" + second +
        ",\"min_ms\":1.4,\"p20_ms\":1.45,\"p80_ms\":2.6,\"reps\":10}}'; fi;; *) echo '" + kOk + "';; esac; done";
    const auto r = tune(options(db, worker, 3));
    ASSERT_EQ(r.problems.size(), 1u);
    ASSERT_TRUE(r.problems[0].cublas);
    const double expect = second_faster ? 1.5 : 2.0;
    EXPECT_DOUBLE_EQ(r.problems[0].cublas->median_ms, expect);
    Store s(db);
    const Table t = s.export_table("sm_90");
    ASSERT_EQ(t.entries.size(), 1u);
    ASSERT_TRUE(t.entries[0].cublas_ms);
    EXPECT_DOUBLE_EQ(*t.entries[0].cublas_ms, expect);
  }
}

TEST(Session, CrashesHangsAndErrorsAreRecordedAndTuningGoesOn) {
  const std::string db = fresh_db("faults.db");
  // BX8 configs crash the worker, BY32 ones hang it, BX64 ones report a launch error, BY16 ones
  // a wrong result; everything else is fine.
  const std::string cases =
      R"(*\"BX\":8,*) kill -SEGV $$;; *\"BY\":32*) sleep 30;; *\"BX\":64,*) echo '{"status":"launch_error","error":"CUDA_ERROR_INVALID_VALUE"}';; *\"BY\":16*) echo '{"status":"wrong_result","error":"rel_error=1"}';;)";
  auto o = options(db, script(cases), 100);
  o.strategy = "exhaustive";
  const auto r = tune(o);
  const auto& p = r.problems[0];
  EXPECT_GT(count(p, TrialStatus::crash), 0);
  EXPECT_GT(count(p, TrialStatus::timeout), 0);
  EXPECT_GT(count(p, TrialStatus::launch_error), 0);
  EXPECT_GT(count(p, TrialStatus::wrong_result), 0);
  EXPECT_GT(count(p, TrialStatus::ok), 0);
  EXPECT_GT(r.worker_restarts, 0);
  ASSERT_TRUE(p.best);
  const Config best = Config::from_json(p.best->config_json);
  EXPECT_NE(best["BX"], 8);
  EXPECT_NE(best["BY"], 32);
  EXPECT_NE(best["BY"], 16);
  Store s(db);
  const auto rows = s.trials(s.device_id(*o.device_info), s.problem_id(o.problems[0]));
  int total = 0;
  for (const auto& [st, n] : p.by_status) total += n;
  EXPECT_EQ(int(rows.size()), total);
  for (const auto& t : rows) {
    if (t.status == TrialStatus::crash) {
      EXPECT_NE(t.error.find("Segmentation fault"), std::string::npos) << t.error;
    }
  }
}

// A problem's one-time work in the worker (the "load" request: a user kernel's reference compiled
// under heavy headers) has a limit of its own: a load that takes longer than a trial may (1.5 s
// against 1.0) times no trial out. It is sent again to each fresh worker (BX 8 crashes it), before
// the trial that would otherwise do that work itself: one load a worker started.
TEST(Session, AProblemsOneTimeWorkIsNotCountedInATrialsLimit) {
  const std::string db = fresh_db("load.db");
  const std::string loads = db + ".loads";
  std::filesystem::remove(loads);
  const std::string cases = R"(*\"op\":\"load\"*) echo load >> )" + loads +
                            R"(; sleep 1.5; echo '{"status":"ok","load_s":1.5}';; *\"BX\":8,*) kill -SEGV $$;;)";
  TuneOptions o = options(db, script(cases), 0);
  o.budget_evals.reset();
  o.strategy = "exhaustive";
  o.families = {find_family("gemm_naive").restricted(
      SpaceRestriction::from_json(R"({"domains": {"BY": [8]}})", "test restriction"))};
  o.load_timeout_s = 10;
  const TuneResult r = tune(o);
  ASSERT_EQ(r.problems.size(), 1u);
  const ProblemResult& p = r.problems[0];
  EXPECT_EQ(count(p, TrialStatus::timeout), 0);
  EXPECT_EQ(count(p, TrialStatus::crash), 1);
  EXPECT_EQ(count(p, TrialStatus::ok), 3);
  EXPECT_EQ(r.worker_restarts, 1);
  std::ifstream in(loads);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line == "load";
  EXPECT_EQ(n, 1 + r.worker_restarts) << "one load a worker started";
}

// Without its own limit the same load ran inside the first trial's: with load_timeout_s as short
// as a trial's, the load times out, is said once and not tried again, and the trials go on.
TEST(Session, ALoadThatFailsIsNotRepeatedAndTheTrialsGoOn) {
  const std::string db = fresh_db("load-fails.db");
  const std::string loads = db + ".loads";
  std::filesystem::remove(loads);
  const std::string cases = R"(*\"op\":\"load\"*) echo load >> )" + loads + R"(; sleep 1.5; echo '{"status":"ok"}';;)";
  TuneOptions o = options(db, script(cases), 3);
  o.load_timeout_s = 0.5;
  const TuneResult r = tune(o);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(count(r.problems[0], TrialStatus::ok), 3);
  std::ifstream in(loads);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line == "load";
  EXPECT_EQ(n, 1);
}

TEST(Session, TimeBudgetStopsTheProblem) {
  const std::string db = fresh_db("seconds.db");
  auto o = options(db, script(R"(*gemm_naive*) sleep 0.3; echo ')" + std::string(kOk) + "';;"), 1000);
  o.budget_evals.reset();
  o.budget_seconds = 1.0;
  o.timeout_s = 5;
  const auto r = tune(o);
  const int done = count(r.problems[0], TrialStatus::ok);
  EXPECT_GE(done, 1);
  EXPECT_LE(done, 5);
  EXPECT_LT(r.problems[0].wall_s, 3.0);
}

// The CLI's run ends when its time budget does, not after the compiles the budget abandoned
// (NVRTC cannot be stopped; a spec with heavy headers compiles for 10-30 s): with compile processes
// that never answer, a 1 s budget returns in a few seconds, the running compiles counted and left
// alive, nothing queued started after them. (kill_all_workers then does what
// exit_leaving_compiles does to the compile processes.)
TEST(Session, ARunThatLeavesItsCompilesRunningEndsWithItsBudget) {
  const std::string db = fresh_db("leave-compiles.db");
  auto o = options(db, script(""), 0);
  o.budget_evals.reset();
  o.budget_seconds = 1.0;
  o.compile_argv = {"/bin/sh", "-c", "while read line; do sleep 120; done"};
  o.leave_running_compiles = true;
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = tune(o);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  kill_all_workers();
  EXPECT_LT(wall, 8.0);
  EXPECT_GT(r.compiles_left_running, 0u);
  EXPECT_EQ(count(r.problems[0], TrialStatus::ok), 0);
}

// The time budget keeps back the baseline's second reading, estimated by the first's timing as the
// worker reports it, not by its wall time: a baseline whose first request takes 1.5 s (a user
// kernel's baseline compiled under heavy headers) but whose reading takes 0.01 s leaves the search
// the rest of a 4 s budget, where counting the compile twice left it a quarter of it.
TEST(Session, TheBudgetKeepsBackTheBaselinesReadingNotItsCompile) {
  const std::string db = fresh_db("baseline-compile.db");
  const std::string reply = std::string(kBaseline).substr(0, std::string(kBaseline).size() - 1) + R"(,"timing_s":0.01})";
  const std::string worker = "while read line; do case \"$line\" in *baseline*) if [ -z \"$seen\" ]; then sleep 1.5; seen=1; fi; "
                             "echo '" + reply + "';; *) sleep 0.3; echo '" + std::string(kOk) + "';; esac; done";
  auto o = options(db, worker, 0);
  o.budget_evals.reset();
  o.budget_seconds = 4.0;
  o.timeout_s = 5;
  const auto r = tune(o);
  const ProblemResult& p = r.problems[0];
  ASSERT_TRUE(p.cublas) << "the baseline was read";
  EXPECT_GE(count(p, TrialStatus::ok), 1);
  EXPECT_GE(p.wall_s, 0.8 * *o.budget_seconds) << "the search stopped early";
  EXPECT_LE(p.wall_s, 1.1 * *o.budget_seconds);
}

TEST(Session, ExhaustiveWithoutABudgetEvaluatesTheWholeSpace) {
  auto o = exhaustive_options(fresh_db("exhaustive.db"), "[1, 2, 4, 8]");
  const auto r = tune(o);
  const uint64_t space = o.families[0].count(o.problems[0], *o.device_info);
  EXPECT_GT(space, 0u);
  EXPECT_EQ(uint64_t(count(r.problems[0], TrialStatus::ok)), space);
}

TEST(Session, WarmStartTriesTheNearestTunedConfigFirst) {
  const std::string db = fresh_db("warm.db");
  const std::string table = fresh_db("warm.json");
  {
    std::ofstream f(table);
    f << R"({"schema": "ktune.table/1", "device": {"name": "Other GPU", "arch": "sm_80", "sm_count": 108}, "entries": [
      {"op": "gemm", "dtype": "f32", "layout": "NN", "m": 200, "n": 300, "k": 256, "align": 16, "family": "gemm_naive",
       "config": {"BX": 16, "BY": 8}, "time_ms": 1, "tflops": 1, "cublas_ms": null, "template_hash": "x"}]})";
  }
  auto o = options(db, script(""), 3);
  o.warm_start = table;
  tune(o);
  Store s(db);
  const auto rows = s.trials(s.device_id(*o.device_info), s.problem_id(o.problems[0]));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].config_json, R"({"BX":16,"BY":8})");
}

TEST(Session, ASuiteCompilesEachConfigOnce) {
  auto o = exhaustive_options(fresh_db("once.db"), "[4, 8]");
  o.problems = {GemmProblem::parse("256x256x256"), GemmProblem::parse("300x200x100"), GemmProblem::parse("64x64x64")};
  const auto r = tune(o);
  const size_t per_problem = o.families[0].count(o.problems[0], *o.device_info);
  EXPECT_EQ(r.compiled, per_problem);
  // Problems 2 and 3 reuse problem 1's compiles (from the database's binary cache, which is
  // filled as each compile finishes, or from the compiler's memory).
  EXPECT_EQ(r.compile_reused + r.store_reused, 2 * per_problem);
  // A later run of new problems finds the cubins in the database instead of compiling.
  auto o2 = o;
  o2.problems = {GemmProblem::parse("100x100x100")};
  const auto r2 = tune(o2);
  EXPECT_EQ(r2.compiled, 0u);
  EXPECT_EQ(r2.store_reused, per_problem);
}

TEST(Session, AResumedModelSearchContinuesAsIfNeverInterrupted) {
  // Timings that depend on the config, so that what the model learns steers what it picks.
  const std::string cases = std::string("*'\"BX\":8,'*) echo '") +
                            R"({"status":"ok","timing":{"median_ms":0.5,"min_ms":0.5,"p20_ms":0.5,"p80_ms":0.5,"reps":10}})" +
                            "';; *'\"BX\":64,'*) echo '" +
                            R"({"status":"ok","timing":{"median_ms":3.0,"min_ms":3.0,"p20_ms":3.0,"p80_ms":3.0,"reps":10}})" + "';;";
  auto run = [&](const std::string& db, size_t budget) {
    TuneOptions o = options(db, script(cases), budget);
    o.strategy = "model";
    return tune(o);
  };
  auto order = [](const std::string& db) {
    std::vector<std::string> out;
    Store s(db);
    for (const auto& t : s.trials(1, 1)) out.push_back(t.config_json);
    return out;
  };
  const std::string whole = fresh_db("model-whole.db"), resumed = fresh_db("model-resumed.db");
  run(whole, 14);
  run(resumed, 6); // "killed" after 6
  const auto r = run(resumed, 14);
  EXPECT_EQ(r.problems[0].skipped, 6);
  const auto a = order(whole), b = order(resumed);
  ASSERT_EQ(a.size(), 14u);
  EXPECT_EQ(a, b) << "the resumed search chose other configs after the recorded ones";
}

TEST(Session, SeveralFamiliesShareAProblemsBudgetWhereTheyCanServeIt) {
  // gemm_naive serves every problem, gemm_skinny only M <= 64: the decode problem's 6 proposals
  // are split between the two, the square one's all go to gemm_naive. A model-guided search
  // works per family like any other strategy.
  const std::string db = fresh_db("families.db");
  auto o = options(db, script(""), 6);
  o.strategy = "model";
  o.families = {find_family("gemm_naive"), find_family("gemm_skinny").restricted(SpaceRestriction::from_json(
                                               R"({"family": "gemm_skinny", "domains": {"ST": [0], "CL": [0], "NT": [64]}})",
                                               "test restriction"))};
  o.problems = {GemmProblem::parse("16x256x256"), GemmProblem::parse("256x256x256")};
  const auto r = tune(o);
  ASSERT_EQ(r.problems.size(), 2u);
  Store s(db);
  auto families_of = [&](const Problem& p) {
    std::map<std::string, int> n;
    for (const auto& t : s.trials(s.device_id(*o.device_info), s.problem_id(p))) ++n[t.family];
    return n;
  };
  const auto decode = families_of(o.problems[0]), square = families_of(o.problems[1]);
  EXPECT_EQ(decode.at("gemm_naive"), 3);
  EXPECT_EQ(decode.at("gemm_skinny"), 3);
  EXPECT_EQ(square.at("gemm_naive"), 6);
  EXPECT_EQ(square.count("gemm_skinny"), 0u);
  ASSERT_TRUE(r.problems[0].best);
}

TEST(Session, TrialsOutGetsOneJsonLineAPerRecordedTrial) {
  const std::string db = fresh_db("trials-out.db");
  const std::string log = fresh_db("trials-out.jsonl");
  // A worker that fails one config: its line carries the status and the error.
  // Configs with BY = 8 fail verification; exhaustive order (BX = 8 first, then every BY)
  // reaches one within the 6 evaluations.
  auto o = options(db, script(R"(*'"BY":8}'*) echo '{"status":"wrong_result","error":"rel_error=1"}';;)"), 6);
  o.strategy = "exhaustive";
  o.trials_out = log;
  tune(o);
  std::ifstream in(log);
  std::string line;
  int n = 0, ok = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j.at("problem"), o.problems[0].key());
    EXPECT_EQ(j.at("family"), "gemm_naive");
    EXPECT_TRUE(j.at("config").is_object());
    if (j.at("status") == "ok") {
      ++ok;
      EXPECT_DOUBLE_EQ(j.at("time_ms").get<double>(), 1.0);
    } else {
      EXPECT_EQ(j.at("status"), "wrong_result");
      EXPECT_FALSE(j.contains("time_ms"));
    }
    ++n;
  }
  EXPECT_EQ(n, 6);
  EXPECT_GT(ok, 0);
  EXPECT_LT(ok, n);
  Store s(db);
  EXPECT_EQ(size_t(n), s.trials(s.device_id(*o.device_info), s.problem_id(o.problems[0])).size());
  // A resumed run appends only what it evaluates anew.
  o.budget_evals = 8;
  tune(o);
  std::ifstream again(log);
  int lines = 0;
  while (std::getline(again, line)) ++lines;
  EXPECT_EQ(lines, 8);
  // An unwritable path is refused before any trial.
  o.trials_out = "/nonexistent/dir/trials.jsonl";
  EXPECT_THROW(tune(o), UsageError);
}

// The loop knows no op: the same resume and fault isolation for GEMM and for the row ops, with a
// scripted worker keyed on each family's own parameters. Row ops have no C++ baseline.
struct OpCase {
  const char* family;
  const char* op;
  const char* shape;
  DType dtype;
  const char* crash;  // substrings of a request (a config's JSON) that make the script misbehave
  const char* hang;
  const char* launch_error;
  const char* wrong;
};

class SessionByOp : public ::testing::TestWithParam<OpCase> {};

TEST_P(SessionByOp, RecordsResumesAndIsolatesFaultsAlike) {
  const OpCase& k = GetParam();
  const Problem problem = Problem::parse(k.op, k.shape, k.op == std::string("gemm") ? "NN" : "", k.dtype);
  auto opts = [&](const std::string& db, const std::string& worker, std::optional<size_t> budget, const char* strategy) {
    TuneOptions o = options(db, worker, budget.value_or(0));
    o.budget_evals = budget;
    o.families = {find_family(k.family)};
    o.problems = {problem};
    o.strategy = strategy;
    return o;
  };
  const std::string db = fresh_db(std::string("byop-") + k.op + ".db");
  auto r1 = tune(opts(db, script(""), 3, "random"));
  ASSERT_EQ(r1.problems.size(), 1u);
  EXPECT_EQ(count(r1.problems[0], TrialStatus::ok), 3);
  EXPECT_EQ(r1.problems[0].cublas.has_value(), !op_info(k.op).baseline.empty());
  auto r2 = tune(opts(db, script(""), 5, "random"));
  EXPECT_EQ(r2.problems[0].skipped, 3);
  EXPECT_EQ(count(r2.problems[0], TrialStatus::ok), 2);
  EXPECT_NE(format_summary(r2).find(problem.key()), std::string::npos);

  const std::string cases = std::string("*") + k.crash + "*) kill -SEGV $$;; *" + k.hang + "*) sleep 30;; *" + k.launch_error +
                            R"(*) echo '{"status":"launch_error","error":"CUDA_ERROR_INVALID_VALUE"}';; *)" + k.wrong +
                            R"(*) echo '{"status":"wrong_result","error":"rel_error=1"}';;)";
  const std::string db2 = fresh_db(std::string("byop-faults-") + k.op + ".db");
  const auto r = tune(opts(db2, script(cases), std::nullopt, "exhaustive"));
  const auto& p = r.problems[0];
  for (TrialStatus st : {TrialStatus::crash, TrialStatus::timeout, TrialStatus::launch_error, TrialStatus::wrong_result, TrialStatus::ok})
    EXPECT_GT(count(p, st), 0) << to_string(st);
  ASSERT_TRUE(p.best);
  for (const char* bad : {k.crash, k.hang, k.launch_error, k.wrong}) {
    std::string pattern = bad;
    for (char& ch : pattern)
      if (ch == '\\') ch = ' ';
    pattern.erase(std::remove(pattern.begin(), pattern.end(), ' '), pattern.end());
    EXPECT_EQ(p.best->config_json.find(pattern), std::string::npos) << p.best->config_json << " matches " << pattern;
  }
  // The best of the op's problem exports as a table entry of that op, and imports back.
  Store s(db2);
  const Table t = s.export_table("sm_90");
  ASSERT_EQ(t.entries.size(), 1u);
  EXPECT_EQ(t.entries[0].problem.key(), problem.key());
  EXPECT_EQ(parse_table(table_to_json(t), "export").entries[0].problem.key(), problem.key());
}

INSTANTIATE_TEST_SUITE_P(
    Ops, SessionByOp,
    ::testing::Values(OpCase{"gemm_naive", "gemm", "256x256x256", DType::f32, R"(\"BX\":8,)", R"(\"BY\":32)", R"(\"BX\":64,)",
                             R"(\"BY\":16)"},
                      OpCase{"rmsnorm_stream", "rmsnorm", "64x4096", DType::bf16, R"(\"VEC\":1,)", R"(\"THREADS\":1024)",
                             R"(\"THREADS\":64})", R"(\"VEC\":2,)"},
                      OpCase{"softmax_stream", "softmax", "8x32000", DType::f32, R"(\"VEC\":1,)", R"(\"THREADS\":1024)",
                             R"(\"THREADS\":64})", R"(\"VEC\":2,)"}),
    [](const ::testing::TestParamInfo<OpCase>& i) { return std::string(i.param.op); });

// --budget-seconds is wall time per problem, compiles (NVRTC, real here) and the strategy's own
// work included: a bf16 run over three families with the model strategy ends within
// P x budget + 10 % (and a second for the baseline readings a problem takes).
TEST(Session, TimeBudgetHoldsForEveryFamilyWithTheModelStrategy) {
  const std::string db = fresh_db("seconds-model.db");
  auto o = options(db, script(""), 0);
  o.budget_evals.reset();
  o.budget_seconds = 4.0;
  o.timeout_s = 30;
  o.strategy = "model";
  o.families = {find_family("gemm_tc16"), find_family("gemm_skinny16"), find_family("gemm_wgmma")};
  o.problems = {GemmProblem::parse("2048x4096x4096", "NN", DType::bf16), GemmProblem::parse("16x4096x4096", "NN", DType::bf16),
                GemmProblem::parse("777x3584x18944", "NN", DType::bf16)};
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = tune(o);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double in_problems = 0;
  for (const auto& p : r.problems) {
    std::cout << "[ ktune    ] " << p.problem.key() << ": " << p.wall_s << " s, " << count(p, TrialStatus::ok) << " ok, compile "
              << p.compile_s << " s\n";
    EXPECT_LE(p.wall_s, 1.1 * *o.budget_seconds) << p.problem.key();
    in_problems += p.wall_s;
  }
  // The session's own work outside the problems' budgets (the store, the shipped tables read for
  // warm starts, the worker's start): 1 to 4.2 s measured on a 2-core machine running ctest -j2.
  std::cout << "[ ktune    ] outside the problems: " << wall - in_problems << " s\n";
  EXPECT_LE(wall - in_problems, 6.0);
}

namespace {

// Two scripted GPUs of one model ("Scripted GPU", ordinals 0 and 1) over six problems.
TuneOptions two_gpus(const std::string& db, const std::string& worker_script) {
  TuneOptions o = options(db, worker_script, 3);
  o.problems.clear();
  for (const char* s : {"128x128x128", "256x256x256", "384x256x128", "512x128x256", "640x256x64", "768x128x128"})
    o.problems.push_back(GemmProblem::parse(s));
  o.device_info.reset();
  o.devices = {0, 1};
  for (int d : o.devices) {
    DeviceInfo info = DeviceInfo::nominal("sm_90");
    info.name = "Scripted GPU";
    info.uuid = "scripted-" + std::to_string(d);
    info.ordinal = d;
    o.device_infos.push_back(info);
  }
  return o;
}

// The worker as script() makes it, a little slower (so that both GPUs take problems).
std::string slow_script() {
  return std::string("while read line; do sleep 0.02; case \"$line\" in *baseline*) echo '") + kBaseline +
         "';; *) echo '" + kOk + "';; esac; done";
}

} // namespace

// --devices: each GPU takes the next problem as it finishes one; every problem's trials are
// recorded under the GPU that tuned it, and a resumed run gives each problem back to that GPU,
// where every trial is skipped.
TEST(Session, SeveralGpusTakeProblemsInTurnAndResumeWhereTheirTrialsAre) {
  const std::string db = fresh_db("two-gpus.db");
  const TuneOptions o = two_gpus(db, slow_script());
  const TuneResult r = tune(o);
  ASSERT_EQ(r.problems.size(), o.problems.size());
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_TRUE(r.retired.empty());
  std::set<int> used;
  Store s(db);
  for (size_t i = 0; i < r.problems.size(); ++i) {
    const ProblemResult& p = r.problems[i];
    EXPECT_EQ(p.problem.key(), o.problems[i].key()) << "results in the suite's order";
    EXPECT_EQ(count(p, TrialStatus::ok), 3) << p.problem.key();
    used.insert(p.device);
    const int64_t pid = s.problem_id(p.problem);
    EXPECT_EQ(s.trials(s.device_id(o.device_infos[size_t(p.device)]), pid).size(), 3u) << p.problem.key();
    EXPECT_EQ(s.count_trials(s.device_id(o.device_infos[size_t(p.device)]), pid), 3) << p.problem.key();
    EXPECT_EQ(s.count_trials(s.device_id(o.device_infos[size_t(1 - p.device)]), pid), 0) << p.problem.key();
    EXPECT_TRUE(s.trials(s.device_id(o.device_infos[size_t(1 - p.device)]), pid).empty()) << p.problem.key();
  }
  EXPECT_EQ(used, (std::set<int>{0, 1})) << "both GPUs took problems";
  EXPECT_EQ(s.count_trials(), 18);
  EXPECT_NE(format_summary(r).find("problems per GPU: 0: "), std::string::npos) << format_summary(r);

  TuneOptions more = o;
  more.budget_evals = 4;
  const TuneResult again = tune(more);
  ASSERT_EQ(again.problems.size(), o.problems.size());
  for (size_t i = 0; i < again.problems.size(); ++i) {
    EXPECT_EQ(again.problems[i].device, r.problems[i].device) << "back to the GPU that holds its trials";
    EXPECT_EQ(again.problems[i].skipped, 3) << again.problems[i].problem.key();
    EXPECT_EQ(count(again.problems[i], TrialStatus::ok), 1) << again.problems[i].problem.key();
  }
  Store after(db);
  EXPECT_EQ(after.count_trials(), 24) << "no trial recorded twice";
}

// Several GPUs take the longest problems first, so that the run ends on short ones; equal ones
// keep the suite's order.
TEST(Session, SeveralGpusTakeTheLongestProblemsFirst) {
  const std::vector<Problem> suite = {
      GemmProblem::parse("1x4096x4096", "NN", DType::bf16),    // 32 MiB of B read: bytes-bound
      GemmProblem::parse("2048x2048x2048", "NN", DType::bf16), // 17 GFLOP
      GemmProblem::parse("8192x8192x8192", "NN", DType::bf16), // 1.1 TFLOP
      GemmProblem::parse("64x64x64", "NN", DType::bf16),
      GemmProblem::parse("2048x2048x2048", "NN", DType::bf16)};
  EXPECT_EQ(longest_first(suite), (std::vector<size_t>{2, 1, 4, 0, 3}));
  EXPECT_TRUE(longest_first({}).empty());
}

TEST(Session, GpusOfDifferentModelsAreRefusedUnlessAllowed) {
  const std::string db = fresh_db("mixed.db");
  TuneOptions o = two_gpus(db, script(""));
  o.device_infos[1].name = "Other GPU";
  try {
    tune(o);
    FAIL() << "a run over two GPU models was not refused";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("Scripted GPU"), std::string::npos) << what;
    EXPECT_NE(what.find("Other GPU"), std::string::npos) << what;
    EXPECT_NE(what.find("--allow-mixed-devices"), std::string::npos) << what;
  }
  Store untouched(db);
  EXPECT_EQ(untouched.count_trials(), 0);
  o.allow_mixed_devices = true;
  const TuneResult r = tune(o);
  EXPECT_EQ(r.problems.size(), o.problems.size());
  TuneOptions twice = two_gpus(db, script(""));
  twice.devices = {1, 1};
  twice.device_infos.resize(1);
  EXPECT_THROW(tune(twice), UsageError);
}

// GPU 1's worker dies on every kernel and then on every ping (a GPU that stopped answering):
// after its first crash GPU 1 is retired with a line saying so, its problem goes to GPU 0, and
// every problem is tuned there. On one GPU alone the same fault stops the run with that line.
TEST(Session, AGpuThatStopsAnsweringIsRetiredAndTheOthersGoOn) {
  const std::string dead = std::string("while read line; do case \"$line\" in *baseline*) echo '") + kBaseline +
                           "';; *) exit 1;; esac; done";
  const std::string worker = "if [ \"$1\" = 1 ]; then " + dead + "; else " + slow_script() + "; fi";
  const std::string db = fresh_db("retired.db");
  const TuneOptions o = two_gpus(db, worker);
  const TuneResult r = tune(o);
  ASSERT_EQ(r.problems.size(), o.problems.size());
  ASSERT_EQ(r.retired.size(), 1u);
  EXPECT_NE(r.retired[0].find("GPU 1 (Scripted GPU) no longer answers"), std::string::npos) << r.retired[0];
  for (const ProblemResult& p : r.problems) {
    EXPECT_EQ(p.device, 0) << p.problem.key();
    EXPECT_EQ(count(p, TrialStatus::ok), 3) << p.problem.key();
  }
  EXPECT_NE(format_summary(r).find("retired: GPU 1"), std::string::npos) << format_summary(r);

  TuneOptions alone = two_gpus(fresh_db("retired-alone.db"), worker);
  alone.devices = {1};
  alone.device_infos = {o.device_infos[1]};
  try {
    tune(alone);
    FAIL() << "a run whose only GPU stopped answering went on";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("every GPU of the run was retired"), std::string::npos) << e.what();
  }
}
