#include "tuner/strategy.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <numeric>
#include <unordered_set>

#include "ktune/error.h"

namespace ktune {
namespace {

// ---------------------------------------------------------------- spaces

class FamilySpace : public SearchSpace {
 public:
  FamilySpace(Family f, Problem p, DeviceInfo d, std::optional<Deadline> until)
      : f_(std::move(f)), p_(std::move(p)), d_(std::move(d)), until_(until) {}
  const std::vector<Family::Param>& params() const override { return f_.params(); }
  bool contains(const Config& c) const override { return f_.valid(c, p_, d_); }
  // Drawn kBatch at a time and handed out one by one: Family::sample's cost is mostly fixed (in a
  // sparse space its rejection sampling gives up and it enumerates the whole space), so one draw
  // a proposal made the model strategy spend seconds a step on gemm_wgmma's spaces and overrun
  // --budget-seconds. A batch is uniform over the valid set without repeats; successive batches
  // are independent, as successive single draws were.
  std::optional<Config> random(std::mt19937_64& rng) const override {
    if (next_ >= batch_.size()) {
      batch_ = f_.sample(p_, d_, kBatch, rng(), until_);
      next_ = 0;
      if (batch_.empty()) return std::nullopt;
    }
    return batch_[next_++];
  }
  const std::vector<Config>& all() const override { return none_; }

 private:
  static constexpr size_t kBatch = 256;
  Family f_;
  Problem p_;
  DeviceInfo d_;
  std::optional<Deadline> until_;
  std::vector<Config> none_;
  mutable std::vector<Config> batch_;
  mutable size_t next_ = 0;
};

class ListSpace : public SearchSpace {
 public:
  ListSpace(std::vector<Family::Param> params, std::vector<Config> configs)
      : params_(std::move(params)), configs_(std::move(configs)) {
    for (const auto& c : configs_) index_.insert(c.to_json());
  }
  const std::vector<Family::Param>& params() const override { return params_; }
  bool contains(const Config& c) const override { return index_.count(c.to_json()) > 0; }
  std::optional<Config> random(std::mt19937_64& rng) const override {
    if (configs_.empty()) return std::nullopt;
    return configs_[rng() % configs_.size()];
  }
  const std::vector<Config>& all() const override { return configs_; }

 private:
  std::vector<Family::Param> params_;
  std::vector<Config> configs_;
  std::unordered_set<std::string> index_;
};

// ---------------------------------------------------------------- shared machinery

// Hands out a fixed list in order: exhaustive and random differ only in how they fill it.
class ListStrategy : public Strategy {
 public:
  explicit ListStrategy(std::vector<Candidate> list) : list_(std::move(list)) {}
  std::optional<Candidate> next() override {
    if (pos_ >= list_.size()) return std::nullopt;
    return list_[pos_++];
  }

 private:
  std::vector<Candidate> list_;
  size_t pos_ = 0;
};

// Budget, seeds, no repeats, random restarts and neighbourhoods, for the adaptive strategies.
class SpaceStrategy : public Strategy {
 public:
  SpaceStrategy(const SearchSpace& s, size_t budget, uint64_t seed, const std::vector<Config>& seeds)
      : space_(s), budget_(budget), rng_(seed) {
    for (const auto& c : seeds)
      if (space_.contains(c)) seeds_.push_back(c);
  }

  std::optional<Candidate> next() final {
    if (proposed_ >= budget_) return std::nullopt;
    std::optional<Config> c;
    while (!seeds_.empty() && !c) {
      if (!seen_.count(seeds_.front().to_json())) c = seeds_.front();
      seeds_.pop_front();
    }
    if (!c) c = propose();
    if (!c) c = fresh();
    if (!c) return std::nullopt;
    seen_.insert(c->to_json());
    ++proposed_;
    return Candidate{0, *c};
  }

  void observe(const Candidate& c, TrialStatus s, double ms) final {
    // Failed configs count as slower than anything seen, so models and selections shun them.
    const bool ok = s == TrialStatus::ok && ms > 0;
    if (ok) worst_ = std::max(worst_, std::log(ms));
    history_.push_back({c.config, ok ? std::log(ms) : NAN});
    learn(history_.back());
  }

 protected:
  struct Obs {
    Config c;
    double y; // log(time); NaN for a failed trial
  };
  virtual std::optional<Config> propose() = 0;
  virtual void learn(const Obs&) {}

  double cost(const Obs& o) const { return std::isnan(o.y) ? worst_ + 1.0 : o.y; }
  bool unseen(const Config& c) const { return !seen_.count(c.to_json()); }

  // A uniformly random point not proposed before (nullopt when the space is exhausted).
  std::optional<Config> fresh() {
    const auto& all = space_.all();
    if (!all.empty()) {
      if (seen_.size() >= all.size()) return std::nullopt;
      for (int i = 0; i < 64; ++i) {
        const Config& c = all[rng_() % all.size()];
        if (unseen(c)) return c;
      }
      for (const auto& c : all)
        if (unseen(c)) return c;
      return std::nullopt;
    }
    for (int i = 0; i < 200; ++i) {
      auto c = space_.random(rng_);
      if (!c) return std::nullopt;
      if (unseen(*c)) return c;
    }
    return std::nullopt;
  }

  // c with one parameter moved to an adjacent value of its domain (valid, unseen), or nullopt.
  std::optional<Config> neighbour(const Config& c, int tries = 40) {
    const auto& ps = space_.params();
    for (int t = 0; t < tries; ++t) {
      const auto& p = ps[rng_() % ps.size()];
      if (p.values.size() < 2) continue;
      const auto it = std::find(p.values.begin(), p.values.end(), c[p.name]);
      const long i = it - p.values.begin();
      const long j = (rng_() & 1) ? i + 1 : i - 1;
      if (j < 0 || j >= long(p.values.size())) continue;
      Config n = c;
      n.set(p.name, p.values[size_t(j)]);
      if (unseen(n) && space_.contains(n)) return n;
    }
    return std::nullopt;
  }

  // Every valid, unseen config one domain step away from c.
  std::vector<Config> all_neighbours(const Config& c) const {
    std::vector<Config> out;
    for (const auto& p : space_.params()) {
      const auto it = std::find(p.values.begin(), p.values.end(), c[p.name]);
      const long i = it - p.values.begin();
      for (long j : {i - 1, i + 1}) {
        if (j < 0 || j >= long(p.values.size())) continue;
        Config n = c;
        n.set(p.name, p.values[size_t(j)]);
        if (unseen(n) && space_.contains(n)) out.push_back(std::move(n));
      }
    }
    return out;
  }

  const SearchSpace& space_;
  size_t budget_;
  std::mt19937_64 rng_;
  std::deque<Config> seeds_;
  std::unordered_set<std::string> seen_;
  std::vector<Obs> history_;
  size_t proposed_ = 0;
  double worst_ = 0;
};

// ---------------------------------------------------------------- simulated annealing

// A walk from neighbour to neighbour that accepts a slower config with probability
// exp(-(log t_new - log t_cur) / T), T cooling geometrically from 0.5 to 0.01 over the budget.
class Annealing : public SpaceStrategy {
 public:
  using SpaceStrategy::SpaceStrategy;

 protected:
  std::optional<Config> propose() override {
    if (!current_) return std::nullopt; // start (and restart) from a random point
    auto n = neighbour(current_->c);
    if (!n) current_.reset(); // a dead end: everything around has been seen
    return n;
  }
  void learn(const Obs& o) override {
    const double horizon = double(std::min<size_t>(budget_, 5000));
    const double t = 0.5 * std::pow(0.02, std::min(1.0, double(history_.size()) / horizon));
    if (std::isnan(o.y)) return;
    if (!current_ || o.y < current_->y || std::uniform_real_distribution<double>(0, 1)(rng_) < std::exp(-(o.y - current_->y) / t))
      current_ = o;
  }

 private:
  std::optional<Obs> current_;
};

// ---------------------------------------------------------------- genetic algorithm

// Generations of `pop` configs: the first random, later ones children of two parents picked by
// tournament among the fastest seen, with uniform crossover and one-step mutations.
class Genetic : public SpaceStrategy {
 public:
  Genetic(const SearchSpace& s, size_t budget, uint64_t seed, const std::vector<Config>& seeds)
      : SpaceStrategy(s, budget, seed, seeds), pop_(std::clamp<size_t>(budget / 8, 6, 24)) {}

 protected:
  std::optional<Config> propose() override {
    std::vector<const Obs*> good;
    for (const auto& o : history_)
      if (!std::isnan(o.y)) good.push_back(&o);
    if (good.size() < pop_) return std::nullopt; // first generation: random
    std::sort(good.begin(), good.end(), [](const Obs* a, const Obs* b) { return a->y < b->y; });
    good.resize(pop_); // the current population: the fastest pop_ so far (elitist)
    auto tournament = [&]() -> const Config& {
      const Obs* best = good[rng_() % good.size()];
      for (int i = 0; i < 2; ++i) {
        const Obs* o = good[rng_() % good.size()];
        if (o->y < best->y) best = o;
      }
      return best->c;
    };
    for (int tries = 0; tries < 30; ++tries) {
      const Config& a = tournament();
      const Config& b = tournament();
      Config child = a;
      for (const auto& p : space_.params())
        if (rng_() & 1) child.set(p.name, b[p.name]);
      if (rng_() % 4 == 0)
        if (auto m = neighbour(child, 10)) child = *m;
      if (unseen(child) && space_.contains(child)) return child;
      if (auto m = neighbour(child, 10)) return m;
    }
    return std::nullopt;
  }

 private:
  size_t pop_;
};

// ---------------------------------------------------------------- model-guided search

// A cost model learned from the trials so far: k-nearest-neighbour regression of log(time) over
// the configs' positions in their parameter domains (each parameter scaled to [0, 1]). Each step
// scores candidates (every unseen point of a listable space, else the neighbours of the best
// configs plus a random pool) by predicted log time minus an exploration bonus proportional to
// the distance to the nearest trial (a lower confidence bound), and proposes the lowest.
// Why this model: configs are discrete and mixed (tile sizes, flags, pipeline depths), the
// response is rugged but local (neighbouring tiles run alike), and the model must refit in
// microseconds after every trial with no dependencies: kNN on domain positions is all three.
class ModelGuided : public SpaceStrategy {
 public:
  ModelGuided(const SearchSpace& s, size_t budget, uint64_t seed, const std::vector<Config>& seeds)
      : SpaceStrategy(s, budget, seed, seeds) {
    for (const auto& p : space_.params())
      if (p.values.size() > 1) dims_.push_back(&p);
  }

 protected:
  std::optional<Config> propose() override {
    if (history_.size() < kInitial) return std::nullopt; // random design first
    std::vector<Config> pool;
    if (!space_.all().empty()) {
      for (const auto& c : space_.all())
        if (unseen(c)) pool.push_back(c);
    } else {
      std::vector<const Obs*> top;
      for (const auto& o : history_)
        if (!std::isnan(o.y)) top.push_back(&o);
      std::sort(top.begin(), top.end(), [](const Obs* a, const Obs* b) { return a->y < b->y; });
      for (size_t i = 0; i < std::min<size_t>(top.size(), 5); ++i)
        for (auto& n : all_neighbours(top[i]->c)) pool.push_back(std::move(n));
      for (int i = 0; i < 150; ++i)
        if (auto c = fresh()) pool.push_back(std::move(*c));
    }
    if (pool.empty()) return std::nullopt;
    std::vector<std::vector<double>> xs;
    std::vector<double> ys;
    for (const auto& o : history_) {
      xs.push_back(encode(o.c));
      ys.push_back(cost(o));
    }
    const Config* best = nullptr;
    double best_score = INFINITY;
    for (const auto& c : pool) {
      const auto x = encode(c);
      const auto [mu, dmin] = predict(x, xs, ys);
      const double score = mu - kExplore * dmin;
      if (score < best_score) best_score = score, best = &c;
    }
    return *best;
  }

 private:
  static constexpr size_t kInitial = 8, kNeighbours = 5;
  static constexpr double kExplore = 0.3;

  std::vector<double> encode(const Config& c) const {
    std::vector<double> x;
    for (const auto* p : dims_) {
      const auto it = std::find(p->values.begin(), p->values.end(), c[p->name]);
      x.push_back(double(it - p->values.begin()) / double(p->values.size() - 1));
    }
    return x;
  }

  // Inverse-square-distance weighted mean of the k nearest trials; and the nearest distance.
  std::pair<double, double> predict(const std::vector<double>& x, const std::vector<std::vector<double>>& xs,
                                    const std::vector<double>& ys) const {
    std::vector<std::pair<double, size_t>> d;
    for (size_t i = 0; i < xs.size(); ++i) {
      double s = 0;
      for (size_t j = 0; j < x.size(); ++j) s += (x[j] - xs[i][j]) * (x[j] - xs[i][j]);
      d.emplace_back(s, i);
    }
    const size_t k = std::min(kNeighbours, d.size());
    std::partial_sort(d.begin(), d.begin() + long(k), d.end());
    double wsum = 0, ysum = 0;
    for (size_t i = 0; i < k; ++i) {
      const double w = 1.0 / (d[i].first + 1e-3);
      wsum += w;
      ysum += w * ys[d[i].second];
    }
    return {ysum / wsum, std::sqrt(d[0].first)};
  }

  std::vector<const Family::Param*> dims_;
};

// ---------------------------------------------------------------- exhaustive and random

std::vector<Candidate> exhaustive(const std::vector<Family>& families, const Problem& p, const DeviceInfo& d,
                                  size_t budget, std::optional<Deadline> until) {
  std::vector<Candidate> out;
  const size_t cap = std::min(budget, kMaxMaterialized);
  bool late = false;
  for (size_t f = 0; f < families.size() && out.size() < cap && !late; ++f)
    families[f].enumerate(p, d, [&](const Config& c) {
      out.push_back({f, c});
      // Out of time: the configs listed so far are all this run can evaluate anyway.
      if (until && (out.size() & 1023) == 0 && Deadline::clock::now() >= *until) late = true;
      return out.size() < cap && !late;
    });
  if (!late && out.size() == kMaxMaterialized && budget > kMaxMaterialized)
    throw UsageError("the space for " + p.key() + " has more than " + std::to_string(kMaxMaterialized) +
                     " valid configs: narrow it with --restrict FILE or bound it with --budget-evals N");
  return out;
}

// Random over several families: seeds first (where valid for the first family), then the families
// interleaved one config each, so that a budget cut short still covers all of them. Each family's
// configs come in batches of Family::sample (uniform without repeats; later batches skip what was
// proposed), drawn when needed rather than all at the start: under a time budget the budget of
// proposals is large (20000) and drawing it whole could take longer than the time itself.
class RandomStrategy : public Strategy {
 public:
  RandomStrategy(std::vector<Family> families, Problem p, DeviceInfo d, size_t budget, uint64_t seed,
                 const std::vector<Config>& seeds, std::optional<Deadline> until)
      : families_(std::move(families)), p_(std::move(p)), d_(std::move(d)), budget_(budget), seed_(seed),
        until_(until), queues_(families_.size()), draws_(families_.size(), 0), done_(families_.size(), false) {
    for (const auto& s : seeds)
      if (!families_.empty() && families_[0].valid(s, p_, d_) && taken_.insert(key(0, s)).second) seeds_.push_back(s);
  }

  std::optional<Candidate> next() override {
    if (proposed_ >= budget_) return std::nullopt;
    if (!seeds_.empty()) {
      Config c = std::move(seeds_.front());
      seeds_.pop_front();
      ++proposed_;
      return Candidate{0, std::move(c)};
    }
    for (size_t tries = 0; tries < families_.size(); ++tries) {
      const size_t f = turn_;
      turn_ = (turn_ + 1) % families_.size();
      if (auto c = take(f)) {
        ++proposed_;
        return Candidate{f, std::move(*c)};
      }
    }
    return std::nullopt;
  }

 private:
  static std::string key(size_t f, const Config& c) { return std::to_string(f) + c.to_json(); }

  std::optional<Config> take(size_t f) {
    while (!done_[f]) {
      while (!queues_[f].empty()) {
        Config c = std::move(queues_[f].front());
        queues_[f].pop_front();
        if (taken_.insert(key(f, c)).second) return c;
      }
      if (until_ && Deadline::clock::now() >= *until_) return std::nullopt;
      // The first draw of family f is the sample the list-making random strategy drew (same seed,
      // same size while the budget fits one batch), so seeded runs repeat.
      const size_t n = std::min<size_t>(budget_, kMaxBatch);
      const auto batch = families_[f].sample(p_, d_, n, seed_ + 7919 * f + 104729 * draws_[f]++, until_);
      size_t fresh = 0;
      for (const auto& c : batch)
        if (!taken_.count(key(f, c))) queues_[f].push_back(c), ++fresh;
      // A batch with nothing new: the space is used up (a space no larger than the batch comes
      // back whole every time).
      if (fresh == 0) done_[f] = true;
    }
    return std::nullopt;
  }

  static constexpr size_t kMaxBatch = 1024;
  std::vector<Family> families_;
  Problem p_;
  DeviceInfo d_;
  size_t budget_;
  uint64_t seed_;
  std::optional<Deadline> until_;
  std::deque<Config> seeds_;
  std::vector<std::deque<Config>> queues_;
  std::vector<uint64_t> draws_;
  std::vector<bool> done_;
  std::unordered_set<std::string> taken_;
  size_t turn_ = 0, proposed_ = 0;
};

// Seeds first, then the list without them.
std::vector<Candidate> seeded(std::vector<Candidate> list, const std::vector<Config>& seeds,
                              const std::function<bool(const Config&)>& valid, size_t budget) {
  std::vector<Candidate> out;
  std::unordered_set<std::string> taken;
  for (const auto& s : seeds)
    if (valid(s) && taken.insert(s.to_json()).second) out.push_back({0, s});
  for (auto& c : list)
    if (!taken.count(c.config.to_json())) out.push_back(std::move(c));
  if (out.size() > budget) out.resize(budget);
  return out;
}

// An adaptive strategy that owns the space it walks.
class Owning : public Strategy {
 public:
  Owning(std::unique_ptr<SearchSpace> s, const std::string& name, size_t budget, uint64_t seed,
         const std::vector<Config>& seeds)
      : space_(std::move(s)), inner_(make_space_strategy(name, *space_, budget, seed, seeds)) {}
  std::optional<Candidate> next() override { return inner_->next(); }
  void observe(const Candidate& c, TrialStatus s, double t) override { inner_->observe(c, s, t); }

 private:
  std::unique_ptr<SearchSpace> space_;
  std::unique_ptr<Strategy> inner_;
};

} // namespace

std::unique_ptr<SearchSpace> family_space(const Family& f, const Problem& p, const DeviceInfo& d,
                                          std::optional<Deadline> until) {
  return std::make_unique<FamilySpace>(f, p, d, until);
}

std::unique_ptr<SearchSpace> list_space(std::vector<Family::Param> params, std::vector<Config> configs) {
  return std::make_unique<ListSpace>(std::move(params), std::move(configs));
}

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = {"exhaustive", "random", "annealing", "genetic", "model"};
  return names;
}

std::unique_ptr<Strategy> make_space_strategy(const std::string& name, const SearchSpace& space, size_t budget,
                                              uint64_t seed, const std::vector<Config>& seeds) {
  if (name == "annealing") return std::make_unique<Annealing>(space, budget, seed, seeds);
  if (name == "genetic") return std::make_unique<Genetic>(space, budget, seed, seeds);
  if (name == "model") return std::make_unique<ModelGuided>(space, budget, seed, seeds);
  if (name == "exhaustive" || name == "random") {
    if (space.all().empty()) throw UsageError("strategy " + name + " over a space needs a listable space");
    std::vector<Candidate> list;
    for (const auto& c : space.all()) list.push_back({0, c});
    if (name == "random") std::shuffle(list.begin(), list.end(), std::mt19937_64(seed));
    return std::make_unique<ListStrategy>(
        seeded(std::move(list), seeds, [&](const Config& c) { return space.contains(c); }, budget));
  }
  throw UsageError("unknown strategy '" + name + "' (expected exhaustive, random, annealing, genetic or model)");
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, const std::vector<Family>& families,
                                        const Problem& p, const DeviceInfo& d, size_t budget, uint64_t seed,
                                        const std::vector<Config>& seeds, std::optional<Deadline> until) {
  auto valid0 = [&](const Config& c) { return !families.empty() && families[0].valid(c, p, d); };
  if (name == "exhaustive")
    return std::make_unique<ListStrategy>(seeded(exhaustive(families, p, d, budget, until), seeds, valid0, budget));
  if (name == "random") return std::make_unique<RandomStrategy>(families, p, d, budget, seed, seeds, until);
  if (std::find(strategy_names().begin(), strategy_names().end(), name) == strategy_names().end())
    throw UsageError("unknown strategy '" + name + "' (expected exhaustive, random, annealing, genetic or model)");
  if (families.size() != 1) throw UsageError("strategy " + name + " tunes one family at a time; give one --family");
  return std::make_unique<Owning>(family_space(families[0], p, d, until), name, budget, seed, seeds);
}

} // namespace ktune
