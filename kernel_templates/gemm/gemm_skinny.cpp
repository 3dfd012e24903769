// Descriptor of gemm_skinny.cu: a bandwidth-bound family for few rows of C (decode shapes).
#include <algorithm>

#include "gemm/gemm_args.h"
#include "gemm/gemm_families.h"
#include "ktune/gemm_problem.h"

namespace ktune {
namespace {

// The row count the family is for: beyond it B is re-read once per MT rows and the
// compute-bound gemm_simt is the better home.
constexpr int64_t kMaxRows = 64;

bool b_col(const GemmProblem& p) { return p.b == Layout::col; }

int columns_per_block(const Config& c, const GemmProblem& p) {
  return b_col(p) ? (c["NT"] / 32) * c["NC"] : (c["NT"] / c["KG"]) * c["VEC"];
}

// Floats of shared memory: A's chunk (ST = 0) or the ring of ST stages (A's MT x KC and B's
// KC x block columns each), and (B row-major, KG > 1) every group's partial sums, which reuse it;
// with CL = 1, after both, the block's partial products (MT x its columns). Mirrors PART_AT in the
// kernel.
size_t smem_bytes(const Config& c, const GemmProblem& p) {
  const size_t cols = columns_per_block(c, p);
  const size_t first = c["ST"] ? size_t(c["ST"]) * c["KC"] * (c["MT"] + cols) : size_t(c["MT"]) * c["KC"];
  const size_t red = b_col(p) || c["KG"] == 1 ? 0 : size_t(c["MT"]) * c["NT"] * c["VEC"];
  const size_t part = c["CL"] ? size_t(c["MT"]) * cols : 0;
  return (std::max(first, red) + part) * sizeof(float);
}

// Accumulators, the B registers of two steps in flight (ST = 0; with stages, one step's four rows
// read from shared memory), a float4 of A and ~24 for addresses and loop state.
int register_estimate(const Config& c, const GemmProblem& p) {
  const int acc = c["MT"] * (b_col(p) ? c["NC"] : c["VEC"]);
  const int b = c["ST"] ? 4 * c["VEC"] : 2 * c["UNROLL"] * c["VEC"] * (b_col(p) ? c["NC"] : 4);
  return acc + b + 4 + 24;
}

// K slices that reach the workspace: all of them, or one per cluster (of at most 8, the portable
// cluster size) when CL = 1. Mirrors skinny_cluster_size in the kernel.
int workspace_slices(const Config& c) { return c["CL"] ? std::max(1, c["SPLITK"] / 8) : c["SPLITK"]; }
bool needs_reduce(const Config& c) { return workspace_slices(c) > 1; }

size_t workspace_bytes(const Config& c, const GemmProblem& p) { return gemm_splitk_workspace_bytes(workspace_slices(c), p); }

} // namespace

Family gemm_skinny_family() {
  using P = const GemmProblem&;
  using D = const DeviceInfo&;
  Family f("gemm_skinny", "gemm/gemm_skinny.cu");
  f.describe("FP32 GEMM for M <= 64 (decode): streams B once with vector loads, A in shared memory, split-K")
      .param("MT", {1, 2, 4, 8, 16, 32}, "rows of C per block")
      .param("NT", {64, 128, 256, 512}, "threads per block")
      .param("VEC", {1, 2, 4}, "floats per load of B")
      .param("KG", {1, 2, 4, 8, 16, 32}, "B row-major: thread groups splitting K inside a block")
      .param("NC", {1, 2, 4, 8}, "B column-major: columns of C per warp")
      .param("UNROLL", {1, 2, 4, 8}, "steps of B loads in flight per thread")
      .param("KC", {8, 16, 32, 64, 128, 256, 512, 1024}, "K depth of A's shared-memory chunk (with ST >= 2: of each stage)")
      .param("LDH", {0, 1}, "loads of B: 0 plain, 1 read-only without L1 allocation and with 256-byte L2 prefetch")
      .param("CL", {0, 1}, "1: the K slices of a tile form a thread block cluster and reduce in distributed shared memory (sm_90)")
      .param("SPLITK", {1, 2, 4, 8, 16, 32, 64}, "K slices reduced deterministically")
      .param("ST", {0, 2, 3, 4, 6}, "B row-major: 0 streams B through registers; >= 2 cp.async stages of A and B in shared memory")
      .param("MINB", {1, 2, 3, 4}, "blocks per SM asked of ptxas (__launch_bounds__): caps registers per thread");

  f.restrict("M <= 64 (skinny problems only)", {}, [](const Config&, P p, D) { return p.m <= kMaxRows; })
      .restrict("MT rows cover M in at most 2 row tiles (each re-reads B)", {"MT"},
                [](const Config& c, P p, D) { return (p.m + c["MT"] - 1) / c["MT"] <= 2 && (c["MT"] == 1 || c["MT"] / 2 < p.m); })
      .restrict("global vector width within the problem's alignment class", {"VEC"},
                [](const Config& c, P p, D) { return c["VEC"] * 4 <= p.align; })
      .restrict("KG splits K only for row-major B, and leaves >= 8 threads along N", {"NT", "KG"},
                [](const Config& c, P p, D) { return b_col(p) ? c["KG"] == 1 : c["NT"] / c["KG"] >= 8; })
      .restrict("NC columns per warp only for column-major B", {"NC"},
                [](const Config& c, P p, D) { return b_col(p) || c["NC"] == 1; })
      .restrict("register estimate within the __launch_bounds__ cap (NT threads, MINB blocks per SM)",
                {"MT", "NT", "VEC", "KG", "NC", "UNROLL", "ST", "MINB"},
                [](const Config& c, P p, D) { return register_estimate(c, p) <= std::min(255, 65536 / (c["NT"] * c["MINB"])); })
      .restrict("a block no wider than N (or 32 columns)", {"MT", "NT", "VEC", "KG", "NC"},
                [](const Config& c, P p, D) { return columns_per_block(c, p) <= std::max<int64_t>(32, p.n); })
      .restrict("shared memory within the device's per-block limit", {"MT", "NT", "VEC", "KG", "NC", "UNROLL", "KC", "CL", "ST"},
                [](const Config& c, P p, D d) { return smem_bytes(c, p) <= size_t(d.max_smem_per_block_optin); })
      .restrict("CL = 1 needs sm_90 and at least 2 K slices", {"CL", "SPLITK"},
                [](const Config& c, P, D d) { return c["CL"] == 0 || (d.arch_number() >= 90 && c["SPLITK"] >= 2); })
      .restrict("every split-K slice gets at least 4 of K", {"SPLITK"},
                [](const Config& c, P p, D) { return c["SPLITK"] == 1 || int64_t(c["SPLITK"]) * 4 <= p.k; })
      .restrict("A's chunk no deeper than twice the K slice", {"KC", "SPLITK"},
                [](const Config& c, P p, D) { return c["KC"] == 64 || int64_t(c["KC"]) * c["SPLITK"] < 2 * p.k; })
      .restrict("split-K workspace <= 512 MiB", {"SPLITK"}, [](const Config& c, P p, D) { return workspace_bytes(c, p) <= kGemmMaxWorkspace; })
      // A register cap only where stages replaced the register ping-pong (whose depth, UNROLL,
      // already sets the registers), and no more blocks asked for than fit an SM's shared memory
      // (the optin block limit stands in for the SM's, which is ~1 KB more) and 2048 threads.
      .restrict("MINB > 1 only with ST >= 2, and MINB blocks fit an SM", {"MT", "NT", "VEC", "KG", "NC", "UNROLL", "KC", "CL", "ST", "MINB"},
                [](const Config& c, P p, D d) {
                  if (c["MINB"] == 1) return true;
                  return c["ST"] > 0 && c["NT"] * c["MINB"] <= 2048 &&
                         size_t(c["MINB"]) * smem_bytes(c, p) <= size_t(d.max_smem_per_block_optin);
                })
      // The stage ring (ST >= 2) replaces the register ping-pong, whose depth UNROLL is then
      // fixed; a warp reads one row of a stage (one group per warp) and every group takes whole
      // quads of each stage. Below 64, KC is a stage depth only.
      .restrict("cp.async stages (ST >= 2): sm_80, row-major B, UNROLL = 1, >= 32 threads a group, KC a multiple of 4 x KG",
                {"NT", "KG", "UNROLL", "KC", "ST"},
                [](const Config& c, P p, D d) {
                  if (c["ST"] == 0) return c["KC"] >= 64;
                  return d.arch_number() >= 80 && !b_col(p) && c["UNROLL"] == 1 && c["NT"] / c["KG"] >= 32 &&
                         c["KC"] % (4 * c["KG"]) == 0;
                });

  // CL came after the first tables: configs without it ran the split-K reduce kernel (CL = 0).
  f.upgrade([](Config c) {
    if (!c.has("CL")) c.set("CL", 0);
    if (!c.has("ST")) c.set("ST", 0);     // and ST later still: B streamed through registers
    if (!c.has("MINB")) c.set("MINB", 1); // and MINB: no register cap beyond NT's
    return c;
  });

  // A skinny config is tuned for one M: its row tile MT must cover M in one or two tiles, and its
  // vector width VEC must fit the alignment class. The same block shape with the row tile moved
  // towards other Ms (nearest first, the smaller of two equally near), and narrower loads, serves
  // every other decode batch: lenders for M = 1..64 come from any tuned M.
  f.generalize([](const Config& c) {
    std::vector<std::pair<int, int>> mts; // (distance in powers of two, MT)
    for (int mt : {1, 2, 4, 8, 16, 32}) {
      int d = 0;
      for (int x = std::min(mt, c["MT"]); x < std::max(mt, c["MT"]); x *= 2) ++d;
      mts.emplace_back(2 * d + (mt > c["MT"]), mt);
    }
    std::sort(mts.begin(), mts.end());
    std::vector<Config> out;
    for (const auto& [d, mt] : mts)
      for (int vec : {4, 2, 1}) {
        if (vec > c["VEC"]) continue;
        Config g = c;
        g.set("MT", mt);
        g.set("VEC", vec);
        if (!(g == c)) out.push_back(std::move(g));
      }
    return out;
  });

  f.kernels([](const Config& c, const GemmProblem& p) {
     // Template parameter order of gemm_skinny.cu (the same as the enumeration order).
     std::vector<std::string> names{
         gemm_instance("gemm_skinny", c, {"MT", "NT", "VEC", "KG", "NC", "UNROLL", "KC", "LDH", "CL", "SPLITK", "ST", "MINB"}, p)};
     if (needs_reduce(c)) names.push_back(gemm_splitk_reduce_name(workspace_slices(c)));
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
        add_splitk_reduce(plan, p, workspace_slices(c));
        return plan;
      });
  return f;
}

} // namespace ktune
