#include "tuner/warm_start.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "db/store.h"
#include "db/table.h"
#include "ktune/error.h"

namespace ktune {

std::vector<Config> warm_start_configs(const std::string& source, const Family& f, const GemmProblem& p, size_t count) {
  std::vector<TableEntry> entries;
  if (source.size() > 5 && source.substr(source.size() - 5) == ".json") {
    entries = read_table_file(source).entries;
  } else {
    if (!std::filesystem::exists(source)) throw UsageError("warm-start source " + source + " does not exist");
    const Store store(source, /*read_only=*/true);
    for (const auto& arch : store.best_archs())
      for (auto& e : store.export_table(arch).entries) entries.push_back(std::move(e));
  }
  std::vector<std::pair<double, Config>> ranked;
  for (const auto& e : entries) {
    if (e.family != f.name() || e.problem.dtype != p.dtype || e.problem.layout_string() != p.layout_string()) continue;
    try {
      ranked.emplace_back(log_distance(p, e.problem), f.canonical(Config::from_json(e.config_json)));
    } catch (const Error&) {
      // an entry of another version of the family: not a useful seed
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Config> out;
  for (const auto& [d, c] : ranked) {
    if (out.size() == count) break;
    // Seeds tuned on other shapes may be specialised to them (EVEN, aligned loads): offer the
    // general forms too.
    out.push_back(c);
    for (Config& g : f.generalized(c)) out.push_back(std::move(g));
  }
  return out;
}

} // namespace ktune
