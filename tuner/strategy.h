// Search strategies: which config to evaluate next. A strategy proposes configs of one search
// space and is told each result; it never proposes a config twice.
#pragma once
#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/trial.h"
#include "ktune/family.h"

namespace ktune {

struct Candidate {
  size_t family = 0; // index into the families being tuned
  Config config;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::optional<Candidate> next() = 0; // nullopt: the strategy has nothing more to offer
  virtual void observe(const Candidate&, TrialStatus, double /*time_ms*/) {}
};

// The points a strategy may propose: the valid configs of one family for one problem, or an
// explicit list (a recorded run being replayed). Parameters keep their declared domains, so
// strategies can step a value to its neighbour in the domain.
class SearchSpace {
 public:
  virtual ~SearchSpace() = default;
  virtual const std::vector<Family::Param>& params() const = 0;
  virtual bool contains(const Config& c) const = 0;
  virtual std::optional<Config> random(std::mt19937_64& rng) const = 0; // uniform over the space
  // Every point, when the space is small enough to list (a replay); empty otherwise.
  virtual const std::vector<Config>& all() const = 0;
};

// A deadline a strategy's own work stops at (sampling a sparse space can take seconds).
using Deadline = std::chrono::steady_clock::time_point;

std::unique_ptr<SearchSpace> family_space(const Family& f, const Problem& p, const DeviceInfo& d,
                                          std::optional<Deadline> until = std::nullopt);
std::unique_ptr<SearchSpace> list_space(std::vector<Family::Param> params, std::vector<Config> configs);

// Exhaustive and random materialise at most this many candidates per problem.
constexpr size_t kMaxMaterialized = 2'000'000;

const std::vector<std::string>& strategy_names(); // exhaustive, random, annealing, genetic, model

// Strategies over a space (one family): name is any of strategy_names(). seeds are proposed
// first, in order, where valid (warm start). budget bounds the number of proposals.
std::unique_ptr<Strategy> make_space_strategy(const std::string& name, const SearchSpace& space, size_t budget,
                                              uint64_t seed, const std::vector<Config>& seeds = {});

// The tuner's entry point. exhaustive and random accept several families (exhaustive walks them
// in order and refuses spaces over kMaxMaterialized without a budget; random interleaves them);
// annealing, genetic and model need exactly one. With `until`, listing and sampling stop at that
// time (the tuner's --budget-seconds deadline): the strategy then offers what it has.
std::unique_ptr<Strategy> make_strategy(const std::string& name, const std::vector<Family>& families,
                                        const Problem& p, const DeviceInfo& d, size_t budget, uint64_t seed,
                                        const std::vector<Config>& seeds = {}, std::optional<Deadline> until = std::nullopt);

} // namespace ktune
