// Planted faults of the splits' merge that attention_decode and attention_wgmma share
// (kernel_templates/attention/attention_combine.cuh), each changing one thing of the header: the GPU
// test plants them in attention_decode at `shape` (causal, `chunk` keys a split), where each shows;
// the host emulation (kernels/combine_emulation_test.cpp) runs the header's code on the CPU with
// each planted, over its own shapes.
#pragma once

namespace ktune::testing {

inline constexpr const char* kCombineHeader = "attention/attention_combine.cuh";

struct CombineFault {
  const char* name;
  const char* from; // text of the header
  const char* to;   // what the planted header has instead
  const char* shape = "1x16x4x3x1000x128"; // 4 splits of 256 keys, the last one partial
  int chunk = 256;
};

inline constexpr CombineFault kCombineFaults[] = {
    {"the splits merged without their max", "e[j] = r + LPR * j < ns ? exp2_approx(ml[j].x - m_use) : 0.f;",
     "e[j] = r + LPR * j < ns ? 1.f : 0.f;"},
    {"the last split left out of the merge", "ml[j] = live && s < ns ? *partial_ml", "ml[j] = live && s + 1 < ns ? *partial_ml"},
    {"splits past the early loads left out of the merge", "i < LPR && LPR * j + i < ns; ++i",
     "i < LPR && LPR * j + i < 16; ++i",
     "1x16x4x3x2000x128", 64}, // 32 splits of 64 keys: more than a lane's 16 early loads
    {"splits past a lane's first (max, sum) pair left out of the sum", "for (int j = 0; j < SJ; ++j) {\n    const int first",
     "for (int j = 0; j < 1; ++j) {\n    const int first",
     "1x16x4x3x4000x128", 64}, // 63 splits of 64 keys: more than a row's 32 lanes at head dim 128
    {"the row sums reduced over the whole warp (two rows a warp at head dim 64)",
     "for (int x = LPR / 2; x > 0; x >>= 1) l += __shfl_xor_sync", "for (int x = 16; x > 0; x >>= 1) l += __shfl_xor_sync",
     "1x16x4x3x1000x64"},
    {"a row's lanes after the first write no columns", "if (c >= C4 || (PAD && 4 * c >= DR)) continue;",
     "if (c >= C4 || (PAD && 4 * c >= DR) || r > 0) continue;"},
};

} // namespace ktune::testing
