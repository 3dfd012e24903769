#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "ktune/error.h"
#include "ktune/gemm_problem.h"

using namespace ktune;

TEST(Problem, KeyNamesOpDtypeLayoutShapeAndAlignment) {
  EXPECT_EQ(GemmProblem::parse("4096x4096x4096").key(), "gemm/f32/NN/4096x4096x4096/a16");
  EXPECT_EQ(GemmProblem::parse("2999x2999x2999").key(), "gemm/f32/NN/2999x2999x2999/a4");
  EXPECT_EQ(GemmProblem::parse("6x6x6", "TN").key(), "gemm/f32/TN/6x6x6/a8");
}

TEST(Problem, LeadingDimensionsFollowTheLayout) {
  const auto p = GemmProblem::parse("10x20x30", "TT");
  EXPECT_EQ(p.eff_lda(), 10); // A is K x M stored row-major
  EXPECT_EQ(p.eff_ldb(), 30); // B is N x K stored row-major
  EXPECT_EQ(p.eff_ldc(), 20);
}

TEST(Problem, BadInputIsAUsageErrorNamingTheField) {
  EXPECT_THROW(GemmProblem::parse("4096x4096"), UsageError);
  EXPECT_THROW(GemmProblem::parse("0x5x5"), UsageError);
  EXPECT_THROW(GemmProblem::parse("-1x5x5"), UsageError);
  EXPECT_THROW(GemmProblem::parse("5x5x5", "NX"), UsageError);
  auto p = GemmProblem::parse("8x8x8");
  p.lda = 4;
  try {
    p.validate();
    FAIL() << "lda below the minimum was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("lda 4 < minimum 8"), std::string::npos) << e.what();
  }
  p.lda = 9; // 36 bytes: only 4-byte alignment
  EXPECT_THROW(p.validate(), UsageError);
  p.align = 4;
  EXPECT_NO_THROW(p.validate());
}

TEST(Problem, KZeroIsValid) {
  const auto p = GemmProblem::parse("5x3x0");
  EXPECT_EQ(p.k, 0);
  EXPECT_NO_THROW(p.validate());
}

TEST(Problem, AlignmentNarrowsWithPointers) {
  alignas(16) float buf[8] = {};
  EXPECT_EQ(GemmProblem::alignment_with_pointers(16, buf, buf, buf), 16);
  EXPECT_EQ(GemmProblem::alignment_with_pointers(16, buf + 2, buf, buf), 8);
  EXPECT_EQ(GemmProblem::alignment_with_pointers(16, buf, buf + 1, buf), 4);
}

// Half precision counts alignment in its own 2-byte elements: an odd leading dimension leaves only
// element alignment (class 2, which f32 never has), an even one 4 bytes, and so on.
TEST(Problem, HalfPrecisionAlignmentClassesCountTwoByteElements) {
  EXPECT_EQ(element_bytes(DType::f32), 4);
  EXPECT_EQ(element_bytes(DType::bf16), 2);
  EXPECT_EQ(element_bytes(DType::f16), 2);
  const auto odd = GemmProblem::parse("2999x2999x2999", "NN", DType::bf16);
  EXPECT_EQ(odd.align, 2);
  EXPECT_EQ(odd.key(), "gemm/bf16/NN/2999x2999x2999/a2");
  EXPECT_EQ(GemmProblem::parse("64x4094x64", "NN", DType::f16).align, 4);  // 8188 bytes a row of B and C
  EXPECT_EQ(GemmProblem::parse("4092x4096x4092", "NN", DType::f16).align, 8); // A's rows are 8184 bytes
  EXPECT_EQ(GemmProblem::parse("4096x4096x4096", "NN", DType::bf16).align, 16);
  // The same shapes in f32: four-byte elements, never below 4.
  EXPECT_EQ(GemmProblem::parse("2999x2999x2999").align, 4);
  EXPECT_EQ(GemmProblem::parse("4092x4096x4092").align, 16);
  // Class 2 is refused for f32, and a class larger than the leading dimensions allow for any dtype.
  GemmProblem f = GemmProblem::parse("2999x2999x2999");
  f.align = 2;
  EXPECT_THROW(f.validate(), UsageError);
  GemmProblem h = odd;
  h.align = 4;
  EXPECT_THROW(h.validate(), UsageError);
  alignas(16) unsigned short buf[16] = {};
  EXPECT_EQ(GemmProblem::alignment_with_pointers(16, buf, buf + 1, buf), 2);
}

TEST(Problem, FlopsTflopsAndLogDistance) {
  const auto p = GemmProblem::parse("1000x2000x500");
  EXPECT_DOUBLE_EQ(p.flops(), 2e9);
  EXPECT_DOUBLE_EQ(tflops(p, 1.0), 2.0); // 2 GFLOP in 1 ms
  EXPECT_EQ(tflops(p, 0.0), 0.0);
  const auto q = GemmProblem::parse("2000x2000x500");
  EXPECT_NEAR(log_distance(p, q), std::log(2.0), 1e-12);
  EXPECT_DOUBLE_EQ(log_distance(p, q), log_distance(q, p));
  EXPECT_EQ(log_distance(p, p), 0.0);
  // K = 0 counts as K = 1.
  EXPECT_NEAR(log_distance(GemmProblem::parse("8x8x0"), GemmProblem::parse("8x8x1")), 0.0, 1e-12);
}

// The op-generic Problem: what the store, tables and lookups see of any op.
TEST(OpProblem, GemmConvertsBothWaysWithTheSameKey) {
  for (const char* layout : {"NN", "NT", "TN", "TT"})
    for (DType d : {DType::f32, DType::bf16}) {
      GemmProblem g = GemmProblem::parse("77x1001x33", layout, d);
      const Problem p = g;
      EXPECT_EQ(p.key(), g.key());
      EXPECT_EQ(p.op, "gemm");
      EXPECT_EQ(p.dims, (std::vector<int64_t>{77, 1001, 33}));
      EXPECT_EQ(p.ld, (std::vector<int64_t>{g.eff_lda(), g.eff_ldb(), g.eff_ldc()}));
      const GemmProblem back = GemmProblem::from(p);
      EXPECT_EQ(back.key(), g.key());
      EXPECT_EQ(back.eff_lda(), g.eff_lda());
      EXPECT_EQ(back.a, g.a);
      EXPECT_EQ(back.b, g.b);
      EXPECT_EQ(Problem::make("gemm", {77, 1001, 33}, layout, d), p) << layout;
    }
}

TEST(OpProblem, KeysParseBack) {
  for (const std::string key : {"gemm/f32/NN/4096x4096x4096/a16", "gemm/bf16/TN/1x4096x11008/a2", "gemm/f16/TT/8x8x0/a16"}) {
    const Problem p = Problem::parse_key(key);
    EXPECT_EQ(p.key(), key);
  }
  EXPECT_EQ(Problem::parse_key("gemm/f32/NT/3x5x7/a4").dim("k"), 7);
  for (const std::string bad : {"gemm/f32/NN/4096x4096/a16", "gemm/f32/4096x4096x4096/a16", "gemm/f64/NN/1x1x1/a16",
                                "conv/f32/NN/1x1x1/a16", "gemm/f32/NN/1x1x1/16", "gemm/f32/XY/1x1x1/a16", ""})
    EXPECT_THROW(Problem::parse_key(bad), UsageError) << bad;
}

TEST(OpProblem, UnknownOpsAndWrongDimensionCountsAreUsageErrorsThatSaySo) {
  try {
    op_info("conv2d");
    FAIL() << "no throw";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown op 'conv2d' (known: gemm"), std::string::npos) << e.what();
  }
  try {
    Problem::parse("gemm", "64x64", "NN");
    FAIL() << "no throw";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("mxnxk"), std::string::npos) << e.what();
  }
  // No layout named: the op's first (GEMM's NN); an op without layouts takes none.
  EXPECT_EQ(Problem::make("gemm", {1, 2, 3}, "").layout, "NN");
  EXPECT_EQ(Problem::make("softmax", {4, 8}, "").layout, "");
  EXPECT_THROW(Problem::make("gemm", {1, 2, 3}, "XY"), UsageError);
}

TEST(OpProblem, CountsComeFromTheOp) {
  const Problem p = GemmProblem::parse("10x20x30", "NN", DType::bf16);
  EXPECT_DOUBLE_EQ(flops(p), 2.0 * 10 * 20 * 30);
  EXPECT_DOUBLE_EQ(min_bytes(p), 2.0 * (10 * 30 + 30 * 20 + 10 * 20));
  EXPECT_DOUBLE_EQ(tflops(p, 1.0), flops(p) / 1e-3 / 1e12);
  EXPECT_NEAR(log_distance(p, GemmProblem::parse("20x20x30")), std::log(2.0), 1e-12);
}

// Every op names its limit once (OpInfo::max_dim, max_ld): a dimension beyond it is "out of range"
// with the limit wherever it comes from (a shape, a key, a problem built by hand), never a "bad
// shape", and never a key that reads back as something else.
TEST(OpProblem, DimensionsBeyondTheOpsLimitAreOutOfRangeWithTheLimit) {
  EXPECT_EQ(op_info("gemm").max_dim, INT32_MAX);
  EXPECT_EQ(op_info("gemm").max_ld, INT32_MAX); // cuBLAS takes int lda
  auto refusal = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  for (const char* shape :
       {"99999999999x1x1", "2147483648x1x1", "1x1x1099511627776", "1x99999999999999999999999999x1"}) {
    const std::string why = refusal([&] { Problem::parse("gemm", shape, "NN"); });
    EXPECT_NE(why.find("is out of range (at most 2147483647 for gemm)"), std::string::npos) << shape << ": " << why;
    EXPECT_EQ(why.find("bad problem shape"), std::string::npos) << why;
    EXPECT_NE(refusal([&] { GemmProblem::parse(shape); }).find("out of range"), std::string::npos) << shape;
  }
  EXPECT_NE(refusal([] { Problem::parse("gemm", "99999999999x1x1", "NN"); }).find("m = 99999999999"),
            std::string::npos);
  EXPECT_NO_THROW(Problem::parse("gemm", "2147483647x1x1", "NN"));
  EXPECT_NO_THROW(Problem::parse("gemm", "0002147483647x1x1", "NN")); // leading zeros are the same number
  EXPECT_NE(refusal([] { Problem::parse("softmax", "2147483648x4"); }).find("rows = 2147483648 is out of range"),
            std::string::npos);
  EXPECT_NE(refusal([] { Problem::parse("rmsnorm", "4x2147483648"); }).find("cols = 2147483648 is out of range"),
            std::string::npos);
  // Keys: what a database holds.
  EXPECT_NE(refusal([] { Problem::parse_key("gemm/f32/NN/1099511627776x64x64/a16"); }).find("out of range"),
            std::string::npos);
  EXPECT_THROW(Problem::parse_key("gemm/f32/NN/64x64x64/a99999999999"), UsageError); // not std::out_of_range
  EXPECT_THROW(Problem::parse_key("gemm/f32/NN/64x64x64/a32"), UsageError);          // no such class
  EXPECT_THROW(Problem::parse_key("gemm/f32/NN/64x64x64/a2"), UsageError);           // f32 has no class 2
  EXPECT_THROW(Problem::parse_key("softmax/f32/0x64/a16"), UsageError);              // rows must be >= 1
  // Built by hand, as a table's reader builds it.
  Problem big = Problem::make("gemm", {int64_t(1) << 40, 64, 64}, "NN");
  EXPECT_NE(refusal([&] { validate(big); }).find("m = 1099511627776 is out of range"), std::string::npos);
  EXPECT_NE(refusal([&] { validate_key(big); }).find("gemm/f32/NN/1099511627776x64x64/a16"), std::string::npos);
  // Leading dimensions.
  Problem padded = Problem::parse("gemm", "8x8x8", "NN");
  padded.ld[0] = int64_t(1) << 31;
  padded.align = 4;
  EXPECT_NE(refusal([&] { validate(padded); }).find("lda = 2147483648 is out of range"), std::string::npos);
  GemmProblem g = GemmProblem::parse("8x8x8");
  g.ldb = int64_t(1) << 31;
  g.align = 4;
  EXPECT_NE(refusal([&] { g.validate(); }).find("ldb = 2147483648 is out of range"), std::string::npos);
  Problem rows = Problem::parse("softmax", "4x8");
  rows.ld = {(int64_t(1) << 40) + 4, 8};
  rows.align = 4;
  EXPECT_NE(refusal([&] { validate(rows); }).find("is out of range (at most 1099511627776"), std::string::npos);
  rows.ld[0] = int64_t(1) << 33; // row strides are 64-bit: beyond int is fine
  EXPECT_NO_THROW(validate(rows));
  // The alignment class of any leading dimension, without overflowing its byte count.
  EXPECT_EQ(Problem::alignment_of({int64_t(1) << 62}, 4), 16);
  EXPECT_EQ(Problem::alignment_of({(int64_t(1) << 62) + 1}, 2), 2);
}

// A key carries its alignment class but not the leading dimensions it came from: a problem tuned
// with padded ones keeps class 16 at an odd shape, and its key is valid (validate_key) though the
// problem at minimum leading dimensions is not (validate).
TEST(OpProblem, AKeyKeepsTheClassOfPaddedLeadingDimensions) {
  Problem p = Problem::parse("gemm", "3x3x3", "NN");
  p.ld = {4, 4, 4};
  p.align = 16;
  EXPECT_NO_THROW(validate(p));
  EXPECT_NO_THROW(validate_key(p));
  const Problem back = Problem::parse_key(p.key());
  EXPECT_EQ(back.key(), "gemm/f32/NN/3x3x3/a16");
  EXPECT_THROW(validate(back), UsageError);
  // A class that only leading dimensions beyond the op's limit allow names no callable problem:
  // K = 2^31 - 1 in f32 NN needs lda a multiple of 4 for class 16.
  EXPECT_NO_THROW(Problem::parse_key("gemm/f32/NN/16x4096x2147483647/a4"));
  try {
    Problem::parse_key("gemm/f32/NN/16x4096x2147483647/a16");
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("lda = 2147483648 is out of range"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("padded to alignment class 16"), std::string::npos) << e.what();
  }
}
