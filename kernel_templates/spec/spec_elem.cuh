// An element of a user kernel's buffer as a double, by ElemType's code (core/kernel_spec.h): 0 f64,
// 1 f32, 2 f16, 3 bf16, 4 i64, 5 i32, 6 i16, 7 i8, 8 u64, 9 u32, 10 u16, 11 u8; as the host's
// load_elem (core/spec_op.cpp). The check kernels (spec_check.cu) and the whole-buffer reads of a
// loop's condition (spec_reduce.cuh) read buffers so. Names carry ktune_: this header is
// compiled into users' kernels too.
#pragma once
#include "ktune_random.cuh" // ktune_half_value

__device__ __forceinline__ double ktune_spec_load(const void* p, long long i, int t) {
  switch (t) {
    case 0: return ((const double*)p)[i];
    case 1: return (double)((const float*)p)[i];
    case 2: return ktune_half_value(((const unsigned short*)p)[i], 1);
    case 3: return ktune_half_value(((const unsigned short*)p)[i], 0);
    case 4: return (double)((const long long*)p)[i];
    case 5: return (double)((const int*)p)[i];
    case 6: return (double)((const short*)p)[i];
    case 7: return (double)((const signed char*)p)[i];
    case 8: return (double)((const unsigned long long*)p)[i];
    case 9: return (double)((const unsigned*)p)[i];
    case 10: return (double)((const unsigned short*)p)[i];
    default: return (double)((const unsigned char*)p)[i];
  }
}
