// NVRTC front end: template source + instantiations + arch -> cubin, with an in-memory cache and
// a thread pool. A cubin does not depend on M, N, K, so one compile serves every problem a
// config is valid for.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ktune/config.h"
#include "ktune/family.h"
#include "ktune/problem.h"

namespace ktune {

struct CompileRequest {
  std::string source;      // the template file's text
  std::string source_name; // for messages and the NVRTC program name, e.g. "gemm/gemm_simt.cu"
  std::vector<std::string> name_expressions;
  std::string arch; // sm_75 to sm_121, an "a" form for arch-specific code (sm_90a, sm_100a)
  std::vector<std::string> options; // beyond the defaults (-std=c++17, -arch, -lineinfo)
  // In-memory headers (name, text) beside the embedded ones: a user kernel's standard headers
  // (core/nvrtc_std.h). NVRTC finds them before any include path.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string context; // "family gemm_simt config {...} problem ..." for error messages
  // Macros the options set as a project's build sets them, whatever the config (a user's kernel:
  // its spec's constant defines and its options' -D): a source that #defines one again takes its
  // own, as nvcc does with a warning (HOOMD-blue's bundled HIP defines __HIP_PLATFORM_NVCC__,
  // which its CMake passes too). The others carry a config's value, and a redefinition of one is
  // refused. Not in the cache key: the cubin is the same either way.
  std::set<std::string> build_macros;

  // Everything that changes the cubin: source, headers, instantiations, options, arch, NVRTC.
  std::string cache_key() const;
};

struct CompiledKernel {
  std::vector<char> cubin;
  std::string log;
  std::vector<std::string> lowered_names; // same order as name_expressions
  double compile_seconds = 0; // 0 when served from the cache
  bool from_cache = false;
  std::string cache_key;
};

// The request that compiles config c of family f for problem p (its layout picks the
// instantiation) on arch. Throws UsageError when c is not a valid point of f for p on arch.
CompileRequest compile_request(const Family& f, const Config& c, const Problem& p, const std::string& arch);

// Hash of a template source together with every embedded header it may include: two results
// with the same template hash came from the same kernel code.
std::string template_hash(const std::string& source);

class ThreadPool;

// Thread-safe. compile() blocks; compile_async() queues on the pool (threads = 0: all cores).
class Compiler {
 public:
  explicit Compiler(unsigned threads = 0);
  ~Compiler();
  Compiler(const Compiler&) = delete;
  Compiler& operator=(const Compiler&) = delete;

  // Throws CompileError (with the NVRTC log and req.context) when NVRTC rejects the source, Error
  // for any other NVRTC failure.
  std::shared_ptr<const CompiledKernel> compile(const CompileRequest& req);
  // A flag its caller raises where it will wait for the compile no longer (a tune's search whose
  // time ran out with compiles queued): one not started by then is skipped (its future holds an
  // Error), so the pool's threads go to compiles someone waits for. One running finishes.
  using Cancel = std::shared_ptr<std::atomic<bool>>;
  std::future<std::shared_ptr<const CompiledKernel>> compile_async(CompileRequest req, Cancel cancel = nullptr);

  unsigned threads() const;
  unsigned running() const; // compiles on the pool now (a queued one is not counted)
  // Drops the compiles queued and not started: their futures hold a std::future_error
  // (broken_promise). For a caller that will wait for none of them.
  void drop_queued();
  size_t cache_hits() const;

  // Where a compile runs: NVRTC in this process (the default), or a function that compiles
  // elsewhere (the tuner's CompileProcesses) and throws as compile() does. The cache and the
  // thread pool stay in front of it. Set before the first compile.
  using Backend = std::function<std::shared_ptr<CompiledKernel>(const CompileRequest&)>;
  void set_backend(Backend backend) { backend_ = std::move(backend); }
  size_t cache_size() const;

  static std::string nvrtc_version(); // "13.0"

 private:
  std::shared_ptr<const CompiledKernel> compile_uncached(const CompileRequest& req, const std::string& key);

  Backend backend_;
  std::unique_ptr<ThreadPool> pool_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const CompiledKernel>> cache_;
  size_t hits_ = 0;
};

} // namespace ktune
