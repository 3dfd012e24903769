// Warm start: configs that did well on problems near this one (from a tuning table or another
// database, possibly of another arch), to seed a strategy's first proposals.
#pragma once
#include <string>
#include <vector>

#include "ktune/family.h"

namespace ktune {

// The best configs of family f for the `count` problems nearest to p (same dtype and layout;
// distance over log M, log N, log K), nearest first. source is a table file (.json) or a
// database. Throws UsageError when the source cannot be read.
std::vector<Config> warm_start_configs(const std::string& source, const Family& f, const GemmProblem& p,
                                       size_t count = 8);

} // namespace ktune
