// A tiled matrix transpose, out (cols x rows) = in (rows x cols)^T, row-major f32: each block
// moves a TILE x TILE tile through shared memory so that both the loads and the stores are
// coalesced; ROWS rows of threads walk the tile; PAD columns of padding break the bank
// conflicts of the column-wise read. Template parameters (the spec's "params_as": "template").
template <int TILE, int ROWS, int PAD>
__global__ void __launch_bounds__(TILE * ROWS)
    transpose_tiled(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[TILE][TILE + PAD];
  const int x = blockIdx.x * TILE + threadIdx.x;  // a column of in
  const int y0 = blockIdx.y * TILE + threadIdx.y; // a row of in
#pragma unroll
  for (int j = 0; j < TILE; j += ROWS) {
    const int y = y0 + j;
    if (x < cols && y < rows) tile[threadIdx.y + j][threadIdx.x] = in[static_cast<long long>(y) * cols + x];
  }
  __syncthreads();
  const int ox = blockIdx.y * TILE + threadIdx.x;  // a column of out: a row of in
  const int oy0 = blockIdx.x * TILE + threadIdx.y; // a row of out: a column of in
#pragma unroll
  for (int j = 0; j < TILE; j += ROWS) {
    const int oy = oy0 + j;
    if (ox < rows && oy < cols) out[static_cast<long long>(oy) * rows + ox] = tile[threadIdx.x][threadIdx.y + j];
  }
}

// The reference: one thread an element, no shared memory.
__global__ void transpose_naive(const float* in, float* out, int rows, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) out[static_cast<long long>(c) * rows + r] = in[static_cast<long long>(r) * cols + c];
}
