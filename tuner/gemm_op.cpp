#include "tuner/gemm_op.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "gemm/gemm_families.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "core/embedded.h"
#include "ktune/gemm_problem.h"
#include "runtime/gemm_launch.h"

namespace ktune {
namespace {

enum RefKernel : size_t { kFillUniform, kToF64, kCompare, kFillUniformHalf, kHalfToF64, kCompareHalf };

// A quiet NaN with a payload: "never written" is then told apart from a NaN a kernel computed.
constexpr unsigned kPoison = 0x7fc0deadu;
constexpr unsigned short kPoisonF16 = 0x7eadu, kPoisonBf16 = 0x7fedu; // the same for 16-bit C

int f16_flag(DType d) { return d == DType::f16 ? 1 : 0; }

size_t storage_rows(Layout l, int64_t rows, int64_t cols) { return size_t(l == Layout::row ? rows : cols); }

} // namespace

CompileRequest GemmOp::reference_request(const std::string& arch) {
  CompileRequest req;
  req.source = std::string(embedded_file("gemm/gemm_reference.cu"));
  req.source_name = "gemm/gemm_reference.cu";
  // In RefKernel's order.
  req.name_expressions = {"ktune_fill_uniform", "ktune_f32_to_f64", "ktune_gemm_compare",
                          "ktune_fill_uniform_half", "ktune_half_to_f64", "ktune_gemm_compare_half"};
  req.arch = arch;
  req.context = "GEMM reference kernels for " + arch;
  return req;
}

GemmOp::GemmOp(Compiler& compiler, const DeviceInfo& device) : device_(device) {
  const CompileRequest req = reference_request(device.arch);
  const auto k = compiler.compile(req);
  ref_ = std::make_unique<Module>(k->cubin, k->lowered_names, req.context);
  sums_ = DeviceBuffer(32, "verification sums");
  cublas_ = std::make_unique<Cublas>();
}

GemmOp::~GemmOp() = default;

double GemmOp::tolerance(const GemmProblem& p) {
  // Half precision: the reference is the exact product of the same rounded inputs, so what is
  // left is (1) rounding the result to the output type, at most its unit roundoff u per element
  // (2^-8 bf16, 2^-11 f16), hence at most u in the relative Frobenius norm, and (2) FP32
  // accumulation, bounded by K * 2^-24 relative to sum |a||b|, allowed at twice that (random
  // signs keep sum |a||b| within a small factor of |sum ab| for the inputs the tuner uses).
  const double acc = double(std::max<int64_t>(p.k, 0)) * std::ldexp(1.0, -23);
  switch (p.dtype) {
    case DType::f32: return 1e-5; // FP32 accumulation error grows ~ eps * sqrt(K): ~2e-6 at K = 32768
    case DType::tf32: return 3e-3;
    case DType::f16: return std::ldexp(1.0, -11) + acc;
    case DType::bf16: return std::ldexp(1.0, -8) + acc;
  }
  return 0;
}

double GemmOp::min_bytes(const GemmProblem& p) {
  // The op's count (A, B and C once) plus reading C when beta != 0, which a call's beta decides.
  return ktune::min_bytes(Problem(p)) + (p.beta != 0 ? double(element_bytes(p.dtype)) * double(p.m) * p.n : 0.0);
}

size_t GemmOp::a_elems() const { return std::max<size_t>(1, storage_rows(p_.a, p_.m, p_.k)) * size_t(p_.eff_lda()); }
size_t GemmOp::b_elems() const { return std::max<size_t>(1, storage_rows(p_.b, p_.k, p_.n)) * size_t(p_.eff_ldb()); }
size_t GemmOp::c_elems() const { return size_t(p_.m) * size_t(p_.eff_ldc()); }

void GemmOp::grow(DeviceBuffer& b, size_t bytes, const char* what) {
  if (b.bytes() < bytes) {
    b = DeviceBuffer(); // free first: the old and new buffer need not coexist
    b = DeviceBuffer(bytes, std::string(what) + " for " + p_.key());
  }
}

void GemmOp::ensure_workspace(size_t bytes) { grow(workspace_, bytes, "workspace (split-K sums, packed operands)"); }

void GemmOp::launch1d(size_t kernel, long long n, void** params, CUstream stream) {
  launch_grid_stride(*ref_, kernel, n, device_, params, stream);
}

void GemmOp::prepare(const GemmProblem& p, uint64_t seed) {
  p.validate();
  p_ = p;
  const size_t eb = element_bytes(p.dtype);
  grow(a_, a_elems() * eb, "A");
  grow(b_, b_elems() * eb, "B");
  grow(c_, c_elems() * eb, "C");
  grow(c0_, c_elems() * eb, "initial C");
  grow(a64_, a_elems() * 8, "FP64 copy of A");
  grow(b64_, b_elems() * 8, "FP64 copy of B");
  grow(ref_out_, c_elems() * 8, "FP64 reference");
  int f16 = f16_flag(p.dtype);
  auto fill = [&](const DeviceBuffer& buf, long long n, unsigned long long s) {
    void* ptr = reinterpret_cast<void*>(buf.ptr());
    void* params[] = {&ptr, &n, &s, &f16};
    launch1d(is_half(p.dtype) ? kFillUniformHalf : kFillUniform, n, params, nullptr); // f32 kernels ignore the last
  };
  // Distinct streams of the generator for A, B and C (seeds differ in the low bits, and splitmix
  // decorrelates neighbours).
  fill(a_, static_cast<long long>(a_elems()), seed * 4 + 1);
  fill(b_, static_cast<long long>(b_elems()), seed * 4 + 2);
  if (p.beta != 0) fill(c0_, static_cast<long long>(c_elems()), seed * 4 + 3);
  else if (is_half(p.dtype))
    check_cu(driver().cuMemsetD16Async(c0_.ptr(), p.dtype == DType::f16 ? kPoisonF16 : kPoisonBf16, c_elems(), nullptr),
             "cuMemsetD16Async", "poisoning C for " + p.key());
  else check_cu(driver().cuMemsetD32Async(c0_.ptr(), kPoison, c_elems(), nullptr), "cuMemsetD32Async", "poisoning C for " + p.key());
  reset_c(nullptr);
  check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", "preparing inputs for " + p.key());
}

KtuneGemmArgs GemmOp::args() const {
  return gemm_args(p_, a_.as<const float>(), b_.as<const float>(), c_.as<float>(), workspace_.as<float>());
}

void GemmOp::reset_c(CUstream stream) {
  (void)stream; // cuMemcpyDtoD is ordered with the legacy default stream, which every caller uses
  check_cu(driver().cuMemcpyDtoD(c_.ptr(), c0_.ptr(), c_elems() * element_bytes(p_.dtype)), "cuMemcpyDtoD",
           "restoring C for " + p_.key());
}

VerifyResult GemmOp::verify(CUstream stream) {
  KtuneGemmArgs a = args();
  const bool half = is_half(p_.dtype);
  int f16 = f16_flag(p_.dtype);
  const void* c0 = reinterpret_cast<const void*>(c0_.ptr());
  double* ref = ref_out_.as<double>();
  auto widen = [&](const void* x, double* y, size_t n) {
    long long count = static_cast<long long>(n);
    void* params[] = {&x, &y, &count, &f16};
    launch1d(half ? kHalfToF64 : kToF64, count, params, stream);
  };
  widen(a.A, a64_.as<double>(), a_elems());
  widen(a.B, b64_.as<double>(), b_elems());
  if (p_.beta != 0) widen(c0, ref, c_elems()); // DGEMM then computes alpha * A * B + beta * C0 in place
  cublas_->dgemm(p_, a64_.as<const double>(), b64_.as<const double>(), ref, stream);
  check_cu(driver().cuMemsetD32Async(sums_.ptr(), 0, 8, stream), "cuMemsetD32Async", "clearing verification sums");
  const void* c = reinterpret_cast<const void*>(c_.ptr());
  int m = a.M, n = a.N;
  long long ldc = a.ldc;
  double* sums = sums_.as<double>();
  unsigned long long* counts = reinterpret_cast<unsigned long long*>(sums + 2);
  void* params[] = {&c, &c0, &ref, &m, &n, &ldc, &sums, &counts, &f16};
  launch1d(half ? kCompareHalf : kCompare, static_cast<long long>(c_elems()), params, stream);
  check_cu(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", "verifying " + p_.key());
  double host[4];
  check_cu(driver().cuMemcpyDtoH(host, sums_.ptr(), 32), "cuMemcpyDtoH", "reading verification sums");
  VerifyResult r;
  uint64_t cnt[2];
  std::memcpy(cnt, host + 2, 16);
  r.nonfinite = cnt[0];
  r.stray_writes = cnt[1];
  r.rel_error = host[1] > 0 ? std::sqrt(host[0] / host[1]) : std::sqrt(host[0]);
  r.pass = r.nonfinite == 0 && r.stray_writes == 0 && r.rel_error <= tolerance(p_);
  return r;
}

VerifyResult GemmOp::check(const GemmProblem& p, uint64_t seed,
                           const std::function<void(const KtuneGemmArgs&, CUstream)>& run, CUstream stream) {
  prepare(p, seed);
  run(args(), stream);
  check_cu(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", "running the kernel under test on " + p.key());
  return verify(stream);
}

namespace {

class GemmRunner : public OpRunner {
 public:
  GemmRunner(Compiler& compiler, const DeviceInfo& device) : op_(compiler, device) {}
  void prepare(const Problem& p, uint64_t seed) override {
    p_ = GemmProblem::from(p);
    op_.prepare(p_, seed);
  }
  void ensure_workspace(size_t bytes) override { op_.ensure_workspace(bytes); }
  void launch(Module& m, const LaunchPlan& plan, CUstream stream) override { launch_gemm(m, plan, op_.args(), stream); }
  VerifyResult verify(CUstream stream) override { return op_.verify(stream); }
  void run_baseline(CUstream stream) override { op_.cublas().gemm(p_, op_.args(), stream); }
  void run_runtime(Runtime& rt, CUstream stream) override {
    const KtuneGemmArgs a = op_.args();
    rt.gemm_ex(p_, a.A, a.B, a.C, p_.alpha, p_.beta, stream);
  }

 private:
  GemmOp op_;
  GemmProblem p_;
};

} // namespace

std::unique_ptr<OpRunner> make_gemm_runner(Compiler& compiler, const DeviceInfo& device) {
  return std::make_unique<GemmRunner>(compiler, device);
}

} // namespace ktune
