// RMSNorm's part of the row ops' check (rows/rows_check.h: the rule, RULE, R and the norm): its
// code, its row statistics, its FP64 element and its FP32 error bound e_j. Plain C++, compiled by
// NVRTC into the device reference (rows/rows_reference.cu) and by the host (tests, the op's code).
//
// e_j = u R |ref_j|: the mean square's relative error <= u R, halved by the root, then products.
#pragma once
// NVRTC finds embedded headers by file name; the host by their path under kernel_templates/.
#if defined(__CUDACC_RTC__)
#include "rows_check.h"
#else
#include "rows/rows_check.h"
#endif

#define KTUNE_ROWS_RMSNORM 2

template <>
struct KtuneRowCheck<KTUNE_ROWS_RMSNORM> {
  struct Stats {
    double n;   // cols
    double inv; // 1 / sqrt(mean(x^2) + eps)
  };
  template <class Row>
  KTUNE_ROWS_HD static Stats stats(const Row& row, double, double eps) {
    Stats s;
    s.n = row.n();
    s.inv = 1.0 / sqrt(row.sum([](double x) { return x * x; }) / s.n + eps);
    return s;
  }
  KTUNE_ROWS_HD static double ref(const Stats& s, double x, double w, double) { return x * s.inv * w; }
  KTUNE_ROWS_HD static double fp32_error(const Stats& s, double, double, double, double ref) {
    return KTUNE_ROWS_U * ktune_rows_reduction_allowance(s.n) * fabs(ref) + KTUNE_ROWS_TINY;
  }
};
