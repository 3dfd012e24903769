// The list of built-in ops. A new op is declared in its own folder (kernel_templates/<op>/) and
// added here.
#include "ktune/gemm_problem.h"
#include "layernorm/layernorm.h"
#include "rmsnorm/rmsnorm.h"
#include "softmax/softmax.h"

namespace ktune {

const std::vector<OpInfo>& ops() {
  static const std::vector<OpInfo> list = {gemm_op_info(), softmax_op_info(), layernorm_op_info(), rmsnorm_op_info()};
  return list;
}

} // namespace ktune
