// The CUDA context, the modules a runtime launches (its own cache, else the store's binaries or
// the cubin cache, else NVRTC, started asynchronously so that first use compiles its candidates
// side by side), the per-stream workspaces and cuBLAS.
#include <cstdio>
#include <future>

#include "jit/load_or_compile.h"
#include "ktune/error.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/runtime_impl.h"

namespace ktune {

// The device's primary context, created once and made current on the calling thread when it
// has none (an application thread that never touched CUDA may call gemm()).
void Runtime::Impl::ensure_context() {
  if (device.ordinal < 0)
    throw Error("ktune::Runtime::gemm: this runtime was made for arch " + arch + " without a GPU");
  {
    std::lock_guard<std::mutex> lk(gpu_mu);
    if (!ctx) ctx = std::make_unique<CudaContext>(device.ordinal);
  }
  make_context_current();
}

void Runtime::Impl::make_context_current() {
  CUcontext cur = nullptr;
  check_cu(driver().cuCtxGetCurrent(&cur), "cuCtxGetCurrent", "ktune::Runtime");
  if (!cur) ctx->make_current();
}

const Prepared* Runtime::Impl::find_prepared(const std::string& key) {
  std::lock_guard<std::mutex> lk(mod_mu);
  const auto it = prepared.find(key);
  return it == prepared.end() ? nullptr : it->second.get();
}

Compiler& Runtime::Impl::the_compiler() {
  std::lock_guard<std::mutex> lk(gpu_mu);
  // A few threads: first use of an untuned problem compiles its candidates side by side.
  if (!compiler) compiler = std::make_unique<Compiler>(unsigned(kMaxCandidates + kMaxNeighbours));
  return *compiler;
}

// The cubin cache, opened (created) on the first call; null when there is none or it failed.
// Call with store_mu held.
Store* Runtime::Impl::cubin_cache() {
  if (!cubins_opened) {
    cubins_opened = true;
    if (!opts.cubin_cache.empty()) {
      try {
        cubins = std::make_unique<Store>(opts.cubin_cache);
        // A put runs inside a gemm() call: it does not wait out another process's long write
        // (ktune cache --clear's VACUUM) but fails, which closes the cache for this runtime.
        cubins->set_busy_timeout(1000);
        // Its writes (a kept cubin, a load's use stamp) run inside gemm(): no flush to disk
        // each (a lost stamp or cubin after a power cut only costs a compile).
        cubins->set_durable(false);
      } catch (const Error& e) {
        std::fprintf(stderr, "ktune: cubin cache %s not used (%s): kernels compile in every process\n",
                     opts.cubin_cache.c_str(), e.what());
      }
    }
  }
  return cubins.get();
}

// A write to the cache failed: reported once, and the cache is closed for this runtime.
void Runtime::Impl::close_cubin_cache(const Error& e) {
  std::fprintf(stderr, "ktune: cubin cache %s not written (%s): no longer used by this runtime\n",
               opts.cubin_cache.c_str(), e.what());
  cubins.reset();
}

// Keeps a cubin NVRTC made for later processes (the cache's first failure closes it).
void Runtime::Impl::keep_cubin(const CompiledKernel& k) {
  std::lock_guard<std::mutex> lk(store_mu);
  stamp_loaded();
  Store* cache = cubin_cache();
  if (!cache) return;
  try {
    cache->put_binary(k.cache_key, arch, k.cubin, k.lowered_names);
    // Past the limit, the least recently used cubins go, down to 3/4 of it: a trim every
    // quarter of the limit's worth of new kernels, not at every put.
    if (opts.cubin_cache_max_mb > 0) {
      const int64_t limit = opts.cubin_cache_max_mb * 1000000;
      cache->trim_binaries(limit, limit / 4 * 3);
    }
  } catch (const Error& e) {
    close_cubin_cache(e);
  }
}

// A cubin loaded from the cache is stamped as used, so that trims keep it over older ones (an
// entry of the tuner's store is not in the cache: nothing changes). The stamps wait for the next
// write (a kept cubin) or the Runtime's end and go in one transaction: a write each on the load
// path cost ~0.4 ms a kernel (bf16 first use from the cache, 9 kernels: 38-39 ms against 35;
// H100 machine, docs/PERFORMANCE.md "Runtime cost"). Call with store_mu held.
void Runtime::Impl::stamp_loaded() {
  Store* cache = cubin_cache();
  if (!cache || unstamped.empty()) return;
  try {
    cache->touch_binaries(unstamped);
  } catch (const Error& e) {
    close_cubin_cache(e);
  }
  unstamped.clear();
}

void Runtime::Impl::loaded_from_cache(const std::string& key) {
  std::lock_guard<std::mutex> lk(store_mu);
  unstamped.push_back(key);
}

Runtime::Impl::~Impl() {
  std::lock_guard<std::mutex> lk(store_mu);
  stamp_loaded();
}

// The loaded module of config c of family f for p: the runtime's cache, else the store's
// binaries or the cubin cache's, else NVRTC (started asynchronously: call get() on the result;
// what NVRTC made goes into the cubin cache). A cached cubin the driver refuses (a damaged
// file) is compiled again.
std::function<std::shared_ptr<Module>()> Runtime::Impl::module_async(const Family& f, const Config& c,
                                                                     const Problem& p) {
  const CompileRequest req = compile_request(f, c, p, arch); // validates c for p
  const std::string ck = req.cache_key();
  {
    std::lock_guard<std::mutex> lk(mod_mu);
    if (auto it = modules.find(ck); it != modules.end()) return [mod = it->second] { return mod; };
  }
  auto fut = [&] {
    std::lock_guard<std::mutex> lk(store_mu);
    return std::make_shared<std::future<std::shared_ptr<const CompiledKernel>>>(
        load_or_compile({store.get(), cubin_cache()}, the_compiler(), req));
  }();
  return [this, fut, ck, req] {
    auto k = fut->get();
    std::shared_ptr<Module> mod;
    try {
      mod = std::make_shared<Module>(k->cubin, k->lowered_names, req.context);
    } catch (const Error& e) {
      if (!k->from_cache) throw;
      std::fprintf(stderr, "ktune: a cached cubin of %s did not load (%s): compiling it again\n", req.context.c_str(),
                   e.what());
      k = the_compiler().compile(req);
      mod = std::make_shared<Module>(k->cubin, k->lowered_names, req.context);
    }
    if (k->from_cache)
      loaded_from_cache(ck);
    else
      keep_cubin(*k);
    std::lock_guard<std::mutex> lk(mod_mu);
    return modules.emplace(ck, mod).first->second;
  };
}

std::shared_ptr<DeviceBuffer> Runtime::Impl::workspace(CUstream stream, size_t bytes, const std::string& problem_key) {
  // One workspace per stream: launches on one stream are ordered, so they may share it.
  std::lock_guard<std::mutex> lk(ws_mu);
  auto& slot = workspaces[stream];
  if (!slot || slot->bytes() < bytes)
    slot = std::make_shared<DeviceBuffer>(bytes, "workspace (split-K sums, packed operands, temporaries) for " + problem_key);
  return slot;
}

// cuBLAS as the runtime serves and times it: through a kept cuBLASLt plan (Cublas::serve), with
// the stream's workspace.
void Runtime::Impl::run_cublas(const GemmProblem& p, const KtuneGemmArgs& a, CUstream stream) {
  const std::shared_ptr<DeviceBuffer> ws = workspace(stream, Cublas::kServeWorkspaceBytes, p);
  std::lock_guard<std::mutex> lk(gpu_mu);
  if (!cublas) cublas = std::make_unique<Cublas>();
  cublas->serve(p, a, stream, ws->as<void>());
}

// C = beta * C (BLAS's quick returns): cublasGemmEx / Sgemm with alpha = 0, no plan kept for it.
void Runtime::Impl::scale_with_cublas(const GemmProblem& p, const KtuneGemmArgs& a, CUstream stream) {
  std::lock_guard<std::mutex> lk(gpu_mu);
  if (!cublas) cublas = std::make_unique<Cublas>();
  cublas->gemm(p, a, stream);
}

} // namespace ktune
