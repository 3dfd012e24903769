// Row operators (softmax, LayerNorm, RMSNorm): rows x cols of f32 / bf16 / f16, one result row
// per input row, FP32 math. The three ops share their kernels (rows_*.cu, the op a template
// parameter) and so their descriptors: each op's file (kernel_templates/<op>/<op>.cpp) declares
// its OpInfo and families through these.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ktune/family.h"
#include "ktune/problem.h"

namespace ktune {

// What distinguishes the three ops to the shared code.
struct RowsOpSpec {
  std::string name;   // "softmax", "layernorm", "rmsnorm"
  int code = 0;       // KTUNE_ROWS_<OP>, from the op's <op>_check.h
  std::string about;
  std::vector<std::pair<std::string, double>> scalars; // softmax: scale; norms: eps
  double flops_per_element = 0; // an honest count for TFLOPS columns; these ops are judged by bandwidth
  int vectors_per_row = 0;      // weight (and bias) vectors of cols elements read besides x and y
  // The op's FP64 reference of one row (OpInfo::reference_row), the semantics rows_common.cuh states.
  std::function<void(const Problem&, const double* x, const double* w, const double* b, double* y)> reference_row;
};

OpInfo rows_op_info(const RowsOpSpec& s);
// <op>_warp, <op>_block, <op>_stream, <op>_cluster (sm_90), <op>_bulk (sm_90).
std::vector<Family> rows_families(const RowsOpSpec& s);

} // namespace ktune
