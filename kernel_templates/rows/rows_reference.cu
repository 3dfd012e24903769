// Verification kernels for the row ops (softmax, LayerNorm, RMSNorm): the random fill of x, and
// the check of a kernel's output against the FP64 reference of every row, computed here from the
// inputs the kernel read. They run on the GPU because the suite's rows reach 1 GB (2048 x 128256
// f32): generating, copying back and checking that on the host cost seconds per trial. The rule
// each element is held to, and its derivation, are in rows_check.h; tuner/rows_op.cpp
// (rows_verdict) turns the counts and sums below into the verdict.
//
// DT as in rows_args.h: 0 f32, 1 bf16, 2 f16. The op's own check (KtuneRowCheck<OP>, its
// <op>_check.h) is appended to this source by rows_reference_request (tuner/rows_op.cpp).
#include "ktune_random.cuh"
#include "rows_args.h"
#include "rows_check.h"

// n elements from x on: lo + (hi - lo) * uniform[0, 1), rounded to DT.
extern "C" __global__ void ktune_rows_fill(void* x, long long n, unsigned long long seed, int dt, float lo, float hi) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const float v = (float)(lo + (hi - lo) * 0.5 * (ktune_uniform(seed, i) + 1.0));
    if (dt == 0)
      ((float*)x)[i] = v;
    else
      ((unsigned short*)x)[i] = ktune_to_half(v, dt == 2);
  }
}

namespace {

constexpr int kThreads = 256; // the block ktune_rows_verify is launched with

__device__ __forceinline__ double element(const void* a, long long i, int dt) {
  if (dt == 0) return (double)((const float*)a)[i];
  return ktune_half_value(((const unsigned short*)a)[i], dt == 2);
}

// The block's sum (MAX: maximum) of v, the same bits in every thread (each adds the warps' results
// in the same order). red: kThreads / 32 doubles of shared memory, which every call reuses.
template <bool MAX>
__device__ double block_reduce(double v, double* red) {
  for (int o = 16; o > 0; o /= 2) {
    const double t = __shfl_xor_sync(0xffffffffu, v, o);
    v = MAX ? fmax(v, t) : v + t;
  }
  __syncthreads(); // every thread has read red from the previous call
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  double r = red[0];
  for (int w = 1; w < kThreads / 32; ++w) r = MAX ? fmax(r, red[w]) : r + red[w];
  return r;
}

// A row as KtuneRowCheck<OP>::stats reads it: FP64 reductions of f(x_j) over its elements, every
// thread of the block taking part and getting the same result.
struct BlockRow {
  const void* x;
  long long at, cols;
  int dt;
  double* red;
  __device__ double n() const { return (double)cols; }
  template <class F>
  __device__ double sum(F f) const {
    double v = 0;
    for (long long j = threadIdx.x; j < cols; j += kThreads) v += f(element(x, at + j, dt));
    return block_reduce<false>(v, red);
  }
  template <class F>
  __device__ double max(F f) const {
    double v = __longlong_as_double(0xfff0000000000000ll); // -inf
    for (long long j = threadIdx.x; j < cols; j += kThreads) v = fmax(v, f(element(x, at + j, dt)));
    return block_reduce<true>(v, red);
  }
};

template <class T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

} // namespace

// a: the kernel's argument block (x, y, weight, bias, sizes, scalars as it got them); OP: the
// op's code (KtuneRowCheck<OP>); dt: the elements' type. y was poisoned with 0xff bytes (a NaN in
// every DT) before the kernel ran. One block of kThreads threads per row, grid-stride over the rows; the row's
// statistics in FP64 (the op's stats), then every element judged by rows_check.h's RULE.
// out (zeroed, out[3] all ones, before the launch):
//   out[0] += elements of the rows that are not finite (unwritten ones included)
//   out[1] += padding elements (columns cols..ldy-1 of all but the last row) no longer all ones
//   out[2] += finite elements over their bound
//   out[3] = min over those of their offset in y (row * ldy + col)
//   out[4] = max over the finite elements of error / bound (ktune_rows_judge's ratio), as double bits
//   out[5..8] (doubles) += sum (y - ref)^2, sum ref^2, sum (rn(ref) - ref)^2, sum allow^2 over the
//   finite elements
template <int OP>
__global__ void __launch_bounds__(256) ktune_rows_verify(KtuneRowsArgs a, int dt, unsigned long long* out) {
  __shared__ double red[kThreads / 32];
  unsigned long long nonfinite = 0, stray = 0, over = 0, first = ~0ull;
  double worst = 0, err2 = 0, ref2 = 0, ideal2 = 0, allow2 = 0;
  const long long cols = a.cols;
  const int t = threadIdx.x;
  for (long long r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const long long xr = r * a.ldx, yr = r * a.ldy;
    const typename KtuneRowCheck<OP>::Stats s =
        KtuneRowCheck<OP>::stats(BlockRow{a.x, xr, cols, dt, red}, (double)a.scale, (double)a.eps);
    for (long long j = t; j < cols; j += kThreads) {
      const double y = element(a.y, yr + j, dt);
      if (!isfinite(y)) {
        ++nonfinite;
        continue;
      }
      const double w = a.weight ? element(a.weight, j, dt) : 1.0, b = a.bias ? element(a.bias, j, dt) : 0.0;
      const KtuneRowsJudgement g = ktune_rows_judge<OP>(dt, s, element(a.x, xr + j, dt), w, b, y);
      if (g.over) {
        ++over;
        first = min(first, (unsigned long long)(yr + j));
      }
      worst = fmax(worst, g.ratio);
      err2 += (y - g.ref) * (y - g.ref);
      ref2 += g.ref * g.ref;
      ideal2 += g.ideal * g.ideal;
      allow2 += g.allow * g.allow;
    }
    if (r + 1 < a.rows)
      for (long long j = cols + t; j < a.ldy; j += kThreads) {
        if (dt == 0)
          stray += ((const unsigned*)a.y)[yr + j] != 0xffffffffu;
        else
          stray += ((const unsigned short*)a.y)[yr + j] != 0xffffu;
      }
  }
  nonfinite = warp_sum(nonfinite), stray = warp_sum(stray), over = warp_sum(over);
  err2 = warp_sum(err2), ref2 = warp_sum(ref2), ideal2 = warp_sum(ideal2), allow2 = warp_sum(allow2);
  for (int o = 16; o > 0; o /= 2) {
    first = min(first, __shfl_xor_sync(0xffffffffu, first, o));
    worst = fmax(worst, __shfl_xor_sync(0xffffffffu, worst, o));
  }
  if ((t & 31) != 0) return;
  if (nonfinite) atomicAdd(&out[0], nonfinite);
  if (stray) atomicAdd(&out[1], stray);
  if (over) {
    atomicAdd(&out[2], over);
    atomicMin(&out[3], first);
  }
  if (worst > 0) atomicMax(&out[4], (unsigned long long)__double_as_longlong(worst)); // non-negative: ordered as bits
  double* sums = (double*)(out + 5);
  atomicAdd(&sums[0], err2);
  atomicAdd(&sums[1], ref2);
  atomicAdd(&sums[2], ideal2);
  atomicAdd(&sums[3], allow2);
}
