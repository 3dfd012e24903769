// PyTorch's headers for NVRTC under host_code skip (core/nvrtc_std.h): what an extension's device
// code takes from them, PyTorch's C++ API left out.
#include "core/nvrtc_std.h"

#include <set>

namespace ktune {

namespace {

// The types device code names, laid out as PyTorch lays them out (a buffer of f16 is one of
// at::Half; c10::complex<float> is two floats aligned to 8), with the arithmetic c10's
// Half-inl.h, BFloat16-inl.h and complex.h give them: Half op Half is a Half computed in float,
// Half op float a float, Half op double a double, Half op int a Half. Comparisons are templates
// on the other side's type so that a Half compared with a number is not ambiguous between
// float's built-in operator and cuda_fp16.h's on __half (PyTorch builds extensions with
// __CUDA_NO_HALF_OPERATORS__, which removes the latter; projects that undefine it, vLLM and
// FlashAttention, use __half's operators, so they stay). at:: and torch:: see c10's names as in
// c10/macros/Macros.h.
const char* const kTorchDeviceTypes = R"CUDA(#pragma once
// ktune's device view of PyTorch's c10 and ATen types for NVRTC (host_code skip): no at::Tensor,
// streams or dispatch, whose host code is blanked.
#include <cassert>
#include <cstdint>
#include <cstddef>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#ifndef C10_HOST_DEVICE
#define C10_HOST_DEVICE __host__ __device__
#endif
#ifndef C10_DEVICE
#define C10_DEVICE __device__
#endif
#ifndef C10_HOST
#define C10_HOST __host__
#endif
#ifndef C10_ALWAYS_INLINE
#define C10_ALWAYS_INLINE __forceinline__
#endif
#ifndef C10_RESTRICT
#define C10_RESTRICT __restrict__
#endif
#ifndef C10_WARP_SIZE
#define C10_WARP_SIZE 32
#endif
#ifndef C10_LIKELY
#define C10_LIKELY(expr) (__builtin_expect(static_cast<bool>(expr), 1))
#define C10_UNLIKELY(expr) (__builtin_expect(static_cast<bool>(expr), 0))
#endif
#ifndef C10_UNUSED
#define C10_UNUSED __attribute__((__unused__))
#endif
#ifndef C10_MAX_THREADS_PER_BLOCK
#define C10_MAX_THREADS_PER_BLOCK(val) (((val) <= 1024) ? (val) : 1024)
#define C10_MIN_BLOCKS_PER_SM(threads_per_block, blocks_per_sm) \
  ((((threads_per_block) * (blocks_per_sm) <= 2048) ? (blocks_per_sm) : ((2048 + (threads_per_block) - 1) / (threads_per_block))))
#define C10_LAUNCH_BOUNDS_0 __launch_bounds__(256, 4)
#define C10_LAUNCH_BOUNDS_1(max_threads_per_block) __launch_bounds__((C10_MAX_THREADS_PER_BLOCK((max_threads_per_block))))
#define C10_LAUNCH_BOUNDS_2(max_threads_per_block, min_blocks_per_sm) \
  __launch_bounds__((C10_MAX_THREADS_PER_BLOCK((max_threads_per_block))), (C10_MIN_BLOCKS_PER_SM((max_threads_per_block), (min_blocks_per_sm))))
#endif
#ifndef CUDA_KERNEL_ASSERT
#define CUDA_KERNEL_ASSERT(cond) assert(cond)
#endif

namespace c10 {

struct alignas(2) Half {
  unsigned short x;
  struct from_bits_t {};
  C10_HOST_DEVICE static constexpr from_bits_t from_bits() { return from_bits_t(); }
  Half() = default;
  constexpr C10_HOST_DEVICE Half(unsigned short bits, from_bits_t) : x(bits) {}
  C10_HOST_DEVICE Half(float value) : x(__half_raw(__float2half(value)).x) {}
  C10_HOST_DEVICE Half(const __half& value) : x(__half_raw(value).x) {}
  C10_HOST_DEVICE operator float() const { __half_raw r; r.x = x; return __half2float(__half(r)); }
  C10_HOST_DEVICE operator __half() const { __half_raw r; r.x = x; return __half(r); }
};

struct alignas(2) BFloat16 {
  uint16_t x;
  struct from_bits_t {};
  C10_HOST_DEVICE static constexpr from_bits_t from_bits() { return from_bits_t(); }
  BFloat16() = default;
  constexpr C10_HOST_DEVICE BFloat16(unsigned short bits, from_bits_t) : x(bits) {}
  C10_HOST_DEVICE BFloat16(float value) : x(__nv_bfloat16_raw(__float2bfloat16(value)).x) {}
  C10_HOST_DEVICE BFloat16(const __nv_bfloat16& value) : x(__nv_bfloat16_raw(value).x) {}
  C10_HOST_DEVICE operator float() const { __nv_bfloat16_raw r; r.x = x; return __bfloat162float(__nv_bfloat16(r)); }
  C10_HOST_DEVICE operator __nv_bfloat16() const { __nv_bfloat16_raw r; r.x = x; return __nv_bfloat16(r); }
};

// Half-inl.h's and BFloat16-inl.h's operators, one set a type.
#define KTUNE_C10_REDUCED_FLOAT_OPS(T)                                                                                  \
  inline C10_HOST_DEVICE T operator+(const T& a, const T& b) { return static_cast<float>(a) + static_cast<float>(b); } \
  inline C10_HOST_DEVICE T operator-(const T& a, const T& b) { return static_cast<float>(a) - static_cast<float>(b); } \
  inline C10_HOST_DEVICE T operator*(const T& a, const T& b) { return static_cast<float>(a) * static_cast<float>(b); } \
  inline C10_HOST_DEVICE T operator/(const T& a, const T& b) { return static_cast<float>(a) / static_cast<float>(b); } \
  inline C10_HOST_DEVICE T operator-(const T& a) { return -static_cast<float>(a); }                                     \
  inline C10_HOST_DEVICE T& operator+=(T& a, const T& b) { return a = a + b; }                                          \
  inline C10_HOST_DEVICE T& operator-=(T& a, const T& b) { return a = a - b; }                                          \
  inline C10_HOST_DEVICE T& operator*=(T& a, const T& b) { return a = a * b; }                                          \
  inline C10_HOST_DEVICE T& operator/=(T& a, const T& b) { return a = a / b; }                                          \
  inline C10_HOST_DEVICE float operator+(T a, float b) { return static_cast<float>(a) + b; }                           \
  inline C10_HOST_DEVICE float operator-(T a, float b) { return static_cast<float>(a) - b; }                           \
  inline C10_HOST_DEVICE float operator*(T a, float b) { return static_cast<float>(a) * b; }                           \
  inline C10_HOST_DEVICE float operator/(T a, float b) { return static_cast<float>(a) / b; }                           \
  inline C10_HOST_DEVICE float operator+(float a, T b) { return a + static_cast<float>(b); }                           \
  inline C10_HOST_DEVICE float operator-(float a, T b) { return a - static_cast<float>(b); }                           \
  inline C10_HOST_DEVICE float operator*(float a, T b) { return a * static_cast<float>(b); }                           \
  inline C10_HOST_DEVICE float operator/(float a, T b) { return a / static_cast<float>(b); }                           \
  inline C10_HOST_DEVICE float& operator+=(float& a, const T& b) { return a += static_cast<float>(b); }                \
  inline C10_HOST_DEVICE float& operator-=(float& a, const T& b) { return a -= static_cast<float>(b); }                \
  inline C10_HOST_DEVICE float& operator*=(float& a, const T& b) { return a *= static_cast<float>(b); }                \
  inline C10_HOST_DEVICE float& operator/=(float& a, const T& b) { return a /= static_cast<float>(b); }                \
  inline C10_HOST_DEVICE double operator+(T a, double b) { return static_cast<double>(a) + b; }                        \
  inline C10_HOST_DEVICE double operator-(T a, double b) { return static_cast<double>(a) - b; }                        \
  inline C10_HOST_DEVICE double operator*(T a, double b) { return static_cast<double>(a) * b; }                        \
  inline C10_HOST_DEVICE double operator/(T a, double b) { return static_cast<double>(a) / b; }                        \
  inline C10_HOST_DEVICE double operator+(double a, T b) { return a + static_cast<double>(b); }                        \
  inline C10_HOST_DEVICE double operator-(double a, T b) { return a - static_cast<double>(b); }                        \
  inline C10_HOST_DEVICE double operator*(double a, T b) { return a * static_cast<double>(b); }                        \
  inline C10_HOST_DEVICE double operator/(double a, T b) { return a / static_cast<double>(b); }                        \
  inline C10_HOST_DEVICE T operator+(T a, int b) { return a + static_cast<T>(static_cast<float>(b)); }                 \
  inline C10_HOST_DEVICE T operator-(T a, int b) { return a - static_cast<T>(static_cast<float>(b)); }                 \
  inline C10_HOST_DEVICE T operator*(T a, int b) { return a * static_cast<T>(static_cast<float>(b)); }                 \
  inline C10_HOST_DEVICE T operator/(T a, int b) { return a / static_cast<T>(static_cast<float>(b)); }                 \
  inline C10_HOST_DEVICE T operator+(int a, T b) { return static_cast<T>(static_cast<float>(a)) + b; }                 \
  inline C10_HOST_DEVICE T operator-(int a, T b) { return static_cast<T>(static_cast<float>(a)) - b; }                 \
  inline C10_HOST_DEVICE T operator*(int a, T b) { return static_cast<T>(static_cast<float>(a)) * b; }                 \
  inline C10_HOST_DEVICE T operator/(int a, T b) { return static_cast<T>(static_cast<float>(a)) / b; }                 \
  inline C10_HOST_DEVICE T operator+(T a, int64_t b) { return a + static_cast<T>(static_cast<float>(b)); }             \
  inline C10_HOST_DEVICE T operator-(T a, int64_t b) { return a - static_cast<T>(static_cast<float>(b)); }             \
  inline C10_HOST_DEVICE T operator*(T a, int64_t b) { return a * static_cast<T>(static_cast<float>(b)); }             \
  inline C10_HOST_DEVICE T operator/(T a, int64_t b) { return a / static_cast<T>(static_cast<float>(b)); }             \
  inline C10_HOST_DEVICE T operator+(int64_t a, T b) { return static_cast<T>(static_cast<float>(a)) + b; }             \
  inline C10_HOST_DEVICE T operator-(int64_t a, T b) { return static_cast<T>(static_cast<float>(a)) - b; }             \
  inline C10_HOST_DEVICE T operator*(int64_t a, T b) { return static_cast<T>(static_cast<float>(a)) * b; }             \
  inline C10_HOST_DEVICE T operator/(int64_t a, T b) { return static_cast<T>(static_cast<float>(a)) / b; }             \
  inline C10_HOST_DEVICE bool operator==(const T& a, const T& b) { return static_cast<float>(a) == static_cast<float>(b); } \
  inline C10_HOST_DEVICE bool operator!=(const T& a, const T& b) { return static_cast<float>(a) != static_cast<float>(b); } \
  inline C10_HOST_DEVICE bool operator<(const T& a, const T& b) { return static_cast<float>(a) < static_cast<float>(b); }   \
  inline C10_HOST_DEVICE bool operator>(const T& a, const T& b) { return static_cast<float>(a) > static_cast<float>(b); }   \
  inline C10_HOST_DEVICE bool operator<=(const T& a, const T& b) { return static_cast<float>(a) <= static_cast<float>(b); } \
  inline C10_HOST_DEVICE bool operator>=(const T& a, const T& b) { return static_cast<float>(a) >= static_cast<float>(b); } \
  template <typename U, typename = typename std::enable_if<std::is_arithmetic<U>::value>::type>                          \
  C10_HOST_DEVICE bool operator==(const T& a, U b) { return static_cast<float>(a) == b; }                              \
  template <typename U, typename = typename std::enable_if<std::is_arithmetic<U>::value>::type>                          \
  C10_HOST_DEVICE bool operator!=(const T& a, U b) { return static_cast<float>(a) != b; }                              \
  template <typename U, typename = typename std::enable_if<std::is_arithmetic<U>::value>::type>                          \
  C10_HOST_DEVICE bool operator<(const T& a, U b) { return static_cast<float>(a) < b; }                                \
  template <typename U, typename = typename std::enable_if<std::is_arithmetic<U>::value>::type>                          \
  C10_HOST_DEVICE bool operator>(const T& a, U b) { return static_cast<float>(a) > b; }                                \
  template <typename U, typename = typename std::enable_if<std::is_arithmetic<U>::value>::type>                          \
  C10_HOST_DEVICE bool operator<=(const T& a, U b) { return static_cast<float>(a) <= b; }                              \
  template <typename U, typename = typename std::enable_if<std::is_arithmetic<U>::value>::type>                          \
  C10_HOST_DEVICE bool operator>=(const T& a, U b) { return static_cast<float>(a) >= b; }                              \
  template <typename U, typename = typename std::enable_if<std::is_arithmetic<U>::value>::type>                          \
  C10_HOST_DEVICE bool operator==(U a, const T& b) { return a == static_cast<float>(b); }                              \
  template <typename U, typename = typename std::enable_if<std::is_arithmetic<U>::value>::type>                          \
  C10_HOST_DEVICE bool operator!=(U a, const T& b) { return a != static_cast<float>(b); }                              \
  template <typename U, typename = typename std::enable_if<std::is_arithmetic<U>::value>::type>                          \
  C10_HOST_DEVICE bool operator<(U a, const T& b) { return a < static_cast<float>(b); }                                \
  template <typename U, typename = typename std::enable_if<std::is_arithmetic<U>::value>::type>                          \
  C10_HOST_DEVICE bool operator>(U a, const T& b) { return a > static_cast<float>(b); }                                \
  template <typename U, typename = typename std::enable_if<std::is_arithmetic<U>::value>::type>                          \
  C10_HOST_DEVICE bool operator<=(U a, const T& b) { return a <= static_cast<float>(b); }                              \
  template <typename U, typename = typename std::enable_if<std::is_arithmetic<U>::value>::type>                          \
  C10_HOST_DEVICE bool operator>=(U a, const T& b) { return a >= static_cast<float>(b); }
KTUNE_C10_REDUCED_FLOAT_OPS(Half)
KTUNE_C10_REDUCED_FLOAT_OPS(BFloat16)

// c10/util/Float8_e4m3fn.h and Float8_e5m2.h: one byte, converted as PyTorch converts (nearest
// even; e4m3fn's overflow a NaN, as it has no infinity, e5m2's an infinity), by CUDA's own
// conversions but for a NaN, which PyTorch makes 0x7F with the float's sign and CUDA's makes
// positive (cuda_fp8.hpp canonicalizes it first), and computed in float as Half is (vLLM's fp8
// quantization kernels cast a float to c10::Float8_e4m3fn and read std::numeric_limits of it).
#define KTUNE_C10_FLOAT8(T, KIND)                                                                                          \
  struct alignas(1) T {                                                                                                   \
    uint8_t x;                                                                                                            \
    struct from_bits_t {};                                                                                                \
    C10_HOST_DEVICE static constexpr from_bits_t from_bits() { return from_bits_t(); }                                    \
    T() = default;                                                                                                        \
    constexpr C10_HOST_DEVICE T(uint8_t bits, from_bits_t) : x(bits) {}                                                   \
    C10_HOST_DEVICE T(float value)                                                                                        \
        : x(value != value ? uint8_t(signbit(value) ? 0xFF : 0x7F) : __nv_cvt_float_to_fp8(value, __NV_NOSAT, KIND)) {}   \
    C10_HOST_DEVICE operator float() const { return __half2float(__half(__nv_cvt_fp8_to_halfraw(x, KIND))); }            \
    C10_HOST_DEVICE bool isnan() const { return KIND == __NV_E4M3 ? (x & 0x7F) == 0x7F : (x & 0x7F) > 0x7C; }            \
  };
KTUNE_C10_FLOAT8(Float8_e4m3fn, __NV_E4M3)
KTUNE_C10_FLOAT8(Float8_e5m2, __NV_E5M2)
#undef KTUNE_C10_FLOAT8
KTUNE_C10_REDUCED_FLOAT_OPS(Float8_e4m3fn)
KTUNE_C10_REDUCED_FLOAT_OPS(Float8_e5m2)
#undef KTUNE_C10_REDUCED_FLOAT_OPS
// AMD's formats (no negative zero, one NaN), which CUDA cannot convert: their layout alone, so
// that a type trait naming them compiles (vLLM's `std::is_same_v<T, c10::Float8_e4m3fnuz>`).
struct alignas(1) Float8_e4m3fnuz { uint8_t x; };
struct alignas(1) Float8_e5m2fnuz { uint8_t x; };
} // namespace c10

// Their limits, as c10 specializes them (bits of each format's values).
#define KTUNE_C10_FLOAT8_LIMITS(T, DIGITS, MIN_EXP, MAX_EXP, MIN, LOWEST, MAX, EPS, ROUND, INF, NAN_)                   \
  template <>                                                                                                          \
  class numeric_limits<c10::T> {                                                                                       \
   public:                                                                                                             \
    static constexpr bool is_specialized = true, is_signed = true, is_integer = false, is_exact = false;               \
    static constexpr bool has_infinity = INF != 0, has_quiet_NaN = true, has_signaling_NaN = false;                    \
    static constexpr int digits = DIGITS, radix = 2, min_exponent = MIN_EXP, max_exponent = MAX_EXP;                   \
    static constexpr C10_HOST_DEVICE c10::T min() { return c10::T(MIN, c10::T::from_bits()); }                         \
    static constexpr C10_HOST_DEVICE c10::T lowest() { return c10::T(LOWEST, c10::T::from_bits()); }                  \
    static constexpr C10_HOST_DEVICE c10::T max() { return c10::T(MAX, c10::T::from_bits()); }                         \
    static constexpr C10_HOST_DEVICE c10::T epsilon() { return c10::T(EPS, c10::T::from_bits()); }                    \
    static constexpr C10_HOST_DEVICE c10::T round_error() { return c10::T(ROUND, c10::T::from_bits()); }              \
    static constexpr C10_HOST_DEVICE c10::T infinity() { return c10::T(INF, c10::T::from_bits()); }                   \
    static constexpr C10_HOST_DEVICE c10::T quiet_NaN() { return c10::T(NAN_, c10::T::from_bits()); }                 \
    static constexpr C10_HOST_DEVICE c10::T denorm_min() { return c10::T(0x01, c10::T::from_bits()); }                \
  };
namespace std {
KTUNE_C10_FLOAT8_LIMITS(Float8_e4m3fn, 4, -5, 9, 0x08, 0xFE, 0x7E, 0x20, 0x30, 0, 0x7F)
KTUNE_C10_FLOAT8_LIMITS(Float8_e5m2, 3, -13, 16, 0x04, 0xFB, 0x7B, 0x34, 0x38, 0x7C, 0x7F)
} // namespace std
#undef KTUNE_C10_FLOAT8_LIMITS

namespace c10 {

template <typename T>
struct alignas(sizeof(T) * 2) complex {
  using value_type = T;
  T real_ = T(0);
  T imag_ = T(0);
  constexpr complex() = default;
  C10_HOST_DEVICE constexpr complex(const T& re, const T& im = T()) : real_(re), imag_(im) {}
  template <typename U>
  C10_HOST_DEVICE explicit constexpr complex(const complex<U>& other) : real_(T(other.real())), imag_(T(other.imag())) {}
  C10_HOST_DEVICE constexpr T real() const { return real_; }
  C10_HOST_DEVICE constexpr T imag() const { return imag_; }
  C10_HOST_DEVICE constexpr void real(T value) { real_ = value; }
  C10_HOST_DEVICE constexpr void imag(T value) { imag_ = value; }
  C10_HOST_DEVICE constexpr complex& operator=(T re) { real_ = re; imag_ = T(); return *this; }
  C10_HOST_DEVICE constexpr complex& operator+=(T re) { real_ += re; return *this; }
  C10_HOST_DEVICE constexpr complex& operator-=(T re) { real_ -= re; return *this; }
  C10_HOST_DEVICE constexpr complex& operator*=(T re) { real_ *= re; imag_ *= re; return *this; }
  C10_HOST_DEVICE constexpr complex& operator/=(T re) { real_ /= re; imag_ /= re; return *this; }
  template <typename U>
  C10_HOST_DEVICE constexpr complex& operator+=(const complex<U>& rhs) { real_ += rhs.real(); imag_ += rhs.imag(); return *this; }
  template <typename U>
  C10_HOST_DEVICE constexpr complex& operator-=(const complex<U>& rhs) { real_ -= rhs.real(); imag_ -= rhs.imag(); return *this; }
  template <typename U>
  C10_HOST_DEVICE constexpr complex& operator*=(const complex<U>& rhs) {
    const T a = real_, b = imag_, c = T(rhs.real()), d = T(rhs.imag());
    real_ = a * c - b * d;
    imag_ = a * d + b * c;
    return *this;
  }
  template <typename U>
  C10_HOST_DEVICE constexpr complex& operator/=(const complex<U>& rhs) {
    // Smith's scaling, as c10 divides: no overflow where |c| or |d| is large.
    const T a = real_, b = imag_, c = T(rhs.real()), d = T(rhs.imag());
    const T abs_c = c < T(0) ? -c : c, abs_d = d < T(0) ? -d : d;
    if (abs_c >= abs_d) {
      if (abs_c == T(0) && abs_d == T(0)) { real_ = a / abs_c; imag_ = b / abs_d; }
      else { const T rat = d / c, scl = T(1) / (c + d * rat); real_ = (a + b * rat) * scl; imag_ = (b - a * rat) * scl; }
    } else {
      const T rat = c / d, scl = T(1) / (d + c * rat);
      real_ = (a * rat + b) * scl;
      imag_ = (b * rat - a) * scl;
    }
    return *this;
  }
};

template <typename T> C10_HOST_DEVICE constexpr complex<T> operator+(const complex<T>& v) { return v; }
template <typename T> C10_HOST_DEVICE constexpr complex<T> operator-(const complex<T>& v) { return complex<T>(-v.real(), -v.imag()); }
template <typename T> C10_HOST_DEVICE constexpr complex<T> operator+(const complex<T>& a, const complex<T>& b) { complex<T> r = a; return r += b; }
template <typename T> C10_HOST_DEVICE constexpr complex<T> operator+(const complex<T>& a, const T& b) { complex<T> r = a; return r += b; }
template <typename T> C10_HOST_DEVICE constexpr complex<T> operator+(const T& a, const complex<T>& b) { return complex<T>(a + b.real(), b.imag()); }
template <typename T> C10_HOST_DEVICE constexpr complex<T> operator-(const complex<T>& a, const complex<T>& b) { complex<T> r = a; return r -= b; }
template <typename T> C10_HOST_DEVICE constexpr complex<T> operator-(const complex<T>& a, const T& b) { complex<T> r = a; return r -= b; }
template <typename T> C10_HOST_DEVICE constexpr complex<T> operator-(const T& a, const complex<T>& b) { return complex<T>(a - b.real(), -b.imag()); }
template <typename T> C10_HOST_DEVICE constexpr complex<T> operator*(const complex<T>& a, const complex<T>& b) { complex<T> r = a; return r *= b; }
template <typename T> C10_HOST_DEVICE constexpr complex<T> operator*(const complex<T>& a, const T& b) { complex<T> r = a; return r *= b; }
template <typename T> C10_HOST_DEVICE constexpr complex<T> operator*(const T& a, const complex<T>& b) { complex<T> r = b; return r *= a; }
template <typename T> C10_HOST_DEVICE constexpr complex<T> operator/(const complex<T>& a, const complex<T>& b) { complex<T> r = a; return r /= b; }
template <typename T> C10_HOST_DEVICE constexpr complex<T> operator/(const complex<T>& a, const T& b) { complex<T> r = a; return r /= b; }
template <typename T> C10_HOST_DEVICE constexpr complex<T> operator/(const T& a, const complex<T>& b) { complex<T> r(a); return r /= b; }
// c10's integer scalars: 2 * z.
template <typename T, typename I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>
C10_HOST_DEVICE constexpr complex<T> operator*(const complex<T>& a, const I& b) { return a * T(b); }
template <typename T, typename I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>
C10_HOST_DEVICE constexpr complex<T> operator*(const I& a, const complex<T>& b) { return T(a) * b; }
template <typename T, typename I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>
C10_HOST_DEVICE constexpr complex<T> operator/(const complex<T>& a, const I& b) { return a / T(b); }
template <typename T, typename I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>
C10_HOST_DEVICE constexpr complex<T> operator+(const complex<T>& a, const I& b) { return a + T(b); }
template <typename T, typename I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>
C10_HOST_DEVICE constexpr complex<T> operator+(const I& a, const complex<T>& b) { return T(a) + b; }
template <typename T, typename I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>
C10_HOST_DEVICE constexpr complex<T> operator-(const complex<T>& a, const I& b) { return a - T(b); }
template <typename T, typename I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>
C10_HOST_DEVICE constexpr complex<T> operator-(const I& a, const complex<T>& b) { return T(a) - b; }
template <typename T> C10_HOST_DEVICE constexpr bool operator==(const complex<T>& a, const complex<T>& b) { return a.real() == b.real() && a.imag() == b.imag(); }
template <typename T> C10_HOST_DEVICE constexpr bool operator==(const complex<T>& a, const T& b) { return a.real() == b && a.imag() == T(); }
template <typename T> C10_HOST_DEVICE constexpr bool operator==(const T& a, const complex<T>& b) { return a == b.real() && T() == b.imag(); }
template <typename T> C10_HOST_DEVICE constexpr bool operator!=(const complex<T>& a, const complex<T>& b) { return !(a == b); }
template <typename T> C10_HOST_DEVICE constexpr bool operator!=(const complex<T>& a, const T& b) { return !(a == b); }
template <typename T> C10_HOST_DEVICE constexpr bool operator!=(const T& a, const complex<T>& b) { return !(a == b); }

template <typename T> struct scalar_value_type { using type = T; };
template <typename T> struct scalar_value_type<complex<T>> { using type = T; };

// In PyTorch's order (2.9's c10/core/ScalarType.h, torch/headeronly/core/ScalarType.h since 2.9):
// xformers' sparse24 kernels name Float8_e4m3fn and UInt16.
enum class ScalarType : int8_t {
  Byte, Char, Short, Int, Long, Half, Float, Double, ComplexHalf, ComplexFloat, ComplexDouble, Bool,
  QInt8, QUInt8, QInt32, BFloat16, QUInt4x2, QUInt2x4, Bits1x8, Bits2x4, Bits4x2, Bits8, Bits16,
  Float8_e5m2, Float8_e4m3fn, Float8_e5m2fnuz, Float8_e4m3fnuz, UInt16, UInt32, UInt64,
  UInt1, UInt2, UInt3, UInt4, UInt5, UInt6, UInt7, Int1, Int2, Int3, Int4, Int5, Int6, Int7,
  Float8_e8m0fnu, Float4_e2m1fn_x2, Undefined, NumOptions
};
// c10/core/Layout.h, a tensor's layout (torchao's `using torch::headeronly::Layout;`).
enum class Layout : int8_t { Strided, Sparse, SparseCsr, Mkldnn, SparseCsc, SparseBsr, SparseBsc, Jagged, NumOptions };
// Its constants (at::kFloat; torch::kInt8 below) and the trait from a constant to its C++ type
// (vLLM's `is_quant_type<c10::impl::ScalarTypeToCPPTypeT<torch::kInt8>>`), for the types the
// stand-in defines.
#define KTUNE_C10_SCALAR_CONSTANT(name) constexpr ScalarType k##name = ScalarType::name;
KTUNE_C10_SCALAR_CONSTANT(Byte) KTUNE_C10_SCALAR_CONSTANT(Char) KTUNE_C10_SCALAR_CONSTANT(Short) KTUNE_C10_SCALAR_CONSTANT(Int)
KTUNE_C10_SCALAR_CONSTANT(Long) KTUNE_C10_SCALAR_CONSTANT(Half) KTUNE_C10_SCALAR_CONSTANT(Float) KTUNE_C10_SCALAR_CONSTANT(Double)
KTUNE_C10_SCALAR_CONSTANT(ComplexFloat) KTUNE_C10_SCALAR_CONSTANT(ComplexDouble) KTUNE_C10_SCALAR_CONSTANT(Bool)
KTUNE_C10_SCALAR_CONSTANT(BFloat16) KTUNE_C10_SCALAR_CONSTANT(Float8_e5m2) KTUNE_C10_SCALAR_CONSTANT(Float8_e4m3fn)
KTUNE_C10_SCALAR_CONSTANT(Float8_e5m2fnuz) KTUNE_C10_SCALAR_CONSTANT(Float8_e4m3fnuz) KTUNE_C10_SCALAR_CONSTANT(UInt16)
KTUNE_C10_SCALAR_CONSTANT(UInt32) KTUNE_C10_SCALAR_CONSTANT(UInt64)
#undef KTUNE_C10_SCALAR_CONSTANT
namespace impl {
template <ScalarType N> struct ScalarTypeToCPPType;
#define KTUNE_C10_SCALAR_TYPE(cpp, name) \
  template <> struct ScalarTypeToCPPType<ScalarType::name> { using type = cpp; };
KTUNE_C10_SCALAR_TYPE(uint8_t, Byte) KTUNE_C10_SCALAR_TYPE(int8_t, Char) KTUNE_C10_SCALAR_TYPE(int16_t, Short)
KTUNE_C10_SCALAR_TYPE(int, Int) KTUNE_C10_SCALAR_TYPE(int64_t, Long) KTUNE_C10_SCALAR_TYPE(c10::Half, Half)
KTUNE_C10_SCALAR_TYPE(float, Float) KTUNE_C10_SCALAR_TYPE(double, Double) KTUNE_C10_SCALAR_TYPE(c10::complex<float>, ComplexFloat)
KTUNE_C10_SCALAR_TYPE(c10::complex<double>, ComplexDouble) KTUNE_C10_SCALAR_TYPE(bool, Bool)
KTUNE_C10_SCALAR_TYPE(c10::BFloat16, BFloat16) KTUNE_C10_SCALAR_TYPE(c10::Float8_e5m2, Float8_e5m2)
KTUNE_C10_SCALAR_TYPE(c10::Float8_e4m3fn, Float8_e4m3fn) KTUNE_C10_SCALAR_TYPE(c10::Float8_e5m2fnuz, Float8_e5m2fnuz)
KTUNE_C10_SCALAR_TYPE(c10::Float8_e4m3fnuz, Float8_e4m3fnuz) KTUNE_C10_SCALAR_TYPE(uint16_t, UInt16)
KTUNE_C10_SCALAR_TYPE(uint32_t, UInt32) KTUNE_C10_SCALAR_TYPE(uint64_t, UInt64)
#undef KTUNE_C10_SCALAR_TYPE
template <ScalarType N> using ScalarTypeToCPPTypeT = typename ScalarTypeToCPPType<N>::type;
} // namespace impl

} // namespace c10

// c10/util/complex_math.h and complex.h put these in std:: for c10::complex.
namespace std {
template <typename T> __host__ __device__ constexpr T real(const c10::complex<T>& z) { return z.real(); }
template <typename T> __host__ __device__ constexpr T imag(const c10::complex<T>& z) { return z.imag(); }
template <typename T> __host__ __device__ constexpr c10::complex<T> conj(const c10::complex<T>& z) { return c10::complex<T>(z.real(), -z.imag()); }
template <typename T> __host__ __device__ T abs(const c10::complex<T>& z) { return ::hypot(z.real(), z.imag()); }
template <typename T> __host__ __device__ T arg(const c10::complex<T>& z) { return ::atan2(z.imag(), z.real()); }
template <typename T> __host__ __device__ constexpr T norm(const c10::complex<T>& z) { return z.real() * z.real() + z.imag() * z.imag(); }
template <typename T> __host__ __device__ c10::complex<T> exp(const c10::complex<T>& z) {
  const T m = ::exp(z.real());
  return c10::complex<T>(m * ::cos(z.imag()), m * ::sin(z.imag()));
}
template <typename T> __host__ __device__ c10::complex<T> polar(const T& r, const T& theta = T()) {
  return c10::complex<T>(r * ::cos(theta), r * ::sin(theta));
}
} // namespace std

namespace at {
using namespace c10;
// The host API's classes, declared only: an alias (`using Tensor = at::Tensor;`) or a host
// function's parameter names them; device code that uses one fails on its incomplete type. A
// Tensor is a host class's data member too (gsplat's lidar parameters): laid out as PyTorch's
// (one pointer, its intrusive_ptr to the TensorImpl), taking any initializer, no API; device code
// that uses one fails on the member's name.
class Tensor {
  void* impl_ = nullptr;
 public:
  __host__ __device__ Tensor() {}
  template <class... A> __host__ __device__ Tensor(A&&...) {}
};
class Generator;
class Scalar;
template <typename T> class ArrayRef;
using TensorList = ArrayRef<Tensor>;
using IntArrayRef = ArrayRef<int64_t>;
// Host API namespaces a file's `using namespace at::indexing;` names (kaolin's), empty.
namespace indexing {}
namespace native {}
// ATen/cuda/detail/PhiloxCudaStateRaw.cuh: a dropout kernel's RNG seed and offset, taken by value
// (or, in a captured graph, pointers to them), laid out as PyTorch's; unpack reads them.
struct PhiloxCudaState {
  PhiloxCudaState() = default;
  C10_HOST_DEVICE PhiloxCudaState(uint64_t seed, uint64_t offset) { seed_.val = seed; offset_.val = offset; }
  C10_HOST_DEVICE PhiloxCudaState(int64_t* seed, int64_t* offset_extragraph, uint32_t offset_intragraph) {
    seed_.ptr = seed;
    offset_.ptr = offset_extragraph;
    offset_intragraph_ = offset_intragraph;
    captured_ = true;
  }
  union Payload {
    uint64_t val;
    int64_t* ptr;
  };
  Payload seed_{};
  Payload offset_{};
  uint32_t offset_intragraph_ = 0;
  bool captured_ = false;
};
namespace cuda { namespace philox {
__host__ __device__ __forceinline__ ::cuda::std::tuple<uint64_t, uint64_t> unpack(at::PhiloxCudaState arg) {
  if (arg.captured_)
    return ::cuda::std::make_tuple(static_cast<uint64_t>(*arg.seed_.ptr), static_cast<uint64_t>(*arg.offset_.ptr) + arg.offset_intragraph_);
  return ::cuda::std::make_tuple(arg.seed_.val, arg.offset_.val);
}
}} // namespace cuda::philox
// ATen/cuda/NumericLimits.cuh: the bounds a reduction starts from, for PyTorch's types too
// (Half's and BFloat16's as their bits).
template <typename T> struct numeric_limits {};
template <typename T> struct ktune_std_limits {
  static __host__ __device__ constexpr T lowest() { return ::cuda::std::numeric_limits<T>::lowest(); }
  static __host__ __device__ constexpr T max() { return ::cuda::std::numeric_limits<T>::max(); }
  static __host__ __device__ constexpr T lower_bound() {
    return ::cuda::std::numeric_limits<T>::has_infinity ? -::cuda::std::numeric_limits<T>::infinity() : ::cuda::std::numeric_limits<T>::lowest();
  }
  static __host__ __device__ constexpr T upper_bound() {
    return ::cuda::std::numeric_limits<T>::has_infinity ? ::cuda::std::numeric_limits<T>::infinity() : ::cuda::std::numeric_limits<T>::max();
  }
};
template <> struct numeric_limits<bool> : ktune_std_limits<bool> {};
template <> struct numeric_limits<uint8_t> : ktune_std_limits<uint8_t> {};
template <> struct numeric_limits<int8_t> : ktune_std_limits<int8_t> {};
template <> struct numeric_limits<int16_t> : ktune_std_limits<int16_t> {};
template <> struct numeric_limits<int32_t> : ktune_std_limits<int32_t> {};
template <> struct numeric_limits<int64_t> : ktune_std_limits<int64_t> {};
template <> struct numeric_limits<float> : ktune_std_limits<float> {};
template <> struct numeric_limits<double> : ktune_std_limits<double> {};
template <> struct numeric_limits<c10::Half> {
  static __host__ __device__ c10::Half lowest() { return c10::Half(0xFBFF, c10::Half::from_bits()); }
  static __host__ __device__ c10::Half max() { return c10::Half(0x7BFF, c10::Half::from_bits()); }
  static __host__ __device__ c10::Half lower_bound() { return c10::Half(0xFC00, c10::Half::from_bits()); }
  static __host__ __device__ c10::Half upper_bound() { return c10::Half(0x7C00, c10::Half::from_bits()); }
};
template <> struct numeric_limits<c10::BFloat16> {
  static __host__ __device__ c10::BFloat16 lowest() { return c10::BFloat16(0xFF7F, c10::BFloat16::from_bits()); }
  static __host__ __device__ c10::BFloat16 max() { return c10::BFloat16(0x7F7F, c10::BFloat16::from_bits()); }
  static __host__ __device__ c10::BFloat16 lower_bound() { return c10::BFloat16(0xFF80, c10::BFloat16::from_bits()); }
  static __host__ __device__ c10::BFloat16 upper_bound() { return c10::BFloat16(0x7F80, c10::BFloat16::from_bits()); }
};
// ATen/AccumulateType.h: what a reduction over T sums in on the GPU.
template <typename T, bool is_cuda> struct AccumulateType { using type = T; };
template <bool c> struct AccumulateType<c10::Half, c> { using type = float; };
template <bool c> struct AccumulateType<c10::BFloat16, c> { using type = float; };
template <bool c> struct AccumulateType<float, c> { using type = float; };
template <bool c> struct AccumulateType<double, c> { using type = double; };
template <bool c> struct AccumulateType<int8_t, c> { using type = int64_t; };
template <bool c> struct AccumulateType<uint8_t, c> { using type = int64_t; };
template <bool c> struct AccumulateType<char, c> { using type = int64_t; };
template <bool c> struct AccumulateType<int16_t, c> { using type = int64_t; };
template <bool c> struct AccumulateType<int32_t, c> { using type = int64_t; };
template <bool c> struct AccumulateType<int64_t, c> { using type = int64_t; };
template <bool c> struct AccumulateType<bool, c> { using type = bool; };
template <bool c> struct AccumulateType<c10::complex<c10::Half>, c> { using type = c10::complex<float>; };
template <bool c> struct AccumulateType<c10::complex<float>, c> { using type = c10::complex<float>; };
template <bool c> struct AccumulateType<c10::complex<double>, c> { using type = c10::complex<double>; };
template <typename T, bool is_cuda> using acc_type = typename AccumulateType<T, is_cuda>::type;
// ATen/OpMathType.h: what one element's arithmetic runs in.
template <typename T> struct OpMathType { using type = T; };
template <> struct OpMathType<c10::Half> { using type = float; };
template <> struct OpMathType<c10::BFloat16> { using type = float; };
template <> struct OpMathType<c10::complex<c10::Half>> { using type = c10::complex<float>; };
template <typename T> using opmath_type = typename OpMathType<T>::type;
// ATen/core/TensorAccessor.h: the device side of tensor.packed_accessor64<T, N>() and of the
// accessors its operator[] gives, laid out as PyTorch lays them out (a packed accessor is its
// data pointer, then N sizes and N strides of index_t), so that a kernel taking one by value
// takes a struct argument of those fields.
template <typename T> struct DefaultPtrTraits { typedef T* PtrType; };
template <typename T> struct RestrictPtrTraits { typedef T* __restrict__ PtrType; };
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
class TensorAccessorBase {
 public:
  typedef typename PtrTraits<T>::PtrType PtrType;
  C10_HOST_DEVICE TensorAccessorBase(PtrType data, const index_t* sizes, const index_t* strides) : data_(data), sizes_(sizes), strides_(strides) {}
  C10_HOST_DEVICE index_t stride(index_t i) const { return strides_[i]; }
  C10_HOST_DEVICE index_t size(index_t i) const { return sizes_[i]; }
  C10_HOST_DEVICE PtrType data() { return data_; }
  C10_HOST_DEVICE const PtrType data() const { return data_; }
 protected:
  PtrType data_;
  const index_t* sizes_;
  const index_t* strides_;
};
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
class TensorAccessor;
// a[i] of an N-dimensional accessor: the (N - 1)-dimensional one from element i of dimension 0 on
template <typename T, size_t N, template <typename U> class PtrTraits, typename index_t>
C10_HOST_DEVICE TensorAccessor<T, N - 1, PtrTraits, index_t> sub_accessor(typename PtrTraits<T>::PtrType data, const index_t* sizes,
                                                                         const index_t* strides, index_t i) {
  return TensorAccessor<T, N - 1, PtrTraits, index_t>(data + strides[0] * i, sizes + 1, strides + 1);
}
template <typename T, size_t N, template <typename U> class PtrTraits, typename index_t>
class TensorAccessor : public TensorAccessorBase<T, N, PtrTraits, index_t> {
 public:
  typedef typename PtrTraits<T>::PtrType PtrType;
  C10_HOST_DEVICE TensorAccessor(PtrType data, const index_t* sizes, const index_t* strides)
      : TensorAccessorBase<T, N, PtrTraits, index_t>(data, sizes, strides) {}
  C10_HOST_DEVICE TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t i) {
    return sub_accessor<T, N, PtrTraits, index_t>(this->data_, this->sizes_, this->strides_, i);
  }
  C10_HOST_DEVICE const TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t i) const {
    return sub_accessor<T, N, PtrTraits, index_t>(this->data_, this->sizes_, this->strides_, i);
  }
};
template <typename T, template <typename U> class PtrTraits, typename index_t>
class TensorAccessor<T, 1, PtrTraits, index_t> : public TensorAccessorBase<T, 1, PtrTraits, index_t> {
 public:
  typedef typename PtrTraits<T>::PtrType PtrType;
  C10_HOST_DEVICE TensorAccessor(PtrType data, const index_t* sizes, const index_t* strides)
      : TensorAccessorBase<T, 1, PtrTraits, index_t>(data, sizes, strides) {}
  C10_HOST_DEVICE T& operator[](index_t i) { return this->data_[this->strides_[0] * i]; }
  C10_HOST_DEVICE const T& operator[](index_t i) const { return this->data_[this->strides_[0] * i]; }
};
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
class GenericPackedTensorAccessorBase {
 public:
  typedef typename PtrTraits<T>::PtrType PtrType;
  C10_HOST_DEVICE index_t stride(index_t i) const { return strides_[i]; }
  C10_HOST_DEVICE index_t size(index_t i) const { return sizes_[i]; }
  C10_HOST_DEVICE PtrType data() { return data_; }
  C10_HOST_DEVICE const PtrType data() const { return data_; }
 protected:
  PtrType data_;
  index_t sizes_[N];
  index_t strides_[N];
};
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
class GenericPackedTensorAccessor : public GenericPackedTensorAccessorBase<T, N, PtrTraits, index_t> {
 public:
  C10_DEVICE TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t i) {
    return sub_accessor<T, N, PtrTraits, index_t>(this->data_, this->sizes_, this->strides_, i);
  }
  C10_DEVICE const TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t i) const {
    return sub_accessor<T, N, PtrTraits, index_t>(this->data_, this->sizes_, this->strides_, i);
  }
};
template <typename T, template <typename U> class PtrTraits, typename index_t>
class GenericPackedTensorAccessor<T, 1, PtrTraits, index_t> : public GenericPackedTensorAccessorBase<T, 1, PtrTraits, index_t> {
 public:
  C10_DEVICE T& operator[](index_t i) { return this->data_[this->strides_[0] * i]; }
  C10_DEVICE const T& operator[](index_t i) const { return this->data_[this->strides_[0] * i]; }
};
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor32 = GenericPackedTensorAccessor<T, N, PtrTraits, int32_t>;
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor64 = GenericPackedTensorAccessor<T, N, PtrTraits, int64_t>;
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
using PackedTensorAccessor = GenericPackedTensorAccessor<T, N, PtrTraits, index_t>;
// ATen/cuda/detail/TensorInfo.cuh and OffsetCalculator's forerunner: a tensor's pointer, sizes and
// strides to 25 dimensions and their count, as ATen lays them out (a struct argument of those
// fields), and the element offset of a linear index.
namespace cuda { namespace detail {
#ifndef MAX_TENSORINFO_DIMS
#define MAX_TENSORINFO_DIMS 25
#endif
template <typename T, typename IndexType>
struct TensorInfo {
  __host__ __device__ bool isContiguous() const { return dims == 1 && strides[0] == 1; }
  T* data;
  IndexType sizes[MAX_TENSORINFO_DIMS];
  IndexType strides[MAX_TENSORINFO_DIMS];
  int dims;
};
template <typename T, typename IndexType>
__host__ __device__ IndexType ktune_offset_of(IndexType linearId, const TensorInfo<T, IndexType>& info, int dims) {
  IndexType offset = 0;
  for (int i = dims - 1; i > 0; --i) {
    offset += (linearId % info.sizes[i]) * info.strides[i];
    linearId /= info.sizes[i];
  }
  return offset + linearId * info.strides[0];
}
template <typename T, typename IndexType, int Dims> // Dims -1: the dimension count read at run time
struct IndexToOffset {
  static __host__ __device__ IndexType get(IndexType linearId, const TensorInfo<T, IndexType>& info) {
    return ktune_offset_of(linearId, info, Dims == -1 ? info.dims : Dims);
  }
};
}} // namespace cuda::detail
} // namespace at
// c10/util/intrusive_ptr.h and ATen/core/ivalue.h: a TorchScript custom class's base and the
// pointer that holds one, which a host class derives from or holds (gsplat's camera parameters:
// `struct UnscentedTransformParameters : public torch::CustomClassHolder`), laid out as
// PyTorch's (a virtual destructor, two 32-bit counts; a pointer): declared so that the class can
// be laid out; their host API is the host code that skip blanks.
namespace c10 {
// TorchScript's containers and value, declared only (a host trait's specialization names them:
// gsplat's is_tensor_list<c10::List<at::Tensor>>).
template <class T> class List;
template <class Key, class Value> class Dict;
class IValue;
// The host API's other types a host declaration names, declared only.
using DeviceIndex = int8_t;
// c10/core/DeviceType.h, as PyTorch numbers it: a host class sizes a table by it (mmcv's
// DeviceRegistry: `static const int MAX_DEVICE_TYPES =
// int8_t(at::DeviceType::COMPILE_TIME_MAX_DEVICE_TYPES);`).
enum class DeviceType : int8_t {
  CPU = 0, CUDA = 1, MKLDNN = 2, OPENGL = 3, OPENCL = 4, IDEEP = 5, HIP = 6, FPGA = 7, MAIA = 8, XLA = 9, Vulkan = 10,
  Metal = 11, XPU = 12, MPS = 13, Meta = 14, HPU = 15, VE = 16, Lazy = 17, IPU = 18, MTIA = 19, PrivateUse1 = 20,
  COMPILE_TIME_MAX_DEVICE_TYPES = 21,
};
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;
constexpr DeviceType kHIP = DeviceType::HIP;
constexpr DeviceType kMeta = DeviceType::Meta;
class Device;
class SymInt;
class TensorOptions;
class Dispatcher;
class intrusive_ptr_target {
 public:
  __host__ __device__ virtual ~intrusive_ptr_target() {}
 private:
  mutable unsigned int refcount_ = 0;
  mutable unsigned int weakcount_ = 0;
};
template <class TTarget, class NullType = void>
class intrusive_ptr {
  TTarget* target_ = nullptr;
};
} // namespace c10
// c10/util/Optional.h: c10::optional is std::optional (at::optional through at's using-directive).
namespace c10 {
using ::std::nullopt;
using ::std::nullopt_t;
using ::std::optional;
} // namespace c10
namespace at {
using SymIntArrayRef = ArrayRef<c10::SymInt>;
class GradMode;
class OptionalDeviceGuard;
} // namespace at
namespace torch {
using namespace at;
// torch/types.h's names of the scalar types (torch::kInt8 is c10's kChar).
constexpr auto kUInt8 = c10::kByte, kInt8 = c10::kChar, kInt16 = c10::kShort, kInt32 = c10::kInt, kInt64 = c10::kLong;
constexpr auto kFloat16 = c10::kHalf, kFloat32 = c10::kFloat, kFloat64 = c10::kDouble;
class CustomClassHolder : public c10::intrusive_ptr_target {};
// An autograd function's context and base (gsplat's `struct F : public
// torch::autograd::Function<F>`, whose static forward and backward are host code).
namespace autograd {
class AutogradContext;
template <class T> struct Function {};
} // namespace autograd
// PyTorch's stable ABI (2.9: torch/csrc/stable/, torch/headeronly/), which extensions built against
// it include instead of ATen (torchao's mxfp8 kernels, xformers' sparse24): the header-only
// namespace's ScalarType and accessors are c10's and ATen's (an accessor laid out as ATen's, a
// kernel's struct argument of those fields); a stable Tensor, which host code holds and calls,
// laid out as PyTorch's (a shared pointer to its handle), taking any initializer, no API.
namespace headeronly {
using c10::ScalarType;
using c10::Layout;
// The reduced floating-point types, defined here since 2.9 and c10's by alias (vLLM's
// `_typeConvert<torch::headeronly::Half>`).
using c10::Half;
using c10::BFloat16;
using c10::Float8_e4m3fn;
using c10::Float8_e5m2;
using c10::Float8_e4m3fnuz;
using c10::Float8_e5m2fnuz;
// A list a host function takes (IntHeaderOnlyArrayRef: a tensor's sizes), declared by its layout
// (a pointer and a length), taking any initializer.
template <class T> class HeaderOnlyArrayRef {
  const T* data_ = nullptr;
  size_t length_ = 0;
 public:
  __host__ __device__ HeaderOnlyArrayRef() {}
  template <class... A> __host__ __device__ HeaderOnlyArrayRef(A&&...) {}
};
using IntHeaderOnlyArrayRef = HeaderOnlyArrayRef<int64_t>;
using at::DefaultPtrTraits;
using at::RestrictPtrTraits;
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
using HeaderOnlyTensorAccessor = at::TensorAccessor<T, N, PtrTraits, index_t>;
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
using HeaderOnlyGenericPackedTensorAccessor = at::GenericPackedTensorAccessor<T, N, PtrTraits, index_t>;
} // namespace headeronly
namespace stable {
// The host API's namespaces a file aliases (torchao's `namespace tsa = torch::stable::accelerator;`)
// and its device guard, which host code holds; their functions are host calls, which skip blanks.
namespace detail {}
namespace accelerator {
class DeviceGuard {
  void* guard_ = nullptr;
 public:
  template <class... A> __host__ __device__ DeviceGuard(A&&...) {}
};
} // namespace accelerator
class Tensor {
  void* handle_ = nullptr;
  void* count_ = nullptr;
 public:
  __host__ __device__ Tensor() {}
  template <class... A> __host__ __device__ Tensor(A&&...) {}
};
} // namespace stable
} // namespace torch

// ATen/cuda/DeviceUtils.cuh: warp shuffles with a full mask, c10::complex a part at a time.
template <typename T>
__device__ __forceinline__ T WARP_SHFL_XOR(T value, int laneMask, int width = warpSize, unsigned int mask = 0xffffffff) {
  return __shfl_xor_sync(mask, value, laneMask, width);
}
template <typename T>
__device__ __forceinline__ T WARP_SHFL(T value, int srcLane, int width = warpSize, unsigned int mask = 0xffffffff) {
  return __shfl_sync(mask, value, srcLane, width);
}
template <typename T>
__device__ __forceinline__ T WARP_SHFL_UP(T value, unsigned int delta, int width = warpSize, unsigned int mask = 0xffffffff) {
  return __shfl_up_sync(mask, value, delta, width);
}
template <typename T>
__device__ __forceinline__ T WARP_SHFL_DOWN(T value, unsigned int delta, int width = warpSize, unsigned int mask = 0xffffffff) {
  return __shfl_down_sync(mask, value, delta, width);
}
template <typename T>
__device__ __forceinline__ c10::complex<T> WARP_SHFL_XOR(c10::complex<T> value, int laneMask, int width = warpSize, unsigned int mask = 0xffffffff) {
  return c10::complex<T>(__shfl_xor_sync(mask, value.real_, laneMask, width), __shfl_xor_sync(mask, value.imag_, laneMask, width));
}
template <typename T>
__device__ __forceinline__ c10::complex<T> WARP_SHFL_DOWN(c10::complex<T> value, unsigned int delta, int width = warpSize, unsigned int mask = 0xffffffff) {
  return c10::complex<T>(__shfl_down_sync(mask, value.real_, delta, width), __shfl_down_sync(mask, value.imag_, delta, width));
}
__device__ __forceinline__ unsigned int WARP_BALLOT(int predicate, unsigned int mask = 0xffffffff) { return __ballot_sync(mask, predicate); }
__device__ __forceinline__ unsigned int WARP_ACTIVEMASK() { return __activemask(); }

)CUDA";

// ATen/cuda/Atomic.cuh's atomics, in the stand-ins of the headers that bring it under PyTorch
// (kTorchAtomicsHeaders) and not in every one: a project that defines its own atomicAdd on
// at::Half beside ATen/ATen.h (pyg-lib's atomics.cuh) would meet a second definition.
const char* const kTorchAtomics = R"CUDA(#ifndef KTUNE_TORCH_ATOMICS
#define KTUNE_TORCH_ATOMICS
// ATen/cuda/Atomic.cuh: gpuAtomicAdd on the types extensions accumulate in.
__device__ __forceinline__ float gpuAtomicAdd(float* address, float val) { return atomicAdd(address, val); }
__device__ __forceinline__ double gpuAtomicAdd(double* address, double val) { return atomicAdd(address, val); }
__device__ __forceinline__ int gpuAtomicAdd(int* address, int val) { return atomicAdd(address, val); }
__device__ __forceinline__ c10::Half gpuAtomicAdd(c10::Half* address, c10::Half val) {
  return c10::Half(atomicAdd(reinterpret_cast<__half*>(address), static_cast<__half>(val)));
}
__device__ __forceinline__ c10::BFloat16 gpuAtomicAdd(c10::BFloat16* address, c10::BFloat16 val) {
  return c10::BFloat16(atomicAdd(reinterpret_cast<__nv_bfloat16*>(address), static_cast<__nv_bfloat16>(val)));
}
template <typename T>
__device__ __forceinline__ c10::complex<T> gpuAtomicAdd(c10::complex<T>* address, c10::complex<T> val) {
  return c10::complex<T>(gpuAtomicAdd(&address->real_, val.real_), gpuAtomicAdd(&address->imag_, val.imag_));
}
template <typename T> __device__ __forceinline__ void gpuAtomicAddNoReturn(T* address, T val) { gpuAtomicAdd(address, val); }
// and atomicAdd on PyTorch's 16-bit types, which kernels templated on scalar_t call as on float
// (mmcv's, dispatched with AT_DISPATCH_FLOATING_TYPES_AND_HALF).
__device__ __forceinline__ c10::Half atomicAdd(c10::Half* address, c10::Half val) { return gpuAtomicAdd(address, val); }
__device__ __forceinline__ c10::BFloat16 atomicAdd(c10::BFloat16* address, c10::BFloat16 val) { return gpuAtomicAdd(address, val); }
template <typename T> __device__ __forceinline__ T fastAtomicAdd(T* tensor, size_t index, size_t numel, T value, bool fast_atomics) {
  return gpuAtomicAdd(tensor + index, value);
}
#endif
)CUDA";

} // namespace

const char* const kTorchDeviceTypesHeader = "ktune_torch_device_types.h";

const std::string& nvrtc_torch_device_types() {
  static const std::string text = kTorchDeviceTypes;
  return text;
}

// THC/ too: THCAtomics.cuh, which PyTorch keeps as ATen/cuda/Atomic.cuh's old name (mmcv's).
bool torch_header(const std::string& name) {
  return name.rfind("torch/", 0) == 0 || name.rfind("ATen/", 0) == 0 || name.rfind("c10/", 0) == 0 || name.rfind("THC/", 0) == 0;
}

// The headers that include ATen/cuda/Atomic.cuh in PyTorch (THCAtomics.cuh is its old name; mmcv's).
bool brings_torch_atomics(const std::string& name) {
  static const std::set<std::string> kTorchAtomicsHeaders = {"ATen/cuda/Atomic.cuh", "THC/THCAtomics.cuh", "THC/THC.h",
                                                            "ATen/native/cuda/KernelUtils.cuh", "ATen/cuda/CUDAApplyUtils.cuh"};
  return kTorchAtomicsHeaders.count(name) > 0;
}

std::string nvrtc_torch_stand_in(const std::string& name) {
  const bool torch = torch_header(name);
  std::string text = "#pragma once\n// ktune's <" + name + "> for NVRTC under host_code skip: a host library's header, the standard "
                     "headers it brings" + (torch ? std::string(" and PyTorch's device types") : std::string()) +
                     "\n#include <stdint.h>\n#include <stddef.h>\n#include <cstdint>\n#include <cstddef>\n#include <cmath>\n"
                     // <cfloat>'s FLT_MAX, <climits>' INT_MAX: a kaolin kernel says FLT_MAX through ATen's headers
                     "#include <cfloat>\n#include <climits>\n"
                     "#include <limits>\n#include <type_traits>\n#include <utility>\n"
                     // the host library's, which PyTorch's headers bring too (Apex's nccl_p2p_cuda.cu holds a
                     // std::vector, ExLlamaV2's q_attn.cuh a std::unordered_map, with no include of their own)
                     "#include <vector>\n#include <string>\n#include <memory>\n#include <tuple>\n#include <array>\n"
                     "#include <map>\n#include <unordered_map>\n#include <functional>\n";
  // pybind11's namespace, which PyTorch's extension header brings: a file's `namespace py = pybind11;`
  // (MinkowskiEngine's types.hpp) names it.
  text += "namespace pybind11 {}\n";
  if (torch) text += std::string("#include \"") + kTorchDeviceTypesHeader + "\"\n";
  if (brings_torch_atomics(name)) text += kTorchAtomics;
  return text;
}

} // namespace ktune
