// Descriptors of the built-in GEMM families (host code; the .cu files beside them are the kernels).
#pragma once
#include "ktune/family.h"

namespace ktune {

Family gemm_naive_family();
Family gemm_smem_family();
Family gemm_simt_family();

// Template arguments that come from the problem, not the config: "A_COL,B_COL".
std::string gemm_layout_args(const GemmProblem& p);
// Leading dimension of each split-K workspace slice: N rounded up to 4 floats, so that vector
// stores into the workspace are 16-byte aligned whatever N is. Launchers set args.ws_ld to it.
inline long long gemm_workspace_ld(long long n) { return (n + 3) / 4 * 4; }
// ceil(a / b) for positive sizes, as the unsigned a grid dimension needs.
unsigned ceil_div(int64_t a, int64_t b);

} // namespace ktune
