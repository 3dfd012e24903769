// ktune tune: the search over each problem's families on the GPU, every trial recorded (tuner/session).
#include <CLI/CLI.hpp>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/kernel_spec.h"
#include "db/store.h"
#include "ktune/device.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "ktune/kernel_spec.h"
#include "tools/cli.h"
#include "tuner/json_io.h"
#include "tuner/replay_worker.h"
#include "tuner/session.h"
#include "tuner/strategy.h"

namespace ktune::cli {
namespace {

struct TuneArgs {
  std::vector<std::string> families, problems, kernels;
  std::string suite, op, dtype, layout, strategy = "random", db, restrict_file, warm_start = "shipped",
      trials_out;
  std::optional<size_t> budget_evals;
  std::optional<double> budget_seconds;
  uint64_t seed = 1;
  int device = 0;
  std::string devices; // "all" or ordinals "0,1,3"
  double timeout_s = 30, load_timeout_s = 600;
  bool quiet = false, json = false, tf32x3 = false, allow_mixed = false, compile_processes = false, compile_threads = false, dry_run = false;
  std::string replay, replay_uuid = "replay", ray;
  double replay_pace = 0;
  std::vector<std::string> argv; // this invocation's words after the program, for --ray
};

// --ray: the run is the Python driver's (python/ktune/_ray_tune.py: Ray has no C++ driver API),
// started with this invocation's words and told to use this program on every node. The package
// is found beside this program: installed (<site>/ktune/bin/ktune) or in the build tree
// (build/python/ktune holds the module, the sources' python/ the rest).
[[noreturn]] void exec_ray_driver(const std::vector<std::string>& words, const std::string& exe) {
  namespace fs = std::filesystem;
  const fs::path bin = fs::path(exe).parent_path();
  std::string path;
  auto add = [&](const fs::path& d) {
    if (fs::exists(d / "ktune" / "__init__.py") || fs::exists(d / "ktune")) path += (path.empty() ? "" : ":") + d.string();
  };
  if (bin.filename() == "bin" && fs::exists(bin.parent_path() / "__init__.py")) add(bin.parent_path().parent_path());
  add(bin / "python");
#ifdef KTUNE_SOURCE_PYTHON_DIR
  add(fs::path(KTUNE_SOURCE_PYTHON_DIR));
#endif
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) path += (path.empty() ? "" : ":") + std::string(old);
  setenv("PYTHONPATH", path.c_str(), 1);
  setenv("KTUNE_CLI", exe.c_str(), 1);
  const char* py_env = std::getenv("KTUNE_PYTHON");
  const std::string py = py_env && *py_env ? py_env : "python3";
  std::vector<std::string> args = {py, "-m", "ktune._ray_tune"};
  args.insert(args.end(), words.begin(), words.end());
  std::vector<char*> cargs;
  for (auto& w : args) cargs.push_back(w.data());
  cargs.push_back(nullptr);
  std::fflush(nullptr);
  execvp(py.c_str(), cargs.data());
  throw Error("--ray: cannot start the Python driver (" + py + " -m ktune._ray_tune; set KTUNE_PYTHON to an interpreter "
              "that has Ray, pip install ktune[ray]): execvp failed: " + std::strerror(errno));
}

// --dry-run: the problems of the run as a suite file would list them, one object each with every
// field (op, dtype, layout, dimensions, leading dimensions, scalars, align; a user kernel's spec).
nlohmann::json problems_suite(const std::vector<Problem>& problems) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& p : problems) {
    nlohmann::json j = problem_to_json(p);
    j["key"] = p.key();
    if (op_info(p.op).spec) j["kernel"] = spec_path(p.op);
    list.push_back(j);
  }
  return {{"problems", list}};
}

// --devices: "all" (every GPU the driver lists) or ordinals joined by commas.
std::vector<int> parse_devices(const std::string& text, const std::vector<DeviceInfo>& present) {
  std::vector<int> out;
  if (text == "all") {
    for (const auto& d : present) out.push_back(d.ordinal);
    return out;
  }
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    size_t used = 0;
    int v = -1;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
    }
    if (item.empty() || used != item.size() || v < 0)
      throw UsageError("--devices takes 'all' or GPU ordinals joined by commas (e.g. 0,1), got '" + text + "'");
    const bool known = std::any_of(present.begin(), present.end(), [&](const DeviceInfo& d) { return d.ordinal == v; });
    if (!known)
      throw UsageError("--devices: there is no GPU " + item + " (this machine has " + std::to_string(present.size()) +
                       ")");
    out.push_back(v);
    at = comma + 1;
  }
  return out;
}

std::string self_exe() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find the ktune executable for the worker: " + ec.message());
  return p.string();
}

nlohmann::json result_json(const TuneResult& r) {
  nlohmann::json probs = nlohmann::json::array();
  for (const auto& p : r.problems) {
    nlohmann::json counts = nlohmann::json::object();
    for (const auto& [st, n] : p.by_status) counts[to_string(st)] = n;
    nlohmann::json j = {{"problem", p.problem.key()}, {"device", p.device}, {"trials", counts}, {"skipped", p.skipped},
                        {"wall_s", p.wall_s}, {"bench_s", p.bench_s}, {"baseline_s", p.baseline_s}};
    if (p.best) {
      j["family"] = p.best->family;
      j["config"] = nlohmann::json::parse(p.best->config_json);
      j["time_ms"] = p.best->time_ms;
      j["tflops"] = p.best->tflops;
    }
    if (p.cublas) { // the op's baseline: cuBLAS for GEMM (the field names keep that), a spec's "baseline"
      j["baseline"] = op_info(p.problem.op).baseline;
      j["cublas_ms"] = p.cublas->median_ms;
    }
    if (p.best && p.cublas) j["ratio_to_cublas"] = p.cublas->median_ms / p.best->time_ms;
    probs.push_back(j);
  }
  return {{"device", {{"name", r.device.name}, {"arch", r.device.arch}, {"sm_count", r.device.sm_count}}},
          {"problems", probs}, {"wall_s", r.wall_s}, {"compile_s", r.compile_s}, {"bench_s", r.bench_s}, {"baseline_s", r.baseline_s},
          {"worker_restarts", r.worker_restarts}, {"compiled", r.compiled}, {"compile_reused", r.compile_reused},
          {"store_reused", r.store_reused}};
}

int cmd_tune(TuneArgs& a) {
  if (!a.ray.empty()) exec_ray_driver(a.argv, self_exe());
  TuneOptions o;
  // User kernels first: a bad spec is exit 2 before anything is opened. The first names the op
  // of --problem shapes and its dtype where none is given.
  const std::vector<std::string> kernel_ops = load_kernels(a.kernels);
  if (a.op.empty()) a.op = kernel_ops.empty() ? "gemm" : kernel_ops.front();
  if (a.dtype.empty())
    a.dtype = op_info(a.op).spec ? to_string(op_info(a.op).families().front().dtypes().front()) : "f32";
  const DType dtype = parse_dtype(a.dtype);
  require_storage_dtype(dtype);
  if (a.tf32x3 && dtype != DType::f32) throw UsageError("--tf32x3 is for f32 problems; " + a.dtype + " runs on the tensor cores as it is");
  if (!a.families.empty() && a.tf32x3) throw UsageError("--tf32x3 adds gemm_tf32x3 and gemm_wgmma_tf32x3 to the default families; with --family, name them");
  const std::vector<std::string> names = a.families.empty() ? tuning_family_names(a.tf32x3) : a.families;
  std::optional<SpaceRestriction> restriction;
  if (!a.restrict_file.empty()) restriction = SpaceRestriction::from_json_file(a.restrict_file);
  for (const auto& name : names) {
    Family f = find_family(name);
    // A restriction narrows the family it names; the other families keep their whole spaces.
    if (restriction && (restriction->narrows(name) || names.size() == 1)) f = f.restricted(*restriction);
    o.families.push_back(std::move(f));
  }
  if (restriction && std::none_of(names.begin(), names.end(), [&](const auto& n) { return restriction->narrows(n); }))
    throw UsageError("--restrict " + a.restrict_file +
                     (restriction->family.empty() ? std::string(" names no family (\"family\": ...)")
                                                  : " narrows " + restriction->family + ", which this run does not tune"));
  if (!a.suite.empty() && !a.problems.empty()) throw UsageError("give --suite or --problem, not both");
  if (!a.suite.empty()) o.problems = load_suite(a.suite, a.layout, dtype);
  const OpInfo& op = op_info(a.op);
  const std::string layout = a.layout.empty() ? op.default_layout() : a.layout;
  for (const auto& p : a.problems) o.problems.push_back(Problem::parse(op.name, p, layout, dtype));
  if (o.problems.empty()) throw UsageError("nothing to tune: give --suite FILE or --problem SHAPE");
  // Each problem as its calls are served (OpInfo::serve_as: attention_varlen's token counts at the
  // batch's capacity, attention_paged's cache no larger than its block table's entries), so that
  // the entry recorded is the one the runtime looks up; two problems served as one are tuned once.
  {
    std::vector<Problem> served;
    std::set<std::string> keys;
    for (const Problem& p : o.problems) {
      Problem s = serving_problem(p);
      const std::string key = s.key(), asked = p.key();
      if (key != asked && !a.quiet && !a.json)
        std::fprintf(stderr, "ktune: note: %s is tuned as %s, the problem its calls are served as\n", asked.c_str(),
                     key.c_str());
      if (keys.insert(key).second) served.push_back(std::move(s));
    }
    o.problems = std::move(served);
  }
  // A user kernel's input and answer files, per problem: a missing or short one stops the run here,
  // and a dry run too, which is how a spec's files are checked offline. (A replay reads none of them.)
  for (const Problem& p : o.problems)
    if (a.replay.empty() && op_info(p.op).spec) check_fill_files(spec_of(p.op), p);
  if (a.dry_run) {
    // A problem no config of a spec serves: said now (on a nominal sm_90), as the run would say it;
    // a run none of whose problems any config serves would tune nothing: a usage error.
    size_t served = 0;
    for (const Problem& p : o.problems) {
      ++served;
      if (op_info(p.op).spec) try {
          find_family(p.op).default_config(p, DeviceInfo::nominal("sm_90"));
        } catch (const UsageError& e) {
          std::fprintf(stderr, "ktune: note: %s\n", e.what());
          --served;
        }
    }
    std::printf("%s\n", problems_suite(o.problems).dump(2).c_str());
    if (!served) {
      std::fprintf(stderr, "ktune: no problem of the run has a valid config on sm_90: it would tune nothing\n");
      return 2;
    }
    return 0;
  }
  if (a.budget_evals && *a.budget_evals == 0) throw UsageError("--budget-evals must be at least 1");
  if (a.budget_seconds && *a.budget_seconds <= 0) throw UsageError("--budget-seconds must be positive");
  if (std::find(strategy_names().begin(), strategy_names().end(), a.strategy) == strategy_names().end())
    throw UsageError("unknown strategy '" + a.strategy + "' (expected exhaustive, random, annealing, genetic or model)");
  o.strategy = a.strategy;
  o.budget_evals = a.budget_evals;
  o.budget_seconds = a.budget_seconds;
  o.seed = a.seed;
  // By default the search starts from the configs the shipped tables lend to each problem.
  o.warm_start = a.warm_start == "none" ? "" : a.warm_start;
  if (!o.warm_start.empty() && o.warm_start != "shipped" && !std::filesystem::exists(o.warm_start))
    throw UsageError("warm-start source " + o.warm_start + " does not exist");
  o.db_path = a.db.empty() ? default_db_path() : a.db;
  o.trials_out = a.trials_out;
  o.device = a.device;
  o.timeout_s = a.timeout_s;
  o.load_timeout_s = a.load_timeout_s;
  o.quiet = a.quiet || a.json;
  o.progress = !o.quiet && isatty(2);
  // The worker registers the run's user kernels itself (from --kernel and the suite's "kernel"s).
  std::vector<std::string> kernels;
  for (const OpInfo& info : ops())
    if (info.spec) kernels.push_back("--kernel"), kernels.push_back(spec_path(info.name));
  o.worker_argv = {self_exe(), "worker"};
  o.worker_argv.insert(o.worker_argv.end(), kernels.begin(), kernels.end());
  // Where NVRTC runs. It compiles one program's front end at a time in a process, whatever the
  // threads: a user kernel under heavy headers (CUTLASS, CuTe, FlashInfer), whose compile is mostly
  // front end, compiled one config at a time on 16 threads; in processes, one a core. So a run
  // with a user kernel compiles in processes unless told otherwise; the built-in families (whose
  // compiles are mostly NVVM and ptxas, which do run in parallel) on threads.
  if (a.compile_processes && a.compile_threads) throw UsageError("give --compile-processes or --compile-threads, not both");
  const bool user_kernels = std::any_of(o.problems.begin(), o.problems.end(), [](const Problem& p) { return bool(op_info(p.op).spec); });
  if (a.compile_processes || (user_kernels && !a.compile_threads)) o.compile_argv = {self_exe(), "compile-worker"};
  if (!a.replay.empty()) {
    // Nothing is measured: the replay worker answers from the log, on the log's GPU model (and
    // knows the run's user kernels, as a worker does).
    if (!a.devices.empty()) throw UsageError("--replay answers as one GPU; --devices is for measuring on several");
    const TrialLog log = read_trial_log_file(a.replay);
    o.device_info = replay_device(log, a.replay_uuid);
    o.worker_argv = {self_exe(), "replay-worker", a.replay, "--pace", std::to_string(a.replay_pace)};
    o.worker_argv.insert(o.worker_argv.end(), kernels.begin(), kernels.end());
    if (!o.quiet)
      std::fprintf(stderr, "ktune: replaying %s (%s) as device %s: nothing is measured\n", a.replay.c_str(),
                   log.device_name.c_str(), a.replay_uuid.c_str());
  } else {
    std::string why;
    const std::vector<DeviceInfo> present = list_devices(&why);
    if (present.empty()) {
      std::fprintf(stderr, "ktune: no GPU available, nothing can be tuned: %s\n", why.c_str());
      return 1;
    }
    if (!a.devices.empty()) o.devices = parse_devices(a.devices, present);
    o.allow_mixed_devices = a.allow_mixed;
  }
  if (!o.quiet) std::fprintf(stderr, "ktune: tuning %zu problem(s) into %s\n", o.problems.size(), o.db_path.c_str());
  // The command ends when the run does: a compile the run no longer needs (abandoned by a time
  // budget, or compiled ahead of a search that ended) is not waited for (NVRTC cannot be
  // stopped; heavy headers take 10-30 s).
  o.leave_running_compiles = true;
  const TuneResult r = tune(o);
  if (a.json) std::printf("%s\n", result_json(r).dump(2).c_str());
  else std::printf("%s", format_summary(r).c_str());
  if (r.compiles_left_running) {
    if (!o.quiet)
      std::fprintf(stderr, "ktune: %u compile(s) the run no longer needed still running: not waited for\n",
                   r.compiles_left_running);
    exit_leaving_compiles(0);
  }
  return 0;
}

} // namespace

Command add_tune(CLI::App& app, std::vector<std::string> argv) {
  auto a = std::make_shared<TuneArgs>();
  a->argv = std::move(argv);
  auto* tn = app.add_subcommand("tune", "Search a family's configs for each problem on the GPU and record every trial");
  tn->add_option("--family", a->families,
                 "Kernel family (repeatable; default: every family that competes at run time and can serve the problem, "
                 "gemm_simt and gemm_skinny)");
  tn->add_flag("--tf32x3", a->tf32x3, "Also tune the opt-in gemm_tf32x3 and (sm_90) gemm_wgmma_tf32x3 (FP32 on the TF32 tensor cores)");
  tn->add_option("--suite", a->suite, "Suite file (JSON) of problems, e.g. configs/suites/public.json");
  tn->add_option("--problem", a->problems, "Problem shape, MxNxK for gemm, ROWSxCOLS for row ops (repeatable)");
  add_kernel_option(tn, a->kernels);
  tn->add_option("--dtype", a->dtype, "Data type (default: f32, or a --kernel's first)");
  tn->add_option("--op", a->op, "The op of --problem shapes (a suite file names its own op; default: gemm, or the --kernel's)");
  tn->add_option("--layout", a->layout, "Layout where a problem names none (GEMM: layouts of A and B, default NN)");
  tn->add_option("--strategy", a->strategy, "exhaustive, random, annealing, genetic or model")->capture_default_str();
  tn->add_option("--budget-evals", a->budget_evals,
                 "Most configs per problem, shared by the families tuned for it (default 200 without a budget)")
      ->check(whole_number(1));
  tn->add_option("--budget-seconds", a->budget_seconds,
                 "Most wall seconds per problem, shared by the families tuned for it")
      ->check(positive_number());
  tn->add_option("--seed", a->seed, "Seed of the strategy and the inputs")
      ->capture_default_str()
      ->check(whole_number(0));
  tn->add_option("--warm-start", a->warm_start,
                 "Table (.json), database, 'shipped' (the tables shipped with ktune) or 'none': the configs they lend "
                 "to each problem are tried first")
      ->capture_default_str();
  tn->add_option("--db", a->db, "Database (default: $KTUNE_DB, else ~/.cache/ktune/ktune.db)");
  auto* one = tn->add_option("--device", a->device, "GPU ordinal")->capture_default_str()->check(whole_number(0, INT_MAX));
  tn->add_option("--devices", a->devices,
                 "Tune on several GPUs at once: 'all' or ordinals (0,1,3); each takes the next problem as it finishes "
                 "one (docs/SCALING.md)")
      ->excludes(one);
  tn->add_flag("--allow-mixed-devices", a->allow_mixed,
               "Let --devices mix GPU models (each trial is recorded under its own device; refused otherwise)");
  tn->add_option("--restrict", a->restrict_file, "JSON file narrowing parameter domains")->check(CLI::ExistingFile);
  tn->add_option("--timeout", a->timeout_s, "Seconds one evaluation may take before its worker is killed")
      ->capture_default_str()
      ->check(positive_number());
  tn->add_option("--load-timeout", a->load_timeout_s,
                 "Seconds a problem's one-time work in the worker may take before it is killed (the context, and a "
                 "kernel spec's reference, setup and baseline compiled); --timeout does not count it")
      ->capture_default_str()
      ->check(positive_number());
  tn->add_option("--trials-out", a->trials_out,
                 "Append every trial to this file as it is recorded, one JSON object a line");
  tn->add_flag("--compile-processes", a->compile_processes,
               "Run NVRTC in one process a core instead of threads of this one (faster for small kernels on many cores; "
               "the default for user kernels: docs/SCALING.md)");
  tn->add_flag("--compile-threads", a->compile_threads,
               "Run NVRTC on threads of this process, user kernels too (NVRTC compiles one front end at a time a process)");
  tn->add_option("--ray", a->ray,
                 "Tune on every GPU of a Ray cluster ('auto' or its address), one actor a GPU, trials streamed into "
                 "--db (Python package with Ray: pip install ktune[ray]; docs/SCALING.md)");
  tn->add_flag("--dry-run", a->dry_run, "Print the problems this run would tune (a suite, JSON) and exit");
  auto* replay = tn->add_option("--replay", a->replay,
                                "Measure nothing: answer every evaluation from this trial log (ktune export --trials) "
                                "on its GPU model; compiles are real (testing without a GPU)")
                     ->check(CLI::ExistingFile);
  tn->add_option("--replay-uuid", a->replay_uuid, "With --replay: the uuid the trials are recorded under")
      ->capture_default_str()
      ->needs(replay);
  tn->add_option("--replay-pace", a->replay_pace,
                 "With --replay: wait this fraction of each trial's recorded benchmark time before answering")
      ->needs(replay)
      ->check(CLI::NonNegativeNumber);
  tn->add_flag("--quiet", a->quiet, "No progress output");
  tn->add_flag("--json", a->json, "Print the summary as JSON (implies --quiet)");
  return {tn, [a] { return cmd_tune(*a); }};
}

} // namespace ktune::cli
