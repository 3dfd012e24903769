// Op scale_add: out = alpha * x + beta * y over n elements (BLAS's axpby into a third buffer),
// f32 / bf16 / f16, FP32 math. Everything the op is lives in this folder: what it computes and
// how to check it (its OpInfo, served by the tuner's "buffers" runner and the runtime's generic
// launch) and its two families; kernel_templates/ops.cpp names it once. docs/ADDING_AN_OP.md
// walks through this file.
#include <algorithm>
#include <cmath>
#include <string>

#include "ktune/error.h"
#include "ktune/family.h"

namespace ktune {

namespace {

int dt_code(DType d) { return d == DType::f32 ? 0 : d == DType::bf16 ? 1 : 2; }
int64_t n_of(const Problem& p) { return p.dims[0]; }

Family common(const std::string& name, const std::string& about) {
  Family f(name, "scale_add/scale_add.cu");
  f.op("scale_add").dtypes({DType::f32, DType::bf16, DType::f16}).describe(about);
  return f;
}

Family simple_family() {
  Family f = common("scale_add_simple", "one element a thread at a time, ITEMS of them BLOCK apart, no vectors");
  f.param("BLOCK", {128, 256, 512, 1024}, "threads per block").param("ITEMS", {1, 2, 4, 8}, "elements per thread");
  f.restrict("the grid's x extent holds every block", {"BLOCK", "ITEMS"}, [](const Config& c, const Problem& p, const DeviceInfo&) {
    return (n_of(p) + c["BLOCK"] * c["ITEMS"] - 1) / (c["BLOCK"] * c["ITEMS"]) <= INT32_MAX;
  });
  f.kernels([](const Config& c, const Problem& p) {
    return std::vector<std::string>{"scale_add_simple<" + std::to_string(dt_code(p.dtype)) + "," +
                                    std::to_string(c["BLOCK"]) + "," + std::to_string(c["ITEMS"]) + ">"};
  });
  f.launch([](const Config& c, const Problem& p) {
    LaunchStep s;
    const int64_t per_block = int64_t(c["BLOCK"]) * c["ITEMS"];
    s.grid[0] = unsigned(std::max<int64_t>(1, (n_of(p) + per_block - 1) / per_block));
    s.block[0] = unsigned(c["BLOCK"]);
    return LaunchPlan{{s}, 0, {}};
  });
  f.defaults([](const Problem&, const DeviceInfo&) {
    Config c;
    c.set("BLOCK", 256);
    c.set("ITEMS", 4);
    return c;
  });
  return f;
}

Family vec_family() {
  Family f = common("scale_add_vec", "VEC elements per load and store, UNROLL loads in flight a thread, a persistent grid");
  f.param("VEC", {1, 2, 4, 8}, "elements per vector access").param("BLOCK", {128, 256, 512}, "threads per block")
      .param("UNROLL", {1, 2, 4}, "vectors in flight per thread");
  f.restrict("vectors of at most 16 bytes", {"VEC"},
             [](const Config& c, const Problem& p, const DeviceInfo&) { return c["VEC"] * element_bytes(p.dtype) <= 16; })
      .restrict("the alignment class admits the vectors", {"VEC"},
                [](const Config& c, const Problem& p, const DeviceInfo&) { return c["VEC"] * element_bytes(p.dtype) <= p.align; });
  f.kernels([](const Config& c, const Problem& p) {
    return std::vector<std::string>{"scale_add_vec<" + std::to_string(dt_code(p.dtype)) + "," + std::to_string(c["BLOCK"]) +
                                    "," + std::to_string(c["VEC"]) + "," + std::to_string(c["UNROLL"]) + ">"};
  });
  f.launch([](const Config& c, const Problem& p) {
    LaunchStep s;
    const int64_t per_block = int64_t(c["BLOCK"]) * c["VEC"] * c["UNROLL"];
    // One block a work unit, capped at the blocks the device holds at once (persistent).
    s.grid[0] = unsigned(std::clamp<int64_t>((n_of(p) + per_block - 1) / per_block, 1, INT32_MAX));
    s.block[0] = unsigned(c["BLOCK"]);
    s.persistent = true;
    return LaunchPlan{{s}, 0, {}};
  });
  // The widest vectors the alignment class admits: valid for every problem.
  f.defaults([](const Problem& p, const DeviceInfo&) {
    Config c;
    c.set("VEC", std::max(1, std::min(16, p.align) / element_bytes(p.dtype)));
    c.set("BLOCK", 256);
    c.set("UNROLL", 2);
    return c;
  });
  return f;
}

} // namespace

OpInfo scale_add_op_info() {
  OpInfo o;
  o.name = "scale_add";
  o.about = "out = alpha * x + beta * y over n elements (axpby into a third buffer); the example op of docs/ADDING_AN_OP.md";
  o.dims = {"n"};
  o.scalars = {{"alpha", 1.0}, {"beta", 1.0}};
  o.min_ld = [](const std::vector<int64_t>&, const std::string&) { return std::vector<int64_t>{}; };
  // n = 0 has nothing to tune or look up: Runtime::run returns before validating it (as the row ops'
  // entry points do for an empty matrix).
  o.validate = [](const Problem& p) {
    if (p.dims[0] < 1) throw UsageError("invalid scale_add problem " + p.key() + ": n must be >= 1");
    if (p.dtype == DType::tf32) throw UsageError("invalid scale_add problem " + p.key() + ": tf32 is not a storage type");
  };
  o.flops = [](const Problem& p) { return 3.0 * double(p.dims[0]); };
  o.min_bytes = [](const Problem& p) { return 3.0 * double(p.dims[0]) * element_bytes(p.dtype); };
  o.runner = "buffers";
  const auto n = [](const Problem& p) { return p.dims[0]; };
  o.operands = {{"x", false, n, -1, 1}, {"y", false, n, -1, 1}, {"out", true, n}};
  // alpha and beta as the kernels get them: floats.
  o.reference = [](const Problem& p, const std::vector<const double*>& in, const std::vector<double*>& out,
                   const std::vector<double*>& mag) {
    const double alpha = double(float(p.scalar("alpha"))), beta = double(float(p.scalar("beta")));
    for (int64_t i = 0; i < p.dims[0]; ++i) {
      out[0][i] = alpha * in[0][i] + beta * in[1][i];
      mag[0][i] = std::abs(alpha * in[0][i]) + std::abs(beta * in[1][i]);
    }
  };
  o.roundings = 2; // beta * y, then the fma
  o.families = [] { return std::vector<Family>{simple_family(), vec_family()}; };
  return o;
}

} // namespace ktune
