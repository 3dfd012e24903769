// The neighbours gemm_wgmma offers for a config lent to a shape it was not tuned for
// (Family::neighbors_of): its tiling refitted to the shape's waves, each orientation, the swapped
// tiling that pads C least, TMA multicast of the larger operand, stream-K of the last wave, and a
// persistent grid that covers the SMs. The runtime times them at first use beside the lenders
// (runtime/selection.cpp, kMaxNeighbours). The config's geometry comes from gemm_wgmma.cpp
// (gemm_wgmma_rules.hpp).
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "gemm/gemm_families.h"
#include "gemm/gemm_wgmma_rules.hpp"

namespace ktune::wgmma {
namespace {

// A tiling the neighbours' wave rule chooses among: BM x BN on WG consumer warpgroups, SWAP 1 for
// the kernel of C^T (its rows along N, its columns along M).
struct Tiling {
  int bm, bn, wg, swap;
};
// The tiles a tiling cuts p's C into (its orientation's M and N).
int64_t tile_count(const Tiling& t, const GemmProblem& p) {
  return int64_t(ceil_div(kernel_m(t.swap, p), t.bm)) * int64_t(ceil_div(kernel_n(t.swap, p), t.bn));
}
// The share of the tile slots of its waves (tiles / SMs, rounded up) that a tiling of M x N fills
// with C (1 when the tiles divide M and N and fill the last wave), by the tiling's own speed:
// - tiles under 128 x 256 load A and B for fewer FLOPs: (area / 32768)^0.105 (128 x 128 ran at
//   0.93x the larger ones where both filled their waves alike: 2048x4096x4096, 668 against 720);
// - a wgmma N under 128 costs more a FLOP: (N / 128)^0.16 (swapped 256 x 96 ran at 0.954x 192 x 128,
//   same area and fill, at 1024x3072x768).
// At the 11 shapes of configs/suites/mid.json (tunes: docs/runs/2026-11-25-h100-s17-mid192- and
// -midswap2-trials.jsonl.gz) the unswapped tiling this scores best was the fastest of the six at 9
// and within 5 % at the other 2; the swapped one, at the 9 where the tune measured it, the fastest
// swapped tiling at 4 and within 5.5 % at the other 5.
double wave_fill(const Tiling& t, const GemmProblem& p, int sms) {
  const int64_t waves = ceil_div(tile_count(t, p), int64_t(sms));
  const double speed = std::pow(std::min(1.0, t.bm * t.bn / (128.0 * 256.0)), 0.105) * std::pow(std::min(1.0, t.bn / 128.0), 0.16);
  return waves == 0 ? 0.0 : speed * double(p.m) * double(p.n) / (double(waves) * sms * t.bm * t.bn);
}
// The tilings of one orientation: unswapped, 128, 192 and 256 tiles (whole 64-column blocks, what
// every layout's B allows); swapped, 128 rows (of N) by any multiple of 16 columns (of M) where A is
// row-major (the kernel's B K-major; else multiples of 64), 192 rows on three consumer warpgroups by
// at most 192, 256 rows by at most 128 (the accumulator limits).
std::vector<Tiling> tilings(bool swap, const GemmProblem& p) {
  if (!swap) return {{128, 128, 2, 0}, {128, 192, 2, 0}, {192, 128, 3, 0}, {128, 256, 2, 0}, {256, 128, 2, 0}, {192, 192, 3, 0}};
  std::vector<Tiling> out;
  const int step = p.a == Layout::row ? 16 : 64;
  for (int bn = 64; bn <= 256; bn += step) {
    out.push_back({128, bn, 2, 1});
    if (bn <= 192) out.push_back({192, bn, 3, 1});
    if (bn <= 128) out.push_back({256, bn, 2, 1});
  }
  return out;
}
// c retiled to t: a ring of c's depth but at least 4 stages, less where shared memory does not hold
// it; unswapped, EPI 2 needs BN 128 or 256 (EPI 1 instead); swapped, C staged transposed (EPI 1)
// where 4 stages fit beside the staging, else stored plainly (EPI 0), whole tiles, unpacked.
Config retiled(const Config& c, const Tiling& best, const DeviceInfo& d) {
  Config t = c;
  t.set("BM", best.bm), t.set("BN", best.bn), t.set("WG", best.wg), t.set("SWAP", best.swap);
  // A lender's PT 4 was chosen for its own tile count; here it has another. In the mid-shape tunes
  // (competitive tilings, past a wave) PT 4 ran a geometric mean 0.81x PT 1, PT 2 1.00x.
  if (t["PT"] > 2) t.set("PT", 2);
  // Ping-pong consumers hold a whole tile each: where the new tile is too large for one consumer's
  // accumulators (a 128 x 128 PP lender retiled to 128 x 144), they share it as plain consumers.
  if (best.wg != 2 || accumulators(t) > 128) t.set("PP", 0);
  if (best.swap) t.set("EPI", 1), t.set("SPLITK", 1), t.set("PACK", 0);
  else if (t["EPI"] == 2 && best.bn % 128 != 0) t.set("EPI", 1);
  int st = std::max(c["ST"], 4);
  auto fits = [&] { return smem_bytes(t) + static_smem_bytes(t) <= size_t(d.max_smem_per_block_optin); };
  // Swapped, where C's staging leaves room for only 3 stages (256 x 112 and up), plain stores with 4:
  // the form that ran 777x3584x18944 fastest (256 x 112, ST 4, EPI 0; -swapnarrow-trials).
  if (best.swap && (t.set("ST", 4), !fits())) t.set("EPI", 0);
  for (t.set("ST", st); st > 3 && !fits();) t.set("ST", --st);
  return t;
}
bool same_tiling(const Config& c, const Tiling& t) { return t.bm == c["BM"] && t.bn == c["BN"] && t.swap == c["SWAP"]; }
int sm_count(const DeviceInfo& d) { return d.sm_count > 0 ? d.sm_count : 132; }
// The tiling of one orientation that fills p's waves best (ties, within 1 %, to the larger tile:
// fewer loads of A and B a FLOP).
Tiling best_filling(const GemmProblem& p, const DeviceInfo& d, bool swap) {
  std::optional<Tiling> best;
  double best_fill = 0;
  for (const Tiling& t : tilings(swap, p)) {
    const double fill = wave_fill(t, p, sm_count(d));
    if (!best || fill > best_fill * 1.01 || (fill > best_fill * 0.99 && t.bm * t.bn > best->bm * best->bn)) best = t, best_fill = fill;
  }
  return *best;
}
// c in the tiling of one orientation that fills p's waves best (retiled). Nothing when that is c's
// own tiling. (At least 4 stages: in the H100 mid-shape tunes, of configs that differed only
// in ST, 4 stages ran a median 1.038x 3 (1088 pairs, 85 % faster) and 5 a median 0.999x 4; the
// shipped 128 x 256 lenders have 3, which the larger tile needed. Read from the trials,
// -mid192- and -midswap2-trials.jsonl.gz.)
std::optional<Config> best_filling_tiling(const Config& c, const GemmProblem& p, const DeviceInfo& d, bool swap) {
  const Tiling best = best_filling(p, d, swap);
  if (same_tiling(c, best)) return std::nullopt;
  return retiled(c, best, d);
}
// The share of its tiles' area that holds C (no wave rounding).
double useful(const Tiling& t, const GemmProblem& p) {
  return double(p.m) * double(p.n) / (double(tile_count(t, p)) * t.bm * t.bn);
}
// Under one wave (the wave-filling swapped pick has no more tiles than SMs), the swapped tiling
// whose tiles pad C least (ties, within 1 %, to the larger tile, then the fuller waves), also under
// a wave and padding 5 % less than that pick. At 777x3584x18944 the wave rule takes 256 x 96 (126
// tiles, 864 rows for 777); 256 x 112 (98 tiles, 784 rows) ran 173 us against 197, which the wave
// score (idle SMs against padding) does not predict, so it is offered for first use to time
// (cuBLAS: 256 x 88, 792 rows; docs/runs/2026-11-26-h100-s18-swapnarrow-trials.jsonl.gz). Nothing
// when c already has it. Under a wave there are no stream-K neighbours, so this one takes no
// other's place among the runtime's candidates.
std::optional<Config> least_padding_swapped(const Config& c, const GemmProblem& p, const DeviceInfo& d) {
  const Tiling fill = best_filling(p, d, true);
  if (tile_count(fill, p) > sm_count(d)) return std::nullopt;
  std::optional<Tiling> best;
  for (const Tiling& t : tilings(true, p)) {
    if (tile_count(t, p) > sm_count(d)) continue;
    if (!best) {
      best = t;
      continue;
    }
    const double u = useful(t, p), b = useful(*best, p);
    if (u > b * 1.01 || (u > b * 0.99 && (t.bm * t.bn > best->bm * best->bn ||
                                          (t.bm * t.bn == best->bm * best->bn && wave_fill(t, p, sm_count(d)) > wave_fill(*best, p, sm_count(d))))))
      best = t;
  }
  if (!best || useful(*best, p) < useful(fill, p) * 1.05 || same_tiling(c, *best)) return std::nullopt;
  return retiled(c, *best, d);
}

// The multicast that shares t's larger operand tile: B's (MC 1) where BN > BM, A's (MC 2) where
// BM > BN, B's for square tiles. Over the bf16 H100 tune trials in docs/runs of 2026-11-24 to -26
// (configs equal but for MC), MC 1 ran a geometric mean 0.94x MC 2's time where BN > BM (1097 pairs, 74 % faster),
// and MC 2 0.94-0.97x MC 1's where BM > BN (1489 pairs, 74 % faster); square tiles about even
// off PT 1 (0.998x).
int larger_operand_multicast(const Config& t) { return t["BM"] > t["BN"] ? 2 : 1; }
// t on the persistent grid (PT 0) with multicast of its larger operand in 2-CTA clusters: no
// stream-K and no ping-pong consumers, which MC excludes.
Config persistent_multicast(Config t) {
  t.set("PT", 0), t.set("MC", larger_operand_multicast(t)), t.set("SK", 0), t.set("PP", 0);
  return t;
}

// PT > 1 runs PT tiles a block in turn, which pays where the tiles are many (the next tile's loads
// overlap this one's stores); lent where they are few it leaves SMs idle: the shipped 128 x 256
// config of 2048x4096x11008 (PT 2) runs 777x3584x18944's 98 tiles on 49 blocks. t with the largest
// PT of 4, 2, 1 (at most its own) whose grid has blocks for at least 3/4 of the SMs: a near-full
// grid keeps its PT (1000x4672x4544's 259 swapped tiles on 130 blocks with PT 2 ran 1.09x the same
// on 259 blocks with PT 1; docs/runs/2026-11-26-h100-s18-coverpt-*).
Config covering_pt(Config t, const GemmProblem& p, const DeviceInfo& d) {
  const int pt = t["PT"];
  if (pt <= 1) return t;
  for (int q : {4, 2, 1}) {
    if (q > pt) continue;
    t.set("PT", q);
    if (q == 1 || 4 * grid_x(t, p) >= 3 * int64_t(sm_count(d))) break;
  }
  return t;
}

} // namespace

// Neighbours of a config lent to p: first its tiling changed to the one that fills p's waves best
// (best_filling_tiling), as it is and on the persistent grid with multicast of its larger operand
// (larger_operand_multicast); tables tuned on
// the public shapes hold 128 and 256 tiles, and at the mid-size shapes of configs/suites/mid.json
// a 192 tiling ran 1.1-1.4x the best of those (512x4608x3584: 128 x 192, 533 against 416
// TFLOPS). Then the best swapped tiling (SWAP: tile columns of any multiple of 16 along M) with C
// staged transposed (1000x4672x4544: 128 x 144 swapped, 698 TFLOPS, against 582 for the best
// unswapped tiling; -midswap2-trials). Then TMA multicast either way (5000x3000x1000, K = 1000: the default tune's winner was
// a lent tiling with MC 2, 62.6 us against 84.0 for the best form without it), and the persistent
// grid with stream-K of the last wave (SK 2, 3) or with the larger operand's MC (3072^3 and 2500x8192x1536 took PT 0
// with SK 3 / SK 2; docs/runs/2026-11-25-h100-s13-unseen-shapes.txt); no stream-K where the tiles
// do not make one wave. Each with a PT whose grid covers most SMs (covering_pt), first of all the
// lender itself where its PT leaves many idle.
std::vector<Config> neighbours(const Config& c, const GemmProblem& p, const DeviceInfo& d) {
  std::vector<Config> out;
  // Each orientation's wave-filling tiling, as lent and persistent with multicast (PT 0) of the
  // larger operand (larger_operand_multicast). Swapped, the PT 0 MC 1 form ran a geometric mean
  // 1.07x PT 1 MC 0 past a wave over the mid-shape tunes'
  // swapped tilings within 15 % of their shape's best (29 faster, 5 slower; 2048x2560x2048's 128 x
  // 160: 34.1 against 42.7 us); under a wave 0.975x, but up to 1.37x where K is long
  // (3072x768x3072's 128 x 144: 26.4 against 33-35 us), and first use times it.
  for (bool swap : {false, true})
    if (const auto t = best_filling_tiling(c, p, d, swap)) {
      out.push_back(*t);
      if (const Config pm = persistent_multicast(*t); pm != *t) out.push_back(pm);
    }
  if (const auto t = least_padding_swapped(c, p, d)) out.push_back(*t);
  // Fewer tiles than SMs: SK 2 and 3 cut nothing there (one part a tile: PT 0's schedule), and
  // SK 1, which cuts every tile's K, ran 1.3-1.9x slower than the uncut grid at the three such
  // shapes measured (its blocks work at different K offsets, so L2 serves no A or B slab twice;
  // docs/runs/2026-11-26-h100-s18-ksplit-trials.jsonl): no stream-K neighbour then.
  Config whole = c;
  whole.set("MC", 0);
  const bool under_a_wave = units(whole, p) < sm_count(d);
  std::vector<Family::Setting> v = {{{"MC", 1}}, {{"MC", 2}}};
  if (!under_a_wave) v.insert(v.end(), {{{"PT", 0}, {"SK", 2}, {"MC", 0}}, {{"PT", 0}, {"SK", 3}, {"MC", 0}}});
  std::vector<Config> forms = Family::variants(c, v);
  forms.push_back(persistent_multicast(c));
  for (Config& n : forms) {
    n.set("PP", 0); // MC and SK exclude ping-pong consumers: a PP lender's forms drop them
    if (n != c && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(std::move(n));
  }
  // Every one with a grid that covers most SMs (covering_pt), the lender's own form so first.
  std::vector<Config> covered;
  if (const Config cc = covering_pt(c, p, d); cc != c) covered.push_back(cc);
  for (const Config& n : out)
    if (const Config cn = covering_pt(n, p, d); cn != c && std::find(covered.begin(), covered.end(), cn) == covered.end())
      covered.push_back(cn);
  return covered;
}

} // namespace ktune::wgmma
