// The ktune command-line program. Exit status: 0 success, 1 a run-time failure (no GPU, CUDA or
// NVRTC error), 2 bad usage (unknown subcommand or flag, bad shape, unknown family, bad file).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "ktune/compiler.h"
#include "ktune_git_commit.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "db/store.h"
#include "db/table.h"
#include "ktune/runtime.h"
#include "runtime/module.h"
#include "tools/bench.h"
#include "tuner/json_io.h"
#include "tuner/session.h"
#include "tuner/simulate.h"
#include "tuner/strategy.h"
#include "tuner/worker.h"
#include "tools/report.h"
#include "ktune/gemm_problem.h"

#include <filesystem>
#include <unistd.h>

namespace {

using namespace ktune;

struct SpaceArgs {
  std::string family = "gemm_simt", arch = "sm_90", problem, layout, dtype = "f32", restrict_file;
  bool count_only = false;
  size_t sample = 5;
  uint64_t seed = 1;
};

Family load_family(const std::string& name, const std::string& restrict_file) {
  Family f = find_family(name);
  if (!restrict_file.empty()) f = f.restricted(SpaceRestriction::from_json_file(restrict_file));
  return f;
}

// tf32 names a compute mode, not a storage type: FP32 problems opt in to the tensor cores with
// --tf32x3. Every other dtype is what A, B and C hold.
void require_storage_dtype(DType d) {
  if (d == DType::tf32) throw UsageError("dtype tf32 is not a storage type: tune f32 problems (with --tf32x3 for the tensor cores)");
}

// The problem a space or compile command judges configs against: of the family's op, 4096 in
// every dimension unless given, the op's first layout unless given.
Problem family_problem(const Family& f, const std::string& shape, const std::string& layout, const std::string& dtype) {
  const OpInfo& op = op_info(f.op());
  std::string dflt;
  for (size_t i = 0; i < op.dims.size(); ++i) dflt += i ? "x4096" : "4096";
  return Problem::parse(op.name, shape.empty() ? dflt : shape, layout.empty() && !op.layouts.empty() ? op.layouts[0] : layout,
                        parse_dtype(dtype));
}

int cmd_space(const SpaceArgs& a) {
  const Family f = load_family(a.family, a.restrict_file);
  const Problem p = family_problem(f, a.problem, a.layout, a.dtype);
  const DeviceInfo d = DeviceInfo::nominal(a.arch);
  const uint64_t n = f.count(p, d);
  if (a.count_only) {
    std::printf("%llu\n", static_cast<unsigned long long>(n));
    return 0;
  }
  uint64_t raw = 1;
  for (const auto& prm : f.params()) raw *= prm.values.size();
  std::printf("family   %s: %s\n", f.name().c_str(), f.about().c_str());
  std::printf("problem  %s on %s (nominal limits: %d KB shared memory per block)\n", p.key().c_str(), a.arch.c_str(),
              d.max_smem_per_block_optin / 1024);
  std::printf("space    %llu valid of %llu combinations\n", static_cast<unsigned long long>(n),
              static_cast<unsigned long long>(raw));
  if (n == 0) {
    // Say why where a constraint on the problem alone rules the whole family out (e.g. gemm_skinny
    // beyond M = 64); otherwise the constraints below, taken together, leave nothing.
    std::string why;
    for (const auto& c : f.constraints())
      if (c.reads.empty() && !c.pred(Config{}, p, d)) why = c.why;
    std::printf("         nothing in this family is valid for this problem: %s\n",
                why.empty() ? "the constraints below leave no config" : why.c_str());
  }
  std::printf("\nparameters\n");
  for (const auto& prm : f.params()) {
    std::string vals;
    for (int v : prm.values) {
      if (!vals.empty()) vals += ' ';
      vals += std::to_string(v);
    }
    std::printf("  %-7s {%s}  %s\n", prm.name.c_str(), vals.c_str(), prm.about.c_str());
  }
  std::printf("\nconstraints\n");
  for (const auto& c : f.constraints()) std::printf("  - %s\n", c.why.c_str());
  const auto sample = f.sample(p, d, a.sample, a.seed);
  std::printf("\nsample of %zu (seed %llu)\n", sample.size(), static_cast<unsigned long long>(a.seed));
  for (const auto& c : sample) {
    const LaunchPlan plan = f.launch_plan(c, p);
    const LaunchStep& main = plan.main_step();
    std::printf("  %s  threads=%u smem=%uB\n", c.to_json().c_str(), main.block[0] * main.block[1], main.dynamic_smem);
  }
  return 0;
}

int cmd_devices() {
  std::string why;
  const auto devices = list_devices(&why);
  if (devices.empty()) {
    std::fprintf(stderr, "ktune: no GPU available: %s\n", why.c_str());
    return 1;
  }
  for (const auto& d : devices) {
    std::printf("%d: %s  %s  %d SMs  %.1f GiB  SM clock %d MHz  memory clock %d MHz  L2 %d MB  driver %d.%d\n",
                d.ordinal, d.name.c_str(), d.arch.c_str(), d.sm_count, d.total_memory / 1073741824.0,
                d.sm_clock_khz / 1000, d.mem_clock_khz / 1000, d.l2_bytes >> 20, d.driver_version / 1000,
                d.driver_version % 1000 / 10);
  }
  std::printf("NVRTC %s\n", Compiler::nvrtc_version().c_str());
  return 0;
}

// Writes beside the target and renames: a failed export never leaves half a file behind.
void write_atomically(const std::string& out, const std::string& text) {
  const std::string tmp = out + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    f.close();
    if (!f) throw Error("cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, out, ec);
  if (ec) throw Error("cannot rename " + tmp + " to " + out + ": " + ec.message());
}

struct CompileArgs {
  std::string family = "gemm_simt", config, arch = "sm_90", problem, layout, dtype = "f32", cubin_out;
  int device = -1;
};

int cmd_compile(const CompileArgs& a) {
  const Family f = find_family(a.family);
  const Problem p = family_problem(f, a.problem, a.layout, a.dtype);
  const Config c = f.canonical(Config::from_json(a.config));
  Compiler compiler(1);
  const CompileRequest req = compile_request(f, c, p, a.arch); // an arch-specific family adds the "a"
  const auto k = compiler.compile(req);
  std::printf("compiled %s for %s in %.2f s: %zu-byte cubin\n", c.short_string().c_str(), req.arch.c_str(),
              k->compile_seconds, k->cubin.size());
  for (const auto& n : k->lowered_names) std::printf("  kernel %s\n", n.c_str());
  if (!k->log.empty()) std::printf("NVRTC log:\n%s\n", k->log.c_str());
  if (!a.cubin_out.empty()) {
    // For the disassembler: cuobjdump --dump-sass FILE
    write_atomically(a.cubin_out, std::string(k->cubin.begin(), k->cubin.end()));
    std::printf("wrote the cubin to %s\n", a.cubin_out.c_str());
  }
  if (a.device >= 0) {
    CudaContext ctx(a.device);
    Module m(k->cubin, k->lowered_names, f.name() + " " + c.to_json());
    for (size_t i = 0; i < m.kernels(); ++i) {
      const auto at = m.attributes(i);
      std::printf("  kernel %zu: %d registers, %d B static smem, %d B local (spills/stack), max %d threads\n", i,
                  at.registers, at.static_smem, at.local_bytes, at.max_threads);
    }
    // Occupancy at the launch the plan makes for this problem: a grid beyond what the device
    // holds at once runs in waves (with clusters, often sooner than blocks per SM suggest).
    if (f.valid(c, p, device_by_ordinal(a.device))) {
      for (const auto& s : f.launch_plan(c, p).steps) {
        const Occupancy o = m.occupancy(size_t(s.kernel), s.grid, s.block, s.dynamic_smem);
        const unsigned blocks = s.grid[0] * s.grid[1] * s.grid[2];
        std::printf("  launch of kernel %d at %s: grid %ux%ux%u (%u blocks) of %u threads, %u B dynamic smem: %d blocks per SM",
                    s.kernel, p.key().c_str(), s.grid[0], s.grid[1], s.grid[2], blocks, s.block[0] * s.block[1] * s.block[2],
                    s.dynamic_smem, o.blocks_per_sm);
        if (o.cluster_size > 1)
          std::printf("; clusters of %d: %d resident at once, the grid has %u", o.cluster_size, o.max_active_clusters,
                      blocks / unsigned(o.cluster_size));
        std::printf("\n");
      }
    } else {
      std::printf("  (the config is not valid for %s on this device: no launch to report)\n", p.key().c_str());
    }
  }
  return 0;
}

struct TuneArgs {
  std::vector<std::string> families, problems;
  std::string suite, op = "gemm", dtype = "f32", layout, strategy = "random", db, restrict_file, warm_start = "shipped",
      trials_out;
  std::optional<size_t> budget_evals;
  std::optional<double> budget_seconds;
  uint64_t seed = 1;
  int device = 0;
  double timeout_s = 30;
  bool quiet = false, json = false, tf32x3 = false;
};

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
    nlohmann::json j = {{"problem", p.problem.key()}, {"trials", counts}, {"skipped", p.skipped}, {"wall_s", p.wall_s}};
    if (p.best) {
      j["family"] = p.best->family;
      j["config"] = nlohmann::json::parse(p.best->config_json);
      j["time_ms"] = p.best->time_ms;
      j["tflops"] = p.best->tflops;
    }
    if (p.cublas) j["cublas_ms"] = p.cublas->median_ms;
    if (p.best && p.cublas) j["ratio_to_cublas"] = p.cublas->median_ms / p.best->time_ms;
    probs.push_back(j);
  }
  return {{"device", {{"name", r.device.name}, {"arch", r.device.arch}, {"sm_count", r.device.sm_count}}},
          {"problems", probs}, {"wall_s", r.wall_s}, {"compile_s", r.compile_s}, {"bench_s", r.bench_s},
          {"worker_restarts", r.worker_restarts}, {"compiled", r.compiled}, {"compile_reused", r.compile_reused},
          {"store_reused", r.store_reused}};
}

int cmd_tune(const TuneArgs& a) {
  TuneOptions o;
  const DType dtype = parse_dtype(a.dtype);
  require_storage_dtype(dtype);
  if (a.tf32x3 && dtype != DType::f32) throw UsageError("--tf32x3 is for f32 problems; " + a.dtype + " runs on the tensor cores as it is");
  if (!a.families.empty() && a.tf32x3) throw UsageError("--tf32x3 adds gemm_tf32x3 to the default families; with --family, name it");
  const std::vector<std::string> names = a.families.empty() ? tuning_family_names(a.tf32x3) : a.families;
  std::optional<SpaceRestriction> restriction;
  if (!a.restrict_file.empty()) restriction = SpaceRestriction::from_json_file(a.restrict_file);
  for (const auto& name : names) {
    Family f = find_family(name);
    // A restriction narrows the family it names; the other families keep their whole spaces.
    if (restriction && (restriction->family == name || names.size() == 1)) f = f.restricted(*restriction);
    o.families.push_back(std::move(f));
  }
  if (restriction && std::none_of(names.begin(), names.end(), [&](const auto& n) { return n == restriction->family; }))
    throw UsageError("--restrict " + a.restrict_file + " narrows " + restriction->family + ", which this run does not tune");
  if (!a.suite.empty() && !a.problems.empty()) throw UsageError("give --suite or --problem, not both");
  if (!a.suite.empty()) o.problems = load_suite(a.suite, a.layout, dtype);
  const OpInfo& op = op_info(a.op);
  const std::string layout = a.layout.empty() && !op.layouts.empty() ? op.layouts[0] : a.layout;
  for (const auto& p : a.problems) o.problems.push_back(Problem::parse(op.name, p, layout, dtype));
  if (o.problems.empty()) throw UsageError("nothing to tune: give --suite FILE or --problem SHAPE");
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
  o.quiet = a.quiet || a.json;
  o.progress = !o.quiet && isatty(2);
  o.worker_argv = {self_exe(), "worker"};
  std::string why;
  if (list_devices(&why).empty()) {
    std::fprintf(stderr, "ktune: no GPU available, nothing can be tuned: %s\n", why.c_str());
    return 1;
  }
  if (!o.quiet) std::fprintf(stderr, "ktune: tuning %zu problem(s) into %s\n", o.problems.size(), o.db_path.c_str());
  const TuneResult r = tune(o);
  if (a.json) std::printf("%s\n", result_json(r).dump(2).c_str());
  else std::printf("%s", format_summary(r).c_str());
  return 0;
}

const char* const kTf32x3Help =
    "Also use the shipped gemm_tf32x3 table (FP32 on TF32 tensor cores, FP32-accurate on finite inputs; "
    "not bit-identical to FFMA; inf inputs give NaN)";

struct QueryArgs {
  std::string problem, op = "gemm", dtype = "f32", layout, arch, db;
  std::vector<std::string> tables;
  bool json = false, tf32x3 = false;
};

int cmd_query(const QueryArgs& a) {
  const OpInfo& op = op_info(a.op);
  const Problem p = Problem::parse(op.name, a.problem, a.layout.empty() && !op.layouts.empty() ? op.layouts[0] : a.layout,
                                   parse_dtype(a.dtype));
  RuntimeOptions o;
  o.arch = a.arch;
  o.db_path = a.db.empty() ? default_db_path() : a.db;
  o.tables = a.tables;
  o.tf32x3 = a.tf32x3;
  if (o.arch.empty()) {
    std::string why;
    if (list_devices(&why).empty())
      throw UsageError("no GPU to take the arch from (" + why + "): give --arch, e.g. --arch sm_90");
  }
  const Runtime rt(o);
  const Selection s = rt.best_config(p);
  if (a.json) {
    const nlohmann::ordered_json j = selection_to_json(p, rt.arch(), s);
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("problem     %s on %s\n", p.key().c_str(), rt.arch().c_str());
  std::printf("choice      %s%s%s\n", to_string(s.provenance),
              s.provenance == Provenance::cublas || s.family.empty() ? "" : (" " + s.family).c_str(),
              s.source.empty() ? "" : (" (" + s.source + ")").c_str());
  std::printf("why         %s\n", s.why.c_str());
  if (s.provenance != Provenance::cublas || s.tuned) std::printf("config      %s: %s\n", s.family.c_str(), s.config.to_json().c_str());
  if (s.tuned && s.candidates.empty())
    std::printf("tuned for   %s%s\n", s.tuned->c_str(),
                s.generalized ? " (its shape-specialised config generalised to fit)" : "");
  if (s.time_ms) std::printf("recorded    %.4f ms", *s.time_ms);
  if (s.cublas_ms) std::printf(", cuBLAS %.4f ms (ratio %.3f)", *s.cublas_ms, *s.cublas_ms / *s.time_ms);
  if (s.time_ms) std::printf("\n");
  if (!s.candidates.empty()) {
    std::printf("candidates  (first gemm() call times each, and cuBLAS, at this problem; a kernel must win by 3 %%)\n");
    for (const auto& c : s.candidates)
      std::printf("  %-12s predicted %.2fx  (%.2fx cuBLAS at %s, log distance %.2f%s; %s)\n    %s\n", c.family.c_str(),
                  c.score, c.home_ratio, c.tuned.empty() ? "-" : c.tuned.c_str(), c.distance,
                  c.generalized ? ", generalised" : "", c.source.c_str(), c.config.to_json().c_str());
  }
  return 0;
}

// Keeps the entries of one dtype ("" keeps all); refuses an unknown name.
void keep_dtype(Table& t, const std::string& dtype) {
  if (dtype.empty()) return;
  const DType d = parse_dtype(dtype);
  std::erase_if(t.entries, [&](const TableEntry& e) { return e.problem.dtype != d; });
}

int cmd_export(const std::string& db, const std::string& arch, const std::string& family, const std::string& dtype,
               const std::string& out, bool trials) {
  if (trials && !dtype.empty()) throw UsageError("export --trials writes every trial; --dtype filters tables only");
  if (!dtype.empty()) parse_dtype(dtype); // a bad name is bad usage before the database is opened
  const std::string path = db.empty() ? default_db_path() : db;
  if (!std::filesystem::exists(path)) throw UsageError("database " + path + " does not exist");
  const Store store(path, /*read_only=*/true);
  if (trials) {
    if (arch.empty()) throw UsageError("export --trials needs --arch");
    const TrialLog log = store.export_trials(arch);
    if (log.problems.empty()) throw UsageError("database " + path + " has no trials for " + arch);
    write_atomically(out, trial_log_to_json(log));
    size_t n = 0;
    for (const auto& p : log.problems) n += p.trials.size();
    std::fprintf(stderr, "ktune: exported %zu trials of %zu problems (%s) to %s\n", n, log.problems.size(),
                 log.device_name.c_str(), out.c_str());
    return 0;
  }
  Table t = store.export_table(arch, family);
  keep_dtype(t, dtype);
  if (t.entries.empty())
    throw UsageError("database " + path + " has no tuned results" + (arch.empty() ? "" : " for " + arch) +
                     (family.empty() ? "" : " of family " + family) + (dtype.empty() ? "" : " in " + dtype));
  write_atomically(out, table_to_json(t));
  std::fprintf(stderr, "ktune: exported %zu entries (%s, %s) to %s\n", t.entries.size(), t.device_name.c_str(),
               t.arch.c_str(), out.c_str());
  return 0;
}

int cmd_import(const std::string& db, const std::string& file, const std::string& dtype) {
  // Parse and validate the whole table before the database is opened (or its path resolved): a
  // bad file must leave the database byte-for-byte as it was, or not create it. Every entry is
  // checked against its family too: the runtime would skip an entry it cannot serve, so
  // importing one would only report a best that is never used.
  Table t = read_table_file(file);
  keep_dtype(t, dtype);
  if (t.entries.empty()) throw UsageError(file + " has no entries in " + dtype);
  validate_table_entries(t, file);
  const std::string path = db.empty() ? default_db_path() : db;
  Store store(path);
  const size_t improved = store.import_table(t);
  std::printf("imported %zu entries from %s (%s, %s) into %s: %zu problems got a new or faster best\n",
              t.entries.size(), file.c_str(), t.device_name.c_str(), t.arch.c_str(), path.c_str(), improved);
  return 0;
}

} // namespace

struct BenchArgs {
  std::string suite, db, json, ladder, dtype = "f32", op;
  std::vector<std::string> tables;
  bool tf32x3 = false;
  int device = 0;
};

std::string command_line(int argc, char** argv) {
  std::string cmd = "ktune";
  for (int i = 1; i < argc; ++i) cmd += std::string(" ") + argv[i];
  return cmd;
}

// ktune bench: GEMM suites against cuBLAS, row-op suites against the copy bandwidth, or a ladder.
int cmd_bench(const BenchArgs& a, const std::string& cmd) {
  if (a.suite.empty() == a.ladder.empty()) throw UsageError("give --suite FILE or --ladder FILE");
  const DType dt = parse_dtype(a.dtype);
  require_storage_dtype(dt);
  if (a.tf32x3 && dt != DType::f32) throw UsageError("--tf32x3 is for f32 problems");
  if (!a.ladder.empty() && dt != DType::f32) throw UsageError("--dtype applies to --suite; a ladder file names its problem's dtype");
  std::vector<GemmProblem> problems;
  std::vector<Problem> by_bandwidth; // ops without a baseline library: judged against the copy
  if (!a.op.empty()) op_info(a.op); // an unknown op is bad usage
  if (!a.suite.empty()) {
    for (const Problem& p : load_suite(a.suite, "NN", dt)) {
      if (!a.op.empty() && p.op != a.op) continue;
      if (p.op == "gemm") problems.push_back(GemmProblem::from(p));
      else by_bandwidth.push_back(p);
    }
    if (problems.empty() && by_bandwidth.empty()) throw UsageError(a.suite + " has no " + a.op + " problem");
    if (!problems.empty() && !by_bandwidth.empty())
      throw UsageError(a.suite + " mixes GEMM and other ops: choose one with --op");
  }
  std::string why;
  const auto devs = list_devices(&why);
  if (devs.empty()) {
    std::fprintf(stderr, "ktune: no GPU available, nothing can be benchmarked: %s\n", why.c_str());
    return 1;
  }
  const DeviceInfo d = device_by_ordinal(a.device); // a bad ordinal is bad usage, before any work
  BenchOptions o;
  o.runtime.db_path = a.db.empty() ? default_db_path() : a.db;
  o.runtime.tables = a.tables;
  o.runtime.tf32x3 = a.tf32x3;
  o.runtime.device = a.device;
  if (!by_bandwidth.empty()) {
    const auto rep = bench_bandwidth(by_bandwidth, o);
    const std::string dev = d.name + " (" + d.arch + ")";
    std::printf("%s", format_bandwidth(rep, dev).c_str());
    if (!a.json.empty()) write_atomically(a.json, bandwidth_json(rep, dev, cmd));
    for (const auto& r : rep.rows)
      if (!r.error.empty()) return 1;
    return 0;
  }
  const auto rep = a.ladder.empty() ? bench_problems(problems, o) : bench_ladder(a.ladder, o);
  const std::string dev = d.name + " (" + d.arch + ")";
  std::printf("%s", format_bench(rep, dev, !a.ladder.empty()).c_str());
  if (!a.json.empty()) write_atomically(a.json, bench_json(rep, dev, cmd));
  for (const auto& r : rep.rows)
    if (!r.error.empty()) return 1;
  return 0;
}

int main(int argc, char** argv) {
  CLI::App app{"ktune: autotuned CUDA kernels (GEMM, softmax, LayerNorm, RMSNorm) for your shapes on your GPU"};
  app.set_version_flag("--version", std::string("ktune ") + KTUNE_VERSION + " (git " + KTUNE_GIT_COMMIT + ")");
  app.require_subcommand(1);

  SpaceArgs space;
  auto* sp = app.add_subcommand("space", "Count or summarise a family's valid configs for a problem");
  sp->add_option("--family", space.family, "Kernel family")->capture_default_str();
  sp->add_option("--arch", space.arch, "Target arch (sm_80, sm_86, sm_89, sm_90, sm_90a)")->capture_default_str();
  sp->add_option("--problem", space.problem, "Problem shape of the family's op: MxNxK (gemm), ROWSxCOLS (row ops); default 4096 each");
  sp->add_option("--layout", space.layout, "GEMM: layouts of A and B, NN (default), NT, TN, TT");
  sp->add_option("--dtype", space.dtype, "Data type of A, B and C: f32, bf16, f16")->capture_default_str();
  sp->add_option("--restrict", space.restrict_file, "JSON file narrowing parameter domains")->check(CLI::ExistingFile);
  sp->add_flag("--count", space.count_only, "Print only the number of valid configs");
  sp->add_option("--sample", space.sample, "How many configs to show")->capture_default_str();
  sp->add_option("--seed", space.seed, "Seed of the sample")->capture_default_str();

  auto* dv = app.add_subcommand("devices", "List the GPUs: name, arch, SMs, memory, clocks, driver");

  CompileArgs comp;
  auto* cp = app.add_subcommand("compile", "Compile one config with NVRTC and report the result");
  cp->add_option("--family", comp.family, "Kernel family")->capture_default_str();
  cp->add_option("--config", comp.config, "Config as JSON, e.g. '{\"BM\":128,...}'")->required();
  cp->add_option("--arch", comp.arch, "Target arch")->capture_default_str();
  cp->add_option("--problem", comp.problem, "Problem shape of the family's op (validity): MxNxK, ROWSxCOLS; default 4096 each");
  cp->add_option("--layout", comp.layout, "GEMM: layouts of A and B (default NN)");
  cp->add_option("--dtype", comp.dtype, "Data type of A, B and C: f32, bf16, f16")->capture_default_str();
  cp->add_option("--device", comp.device, "Also load it on this GPU and print registers, smem, spills");
  cp->add_option("-o,--cubin", comp.cubin_out, "Write the cubin here (cuobjdump --dump-sass reads it)");

  TuneArgs tune_args;
  auto* tn = app.add_subcommand("tune", "Search a family's configs for each problem on the GPU and record every trial");
  tn->add_option("--family", tune_args.families,
                 "Kernel family (repeatable; default: every family that competes at run time and can serve the problem, "
                 "gemm_simt and gemm_skinny)");
  tn->add_flag("--tf32x3", tune_args.tf32x3, "Also tune the opt-in gemm_tf32x3 (FP32 on the TF32 tensor cores)");
  tn->add_option("--suite", tune_args.suite, "Suite file (JSON) of problems, e.g. configs/suites/public.json");
  tn->add_option("--problem", tune_args.problems, "Problem shape, MxNxK for gemm, ROWSxCOLS for row ops (repeatable)");
  tn->add_option("--dtype", tune_args.dtype, "Data type")->capture_default_str();
  tn->add_option("--op", tune_args.op, "The op of --problem shapes (a suite file names its own op; gemm when it names none)")
      ->capture_default_str();
  tn->add_option("--layout", tune_args.layout, "Layout where a problem names none (GEMM: layouts of A and B, default NN)");
  tn->add_option("--strategy", tune_args.strategy, "exhaustive, random, annealing, genetic or model")->capture_default_str();
  tn->add_option("--budget-evals", tune_args.budget_evals,
                 "Most configs per problem, shared by the families tuned for it (default 200 without a budget)");
  tn->add_option("--budget-seconds", tune_args.budget_seconds,
                 "Most wall seconds per problem, shared by the families tuned for it");
  tn->add_option("--seed", tune_args.seed, "Seed of the strategy and the inputs")->capture_default_str();
  tn->add_option("--warm-start", tune_args.warm_start,
                 "Table (.json), database, 'shipped' (the tables shipped with ktune) or 'none': the configs they lend "
                 "to each problem are tried first")
      ->capture_default_str();
  tn->add_option("--db", tune_args.db, "Database (default: $KTUNE_DB, else ~/.cache/ktune/ktune.db)");
  tn->add_option("--device", tune_args.device, "GPU ordinal")->capture_default_str();
  tn->add_option("--restrict", tune_args.restrict_file, "JSON file narrowing parameter domains")->check(CLI::ExistingFile);
  tn->add_option("--timeout", tune_args.timeout_s, "Seconds one evaluation may take before its worker is killed")
      ->capture_default_str();
  tn->add_option("--trials-out", tune_args.trials_out,
                 "Append every trial to this file as it is recorded, one JSON object a line");
  tn->add_flag("--quiet", tune_args.quiet, "No progress output");
  tn->add_flag("--json", tune_args.json, "Print the summary as JSON (implies --quiet)");

  QueryArgs query;
  auto* qy = app.add_subcommand("query", "Show the config ktune would run for a problem, and where it comes from");
  qy->add_option("--problem", query.problem, "Problem shape: MxNxK for gemm, ROWSxCOLS for the row ops")->required();
  qy->add_option("--op", query.op, "The problem's op (gemm, softmax, layernorm, rmsnorm)")->capture_default_str();
  qy->add_option("--dtype", query.dtype, "Data type")->capture_default_str();
  qy->add_option("--layout", query.layout, "GEMM: layouts of A and B (default NN)");
  qy->add_option("--arch", query.arch, "Arch to answer for (no GPU needed), e.g. sm_90");
  qy->add_option("--db", query.db, "Database (default: $KTUNE_DB, else ~/.cache/ktune/ktune.db)");
  qy->add_option("--table", query.tables, "Extra tuning table (repeatable)")->check(CLI::ExistingFile);
  qy->add_flag("--tf32x3", query.tf32x3, kTf32x3Help);
  qy->add_flag("--json", query.json, "Print JSON");

  std::string ex_db, ex_arch, ex_family, ex_out;
  auto* ex = app.add_subcommand("export", "Write the best configs of a database as a tuning table (ktune.table/1)");
  ex->add_option("--db", ex_db, "Database (default: $KTUNE_DB, else ~/.cache/ktune/ktune.db)");
  ex->add_option("--arch", ex_arch, "Only this arch (required when the database holds several)");
  ex->add_option("--family", ex_family, "Only this family");
  std::string ex_dtype;
  ex->add_option("--dtype", ex_dtype, "Only the entries of this dtype (f32, bf16, f16)");
  ex->add_option("-o,--output", ex_out, "Output file")->required();
  bool ex_trials = false;
  ex->add_flag("--trials", ex_trials, "Write every trial (ktune.trials/1, for ktune simulate) instead of the table");

  std::string im_db, im_file;
  auto* im = app.add_subcommand("import", "Merge a tuning table into a database (per problem, the faster entry wins)");
  im->add_option("file", im_file, "Table file (ktune.table/1)")->required()->check(CLI::ExistingFile);
  im->add_option("--db", im_db, "Database (default: $KTUNE_DB, else ~/.cache/ktune/ktune.db)");
  std::string im_dtype;
  im->add_option("--dtype", im_dtype, "Only the entries of this dtype (f32, bf16, f16)");

  std::string sim_trials, sim_strategy = "model";
  uint64_t sim_seed = 1;
  int sim_repeat = 1;
  bool sim_json = false;
  auto* sm = app.add_subcommand("simulate", "Replay a recorded run with a strategy, without a GPU");
  sm->add_option("--trials", sim_trials, "Trial log (ktune export --trials)")->required()->check(CLI::ExistingFile);
  sm->add_option("--strategy", sim_strategy, "exhaustive, random, annealing, genetic or model")->capture_default_str();
  sm->add_option("--seed", sim_seed, "Seed of the first repeat")->capture_default_str();
  sm->add_option("--repeat", sim_repeat, "Repeats with successive seeds (medians are reported)")->capture_default_str();
  sm->add_flag("--json", sim_json, "Print JSON");

  BenchArgs bench;
  auto* bn = app.add_subcommand("bench", "Time ktune's choice against cuBLAS per problem (or the SGEMM ladder)");
  bn->add_option("--suite", bench.suite, "Suite file (JSON) of problems");
  bn->add_option("--op", bench.op, "Only the suite's problems of this op (GEMM: against cuBLAS; softmax, layernorm, rmsnorm: "
                                "bandwidth against the device's copy)");
  bn->add_option("--ladder", bench.ladder, "Ladder file (configs/ladder.json): each rung of the SGEMM ladder at one shape")
      ->check(CLI::ExistingFile);
  bn->add_option("--dtype", bench.dtype, "Data type")->capture_default_str();
  bn->add_option("--db", bench.db, "Database (default: $KTUNE_DB, else ~/.cache/ktune/ktune.db)");
  bn->add_option("--table", bench.tables, "Extra tuning table (repeatable)")->check(CLI::ExistingFile);
  bn->add_flag("--tf32x3", bench.tf32x3, kTf32x3Help);
  bn->add_option("--json", bench.json, "Also write the results as JSON to this file");
  bn->add_option("--device", bench.device, "GPU ordinal")->capture_default_str();

  ReportOptions report;
  auto* rp = add_report_subcommand(app, report);

  int worker_device = 0;
  auto* wk = app.add_subcommand("worker", "");  // internal: the fault-isolated GPU process of `tune`
  wk->group("");
  wk->add_option("--device", worker_device);

  // CLI11 would call an unknown word a missing subcommand; name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::string names;
    for (const auto* sub : app.get_subcommands({})) {
      known = known || sub->get_name() == argv[1];
      if (!names.empty()) names += ", ";
      names += sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "ktune: unknown subcommand '%s' (known: %s). Run 'ktune --help'.\n", argv[1], names.c_str());
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
    if (sp->parsed()) return cmd_space(space);
    if (dv->parsed()) return cmd_devices();
    if (cp->parsed()) return cmd_compile(comp);
    if (tn->parsed()) return cmd_tune(tune_args);
    if (qy->parsed()) return cmd_query(query);
    if (ex->parsed()) return cmd_export(ex_db, ex_arch, ex_family, ex_dtype, ex_out, ex_trials);
    if (im->parsed()) return cmd_import(im_db, im_file, im_dtype);
    if (bn->parsed()) return cmd_bench(bench, command_line(argc, argv));
    if (sm->parsed()) {
      const SimResult r = simulate(read_trial_log_file(sim_trials), sim_strategy, sim_seed, sim_repeat);
      std::printf("%s", sim_json ? simulation_json(r).c_str() : format_simulation(r).c_str());
      return 0;
    }
    if (rp->parsed()) return run_report(report, argc, argv);
    if (wk->parsed()) return worker_main(worker_device);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "ktune: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ktune: error: %s\n", e.what());
    return 1;
  }
  return 2;
}
