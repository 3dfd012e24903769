// Shared by the GPU tests (names contain "Gpu"): the first device, or a clean skip without one.
#pragma once
#include <gtest/gtest.h>

#include "ktune/device.h"

namespace ktune::testing {

// The first GPU, listed once per process; null with the reason in *why only where there is truly
// no GPU (no driver library, the toolkit's stub, or a driver that sees no device: list_devices).
// A driver that is installed but broken throws ktune::Error out of here, so the GPU test that asked
// fails with the driver's error instead of skipping.
inline const DeviceInfo* first_gpu(std::string* why) {
  static std::string reason;
  static const std::vector<DeviceInfo> devices = list_devices(&reason);
  if (devices.empty()) {
    *why = reason;
    return nullptr;
  }
  return &devices[0];
}

} // namespace ktune::testing
