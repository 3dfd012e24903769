#include "tuner/warm_start.h"

#include <algorithm>
#include <filesystem>

#include "db/store.h"
#include "db/table.h"
#include "ktune/error.h"

namespace ktune {

WarmStart::WarmStart(const std::string& source, const DeviceInfo& d) : index_(d), device_(d) {
  const bool any_arch = true;
  if (source == "shipped") {
    for (auto& [t, name] : shipped_tables(d.arch, /*tf32x3=*/true)) index_.add(t, name, SourceTier::shipped, nullptr, any_arch);
  } else if (source.size() > 5 && source.substr(source.size() - 5) == ".json") {
    index_.add(read_table_file(source), "table " + source, SourceTier::user, nullptr, any_arch);
  } else {
    if (!std::filesystem::exists(source)) throw UsageError("warm-start source " + source + " does not exist");
    const Store store(source, /*read_only=*/true);
    for (const auto& arch : store.best_archs())
      index_.add(store.export_table(arch), "store " + source, SourceTier::user, nullptr, any_arch);
  }
}

std::vector<Config> WarmStart::configs(const Family& f, const Problem& p, size_t count) const {
  std::vector<Config> out;
  auto add = [&](const Config& c) {
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  auto take = [&](const Lent& l) {
    if (out.size() < count && l.family == f.name()) add(l.config);
  };
  for (const Lent& l : index_.exact(p)) take(l);
  for (const Lent& l : index_.lenders(p, count, f.name())) take(l);
  // Then each lent config's neighbours (Family::neighbors_of), after all the lent ones.
  const size_t lent = out.size();
  for (size_t i = 0; i < lent; ++i)
    for (const Config& n : f.neighbors_of(out[i], p, device_)) add(n);
  return out;
}

} // namespace ktune
