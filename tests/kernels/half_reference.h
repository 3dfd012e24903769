// For the GPU tests that build an FP64 reference from rounded half inputs (gemm_tc16,
// gemm_skinny16, gemm_wgmma): the library's host conversions and the tuner's tolerance rule.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "tuner/gemm_op.h"
#include "core/half.h"
#include "ktune/gemm_problem.h"

namespace ktune::testing::half_ref {

// The host conversions are the library's (core/half.h), so that the tests and the tuner agree.
using ktune::half::from_bf16;
using ktune::half::from_f16;
using ktune::half::to_bf16;
using ktune::half::to_f16;

// The tolerance of a half GEMM's relative Frobenius error: the tuner's rule (GemmOp::tolerance).
inline double half_tolerance(bool f16, int64_t k) {
  GemmProblem p;
  p.dtype = f16 ? DType::f16 : DType::bf16;
  p.k = k;
  return GemmOp::tolerance(p);
}

} // namespace ktune::testing::half_ref
