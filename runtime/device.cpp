#include "ktune/device.h"

#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>

#include "ktune/error.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/no_gpu.h"

namespace ktune {

namespace {

int attr(CUdevice dev, CUdevice_attribute a, const char* what) {
  int v = 0;
  check_cu(driver().cuDeviceGetAttribute(&v, a, dev), "cuDeviceGetAttribute", what);
  return v;
}

} // namespace

// None, with the reason, only where there is truly no GPU: libcuda.so.1 cannot be loaded, it is the
// toolkit's stub, or the driver sees no device (cuinit_means_no_gpu). A driver that is installed but
// fails (a libcuda without an entry point ktune needs, any other cuInit failure, cuDeviceGetCount
// failing after cuInit succeeded) throws Error: GPU tests then fail instead of skipping.
std::vector<DeviceInfo> list_devices(std::string* why_none) {
  std::vector<DeviceInfo> out;
  auto none = [&](std::string why) {
    if (why_none) *why_none = std::move(why);
    return out;
  };
  std::string no_driver;
  if (!try_driver(&no_driver)) {
    // try_driver keeps the library it opened even when an entry point is missing, so a library
    // still loaded here is a driver that is present but too old for ktune.
    if (void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) {
      dlclose(h);
      throw Error("the NVIDIA driver is installed but cannot be used: " + no_driver);
    }
    return none(no_driver);
  }
  CUresult r = driver().cuInit(0);
  if (r != CUDA_SUCCESS) {
    // The stub names no error (cuGetErrorName fails there too): say what it is.
    if (r == CUDA_ERROR_STUB_LIBRARY)
      return none("libcuda.so.1 is the CUDA toolkit's stub, not an NVIDIA driver (cuInit: CUDA_ERROR_STUB_LIBRARY)");
    if (cuinit_means_no_gpu(r)) return none("cuInit failed: " + cu_error_text(r));
    throw CudaError("the NVIDIA driver is installed but does not work: cuInit failed: " + cu_error_text(r), r);
  }
  int count = 0;
  check_cu(driver().cuDeviceGetCount(&count), "cuDeviceGetCount", "listing devices after cuInit succeeded");
  if (count == 0) return none("the driver reports no CUDA device");
  int driver_version = 0;
  check_cu(driver().cuDriverGetVersion(&driver_version), "cuDriverGetVersion", "listing devices");
  for (int i = 0; i < count; ++i) {
    CUdevice dev;
    check_cu(driver().cuDeviceGet(&dev, i), "cuDeviceGet", "device " + std::to_string(i));
    DeviceInfo d;
    d.ordinal = i;
    char name[256] = {};
    check_cu(driver().cuDeviceGetName(name, sizeof name - 1, dev), "cuDeviceGetName", "device " + std::to_string(i));
    d.name = name;
    d.cc_major = attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability");
    d.cc_minor = attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability");
    d.arch = "sm_" + std::to_string(d.arch_number());
    d.sm_count = attr(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count");
    size_t mem = 0;
    check_cu(driver().cuDeviceTotalMem(&mem, dev), "cuDeviceTotalMem", "device " + std::to_string(i));
    d.total_memory = static_cast<long long>(mem);
    d.max_threads_per_block = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads");
    d.max_smem_per_block_optin = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "smem opt-in");
    d.max_regs_per_block = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, "registers");
    d.l2_bytes = attr(dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2 size");
    d.sm_clock_khz = attr(dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, "SM clock");
    d.mem_clock_khz = attr(dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, "memory clock");
    d.mem_bus_width = attr(dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, "bus width");
    d.driver_version = driver_version;
    CUuuid uuid;
    check_cu(driver().cuDeviceGetUuid(&uuid, dev), "cuDeviceGetUuid", "device " + std::to_string(i));
    char hex[40] = {};
    for (int b = 0; b < 16; ++b) std::snprintf(hex + 2 * b, 3, "%02x", static_cast<unsigned char>(uuid.bytes[b]));
    d.uuid = hex;
    out.push_back(d);
  }
  return out;
}

DeviceInfo device_by_ordinal(int ordinal) {
  std::string why;
  const auto devs = list_devices(&why);
  if (devs.empty()) throw Error("no GPU available: " + why);
  if (ordinal < 0 || ordinal >= int(devs.size()))
    throw UsageError("no GPU with ordinal " + std::to_string(ordinal) + " (" + std::to_string(devs.size()) + " found)");
  return devs[size_t(ordinal)];
}

} // namespace ktune
