#include "tuner/strategy.h"

#include <algorithm>
#include <random>

#include "ktune/error.h"

namespace ktune {
namespace {

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

std::vector<Candidate> exhaustive(const std::vector<Family>& families, const GemmProblem& p, const DeviceInfo& d,
                                  size_t budget) {
  std::vector<Candidate> out;
  const size_t cap = std::min(budget, kMaxMaterialized);
  for (size_t f = 0; f < families.size() && out.size() < cap; ++f)
    families[f].enumerate(p, d, [&](const Config& c) {
      out.push_back({f, c});
      return out.size() < cap;
    });
  if (out.size() == kMaxMaterialized && budget > kMaxMaterialized)
    throw UsageError("the space for " + p.key() + " has more than " + std::to_string(kMaxMaterialized) +
                     " valid configs: narrow it with --restrict FILE or bound it with --budget-evals N");
  return out;
}

std::vector<Candidate> random(const std::vector<Family>& families, const GemmProblem& p, const DeviceInfo& d,
                              size_t budget, uint64_t seed) {
  const size_t want = std::min(budget, kMaxMaterialized);
  std::vector<std::vector<Config>> per(families.size());
  for (size_t f = 0; f < families.size(); ++f) per[f] = families[f].sample(p, d, want, seed + 7919 * f);
  // Interleave families so that a budget cut short still covers all of them.
  std::vector<Candidate> out;
  for (size_t i = 0; out.size() < want; ++i) {
    bool any = false;
    for (size_t f = 0; f < families.size() && out.size() < want; ++f)
      if (i < per[f].size()) {
        out.push_back({f, per[f][i]});
        any = true;
      }
    if (!any) break;
  }
  return out;
}

} // namespace

std::unique_ptr<Strategy> make_strategy(const std::string& name, const std::vector<Family>& families,
                                        const GemmProblem& p, const DeviceInfo& d, size_t budget, uint64_t seed) {
  if (name == "exhaustive") return std::make_unique<ListStrategy>(exhaustive(families, p, d, budget));
  if (name == "random") return std::make_unique<ListStrategy>(random(families, p, d, budget, seed));
  throw UsageError("unknown strategy '" + name + "' (expected exhaustive or random)");
}

} // namespace ktune
