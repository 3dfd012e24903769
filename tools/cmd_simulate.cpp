// ktune simulate: replay a recorded run (ktune export --trials) with a strategy, without a GPU.
#include <CLI/CLI.hpp>
#include <climits>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tools/cli.h"
#include "tuner/json_io.h"
#include "tuner/simulate.h"

namespace ktune::cli {
namespace {

struct SimulateArgs {
  std::string trials, strategy = "model";
  std::vector<std::string> kernels;
  uint64_t seed = 1;
  int repeat = 1;
  bool json = false;
};

int cmd_simulate(const SimulateArgs& a) {
  load_kernels(a.kernels); // a user kernel's trials name its op and family: load its spec first
  const SimResult r = simulate(read_trial_log_file(a.trials), a.strategy, a.seed, a.repeat);
  std::printf("%s", a.json ? simulation_json(r).c_str() : format_simulation(r).c_str());
  return 0;
}

} // namespace

Command add_simulate(CLI::App& app) {
  auto a = std::make_shared<SimulateArgs>();
  auto* sm = app.add_subcommand("simulate", "Replay a recorded run with a strategy, without a GPU");
  sm->add_option("--trials", a->trials, "Trial log (ktune export --trials)")->required()->check(CLI::ExistingFile);
  sm->add_option("--strategy", a->strategy, "exhaustive, random, annealing, genetic or model")->capture_default_str();
  sm->add_option("--seed", a->seed, "Seed of the first repeat")->capture_default_str()->check(whole_number(0));
  sm->add_option("--repeat", a->repeat, "Repeats with successive seeds (medians are reported)")
      ->capture_default_str()
      ->check(whole_number(1, INT_MAX));
  sm->add_flag("--json", a->json, "Print JSON");
  add_kernel_option(sm, a->kernels);
  return {sm, [a] { return cmd_simulate(*a); }};
}

} // namespace ktune::cli
