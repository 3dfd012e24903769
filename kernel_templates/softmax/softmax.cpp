// Row softmax: y = softmax(scale * x) along each row of a rows x cols matrix (PyTorch's
// torch.softmax(x * scale, dim=-1)), f32 / bf16 / f16 in and out, FP32 math.
#include <algorithm>
#include <cmath>

#include "rows/rows_families.h"
#include "softmax/softmax_check.h"
#include "softmax/softmax.h"

namespace ktune {

namespace {

// FP64: z = scale * x, y = exp(z - max z) / sum exp(z - max z); scale as the kernels get it
// (a float in KtuneRowsArgs), as the device reference (softmax_check.h) takes it.
void reference(const Problem& p, const double* x, const double*, const double*, double* y) {
  const int64_t n = p.dims[1];
  const double scale = double(float(p.scalar("scale")));
  double m = -INFINITY, sum = 0;
  for (int64_t j = 0; j < n; ++j) m = std::max(m, scale * x[j]);
  for (int64_t j = 0; j < n; ++j) sum += (y[j] = std::exp(scale * x[j] - m));
  for (int64_t j = 0; j < n; ++j) y[j] /= sum;
}

RowsOpSpec spec() {
  return {"softmax", KTUNE_ROWS_SOFTMAX, "y = softmax(scale * x) along each row of rows x cols (torch.softmax(x * scale, -1))",
          {{"scale", 1.0}}, /*max, subtract, exp, sum, divide*/ 5, 0, reference};
}
} // namespace

OpInfo softmax_op_info() { return rows_op_info(spec()); }

} // namespace ktune
