#include "runtime/timing.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/cuda_check.h"
#include "runtime/driver.h"

namespace ktune {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

Timer::Timer(int l2_bytes) : cold_(l2_bytes) {
  check_cu(driver().cuEventCreate(&start_, CU_EVENT_DEFAULT), "cuEventCreate", "timer");
  check_cu(driver().cuEventCreate(&stop_, CU_EVENT_DEFAULT), "cuEventCreate", "timer");
}

Timer::~Timer() {
  if (start_) driver().cuEventDestroy(start_);
  if (stop_) driver().cuEventDestroy(stop_);
}

Timing Timer::time(const std::function<void(CUstream)>& launch, CUstream stream, const TimingOptions& o,
                   const std::string& what, const std::function<void(CUstream)>& before_each,
                   const std::function<void(CUstream)>& after_flush) {
  for (int i = 0; i < o.warmup; ++i) {
    if (before_each) before_each(stream);
    launch(stream);
  }
  check_cu(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", what + ", after warm-up");
  // One event pair per repetition, read back right away: the flush between repetitions must not
  // be inside the timed region, and a per-rep synchronize keeps it so.
  std::vector<double> ms;
  double total = 0;
  auto more = [&] {
    const int n = int(ms.size());
    if (n >= o.max_reps || (n > 0 && total >= o.max_total_ms)) return false;
    if (n == 1 && o.cutoff_ms > 0 && ms[0] > o.cutoff_ms) return false;
    if (n >= o.min_reps && o.race_ms > 0 && median(ms) > o.race_ms) return false;
    return n < o.min_reps || total < o.min_total_ms;
  };
  while (more()) {
    if (before_each) before_each(stream);
    cold_.flush(stream);
    if (after_flush) after_flush(stream);
    // The GPU waits here while the host records the start event and queues the launch, so the
    // timed region starts with the kernel already queued: host-side launch cost (a library's
    // heuristics, a runtime's lookup) beyond the flush's ~40 us would otherwise count as GPU time
    // and swing the figures from run to run. That cost is measured apart (bench/runtime_cost).
    if (o.launch_lead_us > 0) cold_.delay(stream, o.launch_lead_us);
    check_cu(driver().cuEventRecord(start_, stream), "cuEventRecord", what);
    launch(stream);
    check_cu(driver().cuEventRecord(stop_, stream), "cuEventRecord", what);
    check_cu(driver().cuEventSynchronize(stop_), "cuEventSynchronize", what);
    float t = 0;
    check_cu(driver().cuEventElapsedTime(&t, start_, stop_), "cuEventElapsedTime", what);
    ms.push_back(t);
    total += t;
  }
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double q) { return ms[std::min(ms.size() - 1, size_t(std::floor(q * (ms.size() - 1) + 0.5)))]; };
  Timing r;
  r.reps = int(ms.size());
  r.min_ms = ms.front();
  r.p20_ms = pct(0.2);
  r.p80_ms = pct(0.8);
  r.median_ms = median(ms);
  return r;
}

double Timer::copy_tb_s(size_t bytes, const TimingOptions& o) {
  bytes = std::max<size_t>(4, bytes / 4 * 4);
  DeviceBuffer src(bytes, "copy bandwidth source"), dst(bytes, "copy bandwidth destination");
  check_cu(driver().cuMemsetD32Async(src.ptr(), 0x3f800000u, bytes / 4, nullptr), "cuMemsetD32Async", "copy bandwidth");
  const double ms = time(
      [&](CUstream st) {
        check_cu(driver().cuMemcpyDtoDAsync(dst.ptr(), src.ptr(), bytes, st), "cuMemcpyDtoDAsync", "copy bandwidth");
      },
      nullptr, o).median_ms;
  return 2.0 * double(bytes) / (ms * 1e-3) / 1e12;
}

} // namespace ktune
