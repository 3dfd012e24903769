// What the tuner and the constraints need to know about a GPU: plain data and the pure functions
// over it (core/device_info.cpp). Kept apart from ktune/device.h, which asks the driver for the
// GPUs present (runtime/device.cpp), so that core/ (families) and db/ (trials, tables, lending)
// can name a DeviceInfo without reaching the runtime.
#pragma once
#include <string>

namespace ktune {

struct DeviceInfo {
  int ordinal = -1; // -1: nominal limits of an arch, no physical device
  std::string name;
  std::string arch; // "sm_90"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  long long total_memory = 0;
  int max_threads_per_block = 1024;
  int max_smem_per_block_optin = 48 * 1024; // bytes a block may use after opting in
  int max_regs_per_block = 65536;
  int l2_bytes = 0;
  int sm_clock_khz = 0, mem_clock_khz = 0, mem_bus_width = 0;
  int driver_version = 0; // e.g. 13000
  std::string uuid;

  int arch_number() const { return cc_major * 10 + cc_minor; }

  // Published per-arch limits, used where no GPU is present (space counting, compile tests).
  // Accepts the archs CUDA 13 compiles for but sm_88 (sm_75 to sm_121, each with its "a" form);
  // throws UsageError otherwise.
  static DeviceInfo nominal(const std::string& arch);
};

// "sm_90a" -> 90; throws UsageError on anything that is not sm_<digits>[a].
int arch_number(const std::string& arch);

} // namespace ktune
