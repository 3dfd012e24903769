// Descriptor of gemm_skinny16.cu: the half-precision (bf16 / fp16) decode family for few rows of C
// (M <= 64): streams B once with vector loads, sums on the tensor cores (mma.sync m16n8k16 on the
// transposed product), A in shared memory, K split inside a block (warp groups) and across blocks
// (split-K through an FP32 workspace and gemm_skinny16_reduce). Not yet run on a GPU.
#include <algorithm>
#include <optional>

#include "gemm/gemm_args.h"
#include "gemm/gemm_families.h"

namespace ktune {
namespace {

// The row count the family is for: beyond it B is re-read once per MT rows (or the accumulators
// outgrow the registers) and a tiled family is the better home.
constexpr int64_t kMaxRows = 64;

bool b_col(const GemmProblem& p) { return p.b == Layout::col; }
bool is_half(const GemmProblem& p) { return p.dtype == DType::bf16 || p.dtype == DType::f16; }

// Mirrors the template: a warp covers 64 columns x 16 k (B row-major) or 32 columns x 32 k (B
// column-major) a step; NT / 32 warps are WN along N times KG along K.
int warp_cols(const GemmProblem& p) { return b_col(p) ? 32 : 64; }
int step_k(const GemmProblem& p) { return b_col(p) ? 32 : 16; }
int warps_n(const Config& c) { return c["NT"] / 32 / c["KG"]; }
int columns_per_block(const Config& c, const GemmProblem& p) { return warps_n(c) * warp_cols(p); }

// Bytes of shared memory: A's chunk (MT rows of KC halves, padded by 16 or 32 halves) and, reusing
// it after the K loop, every group's FP32 sums (KG x MT x block columns).
size_t smem_bytes(const Config& c, const GemmProblem& p) {
  const size_t a = size_t(c["MT"]) * (c["KC"] + (b_col(p) ? 32 : 16)) * 2;
  const size_t red = size_t(c["KG"]) * c["MT"] * columns_per_block(c, p) * 4;
  return std::max(a, red);
}

// Accumulators (MT / 8 n8 tiles x 4 (row-major B) or 2 m16 tiles x 4 floats), two iterations of
// B in registers (UNROLL x 16 words each), A's fragments of one step, ~40 for addresses and loop
// state.
int register_estimate(const Config& c, const GemmProblem& p) {
  const int mtiles = c["MT"] / 8;
  const int acc = mtiles * (b_col(p) ? 2 : 4) * 4;
  return acc + 2 * c["UNROLL"] * 16 + mtiles * (b_col(p) ? 4 : 2) + 40;
}

size_t workspace_bytes(const Config& c, const GemmProblem& p) { return gemm_splitk_workspace_bytes(c["SPLITK"], p); }

// The K slice of one block, as the kernel computes it (a multiple of 32).
int64_t k_slice(const Config& c, const GemmProblem& p) { return ((p.k + c["SPLITK"] - 1) / c["SPLITK"] + 31) / 32 * 32; }

int rows_tile(int64_t m) { return m <= 8 ? 8 : m <= 16 ? 16 : m <= 32 ? 32 : 64; }

} // namespace

Family gemm_skinny16_family() {
  using P = const GemmProblem&;
  using D = const DeviceInfo&;
  Family f("gemm_skinny16", "gemm/gemm_skinny16.cu");
  f.describe("BF16/FP16 GEMM for M <= 64 (decode): streams B once with vector loads, sums on the tensor cores "
             "(mma.sync on the transposed product, fragments built from the loads), A in shared memory, split-K; "
             "not yet verified on a GPU")
      .param("MT", {8, 16, 32, 64}, "rows of C per block (n8 MMA tiles; rows beyond M are zeros)")
      .param("NT", {64, 128, 256, 512}, "threads per block: NT / 32 warps, WN along N times KG along K")
      .param("KG", {1, 2, 4, 8}, "warp groups splitting K inside a block (partial sums meet in shared memory)")
      .param("VEC", {1, 2, 4, 8}, "halves per global load of B (a lane's 8 halves in 8 / VEC loads)")
      .param("UNROLL", {1, 2, 4}, "warp steps of B per lane per iteration (two iterations in flight)")
      .param("KC", {64, 128, 256, 512, 1024}, "K depth (halves) of A's shared-memory chunk")
      .param("LDH", {0, 1}, "loads of B: 0 plain, 1 read-only without L1 allocation and with 256-byte L2 prefetch")
      .param("SPLITK", {1, 2, 4, 8, 16, 32}, "K slices across blocks, reduced deterministically into C");
  f.dtypes({DType::bf16, DType::f16}).min_arch(80);

  f.restrict("bf16 or f16 operands, M <= 64 (skinny problems only)", {},
             [](const Config&, P p, D) { return is_half(p) && p.m <= kMaxRows; })
      .restrict("MT rows cover M in at most 2 row tiles (each re-reads B), and not twice over", {"MT"},
                [](const Config& c, P p, D) { return (p.m + c["MT"] - 1) / c["MT"] <= 2 && (c["MT"] == 8 || c["MT"] / 2 < p.m); })
      .restrict("KG warp groups divide the block's warps", {"NT", "KG"},
                [](const Config& c, P, D) { return c["NT"] / 32 % c["KG"] == 0 && warps_n(c) >= 1; })
      // Each load of VEC halves is VEC * 2 bytes at a column (B row-major) or k (B column-major)
      // that is a multiple of 8: B's pointer (the alignment class) and every row of B (ldb) must
      // be aligned to it. Loads that straddle N or K fall back to single halves in the kernel.
      .restrict("vector width of B within the alignment class and dividing ldb", {"VEC"},
                [](const Config& c, P p, D) { return c["VEC"] * 2 <= p.align && p.eff_ldb() % c["VEC"] == 0; })
      .restrict("register estimate within the __launch_bounds__ cap (NT threads)", {"MT", "NT", "UNROLL"},
                [](const Config& c, P p, D) { return register_estimate(c, p) <= std::min(255, 65536 / c["NT"]); })
      .restrict("a block no wider than N (or one warp's columns)", {"NT", "KG"},
                [](const Config& c, P p, D) { return columns_per_block(c, p) <= std::max<int64_t>(warp_cols(p), p.n); })
      .restrict("a chunk of A holds whole iterations of every warp group", {"NT", "KG", "UNROLL", "KC"},
                [](const Config& c, P p, D) { return c["KC"] % (step_k(p) * c["KG"] * c["UNROLL"]) == 0; })
      .restrict("shared memory within the device's per-block limit", {"MT", "NT", "KG", "KC"},
                [](const Config& c, P p, D d) { return smem_bytes(c, p) <= size_t(d.max_smem_per_block_optin); })
      .restrict("every split-K slice gets at least 64 of K", {"SPLITK"},
                [](const Config& c, P p, D) { return c["SPLITK"] == 1 || int64_t(c["SPLITK"]) * 64 <= p.k; })
      .restrict("A's chunk no deeper than twice the K slice", {"KC", "SPLITK"},
                [](const Config& c, P p, D) { return c["KC"] == 64 || c["KC"] < 2 * k_slice(c, p); })
      .restrict("split-K workspace <= 512 MiB", {"SPLITK"},
                [](const Config& c, P p, D) { return workspace_bytes(c, p) <= kGemmMaxWorkspace; });

  // A config for any served problem: the row tile that covers M once, the widest loads the
  // alignment allows, and among a few block shapes (256 or 128 threads, 1 to 8 warp groups along
  // K) and K splits the one whose grid best covers the SMs (up to twice over), with the fewest K
  // slices (their FP32 workspace costs traffic: at most ~10 % of B's bytes, and slices >= 512
  // deep), earlier shapes first. The last resort (64 threads in 2 warp groups, single-half loads,
  // a 64-deep chunk, no split) is valid for every bf16/f16 problem with M <= 64.
  f.defaults([](const GemmProblem& p, const DeviceInfo& d) {
    const Family self = gemm_skinny16_family();
    const int mt = rows_tile(p.m);
    const int64_t target = 2 * std::max(1, d.sm_count);
    auto make = [&](int nt, int kg, int vec, int unroll, int kc, int splitk) {
      return Config{{"MT", mt},         {"NT", nt}, {"KG", kg},  {"VEC", vec},
                    {"UNROLL", unroll}, {"KC", kc}, {"LDH", 1}, {"SPLITK", splitk}};
    };
    struct Shape {
      int nt, kg, unroll;
    };
    const int u = mt <= 32 ? 2 : 1;
    const Shape shapes[] = {{256, 4, u}, {256, 8, 1}, {256, 2, u}, {128, 4, 1}, {128, 2, 1}, {128, 1, 1}};
    int max_split = 1;
    while (max_split < 32 && p.k / (2 * max_split) >= 512 && 2 * max_split * 40 * p.m <= p.k) max_split *= 2;
    for (int vec : {8, 4, 2, 1}) {
      std::optional<Config> best;
      int64_t best_cover = -1;
      int best_split = 0;
      for (const Shape& s : shapes)
        for (int splitk = 1; splitk <= max_split; splitk *= 2)
          for (int kc : {256, 128, 64}) {
            const Config c = make(s.nt, s.kg, vec, s.unroll, kc, splitk);
            if (!self.valid(c, p, d)) continue;
            const int64_t blocks = int64_t(ceil_div(p.n, columns_per_block(c, p))) * ceil_div(p.m, mt) * splitk;
            const int64_t cover = std::min(blocks, target);
            if (cover > best_cover || (cover == best_cover && splitk < best_split))
              best = c, best_cover = cover, best_split = splitk;
            break; // the deepest valid chunk of this shape and split
          }
      if (best) return *best;
    }
    Config last = make(64, 2, 1, 1, 64, 1);
    last.set("LDH", 0);
    return last;
  });

  // A tuned config is specialised to one M (its row tile) and one alignment (its vector width).
  // The same block shape with the row tile moved towards other Ms (nearest first, the smaller of
  // two equally near) and narrower loads serves the other decode batches and alignments.
  f.generalize([](const Config& c) {
    std::vector<std::pair<int, int>> mts; // (distance in powers of two, MT)
    for (int mt : {8, 16, 32, 64}) {
      int d = 0;
      for (int x = std::min(mt, c["MT"]); x < std::max(mt, c["MT"]); x *= 2) ++d;
      mts.emplace_back(2 * d + (mt > c["MT"]), mt);
    }
    std::sort(mts.begin(), mts.end());
    std::vector<Config> out;
    for (const auto& [d, mt] : mts)
      for (int vec : {8, 4, 2, 1}) {
        if (vec > c["VEC"]) continue;
        Config g = c;
        g.set("MT", mt);
        g.set("VEC", vec);
        // The widest row tile with this config's unroll may not fit the registers: one step less.
        if (mt == 64 && g["UNROLL"] > 1) g.set("UNROLL", 1);
        if (!(g == c)) out.push_back(std::move(g));
      }
    return out;
  });

  f.kernels([](const Config& c, const GemmProblem& p) {
     // Template parameter order of gemm_skinny16.cu (the enumeration order), then F16 and layouts.
     std::string name = "gemm_skinny16<";
     for (const char* prm : {"MT", "NT", "KG", "VEC", "UNROLL", "KC", "LDH", "SPLITK"}) name += std::to_string(c[prm]) + ",";
     const std::string f16 = p.dtype == DType::f16 ? "1" : "0";
     name += f16 + "," + gemm_layout_args(p) + ">";
     std::vector<std::string> names{name};
     if (c["SPLITK"] > 1) names.push_back("gemm_skinny16_reduce<" + std::to_string(c["SPLITK"]) + "," + f16 + ">");
     return names;
   })
      .launch([](const Config& c, const GemmProblem& p) {
        LaunchPlan plan;
        LaunchStep main;
        main.grid[0] = ceil_div(p.n, columns_per_block(c, p));
        main.grid[1] = ceil_div(p.m, c["MT"]);
        main.grid[2] = c["SPLITK"];
        main.block[0] = c["NT"];
        main.dynamic_smem = static_cast<unsigned>(smem_bytes(c, p));
        plan.steps.push_back(main);
        // gemm_skinny16_reduce has gemm_splitk_reduce's geometry and FP32 workspace slices.
        add_splitk_reduce(plan, p, c["SPLITK"]);
        return plan;
      });
  return f;
}

} // namespace ktune
