#include "db/store.h"

#include <sqlite3.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <tuple>

#include "ktune/config.h"
#include "ktune/error.h"

namespace ktune {
namespace {

// Schema history. Each step moves a database from version i to i + 1 and runs inside one
// transaction with the version bump, so a failed migration leaves the file as it was.
const char* const kMigrations[] = {
    // 0 -> 1: the first schema.
    R"sql(
CREATE TABLE devices (
  id INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE, name TEXT NOT NULL, arch TEXT NOT NULL,
  sm_count INTEGER NOT NULL, memory_bytes INTEGER NOT NULL, sm_clock_khz INTEGER NOT NULL,
  driver_version INTEGER NOT NULL, first_seen TEXT NOT NULL DEFAULT (datetime('now')));
CREATE TABLE problems (
  id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, op TEXT NOT NULL, dtype TEXT NOT NULL,
  layout TEXT NOT NULL, m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL, align INTEGER NOT NULL);
CREATE TABLE trials (
  id INTEGER PRIMARY KEY, device_id INTEGER NOT NULL REFERENCES devices(id),
  problem_id INTEGER NOT NULL REFERENCES problems(id), family TEXT NOT NULL, config TEXT NOT NULL,
  config_hash TEXT NOT NULL, template_hash TEXT NOT NULL, status TEXT NOT NULL, error TEXT NOT NULL,
  median_ms REAL NOT NULL, min_ms REAL NOT NULL, p20_ms REAL NOT NULL, p80_ms REAL NOT NULL,
  reps INTEGER NOT NULL, tflops REAL NOT NULL, registers INTEGER NOT NULL, smem_bytes INTEGER NOT NULL,
  spill_bytes INTEGER NOT NULL, compile_s REAL NOT NULL, bench_s REAL NOT NULL, ktune_version TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  UNIQUE (device_id, problem_id, family, template_hash, config_hash));
CREATE TABLE baselines (
  device_id INTEGER NOT NULL REFERENCES devices(id), problem_id INTEGER NOT NULL REFERENCES problems(id),
  library TEXT NOT NULL, median_ms REAL NOT NULL, min_ms REAL NOT NULL, p20_ms REAL NOT NULL,
  p80_ms REAL NOT NULL, reps INTEGER NOT NULL, tflops REAL NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  PRIMARY KEY (device_id, problem_id, library));
CREATE TABLE best (
  arch TEXT NOT NULL, problem_id INTEGER NOT NULL REFERENCES problems(id), family TEXT NOT NULL,
  config TEXT NOT NULL, time_ms REAL NOT NULL, tflops REAL NOT NULL, trial_id INTEGER NOT NULL REFERENCES trials(id),
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  PRIMARY KEY (arch, problem_id));
CREATE TABLE binaries (
  cache_key TEXT PRIMARY KEY, arch TEXT NOT NULL, cubin BLOB NOT NULL, lowered_names TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')));
)sql",
    // 1 -> 2: keep the verification error of every trial; index the resume look-up.
    R"sql(
ALTER TABLE trials ADD COLUMN rel_error REAL NOT NULL DEFAULT -1;
CREATE INDEX trials_by_problem ON trials (device_id, problem_id, status);
)sql",
    // 2 -> 3: a use stamp on every cubin, so that a runtime's cubin cache can drop the least
    // recently used ones (Store::trim_binaries). Cubins already there count as used in the order
    // they were kept.
    R"sql(
ALTER TABLE binaries ADD COLUMN used INTEGER NOT NULL DEFAULT 0;
UPDATE binaries SET used = rowid;
CREATE INDEX binaries_by_use ON binaries (used);
)sql",
    // 3 -> 4: the verification gate each trial passed (core/trial.h, kGateVersion). Trials
    // recorded before are stamped 0: the runtime no longer serves them, a re-run re-verifies them.
    R"sql(
ALTER TABLE trials ADD COLUMN gate INTEGER NOT NULL DEFAULT 0;
)sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == Store::kSchemaVersion);

// The cuBLAS time a best entry is compared with (its lead is what the runtime's margin reads): the
// fastest cuBLAS reading of the problem on any device of the same name and arch as the one that
// produced the best trial (aliases b: best, d: that trial's device). Not only that device's own
// reading: an imported table's entries belong to a pseudo-device (import_table), so a re-tune that
// timed cuBLAS again on the live GPU would otherwise leave the table's older, slower reading beside
// the entry and overstate its lead. The kernel's time is the fastest reading too (best keeps the
// minimum), so both sides of the ratio are read the same way.
constexpr const char* kBestBaselineSql =
    "(SELECT MIN(bl.median_ms) FROM baselines bl JOIN devices bd ON bd.id = bl.device_id "
    "WHERE bl.problem_id = b.problem_id AND bl.library = 'cublas' AND bd.name = d.name AND bd.arch = d.arch)";

// A prepared statement with checked binds and steps; finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql, std::string path) : db_(db), path_(std::move(path)) {
    if (sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) != SQLITE_OK) fail("sqlite3_prepare_v2", sql);
  }
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt& bind(int i, int64_t v) { return check(sqlite3_bind_int64(st_, i, v)); }
  Stmt& bind(int i, int v) { return check(sqlite3_bind_int64(st_, i, v)); }
  Stmt& bind(int i, double v) { return check(sqlite3_bind_double(st_, i, v)); }
  Stmt& bind(int i, const std::string& v) { return check(sqlite3_bind_text(st_, i, v.data(), int(v.size()), SQLITE_TRANSIENT)); }
  // Clears the last step and the bindings, for running the statement again.
  Stmt& reset() {
    sqlite3_reset(st_);
    return check(sqlite3_clear_bindings(st_));
  }
  Stmt& bind_blob(int i, const void* p, size_t n) { return check(sqlite3_bind_blob(st_, i, p, int(n), SQLITE_TRANSIENT)); }
  // True while a row is available.
  bool step() {
    const int r = sqlite3_step(st_);
    if (r == SQLITE_ROW) return true;
    if (r == SQLITE_DONE) return false;
    fail("sqlite3_step", sqlite3_sql(st_));
  }
  int64_t i64(int c) const { return sqlite3_column_int64(st_, c); }
  double dbl(int c) const { return sqlite3_column_double(st_, c); }
  bool null(int c) const { return sqlite3_column_type(st_, c) == SQLITE_NULL; }
  std::string text(int c) const {
    const auto* p = sqlite3_column_text(st_, c);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(st_, c)) : std::string();
  }
  std::vector<char> blob(int c) const {
    const char* p = static_cast<const char*>(sqlite3_column_blob(st_, c));
    return std::vector<char>(p, p + sqlite3_column_bytes(st_, c));
  }

 private:
  Stmt& check(int r) {
    if (r != SQLITE_OK) fail("sqlite3_bind", sqlite3_sql(st_));
    return *this;
  }
  [[noreturn]] void fail(const char* call, const char* sql) {
    throw Error(std::string(call) + " failed on " + path_ + ": " + sqlite3_errmsg(db_) + " (SQL: " + (sql ? sql : "") + ")");
  }
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
  std::string path_;
};

// BEGIN IMMEDIATE takes the write lock up front: a deferred transaction that upgrades later can
// fail with SQLITE_BUSY that the busy timeout cannot resolve when two tuners write at once.
class Transaction {
 public:
  Transaction(sqlite3* db, const std::string& path) : db_(db), path_(path) { run("BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    run("COMMIT");
    done_ = true;
  }

 private:
  void run(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : sqlite3_errmsg(db_);
      sqlite3_free(err);
      throw Error(std::string("sqlite3_exec(") + sql + ") failed on " + path_ + ": " + msg);
    }
  }
  sqlite3* db_;
  std::string path_;
  bool done_ = false;
};

Timing read_timing(const Stmt& s, int first) {
  return Timing{s.dbl(first), s.dbl(first + 1), s.dbl(first + 2), s.dbl(first + 3), int(s.i64(first + 4))};
}

// The rows one read leaves out because it cannot parse or serve them: a key beyond its op's
// limits or otherwise malformed (written by an older ktune, another tool, or by hand), a config
// that is not a JSON object of integers, an unknown status, a time that is not a finite number.
// One such row must not make a whole database unreadable: a reader skips it and says so once per
// call on stderr, with how many and the first.
class SkippedRows {
 public:
  SkippedRows(std::string path, const char* what) : path_(std::move(path)), what_(what) {}
  ~SkippedRows() {
    if (n_)
      std::fprintf(stderr, "ktune: skipped %zu unreadable %s of database %s (first: %s)\n", n_, what_, path_.c_str(),
                   first_.c_str());
  }
  SkippedRows(const SkippedRows&) = delete;
  SkippedRows& operator=(const SkippedRows&) = delete;
  void add(const std::string& row, const std::exception& why) {
    if (n_++ == 0) first_ = row + ": " + why.what();
  }

 private:
  std::string path_;
  const char* what_;
  size_t n_ = 0;
  std::string first_;
};

// A stored config as the tables write it (canonical JSON of integers); throws UsageError otherwise.
std::string readable_config(const std::string& text) { return Config::from_json(text).to_json(); }

// A stored time or rate as tables and reports print it: finite (a table would spell infinity or
// NaN as null) and, for times, > 0.
double readable_number(double v, const char* what, bool positive) {
  if (!std::isfinite(v) || (positive ? !(v > 0) : v < 0))
    throw UsageError(std::string(what) + " is " + std::to_string(v) +
                     (positive ? ", not a finite number > 0" : ", not a finite number >= 0"));
  return v;
}

} // namespace

namespace {
// $XDG_CACHE_HOME/ktune, else ~/.cache/ktune, else the temporary folder's ktune.
std::filesystem::path cache_folder() {
  std::filesystem::path base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) base = x;
  else if (const char* h = std::getenv("HOME"); h && *h) base = std::filesystem::path(h) / ".cache";
  else base = std::filesystem::temp_directory_path();
  return base / "ktune";
}
} // namespace

std::string default_db_path() {
  if (const char* p = std::getenv("KTUNE_DB"); p && *p) return p;
  return (cache_folder() / "ktune.db").string();
}

std::string default_cubin_cache_path() {
  if (const char* p = std::getenv("KTUNE_CUBIN_CACHE")) return p; // set but empty: off
  return (cache_folder() / "cubins.db").string();
}

int64_t default_cubin_cache_max_mb() {
  const char* v = std::getenv("KTUNE_CUBIN_CACHE_MAX_MB");
  if (!v) return kDefaultCubinCacheMaxMb;
  char* end = nullptr;
  errno = 0;
  const long long mb = std::strtoll(v, &end, 10);
  if (!*v || *end || errno || mb < 0 || mb > (int64_t(1) << 40))
    throw UsageError(std::string("KTUNE_CUBIN_CACHE_MAX_MB='") + v + "' is not a size in MB (a whole number >= 0; 0: no limit)");
  return mb;
}

Store::Store(const std::string& path, bool read_only) : path_(path) {
  if (!read_only) {
    const auto dir = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    if (ec) throw Error("cannot create the folder of database " + path + ": " + ec.message());
  }
  const int flags = read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error("sqlite3_open_v2 failed on " + path + ": " + msg);
  }
  // Writers wait for each other instead of failing; a trial commit takes milliseconds.
  sqlite3_busy_timeout(db_, 60000);
  // A reader of a file no ktune wrote (an empty file, another program's database) would fail at
  // its first query on a missing table; say what the file is instead. ktune's databases carry
  // their schema version from the moment they are created.
  if (read_only && schema_version() == 0) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw UsageError("database " + path + " holds no ktune tables (an empty file, or another program's database)");
  }
  if (read_only) return;
  exec("PRAGMA journal_mode=WAL", "enabling WAL");
  exec("PRAGMA foreign_keys=ON", "enabling foreign keys");
  migrate();
}

Store::~Store() {
  if (db_) sqlite3_close(db_);
}

void Store::exec(const std::string& sql, const char* what) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw Error(std::string("sqlite3_exec failed on ") + path_ + " while " + what + ": " + msg);
  }
}

// Trials' gate column as a SELECT reads it: 0 in a database opened read-only before its migration
// to schema 4 added the column (its trials are all older than any gate).
std::string Store::gate_column() const { return schema_version() >= 4 ? "t.gate" : "0"; }

int Store::schema_version() const {
  Stmt s(db_, "PRAGMA user_version", path_);
  s.step();
  return int(s.i64(0));
}

void Store::migrate() {
  // Opening a current database writes nothing: a read-only command or a refused import leaves the
  // file byte-for-byte as it was.
  if (schema_version() == kSchemaVersion) return;
  Transaction tx(db_, path_);
  const int v = schema_version(); // read under the write lock: two openers cannot both migrate
  if (v > kSchemaVersion)
    throw Error("database " + path_ + " has schema version " + std::to_string(v) + ", newer than this ktune's " +
                std::to_string(kSchemaVersion) + ": upgrade ktune");
  for (int i = v; i < kSchemaVersion; ++i) exec(kMigrations[i], "migrating the schema");
  exec("PRAGMA user_version = " + std::to_string(kSchemaVersion), "setting the schema version");
  tx.commit();
}

// Runs one writer in its own transaction: the public single-row writers.
template <class F>
int64_t in_transaction(sqlite3* db, const std::string& path, F&& write) {
  Transaction tx(db, path);
  const int64_t id = write();
  tx.commit();
  return id;
}

int64_t Store::device_id(const DeviceInfo& d) {
  return in_transaction(db_, path_, [&] { return device_row(d); });
}

int64_t Store::device_row(const DeviceInfo& d) {
  const std::string uuid = d.uuid.empty() ? d.name + "/" + d.arch : d.uuid;
  Stmt ins(db_,
           "INSERT OR IGNORE INTO devices (uuid, name, arch, sm_count, memory_bytes, sm_clock_khz, driver_version) "
           "VALUES (?, ?, ?, ?, ?, ?, ?)",
           path_);
  ins.bind(1, uuid).bind(2, d.name).bind(3, d.arch).bind(4, d.sm_count).bind(5, int64_t(d.total_memory));
  ins.bind(6, d.sm_clock_khz).bind(7, d.driver_version);
  ins.step();
  Stmt sel(db_, "SELECT id FROM devices WHERE uuid = ?", path_);
  sel.bind(1, uuid);
  sel.step();
  return sel.i64(0);
}

int64_t Store::problem_id(const Problem& p) {
  return in_transaction(db_, path_, [&] { return problem_row(p); });
}

// The key names the problem (reads parse it back); the columns m, n, k hold the op's first three
// dimensions (0 where it has fewer), for people who query the database with SQL.
int64_t Store::problem_row(const Problem& p) {
  validate_key(p); // a key no reader could parse back never enters the database
  Stmt ins(db_, "INSERT OR IGNORE INTO problems (key, op, dtype, layout, m, n, k, align) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
           path_);
  auto dim = [&](size_t i) { return i < p.dims.size() ? p.dims[i] : int64_t(0); };
  ins.bind(1, p.key()).bind(2, p.op).bind(3, std::string(to_string(p.dtype))).bind(4, p.layout);
  ins.bind(5, dim(0)).bind(6, dim(1)).bind(7, dim(2)).bind(8, p.align);
  ins.step();
  Stmt sel(db_, "SELECT id FROM problems WHERE key = ?", path_);
  sel.bind(1, p.key());
  sel.step();
  return sel.i64(0);
}

int64_t Store::record_trial(int64_t device, int64_t problem, const std::string& arch, const TrialRecord& t) {
  return in_transaction(db_, path_, [&] { return trial_row(device, problem, arch, t); });
}

int64_t Store::trial_row(int64_t device, int64_t problem, const std::string& arch, const TrialRecord& t,
                         bool* wrote) {
  // A row of the same key recorded under an older gate is replaced (a re-verification); any
  // other earlier row is kept as it was.
  Stmt ins(db_,
           "INSERT INTO trials (device_id, problem_id, family, config, config_hash, template_hash, status, "
           "error, median_ms, min_ms, p20_ms, p80_ms, reps, tflops, registers, smem_bytes, spill_bytes, compile_s, "
           "bench_s, ktune_version, rel_error, gate) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
           "ON CONFLICT (device_id, problem_id, family, template_hash, config_hash) DO UPDATE SET "
           "config = excluded.config, status = excluded.status, error = excluded.error, median_ms = excluded.median_ms, "
           "min_ms = excluded.min_ms, p20_ms = excluded.p20_ms, p80_ms = excluded.p80_ms, reps = excluded.reps, "
           "tflops = excluded.tflops, registers = excluded.registers, smem_bytes = excluded.smem_bytes, "
           "spill_bytes = excluded.spill_bytes, compile_s = excluded.compile_s, bench_s = excluded.bench_s, "
           "ktune_version = excluded.ktune_version, rel_error = excluded.rel_error, gate = excluded.gate, "
           "created_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE trials.gate < excluded.gate",
           path_);
  ins.bind(1, device).bind(2, problem).bind(3, t.family).bind(4, t.config_json).bind(5, t.config_hash);
  ins.bind(6, t.template_hash).bind(7, std::string(to_string(t.status))).bind(8, t.error);
  ins.bind(9, t.timing.median_ms).bind(10, t.timing.min_ms).bind(11, t.timing.p20_ms).bind(12, t.timing.p80_ms);
  ins.bind(13, t.timing.reps).bind(14, t.tflops).bind(15, t.registers).bind(16, t.smem_bytes).bind(17, t.spill_bytes);
  ins.bind(18, t.compile_s).bind(19, t.bench_s).bind(20, std::string(KTUNE_VERSION)).bind(21, t.rel_error);
  ins.bind(22, t.gate);
  ins.step();
  const bool written = sqlite3_changes(db_) > 0; // 0: the key was recorded before; that row stays
  Stmt sel(db_,
           "SELECT id FROM trials WHERE device_id = ? AND problem_id = ? AND family = ? AND template_hash = ? AND "
           "config_hash = ?",
           path_);
  sel.bind(1, device).bind(2, problem).bind(3, t.family).bind(4, t.template_hash).bind(5, t.config_hash);
  sel.step();
  const int64_t id = sel.i64(0);
  if (written) update_best(arch, problem);
  if (wrote) *wrote = written;
  return id;
}

namespace {

// The op of a problem key of a user kernel ("name@version/...") whose spec this process has not
// loaded (another program's problem, not a bad row), else empty.
std::string unloaded_user_kernel(const std::string& key) {
  std::string op = key.substr(0, key.find('/'));
  const bool unloaded = op.find('@') != std::string::npos &&
                        std::none_of(ops().begin(), ops().end(), [&](const OpInfo& o) { return o.name == op; });
  return unloaded ? op : std::string();
}

// Whether a trial's config may be a problem's best: a config this ktune's family rejects for the
// problem (recorded by a ktune whose rules were looser, or imported before they tightened) would
// be skipped by every runtime that reads the best (runtime/selection.cpp) and left out by `ktune
// export`, the problem losing its tuned entry; its next fastest trial is its best instead. What
// this process cannot judge is taken as it is: a family or problem of a user kernel whose spec it
// has not loaded, an arch without nominal limits (`limits` null; else DeviceInfo::nominal(arch)).
bool servable(const std::string& problem_key, const std::string& family, const std::string& config,
              const DeviceInfo* limits) {
  if (!limits || !known_family(family)) return true;
  TableEntry e;
  try {
    e.problem = Problem::parse_key(problem_key);
  } catch (const Error&) {
    return !unloaded_user_kernel(problem_key).empty(); // else a key no reader can parse
  }
  e.family = family, e.config_json = config;
  return invalid_reason(e, *limits).empty();
}

} // namespace

// best for (arch, problem): the ok trial of the newest gate, fastest within it, over every device
// of the arch (an imported table's pseudo-device included), of those servable(). Chosen from the
// trials rather than compared with the row there: a re-verification may have turned the best into
// a wrong result, and an entry of a newer gate must displace a faster one an older gate let through.
void Store::update_best(const std::string& arch, int64_t problem) {
  Stmt pick(db_,
            "SELECT t.id, t.family, t.config, t.median_ms, t.tflops, p.key FROM trials t JOIN devices d ON d.id = t.device_id "
            "JOIN problems p ON p.id = t.problem_id WHERE d.arch = ? AND t.problem_id = ? AND t.status = 'ok' AND "
            "t.median_ms > 0 ORDER BY t.gate DESC, t.median_ms ASC, t.id ASC",
            path_);
  pick.bind(1, arch).bind(2, problem);
  std::optional<DeviceInfo> limits; // the arch's nominal limits, built once for every candidate
  try {
    limits = DeviceInfo::nominal(arch);
  } catch (const Error&) { // an arch without nominal limits: its trials are taken as recorded
  }
  bool found = false;
  while (!found && pick.step()) found = servable(pick.text(5), pick.text(1), pick.text(2), limits ? &*limits : nullptr);
  if (!found) {
    Stmt del(db_, "DELETE FROM best WHERE arch = ? AND problem_id = ?", path_);
    del.bind(1, arch).bind(2, problem);
    del.step();
    return;
  }
  Stmt up(db_,
          "INSERT OR REPLACE INTO best (arch, problem_id, family, config, time_ms, tflops, trial_id) "
          "VALUES (?, ?, ?, ?, ?, ?, ?)",
          path_);
  up.bind(1, arch).bind(2, problem).bind(3, pick.text(1)).bind(4, pick.text(2)).bind(5, pick.dbl(3));
  up.bind(6, pick.dbl(4)).bind(7, pick.i64(0));
  up.step();
}

std::optional<Store::Outcome> Store::recorded_outcome(int64_t device, int64_t problem, const std::string& family,
                                                      const std::string& template_hash, const std::string& config_hash) const {
  Stmt s(db_,
         "SELECT status, median_ms, gate FROM trials WHERE device_id = ? AND problem_id = ? AND family = ? AND "
         "template_hash = ? AND config_hash = ?",
         path_);
  s.bind(1, device).bind(2, problem).bind(3, family).bind(4, template_hash).bind(5, config_hash);
  if (!s.step()) return std::nullopt;
  TrialStatus status;
  try {
    status = parse_trial_status(s.text(0));
  } catch (const Error& err) {
    SkippedRows(path_, "trial").add("family " + family + ", config " + config_hash, err);
    return std::nullopt; // measured again rather than resumed from a row nobody can read
  }
  if (status == TrialStatus::ok && s.i64(2) < kGateVersion) return std::nullopt; // to be verified again
  return Outcome{status, s.dbl(1)};
}

std::vector<TrialRecord> Store::trials(int64_t device, int64_t problem) const {
  Stmt s(db_,
         ("SELECT family, config, config_hash, template_hash, status, error, median_ms, min_ms, p20_ms, p80_ms, reps, "
          "tflops, rel_error, registers, smem_bytes, spill_bytes, compile_s, bench_s, " +
          gate_column() + " FROM trials t WHERE device_id = ? AND problem_id = ? ORDER BY id")
             .c_str(),
         path_);
  s.bind(1, device).bind(2, problem);
  std::vector<TrialRecord> out;
  SkippedRows skipped(path_, "trials");
  while (s.step()) {
    TrialRecord t;
    try {
      t.status = parse_trial_status(s.text(4));
    } catch (const Error& err) {
      skipped.add("a trial of family " + s.text(0), err);
      continue;
    }
    t.family = s.text(0), t.config_json = s.text(1), t.config_hash = s.text(2), t.template_hash = s.text(3);
    t.error = s.text(5);
    t.timing = read_timing(s, 6);
    t.tflops = s.dbl(11), t.rel_error = s.dbl(12);
    t.registers = int(s.i64(13)), t.smem_bytes = int(s.i64(14)), t.spill_bytes = int(s.i64(15));
    t.compile_s = s.dbl(16), t.bench_s = s.dbl(17);
    t.gate = int(s.i64(18));
    out.push_back(std::move(t));
  }
  return out;
}

int64_t Store::count_trials() const {
  Stmt s(db_, "SELECT COUNT(*) FROM trials", path_);
  s.step();
  return s.i64(0);
}

int64_t Store::count_trials(int64_t device, int64_t problem) const {
  Stmt s(db_, "SELECT COUNT(*) FROM trials WHERE device_id = ? AND problem_id = ?", path_);
  s.bind(1, device).bind(2, problem);
  s.step();
  return s.i64(0);
}

void Store::record_baseline(int64_t device, int64_t problem, const std::string& library, const Timing& t, double tflops) {
  Stmt s(db_,
         "INSERT OR REPLACE INTO baselines (device_id, problem_id, library, median_ms, min_ms, p20_ms, p80_ms, reps, "
         "tflops) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
         path_);
  s.bind(1, device).bind(2, problem).bind(3, library).bind(4, t.median_ms).bind(5, t.min_ms).bind(6, t.p20_ms);
  s.bind(7, t.p80_ms).bind(8, t.reps).bind(9, tflops);
  s.step();
}

std::optional<Timing> Store::baseline(int64_t device, int64_t problem, const std::string& library) const {
  Stmt s(db_,
         "SELECT median_ms, min_ms, p20_ms, p80_ms, reps FROM baselines WHERE device_id = ? AND problem_id = ? AND "
         "library = ?",
         path_);
  s.bind(1, device).bind(2, problem).bind(3, library);
  if (!s.step()) return std::nullopt;
  return read_timing(s, 0);
}

std::optional<BestRecord> Store::best(const std::string& arch, const std::string& problem_key) const {
  Stmt s(db_,
         (std::string("SELECT p.key, b.family, b.config, b.time_ms, b.tflops, b.trial_id, ") + kBestBaselineSql +
          " FROM best b JOIN problems p ON p.id = b.problem_id JOIN trials t ON t.id = b.trial_id "
          "JOIN devices d ON d.id = t.device_id WHERE b.arch = ? AND p.key = ?")
             .c_str(),
         path_);
  s.bind(1, arch).bind(2, problem_key);
  if (!s.step()) return std::nullopt;
  BestRecord b;
  SkippedRows skipped(path_, "best entry");
  try {
    Problem::parse_key(s.text(0));
    b.config_json = readable_config(s.text(2));
    b.time_ms = readable_number(s.dbl(3), "time_ms", true);
  } catch (const Error& err) {
    skipped.add("problem '" + s.text(0) + "' (" + arch + ", family " + s.text(1) + ")", err);
    return std::nullopt;
  }
  b.problem_key = s.text(0), b.family = s.text(1);
  b.tflops = s.dbl(4), b.trial_id = s.i64(5);
  if (!s.null(6)) b.cublas_ms = s.dbl(6);
  return b;
}

void Store::put_binary(const std::string& key, const std::string& arch, const std::vector<char>& cubin,
                       const std::vector<std::string>& lowered_names) {
  std::string names;
  for (const auto& n : lowered_names) names += n + "\n";
  Stmt s(db_,
         "INSERT INTO binaries (cache_key, arch, cubin, lowered_names, used) "
         "VALUES (?, ?, ?, ?, (SELECT COALESCE(MAX(used), 0) + 1 FROM binaries)) "
         "ON CONFLICT (cache_key) DO UPDATE SET used = excluded.used",
         path_);
  s.bind(1, key).bind(2, arch).bind_blob(3, cubin.data(), cubin.size()).bind(4, names);
  s.step();
}

bool Store::touch_binary(const std::string& key) {
  Stmt s(db_, "UPDATE binaries SET used = (SELECT COALESCE(MAX(used), 0) + 1 FROM binaries) WHERE cache_key = ?", path_);
  s.bind(1, key);
  s.step();
  return sqlite3_changes(db_) > 0;
}

int64_t Store::touch_binaries(const std::vector<std::string>& keys) {
  Transaction tx(db_, path_);
  int64_t n = 0;
  for (const auto& key : keys) n += touch_binary(key);
  tx.commit();
  return n;
}

Store::Trimmed Store::trim_binaries(int64_t above, int64_t down_to) {
  Trimmed out;
  Transaction tx(db_, path_);
  int64_t total = 0;
  {
    // length() of a blob reads its size from the record header, not the blob.
    Stmt sum(db_, "SELECT COALESCE(SUM(LENGTH(cubin)), 0) FROM binaries", path_);
    sum.step();
    total = sum.i64(0);
  }
  if (total <= above) return out;
  std::vector<std::string> doomed;
  {
    Stmt lru(db_, "SELECT cache_key, LENGTH(cubin) FROM binaries ORDER BY used, rowid", path_);
    while (total - out.bytes > down_to && lru.step()) {
      doomed.push_back(lru.text(0));
      out.bytes += lru.i64(1);
    }
  }
  for (const auto& key : doomed) {
    Stmt del(db_, "DELETE FROM binaries WHERE cache_key = ?", path_);
    del.bind(1, key);
    del.step();
  }
  out.cubins = int64_t(doomed.size());
  tx.commit();
  return out;
}

void Store::set_busy_timeout(int ms) { sqlite3_busy_timeout(db_, ms); }

void Store::set_durable(bool durable) {
  exec(durable ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL", "setting the durability of commits");
}

std::vector<Store::BinaryCount> Store::binary_counts() const {
  Stmt s(db_, "SELECT arch, COUNT(*), COALESCE(SUM(LENGTH(cubin)), 0) FROM binaries GROUP BY arch ORDER BY arch", path_);
  std::vector<BinaryCount> out;
  while (s.step()) out.push_back({s.text(0), s.i64(1), s.i64(2)});
  return out;
}

int64_t Store::clear_binaries() {
  int64_t n = 0;
  {
    Transaction tx(db_, path_);
    Stmt count(db_, "SELECT COUNT(*) FROM binaries", path_);
    count.step();
    n = count.i64(0);
    exec("DELETE FROM binaries", "deleting the cached cubins");
    tx.commit();
  }
  exec("VACUUM", "returning the cubins' space to the file system");
  return n;
}

bool Store::get_binary(const std::string& key, std::vector<char>* cubin, std::vector<std::string>* lowered_names) const {
  Stmt s(db_, "SELECT cubin, lowered_names FROM binaries WHERE cache_key = ?", path_);
  s.bind(1, key);
  if (!s.step()) return false;
  *cubin = s.blob(0);
  lowered_names->clear();
  const std::string names = s.text(1);
  size_t start = 0;
  for (size_t nl; (nl = names.find('\n', start)) != std::string::npos; start = nl + 1)
    lowered_names->push_back(names.substr(start, nl - start));
  return true;
}

} // namespace ktune

namespace ktune {

Table Store::export_table(const std::string& arch, const std::string& family) const {
  Stmt s(db_,
         (std::string("SELECT p.key, b.arch, b.family, b.config, b.time_ms, b.tflops, t.template_hash, ") +
          kBestBaselineSql +
          ", d.name, d.sm_count, " + gate_column() + " FROM best b JOIN problems p ON p.id = b.problem_id "
          "JOIN trials t ON t.id = b.trial_id JOIN devices d ON d.id = t.device_id "
          "WHERE (? = '' OR b.arch = ?) AND (? = '' OR b.family = ?) ORDER BY p.key")
             .c_str(),
         path_);
  s.bind(1, arch).bind(2, arch).bind(3, family).bind(4, family);
  Table t;
  SkippedRows skipped(path_, "best entries");
  while (s.step()) {
    TableEntry e;
    try {
      e.problem = Problem::parse_key(s.text(0));
      e.config_json = readable_config(s.text(3));
      e.time_ms = readable_number(s.dbl(4), "time_ms", true);
      e.tflops = readable_number(s.dbl(5), "tflops", false);
      if (!s.null(7)) e.cublas_ms = readable_number(s.dbl(7), "cublas_ms", true);
    } catch (const Error& err) {
      // A user kernel's entry ("name@version/...") whose spec this process has not loaded is
      // another program's, not a bad row: left out, and counted for the caller (export says so).
      if (const std::string op = unloaded_user_kernel(s.text(0)); !op.empty()) {
        ++t.other_kernel_entries;
        if (std::find(t.other_kernels.begin(), t.other_kernels.end(), op) == t.other_kernels.end()) t.other_kernels.push_back(op);
        continue;
      }
      skipped.add("problem '" + s.text(0) + "' (" + s.text(1) + ", family " + s.text(2) + ")", err);
      continue;
    }
    e.arch = s.text(1);
    e.family = s.text(2);
    e.template_hash = s.text(6);
    e.gate = int(s.i64(10));
    if (t.entries.empty()) {
      t.arch = e.arch, t.device_name = s.text(8), t.sm_count = int(s.i64(9));
    } else if (e.arch != t.arch) {
      throw UsageError("database " + path_ + " holds results for " + t.arch + " and " + e.arch +
                       ": a table holds one arch, choose it with --arch");
    }
    t.entries.push_back(std::move(e));
  }
  return t;
}

size_t Store::import_table(const Table& t) {
  Transaction tx(db_, path_);
  DeviceInfo d;
  d.name = t.device_name;
  d.arch = t.arch;
  d.sm_count = t.sm_count;
  d.uuid = "table:" + t.device_name + "/" + t.arch; // imported rows are told apart from measured ones
  const int64_t device = device_row(d);
  size_t improved = 0;
  for (const auto& e : t.entries) {
    const int64_t problem = problem_row(e.problem);
    const auto before = best_time(t.arch, problem);
    TrialRecord r;
    r.family = e.family;
    r.config_json = e.config_json;
    r.config_hash = fnv1a_hex(e.config_json);
    r.template_hash = e.template_hash;
    r.status = TrialStatus::ok;
    r.timing = Timing{e.time_ms, e.time_ms, e.time_ms, e.time_ms, 0};
    r.tflops = e.tflops;
    r.error = "imported from a tuning table";
    r.gate = e.gate; // the table's word for it: its trial ran there
    trial_row(device, problem, t.arch, r);
    if (e.cublas_ms) {
      Stmt b(db_,
             "INSERT OR REPLACE INTO baselines (device_id, problem_id, library, median_ms, min_ms, p20_ms, p80_ms, reps, "
             "tflops) VALUES (?, ?, 'cublas', ?, ?, ?, ?, 0, ?)",
             path_);
      const double tf = tflops(e.problem, *e.cublas_ms);
      b.bind(1, device).bind(2, problem).bind(3, *e.cublas_ms).bind(4, *e.cublas_ms).bind(5, *e.cublas_ms);
      b.bind(6, *e.cublas_ms).bind(7, tf);
      b.step();
    }
    const auto after = best_time(t.arch, problem);
    if (after && (!before || *after < *before)) ++improved;
  }
  tx.commit();
  return improved;
}

std::optional<double> Store::best_time(const std::string& arch, int64_t problem) const {
  Stmt s(db_, "SELECT time_ms FROM best WHERE arch = ? AND problem_id = ?", path_);
  s.bind(1, arch).bind(2, problem);
  if (!s.step()) return std::nullopt;
  return s.dbl(0);
}

std::vector<std::string> Store::best_problem_keys(const std::string& op_prefix) const {
  Stmt s(db_, "SELECT DISTINCT p.key FROM best b JOIN problems p ON p.id = b.problem_id WHERE substr(p.key, 1, ?) = ? ORDER BY p.key",
         path_);
  s.bind(1, int64_t(op_prefix.size())).bind(2, op_prefix);
  std::vector<std::string> keys;
  while (s.step()) keys.push_back(s.text(0));
  return keys;
}

std::vector<std::string> Store::best_archs() const {
  Stmt s(db_, "SELECT DISTINCT arch FROM best ORDER BY arch", path_);
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

namespace {

// The one reader of trial rows (trial_rows, export_trials): every trial of arch (nullopt: of every
// arch) with its device, problem and cuBLAS baseline, ordered by device, problem and recording
// order. What every caller needs is checked here (the problem key, the status, the costs); check
// adds a caller's own (it throws to skip the row, and may rewrite a field it reads), and name says
// which row the warning about skipped rows names first.
std::vector<TrialRow> read_trial_rows(sqlite3* db, const std::string& path, const std::optional<std::string>& arch,
                                      void (*check)(TrialRow&), std::string (*name)(const TrialRow&)) {
  Stmt s(db,
         "SELECT t.id, t.device_id, t.problem_id, d.name, d.arch, d.uuid, d.sm_count, p.key, t.family, t.config, "
         "t.status, t.median_ms, t.tflops, t.compile_s, t.bench_s, t.created_at, bl.median_ms "
         "FROM trials t JOIN devices d ON d.id = t.device_id JOIN problems p ON p.id = t.problem_id "
         "LEFT JOIN baselines bl ON bl.device_id = t.device_id AND bl.problem_id = t.problem_id AND bl.library = 'cublas' "
         "WHERE (? = 0 OR d.arch = ?) ORDER BY t.device_id, t.problem_id, t.id",
         path);
  s.bind(1, arch ? 1 : 0).bind(2, arch.value_or(""));
  std::vector<TrialRow> out;
  SkippedRows skipped(path, "trials");
  while (s.step()) {
    TrialRow r;
    r.id = s.i64(0), r.device_id = s.i64(1), r.problem_id = s.i64(2);
    r.device_name = s.text(3), r.arch = s.text(4);
    r.imported = s.text(5).rfind("table:", 0) == 0; // import_table's device uuid
    r.sm_count = int(s.i64(6));
    r.problem_key = s.text(7), r.family = s.text(8), r.config_json = s.text(9);
    r.median_ms = s.dbl(11), r.tflops = s.dbl(12);
    r.created_at = s.text(15);
    if (!s.null(16)) r.cublas_ms = s.dbl(16);
    try {
      r.problem = Problem::parse_key(r.problem_key);
      r.status = parse_trial_status(s.text(10));
      r.compile_s = readable_number(s.dbl(13), "compile_s", false);
      r.bench_s = readable_number(s.dbl(14), "bench_s", false);
      check(r);
    } catch (const Error& err) {
      skipped.add(name(r), err);
      continue;
    }
    out.push_back(std::move(r));
  }
  return out;
}

} // namespace

TrialSet Store::export_trial_set(const TrialSetFilter& f) const {
  std::string keys;
  for (size_t i = 0; i < f.problem_keys.size(); ++i) keys += i ? ",?" : "?";
  const std::string where = " WHERE (? = '' OR d.uuid = ?)" + (keys.empty() ? std::string() : " AND p.key IN (" + keys + ")");
  // Binds the filter's values; returns the next free index.
  auto bind_filter = [&](Stmt& st) {
    st.bind(1, f.device_uuid).bind(2, f.device_uuid);
    int i = 3;
    for (const auto& k : f.problem_keys) st.bind(i++, k);
    return i;
  };
  Stmt s(db_,
         ("SELECT t.id, d.uuid, p.key, t.family, t.config, t.config_hash, t.template_hash, t.status, t.error, t.median_ms, "
          "t.min_ms, t.p20_ms, t.p80_ms, t.reps, t.tflops, t.rel_error, t.registers, t.smem_bytes, t.spill_bytes, "
          "t.compile_s, t.bench_s, " + gate_column() +
          " FROM trials t JOIN devices d ON d.id = t.device_id JOIN problems p ON p.id = t.problem_id" + where +
          " AND t.id > ? ORDER BY t.id")
             .c_str(),
         path_);
  s.bind(bind_filter(s), f.after_id);
  TrialSet set;
  std::vector<std::string> uuids;
  SkippedRows skipped(path_, "trials");
  while (s.step()) {
    SetTrial st;
    TrialRecord& t = st.record;
    try { // a row no reader could take in (bad status or config) stays behind, named on stderr
      t.status = parse_trial_status(s.text(7));
      t.config_json = readable_config(s.text(4));
    } catch (const Error& err) {
      skipped.add("trial " + std::to_string(s.i64(0)) + " (" + s.text(2) + ")", err);
      continue;
    }
    st.id = s.i64(0), st.device_uuid = s.text(1), st.problem_key = s.text(2);
    t.family = s.text(3), t.config_hash = s.text(5), t.template_hash = s.text(6), t.error = s.text(8);
    t.timing = read_timing(s, 9);
    t.tflops = s.dbl(14), t.rel_error = s.dbl(15);
    t.registers = int(s.i64(16)), t.smem_bytes = int(s.i64(17)), t.spill_bytes = int(s.i64(18));
    t.compile_s = s.dbl(19), t.bench_s = s.dbl(20), t.gate = int(s.i64(21));
    if (std::find(uuids.begin(), uuids.end(), st.device_uuid) == uuids.end()) uuids.push_back(st.device_uuid);
    set.trials.push_back(std::move(st));
  }
  Stmt b(db_,
         ("SELECT d.uuid, p.key, b.library, b.median_ms, b.min_ms, b.p20_ms, b.p80_ms, b.reps, b.tflops FROM baselines b "
          "JOIN devices d ON d.id = b.device_id JOIN problems p ON p.id = b.problem_id" + where)
             .c_str(),
         path_);
  bind_filter(b);
  while (b.step()) {
    SetBaseline sb;
    sb.device_uuid = b.text(0), sb.problem_key = b.text(1), sb.library = b.text(2);
    sb.timing = read_timing(b, 3);
    sb.tflops = b.dbl(8);
    if (!(sb.timing.median_ms > 0)) continue; // nothing a reader could use
    if (std::find(uuids.begin(), uuids.end(), sb.device_uuid) == uuids.end()) uuids.push_back(sb.device_uuid);
    set.baselines.push_back(std::move(sb));
  }
  Stmt d(db_, "SELECT uuid, name, arch, sm_count, memory_bytes, sm_clock_khz, driver_version FROM devices WHERE uuid = ?", path_);
  for (const auto& uuid : uuids) {
    d.reset();
    d.bind(1, uuid);
    d.step();
    DeviceInfo info;
    info.uuid = d.text(0), info.name = d.text(1), info.arch = d.text(2);
    info.sm_count = int(d.i64(3)), info.total_memory = d.i64(4), info.sm_clock_khz = int(d.i64(5));
    info.driver_version = int(d.i64(6));
    set.devices.push_back(std::move(info));
  }
  return set;
}

Store::SetImport Store::import_trial_set(const TrialSet& set) {
  // Problems and archs are resolved before the transaction: a key no reader can parse fails the
  // whole import with nothing written.
  std::map<std::string, Problem> problems;
  for (const auto& t : set.trials) problems.emplace(t.problem_key, Problem::parse_key(t.problem_key));
  for (const auto& b : set.baselines) problems.emplace(b.problem_key, Problem::parse_key(b.problem_key));
  std::map<std::string, const DeviceInfo*> devices;
  for (const auto& d : set.devices) devices[d.uuid] = &d;
  auto device_of = [&](const std::string& uuid) -> const DeviceInfo& {
    const auto it = devices.find(uuid);
    if (it == devices.end()) throw UsageError("trial set: device " + uuid + " is not among its devices");
    return *it->second;
  };
  for (const auto& t : set.trials) device_of(t.device_uuid);
  for (const auto& b : set.baselines) device_of(b.device_uuid);
  SetImport out;
  Transaction tx(db_, path_);
  std::map<std::string, int64_t> device_ids, problem_ids;
  for (const auto& d : set.devices) device_ids[d.uuid] = device_row(d);
  for (const auto& [key, p] : problems) problem_ids[key] = problem_row(p);
  for (const auto& t : set.trials) {
    bool written = false;
    trial_row(device_ids.at(t.device_uuid), problem_ids.at(t.problem_key), device_of(t.device_uuid).arch, t.record,
              &written);
    ++(written ? out.added : out.already);
  }
  Stmt ins(db_,
           "INSERT INTO baselines (device_id, problem_id, library, median_ms, min_ms, p20_ms, p80_ms, reps, tflops) "
           "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (device_id, problem_id, library) DO UPDATE SET "
           "median_ms = excluded.median_ms, min_ms = excluded.min_ms, p20_ms = excluded.p20_ms, p80_ms = excluded.p80_ms, "
           "reps = excluded.reps, tflops = excluded.tflops, created_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
           "WHERE excluded.median_ms < baselines.median_ms",
           path_);
  for (const auto& b : set.baselines) {
    ins.reset();
    ins.bind(1, device_ids.at(b.device_uuid)).bind(2, problem_ids.at(b.problem_key)).bind(3, b.library);
    ins.bind(4, b.timing.median_ms).bind(5, b.timing.min_ms).bind(6, b.timing.p20_ms).bind(7, b.timing.p80_ms);
    ins.bind(8, b.timing.reps).bind(9, b.tflops);
    ins.step();
    out.baselines += sqlite3_changes(db_) > 0;
  }
  tx.commit();
  return out;
}

TrialLog Store::export_trials(const std::string& arch) const {
  // Checked as parse_trial_log checks it: what this writes, ktune simulate must read.
  std::vector<TrialRow> rows = read_trial_rows(
      db_, path_, arch,
      [](TrialRow& r) {
        r.config_json = readable_config(r.config_json);
        r.median_ms = r.status == TrialStatus::ok ? readable_number(r.median_ms, "median_ms", true) : 0;
        if (r.family.empty()) throw UsageError("no family");
      },
      [](const TrialRow& r) { return "problem '" + r.problem_key + "' (family " + r.family + ")"; });
  // Grouped by problem (the devices of one arch together), each in recording order.
  std::sort(rows.begin(), rows.end(),
            [](const TrialRow& a, const TrialRow& b) { return std::tie(a.problem_id, a.id) < std::tie(b.problem_id, b.id); });
  TrialLog log;
  log.arch = arch;
  int64_t last_problem = -1;
  for (auto& r : rows) {
    if (log.problems.empty()) log.device_name = r.device_name, log.sm_count = r.sm_count;
    if (r.problem_id != last_problem) {
      last_problem = r.problem_id;
      ProblemLog pl;
      pl.problem = std::move(r.problem);
      // The baseline of the device that recorded the problem's first trial.
      if (r.cublas_ms && std::isfinite(*r.cublas_ms) && *r.cublas_ms > 0) pl.cublas_ms = r.cublas_ms;
      log.problems.push_back(std::move(pl));
    }
    LoggedTrial t;
    t.family = std::move(r.family);
    t.config_json = std::move(r.config_json);
    t.status = to_string(r.status);
    t.time_ms = r.median_ms;
    t.compile_s = r.compile_s;
    t.bench_s = r.bench_s;
    log.problems.back().trials.push_back(std::move(t));
  }
  return log;
}

std::vector<TrialRow> Store::trial_rows(const std::string& arch) const {
  return read_trial_rows(
      db_, path_, arch.empty() ? std::nullopt : std::optional<std::string>(arch),
      [](TrialRow& r) {
        r.median_ms = readable_number(r.median_ms, "median_ms", false);
        r.tflops = readable_number(r.tflops, "tflops", false);
        if (r.cublas_ms) r.cublas_ms = readable_number(*r.cublas_ms, "cublas_ms", true);
      },
      [](const TrialRow& r) { return "trial " + std::to_string(r.id) + " (problem '" + r.problem_key + "')"; });
}

std::vector<std::string> Store::trial_archs() const {
  Stmt s(db_, "SELECT DISTINCT d.arch FROM trials t JOIN devices d ON d.id = t.device_id ORDER BY d.arch", path_);
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

} // namespace ktune
