// gemm_wgmma (BF16 / FP16 on Hopper's wgmma, sm_90a) against an FP64 reference computed on the CPU
// from the same rounded inputs: sampled configs and the default on aligned shapes 8..4096 and on
// unaligned ones (packed operands, PACK = 1), split K (SPLITK 2 and 4 through the workspace, CL 2, 4 and 8 in a cluster), several tiles a block (PT 2 and 4), TMA multicast in 2-CTA clusters (MC 1 and 2), C stored through TMA (EPI 1, 2) or by the producer warpgroup's warps (EPI 3), every layout, beta 0 on a NaN C and beta != 0, K = 0, both dtypes; cuBLAS on the same inputs is held to
// the same rule (GemmOp::tolerance through half_reference.h); both load paths (cp.async, TMA
// producer). Skips without an sm_90 GPU.
// The inputs, reference and error are tc16_gpu_test.cpp's (half_reference.h).
#include <gtest/gtest.h>

#include <cstdlib>

#include <cmath>
#include <future>
#include <iostream>
#include <random>
#include <set>

#include "gemm/gemm_families.h"
#include "gpu_env.h"
#include "kernels/half_reference.h"
#include "ktune/compiler.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/gemm_launch.h"
#include "runtime/module.h"
#include "runtime/cublas.h"

using namespace ktune;
using namespace ktune::testing::half_ref;

namespace {

struct Case {
  size_t inst;
  Config c;
  std::future<std::shared_ptr<const CompiledKernel>> kernel;
};

// The GPU gemm_wgmma runs on (sm_90a code), or nullptr with *why saying why the tests skip.
const DeviceInfo* sm90_device(std::string* why) {
  const DeviceInfo* dev = ktune::testing::first_gpu(why);
  if (!dev) {
    *why = "no GPU: " + *why;
    return nullptr;
  }
  if (dev->arch_number() != 90) {
    *why = "gemm_wgmma needs an sm_90 device (sm_90a code), device is " + dev->arch;
    return nullptr;
  }
  return dev;
}

} // namespace

TEST(WgmmaGpu, SampledConfigsMatchFp64ReferenceInBf16AndFp16) {
  std::string why;
  const DeviceInfo* dev = sm90_device(&why);
  if (!dev) GTEST_SKIP() << why;
  CudaContext ctx(dev->ordinal);
  Compiler compiler;
  Cublas cublas;
  const Family f = find_family("gemm_wgmma");
  struct Shape {
    int64_t m, n, k, pad;
    float alpha, beta;
    const char* layout;
    int sampled;
  };
  const Shape shapes[] = {
      {64, 64, 64, 0, 1, 0, "NN", 2},
      {256, 256, 256, 0, 1, 0, "NN", 3},
      {128, 256, 512, 0, 0.75f, 0.5f, "NN", 3},
      {1000, 1032, 520, 8, 1, 0, "NN", 3},     // tiles do not divide; padded rows
      {8, 1024, 64, 0, 1, 1, "NN", 2},         // fewer rows than one m64
      {300, 200, 136, 0, 1, -1, "NN", 2},      // K not a multiple of 64
      {128, 256, 0, 0, 1, 0.5f, "TN", 1},      // K = 0: C = beta * C (TN: leading dims M and N stay aligned)
      {2048, 2048, 2048, 0, 1, 0, "NN", 2},
      {4096, 4096, 256, 0, 1, 0.5f, "NN", 2},
      {512, 384, 1024, 0, 1, 0, "NT", 2},
      {256, 512, 512, 0, 1, 1, "TN", 2},
      {1000, 1032, 520, 8, 0.5f, 0.5f, "TT", 2},
      {2048, 1024, 1024, 0, 1, 0, "TT", 1},
      // Unaligned (PACK = 1: packed copies read by TMA): odd extents and leading dimensions.
      {1001, 999, 777, 3, 1, 0, "NN", 2},
      {300, 200, 135, 0, 1, 0.5f, "NT", 2},
      {517, 263, 1001, 1, 0.5f, 0, "TT", 2},
      {2999, 257, 2999, 0, 1, 0, "TN", 1},
      // Two waves of 128 x 256 tiles on 132 SMs and a tail of 8 (SK 2 cuts each of those in 8).
      {1792, 2560, 512, 0, 1, 0, "NN", 1},
      // Four 128 x 256 tiles and long K: SK 2 and 3 cut each in 33 uneven parts (64 K tiles); beta != 0.
      {256, 512, 4096, 0, 1, 0.5f, "NN", 1},
  };
  std::vector<Instance> insts;
  std::vector<Case> cases;
  uint64_t seed = 300;
  // Under compute-sanitizer (tools/gpu-check.sh sanitize) the kernels run 10-100x slower: the
  // small shapes only, which still cover every layout, PACK, SPLITK, partial tiles and K = 0.
  const bool sample = std::getenv("KTUNE_SANITIZER_SAMPLE") != nullptr;
  for (DType t : {DType::bf16, DType::f16})
    for (const Shape& s : shapes) {
      if (sample && s.m * s.n * s.k > (int64_t(1) << 30)) continue;
      GemmProblem p = GemmProblem::make(s.m, s.n, s.k, s.layout, t);
      p.lda = std::max<int64_t>(1, p.min_lda()) + s.pad, p.ldb = std::max<int64_t>(1, p.min_ldb()) + s.pad;
      p.ldc = p.min_ldc() + s.pad;
      p.alpha = s.alpha, p.beta = s.beta;
      p.align = GemmProblem::alignment_of(p.lda, p.ldb, p.ldc, 2);
      insts.emplace_back(p, 0, ++seed);
      const size_t i = insts.size() - 1;
      std::vector<Config> configs = f.sample(p, *dev, size_t(s.sampled), ++seed);
      // A hand-picked config joins the cases where it is valid for p and not there already.
      auto offer = [&](const Config& c) {
        if (f.valid(c, p, *dev) && std::find(configs.begin(), configs.end(), c) == configs.end()) configs.push_back(c);
      };
      // The default, and its tiling with the other load path where that is valid (aligned problems).
      Config d = f.default_config(p, *dev);
      ASSERT_TRUE(f.valid(d, p, *dev)) << p.key() << " " << s.layout;
      for (int tma : {0, 1}) {
        d.set("TMA", tma);
        offer(d);
      }
      // The tiling the H100 tunes found fastest (128 x 256, 3 stages, TMA), on every shape and layout.
      Config best = Config::from_json(R"({"BM":128,"BN":256,"WG":2,"ST":3,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":1,"MC":0,"EPI":0,"PP":0,"SK":0,"SWAP":0,"AR":0})");
      if (!f.valid(best, p, *dev)) best.set("PACK", 1);
      offer(best);
      // The same split in K (partial sums in the workspace, the FP32 reduction).
      for (int sk : {2, 4}) {
        Config split = best;
        split.set("SPLITK", sk);
        offer(split);
      }
      // The split in a thread block cluster (partial sums added in distributed shared memory), on
      // the fastest tiling and on one warpgroup of 64 x 256 (the decode form: rows past M are zeros).
      for (int cl : {2, 4, 8}) {
        Config split = best;
        split.set("CL", cl);
        if (cl == 8) split = Config::from_json(R"({"BM":64,"BN":256,"WG":1,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":8,"PT":1,"MC":0,"EPI":0,"PP":0,"SK":0,"SWAP":0,"AR":0})");
        if (!f.valid(split, p, *dev)) split.set("PACK", 1);
        offer(split);
      }
      // MC with SPLITK (the pair's CTAs run one K slice of their two tiles): cuBLAS's split-K form,
      // 128 x 64 tiles of two warpgroups in 8 stages sharing A, 4 slices; and the fastest tiling
      // sharing B in 2 slices (packed where it must be).
      for (int v = 0; v < 2; ++v) {
        Config ms = Config::from_json(R"({"BM":128,"BN":64,"WG":2,"ST":8,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":4,"CL":1,"PT":1,"MC":2,"EPI":0,"PP":0,"SK":0,"SWAP":0,"AR":0})");
        if (v == 1) ms = best, ms.set("SPLITK", 2), ms.set("MC", 1);
        if (!f.valid(ms, p, *dev)) ms.set("PACK", 1);
        offer(ms);
      }
      // Several tiles a block through one stage ring (PT; the persistent grid): 2 and 4 tiles a
      // block on the fastest tiling (uneven last blocks where the tile count does not divide), and
      // 4 on one warpgroup of 64 x 128 tiles.
      for (int v = 0; v < 3; ++v) {
        Config many = best;
        if (v == 2) many = Config::from_json(R"({"BM":64,"BN":128,"WG":1,"ST":5,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":1,"MC":0,"EPI":0,"PP":0,"SK":0,"SWAP":0,"AR":0})");
        many.set("PT", v == 0 ? 2 : 4);
        if (!f.valid(many, p, *dev)) many.set("PACK", 1);
        offer(many);
      }
      // TMA multicast in a 2-CTA cluster (MC): B shared by two M tiles, A by two N tiles, on the
      // fastest tiling, with PT 2 (pairs of pairs through one ring), and on 256 x 128 tiles
      // (cuBLAS's tiling on the H100); pairs whose second tile lies past M or N on the odd shapes.
      for (int v = 0; v < 4; ++v) {
        Config mc = best;
        if (v == 3) mc = Config::from_json(R"({"BM":256,"BN":128,"WG":2,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":1,"MC":0,"EPI":0,"PP":0,"SK":0,"SWAP":0,"AR":0})");
        mc.set("MC", v == 1 ? 2 : v == 3 ? 2 : 1);
        if (v == 2) mc.set("PT", 2);
        if (!f.valid(mc, p, *dev)) mc.set("PACK", 1);
        offer(mc);
      }
      // C through shared memory and TMA stores (EPI), on the fastest tiling in 3 stages, with PT 2
      // (a warpgroup's next tile while its store drains), with MC 1, and on 256 x 128 tiles; EPI 2
      // (the columns in two halves) in 4 stages with PT 2 and on 256 x 128 tiles; beta != 0 takes
      // the plain epilogue, unaligned problems have no EPI configs.
      for (int v = 0; v < 6; ++v) {
        Config e = best;
        if (v == 3 || v == 5) e = Config::from_json(R"({"BM":256,"BN":128,"WG":2,"ST":3,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":1,"MC":0,"EPI":0,"PP":0,"SK":0,"SWAP":0,"AR":0})");
        e.set("EPI", v < 4 ? 1 : 2);
        if (v == 1 || v == 4) e.set("PT", 2);
        if (v == 4) e.set("ST", 4);
        if (v == 2) e.set("MC", 1);
        offer(e);
      }
      // Ping-pong consumers (PP: the two consumer warpgroups take whole tiles in turn), on 64 x 256
      // tiles with EPI and PT 2, on 128 x 128 tiles with the plain epilogue and a persistent grid
      // (PT 0: as many blocks as are resident, each striding), and 64 x 256 persistent with EPI;
      // odd tile counts leave one consumer a tile fewer. Plus the shared-tile form on a persistent grid.
      for (int v = 0; v < 4; ++v) {
        Config q = Config::from_json(R"({"BM":64,"BN":256,"WG":2,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":2,"MC":0,"EPI":1,"PP":1,"SK":0,"SWAP":0,"AR":0})");
        if (v == 1) q = Config::from_json(R"({"BM":128,"BN":128,"WG":2,"ST":5,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":0,"MC":0,"EPI":0,"PP":1,"SK":0,"SWAP":0,"AR":0})");
        if (v == 2) q.set("PT", 0);
        if (v == 3) q = best, q.set("PT", 0), q.set("EPI", 1);
        if (!f.valid(q, p, *dev)) q.set("PACK", 1), q.set("EPI", 0);
        offer(q);
      }
      // Stream-K (SK: the persistent grid's last waves cut into runs of K tiles, the cut tiles
      // added by the block that owns each; 1 equal runs, 2 the last partial wave's tiles split in K,
      // 3 SK 2's split with every part's block adding a share): on the fastest tiling with EPI, and
      // on 128 x 128 tiles with the plain epilogue (SK 3: on one warpgroup of 64 x 128, two rows
      // of pairs a thread). Small problems get fewer blocks than SMs, some of them inside one tile.
      for (int v = 0; v < 6; ++v) {
        Config k = best;
        k.set("PT", 0), k.set("SK", 1 + v / 2), k.set("EPI", 1);
        if (v % 2 == 1) k.set("BN", 128), k.set("ST", 4), k.set("EPI", 0);
        if (v == 5) k.set("BM", 64), k.set("WG", 1);
        offer(k);
      }
      // Deep rings for small tiles (what cuBLAS runs at M = 128: 64 x 64 in 13 stages): ST 13 on
      // 64 x 64 with EPI, ST 8 on 128 x 64 split in a 2-CTA cluster, ST 10 on 64 x 64 under SK 3;
      // and 64 x 64 pairs under MC 1 and 2 (a 64-wide shared tile: K-major in 32-row halves,
      // MN-major in halves of its K lines).
      for (int v = 0; v < 5; ++v) {
        Config q = Config::from_json(R"({"BM":64,"BN":64,"WG":1,"ST":13,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":1,"MC":0,"EPI":1,"PP":0,"SK":0,"SWAP":0,"AR":0})");
        if (v == 1) q.set("BM", 128), q.set("WG", 2), q.set("ST", 8), q.set("CL", 2), q.set("EPI", 0);
        if (v == 2) q.set("ST", 10), q.set("PT", 0), q.set("SK", 3);
        if (v == 3) q.set("ST", 8), q.set("MC", 1);
        if (v == 4) q.set("ST", 6), q.set("MC", 2), q.set("PT", 2), q.set("EPI", 0);
        if (!f.valid(q, p, *dev)) q.set("PACK", 1), q.set("EPI", 0), q.set("SK", 0), q.set("PT", v == 4 ? 2 : 1);
        offer(q);
      }
      // EPI 3 (staged as EPI 1, stored by the producer warpgroup's warps 1-3 with plain stores: any
      // C alignment, so unaligned problems too, packed): on the fastest tiling, on 256 x 128 with
      // PT 2, persistent (a staging buffer reused tile after tile: the storers' `drained` wait),
      // on 128 x 128 with MC 1, and on one consumer warpgroup of 64 x 128 (no register
      // reallocation) with PT 4.
      for (int v = 0; v < 5; ++v) {
        Config e = best;
        e.set("EPI", 3);
        if (v == 1) e.set("BM", 256), e.set("BN", 128), e.set("PT", 2);
        if (v == 2) e.set("PT", 0);
        if (v == 3) e.set("BN", 128), e.set("ST", 4), e.set("MC", 1), e.set("PT", 2);
        if (v == 4) e.set("BM", 64), e.set("BN", 128), e.set("WG", 1), e.set("ST", 6), e.set("PT", 4);
        if (!f.valid(e, p, *dev)) e.set("PACK", 1);
        offer(e);
      }
      // Tiles of 192 (three 64-row or 64-column blocks; cuBLAS's sizes where 128 or 256 leave a
      // partial wave): 128 x 192 with EPI 1 (three TMA store boxes), with MC 1 sharing B's three
      // blocks (two from one CTA, one from the other) persistent, and under SK 3; three consumer
      // warpgroups of 64 rows (WG 3, 152 registers) on 192 x 192 persistent with SK 2 and EPI 1,
      // with EPI 3 and PT 2, split in K (SPLITK 2), and on 192 x 128 sharing A's 96-row halves (MC 2),
      // on 192 x 64 split in a cluster (CL 2).
      for (int v = 0; v < 8; ++v) {
        Config t = Config::from_json(R"({"BM":128,"BN":192,"WG":2,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":1,"MC":0,"EPI":1,"PP":0,"SK":0,"SWAP":0,"AR":0})");
        if (v == 1) t.set("MC", 1), t.set("PT", 0), t.set("EPI", 0);
        if (v == 2) t.set("PT", 0), t.set("SK", 3), t.set("EPI", 0);
        if (v >= 3) t.set("BM", 192), t.set("WG", 3), t.set("ST", 3);
        if (v == 3) t.set("PT", 0), t.set("SK", 2);
        if (v == 4) t.set("EPI", 3), t.set("PT", 2);
        if (v == 5) t.set("EPI", 0), t.set("SPLITK", 2);
        if (v == 6) t.set("BN", 128), t.set("ST", 4), t.set("MC", 2);
        if (v == 7) t.set("BN", 64), t.set("ST", 6), t.set("CL", 2), t.set("EPI", 0);
        if (!f.valid(t, p, *dev)) t.set("PACK", 1), t.set("EPI", t["EPI"] == 1 ? 3 : t["EPI"]), t.set("SK", 0);
        offer(t);
      }
      // SWAP (C^T = B^T A^T, C stored transposed; aligned problems, the plain epilogue): tile
      // columns along M of any multiple of 16 where A is row-major (96, 144, 208, ...), else of 64;
      // with two or three consumer warpgroups, persistent with MC 2, SK 2 and SK 3, ping-pong, a
      // K split in a cluster (CL 2), B's 240-row K-major tile shared by a pair (MC 1, 120 rows each),
      // one warpgroup with PT 2. And without SWAP, 160-column tiles where B is column-major (K-major).
      // Then EPI 1 under SWAP (staged transposed) on 128 x 96 persistent, 192 x 144 with MC 2, 256 x 112 with PT 2.
      for (int v = 0; v < 12; ++v) {
        Config w = Config::from_json(R"({"BM":128,"BN":96,"WG":2,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":1,"MC":0,"EPI":0,"PP":0,"SK":0,"SWAP":1,"AR":0})");
        if (v == 1) w.set("BM", 192), w.set("WG", 3), w.set("BN", 144), w.set("PT", 0), w.set("MC", 2);
        if (v == 2) w.set("BN", 208), w.set("PT", 0), w.set("SK", 2);
        if (v == 3) w.set("BM", 256), w.set("BN", 112), w.set("ST", 3), w.set("PT", 0), w.set("SK", 3);
        if (v == 4) w.set("BN", 80), w.set("PP", 1), w.set("PT", 0);
        if (v == 5) w.set("BN", 176), w.set("CL", 2);
        if (v == 6) w.set("BN", 240), w.set("ST", 3), w.set("MC", 1);
        if (v == 7) w.set("BM", 64), w.set("WG", 1), w.set("BN", 64), w.set("ST", 6), w.set("PT", 2);
        if (v == 8) w.set("BN", 160), w.set("SWAP", 0), w.set("EPI", 0);
        // EPI 1 under SWAP: C staged transposed and stored by TMA (boxes of 64 columns by BN rows).
        if (v == 9) w.set("EPI", 1), w.set("PT", 0);
        if (v == 10) w.set("EPI", 1), w.set("BM", 192), w.set("WG", 3), w.set("BN", 144), w.set("PT", 0), w.set("MC", 2);
        if (v == 11) w.set("EPI", 1), w.set("BM", 256), w.set("BN", 112), w.set("ST", 3), w.set("PT", 2);
        if (!f.valid(w, p, *dev) && w["BN"] % 64 != 0) w.set("BN", 128); // the kernel's B MN-major: 64-column blocks
        offer(w);
      }
      // AR (A from registers: ldmatrix, .trans where the kernel's A is MN-major, i.e. A column-major,
      // or B row-major under SWAP): one and two m64 blocks a consumer, one to three consumer
      // warpgroups, with EPI 2 / 3, PT 0, SK 2, PP, SPLITK, CL, MC 1 and 2, SWAP.
      for (int v = 0; v < 10; ++v) {
        Config a = Config::from_json(R"({"BM":128,"BN":256,"WG":2,"ST":4,"SWZ":16,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":0,"MC":0,"EPI":2,"PP":0,"SK":0,"SWAP":0,"AR":1})");
        if (v == 1) a.set("BM", 256), a.set("BN", 128), a.set("PT", 1);
        if (v == 2) a.set("BN", 128), a.set("EPI", 0), a.set("PT", 0), a.set("SK", 2);
        if (v == 3) a.set("BM", 64), a.set("BN", 128), a.set("WG", 1), a.set("ST", 5), a.set("EPI", 3), a.set("PT", 2);
        if (v == 4) a.set("BM", 192), a.set("BN", 192), a.set("WG", 3), a.set("ST", 3), a.set("EPI", 1), a.set("MC", 1), a.set("PT", 1);
        if (v == 5) a.set("BN", 128), a.set("ST", 5), a.set("EPI", 1), a.set("PP", 1);
        if (v == 6) a.set("BN", 64), a.set("ST", 6), a.set("EPI", 0), a.set("PT", 1), a.set("SPLITK", 2), a.set("MC", 2);
        if (v == 7) a.set("BN", 128), a.set("EPI", 0), a.set("PT", 1), a.set("CL", 2);
        if (v == 8) a.set("BN", 96), a.set("EPI", 1), a.set("SWAP", 1);
        if (v == 9) a.set("BM", 256), a.set("BN", 128), a.set("EPI", 0), a.set("PT", 1), a.set("ST", 3), a.set("SWAP", 1);
        if (!f.valid(a, p, *dev) && a["BN"] % 64 != 0) a.set("BN", 128);
        if (!f.valid(a, p, *dev)) a.set("PACK", 1), a.set("SWAP", 0), a.set("SK", 0), a.set("EPI", a["EPI"] ? 3 : 0);
        offer(a);
      }
      for (auto& c : configs) cases.push_back(Case{i, c, compiler.compile_async(compile_request(f, c, p, dev->arch))});
    }
  {
    std::vector<std::future<void>> refs;
    for (auto& in : insts) {
      const int parts = in.p.m * in.p.n * in.p.k > (int64_t(1) << 30) ? 8 : 1;
      refs.push_back(std::async(std::launch::async, [&in, parts] { in.compute_reference(parts); }));
    }
    for (auto& r : refs) r.get();
  }

  int checked = 0, nan_c = 0;
  std::set<std::string> layouts, dtypes;
  int mc64 = 0, mc_split = 0, tiles192 = 0, swapped = 0, swap_beta = 0, swap_staged = 0;
  std::set<std::string> swap_layouts;
  std::set<int> bn, wg, st, tma, pack, splitk, cl, pt, mc, epi, pp, sk;
  int epi_beta0 = 0, pp_epi = 0, sk_cases = 0, sk3_cases = 0, epi3_beta0 = 0, epi3_packed = 0;
  int ar_cases = 0, ar_mn_major = 0; // AR, and AR whose kernel A is MN-major (ldmatrix.trans)
  for (size_t i = 0; i < insts.size(); ++i) {
    const Instance& in = insts[i];
    const GemmProblem& p = in.p;
    const Buf A = upload(in.a), B = upload(in.b), Cb = upload(in.c0);
    double cublas_error = 0;
    // K = 0: cuBLAS's own checks want lda >= 1 row. Under the sanitizer cuBLAS is left out: its
    // kernels are not ours to check (racecheck flags one of its sm_90 kernels, nvjet_sm90_tst_*).
    if (p.k > 0 && !sample) {
      cublas.gemm_half(p, in.args(A, B, Cb), nullptr);
      check_cu(driver().cuCtxSynchronize(), "cuCtxSynchronize", "cuBLAS " + p.key());
      std::vector<uint16_t> outb(in.c0.size());
      check_cu(driver().cuMemcpyDtoH(outb.data(), Cb.ptr(), outb.size() * 2), "cuMemcpyDtoH", "wgmma test");
      // cuBLAS is not held to the gate (some of its half kernels round split-K partials or the
      // product to the output type; its violations are printed), but within 2x the norm bound it
      // says the reference is right.
      cublas_error = in.error(outb, false);
      EXPECT_LE(cublas_error, 2 * in.tol) << "cuBLAS on " << p.key();
      if (in.violations) std::cout << "[ ktune    ] cuBLAS on " << p.key() << ": " << in.violations << " elements over the per-element bound\n";
    }
    for (auto& cs : cases) {
      if (cs.inst != i) continue;
      const std::string what = p.key() + " " + p.layout_string() + " lda=" + std::to_string(p.eff_lda()) +
                               " ldc=" + std::to_string(p.eff_ldc()) + " alpha=" + std::to_string(p.alpha) +
                               " beta=" + std::to_string(p.beta) + " " + cs.c.to_json();
      std::shared_ptr<const CompiledKernel> k;
      try {
        k = cs.kernel.get();
      } catch (const std::exception& e) {
        ADD_FAILURE() << what << ": " << e.what();
        continue;
      }
      Module m(k->cubin, k->lowered_names, "gemm_wgmma " + what);
      const LaunchPlan plan = f.launch_plan(cs.c, p);
      const Buf C = upload(in.c0);
      const DeviceBuffer ws(std::max<size_t>(plan.workspace_bytes, 256), "wgmma test workspace (packed operands)");
      // NaN everywhere, as another plan's sums would leave it: stream-K's flags read "parked" until
      // its clear kernel zeroes them, and a part read before it is parked is NaN.
      check_cu(driver().cuMemsetD32Async(ws.ptr(), 0x7fc00000u, ws.bytes() / 4, nullptr), "cuMemsetD32Async", "wgmma test workspace");
      launch_gemm(m, plan, in.args(A, B, C, &ws), nullptr);
      check_cu(driver().cuCtxSynchronize(), "cuCtxSynchronize", "wgmma test " + what);
      std::vector<uint16_t> out(in.c0.size());
      check_cu(driver().cuMemcpyDtoH(out.data(), C.ptr(), out.size() * 2), "cuMemcpyDtoH", "wgmma test");
      const double e = in.error(out);
      EXPECT_LE(e, in.tol) << what << " (NaN: a non-finite result or a write beyond N)";
      std::cout << "[ ktune    ] " << p.key() << " " << p.layout_string() << " " << cs.c.short_string() << ": error " << e
                << " (tolerance " << in.tol << "), cuBLAS " << cublas_error << "\n";
      ++checked;
      nan_c += p.beta == 0.0f;
      layouts.insert(p.layout_string());
      dtypes.insert(to_string(p.dtype));
      bn.insert(cs.c["BN"]);
      wg.insert(cs.c["WG"]);
      st.insert(cs.c["ST"]);
      tma.insert(cs.c["TMA"]);
      pack.insert(cs.c["PACK"]);
      splitk.insert(cs.c["SPLITK"]);
      cl.insert(cs.c["CL"]);
      pt.insert(cs.c["PT"]);
      mc.insert(cs.c["MC"]);
      tiles192 += cs.c["BM"] == 192 || cs.c["BN"] == 192;
      swapped += cs.c["SWAP"];
      swap_layouts.insert(p.layout_string() + std::to_string(cs.c["SWAP"]));
      swap_beta += cs.c["SWAP"] == 1 && p.beta != 0.0f;
      swap_staged += cs.c["SWAP"] == 1 && cs.c["EPI"] == 1 && p.beta == 0.0f;
      mc64 += cs.c["MC"] > 0 && (cs.c["MC"] == 1 ? cs.c["BN"] : cs.c["BM"]) == 64;
      mc_split += cs.c["MC"] > 0 && cs.c["SPLITK"] > 1;
      epi.insert(cs.c["EPI"]);
      epi_beta0 += cs.c["EPI"] == 1 && p.beta == 0.0f;
      epi3_beta0 += cs.c["EPI"] == 3 && p.beta == 0.0f;
      epi3_packed += cs.c["EPI"] == 3 && cs.c["PACK"] == 1 && p.beta == 0.0f;
      pp.insert(cs.c["PP"]);
      sk.insert(cs.c["SK"]);
      sk_cases += cs.c["SK"];
      sk3_cases += cs.c["SK"] == 3;
      pp_epi += cs.c["PP"] == 1 && cs.c["EPI"] == 1 && p.beta == 0.0f;
      ar_cases += cs.c["AR"];
      ar_mn_major += cs.c["AR"] == 1 && (cs.c["SWAP"] ? p.b == Layout::row : p.a == Layout::col);
    }
  }
  EXPECT_GE(checked, sample ? 90 : 120);
  EXPECT_GE(nan_c, sample ? 15 : 20);
  EXPECT_EQ(layouts.size(), 4u);
  EXPECT_EQ(dtypes.size(), 2u);
  EXPECT_GE(bn.size(), 10u); // multiples of 16 where the kernel's B is K-major
  EXPECT_GE(swapped, sample ? 60 : 100);
  EXPECT_GE(swap_beta, 10);
  EXPECT_GE(swap_staged, 20); // EPI 1 under SWAP with beta == 0 (beta != 0 takes the plain epilogue)
  EXPECT_GE(ar_cases, sample ? 40 : 100);
  EXPECT_GE(ar_mn_major, sample ? 15 : 30);
  for (const char* l : {"NN1", "NT1", "TN1", "TT1"}) EXPECT_TRUE(swap_layouts.count(l)) << l;
  EXPECT_EQ(wg.size(), 3u);
  EXPECT_TRUE(st.count(8) && st.count(10) && st.count(13)); // the deep rings ran
  EXPECT_EQ(tma.size(), 2u);
  EXPECT_EQ(pack.size(), 2u);
  EXPECT_GE(splitk.size(), 3u);
  EXPECT_EQ(cl.size(), 4u);
  EXPECT_EQ(pt.size(), 4u); // 0 (persistent), 1, 2, 4
  EXPECT_EQ(mc.size(), 3u);
  EXPECT_GE(mc64, sample ? 20 : 30); // 64-wide shared tiles in halves
  EXPECT_GE(tiles192, sample ? 60 : 90); // 192-row or 192-column tiles
  EXPECT_GE(mc_split, sample ? 20 : 30); // pairs of one K slice
  EXPECT_EQ(epi.size(), 4u);
  EXPECT_GE(epi_beta0, 20); // the TMA-store path itself (beta == 0), not only its fallback
  EXPECT_GE(epi3_beta0, sample ? 30 : 40); // the storer warps themselves (beta == 0)
  EXPECT_GE(epi3_packed, 10);              // on unaligned C
  EXPECT_EQ(pp.size(), 2u);
  EXPECT_GE(pp_epi, 10); // ping-pong consumers with their own staging buffers
  EXPECT_EQ(sk.size(), 4u);
  EXPECT_GE(sk_cases, 150);
  EXPECT_GE(sk3_cases, sample ? 20 : 30); // every part's block adding a share of the cut tiles
}

// launch_gemm keeps each thread's recent tensor maps (runtime/tensor_map_cache.h). Two live operand
// sets of one problem, launched in turn with one plan (TMA maps of A, B and C; swapped and packed
// plans too), must each get their own maps: a map reused across pointer sets would read the other
// set's A and B or write its C. Each result is checked against its own FP64 reference.
TEST(WgmmaGpu, TensorMapsFollowEachLaunchsPointers) {
  std::string why;
  const DeviceInfo* dev = sm90_device(&why);
  if (!dev) GTEST_SKIP() << why;
  CudaContext ctx(dev->ordinal);
  Compiler compiler;
  const Family f = find_family("gemm_wgmma");
  const Config epi = Config::from_json(R"({"BM":128,"BN":128,"WG":2,"ST":4,"SWZ":8,"TMA":1,"PACK":0,"SPLITK":1,"CL":1,"PT":0,"MC":0,"EPI":1,"PP":0,"SK":0,"SWAP":0,"AR":0})");
  Config swap = epi;
  swap.set("BN", 96), swap.set("SWAP", 1);
  Config packed = epi;
  packed.set("PACK", 1), packed.set("EPI", 3);
  struct Run {
    int64_t m, n, k;
    Config c;
  };
  int launches = 0;
  uint64_t seed = 900;
  for (const Run& r : {Run{384, 512, 320, epi}, Run{384, 480, 256, swap}, Run{301, 299, 203, packed}}) {
    GemmProblem p = GemmProblem::make(r.m, r.n, r.k, "NN", DType::bf16);
    p.align = GemmProblem::alignment_of(p.eff_lda(), p.eff_ldb(), p.eff_ldc(), 2);
    ASSERT_TRUE(f.valid(r.c, p, *dev)) << p.key() << " " << ::testing::PrintToString(f.violations(r.c, p, *dev));
    const auto k = compiler.compile(compile_request(f, r.c, p, dev->arch));
    Module m(k->cubin, k->lowered_names, "tensor-map test " + p.key());
    const LaunchPlan plan = f.launch_plan(r.c, p);
    Instance one(p, 0, ++seed), two(p, 0, ++seed);
    one.compute_reference(), two.compute_reference();
    const Buf A1 = upload(one.a), B1 = upload(one.b), A2 = upload(two.a), B2 = upload(two.b);
    const DeviceBuffer ws(std::max<size_t>(plan.workspace_bytes, 256), "tensor-map test workspace");
    for (int round = 0; round < 3; ++round)
      for (const Instance* in : {&one, &two}) {
        const Buf C = upload(in->c0); // a fresh C each launch: a stale map of C would miss it
        launch_gemm(m, plan, in == &one ? in->args(A1, B1, C, &ws) : in->args(A2, B2, C, &ws), nullptr);
        check_cu(driver().cuCtxSynchronize(), "cuCtxSynchronize", "tensor-map test");
        std::vector<uint16_t> out(in->c0.size());
        check_cu(driver().cuMemcpyDtoH(out.data(), C.ptr(), out.size() * 2), "cuMemcpyDtoH", "tensor-map test");
        EXPECT_LE(in->error(out), in->tol) << p.key() << " " << r.c.to_json() << " set " << (in == &one ? 1 : 2) << " round " << round;
        ++launches;
      }
  }
  EXPECT_EQ(launches, 18);
}
