// sm_90 asynchronous-copy building blocks shared by the kernel templates (gemm/gemm_wgmma.cu,
// rows/rows_bulk.cu): mbarriers in shared::cta (64-bit), the proxy fence, and the 1D bulk copy
// (TMA without a tensor map). Addresses are 32-bit shared-window addresses (__cvta_generic_to_shared).
// Only call these from code compiled for sm_90 or later.
#pragma once

namespace ktune_dev {
namespace async {

__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// Orders this thread's generic-proxy shared-memory accesses with later async-proxy ones (TMA, wgmma).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
// Makes initialized mbarriers visible to the async proxy (and the cluster) before first use.
__device__ __forceinline__ void fence_mbar_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Returns once the phase of the given parity has completed (phases alternate 0, 1, 0, ...).
// SEM: the wait's memory semantics, spelled as PTX's qualifiers ("": acquire at CTA scope).
// try_wait with a suspend-time hint (10 ms, CUTLASS's): the warp sleeps in the barrier until the
// phase completes instead of returning after the system's short default and spinning. A spinning
// producer warp took issue slots from the consumers beside it: attention_wgmma's one TMA thread ran
// ~90 M try_wait rounds (and as many branches) at 16k tokens, Nsight Compute.
#define KTUNE_MBAR_WAIT(SEM)                                                                                    \
  asm volatile("{\n.reg .pred done;\nWAIT_%=:\nmbarrier.try_wait.parity" SEM ".shared::cta.b64 done, [%0], %1, %2;\n" \
               "@!done bra WAIT_%=;\n}\n" ::"r"(bar),                                                           \
               "r"(parity), "r"(10000000u)                                                                       \
               : "memory")
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) { KTUNE_MBAR_WAIT(""); }
// The same with acquire at cluster scope: for data other CTAs of the cluster stored with st.async
// completing on this mbarrier.
__device__ __forceinline__ void mbar_wait_cluster(unsigned bar, unsigned parity) { KTUNE_MBAR_WAIT(".acquire.cluster"); }
#undef KTUNE_MBAR_WAIT

// `bytes` (a multiple of 16; src and dst 16-byte aligned) from global memory into this CTA's
// shared memory at dst, completing that many transaction bytes on the mbarrier.
__device__ __forceinline__ void bulk_load(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

// Shared -> global bulk copy (16-byte granules), tracked by the issuing thread's bulk groups.
__device__ __forceinline__ void bulk_store(void* dst, unsigned src, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst), "r"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// The issuing thread's bulk stores have read their shared memory (it may be overwritten or freed).
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }

} // namespace async
} // namespace ktune_dev
