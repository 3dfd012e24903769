// How much of a short call is its kernels' code arriving cold? The timer flushes L2 before every
// repetition (runtime/timing.h), which evicts the kernels' instructions as well as their data: a
// kernel of tens of KiB of straight-line code, run once a warp (a decode split of one tile), then
// fetches its code from DRAM as it goes, a cost a read kernel of a few hundred bytes of code does
// not pay (bench/read_floor). Per config, with the tuner's timer (medians, launch queued):
//   cold        as ktune times it: code and data cold
//   code warm   after the flush, the same plan once over a second set of inputs (its own buffers),
//               so the code is in L2 and the SMs' instruction caches; the timed call's data cold
//   warm        after the flush, the same plan once over the timed inputs (code and data in L2,
//               where the data fits)
//   main cold / main code warm   the plan's main kernel alone (plans of more than one step, e.g. a
//               split kernel and its combine step), its inputs cold / its code warm
// cold - code warm is what fetching the code costs the call. Every config is verified against
// FP64 first (the tuner's check, as timed).
//   cold_code --op attention --problem 1x32x8x1x1024x128 --layout causal --dtype bf16
//             --family attention_decode [--config '{...}' ...] [--json FILE]
// Without --config: the family's default config for the problem.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/compiler.h"
#include "ktune/device.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "ktune/problem.h"
#include "runtime/module.h"
#include "runtime/timing.h"
#include "tuner/op_runner.h"

using namespace ktune;

int main(int argc, char** argv) {
  CLI::App app{"Time a config's call with its code cold (as ktune times) and warm, its data cold"};
  std::string op = "attention", shape, layout, dtype = "bf16", family, json_path;
  std::vector<std::string> configs;
  int ordinal = 0;
  app.add_option("--op", op, "The problem's op")->capture_default_str();
  app.add_option("--problem", shape, "Problem shape (the op's dimensions joined by x)")->required();
  app.add_option("--layout", layout, "Layout (attention: causal or full; GEMM: NN, ...)");
  app.add_option("--dtype", dtype, "Data type")->capture_default_str();
  app.add_option("--family", family, "Kernel family")->required();
  app.add_option("--config", configs, "Config as JSON (repeatable; default: the family's default)");
  app.add_option("--device", ordinal, "GPU ordinal");
  app.add_option("--json", json_path, "Also write the figures as JSON to this file");
  CLI11_PARSE(app, argc, argv);
  try {
    const Problem p = Problem::parse(op, shape, layout, parse_dtype(dtype));
    const Family f = find_family(family);
    const DeviceInfo d = device_by_ordinal(ordinal);
    CudaContext ctx(d.ordinal);
    Compiler compiler;
    // Two runners: the timed inputs, and a second set the code-warm variant runs over.
    auto timed = make_op_runner(op, compiler, d);
    auto other = make_op_runner(op, compiler, d);
    Timer timer(d.l2_bytes);
    if (configs.empty()) configs.push_back(f.default_config(p, d).to_json());
    std::printf("%s (%s), %s\n%-10s %-11s %-10s %-10s %-16s  config (us, medians; L2 flushed before each)\n",
                d.name.c_str(), d.arch.c_str(), p.key().c_str(), "cold", "code warm", "warm", "main cold",
                "main code warm");
    nlohmann::json out = {{"device", d.name}, {"problem", p.key()}, {"family", family}, {"rows", nlohmann::json::array()}};
    for (const auto& text : configs) {
      const Config c = f.canonical(Config::from_json(text));
      if (!f.valid(c, p, d)) throw UsageError(family + " " + c.to_json() + " is not a valid config of " + p.key());
      const auto k = compiler.compile(compile_request(f, c, p, d.arch));
      Module m(k->cubin, k->lowered_names, family + " " + c.to_json());
      const LaunchPlan plan = f.launch_plan(c, p);
      LaunchPlan main_only = plan;
      main_only.steps = {plan.main_step()};
      main_only.steps[0].overlap_previous = false; // alone, nothing precedes it to overlap
      for (auto* r : {timed.get(), other.get()}) r->ensure_workspace(plan.workspace_bytes);
      other->prepare(p, 11);
      const VerifyResult v = check_as_served_and_timed(*timed, p, 7, f.numerics(), [&](CUstream s) { timed->launch(m, plan, s); });
      if (!v.pass) throw Error(family + " " + c.to_json() + " on " + p.key() + ": wrong result: " + v.summary());
      auto time_us = [&](const LaunchPlan& pl, const std::function<void(CUstream)>& after_flush) {
        const auto what = family + " " + c.to_json() + " on " + p.key();
        return 1000 * timer.time([&](CUstream s) { timed->launch(m, pl, s); }, nullptr, TimingOptions{}, what, {}, after_flush).median_ms;
      };
      auto code_warm = [&](const LaunchPlan& pl) { return [&, pl](CUstream s) { other->launch(m, pl, s); }; };
      const double cold = time_us(plan, {}), warm_code = time_us(plan, code_warm(plan));
      const double warm = time_us(plan, [&](CUstream s) { timed->launch(m, plan, s); });
      const bool steps = plan.steps.size() > 1;
      const double main_cold = steps ? time_us(main_only, {}) : cold;
      const double main_warm_code = steps ? time_us(main_only, code_warm(main_only)) : warm_code;
      std::printf("%-10.2f %-11.2f %-10.2f %-10.2f %-16.2f  %s\n", cold, warm_code, warm, main_cold, main_warm_code,
                  c.to_json().c_str());
      out["rows"].push_back({{"config", c.to_json()},
                             {"cold_us", cold},
                             {"code_warm_us", warm_code},
                             {"warm_us", warm},
                             {"main_cold_us", main_cold},
                             {"main_code_warm_us", main_warm_code},
                             {"steps", plan.steps.size()},
                             {"rel_error", v.rel_error}});
    }
    if (!json_path.empty()) {
      std::ofstream js(json_path);
      js << out.dump(1) << "\n";
      if (!js) throw Error("cold_code: cannot write " + json_path);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cold_code: %s\n", e.what());
    return 1;
  }
  return 0;
}
