// Search strategies: which config to evaluate next. A strategy sees the valid space of every
// family being tuned for one problem, and is told each result.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "db/store.h"
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

// Exhaustive and random materialise at most this many candidates per problem.
constexpr size_t kMaxMaterialized = 2'000'000;

// name: "exhaustive" (every valid config, in declaration order; refuses spaces larger than the
// budget or kMaxMaterialized with a message saying how to narrow them) or "random" (distinct
// configs drawn uniformly per family, families interleaved, seeded). budget: evaluations.
std::unique_ptr<Strategy> make_strategy(const std::string& name, const std::vector<Family>& families,
                                        const GemmProblem& p, const DeviceInfo& d, size_t budget, uint64_t seed);

} // namespace ktune
