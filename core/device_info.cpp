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
  // Per-block opt-in shared memory from the CUDA programming guide's compute-capability table.
  switch (n) {
    case 80: d.max_smem_per_block_optin = 163 * 1024; d.sm_count = 108; break;
    case 86: d.max_smem_per_block_optin = 99 * 1024; d.sm_count = 84; break;
    case 89: d.max_smem_per_block_optin = 99 * 1024; d.sm_count = 128; break;
    case 90: d.max_smem_per_block_optin = 227 * 1024; d.sm_count = 132; break;
    default: throw UsageError("no nominal limits for arch '" + arch + "' (known: sm_80, sm_86, sm_89, sm_90, sm_90a)");
  }
  return d;
}

} // namespace ktune
