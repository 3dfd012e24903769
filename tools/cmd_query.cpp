// ktune query: the runtime's choice for a problem and where it comes from (no GPU needed with --arch).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "db/store.h"
#include "ktune/device.h"
#include "ktune/error.h"
#include "ktune/kernel_spec.h"
#include "ktune/runtime.h"
#include "tools/cli.h"
#include "tools/problem_options.h"
#include "tuner/json_io.h"

namespace ktune::cli {
namespace {

struct QueryArgs {
  ProblemOptions problem;
  std::string db;
  std::vector<std::string> tables;
  bool json = false, tf32x3 = false;
};

// A user kernel's entries are keyed by its version (spec and sources): say so when the database
// holds results only for other versions of it, which this one never reuses.
void print_older_versions(const OpInfo& op, const std::string& db) {
  std::error_code ec;
  if (!std::filesystem::exists(db, ec) || std::filesystem::file_size(db, ec) == 0 || ec) return; // nothing written yet
  const std::string base = spec_base_name(op.name);
  size_t mine = 0;
  std::set<std::string> others;
  for (const auto& key : Store(db, true).best_problem_keys(base + "@")) {
    const std::string key_op = key.substr(0, key.find('/'));
    if (key_op == op.name) ++mine;
    else others.insert(key_op.substr(key_op.find('@') + 1));
  }
  if (others.empty()) return;
  std::string list;
  for (const auto& v : others) list += (list.empty() ? "" : ", ") + v;
  std::printf("versions    %s: this spec and source are version %s, with %zu tuned problem(s); the database also holds "
              "results of version(s) %s, not used (the kernel or its spec changed since)\n",
              base.c_str(), op.name.substr(op.name.find('@') + 1).c_str(), mine, list.c_str());
}

int cmd_query(QueryArgs& a) {
  load_problem_kernels(a.problem);
  const OpInfo& op = op_info(a.problem.op);
  const Problem p = parse_problem(a.problem, op.name);
  check_named_database(a.db);
  RuntimeOptions o;
  o.arch = a.problem.arch;
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
  if (op.spec) print_older_versions(op, o.db_path);
  const std::string base = op.baseline == "cublas" ? "cuBLAS" : op.baseline;
  // The runtime times a library baseline (cuBLAS) beside lent candidates; a spec's baseline is for
  // the tuner's summaries only.
  if (!s.candidates.empty() && !op.baseline.empty() && !op.spec) {
    std::printf("candidates  (the first call times each, and %s, at this problem; a kernel must win by 3 %%)\n", base.c_str());
    for (const auto& c : s.candidates)
      if (c.neighbour)
        std::printf("  %-12s no prediction  (a neighbour of the config tuned at %s; %s)\n    %s\n", c.family.c_str(),
                    c.tuned.c_str(), c.source.c_str(), c.config.to_json().c_str());
      else
        std::printf("  %-12s predicted %.2fx  (%.2fx %s at %s, log distance %.2f%s; %s)\n    %s\n", c.family.c_str(), c.score,
                    c.home_ratio, base.c_str(), c.tuned.empty() ? "-" : c.tuned.c_str(), c.distance,
                    c.generalized ? ", generalised" : "", c.source.c_str(), c.config.to_json().c_str());
  } else if (s.candidates.size() > 1) {
    // No baseline library: the first call times the candidates against each other.
    std::printf("candidates  (the first call times each at this problem and keeps the fastest)\n");
    for (const auto& c : s.candidates) {
      const bool dflt = c.source == "default";
      // A neighbour (Family::neighbors_of) of the default or of a lent config: no recorded time.
      const std::string what = c.neighbour ? "a neighbour of " + (dflt ? std::string("the family's default")
                                                                        : "the config tuned for " + c.tuned)
                                           : dflt ? std::string("the family's default") : "tuned for " + c.tuned;
      std::printf("  %-16s %s", c.family.c_str(), what.c_str());
      if (!c.tuned.empty()) std::printf(" (log distance %.2f)", c.distance);
      std::printf("\n    %s\n", c.config.to_json().c_str());
    }
  }
  return 0;
}

} // namespace

Command add_query(CLI::App& app) {
  auto a = std::make_shared<QueryArgs>();
  auto* qy = app.add_subcommand("query", "Show the config ktune would run for a problem, and where it comes from");
  add_problem_options(qy, a->problem, ProblemOf::op);
  qy->add_option("--db", a->db, "Database (default: $KTUNE_DB, else ~/.cache/ktune/ktune.db)");
  qy->add_option("--table", a->tables, "Extra tuning table (repeatable)")->check(CLI::ExistingFile);
  qy->add_flag("--tf32x3", a->tf32x3, kTf32x3Help);
  qy->add_flag("--json", a->json, "Print JSON");
  return {qy, [a] { return cmd_query(*a); }};
}

} // namespace ktune::cli
