// The SQLite store: devices, problems, every trial, cuBLAS baselines, the best config per
// (arch, problem), and compiled cubins. WAL mode and a busy timeout let several tuners write one
// database at once; every trial is its own transaction, so a killed run loses at most the trial
// in flight. Thread-compatible: one Store per thread (SQLite connections are not shared).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/trial.h"
#include "db/table.h"
#include "ktune/device_info.h"
#include "ktune/problem.h"

struct sqlite3;

namespace ktune {

struct BestRecord {
  std::string problem_key, family, config_json;
  double time_ms = 0, tflops = 0;
  std::optional<double> cublas_ms;
  int64_t trial_id = 0;
};

// One recorded trial with its device, problem and the device's cuBLAS time for that problem, as
// a report reads it (ktune report).
struct TrialRow {
  int64_t id = 0, device_id = 0, problem_id = 0;
  std::string device_name, arch;
  int sm_count = 0;
  bool imported = false; // an entry of a tuning table (ktune import), not a measurement here
  Problem problem;
  std::string problem_key, family, config_json, created_at;
  TrialStatus status = TrialStatus::ok;
  double median_ms = 0, tflops = 0, compile_s = 0, bench_s = 0;
  std::optional<double> cublas_ms;
};

class Store {
 public:
  static constexpr int kSchemaVersion = 4;

  // Opens (creating if needed) and migrates to kSchemaVersion. Throws Error naming the path and
  // the SQLite call on failure. read_only opens without creating or migrating.
  explicit Store(const std::string& path, bool read_only = false);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  int schema_version() const;
  const std::string& path() const { return path_; }

  int64_t device_id(const DeviceInfo& d);    // upsert by uuid (name + arch when there is none)
  int64_t problem_id(const Problem& p);  // upsert by key

  // The (device, problem, family, template hash, config hash) key is unique: recording an
  // existing key again keeps the first row (returns its id), unless that row passed an older
  // verification gate than t (TrialRecord::gate): then t replaces it (a re-verification).
  // `best` for (arch, problem) is then, in the same transaction, the ok trial of the newest gate
  // and within it the fastest, over every device of that arch.
  int64_t record_trial(int64_t device, int64_t problem, const std::string& arch, const TrialRecord& t);
  bool has_trial(int64_t device, int64_t problem, const std::string& family, const std::string& template_hash,
                 const std::string& config_hash) const {
    return recorded_outcome(device, problem, family, template_hash, config_hash).has_value();
  }
  // The status and median time of that key's trial, if recorded (time 0 unless ok): a resumed
  // search feeds them to its strategy as if it had just measured them. An ok trial that passed
  // only an older gate than kGateVersion counts as not recorded, so that a re-run verifies it
  // again.
  struct Outcome {
    TrialStatus status;
    double median_ms;
  };
  std::optional<Outcome> recorded_outcome(int64_t device, int64_t problem, const std::string& family,
                                          const std::string& template_hash, const std::string& config_hash) const;
  std::vector<TrialRecord> trials(int64_t device, int64_t problem) const;
  int64_t count_trials() const;
  int64_t count_trials(int64_t device, int64_t problem) const; // without reading them

  void record_baseline(int64_t device, int64_t problem, const std::string& library, const Timing& t, double tflops);
  std::optional<Timing> baseline(int64_t device, int64_t problem, const std::string& library) const;

  std::optional<BestRecord> best(const std::string& arch, const std::string& problem_key) const;

  // Readers (best, trials, export_table, export_trials, trial_rows) skip a row they cannot parse
  // or serve (a malformed or out-of-range problem key, a config that is not a JSON object of
  // integers, an unknown status, a time that is not finite) with one line on stderr per call
  // naming how many and the first, instead of failing on it: one bad row must not make the
  // database unreadable. problem_id() refuses such a key (UsageError), so ktune never writes one.
  //
  // The best entry per problem as a table (one arch: filter with arch, or the store must hold
  // only one; family filters too). Throws UsageError when several archs would mix.
  Table export_table(const std::string& arch = "", const std::string& family = "") const;
  // Merges a validated table in one transaction: every entry becomes an ok trial of a device
  // named after the table ("table:<name>/<arch>"), and per problem the faster entry wins the
  // best. Returns how many problems got a new or faster best. All or nothing on error.
  size_t import_table(const Table& t);
  std::vector<std::string> best_archs() const;
  // The keys of the problems with a best entry whose op is `op_prefix`-something (a user kernel's
  // "name@": its entries under every version), sorted.
  std::vector<std::string> best_problem_keys(const std::string& op_prefix) const;
  // Every trial recorded for arch, grouped by problem in recording order (ktune export --trials).
  TrialLog export_trials(const std::string& arch) const;

  // Trials and baseline readings as a trial set (db/table.h) for another database to import:
  // those of one device (by uuid) and/or some problems (by key) where given, and only trials whose
  // row id here is above after_id (a follower's cursor: SetTrial::id of the last one it took).
  struct TrialSetFilter {
    std::string device_uuid;
    std::vector<std::string> problem_keys; // empty: every problem
    int64_t after_id = 0;
  };
  TrialSet export_trial_set(const TrialSetFilter& filter) const;
  // Records a trial set in one transaction, as its devices measured it: devices by uuid,
  // problems by key, each trial as record_trial would (a key recorded here already keeps its
  // row, so importing a set twice adds nothing), each baseline reading where none is held or
  // it is faster; `best` follows. The set is checked before anything is written.
  struct SetImport {
    size_t added = 0, already = 0, baselines = 0;
  };
  SetImport import_trial_set(const TrialSet& set);

  // Every trial recorded for arch (every arch when empty), with its device, problem and cuBLAS
  // baseline, ordered by device, problem and recording order. Reads only.
  std::vector<TrialRow> trial_rows(const std::string& arch = "") const;
  // The archs of the devices that recorded trials, sorted.
  std::vector<std::string> trial_archs() const;

  // cubins keyed by the compiler's cache key (source hash, options, arch, NVRTC version). Each
  // carries a use stamp (the table's largest plus one) for trim_binaries: a put stamps the cubin,
  // new or already there, and touch_binary stamps one that was loaded.
  void put_binary(const std::string& key, const std::string& arch, const std::vector<char>& cubin,
                  const std::vector<std::string>& lowered_names);
  bool get_binary(const std::string& key, std::vector<char>* cubin, std::vector<std::string>* lowered_names) const;
  // Marks a cubin as just used (nothing when the key is not here). Returns whether it was.
  bool touch_binary(const std::string& key);
  // The same for several, in their order, in one transaction. Returns how many were here.
  int64_t touch_binaries(const std::vector<std::string>& keys);
  // When the cubins' bytes exceed `above`, deletes the least recently used ones until they are at
  // most `down_to` (one transaction; the freed pages are reused by later puts, the file does not
  // shrink). Returns what was deleted. The runtime's cubin cache stays bounded this way.
  struct Trimmed {
    int64_t cubins = 0, bytes = 0;
  };
  Trimmed trim_binaries(int64_t above, int64_t down_to);
  // How long a write waits for another connection's write lock before it fails (the constructor
  // sets 60 s, for tuners sharing a database; a runtime's cubin cache waits less).
  void set_busy_timeout(int ms);
  // durable = false: commits are not flushed to disk one by one (WAL with synchronous=NORMAL; the
  // WAL is synced at checkpoints). A power cut may lose the last commits, never the file. For a
  // cache whose writes sit on a caller's path (the runtime's cubin cache: a flush took ~1.4 ms a
  // write on the H100 machine); a tuning database keeps every trial durable.
  void set_durable(bool durable);
  // How many cubins the binary cache holds and their bytes, per arch (ktune cache).
  struct BinaryCount {
    std::string arch;
    int64_t cubins = 0, bytes = 0;
  };
  std::vector<BinaryCount> binary_counts() const;
  // Deletes every cubin (they are compiled again when needed) and returns the space to the file
  // system (VACUUM). Returns how many were deleted.
  int64_t clear_binaries();

 private:
  void exec(const std::string& sql, const char* what) const;
  void migrate();
  // Bodies of the public writers, for use inside a caller's transaction.
  int64_t device_row(const DeviceInfo& d);
  int64_t problem_row(const Problem& p);
  int64_t trial_row(int64_t device, int64_t problem, const std::string& arch, const TrialRecord& t,
                    bool* written = nullptr);
  void update_best(const std::string& arch, int64_t problem);
  std::string gate_column() const;
  std::optional<double> best_time(const std::string& arch, int64_t problem) const;

  sqlite3* db_ = nullptr;
  std::string path_;
};

// $KTUNE_DB if set, else $XDG_CACHE_HOME/ktune/ktune.db, else ~/.cache/ktune/ktune.db.
std::string default_db_path();
// The runtime's cubin cache (RuntimeOptions::cubin_cache): $KTUNE_CUBIN_CACHE if set ("" when set
// empty: no cache), else cubins.db beside default_db_path()'s default place.
std::string default_cubin_cache_path();
// The most bytes of cubins a runtime keeps in its cubin cache (RuntimeOptions::cubin_cache_max_mb's
// default): $KTUNE_CUBIN_CACHE_MAX_MB if set (0: no limit), else kDefaultCubinCacheMaxMb. A value
// that is not a whole number of MB >= 0 throws UsageError naming the variable.
inline constexpr int64_t kDefaultCubinCacheMaxMb = 512;
int64_t default_cubin_cache_max_mb();

} // namespace ktune
