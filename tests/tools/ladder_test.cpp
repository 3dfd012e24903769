// The ladder files (configs/ladder.json, configs/ladder-half.json): every rung names a family that
// exists and a config valid for the ladder's problem on a nominal sm_90 device, so that
// `ktune bench --ladder` on the GPU never stops at a rung that was mistyped.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/text_file.h"
#include "ktune/family.h"
#include "ktune/gemm_problem.h"
#include "tuner/json_io.h"

using namespace ktune;

TEST(Ladder, EveryRungIsAValidConfigOfItsFamilyForTheLaddersProblem) {
  for (const char* name : {"ladder.json", "ladder-half.json"}) {
    const std::string path = std::string(KTUNE_SOURCE_DIR) + "/configs/" + name;
    const auto j = nlohmann::json::parse(read_text_file(path, "ladder file"));
    const GemmProblem p = GemmProblem::from(problem_from_json(j.at("problem"), path));
    const auto d = DeviceInfo::nominal("sm_90");
    int rungs = 0, tuned = 0;
    for (const auto& r : j.at("rungs")) {
      const std::string fam = r.at("family").get<std::string>();
      if (fam.empty()) { // the runtime's choice
        ++tuned;
        continue;
      }
      const Family f = find_family(fam);
      const Config c = f.canonical(Config::from_json(r.at("config").dump())); // as bench_ladder reads it
      EXPECT_TRUE(f.valid(c, p, d)) << name << ": " << r.at("name").get<std::string>() << " " << c.to_json();
      ++rungs;
    }
    EXPECT_GE(rungs, 5) << name;
    EXPECT_EQ(tuned, 1) << name;
  }
}
