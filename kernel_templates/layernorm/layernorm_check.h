// LayerNorm's part of the row ops' check (rows/rows_check.h: the rule, RULE, R and the norm): its
// code, its row statistics, its FP64 element and its FP32 error bound e_j. Plain C++, compiled by
// NVRTC into the device reference (rows/rows_reference.cu) and by the host (tests, the op's code).
//
// e_j = u R ((|x_j - mean| + A) |w_j| / sigma + |b_j|),   sigma = sqrt(var + eps), A = sqrt(mean of
// x^2) >= |mean|. The mean's error (<= u R A, the bound for a sum of terms of root mean square A)
// shifts x_j - mean; the variance's relative error (<= u R, a sum of squares) and rsqrt's scale
// (x_j - mean) / sigma; the affine tail rounds relative to |y|.
#pragma once
// NVRTC finds embedded headers by file name; the host by their path under kernel_templates/.
#if defined(__CUDACC_RTC__)
#include "rows_check.h"
#else
#include "rows/rows_check.h"
#endif

#define KTUNE_ROWS_LAYERNORM 1

template <>
struct KtuneRowCheck<KTUNE_ROWS_LAYERNORM> {
  struct Stats {
    double n;    // cols
    double mean; // mean of x
    double rms;  // sqrt(mean of x^2) (the size of the partial sums of the mean)
    double inv;  // 1 / sqrt(var + eps) (biased variance, two-pass)
  };
  template <class Row>
  KTUNE_ROWS_HD static Stats stats(const Row& row, double, double eps) {
    Stats s;
    s.n = row.n();
    s.mean = row.sum([](double x) { return x; }) / s.n;
    const double mean = s.mean;
    s.inv = 1.0 / sqrt(row.sum([&](double x) { return (x - mean) * (x - mean); }) / s.n + eps);
    s.rms = sqrt(row.sum([](double x) { return x * x; }) / s.n);
    return s;
  }
  KTUNE_ROWS_HD static double ref(const Stats& s, double x, double w, double b) { return (x - s.mean) * s.inv * w + b; }
  KTUNE_ROWS_HD static double fp32_error(const Stats& s, double x, double w, double b, double) {
    return KTUNE_ROWS_U * ktune_rows_reduction_allowance(s.n) * ((fabs(x - s.mean) + s.rms) * fabs(w) * s.inv + fabs(b)) +
           KTUNE_ROWS_TINY;
  }
};
