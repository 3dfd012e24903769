// The tuner's runner for ops of plain buffers (OpInfo::runner "buffers", e.g. scale_add): inputs
// filled on the host from the seed and rounded to the dtype, outputs poisoned, guard bytes around
// every buffer, the FP64 reference of the op's OpInfo::reference on the host, and each output
// element held to its own bound (docs/ADDING_AN_OP.md, "Verification").
#pragma once
#include <memory>

#include "ktune/compiler.h"
#include "ktune/problem.h"
#include "tuner/op_runner.h"

namespace ktune {

// The bound on |out - exact| of one output element of an op of plain buffers: the dtype's unit
// roundoff of |exact| (the final rounding), plus gamma(roundings) = k u / (1 - k u) with FP32's
// u = 2^-24 of `magnitude` (the terms' rounding in FP32), plus half the dtype's smallest
// subnormal spacing (an exact result that rounds into the subnormals).
double buffers_element_bound(DType out, int roundings, double exact, double magnitude);

std::unique_ptr<OpRunner> make_buffers_runner(const DeviceInfo& device);

} // namespace ktune
