#include "tuner/strategy.h"

#include <gtest/gtest.h>

#include <set>

#include "ktune/error.h"

#include "ktune/error.h"
#include "ktune/gemm_problem.h"

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

TEST(Strategy, AdaptiveStrategiesRespectTheBudgetNeverRepeatAndAreSeeded) {
  const std::vector<Family> fams = {find_family("gemm_simt")};
  const auto p = GemmProblem::parse("1024x1024x1024");
  const auto d = DeviceInfo::nominal("sm_90");
  for (const char* name : {"annealing", "genetic", "model"}) {
    auto run = [&](uint64_t seed) {
      auto s = make_strategy(name, fams, p, d, 40, seed);
      std::vector<std::string> seq;
      double t = 1.0;
      while (auto c = s->next()) {
        EXPECT_TRUE(fams[0].valid(c->config, p, d)) << name;
        seq.push_back(c->config.to_json());
        // A made-up response with structure: bigger block tiles are faster.
        t = 100.0 / (c->config["BM"] * c->config["BN"]);
        s->observe(*c, seq.size() % 7 ? TrialStatus::ok : TrialStatus::launch_error, t);
      }
      return seq;
    };
    const auto a = run(5), b = run(5), c = run(6);
    EXPECT_EQ(a.size(), 40u) << name;
    EXPECT_EQ(std::set<std::string>(a.begin(), a.end()).size(), a.size()) << name << " repeated a config";
    EXPECT_EQ(a, b) << name << " is not reproducible with a seed";
    EXPECT_NE(a, c) << name;
  }
  EXPECT_THROW(make_strategy("model", {find_family("gemm_naive"), find_family("gemm_simt")}, p, d, 10, 1), UsageError);
}

TEST(Strategy, SeedsComeFirstWhereValid) {
  const std::vector<Family> fams = {find_family("gemm_simt")};
  const auto p = GemmProblem::parse("1024x1024x1024");
  const auto d = DeviceInfo::nominal("sm_90");
  const Config good = fams[0].default_config(p, d);
  Config bad = good;
  bad.set("BM", 48); // outside the domain: skipped
  for (const char* name : {"random", "exhaustive", "annealing", "genetic", "model"}) {
    auto s = make_strategy(name, fams, p, d, name == std::string("exhaustive") ? 5 : 10, 3, {bad, good});
    const auto first = s->next();
    ASSERT_TRUE(first) << name;
    EXPECT_EQ(first->config, good) << name;
  }
}
