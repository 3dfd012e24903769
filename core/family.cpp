// The search-space machinery behind Family: declaration, validation, pruned enumeration,
// sampling and domain narrowing.
#include "ktune/family.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "ktune/error.h"
#include "core/embedded.h"
#include "core/json_text.h"
#include "core/text_file.h"

namespace ktune {

const char* to_string(Numerics n) { return n == Numerics::tf32x3 ? "tf32x3" : "standard"; }

Numerics parse_numerics(const std::string& s) {
  if (s == "standard") return Numerics::standard;
  if (s == "tf32x3") return Numerics::tf32x3;
  throw UsageError("unknown numerics '" + s + "' (known: standard, tf32x3)");
}

Family::Family(std::string name, std::string source_path)
    : name_(std::move(name)), source_path_(std::move(source_path)) {}

std::string Family::source() const {
  if (!source_text_.empty()) return source_text_;
  return std::string(embedded_file(source_path_));
}

Family& Family::param(const std::string& name, std::vector<int> values, std::string about) {
  for (const auto& p : params_)
    if (p.name == name) throw Error("family " + name_ + ": parameter '" + name + "' declared twice");
  if (values.empty()) throw Error("family " + name_ + ": parameter '" + name + "' has an empty domain");
  params_.push_back({name, std::move(values), std::move(about)});
  return *this;
}

Family& Family::restrict_generic(std::string why, std::vector<std::string> reads, Predicate pred) {
  Constraint c{std::move(why), std::move(reads), std::move(pred), 0};
  for (const auto& r : c.reads) {
    auto it = std::find_if(params_.begin(), params_.end(), [&](const Param& p) { return p.name == r; });
    if (it == params_.end())
      throw Error("family " + name_ + ": constraint '" + c.why + "' reads undeclared parameter '" + r +
                  "' (declare parameters before their constraints)");
    c.depth = std::max(c.depth, static_cast<size_t>(it - params_.begin()));
  }
  constraints_.push_back(std::move(c));
  return *this;
}

bool Family::supports(const Problem& p, const DeviceInfo& d, std::string* why) const {
  if (p.op != op_) {
    if (why) *why = "family " + name_ + " computes " + op_ + ", not " + p.op;
    return false;
  }
  if (std::find(dtypes_.begin(), dtypes_.end(), p.dtype) == dtypes_.end()) {
    if (why) *why = std::string("family ") + name_ + " does not support dtype " + to_string(p.dtype);
    return false;
  }
  if (d.arch_number() < min_arch_) {
    if (why) *why = "family " + name_ + " needs sm_" + std::to_string(min_arch_) + " or newer, device is " + d.arch;
    return false;
  }
  if (arch_specific_ && d.arch_number() != min_arch_) {
    if (why)
      *why = "family " + name_ + " is built for sm_" + std::to_string(min_arch_) + "a, which runs on sm_" +
             std::to_string(min_arch_) + " devices only; device is " + d.arch;
    return false;
  }
  return true;
}

std::string Family::compile_arch(const std::string& arch) const {
  if (!arch_specific_ || (!arch.empty() && arch.back() == 'a')) return arch;
  return arch + "a";
}

Config Family::canonical(const Config& given) const {
  const Config c = upgrade_ ? upgrade_(given) : given;
  Config out;
  for (const auto& prm : params_) {
    if (!c.has(prm.name)) throw UsageError("config " + c.to_json() + " lacks parameter '" + prm.name + "' of family " + name_);
    out.set(prm.name, c[prm.name]);
  }
  if (c.size() != out.size()) {
    for (const auto& [k, v] : c.items())
      if (!out.has(k)) throw UsageError("config " + c.to_json() + " has parameter '" + k + "' unknown to family " + name_);
  }
  return out;
}

std::vector<Config> Family::variants(const Config& c, const std::vector<Setting>& settings) {
  std::vector<Config> out;
  for (const Setting& s : settings) {
    Config g = c;
    for (const auto& [name, value] : s) g.set(name, value);
    if (g == c || std::find(out.begin(), out.end(), g) != out.end()) continue;
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<std::string> Family::violations(const Config& c, const Problem& p, const DeviceInfo& d) const {
  std::vector<std::string> out;
  std::string why;
  if (!supports(p, d, &why)) out.push_back(why);
  for (const auto& [k, v] : c.items()) {
    auto it = std::find_if(params_.begin(), params_.end(), [&](const Param& q) { return q.name == k; });
    if (it == params_.end()) out.push_back("unknown parameter '" + k + "'");
    else if (std::find(it->values.begin(), it->values.end(), v) == it->values.end())
      out.push_back("value " + std::to_string(v) + " is outside the domain of '" + k + "'");
  }
  for (const auto& prm : params_)
    if (!c.has(prm.name)) out.push_back("parameter '" + prm.name + "' is missing");
  if (!out.empty()) return out; // constraints may read any parameter: only run them on a full config
  // In declaration order, stopping at the first broken one: a constraint may rely on the ones
  // before it (e.g. a register cap that divides by a thread count an earlier one proved > 0),
  // exactly as enumeration checks them.
  for (const auto& con : constraints_)
    if (!con.pred(c, p, d)) {
      out.push_back(con.why);
      break;
    }
  return out;
}

void Family::enumerate(const Problem& p, const DeviceInfo& d, const std::function<bool(const Config&)>& visit) const {
  if (!supports(p, d, nullptr) || params_.empty()) return;
  // checks[i]: the constraints that become decidable once parameter i is bound.
  std::vector<std::vector<const Constraint*>> checks(params_.size());
  for (const auto& c : constraints_) checks[c.depth].push_back(&c);
  Config cfg;
  bool stop = false;
  std::function<void(size_t)> walk = [&](size_t i) {
    for (int v : params_[i].values) {
      cfg.set(params_[i].name, v);
      bool ok = true;
      for (const Constraint* c : checks[i])
        if (!c->pred(cfg, p, d)) {
          ok = false;
          break;
        }
      if (ok) {
        if (i + 1 == params_.size()) stop = !visit(cfg);
        else walk(i + 1);
      }
      cfg.pop_back();
      if (stop) return;
    }
  };
  walk(0);
}

uint64_t Family::count(const Problem& p, const DeviceInfo& d) const {
  uint64_t n = 0;
  enumerate(p, d, [&](const Config&) {
    ++n;
    return true;
  });
  return n;
}

std::vector<Config> Family::sample(const Problem& p, const DeviceInfo& d, size_t n, uint64_t seed,
                                   std::optional<std::chrono::steady_clock::time_point> until) const {
  std::vector<Config> out;
  if (n == 0 || !supports(p, d, nullptr)) return out;
  std::mt19937_64 rng(seed);
  // Looked at every 1024 steps: a clock read costs about as much as a few constraint checks.
  size_t steps = 0;
  const auto late = [&] { return until && (++steps & 1023) == 0 && std::chrono::steady_clock::now() >= *until; };
  // A space no larger than the request is returned whole (shuffled); finding that out costs at
  // most n + 1 enumerated configs, where rejection sampling would grind through its attempt cap.
  std::vector<Config> head;
  bool stopped = false;
  enumerate(p, d, [&](const Config& c) {
    head.push_back(c);
    return head.size() <= n && !(stopped = late());
  });
  if (stopped) {
    std::shuffle(head.begin(), head.end(), rng);
    if (head.size() > n) head.resize(n);
    return head;
  }
  if (head.size() <= n) {
    std::shuffle(head.begin(), head.end(), rng);
    return head;
  }
  std::set<std::string> seen;
  std::vector<std::vector<const Constraint*>> checks(params_.size());
  for (const auto& c : constraints_) checks[c.depth].push_back(&c);
  // Rejection sampling over the Cartesian product is uniform over the valid set; checking
  // constraints as each parameter is drawn rejects early. Dense spaces finish here.
  const size_t max_attempts = 2000 * n + 10000;
  for (size_t attempt = 0; attempt < max_attempts && out.size() < n; ++attempt) {
    if (late()) return out;
    Config cfg;
    bool ok = true;
    for (size_t i = 0; i < params_.size() && ok; ++i) {
      const auto& vals = params_[i].values;
      cfg.set(params_[i].name, vals[rng() % vals.size()]);
      for (const Constraint* c : checks[i])
        if (!c->pred(cfg, p, d)) {
          ok = false;
          break;
        }
    }
    if (ok && seen.insert(cfg.to_json()).second) out.push_back(cfg);
  }
  if (out.size() == n) return out;
  // Sparse or small space: enumerate it and fill up with a seeded shuffle of the rest.
  std::vector<Config> rest;
  enumerate(p, d, [&](const Config& c) {
    if (!seen.count(c.to_json())) rest.push_back(c);
    return !late();
  });
  std::shuffle(rest.begin(), rest.end(), rng);
  for (size_t i = 0; i < rest.size() && out.size() < n; ++i) out.push_back(rest[i]);
  return out;
}

std::vector<std::string> Family::kernel_names(const Config& c, const Problem& p) const {
  if (!kernels_) throw Error("family " + name_ + " declares no kernels()");
  return kernels_(c, p);
}

LaunchPlan Family::launch_plan(const Config& c, const Problem& p) const {
  if (!launch_) throw Error("family " + name_ + " declares no launch()");
  return launch_(c, p);
}

Config Family::default_config(const Problem& p, const DeviceInfo& d) const {
  if (!default_) throw Error("family " + name_ + " declares no default config");
  return default_(p, d);
}

bool SpaceRestriction::narrows(const std::string& name) const {
  return name == family || (family.find('@') == std::string::npos && name.rfind(family + "@", 0) == 0);
}

Family Family::restricted(const SpaceRestriction& r) const {
  if (!r.family.empty() && !r.narrows(name_))
    throw UsageError("space restriction is for family '" + r.family + "', not '" + name_ + "'");
  Family f = *this;
  for (const auto& [name, values] : r.domains) {
    auto it = std::find_if(f.params_.begin(), f.params_.end(), [&](const Param& q) { return q.name == name; });
    if (it == f.params_.end()) throw UsageError("space restriction names unknown parameter '" + name + "' of family " + name_);
    std::vector<int> kept;
    for (int v : values) {
      if (std::find(it->values.begin(), it->values.end(), v) == it->values.end())
        throw UsageError("space restriction value " + std::to_string(v) + " is not in the declared domain of '" + name +
                         "' in family " + name_);
      kept.push_back(v);
    }
    if (kept.empty()) throw UsageError("space restriction leaves parameter '" + name + "' with no values");
    it->values = kept;
  }
  return f;
}

SpaceRestriction SpaceRestriction::from_json(const std::string& text, const std::string& origin) {
  check_json_depth(text, origin);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw UsageError(origin + ": not valid JSON: " + e.what());
  }
  SpaceRestriction r;
  if (!j.is_object() || !j.contains("domains") || !j["domains"].is_object())
    throw UsageError(origin + ": expected {\"family\": NAME, \"domains\": {PARAM: [values]}}");
  if (j.contains("family")) {
    if (!j["family"].is_string()) throw UsageError(origin + ": \"family\" must be a string");
    r.family = j["family"].get<std::string>();
  }
  for (const auto& [k, v] : j["domains"].items()) {
    if (!v.is_array()) throw UsageError(origin + ": domain of '" + k + "' must be an array of integers");
    for (const auto& x : v) {
      if (!x.is_number_integer()) throw UsageError(origin + ": domain of '" + k + "' has a non-integer " + x.dump());
      r.domains[k].push_back(x.get<int>());
    }
  }
  return r;
}

SpaceRestriction SpaceRestriction::from_json_file(const std::string& path) {
  return from_json(read_text_file(path, "space restriction file"), path);
}

Family find_family(const std::string& name) {
  std::string known;
  for (auto& f : builtin_families()) {
    if (f.name() == name) return f;
    known += (known.empty() ? "" : ", ") + f.name();
  }
  throw UsageError("unknown family '" + name + "' (known: " + known + ")");
}

} // namespace ktune
