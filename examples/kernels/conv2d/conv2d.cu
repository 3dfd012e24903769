// A 2D convolution with a FILTER x FILTER filter in constant memory (filled from the filter
// buffer before every launch: the spec's "symbols"), out (h x w) from in ((h + FILTER - 1) x
// (w + FILTER - 1)), f32, in the style of Kernel Tuner's convolution example: every tunable
// parameter is a preprocessor define. A block computes a (block_size_y * tile_size_y) x
// (block_size_x * tile_size_x) tile of out from its input window in shared memory; each thread
// keeps tile_size_y x tile_size_x sums in registers (the loops over them are unrolled).
// use_padding adds a column to the shared window when block_size_x is not a multiple of 32
// (bank conflicts); read_only loads through the read-only cache.
#ifndef FILTER
#define FILTER 9
#endif
#ifndef block_size_x
#define block_size_x 32
#endif
#ifndef block_size_y
#define block_size_y 8
#endif
#ifndef tile_size_x
#define tile_size_x 1
#endif
#ifndef tile_size_y
#define tile_size_y 1
#endif
#ifndef use_padding
#define use_padding 0
#endif
#ifndef read_only
#define read_only 0
#endif

#define SH_W (block_size_x * tile_size_x + FILTER - 1)
#define SH_H (block_size_y * tile_size_y + FILTER - 1)
#if use_padding == 1 && (block_size_x % 32 != 0)
#define SH_PAD 1
#else
#define SH_PAD 0
#endif
#if read_only == 1
#define LOAD(p) __ldg(p)
#else
#define LOAD(p) (*(p))
#endif

__constant__ float d_filter[FILTER * FILTER];

extern "C" __global__ void __launch_bounds__(block_size_x * block_size_y)
    conv2d(float* __restrict__ out, const float* __restrict__ in, const float* __restrict__ filter, int w, int h) {
  (void)filter; // the kernel reads d_filter, the reference reads filter: both hold the same weights
  __shared__ float window[SH_H][SH_W + SH_PAD];
  const int bx = blockIdx.x * block_size_x * tile_size_x, by = blockIdx.y * block_size_y * tile_size_y;
  const int in_w = w + FILTER - 1, in_h = h + FILTER - 1;
  for (int i = threadIdx.y; i < SH_H; i += block_size_y)
    for (int j = threadIdx.x; j < SH_W; j += block_size_x) {
      const int y = by + i, x = bx + j;
      window[i][j] = (y < in_h && x < in_w) ? LOAD(in + static_cast<long long>(y) * in_w + x) : 0.0f;
    }
  __syncthreads();
  float sum[tile_size_y][tile_size_x];
#pragma unroll
  for (int yi = 0; yi < tile_size_y; ++yi)
#pragma unroll
    for (int xi = 0; xi < tile_size_x; ++xi) sum[yi][xi] = 0.0f;
  for (int fy = 0; fy < FILTER; ++fy)
    for (int fx = 0; fx < FILTER; ++fx) {
      const float wgt = d_filter[fy * FILTER + fx];
#pragma unroll
      for (int yi = 0; yi < tile_size_y; ++yi)
#pragma unroll
        for (int xi = 0; xi < tile_size_x; ++xi)
          sum[yi][xi] += window[threadIdx.y + yi * block_size_y + fy][threadIdx.x + xi * block_size_x + fx] * wgt;
    }
#pragma unroll
  for (int yi = 0; yi < tile_size_y; ++yi)
#pragma unroll
    for (int xi = 0; xi < tile_size_x; ++xi) {
      const int y = by + threadIdx.y + yi * block_size_y, x = bx + threadIdx.x + xi * block_size_x;
      if (y < h && x < w) out[static_cast<long long>(y) * w + x] = sum[yi][xi];
    }
}

// The reference: one thread an output, the filter read from global memory, FP64 sums.
extern "C" __global__ void conv2d_naive(float* out, const float* in, const float* filter, int w, int h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const int in_w = w + FILTER - 1;
  double s = 0;
  for (int fy = 0; fy < FILTER; ++fy)
    for (int fx = 0; fx < FILTER; ++fx)
      s += double(in[static_cast<long long>(y + fy) * in_w + x + fx]) * filter[fy * FILTER + fx];
  out[static_cast<long long>(y) * w + x] = static_cast<float>(s);
}
