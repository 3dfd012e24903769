// How fast can any kernel read N bytes, timed the way ktune times kernels (tuner/timing.h: L2
// flushed by a read before every repetition, launch queued behind a delay, median)? The ceiling
// for memory-bound kernels that read much more than they write: a decode GEMM (M = 1..16) is a
// read of B, so "percent of the copy bandwidth" at 32 MB cannot exceed what a pure read of 32 MB
// reaches. For each size the best of a small sweep of read kernels (grid-stride, 16-byte
// ld.global.nc, UNROLL loads in flight a thread, blocks per SM x threads) is reported beside
// cuMemcpyDtoD of 256 MiB (the bench's copy bandwidth) and a copy of the same bytes.
//   read_floor [--sizes-mb 8,16,32,...] [--device N]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/device.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/module.h"
#include "tuner/timing.h"

using namespace ktune;

namespace {

// Sums every 16-byte word of p[0, n) (n a multiple of 16 * UNROLL * threads), UNROLL independent
// loads in flight a thread; stores only if the sum is exactly -1 (never, for the fill used), so
// the loads stay and nothing is written.
constexpr char kSource[] = R"(
template <int UNROLL>
__global__ void read_stream(const uint4* __restrict__ p, unsigned long long n16, float* out) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  float s = 0.f;
  for (; i + (UNROLL - 1) * stride < n16; i += UNROLL * stride) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                   : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w) : "l"(p + i + u * stride));
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) s += __uint_as_float(v[u].x ^ v[u].y ^ v[u].z ^ v[u].w);
  }
  for (; i < n16; i += stride) {
    const uint4 v = p[i];
    s += __uint_as_float(v.x ^ v.y ^ v.z ^ v.w);
  }
  if (s == -1.f) *out = s;
}
)";

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"Best pure-read bandwidth per size, timed as ktune times kernels"};
  std::vector<int> sizes_mb{4, 8, 16, 32, 64, 128, 256, 512};
  int ordinal = 0;
  app.add_option("--sizes-mb", sizes_mb, "Sizes to read, in MiB")->delimiter(',');
  app.add_option("--device", ordinal, "GPU ordinal");
  CLI11_PARSE(app, argc, argv);
  try {
    const DeviceInfo d = device_by_ordinal(ordinal);
    CudaContext ctx(d.ordinal);
    Compiler compiler;
    const std::vector<int> unrolls{1, 2, 4, 8};
    CompileRequest r;
    r.source = kSource, r.source_name = "read_floor.cu", r.arch = d.arch, r.context = "read_floor";
    for (int u : unrolls) r.name_expressions.push_back("read_stream<" + std::to_string(u) + ">");
    const auto k = compiler.compile(r);
    Module m(k->cubin, k->lowered_names, "read_floor");
    Timer timer(d.l2_bytes);
    TimingOptions to;
    const size_t max_bytes = size_t(*std::max_element(sizes_mb.begin(), sizes_mb.end())) << 20;
    DeviceBuffer buf(max_bytes, "read_floor buffer"), out(16, "read_floor out");
    check_cu(driver().cuMemsetD32Async(buf.ptr(), 0x3f800000u, buf.bytes() / 4, nullptr), "cuMemsetD32Async", "read_floor");
    const double copy = timer.copy_tb_s(size_t(256) << 20, to); // as ktune bench measures it
    std::printf("%s (%s), %d SMs; copy (cuMemcpyDtoD 256 MiB, read + written): %.3f TB/s\n", d.name.c_str(), d.arch.c_str(),
                d.sm_count, copy);
    std::printf("%8s %9s %9s %8s %8s %10s  %s\n", "MiB", "read us", "TB/s", "%copy", "%same", "same-copy", "best kernel (of the sweep)");
    for (int mb : sizes_mb) {
      const size_t bytes = size_t(mb) << 20;
      double best = 1e30;
      std::string best_what;
      for (size_t ui = 0; ui < unrolls.size(); ++ui)
        for (int threads : {256, 512, 1024})
          for (int per_sm : {1, 2, 4, 8}) {
            if (threads * per_sm > 2048) continue;
            const unsigned grid[3] = {unsigned(d.sm_count * per_sm), 1, 1}, block[3] = {unsigned(threads), 1, 1};
            CUdeviceptr p = buf.ptr();
            unsigned long long n16 = bytes / 16;
            CUdeviceptr o = out.ptr();
            void* params[] = {&p, &n16, &o};
            const double ms = timer.time([&](CUstream s) { m.launch(ui, grid, block, 0, s, params); }, nullptr, to).median_ms;
            if (ms < best) {
              best = ms;
              best_what = "unroll " + std::to_string(unrolls[ui]) + ", " + std::to_string(per_sm) + " x " +
                          std::to_string(threads) + " threads a SM";
            }
          }
      check_cu(driver().cuCtxSynchronize(), "cuCtxSynchronize", "read_floor");
      const double tb_s = double(bytes) / (best * 1e-3) / 1e12, same = timer.copy_tb_s(bytes / 2, to);
      std::printf("%8d %9.2f %9.3f %7.1f%% %7.1f%% %10.3f  %s\n", mb, best * 1e3, tb_s, 100 * tb_s / copy, 100 * tb_s / same, same,
                  best_what.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "read_floor: %s\n", e.what());
    return 1;
  }
  return 0;
}
