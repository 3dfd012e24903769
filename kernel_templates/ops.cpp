// The list of built-in ops. An op lives in its own folder, kernel_templates/<name>/, which defines
// `OpInfo <name>_op_info()` (dimensions, scalars, checks, counts, its runner's description and
// its families); adding the name to KTUNE_OPS is the one line outside that folder that plugs it
// in (docs/ADDING_AN_OP.md).
#include "ktune/problem.h"

#define KTUNE_OPS(X) X(gemm) X(softmax) X(layernorm) X(rmsnorm) X(scale_add) X(attention) X(attention_paged) X(attention_varlen)

namespace ktune {

#define KTUNE_DECLARE_OP(name) OpInfo name##_op_info();
KTUNE_OPS(KTUNE_DECLARE_OP)
#undef KTUNE_DECLARE_OP

std::vector<OpInfo> builtin_ops() {
#define KTUNE_LIST_OP(name) name##_op_info(),
  return {KTUNE_OPS(KTUNE_LIST_OP)};
#undef KTUNE_LIST_OP
}

} // namespace ktune
