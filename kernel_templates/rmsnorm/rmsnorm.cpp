// RMSNorm forward over the last dimension: y = x / sqrt(mean(x^2) + eps) * weight (PyTorch's
// F.rms_norm(x, (cols,), weight, eps); LLaMA's RMSNorm), f32 / bf16 / f16 in and out (weight in
// the same dtype), FP32 math.
#include "rmsnorm/rmsnorm.h"
#include "rows/rows_families.h"

namespace ktune {

namespace {
RowsOpSpec spec() {
  return {"rmsnorm", 2, "y = x / sqrt(mean(x^2) + eps) * weight along each row (F.rms_norm)", {{"eps", 1e-6}},
          /*square, sum, scale, weight*/ 4, 1};
}
} // namespace

OpInfo rmsnorm_op_info() { return rows_op_info(spec()); }
std::vector<Family> rmsnorm_families() { return rows_families(spec()); }

} // namespace ktune
