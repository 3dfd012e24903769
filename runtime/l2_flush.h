// Cold-cache timing pieces of the Timer (runtime/timing.h) that the tuner, ktune bench and the
// runtime's first use (runtime/first_use.cpp) share: a kernel that evicts L2 by reading a buffer twice
// its size, and a kernel that holds a stream for a while so that the next launch is queued (not
// timed as GPU idle) before a start event.
#pragma once
#include <cuda.h>

#include "runtime/module.h"

namespace ktune {

class L2Flusher {
 public:
  // l2_bytes: the device's L2 size; the flush buffer is twice that. Throws CudaError (for
  // instance when that much memory is not free).
  explicit L2Flusher(int l2_bytes);
  ~L2Flusher();
  L2Flusher(const L2Flusher&) = delete;
  L2Flusher& operator=(const L2Flusher&) = delete;

  // Reading a buffer twice the L2's size evicts whatever was there (dirty lines of a previous
  // kernel are written back now, not during the next timed one) and leaves L2 holding clean lines
  // only. A memset would evict as well, but its own dirty lines would then be written back during
  // the timed kernel, charging a memory-bound kernel for traffic that is not its own.
  void flush(CUstream stream);
  // One thread spinning on %globaltimer for `us` microseconds.
  void delay(CUstream stream, double us);

 private:
  DeviceBuffer buf_;
  CUmodule module_ = nullptr;
  CUfunction flush_ = nullptr, delay_ = nullptr;
};

} // namespace ktune
