// ktune export: a database's best configs as a tuning table (ktune.table/1), or every trial
// (ktune.trials/1) for ktune simulate.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <filesystem>
#include <vector>

#include "db/store.h"
#include "db/table.h"
#include "ktune/error.h"
#include "tools/cli.h"
#include "tuner/json_io.h"

namespace ktune::cli {
namespace {

struct ExportArgs {
  std::string db, arch, family, dtype, out, device_uuid;
  std::vector<std::string> problems;
  bool trials = false, trial_set = false;
  int64_t after_id = 0;
  std::vector<std::string> kernels;
};

int cmd_export(const ExportArgs& a) {
  load_kernels(a.kernels); // their rows parse; without, they are skipped with a word
  if (a.trials && a.trial_set) throw UsageError("give --trials or --trial-set, not both");
  const bool set_filters = !a.device_uuid.empty() || !a.problems.empty() || a.after_id > 0;
  if (set_filters && !a.trial_set) throw UsageError("--device-uuid, --problem and --after-id filter a --trial-set");
  if (a.trial_set && (!a.arch.empty() || !a.family.empty() || !a.dtype.empty()))
    throw UsageError("export --trial-set filters by --device-uuid, --problem and --after-id");
  for (const auto& k : a.problems) Problem::parse_key(k); // a bad key is bad usage, not an empty set
  if (a.trials && !a.dtype.empty()) throw UsageError("export --trials writes every trial; --dtype filters tables only");
  if (!a.dtype.empty()) parse_dtype(a.dtype); // a bad name is bad usage before the database is opened
  check_output_file(a.out, "--output");
  const std::string path = a.db.empty() ? default_db_path() : a.db;
  if (!std::filesystem::exists(path)) throw UsageError("database " + path + " does not exist");
  const Store store(path, /*read_only=*/true);
  if (a.trial_set) {
    // An empty set is not an error: a follower polls for trials that are not there yet.
    const TrialSet set = store.export_trial_set({a.device_uuid, a.problems, a.after_id});
    write_atomically(a.out, trial_set_to_json(set));
    std::fprintf(stderr, "ktune: exported %zu trials and %zu baseline readings of %zu devices to %s\n", set.trials.size(),
                 set.baselines.size(), set.devices.size(), a.out.c_str());
    return 0;
  }
  if (a.trials) {
    if (a.arch.empty()) throw UsageError("export --trials needs --arch");
    const TrialLog log = store.export_trials(a.arch);
    if (log.problems.empty()) throw UsageError("database " + path + " has no trials for " + a.arch);
    write_atomically(a.out, trial_log_to_json(log));
    size_t n = 0;
    for (const auto& p : log.problems) n += p.trials.size();
    std::fprintf(stderr, "ktune: exported %zu trials of %zu problems (%s) to %s\n", n, log.problems.size(),
                 log.device_name.c_str(), a.out.c_str());
    return 0;
  }
  Table t = store.export_table(a.arch, a.family);
  if (t.other_kernel_entries) {
    std::string names;
    for (const auto& o : t.other_kernels) names += (names.empty() ? "" : ", ") + o;
    std::fprintf(stderr, "ktune: left out %zu entries of user kernels whose specs are not loaded (%s): export them with --kernel SPEC\n",
                 t.other_kernel_entries, names.c_str());
  }
  keep_dtype(t, a.dtype);
  // A best row whose config this build's family no longer admits (its space dropped a value that
  // its upgrade does not map): `ktune import` refuses a table holding one whole, so it is left
  // out, each named, and the rest exported.
  const auto bad = invalid_entries(t);
  const size_t refused = bad.size();
  for (size_t j = 0; j < std::min(refused, kInvalidEntriesListed); ++j) {
    const TableEntry& e = t.entries[bad[j].first];
    std::fprintf(stderr, "ktune: left out %s (family %s), which this build does not serve: %s\n", e.problem.key().c_str(),
                 e.family.c_str(), bad[j].second.c_str());
  }
  if (refused > kInvalidEntriesListed) std::fprintf(stderr, "ktune: ... and %zu more left out\n", refused - kInvalidEntriesListed);
  for (auto it = bad.rbegin(); it != bad.rend(); ++it) t.entries.erase(t.entries.begin() + long(it->first));
  if (t.entries.empty() && refused)
    throw UsageError("database " + path + ": every best row was left out (" + std::to_string(refused) +
                     ", above): nothing this build serves to export");
  if (t.entries.empty())
    throw UsageError("database " + path + " has no tuned results" + (a.arch.empty() ? "" : " for " + a.arch) +
                     (a.family.empty() ? "" : " of family " + a.family) + (a.dtype.empty() ? "" : " in " + a.dtype));
  write_atomically(a.out, table_to_json(t));
  std::fprintf(stderr, "ktune: exported %zu entries (%s, %s) to %s\n", t.entries.size(), t.device_name.c_str(),
               t.arch.c_str(), a.out.c_str());
  return 0;
}

} // namespace

Command add_export(CLI::App& app) {
  auto a = std::make_shared<ExportArgs>();
  auto* ex = app.add_subcommand("export", "Write the best configs of a database as a tuning table (ktune.table/1)");
  add_kernel_option(ex, a->kernels);
  ex->add_option("--db", a->db, "Database (default: $KTUNE_DB, else ~/.cache/ktune/ktune.db)");
  ex->add_option("--arch", a->arch, "Only this arch (required when the database holds several)");
  ex->add_option("--family", a->family, "Only this family");
  ex->add_option("--dtype", a->dtype, "Only the entries of this dtype (f32, bf16, f16; f64 for user kernels)");
  ex->add_option("-o,--output", a->out, "Output file")->required();
  ex->add_flag("--trials", a->trials, "Write every trial (ktune.trials/1, for ktune simulate) instead of the table");
  ex->add_flag("--trial-set", a->trial_set,
               "Write trials and baseline readings as measured (ktune.trialset/1), for `ktune import --trial-set` into "
               "another database (docs/SCALING.md)");
  ex->add_option("--device-uuid", a->device_uuid, "With --trial-set: only this device's");
  ex->add_option("--problem", a->problems,
                 "With --trial-set: only this problem's (its key, as ktune query prints it; repeatable)");
  ex->add_option("--after-id", a->after_id, "With --trial-set: only trials recorded here after this row id")
      ->check(whole_number(0));
  return {ex, [a] { return cmd_export(*a); }};
}

} // namespace ktune::cli
