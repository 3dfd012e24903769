// Warm start: configs that did well on problems near this one (from a tuning table, another
// database, or the tables shipped with ktune, possibly of another arch), to seed a strategy's
// first proposals. They are ranked by the rule the runtime lends configs by (db/lending.h).
#pragma once
#include <string>
#include <vector>

#include "ktune/device.h"
#include "ktune/family.h"

namespace ktune {

// The configs of family f that the `count` best-ranked tuned entries lend to p on device d:
// entries tuned for p itself first, then lenders of the same dtype and layout by predicted
// speedup over cuBLAS. Each config is in the form valid for p (a general form where the tuned
// one was specialised to its shape). source is a table file (.json), a database, or "shipped"
// (the tables embedded in ktune for d's arch, the opt-in ones included). Throws UsageError when
// the source cannot be read.
std::vector<Config> warm_start_configs(const std::string& source, const Family& f, const GemmProblem& p,
                                       const DeviceInfo& d, size_t count = 8);

} // namespace ktune
