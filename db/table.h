// Tuning tables: the versioned JSON form of the best configs (docs/TABLE_FORMAT.md), for export,
// import, and the tables shipped with ktune (configs/tables/<arch>.json, embedded).
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/trial.h"
#include "ktune/device_info.h"
#include "ktune/problem.h"

namespace ktune {

constexpr const char* kTableSchema = "ktune.table/1";

struct TableEntry {
  Problem problem; // m, n, k, dtype, layout, align (leading dimensions at their minimum)
  std::string arch;    // of the table's device
  std::string family, config_json, template_hash;
  double time_ms = 0, tflops = 0;
  std::optional<double> cublas_ms;
  int gate = 0; // the verification gate its trial passed (core/trial.h); 0 where the table says none
};

struct Table {
  std::string device_name, arch;
  int sm_count = 0;
  std::vector<TableEntry> entries;
  // Store::export_table: the entries it left out because they are of user kernels whose specs are
  // not loaded in this process (not unreadable: another program's kernels), and those ops.
  size_t other_kernel_entries = 0;
  std::vector<std::string> other_kernels;
};

// Parses and validates a whole table; throws UsageError naming `origin`, the entry index and the
// field on malformed JSON, an unknown schema, missing fields, or sizes/times <= 0.
Table parse_table(const std::string& text, const std::string& origin);
Table read_table_file(const std::string& path);
std::string table_to_json(const Table& t); // pretty-printed, entries in a stable order

// Why a well-formed entry cannot be served, or "" when it can: its problem is not one its op
// serves (validate_key: a dimension beyond the op's limit, a class the dtype lacks), its family is unknown, its arch
// has no nominal limits or is too old for the family, its dtype is not the family's, its config
// is not a JSON object of integers, has an unknown parameter, lacks one (after the family's
// upgrade(), so configs recorded before a family gained a parameter still pass) or has a value
// outside a parameter's domain, or it breaks a constraint of the family for the entry's problem
// on the nominal limits of e.arch (DeviceInfo::nominal). Never throws; cheap enough to call on
// every entry a runtime reads (the built-in families are built once).
std::string invalid_reason(const TableEntry& e);
// The same against device's limits and arch instead of e.arch's nominal ones: a runtime holding
// the real GPU, or one lending an entry of another arch to it. e.arch is not read.
std::string invalid_reason(const TableEntry& e, const DeviceInfo& device);
// Whether `name` is a family this process knows: built in, or of a user kernel whose spec it has
// loaded (invalid_reason() rejects an entry of any other as of an unknown family).
bool known_family(const std::string& name);
// The entries of t that invalid_reason() rejects: (index into t.entries, its reason), in order.
std::vector<std::pair<size_t, std::string>> invalid_entries(const Table& t);
// How many invalid entries a message lists by name before it counts the rest: enough to see a
// pattern; a message of thousands of lines is not read.
constexpr size_t kInvalidEntriesListed = 20;
// Throws UsageError listing every invalid entry of t (index, problem key, family, reason) under
// `origin`; returns when all are valid. parse_table checks only the format, so that a runtime can
// skip the bad entries of a table it reads; an import calls this to refuse the whole table.
void validate_table_entries(const Table& t, const std::string& origin);

// Trial logs: every trial of a tuning run, for replaying searches without a GPU (ktune
// simulate). `ktune export --trials` writes them from a database.
constexpr const char* kTrialLogSchema = "ktune.trials/1";

struct LoggedTrial {
  std::string family, config_json, status; // status as in the store (ok, wrong_result, ...)
  double time_ms = 0;                       // median; 0 unless status is ok
  double compile_s = 0, bench_s = 0;        // what this trial cost the tuner
};

// Whether t should stand for one config in place of `kept`, an earlier record of it: two records
// name one config where a family's upgrade maps a dropped value onto a kept one (ktune simulate
// and the replay worker read logs through it); the faster ok one stands, so that the log's best is
// one a replay can reach.
inline bool replaces(const LoggedTrial& t, const LoggedTrial& kept) {
  return t.status == "ok" && (kept.status != "ok" || t.time_ms < kept.time_ms);
}

struct ProblemLog {
  Problem problem;
  std::optional<double> cublas_ms;
  std::vector<LoggedTrial> trials;
};

struct TrialLog {
  std::string device_name, arch;
  int sm_count = 0;
  std::vector<ProblemLog> problems;
};

TrialLog parse_trial_log(const std::string& text, const std::string& origin); // throws UsageError
TrialLog read_trial_log_file(const std::string& path);
std::string trial_log_to_json(const TrialLog& log);

// Trial sets (ktune.trialset/1): trials and baseline readings as measured, each with the device
// (by uuid) and the problem it belongs to, for moving them between databases as they were
// recorded (Store::export_trial_set / import_trial_set). Tuning across hosts streams each
// host's new trials to the driver's database in this form (python/ktune/_ray_tune.py);
// `ktune export --trial-set` and `ktune import --trial-set` merge databases by hand.
constexpr const char* kTrialSetSchema = "ktune.trialset/1";

struct SetTrial {
  int64_t id = 0; // the row id in the exporting database (Store::export_trial_set's after_id)
  std::string device_uuid, problem_key;
  TrialRecord record;
};

struct SetBaseline {
  std::string device_uuid, problem_key, library;
  Timing timing;
  double tflops = 0;
};

struct TrialSet {
  std::vector<DeviceInfo> devices; // those the trials and baselines name (uuid, name, arch, ...)
  std::vector<SetTrial> trials;    // in the exporting database's order
  std::vector<SetBaseline> baselines;
};

// Throws UsageError naming the origin and the item on anything malformed: a device the trials
// name but the set does not carry, a problem key no reader can parse, a bad status or config.
TrialSet parse_trial_set(const std::string& text, const std::string& origin);
TrialSet read_trial_set_file(const std::string& path);
std::string trial_set_to_json(const TrialSet& set);

} // namespace ktune
