// The parent side of fault isolation, driven by scripted children: no GPU needed.
#include "tuner/worker.h"

#include <gtest/gtest.h>

#include <chrono>

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
