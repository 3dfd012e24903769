#include "ops/strided_fixture.h"

#include <cmath>

#include "ktune/error.h"
#include "ktune/family.h"

namespace ktune::testing {

namespace {

// One thread an element; the flat index runs over (b, s, h, d) in that order. DT: 0 f32, 1 bf16,
// 2 f16 (16-bit elements as bit patterns, converted with cvt).
constexpr const char* kSource = R"(
#include "gemm_args.h"      // KtuneTensorMap: a CUtensorMap's bytes
#include "ktune_async.cuh"  // mbarriers
template <int DT> struct SsElem { using T = unsigned short; };
template <> struct SsElem<0> { using T = float; };
template <int DT> __device__ __forceinline__ float ss_load(const typename SsElem<DT>::T* p, long long i) {
  if constexpr (DT == 0) { return p[i]; }
  else if constexpr (DT == 1) { return __uint_as_float(static_cast<unsigned>(p[i]) << 16); }
  else { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(p[i])); return f; }
}
template <int DT> __device__ __forceinline__ void ss_store(typename SsElem<DT>::T* p, long long i, float v) {
  if constexpr (DT == 0) { p[i] = v; }
  else { unsigned short h;
    if (DT == 1) asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v)); else asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    p[i] = h; }
}
template <int DT, int BLOCK>
__global__ void __launch_bounds__(BLOCK) strided_scale(const typename SsElem<DT>::T* x, typename SsElem<DT>::T* y,
    long long B, long long S, long long H, long long D, long long xb, long long xs, long long xh, long long yb,
    long long ys, long long yh, float alpha) {
  const long long i = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;
  if (i >= B * S * H * D) return;
  const long long d = i % D, h = i / D % H, s = i / (D * H) % S, b = i / (D * H * S);
  ss_store<DT>(y, b * yb + s * ys + h * yh + d, alpha * ss_load<DT>(x, b * xb + s * xs + h * xh + d));
}

// Family strided_scale_tma (sm_90): a block loads x's box (1, 1, BH, D) at (b, s, h0) through its
// tensor map (the launcher encodes it with x's strides; heads past H read as zeros and are not
// stored), then writes y with plain stores.
template <int DT, int BH>
__global__ void __launch_bounds__(128) strided_scale_tma(const typename SsElem<DT>::T* x, typename SsElem<DT>::T* y,
    long long B, long long S, long long H, long long D, long long xb, long long xs, long long xh, long long yb,
    long long ys, long long yh, float alpha, const __grid_constant__ KtuneTensorMap mx) {
  using T = typename SsElem<DT>::T;
  extern __shared__ __align__(128) unsigned char ss_smem[];
  __shared__ __align__(8) unsigned long long bar;
  const long long h0 = (long long)blockIdx.x * BH, s = blockIdx.y, b = blockIdx.z;
  const unsigned bar_a = ktune_dev::async::smem_addr(&bar), dst = ktune_dev::async::smem_addr(ss_smem);
  if (threadIdx.x == 0) {
    ktune_dev::async::mbar_init(bar_a, 1);
    ktune_dev::async::fence_mbar_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    ktune_dev::async::mbar_expect_tx(bar_a, (unsigned)(BH * D * sizeof(T)));
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n"
                 :: "r"(dst), "l"(&mx), "r"(0), "r"((int)h0), "r"((int)s), "r"((int)b), "r"(bar_a) : "memory");
  }
  ktune_dev::async::mbar_wait(bar_a, 0);
  const T* tile = reinterpret_cast<const T*>(ss_smem);
  for (long long i = threadIdx.x; i < BH * D; i += blockDim.x) {
    const long long h = h0 + i / D, d = i % D;
    if (h < H) ss_store<DT>(y, b * yb + s * ys + h * yh + d, alpha * ss_load<DT>(tile, i));
  }
}
)";

int dt_code(DType d) { return d == DType::f32 ? 0 : d == DType::bf16 ? 1 : 2; }

Family strided_scale_family() {
  Family f("strided_scale_simple", "strided_scale_fixture.cu");
  f.source_text(kSource);
  f.op("strided_scale").dtypes({DType::f32, DType::bf16, DType::f16}).describe("one element a thread");
  f.param("BLOCK", {128, 256}, "threads per block");
  f.kernels([](const Config& c, const Problem& p) {
    return std::vector<std::string>{"strided_scale<" + std::to_string(dt_code(p.dtype)) + "," +
                                    std::to_string(c["BLOCK"]) + ">"};
  });
  f.launch([](const Config& c, const Problem& p) {
    LaunchStep s;
    int64_t n = 1;
    for (int64_t d : p.dims) n *= d;
    s.grid[0] = unsigned(std::max<int64_t>(1, (n + c["BLOCK"] - 1) / c["BLOCK"]));
    s.block[0] = unsigned(c["BLOCK"]);
    return LaunchPlan{{s}, 0, {}};
  });
  f.defaults([](const Problem&, const DeviceInfo&) {
    Config c;
    c.set("BLOCK", 256);
    return c;
  });
  return f;
}

// x through a 4-D tensor map: its innermost extent must be whole 16-byte units of at most 256
// elements, every stride and pointer 16-byte aligned (alignment class 16), the grid's y and z hold
// s and b.
Family strided_scale_tma_family() {
  Family f("strided_scale_tma", "strided_scale_fixture.cu");
  f.source_text(kSource);
  f.op("strided_scale").dtypes({DType::f32, DType::bf16, DType::f16}).describe("x's rows of heads by TMA");
  f.min_arch(90);
  f.param("BH", {1, 2, 4, 8}, "heads a block loads in one box");
  f.restrict("x's innermost extent is whole 16-byte units of at most 256 elements, strides 16-byte aligned", {},
             [](const Config&, const Problem& p, const DeviceInfo&) {
               return p.align == 16 && p.dims[3] <= 256 && p.dims[3] * element_bytes(p.dtype) % 16 == 0;
             })
      .restrict("the grid holds s and b", {}, [](const Config&, const Problem& p, const DeviceInfo&) {
        return p.dims[1] <= 65535 && p.dims[0] <= 65535;
      });
  f.kernels([](const Config& c, const Problem& p) {
    return std::vector<std::string>{"strided_scale_tma<" + std::to_string(dt_code(p.dtype)) + "," +
                                    std::to_string(c["BH"]) + ">"};
  });
  f.launch([](const Config& c, const Problem& p) {
    LaunchStep s;
    s.grid[0] = unsigned(std::max<int64_t>(1, (p.dims[2] + c["BH"] - 1) / c["BH"]));
    s.grid[1] = unsigned(std::max<int64_t>(1, p.dims[1]));
    s.grid[2] = unsigned(std::max<int64_t>(1, p.dims[0]));
    s.block[0] = 128;
    s.dynamic_smem = unsigned(c["BH"] * p.dims[3] * element_bytes(p.dtype));
    LaunchStep::TmaOperand x;
    x.operand = 0;
    x.box = {1, 1, unsigned(c["BH"]), unsigned(p.dims[3])};
    x.elem_bytes = unsigned(element_bytes(p.dtype));
    x.swizzle_bytes = 0;
    s.tma_maps = {x};
    return LaunchPlan{{s}, 0, {}};
  });
  f.defaults([](const Problem&, const DeviceInfo&) {
    Config c;
    c.set("BH", 4);
    return c;
  });
  return f;
}

OpInfo strided_scale_info() {
  OpInfo o;
  o.name = "strided_scale";
  o.about = "y = alpha * x over (b, s, h, d) tensors with their own strides (a test fixture)";
  o.dims = {"b", "s", "h", "d"};
  o.scalars = {{"alpha", 1.0}};
  o.validate = [](const Problem& p) {
    if (p.dtype == DType::tf32) throw UsageError("invalid strided_scale problem " + p.key() + ": tf32 is not a storage type");
    int64_t n = 1;
    for (int64_t d : p.dims) n *= std::max<int64_t>(d, 1);
    if (n > (int64_t(1) << 40)) throw UsageError("invalid strided_scale problem " + p.key() + ": too many elements");
  };
  const auto elements = [](const Problem& p) {
    double n = 1;
    for (int64_t d : p.dims) n *= double(d);
    return n;
  };
  o.flops = elements;
  o.min_bytes = [elements](const Problem& p) { return 2 * elements(p) * element_bytes(p.dtype); };
  o.runner = "buffers";
  o.operands = {OpInfo::Operand::shaped("x", false, {"b", "s", "h", "d"}),
                OpInfo::Operand::shaped("y", true, {"b", "s", "h", "d"})};
  // Walks (b, s, h, d) with each operand's own strides: the arrays are the buffers as laid out.
  o.reference = [](const Problem& p, const std::vector<const double*>& in, const std::vector<double*>& out,
                   const std::vector<double*>& mag) {
    const std::vector<int64_t> e = operand_extents(p, 0), xs = operand_strides(p, 0), ys = operand_strides(p, 1);
    const double alpha = double(float(p.scalar("alpha")));
    for (int64_t b = 0; b < e[0]; ++b)
      for (int64_t s = 0; s < e[1]; ++s)
        for (int64_t h = 0; h < e[2]; ++h)
          for (int64_t d = 0; d < e[3]; ++d) {
            const int64_t xi = b * xs[0] + s * xs[1] + h * xs[2] + d, yi = b * ys[0] + s * ys[1] + h * ys[2] + d;
            out[0][yi] = alpha * in[0][xi];
            mag[0][yi] = std::abs(out[0][yi]);
          }
  };
  o.roundings = 1;
  o.families = [] { return std::vector<Family>{strided_scale_family(), strided_scale_tma_family()}; };
  return o;
}

} // namespace

const OpInfo& strided_scale_op() {
  static const OpInfo& o = register_op(strided_scale_info());
  return o;
}

const char* strided_scale_source() { return kSource; }

} // namespace ktune::testing
