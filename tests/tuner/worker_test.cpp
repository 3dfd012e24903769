// The parent side of fault isolation, driven by scripted children, and what reaches the child
// (launch plans): no GPU needed.
#include "tuner/worker.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ktune/family.h"
#include "tuner/json_io.h"
#include "ktune/gemm_problem.h"

using namespace ktune;

namespace {
WorkerProcess sh(const std::string& script) { return WorkerProcess({"/bin/sh", "-c", script}); }
} // namespace

TEST(Worker, RepliesAreParsedAndTheChildIsReused) {
  auto w = sh("while read line; do echo '{\"status\":\"ok\",\"n\":1}'; done");
  for (int i = 0; i < 3; ++i) {
    const auto r = w.request({{"op", "eval"}}, 5);
    ASSERT_EQ(r.outcome, WorkerProcess::Outcome::replied) << r.detail;
    EXPECT_EQ(r.body["status"], "ok");
  }
  EXPECT_EQ(w.restarts(), 0);
}

TEST(Worker, ACrashedChildIsReportedWithItsSignalAndRestarted) {
  auto w = sh("read line; kill -SEGV $$");
  auto r = w.request({{"op", "eval"}}, 5);
  EXPECT_EQ(r.outcome, WorkerProcess::Outcome::died);
  EXPECT_NE(r.detail.find("Segmentation fault"), std::string::npos) << r.detail;
  r = w.request({{"op", "eval"}}, 5);
  EXPECT_EQ(r.outcome, WorkerProcess::Outcome::died);
  EXPECT_EQ(w.restarts(), 1);
}

TEST(Worker, AHungChildIsKilledAtTheDeadline) {
  auto w = sh("read line; sleep 60");
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = w.request({{"op", "eval"}}, 0.5);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.outcome, WorkerProcess::Outcome::timed_out);
  EXPECT_LT(s, 5.0);
}

TEST(Worker, AnExitWithoutReplyIsADeath) {
  auto w = sh("read line; exit 7");
  const auto r = w.request({{"op", "eval"}}, 5);
  EXPECT_EQ(r.outcome, WorkerProcess::Outcome::died);
  EXPECT_NE(r.detail.find("status 7"), std::string::npos) << r.detail;
}

TEST(Worker, GarbageOnTheProtocolIsNotTakenForAReply) {
  auto w = sh("read line; echo 'not json'");
  const auto r = w.request({{"op", "eval"}}, 5);
  EXPECT_EQ(r.outcome, WorkerProcess::Outcome::died);
  EXPECT_NE(r.detail.find("unreadable"), std::string::npos) << r.detail;
}

TEST(Worker, AStickyReplyRetiresTheChildSoTheNextRequestGetsAFreshOne) {
  // Like the real worker: reply with sticky = true, then exit. The next request must be answered
  // by a new child, not fail on the old one's exit.
  auto w = sh("read line; echo '{\"status\":\"launch_error\",\"sticky\":true}'; exit 3");
  auto r = w.request({{"op", "eval"}}, 5);
  ASSERT_EQ(r.outcome, WorkerProcess::Outcome::replied);
  r = w.request({{"op", "eval"}}, 5);
  ASSERT_EQ(r.outcome, WorkerProcess::Outcome::replied) << r.detail;
  EXPECT_EQ(w.restarts(), 1);
}

TEST(Worker, LaunchPlansReachTheWorkerWhole) {
  // The worker times the plan it is sent: every field the runtime's launch uses must survive the
  // trip, the dependent launch of the split-K reduce included (else trials time another launch).
  const Family f = find_family("gemm_skinny");
  const Config c = Config::from_json(
      R"({"MT":16,"NT":128,"VEC":4,"KG":4,"NC":1,"UNROLL":1,"KC":32,"LDH":0,"CL":0,"SPLITK":4,"ST":4,"MINB":3})");
  LaunchPlan plan = f.launch_plan(c, GemmProblem::parse("16x4096x4096"));
  ASSERT_EQ(plan.steps.size(), 2u);
  ASSERT_TRUE(plan.steps[1].overlap_previous);
  plan.steps[0].balance_clusters = true; // (a cluster kernel's scheduling policy: rows_bulk's LB)
  plan.steps[1].persistent = true;       // (a grid capped at the resident blocks: gemm_wgmma's PT 0)
  plan.steps[1].swap_ab = true;          // (C^T = B^T A^T: gemm_wgmma's SWAP; the first swapped tune
                                         // without it got a wrong result from every SWAP config)
  const LaunchPlan back = plan_from_json(nlohmann::json::parse(plan_to_json(plan).dump()));
  EXPECT_EQ(back.workspace_bytes, plan.workspace_bytes);
  ASSERT_EQ(back.steps.size(), plan.steps.size());
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const LaunchStep &a = plan.steps[i], &b = back.steps[i];
    EXPECT_EQ(b.kernel, a.kernel) << i;
    for (int d = 0; d < 3; ++d) {
      EXPECT_EQ(b.grid[d], a.grid[d]) << i;
      EXPECT_EQ(b.block[d], a.block[d]) << i;
    }
    EXPECT_EQ(b.dynamic_smem, a.dynamic_smem) << i;
    EXPECT_EQ(b.overlap_previous, a.overlap_previous) << i;
    EXPECT_EQ(b.balance_clusters, a.balance_clusters) << i;
    EXPECT_EQ(b.persistent, a.persistent) << i;
    EXPECT_EQ(b.swap_ab, a.swap_ab) << i;
  }
}

TEST(Worker, TmaLaunchPlansReachTheWorkerWhole) {
  // A TMA step launched without its tensor-map boxes would run its kernel on garbage maps (the
  // first gemm_wgmma tuning run on an H100 got CUDA_ERROR_ILLEGAL_INSTRUCTION for every TMA config).
  // The packed form too (PACK = 1, an unaligned problem): its maps read the workspace copies (the
  // first tune of packed configs got a failed tensor-map encode for every config without them).
  const Family f = find_family("gemm_wgmma");
  for (const char* layout : {"NN", "TT"})
    for (int pack : {0, 1}) {
      Config c = f.canonical(Config::from_json(R"({"BM":128,"BN":256,"WG":2,"ST":4,"SWZ":8,"TMA":1})"));
      c.set("PACK", pack);
      const LaunchPlan plan = f.launch_plan(c, GemmProblem::parse(pack ? "2999x2999x2999" : "4096x4096x4096", layout, DType::bf16));
      const LaunchPlan back = plan_from_json(nlohmann::json::parse(plan_to_json(plan).dump()));
      ASSERT_EQ(back.steps.size(), plan.steps.size());
      EXPECT_EQ(back.workspace_bytes, plan.workspace_bytes);
      const LaunchStep &a = plan.main_step(), &b = back.main_step();
      ASSERT_TRUE(a.tma());
      EXPECT_TRUE(b.tma());
      for (auto [x, y] : {std::pair{*a.tma_of(gemm_a), *b.tma_of(gemm_a)}, std::pair{*a.tma_of(gemm_b), *b.tma_of(gemm_b)}}) {
        EXPECT_EQ(y.k_inner, x.k_inner) << layout;
        EXPECT_EQ(y.box_inner, x.box_inner) << layout;
        EXPECT_EQ(y.box_outer, x.box_outer) << layout;
        EXPECT_EQ(y.packed_offset, x.packed_offset) << layout;
        EXPECT_EQ(y.packed_ld, x.packed_ld) << layout;
        EXPECT_EQ(x.packed_offset >= 0, pack == 1) << layout;
      }
      EXPECT_EQ(b.block[0], a.block[0]);
      // Without TMA stores (EPI 0) no C map; with them (aligned problems only) its box comes back.
      EXPECT_EQ(b.tma_of(gemm_c), nullptr);
      if (!pack) {
        c.set("EPI", 1);
        const LaunchStep s = f.launch_plan(c, GemmProblem::parse("4096x4096x4096", layout, DType::bf16)).main_step();
        const LaunchStep t = plan_from_json(nlohmann::json::parse(plan_to_json(f.launch_plan(c, GemmProblem::parse("4096x4096x4096", layout, DType::bf16))).dump())).main_step();
        EXPECT_EQ(s.tma_of(gemm_c)->box_inner, 64u);
        EXPECT_EQ(s.tma_of(gemm_c)->box_outer, 64u); // BM 128 over 2 consumer warpgroups
        EXPECT_TRUE(s.tma_of(gemm_c)->k_inner);
        EXPECT_EQ(t.tma_of(gemm_c)->box_inner, s.tma_of(gemm_c)->box_inner);
        EXPECT_EQ(t.tma_of(gemm_c)->box_outer, s.tma_of(gemm_c)->box_outer);
        EXPECT_EQ(t.tma_of(gemm_c)->k_inner, s.tma_of(gemm_c)->k_inner);
      }
    }
  // Plans without TMA carry no maps in their JSON and come back without them.
  const LaunchPlan plain = find_family("gemm_tc16").launch_plan(find_family("gemm_tc16").default_config(
                                                                     GemmProblem::parse("4096x4096x4096", "NN", DType::bf16),
                                                                     DeviceInfo::nominal("sm_90")),
                                                                 GemmProblem::parse("4096x4096x4096", "NN", DType::bf16));
  EXPECT_FALSE(plan_to_json(plain)["steps"][0].contains("tma_maps"));
  EXPECT_FALSE(plan_from_json(plan_to_json(plain)).steps[0].tma());
}

// Every family's plans come back from the worker's JSON as they went (json_io's one description of
// LaunchStep and its tensor maps): the default config and samples at aligned, odd and skinny shapes.
TEST(Worker, EveryFamilysLaunchPlansSurviveTheirJson) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  size_t plans = 0, with_maps = 0;
  for (const Family& f : builtin_families()) {
    // User kernels that other tests of this process registered: their plans at a made-up problem
    // may rightly fail (a count that is whole only at their own); kernel_spec_test round-trips theirs.
    if (op_info(f.op()).spec) continue;
    for (DType t : f.dtypes()) {
      if (t == DType::tf32) continue;
      std::vector<Problem> problems;
      if (f.op() == "gemm")
        for (const char* shape : {"4096x4096x4096", "2999x2999x2999", "16x4096x4096"})
          problems.push_back(GemmProblem::parse(shape, "NN", t));
      else {
        // Any other op (registered ones included) by its number of dimensions.
        const size_t rank = op_info(f.op()).dims.size();
        std::string shape = rank == 1 ? "1000003" : rank == 2 ? "4096x4096" : "2";
        for (size_t i = 1; rank > 2 && i < rank; ++i) shape += i + 1 == rank ? "x128" : "x64";
        problems.push_back(Problem::parse(f.op(), shape, "", t));
      }
      for (const Problem& p : problems) {
        std::vector<Config> cs = f.sample(p, d, 4, 9);
        if (f.has_default()) cs.push_back(f.default_config(p, d));
        for (const Config& c : cs) {
          if (!f.valid(c, p, d)) continue;
          const LaunchPlan plan = f.launch_plan(c, p);
          const nlohmann::json j = plan_to_json(plan);
          const LaunchPlan back = plan_from_json(nlohmann::json::parse(j.dump()));
          EXPECT_EQ(plan_to_json(back), j) << f.name() << " " << c.to_json() << " " << p.key();
          ASSERT_EQ(back.steps.size(), plan.steps.size());
          for (size_t i = 0; i < plan.steps.size(); ++i) {
            EXPECT_EQ(back.steps[i].tma_maps.size(), plan.steps[i].tma_maps.size());
            with_maps += plan.steps[i].tma();
          }
          ++plans;
        }
      }
    }
  }
  EXPECT_GT(plans, 100u);
  EXPECT_GT(with_maps, 10u); // the wgmma families' TMA steps were among them
}

// The timing options travel to the worker as JSON: one writer and one reader (tuner/json_io).
TEST(Worker, TimingOptionsSurviveTheRequestAndMissingFieldsKeepDefaults) {
  TimingOptions o;
  o.warmup = 3, o.min_reps = 7, o.max_reps = 70, o.min_total_ms = 12.5, o.max_total_ms = 900, o.cutoff_ms = 0.25, o.race_ms = 0.125,
  o.launch_lead_us = 30;
  const TimingOptions back = timing_options_from_json(timing_options_to_json(o));
  EXPECT_EQ(back.warmup, 3);
  EXPECT_EQ(back.min_reps, 7);
  EXPECT_EQ(back.max_reps, 70);
  EXPECT_DOUBLE_EQ(back.min_total_ms, 12.5);
  EXPECT_DOUBLE_EQ(back.max_total_ms, 900);
  EXPECT_DOUBLE_EQ(back.cutoff_ms, 0.25);
  EXPECT_DOUBLE_EQ(back.race_ms, 0.125);
  EXPECT_DOUBLE_EQ(back.launch_lead_us, 30);
  const TimingOptions dflt, partial = timing_options_from_json(nlohmann::json{{"min_reps", 2}});
  EXPECT_EQ(partial.min_reps, 2);
  EXPECT_EQ(partial.max_reps, dflt.max_reps);
  EXPECT_DOUBLE_EQ(partial.cutoff_ms, dflt.cutoff_ms);
}

// A worker runs in its own process group, so a Ctrl-C at the terminal reaches the tuner alone:
// the tuner must take its workers down with it. A child process plays the tuner (the test runner
// must not get the signal); its worker writes its pid and sleeps; SIGINT to the child ends both.
TEST(Worker, ATerminalInterruptOfTheTunerEndsItsWorker) {
  const std::string pid_file = ::testing::TempDir() + "ktune-worker-pid-" + std::to_string(getpid());
  std::remove(pid_file.c_str());
  const pid_t tuner = fork();
  ASSERT_GE(tuner, 0);
  if (tuner == 0) {
    auto w = sh("echo $$ > " + pid_file + ".tmp && mv " + pid_file + ".tmp " + pid_file + " && exec sleep 60");
    w.request({{"op", "eval"}}, 30);
    _exit(3); // not reached unless the signal never came
  }
  pid_t worker = 0;
  for (int i = 0; i < 500 && !worker; ++i) {
    std::ifstream(pid_file) >> worker;
    if (!worker) usleep(10000);
  }
  ASSERT_GT(worker, 0) << "the worker never started";
  usleep(50000); // the exec of sleep
  ASSERT_EQ(kill(tuner, SIGINT), 0);
  int st = 0;
  ASSERT_EQ(waitpid(tuner, &st, 0), tuner);
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT) << "the tuner should die of the interrupt, status " << st;
  // Gone, or a zombie waiting for whoever adopted it: either way no longer running.
  char state = 0;
  for (int i = 0; i < 200; ++i) {
    std::ifstream stat("/proc/" + std::to_string(worker) + "/stat");
    std::string pid_s, comm;
    state = 0;
    if (!(stat >> pid_s >> comm >> state) || state == 'Z') break;
    usleep(10000);
  }
  EXPECT_TRUE(state == 0 || state == 'Z') << "worker " << worker << " still running (state " << state << ")";
  if (state != 0 && state != 'Z') kill(worker, SIGKILL);
  std::remove(pid_file.c_str());
}
