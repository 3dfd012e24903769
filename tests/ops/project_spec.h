// A project laid out as llm.c's dev/cuda is: a kernel file that includes the project's common.h,
// whose host code (a host variable, error checks, a timer class with a struct timeval member,
// cuBLAS's header for its handles) sits beside a device helper; the kernel uses what nvcc's
// implicit headers give (-INFINITY, glibc's uint), its file has main, a host template and that
// template's explicit instantiation. With "host_code": "skip" it compiles as it is (CPU test) and
// its softmax verifies (GPU test).
#pragma once

namespace ktune::testing {

inline constexpr const char* kProjectCommon = R"CUDA(#pragma once
#include <stdlib.h>
#include <stdio.h>
#include <sys/time.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

extern cudaDeviceProp deviceProp;
void cuda_check(cudaError_t error, const char* file, int line);
#define cudaCheck(err) (cuda_check(err, __FILE__, __LINE__))

template <class T>
T ceil_div(T dividend, T divisor) { return (dividend + divisor - 1) / divisor; }

class Timer {
 public:
  Timer();
  void start();
  float stop_ms();
 private:
  struct timeval start_time;
  FILE* log;
};

__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
)CUDA";

inline constexpr const char* kProjectSoftmax = R"CUDA(#include "common.h"

cudaDeviceProp deviceProp;
void cuda_check(cudaError_t error, const char* file, int line) {
  if (error != cudaSuccess) { printf("[CUDA ERROR] at file %s:%d:\n%s\n", file, line, cudaGetErrorString(error)); exit(EXIT_FAILURE); }
}

// One warp a row of C floats: the row's max, its exponentials' sum, the normalized row.
template <int WARPS>
__global__ void softmax_forward(float* out, const float* inp, int N, int C) {
  const uint row = blockIdx.x * WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= (uint)N) return;
  const float* x = inp + (size_t)row * C;
  float m = -INFINITY;
  for (int i = lane; i < C; i += 32) m = fmaxf(m, x[i]);
  m = warp_max(m);
  float s = 0.f;
  for (int i = lane; i < C; i += 32) s += expf(x[i] - m);
  s = warp_sum(s);
  for (int i = lane; i < C; i += 32) out[(size_t)row * C + i] = expf(x[i] - m) / s;
}

__global__ void softmax_reference(float* out, const float* inp, int N, int C) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= N) return;
  const float* x = inp + (size_t)row * C;
  double m = -INFINITY, s = 0.0;
  for (int i = 0; i < C; ++i) m = fmax(m, (double)x[i]);
  for (int i = 0; i < C; ++i) s += exp((double)x[i] - m);
  for (int i = 0; i < C; ++i) out[(size_t)row * C + i] = (float)(exp((double)x[i] - m) / s);
}

template <int WARPS>
void launch_softmax(float* out, const float* inp, int N, int C) {
  softmax_forward<WARPS><<<ceil_div(N, WARPS), WARPS * 32>>>(out, inp, N, C);
  cudaCheck(cudaGetLastError());
}
template void launch_softmax<4>(float*, const float*, int, int);

int main(int argc, char** argv) {
  cublasHandle_t handle;
  cublasCreate(&handle);
  cudaCheck(cudaGetDeviceProperties(&deviceProp, 0));
  float *out, *inp;
  cudaCheck(cudaMalloc(&out, 1024 * 768 * sizeof(float)));
  cudaCheck(cudaMalloc(&inp, 1024 * 768 * sizeof(float)));
  launch_softmax<4>(out, inp, 1024, 768);
  return 0;
}
)CUDA";

inline constexpr const char* kProjectSoftmaxSpec = R"JSON({
  "name": "project_softmax", "sources": ["dev/softmax_forward.cu"], "host_code": "skip", "params_as": "template",
  "dims": ["N", "C"], "params": {"WARPS": [2, 8]},
  "launch": {"kernel": "softmax_forward<{WARPS}>", "grid": ["ceil_div(N, WARPS)"], "block": ["WARPS * 32"], "args": ["out", "inp", "N_", "C_"]},
  "args": [{"name": "inp", "kind": "buffer", "dtype": "f32", "count": "N * C"},
           {"name": "out", "kind": "buffer", "dtype": "f32", "count": "N * C", "intent": "out", "rtol": 1e-5, "atol": 1e-7},
           {"name": "N_", "kind": "scalar", "dtype": "i32", "value": "N"}, {"name": "C_", "kind": "scalar", "dtype": "i32", "value": "C"}],
  "check": {"reference": {"kernel": "softmax_reference", "launch": {"grid": ["ceil_div(N, 128)"], "block": [128], "args": ["out", "inp", "N_", "C_"]}}}
})JSON";

} // namespace ktune::testing
