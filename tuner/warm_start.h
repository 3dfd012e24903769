// Warm start: configs that did well on problems near this one (from a tuning table, another
// database, or the tables shipped with ktune, possibly of another arch), to seed a strategy's
// first proposals. They are ranked by the rule the runtime lends configs by (db/lending.h).
#pragma once
#include <string>
#include <vector>

#include "db/lending.h"
#include "ktune/device.h"
#include "ktune/family.h"

namespace ktune {

class WarmStart {
 public:
  // source: a table file (.json), a database, or "shipped" (the tables embedded in ktune for
  // d's arch, the opt-in ones included), read once. Seeds may come from another GPU: whether a
  // config serves a problem is checked against d. Throws UsageError when the source cannot be read.
  WarmStart(const std::string& source, const DeviceInfo& d);

  // The configs of family f that the `count` best-ranked tuned entries lend to p: entries tuned
  // for p itself first, then lenders of the same dtype and layout by predicted speedup over
  // cuBLAS. Each config is in the form valid for p (a general form where the tuned one was
  // specialised to its shape). Then the neighbours of each (Family::neighbors_of).
  std::vector<Config> configs(const Family& f, const Problem& p, size_t count = 8) const;

 private:
  TunedIndex index_;
  DeviceInfo device_; // what neighbours are judged for (Family::neighbors_of)
};

} // namespace ktune
