// The one argument block every row kernel (softmax, LayerNorm, RMSNorm) takes, by value. Like
// gemm_args.h, this header is compiled twice: by the host compiler (runtime/ packs it) and by
// NVRTC (embedded with the templates), so it stays plain C++ with no includes and no CUDA-only
// keywords; both sides then agree on its layout. Elements are f32, bf16 or f16 (the templates'
// DT), the same type for x, y, weight and bias; all arithmetic is FP32.
#pragma once

struct KtuneRowsArgs {
  const void* x;      // rows x cols input, row stride ldx elements
  void* y;            // rows x cols output, row stride ldy elements (may alias x only if ldx == ldy)
  const void* weight; // cols elements (LayerNorm, RMSNorm); null for softmax
  const void* bias;   // cols elements (LayerNorm); null otherwise (RMSNorm; LayerNorm without bias)
  long long rows, cols, ldx, ldy;
  float scale; // softmax: y = softmax(scale * x) along each row
  float eps;   // LayerNorm / RMSNorm: added to the variance / mean square
};

// Each op's code (KTUNE_ROWS_SOFTMAX 0, ...: the template parameter OP of the row kernels and of
// the device reference) is defined in its own folder, kernel_templates/<op>/<op>_check.h.
