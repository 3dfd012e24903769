// The ktune program: parses the command line and runs the subcommand named (one file each,
// tools/cmd_<name>.cpp, declared in tools/cli.h). Exit status: 0 success, 1 a run-time failure (no
// GPU, CUDA or NVRTC error), 2 bad usage (unknown subcommand or flag, bad shape, unknown family,
// bad file).
#include <CLI/CLI.hpp>
#include <climits>
#include <cstdio>
#include <exception>
#include <set>
#include <string>
#include <vector>

#include "ktune/error.h"
#include "ktune_git_commit.h"
#include "tools/cli.h"
#include "tools/report.h"
#include "tuner/compile_workers.h"
#include "tuner/replay_worker.h"
#include "tuner/worker.h"

int main(int argc, char** argv) {
  CLI::App app{"ktune: autotuned CUDA kernels (GEMM, softmax, LayerNorm, RMSNorm, attention) for your shapes on your GPU"};
  app.set_version_flag("--version", std::string("ktune ") + KTUNE_VERSION + " (git " + KTUNE_GIT_COMMIT + ")");
  app.require_subcommand(1);

  using namespace ktune::cli;
  const std::vector<Command> commands = {add_space(app),  add_devices(app), add_compile(app),  add_tune(app, std::vector<std::string>(argv + 1, argv + argc)),
                                         add_query(app),  add_export(app),  add_import(app),   add_simulate(app),
                                         add_cache(app),  add_bench(app, command_line(argc, argv))};

  ReportOptions report;
  auto* rp = add_report_subcommand(app, report);

  int worker_device = 0;
  std::vector<std::string> worker_kernels;
  auto* wk = app.add_subcommand("worker", "");  // internal: the fault-isolated GPU process of `tune`
  wk->group("");
  wk->add_option("--device", worker_device)->check(ktune::cli::whole_number(0, INT_MAX));
  wk->add_option("--kernel", worker_kernels); // the specs of the run's user kernels
  auto* cw = app.add_subcommand("compile-worker", ""); // internal: NVRTC in a process of its own (tune --compile-processes)
  cw->group("");
  std::string replay_log;
  double replay_pace = 0;
  auto* rw = app.add_subcommand("replay-worker", ""); // internal: the worker of `tune --replay` (tuner/replay_worker.h)
  rw->group("");
  rw->add_option("log", replay_log)->required();
  rw->add_option("--pace", replay_pace);
  int replay_device_ordinal = 0;
  rw->add_option("--device", replay_device_ordinal); // appended by the session as for `worker`; nothing to open
  rw->add_option("--kernel", worker_kernels);          // the run's user kernels, as for `worker`

  // CLI11 would call an unknown word, or an unknown flag before the subcommand, a missing
  // subcommand; name it instead. The hidden ones (group "": worker, compile-worker, replay-worker) are known but not listed.
  std::string names;
  std::set<std::string> known;
  for (const auto* sub : app.get_subcommands({})) {
    known.insert(sub->get_name());
    if (!sub->get_group().empty()) names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.empty() || arg[0] != '-') {
      if (!known.count(arg)) {
        std::fprintf(stderr, "ktune: unknown subcommand '%s' (known: %s). Run 'ktune --help'.\n", arg.c_str(),
                     names.c_str());
        return 2;
      }
      break; // the rest is the subcommand's
    }
    if (!app.get_option_no_throw(arg.substr(0, arg.find('=')))) {
      std::fprintf(stderr,
                   "ktune: unknown flag '%s' (ktune's own are --help and --version; a subcommand's flags follow its "
                   "name: ktune SUBCOMMAND --help). Run 'ktune --help'.\n",
                   arg.c_str());
      return 2;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "ktune: %s\nRun 'ktune --help' for the subcommands, 'ktune SUBCOMMAND --help' for their flags.\n",
                 e.what());
    return 2;
  }

  try {
    for (const auto& c : commands)
      if (c.sub->parsed()) return c.run();
    if (rp->parsed()) return run_report(report, argc, argv);
    if (cw->parsed()) return ktune::compile_worker_main();
    if (rw->parsed()) {
      ktune::cli::load_kernels(worker_kernels);
      return ktune::replay_worker_main(replay_log, replay_pace);
    }
    if (wk->parsed()) {
      ktune::cli::load_kernels(worker_kernels);
      return worker_main(worker_device);
    }
  } catch (const ktune::UsageError& e) {
    std::fprintf(stderr, "ktune: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ktune: error: %s\n", e.what());
    return 1;
  }
  return 2;
}
