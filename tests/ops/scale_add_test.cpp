// The op scale_add (kernel_templates/scale_add/), the worked example of docs/ADDING_AN_OP.md,
// without a GPU: plugged in by its folder and one name in kernel_templates/ops.cpp, its problems
// keyed and validated like any op's, its kernels compiled by NVRTC, its bound's arithmetic, and
// `ktune query` answering from a table entry of it.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "ktune/compiler.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "ktune/runtime.h"
#include "runtime/buffers_launch.h"
#include "test_paths.h"
#include "tuner/buffers_op.h"
#include "tuner/compile_all.h"

using namespace ktune;

TEST(ScaleAdd, IsRegisteredWithItsFamiliesFromItsOwnFolder) {
  const OpInfo& op = op_info("scale_add");
  EXPECT_EQ(op.runner, "buffers");
  ASSERT_EQ(op.operands.size(), 3u);
  EXPECT_TRUE(op.operands[2].output);
  EXPECT_FALSE(op.operands[0].output);
  std::vector<std::string> names;
  for (const Family& f : builtin_families())
    if (f.op() == "scale_add") names.push_back(f.name());
  EXPECT_EQ(names, (std::vector<std::string>{"scale_add_simple", "scale_add_vec"}));
  // Every family of it competes in a tune, as the row ops' do.
  const auto tuned = tuning_family_names(false);
  EXPECT_NE(std::find(tuned.begin(), tuned.end(), "scale_add_vec"), tuned.end());

  const Problem p = Problem::parse("scale_add", "1000003", "", DType::bf16);
  EXPECT_EQ(p.key(), "scale_add/bf16/1000003/a16");
  EXPECT_EQ(Problem::parse_key(p.key()), p);
  EXPECT_DOUBLE_EQ(p.scalar("alpha"), 1.0);
  EXPECT_DOUBLE_EQ(flops(p), 3.0 * 1000003);
  EXPECT_DOUBLE_EQ(min_bytes(p), 3.0 * 2 * 1000003);
  EXPECT_THROW(Problem::parse("scale_add", "10x10", "", DType::f32), UsageError);
  EXPECT_THROW(Problem::parse("scale_add", "-5", "", DType::f32), UsageError);
  EXPECT_THROW(Problem::parse("scale_add", "0", "", DType::f32), UsageError); // nothing to tune
  // The runtime's generic entry: n = 0 writes nothing and needs no GPU, buffers or lookup; a
  // negative n is refused; a wrong number of buffers too.
  RuntimeOptions o;
  o.arch = "sm_90", o.db_path = "";
  Runtime rt(o);
  Problem empty = Problem::make("scale_add", {0}, "", DType::bf16);
  EXPECT_NO_THROW(rt.run(empty, {nullptr, nullptr, nullptr}));
  Problem negative = Problem::make("scale_add", {-3}, "", DType::bf16);
  EXPECT_THROW(rt.run(negative, {nullptr, nullptr, nullptr}), UsageError);
  int x = 0;
  EXPECT_THROW(rt.run(Problem::make("scale_add", {8}, "", DType::bf16), {&x, &x}), UsageError);
  EXPECT_THROW(Problem::parse("scale_add", "8", "", DType::tf32), UsageError);
  EXPECT_THROW(Problem::parse_key("scale_add/f32/NN/8/a16"), UsageError); // it has no layouts
}

TEST(ScaleAdd, VectorWidthFollowsTheAlignmentClass) {
  const Family f = find_family("scale_add_vec");
  Problem p = Problem::parse("scale_add", "4096", "", DType::bf16);
  Config c;
  c.set("VEC", 8), c.set("BLOCK", 256), c.set("UNROLL", 1);
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  EXPECT_TRUE(f.valid(c, p, d));
  p.align = 4; // two bf16 elements at most per access
  EXPECT_FALSE(f.valid(c, p, d));
  const Config dflt = f.default_config(p, d);
  EXPECT_EQ(dflt["VEC"], 2);
  EXPECT_TRUE(f.valid(dflt, p, d));
  p.align = 2;
  EXPECT_EQ(f.default_config(p, d)["VEC"], 1);
  EXPECT_TRUE(f.valid(f.default_config(p, d), p, d));
}

TEST(ScaleAdd, KernelsOfBothFamiliesCompileForEveryDtype) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  for (const char* name : {"scale_add_simple", "scale_add_vec"}) {
    const Family f = find_family(name);
    std::vector<std::pair<Config, Problem>> cases;
    for (DType t : {DType::f32, DType::bf16, DType::f16}) {
      const Problem p = Problem::parse("scale_add", "1000003", "", t);
      cases.emplace_back(f.default_config(p, d), p);
      for (const Config& c : f.sample(p, d, 2, 7)) cases.emplace_back(c, p);
    }
    ktune::testing::compile_all(f, cases, "sm_90");
  }
}

TEST(ScaleAdd, ElementBoundIsTheDtypesRoundingPlusFp32Terms) {
  // A correctly rounded bf16 result of exact value 1 + 2^-9 (half an ulp away) passes; an error
  // of one ulp (2^-7 at 1) does not.
  const double b = buffers_element_bound(DType::bf16, 2, 1.0, 1.0);
  EXPECT_GE(b, std::ldexp(1.0, -9));
  EXPECT_LT(b, std::ldexp(1.0, -7));
  // Cancellation: a result near 0 from terms near 1 may carry the FP32 terms' error only.
  const double c = buffers_element_bound(DType::bf16, 2, 0.0, 2.0);
  EXPECT_LT(c, std::ldexp(1.0, -20));
  EXPECT_GE(c, 2 * std::ldexp(1.0, -24) * 2.0);
  // f32: a few ulps of the magnitude, never zero (an exact zero may round into the subnormals).
  EXPECT_GT(buffers_element_bound(DType::f32, 2, 0.0, 0.0), 0.0);
  EXPECT_LT(buffers_element_bound(DType::f32, 2, 1.0, 1.0), std::ldexp(1.0, -21));
}

TEST(ScaleAdd, LaunchArgumentsCheckTheBuffers) {
  const Problem p = Problem::parse("scale_add", "100", "", DType::f32);
  int x = 0, y = 0, out = 0;
  EXPECT_THROW(BufferArgs(p, {&x, &y}), UsageError);               // three operands
  EXPECT_THROW(BufferArgs(p, {&x, nullptr, &out}), UsageError);    // y is null
  BufferArgs a(p, {&x, &y, &out});
  EXPECT_FALSE(a.empty());
  // x, y, out, then n, then alpha and beta.
  EXPECT_EQ(*static_cast<long long*>(a.params()[3]), 100);
  EXPECT_FLOAT_EQ(*static_cast<float*>(a.params()[5]), 1.0f);
  const Problem empty = Problem::make("scale_add", {0}, "", DType::f32);
  EXPECT_TRUE(BufferArgs(empty, {nullptr, nullptr, nullptr}).empty()); // nothing to launch, nothing read
}

TEST(ScaleAdd, QueryAnswersFromATableEntryWithoutAGpu) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ktune_scale_add_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string table = (dir / "t.json").string();
  const std::string hash = template_hash(find_family("scale_add_vec").source());
  std::ofstream(table) << R"({"schema": "ktune.table/1", "device": {"name": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "sm_count": 132},
    "entries": [{"op": "scale_add", "dtype": "bf16", "n": 16777216, "align": 16, "family": "scale_add_vec",
                 "config": {"VEC": 8, "BLOCK": 256, "UNROLL": 4}, "time_ms": 0.03, "tflops": 1.68, "cublas_ms": null,
                 "template_hash": ")" << hash << R"(", "gate": 2}]})";
  // Imported into a database, which query reads.
  const std::string db = (dir / "k.db").string();
  const auto imported = ktune::testing::run_ktune("import " + table + " --db " + db);
  ASSERT_EQ(imported.status, 0) << imported.out;
  const auto exact =
      ktune::testing::run_ktune("query --arch sm_90 --db " + db + " --op scale_add --dtype bf16 --problem 16777216");
  EXPECT_EQ(exact.status, 0) << exact.out;
  EXPECT_NE(exact.out.find("scale_add_vec"), std::string::npos) << exact.out;
  EXPECT_NE(exact.out.find("exact"), std::string::npos) << exact.out;
  // A shape nearby borrows it; the runtime API answers the same without a GPU.
  RuntimeOptions o;
  o.arch = "sm_90", o.db_path = db;
  const Runtime rt(o);
  const Selection s = rt.best_config(Problem::parse("scale_add", "12000000", "", DType::bf16));
  EXPECT_EQ(s.provenance, Provenance::nearest) << s.why;
  EXPECT_EQ(s.family, "scale_add_vec");
  fs::remove_all(dir);
}
