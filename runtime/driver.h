// The CUDA driver API, loaded with dlopen at first use instead of linked. A binary linked against
// libcuda does not even start on a machine without the NVIDIA driver; ktune must start there
// (CI, `ktune --help`, `ktune space`, the shipped tables) and say plainly that there is no GPU.
#pragma once
#include <cuda.h>

#include <string>

namespace ktune {

// Every driver entry point ktune uses. The names go through cuda.h's macros (cuMemAlloc ->
// cuMemAlloc_v2) both here and at the call sites, so the versioned symbol is the one loaded.
#define KTUNE_DRIVER_FUNCTIONS(X)                                                                                   \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet)      \
  X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDeviceGetUuid) X(cuDevicePrimaryCtxRetain) \
  X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxGetDevice) X(cuCtxSynchronize) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) \
  X(cuMemcpyHtoDAsync) X(cuMemcpyDtoH) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoD) X(cuMemcpyDtoDAsync) X(cuMemsetD32Async) X(cuMemsetD16Async) X(cuMemsetD8Async) X(cuModuleLoadData) X(cuModuleUnload)                      \
  X(cuModuleGetFunction) X(cuModuleGetGlobal) X(cuFuncGetAttribute) X(cuFuncGetParamInfo) X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuStreamCreate)          \
  X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamIsCapturing) X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize)              \
  X(cuEventElapsedTime) X(cuEventDestroy) X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuOccupancyMaxActiveClusters) X(cuTensorMapEncodeTiled) \
  X(cuTexObjectCreate) X(cuTexObjectDestroy) X(cuArray3DCreate) X(cuArrayDestroy) X(cuMemcpy2DAsync) X(cuMemcpy3DAsync) X(cuSurfObjectCreate) X(cuCtxGetId)

struct DriverApi {
#define KTUNE_DRIVER_MEMBER(fn) decltype(&::fn) fn = nullptr;
  KTUNE_DRIVER_FUNCTIONS(KTUNE_DRIVER_MEMBER)
#undef KTUNE_DRIVER_MEMBER
};

// The process-wide table, loaded once (thread-safe). Null when libcuda.so.1 cannot be loaded or
// lacks an entry point; *why then says which, in one line.
const DriverApi* try_driver(std::string* why = nullptr);
// As try_driver, but throws Error("no NVIDIA driver: ...") instead of returning null.
const DriverApi& driver();

} // namespace ktune
