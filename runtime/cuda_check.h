// Checked CUDA driver calls: a failure throws ktune::Error naming the call and the context.
#pragma once
#include <cuda.h>

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "ktune/error.h"
#include "runtime/driver.h"

namespace ktune {

// CUDA_ERROR_ILLEGAL_ADDRESS and friends leave the context unusable; callers that must survive
// them (the tuner) check is_sticky() and replace the process that owns the context.
class CudaError : public Error {
 public:
  CudaError(const std::string& what, CUresult code) : Error(what), code_(code) {}
  CUresult code() const { return code_; }
  bool is_sticky() const {
    return code_ == CUDA_ERROR_ILLEGAL_ADDRESS || code_ == CUDA_ERROR_ILLEGAL_INSTRUCTION ||
           code_ == CUDA_ERROR_MISALIGNED_ADDRESS || code_ == CUDA_ERROR_INVALID_ADDRESS_SPACE ||
           code_ == CUDA_ERROR_INVALID_PC || code_ == CUDA_ERROR_LAUNCH_FAILED ||
           code_ == CUDA_ERROR_HARDWARE_STACK_ERROR || code_ == CUDA_ERROR_ASSERT;
  }

 private:
  CUresult code_;
};

inline std::string cu_error_text(CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  driver().cuGetErrorName(r, &name);
  driver().cuGetErrorString(r, &text);
  return std::string(name ? name : "CUDA_ERROR_?") + ": " + (text ? text : "unknown error");
}

inline void check_cu(CUresult r, const char* call, const std::string& context) {
  if (r != CUDA_SUCCESS) throw CudaError(std::string(call) + " failed: " + cu_error_text(r) + " (" + context + ")", r);
}

// The current context's id (cuCtxGetId: a context made again at the same address, a primary
// context released and retained, is another), the key of what ktune keeps per context (texture
// objects, address tables). what: the message's context, made only for an error (a launch asks
// on every call).
inline unsigned long long current_context_id(const std::function<std::string()>& what) {
  CUcontext ctx = nullptr;
  if (const CUresult r = driver().cuCtxGetCurrent(&ctx); r != CUDA_SUCCESS) check_cu(r, "cuCtxGetCurrent", what());
  unsigned long long id = 0;
  if (const CUresult r = driver().cuCtxGetId(ctx, &id); r != CUDA_SUCCESS) check_cu(r, "cuCtxGetId", what());
  return id;
}

// Attribute a (name: for the error) of the current context's device, queried once a device and
// attribute: what a launch reads at a call (a grid of sm_count, a texture's alignment).
inline int current_device_attribute(CUdevice_attribute a, const char* name, const std::string& what) {
  CUdevice dev = 0;
  check_cu(driver().cuCtxGetDevice(&dev), "cuCtxGetDevice", what);
  static std::mutex mu;
  static std::map<std::pair<CUdevice, CUdevice_attribute>, int> known;
  std::lock_guard<std::mutex> lk(mu);
  if (const auto it = known.find({dev, a}); it != known.end()) return it->second;
  int v = 0;
  check_cu(driver().cuDeviceGetAttribute(&v, a, dev), "cuDeviceGetAttribute", what + " (" + name + ")");
  return known[{dev, a}] = v;
}

} // namespace ktune
