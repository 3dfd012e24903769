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

// In reference_request's order.
enum RefKernel : size_t {
  kFillUniform, kFillUniformHalf, kCountChangedInputs, kCountChangedBytes, kToF64, kHalfToF64, kAbsF64, kCompare, kCompareHalf
};

// A quiet NaN with a payload: "never written" is then told apart from a NaN a kernel computed.
constexpr unsigned kPoison = 0x7fc0deadu;
constexpr unsigned short kPoisonF16 = 0x7eadu, kPoisonBf16 = 0x7fedu; // the same for 16-bit C

// Guard regions: wide enough that a write a row or a tile past a buffer lands in one, and a
// byte no kernel writes by accident (0xa5a5a5a5 is no float a GEMM produces from these inputs).
constexpr size_t kGuardBytes = 64 * 1024;
constexpr int kGuardByte = 0xa5;

// Device layout of the check counts: the compare kernel's seven words (GemmOp::Sums after the two
// sums), then the input and guard counts.
constexpr size_t kCountInputs = 5, kCountGuards = 6, kCounts = 8;

int f16_flag(DType d) { return d == DType::f16 ? 1 : 0; }

size_t storage_rows(Layout l, int64_t rows, int64_t cols) { return size_t(l == Layout::row ? rows : cols); }

// Generator streams of A, B and C for a seed (seeds differ in the low bits, and splitmix
// decorrelates neighbours).
unsigned long long stream_of(uint64_t seed, int operand) { return seed * 4 + unsigned(operand); }

} // namespace

CompileRequest GemmOp::reference_request(const std::string& arch) {
  CompileRequest req;
  req.source = std::string(embedded_file("gemm/gemm_reference.cu"));
  req.source_name = "gemm/gemm_reference.cu";
  // In RefKernel's order.
  req.name_expressions = {"ktune_fill_uniform", "ktune_fill_uniform_half", "ktune_count_changed_inputs",
                          "ktune_count_changed_bytes", "ktune_f32_to_f64", "ktune_half_to_f64",
                          "ktune_abs_f64", "ktune_gemm_compare", "ktune_gemm_compare_half"};
  req.arch = arch;
  req.context = "GEMM reference kernels for " + arch;
  return req;
}

GemmOp::GemmOp(Compiler& compiler, const DeviceInfo& device) : device_(device) {
  const CompileRequest req = reference_request(device.arch);
  const auto k = compiler.compile(req);
  ref_ = std::make_unique<Module>(k->cubin, k->lowered_names, req.context);
  sums_ = DeviceBuffer(3 * sizeof(double), "verification sums");
  counts_ = DeviceBuffer(kCounts * sizeof(unsigned long long), "verification counts");
  cublas_ = std::make_unique<Cublas>();
}

GemmOp::~GemmOp() = default;

// The derivation, with the measured errors of correct kernels beside each bound, is in
// docs/TEMPLATES.md ("Verification"); in short:
// - the reference is exact on the same rounded inputs, so what a correct kernel adds is FP32
//   accumulation and one rounding to the output type;
// - FP32 accumulation of K products: each add rounds (truncating hardware, as the tensor cores'
//   adds, by up to 2 u32), at most 2K u32 of mag in all; errors of random sign grow like sqrt(K)
//   (Higham and Mary's probabilistic bound; lambda 8 leaves a correct element out with probability
//   ~1e-14), so gamma = min(2K, 8 sqrt(K)) u32, plus 4 u32 for the epilogue's roundings (alpha,
//   beta, split-K's reduce);
// - 3xTF32 drops the small x small product and rounds the small halves to TF32: 3 * 2^-22 of
//   |a||b| a product, on top;
// - the output rounding: u_out |c| <= u_out |ref| + u_out gamma mag, so gamma grows by (1 + u_out);
// - an epilogue may round alpha A B to the output type before it adds beta C (cuBLAS's half GEMMs
//   do): u_prod |ref - beta C0| where beta != 0;
// - the Frobenius bound of half precision: rounding to nearest measures 0.42-0.44 u_out over many
//   elements whatever K (f16 at K = 32768 included), truncation ~0.85 u_out; 0.5 u_out, plus
//   1.5 u_out / sqrt(elements) for the fluctuation of small results, in quadrature with 0.1 K u32
//   for the tensor cores' accumulation (4x what gemm_wgmma measures at K = 32768); times
//   sqrt(1 + ||ref - beta C0||^2 / ||ref||^2) where beta != 0 (the second rounding above);
// - FP32: within 2x cuBLAS SGEMM's error on the same inputs (another summation order), or within
//   1.5x of what sequential FP32 accumulation measures, 0.30 sqrt(K) u32, where cuBLAS splits K and
//   is the more accurate; 3xTF32 within 1.5x cuBLAS SGEMM's (below it at the compute-bound shapes,
//   up to 1.44x measured where cuBLAS splits a long K), never below 2^-21, the split's own error
//   (~2^-22 relative whatever K), above FFMA's for K under ~500.
GemmErrorRule GemmOp::rule(const GemmProblem& p, Numerics numerics) {
  const double u32 = std::ldexp(1.0, -24), k = double(std::max<int64_t>(p.k, 0));
  GemmErrorRule r;
  double gamma = (std::min(2 * k, 8 * std::sqrt(k)) + 4) * u32;
  if (numerics == Numerics::tf32x3) gamma += 3 * std::ldexp(1.0, -22);
  switch (p.dtype) {
    case DType::f32:
    case DType::tf32:
      r.u_out = u32;
      r.tiny = std::ldexp(1.0, -126); // a result under FP32's smallest normal may be flushed to zero
      if (p.dtype == DType::tf32) gamma += std::ldexp(1.0, -10); // both inputs rounded to TF32
      r.baseline_factor = numerics == Numerics::tf32x3 ? 1.5 : 2.0;
      r.norm_floor = numerics == Numerics::tf32x3 ? std::ldexp(1.0, -21) : (0.45 * std::sqrt(k) + 2) * u32;
      if (p.dtype == DType::tf32) r.norm_floor = std::ldexp(1.0, -10);
      break;
    case DType::bf16:
    case DType::f16: {
      r.u_out = unit_roundoff(p.dtype);
      // bf16 shares FP32's exponent range (flushing under 2^-126); f16 rounds to subnormals
      // spaced 2^-24 apart.
      r.tiny = p.dtype == DType::bf16 ? std::ldexp(1.0, -126) : std::ldexp(1.0, -25);
      const double elements = std::max(1.0, double(std::max<int64_t>(p.m, 0)) * double(std::max<int64_t>(p.n, 0)));
      r.norm = std::hypot((0.5 + 1.5 / std::sqrt(elements)) * r.u_out, 0.1 * k * u32);
      if (p.beta != 0) r.u_prod = r.u_out, r.beta = p.beta;
      break;
    }
    case DType::f64: throw UsageError("gemm takes no f64 problems: " + p.key()); // validate refuses it first
  }
  r.gamma = gamma * (1 + r.u_out);
  return r;
}

double GemmErrorRule::norm_bound(double baseline_error, double product_ratio) const {
  if (norm > 0) return norm * std::sqrt(1 + (u_prod > 0 ? product_ratio * product_ratio : 0.0));
  return std::max(baseline_factor * std::max(baseline_error, 0.0), norm_floor);
}

double GemmOp::tolerance(const GemmProblem& p) {
  const GemmErrorRule r = rule(p);
  return r.norm > 0 ? r.norm : r.norm_floor;
}

double GemmOp::min_bytes(const GemmProblem& p) {
  // The op's count (A, B and C once) plus reading C when beta != 0, which a call's beta decides.
  return ktune::min_bytes(Problem(p)) + (p.beta != 0 ? double(element_bytes(p.dtype)) * double(p.m) * p.n : 0.0);
}

size_t GemmOp::a_elems() const { return std::max<size_t>(1, storage_rows(p_.a, p_.m, p_.k)) * size_t(p_.eff_lda()); }
size_t GemmOp::b_elems() const { return std::max<size_t>(1, storage_rows(p_.b, p_.k, p_.n)) * size_t(p_.eff_ldb()); }
size_t GemmOp::c_elems() const { return size_t(p_.m) * size_t(p_.eff_ldc()); }

CUdeviceptr GemmOp::Guarded::ptr() const { return mem.ptr() ? mem.ptr() + kGuardBytes + offset : 0; }

void GemmOp::grow(DeviceBuffer& b, size_t bytes, const char* what) {
  if (b.bytes() < bytes) {
    b = DeviceBuffer(); // free first: the old and new buffer need not coexist
    b = DeviceBuffer(bytes, std::string(what) + " for " + p_.key());
  }
}

// Sizes g for `bytes` at `offset` (< 256) and fills all of it, guards and data, with the guard
// byte: the data is written next, and the guards must hold the byte when the kernel starts.
void GemmOp::place(Guarded& g, size_t bytes, size_t offset, const char* what) {
  grow(g.mem, 2 * kGuardBytes + 256 + bytes, what);
  g.bytes = bytes, g.offset = offset;
  check_cu(driver().cuMemsetD8Async(g.mem.ptr(), kGuardByte, g.mem.bytes(), nullptr), "cuMemsetD8Async",
           std::string("guard regions of ") + what + " for " + p_.key());
}

void GemmOp::ensure_workspace(size_t bytes) {
  if (bytes == 0 && !workspace_.mem.ptr()) return; // none asked for: the kernels get a null workspace
  place(workspace_, bytes, 0, "workspace (split-K sums, packed operands)");
}

void GemmOp::launch1d(size_t kernel, long long n, void** params, CUstream stream) {
  launch_grid_stride(*ref_, kernel, n, device_, params, stream);
}

void GemmOp::prepare(const GemmProblem& p, uint64_t seed, Conditions conditions) {
  p.validate();
  p_ = p, seed_ = seed, baseline_error_ = -1;
  size_t offset = 0;
  conditions_ = to_string(conditions);
  if (conditions == Conditions::as_served) {
    p_.alpha = kServedAlpha, p_.beta = kServedBeta;
    offset = least_aligned_offset(p);
    char buf[96];
    std::snprintf(buf, sizeof buf, " (alpha %g, beta %g, pointers %zu B past a 256-byte boundary)", double(p_.alpha),
                  double(p_.beta), offset);
    conditions_ += buf;
  }
  const size_t eb = element_bytes(p.dtype);
  place(a_, a_elems() * eb, offset, "A");
  place(b_, b_elems() * eb, offset, "B");
  place(c_, c_elems() * eb, offset, "C");
  if (workspace_.mem.ptr()) place(workspace_, workspace_.bytes, 0, "workspace");
  grow(c0_, c_elems() * eb, "initial C");
  grow(a64_, a_elems() * 8, "FP64 copy of A");
  grow(b64_, b_elems() * 8, "FP64 copy of B");
  grow(ref_out_, c_elems() * 8, "FP64 reference");
  grow(mag_, c_elems() * 8, "FP64 magnitudes");
  int f16 = f16_flag(p.dtype);
  auto fill = [&](CUdeviceptr buf, long long n, unsigned long long s) {
    void* ptr = reinterpret_cast<void*>(buf);
    void* params[] = {&ptr, &n, &s, &f16};
    launch1d(is_half(p.dtype) ? kFillUniformHalf : kFillUniform, n, params, nullptr); // f32 kernels ignore the last
  };
  fill(a_.ptr(), static_cast<long long>(a_elems()), stream_of(seed, 1));
  fill(b_.ptr(), static_cast<long long>(b_elems()), stream_of(seed, 2));
  if (p_.beta != 0) fill(c0_.ptr(), static_cast<long long>(c_elems()), stream_of(seed, 3));
  else if (is_half(p.dtype))
    check_cu(driver().cuMemsetD16Async(c0_.ptr(), p.dtype == DType::f16 ? kPoisonF16 : kPoisonBf16, c_elems(), nullptr),
             "cuMemsetD16Async", "poisoning C for " + p.key());
  else check_cu(driver().cuMemsetD32Async(c0_.ptr(), kPoison, c_elems(), nullptr), "cuMemsetD32Async", "poisoning C for " + p.key());
  reset_c(nullptr);
  compute_reference();
  check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", "preparing inputs and reference for " + p.key());
}

// Before the kernel runs: the reference alpha A B + beta C0 and the magnitudes |alpha| |A| |B| +
// |beta| |C0|, both cuBLAS DGEMM on the widened inputs (exact products, FP64 sums), on the legacy
// stream after the fills.
void GemmOp::compute_reference() {
  const bool half = is_half(p_.dtype);
  int f16 = f16_flag(p_.dtype);
  auto widen = [&](CUdeviceptr x, double* y, size_t n, int take_abs) {
    const void* xp = reinterpret_cast<const void*>(x);
    long long count = static_cast<long long>(n);
    void* half_params[] = {&xp, &y, &count, &f16, &take_abs};
    void* f32_params[] = {&xp, &y, &count, &take_abs};
    launch1d(half ? kHalfToF64 : kToF64, count, half ? half_params : f32_params, nullptr);
  };
  auto abs_in_place = [&](double* y, size_t n) {
    long long count = static_cast<long long>(n);
    void* params[] = {&y, &count};
    launch1d(kAbsF64, count, params, nullptr);
  };
  widen(a_.ptr(), a64_.as<double>(), a_elems(), 0);
  widen(b_.ptr(), b64_.as<double>(), b_elems(), 0);
  if (p_.beta != 0) widen(c0_.ptr(), ref_out_.as<double>(), c_elems(), 0); // DGEMM adds beta * C0 in place
  cublas_->dgemm(p_, a64_.as<const double>(), b64_.as<const double>(), ref_out_.as<double>(), nullptr);
  abs_in_place(a64_.as<double>(), a_elems());
  abs_in_place(b64_.as<double>(), b_elems());
  if (p_.beta != 0) widen(c0_.ptr(), mag_.as<double>(), c_elems(), 1);
  GemmProblem pm = p_;
  pm.alpha = std::abs(p_.alpha), pm.beta = std::abs(p_.beta);
  cublas_->dgemm(pm, a64_.as<const double>(), b64_.as<const double>(), mag_.as<double>(), nullptr);
}

KtuneGemmArgs GemmOp::args() const {
  return gemm_args(p_, reinterpret_cast<const float*>(a_.ptr()), reinterpret_cast<const float*>(b_.ptr()),
                   reinterpret_cast<float*>(c_.ptr()), reinterpret_cast<float*>(workspace_.ptr()));
}

void GemmOp::reset_c(CUstream stream) {
  (void)stream; // cuMemcpyDtoD is ordered with the legacy default stream, which every caller uses
  check_cu(driver().cuMemcpyDtoD(c_.ptr(), c0_.ptr(), c_elems() * element_bytes(p_.dtype)), "cuMemcpyDtoD",
           "restoring C for " + p_.key());
}

// Queues the guard check of g (both sides, the offset's slack included) into counts[kCountGuards].
void GemmOp::changed_guard_bytes(const Guarded& g, CUstream stream) {
  if (!g.mem.ptr()) return;
  unsigned long long* counts = counts_.as<unsigned long long>() + kCountGuards;
  int pattern = kGuardByte;
  auto count = [&](CUdeviceptr from, size_t n) {
    const unsigned char* x = reinterpret_cast<const unsigned char*>(from);
    long long len = static_cast<long long>(n);
    void* params[] = {&x, &len, &pattern, &counts};
    launch1d(kCountChangedBytes, len, params, stream);
  };
  count(g.mem.ptr(), kGuardBytes + g.offset);
  const CUdeviceptr end = g.ptr() + g.bytes;
  count(end, g.mem.ptr() + g.mem.bytes() - end);
}

// Queues the check that an operand still holds what prepare's fill wrote into counts[kCountInputs].
void GemmOp::changed_inputs(const Guarded& g, size_t elems, unsigned long long seed, CUstream stream) {
  const void* x = reinterpret_cast<const void*>(g.ptr());
  long long n = static_cast<long long>(elems);
  int half = is_half(p_.dtype) ? 1 : 0, f16 = f16_flag(p_.dtype);
  unsigned long long* counts = counts_.as<unsigned long long>() + kCountInputs;
  void* params[] = {&x, &n, &seed, &half, &f16, &counts};
  launch1d(kCountChangedInputs, n, params, stream);
}

GemmOp::Sums GemmOp::compare(CUdeviceptr c, const GemmErrorRule& rule, CUstream stream) {
  check_cu(driver().cuMemsetD8Async(sums_.ptr(), 0, sums_.bytes(), stream), "cuMemsetD8Async", "clearing verification sums");
  check_cu(driver().cuMemsetD8Async(counts_.ptr(), 0, counts_.bytes(), stream), "cuMemsetD8Async", "clearing verification counts");
  const void* cp = reinterpret_cast<const void*>(c);
  const void* c0 = reinterpret_cast<const void*>(c0_.ptr());
  const double* ref = ref_out_.as<const double>();
  const double* mag = mag_.as<const double>();
  int m = int(p_.m), n = int(p_.n), f16 = f16_flag(p_.dtype);
  long long ldc = p_.eff_ldc();
  struct {
    double u_out, gamma, tiny, u_prod, beta;
  } element{rule.u_out, rule.gamma, rule.tiny, rule.u_prod, rule.beta}; // KtuneElementRule's layout
  double* sums = sums_.as<double>();
  unsigned long long* counts = counts_.as<unsigned long long>();
  void* params[] = {&cp, &c0, &ref, &mag, &m, &n, &ldc, &element, &sums, &counts, &f16};
  launch1d(is_half(p_.dtype) ? kCompareHalf : kCompare, static_cast<long long>(c_elems()), params, stream);
  if (c == c_.ptr()) { // the kernel under test: its inputs and guards too
    changed_inputs(a_, a_elems(), stream_of(seed_, 1), stream);
    changed_inputs(b_, b_elems(), stream_of(seed_, 2), stream);
    for (const Guarded* g : {&a_, &b_, &c_, &workspace_}) changed_guard_bytes(*g, stream);
  }
  check_cu(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", "verifying " + p_.key());
  Sums s{};
  double host_sums[3];
  unsigned long long host_counts[kCounts];
  check_cu(driver().cuMemcpyDtoH(host_sums, sums_.ptr(), sizeof host_sums), "cuMemcpyDtoH", "reading verification sums");
  check_cu(driver().cuMemcpyDtoH(host_counts, counts_.ptr(), sizeof host_counts), "cuMemcpyDtoH", "reading verification counts");
  s.d2 = host_sums[0], s.r2 = host_sums[1], s.p2 = host_sums[2];
  s.nonfinite = host_counts[0], s.stray = host_counts[1], s.over = host_counts[2], s.worst_bits = host_counts[3];
  s.where = host_counts[4], s.inputs = host_counts[kCountInputs], s.guards = host_counts[kCountGuards];
  return s;
}

double GemmOp::baseline_error(CUstream stream) {
  if (baseline_error_ >= 0) return baseline_error_;
  grow(base_c_, c_elems() * element_bytes(p_.dtype), "baseline C");
  check_cu(driver().cuMemcpyDtoD(base_c_.ptr(), c0_.ptr(), c_elems() * element_bytes(p_.dtype)), "cuMemcpyDtoD",
           "initial C for the baseline at " + p_.key());
  KtuneGemmArgs a = args();
  a.C = base_c_.as<float>();
  cublas_->gemm(p_, a, stream);
  baseline_error_ = compare(base_c_.ptr(), rule(p_), stream).rel_error();
  return baseline_error_;
}

VerifyResult GemmOp::verify(CUstream stream, Numerics numerics) {
  const GemmErrorRule rule = GemmOp::rule(p_, numerics);
  VerifyResult r;
  r.conditions = conditions_;
  if (!is_half(p_.dtype)) r.baseline_error = baseline_error(stream);
  const Sums s = compare(c_.ptr(), rule, stream);
  r.nonfinite = s.nonfinite;
  r.stray_writes = s.stray;
  r.violations = s.over;
  double worst;
  std::memcpy(&worst, &s.worst_bits, sizeof worst);
  r.worst_ratio = worst;
  r.worst_index = s.over ? int64_t(s.where) : -1;
  r.input_writes = s.inputs;
  r.guard_writes = s.guards;
  r.rel_error = s.rel_error();
  r.norm_bound = rule.norm_bound(r.baseline_error, s.r2 > 0 ? std::sqrt(s.p2 / s.r2) : 0.0);
  r.pass = r.nonfinite == 0 && r.stray_writes == 0 && r.violations == 0 && r.input_writes == 0 && r.guard_writes == 0 &&
           r.rel_error <= r.norm_bound;
  return r;
}

VerifyResult GemmOp::check(const GemmProblem& p, uint64_t seed, const std::function<void(const KtuneGemmArgs&, CUstream)>& run,
                           CUstream stream, Numerics numerics, Conditions conditions) {
  prepare(p, seed, conditions);
  run(args(), stream);
  check_cu(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", "running the kernel under test on " + p.key());
  return verify(stream, numerics);
}

namespace {

class GemmRunner : public OpRunner {
 public:
  GemmRunner(Compiler& compiler, const DeviceInfo& device) : op_(compiler, device) {}
  void prepare(const Problem& p, uint64_t seed) override { prepare(p, seed, Conditions::as_timed); }
  void prepare(const Problem& p, uint64_t seed, Conditions c) override { op_.prepare(GemmProblem::from(p), seed, c); }
  void ensure_workspace(size_t bytes) override { op_.ensure_workspace(bytes); }
  void launch(Module& m, const LaunchPlan& plan, CUstream stream) override { launch_gemm(m, plan, op_.args(), stream); }
  VerifyResult verify(CUstream stream, Numerics numerics) override { return op_.verify(stream, numerics); }
  void run_baseline(CUstream stream) override { op_.cublas().gemm(op_.problem(), op_.args(), stream); }
  void run_runtime(Runtime& rt, CUstream stream) override {
    const GemmProblem& p = op_.problem();
    const KtuneGemmArgs a = op_.args();
    rt.gemm_ex(p, a.A, a.B, a.C, p.alpha, p.beta, stream);
  }

 private:
  GemmOp op_;
};

} // namespace

std::unique_ptr<OpRunner> make_gemm_runner(Compiler& compiler, const DeviceInfo& device) {
  return std::make_unique<GemmRunner>(compiler, device);
}

} // namespace ktune
