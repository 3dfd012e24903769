#include "ktune/device_info.h"

#include <regex>

#include "ktune/error.h"

namespace ktune {

int arch_number(const std::string& arch) {
  static const std::regex re("^sm_([0-9]{2,3})a?$");
  std::smatch m;
  if (!std::regex_match(arch, m, re)) throw UsageError("bad arch '" + arch + "' (expected e.g. sm_80, sm_90, sm_90a)");
  return std::stoi(m[1]);
}

DeviceInfo DeviceInfo::nominal(const std::string& arch) {
  DeviceInfo d;
  d.arch = arch;
  d.name = "nominal " + arch;
  const int n = ktune::arch_number(arch);
  d.cc_major = n / 10;
  d.cc_minor = n % 10;
  // Per-block opt-in shared memory from the CUDA programming guide's compute-capability table
  // (Blackwell's as CUTLASS's cutlass/arch/arch.h gives them: 232448 bytes for 10.x and 11.0,
  // 101376 for 12.x), for every arch CUDA 13 compiles for but sm_88. The SM count is one
  // part's of the arch (T4, A100, RTX 3090, Jetson AGX Orin, RTX 4090, H100, B200 for 10.0 and
  // 10.3, Jetson Thor, RTX 5090, DGX Spark): offline only, where no device says its own; a tuning
  // run reads the device's. Without these, nothing could be compiled for a T4 or a Blackwell GPU
  // (compile_request checks a config against the arch's nominal limits).
  switch (n) {
    case 75: d.max_smem_per_block_optin = 64 * 1024; d.sm_count = 40; break;
    case 80: d.max_smem_per_block_optin = 163 * 1024; d.sm_count = 108; break;
    case 86: d.max_smem_per_block_optin = 99 * 1024; d.sm_count = 84; break;
    case 87: d.max_smem_per_block_optin = 163 * 1024; d.sm_count = 16; break;
    case 89: d.max_smem_per_block_optin = 99 * 1024; d.sm_count = 128; break;
    case 90: d.max_smem_per_block_optin = 227 * 1024; d.sm_count = 132; break;
    case 100: case 103: d.max_smem_per_block_optin = 227 * 1024; d.sm_count = 148; break;
    case 110: d.max_smem_per_block_optin = 227 * 1024; d.sm_count = 20; break;
    case 120: d.max_smem_per_block_optin = 99 * 1024; d.sm_count = 170; break;
    case 121: d.max_smem_per_block_optin = 99 * 1024; d.sm_count = 48; break;
    default:
      throw UsageError("no nominal limits for arch '" + arch +
                       "' (known: sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_100, sm_103, sm_110, sm_120, sm_121, each with an \"a\" form)");
  }
  return d;
}

} // namespace ktune
