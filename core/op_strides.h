// What validate() and validate_key() (core/problem.cpp) and the buffers runner's served strides
// ask of an op of N-dimensional operands; defined beside the op list in core/op_registry.cpp.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ktune/problem.h"

namespace ktune {

// True when op declares an operand with a shape (its strides follow validate_strides' rule).
bool has_shaped_operands(const OpInfo& op);
// Calls fail with the reason when a stride is out of range or an operand's elements overlap.
void validate_strides(const Problem& p, const std::function<void(const std::string&)>& fail);
// Every shaped operand's outer strides packed, each rounded up to step elements and then extra
// more (Problem::ld order): extra 0 gives the smallest strides of that alignment.
std::vector<int64_t> packed_strides(const Problem& p, int64_t step, int64_t extra = 0);

} // namespace ktune
