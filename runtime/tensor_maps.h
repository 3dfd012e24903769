// Encoding TMA tensor maps (cuTensorMapEncodeTiled) for any launcher: GEMM's 2-D operand maps
// (gemm_launch.cpp) and the maps of an op's N-dimensional operands (buffers_launch.cpp, from
// LaunchStep::TmaOperand::box). Encoded maps are cached per thread (tensor_map_cache.h): a hot
// loop on the same pointers encodes nothing.
#pragma once
#include <cuda.h>

#include <functional>
#include <string>

#include "core/kernel_spec.h"
#include "ktune/family.h"
#include "ktune/problem.h"
#include "runtime/tensor_map_cache.h"

namespace ktune {

// The map of key, encoded or from this thread's cache. Throws CudaError naming the call, what()
// of context and the arguments when the driver refuses them (a stride not a multiple of 16
// bytes, a box over 256, a misaligned pointer).
CUtensorMap encode_tensor_map(const TensorMapKey& key, const std::function<std::string()>& context);

// The key of an N-dimensional operand's map: operand `map.operand` of p at ptr, its extents and
// strides innermost first, the box of map.box (outermost first, one per axis), elements of p's
// dtype, map.swizzle_bytes (0, 32, 64 or 128). Throws Error naming the step's problem when the
// operand has no shape or the box does not match its rank.
TensorMapKey operand_map_key(const Problem& p, const void* ptr, const LaunchStep::TmaOperand& map);

// The key of a user kernel's tensor map argument (KernelSpec::tensor_map_at) over the buffer at ptr.
TensorMapKey spec_map_key(const KernelSpec::TensorMapShape& shape, const void* ptr);

} // namespace ktune
