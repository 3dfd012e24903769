// The GPUs the driver sees (runtime/device.cpp). What a DeviceInfo is, and its pure functions,
// live in ktune/device_info.h (core/), included here so that this header still serves both.
#pragma once
#include <string>
#include <vector>

#include "ktune/device_info.h"

namespace ktune {

// The GPUs the driver sees; empty (not an error) when there is no driver or no device, with the
// reason in one line in *why_none (e.g. "cuInit failed: CUDA_ERROR_NO_DEVICE: ...").
std::vector<DeviceInfo> list_devices(std::string* why_none = nullptr);

// The GPU with this ordinal. Throws Error "no GPU available: <why>" when there is none at all (a
// run-time failure), UsageError naming the ordinal and how many GPUs exist when it is out of range.
DeviceInfo device_by_ordinal(int ordinal);

} // namespace ktune
