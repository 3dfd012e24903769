// The tuner's timer on a real GPU: a launch whose host side is slow (a library's heuristics, a
// runtime's lookup) must not be timed as GPU time once the stream is held by the lead delay, and
// is timed without it, which shows the check can fail; a race stops a slow config early.
#include <gtest/gtest.h>

#include <chrono>

#include "gpu_env.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/module.h"
#include "runtime/timing.h"

using namespace ktune;

namespace {

TEST(TimerGpu, HostLaunchLatencyIsNotTimedBehindTheLeadDelay) {
  std::string why;
  const DeviceInfo* dev = ktune::testing::first_gpu(&why);
  if (!dev) GTEST_SKIP() << "no GPU: " << why;
  CudaContext ctx(dev->ordinal);
  Timer timer(dev->l2_bytes);
  DeviceBuffer buf(4096, "timer test buffer");
  // 300 us of host work before a tiny GPU operation that itself takes a few microseconds.
  auto slow_host_launch = [&](CUstream s) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(300);
    while (std::chrono::steady_clock::now() < until) {
    }
    check_cu(driver().cuMemsetD32Async(buf.ptr(), 7u, 1024, s), "cuMemsetD32Async", "timer test");
  };
  TimingOptions o;
  o.min_reps = 20, o.min_total_ms = 0;
  o.launch_lead_us = 0; // the flush (~40 us) is all that hides the host work: most of it is timed
  const Timing bare = timer.time(slow_host_launch, nullptr, o);
  o.launch_lead_us = 2000; // the stream is held far longer than the host work takes
  const Timing led = timer.time(slow_host_launch, nullptr, o);
  std::cout << "[timer] " << dev->name << ": median " << bare.median_ms * 1000 << " us without a lead, "
            << led.median_ms * 1000 << " us with a 2 ms lead\n";
  EXPECT_GT(bare.median_ms, 0.15);
  EXPECT_LT(led.median_ms, 0.05);
}

// The tuner's race (TimingOptions::race_ms): a config slower than the bar after min_reps stops
// there; one under it, or with no bar, is timed as long as the options ask.
TEST(TimerGpu, ARaceStopsAConfigSlowerThanTheBarAfterMinReps) {
  std::string why;
  const DeviceInfo* dev = ktune::testing::first_gpu(&why);
  if (!dev) GTEST_SKIP() << "no GPU: " << why;
  CudaContext ctx(dev->ordinal);
  Timer timer(dev->l2_bytes);
  DeviceBuffer buf(size_t(64) << 20, "race test buffer");
  auto memset = [&](CUstream s) {
    check_cu(driver().cuMemsetD32Async(buf.ptr(), 7u, buf.bytes() / 4, s), "cuMemsetD32Async", "race test");
  };
  TimingOptions o;
  o.min_reps = 10, o.max_reps = 60, o.min_total_ms = 1e9, o.max_total_ms = 1e9;
  const Timing full = timer.time(memset, nullptr, o);
  EXPECT_EQ(full.reps, 60) << "no bar: every repetition";
  o.race_ms = 0.5 * full.median_ms;
  const Timing raced = timer.time(memset, nullptr, o);
  EXPECT_EQ(raced.reps, 10) << "twice the bar: stopped at min_reps";
  o.race_ms = 4 * full.median_ms;
  EXPECT_EQ(timer.time(memset, nullptr, o).reps, 60) << "well under the bar: timed in full";
}

} // namespace
