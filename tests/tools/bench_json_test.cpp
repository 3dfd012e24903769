// ktune bench --json without a GPU: a row where cuBLAS was chosen carries the kernel that was timed
// beside it (family and config) and every first-use candidate with its measured time, so that a
// neighbour rule can be judged from a bench's file (tools/replay_neighbours.py reads trials; this
// is the bench's side).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tools/bench.h"

using namespace ktune;

TEST(BenchJson, RowsCarryTheKernelAndEveryFirstUseCandidate) {
  BenchReport rep;
  BenchRow r;
  r.problem = GemmProblem::parse("777x3584x18944", "NN", DType::bf16);
  r.name = r.problem.key();
  r.selection.provenance = Provenance::cublas;
  r.selection.measured = true;
  CandidateConfig timed, untimed;
  timed.family = untimed.family = "gemm_wgmma";
  timed.config = Config::from_json(R"({"BM":256,"BN":112,"SWAP":1})");
  timed.measured_ms = 0.1722;
  timed.neighbour = true;
  untimed.config = Config::from_json(R"({"BM":128,"BN":256,"SWAP":0})");
  r.selection.candidates = {untimed, timed};
  r.kernel_family = "gemm_wgmma";
  r.kernel_config = timed.config;
  r.ktune_ms = r.cublas_ms = 0.1405;
  r.kernel_ms = 0.1718;
  rep.rows.push_back(r);
  BenchRow plain; // a row without candidates (an exact entry) writes neither
  plain.problem = GemmProblem::parse("4096x4096x4096", "NN", DType::bf16);
  plain.name = plain.problem.key();
  plain.ktune_ms = plain.cublas_ms = plain.kernel_ms = 0.18;
  rep.rows.push_back(plain);

  const auto j = nlohmann::json::parse(bench_json(rep, "test device", "ktune bench"));
  const auto& row = j.at("rows").at(0);
  EXPECT_EQ(row.at("kernel_family"), "gemm_wgmma");
  EXPECT_EQ(row.at("kernel_config").at("BN"), 112);
  ASSERT_EQ(row.at("candidates").size(), 2u);
  EXPECT_FALSE(row.at("candidates").at(0).contains("measured_ms"));
  EXPECT_FALSE(row.at("candidates").at(0).at("neighbour").get<bool>());
  EXPECT_DOUBLE_EQ(row.at("candidates").at(1).at("measured_ms").get<double>(), 0.1722);
  EXPECT_TRUE(row.at("candidates").at(1).at("neighbour").get<bool>());
  EXPECT_EQ(row.at("candidates").at(1).at("config").at("SWAP"), 1);
  const auto& exact = j.at("rows").at(1);
  EXPECT_FALSE(exact.contains("candidates"));
  EXPECT_FALSE(exact.contains("kernel_config"));
}
