// The list of built-in families. A new family is declared beside its template and added here.
#include "gemm/gemm_families.h"

namespace ktune {

std::vector<Family> builtin_families() { return {gemm_naive_family(), gemm_smem_family(), gemm_simt_family(), gemm_skinny_family(), gemm_tf32x3_family()}; }

} // namespace ktune
