// TMA kernels and their specs (a "kind": "tensor_map" argument; maps inside a struct), shared by
// the CPU tests (shapes, plans and signatures) and the GPU tests (their loads, verified).
#pragma once

#include <string>

namespace ktune::testing {

// The kernels of kTmaSource, after a CUtensorMap's declaration (toolkit_headers_spec.h's file
// takes them too, after <cuda.h>).
inline constexpr const char* kTmaCopyKernels = R"CUDA(
// Each block loads its BY x BX tile of x through the map (TMA, zeros past the edges) and writes it to y.
template <int BX, int BY>
__global__ void tma_copy(const __grid_constant__ CUtensorMap map, float* y, int w, int h) {
  __shared__ alignas(128) float tile[BY][BX];
  __shared__ alignas(8) unsigned long long bar;
  const int x0 = blockIdx.x * BX, y0 = blockIdx.y * BY;
  const unsigned sb = (unsigned)__cvta_generic_to_shared(&bar), st = (unsigned)__cvta_generic_to_shared(&tile[0][0]);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sb));
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(sb), "r"((unsigned)(BX * BY * 4)) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(st), "l"(&map), "r"(x0), "r"(y0), "r"(sb) : "memory");
  }
  asm volatile("{\n .reg .pred p;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n @!p bra WAIT_%=;\n}" :: "r"(sb) : "memory");
  for (int i = threadIdx.x; i < BX * BY; i += blockDim.x) {
    const int r = i / BX, c = i % BX, gx = x0 + c, gy = y0 + r;
    if (gx < w && gy < h) y[(long long)gy * w + gx] = tile[r][c];
  }
}
__global__ void copy_ref(const float* x, float* y, int w, int h) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < (long long)w * h) y[i] = x[i];
}
)CUDA";
inline const std::string kTmaSource = std::string(R"CUDA(
#ifdef __CUDACC_RTC__
typedef struct CUtensorMap_st { alignas(64) unsigned long long opaque[16]; } CUtensorMap; // cuda.h's, spelled out
#else
#include <cuda.h>
#endif)CUDA") + kTmaCopyKernels;
inline constexpr const char* kTmaSpec = R"JSON({
  "name": "tma_copy", "sources": ["tma.cu"], "params_as": "template", "dims": ["w", "h"], "arch": "sm_90",
  "params": {"BX": [32, 64], "BY": [4, 16]},
  "launch": {"kernel": "tma_copy<{BX}, {BY}>", "grid": ["ceil_div(w, BX)", "ceil_div(h, BY)"], "block": [128], "args": ["map", "y", "w_", "h_"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "w * h"},
           {"name": "map", "kind": "tensor_map", "buffer": "x", "dims": ["w", "h"], "box": ["BX", "BY"]},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "w * h", "intent": "out", "atol": 0, "rtol": 0},
           {"name": "w_", "kind": "scalar", "value": "w"}, {"name": "h_", "kind": "scalar", "value": "h"}],
  "check": {"reference": {"kernel": "copy_ref", "launch": {"grid": ["ceil_div(w * h, 256)"], "block": [256], "args": ["x", "y", "w_", "h_"]}}}
})JSON";

// Tensor maps inside a struct (a kernel's params struct of CUtensorMap members): T rounds of
// y = x / 2 + b, a BX x BY tile of x and of b a block loaded through the struct's two maps, the
// round's x and y exchanged after each (so x's map describes another buffer every round). FAULT 1
// loads b's tile through x's map (a planted wrong kernel).
inline constexpr const char* kTmaStructSource = R"CUDA(
#ifdef __CUDACC_RTC__
typedef struct CUtensorMap_st { alignas(64) unsigned long long opaque[16]; } CUtensorMap; // cuda.h's, a host header
#else
#include <cuda.h>
#endif
struct Params {
  CUtensorMap x, b;
  float* y;
  int w, h;
};
template <int BX, int BY, int FAULT>
__device__ void round_tiles(const CUtensorMap* mx, const CUtensorMap* mb, float* y, int w, int h) {
  __shared__ alignas(128) float xt[BY][BX];
  __shared__ alignas(128) float bt[BY][BX];
  __shared__ alignas(8) unsigned long long bar;
  const int x0 = blockIdx.x * BX, y0 = blockIdx.y * BY;
  const unsigned sb = (unsigned)__cvta_generic_to_shared(&bar);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sb));
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(sb), "r"((unsigned)(2 * BX * BY * 4)) : "memory");
    const CUtensorMap* maps[2] = {mx, FAULT ? mx : mb};
    float* tiles[2] = {&xt[0][0], &bt[0][0]};
    for (int k = 0; k < 2; ++k)
      asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                   :: "r"((unsigned)__cvta_generic_to_shared(tiles[k])), "l"(maps[k]), "r"(x0), "r"(y0), "r"(sb) : "memory");
  }
  asm volatile("{\n .reg .pred q;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 q, [%0], 0;\n @!q bra WAIT_%=;\n}" :: "r"(sb) : "memory");
  for (int i = threadIdx.x; i < BX * BY; i += blockDim.x) {
    const int r = i / BX, c = i % BX, gx = x0 + c, gy = y0 + r;
    if (gx < w && gy < h) y[(long long)gy * w + gx] = 0.5f * xt[r][c] + bt[r][c];
  }
}
template <int BX, int BY, int FAULT>
__global__ void tma_round(const __grid_constant__ Params p) { round_tiles<BX, BY, FAULT>(&p.x, &p.b, p.y, p.w, p.h); }
// The same round with the maps as arguments of their own (tensor map arguments).
template <int BX, int BY, int FAULT>
__global__ void tma_round_args(const __grid_constant__ CUtensorMap x, const __grid_constant__ CUtensorMap b, float* y, int w, int h) {
  round_tiles<BX, BY, FAULT>(&x, &b, y, w, h);
}
__global__ void rounds_ref(float* x, const float* b, int n, int T) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int t = 0; t < T; ++t) v = 0.5f * v + b[i];
  x[i] = v;
}
)CUDA";
inline constexpr const char* kTmaStructSpec = R"JSON({
  "name": "tma_rounds", "sources": ["tma_struct.cu"], "params_as": "template", "dims": ["w", "h", "T"], "arch": "sm_90",
  "params": {"BX": [32, 64], "BY": [4, 16], "FAULT": [0, 1]},
  "launch": {"kernel": "tma_round<{BX}, {BY}, {FAULT}>", "grid": ["ceil_div(w, BX)", "ceil_div(h, BY)"], "block": [128],
             "repeat": "T", "swap": [["x", "y"]], "args": ["p"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "w * h", "intent": "inout"},
           {"name": "b", "kind": "buffer", "dtype": "f32", "count": "w * h"},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "w * h", "intent": "temp"},
           {"name": "p", "kind": "struct", "fields": [
             {"name": "x", "kind": "tensor_map", "buffer": "x", "dims": ["w", "h"], "box": ["BX", "BY"]},
             {"name": "b", "kind": "tensor_map", "buffer": "b", "dims": ["w", "h"], "box": ["BX", "BY"]},
             {"name": "y", "buffer": "y"}, {"name": "w", "value": "w"}, {"name": "h", "value": "h"}]},
           {"name": "n_", "kind": "scalar", "value": "w * h"}, {"name": "T_", "kind": "scalar", "value": "T"}],
  "check": {"reference": {"kernel": "rounds_ref", "launch": {"grid": ["ceil_div(w * h, 256)"], "block": [256], "args": ["x", "b", "n_", "T_"]}}}
})JSON";
// kTmaStructSpec's rounds with the maps as tensor map arguments: mx over x follows the swap.
inline constexpr const char* kTmaArgsSpec = R"JSON({
  "name": "tma_rounds_args", "sources": ["tma_struct.cu"], "params_as": "template", "dims": ["w", "h", "T"], "arch": "sm_90",
  "params": {"BX": [32, 64], "BY": [4, 16], "FAULT": [0, 1]},
  "launch": {"kernel": "tma_round_args<{BX}, {BY}, {FAULT}>", "grid": ["ceil_div(w, BX)", "ceil_div(h, BY)"], "block": [128],
             "repeat": "T", "swap": [["x", "y"]], "args": ["mx", "mb", "y", "w_", "h_"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "w * h", "intent": "inout"},
           {"name": "b", "kind": "buffer", "dtype": "f32", "count": "w * h"},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "w * h", "intent": "temp"},
           {"name": "mx", "kind": "tensor_map", "buffer": "x", "dims": ["w", "h"], "box": ["BX", "BY"]},
           {"name": "mb", "kind": "tensor_map", "buffer": "b", "dims": ["w", "h"], "box": ["BX", "BY"]},
           {"name": "w_", "kind": "scalar", "value": "w"}, {"name": "h_", "kind": "scalar", "value": "h"},
           {"name": "n_", "kind": "scalar", "value": "w * h"}, {"name": "T_", "kind": "scalar", "value": "T"}],
  "check": {"reference": {"kernel": "rounds_ref", "launch": {"grid": ["ceil_div(w * h, 256)"], "block": [256], "args": ["x", "b", "n_", "T_"]}}}
})JSON";

} // namespace ktune::testing
