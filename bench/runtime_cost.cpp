// What ktune's runtime costs an application, measured on the GPU (docs/PERFORMANCE.md):
//  1. warm best_config latency (exact and nearest problems, selection cached)
//  2. launch overhead of ktune::gemm (running a ktune kernel) against cublasSgemm on 64x64x64
//  3. the first ktune::gemm of a shape: with a JIT compile, and with the cubin from the store;
//     and of a shape nobody tuned, whose candidates are compiled and timed against cuBLAS (FP32; bf16:
//     two shapes in one Runtime, then the second shape in a new Runtime without and with the
//     cubin cache the first one filled)
// Needs a GPU. Prints a table; --json FILE writes the same figures.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "db/store.h"
#include "db/table.h"
#include "ktune/compiler.h"
#include "ktune/device.h"
#include "ktune/family.h"
#include "ktune/runtime.h"
#include "ktune/gemm_problem.h"

using Clock = std::chrono::steady_clock;

#define CHECK(x)                                                                   \
  do {                                                                             \
    if ((x) != 0) {                                                                \
      std::fprintf(stderr, "%s failed (%s:%d)\n", #x, __FILE__, __LINE__);         \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

namespace {

double us_since(Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Per-call host time of `calls` back-to-back launches, then a synchronize; median of `rounds`.
template <class F>
double per_call_us(F&& launch, int calls, int rounds) {
  std::vector<double> r;
  for (int i = 0; i < rounds; ++i) {
    const auto t0 = Clock::now();
    for (int c = 0; c < calls; ++c) launch();
    CHECK(cudaDeviceSynchronize());
    r.push_back(us_since(t0) / calls);
  }
  return median(r);
}

// Host time to enqueue one call, the launch overhead proper: `calls` launches are timed up to
// their return (no synchronize inside the timed region; fewer than the launch queue holds, so
// enqueueing never waits for the GPU), then drained. Median of `rounds`.
template <class F>
double enqueue_us(F&& launch, int calls, int rounds) {
  std::vector<double> r;
  for (int i = 0; i < rounds; ++i) {
    CHECK(cudaDeviceSynchronize());
    const auto t0 = Clock::now();
    for (int c = 0; c < calls; ++c) launch();
    r.push_back(us_since(t0) / calls);
    CHECK(cudaDeviceSynchronize());
  }
  return median(r);
}

// An entry of a table of the bench's own: `family`'s config tuned for p on this device and recorded
// faster than cuBLAS (1 ms against 2), so that the runtime runs that kernel there, whatever cuBLAS
// does, with no first-use measurement.
struct OwnEntry {
  ktune::GemmProblem p;
  std::string family, config_json;
};

// Writes such a table to `file` in the temporary directory and returns its path.
std::string write_own_table(const ktune::DeviceInfo& d, const std::string& file, const std::vector<OwnEntry>& entries) {
  const std::string path = (std::filesystem::temp_directory_path() / file).string();
  ktune::Table t;
  t.device_name = d.name, t.arch = d.arch, t.sm_count = d.sm_count;
  for (const OwnEntry& o : entries) {
    ktune::TableEntry e;
    e.problem = o.p, e.arch = d.arch, e.family = o.family, e.config_json = o.config_json;
    e.time_ms = 1, e.tflops = ktune::tflops(o.p, 1), e.cublas_ms = 2, e.template_hash = "runtime_cost";
    t.entries.push_back(e);
  }
  std::ofstream(path) << ktune::table_to_json(t);
  return path;
}

} // namespace

int main(int argc, char** argv) {
  std::string json_out;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--json") json_out = argv[i + 1];
  try {
    std::string why;
    const auto devs = ktune::list_devices(&why);
    if (devs.empty()) {
      std::fprintf(stderr, "runtime_cost: no GPU: %s\n", why.c_str());
      return 1;
    }
    CHECK(cudaSetDevice(0));
    CHECK(cudaFree(nullptr)); // create the primary context up front
    nlohmann::ordered_json out = {{"device", devs[0].name}, {"arch", devs[0].arch}};

    // 1. best_config latency, warm.
    ktune::RuntimeOptions ro;
    ro.db_path = "";
    ro.cubin_cache = ""; // every first call below compiles, unless a row says otherwise
    ktune::Runtime rt(ro);
    const auto exact = ktune::GemmProblem::parse("4096x4096x4096"), near = ktune::GemmProblem::parse("4000x4000x4000");
    for (const auto* p : {&exact, &near}) {
      rt.best_config(*p);
      const int n = 1000000;
      std::vector<double> r;
      for (int round = 0; round < 5; ++round) {
        const auto t0 = Clock::now();
        size_t sink = 0;
        for (int i = 0; i < n; ++i) sink += rt.best_config(*p).config.size();
        r.push_back(us_since(t0) * 1000.0 / n);
        if (sink == 0) std::printf("?");
      }
      out[p == &exact ? "best_config_exact_ns" : "best_config_nearest_ns"] = median(r);
      out[p == &exact ? "provenance_exact" : "provenance_nearest"] = ktune::to_string(rt.best_config(*p).provenance);
    }

    // 2. Launch overhead at 64x64x64.
    const int S = 64;
    float *A, *B, *C;
    CHECK(cudaMalloc(&A, S * S * 4));
    CHECK(cudaMalloc(&B, S * S * 4));
    CHECK(cudaMalloc(&C, S * S * 4));
    CHECK(cudaMemset(A, 0, S * S * 4));
    CHECK(cudaMemset(B, 0, S * S * 4));
    const auto small = ktune::GemmProblem::parse("64x64x64");
    cublasHandle_t h;
    CHECK(cublasCreate(&h));
    const float one = 1, zero = 0;
    // A table of its own (write_own_table) in which gemm_simt's default config is tuned for 64x64x64
    // and for the first-call shape below: the runtime runs a ktune kernel there. That is the launch
    // path whose overhead is measured here.
    const auto first = ktune::GemmProblem::parse("3000x2000x1000");
    const ktune::Family simt = ktune::find_family("gemm_simt");
    const std::string own_table =
        write_own_table(devs[0], "ktune-bench-own-table.json",
                        {{small, simt.name(), simt.default_config(small, devs[0]).to_json()},
                         {first, simt.name(), simt.default_config(first, devs[0]).to_json()}});
    ktune::RuntimeOptions ko;
    ko.db_path = "";
    ko.cubin_cache = "";
    ko.shipped_tables = false;
    ko.tables = {own_table};
    ktune::Runtime rt_kernel(ko);
    auto kt = [&] { rt_kernel.gemm(small, A, B, C, 1.0f, 0.0f, nullptr); };
    auto cb = [&] { CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, S, S, S, &one, B, S, A, S, &zero, C, S)); };
    for (int i = 0; i < 100; ++i) kt(), cb(); // warm both
    CHECK(cudaDeviceSynchronize());
    const double kt_us = per_call_us(kt, 10000, 7), cb_us = per_call_us(cb, 10000, 7);
    const double kt_enq = enqueue_us(kt, 256, 21), cb_enq = enqueue_us(cb, 256, 21);
    out["gemm64_ktune_us_per_call"] = kt_us;
    out["gemm64_cublas_us_per_call"] = cb_us;
    out["gemm64_ktune_enqueue_us"] = kt_enq;
    out["gemm64_cublas_enqueue_us"] = cb_enq;
    out["gemm64_provenance"] = ktune::to_string(rt_kernel.best_config(small).provenance);

    // 2b. The same for a TMA kernel (sm_90: gemm_wgmma, bf16 256x256x256, maps of A, B and C), whose
    // launch encodes tensor maps: with the same pointers every call (launch_gemm's per-thread map
    // cache answers) and with 32 pointer sets in turn (more maps than the cache keeps, so every
    // launch encodes all three again), beside cublasGemmEx.
    if (devs[0].arch == "sm_90") {
      const auto hp = ktune::GemmProblem::make(256, 256, 256, "NN", ktune::DType::bf16);
      const std::string tma_table = write_own_table(
          devs[0], "ktune-bench-tma-table.json",
          {{hp, "gemm_wgmma",
            R"({"BM":64,"BN":64,"WG":1,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":1,"MC":0,"EPI":1,"PP":0,"SK":0,"SWAP":0,"AR":0})"}});
      ktune::RuntimeOptions to = ko;
      to.tables = {tma_table};
      ktune::Runtime rt_tma(to);
      const size_t bytes = size_t(hp.m) * hp.k * 2;
      std::vector<void*> bufs(96);
      for (auto& b : bufs) {
        CHECK(cudaMalloc(&b, bytes));
        CHECK(cudaMemset(b, 0, bytes));
      }
      int turn = 0;
      auto same = [&] { rt_tma.gemm_ex(hp, bufs[0], bufs[1], bufs[2], 1.0f, 0.0f, nullptr); };
      auto cycling = [&] {
        const size_t s = size_t(turn++ % 32) * 3;
        rt_tma.gemm_ex(hp, bufs[s], bufs[s + 1], bufs[s + 2], 1.0f, 0.0f, nullptr);
      };
      auto cb16 = [&] {
        CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 256, 256, 256, &one, bufs[1], CUDA_R_16BF, 256, bufs[0], CUDA_R_16BF, 256,
                           &zero, bufs[2], CUDA_R_16BF, 256, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      };
      for (int i = 0; i < 100; ++i) same(), cycling(), cb16();
      CHECK(cudaDeviceSynchronize());
      out["tma_bf16_256_enqueue_us_same_pointers"] = enqueue_us(same, 256, 21);
      out["tma_bf16_256_enqueue_us_32_pointer_sets"] = enqueue_us(cycling, 256, 21);
      out["tma_bf16_256_enqueue_us_cublas"] = enqueue_us(cb16, 256, 21);
      const ktune::Selection sel = rt_tma.best_config(hp);
      out["tma_bf16_256_choice"] = std::string(ktune::to_string(sel.provenance)) + " " + sel.family;
      for (auto b : bufs) CHECK(cudaFree(b));
      std::filesystem::remove(tma_table);
    }

    // 3. First call of a shape: JIT compile vs the cubin from the store's binary cache.
    float *A1, *B1, *C1;
    CHECK(cudaMalloc(&A1, size_t(first.m) * first.k * 4));
    CHECK(cudaMalloc(&B1, size_t(first.k) * first.n * 4));
    CHECK(cudaMalloc(&C1, size_t(first.m) * first.n * 4));
    CHECK(cudaMemset(A1, 0, size_t(first.m) * first.k * 4));
    CHECK(cudaMemset(B1, 0, size_t(first.k) * first.n * 4));
    {
      ktune::Runtime fresh(ko); // the own table's config: a kernel that must be compiled
      const auto t0 = Clock::now();
      fresh.gemm(first, A1, B1, C1, 1.0f, 0.0f, nullptr);
      CHECK(cudaDeviceSynchronize());
      out["first_call_jit_ms"] = us_since(t0) / 1000;
    }
    {
      const std::string db = (std::filesystem::temp_directory_path() / "ktune-bench-cache.db").string();
      std::filesystem::remove(db);
      const auto sel = rt_kernel.best_config(first);
      const ktune::Family f = ktune::find_family(sel.family);
      const auto req = ktune::compile_request(f, f.canonical(sel.config), first, devs[0].arch);
      ktune::Compiler comp(1);
      const auto k = comp.compile(req);
      {
        ktune::Store st(db);
        st.put_binary(req.cache_key(), devs[0].arch, k->cubin, k->lowered_names);
      }
      ktune::RuntimeOptions co = ko;
      co.db_path = db;
      ktune::Runtime cached(co);
      const auto t0 = Clock::now();
      cached.gemm(first, A1, B1, C1, 1.0f, 0.0f, nullptr);
      CHECK(cudaDeviceSynchronize());
      out["first_call_cached_cubin_ms"] = us_since(t0) / 1000;
      std::filesystem::remove(db);
    }
    {
      // A shape nobody tuned, with the shipped tables: its candidates are compiled (side by side)
      // and timed against cuBLAS on the first call, which returns once the choice is made.
      const auto untuned = ktune::GemmProblem::parse("2900x1900x1000"); // fits the buffers of `first`
      ktune::Runtime shipped(ro);
      const auto t0 = Clock::now();
      shipped.gemm(untuned, A1, B1, C1, 1.0f, 0.0f, nullptr);
      CHECK(cudaDeviceSynchronize());
      out["first_call_untuned_ms"] = us_since(t0) / 1000;
      const auto sel = shipped.best_config(untuned);
      out["first_call_untuned_candidates"] = sel.candidates.size();
      out["first_call_untuned_choice"] = ktune::to_string(sel.provenance);
      out["first_call_untuned_why"] = sel.why;
    }
    {
      // The same for half-precision shapes nobody tuned: there the runtime times its lenders and
      // the best lender's neighbours (gemm_wgmma's up to nine), each compiled by NVRTC. One
      // Runtime's first calls of two shapes (the first also pays the process's one-time set-up),
      // with a fresh cubin cache that keeps what it compiles; then a new Runtime on the second
      // shape without the cache (it compiles its candidates again, as every new process did) and
      // one with it (it loads them: what a later process pays).
      const auto s1 = ktune::GemmProblem::parse("2900x1900x1000", "NN", ktune::DType::bf16); // fit the buffers of `first`
      const auto s2 = ktune::GemmProblem::parse("1900x2900x1000", "NN", ktune::DType::bf16);
      const std::string cache = (std::filesystem::temp_directory_path() / "ktune-bench-cubins.db").string();
      for (const char* f : {"", "-wal", "-shm"}) std::filesystem::remove(cache + f);
      auto first_call = [&](const std::string& cubins, const ktune::GemmProblem& p, const std::string& name, ktune::Runtime* rt) {
        ktune::RuntimeOptions o = ro;
        o.cubin_cache = cubins;
        std::unique_ptr<ktune::Runtime> own;
        if (!rt) own = std::make_unique<ktune::Runtime>(o), rt = own.get();
        const auto t0 = Clock::now();
        rt->gemm_ex(p, A1, B1, C1, 1.0f, 0.0f, nullptr);
        CHECK(cudaDeviceSynchronize());
        out[name + "_ms"] = us_since(t0) / 1000;
        const auto sel = rt->best_config(p);
        out[name + "_candidates"] = sel.candidates.size();
        out[name + "_why"] = sel.why;
      };
      {
        ktune::RuntimeOptions o = ro;
        o.cubin_cache = cache;
        ktune::Runtime one(o);
        first_call(cache, s1, "bf16_untuned_first_shape", &one);
        first_call(cache, s2, "bf16_untuned_second_shape", &one);
      }
      first_call("", s2, "bf16_untuned_new_runtime_no_cubin_cache", nullptr);
      first_call(cache, s2, "bf16_untuned_new_runtime_cubin_cache", nullptr);
      for (const char* f : {"", "-wal", "-shm"}) std::filesystem::remove(cache + f);
    }
    std::filesystem::remove(own_table);
    std::printf("%-44s %s\n", "device", devs[0].name.c_str());
    std::printf("%-44s %.1f ns (%s)\n", "best_config, warm, exact problem", out["best_config_exact_ns"].get<double>(),
                out["provenance_exact"].get<std::string>().c_str());
    std::printf("%-44s %.1f ns (%s)\n", "best_config, warm, untuned problem", out["best_config_nearest_ns"].get<double>(),
                out["provenance_nearest"].get<std::string>().c_str());
    std::printf("%-44s %.2f us (ktune, %s) vs %.2f us (cuBLAS): %+.2f us\n", "64x64x64 GEMM launch: host time to enqueue",
                kt_enq, out["gemm64_provenance"].get<std::string>().c_str(), cb_enq, kt_enq - cb_enq);
    std::printf("%-44s %.2f us (ktune) vs %.2f us (cuBLAS): %+.2f us\n", "64x64x64 GEMM per call, back to back", kt_us, cb_us,
                kt_us - cb_us);
    if (out.contains("tma_bf16_256_choice"))
      std::printf("%-44s %.2f us (ktune, %s; same pointers), %.2f us (32 pointer sets in turn) vs %.2f us (cuBLAS)\n",
                  "bf16 256^3 TMA kernel: host time to enqueue", out["tma_bf16_256_enqueue_us_same_pointers"].get<double>(),
                  out["tma_bf16_256_choice"].get<std::string>().c_str(), out["tma_bf16_256_enqueue_us_32_pointer_sets"].get<double>(),
                  out["tma_bf16_256_enqueue_us_cublas"].get<double>());
    std::printf("%-44s %.1f ms\n", "first call of a shape, NVRTC compile", out["first_call_jit_ms"].get<double>());
    std::printf("%-44s %.1f ms\n", "first call of a shape, cubin from the store", out["first_call_cached_cubin_ms"].get<double>());
    std::printf("%-44s %.1f ms (%zu candidates measured: %s)\n", "first call of an untuned shape (shipped tables)",
                out["first_call_untuned_ms"].get<double>(), out["first_call_untuned_candidates"].get<size_t>(),
                out["first_call_untuned_why"].get<std::string>().c_str());
    for (const char* which : {"bf16_untuned_first_shape", "bf16_untuned_second_shape", "bf16_untuned_new_runtime_no_cubin_cache",
                              "bf16_untuned_new_runtime_cubin_cache"})
      std::printf("%-44s %.1f ms (%zu candidates: %s)\n", which, out[std::string(which) + "_ms"].get<double>(),
                  out[std::string(which) + "_candidates"].get<size_t>(), out[std::string(which) + "_why"].get<std::string>().c_str());
    if (!json_out.empty()) std::ofstream(json_out) << out.dump(2) << "\n";
    cublasDestroy(h);
    cudaFree(A), cudaFree(B), cudaFree(C), cudaFree(A1), cudaFree(B1), cudaFree(C1);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "runtime_cost: %s\n", e.what());
    return 1;
  }
}
