// C API argument checks: each bad argument is a status code with a message naming it.
#include "ktune/ktune.h"

#include <gtest/gtest.h>

#include <string>

namespace {
float buf[64];
ktune_status_t sgemm(int m, int n, int k, int lda, int ldb, int ldc, const float* A = buf, const float* B = buf,
                     float* C = buf, ktune_order_t order = KTUNE_ROW_MAJOR, ktune_op_t ta = KTUNE_OP_N) {
  return ktune_sgemm(nullptr, order, ta, KTUNE_OP_N, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc, nullptr);
}
std::string err() { return ktune_last_error(); }
} // namespace

TEST(CApi, NullHandlesAreRefused) {
  EXPECT_EQ(ktune_create(nullptr, nullptr), KTUNE_INVALID_VALUE);
  EXPECT_NE(err().find("handle is NULL"), std::string::npos);
  EXPECT_EQ(ktune_destroy(nullptr), KTUNE_INVALID_VALUE);
  EXPECT_EQ(sgemm(4, 4, 4, 4, 4, 4), KTUNE_INVALID_VALUE);
  EXPECT_NE(err().find("handle is NULL"), std::string::npos) << err();
}

TEST(CApi, NegativeSizesAndShortLeadingDimensionsAreNamed) {
  EXPECT_EQ(sgemm(-1, 4, 4, 4, 4, 4), KTUNE_INVALID_VALUE);
  EXPECT_NE(err().find("negative size (m = -1"), std::string::npos) << err();
  EXPECT_EQ(sgemm(4, 4, 5, 4, 4, 4), KTUNE_INVALID_VALUE); // row-major A is m x k: lda >= k
  EXPECT_NE(err().find("lda = 4 < 5"), std::string::npos) << err();
  EXPECT_EQ(sgemm(4, 6, 4, 4, 5, 6), KTUNE_INVALID_VALUE);
  EXPECT_NE(err().find("ldb = 5 < 6"), std::string::npos) << err();
  EXPECT_EQ(sgemm(4, 6, 4, 4, 6, 5), KTUNE_INVALID_VALUE);
  EXPECT_NE(err().find("ldc = 5 < 6"), std::string::npos) << err();
  // Column-major C is m x n with ldc >= m; transposed A in row-major order has lda >= m.
  EXPECT_EQ(sgemm(8, 2, 2, 2, 2, 7, buf, buf, buf, KTUNE_COL_MAJOR), KTUNE_INVALID_VALUE);
  EXPECT_NE(err().find("lda = 2 < 8"), std::string::npos) << err();
  EXPECT_EQ(sgemm(8, 2, 2, 2, 2, 2, buf, buf, buf, KTUNE_ROW_MAJOR, KTUNE_OP_T), KTUNE_INVALID_VALUE);
  EXPECT_NE(err().find("lda = 2 < 8"), std::string::npos) << err();
}

TEST(CApi, NullMatricesAndBadEnumsAreRefused) {
  EXPECT_EQ(sgemm(4, 4, 4, 4, 4, 4, buf, buf, nullptr), KTUNE_INVALID_VALUE);
  EXPECT_EQ(sgemm(4, 4, 4, 4, 4, 4, nullptr, buf, buf), KTUNE_INVALID_VALUE);
  EXPECT_EQ(ktune_sgemm(nullptr, (ktune_order_t)7, KTUNE_OP_N, KTUNE_OP_N, 4, 4, 4, 1, buf, 4, buf, 4, 0, buf, 4, nullptr),
            KTUNE_INVALID_VALUE);
  EXPECT_NE(err().find("order"), std::string::npos) << err();
}

TEST(CApi, UnknownCreateFlagsAreRefused) {
  ktune_handle_t h = nullptr;
  EXPECT_EQ(ktune_create_ex(&h, "/nonexistent/ktune.db", 6), KTUNE_INVALID_VALUE);
  EXPECT_EQ(h, nullptr);
  EXPECT_NE(err().find("unknown flags 6"), std::string::npos) << err();
  EXPECT_EQ(ktune_create_ex(nullptr, nullptr, KTUNE_FLAG_TF32X3), KTUNE_INVALID_VALUE);
}

TEST(CApi, CreateWithoutADeviceSaysSo) {
  ktune_handle_t h = nullptr;
  const ktune_status_t s = ktune_create(&h, "/nonexistent/ktune.db");
  if (s == KTUNE_SUCCESS) {
    ktune_destroy(h);
    GTEST_SKIP() << "this machine has a GPU";
  }
  EXPECT_EQ(s, KTUNE_NO_DEVICE);
  EXPECT_EQ(h, nullptr);
  EXPECT_NE(err().find("no GPU"), std::string::npos) << err();
}

// ktune_gemm_ex refuses unknown and mixed element types and unknown compute types before anything
// else (the handle is not even looked at), and checks its other arguments as ktune_sgemm does.
TEST(CApi, GemmExRefusesUnknownOrMixedTypesAndNamesItself) {
  auto ex = [](ktune_datatype_t a, ktune_datatype_t b, ktune_datatype_t c, ktune_compute_t comp = KTUNE_COMPUTE_32F, int lda = 4) {
    return ktune_gemm_ex(nullptr, KTUNE_ROW_MAJOR, KTUNE_OP_N, KTUNE_OP_N, 4, 4, 4, 1.0f, buf, a, lda, buf, b, 4, 0.0f, buf, c, 4,
                         comp, nullptr);
  };
  EXPECT_EQ(ex(KTUNE_R_16BF, KTUNE_R_16F, KTUNE_R_16BF), KTUNE_INVALID_VALUE);
  EXPECT_NE(err().find("mixed element types"), std::string::npos) << err();
  EXPECT_NE(err().find("B KTUNE_R_16F"), std::string::npos) << err();
  EXPECT_EQ(ex((ktune_datatype_t)5, KTUNE_R_16F, KTUNE_R_16F), KTUNE_INVALID_VALUE);
  EXPECT_NE(err().find("unknown element type 5"), std::string::npos) << err();
  EXPECT_EQ(ex(KTUNE_R_64F, KTUNE_R_64F, KTUNE_R_64F), KTUNE_INVALID_VALUE);
  EXPECT_NE(err().find("KTUNE_R_64F is for user kernels only"), std::string::npos) << err();
  EXPECT_EQ(ex(KTUNE_R_16F, KTUNE_R_16F, KTUNE_R_16F, (ktune_compute_t)3), KTUNE_INVALID_VALUE);
  EXPECT_NE(err().find("unknown compute type 3"), std::string::npos) << err();
  EXPECT_EQ(ex(KTUNE_R_16BF, KTUNE_R_16BF, KTUNE_R_16BF, KTUNE_COMPUTE_32F, 3), KTUNE_INVALID_VALUE);
  EXPECT_NE(err().find("ktune_gemm_ex: lda = 3 < 4"), std::string::npos) << err();
  EXPECT_EQ(ex(KTUNE_R_16BF, KTUNE_R_16BF, KTUNE_R_16BF), KTUNE_INVALID_VALUE);
  EXPECT_NE(err().find("ktune_gemm_ex: handle is NULL"), std::string::npos) << err();
}
