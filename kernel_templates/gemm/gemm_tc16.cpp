// Descriptor of gemm_tc16.cu: BF16 / FP16 GEMM on the tensor cores (mma.sync m16n8k16).
// Not yet run on a GPU (see the template's header): it serves no problem until its GPU test has
// passed, since ktune refuses bf16 and f16 problems at the CLI and runtime entry points for now.
#include <algorithm>

#include "gemm/gemm_families.h"

namespace ktune {
namespace {

int threads(const Config& c) { return 32 * (c["BM"] / c["WM"]) * (c["BN"] / c["WN"]); }
int accumulators(const Config& c) { return c["WM"] * c["WN"] / 32; }

// Mirrors the template: ST stages of A [BM][BK + 8] and B [BK][BN + 8], 2-byte elements.
size_t smem_bytes(const Config& c) {
  const size_t bm = c["BM"], bn = c["BN"], bk = c["BK"];
  return size_t(c["ST"]) * (bm * (bk + 8) + bk * (bn + 8)) * 2;
}

// Accumulators, one k16 step's fragments (A: 4 registers per m16 tile, B: 2 per n8 tile), ~24 for
// addresses and loop state; capped by __launch_bounds__ at 65536 / threads.
int register_estimate(const Config& c) { return accumulators(c) + c["WM"] / 16 * 4 + c["WN"] / 8 * 2 + 24; }

bool is_half(const GemmProblem& p) { return p.dtype == DType::bf16 || p.dtype == DType::f16; }

} // namespace

Family gemm_tc16_family() {
  using P = const GemmProblem&;
  using D = const DeviceInfo&;
  Family f("gemm_tc16", "gemm/gemm_tc16.cu");
  f.describe("BF16/FP16 GEMM on the tensor cores (mma.sync m16n8k16, ldmatrix, cp.async stages, FP32 accumulation); "
             "row-major A and B, K and N multiples of 8; not yet verified on a GPU")
      .param("BM", {64, 128, 256}, "block tile rows")
      .param("BN", {64, 128, 256}, "block tile columns")
      .param("WM", {32, 64, 128}, "warp tile rows (16-row MMA tiles)")
      .param("WN", {32, 64, 128}, "warp tile columns (pairs of 8-column MMA tiles)")
      .param("BK", {32, 64}, "K depth of one shared-memory stage")
      .param("ST", {2, 3, 4, 5}, "cp.async stages in the shared-memory ring")
      .param("SWZ", {1, 4, 8, 16}, "tile rows per rasterization group");
  f.dtypes({DType::bf16, DType::f16}).min_arch(80);

  f.restrict("bf16 or f16 operands", {}, [](const Config&, P p, D) { return is_half(p); })
      .restrict("row-major A and B (the first version's only layout)", {},
                [](const Config&, P p, D) { return p.a == Layout::row && p.b == Layout::row; })
      // 16-byte copies zero-filled whole: a chunk of 8 halves is inside K (or N) or wholly outside.
      .restrict("K, N and the leading dimensions multiples of 8 halves, pointers 16-byte aligned", {},
                [](const Config&, P p, D) {
                  return p.k % 8 == 0 && p.n % 8 == 0 && p.eff_lda() % 8 == 0 && p.eff_ldb() % 8 == 0 &&
                         p.eff_ldc() % 8 == 0 && p.align == 16;
                })
      .restrict("warp tile divides block tile", {"BM", "BN", "WM", "WN"},
                [](const Config& c, P, D) { return c["BM"] % c["WM"] == 0 && c["BN"] % c["WN"] == 0; })
      .restrict("64 to the device's limit of threads per block", {"BM", "BN", "WM", "WN"},
                [](const Config& c, P, D d) { return threads(c) >= 64 && threads(c) <= d.max_threads_per_block; })
      .restrict("accumulators per thread <= 128", {"WM", "WN"}, [](const Config& c, P, D) { return accumulators(c) <= 128; })
      .restrict("register estimate within the __launch_bounds__ cap", {"BM", "BN", "WM", "WN"},
                [](const Config& c, P, D) { return register_estimate(c) <= std::min(255, 65536 / threads(c)); })
      .restrict("whole 16-byte copies per thread for both tiles", {"BM", "BN", "WM", "WN", "BK"},
                [](const Config& c, P, D) {
                  return c["BM"] * c["BK"] / 8 % threads(c) == 0 && c["BK"] * c["BN"] / 8 % threads(c) == 0;
                })
      .restrict("shared memory within the device's per-block limit", {"BM", "BN", "BK", "ST"},
                [](const Config& c, P, D d) { return smem_bytes(c) <= size_t(d.max_smem_per_block_optin); })
      .restrict("grid of M/BM x N/BN tiles fits grid.x", {"BM", "BN"},
                [](const Config& c, P p, D) { return int64_t(ceil_div(p.m, c["BM"])) * ceil_div(p.n, c["BN"]) < (int64_t(1) << 31); });

  f.kernels([](const Config& c, const GemmProblem& p) {
     // Template parameter order of gemm_tc16.cu; F16 and the layouts come from the problem.
     std::string name = "gemm_tc16<";
     for (const char* prm : {"BM", "BN", "BK", "WM", "WN", "ST", "SWZ"}) name += std::to_string(c[prm]) + ",";
     name += std::string(p.dtype == DType::f16 ? "1" : "0") + "," + gemm_layout_args(p) + ">";
     return std::vector<std::string>{name};
   })
      .launch([](const Config& c, const GemmProblem& p) {
        return gemm_tiled_plan(GemmTiling{c["BM"], c["BN"], c["BK"], 1, false}, p, unsigned(threads(c)), smem_bytes(c));
      });
  return f;
}

} // namespace ktune
