// BLAS semantics on every kernel path of every GEMM family, in every dtype it serves (launch_gemm,
// runtime/gemm_launch.h): alpha == 0 or K == 0 gives C = beta * C without reading A or B (they hold
// NaN here, or are null), beta == 0 never reads C (it holds NaN), alpha == 0 with beta == 1 and
// M == 0 or N == 0 launch nothing. Every family runs, in f32 or in bf16 and f16 (C of 16-bit
// words), a sample of configs drawn to cover its kernel paths (split-K and its reduce, packing,
// pipelines and stage rings, EVEN, the skinny families' thread groups, columns per warp and
// clusters, gemm_wgmma's load paths, stream-K, swapped and TMA-stored epilogues, multicast and
// persistent grids) on aligned and unaligned shapes, each config with the plan of the full
// problem, as a runtime would launch it. The kernels' own K == 0 handling is checked too, with
// launch_gemm's rewriting of the arguments bypassed. C's rows are padded beyond N, and the padding
// must come back bit for bit. The CPU test at the end compiles the same sample with NVRTC, so that
// a machine without a GPU still catches a config of the sample that does not compile.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

#include "core/half.h"
#include "gemm/gemm_families.h"
#include "gpu_env.h"
#include "ktune/compiler.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/gemm_launch.h"
#include "runtime/module.h"
#include "ktune/gemm_problem.h"

using namespace ktune;

namespace {

// Shapes: skinny (M <= 64) and not, odd sizes that no tile divides, a long K against a tiny C,
// one that the tiles divide (EVEN and gemm_tf32x3's unpacked form apply there) and a large odd
// one. alpha == 0 costs no K loop, so 2999^3 is as cheap as C is. In bf16 and f16 the odd shapes
// are unaligned in most layouts (gemm_tc16 packs them there) and the dividing one is aligned.
const std::vector<const char*> kShapes = {"16x512x300", "2x2x5000", "33x257x129", "128x4096x4096", "2999x2999x2999"};
// gemm_skinny16 serves M <= 64 only: the skinny odd shapes, and an aligned one where B is loaded
// 8 halves at a time and A's fragments in vectors.
const std::vector<const char*> kSkinnyShapes = {"16x512x300", "2x2x5000", "33x257x129", "8x4096x4096"};
// gemm_wgmma serves unaligned problems only through packed copies (PACK = 1); its unpacked kernels
// (cp.async loads, stream-K, SWAP, C stored by TMA) need A, B and C 16-byte aligned: here M, N and
// K multiples of 8, in tiles that do not divide them (past a wave of 128 x 128 tiles on 132 SMs,
// so that stream-K has full waves and a cut one) and in tiles that do.
const std::vector<const char*> kWgmmaShapes = {"16x512x300", "33x257x129", "1800x2000x520", "128x4096x4096",
                                               "2999x2999x2999"};
const char* const kAll[] = {"NN", "NT", "TN", "TT"};

// A shape in a layout and dtype with C's rows padded by at least 16 bytes beyond N, to a multiple
// of 16 bytes (the padding is checked for stray writes; 16-byte rows leave an aligned shape
// aligned). The alignment class stays what the shape's own leading dimensions give.
GemmProblem problem(const char* shape, const char* layout, DType t) {
  GemmProblem p = GemmProblem::parse(shape, layout, t);
  const int64_t q = 16 / element_bytes(t);
  p.ldc = (p.n + q - 1) / q * q + q;
  p.align = GemmProblem::alignment_of(p.eff_lda(), p.eff_ldb(), p.ldc, element_bytes(t));
  p.validate();
  return p;
}

// Whether every 16-byte chunk of A and B is aligned and wholly inside or outside the operand: what
// gemm_wgmma's unpacked kernels and gemm_tc16's unpacked 16-byte loads need.
bool aligned16(const GemmProblem& p) {
  const int64_t q = 16 / element_bytes(p.dtype);
  return p.align >= 16 && p.eff_lda() % q == 0 && p.eff_ldb() % q == 0 && (p.a == Layout::col ? p.m : p.k) % q == 0 &&
         (p.b == Layout::col ? p.k : p.n) % q == 0;
}

// Configs drawn from a family with some domains cut down (none: the whole space), n per shape, the
// layout rotating over `layouts` from shape to shape. Draws that are valid only where the tiles
// divide the problem (EVEN, gemm_tf32x3 unpacked), or only where they do not (PACK), are drawn only
// there, as are gemm_wgmma's draws of its unpacked kernels (aligned problems only): proving a
// space empty costs the sampler a walk over all of it.
enum class Where { every_shape, dividing, not_dividing, aligned };
const char* const kDividing = "128x4096x4096";

struct Draw {
  const char* what;
  std::map<std::string, std::vector<int>> domains;
  size_t n;
  std::vector<const char*> layouts;
  Where where = Where::every_shape;
};
// A family's draws, each at every shape of `shapes`.
struct FamilyDraws {
  const char* family;
  std::vector<const char*> shapes;
  std::vector<Draw> draws;
};

// gemm_wgmma's path parameters at the values that select no path (one whole tile a block, no K
// slices, multicast, stream-K, swap, A in registers or staged epilogue), `path`'s values in their
// place. Drawn from the whole space, one path is slow to find: at an unaligned shape one config in
// about 40000 of the space is valid, too few for the sampler's rejection draws, and it walks the
// whole space (half a second a draw); with the other paths held, valid configs are dense.
std::map<std::string, std::vector<int>> wgmma_path(const std::map<std::string, std::vector<int>>& path) {
  std::map<std::string, std::vector<int>> d = {{"SPLITK", {1}}, {"CL", {1}}, {"PT", {1}}, {"MC", {0}},  {"EPI", {0}},
                                               {"PP", {0}},     {"SK", {0}}, {"SWAP", {0}}, {"AR", {0}}};
  for (const auto& [k, v] : path) d[k] = v;
  return d;
}

const std::vector<FamilyDraws>& draws() {
  const std::vector<const char*> all(std::begin(kAll), std::end(kAll));
  static const std::vector<FamilyDraws> d = {
      {"gemm_naive", kShapes, {{"any", {}, 2, all}}},
      {"gemm_smem", kShapes, {{"any", {}, 2, all}}},
      {"gemm_simt",
       kShapes,
       {{"any", {}, 3, all},
        {"one K slice", {{"SPLITK", {1}}}, 1, all},
        {"split-K", {{"SPLITK", {2, 4, 8, 16}}}, 2, all},
        {"packed", {{"PACK", {1}}}, 2, all, Where::not_dividing},
        {"packed split-K", {{"PACK", {1}}, {"SPLITK", {2, 4, 8, 16}}}, 1, all, Where::not_dividing},
        {"single buffer", {{"PIPE", {0}}}, 1, all},
        {"register double buffer", {{"PIPE", {1}}}, 1, all},
        {"cp.async stages", {{"PIPE", {2, 3, 4}}}, 1, all},
        {"EVEN", {{"EVEN", {1}}}, 2, all, Where::dividing},
        {"EVEN split-K", {{"EVEN", {1}}, {"SPLITK", {2, 4, 8, 16}}}, 1, all, Where::dividing}}},
      {"gemm_skinny",
       kShapes,
       {{"any", {}, 3, all},
        {"one K slice", {{"SPLITK", {1}}}, 2, all},
        {"cp.async stage ring", {{"ST", {2, 3, 4, 6}}}, 2, {"NN", "TN"}},
        {"split-K through the reduce", {{"CL", {0}}, {"SPLITK", {2, 4, 8, 16, 32, 64}}}, 2, all},
        {"clusters", {{"CL", {1}}, {"SPLITK", {2, 4, 8}}}, 2, all},
        {"clusters and the reduce", {{"CL", {1}}, {"SPLITK", {16, 32, 64}}}, 1, all},
        {"thread groups along K", {{"KG", {2, 4, 8, 16, 32}}}, 1, {"NN", "TN"}},
        {"columns per warp", {{"NC", {2, 4, 8}}}, 1, {"NT", "TT"}}}},
      {"gemm_tf32x3",
       kShapes,
       {{"any", {}, 2, all},
        {"one K slice", {{"SPLITK", {1}}}, 1, all},
        {"split-K", {{"SPLITK", {2, 4, 8, 16}}}, 2, all},
        {"unpacked", {{"PACK", {0}}}, 2, all, Where::dividing},
        {"packed split-K", {{"PACK", {1}}, {"SPLITK", {2, 4, 8, 16}}}, 1, all, Where::not_dividing}}},
      // Unaligned shapes take packed copies only (element loads, PACK = 0 there, only where the
      // copies would exceed the workspace cap); the aligned dividing one takes both forms.
      {"gemm_tc16",
       kShapes,
       {{"any", {}, 1, all},
        {"one K slice", {{"SPLITK", {1}}}, 1, all},
        {"split-K", {{"SPLITK", {2, 4, 8}}}, 1, all},
        {"unpacked", {{"PACK", {0}}}, 1, all, Where::dividing},
        {"unpacked split-K", {{"PACK", {0}}, {"SPLITK", {2, 4, 8}}}, 1, all, Where::dividing},
        {"packed split-K", {{"PACK", {1}}, {"SPLITK", {2, 4, 8}}}, 1, all, Where::not_dividing},
        {"loads through registers", {{"CPA", {0}}}, 1, all},
        {"the ladder's plain rows and fragments", {{"SMEM", {0}}, {"LDM", {0}}}, 1, all}}},
      {"gemm_skinny16",
       kSkinnyShapes,
       {{"any", {}, 2, all},
        {"one K slice", {{"CL", {1}}, {"SPLITK", {1}}}, 1, all},
        {"split-K through the reduce", {{"CL", {1}}, {"SPLITK", {2, 4, 8, 16, 32}}}, 1, all},
        {"clusters", {{"CL", {2, 4, 8}}, {"SPLITK", {1}}}, 1, all},
        {"clusters and the reduce", {{"CL", {2, 4, 8}}, {"SPLITK", {2, 4, 8, 16, 32}}}, 1, all},
        {"thread groups along K", {{"KG", {2, 4, 8, 16}}}, 1, all}}},
      // Besides whole-space draws, one path at a time, the others at wgmma_path's neutral values
      // (several tiles a block varying where the path allows them).
      {"gemm_wgmma",
       kWgmmaShapes,
       {{"any", {}, 2, all},
        {"cp.async loads", wgmma_path({{"TMA", {0}}}), 1, all, Where::aligned},
        {"TMA loads, unpacked", wgmma_path({{"TMA", {1}}}), 1, all, Where::aligned},
        {"split-K through the reduce", wgmma_path({{"SPLITK", {2, 4, 8}}}), 1, all},
        {"split-K in a cluster", wgmma_path({{"CL", {2, 4, 8}}}), 1, all},
        {"stream-K over the last waves", wgmma_path({{"SK", {1}}, {"PT", {0}}}), 1, all, Where::aligned},
        {"stream-K of the last wave's tiles", wgmma_path({{"SK", {2, 3}}, {"PT", {0}}}), 1, all, Where::aligned},
        {"swapped", wgmma_path({{"SWAP", {1}}, {"PT", {0, 1, 2, 4}}}), 1, all, Where::aligned},
        {"swapped, C stored by TMA", wgmma_path({{"SWAP", {1}}, {"EPI", {1}}}), 1, all, Where::aligned},
        {"C stored by TMA", wgmma_path({{"EPI", {1, 2}}, {"PT", {0, 1, 2, 4}}}), 1, all, Where::aligned},
        {"C stored by the producer's warps", wgmma_path({{"EPI", {3}}, {"PT", {0, 1, 2, 4}}}), 1, all},
        {"multicast", wgmma_path({{"MC", {1, 2}}, {"PT", {0, 1, 2, 4}}}), 1, all},
        {"multicast of one K slice", wgmma_path({{"MC", {1, 2}}, {"SPLITK", {2, 4, 8}}}), 1, all},
        {"persistent grid", wgmma_path({{"PT", {0}}}), 1, all},
        {"several tiles a block", wgmma_path({{"PT", {2, 4}}}), 1, all},
        {"ping-pong consumers", wgmma_path({{"PP", {1}}, {"PT", {0, 2, 4}}}), 1, all},
        {"A from registers", wgmma_path({{"AR", {1}}, {"PT", {0, 1, 2, 4}}}), 1, all},
        {"three consumer warpgroups", wgmma_path({{"WG", {3}}, {"PT", {0, 1, 2, 4}}}), 1, all}}},
      {"gemm_wgmma_tf32x3",
       kShapes,
       {{"any", {}, 1, all},
        {"one K slice", {{"SPLITK", {1}}}, 1, all},
        {"split-K", {{"SPLITK", {2, 4, 8, 16}}}, 1, all}}},
  };
  return d;
}

struct Case {
  std::string family;
  Config config;
  GemmProblem p; // the config is valid for it
  std::string what;
  std::string describe() const {
    return family + " (" + what + ") " + config.to_json() + " on " + p.key() + " ldc=" + std::to_string(p.ldc);
  }
};

// Whether a family serves the device at all: its minimum arch, and arch-specific code (sm_90a)
// only on that arch.
bool serves(const Family& f, const DeviceInfo& d) {
  return d.arch_number() >= f.min_arch() && (!f.arch_specific() || d.arch_number() == f.min_arch());
}

// Every draw at every shape where it has valid configs, seeded by its position: the same device
// limits give the same cases (the CPU test below compiles those of nominal sm_90). A family of
// several dtypes draws at each shape in one of them, in turn from shape to shape: half the compiles
// of drawing each in both, and still every dtype in every layout and at most draws (the layouts
// rotate along the draws). Families that do not serve the device draw nothing.
std::vector<Case> sample_cases(const DeviceInfo& d) {
  std::vector<Case> out;
  uint64_t seed = 0;
  for (const auto& fd : draws()) {
    const Family full = find_family(fd.family);
    const std::vector<DType>& dtypes = full.dtypes();
    for (size_t si = 0; si < fd.shapes.size(); ++si)
      for (size_t di = 0; di < fd.draws.size(); ++di) {
        const Draw& dr = fd.draws[di];
        ++seed;
        if (!serves(full, d)) continue;
        const DType t = dtypes[si % dtypes.size()];
        const GemmProblem p = problem(fd.shapes[si], dr.layouts[(si + di) % dr.layouts.size()], t);
        const bool dividing = std::string(fd.shapes[si]) == kDividing;
        if ((dr.where == Where::dividing && !dividing) || (dr.where == Where::not_dividing && dividing) ||
            (dr.where == Where::aligned && !aligned16(p)))
          continue;
        SpaceRestriction r;
        r.family = fd.family;
        r.domains = dr.domains;
        const Family f = dr.domains.empty() ? full : full.restricted(r);
        for (const Config& c : f.sample(p, d, dr.n, 20261201 + seed)) out.push_back({fd.family, c, p, dr.what});
      }
  }
  return out;
}

// Whether the cases reach the kernel paths the draws are for (the count of each): "family",
// "family dtype", "family dtype layout" and "family path".
std::map<std::string, int> coverage(const std::vector<Case>& cases) {
  std::map<std::string, int> n;
  for (const auto& fd : draws()) n[fd.family] = 0;
  for (const Case& c : cases) {
    const Config& k = c.config;
    const bool b_col = c.p.b == Layout::col;
    const std::string f = c.family + " ";
    ++n[c.family];
    ++n[f + to_string(c.p.dtype)];
    ++n[f + to_string(c.p.dtype) + " " + c.p.layout_string()];
    if (c.family == "gemm_simt") {
      ++n[k["SPLITK"] > 1 ? "gemm_simt SPLITK > 1" : "gemm_simt SPLITK = 1"];
      if (k["PACK"]) ++n["gemm_simt PACK = 1"];
      if (k["PACK"] && k["SPLITK"] > 1) ++n["gemm_simt PACK = 1, SPLITK > 1"];
      if (k["EVEN"]) ++n["gemm_simt EVEN = 1"];
      if (k["EVEN"] && k["SPLITK"] > 1) ++n["gemm_simt EVEN = 1, SPLITK > 1"];
      ++n["gemm_simt PIPE = " + std::to_string(std::min(k["PIPE"], 2)) + (k["PIPE"] >= 2 ? "+" : "")];
    } else if (c.family == "gemm_skinny") {
      if (k["ST"] >= 2) ++n["gemm_skinny ST >= 2"];
      if (k["SPLITK"] == 1) ++n["gemm_skinny SPLITK = 1"];
      if (!k["CL"] && k["SPLITK"] > 1) ++n["gemm_skinny SPLITK > 1, CL = 0"];
      if (k["CL"] && k["SPLITK"] <= 8) ++n["gemm_skinny CL = 1, SPLITK <= 8"];
      if (k["CL"] && k["SPLITK"] > 8) ++n["gemm_skinny CL = 1, SPLITK > 8"];
      if (!b_col && k["KG"] > 1) ++n["gemm_skinny KG > 1"];
      if (b_col && k["NC"] > 1) ++n["gemm_skinny NC > 1"];
    } else if (c.family == "gemm_tf32x3") {
      ++n[k["SPLITK"] > 1 ? "gemm_tf32x3 SPLITK > 1" : "gemm_tf32x3 SPLITK = 1"];
      ++n[std::string("gemm_tf32x3 PACK = ") + (k["PACK"] ? "1" : "0")];
    } else if (c.family == "gemm_tc16") {
      ++n[k["SPLITK"] > 1 ? "gemm_tc16 SPLITK > 1" : "gemm_tc16 SPLITK = 1"];
      ++n[std::string("gemm_tc16 PACK = ") + (k["PACK"] ? "1" : "0")];
      if (k["PACK"] && k["SPLITK"] > 1) ++n["gemm_tc16 PACK = 1, SPLITK > 1"];
      if (!k["PACK"] && k["SPLITK"] > 1) ++n["gemm_tc16 PACK = 0, SPLITK > 1"];
      if (!k["CPA"]) ++n["gemm_tc16 CPA = 0"];
      if (!k["SMEM"] && !k["LDM"]) ++n["gemm_tc16 SMEM = 0, LDM = 0"];
    } else if (c.family == "gemm_skinny16") {
      const int cl = k["CL"], splitk = k["SPLITK"];
      ++n[std::string("gemm_skinny16 ") + (cl > 1 ? "CL > 1" : "CL = 1") + ", " + (splitk > 1 ? "SPLITK > 1" : "SPLITK = 1")];
      if (k["KG"] > 1) ++n["gemm_skinny16 KG > 1"];
      if ((c.p.m + k["MT"] - 1) / k["MT"] == 2) ++n["gemm_skinny16 two row tiles"];
      if (k["VEC"] == 8) ++n["gemm_skinny16 VEC = 8"];
    } else if (c.family == "gemm_wgmma") {
      const bool sliced = k["SPLITK"] > 1;
      if (!k["TMA"]) ++n["gemm_wgmma TMA = 0"];
      if (k["TMA"] && !k["PACK"]) ++n["gemm_wgmma TMA = 1, PACK = 0"];
      if (k["PACK"]) ++n["gemm_wgmma PACK = 1"];
      if (k["PACK"] && sliced) ++n["gemm_wgmma PACK = 1, SPLITK > 1"];
      if (sliced) ++n["gemm_wgmma SPLITK > 1"];
      if (k["CL"] > 1) ++n["gemm_wgmma CL > 1"];
      if (k["SK"] == 1) ++n["gemm_wgmma SK = 1"];
      if (k["SK"] >= 2) ++n["gemm_wgmma SK = 2 or 3"];
      if (k["SWAP"]) ++n[std::string("gemm_wgmma SWAP = 1, EPI = ") + (k["EPI"] ? "1" : "0")];
      if (!k["SWAP"] && (k["EPI"] == 1 || k["EPI"] == 2)) ++n["gemm_wgmma EPI = 1 or 2"];
      if (k["EPI"] == 3) ++n["gemm_wgmma EPI = 3"];
      if (k["MC"] && !sliced) ++n["gemm_wgmma MC > 0, SPLITK = 1"];
      if (k["MC"] && sliced) ++n["gemm_wgmma MC > 0, SPLITK > 1"];
      if (k["PT"] == 0 && !k["SK"]) ++n["gemm_wgmma PT = 0, SK = 0"];
      if (k["PT"] > 1) ++n["gemm_wgmma PT > 1"];
      if (k["PP"]) ++n["gemm_wgmma PP = 1"];
      if (k["AR"]) ++n["gemm_wgmma AR = 1"];
      if (k["WG"] == 3) ++n["gemm_wgmma WG = 3"];
    } else if (c.family == "gemm_wgmma_tf32x3") {
      ++n[k["SPLITK"] > 1 ? "gemm_wgmma_tf32x3 SPLITK > 1" : "gemm_wgmma_tf32x3 SPLITK = 1"];
    }
  }
  return n;
}

// The kernel paths each family's draws are for (coverage's "family path" keys); those that need
// thread block clusters only where the device has them (sm_90).
const std::map<std::string, std::vector<const char*>> kPaths = {
    {"gemm_simt",
     {"SPLITK = 1", "SPLITK > 1", "PACK = 1", "PACK = 1, SPLITK > 1", "EVEN = 1", "EVEN = 1, SPLITK > 1", "PIPE = 0",
      "PIPE = 1", "PIPE = 2+"}},
    {"gemm_skinny", {"SPLITK = 1", "ST >= 2", "SPLITK > 1, CL = 0", "KG > 1", "NC > 1"}},
    {"gemm_tf32x3", {"SPLITK = 1", "SPLITK > 1", "PACK = 0", "PACK = 1"}},
    {"gemm_tc16",
     {"SPLITK = 1", "SPLITK > 1", "PACK = 0", "PACK = 1", "PACK = 1, SPLITK > 1", "PACK = 0, SPLITK > 1", "CPA = 0",
      "SMEM = 0, LDM = 0"}},
    {"gemm_skinny16", {"CL = 1, SPLITK = 1", "CL = 1, SPLITK > 1", "KG > 1", "two row tiles", "VEC = 8"}},
    {"gemm_wgmma",
     {"TMA = 0", "TMA = 1, PACK = 0", "PACK = 1", "PACK = 1, SPLITK > 1", "SPLITK > 1", "CL > 1", "SK = 1",
      "SK = 2 or 3", "SWAP = 1, EPI = 0", "SWAP = 1, EPI = 1", "EPI = 1 or 2", "EPI = 3", "MC > 0, SPLITK = 1",
      "MC > 0, SPLITK > 1", "PT = 0, SK = 0", "PT > 1", "PP = 1", "AR = 1", "WG = 3"}},
    {"gemm_wgmma_tf32x3", {"SPLITK = 1", "SPLITK > 1"}},
};
const std::map<std::string, std::vector<const char*>> kClusterPaths = {
    {"gemm_skinny", {"CL = 1, SPLITK <= 8", "CL = 1, SPLITK > 8"}},
    {"gemm_skinny16", {"CL > 1, SPLITK = 1", "CL > 1, SPLITK > 1"}},
};

// Every family the device can run, in each of its dtypes and layouts, and every path it is drawn
// for.
void expect_coverage(const std::vector<Case>& cases, const DeviceInfo& d) {
  const auto n = coverage(cases);
  std::vector<std::string> want;
  for (const auto& fd : draws()) {
    const Family f = find_family(fd.family);
    if (!serves(f, d)) continue;
    want.push_back(fd.family);
    for (DType t : f.dtypes()) {
      want.push_back(std::string(fd.family) + " " + to_string(t));
      for (const char* l : kAll) want.push_back(std::string(fd.family) + " " + to_string(t) + " " + l);
    }
    for (const auto* paths : {&kPaths, d.arch_number() >= 90 ? &kClusterPaths : nullptr}) {
      if (!paths) continue;
      const auto it = paths->find(fd.family);
      if (it != paths->end())
        for (const char* k : it->second) want.push_back(std::string(fd.family) + " " + k);
    }
  }
  for (const auto& w : want) {
    const auto it = n.find(w);
    EXPECT_TRUE(it != n.end() && it->second > 0) << "the sample has no case of " << w;
  }
}

// C's element as the test plants and reads it: 4-byte floats, or 16-bit bf16 / f16 words (held
// here in the low bits of a uint32_t). Quiet NaNs with distinct payloads in A, B and C: where a
// value in C came from is then visible.
struct Elem {
  DType dtype;
  size_t bytes;
  uint32_t nan_a, nan_b, poison_c;

  float value(uint32_t w) const {
    if (dtype == DType::bf16) return ktune::half::from_bf16(uint16_t(w));
    if (dtype == DType::f16) return ktune::half::from_f16(uint16_t(w));
    float x;
    std::memcpy(&x, &w, 4);
    return x;
  }
  uint32_t word(float x) const {
    if (dtype == DType::bf16) return ktune::half::to_bf16(x);
    if (dtype == DType::f16) return ktune::half::to_f16(x);
    uint32_t u;
    std::memcpy(&u, &x, 4);
    return u;
  }
};
Elem elem_of(DType t) {
  if (t == DType::bf16) return {t, 2, 0x7fcau, 0x7fcbu, 0x7fccu};
  if (t == DType::f16) return {t, 2, 0x7e0au, 0x7e0bu, 0x7e0cu};
  return {t, 4, 0x7fc0a0a0u, 0x7fc0b0b0u, 0x7fc0c0c0u};
}
// The workspace's poison: a NaN read as one float (split-K slices, split copies) or as two halves
// of either kind (packed copies of A and B).
constexpr uint32_t kPoisonWs = 0x7fce7fceu;

// Fills n elements of e's width at ptr with the word w.
void fill(CUdeviceptr ptr, const Elem& e, uint32_t w, size_t n, const char* what) {
  if (e.bytes == 2)
    check_cu(driver().cuMemsetD16Async(ptr, static_cast<unsigned short>(w), n, nullptr), "cuMemsetD16Async", what);
  else
    check_cu(driver().cuMemsetD32Async(ptr, w, n, nullptr), "cuMemsetD32Async", what);
}

size_t a_elems(const GemmProblem& p) {
  return size_t(std::max<int64_t>(1, p.a == Layout::row ? p.m : p.k)) * size_t(p.eff_lda());
}
size_t b_elems(const GemmProblem& p) {
  return size_t(std::max<int64_t>(1, p.b == Layout::row ? p.k : p.n)) * size_t(p.eff_ldb());
}
size_t c_elems(const GemmProblem& p) { return size_t(p.m) * size_t(p.eff_ldc()); }

// Kernel arguments as launch_gemm's callers build them, over the given pointers (of any dtype: the
// block spells them as floats).
KtuneGemmArgs args_for(const GemmProblem& p, const void* A, const void* B, void* C, void* ws, float alpha, float beta) {
  KtuneGemmArgs a{};
  a.A = static_cast<const float*>(A), a.B = static_cast<const float*>(B), a.C = static_cast<float*>(C);
  a.workspace = static_cast<float*>(ws);
  a.lda = p.eff_lda(), a.ldb = p.eff_ldb(), a.ldc = p.eff_ldc();
  a.ws_ld = gemm_workspace_ld(p.n);
  a.M = int(p.m), a.N = int(p.n), a.K = int(p.k);
  a.alpha = alpha, a.beta = beta;
  return a;
}

// The tensor map of C for a step that stores C by TMA (LaunchStep::tma_c), encoded as launch_gemm
// encodes it: C row-major, N contiguous, M rows of ldc, whatever the step's swap_ab.
KtuneTensorMap c_tensor_map(const KtuneGemmArgs& a, const LaunchStep::TmaOperand& o) {
  KtuneTensorMap map{};
  const cuuint64_t dims[2] = {cuuint64_t(a.N), cuuint64_t(a.M)};
  const cuuint64_t strides[1] = {cuuint64_t(a.ldc) * o.elem_bytes};
  const cuuint32_t box[2] = {o.box_inner, o.box_outer}, elem_strides[2] = {1, 1};
  check_cu(driver().cuTensorMapEncodeTiled(
               reinterpret_cast<CUtensorMap*>(&map),
               o.elem_bytes == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, a.C, dims, strides,
               box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
               o.swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B,
               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
           "cuTensorMapEncodeTiled", "tensor map of C");
  return map;
}

// The plan's steps launched with the arguments exactly as given, as launch_gemm would launch them
// (a swapped step gets B as its A, M and N swapped; a TMA step its argument block) but without its
// BLAS handling: what the kernels themselves do with K == 0 and alpha != 0. Only K == 0: a TMA
// step then loads nothing, and its maps of A and B stay unset, as launch_gemm leaves them.
void launch_raw(Module& m, const LaunchPlan& plan, const KtuneGemmArgs& a) {
  if (a.K != 0) throw std::logic_error("launch_raw encodes no tensor maps of A and B: K must be 0");
  KtuneGemmArgs swapped = a;
  std::swap(swapped.A, swapped.B), std::swap(swapped.lda, swapped.ldb), std::swap(swapped.M, swapped.N);
  for (const auto& s : plan.steps) {
    KtuneGemmArgs sa = s.swap_ab ? swapped : a;
    if (!s.tma()) {
      void* params[] = {&sa};
      m.launch(s, nullptr, params);
      continue;
    }
    KtuneGemmTmaArgs t{};
    t.g = sa;
    if (const auto* mc = s.tma_of(gemm_c)) t.c = c_tensor_map(a, *mc);
    void* params[] = {&t};
    m.launch(s, nullptr, params);
  }
}

void sync(const std::string& what) { check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", what); }

// What C must hold after a launch, in its M x N part (the padding must always be unchanged).
enum class Want { zeros, half_of_old, unchanged };

// Device buffers of one case: A and B filled with NaN, C, a device copy of C's initial values,
// the plan's workspace; and on the host C's initial values (words of C's dtype): finite (a few -0)
// in the M x N part, a NaN pattern in the padding.
struct Buffers {
  Elem e;
  DeviceBuffer a, b, c, c_old, ws;
  std::vector<uint32_t> old;

  Buffers(const GemmProblem& p, size_t workspace_bytes)
      : e(elem_of(p.dtype)),
        a(a_elems(p) * e.bytes, "A (NaN)"),
        b(b_elems(p) * e.bytes, "B (NaN)"),
        c(c_elems(p) * e.bytes, "C"),
        c_old(c_elems(p) * e.bytes, "initial C"),
        ws(workspace_bytes, "workspace"),
        old(c_elems(p)) {
    fill(a.ptr(), e, e.nan_a, a_elems(p), "A");
    fill(b.ptr(), e, e.nan_b, b_elems(p), "B");
    const size_t ldc = size_t(p.eff_ldc());
    for (size_t i = 0; i < old.size(); ++i) {
      const size_t col = i % ldc;
      // Multiples of 1/64 in [-16, 16) (1/8 in halves, exact in bf16 and f16): halving them is
      // exact, as is beta * c on the device.
      const uint32_t h = uint32_t(i) * 2654435761u;
      const float x = e.bytes == 2 ? (float((h >> 7) % 256) - 128) / 8 : (float((h >> 7) % 2048) - 1024) / 64;
      old[i] = col >= size_t(p.n) ? e.poison_c : e.word(i % 97 == 5 ? -0.0f : x);
    }
    upload(c_old.ptr(), old, "initial C");
    sync("filling A and B");
  }

  void upload(CUdeviceptr dst, const std::vector<uint32_t>& w, const char* what) const {
    if (e.bytes == 4) {
      check_cu(driver().cuMemcpyHtoD(dst, w.data(), w.size() * 4), "cuMemcpyHtoD", what);
      return;
    }
    const std::vector<uint16_t> h(w.begin(), w.end());
    check_cu(driver().cuMemcpyHtoD(dst, h.data(), h.size() * 2), "cuMemcpyHtoD", what);
  }
  std::vector<uint32_t> download(CUdeviceptr src, size_t n, const char* what) const {
    if (e.bytes == 4) {
      std::vector<uint32_t> w(n);
      check_cu(driver().cuMemcpyDtoH(w.data(), src, n * 4), "cuMemcpyDtoH", what);
      return w;
    }
    std::vector<uint16_t> h(n);
    check_cu(driver().cuMemcpyDtoH(h.data(), src, n * 2), "cuMemcpyDtoH", what);
    return std::vector<uint32_t>(h.begin(), h.end());
  }
};

// Runs one launch on freshly initialised C (the NaN pattern everywhere where beta == 0, else the
// initial values) and workspace (NaN), then checks C; "" when it is right, else what is wrong.
template <class Launch>
std::string run_and_check(const GemmProblem& p, Buffers& buf, bool beta_zero, Want want, const Launch& launch) {
  const Elem& e = buf.e;
  const size_t n = c_elems(p), ldc = size_t(p.eff_ldc());
  std::vector<uint32_t> init = buf.old;
  if (beta_zero) {
    std::fill(init.begin(), init.end(), e.poison_c);
    fill(buf.c.ptr(), e, e.poison_c, n, "poisoning C");
  } else {
    check_cu(driver().cuMemcpyDtoD(buf.c.ptr(), buf.c_old.ptr(), n * e.bytes), "cuMemcpyDtoD", "restoring C");
  }
  if (buf.ws.bytes())
    check_cu(driver().cuMemsetD32Async(buf.ws.ptr(), kPoisonWs, buf.ws.bytes() / 4, nullptr), "cuMemsetD32Async",
             "workspace");
  launch();
  sync("the launch under test");
  const std::vector<uint32_t> out = buf.download(buf.c.ptr(), n, "reading C");
  size_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < n; ++i) {
    const size_t row = i / ldc, col = i % ldc;
    bool ok;
    if (col >= size_t(p.n) || want == Want::unchanged)
      ok = out[i] == init[i];
    else if (want == Want::zeros)
      ok = e.value(out[i]) == 0.0f;
    else
      ok = e.value(out[i]) == 0.5f * e.value(init[i]);
    if (!ok && bad++ == 0)
      first << "C(" << row << ", " << col << ") = " << e.value(out[i]) << " (bits 0x" << std::hex << out[i] << std::dec
            << "), initially " << e.value(init[i]) << (col >= size_t(p.n) ? " (padding)" : "");
  }
  if (!bad) return "";
  return std::to_string(bad) + " wrong elements of C, first " + first.str();
}

// The sample for the device, compiled once for all tests of the suite.
struct Compiled {
  Case c;
  std::shared_ptr<const CompiledKernel> k; // null: it did not compile (error says why)
  std::string error;
};

class BlasSemanticsGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    dev_ = ktune::testing::first_gpu(&why);
    if (!dev_) GTEST_SKIP() << "no GPU: " << why;
    ctx_ = std::make_unique<CudaContext>(dev_->ordinal);
  }
  static void TearDownTestSuite() {
    compiled_.reset();
    compiler_.reset();
  }

  const std::vector<Compiled>& compiled() {
    if (!compiled_) {
      compiler_ = std::make_unique<Compiler>();
      const auto cases = sample_cases(*dev_);
      expect_coverage(cases, *dev_);
      std::map<std::string, std::shared_future<std::shared_ptr<const CompiledKernel>>> by_key;
      std::vector<std::shared_future<std::shared_ptr<const CompiledKernel>>> futs;
      for (const Case& c : cases) {
        const CompileRequest req = compile_request(find_family(c.family), c.config, c.p, dev_->arch);
        auto it = by_key.find(req.cache_key()); // a config drawn at two shapes in one layout compiles once
        if (it == by_key.end()) it = by_key.emplace(req.cache_key(), compiler_->compile_async(req).share()).first;
        futs.push_back(it->second);
      }
      compiled_ = std::make_unique<std::vector<Compiled>>();
      for (size_t i = 0; i < cases.size(); ++i) {
        Compiled x{cases[i], nullptr, ""};
        try {
          x.k = futs[i].get();
        } catch (const std::exception& e) {
          x.error = e.what();
        }
        compiled_->push_back(std::move(x));
      }
      std::cout << "[ ktune    ] " << cases.size() << " (config, shape) cases, " << by_key.size() << " cubins\n";
    }
    return *compiled_;
  }

  // Runs check(case, module, plan, buffers) -> failures for every case of the sample; a sticky
  // CUDA error ends the test (it leaves the context unusable). Returns the cases run per family
  // and per "family dtype".
  template <class Check>
  std::map<std::string, int> for_each_case(const Check& check) {
    std::map<std::string, int> ran;
    for (const Compiled& x : compiled()) {
      if (!x.k) {
        ADD_FAILURE() << x.c.describe() << " does not compile: " << x.error;
        continue;
      }
      const Family f = find_family(x.c.family);
      try {
        Module m(x.k->cubin, x.k->lowered_names, x.c.describe());
        const LaunchPlan plan = f.launch_plan(x.c.config, x.c.p);
        Buffers buf(x.c.p, plan.workspace_bytes);
        for (const std::string& failure : check(x.c, m, plan, buf)) ADD_FAILURE() << x.c.describe() << ": " << failure;
        ++ran[x.c.family];
        ++ran[x.c.family + " " + to_string(x.c.p.dtype)];
      } catch (const CudaError& e) {
        ADD_FAILURE() << x.c.describe() << ": " << e.what();
        if (e.is_sticky()) return ran; // the context is unusable from here on
      } catch (const std::exception& e) {
        ADD_FAILURE() << x.c.describe() << ": " << e.what();
      }
    }
    return ran;
  }

  // Every family the device can run ran cases in each of its dtypes.
  void expect_every_family(const std::map<std::string, int>& ran) {
    for (const auto& fd : draws()) {
      const Family f = find_family(fd.family);
      if (!serves(f, *dev_)) continue;
      for (DType t : f.dtypes()) {
        const auto it = ran.find(std::string(fd.family) + " " + to_string(t));
        EXPECT_TRUE(it != ran.end() && it->second > 0) << fd.family << " ran no case in " << to_string(t);
      }
    }
  }

  const DeviceInfo* dev_ = nullptr;
  std::unique_ptr<CudaContext> ctx_;
  static std::unique_ptr<Compiler> compiler_;
  static std::unique_ptr<std::vector<Compiled>> compiled_;
};

std::unique_ptr<Compiler> BlasSemanticsGpu::compiler_;
std::unique_ptr<std::vector<Compiled>> BlasSemanticsGpu::compiled_;

} // namespace

// alpha == 0 through launch_gemm with A and B full of NaN, then null: C = 0 (C held NaN and must
// not have been read), C = 0.5 * C exactly, and with beta == 1 C untouched bit for bit.
TEST_F(BlasSemanticsGpu, AlphaZeroGivesBetaTimesCWithoutReadingAOrB) {
  const auto ran = for_each_case([](const Case& c, Module& m, const LaunchPlan& plan, Buffers& buf) {
    const GemmProblem& p = c.p;
    const void* nan_a = buf.a.as<const void>();
    const void* nan_b = buf.b.as<const void>();
    void* C = buf.c.as<void>();
    void* ws = buf.ws.as<void>();
    struct Run {
      const char* what;
      const void *A, *B;
      float beta;
      Want want;
    };
    const Run runs[] = {{"alpha = 0, beta = 0, A and B NaN", nan_a, nan_b, 0.0f, Want::zeros},
                        {"alpha = 0, beta = 0, A and B null", nullptr, nullptr, 0.0f, Want::zeros},
                        {"alpha = 0, beta = 0.5, A and B NaN", nan_a, nan_b, 0.5f, Want::half_of_old},
                        {"alpha = 0, beta = 0.5, A and B null", nullptr, nullptr, 0.5f, Want::half_of_old},
                        {"alpha = 0, beta = 1, A and B NaN", nan_a, nan_b, 1.0f, Want::unchanged}};
    std::vector<std::string> failures;
    for (const Run& r : runs) {
      const KtuneGemmArgs a = args_for(p, r.A, r.B, C, ws, 0.0f, r.beta);
      const std::string e = run_and_check(p, buf, r.beta == 0.0f, r.want, [&] { launch_gemm(m, plan, a, nullptr); });
      if (!e.empty()) failures.push_back(std::string(r.what) + ": " + e);
    }
    return failures;
  });
  expect_every_family(ran);
}

// K == 0 with the plan of the full problem: through launch_gemm (alpha = 1, and an infinite
// alpha, which BLAS never multiplies when K == 0), and launched step by step with the arguments
// as given, alpha = 1, so that each kernel's own K == 0 path (prologues, split-K slices and their
// reduce, packing, stage rings, clusters, TMA producers, stream-K's parts, swapped and TMA-stored
// epilogues) is what is checked.
TEST_F(BlasSemanticsGpu, KZeroGivesBetaTimesCOnEveryKernelPath) {
  const auto ran = for_each_case([](const Case& c, Module& m, const LaunchPlan& plan, Buffers& buf) {
    const GemmProblem& p = c.p;
    const void* nan_a = buf.a.as<const void>();
    const void* nan_b = buf.b.as<const void>();
    void* C = buf.c.as<void>();
    void* ws = buf.ws.as<void>();
    const float inf = std::numeric_limits<float>::infinity();
    struct Run {
      const char* what;
      bool raw;
      const void *A, *B;
      float alpha, beta;
      Want want;
    };
    const Run runs[] = {
        {"launch_gemm, K = 0, alpha = 1, beta = 0, A and B NaN", false, nan_a, nan_b, 1.0f, 0.0f, Want::zeros},
        {"launch_gemm, K = 0, alpha = inf, beta = 0.5, A and B null", false, nullptr, nullptr, inf, 0.5f,
         Want::half_of_old},
        {"kernels, K = 0, alpha = 1, beta = 0, A and B null", true, nullptr, nullptr, 1.0f, 0.0f, Want::zeros},
        {"kernels, K = 0, alpha = 1, beta = 0, A and B NaN", true, nan_a, nan_b, 1.0f, 0.0f, Want::zeros},
        {"kernels, K = 0, alpha = 1, beta = 0.5, A and B NaN", true, nan_a, nan_b, 1.0f, 0.5f, Want::half_of_old}};
    std::vector<std::string> failures;
    for (const Run& r : runs) {
      KtuneGemmArgs a = args_for(p, r.A, r.B, C, ws, r.alpha, r.beta);
      a.K = 0;
      const std::string e = run_and_check(p, buf, r.beta == 0.0f, r.want, [&] {
        if (r.raw)
          launch_raw(m, plan, a);
        else
          launch_gemm(m, plan, a, nullptr);
      });
      if (!e.empty()) failures.push_back(std::string(r.what) + ": " + e);
    }
    return failures;
  });
  expect_every_family(ran);
}

// M == 0 or N == 0 launches nothing: C, a sentinel of the full problem's size, stays as it was
// bit for bit, and no workspace is asked for. A plan whose only step names a kernel the module
// does not have shows that no launch was even attempted (Module::function would throw).
TEST_F(BlasSemanticsGpu, EmptyCLaunchesNothing) {
  const auto ran = for_each_case([](const Case& c, Module& m, const LaunchPlan& plan, Buffers& buf) {
    const GemmProblem& p = c.p;
    std::vector<std::string> failures;
    const int sizes[][2] = {{0, int(p.n)}, {int(p.m), 0}, {0, 0}};
    for (const auto& mn : sizes) {
      KtuneGemmArgs a = args_for(p, buf.a.as<const void>(), buf.b.as<const void>(), buf.c.as<void>(), nullptr, 1.0f, 0.5f);
      a.M = mn[0], a.N = mn[1];
      const std::string e = run_and_check(p, buf, true, Want::unchanged, [&] { launch_gemm(m, plan, a, nullptr); });
      if (!e.empty()) failures.push_back("M = " + std::to_string(a.M) + ", N = " + std::to_string(a.N) + ": " + e);
    }
    return failures;
  });
  expect_every_family(ran);

  // The quick returns never reach a launch; the same plan with a real product does.
  const Compiled& x = compiled().front();
  ASSERT_TRUE(x.k) << x.error;
  Module m(x.k->cubin, x.k->lowered_names, x.c.describe());
  LaunchPlan bogus;
  bogus.steps.resize(1);
  bogus.steps[0].kernel = 1000;
  KtuneGemmArgs a = args_for(x.c.p, nullptr, nullptr, nullptr, nullptr, 1.0f, 0.0f);
  KtuneGemmArgs empty_m = a, empty_n = a, scale_by_one = a, negative = a;
  empty_m.M = 0, empty_n.N = 0;
  scale_by_one.alpha = 0.0f, scale_by_one.beta = 1.0f;
  negative.K = -1;
  EXPECT_NO_THROW(launch_gemm(m, bogus, empty_m, nullptr));
  EXPECT_NO_THROW(launch_gemm(m, bogus, empty_n, nullptr));
  EXPECT_NO_THROW(launch_gemm(m, bogus, scale_by_one, nullptr));
  EXPECT_THROW(launch_gemm(m, bogus, a, nullptr), std::out_of_range);
  EXPECT_THROW(launch_gemm(m, bogus, negative, nullptr), Error);
}

// NVRTC needs no GPU: the sample the GPU tests draw on an H100 (sm_90 limits) compiles, and it
// covers the kernel paths it is drawn for, in every family and dtype (gemm_wgmma and
// gemm_wgmma_tf32x3 for sm_90a).
TEST(BlasSemantics, SampledConfigsCompileForSm90) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  const auto cases = sample_cases(d);
  expect_coverage(cases, d);
  Compiler compiler;
  std::map<std::string, std::shared_future<std::shared_ptr<const CompiledKernel>>> by_key;
  std::vector<std::string> keys;
  for (const Case& c : cases) {
    const CompileRequest req = compile_request(find_family(c.family), c.config, c.p, d.arch);
    if (!by_key.count(req.cache_key())) by_key.emplace(req.cache_key(), compiler.compile_async(req).share());
    keys.push_back(req.cache_key());
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    try {
      const auto k = by_key.at(keys[i]).get();
      EXPECT_GT(k->cubin.size(), 0u);
      EXPECT_EQ(k->lowered_names.size(), find_family(cases[i].family).kernel_names(cases[i].config, cases[i].p).size());
    } catch (const std::exception& e) {
      ADD_FAILURE() << cases[i].describe() << ": " << e.what();
    }
  }
  std::cout << "[ ktune    ] " << cases.size() << " (config, shape) cases, " << by_key.size() << " cubins compiled\n";
}
