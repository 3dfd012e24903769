// Whether a kernel's output agrees with the baseline's at a problem: the check a config lent to a
// shape it was not tuned (and so not verified) at must pass before the runtime serves it there.
#pragma once
#include <string>
#include <vector>

#include "ktune/gemm_problem.h"

namespace ktune {

// "" when got agrees with ref, else why not. Both are p's C as stored (row-major, ldc p.eff_ldc(),
// p.dtype's elements) computed from the same inputs into a zeroed C. The test is
//   ||got - ref||_F / ||ref||_F <= 2 (u_out + (0.5 sqrt(K) + 4) 2^-24),
// the sum of both sides' error bounds (docs/TEMPLATES.md, "Verification"): a unit of the output's
// rounding and the FP32 accumulation's growth for each, FMA chains and 3xTF32 alike. Loose for
// what it is for: a kernel that skips a K tail, a tile or an edge at a shape it was not tuned at is
// off by whole percent, far above it. A non-finite value where ref is finite fails at once.
std::string output_disagreement(const GemmProblem& p, const std::vector<unsigned char>& ref,
                                const std::vector<unsigned char>& got);

} // namespace ktune
