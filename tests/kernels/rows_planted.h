// Planted row kernels for the verification's teeth tests: a plain FP32 softmax / LayerNorm /
// RMSNorm (one block of 256 threads a row, the KtuneRowsArgs block by value, so the rows runner
// launches it like a tuned kernel), either correct or with one fault. rows_gpu_test.cpp runs them
// through the runner; rows_test.cpp compiles them (and its host model mirrors their arithmetic).
#pragma once
#include <vector>
#include <cstdio>
#include <string>

#include "ktune/compiler.h"
#include "ktune/family.h"
#include "ktune/problem.h"

namespace ktune::testing {

enum class RowsFault {
  none = 0,      // correct: round to nearest from FP32 math
  one_ulp = 1,   // row rows / 2: one element one unit in the last place farther from the FP32 value
  wrong_eps = 2, // the norms add KTUNE_PLANTED_EPS, not the problem's eps
  no_max = 3,    // softmax: exp(scale * x) / sum, the max not subtracted (overflows for scale * x > 88.7)
  skip_row = 4,  // row rows / 2 not written
  no_weight = 5, // the norms ignore weight
};

// The victim row of one_ulp and skip_row.
inline int64_t planted_row(const Problem& p) { return p.dims[0] / 2; }

inline const char* planted_rows_source() {
  return R"(
#include "ktune_random.cuh"
#include "rows_args.h"
#include "layernorm_check.h"
#include "rmsnorm_check.h"
#include "softmax_check.h"

#ifndef KTUNE_PLANTED_EPS
#define KTUNE_PLANTED_EPS 0.0f
#endif

template <int DT>
__device__ float planted_load(const void* a, long long i) {
  if (DT == 0) return ((const float*)a)[i];
  return (float)ktune_half_value(((const unsigned short*)a)[i], DT == 2);
}

// The bits v is stored as, rounded to nearest-even.
template <int DT>
__device__ unsigned planted_bits(float v) {
  if (DT == 0) return __float_as_uint(v);
  return ktune_to_half(v, DT == 2);
}

template <int DT>
__device__ void planted_store(void* a, long long i, unsigned bits) {
  if (DT == 0) ((unsigned*)a)[i] = bits;
  else ((unsigned short*)a)[i] = (unsigned short)bits;
}

template <int DT>
__device__ float planted_value(unsigned bits) {
  if (DT == 0) return __uint_as_float(bits);
  return (float)ktune_half_value((unsigned short)bits, DT == 2);
}

// Sum / max over the block's 256 threads, the same in every thread.
template <bool MAX>
__device__ float planted_reduce(float v, float* red) {
  for (int o = 16; o > 0; o /= 2) {
    const float t = __shfl_xor_sync(0xffffffffu, v, o);
    v = MAX ? fmaxf(v, t) : v + t;
  }
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = red[0];
  for (int w = 1; w < 8; ++w) r = MAX ? fmaxf(r, red[w]) : r + red[w];
  return r;
}

template <int OP, int DT, int FAULT>
__global__ void __launch_bounds__(256) planted_rows(KtuneRowsArgs p) {
  __shared__ float red[8];
  __shared__ int victim_col;
  const long long r = blockIdx.x, n = p.cols, xr = r * p.ldx, yr = r * p.ldy;
  const bool victim = r == p.rows / 2;
  if (FAULT == 4 && victim) return;
  const float eps = FAULT == 2 ? KTUNE_PLANTED_EPS : p.eps;
  float m = 0.0f, s = 0.0f, mean = 0.0f, inv = 1.0f;
  if (OP == KTUNE_ROWS_SOFTMAX) {
    float mx = __int_as_float(0xff800000);
    for (long long j = threadIdx.x; j < n; j += 256) mx = fmaxf(mx, p.scale * planted_load<DT>(p.x, xr + j));
    m = FAULT == 3 ? 0.0f : planted_reduce<true>(mx, red);
    for (long long j = threadIdx.x; j < n; j += 256) s += expf(p.scale * planted_load<DT>(p.x, xr + j) - m);
    s = planted_reduce<false>(s, red);
  } else if (OP == KTUNE_ROWS_LAYERNORM) {
    for (long long j = threadIdx.x; j < n; j += 256) s += planted_load<DT>(p.x, xr + j);
    mean = planted_reduce<false>(s, red) / (float)n;
    float m2 = 0.0f;
    for (long long j = threadIdx.x; j < n; j += 256) {
      const float d = planted_load<DT>(p.x, xr + j) - mean;
      m2 += d * d;
    }
    inv = 1.0f / sqrtf(planted_reduce<false>(m2, red) / (float)n + eps);
  } else {
    for (long long j = threadIdx.x; j < n; j += 256) {
      const float x = planted_load<DT>(p.x, xr + j);
      s += x * x;
    }
    inv = 1.0f / sqrtf(planted_reduce<false>(s, red) / (float)n + eps);
  }
  const bool use_w = p.weight != nullptr && FAULT != 5;
  // The FP32 result of column j.
  auto value = [&](long long j) {
    const float x = planted_load<DT>(p.x, xr + j);
    if (OP == KTUNE_ROWS_SOFTMAX) return expf(p.scale * x - m) / s;
    const float w = use_w ? planted_load<DT>(p.weight, j) : 1.0f, b = p.bias ? planted_load<DT>(p.bias, j) : 0.0f;
    return OP == KTUNE_ROWS_LAYERNORM ? (x - mean) * inv * w + b : x * inv * w;
  };
  for (long long j = threadIdx.x; j < n; j += 256) planted_store<DT>(p.y, yr + j, planted_bits<DT>(value(j)));
  if (FAULT != 1 || !victim) return;
  // The row's first column whose stored value has neighbours in its own binade (a mantissa
  // neither all zeros nor all ones), so one step is one unit in the last place either way.
  const unsigned mant = DT == 0 ? 0x7fffffu : DT == 1 ? 0x7fu : 0x3ffu;
  int mine = 0x7fffffff;
  for (long long j = threadIdx.x; j < n; j += 256) {
    const unsigned f = planted_bits<DT>(value(j)) & mant;
    if (f != 0 && f != mant) {
      mine = (int)j;
      break;
    }
  }
  if (threadIdx.x == 0) victim_col = 0x7fffffff;
  __syncthreads();
  atomicMin(&victim_col, mine);
  __syncthreads();
  const int j = victim_col;
  if (j == 0x7fffffff || j % 256 != (int)threadIdx.x) return;
  const float v = value(j);
  const unsigned bits = planted_bits<DT>(v);
  const float stored = planted_value<DT>(bits);
  // Away from v: its magnitude up when rounding did not lower it, else down.
  planted_store<DT>(p.y, yr + j, fabsf(stored) >= fabsf(v) ? bits + 1 : bits - 1);
}
)";
}

// The instance of planted_rows for op (KTUNE_ROWS_*), dt and fault, compiled for arch; eps: what
// wrong_eps adds instead of the problem's.
inline CompileRequest planted_rows_request(int op, DType dt, RowsFault fault, const std::string& arch,
                                           float eps = 0.0f) {
  CompileRequest req;
  req.source = planted_rows_source();
  req.source_name = "tests/kernels/rows_planted.h";
  const int d = dt == DType::f32 ? 0 : dt == DType::bf16 ? 1 : 2;
  req.name_expressions = {"planted_rows<" + std::to_string(op) + "," + std::to_string(d) + "," +
                          std::to_string(static_cast<int>(fault)) + ">"};
  char e[64];
  std::snprintf(e, sizeof e, "-DKTUNE_PLANTED_EPS=%.9ef", eps); // "0f" would not be a literal
  req.options = {e};
  req.arch = arch;
  req.context = "planted row kernel " + req.name_expressions[0];
  return req;
}

// One block of 256 threads a row.
inline LaunchPlan planted_rows_plan(const Problem& p) {
  LaunchPlan plan;
  LaunchStep s;
  s.grid[0] = static_cast<unsigned>(p.dims[0]);
  s.block[0] = 256;
  plan.steps.push_back(s);
  return plan;
}

// The wrong-eps cases, where eps shows (the GPU test runs them through the runner, the CPU test
// through a host model of the same check): RMSNorm of one column (y = x / sqrt(x^2 + eps) * w, and
// some |x| are ~1e-3), LayerNorm of two (variance ((x0 - x1) / 2)^2, small where they are close);
// on wide rows the error must be larger (rows_check.h, section 4: from eps 5e-5 for 1e-5 in f32,
// 2e-4 in 16-bit, for LayerNorm): eps 1e-2 for 1e-5 (~1.7e-3 relative) is caught in every dtype.
struct PlantedEpsCase {
  const char* op;
  const char* shape;
  DType dt;
  double eps;    // the problem's
  float planted; // the kernel's
};
inline const std::vector<PlantedEpsCase>& planted_eps_cases() {
  static const std::vector<PlantedEpsCase> cases = {
      {"rmsnorm", "4096x1", DType::bf16, 1e-6, 1e-5f},    {"rmsnorm", "4096x1", DType::f32, 1e-6, 1e-5f},
      {"layernorm", "4096x2", DType::bf16, 1e-5, 1e-6f},  {"layernorm", "4096x2", DType::f16, 1e-5, 1e-6f},
      {"layernorm", "64x4096", DType::bf16, 1e-5, 1e-2f}, {"rmsnorm", "64x4096", DType::f16, 1e-6, 1e-2f},
      {"layernorm", "64x4096", DType::f32, 1e-5, 1e-2f}};
  return cases;
}

} // namespace ktune::testing
