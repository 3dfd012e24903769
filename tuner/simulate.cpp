#include "tuner/simulate.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "ktune/error.h"
#include "ktune/family.h"
#include "tuner/strategy.h"
#include "runtime/timing.h"

namespace ktune {
namespace {

struct Outcome {
  TrialStatus status;
  double time_ms, cost_s;
};

} // namespace

SimResult simulate(const TrialLog& log, const std::string& strategy, uint64_t seed, int repeats) {
  if (repeats < 1) throw UsageError("--repeat must be at least 1");
  SimResult res;
  res.strategy = strategy;
  res.repeats = repeats;
  for (const auto& pl : log.problems) {
    if (pl.trials.empty()) continue;
    const std::string fam = pl.trials[0].family;
    const Family family = find_family(fam);
    std::map<std::string, const LoggedTrial*> record; // of each config (two records of one: replaces)
    std::vector<Config> configs;
    for (const auto& t : pl.trials) {
      if (t.family != fam) throw UsageError("problem " + pl.problem.key() + " mixes families; simulate replays one");
      const Config c = family.canonical(Config::from_json(t.config_json));
      const auto [at, fresh] = record.emplace(c.to_json(), &t);
      if (fresh) configs.push_back(c);
      else if (replaces(t, *at->second)) at->second = &t;
    }
    std::map<std::string, Outcome> oracle;
    double best = 0;
    for (const auto& [key, t] : record) {
      const Outcome o{parse_trial_status(t->status), t->time_ms, t->compile_s + t->bench_s};
      oracle.emplace(key, o);
      if (o.status == TrialStatus::ok && (best == 0 || o.time_ms < best)) best = o.time_ms;
    }
    if (best == 0) throw UsageError("problem " + pl.problem.key() + " has no ok trial to measure against");
    // The replayed space's domains: the declared ones, kept to the values the run covered.
    std::vector<Family::Param> params = family.params();
    for (auto& p : params) {
      std::vector<int> kept;
      for (int v : p.values)
        if (std::any_of(configs.begin(), configs.end(), [&](const Config& c) { return c[p.name] == v; })) kept.push_back(v);
      p.values = kept;
    }
    const auto space = list_space(params, configs);
    SimProblem sp;
    sp.key = pl.problem.key();
    sp.space = configs.size();
    sp.best_ms = best;
    std::vector<double> evals[3], secs[3];
    for (int r = 0; r < repeats; ++r) {
      auto s = make_space_strategy(strategy, *space, configs.size(), seed + uint64_t(r) * 1000003);
      double best_so_far = 0, spent = 0;
      size_t n = 0;
      std::optional<size_t> hit[3];
      std::optional<double> hit_s[3];
      while (auto c = s->next()) {
        const Outcome& o = oracle.at(c->config.to_json());
        ++n;
        spent += o.cost_s;
        s->observe(*c, o.status, o.time_ms);
        if (o.status == TrialStatus::ok && (best_so_far == 0 || o.time_ms < best_so_far)) best_so_far = o.time_ms;
        for (int i = 0; i < 3; ++i)
          if (!hit[i] && best_so_far > 0 && best_so_far <= best * (1 + kSimThresholds[i])) hit[i] = n, hit_s[i] = spent;
        if (hit[0]) break;
      }
      for (int i = 0; i < 3; ++i) {
        if (!hit[i]) ++sp.reach[i].missed;
        evals[i].push_back(double(hit[i].value_or(configs.size())));
        secs[i].push_back(hit_s[i].value_or(spent));
      }
    }
    for (int i = 0; i < 3; ++i) {
      sp.reach[i].evals = median(evals[i]);
      sp.reach[i].fraction = sp.reach[i].evals / double(sp.space);
      sp.reach[i].seconds = median(secs[i]);
    }
    res.problems.push_back(sp);
  }
  if (res.problems.empty()) throw UsageError("the trial log has no problem with trials");
  for (int i = 0; i < 3; ++i) {
    std::vector<double> e, f, s;
    for (const auto& p : res.problems) {
      e.push_back(p.reach[i].evals), f.push_back(p.reach[i].fraction), s.push_back(p.reach[i].seconds);
      res.median[i].missed += p.reach[i].missed;
    }
    res.median[i].evals = median(e), res.median[i].fraction = median(f), res.median[i].seconds = median(s);
  }
  return res;
}

std::string format_simulation(const SimResult& r) {
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "strategy %s, %d repeats: evaluations (fraction of the space) and simulated seconds to come within\n"
                "1 %% / 3 %% / 5 %% of the recorded best; medians over repeats\n",
                r.strategy.c_str(), r.repeats);
  out += buf;
  std::snprintf(buf, sizeof buf, "%-34s %6s  %-24s %-24s %-24s\n", "problem", "space", "within 1%", "within 3%", "within 5%");
  out += buf;
  auto cell = [](const SimReach& x) {
    char c[64];
    std::snprintf(c, sizeof c, "%5.0f (%5.3f) %6.1f s%s", x.evals, x.fraction, x.seconds, x.missed ? "*" : "");
    return std::string(c);
  };
  for (const auto& p : r.problems) {
    std::snprintf(buf, sizeof buf, "%-34s %6zu  %-24s %-24s %-24s\n", p.key.c_str(), p.space, cell(p.reach[0]).c_str(),
                  cell(p.reach[1]).c_str(), cell(p.reach[2]).c_str());
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "%-34s %6s  %-24s %-24s %-24s\n", "median over problems", "", cell(r.median[0]).c_str(),
                cell(r.median[1]).c_str(), cell(r.median[2]).c_str());
  out += buf;
  if (r.median[0].missed + r.median[1].missed + r.median[2].missed)
    out += "* some repeats never got there; they count as the whole space\n";
  return out;
}

std::string simulation_json(const SimResult& r) {
  auto reach = [](const SimReach& x) {
    return nlohmann::ordered_json{{"evals", x.evals}, {"fraction", x.fraction}, {"seconds", x.seconds}, {"missed", x.missed}};
  };
  auto within = [&](const SimReach (&x)[3]) {
    nlohmann::ordered_json j;
    for (int i = 0; i < 3; ++i) j[std::to_string(int(kSimThresholds[i] * 100 + 0.5))] = reach(x[i]);
    return j;
  };
  nlohmann::ordered_json probs = nlohmann::ordered_json::array();
  for (const auto& p : r.problems)
    probs.push_back({{"problem", p.key}, {"space", p.space}, {"best_ms", p.best_ms}, {"within_percent", within(p.reach)}});
  nlohmann::ordered_json j = {{"strategy", r.strategy}, {"repeats", r.repeats}, {"problems", probs},
                              {"median", {{"within_percent", within(r.median)}}}};
  return j.dump(2) + "\n";
}

} // namespace ktune
