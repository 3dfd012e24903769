// Host conversions between float and the 16-bit storage types (bf16, IEEE binary16), round to
// nearest even, subnormals, infinities and NaN included: what the tuner's runners use to make
// and read half-precision data, and what the tests check the device's conversions against.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace ktune::half {

inline uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0; // NaN
  u += 0x7fffu + ((u >> 16) & 1u);                     // round to nearest even
  return uint16_t(u >> 16);
}
inline float from_bf16(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// IEEE binary16; overflow rounds to infinity.
inline uint16_t to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const float a = std::fabs(f);
  if (std::isnan(f)) return uint16_t(sign | 0x7e00u);
  if (a >= 65520.0f) return uint16_t(sign | 0x7c00u);
  if (a < 6.103515625e-05f) { // subnormal: multiples of 2^-24
    const float q = std::nearbyint(a * 16777216.0f); // current rounding mode: to nearest even
    return uint16_t(sign | uint32_t(q));
  }
  int e;
  const float m = std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
  float q = std::nearbyint(m * 2048.0f); // 11 significant bits
  if (q == 2048.0f) q = 1024.0f, ++e;
  return uint16_t(sign | uint32_t(e + 14) << 10 | (uint32_t(q) - 1024u));
}
inline float from_f16(uint16_t h) {
  const uint32_t sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0) v = std::ldexp(float(man), -24);
  else if (exp == 31) v = man ? NAN : INFINITY;
  else v = std::ldexp(float(man | 0x400), int(exp) - 25);
  return sign ? -v : v;
}

} // namespace ktune::half
