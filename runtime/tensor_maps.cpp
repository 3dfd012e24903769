#include "runtime/tensor_maps.h"

#include "ktune/error.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"

namespace ktune {

namespace {

// The maps of this thread's recent launches: a GEMM launch needs three, an N-d op one per operand.
thread_local TensorMapCache<CUtensorMap, 16> t_maps;

std::string describe(const TensorMapKey& k) {
  std::string s = "rank " + std::to_string(k.rank) + ", dims";
  for (int i = 0; i < k.rank; ++i) s += " " + std::to_string(k.dims[i]);
  s += ", strides";
  for (int i = 0; i + 1 < k.rank; ++i) s += " " + std::to_string(k.strides[i]);
  s += " bytes, box";
  for (int i = 0; i < k.rank; ++i) s += " " + std::to_string(k.box[i]);
  return s;
}

} // namespace

static_assert(TensorMapKey().l2_promotion == CU_TENSOR_MAP_L2_PROMOTION_L2_256B, "a key's default is 256-byte promotion");

CUtensorMap encode_tensor_map(const TensorMapKey& key, const std::function<std::string()>& context) {
  return t_maps.get(key, [&] {
    CUtensorMap map{};
    const cuuint32_t elem_strides[TensorMapKey::kMaxRank] = {1, 1, 1, 1, 1};
    const CUresult r = driver().cuTensorMapEncodeTiled(
        &map, CUtensorMapDataType(key.type), cuuint32_t(key.rank), const_cast<void*>(key.ptr), key.dims, key.strides,
        key.box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CUtensorMapSwizzle(key.swizzle),
        CUtensorMapL2promotion(key.l2_promotion), CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    // The message is built only on failure: this runs at every launch that misses the cache.
    if (r != CUDA_SUCCESS) check_cu(r, "cuTensorMapEncodeTiled", context() + " (" + describe(key) + ")");
    return map;
  });
}

TensorMapKey operand_map_key(const Problem& p, const void* ptr, const LaunchStep::TmaOperand& map) {
  const std::vector<int64_t> e = operand_extents(p, size_t(map.operand)), s = operand_strides(p, size_t(map.operand));
  if (e.empty() || e.size() > size_t(TensorMapKey::kMaxRank) || map.box.size() != e.size())
    throw Error(p.key() + ": tensor map of operand " + std::to_string(map.operand) + " needs an N-dimensional operand of " +
                "at most 5 axes and a box of one extent per axis (" + std::to_string(map.box.size()) + " given for " +
                std::to_string(e.size()) + " axes)");
  const int eb = element_bytes(p.dtype);
  TensorMapKey k;
  k.ptr = ptr;
  k.rank = int(e.size());
  for (int i = 0; i < k.rank; ++i) {
    const size_t a = e.size() - 1 - size_t(i); // innermost first
    k.dims[i] = cuuint64_t(e[a]);
    k.box[i] = map.box[a];
    if (i > 0) k.strides[i - 1] = cuuint64_t(s[a]) * cuuint64_t(eb);
  }
  k.type = p.dtype == DType::f32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
           : p.dtype == DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                    : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  k.swizzle = map.swizzle_bytes == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
              : map.swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
              : map.swizzle_bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                        : CU_TENSOR_MAP_SWIZZLE_NONE;
  return k;
}

TensorMapKey spec_map_key(const KernelSpec::TensorMapShape& x, const void* ptr) {
  TensorMapKey k;
  k.ptr = ptr;
  k.rank = x.rank;
  for (int i = 0; i < x.rank; ++i) {
    k.dims[i] = x.dims[i];
    k.box[i] = x.box[i];
    if (i > 0) k.strides[i - 1] = x.strides[i - 1];
  }
  // TMA moves bits: a signed integer's elements are its unsigned twin's.
  switch (x.type) {
    case ElemType::f64: k.type = CU_TENSOR_MAP_DATA_TYPE_FLOAT64; break;
    case ElemType::f32: k.type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; break;
    case ElemType::f16: k.type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
    case ElemType::bf16: k.type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; break;
    case ElemType::i64: k.type = CU_TENSOR_MAP_DATA_TYPE_INT64; break;
    case ElemType::u64: k.type = CU_TENSOR_MAP_DATA_TYPE_UINT64; break;
    case ElemType::i32: k.type = CU_TENSOR_MAP_DATA_TYPE_INT32; break;
    case ElemType::u32: k.type = CU_TENSOR_MAP_DATA_TYPE_UINT32; break;
    case ElemType::i16: case ElemType::u16: k.type = CU_TENSOR_MAP_DATA_TYPE_UINT16; break;
    case ElemType::i8: case ElemType::u8: k.type = CU_TENSOR_MAP_DATA_TYPE_UINT8; break;
  }
  k.swizzle = x.swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
              : x.swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
              : x.swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                : CU_TENSOR_MAP_SWIZZLE_NONE;
  k.l2_promotion = x.l2_promotion == 256  ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B
                   : x.l2_promotion == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                   : x.l2_promotion == 64  ? CU_TENSOR_MAP_L2_PROMOTION_L2_64B
                                           : CU_TENSOR_MAP_L2_PROMOTION_NONE;
  return k;
}

} // namespace ktune
