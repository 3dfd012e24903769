// Where a config's compile time goes, per family: sampled configs of each family compiled one at a
// time with NVRTC (no cache), each with NVRTC's own phase timing (--time: the CUDA C++ front end,
// the NVVM optimizer, PTX to SASS), reported as seconds a config, configs a second on one core, and
// each phase's share. Extra NVRTC options (--option, repeatable) are added to every compile, so a
// change of options is measured by two runs of this tool on the same machine. Needs no GPU.
//   compile_cost [--family F ...] [--configs N] [--problem SHAPE] [--arch sm_90] [--option OPT ...]
//                [--seed S] [--json FILE]
// --parallel 1,4,16 adds, per family, the wall-clock throughput of compiling the same sampled configs
// N at a time: in one process on the Compiler's thread pool (what the tuner does) and in N forked
// processes of one compile at a time each, which shows whether NVRTC itself scales with threads.
// NVRTC 12.9+ keeps its own cache of PTX and cubins in the CUDA driver's compute cache (on a machine
// with a driver; --no-cache turns it off), keyed by the preprocessed source and options: every
// measurement here adds its own unused declaration to the source (a -D of an unused macro is not
// enough: it leaves the preprocessed text as it was), so no measurement is served from an earlier
// one's compiles. The forked processes
// start after this process has used NVRTC (and with it the driver), so NVRTC's cache is not
// available to them: compare the two modes with --option=--no-cache.
// Default families: gemm_simt, gemm_wgmma, gemm_skinny16, softmax_warp, attention_wgmma,
// attention_decode; each at a representative problem of its op (or --problem for all).
#include <CLI/CLI.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/device_info.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "ktune/kernel_spec.h"
#include "tuner/compile_workers.h"

using namespace ktune;

namespace {

// A problem each family's kernels are typical at.
Problem representative(const Family& f, const std::string& shape) {
  const DType dt = f.dtypes().front();
  const std::string& op = f.op();
  if (!shape.empty()) return Problem::parse(op, shape, "", dt);
  if (op == "gemm") return Problem::parse(op, f.name().find("skinny") != std::string::npos ? "16x4096x4096" : "4096x4096x4096", "NN", dt);
  if (op == "attention")
    return Problem::parse(op, f.name() == "attention_decode" ? "8x32x8x1x8192x128" : "1x32x8x4096x4096x128", "causal", dt);
  if (op == "scale_add") return Problem::parse(op, "16777216", "", dt);
  return Problem::parse(op, "4096x1024", "", dt); // the row ops (rows a warp holds, for the warp families)
}

// NVRTC's --time table: "file, phase, metric, unit" rows, milliseconds summed by phase.
std::map<std::string, double> read_phases(const std::string& path) {
  std::map<std::string, double> ms;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line); // header
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c.substr(c.find_first_not_of(' ')));
    if (cells.size() >= 4 && cells[3] == "ms") ms[cells[1]] += std::stod(cells[2]);
  }
  return ms;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The requests with a declaration no other measurement of this process has: a new key for NVRTC's
// cache, the same kernels.
std::vector<CompileRequest> salted(std::vector<CompileRequest> reqs) {
  static int salt = 0;
  const std::string line = "\nstatic __device__ int ktune_compile_cost_salt_" + std::to_string(::getpid()) + "_" +
                           std::to_string(++salt) + ";\n";
  for (CompileRequest& r : reqs) r.source += line;
  return reqs;
}

// Wall seconds for compiler to compile every request, all queued at once.
double wall_all(Compiler& compiler, const std::vector<CompileRequest>& reqs) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::future<std::shared_ptr<const CompiledKernel>>> fs;
  for (const CompileRequest& r : reqs) fs.push_back(compiler.compile_async(r));
  for (auto& f : fs) f.get(); // rethrows a compile's error
  return seconds_since(t0);
}

// Wall seconds to compile every request on one Compiler of n threads (nothing cached: each is new).
double wall_threads(std::vector<CompileRequest> reqs, unsigned n) {
  Compiler compiler(n);
  return wall_all(compiler, salted(std::move(reqs)));
}

// Wall seconds to compile every request on a Compiler of n threads whose compiles run in n
// `ktune compile-worker` processes (tune --compile-processes): the pool the tuner uses.
double wall_pool(std::vector<CompileRequest> reqs, unsigned n, const std::string& ktune) {
  reqs = salted(std::move(reqs));
  CompileProcesses procs({ktune, "compile-worker"}, n);
  Compiler compiler(n);
  compiler.set_backend([&procs](const CompileRequest& r) { return procs.compile(r); });
  // Start the processes first (n distinct compiles, one each): a tuning run starts them once, not
  // per measurement.
  std::vector<CompileRequest> starts;
  for (unsigned i = 0; i < n; ++i) starts.push_back(salted({reqs.front()}).front());
  wall_all(compiler, starts);
  return wall_all(compiler, reqs);
}

// Wall seconds to compile every request in n forked processes, each one compile at a time (its own
// Compiler, so its own NVRTC state). No Compiler lives in this process while it forks.
double wall_processes(std::vector<CompileRequest> reqs, unsigned n) {
  reqs = salted(std::move(reqs));
  std::fflush(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<pid_t> kids;
  for (unsigned i = 0; i < n; ++i) {
    const pid_t pid = ::fork();
    if (pid < 0) throw Error("fork failed while starting compile process " + std::to_string(i));
    if (pid == 0) {
      int rc = 0;
      try {
        Compiler compiler(1);
        for (size_t j = i; j < reqs.size(); j += n) compiler.compile(reqs[j]);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "compile_cost: process %u: %s\n", i, e.what());
        rc = 1;
      }
      std::fflush(nullptr);
      ::_exit(rc);
    }
    kids.push_back(pid);
  }
  bool ok = true;
  for (pid_t pid : kids) {
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid) throw Error("waitpid failed for a compile process");
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  if (!ok) throw Error("a compile process failed (its message is above)");
  return seconds_since(t0);
}

std::vector<unsigned> parse_counts(const std::string& list) {
  std::vector<unsigned> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) {
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 1 || v > 1024) throw UsageError("--parallel: '" + item + "' is not a count from 1 to 1024");
    out.push_back(unsigned(v));
  }
  return out;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"Per family: seconds a config of NVRTC, and where they go"};
  std::vector<std::string> families, options;
  std::string shape, arch = "sm_90", json_path, parallel;
  int configs = 6;
  uint64_t seed = 1;
  app.add_option("--family", families, "Kernel family (repeatable; default: six across the ops)");
  std::vector<std::string> kernels;
  app.add_option("--kernel", kernels, "A user kernel's spec (repeatable; with --problem): its family is measured too");
  app.add_option("--configs", configs, "Sampled configs a family")->capture_default_str();
  app.add_option("--problem", shape, "One shape for every family (default: one per op)");
  app.add_option("--arch", arch, "Target arch")->capture_default_str();
  app.add_option("--option", options, "Extra NVRTC option for every compile (repeatable)");
  app.add_option("--seed", seed, "Sampling seed")->capture_default_str();
  app.add_option("--json", json_path, "Also write the figures here");
  app.add_option("--parallel", parallel, "Also compile the configs N at a time, threads and processes (e.g. 1,4,16)");
  std::string ktune_exe;
  app.add_option("--ktune", ktune_exe, "With --parallel: also time the tuner's process pool (tune --compile-processes), "
                                       "this ktune executable's compile-worker");
  int repeat = 1;
  app.add_option("--repeat", repeat, "With --parallel: compile each config this many times (each a new source to NVRTC's cache), for families with few configs")
      ->check(CLI::Range(1, 100));
  bool no_phases = false;
  app.add_flag("--no-phases", no_phases, "Skip the one-at-a-time phase table (with --parallel)");
  CLI11_PARSE(app, argc, argv);
  try {
    for (const std::string& k : kernels) families.push_back(load_kernel_spec(k)); // a spec's family is named as its op
    if (!kernels.empty() && shape.empty()) throw UsageError("--kernel needs --problem: a spec has no representative shape");
    if (families.empty())
      families = {"gemm_simt", "gemm_wgmma", "gemm_skinny16", "softmax_warp", "attention_wgmma", "attention_decode"};
    const DeviceInfo d = DeviceInfo::nominal(arch);
    const std::string tmp = (std::filesystem::temp_directory_path() / ("ktune_nvrtc_time_" + std::to_string(::getpid()) + ".csv")).string();
    nlohmann::json out = {{"arch", arch}, {"options", options}, {"nvrtc", Compiler::nvrtc_version()}, {"families", nlohmann::json::array()}};
    std::printf("NVRTC %s, %s, options: %s; one compile at a time, nothing from ktune's cache\n", Compiler::nvrtc_version().c_str(), arch.c_str(),
                options.empty() ? "(defaults)" : nlohmann::json(options).dump().c_str());
    std::printf("%-18s %-34s %7s %9s %9s %9s %9s %9s %9s\n", "family", "problem", "configs", "s/config", "configs/s",
                "front %", "NVVM %", "SASS %", "other %");
    for (const std::string& name : families) {
      const Family f = find_family(name);
      const Problem p = representative(f, shape);
      const std::vector<Config> cs = f.sample(p, d, size_t(configs), seed);
      if (cs.empty()) throw UsageError(name + " has no valid config at " + p.key());
      const bool phase_table = !(no_phases && !parallel.empty());
      double wall = 0;
      std::map<std::string, double> phases;
      for (const Config& c : phase_table ? cs : std::vector<Config>{}) {
        Compiler compiler; // a fresh one: nothing cached
        CompileRequest req = compile_request(f, c, p, arch);
        req.options.insert(req.options.end(), options.begin(), options.end());
        req = salted({req}).front();
        req.options.push_back("--time=" + tmp);
        std::filesystem::remove(tmp);
        const auto t0 = std::chrono::steady_clock::now();
        compiler.compile(req);
        wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        for (const auto& [phase, ms] : read_phases(tmp)) phases[phase] += ms / 1000;
      }
      std::filesystem::remove(tmp);
      const double fe = phases["CUDA C++ Frontend"], nvvm = phases["NVVM Optimizer"], sass = phases["PTX Translation"];
      const double other = wall - fe - nvvm - sass;
      const size_t n = cs.size();
      if (phase_table)
        std::printf("%-18s %-34s %7zu %9.2f %9.2f %8.0f%% %8.0f%% %8.0f%% %8.0f%%\n", name.c_str(), p.key().substr(0, 34).c_str(), n,
                    wall / double(n), double(n) / wall, 100 * fe / wall, 100 * nvvm / wall, 100 * sass / wall, 100 * other / wall);
      else
        std::printf("%-18s %-34s %7zu configs\n", name.c_str(), p.key().substr(0, 34).c_str(), n);
      nlohmann::json phase_json = nlohmann::json::object();
      for (const auto& [k, v] : phases) phase_json[k] = v;
      nlohmann::json fam = {{"family", name}, {"problem", p.key()}, {"configs", n}, {"wall_s", wall}, {"phases_s", phase_json}};
      if (!parallel.empty()) {
        std::vector<CompileRequest> reqs;
        for (const Config& c : cs) {
          reqs.push_back(compile_request(f, c, p, arch));
          reqs.back().options.insert(reqs.back().options.end(), options.begin(), options.end());
        }
        const std::vector<CompileRequest> once = reqs;
        for (int r = 1; r < repeat; ++r)
          for (const CompileRequest& q : salted(once)) reqs.push_back(q);
        for (unsigned k : parse_counts(parallel)) {
          const double t = wall_threads(reqs, k), pr = wall_processes(reqs, k);
          const double m = double(reqs.size());
          std::printf("  %-16s %2u at a time, %zu compiles: threads %6.2f configs/s, processes %6.2f configs/s (processes/threads %.2fx)",
                      name.c_str(), k, reqs.size(), m / t, m / pr, t / pr);
          nlohmann::json row = {{"n", k}, {"compiles", reqs.size()}, {"threads_s", t}, {"processes_s", pr}};
          if (!ktune_exe.empty()) {
            const double pl = wall_pool(reqs, k, ktune_exe);
            std::printf(", tuner's process pool %6.2f configs/s (%.2fx threads)", m / pl, t / pl);
            row["pool_s"] = pl;
          }
          std::printf("\n");
          fam["parallel"].push_back(row);
        }
      }
      out["families"].push_back(fam);
    }
    if (!json_path.empty()) {
      std::ofstream f(json_path);
      if (!(f << out.dump(1) << "\n")) throw Error("cannot write " + json_path);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "compile_cost: %s\n", e.what());
    return 1;
  }
  return 0;
}
