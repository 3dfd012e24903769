// Thread block clusters (sm_90) for the kernel templates that reduce across the CTAs of a cluster
// through distributed shared memory (gemm_skinny, gemm_skinny16, gemm_wgmma's CL, the rows
// cluster family): the CTA's rank, cluster-wide barriers, and loads from and pushes (st.async)
// into another CTA's shared memory. sync() releases and acquires, so shared-memory writes before
// it are seen after it by every CTA of the cluster; arrive_relaxed() orders nothing (a fence
// before it does, where needed).
// Before sm_90 the bodies compile to nothing (rank 0, no barrier, zeros): the templates that
// include this are compiled for older targets too, and only launch clusters on sm_90.
#pragma once

namespace ktune_dev {
namespace cluster {

__device__ __forceinline__ unsigned rank() {
  unsigned r = 0;
#if __CUDA_ARCH__ >= 900
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
#endif
  return r;
}

// Every thread of every CTA of the cluster, the warps converged (.aligned).
__device__ __forceinline__ void sync() {
#if __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}
// The wait half of a barrier, without .aligned (acquire): pairs with arrive_relaxed().
__device__ __forceinline__ void wait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
#endif
}

// The arrive half of sync(), releasing: this thread's earlier memory accesses (its loads from
// other CTAs' shared memory included) are complete before any CTA passes the matching wait().
__device__ __forceinline__ void arrive() {
#if __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release;" ::: "memory");
#endif
}

// Arrives without ordering this thread's earlier memory accesses (a fence before it does, where
// needed: after mbarrier inits, fence.mbarrier_init.release.cluster). Paired with wait().
__device__ __forceinline__ void arrive_relaxed() {
#if __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory");
#endif
}
// The shared::cluster address of this CTA's shared-memory offset `a` in CTA `r` of the cluster.
__device__ __forceinline__ unsigned remote_at(unsigned a, unsigned r) {
  unsigned to = 0;
#if __CUDA_ARCH__ >= 900
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(to) : "r"(a), "r"(r));
#endif
  return to;
}
// The same for `local`, a pointer into this CTA's shared memory.
__device__ __forceinline__ unsigned remote(const void* local, unsigned r) {
  return remote_at(static_cast<unsigned>(__cvta_generic_to_shared(local)), r);
}

// One arrive on the mbarrier at shared offset `bar` (this CTA's address of it) in CTA `r` of the
// cluster. The default semantics (release at CTA scope), not .release.cluster: a cluster-scope
// release is a fence that waits for the thread's outstanding memory operations, once per K tile
// in gemm_wgmma's consumers (the first MC kernel, with it, ran at 0.45-0.7x of the kernel without
// multicast). What the arrive signals there, that wgmma have finished reading a stage, is already
// complete when it is issued (wgmma.wait_group).
__device__ __forceinline__ void mbar_arrive(unsigned bar, unsigned r) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote_at(bar, r)) : "memory");
#endif
}

// Stores v into another CTA's shared memory at `to` and completes 4 transaction bytes on that CTA's
// mbarrier at `bar` (both shared::cluster addresses from remote() / remote_at()): the receiver
// waits on its own mbarrier, with no cluster barrier (st.async).
__device__ __forceinline__ void store_async_f32(unsigned to, float v, unsigned bar) {
#if __CUDA_ARCH__ >= 900
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%0], %1, [%2];" ::"r"(to), "f"(v), "r"(bar) : "memory");
#endif
}
// Loads from another CTA's shared memory (the address from remote()).
__device__ __forceinline__ float load_f32(unsigned a) {
  float v = 0.0f;
#if __CUDA_ARCH__ >= 900
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(a) : "memory");
#endif
  return v;
}
__device__ __forceinline__ float2 load_v2(unsigned a) {
  float2 v = make_float2(0.0f, 0.0f);
#if __CUDA_ARCH__ >= 900
  asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(a) : "memory");
#endif
  return v;
}
__device__ __forceinline__ float4 load_v4(unsigned a) {
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#if __CUDA_ARCH__ >= 900
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(a) : "memory");
#endif
  return v;
}

} // namespace cluster
} // namespace ktune_dev

// The compile-time cluster shape of a kernel: clusters exist from sm_90 on, and older targets
// reject the attribute (kernels compiled for them never get a cluster size above 1).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define KTUNE_CLUSTER_DIMS(x, y, z) __cluster_dims__(x, y, z)
#else
#define KTUNE_CLUSTER_DIMS(x, y, z)
#endif
