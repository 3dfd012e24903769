// Row softmax: y = softmax(scale * x) along each row of a rows x cols matrix (PyTorch's
// torch.softmax(x * scale, dim=-1)), f32 / bf16 / f16 in and out, FP32 math.
#include "rows/rows_families.h"
#include "softmax/softmax.h"

namespace ktune {

namespace {
RowsOpSpec spec() {
  return {"softmax", 0, "y = softmax(scale * x) along each row of rows x cols (torch.softmax(x * scale, -1))",
          {{"scale", 1.0}}, /*max, subtract, exp, sum, divide*/ 5, 0};
}
} // namespace

OpInfo softmax_op_info() { return rows_op_info(spec()); }
std::vector<Family> softmax_families() { return rows_families(spec()); }

} // namespace ktune
