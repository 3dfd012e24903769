// The row ops' (softmax, LayerNorm, RMSNorm) side of the worker: inputs filled and outputs checked
// on the device (rows/rows_reference.cu), the FP64 reference on sampled rows on the host, and no
// baseline library in C++ (PyTorch is compared from Python).
#pragma once
#include <memory>
#include <string>

#include "ktune/compiler.h"

#include "tuner/op_runner.h"

namespace ktune {

// Relative Frobenius error allowed for a row op's output: the output's rounding (2^-8 bf16,
// 2^-11 f16; none for f32) plus 1e-5 for the FP32 math (ex2/rsqrt approximations, ~2 ulp, and
// reductions over the row).
double rows_tolerance(DType out);
// Outputs below the dtype's smallest normal lose relative precision (softmax over 131072 columns
// gives f16 probabilities near 1e-6): each element may also be off by half the subnormal spacing
// (2^-25 f16; 2^-134 bf16, 2^-150 f32: nothing in practice), so n elements pass when
//   ||y - ref|| <= rows_tolerance * ||ref|| + sqrt(n) * rows_subnormal_half_spacing.
double rows_subnormal_half_spacing(DType out);

// The fill and check kernels (rows/rows_reference.cu) for an arch.
CompileRequest rows_reference_request(const std::string& arch);

std::unique_ptr<OpRunner> make_rows_runner(Compiler& compiler, const DeviceInfo& device);

} // namespace ktune
