#include "tuner/warm_start.h"

#include <filesystem>

#include "db/lending.h"
#include "db/store.h"
#include "db/table.h"
#include "ktune/error.h"

namespace ktune {

std::vector<Config> warm_start_configs(const std::string& source, const Family& f, const GemmProblem& p,
                                       const DeviceInfo& d, size_t count) {
  TunedIndex index(d);
  // Seeds may come from another GPU: whether they serve p here is checked against d.
  const bool any_arch = true;
  if (source == "shipped") {
    for (auto& [t, name] : shipped_tables(d.arch, /*tf32x3=*/true)) index.add(t, name, SourceTier::shipped, nullptr, any_arch);
  } else if (source.size() > 5 && source.substr(source.size() - 5) == ".json") {
    index.add(read_table_file(source), "table " + source, SourceTier::user, nullptr, any_arch);
  } else {
    if (!std::filesystem::exists(source)) throw UsageError("warm-start source " + source + " does not exist");
    const Store store(source, /*read_only=*/true);
    for (const auto& arch : store.best_archs())
      index.add(store.export_table(arch), "store " + source, SourceTier::user, nullptr, any_arch);
  }
  std::vector<Config> out;
  auto take = [&](const Lent& l) {
    if (out.size() == count || l.from->entry.family != f.name()) return;
    for (const Config& c : out)
      if (c == l.config) return;
    out.push_back(l.config);
  };
  for (const Lent& l : index.exact(p)) take(l);
  for (const Lent& l : index.lenders(p, count, f.name())) take(l);
  return out;
}

} // namespace ktune
