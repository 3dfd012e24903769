// Stand-in for kernel_templates/attention/attention_mma.cuh when attention_combine.cuh is compiled
// for the host (kernels/combine_emulation_test.cpp): the CUDA spellings the merge uses, and a warp
// emulated by 32 lanes that take turns on one thread (ucontext): a shuffle writes the lane's value
// and yields; once every lane has, each reads its source's. exp2 / log2 are the C library's (the
// device's approximations are within 2 ulp of them); pack2 rounds to nearest even as cvt.rn does.
#pragma once

#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#define __device__
#define __forceinline__ inline
#define __restrict__

struct float2 {
  float x, y;
};
struct float4 {
  float x, y, z, w;
};
struct uint2 {
  unsigned x, y;
};
inline float2 make_float2(float a, float b) { return {a, b}; }
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }

struct EmuDim {
  unsigned x = 0, y = 0, z = 0;
};
inline EmuDim threadIdx, blockIdx, blockDim; // the running lane's, and its block's size

// The warp being emulated. A lane's k-th shuffle writes buf[k & 1]: the lanes that resume before
// another has read round k write round k + 1's buffer, not the one it reads.
struct EmuWarp {
  ucontext_t scheduler, lane[32];
  std::vector<char> stack[32];
  float buf[2][32];
  int shuffles[32], current;
  bool done[32];
  std::function<void()> body;
};
inline EmuWarp emu;

inline float emu_shfl(float v, int src) {
  const int me = emu.current, k = emu.shuffles[me]++;
  emu.buf[k & 1][me] = v;
  swapcontext(&emu.lane[me], &emu.scheduler);
  return emu.buf[k & 1][src & 31];
}
inline float __shfl_sync(unsigned, float v, int src) { return emu_shfl(v, src); }
inline float __shfl_xor_sync(unsigned, float v, int mask) { return emu_shfl(v, int(threadIdx.x & 31) ^ mask); }

inline void emu_lane_entry() {
  emu.body();
  emu.done[emu.current] = true; // then back to the scheduler (uc_link)
}

// body() run by the 32 lanes of warp `warp` of block `block`, in turns, until each returns.
inline void emu_run_warp(unsigned block, int warp, std::function<void()> body) {
  emu.body = std::move(body);
  for (int l = 0; l < 32; ++l) {
    emu.stack[l].resize(1 << 18);
    getcontext(&emu.lane[l]);
    emu.lane[l].uc_stack.ss_sp = emu.stack[l].data();
    emu.lane[l].uc_stack.ss_size = emu.stack[l].size();
    emu.lane[l].uc_link = &emu.scheduler;
    makecontext(&emu.lane[l], emu_lane_entry, 0);
    emu.shuffles[l] = 0, emu.done[l] = false;
  }
  for (bool left = true; left;) {
    left = false;
    for (int l = 0; l < 32; ++l) {
      if (emu.done[l]) continue;
      emu.current = l;
      threadIdx.x = unsigned(warp * 32 + l), blockIdx.x = block;
      swapcontext(&emu.scheduler, &emu.lane[l]);
      left = left || !emu.done[l];
    }
  }
}

namespace ktune_attn {

inline float inf_f() { return INFINITY; }
inline float exp2_approx(float x) { return std::exp2(x); }
inline float log2_approx(float x) { return std::log2(x); }

inline unsigned emu_bf16(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16; // finite inputs only
}
inline unsigned emu_f16(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
template <int F16>
inline unsigned pack2(float lo, float hi) {
  return F16 ? emu_f16(lo) | (emu_f16(hi) << 16) : emu_bf16(lo) | (emu_bf16(hi) << 16);
}

} // namespace ktune_attn
