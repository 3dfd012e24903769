// Checked CUDA driver calls: a failure throws ktune::Error naming the call and the context.
#pragma once
#include <cuda.h>

#include <string>

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

} // namespace ktune
