// ktune bench: GEMM suites against cuBLAS, row-op suites against the copy bandwidth, or the SGEMM
// ladder (the measuring itself: tools/bench.cpp).
#include <CLI/CLI.hpp>
#include <climits>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "db/store.h"
#include "ktune/device.h"
#include "ktune/error.h"
#include "ktune/gemm_problem.h"
#include "tools/bench.h"
#include "tools/cli.h"
#include "tuner/json_io.h"

namespace ktune::cli {
namespace {

struct BenchArgs {
  std::string suite, db, json, ladder, dtype = "f32", op;
  std::vector<std::string> tables;
  bool tf32x3 = false;
  int device = 0;
};

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
  if (!a.json.empty()) check_output_file(a.json, "--json");
  check_named_database(a.db);
  if (!a.suite.empty()) {
    for (const Problem& p : load_suite(a.suite, "NN", dt)) {
      if (!a.op.empty() && p.op != a.op) continue;
      if (op_info(p.op).baseline == "cublas") problems.push_back(GemmProblem::from(p));
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

} // namespace

Command add_bench(CLI::App& app, const std::string& command_line) {
  auto a = std::make_shared<BenchArgs>();
  auto* bn = app.add_subcommand("bench", "Time ktune's choice against cuBLAS per problem (or the SGEMM ladder)");
  bn->add_option("--suite", a->suite, "Suite file (JSON) of problems");
  bn->add_option("--op", a->op, "Only the suite's problems of this op (GEMM: against cuBLAS; softmax, layernorm, rmsnorm: "
                                "bandwidth against the device's copy)");
  bn->add_option("--ladder", a->ladder, "Ladder file (configs/ladder.json): each rung of the SGEMM ladder at one shape")
      ->check(CLI::ExistingFile);
  bn->add_option("--dtype", a->dtype, "Data type")->capture_default_str();
  bn->add_option("--db", a->db, "Database (default: $KTUNE_DB, else ~/.cache/ktune/ktune.db)");
  bn->add_option("--table", a->tables, "Extra tuning table (repeatable)")->check(CLI::ExistingFile);
  bn->add_flag("--tf32x3", a->tf32x3, kTf32x3Help);
  bn->add_option("--json", a->json, "Also write the results as JSON to this file");
  bn->add_option("--device", a->device, "GPU ordinal")->capture_default_str()->check(whole_number(0, INT_MAX));
  return {bn, [a, command_line] { return cmd_bench(*a, command_line); }};
}

} // namespace ktune::cli
