// The runtime's cuBLAS serving path (runtime/cublas.h, Cublas::serve: a cuBLASLt plan kept per
// problem) beside the tuner's baseline call (Cublas::gemm: cublasGemmEx / cublasSgemm, heuristic
// every call), shape by shape over suites, in f32, bf16 and f16, on one GPU in one process:
//   gpu us     GPU time a call: median of 7 batches of back-to-back calls (about 2 ms a batch),
//              timed with CUDA events after warm-up; the ratio is GemmEx / Lt (>= 1: Lt no slower)
//   host us    host time to enqueue one call: 200 calls (fewer than the launch queue holds, so
//              enqueueing never waits for the GPU) timed up to their return, median of 7 rounds
//   diff       ||C_Lt - C_GemmEx||_F / ||C_GemmEx||_F on random inputs in [-1, 1]
// The runtime serves cuBLAS through the plan only because this shows it no slower on the GPU
// and cheaper on the host; docs/PERFORMANCE.md has the figures.
//   ./build/bench/cublas_paths [--suite configs/suites/table.json ...] [--dtypes f32,bf16,f16]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "ktune/device.h"
#include "ktune/error.h"
#include "ktune/gemm_problem.h"
#include "runtime/cublas.h"

using Clock = std::chrono::steady_clock;

#define CHECK(x)                                                                                        \
  do {                                                                                                  \
    const cudaError_t e_ = (x);                                                                         \
    if (e_ != cudaSuccess) {                                                                            \
      std::fprintf(stderr, "%s failed: %s (%s:%d)\n", #x, cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                                     \
    }                                                                                                   \
  } while (0)

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double gpu_us(F&& f) {
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; ++i) f();
  CHECK(cudaEventRecord(e0));
  f();
  CHECK(cudaEventRecord(e1));
  CHECK(cudaEventSynchronize(e1));
  float one_ms = 0;
  CHECK(cudaEventElapsedTime(&one_ms, e0, e1));
  const int batch = std::clamp(int(2.0 / std::max(one_ms, 1e-3f)), 1, 200);
  std::vector<double> r;
  for (int round = 0; round < 7; ++round) {
    f(); // keeps the GPU busy while the timed calls are queued
    CHECK(cudaEventRecord(e0));
    for (int i = 0; i < batch; ++i) f();
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    r.push_back(ms * 1000.0 / batch);
  }
  CHECK(cudaEventDestroy(e0));
  CHECK(cudaEventDestroy(e1));
  return median(r);
}

template <class F>
double host_us(F&& f) {
  std::vector<double> r;
  for (int round = 0; round < 7; ++round) {
    CHECK(cudaDeviceSynchronize());
    const auto t0 = Clock::now();
    for (int i = 0; i < 200; ++i) f();
    r.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 200);
  }
  CHECK(cudaDeviceSynchronize());
  return median(r);
}

// Random values in [-1, 1] as the dtype's bits.
std::vector<char> random_bits(size_t n, ktune::DType d, std::mt19937& g) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int eb = ktune::element_bytes(d);
  std::vector<char> out(n * eb);
  for (size_t i = 0; i < n; ++i) {
    float f = u(g);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    if (d == ktune::DType::f32) {
      std::memcpy(&out[i * 4], &b, 4);
    } else if (d == ktune::DType::bf16) {
      const uint16_t h = uint16_t(b >> 16);
      std::memcpy(&out[i * 2], &h, 2);
    } else { // f16: values in [-1, 1], normal or zero after truncation of the mantissa
      const int e = int((b >> 23) & 0xff) - 127;
      uint16_t h = uint16_t((b >> 16) & 0x8000);
      if (e >= -14) h |= uint16_t(((e + 15) << 10) | ((b >> 13) & 0x3ff));
      std::memcpy(&out[i * 2], &h, 2);
    }
  }
  return out;
}

double to_double(const char* p, ktune::DType d) {
  if (d == ktune::DType::f32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  if (d == ktune::DType::bf16) {
    const uint32_t b = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double v = e == 0 ? std::ldexp(double(m), -24) : std::ldexp(1.0 + m / 1024.0, e - 15);
  return (h & 0x8000) ? -v : v;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> suites;
  std::string dtypes = "f32,bf16,f16";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--suite" && i + 1 < argc) suites.push_back(argv[++i]);
    else if (a == "--dtypes" && i + 1 < argc) dtypes = argv[++i];
    else {
      std::fprintf(stderr, "usage: cublas_paths [--suite FILE]... [--dtypes f32,bf16,f16]\n");
      return 2;
    }
  }
  if (suites.empty()) suites = {"configs/suites/table.json"};
  try {
    std::string why;
    const auto devs = ktune::list_devices(&why);
    if (devs.empty()) {
      std::fprintf(stderr, "cublas_paths: no GPU: %s\n", why.c_str());
      return 1;
    }
    CHECK(cudaSetDevice(0));
    CHECK(cudaFree(nullptr));
    ktune::Cublas cublas;
    void* ws = nullptr;
    CHECK(cudaMalloc(&ws, ktune::Cublas::kServeWorkspaceBytes));
    std::mt19937 g(7);
    std::printf("%s; cublasGemmEx / Sgemm (the tuner's baseline) beside the runtime's cuBLASLt plan\n", devs[0].name.c_str());
    std::printf("%-34s %10s %10s %7s %10s %10s %9s\n", "problem", "GemmEx us", "Lt us", "ratio", "GemmEx hst", "Lt host", "diff");
    std::vector<double> ratios;
    double worst = 1e9;
    for (const auto& file : suites) {
      std::ifstream in(file);
      if (!in) throw ktune::Error("cannot open suite " + file);
      const auto suite = nlohmann::json::parse(in);
      for (size_t di = 0; di < dtypes.size();) {
        const size_t comma = dtypes.find(',', di);
        const std::string dn = dtypes.substr(di, comma == std::string::npos ? std::string::npos : comma - di);
        di = comma == std::string::npos ? dtypes.size() : comma + 1;
        const ktune::DType d = ktune::parse_dtype(dn);
        for (const auto& q : suite.at("problems")) {
          ktune::GemmProblem p = ktune::GemmProblem::make(q.at("m"), q.at("n"), q.at("k"), q.value("layout", "NN"), d);
          const int eb = ktune::element_bytes(d);
          const size_t na = size_t(p.m) * p.k, nb = size_t(p.k) * p.n, nc = size_t(p.m) * p.n;
          void *A, *B, *C0, *C1;
          CHECK(cudaMalloc(&A, na * eb));
          CHECK(cudaMalloc(&B, nb * eb));
          CHECK(cudaMalloc(&C0, nc * eb));
          CHECK(cudaMalloc(&C1, nc * eb));
          CHECK(cudaMemcpy(A, random_bits(na, d, g).data(), na * eb, cudaMemcpyHostToDevice));
          CHECK(cudaMemcpy(B, random_bits(nb, d, g).data(), nb * eb, cudaMemcpyHostToDevice));
          KtuneGemmArgs a{};
          a.A = static_cast<const float*>(A), a.B = static_cast<const float*>(B);
          a.M = p.m, a.N = p.n, a.K = p.k, a.lda = p.eff_lda(), a.ldb = p.eff_ldb(), a.ldc = p.eff_ldc();
          a.alpha = 1.0f, a.beta = 0.0f;
          KtuneGemmArgs a0 = a, a1 = a;
          a0.C = static_cast<float*>(C0), a1.C = static_cast<float*>(C1);
          auto ex = [&] { cublas.gemm(p, a0, nullptr); };
          auto lt = [&] { cublas.serve(p, a1, nullptr, ws); };
          ex(), lt();
          CHECK(cudaDeviceSynchronize());
          std::vector<char> h0(nc * eb), h1(nc * eb);
          CHECK(cudaMemcpy(h0.data(), C0, nc * eb, cudaMemcpyDeviceToHost));
          CHECK(cudaMemcpy(h1.data(), C1, nc * eb, cudaMemcpyDeviceToHost));
          double num = 0, den = 0;
          for (size_t i = 0; i < nc; ++i) {
            const double x0 = to_double(&h0[i * eb], d), x1 = to_double(&h1[i * eb], d);
            num += (x1 - x0) * (x1 - x0), den += x0 * x0;
          }
          const double ex_gpu = gpu_us(ex), lt_gpu = gpu_us(lt), ex_host = host_us(ex), lt_host = host_us(lt);
          const double ratio = ex_gpu / lt_gpu;
          ratios.push_back(ratio);
          worst = std::min(worst, ratio);
          std::printf("%-34s %10.2f %10.2f %7.3f %10.2f %10.2f %9.2e\n", p.key().c_str(), ex_gpu, lt_gpu, ratio, ex_host, lt_host,
                      den > 0 ? std::sqrt(num / den) : std::sqrt(num));
          std::fflush(stdout);
          for (void* b : {A, B, C0, C1}) CHECK(cudaFree(b));
        }
      }
    }
    double lg = 0;
    for (double r : ratios) lg += std::log(r);
    std::printf("GemmEx / Lt GPU time: geometric mean %.3f over %zu problems, lowest %.3f\n", std::exp(lg / ratios.size()),
                ratios.size(), worst);
    CHECK(cudaFree(ws));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cublas_paths: %s\n", e.what());
    return 1;
  }
  return 0;
}
