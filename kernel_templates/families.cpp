// The built-in families: each op's (OpInfo::families, declared in kernel_templates/<op>/), in
// the order of the op list.
#include "ktune/family.h"

namespace ktune {

std::vector<Family> builtin_families() {
  std::vector<Family> all;
  for (const OpInfo& op : ops())
    if (op.families)
      for (auto& f : op.families()) all.push_back(std::move(f));
  return all;
}

// gemm_naive and gemm_smem are the first rungs of the SGEMM ladder, kept to show where the others
// start from: every gemm_simt tiling beats them, so a tune of "every family" leaves them out.
// gemm_tf32x3 and gemm_wgmma_tf32x3 (sm_90a) are FP32 on the tensor cores, which a user opts in to
// (RuntimeOptions::tf32x3).
// Each family declares its dtypes, so one list serves every dtype: a bf16 run tunes the half
// families, an f32 run the FP32 ones. gemm_wgmma (sm_90a) is tried only on sm_90 devices and
// aligned problems, where its constraints let it.
std::vector<std::string> tuning_family_names(bool tf32x3) {
  std::vector<std::string> names = {"gemm_simt", "gemm_skinny", "gemm_tc16", "gemm_skinny16", "gemm_wgmma"};
  if (tf32x3) names.push_back("gemm_tf32x3"), names.push_back("gemm_wgmma_tf32x3");
  // Every family of the other ops competes (each problem only meets its own op's).
  for (const Family& f : builtin_families())
    if (f.op() != "gemm") names.push_back(f.name());
  return names;
}

} // namespace ktune
