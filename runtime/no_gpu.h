// Which outcomes of the CUDA driver's start-up mean "this machine has no GPU" (list_devices returns
// none, GPU tests skip) and which mean "a driver is installed but does not work" (an error: GPU
// tests fail, the tools say so), so that a broken driver is never mistaken for a machine without one.
#pragma once
#include <cuda.h>

namespace ktune {

// cuInit's failures that mean no GPU: CUDA_ERROR_NO_DEVICE (the driver sees none, or
// CUDA_VISIBLE_DEVICES hides them all) and CUDA_ERROR_STUB_LIBRARY (the toolkit's link-time stub
// libcuda was found, not a driver). Every other failure (CUDA_ERROR_UNKNOWN,
// CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,
// CUDA_ERROR_INSUFFICIENT_DRIVER, ...) is a driver that is there and broken.
inline bool cuinit_means_no_gpu(CUresult r) { return r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_STUB_LIBRARY; }

} // namespace ktune
