// The row ops' (softmax, LayerNorm, RMSNorm) side of the worker: inputs filled, and every output
// element checked against the FP64 reference of its row, on the device (rows/rows_reference.cu;
// the rule and its derivation in rows/rows_check.h); no baseline library in C++ (PyTorch is
// compared from Python).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "ktune/compiler.h"

#include "tuner/op_runner.h"

namespace ktune {

// A coarse bound on a correct row kernel's relative Frobenius error, for checks by hand against a
// host reference (the runner holds every element to rows_check.h's rule instead): the output's
// rounding (2^-8 bf16, 2^-11 f16; none for f32) plus 1e-5 for the FP32 math.
double rows_tolerance(DType out);
// Half the spacing of the output's subnormals (2^-25 f16; 2^-134 bf16, 2^-150 f32): what rounding
// may add to u_out |v| below the smallest normal (|rn(v) - v| <= u_out |v| + this).
double rows_subnormal_half_spacing(DType out);

// What ktune_rows_verify (rows/rows_reference.cu) accumulates over an output.
struct RowsCheckSums {
  uint64_t nonfinite = 0;           // elements of the rows that are not finite
  uint64_t stray_writes = 0;        // padding elements written
  uint64_t violations = 0;          // finite elements over their bound
  uint64_t first_violation = ~0ull; // the lowest offset in y among those
  double worst_ratio = 0;           // max error / bound
  double err2 = 0, ref2 = 0;        // sum (y - ref)^2, sum ref^2
  double ideal2 = 0, allow2 = 0;    // sum (rn(ref) - ref)^2, sum (2 e)^2
};

// The share of the FP32 allowance ||2 e|| that the Frobenius bound adds to the correctly rounded
// output's error ||rn(ref) - ref|| (rows_check.h, section 3).
double rows_allowance_share(DType out);
// The verdict on sums: pass when no element is non-finite, over its bound or in the padding, and
//   ||y - ref|| <= ||rn(ref) - ref|| + rows_allowance_share(out) * ||2 e||.
VerifyResult rows_verdict(const RowsCheckSums& s, DType out);

// The fill and verification kernels (rows/rows_reference.cu with the op's <op>_check.h) of a row
// op for an arch; throws Error for an op without a row-op code.
CompileRequest rows_reference_request(const std::string& arch, const OpInfo& op);

std::unique_ptr<OpRunner> make_rows_runner(Compiler& compiler, const DeviceInfo& device);

} // namespace ktune
