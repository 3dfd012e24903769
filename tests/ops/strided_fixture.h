// A test op of N-dimensional operands (OpInfo::Operand::shape), registered by the tests that use
// it: strided_scale, y = alpha * x over (b, s, h, d) tensors, each with its own strides, as
// attention's (B, S, H, D) and (B, H, S, D) operands are. Two families, their source inline: one
// element a thread, and x loaded through a 4-D tensor map (LaunchStep::TmaOperand::box).
#pragma once
#include <string>

#include "ktune/problem.h"

namespace ktune::testing {

// Registers strided_scale on first use; the same OpInfo after.
const OpInfo& strided_scale_op();
// The family's kernel source (the planted kernels of the GPU test are appended to it).
const char* strided_scale_source();

} // namespace ktune::testing
