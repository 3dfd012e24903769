// Session 21 probe (not part of the library): which L2 partition each SM is near, and where the
// block scheduler puts the blocks of a one-wave GEMM-like grid.
//
// 1. Sides. For each SM s in turn: L2 is flushed (a 192 MiB read), then only the block that runs on
//    SM s reads the same 512 lines of a buffer, one dependent load at a time (ld.global.cg, so L1 is
//    bypassed), timing each with clock64. Every first touch comes from DRAM; a line whose L2 home is
//    the far partition adds the trip across the fabric. SMs on one side see the same lines slow, so
//    the correlation of two SMs' latency vectors says whether they share a side.
// 2. Dispatch. A grid of 128 blocks with 200 KB of shared memory each (one block an SM, as the
//    128 x 256 GEMM tiles), and the same in clusters of 2, launched three times each: block -> SM.
//
// Build: nvcc -O2 -arch=sm_90 -o l2_sides l2_sides.cu. Run: ./l2_sides > out.txt (a few seconds).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                                 \
  do {                                                                                           \
    cudaError_t e_ = (x);                                                                        \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s failed: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

constexpr int kLines = 512;     // lines timed per SM
constexpr int kStride = 4096;   // bytes between timed lines (spreads them over the address hash)
constexpr int kSmem = 200 * 1024;

__device__ unsigned smid() {
  unsigned r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}

__global__ void flush(const uint4* p, size_t n, unsigned* sink) {
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint4 v = __ldcg(p + i);
    acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
  }
  if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x12345678u) *sink = 1;
}

// Only the block on SM `target` works: lane 0 of it times kLines dependent loads.
__global__ void probe(const char* buf, unsigned target, long long* lat, unsigned* found) {
  extern __shared__ char pad[];
  if (smid() != target || threadIdx.x != 0) return;
  *found = 1;
  unsigned dep = 0; // the loaded values are zeros: each address depends on the load before it
  for (int i = 0; i < kLines; ++i) {
    const char* p = buf + size_t(i) * kStride + dep;
    long long t0, t1;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0) : "r"(dep));
    unsigned v;
    asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p));
    dep += v;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1) : "r"(dep)); // issued once v has arrived
    lat[i] = t1 - t0;
  }
  pad[0] = char(dep);
}

__global__ void where(unsigned* sm) {
  extern __shared__ char pad[];
  if (threadIdx.x == 0) sm[blockIdx.x] = smid();
  pad[threadIdx.x] = 0;
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  std::printf("device %s, %d SMs\n", prop.name, sms);
  CHECK(cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  CHECK(cudaFuncSetAttribute(where, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));

  const size_t flush_bytes = size_t(192) << 20;
  uint4* fbuf;
  char* buf;
  long long* lat;
  unsigned *sink, *found, *sm;
  CHECK(cudaMalloc(&fbuf, flush_bytes));
  CHECK(cudaMemset(fbuf, 1, flush_bytes));
  CHECK(cudaMalloc(&buf, size_t(kLines) * kStride));
  CHECK(cudaMemset(buf, 0, size_t(kLines) * kStride)); // zeros: the dependent offsets stay 0
  CHECK(cudaMalloc(&lat, sizeof(long long) * kLines));
  CHECK(cudaMalloc(&sink, 4));
  CHECK(cudaMalloc(&found, 4));
  CHECK(cudaMalloc(&sm, 4 * 1024));

  // 1. Latency vectors, two rounds per SM (the second checks the first).
  std::vector<std::vector<double>> v(sms, std::vector<double>(kLines, 0.0));
  std::vector<long long> h(kLines);
  for (int round = 0; round < 2; ++round) {
    for (int s = 0; s < sms; ++s) {
      flush<<<sms * 4, 512>>>(fbuf, flush_bytes / 16, sink);
      CHECK(cudaGetLastError());
      CHECK(cudaMemset(found, 0, 4));
      probe<<<sms, 32, kSmem>>>(buf, unsigned(s), lat, found);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      unsigned f = 0;
      CHECK(cudaMemcpy(&f, found, 4, cudaMemcpyDeviceToHost));
      if (!f) {
        std::printf("SM %d: no block ran there\n", s);
        continue;
      }
      CHECK(cudaMemcpy(h.data(), lat, sizeof(long long) * kLines, cudaMemcpyDeviceToHost));
      for (int i = 0; i < kLines; ++i) v[s][i] += double(h[i]) / 2.0;
    }
  }
  // Each SM's vector, centred; correlation with SM 0 and with the SM least like SM 0.
  std::vector<double> mean(sms, 0.0);
  for (int s = 0; s < sms; ++s) {
    for (double x : v[s]) mean[s] += x / kLines;
    for (double& x : v[s]) x -= mean[s];
  }
  auto corr = [&](int a, int b) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < kLines; ++i) ab += v[a][i] * v[b][i], aa += v[a][i] * v[a][i], bb += v[b][i] * v[b][i];
    return ab / std::sqrt(aa * bb + 1e-30);
  };
  int far = 0;
  for (int s = 1; s < sms; ++s)
    if (corr(0, s) < corr(0, far)) far = s;
  std::printf("side test: SM 0 against SM %d (the least alike): %.3f\n", far, corr(0, far));
  std::printf("sm  mean_cycles  corr_sm0  corr_sm%d  side\n", far);
  std::vector<int> side(sms);
  for (int s = 0; s < sms; ++s) {
    const double c0 = corr(s, 0), c1 = corr(s, far);
    side[s] = c0 >= c1 ? 0 : 1;
    std::printf("%3d %10.1f %9.3f %9.3f %5d\n", s, mean[s], c0, c1, side[s]);
  }
  int n0 = 0;
  for (int s = 0; s < sms; ++s) n0 += side[s] == 0;
  std::printf("side 0: %d SMs, side 1: %d SMs\n", n0, sms - n0);

  // 2. Dispatch of a 128-block grid, plain and in clusters of 2.
  std::vector<unsigned> m(128);
  for (int cl = 1; cl <= 2; ++cl) {
    for (int rep = 0; rep < 3; ++rep) {
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(128);
      cfg.blockDim = dim3(128);
      cfg.dynamicSmemBytes = kSmem;
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeClusterDimension;
      attr[0].val.clusterDim.x = cl, attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
      cfg.attrs = attr;
      cfg.numAttrs = 1;
      CHECK(cudaLaunchKernelEx(&cfg, where, sm));
      CHECK(cudaDeviceSynchronize());
      CHECK(cudaMemcpy(m.data(), sm, 4 * 128, cudaMemcpyDeviceToHost));
      std::printf("dispatch cluster %d rep %d (block:sm/side):", cl, rep);
      for (int b = 0; b < 128; ++b) std::printf(" %d:%u/%d", b, m[b], side[m[b]]);
      std::printf("\n");
    }
  }
  return 0;
}
