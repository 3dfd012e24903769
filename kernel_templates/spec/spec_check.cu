// Verification kernels for user kernels (kernel specs; tuner/spec_op.cpp): a buffer's fill as its
// spec declares it, byte compares (guards left as written, inputs left unchanged) and the compare
// of an output against the reference kernel's under |out - ref| <= atol + rtol |ref|. They run on
// the GPU because a check of a small kernel must cost well under a millisecond (the tuner checks
// every config twice) and a check of a large one must not copy gigabytes to the host.
//
// T, the element type, is ElemType's code (core/kernel_spec.h): 0 f64, 1 f32, 2 f16, 3 bf16,
// 4 i64, 5 i32, 6 i16, 7 i8, 8 u64, 9 u32, 10 u16, 11 u8. Values pass through double as on the
// host (load_elem / store_elem / spec_fill_bytes in core/spec_op.cpp), which these match bit for
// bit: a GPU test compares them.
#include "ktune_random.cuh"
#include "spec_elem.cuh" // ktune_spec_load

namespace {

// Rounded to nearest, saturating (NaN: 0), as the host's store_elem.
template <class I>
__device__ I spec_saturate(double v, double lo, double hi) {
  const double r = rint(v);
  if (r != r) return (I)0;
  if (r <= lo) return (I)lo;
  if (r >= hi) return (I)hi;
  return (I)r;
}

__device__ void spec_store(void* p, long long i, int t, double v) {
  switch (t) {
    case 0: ((double*)p)[i] = v; break;
    case 1: ((float*)p)[i] = (float)v; break;
    case 2: ((unsigned short*)p)[i] = ktune_to_half((float)v, 1); break;
    case 3: ((unsigned short*)p)[i] = ktune_to_half((float)v, 0); break;
    // 2^63 and 2^64 are the doubles at and above the 64-bit maxima: saturate there.
    case 4: {
      const double r = rint(v);
      ((long long*)p)[i] = r != r ? 0 : r <= -9223372036854775808.0 ? (long long)(-9223372036854775807ll - 1)
                                      : r >= 9223372036854775808.0 ? 9223372036854775807ll : (long long)r;
      break;
    }
    case 5: ((int*)p)[i] = spec_saturate<int>(v, -2147483648.0, 2147483647.0); break;
    case 6: ((short*)p)[i] = spec_saturate<short>(v, -32768.0, 32767.0); break;
    case 7: ((signed char*)p)[i] = spec_saturate<signed char>(v, -128.0, 127.0); break;
    case 8: {
      const double r = rint(v);
      ((unsigned long long*)p)[i] = r != r || r <= 0 ? 0ull : r >= 18446744073709551616.0 ? ~0ull : (unsigned long long)r;
      break;
    }
    case 9: ((unsigned*)p)[i] = spec_saturate<unsigned>(v, 0.0, 4294967295.0); break;
    case 10: ((unsigned short*)p)[i] = spec_saturate<unsigned short>(v, 0.0, 65535.0); break;
    default: ((unsigned char*)p)[i] = spec_saturate<unsigned char>(v, 0.0, 255.0); break;
  }
}

__device__ __forceinline__ long long spec_first() { return blockIdx.x * (long long)blockDim.x + threadIdx.x; }
__device__ __forceinline__ long long spec_stride() { return (long long)gridDim.x * blockDim.x; }

} // namespace

// SpecFill's kinds (core/kernel_spec.h): 0 random in [lo, hi) (integers: its floor), 1 zeros,
// 2 ones, 3 a ramp, lo + hi * (i % value) (value 0: lo + hi * i), 4 `value`, 6 random floored
// whatever the type. Files and permutations are made on the host.
extern "C" __global__ void ktune_spec_fill(void* x, long long n, int t, int kind, double lo, double hi, double value,
                                           unsigned long long seed) {
  const bool integer = t >= 4 || kind == 6;
  const long long mod = (long long)value;
  for (long long i = spec_first(); i < n; i += spec_stride()) {
    double v;
    switch (kind) {
      case 0:
      case 6: {
        // Rounded as the host rounds it (no contraction into an fma).
        const double r = __dadd_rn(lo, __dmul_rn(hi - lo, ktune_uniform01(seed, i)));
        v = integer ? floor(r) : r;
        break;
      }
      case 1: v = 0; break;
      case 2: v = 1; break;
      case 3: v = __dadd_rn(lo, __dmul_rn(hi, (double)(mod > 0 ? i % mod : i))); break;
      default: v = value; break;
    }
    spec_store(x, i, t, v);
  }
}

// count[0] += the bytes of a[0, n) that differ from b[0, n), or from `byte` where b is null.
extern "C" __global__ void ktune_spec_differ(const unsigned char* a, const unsigned char* b, unsigned byte, long long n,
                                             unsigned long long* count) {
  unsigned long long c = 0;
  const bool words = ((unsigned long long)a | (unsigned long long)b) % 16 == 0;
  long long done = 0;
  if (words) { // 16 bytes a thread at a time: gigabyte inputs are compared at memory speed
    const long long w = n / 16;
    const uint4* a4 = (const uint4*)a;
    const uint4* b4 = (const uint4*)b;
    const unsigned rep = byte * 0x01010101u;
    for (long long i = spec_first(); i < w; i += spec_stride()) {
      const uint4 x = a4[i];
      const uint4 y = b ? b4[i] : make_uint4(rep, rep, rep, rep);
      // __vcmpne4: 0xff in each byte that differs.
      c += (__popc(__vcmpne4(x.x, y.x)) + __popc(__vcmpne4(x.y, y.y)) + __popc(__vcmpne4(x.z, y.z)) +
            __popc(__vcmpne4(x.w, y.w))) / 8;
    }
    done = w * 16;
  }
  for (long long i = done + spec_first(); i < n; i += spec_stride()) c += a[i] != (b ? b[i] : (unsigned char)byte);
  for (int o = 16; o > 0; o /= 2) c += __shfl_xor_sync(0xffffffffu, c, o);
  if ((threadIdx.x & 31) == 0 && c) atomicAdd(count, c);
}

// What ktune_spec_compare adds up over an output (tuner/spec_op.cpp reads it back as is).
struct KtuneSpecSums {
  double err2, ref2, allow2;
  unsigned long long worst_ratio; // the largest error / bound, as the bits of a non-negative double
  unsigned long long violations, nonfinite;
  long long first_violation, first_nonfinite; // the least such index; LLONG_MAX when none
  double absmax; // ktune_spec_absmax: the largest finite |ref|
};

// max over the finite elements of |x|, into s->absmax (as bits: non-negative doubles order as
// their bits do).
extern "C" __global__ void ktune_spec_absmax(const void* x, long long n, int t, KtuneSpecSums* s) {
  double m = 0;
  for (long long i = spec_first(); i < n; i += spec_stride()) {
    const double v = fabs(ktune_spec_load(x, i, t));
    if (v <= 1.7976931348623157e308 && v > m) m = v;
  }
  for (int o = 16; o > 0; o /= 2) m = fmax(m, __shfl_xor_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0 && m > 0)
    atomicMax((unsigned long long*)&s->absmax, (unsigned long long)__double_as_longlong(m));
}

// got against ref, element by element: a non-finite value where the reference is finite counts
// in nonfinite; where the reference is not finite there is nothing to hold the output to;
// otherwise the element passes when |got - ref| <= atol + rtol |ref|. atol < 0: rtol x s->absmax
// (ktune_spec_absmax ran before, on the same stream).
extern "C" __global__ void ktune_spec_compare(const void* got, const void* ref, long long n, int t, double atol,
                                              double rtol, KtuneSpecSums* s) {
  if (atol < 0) atol = rtol * s->absmax;
  double err2 = 0, ref2 = 0, allow2 = 0, worst = 0;
  unsigned long long bad = 0, nonfinite = 0;
  long long first_bad = 9223372036854775807ll, first_nonfinite = 9223372036854775807ll;
  for (long long i = spec_first(); i < n; i += spec_stride()) {
    const double g = ktune_spec_load(got, i, t), w = ktune_spec_load(ref, i, t);
    const bool g_finite = fabs(g) <= 1.7976931348623157e308, w_finite = fabs(w) <= 1.7976931348623157e308;
    if (!w_finite) continue;
    if (!g_finite) {
      if (nonfinite++ == 0) first_nonfinite = i;
      continue;
    }
    const double d = g - w, bound = atol + rtol * fabs(w);
    err2 += d * d, ref2 += w * w, allow2 += bound * bound;
    const double ratio = bound > 0 ? fabs(d) / bound : (d == 0 ? 0.0 : __longlong_as_double(0x7ff0000000000000ll));
    worst = fmax(worst, ratio);
    if (ratio > 1 && bad++ == 0) first_bad = i;
  }
  for (int o = 16; o > 0; o /= 2) {
    err2 += __shfl_xor_sync(0xffffffffu, err2, o);
    ref2 += __shfl_xor_sync(0xffffffffu, ref2, o);
    allow2 += __shfl_xor_sync(0xffffffffu, allow2, o);
    worst = fmax(worst, __shfl_xor_sync(0xffffffffu, worst, o));
    bad += __shfl_xor_sync(0xffffffffu, bad, o);
    nonfinite += __shfl_xor_sync(0xffffffffu, nonfinite, o);
    first_bad = min(first_bad, __shfl_xor_sync(0xffffffffu, first_bad, o));
    first_nonfinite = min(first_nonfinite, __shfl_xor_sync(0xffffffffu, first_nonfinite, o));
  }
  if ((threadIdx.x & 31) != 0) return;
  if (err2 != 0) atomicAdd(&s->err2, err2);
  if (ref2 != 0) atomicAdd(&s->ref2, ref2);
  if (allow2 != 0) atomicAdd(&s->allow2, allow2);
  if (worst > 0) atomicMax(&s->worst_ratio, (unsigned long long)__double_as_longlong(worst));
  if (bad) {
    atomicAdd(&s->violations, bad);
    atomicMin(&s->first_violation, first_bad);
  }
  if (nonfinite) {
    atomicAdd(&s->nonfinite, nonfinite);
    atomicMin(&s->first_nonfinite, first_nonfinite);
  }
}
