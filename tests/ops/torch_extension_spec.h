// A PyTorch extension laid out as Apex's and mamba's are: a header with the kernel template (on
// at::Half, at::acc_type, ATen's WARP_SHFL_XOR, C10_LAUNCH_BOUNDS_1) and its host launcher
// template, a .cu that includes <torch/extension.h>, dispatches on a tensor's dtype, binds a
// module and explicitly instantiates the header's launcher. With "host_code": "skip" it compiles
// as it is with PyTorch's device types (CPU test), and its RMS norm verifies on f16 (GPU test).
// And a kernel on PyTorch's tensor accessors (below).
#pragma once

namespace ktune::testing {

inline constexpr const char* kTorchExtKernel = R"CUDA(#pragma once
#include <ATen/ATen.h>
#include <ATen/AccumulateType.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/DeviceUtils.cuh>
#include <c10/util/complex.h>

// PyTorch's arithmetic as extensions see it: Half op Half is a Half, op float a float, op double
// a double, op int a Half; comparisons with any number; complex with scalars on either side.
static_assert(sizeof(at::Half) == 2 && alignof(at::Half) == 2 && sizeof(at::BFloat16) == 2, "PyTorch's layout");
static_assert(sizeof(c10::complex<float>) == 8 && alignof(c10::complex<float>) == 8, "PyTorch's layout");
static_assert(std::is_same<at::acc_type<at::Half, true>, float>::value && std::is_same<at::acc_type<double, true>, double>::value, "acc_type");
static_assert(std::is_same<at::opmath_type<at::BFloat16>, float>::value, "opmath_type");
static_assert(std::is_same<decltype(at::Half() * at::Half()), at::Half>::value, "Half * Half");
static_assert(std::is_same<decltype(at::Half() * 1.f), float>::value && std::is_same<decltype(1.f + at::BFloat16()), float>::value, "with float");
static_assert(std::is_same<decltype(at::Half() * 1.0), double>::value, "with double");
static_assert(std::is_same<decltype(at::Half() * 2), at::Half>::value, "with int");
static_assert(std::is_same<decltype(2 * c10::complex<float>()), c10::complex<float>>::value, "complex with int");
static_assert(sizeof(at::PhiloxCudaState) == 24, "PyTorch's layout");
using Tensor = at::Tensor;
using TensorList = at::TensorList;

// ATen's bounds and RNG state as a dropout kernel reads them.
__device__ inline float lowest_half() { return float(at::numeric_limits<at::Half>::lowest()) + at::numeric_limits<float>::upper_bound(); }
__device__ inline unsigned long long seed_of(at::PhiloxCudaState s) { return std::get<0>(at::cuda::philox::unpack(s)); }

__device__ inline bool ordered(at::Half a, at::BFloat16 b) { return a < 0.5f && a <= 1 && 0.25 < a && a != a * 2 && b >= 0.f && a == a; }
__device__ inline c10::complex<float> turn(c10::complex<float> z) { return std::conj(z) * c10::complex<float>(0.f, 1.f) + 1.f; }

template <typename scalar_t, int WARPS>
__global__ void C10_LAUNCH_BOUNDS_1(WARPS * 32) rms_norm_kernel(scalar_t* __restrict__ out, const scalar_t* __restrict__ in,
                                                                 const scalar_t* __restrict__ weight, int rows, int cols, float eps) {
  using acc_t = at::acc_type<scalar_t, true>;
  const int row = blockIdx.x * WARPS + threadIdx.x / C10_WARP_SIZE, lane = threadIdx.x % C10_WARP_SIZE;
  if (row >= rows) return;
  const scalar_t* x = in + (size_t)row * cols;
  acc_t sum = 0;
  for (int j = lane; j < cols; j += C10_WARP_SIZE) {
    const acc_t v = x[j];
    sum += v * v;
  }
  for (int m = C10_WARP_SIZE / 2; m > 0; m /= 2) sum += WARP_SHFL_XOR(sum, m);
  const acc_t inv = rsqrtf(sum / cols + eps);
  for (int j = lane; j < cols; j += C10_WARP_SIZE) out[(size_t)row * cols + j] = scalar_t(x[j] * inv) * weight[j];
}

template <typename scalar_t, int WARPS>
void launch_rms_norm(scalar_t* out, const scalar_t* in, const scalar_t* weight, int rows, int cols, float eps, cudaStream_t stream) {
  rms_norm_kernel<scalar_t, WARPS><<<(rows + WARPS - 1) / WARPS, WARPS * 32, 0, stream>>>(out, in, weight, rows, cols, eps);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
)CUDA";

inline constexpr const char* kTorchExtSource = R"CUDA(#include <torch/extension.h>
#include <cuda_fp16.h>
#include "rms_norm_kernel.cuh"

template void launch_rms_norm<at::Half, 4>(at::Half*, const at::Half*, const at::Half*, int, int, float, cudaStream_t);
template void launch_rms_norm<float, 4>(float*, const float*, const float*, int, int, float, cudaStream_t);

torch::Tensor rms_norm(torch::Tensor input, torch::Tensor weight, double eps) {
  auto out = torch::empty_like(input);
  const int cols = input.size(-1), rows = input.numel() / cols;
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(input.scalar_type(), "rms_norm", [&] {
    launch_rms_norm<scalar_t, 4>(out.data_ptr<scalar_t>(), input.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(), rows, cols, eps,
                                 at::cuda::getCurrentCUDAStream());
  });
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("rms_norm", &rms_norm, "RMS norm (CUDA)"); }

// The reference: one thread a row, in double, rounded as the kernel rounds (x * inv to f16, then
// times the weight in float, to f16).
__global__ void rms_norm_reference(__half* out, const __half* in, const __half* weight, int rows, int cols, float eps) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  double sum = 0;
  for (int j = 0; j < cols; ++j) {
    const double v = __half2float(in[(size_t)row * cols + j]);
    sum += v * v;
  }
  const double inv = 1.0 / sqrt(sum / cols + eps);
  for (int j = 0; j < cols; ++j) {
    const float scaled = __half2float(__float2half(float(__half2float(in[(size_t)row * cols + j]) * inv)));
    out[(size_t)row * cols + j] = __float2half(scaled * __half2float(weight[j]));
  }
}
)CUDA";

inline constexpr const char* kTorchExtSpec = R"JSON({
  "name": "torch_ext_rms_norm", "sources": ["csrc/rms_norm.cu"], "host_code": "skip", "params_as": "template",
  "dims": ["rows", "cols"], "dtypes": ["f16"], "params": {"WARPS": [1, 4, 8]},
  "launch": {"kernel": "rms_norm_kernel<c10::Half, {WARPS}>", "grid": ["ceil_div(rows, WARPS)"], "block": ["WARPS * 32"]},
  "args": [{"name": "out", "kind": "buffer", "dtype": "dtype", "count": "rows * cols", "intent": "out", "rtol": 0.002, "atol": 0.002},
           {"name": "in", "kind": "buffer", "dtype": "dtype", "count": "rows * cols", "fill": {"random": [-3, 3]}},
           {"name": "weight", "kind": "buffer", "dtype": "dtype", "count": "cols", "fill": {"random": [-2, 2]}},
           {"name": "rows_", "kind": "scalar", "dtype": "i32", "value": "rows"},
           {"name": "cols_", "kind": "scalar", "dtype": "i32", "value": "cols"},
           {"name": "eps", "kind": "scalar", "dtype": "f32", "default": 1e-6}],
  "check": {"reference": {"kernel": "rms_norm_reference", "launch": {"grid": ["ceil_div(rows, 128)"], "block": [128]}}}
})JSON";

// A kernel as pytorch3d's and mmcv's are written: it takes a PyTorch packed accessor (a strided
// view: data, sizes, strides) and an at::cuda::detail::TensorInfo by value, through PyTorch's
// accessor and THC headers, and writes w * in[i][j] at IndexToOffset's offset of out. The spec
// passes `in` as a transposed view of x (sizes rows, cols; strides 1, rows) and `out` row-major;
// the reference reads x column-major itself. FAULT 1 reads in's data as if it were contiguous.
inline constexpr const char* kTorchAccessorSource = R"CUDA(#include <torch/extension.h>
#include <ATen/core/TensorAccessor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/detail/IndexUtils.cuh>
#include <ATen/cuda/detail/TensorInfo.cuh>
#include <THC/THCAtomics.cuh>
#include <c10/cuda/CUDAGuard.h>
using namespace at; // as mmcv's pytorch_cpp_helper.hpp does: at::cuda beside ::cuda for the headers after
#include <chrono>
#include <cmath>

// libcu++ leaves these out of std:: under NVRTC; CUDA's math library has them (pytorch3d's std::modf).
__device__ float fraction(float x) { float whole; return std::modf(x, &whole) + std::fmod(x, 2.f) + std::erf(x) + std::fma(x, x, 1.f); }
// What ATen's headers bring besides: <cfloat>'s FLT_MAX, the at::indexing namespace (kaolin's).
using namespace at::indexing;
__device__ float clamp_to_max(float x) { return fminf(x, FLT_MAX) + float(INT_MAX); }

// PyTorch's layouts: a packed accessor is its pointer, N sizes and N strides of its index type;
// a TensorInfo its pointer, 25 sizes and 25 strides, and the dimension count.
static_assert(sizeof(at::PackedTensorAccessor64<float, 3, at::RestrictPtrTraits>) == 56, "data, 3 sizes, 3 strides of int64");
static_assert(sizeof(at::PackedTensorAccessor32<at::Half, 3>) == 32, "data, 3 sizes, 3 strides of int32");
static_assert(sizeof(torch::PackedTensorAccessor32<float, 1, torch::RestrictPtrTraits>) == 16, "torch:: names them too");
static_assert(sizeof(at::cuda::detail::TensorInfo<float, int>) == 216, "data, 25 sizes, 25 strides, dims");
static_assert(std::is_same<decltype(std::declval<at::TensorAccessor<float, 2>>()[0][0]), float&>::value, "an element");

// atomicAdd on PyTorch's half types, as a kernel templated on scalar_t calls it.
template <typename scalar_t>
__device__ void accumulate(scalar_t* sum, scalar_t v) { atomicAdd(sum, v); }
template __device__ void accumulate<at::Half>(at::Half*, at::Half);
template __device__ void accumulate<at::BFloat16>(at::BFloat16*, at::BFloat16);

template <typename scalar_t, int BLOCK, int FAULT>
__global__ void __launch_bounds__(BLOCK) scale_view(const at::PackedTensorAccessor64<scalar_t, 2, at::RestrictPtrTraits> in,
                                                    at::cuda::detail::TensorInfo<scalar_t, int> out, float w, int rows_, int cols_) {
  const int rows = in.size(0), cols = in.size(1);
  for (int k = blockIdx.x * BLOCK + threadIdx.x; k < rows * cols; k += gridDim.x * BLOCK) {
    const int i = k / cols, j = k % cols;
    const scalar_t v = FAULT ? in.data()[k] : in[i][j];
    out.data[at::cuda::detail::IndexToOffset<scalar_t, int, -1>::get(k, out)] = v * w;
  }
}

torch::Tensor scale(torch::Tensor input, double w) {
  auto out = torch::empty_like(input);
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(input.scalar_type(), "scale", [&] {
    scale_view<scalar_t, 256, 0><<<128, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        input.packed_accessor64<scalar_t, 2, at::RestrictPtrTraits>(), at::cuda::detail::getTensorInfo<scalar_t, int>(out), w,
        input.size(0), input.size(1));
  });
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("scale", &scale, "w * input (CUDA)"); }

__global__ void scale_view_reference(float* out, const float* x, float w, int rows, int cols) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k < rows * cols) out[k] = x[(k % cols) * rows + k / cols] * w;
}
)CUDA";

inline constexpr const char* kTorchAccessorSpec = R"JSON({
  "name": "torch_accessor_scale", "sources": ["scale.cu"], "host_code": "skip", "params_as": "template",
  "dims": ["rows", "cols"], "params": {"BLOCK": [64, 256], "FAULT": [0, 1]},
  "launch": {"kernel": "scale_view<float, {BLOCK}, {FAULT}>", "grid": [40], "block": ["BLOCK"], "args": ["in", "out_info", "w", "rows_", "cols_"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "rows * cols", "fill": {"random": [-3, 3]}},
           {"name": "out", "kind": "buffer", "dtype": "f32", "count": "rows * cols", "intent": "out", "rtol": 1e-6, "atol": 0},
           {"name": "in", "kind": "struct", "fields": [{"name": "data", "buffer": "x"},
                                                       {"name": "sizes", "dtype": "i64", "value": ["rows", "cols"]},
                                                       {"name": "strides", "dtype": "i64", "value": [1, "rows"]}]},
           {"name": "out_info", "kind": "struct", "fields": [{"name": "data", "buffer": "out"},
               {"name": "sizes", "dtype": "i32", "value": ["rows", "cols", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]},
               {"name": "strides", "dtype": "i32", "value": ["cols", 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]},
               {"name": "dims", "dtype": "i32", "value": 2}]},
           {"name": "w", "kind": "scalar", "dtype": "f32", "default": 1.5},
           {"name": "rows_", "kind": "scalar", "dtype": "i32", "value": "rows"},
           {"name": "cols_", "kind": "scalar", "dtype": "i32", "value": "cols"}],
  "check": {"reference": {"kernel": "scale_view_reference", "launch": {"grid": ["ceil_div(rows * cols, 256)"], "block": [256],
                                                                      "args": ["out", "x", "w", "rows_", "cols_"]}}}
})JSON";

} // namespace ktune::testing
