// Jacobi sweeps of the 2D Laplace equation on a w x h grid: each interior point becomes the mean
// of its four neighbours, the border stays. A sweep reads one grid and writes the other; the spec
// runs T sweeps as a loop of launches that swaps the two after each one (examples/kernels/jacobi/
// jacobi.json; docs/KERNEL_SPEC.md, "Loops").

// A block of BX x BY threads computes BX x (BY * ROWS) points: each thread ROWS of them down a
// column, so that a thread reuses the rows it read for the point above.
template <int BX, int BY, int ROWS>
__global__ void jacobi_sweep(const float* __restrict__ in, float* __restrict__ out, int w, int h) {
  const int x = blockIdx.x * BX + threadIdx.x;
  const int y0 = (blockIdx.y * BY + threadIdx.y) * ROWS;
  if (x >= w || y0 >= h) return;
  const bool edge_x = x == 0 || x == w - 1;
  float up = y0 > 0 ? in[size_t(y0 - 1) * w + x] : 0.f;
  float mid = in[size_t(y0) * w + x];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const int y = y0 + r;
    if (y >= h) return;
    const size_t i = size_t(y) * w + x;
    const float down = y + 1 < h ? in[i + w] : 0.f;
    out[i] = edge_x || y == 0 || y == h - 1 ? mid : 0.25f * ((in[i - 1] + in[i + 1]) + (up + down));
    up = mid;
    mid = down;
  }
}

// The reference: one thread a point, one sweep a launch.
__global__ void jacobi_sweep_ref(const float* __restrict__ in, float* __restrict__ out, int w, int h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const size_t i = size_t(y) * w + x;
  out[i] = x == 0 || y == 0 || x == w - 1 || y == h - 1 ? in[i] : 0.25f * ((in[i - 1] + in[i + 1]) + (in[i - w] + in[i + w]));
}
