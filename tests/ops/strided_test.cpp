// N-dimensional operands with strides (OpInfo::Operand::shape) through Problem, validation, keys
// and the buffers ABI, on the fixture op strided_scale (tests/ops/strided_fixture.h), without a GPU.
#include <gtest/gtest.h>

#include "ktune/error.h"
#include "ktune/family.h"
#include "ops/strided_fixture.h"
#include "runtime/buffers_launch.h"
#include "tuner/compile_all.h"
#include "tuner/json_io.h"

using namespace ktune;

namespace {

const OpInfo& op() { return ktune::testing::strided_scale_op(); }

Problem bshd(int64_t b, int64_t s, int64_t h, int64_t d, DType t = DType::bf16) {
  op();
  return Problem::make("strided_scale", {b, s, h, d}, "", t);
}

} // namespace

TEST(StridedOperands, RegistrationNamesEveryOuterStrideAndPacksThem) {
  const OpInfo& o = op();
  EXPECT_EQ(o.ld_names, (std::vector<std::string>{"x.b", "x.s", "x.h", "y.b", "y.s", "y.h"}));
  EXPECT_EQ(&op_info("strided_scale"), &o);
  EXPECT_THROW(register_op(o), UsageError) << "a name registered twice";
  const Problem p = bshd(2, 5, 3, 8);
  EXPECT_EQ(p.ld, (std::vector<int64_t>{120, 24, 8, 120, 24, 8}));
  EXPECT_EQ(operand_strides(p, 0), (std::vector<int64_t>{120, 24, 8, 1}));
  EXPECT_EQ(operand_extents(p, 1), (std::vector<int64_t>{2, 5, 3, 8}));
  EXPECT_EQ(operand_elements(p, 0), 240);
  EXPECT_EQ(p.align, 16); // 8 bf16 elements a stride
  EXPECT_EQ(p.key(), "strided_scale/bf16/2x5x3x8/a16");
  EXPECT_NO_THROW(validate(p));
}

TEST(StridedOperands, InconsistentDeclarationsAreRefused) {
  OpInfo bad = op();
  bad.name = "strided_scale_bad_axis";
  bad.ld_names.clear(), bad.min_ld = nullptr;
  bad.operands[0].shape = {"b", "s", "heads", "d"};
  EXPECT_THROW(register_op(bad), UsageError);
  OpInfo both = op();
  both.name = "strided_scale_with_min_ld"; // min_ld beside shaped operands: which one holds?
  EXPECT_THROW(register_op(both), UsageError);
  OpInfo derived = op();
  static int repeat = 0; // a name of its own each run (--gtest_repeat): a registered op stays
  derived.name = "strided_scale_derived_" + std::to_string(repeat++);
  derived.ld_names.clear(), derived.min_ld = nullptr;
  derived.derived_dims = {"heads"}; // its dims are b, s, h, d
  EXPECT_THROW(register_op(derived), UsageError);
  derived.derived_dims = {"h"};
  EXPECT_NO_THROW(register_op(derived));
}

TEST(StridedOperands, PermutedViewsPassAndOverlapsAreRefused) {
  Problem p = bshd(2, 5, 3, 8);
  // y as a (b, s, h, d) view of (b, h, s, d) storage: h outside s.
  p.ld = {120, 24, 8, 120, 8, 40};
  EXPECT_NO_THROW(validate(p));
  EXPECT_EQ(operand_elements(p, 1), 240);
  // Padded strides: the span grows, the elements stay apart.
  p.ld = {256, 48, 16, 120, 24, 8};
  EXPECT_NO_THROW(validate(p));
  EXPECT_EQ(operand_elements(p, 0), 256 + 4 * 48 + 2 * 16 + 7 + 1);
  // h's stride inside d's extent: two elements at one address.
  p.ld = {120, 24, 4, 120, 24, 8};
  try {
    validate(p);
    ADD_FAILURE() << "overlapping x accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("x's elements overlap"), std::string::npos) << e.what();
  }
  p.ld = {120, 24, 8, 120, 0, 8};
  EXPECT_THROW(validate(p), UsageError) << "a zero stride";
  p.ld = {120, 24, 8};
  EXPECT_THROW(validate(p), UsageError) << "strides missing";
  // An axis of extent 1 may take any stride (PyTorch gives such axes arbitrary ones); an odd one
  // lowers the alignment class like any other.
  Problem one = bshd(1, 5, 3, 8);
  one.ld = {1, 24, 8, 7, 24, 8};
  EXPECT_THROW(validate(one), UsageError) << "class 16 claimed with odd strides";
  one.align = Problem::alignment_of(one.ld, 2);
  EXPECT_EQ(one.align, 2);
  EXPECT_NO_THROW(validate(one));
}

TEST(StridedOperands, AlignmentComesFromEveryStrideAndKeysPackToTheirClass) {
  Problem p = bshd(2, 5, 3, 6); // d = 6 bf16: 12-byte rows
  EXPECT_EQ(p.align, 4);
  // A key of class 16 at d = 6 means strides padded to 8 elements: servable, so valid.
  Problem k = Problem::parse_key("strided_scale/bf16/2x5x3x6/a16");
  EXPECT_EQ(k.align, 16);
  EXPECT_EQ(k.ld, (std::vector<int64_t>{90, 18, 6, 90, 18, 6})) << "a key's strides come back packed";
  p.ld = {128, 24, 8, 128, 24, 8};
  EXPECT_EQ(Problem::alignment_of(p.ld, 2), 16);
  p.ld[4] = 20;
  EXPECT_EQ(Problem::alignment_of(p.ld, 2), 8);
  EXPECT_THROW(Problem::parse_key("strided_scale/bf16/2x5x3/a16"), UsageError);
}

TEST(StridedOperands, KernelsGetTheStridesAfterTheDimensions) {
  Problem p = bshd(2, 5, 3, 8, DType::f32);
  p.ld = {120, 8, 40, 256, 48, 16};
  p.scalars["alpha"] = 1.5;
  int x = 0, y = 0;
  BufferArgs a(p, {&x, &y});
  void** params = a.params();
  // Two pointers, four dimensions, six strides, one scalar.
  EXPECT_EQ(*static_cast<CUdeviceptr*>(params[1]), reinterpret_cast<CUdeviceptr>(&y));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(*static_cast<long long*>(params[2 + i]), p.dims[size_t(i)]);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(*static_cast<long long*>(params[6 + i]), p.ld[size_t(i)]);
  EXPECT_FLOAT_EQ(*static_cast<float*>(params[12]), 1.5f);
  EXPECT_FALSE(a.empty());
  EXPECT_TRUE(BufferArgs(bshd(2, 0, 3, 8), {nullptr, nullptr}).empty()) << "an empty operand needs no buffer";
  Problem negative = p;
  negative.ld = {-120, 8, 40, 256, -48, 16};
  EXPECT_FALSE(BufferArgs(negative, {&x, &y}).empty()) << "negative strides must reach validate(), not look empty";
  EXPECT_THROW(validate(negative), UsageError);
  Problem short_ld = p;
  short_ld.ld.pop_back();
  EXPECT_THROW(BufferArgs(short_ld, {&x, &y}), UsageError) << "a stride missing is the caller's error";
}

TEST(StridedOperands, BothFamiliesDescribeTheirLaunchesAndCompile) {
  op();
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  const Family f = find_family("strided_scale_simple");
  const Problem p = bshd(2, 5, 3, 8);
  EXPECT_EQ(f.launch_plan(f.default_config(p, d), p).steps.at(0).grid[0], 1u);
  EXPECT_NE(f.source().find("strided_scale"), std::string::npos);
  // The TMA family: x's map has one box extent per axis, outermost first, and survives the plan's
  // way to the worker.
  const Family tma = find_family("strided_scale_tma");
  const Problem q = bshd(2, 5, 3, 64);
  const Config c = tma.default_config(q, d);
  EXPECT_TRUE(tma.valid(c, q, d));
  const LaunchPlan plan = tma.launch_plan(c, q);
  ASSERT_EQ(plan.steps.at(0).tma_maps.size(), 1u);
  EXPECT_EQ(plan.steps[0].tma_maps[0].box, (std::vector<unsigned>{1, 1, 4, 64}));
  const LaunchPlan back = plan_from_json(plan_to_json(plan));
  ASSERT_EQ(back.steps.at(0).tma_maps.size(), 1u);
  EXPECT_EQ(back.steps[0].tma_maps[0].box, plan.steps[0].tma_maps[0].box);
  EXPECT_EQ(back.steps[0].tma_maps[0].swizzle_bytes, 0u);
  // d = 6 bf16 (12 bytes) is no whole 16-byte unit; class 4 strides are not 16-byte aligned.
  EXPECT_FALSE(tma.valid(c, bshd(2, 5, 3, 6), d));
  Problem unaligned = q;
  unaligned.align = 4;
  EXPECT_FALSE(tma.valid(c, unaligned, d));
  for (const Family* fam : {&f, &tma}) {
    std::vector<std::pair<Config, Problem>> cases;
    for (DType t : {DType::f32, DType::bf16, DType::f16})
      for (const Config& x : fam->sample(bshd(2, 5, 3, 64, t), d, 2, 3)) cases.emplace_back(x, bshd(2, 5, 3, 64, t));
    EXPECT_FALSE(cases.empty()) << fam->name();
    ktune::testing::compile_all(*fam, cases, "sm_90");
  }
}
