#include "tuner/compile_workers.h"

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/json_text.h"
#include "ktune/error.h"
#include "tuner/worker.h"

namespace ktune {
namespace {

const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(const std::vector<char>& in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  for (size_t i = 0; i < in.size(); i += 3) {
    const unsigned a = uint8_t(in[i]), b = i + 1 < in.size() ? uint8_t(in[i + 1]) : 0u,
                   c = i + 2 < in.size() ? uint8_t(in[i + 2]) : 0u;
    const unsigned v = a << 16 | b << 8 | c;
    out += kB64[v >> 18 & 63];
    out += kB64[v >> 12 & 63];
    out += i + 1 < in.size() ? kB64[v >> 6 & 63] : '=';
    out += i + 2 < in.size() ? kB64[v & 63] : '=';
  }
  return out;
}

// what: what the text is, for the message ("the cubin of family ... config ...").
std::vector<char> unbase64(const std::string& in, const std::string& what) {
  int value[256];
  for (int& v : value) v = -1;
  for (int i = 0; i < 64; ++i) value[uint8_t(kB64[i])] = i;
  if (in.size() % 4 != 0) throw Error(what + " is not base64");
  std::vector<char> out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    unsigned v = 0;
    int pad = 0;
    for (size_t j = 0; j < 4; ++j) {
      const char ch = in[i + j];
      if (ch == '=' && i + 4 == in.size() && j >= 2) {
        ++pad;
        v <<= 6;
        continue;
      }
      if (pad || value[uint8_t(ch)] < 0) throw Error(what + " is not base64");
      v = v << 6 | unsigned(value[uint8_t(ch)]);
    }
    out.push_back(char(v >> 16 & 255));
    if (pad < 2) out.push_back(char(v >> 8 & 255));
    if (pad < 1) out.push_back(char(v & 255));
  }
  return out;
}

// The source travels in base64: a user kernel's comment may hold bytes that are not UTF-8, which
// JSON text cannot carry as they are (and NVRTC must get them unchanged).
nlohmann::json request_json(const CompileRequest& r) {
  return {{"op", "compile"},
          {"source_b64", base64(std::vector<char>(r.source.begin(), r.source.end()))},
          {"source_name", r.source_name},
          {"names", r.name_expressions},
          {"arch", r.arch},
          {"options", r.options},
          {"headers", r.headers},
          {"context", r.context}};
}

CompileRequest request_from_json(const nlohmann::json& j) {
  CompileRequest r;
  const std::vector<char> source = unbase64(j.at("source_b64").get<std::string>(), "the request's source");
  r.source.assign(source.begin(), source.end());
  r.source_name = j.at("source_name").get<std::string>();
  r.name_expressions = j.at("names").get<std::vector<std::string>>();
  r.arch = j.at("arch").get<std::string>();
  r.options = j.at("options").get<std::vector<std::string>>();
  r.headers = j.at("headers").get<std::vector<std::pair<std::string, std::string>>>();
  r.context = j.at("context").get<std::string>();
  return r;
}

} // namespace

CompileProcesses::CompileProcesses(std::vector<std::string> argv, unsigned n) {
  if (argv.empty()) throw UsageError("the compile worker command is empty");
  if (n == 0) n = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < n; ++i) {
    procs_.push_back(std::make_unique<WorkerProcess>(argv));
    free_.push_back(i);
  }
}

CompileProcesses::~CompileProcesses() = default;

std::shared_ptr<CompiledKernel> CompileProcesses::compile(const CompileRequest& req) {
  size_t i = 0;
  {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return !free_.empty(); });
    i = free_.back();
    free_.pop_back();
  }
  // Back to the free list on every path out, exceptions included.
  struct Release {
    CompileProcesses* self;
    size_t i;
    ~Release() {
      {
        std::lock_guard<std::mutex> lk(self->mu_);
        self->free_.push_back(i);
      }
      self->cv_.notify_one();
    }
  } release{this, i};

  const auto t0 = std::chrono::steady_clock::now();
  const nlohmann::json request = request_json(req);
  WorkerProcess::Reply r;
  // A process that died before this request (idle: the OOM killer, a signal) would otherwise fail
  // an innocent config: a death is retried once on a fresh process, and only a second one, or a
  // hang, is the config's. The process goes back to the free list only between requests: after
  // any exception mid-request it is stopped, or its late reply would answer the next caller.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (closed_) throw CompileError("compile worker closed: " + req.context, "the run ended before this compile");
    try {
      r = procs_[i]->request(request, timeout_s);
    } catch (...) {
      procs_[i]->stop();
      throw;
    }
    if (r.outcome != WorkerProcess::Outcome::died) break;
  }
  // A process that died twice, hung or answered nonsense on this request failed on this config
  // (NVRTC has internal errors): the trial is a compile error and the run goes on, the process
  // started again. A well-formed reply that cannot be a result stops the run.
  if (r.outcome != WorkerProcess::Outcome::replied)
    throw CompileError("compile worker failed: " + req.context, r.detail);
  try {
    const nlohmann::json& b = r.body;
    if (!b.is_object()) throw Error("the reply is not an object");
    const std::string status = b.value("status", "");
    if (status == "compile_error")
      throw CompileError(b.value("error", "nvrtcCompileProgram failed: " + req.context), b.value("log", ""));
    if (status != "ok") throw Error(b.value("error", "reply without a status"));
    auto out = std::make_shared<CompiledKernel>();
    out->cubin = unbase64(b.at("cubin").get<std::string>(), "the cubin");
    out->lowered_names = b.at("lowered").get<std::vector<std::string>>();
    out->log = b.value("log", "");
    if (out->cubin.empty() || out->lowered_names.size() != req.name_expressions.size())
      throw Error("the reply is incomplete");
    out->compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
  } catch (const CompileError&) {
    throw;
  } catch (const std::exception& e) {
    procs_[i]->stop(); // whatever it sends next cannot be trusted either
    throw Error(std::string("compile worker: ") + e.what() + " (" + req.context + ")");
  }
}

int compile_worker_main() {
  ProtocolOut proto("ktune compile-worker");
  if (!proto.ok()) return 1;
  std::string line;
  while (std::getline(std::cin, line)) {
    nlohmann::json out;
    try {
      check_json_depth(line, "compile worker request");
      const nlohmann::json req = nlohmann::json::parse(line);
      if (req.at("op").get<std::string>() != "compile") throw Error("unknown compile worker op " + req.at("op").dump());
      // A Compiler a request: the parent's cache answers repeats, so one here would only grow.
      const auto k = Compiler(1).compile(request_from_json(req));
      out = {{"status", "ok"}, {"cubin", base64(k->cubin)}, {"lowered", k->lowered_names}, {"log", k->log}};
    } catch (const CompileError& e) {
      // what() is the message, a newline and the log: send them apart, as they came.
      std::string what = e.what();
      if (what.size() > e.log().size() && what.compare(what.size() - e.log().size(), e.log().size(), e.log()) == 0)
        what.resize(what.size() - e.log().size() - 1);
      out = {{"status", "compile_error"}, {"error", what}, {"log", e.log()}};
    } catch (const std::exception& e) {
      out = {{"status", "error"}, {"error", e.what()}};
    }
    if (!proto.reply(out)) return 1;
  }
  return 0;
}

} // namespace ktune
