#include "tuner/strategy.h"

#include <gtest/gtest.h>

#include <set>

#include "ktune/error.h"

using namespace ktune;

TEST(Strategy, EveryStrategyRespectsTheEvaluationBudget) {
  const std::vector<Family> fams = {find_family("gemm_naive"), find_family("gemm_simt")};
  const auto p = GemmProblem::parse("1024x1024x1024");
  const auto d = DeviceInfo::nominal("sm_90");
  for (const char* name : {"exhaustive", "random"})
    for (size_t budget : {1u, 7u, 50u}) {
      auto s = make_strategy(name, fams, p, d, budget, 3);
      size_t n = 0;
      std::set<std::string> seen;
      while (auto c = s->next()) {
        ++n;
        EXPECT_TRUE(fams[c->family].valid(c->config, p, d));
        EXPECT_TRUE(seen.insert(std::to_string(c->family) + c->config.to_json()).second) << "repeated candidate";
      }
      EXPECT_EQ(n, budget) << name;
    }
}

TEST(Strategy, ExhaustiveCoversASmallSpaceExactlyOnce) {
  const std::vector<Family> fams = {find_family("gemm_naive"), find_family("gemm_smem")};
  const auto p = GemmProblem::parse("256x256x256");
  const auto d = DeviceInfo::nominal("sm_80");
  auto s = make_strategy("exhaustive", fams, p, d, SIZE_MAX, 1);
  size_t n = 0;
  while (s->next()) ++n;
  EXPECT_EQ(n, fams[0].count(p, d) + fams[1].count(p, d));
}

TEST(Strategy, RandomIsReproducibleWithASeedAndInterleavesFamilies) {
  const std::vector<Family> fams = {find_family("gemm_naive"), find_family("gemm_simt")};
  const auto p = GemmProblem::parse("1024x1024x1024");
  const auto d = DeviceInfo::nominal("sm_90");
  auto a = make_strategy("random", fams, p, d, 20, 11), b = make_strategy("random", fams, p, d, 20, 11);
  std::set<size_t> families;
  while (auto x = a->next()) {
    auto y = b->next();
    ASSERT_TRUE(y);
    EXPECT_EQ(x->config, y->config);
    families.insert(x->family);
  }
  EXPECT_EQ(families.size(), 2u);
}

TEST(Strategy, UnknownStrategyAndOversizedExhaustiveAreUsageErrors) {
  const std::vector<Family> fams = {find_family("gemm_simt")};
  const auto p = GemmProblem::parse("4096x4096x4096");
  const auto d = DeviceInfo::nominal("sm_90");
  EXPECT_THROW(make_strategy("annealing-ish", fams, p, d, 10, 1), UsageError);
  EXPECT_THROW(make_strategy("exhaustive", fams, p, d, SIZE_MAX, 1), UsageError); // 23 M configs
}
