// The host program kernels/combine_emulation_test.cpp builds around attention_combine.cuh (the
// header as shipped, or with a fault planted): random splits' partials, the header's merge run
// block by block and warp by warp (attention_mma.cuh beside it emulates the warp), every output
// checked against an FP64 merge. Prints a line a case and exits 1 where any output is wrong.
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "attention_combine.cuh" // and through it the stand-in attention_mma.cuh beside it

namespace {

float half_to_float(unsigned short u, bool f16) {
  if (f16) {
    _Float16 h;
    std::memcpy(&h, &u, 2);
    return float(h);
  }
  const unsigned v = unsigned(u) << 16;
  float f;
  std::memcpy(&f, &v, 4);
  return f;
}

// One merge of ns splits over B x H x SQ rows (head dim DR in tiles of D columns, O laid out
// (B, SQ, H, DR)); the number of wrong outputs.
template <int F16, int D, int PAD, int MAXS, int WARPS = 4>
int run_case(long long B, long long H, long long SQ, int ns, long long DR, unsigned seed) {
  using namespace ktune_attn;
  const long long rows = B * H * SQ;
  std::vector<float> ws(size_t(ns) * rows * (D + 2));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  for (long long r = 0; r < rows; ++r)
    for (int s = 0; s < ns; ++s) {
      // A split that saw no key of the row: (-inf, 0) and zeros; row 0 saw none at all.
      const bool empty = r == 0 || gen() % 7 == 0;
      float2* ml = partial_ml(ws.data(), ns, s, rows, r, D);
      *ml = empty ? make_float2(-INFINITY, 0.f) : make_float2(4.f * u(gen), 1.f + 20.f * std::abs(u(gen)));
      float* o = partial_o(ws.data(), s, rows, r, D);
      for (int d = 0; d < D; ++d) o[d] = empty || d >= DR ? 0.f : u(gen) * ml->y;
    }
  const long long oh = DR, os = H * DR, ob = SQ * H * DR, guard = 64;
  std::vector<unsigned short> o(size_t(B * ob + guard), 0xffffu); // 0xffff: never written (a NaN)
  std::vector<float> lse(size_t(rows), -1.f);
  // Blocks of WARPS warps (attention.cpp's add_combine_step gives them 1 or 4).
  const long long per = WARPS * (32 / std::min(32, D / 4));
  blockDim.x = unsigned(32 * WARPS);
  for (long long bx = 0; bx < (rows + per - 1) / per; ++bx)
    for (int w = 0; w < WARPS; ++w)
      emu_run_warp(unsigned(bx), w, [&] {
        combine_splits<F16, D, PAD, MAXS>(o.data(), lse.data(), B, H, SQ, ns, DR, ob, os, oh, ws.data());
      });
  // The output rounded to 16 bits (to nearest: 2^-8 relative for bf16, 2^-11 for f16) over the FP32
  // sum, whose own error is far below 1e-5 of the terms' magnitudes.
  const double rel = F16 ? 1.0 / 2048 : 1.0 / 256;
  int bad = 0;
  double worst = 0;
  for (long long r = 0; r < rows; ++r) {
    double m = -INFINITY;
    for (int s = 0; s < ns; ++s) m = std::max<double>(m, partial_ml(ws.data(), ns, s, rows, r, D)->x);
    const double mu = std::isinf(m) ? 0 : m;
    double l = 0;
    for (int s = 0; s < ns; ++s) {
      const float2 ml = *partial_ml(ws.data(), ns, s, rows, r, D);
      l += ml.y * std::exp2(ml.x - mu);
    }
    const long long i = r % SQ, h = (r / SQ) % H, b = r / (SQ * H);
    for (long long d = 0; d < DR; ++d) {
      double want = 0, mag = 0;
      for (int s = 0; s < ns; ++s) {
        const double x = std::exp2(partial_ml(ws.data(), ns, s, rows, r, D)->x - mu) * partial_o(ws.data(), s, rows, r, D)[d];
        want += x, mag += std::abs(x);
      }
      want = l > 0 ? want / l : 0, mag = l > 0 ? mag / l : 0;
      const double got = half_to_float(o[size_t(b * ob + i * os + h * oh + d)], F16);
      const double err = std::abs(got - want), bound = rel * std::abs(want) + 1e-5 * mag;
      worst = std::max(worst, err / (bound > 0 ? bound : 1));
      if (!(err <= bound)) ++bad; // a NaN (never written) counts
    }
    const double want_lse = l > 0 ? (mu + std::log2(l)) * 0.6931471805599453 : INFINITY;
    const bool lse_ok = std::isinf(want_lse) ? std::isinf(lse[size_t(r)]) && lse[size_t(r)] > 0
                                             : std::abs(lse[size_t(r)] - want_lse) <= 1e-5 * (1 + std::abs(want_lse));
    if (!lse_ok) ++bad;
  }
  for (long long x = B * ob; x < B * ob + guard; ++x) bad += o[size_t(x)] != 0xffffu; // nothing past the output
  std::printf("%s D=%d PAD=%d MAXS=%d, %d warps a block, %lldx%lldx%lld rows, %d splits, head dim %lld: %d wrong (worst "
              "error %.2f of its bound)\n",
              F16 ? "f16 " : "bf16", D, PAD, MAXS, WARPS, B, H, SQ, ns, DR, bad, worst);
  return bad;
}

} // namespace

int main() {
  int bad = 0;
  // attention_decode's merges (at most 128 splits; blocks of one warp where the host gives them, as
  // to a decode step's few rows): batch 1's 16, more than the 16 early loads,
  // more than a row's 32 lanes, all 128; head dims 64 (two rows a warp) to 256, a padded one, f16.
  bad += run_case<0, 128, 0, 128, 1>(1, 32, 1, 16, 128, 1);
  bad += run_case<0, 128, 0, 128>(1, 16, 3, 63, 128, 2);
  bad += run_case<0, 128, 0, 128, 1>(2, 5, 3, 2, 128, 3);
  bad += run_case<0, 64, 0, 128, 1>(1, 16, 3, 4, 64, 4);
  bad += run_case<0, 64, 0, 128>(1, 7, 3, 40, 64, 5);
  bad += run_case<0, 192, 0, 128>(1, 3, 3, 20, 192, 6);
  bad += run_case<0, 256, 0, 128>(1, 5, 1, 128, 256, 7);
  bad += run_case<1, 128, 1, 128>(1, 6, 2, 5, 96, 8);
  // attention_wgmma's (at most SPLIT): rows past the last block's end, fewer splits than SPLIT.
  bad += run_case<0, 128, 0, 4>(2, 4, 13, 4, 128, 9);
  bad += run_case<0, 128, 1, 8>(2, 4, 13, 5, 96, 10);
  bad += run_case<1, 64, 0, 2>(1, 3, 9, 2, 64, 11);
  bad += run_case<0, 256, 0, 8>(1, 3, 5, 8, 256, 12);
  bad += run_case<0, 64, 1, 3>(1, 3, 5, 3, 40, 13);
  std::printf("%d wrong in all\n", bad);
  return bad != 0;
}
