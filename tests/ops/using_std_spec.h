// A kernel file as older CUDA projects write one: `using namespace std;` at global scope, then
// unqualified math on floats and on integers (abs(i), sqrt(x), sqrt(2), truncf, signbit, fmax)
// beside CUB's block reduction. Under nvcc std's math is CUDA's global math; under NVRTC CUB brings
// libcu++'s cuda::std math too, functions of the same signatures, so the calls were ambiguous:
// ktune qualifies the calls the compile's log points at and compiles again (CPU test), and the
// kernel verifies against a reference written with the global functions by name (GPU test).
#pragma once

namespace ktune::testing {

inline constexpr const char* kUsingStdSource = R"CUDA(#include <iostream>
#include <vector>
#include <cmath>
#include <cstdlib>
#include <cub/cub.cuh>
using namespace std;

template <typename T>
__device__ T shifted(T v, int i) { return v + T(abs(i % 7 - 3)); }

template <int B>
__global__ void mix(const float* x, float* y, float* block_sum, int n) {
  const int i = blockIdx.x * B + threadIdx.x;
  float v = 0.f;
  if (i < n) {
    const float a = x[i];
    v = shifted(sqrt(fabs(a)), i) + float(sqrt(2)) * truncf(4.f * a) + (signbit(a) ? 1.f : 0.f) + fmax(a, 0.25f) + pow(a, 2.f);
    y[i] = v;
  }
  typedef cub::BlockReduce<float, B> R;
  __shared__ typename R::TempStorage t;
  const float m = R(t).Sum(v);
  if (threadIdx.x == 0) block_sum[blockIdx.x] = m;
}

__global__ void mix_ref(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float a = x[i];
  y[i] = ::sqrtf(::fabsf(a)) + float(::abs(i % 7 - 3)) + float(::sqrt(2.0)) * ::truncf(4.f * a) + (a < 0.f ? 1.f : 0.f) +
         ::fmaxf(a, 0.25f) + ::powf(a, 2.f);
}

int main() {
  std::vector<float> host(1000);
  cout << host.size() << endl;
  return 0;
}
)CUDA";

inline constexpr const char* kUsingStdSpec = R"JSON({
  "name": "using_std_global", "sources": ["mix.cu"], "host_code": "skip", "params_as": "template", "dims": ["n"],
  "params": {"B": [128, 256]},
  "launch": {"kernel": "mix<{B}>", "grid": ["ceil_div(n, B)"], "block": ["B"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out", "rtol": 1e-5},
           {"name": "block_sum", "kind": "buffer", "dtype": "f32", "count": "ceil_div(n, 128)", "intent": "temp"},
           {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
  "check": {"reference": {"kernel": "mix_ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128], "args": ["x", "y", "n_"]}}}
})JSON";

} // namespace ktune::testing
