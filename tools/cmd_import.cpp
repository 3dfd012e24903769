// ktune import: merge a tuning table into a database, the whole file validated first (a bad file
// leaves the database as it was).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "db/store.h"
#include "db/table.h"
#include "ktune/error.h"
#include "tools/cli.h"

namespace ktune::cli {
namespace {

struct ImportArgs {
  std::string db, file, dtype;
  std::vector<std::string> kernels;
  bool trial_set = false;
};

int cmd_import(const ImportArgs& a) {
  load_kernels(a.kernels); // a table of a user kernel's entries names its op: load its spec first
  if (a.trial_set) {
    if (!a.dtype.empty()) throw UsageError("import --trial-set records every trial of the set; --dtype filters tables only");
    const TrialSet set = read_trial_set_file(a.file); // the whole file checked before the database is opened
    const std::string path = a.db.empty() ? default_db_path() : a.db;
    Store store(path);
    const Store::SetImport r = store.import_trial_set(set);
    std::printf("imported %zu trials from %s into %s: %zu new, %zu recorded there already; %zu baseline readings kept\n",
                set.trials.size(), a.file.c_str(), path.c_str(), r.added, r.already, r.baselines);
    return 0;
  }
  // Parse and validate the whole table before the database is opened (or its path resolved): a
  // bad file must leave the database byte-for-byte as it was, or not create it. Every entry is
  // checked against its family too: the runtime would skip an entry it cannot serve, so
  // importing one would only report a best that is never used.
  Table t = read_table_file(a.file);
  keep_dtype(t, a.dtype);
  if (t.entries.empty()) throw UsageError(a.file + " has no entries in " + a.dtype);
  validate_table_entries(t, a.file);
  const std::string path = a.db.empty() ? default_db_path() : a.db;
  Store store(path);
  const size_t improved = store.import_table(t);
  std::printf("imported %zu entries from %s (%s, %s) into %s: %zu problems got a new or faster best\n",
              t.entries.size(), a.file.c_str(), t.device_name.c_str(), t.arch.c_str(), path.c_str(), improved);
  const auto older = std::count_if(t.entries.begin(), t.entries.end(), [](const TableEntry& e) { return e.gate < kGateVersion; });
  if (older)
    std::printf("note: %zu of them passed only an older verification gate than this ktune's (%d): the runtime does not "
                "serve them until `ktune tune` on their problems verifies them again (docs/TABLE_FORMAT.md, \"gate\")\n",
                size_t(older), kGateVersion);
  return 0;
}

} // namespace

Command add_import(CLI::App& app) {
  auto a = std::make_shared<ImportArgs>();
  auto* im = app.add_subcommand("import", "Merge a tuning table (per problem, the faster entry wins) or a trial set into a database");
  im->add_option("file", a->file, "Table file (ktune.table/1), or with --trial-set a trial set")->required()->check(CLI::ExistingFile);
  add_kernel_option(im, a->kernels);
  im->add_option("--db", a->db, "Database (default: $KTUNE_DB, else ~/.cache/ktune/ktune.db)");
  im->add_option("--dtype", a->dtype, "Only the entries of this dtype (f32, bf16, f16; f64 for user kernels)");
  im->add_flag("--trial-set", a->trial_set,
               "The file is a trial set (ktune.trialset/1, from `ktune export --trial-set`): record its trials as "
               "measured, each key once");
  return {im, [a] { return cmd_import(*a); }};
}

} // namespace ktune::cli
