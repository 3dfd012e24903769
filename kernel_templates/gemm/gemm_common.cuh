// Device helpers shared by the GEMM templates. NVRTC compiles this with no standard headers.
#pragma once
#include "gemm_args.h"

namespace ktune_dev {

// Element (r, c) of a logical R x C operand stored row-major (COL_MAJOR = 0) or column-major.
template <int COL_MAJOR>
__device__ __forceinline__ long long offset(long long r, long long c, long long ld) {
  return COL_MAJOR ? c * ld + r : r * ld + c;
}

// C = alpha * acc + beta * C, never reading C when beta == 0 (BLAS semantics: C may hold NaN).
__device__ __forceinline__ float axpby(float alpha, float acc, float beta, const float* c) {
  return beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}

// Copies N floats with the widest aligned vector the count allows. Callers guarantee alignment
// of both pointers to the vector width (their strides and offsets are multiples of it).
template <int N>
__device__ __forceinline__ void copy_vec(float* dst, const float* src) {
  if constexpr (N % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 4)
      *reinterpret_cast<float4*>(dst + i) = *reinterpret_cast<const float4*>(src + i);
  } else if constexpr (N % 2 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 2)
      *reinterpret_cast<float2*>(dst + i) = *reinterpret_cast<const float2*>(src + i);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) dst[i] = src[i];
  }
}

// Stores VEC results v at dst, the output row's element at column col: to C with alpha and beta
// applied (FINAL), or raw into a split-K workspace slice that a reduction finishes. IN_N: the
// caller knows all VEC columns lie inside N; otherwise the ones beyond it are skipped. Whole
// vectors are stored where dst is aligned to them (the alignment class covers C and the workspace).
template <int VEC, bool FINAL, bool IN_N>
__device__ __forceinline__ void store_out(const KtuneGemmArgs& p, float* dst, int col, const float* v) {
  if (IN_N || col + VEC <= p.N) {
    float r[VEC];
    if (FINAL && p.beta != 0.0f) {
      copy_vec<VEC>(r, dst);
#pragma unroll
      for (int e = 0; e < VEC; ++e) r[e] = p.alpha * v[e] + p.beta * r[e];
    } else {
#pragma unroll
      for (int e = 0; e < VEC; ++e) r[e] = FINAL ? p.alpha * v[e] : v[e];
    }
    copy_vec<VEC>(dst, r);
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e)
      if (col + e < p.N) dst[e] = FINAL ? axpby(p.alpha, v[e], p.beta, dst + e) : v[e];
  }
}

// Maps the linear block index to a (tile row, tile column) so that SWZ consecutive tile rows
// sweep the tile columns together: their B tiles are reused from L2 while still resident.
template <int SWZ>
__device__ __forceinline__ void raster(int pid, int tiles_m, int tiles_n, int& tm, int& tn) {
  const int per_group = SWZ * tiles_n;
  const int first_m = (pid / per_group) * SWZ;
  const int rows = min(tiles_m - first_m, SWZ);
  const int in_group = pid % per_group;
  tm = first_m + in_group % rows;
  tn = in_group / rows;
}

// Programmatic dependent launch (sm_90; no-ops before it, and when the launch did not ask for
// it). A kernel whose next launch step reads its results lets that step's blocks be scheduled
// early (they take SM slots only as its own blocks leave, and only once all of them have
// started); the dependent kernel must wait for the previous grid to finish, with its memory
// visible, before it reads anything that grid wrote.
__device__ __forceinline__ void let_next_grid_launch() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void wait_for_previous_grid() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// The packing kernels' walk (gemm_pack, gemm_pack16) over one packed operand: `rows` rows of `cpr`
// 16-byte chunks, stored row-major without gaps, so chunk f of the walk is chunk f of `dst`. Each
// thread copies 4 chunks a step, 256 apart (a warp's chunks contiguous), issuing the 4 loads
// before the stores; the grid strides over the rest. load(r, j) returns chunk j of packed row r.
// One walk for any row length (the first form, a block of 256 threads per row segment, left most
// of a block idle on short rows and looped over grid.y's limit). Both move a copy at the device's
// copy rate: 2999^3 bf16, A, B and their copies (72 MB) in 23.6 us, the first form 23.0 (H100).
// The walk counts in 32 bits: add_pack keeps each operand below 2^31 chunks and the grid at most
// one stride of 1024 chunks a block past it, so nothing wraps.
template <class Load>
__device__ __forceinline__ void pack_chunks(unsigned rows, unsigned cpr, uint4* dst, Load load) {
  const unsigned total = rows * cpr;
  for (unsigned f0 = blockIdx.x * 1024u + threadIdx.x; f0 < total; f0 += gridDim.x * 1024u) {
    uint4 w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const unsigned f = f0 + 256u * i, r = f / cpr;
      if (f < total) w[i] = load(r, f - r * cpr);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (f0 + 256u * i < total) dst[f0 + 256u * i] = w[i];
  }
}

// cp.async (sm_80+): BYTES is 4, 8 or 16. src_bytes < BYTES zero-fills the rest, which is how
// out-of-bounds elements become zeros without a branch around the copy. PREFETCH = 1 asks L2 to
// fetch the surrounding 256 bytes too (for streams that will read them next).
template <int BYTES, int PREFETCH = 0>
__device__ __forceinline__ void cp_async(float* dst, const float* src, int src_bytes) {
#if __CUDA_ARCH__ >= 800
  unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if constexpr (BYTES == 16 && PREFETCH)
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes));
  else if constexpr (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes));
  else if constexpr (PREFETCH)
    asm volatile("cp.async.ca.shared.global.L2::256B [%0], [%1], %2, %3;\n" ::"r"(d), "l"(src), "n"(BYTES),
                 "r"(src_bytes));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(d), "l"(src), "n"(BYTES),
                 "r"(src_bytes));
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
#endif
}

} // namespace ktune_dev
