// How fast can any kernel read N bytes, timed the way ktune times kernels (runtime/timing.h: L2
// flushed by a read before every repetition, launch queued behind a delay, median)? The ceiling
// for memory-bound kernels that read much more than they write: a decode GEMM (M = 1..16) is a
// read of B, so "percent of the copy bandwidth" at 32 MB cannot exceed what a pure read of 32 MB
// reaches. For each size the best of a sweep of read kernels is reported beside cuMemcpyDtoD of
// 256 MiB (the bench's copy bandwidth) and a copy of the same bytes, with the best of each kind:
//   stride  grid-stride 16-byte ld.global.nc, UNROLL loads in flight a thread;
//   slice   each block reads its own contiguous slice with the same loads; with PF > 0 it first
//           asks the L2 to prefetch the whole slice in PF-KiB bulk requests
//           (cp.async.bulk.prefetch.L2), so that the slice's DRAM requests are all issued at once;
//   bulk    (sm_90) each block's slice arrives in shared memory through 1D bulk copies (TMA) on a
//           ring of STAGES chunks, one thread issuing, mbarrier completion;
//   paged   not a floor of its own but what a paged cache costs over it: each block first reads
//           which slice is its own from a table (a random permutation, flushed from the L2 like
//           the data), then reads that slice as `slice` does. Its time over the best direct read
//           is the table's dependent round trip, which no kernel that finds its bytes through a
//           table read in the same launch (a paged KV cache's block table) can hide.
//   heads   the bytes as a (B, S, H, D) cache of 8 heads of 256-byte rows: each block reads one
//           head's rows of a slice of the sequence (256 bytes every 2 KiB), as a decode block of
//           one KV head reads its K or V; a floor for that layout, shown beside the contiguous one.
//   ring    the loop of an attention_decode block without its math: W warps a block, one block an
//           SM, each warp with its own cp.async ring of STAGES (K, V) tiles of BN 256-byte rows (K
//           from the slice's first half, V from its second), waiting for its oldest tile, reading
//           it from shared memory and issuing the next; beside the floor, what that shape reaches.
//   combine / cluster   not floors of their own either, but what a split read's merge across
//           blocks costs over it, the shape of attention_decode's two merges without their math:
//           each block reads its slice as `slice` does and leaves a 4 KiB partial (8 rows of 128
//           FP32 columns, as a decode split's O); `combine`: the partials written to global
//           memory and summed 16 blocks at a time by a second kernel launched as a programmatic
//           dependent, a warp a row (attention_decode_combine's shape); `cluster`: the blocks in
//           clusters of 8 keep their partials in shared memory and sum them through distributed
//           shared memory between two cluster barriers (the `_cl` kernels' shape); `last`: the
//           last block of a group of 16 to arrive (an atomic counter) sums their partials. A split decode
//           call cannot beat the best of these at its bytes.
//   read_floor [--sizes-mb 8,16,32,...] [--device N] [--json FILE]
// --json also writes each size's best read (and best paged read) for tools that compare a kernel's
// time with the floor at its bytes (bench/attention_acceptance.py).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/compiler.h"
#include "ktune/device.h"
#include "ktune/error.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/module.h"
#include "runtime/timing.h"

using namespace ktune;

namespace {

// The split-and-merge kinds' partial (FP32 elements a block: 8 rows of 128 columns, a decode split's
// O) and the splits a merged group, shared by their kernels (-D) and the launches below.
constexpr unsigned kPart = 1024, kSplits = 16;

// The read kernels of the sweep (the file's header names them). Each sums the 16-byte words it
// reads and stores only if the sum is exactly -1 (never, for the fill used), so the loads stay and
// nothing is written.
constexpr char kSource[] = R"(
// The sum of p[i], p[i + stride], ... below end: UNROLL independent 16-byte loads in flight.
template <int UNROLL>
__device__ float sum_words(const uint4* __restrict__ p, unsigned long long i, unsigned long long end,
                           unsigned long long stride) {
  float s = 0.f;
  for (; i + (UNROLL - 1) * stride < end; i += UNROLL * stride) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                   : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w) : "l"(p + i + u * stride));
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) s += __uint_as_float(v[u].x ^ v[u].y ^ v[u].z ^ v[u].w);
  }
  for (; i < end; i += stride) {
    const uint4 v = p[i];
    s += __uint_as_float(v.x ^ v.y ^ v.z ^ v.w);
  }
  return s;
}

template <int UNROLL>
__global__ void read_stream(const uint4* __restrict__ p, unsigned long long n16, float* out) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  const float s = sum_words<UNROLL>(p, (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x, n16, stride);
  if (s == -1.f) *out = s;
}

template <int UNROLL, int PF>
__global__ void read_slice(const uint4* __restrict__ p, unsigned long long n16, float* out) {
  const unsigned long long per = (n16 + gridDim.x - 1) / gridDim.x;
  const unsigned long long b0 = min(n16, (unsigned long long)blockIdx.x * per), b1 = min(n16, b0 + per);
  if (PF > 0) {
    const unsigned long long chunk16 = PF * 64ull; // 16-byte words in PF KiB
    for (unsigned long long c = b0 + threadIdx.x * chunk16; c < b1; c += blockDim.x * chunk16) {
      const unsigned bytes = unsigned(min(chunk16, b1 - c) * 16);
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p + c), "r"(bytes) : "memory");
    }
  }
  const float s = sum_words<UNROLL>(p, b0 + threadIdx.x, b1, blockDim.x);
  if (s == -1.f) *out = s;
}

// read_slice with the slice found through table[blockIdx.x] first (the `paged` kind above).
template <int UNROLL>
__global__ void read_paged(const uint4* __restrict__ p, unsigned long long n16, float* out,
                           const unsigned* __restrict__ table) {
  const unsigned long long per = (n16 + gridDim.x - 1) / gridDim.x, slice = table[blockIdx.x];
  const unsigned long long b0 = min(n16, slice * per), b1 = min(n16, b0 + per);
  const float s = sum_words<UNROLL>(p, b0 + threadIdx.x, b1, blockDim.x);
  if (s == -1.f) *out = s;
}

// W windows of the buffer read at once: the blocks with blockIdx.x % W == w grid-stride over
// window w (of n16 / W words). W = 1 is read_stream; W = gridDim.x is a contiguous slice a block.
template <int UNROLL>
__global__ void read_windows(const uint4* __restrict__ p, unsigned long long n16, float* out, unsigned W) {
  const unsigned w = blockIdx.x % W, blocks = (gridDim.x - w + W - 1) / W, bw = blockIdx.x / W;
  const unsigned long long per = (n16 + W - 1) / W;
  const unsigned long long w0 = min(n16, w * per), w1 = min(n16, w0 + per);
  const unsigned long long stride = (unsigned long long)blocks * blockDim.x;
  const float s = sum_words<UNROLL>(p, w0 + (unsigned long long)bw * blockDim.x + threadIdx.x, w1, stride);
  if (s == -1.f) *out = s;
}

// The `heads` kind: rows of HEADS segments of 16 words; block b reads segment b % HEADS of the rows
// of its slice (the blocks of one segment share the rows out evenly), UNROLL loads in flight.
constexpr int HEADS = 8;
template <int UNROLL>
__global__ void read_heads(const uint4* __restrict__ p, unsigned long long n16, float* out) {
  const unsigned long long rows = n16 / (HEADS * 16);
  const unsigned per_head = gridDim.x / HEADS, seg = blockIdx.x % HEADS, part = blockIdx.x / HEADS;
  const unsigned long long per = (rows + per_head - 1) / per_head;
  const unsigned long long r0 = min(rows, part * per), r1 = min(rows, r0 + per);
  const unsigned long long words = (r1 - r0) * 16; // this block's: 16 a row
  float s = 0.f;
  unsigned long long i = threadIdx.x;
  auto at = [&](unsigned long long w) { return p + (r0 + w / 16) * (HEADS * 16) + seg * 16 + w % 16; };
  for (; i + (UNROLL - 1) * blockDim.x < words; i += UNROLL * blockDim.x) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                   : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w) : "l"(at(i + u * blockDim.x)));
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) s += __uint_as_float(v[u].x ^ v[u].y ^ v[u].z ^ v[u].w);
  }
  for (; i < words; i += blockDim.x) {
    const uint4 v = *at(i);
    s += __uint_as_float(v.x ^ v.y ^ v.z ^ v.w);
  }
  if (s == -1.f) *out = s;
}

// The `ring` kind: block b's slice as rows of 16 words, K its first half and V its second; warp w
// takes tiles w, w + W, ... of BN rows of each, STAGES deep (tiles past the end: empty groups, so
// that the wait counts stay right).
template <int W, int STAGES, int BN>
__global__ void read_ring(const uint4* __restrict__ p, unsigned long long n16, float* out) {
  extern __shared__ __align__(16) uint4 ring_smem[]; // W x STAGES x (K, V) x BN x 16 words
  const unsigned long long per = (n16 + gridDim.x - 1) / gridDim.x;
  const unsigned long long b0 = min(n16, (unsigned long long)blockIdx.x * per), b1 = min(n16, b0 + per);
  const unsigned long long half = (b1 - b0) / 32; // rows of 16 words in each of K and V
  const uint4* K = p + b0;
  const uint4* V = K + half * 16;
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  uint4* mine = ring_smem + (size_t)warp * STAGES * 2 * BN * 16;
  const long long tiles = (long long)(half / BN), mine_tiles = tiles > warp ? (tiles - warp + W - 1) / W : 0;
  auto issue = [&](long long n) {
    if (n < mine_tiles) {
      const unsigned long long row0 = (unsigned long long)(warp + n * W) * BN;
      uint4* st = mine + (n % STAGES) * 2 * BN * 16;
      for (int c = lane; c < BN * 16; c += 32) {
        const unsigned dk = unsigned(__cvta_generic_to_shared(st + c)), dv = unsigned(__cvta_generic_to_shared(st + BN * 16 + c));
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dk), "l"(K + row0 * 16 + c) : "memory");
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dv), "l"(V + row0 * 16 + c) : "memory");
      }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  };
  for (int n = 0; n < STAGES - 1; ++n) issue(n);
  float s = 0.f;
  for (long long n = 0; n < mine_tiles; ++n) {
    asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2) : "memory");
    __syncwarp();
    const uint4* st = mine + (n % STAGES) * 2 * BN * 16;
    for (int c = lane; c < 2 * BN * 16; c += 32) {
      const uint4 v = st[c];
      s += __uint_as_float(v.x ^ v.y ^ v.z ^ v.w);
    }
    __syncwarp(); // the stage is read before it is refilled
    issue(n + STAGES - 1);
  }
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  if (s == -1.f) *out = s;
}

// The split-and-merge kinds: PART floats a block, SPLITS blocks a merged group (combine), rows of
// 128 columns; both from the host's kPart and kSplits (defined when compiled).
constexpr int PART = KT_PART, SPLITS = KT_SPLITS;
template <int UNROLL>
__device__ float read_own_slice(const uint4* __restrict__ p, unsigned long long n16) {
  const unsigned long long per = (n16 + gridDim.x - 1) / gridDim.x;
  const unsigned long long b0 = min(n16, (unsigned long long)blockIdx.x * per), b1 = min(n16, b0 + per);
  return sum_words<UNROLL>(p, b0 + threadIdx.x, b1, blockDim.x);
}
// Each value of the partial depends on the thread's loads, so that none is left out.
template <int UNROLL>
__global__ void read_split(const uint4* __restrict__ p, unsigned long long n16, float* out, float* __restrict__ ws) {
  const float s = read_own_slice<UNROLL>(p, n16);
  for (int i = threadIdx.x; i < PART; i += blockDim.x) ws[(size_t)blockIdx.x * PART + i] = s + i;
  if (s == -1.f) *out = s;
}
// Warp w sums row w % (PART / 128) of group w / (PART / 128)'s SPLITS partials, 4 columns a lane.
__global__ void combine_split(const float* __restrict__ ws, float* __restrict__ merged, unsigned groups) {
  asm volatile("griddepcontrol.wait;" ::: "memory"); // the split kernel's partials are complete
  const unsigned w = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  const unsigned g = w / (PART / 128), row = w % (PART / 128);
  if (g >= groups) return;
  float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
  for (int s = 0; s < SPLITS; ++s) {
    const float4 v = *reinterpret_cast<const float4*>(ws + ((size_t)g * SPLITS + s) * PART + row * 128 + lane * 4);
    a.x += v.x, a.y += v.y, a.z += v.z, a.w += v.w;
  }
  *reinterpret_cast<float4*>(merged + ((size_t)g * (PART / 128) + row) * 128 + lane * 4) = a;
}

// The last block of each group of SPLITS to finish its read sums the group's partials (an arrival
// counter a group, reset by that block for the next call): no second launch, the merge on one block.
template <int UNROLL>
__global__ void read_last(const uint4* __restrict__ p, unsigned long long n16, float* out, float* __restrict__ ws,
                          float* __restrict__ merged, unsigned* __restrict__ arrived) {
  __shared__ bool last;
  const float s = read_own_slice<UNROLL>(p, n16);
  for (int i = threadIdx.x; i < PART; i += blockDim.x) ws[(size_t)blockIdx.x * PART + i] = s + i;
  __threadfence(); // this block's partial is visible before its arrival is counted
  __syncthreads();
  const unsigned g = blockIdx.x / SPLITS;
  if (threadIdx.x == 0) last = atomicAdd(arrived + g, 1u) == SPLITS - 1;
  __syncthreads();
  if (last) {
    __threadfence();
    for (int i = threadIdx.x; i < PART; i += blockDim.x) {
      float a = 0.f;
#pragma unroll
      for (int j = 0; j < SPLITS; ++j) a += __ldcg(ws + ((size_t)g * SPLITS + j) * PART + i);
      merged[(size_t)g * PART + i] = a;
    }
    if (threadIdx.x == 0) arrived[g] = 0;
  }
  if (s == -1.f) *out = s;
}

#if __CUDA_ARCH__ >= 900
// Launched in clusters: each block's partial in its shared memory, summed over the cluster's
// blocks a column each thread (of the block's share), stored, then a second barrier before any
// block leaves (its shared memory may still be read).
template <int UNROLL>
__global__ void read_cluster(const uint4* __restrict__ p, unsigned long long n16, float* out, float* __restrict__ merged) {
  __shared__ float part[PART];
  const float s = read_own_slice<UNROLL>(p, n16);
  for (int i = threadIdx.x; i < PART; i += blockDim.x) part[i] = s + i;
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
  unsigned rank, n;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  const unsigned local = unsigned(__cvta_generic_to_shared(part));
  const unsigned share = PART / n;
  for (unsigned i = rank * share + threadIdx.x; i < (rank + 1) * share; i += blockDim.x) {
    float a = 0.f;
    for (unsigned r = 0; r < n; ++r) {
      float v;
      unsigned at;
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(at) : "r"(local + i * 4), "r"(r));
      asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(at));
      a += v;
    }
    merged[(size_t)(blockIdx.x / n) * PART + i] = a;
  }
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
  if (s == -1.f) *out = s;
}

template <int STAGES>
__global__ void read_bulk(const uint4* __restrict__ p, unsigned long long n16, float* out, unsigned chunk16) {
  extern __shared__ __align__(128) uint4 ring[]; // STAGES * chunk16 words
  __shared__ __align__(8) unsigned long long full[STAGES];
  const unsigned long long per = (n16 + gridDim.x - 1) / gridDim.x;
  const unsigned long long b0 = min(n16, (unsigned long long)blockIdx.x * per), b1 = min(n16, b0 + per);
  const unsigned long long nchunks = (b1 - b0 + chunk16 - 1) / chunk16;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(unsigned(__cvta_generic_to_shared(&full[s]))) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  auto issue = [&](unsigned long long c) {
    const int s = int(c % STAGES);
    const unsigned long long w0 = b0 + c * chunk16;
    const unsigned bytes = unsigned(min((unsigned long long)chunk16, b1 - w0) * 16);
    const unsigned bar = unsigned(__cvta_generic_to_shared(&full[s]));
    const unsigned dst = unsigned(__cvta_generic_to_shared(ring + (size_t)s * chunk16));
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(dst), "l"(p + w0), "r"(bytes), "r"(bar) : "memory");
  };
  if (threadIdx.x == 0)
    for (unsigned long long c = 0; c < STAGES && c < nchunks; ++c) issue(c);
  float sum = 0.f;
  for (unsigned long long c = 0; c < nchunks; ++c) {
    const int s = int(c % STAGES);
    const unsigned parity = unsigned(c / STAGES) & 1u;
    asm volatile("{\n .reg .pred P;\n W: mbarrier.try_wait.parity.shared::cta.b64 P, [%0], %1;\n @!P bra W;\n}"
                 ::"r"(unsigned(__cvta_generic_to_shared(&full[s]))), "r"(parity) : "memory");
    const unsigned long long words = min((unsigned long long)chunk16, b1 - (b0 + c * chunk16));
    for (unsigned j = threadIdx.x; j < words; j += blockDim.x) {
      const uint4 v = ring[(size_t)s * chunk16 + j];
      sum += __uint_as_float(v.x ^ v.y ^ v.z ^ v.w);
    }
    __syncthreads(); // stage s is read: it may be refilled
    if (threadIdx.x == 0 && c + STAGES < nchunks) issue(c + STAGES);
  }
  if (sum == -1.f) *out = sum;
}
#endif
)";

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"Best pure-read bandwidth per size, timed as ktune times kernels"};
  std::vector<int> sizes_mb{2, 4, 8, 16, 32, 64, 128, 256, 512};
  int ordinal = 0;
  std::string json_path;
  app.add_option("--sizes-mb", sizes_mb, "Sizes to read, in MiB")->delimiter(',')->check(CLI::Range(1, 65536));
  app.add_option("--device", ordinal, "GPU ordinal");
  app.add_option("--json", json_path, "Also write each size's best read time here");
  CLI11_PARSE(app, argc, argv);
  try {
    const DeviceInfo d = device_by_ordinal(ordinal);
    CudaContext ctx(d.ordinal);
    Compiler compiler;
    // One launchable read kernel of the sweep: its kind (the file's header names them), its shape,
    // and its fourth argument (read_bulk: the chunk in 16-byte words; read_windows: W; others: none).
    struct Variant {
      std::string kind, what;
      size_t kernel;
      unsigned per_sm, threads, smem, arg;
      unsigned blocks = 0; // the grid where not per_sm blocks an SM (heads, ring, combine, cluster, last)
    };
    std::vector<Variant> variants;
    CompileRequest r;
    r.source = kSource, r.source_name = "read_floor.cu", r.arch = d.arch, r.context = "read_floor";
    r.options = {"-DKT_PART=" + std::to_string(kPart), "-DKT_SPLITS=" + std::to_string(kSplits)};
    auto shapes = [&](const std::string& kind, const std::string& what, size_t kernel, unsigned smem, unsigned arg,
                      const std::vector<unsigned>& threads_list, const std::vector<unsigned>& per_sm_list) {
      for (unsigned threads : threads_list)
        for (unsigned per_sm : per_sm_list) {
          if (threads * per_sm > 2048 || size_t(smem + 1024) * per_sm > size_t(d.max_smem_per_block_optin) + 1024) continue;
          variants.push_back({kind,
                              what + ", " + std::to_string(per_sm) + " x " + std::to_string(threads) + " threads a SM", kernel,
                              per_sm, threads, smem, arg});
        }
    };
    for (int u : {1, 2, 4, 8}) {
      r.name_expressions.push_back("read_stream<" + std::to_string(u) + ">");
      shapes("stride", "unroll " + std::to_string(u), r.name_expressions.size() - 1, 0, 0, {256, 512, 1024}, {1, 2, 4, 8});
    }
    for (int u : {4, 8})
      for (int pf : {0, 4, 16, 64}) {
        r.name_expressions.push_back("read_slice<" + std::to_string(u) + ", " + std::to_string(pf) + ">");
        shapes("slice", "unroll " + std::to_string(u) + ", L2 prefetch " + (pf ? std::to_string(pf) + " KiB" : "none"),
               r.name_expressions.size() - 1, 0, 0, {256, 512, 1024}, {1, 2, 4});
      }
    for (int u : {4, 8}) {
      r.name_expressions.push_back("read_paged<" + std::to_string(u) + ">");
      shapes("paged", "unroll " + std::to_string(u), r.name_expressions.size() - 1, 0, 0, {256, 512, 1024}, {1, 2, 4});
    }
    for (int u : {2, 4}) {
      r.name_expressions.push_back("read_windows<" + std::to_string(u) + ">");
      for (unsigned w : {1u, 2u, 4u, 8u, 16u, 32u, 64u, 128u})
        shapes("windows " + std::to_string(w), "unroll " + std::to_string(u), r.name_expressions.size() - 1, 0, w,
               {512, 1024}, {2, 4});
    }
    if (d.arch_number() >= 90)
      for (int stages : {2, 4, 8}) {
        r.name_expressions.push_back("read_bulk<" + std::to_string(stages) + ">");
        for (unsigned kib : {4u, 8u, 16u, 32u})
          shapes("bulk", std::to_string(stages) + " x " + std::to_string(kib) + " KiB", r.name_expressions.size() - 1,
                 stages * kib * 1024, kib * 64, {128, 256}, {1, 2, 4});
      }
    for (int u : {4, 8}) {
      r.name_expressions.push_back("read_heads<" + std::to_string(u) + ">");
      for (unsigned blocks : {128u, 256u, 512u})
        for (unsigned threads : {256u, 512u, 1024u})
          variants.push_back({"heads", "unroll " + std::to_string(u) + ", " + std::to_string(blocks) + " x " +
                                           std::to_string(threads) + " threads",
                              r.name_expressions.size() - 1, 0, threads, 0, 0, blocks});
    }
    // The ring kind's grid (one block an SM, about: an H100 has 132), named once for its variants and
    // its label beside the floor.
    const unsigned kRingBlocks = 128;
    for (int w : {4, 8})
      for (int stages : {2, 3, 4})
        for (int bn : {16, 32}) {
          const unsigned smem = unsigned(w * stages * 2 * bn * 256);
          if (smem > unsigned(d.max_smem_per_block_optin)) continue;
          r.name_expressions.push_back("read_ring<" + std::to_string(w) + ", " + std::to_string(stages) + ", " +
                                       std::to_string(bn) + ">");
          variants.push_back({"ring", std::to_string(w) + " warps, " + std::to_string(stages) + " x " + std::to_string(bn) +
                                          "-row tiles",
                              r.name_expressions.size() - 1, 1, unsigned(w * 32), smem, 0, kRingBlocks});
        }
    // The split-and-merge kinds at the grids a decode call splits into (a wave of one block an SM
    // and below it, two above), 16 splits merged a group (combine) or clusters of 8.
    const unsigned kClusterSize = 8;
    for (int u : {4, 8}) {
      const std::string us = std::to_string(u);
      r.name_expressions.push_back("read_split<" + us + ">");
      const size_t split = r.name_expressions.size() - 1;
      r.name_expressions.push_back("read_last<" + us + ">");
      const size_t last = r.name_expressions.size() - 1;
      const bool cluster = d.arch_number() >= 90;
      if (cluster) r.name_expressions.push_back("read_cluster<" + us + ">");
      const size_t in_clusters = r.name_expressions.size() - 1; // read_cluster's, where cluster
      for (unsigned blocks : {64u, 128u, 256u})
        for (unsigned threads : {256u, 512u, 1024u}) {
          const std::string what = "unroll " + us + ", " + std::to_string(blocks) + " x " + std::to_string(threads) + " threads";
          variants.push_back({"combine", what, split, 0, threads, 0, 0, blocks});
          variants.push_back({"last", what, last, 0, threads, 0, 0, blocks});
          if (cluster) variants.push_back({"cluster", what + ", clusters of 8", in_clusters, 0, threads, 0, 0, blocks});
        }
    }
    r.name_expressions.push_back("combine_split");
    const size_t combine_kernel = r.name_expressions.size() - 1;
    // The kinds beside the floor, which read the same bytes another way (or not in the order that
    // reads them fastest): each one's cost over the floor is printed, none is a candidate for it.
    const std::string ring_label = "a decode block's loop (" + std::to_string(kRingBlocks) + " blocks)";
    const std::pair<const char*, const char*> beside[] = {{"ring", ring_label.c_str()},
                                                          {"heads", "the read of one head's rows a block"},
                                                          {"combine", "a split read merged by combine"},
                                                          {"cluster", "a split read merged by cluster"},
                                                          {"last", "a split read merged by last"}};
    auto is_beside = [&](const std::string& kind) {
      return std::any_of(std::begin(beside), std::end(beside), [&](const auto& b) { return kind == b.first; });
    };
    const auto k = compiler.compile(r);
    Module m(k->cubin, k->lowered_names, "read_floor");
    Timer timer(d.l2_bytes);
    TimingOptions to;
    const size_t max_bytes = size_t(*std::max_element(sizes_mb.begin(), sizes_mb.end())) << 20;
    DeviceBuffer buf(max_bytes, "read_floor buffer"), out(16, "read_floor out");
    // The paged kind's table: a random permutation of the grid's blocks, written before each such
    // variant is timed (its grid is the variant's).
    unsigned max_grid = 0;
    for (const Variant& v : variants) max_grid = std::max(max_grid, unsigned(d.sm_count) * v.per_sm);
    DeviceBuffer table(size_t(max_grid) * 4, "read_floor page table");
    unsigned max_blocks = 0;
    for (const Variant& v : variants) max_blocks = std::max(max_blocks, v.blocks);
    DeviceBuffer ws(size_t(std::max(max_blocks, 1u)) * kPart * 4, "read_floor partials"),
        merged(size_t(std::max(max_blocks, 1u)) * kPart * 4, "read_floor merged partials"),
        arrived(size_t(std::max(max_blocks, 1u)) * 4, "read_floor arrival counters");
    check_cu(driver().cuMemsetD32Async(arrived.ptr(), 0, arrived.bytes() / 4, nullptr), "cuMemsetD32Async", "read_floor counters");
    std::mt19937 rng(1234);
    check_cu(driver().cuMemsetD32Async(buf.ptr(), 0x3f800000u, buf.bytes() / 4, nullptr), "cuMemsetD32Async", "read_floor");
    const double copy = timer.copy_tb_s(size_t(256) << 20, to); // as ktune bench measures it
    std::printf("%s (%s), %d SMs; copy (cuMemcpyDtoD 256 MiB, read + written): %.3f TB/s; %zu read kernels a size\n",
                d.name.c_str(), d.arch.c_str(), d.sm_count, copy, variants.size());
    nlohmann::ordered_json report = {{"device", d.name}, {"arch", d.arch}, {"sm_count", d.sm_count}, {"copy_tb_s", copy},
                                     {"sizes", nlohmann::ordered_json::array()}};
    std::printf("%8s %9s %9s %8s %8s %10s  %s\n", "MiB", "read us", "TB/s", "%copy", "%same", "same-copy", "best kernel (of the sweep)");
    for (int mb : sizes_mb) {
      const size_t bytes = size_t(mb) << 20;
      std::map<std::string, std::pair<double, std::string>> best; // kind -> (ms, what)
      for (const Variant& v : variants) {
        const unsigned grid[3] = {v.blocks ? v.blocks : unsigned(d.sm_count) * v.per_sm, 1, 1}, block[3] = {v.threads, 1, 1};
        CUdeviceptr p = buf.ptr();
        unsigned long long n16 = bytes / 16;
        CUdeviceptr o = out.ptr();
        unsigned arg = v.arg;
        CUdeviceptr t = table.ptr();
        void* params[] = {&p, &n16, &o, &arg}; // the kernels of three parameters ignore the fourth
        void* paged_params[] = {&p, &n16, &o, &t};
        CUdeviceptr w = ws.ptr(), mp = merged.ptr();
        void* split_params[] = {&p, &n16, &o, v.kind == "combine" ? &w : &mp};
        unsigned groups = grid[0] / kSplits; // combine: kSplits splits a group, a warp a row of 128 columns
        void* combine_params[] = {&w, &mp, &groups};
        CUdeviceptr ap = arrived.ptr();
        void* last_params[] = {&p, &n16, &o, &w, &mp, &ap};
        const unsigned cgrid[3] = {groups * (kPart / 128), 1, 1}, cblock[3] = {32, 1, 1}, cluster[3] = {kClusterSize, 1, 1};
        const bool paged = v.kind == "paged";
        if (paged) {
          std::vector<unsigned> perm(grid[0]);
          std::iota(perm.begin(), perm.end(), 0u);
          std::shuffle(perm.begin(), perm.end(), rng);
          check_cu(driver().cuMemcpyHtoD(t, perm.data(), perm.size() * 4), "cuMemcpyHtoD", "read_floor page table");
        }
        const double ms = timer.time(
                                  [&](CUstream s) {
                                    if (v.kind == "combine") {
                                      m.launch(v.kernel, grid, block, 0, s, split_params);
                                      m.launch(combine_kernel, cgrid, cblock, 0, s, combine_params, /*overlap_previous=*/true);
                                    } else if (v.kind == "last") {
                                      m.launch(v.kernel, grid, block, 0, s, last_params);
                                    } else if (v.kind == "cluster") {
                                      m.launch(v.kernel, grid, block, 0, s, split_params, false, false, cluster);
                                    } else {
                                      m.launch(v.kernel, grid, block, v.smem, s, paged ? paged_params : params);
                                    }
                                  },
                                  nullptr, to)
                              .median_ms;
        auto& b = best[v.kind];
        if (b.second.empty() || ms < b.first) b = {ms, v.what};
        // The paged read is not a read of the bytes alone: beside the floor too (its own line below).
        if (paged || is_beside(v.kind)) continue;
        auto& all = best[""];
        if (all.second.empty() || ms < all.first) all = {ms, v.kind + ": " + v.what};
      }
      check_cu(driver().cuCtxSynchronize(), "cuCtxSynchronize", "read_floor");
      const double same = timer.copy_tb_s(bytes / 2, to);
      auto row = [&](const std::string& label, double ms, const std::string& what) {
        const double tb_s = double(bytes) / (ms * 1e-3) / 1e12;
        std::printf("%8s %9.2f %9.3f %7.1f%% %7.1f%% %10.3f  %s\n", label.c_str(), ms * 1e3, tb_s, 100 * tb_s / copy,
                    100 * tb_s / same, same, what.c_str());
      };
      row(std::to_string(mb), best[""].first, best[""].second);
      for (const auto& [kind, b] : best)
        if (!kind.empty()) row("  " + kind, b.first, b.second);
      if (best.count("paged"))
        std::printf("%8s %9.2f us the paged read over the best direct one (%.1f %% of its time)\n", "", (best["paged"].first - best[""].first) * 1e3,
                    100 * (best["paged"].first - best[""].first) / best[""].first);
      nlohmann::ordered_json size = {{"mib", mb}, {"bytes", bytes}, {"read_ms", best[""].first}, {"kernel", best[""].second},
                                     {"same_size_copy_tb_s", same}};
      if (best.count("paged")) size["paged_read_ms"] = best["paged"].first;
      for (const auto& [kind, what] : beside)
        if (best.count(kind)) {
          std::printf("%8s %9.2f us %s over the best read (%.1f %% of the floor's time)\n", "",
                      (best[kind].first - best[""].first) * 1e3, what, 100 * best[""].first / best[kind].first);
          size[std::string(kind) + "_read_ms"] = best[kind].first;
        }
      report["sizes"].push_back(size);
    }
    if (!json_path.empty()) {
      std::ofstream f(json_path);
      if (!(f << report.dump(1) << "\n")) throw Error("cannot write " + json_path);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "read_floor: %s\n", e.what());
    return 1;
  }
  return 0;
}
