// ktune in an application: ask which kernel ktune would run for a shape, run it with
// ktune::gemm, and check the result against cuBLAS. Needs a GPU.
//   ./build/examples/gemm_example [M N K]
// The default, 24 x 4096 x 4096 (a decode-like skinny GEMM), is near a shape of the shipped
// sm_90 table where ktune's kernel beat cuBLAS, so a ktune kernel runs.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "ktune/runtime.h"
#include "ktune/gemm_problem.h"

#define CHECK_CUDA(x)                                                                            \
  do {                                                                                           \
    cudaError_t e_ = (x);                                                                        \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s failed: %s (%s:%d)\n", #x, cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)
#define CHECK_CUBLAS(x)                                                                          \
  do {                                                                                           \
    cublasStatus_t s_ = (x);                                                                     \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                           \
      std::fprintf(stderr, "%s failed: %s\n", #x, cublasGetStatusString(s_));                    \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

int main(int argc, char** argv) {
  const int M = argc > 3 ? std::atoi(argv[1]) : 24, N = argc > 3 ? std::atoi(argv[2]) : 4096,
            K = argc > 3 ? std::atoi(argv[3]) : 4096;
  try {
    ktune::Runtime rt; // the default database if present, then the tables shipped with ktune
    const auto problem = ktune::GemmProblem::parse(std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K));
    const ktune::Selection sel = rt.best_config(problem);
    std::printf("%s on %s: %s config from %s\n  %s %s\n", problem.key().c_str(), rt.arch().c_str(),
                ktune::to_string(sel.provenance), sel.source.c_str(), sel.family.c_str(), sel.config.to_json().c_str());

    std::vector<float> hA(size_t(M) * K), hB(size_t(K) * N);
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (auto& x : hA) x = dist(rng);
    for (auto& x : hB) x = dist(rng);
    float *A, *B, *C, *Cref;
    CHECK_CUDA(cudaMalloc(&A, hA.size() * 4));
    CHECK_CUDA(cudaMalloc(&B, hB.size() * 4));
    CHECK_CUDA(cudaMalloc(&C, size_t(M) * N * 4));
    CHECK_CUDA(cudaMalloc(&Cref, size_t(M) * N * 4));
    CHECK_CUDA(cudaMemcpy(A, hA.data(), hA.size() * 4, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(B, hB.data(), hB.size() * 4, cudaMemcpyHostToDevice));

    rt.gemm(problem, A, B, C, 1.0f, 0.0f, nullptr);

    cublasHandle_t h;
    CHECK_CUBLAS(cublasCreate(&h));
    const float one = 1, zero = 0;
    // Row-major C = A B is column-major C^T = B^T A^T.
    CHECK_CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, Cref, N));
    CHECK_CUDA(cudaDeviceSynchronize());
    std::vector<float> got(size_t(M) * N), ref(size_t(M) * N);
    CHECK_CUDA(cudaMemcpy(got.data(), C, got.size() * 4, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(ref.data(), Cref, ref.size() * 4, cudaMemcpyDeviceToHost));
    double num = 0, den = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      num += double(got[i] - ref[i]) * (got[i] - ref[i]);
      den += double(ref[i]) * ref[i];
    }
    const double rel = std::sqrt(num / den);
    std::printf("ktune::gemm vs cuBLAS: relative Frobenius difference %.2e -> %s\n", rel, rel < 1e-5 ? "OK" : "MISMATCH");
    cublasDestroy(h);
    cudaFree(A), cudaFree(B), cudaFree(C), cudaFree(Cref);
    return rel < 1e-5 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
