// LayerNorm forward over the last dimension: y = (x - mean) / sqrt(var + eps) * weight + bias, with
// the biased variance (PyTorch's F.layer_norm(x, (cols,), weight, bias, eps)), f32 / bf16 / f16 in
// and out (weight and bias in the same dtype), FP32 math.
#include <algorithm>
#include <cmath>

#include "layernorm/layernorm.h"
#include "rows/rows_families.h"
#include "layernorm/layernorm_check.h"

namespace ktune {

namespace {

// FP64: biased variance, y = (x - mean) / sqrt(var + eps) * w + b; eps as the kernels get it (a
// float in KtuneRowsArgs), as the device reference (layernorm_check.h) takes it.
void reference(const Problem& p, const double* x, const double* w, const double* b, double* y) {
  const int64_t n = p.dims[1];
  double mean = 0, var = 0;
  for (int64_t j = 0; j < n; ++j) mean += x[j];
  mean /= double(n);
  for (int64_t j = 0; j < n; ++j) var += (x[j] - mean) * (x[j] - mean);
  const double inv = 1.0 / std::sqrt(var / double(n) + double(float(p.scalar("eps"))));
  for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * inv * (w ? w[j] : 1.0) + (b ? b[j] : 0.0);
}

RowsOpSpec spec() {
  return {"layernorm", KTUNE_ROWS_LAYERNORM, "y = (x - mean) / sqrt(var + eps) * weight + bias along each row (F.layer_norm)",
          {{"eps", 1e-5}}, /*sum, centre, square, sum, scale, weight, bias, ...*/ 8, 2, reference};
}
} // namespace

OpInfo layernorm_op_info() { return rows_op_info(spec()); }

} // namespace ktune
