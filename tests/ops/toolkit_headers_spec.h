// A project's .cu file that includes CUDA's own headers as nvcc takes them, host code and all:
// <cuda.h> (the driver API beside the CUtensorMap a kernel takes) and <cub/cub.cuh> (CUB's
// device-wide algorithms beside the warp reduction another kernel uses). Shared by the CPU test
// (it compiles, with the views ktune hands NVRTC) and the GPU test (its kernels verified).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "tma_spec.h"

namespace ktune::testing {

inline const std::string kToolkitSource = std::string(R"CUDA(
#include <cuda.h>
#include <cub/cub.cuh>
#include <cstdio>

// Host code: a w x h map of floats read in bx x by tiles, and a device-wide sum.
CUresult encode_map(CUtensorMap* m, float* x, int w, int h, int bx, int by) {
  const cuuint64_t dims[2] = {cuuint64_t(w), cuuint64_t(h)};
  const cuuint64_t strides[1] = {cuuint64_t(w) * sizeof(float)};
  const cuuint32_t box[2] = {cuuint32_t(bx), cuuint32_t(by)}, step[2] = {1, 1};
  return cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, x, dims, strides, box, step, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}
cudaError_t total(const int* x, int* out, int n, void* tmp, size_t* bytes) { return cub::DeviceReduce::Sum(tmp, *bytes, x, out, n); }
void report(const char* what, CUresult r) { printf("%s: %d\n", what, int(r)); }

)CUDA") + kTmaCopyKernels + R"CUDA(
// Each warp's 32 values summed by cub::WarpReduce; every lane writes its warp's sum.
template <int B>
__global__ void warp_sums(const int* x, int* y, int n) {
  using Reduce = cub::WarpReduce<int>;
  __shared__ typename Reduce::TempStorage tmp[B / 32];
  const int i = blockIdx.x * B + threadIdx.x;
  const int s = Reduce(tmp[threadIdx.x / 32]).Sum(i < n ? x[i] : 0);
  const int all = __shfl_sync(0xffffffffu, s, 0);
  if (i < n) y[i] = all;
}
__global__ void warp_sums_ref(const int* x, int* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int s = 0;
  for (int k = i / 32 * 32; k < i / 32 * 32 + 32 && k < n; ++k) s += x[k];
  y[i] = s;
}
)CUDA";

// tma_spec.h's spec, over this file with its host code skipped.
inline const std::string kToolkitTmaSpec = [] {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(kTmaSpec);
  j["name"] = "toolkit_tma_copy";
  j["sources"] = {"toolkit.cu"};
  j["host_code"] = "skip";
  return j.dump();
}();

inline constexpr const char* kToolkitWarpSpec = R"JSON({
  "name": "toolkit_warp_sums", "sources": ["toolkit.cu"], "host_code": "skip", "params_as": "template", "dims": ["n"],
  "params": {"B": [64, 256]},
  "launch": {"kernel": "warp_sums<{B}>", "grid": ["ceil_div(n, B)"], "block": ["B"], "args": ["x", "y", "n_"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "i32", "count": "n", "fill": {"random": [-100, 100]}},
           {"name": "y", "kind": "buffer", "dtype": "i32", "count": "n", "intent": "out"},
           {"name": "n_", "kind": "scalar", "value": "n"}],
  "check": {"reference": {"kernel": "warp_sums_ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128], "args": ["x", "y", "n_"]}}}
})JSON";

} // namespace ktune::testing
