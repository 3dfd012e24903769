// LayerNorm forward over the last dimension: y = (x - mean) / sqrt(var + eps) * weight + bias, with
// the biased variance (PyTorch's F.layer_norm(x, (cols,), weight, bias, eps)), f32 / bf16 / f16 in
// and out (weight and bias in the same dtype), FP32 math.
#include "layernorm/layernorm.h"
#include "rows/rows_families.h"

namespace ktune {

namespace {
RowsOpSpec spec() {
  return {"layernorm", 1, "y = (x - mean) / sqrt(var + eps) * weight + bias along each row (F.layer_norm)",
          {{"eps", 1e-5}}, /*sum, centre, square, sum, scale, weight, bias, ...*/ 8, 2};
}
} // namespace

OpInfo layernorm_op_info() { return rows_op_info(spec()); }
std::vector<Family> layernorm_families() { return rows_families(spec()); }

} // namespace ktune
