// attention_wgmma against an FP64 host reference on tiny problems, independent of the runner's
// device check: one or several key tiles, heads, batches and query blocks, each of which once had
// its own bug (TMA coordinates in the wrong order passed the first tile of the first head only).
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>
#include <cstring>
#include "core/embedded.h"
#include "core/half.h"
#include "gpu_env.h"
#include "ops/attention_row_fp64.h"
#include "ktune/compiler.h"
#include "ktune/family.h"
#include "runtime/buffers_launch.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/module.h"
using namespace ktune;
namespace {
void run(Compiler& compiler, const DeviceInfo& d, const char* shape, const char* layout, int cwg, int bn, int stages,
         int overlap = 0, int pingpong = 0, int persist = 0, int occ = 1, int ostore = 0) {
  const Problem p = Problem::parse("attention", shape, layout, DType::bf16);
  const Family f = find_family("attention_wgmma");
  Config c; c.set("CWG", cwg); c.set("BN", bn); c.set("STAGES", stages); c.set("OVERLAP", overlap);
  c.set("PINGPONG", pingpong);
  c.set("PERSIST", persist);
  c.set("OCC", occ);
  c.set("OSTORE", ostore);
  c.set("SPLIT", 1);
  const auto k = compiler.compile(compile_request(f, c, p, d.arch));
  Module m(k->cubin, k->lowered_names, "debug");
  const int64_t B = p.dims[0], H = p.dims[1], HK = p.dims[2], SQ = p.dims[3], SK = p.dims[4], D = p.dims[5];
  const int64_t nq = B * SQ * H * D, nk = B * SK * HK * D;
  std::vector<uint16_t> hq(nq), hk(nk), hv(nk);
  auto val = [](int64_t i, int salt) { return float(int64_t((i * 2654435761u + salt * 97) % 9) - 4) * 0.25f; };
  for (int64_t i = 0; i < nq; ++i) hq[i] = half::to_bf16(val(i, 1));
  for (int64_t i = 0; i < nk; ++i) hk[i] = half::to_bf16(val(i, 2)), hv[i] = half::to_bf16(val(i, 3));
  DeviceBuffer q(nq * 2, "q"), kk(nk * 2, "k"), v(nk * 2, "v"), o(nq * 2, "o"), l(4 * B * H * SQ, "lse");
  check_cu(driver().cuMemcpyHtoD(q.ptr(), hq.data(), nq * 2), "q", "");
  check_cu(driver().cuMemcpyHtoD(kk.ptr(), hk.data(), nk * 2), "k", "");
  check_cu(driver().cuMemcpyHtoD(v.ptr(), hv.data(), nk * 2), "v", "");
  // O and lse poisoned (0xffff is a bf16 NaN, 0xffffffff an FP32 NaN): a row left unwritten fails.
  check_cu(driver().cuMemsetD8Async(o.ptr(), 0xff, nq * 2, nullptr), "poison o", "");
  check_cu(driver().cuMemsetD8Async(l.ptr(), 0xff, 4 * B * H * SQ, nullptr), "poison lse", "");
  BufferArgs a(p, {q.as<void>(), kk.as<void>(), v.as<void>(), o.as<void>(), l.as<void>()});
  launch_buffers(m, f.launch_plan(c, p), a, nullptr);
  check_cu(driver().cuCtxSynchronize(), "sync", "");
  std::vector<float> hl(B * H * SQ);
  std::vector<uint16_t> ho(nq);
  check_cu(driver().cuMemcpyDtoH(hl.data(), l.ptr(), 4 * hl.size()), "l", "");
  check_cu(driver().cuMemcpyDtoH(ho.data(), o.ptr(), 2 * nq), "o", "");
  double worst_l = 0, worst_o = 0;
  int64_t bad_l = -1;
  const bool causal = std::string(layout) == "causal";
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < SQ; ++i) {
        const int64_t hh = h / (H / HK);
        const int64_t n = causal ? std::min<int64_t>(SK, i + SK - SQ + 1) : SK;
        const auto ref = ktune::testing::attention_row_fp64(
            n, D, 1 / std::sqrt(double(D)), [&](int64_t x) { return half::from_bf16(hq[((b * SQ + i) * H + h) * D + x]); },
            [&](int64_t j, int64_t x) { return half::from_bf16(hk[((b * SK + j) * HK + hh) * D + x]); },
            [&](int64_t j, int64_t x) { return half::from_bf16(hv[((b * SK + j) * HK + hh) * D + x]); });
        // A row that sees no key (causal, q_len > kv_len): O = 0 and the log-sum-exp +inf, the op's convention.
        const double gl = hl[(b * H + h) * SQ + i];
        // A NaN error counts as infinite: max() and > would pass it over.
        auto err = [](double e) { return std::isnan(e) ? INFINITY : e; };
        const double err_l = n <= 0 ? (gl == INFINITY ? 0.0 : INFINITY) : err(std::abs(gl - ref.lse));
        if (err_l > worst_l) worst_l = err_l, bad_l = (b * H + h) * SQ + i;
        for (int64_t x = 0; x < D; ++x)
          worst_o = std::max(worst_o, err(std::abs(half::from_bf16(ho[((b * SQ + i) * H + h) * D + x]) - ref.o[x])));
      }
  // Inputs are multiples of 1/4 in [-1, 1]: the bf16 output's rounding (2^-9 of |o| <= 1) and FP32
  // softmax errors stay far below these.
  EXPECT_LT(worst_l, 1e-4) << shape << " " << layout << " CWG" << cwg << " BN" << bn << " ST" << stages << " OV" << overlap
                           << " PP" << pingpong << " PS" << persist << " OCC" << occ << " OS" << ostore << " at " << bad_l;
  EXPECT_LT(worst_o, 1e-2) << shape << " " << layout << " CWG" << cwg << " BN" << bn << " ST" << stages << " OV" << overlap
                           << " PP" << pingpong << " PS" << persist << " OCC" << occ << " OS" << ostore;
}
} // namespace
TEST(AttentionGpu, WgmmaMatchesAHostReferenceOnTinyShapes) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  if (d->arch != "sm_90") GTEST_SKIP() << "attention_wgmma is sm_90a only";
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  run(compiler, *d, "1x1x1x64x64x64", "full", 1, 64, 2);
  run(compiler, *d, "1x1x1x64x128x64", "full", 1, 64, 2);
  run(compiler, *d, "1x1x1x64x320x64", "full", 1, 64, 2);
  run(compiler, *d, "1x2x1x64x64x64", "full", 1, 64, 2);
  run(compiler, *d, "2x1x1x64x64x64", "full", 1, 64, 2);
  run(compiler, *d, "1x1x1x128x64x64", "full", 1, 64, 2);
  run(compiler, *d, "1x1x1x128x64x64", "full", 2, 64, 2);
  run(compiler, *d, "1x1x1x64x64x128", "full", 1, 64, 2);
  run(compiler, *d, "1x1x1x64x100x64", "full", 1, 64, 2);
  run(compiler, *d, "1x1x1x64x64x64", "causal", 1, 64, 2);
  run(compiler, *d, "2x4x2x200x333x128", "causal", 2, 112, 3);
  for (const char* shape : {"1x1x1x64x64x64", "1x1x1x64x128x64", "1x1x1x64x320x64", "1x2x1x130x200x128"})
    for (const char* layout : {"full", "causal"}) run(compiler, *d, shape, layout, 2, 64, 2, 1);
  // Consumers taking turns (two and three, with and without OVERLAP), over blocks with no key
  // (q_len > kv_len, causal) and one to several key tiles.
  for (const char* shape : {"1x1x1x64x64x64", "1x2x1x130x200x128", "1x2x2x300x100x64"})
    for (const char* layout : {"full", "causal"})
      for (int cwg : {2, 3})
        for (int overlap : {0, 1}) run(compiler, *d, shape, layout, cwg, 64, 2, overlap, 1);
  // Head dims padded with zeros to whole 64-column blocks (96 and 80 as 128, 160 as 192, 40 as 64).
  for (const char* shape : {"1x2x1x130x200x96", "2x4x2x300x100x160", "2x3x1x200x150x40", "1x2x2x100x260x80"})
    for (const char* layout : {"full", "causal"}) {
      run(compiler, *d, shape, layout, 2, 64, 2, 1, 1, 0);
      run(compiler, *d, shape, layout, 2, 80, 2, 0, 0, 1);
      run(compiler, *d, shape, layout, 2, 80, 2, 0, 0, 1, 1, 1); // O by TMA: the map clips the zero columns
    }
  // Persistent blocks walking several tiles each (more tiles than the SMs hold, every other wave
  // backwards): the K / V ring's stages and phases and the consumers' turns carried from tile to
  // tile, odd key-tile counts with three stages, tiles with no key (causal, q_len > kv_len).
  for (const char* shape : {"4x8x2x900x200x64", "3x6x3x300x100x64", "2x4x1x520x333x128"})
    for (const char* layout : {"full", "causal"}) {
      run(compiler, *d, shape, layout, 1, 64, 3, 0, 0, 1);
      run(compiler, *d, shape, layout, 2, 64, 2, 1, 1, 1);
      run(compiler, *d, shape, layout, 2, 80, 3, 0, 1, 1);
      run(compiler, *d, shape, layout, 3, 64, 2, 1, 1, 1);
      // Two blocks an SM (registers capped at 128 a thread, 232 for the consumer), persistent or
      // one a tile; at head dim 64 larger tiles and three stages fit two blocks' shared memory too.
      run(compiler, *d, shape, layout, 1, 64, 2, 1, 0, 1, 2);
      run(compiler, *d, shape, layout, 1, 64, 2, 0, 0, 0, 2);
      if (Problem::parse("attention", shape, layout, DType::bf16).dims[5] == 64)
        run(compiler, *d, shape, layout, 1, 128, 3, 1, 0, 1, 2);
      // O staged in its own buffer and stored by TMA (the map clips rows past the sequence): one to
      // three consumers, two blocks an SM, a buffer reused from tile to tile.
      run(compiler, *d, shape, layout, 1, 64, 3, 0, 0, 1, 1, 1);
      run(compiler, *d, shape, layout, 2, 64, 2, 1, 1, 1, 1, 1);
      run(compiler, *d, shape, layout, 3, 64, 2, 1, 1, 1, 1, 1);
      run(compiler, *d, shape, layout, 3, 64, 2, 0, 1, 1, 1, 1); // head dim 64's default: turns, no overlap
      run(compiler, *d, shape, layout, 1, 64, 2, 1, 0, 1, 2, 1);
    }
}
