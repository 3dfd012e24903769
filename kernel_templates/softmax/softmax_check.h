// softmax's part of the row ops' check (rows/rows_check.h: the rule, RULE, R and the norm): its
// code, its row statistics, its FP64 element and its FP32 error bound e_j. Plain C++, compiled by
// NVRTC into the device reference (rows/rows_reference.cu) and by the host (tests, the op's code).
//
// e_j = u |ref_j| (R + 3 ln n + 4 |m| + 4 |z_j - m|),   z = scale x, m = max_k z_k.
// A term is 2^t with t = fma(x, scale log2(e), -ref(M)), ref(M) the max times |scale| log2(e)
// rounded once: the rounded constant (2 u relative) and the fma's rounding (u relative to t) put
// <= 3 u |z_j - m| into the exponent (natural units), ref's rounding u |m| (twice: the element's
// and the row's max; the rescales between combine levels telescope); the 16-bit kernels' folded
// exponent -ref(M) - log2 S + 64 rounds once more, <= u (|m| + ln n + 45) (the 45 is inside C).
// The sum S's relative error is the mean of its terms' weighted by e^(z_k - m) / S (under that
// weighting the mean of |z_k - m| is at most ln n: the 3 ln n) plus its summation's (R).
#pragma once
// NVRTC finds embedded headers by file name; the host by their path under kernel_templates/.
#if defined(__CUDACC_RTC__)
#include "rows_check.h"
#else
#include "rows/rows_check.h"
#endif

#define KTUNE_ROWS_SOFTMAX 0

template <>
struct KtuneRowCheck<KTUNE_ROWS_SOFTMAX> {
  struct Stats {
    double n;     // cols
    double scale; // the scale the kernel got (a float)
    double max_z; // max_j scale * x_j
    double sum;   // sum_j exp(scale * x_j - max_z)
  };
  template <class Row>
  KTUNE_ROWS_HD static Stats stats(const Row& row, double scale, double) {
    Stats s;
    s.n = row.n(), s.scale = scale;
    s.max_z = row.max([&](double x) { return scale * x; });
    const double m = s.max_z;
    s.sum = row.sum([&](double x) { return exp(scale * x - m); });
    return s;
  }
  KTUNE_ROWS_HD static double ref(const Stats& s, double x, double, double) { return exp(s.scale * x - s.max_z) / s.sum; }
  KTUNE_ROWS_HD static double fp32_error(const Stats& s, double x, double, double, double ref) {
    const double z = s.scale * x;
    return KTUNE_ROWS_U * fabs(ref) *
               (ktune_rows_reduction_allowance(s.n) + 3.0 * log(s.n) + 4.0 * fabs(s.max_z) + 4.0 * fabs(z - s.max_z)) +
           KTUNE_ROWS_TINY;
  }
};
