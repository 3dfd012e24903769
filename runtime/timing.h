// Timing on the GPU as docs/METHOD says (the tuner's trials, ktune bench, and the runtime's first
// use of a problem nobody tuned all time kernels this one way): warm-up first, CUDA events around each repetition,
// repetitions until a minimum total time, the L2 flushed before every repetition so that no
// problem is timed from cache (nor pays for writing back what the flush left), and the median
// kept with min, p20 and p80. Each repetition's launch is queued behind a short GPU-side delay
// so that host launch latency is not timed.
#pragma once
#include <cuda.h>

#include <functional>
#include <string>
#include <vector>

#include "core/trial.h"
#include "runtime/l2_flush.h"

namespace ktune {

// The median of v (the mean of the middle two for an even count; 0 for none).
double median(std::vector<double> v);

struct TimingOptions {
  int warmup = 1;           // untimed launches after the verification run (which loaded the module)
  int min_reps = 10;
  int max_reps = 200;
  double min_total_ms = 50; // repetitions continue until their summed time reaches this
  double max_total_ms = 2000; // ...and stop once they pass this, min_reps or not (slow configs)
  // A config whose first timed repetition is slower than this cannot be the best: it is timed
  // once and no more. 0 disables. The tuner sets it from the best time so far.
  double cutoff_ms = 0;
  // ...and one whose median over min_reps repetitions or more is slower than this stops there:
  // it is clearly not the best, so the repetitions that would pin its time down are not spent
  // (a small kernel's 200 cost ~35 ms of a tuning run's ~50 ms a config). 0 disables. The tuner
  // sets it to 1.1x the best time so far; a config within that is timed in full.
  double race_ms = 0;
  // Before each repetition's start event the stream is held this long on the GPU (a spinning
  // kernel), so the launch is queued before timing starts. 0 disables.
  double launch_lead_us = 100;
};

class Timer {
 public:
  // l2_bytes: the device's L2 size; the flush buffer is twice that.
  explicit Timer(int l2_bytes);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Times launch(stream). Throws CudaError when a launch or a CUDA call fails, naming `what`.
  // before_each (if set) runs ahead of every launch, warm-up included, outside the timed region
  // and before the L2 flush: it puts back the state a run must start from (OpRunner::restore).
  // after_flush (if set) runs after the flush, before the lead delay, untimed: what a measurement
  // wants back in L2 or the SMs' caches (bench/cold_code: the same kernels over other buffers, so
  // that their code is warm and the timed call's data still cold).
  Timing time(const std::function<void(CUstream)>& launch, CUstream stream, const TimingOptions& o,
              const std::string& what = "timing", const std::function<void(CUstream)>& before_each = {},
              const std::function<void(CUstream)>& after_flush = {});
  // cuMemcpyDtoD of `bytes` (rounded down to whole words, at least one) between two fresh
  // buffers, timed like a kernel: the copy bandwidth memory-bound kernels are held against, in
  // TB/s counting bytes read and written (ktune bench, bench/read_floor).
  double copy_tb_s(size_t bytes, const TimingOptions& o);

 private:
  L2Flusher cold_; // the L2 flush before, and the lead delay inside, every repetition
  CUevent start_ = nullptr, stop_ = nullptr;
};

} // namespace ktune
