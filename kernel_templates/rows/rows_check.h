// The row ops' per-element error rule, in one definition for the device check (rows_reference.cu,
// through NVRTC) and the host (tuner/rows_op.cpp's verdict, and the tests that exercise the rule
// without a GPU). Each op's own part lives in its folder, kernel_templates/<op>/<op>_check.h: its
// code (KTUNE_ROWS_<OP>), its row statistics, its FP64 element and its bound e_j of section 2, as
// a specialization of KtuneRowCheck below. Plain C++: <cmath> on the host, NVRTC's built-in math
// functions on the device.
//
// Notation: n = cols; u = 2^-24 (FP32's unit roundoff); rn() rounds to nearest-even into the
// output's dtype (subnormals included); ref_j is the FP64 result of the op on exactly the inputs
// the kernel read (x, weight, bias rounded to the dtype; scale / eps as the floats of
// KtuneRowsArgs); y_j is the stored output.
//
// ---- 1. The output's rounding ----
// Every kernel computes yh_j in FP32 and stores y_j = rn(yh_j); write yh_j = ref_j + d_j. When
// y_j != rn(ref_j), y_j is the representable value nearest yh_j, so no farther from it than
// rn(ref_j):
//   |y_j - ref_j| <= |y_j - yh_j| + |d_j| <= |rn(ref_j) - yh_j| + |d_j| <= |rn(ref_j) - ref_j| + 2 |d_j|.
// So, with e_j >= |d_j| (section 2), every correct kernel meets
//   |y_j - ref_j| <= |rn(ref_j) - ref_j| + 2 e_j                                          (RULE)
// Since |rn(v) - v| <= u_out |v| + h (u_out = 2^-8 bf16, 2^-11 f16, 2^-24 f32; h half the
// output's subnormal spacing), RULE is at least as strict as |y - ref| <= u_out |ref| + 2 e + h,
// and stricter where it matters: an element one unit in the last place off rn(ref_j) breaks it
// unless ref_j lies within 2 e_j of a rounding midpoint (for 16-bit outputs 2 e_j is ~0.1 % (bf16)
// to a few % (f16, 131072 columns) of an ulp), and so does a kernel that truncates instead of
// rounding, on about half its elements.
//
// ---- 2. The FP32 error e_j ----
// R = C + sqrt(n), C = 128, stands for the row's reductions. Each kernel sums within a thread in
// sequence, then combines partial results over at most 14 levels (warp 5, block 5, cluster 4).
// The rounding errors of a sum of n terms of one sign stay below about lambda sqrt(n) u relative
// with overwhelming probability (Higham & Mary's probabilistic bound; the worst case (n - 1) u
// is never approached by rounding errors that are not adversarial), and lambda = 1 is generous:
// a thread sums at most max(64, n / 64) terms in sequence, the rest goes through trees. Each
// combine level costs at most ~8 roundings or approximate instructions (ex2.approx, __fdividef,
// rsqrt.approx: <= 2 ulp = 4 u each), 14 levels x 8 u = 112 u, and an element's own last
// operations < 16 u: C = 128.
// Each op's e_j and its derivation are in its <op>_check.h; every one adds 2^-147 absolute
// (KTUNE_ROWS_TINY): FP32 intermediates in the subnormal range (softmax probabilities below
// 2^-126: ex2's subnormal results, the 16-bit path's scaling by 2^-64 before its final rounding).
//
// ---- 3. The Frobenius norm ----
// RULE summed over the output (triangle inequality in l2): ||y - ref|| <= ||rn(ref) - ref|| +
// 2 ||e||. ||rn(ref) - ref|| is the error of the correctly rounded output, measured on the device
// with the reference: 0.29 .. 0.58 u_out ||ref|| for values spread over their binades (~0.39 for
// smooth distributions; a kernel that truncates has about twice that). rows_verdict
// (tuner/rows_op.cpp) bounds the norm by that plus a share of 2 ||e||: all of it for 16-bit
// outputs, an eighth for f32, where e is far above what a correct kernel's errors add up to
// (rows_allowance_share says what was measured).
//
// ---- 4. What it sees ----
// Measured (H200; correct kernels: every family's sampled and default configs): the largest f32
// element used 7 % of its bound; 16-bit outputs were the correctly rounded reference but for
// elements next to a rounding midpoint. Caught: one element one ulp off (16-bit), a truncating
// kernel, a row not written, weight ignored, softmax without its max at scale 40 (exp overflows),
// a wrong eps where it shows: on the runner's inputs (x uniform in [-3, 3), variance ~3) eps
// 1e-5 for 1e-6 changes y by ~1.5e-6 relative, below the FP32 allowance, but rows of one (RMSNorm)
// or two (LayerNorm) columns expose it; on wide rows the smallest caught (host model of a plain
// FP32 kernel, tests/kernels/rows_test.cpp) is eps 5e-5 for 1e-5 (LayerNorm) and 2e-5 for 1e-6
// (RMSNorm) in f32, through the norm, and 2e-4 / 1e-4 in bf16 and f16, per element (a relative
// ~3e-5, the FP32 allowance: a systematic error flips the rounding of elements next to a midpoint).
#pragma once
#if !defined(__CUDACC_RTC__)
#include <cmath>
#endif

#if defined(__CUDACC__)
#define KTUNE_ROWS_HD __host__ __device__ inline
#else
#define KTUNE_ROWS_HD inline
#endif

// R of section 2: the reductions' allowance for a row of n elements.
KTUNE_ROWS_HD double ktune_rows_reduction_allowance(double n) { return 128.0 + sqrt(n); }
// FP32's unit roundoff, and the absolute floor of section 2.
#define KTUNE_ROWS_U 0x1p-24
#define KTUNE_ROWS_TINY 0x1p-147

// One op's check, specialized in kernel_templates/<op>/<op>_check.h for its code OP:
//   struct Stats;  the row's FP64 statistics its elements and bounds read
//   template <class Row> static Stats stats(const Row& row, double scale, double eps);
//                  row.n() is cols; row.sum(f) and row.max(f) reduce f(x_j) (a double) over the
//                  row's elements in FP64 (the device: a block reduction; the host tests: in
//                  sequence); scale and eps are the kernel's arguments (floats), the op reads its own
//   static double ref(const Stats&, double x, double w, double b);        the FP64 result at x
//   static double fp32_error(const Stats&, double x, double w, double b, double ref);   e_j
// w = 1 and b = 0 where the op or the caller has none.
template <int OP>
struct KtuneRowCheck;

// v rounded to nearest-even into dt (0 f32, 1 bf16, 2 f16), subnormals included; exact in FP64
// (scaling by powers of two, then rint, which rounds ties to even). Values past the dtype's
// largest finite one are returned rounded, not as infinity (the kernel's infinity is counted as
// non-finite anyway).
KTUNE_ROWS_HD double ktune_rows_round(double v, int dt) {
  if (!(fabs(v) > 0.0) || !(fabs(v) <= 1.7976931348623157e308)) return v; // zero, NaN, infinity
  const int bits = dt == 0 ? 24 : dt == 1 ? 8 : 11;                       // significant bits
  const int emin = dt == 2 ? -14 : -126;                                  // exponent of the smallest normal
  int e = ilogb(v);
  if (e < emin) e = emin;
  const double q = ldexp(1.0, e - (bits - 1)); // the spacing at v
  return rint(v / q) * q;
}

// One output element judged by RULE: its error, the correctly rounded reference's error and the
// FP32 allowance 2 e_j.
struct KtuneRowsJudgement {
  double ref;   // the FP64 result
  double err;   // |y - ref|
  double ideal; // |rn(ref) - ref|
  double allow; // 2 e_j
  bool over;    // err > ideal + allow
  double ratio; // err / (ideal + allow): over 1 is a violation
};

template <int OP>
KTUNE_ROWS_HD KtuneRowsJudgement ktune_rows_judge(int dt, const typename KtuneRowCheck<OP>::Stats& s, double x,
                                                  double w, double b, double y) {
  KtuneRowsJudgement j;
  j.ref = KtuneRowCheck<OP>::ref(s, x, w, b);
  j.err = fabs(y - j.ref);
  j.ideal = fabs(ktune_rows_round(j.ref, dt) - j.ref);
  j.allow = 2.0 * KtuneRowCheck<OP>::fp32_error(s, x, w, b, j.ref);
  j.over = !(j.err <= j.ideal + j.allow); // a NaN reference counts as over
  j.ratio = j.err / (j.ideal + j.allow);  // allow > 0
  return j;
}
