// Descriptor of gemm_skinny16.cu: the half-precision (bf16 / fp16) decode family for few rows of C
// (M <= 64): streams B once with vector loads through a register ring (DEPTH - 1 steps in flight
// per lane, no barrier in the K loop), A's fragments loaded from global memory beside B's, sums on
// the tensor cores (mma.sync m16n8k16 on the transposed product), K split inside a block (warp
// groups, shared memory), across the blocks of a thread block cluster (sm_90, distributed shared
// memory) and, where more slices are needed, through the FP32 workspace and gemm_splitk_reduce16.
// The bandwidth model it is designed for is in the .cu's header; defaults() evaluates it.
#include <algorithm>
#include <cmath>
#include <optional>

#include "gemm/gemm_args.h"
#include "gemm/gemm_families.h"
#include "ktune/gemm_problem.h"

namespace ktune {
namespace {

// The row count the family is for: beyond it B is re-read once per MT rows (or the accumulators
// outgrow the registers) and a tiled family is the better home.
constexpr int64_t kMaxRows = 64;

bool b_col(const GemmProblem& p) { return p.b == Layout::col; }
bool is_half(const GemmProblem& p) { return p.dtype == DType::bf16 || p.dtype == DType::f16; }

// Mirrors the template: a warp covers 64 columns x 16 k (B row-major) or 32 columns x 32 k (B
// column-major) a step; NT / 32 warps are WN along N times KG along K.
int warp_cols(bool bcol) { return bcol ? 32 : 64; }
int step_k(bool bcol) { return bcol ? 32 : 16; }
int warps_n(const Config& c) { return c["NT"] / 32 / c["KG"]; }
int columns_per_block(const Config& c, const GemmProblem& p) { return warps_n(c) * warp_cols(b_col(p)); }
int slices(const Config& c) { return c["CL"] * c["SPLITK"]; }

// The widest load of B the alignment class and ldb allow (the only VEC the space offers).
int widest_vec(const GemmProblem& p) {
  for (int v : {8, 4, 2})
    if (v * 2 <= p.align && p.eff_ldb() % v == 0) return v;
  return 1;
}

// A's fragments come as one 8-byte (B row-major) or 16-byte (B column-major) load when A is
// row-major and the alignment class (pointers and every leading dimension) allows it: the
// template's AV, derived from the problem like the layouts.
int a_vec(const GemmProblem& p) { return p.a == Layout::row && p.align >= (b_col(p) ? 16 : 8) ? 1 : 0; }

// Shared memory: every warp group's FP32 sums after the K loop (KG x MT x block columns); the K
// loop itself uses none.
size_t smem_bytes(const Config& c, const GemmProblem& p) {
  return size_t(c["KG"]) * c["MT"] * columns_per_block(c, p) * 4;
}

// Registers a thread: accumulators (MT / 8 n8 tiles x 4 (row-major B) or 2 m16 tiles x 4
// floats), the ring (DEPTH slots of B, 16 words, 32 for single-half loads, and A's fragment words
// per n8 tile: 2 or 4, twice that when A's halves come one by one), and addresses, bounds and the
// loop: 44 + 4 a tile (+ 2 a tile from 4 tiles), 32 more with column-major B. Calibrated against
// ptxas -v for sm_90 (CUDA 13.0; estimate / used): 8-row NN ring 4 136 / 132, NT 168 / 160;
// 16-row NN ring 4 164 / 156, ring 6 204 / 199; 32-row NN ring 4 228 / 224; single-half loads
// with element-wise A (8 rows, ring 4) 208 / 209.
int register_estimate(int mt, int vec, int depth, bool bcol, int av) {
  const int mtiles = mt / 8;
  const int acc = mtiles * (bcol ? 2 : 4) * 4;
  const int a_words = (bcol ? 4 : 2) * (av ? 1 : 2);
  return acc + depth * ((vec == 1 ? 32 : 16) + mtiles * a_words) + 44 + 4 * mtiles + (mtiles >= 4 ? 2 * mtiles : 0) + (bcol ? 32 : 0);
}
int register_estimate(const Config& c, const GemmProblem& p) {
  return register_estimate(c["MT"], c["VEC"], c["DEPTH"], b_col(p), a_vec(p));
}
// The register cap __launch_bounds__(NT, MINB) sets.
int register_cap(int nt, int minb) { return std::min(255, 65536 / (nt * std::max(1, minb)) / 8 * 8); }

// The most the space lets the estimate reach: MINB's cap, and with MINB = 1 ptxas's 255 (or
// 64K / NT) with a little slack (a few spills at worst: the only configs for M > 32 with
// column-major B and single-half loads).
int register_limit(int nt, int minb) { return minb > 1 ? register_cap(nt, minb) : std::min(65536 / nt, 272); }

// Blocks an SM holds: registers (the estimate plus 16 of slack, in 8-register steps; MINB
// holds ptxas to its cap), threads, shared memory (per SM: the per-block opt-in limit + 1 KB).
int blocks_per_sm(const Config& c, const GemmProblem& p, const DeviceInfo& d) {
  const int nt = c["NT"];
  int regs = (register_estimate(c, p) + 16 + 7) / 8 * 8;
  if (c["MINB"] > 1) regs = std::min(regs, register_cap(nt, c["MINB"]));
  int b = std::min({65536 / (nt * regs), 2048 / nt, 32});
  const size_t smem = smem_bytes(c, p);
  if (smem > 0) b = std::min<int>(b, int((size_t(d.max_smem_per_block_optin) + 1024) / (smem + 1024)));
  return std::max(b, 0);
}

// Clusters of cl blocks need their blocks on one GPC at once: GPCs of uneven SM counts leave
// slots unused (on the H100, 32 clusters of 8 at 2 blocks per SM fit only 30, not 33). A
// conservative share of the slots.
double cluster_fill(int cl) { return cl <= 1 ? 1.0 : cl == 2 ? 0.94 : cl == 4 ? 0.87 : 0.76; }

// Blocks resident at once for this config's grid shape (one wave).
int64_t resident_blocks(const Config& c, const GemmProblem& p, const DeviceInfo& d) {
  const int64_t slots = int64_t(blocks_per_sm(c, p, d)) * std::max(1, d.sm_count);
  const int cl = c["CL"];
  if (cl <= 1) return slots;
  return int64_t(std::floor(double(slots) / cl * cluster_fill(cl))) * cl;
}

int64_t grid_blocks(const Config& c, const GemmProblem& p) {
  return int64_t(ceil_div(std::max<int64_t>(p.n, 1), columns_per_block(c, p))) * ceil_div(std::max<int64_t>(p.m, 1), c["MT"]) *
         slices(c);
}

size_t workspace_bytes(const Config& c, const GemmProblem& p) { return gemm_splitk_workspace_bytes(c["SPLITK"], p); }

// The K slice of one block, as the kernel computes it (a multiple of 32).
int64_t k_slice(const Config& c, const GemmProblem& p) { return ((p.k + slices(c) - 1) / slices(c) + 31) / 32 * 32; }
// Steps of the busiest warp: the slice's warp steps over the KG groups.
int64_t warp_steps(const Config& c, const GemmProblem& p) {
  const int64_t steps = (std::min(k_slice(c, p), p.k) + step_k(b_col(p)) - 1) / step_k(b_col(p));
  return (steps + c["KG"] - 1) / c["KG"];
}

int rows_tile(int64_t m) { return m <= 8 ? 8 : m <= 16 ? 16 : 32; } // M = 33..64: two tiles of 32

// The bandwidth model of gemm_skinny16.cu's header, in microseconds: B streams at up to BW when
// the loads in flight cover BW x latency; a wave that holds fewer runs at the rate its loads in
// flight allow (Little's law). Each wave pays one latency to ramp up. Split-K adds the workspace
// round trip and a second (overlapped) launch; a cluster adds its barrier and DSMEM reads. An SM
// keeps at most ~40 KB in flight and streams at most ~40 GB/s (assumed: a grid on half the SMs
// cannot reach DRAM speed), and with one block per SM nothing hides a block's ramp and epilogue.
double model_us(const Config& c, const GemmProblem& p, const DeviceInfo& d) {
  constexpr double kBw = 3.0e6;        // bytes per microsecond (3 TB/s)
  constexpr double kLatency = 1.0;     // loaded DRAM latency, us (the ramp of a wave)
  constexpr double kSaturate = 1.5;    // in flight needed: BW x 1.5 us (margin over the latency)
  constexpr double kSmInflight = 40e3; // bytes one SM keeps in flight at most (assumed)
  constexpr double kSmBw = 40e3;       // bytes per microsecond one SM streams at most (assumed)
  const int sms = std::max(1, d.sm_count);
  const int64_t tiles = ceil_div(std::max<int64_t>(p.m, 1), c["MT"]);
  const double bytes_b = 2.0 * double(p.k) * double(p.n) * double(tiles);
  const int64_t grid = grid_blocks(c, p);
  const int64_t resident = std::max<int64_t>(1, resident_blocks(c, p, d));
  const double per_block = bytes_b / double(grid);
  const double depth_eff = double(std::max<int64_t>(1, std::min<int64_t>(c["DEPTH"] - 1, warp_steps(c, p))));
  const double inflight_block = double(c["NT"]) * depth_eff * 64.0;
  double t = 0;
  for (int64_t left = grid; left > 0;) {
    const int64_t n = std::min(left, resident);
    const int64_t active = std::min<int64_t>(n, sms);
    const double per_sm = std::min(kSmInflight, double(n) / double(active) * inflight_block);
    const double rate = std::min({kBw, double(active) * per_sm / kSaturate, double(active) * kSmBw});
    t += kLatency + double(n) * per_block / rate;
    // One block per SM: nothing streams while a block ramps up or adds its sums at the end.
    if (n < int64_t(1.5 * double(active))) t += 0.3;
    left -= n;
  }
  // The tensor cores: m16n8k16 MMAs at ~4 SM cycles each (mma.sync, ~1.6 GHz).
  const double mmas = double(ceil_div(std::max<int64_t>(p.n, 1), 16)) * double((p.k + 15) / 16) * double(tiles) * (c["MT"] / 8);
  t = std::max(t, kLatency + mmas * 4.0 / (double(sms) * 1.6e3));
  if (c["SPLITK"] > 1) t += 2.0 + 2.0 * double(c["SPLITK"]) * double(p.m) * double(gemm_workspace_ld(p.n)) * 4.0 / kBw;
  if (c["CL"] > 1) t += 0.1 * std::log2(double(c["CL"])) + 0.1;
  return t;
}

// The K splits (CL, SPLITK) the model ranks: clusters on sm_90 (split-K beyond 8 blocks a
// cluster), split-K before it.
std::vector<std::pair<int, int>> k_splits(const DeviceInfo& d) {
  std::vector<std::pair<int, int>> splits{{1, 1}};
  if (d.arch_number() >= 90) {
    for (int cl : {2, 4, 8}) splits.emplace_back(cl, 1);
    for (int s : {2, 4}) splits.emplace_back(8, s);
  } else {
    for (int s : {2, 4, 8, 16, 32}) splits.emplace_back(1, s);
  }
  return splits;
}
// Values of MINB that hold ptxas to the registers the estimate needs (plus slack), 1..4.
int minb_for(int nt, int est) {
  int m = 1;
  while (m < 4 && nt * (m + 1) <= 2048 && est + 16 <= register_cap(nt, m + 1)) ++m;
  return m;
}

// The streaming form: every warp of the block splits K (one warp wide, KG = NT / 32), one step
// in flight a lane (DEPTH 2), the read-only loads without the L2 prefetch hint (plain loads for
// single halves), no cluster, no register cap, and split-K only as far as the grid needs to reach
// ~1.4 x 256 threads an SM. Measured by tuning gemm_skinny16 at the ten bf16 decode shapes of the
// models and public suites on an H100 (~400 configs each; docs/runs/performance-log-2026-11.md,
// "Decode shapes nobody tuned"): with 256 threads this form ran within 1.6 % of the best config found at
// 1x4096x4096, 8x4096x14336, 4x18944x3584, 2x18176x4544 and 1x50257x768, and within 5 % at
// 16x4096x4096 and 16x8192x8192 (where 512 threads and one K slice won); the other LDH / MINB values
// of it ran within 0-3.3 % at 1x14336x4096 and 32x6144x4096. The best cluster config of each shape
// ran 2-19 % slower than the best (8.6-19 % at seven of nine); the config the runtime lent to each
// models shape ran 1-141 % slower (18-141 % at seven of eight).
// The grid target: at 1x4096x4096 and 8x4096x14336, 128 blocks of 256 threads ran 1.16-1.2x slower
// than 256. It is counted in threads (the blocks' loads in flight), so a 128-thread form takes twice
// the blocks of a 256-thread one and a 512-thread form half: at 1x32000x4096 the 128-thread form (500
// blocks, one wave) ran at 92 % of the copy bandwidth against 85 % for the 256-thread one (500
// blocks, two waves), and at 16x8192x8192 a 512-thread form of 128 blocks was the best config.
// Returns the form valid for p (the largest valid split when none reaches the target), or none.
std::optional<Config> streaming_form(const Family& self, const GemmProblem& p, const DeviceInfo& d, int mt, int nt) {
  const int vec = widest_vec(p);
  Config c{{"MT", mt},  {"NT", nt}, {"KG", nt / 32}, {"VEC", vec},   {"DEPTH", 2},
           {"LDH", vec >= 2 ? 2 : 0}, {"CL", 1}, {"SPLITK", 1}, {"MINB", 1}};
  const int64_t target = int64_t(std::ceil(1.4 * std::max(1, d.sm_count) * 256.0 / nt));
  std::optional<Config> last;
  for (int s : {1, 2, 4, 8, 16, 32}) {
    c.set("SPLITK", s);
    if (!self.valid(c, p, d)) continue;
    last = c;
    if (grid_blocks(c, p) >= target) break;
  }
  return last;
}

} // namespace

Family gemm_skinny16_family() {
  using P = const GemmProblem&;
  using D = const DeviceInfo&;
  Family f("gemm_skinny16", "gemm/gemm_skinny16.cu");
  f.describe("BF16/FP16 GEMM for M <= 64 (decode): streams B once through a register ring of vector loads, sums on the "
             "tensor cores (mma.sync on the transposed product, fragments built from the loads), A's fragments from "
             "global memory, K split over warp groups, thread block clusters (sm_90) and split-K")
      // (A 64-row tile needs 244-255 registers at a 2-step ring: ptxas spills; M = 33..64 runs as
      // two 32-row tiles, the second read of B mostly from L2.)
      .param("MT", {8, 16, 32}, "rows of C per block (n8 MMA tiles; rows beyond M are zeros)")
      .param("NT", {64, 128, 256, 512}, "threads per block: NT / 32 warps, WN along N times KG along K")
      .param("KG", {1, 2, 4, 8, 16}, "warp groups splitting K inside a block (partial sums meet in shared memory)")
      .param("VEC", {1, 2, 4, 8}, "halves per global load of B (a lane's 8 halves in 8 / VEC loads): the widest allowed")
      .param("DEPTH", {2, 3, 4, 6, 8}, "register ring of warp steps: DEPTH - 1 steps (64 bytes of B a lane each) in flight")
      .param("LDH", {0, 1, 2}, "loads of B: 0 plain, 1 read-only without L1 allocation with a 256-byte L2 prefetch, 2 without it")
      .param("CL", {1, 2, 4, 8}, "K slices per thread block cluster, added through distributed shared memory (sm_90)")
      .param("SPLITK", {1, 2, 4, 8, 16, 32}, "cluster-level K slices through the FP32 workspace and a reduce kernel")
      .param("MINB", {1, 2, 3, 4}, "blocks per SM asked of ptxas (__launch_bounds__), capping registers");
  f.dtypes({DType::bf16, DType::f16}).min_arch(80);
  // Its speed follows the bytes of B it streams, and its neighbours (below) refit the block and the
  // K split to the asked shape: tuned at ten decode shapes 1-4 units of log distance from the
  // shipped 1x4096x4096 entry, it ran 0.93-1.08x cuBLAS (H100), not the 0.2-0.67x the
  // default decay predicts, which had kept it from being measured at 4x18944x3584 (where it ran
  // 1.08x) and 1x50257x768.
  f.lend_decay(0.1);

  f.restrict("bf16 or f16 operands, M <= 64 (skinny problems only)", {},
             [](const Config&, P p, D) { return is_half(p) && p.m <= kMaxRows; })
      .restrict("MT rows cover M in at most 2 row tiles (each re-reads B), and not twice over", {"MT"},
                [](const Config& c, P p, D) { return (p.m + c["MT"] - 1) / c["MT"] <= 2 && (c["MT"] == 8 || c["MT"] / 2 < p.m); })
      .restrict("KG warp groups divide the block's warps", {"NT", "KG"},
                [](const Config& c, P, D) { return c["NT"] / 32 % c["KG"] == 0 && warps_n(c) >= 1; })
      // Each load of VEC halves is VEC * 2 bytes at a column (B row-major) or k (B column-major)
      // that is a multiple of 8: B's pointer (the alignment class) and every row of B (ldb) must
      // be aligned to it. Narrower loads than allowed only cost instructions and registers: the
      // space holds the widest (generalize() offers the narrower ones for other alignments).
      .restrict("vector width of B: the widest the alignment class and ldb allow", {"VEC"},
                [](const Config& c, P p, D) { return c["VEC"] == widest_vec(p); })
      .restrict("a block no wider than N (or one warp's columns)", {"NT", "KG"},
                [](const Config& c, P p, D) { return columns_per_block(c, p) <= std::max<int64_t>(warp_cols(b_col(p)), p.n); })
      .restrict("shared memory within the device's per-block limit", {"MT", "NT", "KG"},
                [](const Config& c, P p, D d) { return smem_bytes(c, p) <= size_t(d.max_smem_per_block_optin); })
      .restrict("the ring no deeper than the busiest warp's steps (or 2)", {"MT", "NT", "KG", "DEPTH", "CL", "SPLITK"},
                [](const Config& c, P p, D) { return c["DEPTH"] <= std::max<int64_t>(2, warp_steps(c, p)); })
      .restrict("thread block clusters (CL > 1) need sm_90", {"CL"},
                [](const Config& c, P, D d) { return c["CL"] == 1 || d.arch_number() >= 90; })
      .restrict("every K slice gets at least 64 of K", {"CL", "SPLITK"},
                [](const Config& c, P p, D) { return slices(c) == 1 || int64_t(slices(c)) * 64 <= p.k; })
      // K slices only where the grid needs them: with half of them there would still be fewer
      // than 2 blocks per SM (more slices only add partial sums to add).
      .restrict("K slices only while half of them leave < 2 blocks per SM", {"MT", "NT", "KG", "CL", "SPLITK"},
                [](const Config& c, P p, D d) {
                  return slices(c) == 1 || grid_blocks(c, p) / 2 < 2 * int64_t(std::max(1, d.sm_count));
                })
      .restrict("split-K workspace <= 512 MiB", {"SPLITK"},
                [](const Config& c, P p, D) { return workspace_bytes(c, p) <= kGemmMaxWorkspace; })
      .restrict("register estimate within the __launch_bounds__(NT, MINB) cap", {"MT", "NT", "VEC", "DEPTH", "MINB"},
                [](const Config& c, P p, D) {
                  return c["NT"] * c["MINB"] <= 2048 && register_estimate(c, p) <= register_limit(c["NT"], c["MINB"]);
                })
      // A grid of clusters larger than the clusters resident at once runs in two waves, the
      // second nearly empty (gemm_skinny on the H100: twice the time).
      .restrict("a grid of clusters fits the device in one wave", {"MT", "NT", "KG", "VEC", "DEPTH", "CL", "SPLITK", "MINB"},
                [](const Config& c, P p, D d) { return c["CL"] == 1 || grid_blocks(c, p) <= resident_blocks(c, p, d); });

  // A config for any served problem. On sm_90, the streaming form with 256 threads at the row
  // tile that covers M once (streaming_form: measured on the H100, where the bandwidth model's
  // configs below ran 1.2-2.7x slower than the best config found at the models suite's decode
  // shapes). Elsewhere, or where that form is not valid: the row tile that covers M
  // once, the widest loads, the L2-prefetching read-only loads, and among block shapes (128 or 256
  // threads, 1 or 2 warps along N), ring depths and K splits (clusters on sm_90, split-K beyond)
  // the one the bandwidth model (model_us) rates fastest, MINB holding ptxas to the register
  // estimate. Valid by construction where possible, checked in the order of the model; the last
  // resort (64 threads in 2 warp groups, a 2-step ring, no split) is valid for every bf16/f16
  // problem with M <= 64.
  f.defaults([](const GemmProblem& p, const DeviceInfo& d) {
    const Family self = gemm_skinny16_family();
    if (d.arch_number() >= 90)
      if (const auto s = streaming_form(self, p, d, rows_tile(p.m), 256)) return *s; // valid, or none
    const int vec = widest_vec(p);
    auto make = [&](int mt, int nt, int kg, int depth, int cl, int splitk, int minb) {
      return Config{{"MT", mt}, {"NT", nt},         {"KG", kg},         {"VEC", vec},   {"DEPTH", depth},
                    {"LDH", 1}, {"CL", cl}, {"SPLITK", splitk}, {"MINB", minb}};
    };
    const std::vector<std::pair<int, int>> splits = k_splits(d); // (CL, SPLITK)
    // The row tile that covers M once, and half of it (two tiles re-read B, but fit more
    // registers: the only choice for M > 32 with element-wise A or narrow loads).
    std::vector<int> mts{rows_tile(p.m)};
    if (mts[0] > 8 && (p.m + mts[0] / 2 - 1) / (mts[0] / 2) <= 2) mts.push_back(mts[0] / 2);
    std::vector<std::pair<double, Config>> ranked;
    for (int mt : mts)
      for (int nt : {128, 256})
        for (int wn : {1, 2}) {
          const int kg = nt / 32 / wn;
          for (int depth : {2, 3, 4, 6, 8}) {
            const int est = register_estimate(mt, vec, depth, b_col(p), a_vec(p));
            if (est > register_cap(nt, 1)) continue; // (the space's slack beyond 255 is for the last resort)
            const int minb = minb_for(nt, est);
            for (const auto& [cl, splitk] : splits) {
              const Config c = make(mt, nt, kg, depth, cl, splitk, minb);
              // The cheap checks first (the full one runs on the winners below).
              if (slices(c) > 1 &&
                  (int64_t(slices(c)) * 64 > p.k || grid_blocks(c, p) / 2 >= 2 * int64_t(std::max(1, d.sm_count))))
                continue;
              if (depth > std::max<int64_t>(2, warp_steps(c, p))) continue;
              if (cl > 1 && grid_blocks(c, p) > resident_blocks(c, p, d)) continue;
              ranked.emplace_back(model_us(c, p, d), c);
            }
          }
        }
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [t, c] : ranked)
      if (self.valid(c, p, d)) return c;
    // Last resort: 64 threads in 2 warp groups (one warp wide), a 2-step ring, no split, the row
    // tile within the registers.
    for (int mt : {rows_tile(p.m), 16, 8}) {
      Config c = make(mt, 64, 2, 2, 1, 1, 1);
      c.set("LDH", 0);
      if (self.valid(c, p, d)) return c;
    }
    Config last = make(rows_tile(p.m), 64, 2, 2, 1, 1, 1);
    last.set("LDH", 0);
    return last;
  });

  // A tuned config is specialised to one M (its row tile) and one alignment (its vector width).
  // The same block shape with the row tile moved towards other Ms (nearest first, the smaller of
  // two equally near) and narrower loads serves the other decode batches and alignments; a
  // deeper row tile or narrower loads need more registers, so the ring is shortened (then MINB
  // lowered) until the estimate fits for either B layout and element-wise A; and each row tile
  // also comes without K slices across blocks (a cluster grid that no longer fits one wave).
  f.generalize([](const Config& c) {
    std::vector<std::pair<int, int>> mts; // (distance in powers of two, MT)
    for (int mt : {8, 16, 32}) {
      int d = 0;
      for (int x = std::min(mt, c["MT"]); x < std::max(mt, c["MT"]); x *= 2) ++d;
      mts.emplace_back(2 * d + (mt > c["MT"]), mt);
    }
    std::sort(mts.begin(), mts.end());
    auto fit = [](Config g) {
      auto est = [&](const Config& x) {
        return std::max(register_estimate(x["MT"], x["VEC"], x["DEPTH"], false, 0),
                        register_estimate(x["MT"], x["VEC"], x["DEPTH"], true, 0));
      };
      // The deepest ring no deeper than the tuned one that fits the cap (else the shortest),
      // then a lower MINB, then fewer threads (as many warp groups as still fit).
      for (int depth : {8, 6, 4, 3, 2}) {
        if (depth > g["DEPTH"]) continue;
        g.set("DEPTH", depth);
        if (est(g) <= register_limit(g["NT"], g["MINB"])) break;
      }
      while (g["MINB"] > 1 && est(g) > register_limit(g["NT"], g["MINB"])) g.set("MINB", g["MINB"] - 1);
      while (g["NT"] > 64 && est(g) > register_limit(g["NT"], g["MINB"])) {
        g.set("NT", g["NT"] / 2);
        g.set("KG", std::min(g["KG"], g["NT"] / 32));
      }
      return g;
    };
    std::vector<Config> out;
    auto add = [&](const Config& g) {
      if (g == c) return;
      for (const auto& x : out)
        if (x == g) return;
      out.push_back(g);
    };
    for (const auto& [d, mt] : mts) {
      for (int vec : {8, 4, 2, 1}) {
        if (vec > c["VEC"]) continue;
        Config g = c;
        g.set("MT", mt);
        g.set("VEC", vec);
        add(fit(g));
      }
      if (c["CL"] > 1 || c["SPLITK"] > 1)
        for (int vec : {8, 4, 2, 1}) {
          if (vec > c["VEC"]) continue;
          Config g = c;
          g.set("MT", mt);
          g.set("VEC", vec);
          g.set("CL", 1);
          g.set("SPLITK", 1);
          add(fit(g));
        }
    }
    return out;
  });

  // Neighbours of a config lent to another decode shape: the streaming forms fitted to the shape
  // (streaming_form, above), then its block and ring with the K split the
  // bandwidth model rates fastest there (a split is fitted to its own shape's N and K: the shipped
  // 1x4096x4096 config lent to 1x14336x4096 ran 0.81x cuBLAS in the H100 models bench when the
  // runtime timed that lender alone), then the model's own config for the shape (defaults). With
  // them, at the decode shapes of configs/suites/models.json, 1x14336x4096 ran the lent config with
  // CL 2 at 1.02x cuBLAS (45.6 us against 58.6; docs/runs/2026-11-26-h100-s19-skinny-nb-ab.tgz).
  f.neighbors([](const Config& c, P p, D d) {
    const Family self = gemm_skinny16_family();
    std::vector<Config> out;
    auto add = [&](const Config& x) {
      if (x != c && std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
    };
    // First the streaming forms (see streaming_form) at the lent row tile and at the one that
    // covers M: 256 threads, then 512 and 128.
    for (int mt : {c["MT"], rows_tile(p.m)})
      for (int nt : {256, 512, 128})
        if (const auto x = streaming_form(self, p, d, mt, nt)) add(*x);
    std::optional<std::pair<double, Config>> best;
    for (const auto& [cl, splitk] : k_splits(d)) {
      Config t = c;
      t.set("CL", cl), t.set("SPLITK", splitk);
      if (!self.valid(t, p, d)) continue;
      const double us = model_us(t, p, d);
      if (!best || us < best->first) best = {us, t};
    }
    if (best) add(best->second);
    add(self.default_config(p, d));
    return out;
  });

  // Configs recorded before the register ring (UNROLL and KC; A staged in shared memory) run as
  // the ring of the same number of steps in flight, without clusters or a register cap.
  f.upgrade([](Config c) {
    if (c.has("DEPTH")) return c;
    Config out;
    for (const auto& [name, value] : c.items()) {
      if (name == "UNROLL" || name == "KC") continue;
      out.set(name, value);
    }
    const int unroll = c.has("UNROLL") ? c["UNROLL"] : 1;
    out.set("DEPTH", unroll >= 4 ? 8 : unroll >= 2 ? 4 : 2);
    if (!out.has("CL")) out.set("CL", 1);
    if (!out.has("MINB")) out.set("MINB", 1);
    return out;
  });

  f.kernels([](const Config& c, const GemmProblem& p) {
     // Template parameter order of gemm_skinny16.cu (the enumeration order), then AV, F16 and layouts.
     std::string name = "gemm_skinny16<";
     for (const char* prm : {"MT", "NT", "KG", "VEC", "DEPTH", "LDH", "CL", "SPLITK", "MINB"}) name += std::to_string(c[prm]) + ",";
     const std::string f16 = p.dtype == DType::f16 ? "1" : "0";
     name += std::to_string(a_vec(p)) + "," + f16 + "," + gemm_layout_args(p) + ">";
     std::vector<std::string> names{name};
     if (c["SPLITK"] > 1) names.push_back("gemm_splitk_reduce16<" + std::to_string(c["SPLITK"]) + "," + f16 + ">");
     return names;
   })
      .launch([](const Config& c, const GemmProblem& p) {
        LaunchPlan plan;
        LaunchStep main;
        main.grid[0] = ceil_div(p.n, columns_per_block(c, p));
        main.grid[1] = ceil_div(p.m, c["MT"]);
        main.grid[2] = slices(c); // CL consecutive slices form a cluster (__cluster_dims__(1, 1, CL))
        main.block[0] = c["NT"];
        main.dynamic_smem = static_cast<unsigned>(smem_bytes(c, p));
        plan.steps.push_back(main);
        // gemm_splitk_reduce16 has gemm_splitk_reduce's geometry and FP32 workspace slices (one
        // per cluster).
        add_splitk_reduce(plan, p, c["SPLITK"]);
        return plan;
      });
  return f;
}

} // namespace ktune
