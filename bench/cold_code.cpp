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
//             [--family attention_decode --config '{...}' ...] [--json FILE]
//   cold_code --suite configs/suites/attention.json --dtype bf16 [--json FILE]
// Without --config, each problem's config is the one ktune serves it with (Runtime::best_config
// with the shipped tables and no database: the exact entry, else the nearest tuned problem's,
// else the default; first use's timing of candidates is not run), in that config's family.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/compiler.h"
#include "ktune/device.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "ktune/problem.h"
#include "ktune/runtime.h"
#include "runtime/module.h"
#include "runtime/timing.h"
#include "tuner/json_io.h"
#include "tuner/op_runner.h"

using namespace ktune;

int main(int argc, char** argv) {
  CLI::App app{"Time a config's call with its code cold (as ktune times) and warm, its data cold"};
  std::string op = "attention", shape, layout, dtype = "bf16", family, json_path, suite;
  std::vector<std::string> configs;
  int ordinal = 0;
  app.add_option("--op", op, "The problem's op")->capture_default_str();
  auto* one = app.add_option("--problem", shape, "Problem shape (the op's dimensions joined by x)");
  app.add_option("--suite", suite, "Suite file (JSON): each of its problems, with the config ktune serves it with")
      ->excludes(one);
  app.add_option("--layout", layout, "Layout (attention: causal or full; GEMM: NN, ...)");
  app.add_option("--dtype", dtype, "Data type")->capture_default_str();
  auto* fam = app.add_option("--family", family, "Kernel family of --config (default: the served config's)");
  app.add_option("--config", configs, "Config as JSON (repeatable; default: the config ktune serves)")->needs(fam)->excludes("--suite");
  app.add_option("--device", ordinal, "GPU ordinal");
  app.add_option("--json", json_path, "Also write the figures as JSON to this file");
  CLI11_PARSE(app, argc, argv);
  try {
    if (shape.empty() && suite.empty()) throw UsageError("--problem or --suite is required");
    const std::vector<Problem> problems =
        suite.empty() ? std::vector<Problem>{Problem::parse(op, shape, layout, parse_dtype(dtype))}
                      : load_suite(suite, layout, parse_dtype(dtype));
    const DeviceInfo d = device_by_ordinal(ordinal);
    CudaContext ctx(d.ordinal);
    Compiler compiler;
    RuntimeOptions served_options; // the shipped tables alone, as a fresh install serves
    served_options.db_path = "";
    const Runtime served(served_options);
    // Two runners an op: the timed inputs, and a second set the code-warm variant runs over.
    std::map<std::string, std::pair<std::unique_ptr<OpRunner>, std::unique_ptr<OpRunner>>> runners;
    Timer timer(d.l2_bytes);
    std::printf("%s (%s)\n%-10s %-11s %-10s %-10s %-16s  problem, family and config (us, medians; L2 flushed before each)\n",
                d.name.c_str(), d.arch.c_str(), "cold", "code warm", "warm", "main cold", "main code warm");
    nlohmann::json out = {{"device", d.name}, {"rows", nlohmann::json::array()}};
    for (const Problem& p : problems) {
      std::vector<std::pair<std::string, Config>> cases;
      for (const auto& text : configs) cases.emplace_back(family, Config::from_json(text));
      if (configs.empty()) {
        const Selection sel = served.best_config(p);
        if (sel.provenance == Provenance::cublas || sel.family.empty())
          throw UsageError(p.key() + ": ktune serves it with no kernel of its own (" + sel.why + ")");
        cases.emplace_back(sel.family, sel.config);
      }
      auto& pair = runners[p.op];
      if (!pair.first) pair = {make_op_runner(p.op, compiler, d), make_op_runner(p.op, compiler, d)};
      OpRunner& timed = *pair.first;
      OpRunner& other = *pair.second;
      other.prepare(p, 11); // the code-warm runs' inputs: every config of p reads them, none writes them
      for (const auto& [fam_name, given] : cases) {
        const Family f = find_family(fam_name);
        const Config c = f.canonical(given);
        const std::string what = fam_name + " " + c.to_json() + " on " + p.key();
        if (!f.valid(c, p, d)) throw UsageError(what + ": not a valid config of the problem");
        const auto k = compiler.compile(compile_request(f, c, p, d.arch));
        Module m(k->cubin, k->lowered_names, what);
        const LaunchPlan plan = f.launch_plan(c, p);
        LaunchPlan main_only = plan;
        main_only.steps = {plan.main_step()};
        main_only.steps[0].overlap_previous = false; // alone, nothing precedes it to overlap
        for (auto* r : {&timed, &other}) r->ensure_workspace(plan.workspace_bytes);
        const VerifyResult v = check_as_served_and_timed(timed, p, 7, f.numerics(), [&](CUstream s) { timed.launch(m, plan, s); });
        if (!v.pass) throw Error(what + ": wrong result: " + v.summary());
        auto time_us = [&](const LaunchPlan& pl, const std::function<void(CUstream)>& after_flush) {
          return 1000 * timer.time([&](CUstream s) { timed.launch(m, pl, s); }, nullptr, TimingOptions{}, what, {}, after_flush).median_ms;
        };
        auto code_warm = [&](const LaunchPlan& pl) { return [&, pl](CUstream s) { other.launch(m, pl, s); }; };
        const double cold = time_us(plan, {}), warm_code = time_us(plan, code_warm(plan));
        const double warm = time_us(plan, [&](CUstream s) { timed.launch(m, plan, s); });
        const bool steps = plan.steps.size() > 1;
        const double main_cold = steps ? time_us(main_only, {}) : cold;
        const double main_warm_code = steps ? time_us(main_only, code_warm(main_only)) : warm_code;
        std::printf("%-10.2f %-11.2f %-10.2f %-10.2f %-16.2f  %s %s %s\n", cold, warm_code, warm, main_cold, main_warm_code,
                    p.key().c_str(), fam_name.c_str(), c.to_json().c_str());
        std::fflush(stdout);
        out["rows"].push_back({{"problem", p.key()},
                               {"family", fam_name},
                               {"config", c.to_json()},
                               {"cold_us", cold},
                               {"code_warm_us", warm_code},
                               {"warm_us", warm},
                               {"main_cold_us", main_cold},
                               {"main_code_warm_us", main_warm_code},
                               {"steps", plan.steps.size()},
                               {"rel_error", v.rel_error}});
      }
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
