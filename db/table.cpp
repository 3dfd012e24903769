#include "db/table.h"

#include <algorithm>
#include <climits>
#include <mutex>
#include <nlohmann/json.hpp>

#include "ktune/config.h"
#include "ktune/device_info.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "core/json_text.h"
#include "core/text_file.h"
#include "core/trial.h"

namespace ktune {
namespace {

using json = nlohmann::ordered_json;

const json& field(const json& j, const char* name, const std::string& where) {
  if (!j.contains(name)) throw UsageError(where + ": missing field \"" + name + "\"");
  return j[name];
}

std::string str(const json& j, const char* name, const std::string& where) {
  const json& v = field(j, name, where);
  if (!v.is_string() || v.get<std::string>().empty()) throw UsageError(where + ": \"" + name + "\" must be a non-empty string");
  return v.get<std::string>();
}

int64_t positive_int(const json& j, const char* name, const std::string& where) {
  const json& v = field(j, name, where);
  if (!v.is_number_integer() || v.get<int64_t>() <= 0)
    throw UsageError(where + ": \"" + name + "\" must be an integer > 0, got " + v.dump());
  return v.get<int64_t>();
}

double positive_number(const json& j, const char* name, const std::string& where) {
  const json& v = field(j, name, where);
  if (!v.is_number() || !(v.get<double>() > 0)) throw UsageError(where + ": \"" + name + "\" must be a number > 0, got " + v.dump());
  return v.get<double>();
}

double non_negative_number(const json& j, const char* name, const std::string& where) {
  const json& v = field(j, name, where);
  if (!v.is_number() || !(v.get<double>() >= 0))
    throw UsageError(where + ": \"" + name + "\" must be a number >= 0, got " + v.dump());
  return v.get<double>();
}

// Parses text as a JSON object whose "schema" is exactly `schema`: the preamble of every
// versioned file ktune reads.
json parse_versioned(const std::string& text, const std::string& origin, const char* schema, const char* what) {
  check_json_depth(text, origin);
  json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    throw UsageError(origin + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw UsageError(origin + ": " + what + " must be a JSON object");
  const std::string found = str(j, "schema", origin);
  if (found != schema) throw UsageError(origin + ": unknown schema '" + found + "' (this ktune reads " + schema + ")");
  return j;
}

// The "device" object every versioned file carries: the GPU its figures were measured on.
void parse_device(const json& j, const std::string& origin, std::string& name, std::string& arch, int& sm_count) {
  const json& dev = field(j, "device", origin);
  if (!dev.is_object()) throw UsageError(origin + ": \"device\" must be an object");
  name = str(dev, "name", origin + " device");
  arch = str(dev, "arch", origin + " device");
  arch_number(arch); // validates
  const int64_t sms = positive_int(dev, "sm_count", origin + " device");
  if (sms > INT_MAX) throw UsageError(origin + " device: \"sm_count\" is out of range, got " + std::to_string(sms));
  sm_count = int(sms);
}

json device_json(const std::string& name, const std::string& arch, int sm_count) {
  return {{"name", name}, {"arch", arch}, {"sm_count", sm_count}};
}

// A problem as table entries and trial-log problems spell it: op (gemm when absent: tables
// written before ops had names), dtype, layout when the op has layouts, each dimension under the
// op's name for it (GEMM: m, n, k), align.
Problem parse_problem(const json& e, const std::string& where) {
  Problem p;
  try {
    const std::string op = e.contains("op") ? str(e, "op", where) : "gemm";
    const OpInfo& info = op_info(op);
    std::vector<int64_t> dims;
    for (const auto& d : info.dims) dims.push_back(positive_int(e, d.c_str(), where));
    p = Problem::make(op, dims, info.layouts.empty() ? std::string() : str(e, "layout", where),
                      parse_dtype(str(e, "dtype", where)));
  } catch (const UsageError& err) {
    const std::string msg = err.what();
    throw UsageError(msg.rfind(where, 0) == 0 ? msg : where + ": " + msg);
  }
  const int64_t align = positive_int(e, "align", where);
  // Class 2 exists for 2-byte elements only (an odd leading dimension of a bf16/f16 operand).
  const bool half = element_bytes(p.dtype) == 2;
  if (align != 4 && align != 8 && align != 16 && !(half && align == 2))
    throw UsageError(where + ": \"align\" must be " + (half ? "2, 4, 8 or 16" : "4, 8 or 16"));
  p.align = int(align);
  return p;
}

// The fields parse_problem reads, into j.
void put_problem(json& j, const Problem& p) {
  const OpInfo& info = op_info(p.op);
  j["op"] = p.op;
  j["dtype"] = to_string(p.dtype);
  if (!info.layouts.empty()) j["layout"] = p.layout;
  for (size_t i = 0; i < info.dims.size(); ++i) j[info.dims[i]] = p.dims[i];
  j["align"] = p.align;
}

// Config::from_json narrows every value to int: a value beyond int's range would wrap (4294967424
// becomes 128) and slip past the domain check as a different config than the file says.
void check_config_ints(const json& cfg, const std::string& where) {
  for (const auto& [k, v] : cfg.items()) {
    if (!v.is_number_integer()) continue; // from_json names it
    const bool fits = v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(INT_MAX)
                                             : v.get<int64_t>() >= INT_MIN && v.get<int64_t>() <= INT_MAX;
    if (!fits) throw UsageError(where + ": config parameter '" + k + "' is out of range, got " + v.dump());
  }
}

// The families, built once per state of the op list (register_op may add ops and theirs before
// use): invalid_reason runs on every entry a runtime reads, and builtin_families() builds every
// descriptor afresh.
const std::vector<Family>& families() {
  static std::mutex m;
  static std::vector<Family> all;
  static size_t built_for = 0;
  std::lock_guard<std::mutex> lock(m);
  if (built_for != ops().size()) all = builtin_families(), built_for = ops().size();
  return all;
}

bool is_constraint(const Family& f, const std::string& why) {
  return std::any_of(f.constraints().begin(), f.constraints().end(),
                     [&](const Family::Constraint& c) { return c.why == why; });
}

// device: the limits to check constraints against; null for the nominal limits of e.arch.
std::string checked_reason(const TableEntry& e, const DeviceInfo* device) {
  // A key no reader can parse back (a dimension beyond the op's limit) must never be stored.
  try {
    validate_key(e.problem);
  } catch (const UsageError& err) {
    return err.what();
  }
  const auto& all = families();
  const auto f = std::find_if(all.begin(), all.end(), [&](const Family& x) { return x.name() == e.family; });
  if (f == all.end()) {
    std::string known;
    for (const auto& x : all) known += (known.empty() ? "" : ", ") + x.name();
    return "unknown family '" + e.family + "' (known: " + known + ")";
  }
  // Without a device, constraints compare against the limits published for the arch, as
  // compiling for it does (compile_request), so an arch that cannot be compiled for is refused.
  DeviceInfo d;
  try {
    d = device ? *device : DeviceInfo::nominal(e.arch);
  } catch (const Error& err) {
    return err.what();
  }
  Config c;
  try {
    c = Config::from_json(e.config_json);
  } catch (const Error& err) {
    return err.what();
  }
  const std::vector<std::string> why = f->violations(f->upgraded(c), e.problem, d);
  if (why.empty()) return "";
  // violations() lists every parameter problem, else names the first broken constraint alone.
  if (why.size() == 1 && is_constraint(*f, why[0]))
    return "config " + c.to_json() + " breaks constraint '" + why[0] + "' for " + e.problem.key() + " on " + d.name;
  std::string out = "config " + c.to_json() + ": ";
  for (size_t i = 0; i < why.size(); ++i) out += (i ? "; " : "") + why[i];
  return out;
}

} // namespace

namespace {

std::string never_throwing_reason(const TableEntry& e, const DeviceInfo* device) {
  // A family's upgrade() or a constraint that throws makes the entry invalid, not the caller's
  // whole table unreadable.
  try {
    return checked_reason(e, device);
  } catch (const std::exception& err) {
    return std::string("cannot be validated: ") + err.what();
  } catch (...) {
    return "cannot be validated: unknown exception";
  }
}

} // namespace

std::string invalid_reason(const TableEntry& e) { return never_throwing_reason(e, nullptr); }

std::string invalid_reason(const TableEntry& e, const DeviceInfo& device) { return never_throwing_reason(e, &device); }

bool known_family(const std::string& name) {
  const auto& all = families();
  return std::any_of(all.begin(), all.end(), [&](const Family& f) { return f.name() == name; });
}

std::vector<std::pair<size_t, std::string>> invalid_entries(const Table& t) {
  std::vector<std::pair<size_t, std::string>> out;
  for (size_t i = 0; i < t.entries.size(); ++i) {
    std::string why = invalid_reason(t.entries[i]);
    if (!why.empty()) out.emplace_back(i, std::move(why));
  }
  return out;
}

void validate_table_entries(const Table& t, const std::string& origin) {
  const auto bad = invalid_entries(t);
  const size_t invalid = bad.size();
  std::vector<std::string> listed;
  for (size_t j = 0; j < std::min(invalid, kInvalidEntriesListed); ++j) {
    const TableEntry& e = t.entries[bad[j].first];
    listed.push_back("entry " + std::to_string(bad[j].first) + " (" + e.problem.key() + ", family " + e.family +
                     "): " + bad[j].second);
  }
  if (invalid == 0) return;
  if (invalid == 1) throw UsageError(origin + " " + listed[0]);
  std::string msg =
      origin + ": " + std::to_string(invalid) + " of " + std::to_string(t.entries.size()) + " entries are invalid:";
  for (const auto& l : listed) msg += "\n  " + l;
  if (invalid > listed.size()) msg += "\n  ... and " + std::to_string(invalid - listed.size()) + " more";
  throw UsageError(msg);
}

Table parse_table(const std::string& text, const std::string& origin) {
  const json j = parse_versioned(text, origin, kTableSchema, "a table");
  Table t;
  parse_device(j, origin, t.device_name, t.arch, t.sm_count);
  const json& entries = field(j, "entries", origin);
  if (!entries.is_array()) throw UsageError(origin + ": \"entries\" must be an array");
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string where = origin + " entry " + std::to_string(i);
    const json& e = entries[i];
    if (!e.is_object()) throw UsageError(where + ": must be an object");
    str(e, "op", where); // required in tables (trial logs written before ops had names may lack it)
    TableEntry te;
    te.problem = parse_problem(e, where);
    te.arch = t.arch;
    te.family = str(e, "family", where);
    const json& cfg = field(e, "config", where);
    if (!cfg.is_object() || cfg.empty()) throw UsageError(where + ": \"config\" must be a non-empty object");
    check_config_ints(cfg, where);
    try {
      te.config_json = Config::from_json(cfg.dump()).to_json();
    } catch (const UsageError& err) {
      throw UsageError(where + ": " + err.what());
    }
    te.time_ms = positive_number(e, "time_ms", where);
    // An op that counts no FLOPs (a user kernel whose spec gives no "flops": a transpose) records 0.
    const OpInfo& info = op_info(te.problem.op);
    const bool counts_flops = !info.flops || info.flops(te.problem) > 0;
    te.tflops = counts_flops ? positive_number(e, "tflops", where) : non_negative_number(e, "tflops", where);
    if (e.contains("cublas_ms") && !e["cublas_ms"].is_null()) te.cublas_ms = positive_number(e, "cublas_ms", where);
    te.template_hash = str(e, "template_hash", where);
    if (e.contains("gate")) {
      const json& g = e["gate"];
      if (!g.is_number_integer() || g.get<int64_t>() < 0 || g.get<int64_t>() > 1000)
        throw UsageError(where + ": \"gate\" must be an integer from 0 to 1000, got " + g.dump());
      te.gate = int(g.get<int64_t>());
    }
    t.entries.push_back(std::move(te));
  }
  return t;
}

Table read_table_file(const std::string& path) {
  return parse_table(read_text_file(path, "table file"), path);
}

std::string table_to_json(const Table& t) {
  std::vector<const TableEntry*> sorted;
  for (const auto& e : t.entries) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](const TableEntry* a, const TableEntry* b) {
    return std::make_tuple(a->problem.key(), a->family) < std::make_tuple(b->problem.key(), b->family);
  });
  json entries = json::array();
  for (const TableEntry* e : sorted) {
    json j;
    put_problem(j, e->problem);
    j["family"] = e->family;
    j["config"] = json::parse(e->config_json);
    j["time_ms"] = e->time_ms;
    j["tflops"] = e->tflops;
    j["cublas_ms"] = e->cublas_ms ? json(*e->cublas_ms) : json(nullptr);
    j["template_hash"] = e->template_hash;
    j["gate"] = e->gate;
    entries.push_back(j);
  }
  json out;
  out["schema"] = kTableSchema;
  out["device"] = device_json(t.device_name, t.arch, t.sm_count);
  out["entries"] = entries;
  return out.dump(1) + "\n";
}

TrialLog parse_trial_log(const std::string& text, const std::string& origin) {
  const json j = parse_versioned(text, origin, kTrialLogSchema, "a trial log");
  TrialLog log;
  parse_device(j, origin, log.device_name, log.arch, log.sm_count);
  const json& probs = field(j, "problems", origin);
  if (!probs.is_array()) throw UsageError(origin + ": \"problems\" must be an array");
  for (size_t i = 0; i < probs.size(); ++i) {
    const std::string where = origin + " problem " + std::to_string(i);
    const json& pj = probs[i];
    ProblemLog pl;
    pl.problem = parse_problem(pj, where);
    try {
      validate_key(pl.problem);
    } catch (const UsageError& err) {
      throw UsageError(where + ": " + err.what());
    }
    if (pj.contains("cublas_ms") && !pj["cublas_ms"].is_null()) pl.cublas_ms = positive_number(pj, "cublas_ms", where);
    const json& trials = field(pj, "trials", where);
    if (!trials.is_array()) throw UsageError(where + ": \"trials\" must be an array");
    for (size_t t = 0; t < trials.size(); ++t) {
      const std::string tw = where + " trial " + std::to_string(t);
      const json& tj = trials[t];
      LoggedTrial lt;
      if (!tj.is_object()) throw UsageError(tw + ": must be an object");
      lt.family = str(tj, "family", tw);
      const json& cfg = field(tj, "config", tw);
      check_config_ints(cfg, tw);
      try {
        lt.config_json = Config::from_json(cfg.dump()).to_json();
        lt.status = to_string(parse_trial_status(str(tj, "status", tw)));
      } catch (const Error& err) { // a config's or a status's own message, placed
        throw UsageError(tw + ": " + err.what());
      }
      if (lt.status == "ok") lt.time_ms = positive_number(tj, "time_ms", tw);
      lt.compile_s = non_negative_number(tj, "compile_s", tw);
      lt.bench_s = non_negative_number(tj, "bench_s", tw);
      pl.trials.push_back(std::move(lt));
    }
    log.problems.push_back(std::move(pl));
  }
  return log;
}

TrialLog read_trial_log_file(const std::string& path) {
  return parse_trial_log(read_text_file(path, "trial log"), path);
}

std::string trial_log_to_json(const TrialLog& log) {
  json probs = json::array();
  for (const auto& p : log.problems) {
    json trials = json::array();
    for (const auto& t : p.trials)
      trials.push_back({{"family", t.family}, {"config", json::parse(t.config_json)}, {"status", t.status},
                        {"time_ms", t.time_ms}, {"compile_s", t.compile_s}, {"bench_s", t.bench_s}});
    json pj = {{"key", p.problem.key()}};
    put_problem(pj, p.problem);
    pj["cublas_ms"] = p.cublas_ms ? json(*p.cublas_ms) : json(nullptr);
    pj["trials"] = trials;
    probs.push_back(pj);
  }
  json out;
  out["schema"] = kTrialLogSchema;
  out["device"] = device_json(log.device_name, log.arch, log.sm_count);
  out["problems"] = probs;
  // One trial per line keeps the committed logs diffable and small.
  std::string s = out.dump();
  std::string pretty;
  pretty.reserve(s.size() + s.size() / 50);
  for (size_t i = 0; i < s.size(); ++i) {
    pretty += s[i];
    if (s.compare(i, 2, "},") == 0 || s.compare(i, 2, "[{") == 0) {
      pretty += s[++i];
      pretty += '\n';
    }
  }
  return pretty + "\n";
}

namespace {

int64_t non_negative_int(const json& j, const char* name, const std::string& where) {
  const json& v = field(j, name, where);
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    throw UsageError(where + ": \"" + name + "\" must be an integer >= 0, got " + v.dump());
  return v.get<int64_t>();
}

// A timing of an ok trial or a baseline: every figure positive; of any other trial: all zero.
Timing parse_timing(const json& j, const std::string& where, bool measured) {
  const json& tj = field(j, "timing", where);
  if (!tj.is_object()) throw UsageError(where + ": \"timing\" must be an object");
  const std::string tw = where + " timing";
  Timing t;
  auto num = [&](const char* name) { return measured ? positive_number(tj, name, tw) : non_negative_number(tj, name, tw); };
  t.median_ms = num("median_ms"), t.min_ms = num("min_ms"), t.p20_ms = num("p20_ms"), t.p80_ms = num("p80_ms");
  t.reps = int(measured ? positive_int(tj, "reps", tw) : non_negative_int(tj, "reps", tw));
  return t;
}

std::string problem_key_of(const json& j, const std::string& where) {
  const std::string key = str(j, "problem", where);
  try {
    Problem::parse_key(key);
  } catch (const Error& err) {
    throw UsageError(where + ": " + err.what());
  }
  return key;
}

} // namespace

TrialSet parse_trial_set(const std::string& text, const std::string& origin) {
  const json j = parse_versioned(text, origin, kTrialSetSchema, "a trial set");
  TrialSet set;
  std::vector<std::string> uuids;
  const json& devs = field(j, "devices", origin);
  if (!devs.is_array()) throw UsageError(origin + ": \"devices\" must be an array");
  for (size_t i = 0; i < devs.size(); ++i) {
    const std::string where = origin + " device " + std::to_string(i);
    const json& dj = devs[i];
    if (!dj.is_object()) throw UsageError(where + ": must be an object");
    DeviceInfo d;
    d.uuid = str(dj, "uuid", where);
    d.name = str(dj, "name", where);
    d.arch = str(dj, "arch", where);
    try {
      const int n = arch_number(d.arch);
      d.cc_major = n / 10, d.cc_minor = n % 10;
    } catch (const Error& err) {
      throw UsageError(where + ": " + err.what());
    }
    d.sm_count = int(positive_int(dj, "sm_count", where));
    d.total_memory = non_negative_int(dj, "memory_bytes", where);
    d.sm_clock_khz = int(non_negative_int(dj, "sm_clock_khz", where));
    d.driver_version = int(non_negative_int(dj, "driver_version", where));
    if (std::find(uuids.begin(), uuids.end(), d.uuid) != uuids.end()) throw UsageError(where + ": device " + d.uuid + " is listed twice");
    uuids.push_back(d.uuid);
    set.devices.push_back(std::move(d));
  }
  auto device_of = [&](const json& e, const std::string& where) {
    const std::string uuid = str(e, "device", where);
    if (std::find(uuids.begin(), uuids.end(), uuid) == uuids.end())
      throw UsageError(where + ": device " + uuid + " is not among the set's devices");
    return uuid;
  };
  const json& trials = field(j, "trials", origin);
  if (!trials.is_array()) throw UsageError(origin + ": \"trials\" must be an array");
  for (size_t i = 0; i < trials.size(); ++i) {
    const std::string where = origin + " trial " + std::to_string(i);
    const json& tj = trials[i];
    if (!tj.is_object()) throw UsageError(where + ": must be an object");
    SetTrial st;
    st.id = non_negative_int(tj, "id", where);
    st.device_uuid = device_of(tj, where);
    st.problem_key = problem_key_of(tj, where);
    TrialRecord& t = st.record;
    t.family = str(tj, "family", where);
    const json& cfg = field(tj, "config", where);
    check_config_ints(cfg, where);
    try {
      const Config c = Config::from_json(cfg.dump());
      t.config_json = c.to_json();
      t.config_hash = c.hash();
      t.status = parse_trial_status(str(tj, "status", where));
    } catch (const Error& err) {
      throw UsageError(where + ": " + err.what());
    }
    // The hash is what a resumed run looks trials up by: one that does not match its config
    // would make the trial unfindable, or findable as another config.
    if (str(tj, "config_hash", where) != t.config_hash)
      throw UsageError(where + ": \"config_hash\" does not match the config (" + t.config_hash + ")");
    t.template_hash = str(tj, "template_hash", where);
    t.error = tj.contains("error") && tj["error"].is_string() ? tj["error"].get<std::string>() : "";
    t.timing = parse_timing(tj, where, t.status == TrialStatus::ok);
    t.tflops = t.status == TrialStatus::ok ? positive_number(tj, "tflops", where) : non_negative_number(tj, "tflops", where);
    const json& re = field(tj, "rel_error", where);
    if (!re.is_number() || !(re.get<double>() >= -1)) throw UsageError(where + ": \"rel_error\" must be -1 or a number >= 0");
    t.rel_error = re.get<double>();
    t.gate = int(non_negative_int(tj, "gate", where));
    t.registers = int(non_negative_int(tj, "registers", where));
    t.smem_bytes = int(non_negative_int(tj, "smem_bytes", where));
    t.spill_bytes = int(non_negative_int(tj, "spill_bytes", where));
    t.compile_s = non_negative_number(tj, "compile_s", where);
    t.bench_s = non_negative_number(tj, "bench_s", where);
    set.trials.push_back(std::move(st));
  }
  const json& bases = field(j, "baselines", origin);
  if (!bases.is_array()) throw UsageError(origin + ": \"baselines\" must be an array");
  for (size_t i = 0; i < bases.size(); ++i) {
    const std::string where = origin + " baseline " + std::to_string(i);
    const json& bj = bases[i];
    if (!bj.is_object()) throw UsageError(where + ": must be an object");
    SetBaseline b;
    b.device_uuid = device_of(bj, where);
    b.problem_key = problem_key_of(bj, where);
    b.library = str(bj, "library", where);
    b.timing = parse_timing(bj, where, true);
    b.tflops = positive_number(bj, "tflops", where);
    set.baselines.push_back(std::move(b));
  }
  return set;
}

TrialSet read_trial_set_file(const std::string& path) { return parse_trial_set(read_text_file(path, "trial set"), path); }

std::string trial_set_to_json(const TrialSet& set) {
  json devs = json::array(), trials = json::array(), bases = json::array();
  for (const auto& d : set.devices)
    devs.push_back({{"uuid", d.uuid}, {"name", d.name}, {"arch", d.arch}, {"sm_count", d.sm_count},
                    {"memory_bytes", d.total_memory}, {"sm_clock_khz", d.sm_clock_khz}, {"driver_version", d.driver_version}});
  for (const auto& st : set.trials) {
    const TrialRecord& t = st.record;
    json tj = {{"id", st.id}, {"device", st.device_uuid}, {"problem", st.problem_key}, {"family", t.family},
               {"config", json::parse(t.config_json)}, {"config_hash", t.config_hash}, {"template_hash", t.template_hash},
               {"status", to_string(t.status)}, {"timing", timing_to_json(t.timing)}, {"tflops", t.tflops},
               {"rel_error", t.rel_error}, {"gate", t.gate}, {"registers", t.registers}, {"smem_bytes", t.smem_bytes},
               {"spill_bytes", t.spill_bytes}, {"compile_s", t.compile_s}, {"bench_s", t.bench_s}};
    if (!t.error.empty()) tj["error"] = t.error;
    trials.push_back(std::move(tj));
  }
  for (const auto& b : set.baselines)
    bases.push_back({{"device", b.device_uuid}, {"problem", b.problem_key}, {"library", b.library},
                     {"timing", timing_to_json(b.timing)}, {"tflops", b.tflops}});
  json out;
  out["schema"] = kTrialSetSchema;
  out["devices"] = devs;
  out["trials"] = trials;
  out["baselines"] = bases;
  return out.dump() + "\n";
}

} // namespace ktune
