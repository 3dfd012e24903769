// Verification kernels for the row ops (softmax, LayerNorm, RMSNorm): the random fill of x and
// the whole-output checks (every element finite, the row padding untouched). They run on the GPU
// because the suite's rows reach 1 GB (2048 x 128256 f32): generating and scanning that on the
// host cost seconds per trial. The FP64 reference itself runs on the host over sampled rows
// (tuner/rows_op.cpp), which it copies back: it sees exactly the kernel's inputs.
//
// DT as in rows_args.h: 0 f32, 1 bf16, 2 f16.
#include "ktune_random.cuh"

// n elements from x on: lo + (hi - lo) * uniform[0, 1), rounded to DT.
extern "C" __global__ void ktune_rows_fill(void* x, long long n, unsigned long long seed, int dt, float lo, float hi) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const float v = (float)(lo + (hi - lo) * 0.5 * (ktune_uniform(seed, i) + 1.0));
    if (dt == 0) ((float*)x)[i] = v;
    else ((unsigned short*)x)[i] = ktune_to_half(v, dt == 2);
  }
}

// y: rows x cols with leading dimension ld, poisoned with 0xff bytes before the kernel under
// test ran. counts[0] += elements of the rows that are not finite (unwritten ones included: the
// poison is a NaN in every DT); counts[1] += padding elements (columns cols..ld-1 of all but
// the last row) that are no longer all-ones, i.e. written out of bounds.
extern "C" __global__ void ktune_rows_check(const void* y, long long rows, long long cols, long long ld, int dt,
                                            unsigned long long* counts) {
  unsigned long long bad = 0, stray = 0;
  const long long total = (rows - 1) * ld + cols;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    const bool pad = i % ld >= cols;
    if (dt == 0) {
      const float v = ((const float*)y)[i];
      if (pad) stray += __float_as_uint(v) != 0xffffffffu;
      else bad += !isfinite(v);
    } else {
      const unsigned short h = ((const unsigned short*)y)[i];
      if (pad) stray += h != 0xffffu;
      else bad += !isfinite(ktune_half_value(h, dt == 2));
    }
  }
  if (bad) atomicAdd(&counts[0], bad);
  if (stray) atomicAdd(&counts[1], stray);
}
