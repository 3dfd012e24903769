// Where a config's compile time goes, per family: sampled configs of each family compiled one at a
// time with NVRTC (no cache), each with NVRTC's own phase timing (--time: the CUDA C++ front end,
// the NVVM optimizer, PTX to SASS), reported as seconds a config, configs a second on one core, and
// each phase's share. Extra NVRTC options (--option, repeatable) are added to every compile, so a
// change of options is measured by two runs of this tool on the same machine. Needs no GPU.
//   compile_cost [--family F ...] [--configs N] [--problem SHAPE] [--arch sm_90] [--option OPT ...]
//                [--seed S] [--json FILE]
// Default families: gemm_simt, gemm_wgmma, gemm_skinny16, softmax_warp, attention_wgmma,
// attention_decode; each at a representative problem of its op (or --problem for all).
#include <CLI/CLI.hpp>
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

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"Per family: seconds a config of NVRTC, and where they go"};
  std::vector<std::string> families, options;
  std::string shape, arch = "sm_90", json_path;
  int configs = 6;
  uint64_t seed = 1;
  app.add_option("--family", families, "Kernel family (repeatable; default: six across the ops)");
  app.add_option("--configs", configs, "Sampled configs a family")->capture_default_str();
  app.add_option("--problem", shape, "One shape for every family (default: one per op)");
  app.add_option("--arch", arch, "Target arch")->capture_default_str();
  app.add_option("--option", options, "Extra NVRTC option for every compile (repeatable)");
  app.add_option("--seed", seed, "Sampling seed")->capture_default_str();
  app.add_option("--json", json_path, "Also write the figures here");
  CLI11_PARSE(app, argc, argv);
  if (families.empty())
    families = {"gemm_simt", "gemm_wgmma", "gemm_skinny16", "softmax_warp", "attention_wgmma", "attention_decode"};
  try {
    const DeviceInfo d = DeviceInfo::nominal(arch);
    const std::string tmp = (std::filesystem::temp_directory_path() / ("ktune_nvrtc_time_" + std::to_string(::getpid()) + ".csv")).string();
    nlohmann::json out = {{"arch", arch}, {"options", options}, {"nvrtc", Compiler::nvrtc_version()}, {"families", nlohmann::json::array()}};
    std::printf("NVRTC %s, %s, options: %s; one compile at a time, no cache\n", Compiler::nvrtc_version().c_str(), arch.c_str(),
                options.empty() ? "(defaults)" : nlohmann::json(options).dump().c_str());
    std::printf("%-18s %-34s %7s %9s %9s %9s %9s %9s %9s\n", "family", "problem", "configs", "s/config", "configs/s",
                "front %", "NVVM %", "SASS %", "other %");
    for (const std::string& name : families) {
      const Family f = find_family(name);
      const Problem p = representative(f, shape);
      const std::vector<Config> cs = f.sample(p, d, size_t(configs), seed);
      if (cs.empty()) throw UsageError(name + " has no valid config at " + p.key());
      double wall = 0;
      std::map<std::string, double> phases;
      for (const Config& c : cs) {
        Compiler compiler; // a fresh one: nothing cached
        CompileRequest req = compile_request(f, c, p, arch);
        req.options.insert(req.options.end(), options.begin(), options.end());
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
      std::printf("%-18s %-34s %7zu %9.2f %9.2f %8.0f%% %8.0f%% %8.0f%% %8.0f%%\n", name.c_str(), p.key().substr(0, 34).c_str(), n,
                  wall / double(n), double(n) / wall, 100 * fe / wall, 100 * nvvm / wall, 100 * sass / wall, 100 * other / wall);
      nlohmann::json phase_json = nlohmann::json::object();
      for (const auto& [k, v] : phases) phase_json[k] = v;
      out["families"].push_back({{"family", name}, {"problem", p.key()}, {"configs", n}, {"wall_s", wall}, {"phases_s", phase_json}});
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
