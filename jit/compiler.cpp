#include "ktune/compiler.h"

#include <algorithm>
#include <functional>

#include <nvrtc.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <memory>

#include "ktune/error.h"
#include "core/embedded.h"
#include "core/host_code.h"
#include "core/nvrtc_std.h"
#include "jit/thread_pool.h"

namespace ktune {
namespace {

void check_nvrtc(nvrtcResult r, const char* call, const std::string& context) {
  if (r != NVRTC_SUCCESS) throw Error(std::string(call) + " failed: " + nvrtcGetErrorString(r) + " (" + context + ")");
}

// NVRTC resolves #include "x" only against the headers handed to it: every embedded header,
// by file name (embed.cmake keeps names unique across op folders by convention: <op>_*.cuh/.h).
struct HeaderSet {
  std::vector<std::string> names, texts;
  std::vector<const char*> name_ptrs, text_ptrs;
  HeaderSet() {
    for (const auto& [name, text] : embedded_headers()) {
      names.push_back(name);
      texts.emplace_back(text);
    }
    for (size_t i = 0; i < names.size(); ++i) {
      name_ptrs.push_back(names[i].c_str());
      text_ptrs.push_back(texts[i].c_str());
    }
  }
};

const HeaderSet& headers() {
  static const HeaderSet h;
  return h;
}

std::vector<std::string> default_options(const std::string& arch) {
  ktune::arch_number(arch); // rejects anything that is not sm_NN[a]
  // -lineinfo costs nothing at run time and lets profilers map SASS back to template lines.
  return {"--gpu-architecture=" + arch, "-std=c++17", "-lineinfo"};
}

// The log's lines (an NVRTC error is its line, then the source line, then a caret under the place).
std::vector<std::string> log_lines(const std::string& log) {
  std::vector<std::string> lines;
  for (size_t a = 0; a <= log.size();) {
    const size_t e = std::min(log.find('\n', a), log.size());
    lines.push_back(log.substr(a, e - a));
    a = e + 1;
  }
  return lines;
}

// Whether an NVRTC log holds "expected an expression" at a designator: the caret under a '.'
// that a '{' or a ',' comes before and a name follows (`{.phase = p}`), which no C++17
// expression spells.
bool designated_initializer_error(const std::string& log) {
  const std::vector<std::string> lines = log_lines(log);
  for (size_t k = 0; k + 2 < lines.size(); ++k) {
    if (lines[k].find("error: expected an expression") == std::string::npos) continue;
    const std::string &code = lines[k + 1], &caret = lines[k + 2];
    const size_t c = caret.find('^');
    if (c == std::string::npos || caret.find_first_not_of(' ') != c || c + 1 >= code.size() || code[c] != '.') continue;
    if (!(std::isalpha(static_cast<unsigned char>(code[c + 1])) || code[c + 1] == '_')) continue;
    const size_t before = c == 0 ? std::string::npos : code.find_last_not_of(" \t", c - 1);
    if (before != std::string::npos && (code[before] == '{' || code[before] == ',')) return true;
  }
  return false;
}

// Whether the log's errors show a source written for C++20: one of C++20's keywords, which C++17
// reads as an undefined name (gsplat's `concept`, a `requires` clause).
bool cxx20_keyword_error(const std::string& log) {
  for (const char* k : {"concept", "requires", "consteval", "constinit", "co_await", "co_yield", "co_return", "char8_t"})
    if (log.find(std::string("error: identifier \"") + k + "\" is undefined") != std::string::npos) return true;
  return false;
}

// Whether every error of the log is NVRTC's "A function without execution space annotations" at a
// lambda (the caret under its parameter list), at least one: NVRTC gives a lambda no execution space where
// the function around it, __host__ __device__, is instantiated for an unevaluated operand (CuTe's
// `compact_major`, `transform(..., [&](auto const& s, auto const& c) {...})`, reached from
// LayoutLeft::Apply's decltype: every file that includes cute/tensor.hpp), where nvcc gives it the
// enclosing function's. Or NVRTC's "The execution space for the lambda closure class members was
// inferred to be __host__" at one: a lambda that is a member function's default argument
// (CUTLASS's sm90 grouped tile scheduler, `CallbackBeforeCommit callback = [] (WorkTileInfo info) {
// return info; }`), where nvcc infers the space of the function it is an argument of.
bool only_lambda_space_errors(const std::string& log) {
  const std::vector<std::string> lines = log_lines(log);
  int lambdas = 0;
  for (size_t k = 0; k < lines.size(); ++k) {
    const std::string& l = lines[k];
    if (l.find(": error") == std::string::npos && l.find("error:") == std::string::npos) continue;
    if ((l.find("A function without execution space annotations") == std::string::npos &&
         l.find("execution space for the lambda closure class members was inferred to be __host__") == std::string::npos) ||
        k + 2 >= lines.size())
      return false;
    // The caret under the lambda's parameter list, after its capture's ']'.
    const std::string& src = lines[k + 1];
    const size_t caret = lines[k + 2].find('^');
    if (caret == std::string::npos || lines[k + 2].find_first_not_of(' ') != caret || caret >= src.size() || src[caret] != '(')
      return false;
    const size_t before = src.find_last_not_of(" \t", caret == 0 ? 0 : caret - 1);
    if (caret == 0 || before == std::string::npos || src[before] != ']') return false;
    ++lambdas;
  }
  return lambdas > 0;
}

// Where the log's first error line starts (NVRTC's "file(n): error: ..." or its own "error: ..."
// where warnings come before it), npos where it has none. ktune's own lines about a compile done
// again ("compiled again as C++20 (-std=c++20): C++17 refused the source (... error: ...)") quote
// the first try's error, not this one's.
size_t first_error_at(const std::string& log) {
  for (size_t at = 0; at < log.size();) {
    const size_t end = std::min(log.find('\n', at), log.size());
    const std::string line = log.substr(at, end - at);
    if (line.rfind("compiled ", 0) == 0) {
      at = end + 1;
      continue;
    }
    if (line.find(": error") != std::string::npos || line.find("error:") != std::string::npos) return at;
    at = end + 1;
  }
  return std::string::npos;
}

} // namespace

std::string template_hash(const std::string& source) {
  std::string all = source;
  const auto& h = headers();
  for (size_t i = 0; i < h.names.size(); ++i) all += "\n//" + h.names[i] + "\n" + h.texts[i];
  return fnv1a_hex(all);
}

std::string CompileRequest::cache_key() const {
  std::string k = template_hash(source) + "|" + arch + "|" + Compiler::nvrtc_version();
  for (const auto& o : options) k += "|" + o;
  if (!headers.empty()) {
    std::string all;
    for (const auto& [name, text] : headers) all += "\n//" + name + "\n" + text;
    k += "|headers " + fnv1a_hex(all);
  }
  for (const auto& n : name_expressions) k += "|" + n;
  return k;
}

CompileRequest compile_request(const Family& f, const Config& c, const Problem& p, const std::string& arch) {
  const std::string context = "family " + f.name() + " config " + c.to_json() + " problem " + p.key() + " arch " + arch;
  const auto why = f.violations(c, p, DeviceInfo::nominal(arch));
  if (!why.empty()) {
    std::string msg = "invalid config: " + context + ":";
    for (const auto& w : why) msg += "\n  - " + w;
    throw UsageError(msg);
  }
  CompileRequest r;
  r.source = f.source();
  r.source_name = f.source_path();
  r.name_expressions = f.kernel_names(c, p);
  r.options = f.compile_options(c, p);
  r.build_macros = f.build_macros();
  r.headers = f.headers();
  // Arch-specific families (wgmma) need the "a" target; it is part of the cache key through r.arch,
  // and the context names the target compiled for.
  r.arch = f.compile_arch(arch);
  r.context = r.arch == arch ? context : context + " (compiled for " + r.arch + ")";
  return r;
}

Compiler::Compiler(unsigned threads) : pool_(std::make_unique<ThreadPool>(threads)) {}
// Compiles may still be running on the workers, and they use cache_ and mu_, which as later
// members would be destroyed before pool_: join the workers first (the pool drops what it has not
// started and waits for the rest), or a Compiler dropped with work queued (a test unwinding on a
// failure, a tune's abandoned compiles) crashes them.
Compiler::~Compiler() { pool_.reset(); }

unsigned Compiler::threads() const { return pool_->size(); }

unsigned Compiler::running() const { return pool_->running(); }

void Compiler::drop_queued() { pool_->drop_queued(); }

size_t Compiler::cache_hits() const {
  std::lock_guard<std::mutex> lk(mu_);
  return hits_;
}

size_t Compiler::cache_size() const {
  std::lock_guard<std::mutex> lk(mu_);
  return cache_.size();
}

std::string Compiler::nvrtc_version() {
  int major = 0, minor = 0;
  check_nvrtc(nvrtcVersion(&major, &minor), "nvrtcVersion", "querying the NVRTC version");
  return std::to_string(major) + "." + std::to_string(minor);
}

std::shared_ptr<const CompiledKernel> Compiler::compile(const CompileRequest& req) {
  const std::string key = req.cache_key();
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      ++hits_;
      auto hit = std::make_shared<CompiledKernel>(*it->second);
      hit->from_cache = true;
      hit->compile_seconds = 0;
      return hit;
    }
  }
  // Two threads may compile the same key at once, which is cheaper than holding the lock across
  // NVRTC. Their cubins need not be the same bytes (a kernel templated on an internal-linkage
  // function gets a number of its own each compile, in its name too): both get the first's, so
  // that every holder of a key pairs one cubin with its own names.
  std::shared_ptr<const CompiledKernel> result;
  if (backend_) {
    auto k = backend_(req);
    k->cache_key = key;
    k->from_cache = false;
    result = std::move(k);
  } else {
    result = compile_uncached(req, key);
  }
  std::lock_guard<std::mutex> lk(mu_);
  return cache_.emplace(key, result).first->second;
}

std::future<std::shared_ptr<const CompiledKernel>> Compiler::compile_async(CompileRequest req, Cancel cancel) {
  auto task = std::make_shared<std::packaged_task<std::shared_ptr<const CompiledKernel>()>>(
      [this, r = std::move(req), cancel = std::move(cancel)]() -> std::shared_ptr<const CompiledKernel> {
        if (cancel && cancel->load()) throw Error("compile not started: its caller stopped waiting for it (" + r.context + ")");
        return compile(r);
      });
  auto fut = task->get_future();
  pool_->submit([task] { (*task)(); });
  return fut;
}

std::shared_ptr<const CompiledKernel> Compiler::compile_uncached(const CompileRequest& req, const std::string& key) {
  const auto t0 = std::chrono::steady_clock::now();
  // The request's own headers, then ktune's embedded ones but those it names itself: NVRTC refuses
  // two headers of one name (a user's project holds its own layernorm.h: AWQ's), and the user's is
  // the one the user's source means.
  const auto& h = headers();
  std::vector<const char*> names, texts;
  for (const auto& [name, text] : req.headers) names.push_back(name.c_str()), texts.push_back(text.c_str());
  for (size_t i = 0; i < h.names.size(); ++i)
    if (std::none_of(req.headers.begin(), req.headers.end(), [&](const auto& r) { return r.first == h.names[i]; }))
      names.push_back(h.name_ptrs[i]), texts.push_back(h.text_ptrs[i]);
  // The source and the request's headers as compiled: copies where qualify_ambiguous_std_calls
  // changes them (texts[i] is the i-th of the request's headers).
  std::string source = req.source;
  std::vector<std::string> own;
  // One compile of the program under opts into *prog (destroyed on every path out of here,
  // exceptions included, by the guard) and its log.
  nvrtcProgram prog = nullptr;
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(&prog, [](nvrtcProgram* p) {
    if (*p != nullptr) nvrtcDestroyProgram(p);
  });
  auto compile = [&](const std::vector<std::string>& opts, std::string* log) {
    if (prog != nullptr) nvrtcDestroyProgram(&prog);
    check_nvrtc(nvrtcCreateProgram(&prog, source.c_str(), req.source_name.c_str(), static_cast<int>(names.size()), texts.data(),
                                   names.data()),
                "nvrtcCreateProgram", req.context);
    for (const auto& n : req.name_expressions)
      check_nvrtc(nvrtcAddNameExpression(prog, n.c_str()), "nvrtcAddNameExpression", req.context + " kernel " + n);
    std::vector<const char*> opt_ptrs;
    for (const auto& o : opts) opt_ptrs.push_back(o.c_str());
    const nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(opt_ptrs.size()), opt_ptrs.data());
    size_t log_size = 0;
    check_nvrtc(nvrtcGetProgramLogSize(prog, &log_size), "nvrtcGetProgramLogSize", req.context);
    log->assign(log_size, '\0');
    if (log_size > 1) check_nvrtc(nvrtcGetProgramLog(prog, log->data()), "nvrtcGetProgramLog", req.context);
    while (!log->empty() && (log->back() == '\0' || log->back() == '\n')) log->pop_back();
    return r;
  };

  std::vector<std::string> opts = default_options(req.arch);
  // A dialect the request names (a spec's "-std=c++20") replaces ours, rather than following it
  // (which NVRTC warns about in every log).
  const bool own_dialect = std::any_of(req.options.begin(), req.options.end(), [](const std::string& o) {
    return o.rfind("-std", 0) == 0 || o.rfind("--std", 0) == 0;
  });
  if (own_dialect) opts.erase(std::remove(opts.begin(), opts.end(), std::string("-std=c++17")), opts.end());
  opts.insert(opts.end(), req.options.begin(), req.options.end());
  std::string log;
  nvrtcResult cr = compile(opts, &log);
  // After a `using namespace std;` at global scope, a call of CUDA's global math (or abs, malloc)
  // that libcu++'s cuda::std declares too is ambiguous under NVRTC, where under nvcc std:: has the
  // global functions: the calls the log points at are qualified `::name` and the program compiled
  // again (a few rounds: NVRTC stops reporting after its error limit), its log saying so. Only a
  // program that failed so changes.
  size_t qualified = 0;
  // The source and the request's headers as this compile may change them (their copies made on
  // first use, handed to NVRTC from then on), each by the name the log gives it.
  auto own_texts = [&] {
    if (own.empty())
      for (const auto& hdr : req.headers) own.push_back(hdr.second);
    for (size_t i = 0; i < own.size(); ++i) texts[i] = own[i].c_str();
    std::vector<std::pair<std::string, std::string*>> mine{{req.source_name, &source}};
    for (size_t i = 0; i < own.size(); ++i) mine.emplace_back(req.headers[i].first, &own[i]);
    return mine;
  };
  auto qualify = [&] {
    for (int round = 0; round < 4 && cr != NVRTC_SUCCESS && log.find("more than one instance of overloaded function") != std::string::npos;
         ++round) {
      const size_t n = qualify_ambiguous_std_calls(log, own_texts());
      if (n == 0) break;
      qualified += n;
      cr = compile(opts, &log);
    }
  };
  qualify();
  // Under host_code skip, a host class's data members are marked (core/host_code.h): those the
  // log's errors point at go and the program is compiled again (a few rounds), its log saying so.
  // Their types are ones NVRTC cannot name: a library's host-only type (CUTLASS's DeviceAllocation
  // holds a `platform::unique_ptr`, which platform.h declares only without __CUDACC_RTC__), which
  // nvcc's device pass takes as the host members that use it are never compiled for the device.
  // Where device code reads such a member, the compile fails on that, and the log says which went.
  size_t dropped = 0;
  std::string dropped_why;
  const bool marked = source.find(kHostDataBegin) != std::string::npos ||
                      std::any_of(req.headers.begin(), req.headers.end(), [](const auto& h) { return h.second.find(kHostDataBegin) != std::string::npos; });
  for (int round = 0; round < 4 && marked && cr != NVRTC_SUCCESS; ++round) {
    const size_t n = drop_refused_host_data(log, own_texts(), dropped == 0 ? &dropped_why : nullptr);
    if (n == 0) break;
    dropped += n;
    cr = compile(opts, &log);
    qualify();
  }
  // A PyTorch extension's file (the program holds ktune's stand-ins of PyTorch's headers) that
  // fails on CUDA's half types, where no option names their macros: compiled again as
  // torch.utils.cpp_extension builds an extension, its COMMON_NVCC_FLAGS' __CUDA_NO_HALF_OPERATORS__,
  // __CUDA_NO_HALF_CONVERSIONS__, __CUDA_NO_BFLOAT16_CONVERSIONS__ and __CUDA_NO_HALF2_OPERATORS__
  // defined. Without them `half_ptr[i] = c10_half;` is ambiguous between __half's assignment from
  // float and from __half (flash-fft-conv's butterfly kernels, built by a plain CUDAExtension).
  // Projects built otherwise (vLLM's CMake drops those flags, FlashAttention's setup.py -U's them)
  // use __half's operators and compile at the first try, as they are.
  const bool torch_program = std::any_of(req.headers.begin(), req.headers.end(),
                                         [](const auto& h) { return h.first == kTorchDeviceTypesHeader; });
  const bool half_macros_named = std::any_of(req.options.begin(), req.options.end(), [](const std::string& o) {
    return o.find("__CUDA_NO_HALF") != std::string::npos || o.find("__CUDA_NO_BFLOAT16") != std::string::npos;
  });
  // The program compiled again with `extra` options added (qualify() compiles with opts too): where
  // that succeeds, its log opens with why (`why` of the first compile's first error line, "" where
  // it has none); else the first compile's result and log stand.
  auto again_with = [&](const std::vector<std::string>& extra, const std::function<std::string(const std::string&)>& why) {
    const std::string as_is = log;
    const nvrtcResult as_is_result = cr;
    const std::vector<std::string> without = opts;
    opts.insert(opts.end(), extra.begin(), extra.end());
    cr = compile(opts, &log);
    qualify();
    if (cr == NVRTC_SUCCESS) {
      const size_t at = first_error_at(as_is);
      log = why(at == std::string::npos ? std::string() : as_is.substr(at, as_is.find('\n', at) - at)) + (log.empty() ? "" : "\n" + log);
    } else {
      cr = as_is_result;
      log = as_is;
    }
    opts = without;
  };
  if (cr != NVRTC_SUCCESS && torch_program && !half_macros_named &&
      (log.find("__half") != std::string::npos || log.find("__nv_bfloat16") != std::string::npos)) {
    const std::vector<std::string> defines = {"-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                                              "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__"};
    again_with(defines, [&](const std::string& first) {
      std::string named;
      for (const auto& d : defines) named += (named.empty() ? "" : " ") + d;
      return "compiled as torch.utils.cpp_extension builds an extension (" + named + "): without them " +
             (first.empty() ? std::string("it failed") : first);
    });
  }
  // A program whose only errors are lambdas NVRTC left without an execution space (only_lambda_space_errors):
  // compiled again with -default-device, which makes them the device's, its log saying so. Not
  // where a function of the program has no execution space: those are errors of their own (the
  // first compile's), which this leaves as they are.
  const bool default_device = std::any_of(opts.begin(), opts.end(), [](const std::string& o) {
    return o == "-default-device" || o == "--device-as-default-execution-space";
  });
  auto default_device_for_lambdas = [&] {
    if (cr != NVRTC_SUCCESS && !default_device && only_lambda_space_errors(log))
      again_with({"-default-device"}, [](const std::string& first) {
        return "compiled with -default-device: NVRTC left a lambda without an execution space (" + first + ")";
      });
  };
  default_device_for_lambdas();
  // A program C++17 refuses and C++20 takes, where no dialect was asked for: C++20's designated
  // initializers (`return {.phase = p};`, TensorRT-LLM's cudaUtils.h), which nvcc takes in C++17
  // as a GNU extension and NVRTC, which has no GNU mode, refuses; a dependent type's name without
  // `typename` in a member's declaration (gsplat's `ExternalDistortionModel::KernelParameters
  // external_distortion;`, a project built as C++20). It is compiled as C++20, its log saying so
  // and naming C++17's first error. Where C++20 fails too, C++17's errors are the ones reported,
  // but for a source C++17 cannot read at all: designated initializers, or one of C++20's keywords
  // (gsplat's concepts), whose C++17 errors name the dialect rather than the source's mistake.
  if (cr != NVRTC_SUCCESS && !own_dialect) {
    const std::string cxx17 = log;
    const bool designated = designated_initializer_error(cxx17);
    std::replace(opts.begin(), opts.end(), std::string("-std=c++17"), std::string("-std=c++20"));
    cr = compile(opts, &log);
    qualify();
    // C++20 may leave only the lambdas NVRTC gives no execution space, which C++17's other errors
    // hid from the retry above (FlashInfer's sm120 attention: C++20's `auto` parameters beside
    // CuTe's lambdas): both at once.
    default_device_for_lambdas();
    const size_t first_at = first_error_at(cxx17);
    const std::string first = first_at == std::string::npos ? "" : cxx17.substr(first_at, cxx17.find('\n', first_at) - first_at);
    const std::string why = designated ? "the source uses designated initializers, which C++17 lacks"
                                       : "C++17 refused the source (" + first + ")";
    if (cr == NVRTC_SUCCESS) log = "compiled as C++20 (-std=c++20): " + why + (log.empty() ? "" : "\n" + log);
    else if (designated || cxx20_keyword_error(cxx17)) log = "compiled again as C++20 (-std=c++20): " + why + (log.empty() ? "" : "\n" + log);
    else log = cxx17;
  }
  if (dropped > 0)
    log = std::string(cr == NVRTC_SUCCESS ? "compiled" : "compiled again") + " with " + std::to_string(dropped) +
          " data member(s) of host classes left out, which NVRTC refused (" + dropped_why + ")" + (log.empty() ? "" : "\n" + log);
  if (qualified > 0)
    log = std::string(cr == NVRTC_SUCCESS ? "compiled" : "compiled again") + " with " + std::to_string(qualified) +
          " call(s) qualified ::name or std::name: after a global `using namespace std;` they were ambiguous between "
          "CUDA's global math and libcu++'s cuda::std math" + (log.empty() ? "" : "\n" + log);
  if (cr != NVRTC_SUCCESS) {
    // The first error at the head of the log where warnings come before it (a deprecated type's
    // notes, pages of them): a trial's message, and a summary's first line, name the error.
    if (const size_t at = first_error_at(log); at != std::string::npos && at > 0)
      log = "first error: " + log.substr(at, log.find('\n', at) - at) + "\n" + log;
    // Errors in NVRTC's own "__nv_name_map" are a kernel name the source does not define (a typo,
    // or a template instance it cannot make): say so, and which names were asked for.
    std::string names;
    if (log.find("__nv_name_map") != std::string::npos)
      for (const auto& n : req.name_expressions) names += (names.empty() ? "; kernel names asked for: " : ", ") + n;
    // A source with host code (main, its launches, host helpers), as a project's .cu file has:
    // NVRTC compiles device code only, and says so in terms of JIT mode.
    const size_t host_at = std::min({log.find("host functions are not allowed in JIT mode"), log.find("host variables are not allowed in JIT mode"),
                                     log.find("marked as a __host__ function is not allowed in JIT mode")});
    const bool host_code = host_at != std::string::npos;
    // The file of the first (function or variable): a library's header, which no skip reaches,
    // or the spec's own.
    std::string host_file;
    if (host_code) {
      const size_t line = log.rfind('\n', host_at) == std::string::npos ? 0 : log.rfind('\n', host_at) + 1;
      const size_t paren = log.find('(', line);
      if (paren != std::string::npos && paren < host_at) host_file = log.substr(line, paren - line);
      if (host_file.rfind("first error: ", 0) == 0) host_file.erase(0, std::strlen("first error: ")); // the line put at the head
    }
    // PyTorch's C++ headers (a kernel file of an extension) are host code through and through.
    const bool torch = log.find("cannot open source file \"torch/") != std::string::npos ||
                       log.find("cannot open source file \"ATen/") != std::string::npos ||
                       log.find("cannot open source file \"c10/") != std::string::npos;
    throw CompileError("nvrtcCompileProgram failed (" + std::string(nvrtcGetErrorString(cr)) + "): " + req.context +
                           (torch ? "; PyTorch's headers are host C++ that NVRTC cannot compile: put their #include (and the "
                                    "extension's host code) inside #ifndef __CUDACC_RTC__ ... #endif, the kernels taking raw pointers"
                                  : "") +
                           (names.empty() ? "" : names + " (one of them is not a kernel the source defines)") +
                           (host_code ? "; NVRTC compiles device code only" + (host_file.empty() ? std::string() : " (the first host code is in " + host_file + ")") +
                                            ": put the source's host code (main, launches, host functions) inside #ifndef __CUDACC_RTC__ ... "
                                            "#endif, or set the spec's \"host_code\": \"skip\" (it blanks those of the spec's sources and "
                                            "of the headers they include from its folders and include_dirs)"
                                      : ""),
                       log);
  }

  // A macro the options set that the source defines again (warning #47, "incompatible
  // redefinition of macro"): the source's #define wins from that line on, so a config's value
  // (a tuning parameter, a problem dimension) would compile silently into the source's. A
  // project's build macro is the source's to define again (CompileRequest::build_macros).
  for (size_t at = 0; (at = log.find("incompatible redefinition of macro \"", at)) != std::string::npos;) {
    at += std::strlen("incompatible redefinition of macro \"");
    const std::string name = log.substr(at, log.find('"', at) - at);
    if (req.build_macros.count(name)) continue;
    for (const auto& o : req.options)
      if (o.rfind("-D" + name + "=", 0) == 0 || o == "-D" + name) {
        // The reason leads the log too: a trial records the log, as it does NVRTC's own errors.
        const std::string why = "the source defines " + name + " again, which the compile sets (" + o +
                                "): its own #define wins, so that value would be ignored; guard it with #ifndef " + name;
        throw CompileError(why + ": " + req.context, why + "\n" + log);
      }
  }

  auto out = std::make_shared<CompiledKernel>();
  out->log = log;
  out->cache_key = key;
  for (const auto& n : req.name_expressions) {
    const char* lowered = nullptr;
    check_nvrtc(nvrtcGetLoweredName(prog, n.c_str(), &lowered), "nvrtcGetLoweredName", req.context + " kernel " + n);
    out->lowered_names.emplace_back(lowered);
  }
  size_t cubin_size = 0;
  check_nvrtc(nvrtcGetCUBINSize(prog, &cubin_size), "nvrtcGetCUBINSize", req.context);
  if (cubin_size == 0) throw Error("nvrtcGetCUBINSize returned 0 bytes (arch must be a real sm_ target): " + req.context);
  out->cubin.resize(cubin_size);
  check_nvrtc(nvrtcGetCUBIN(prog, out->cubin.data()), "nvrtcGetCUBIN", req.context);
  out->compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

} // namespace ktune
