// RMSNorm forward over the last dimension: y = x / sqrt(mean(x^2) + eps) * weight (PyTorch's
// F.rms_norm(x, (cols,), weight, eps); LLaMA's RMSNorm), f32 / bf16 / f16 in and out (weight in
// the same dtype), FP32 math.
#include <algorithm>
#include <cmath>

#include "rmsnorm/rmsnorm.h"
#include "rows/rows_families.h"
#include "rmsnorm/rmsnorm_check.h"

namespace ktune {

namespace {

// FP64: y = x / sqrt(mean(x^2) + eps) * w; eps as the kernels get it (a float in KtuneRowsArgs), as
// the device reference (rmsnorm_check.h) takes it.
void reference(const Problem& p, const double* x, const double* w, const double*, double* y) {
  const int64_t n = p.dims[1];
  double ms = 0;
  for (int64_t j = 0; j < n; ++j) ms += x[j] * x[j];
  const double inv = 1.0 / std::sqrt(ms / double(n) + double(float(p.scalar("eps"))));
  for (int64_t j = 0; j < n; ++j) y[j] = x[j] * inv * (w ? w[j] : 1.0);
}

RowsOpSpec spec() {
  return {"rmsnorm", KTUNE_ROWS_RMSNORM, "y = x / sqrt(mean(x^2) + eps) * weight along each row (F.rms_norm)", {{"eps", 1e-6}},
          /*square, sum, scale, weight*/ 4, 1, reference};
}
} // namespace

OpInfo rmsnorm_op_info() { return rows_op_info(spec()); }

} // namespace ktune
