// Replays a recorded run without a GPU: a strategy asks for configs of a problem's recorded
// space and is answered with the recorded results. Measures how fast each strategy gets within
// 1 %, 3 % and 5 % of the recorded best, in evaluations and in simulated seconds (the recorded
// compile plus benchmark time of every evaluated trial).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "db/table.h"

namespace ktune {

constexpr double kSimThresholds[3] = {0.01, 0.03, 0.05};

struct SimReach {
  double evals = 0, fraction = 0, seconds = 0; // medians over repeats
  int missed = 0; // repeats that never got there (counted as the whole space)
};

struct SimProblem {
  std::string key;
  size_t space = 0;
  double best_ms = 0;
  SimReach reach[3];
};

struct SimResult {
  std::string strategy;
  int repeats = 0;
  std::vector<SimProblem> problems;
  SimReach median[3]; // medians over problems of the per-problem medians
};

// Throws UsageError on a log it cannot replay (no ok trial, an unknown family, several families
// in one problem) or an unknown strategy.
SimResult simulate(const TrialLog& log, const std::string& strategy, uint64_t seed, int repeats);

std::string format_simulation(const SimResult& r);
std::string simulation_json(const SimResult& r);

} // namespace ktune
