// Runtime::run's dispatch (runtime/op_launcher.h) without a GPU: every registered op has a
// launcher, an op of an unknown kind and a wrong number of buffers are refused by name.
#include "runtime/op_launcher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ktune/error.h"

using namespace ktune;

TEST(OpLauncher, EveryRegisteredOpHasOneAndEachKindItsOwn) {
  for (const OpInfo& info : ops()) EXPECT_NO_THROW(op_launcher(info)) << info.name;
  EXPECT_EQ(&op_launcher(op_info("gemm")), &gemm_launcher());
  EXPECT_EQ(&op_launcher(op_info("softmax")), &rows_launcher());
  EXPECT_EQ(&op_launcher(op_info("scale_add")), &buffers_launcher());
  EXPECT_NE(&gemm_launcher(), &rows_launcher());
  EXPECT_NE(&rows_launcher(), &buffers_launcher());
}

TEST(OpLauncher, AnUnknownKindAndAWrongBufferCountAreRefusedByName) {
  OpInfo odd;
  odd.name = "odd_op";
  odd.runner = "telepathy";
  try {
    op_launcher(odd);
    FAIL() << "an unknown runner was given a launcher";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("odd_op"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("telepathy"), std::string::npos) << e.what();
  }
  const Problem p = Problem::make("gemm", {64, 64, 64}, "NN");
  std::vector<void*> two(2, nullptr);
  try {
    check_buffer_count(p, two, 3, "A, B, C");
    FAIL() << "two buffers passed for three";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(p.key()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("A, B, C"), std::string::npos) << e.what();
  }
  std::vector<void*> three(3, nullptr);
  EXPECT_NO_THROW(check_buffer_count(p, three, 3, "A, B, C"));
}
