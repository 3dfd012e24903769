#include "tuner/timing.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/cuda_check.h"
#include "runtime/driver.h"

namespace ktune {

namespace {

// The flush kernel, as PTX for the driver to compile for whatever GPU it runs on (nvcc -ptx of:
// sum every float4 of p, store the sum only if it is exactly -1, which the fill pattern never
// gives, so the loads cannot be optimised away and nothing is written), and the delay kernel
// (one thread spinning on %globaltimer for ns nanoseconds).
constexpr char kFlushPtx[] = R"(.version 7.0
.target sm_75
.address_size 64
.visible .entry ktune_l2_flush(.param .u64 p, .param .u64 n, .param .u64 out)
{
  .reg .pred %p<4>;
  .reg .f32 %f<16>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<17>;
  ld.param.u64 %rd8, [p];
  ld.param.u64 %rd9, [n];
  ld.param.u64 %rd10, [out];
  mov.u32 %r1, %ntid.x;
  cvt.u64.u32 %rd1, %r1;
  mov.u32 %r2, %ctaid.x;
  mul.wide.u32 %rd11, %r2, %r1;
  mov.u32 %r3, %tid.x;
  cvt.u64.u32 %rd12, %r3;
  add.s64 %rd16, %rd11, %rd12;
  setp.ge.u64 %p1, %rd16, %rd9;
  @%p1 bra DONE;
  mov.u32 %r4, %nctaid.x;
  cvt.u64.u32 %rd13, %r4;
  mul.lo.s64 %rd3, %rd13, %rd1;
  cvta.to.global.u64 %rd4, %rd10;
  cvta.to.global.u64 %rd5, %rd8;
  mov.f32 %f15, 0f00000000;
LOOP:
  shl.b64 %rd14, %rd16, 4;
  add.s64 %rd15, %rd5, %rd14;
  ld.global.nc.v4.f32 {%f4, %f5, %f6, %f7}, [%rd15];
  add.f32 %f12, %f4, %f5;
  add.f32 %f13, %f6, %f7;
  add.f32 %f14, %f12, %f13;
  add.f32 %f15, %f15, %f14;
  add.s64 %rd16, %rd16, %rd3;
  setp.lt.u64 %p2, %rd16, %rd9;
  @%p2 bra LOOP;
  setp.neu.f32 %p3, %f15, 0fBF800000;
  @%p3 bra DONE;
  st.global.f32 [%rd4], %f15;
DONE:
  ret;
}

.visible .entry ktune_delay(.param .u64 ns)
{
  .reg .pred %p<2>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [ns];
  mov.u64 %rd2, %globaltimer;
  add.s64 %rd3, %rd2, %rd1;
SPIN:
  mov.u64 %rd4, %globaltimer;
  setp.lt.u64 %p1, %rd4, %rd3;
  @%p1 bra SPIN;
  ret;
}
)";

} // namespace

Timer::Timer(int l2_bytes) : flush_buf_(size_t(std::max(l2_bytes, 1 << 20)) * 2, "L2 flush buffer") {
  const std::string what = "L2 flush buffer of " + std::to_string(flush_buf_.bytes()) + " bytes";
  check_cu(driver().cuMemsetD32Async(flush_buf_.ptr(), 0x3f800000u, flush_buf_.bytes() / 4, nullptr), "cuMemsetD32Async", what);
  check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", what);
  check_cu(driver().cuModuleLoadData(&flush_module_, kFlushPtx), "cuModuleLoadData", "the L2 flush kernel (PTX)");
  check_cu(driver().cuModuleGetFunction(&flush_kernel_, flush_module_, "ktune_l2_flush"), "cuModuleGetFunction", "ktune_l2_flush");
  check_cu(driver().cuModuleGetFunction(&delay_kernel_, flush_module_, "ktune_delay"), "cuModuleGetFunction", "ktune_delay");
  check_cu(driver().cuEventCreate(&start_, CU_EVENT_DEFAULT), "cuEventCreate", "timer");
  check_cu(driver().cuEventCreate(&stop_, CU_EVENT_DEFAULT), "cuEventCreate", "timer");
}

Timer::~Timer() {
  if (start_) driver().cuEventDestroy(start_);
  if (stop_) driver().cuEventDestroy(stop_);
  if (flush_module_) driver().cuModuleUnload(flush_module_);
}

void Timer::flush(CUstream stream) {
  // Reading a buffer twice the L2's size evicts whatever the previous repetition left there
  // (its dirty lines of C are written back now, outside the timed region) and leaves L2 holding
  // clean lines only. A memset would evict as well, but its own dirty lines would then be written
  // back during the timed kernel, charging a memory-bound kernel for traffic that is not its own.
  CUdeviceptr p = flush_buf_.ptr(), out = flush_buf_.ptr();
  unsigned long long n = flush_buf_.bytes() / 16;
  void* params[] = {&p, &n, &out};
  check_cu(driver().cuLaunchKernel(flush_kernel_, 1024, 1, 1, 256, 1, 1, 0, stream, params, nullptr), "cuLaunchKernel",
           "ktune_l2_flush (flushing L2)");
}

void Timer::delay(CUstream stream, double us) {
  unsigned long long ns = (unsigned long long)(us * 1000);
  void* params[] = {&ns};
  check_cu(driver().cuLaunchKernel(delay_kernel_, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr), "cuLaunchKernel",
           "ktune_delay (holding the stream while the timed launch is queued)");
}

Timing Timer::time(const std::function<void(CUstream)>& launch, CUstream stream, const TimingOptions& o) {
  for (int i = 0; i < o.warmup; ++i) launch(stream);
  check_cu(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", "after warm-up");
  // One event pair per repetition, read back right away: the flush between repetitions must not
  // be inside the timed region, and a per-rep synchronize keeps it so.
  std::vector<double> ms;
  double total = 0;
  auto more = [&] {
    const int n = int(ms.size());
    if (n >= o.max_reps || (n > 0 && total >= o.max_total_ms)) return false;
    if (n == 1 && o.cutoff_ms > 0 && ms[0] > o.cutoff_ms) return false;
    return n < o.min_reps || total < o.min_total_ms;
  };
  while (more()) {
    flush(stream);
    // The GPU waits here while the host records the start event and queues the launch, so the
    // timed region starts with the kernel already queued: host-side launch cost (a library's
    // heuristics, a runtime's lookup) beyond the flush's ~40 us would otherwise count as GPU time
    // and swing the figures from run to run. That cost is measured apart (bench/runtime_cost).
    if (o.launch_lead_us > 0) delay(stream, o.launch_lead_us);
    check_cu(driver().cuEventRecord(start_, stream), "cuEventRecord", "timing");
    launch(stream);
    check_cu(driver().cuEventRecord(stop_, stream), "cuEventRecord", "timing");
    check_cu(driver().cuEventSynchronize(stop_), "cuEventSynchronize", "timing");
    float t = 0;
    check_cu(driver().cuEventElapsedTime(&t, start_, stop_), "cuEventElapsedTime", "timing");
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
  r.median_ms = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  return r;
}

} // namespace ktune
