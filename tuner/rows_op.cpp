#include "tuner/rows_op.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "core/embedded.h"
#include "core/half.h"
#include "ktune/compiler.h"
#include "ktune/error.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/rows_launch.h"

namespace ktune {

double rows_tolerance(DType out) {
  // f32 outputs: the 1e-5 alone (it covers their rounding many times over).
  return (is_half(out) ? unit_roundoff(out) : 0.0) + 1e-5;
}

double rows_subnormal_half_spacing(DType out) {
  return std::ldexp(1.0, out == DType::f16 ? -25 : out == DType::bf16 ? -134 : -150);
}

// 16-bit outputs: the whole allowance, which is what RULE implies summed over the output, so the
// norm checks nothing the elements do not; on outputs of 1000 elements and more the bound was
// within 1.09x (bf16) and 1.59x (f16, 131072 columns) the correctly rounded output's error.
// f32: an eighth. e is a worst-case-style bound per element; a correct kernel's error over a whole
// output uses a small part of it: at most 2.1 % of ||2 e|| beyond the correctly rounded output's
// error over 845 configs on an H200 (every family, each op and dtype, scale 0.7 and 40: 713
// sampled, 132 defaults), so an eighth leaves 6x. The norm then catches an error made everywhere
// that each element's bound lets through: a relative ~5e-6 (LayerNorm with eps 5e-5 for 1e-5 on
// rows of variance ~3) fails it.
double rows_allowance_share(DType out) { return out == DType::f32 ? 1.0 / 8 : 1.0; }

VerifyResult rows_verdict(const RowsCheckSums& s, DType out) {
  VerifyResult r;
  r.nonfinite = s.nonfinite;
  r.stray_writes = s.stray_writes;
  r.violations = s.violations;
  r.worst_ratio = s.worst_ratio;
  r.worst_index = s.violations ? static_cast<int64_t>(s.first_violation) : -1;
  const double err = std::sqrt(s.err2), norm = std::sqrt(s.ref2);
  const double allowed = std::sqrt(s.ideal2) + rows_allowance_share(out) * std::sqrt(s.allow2);
  r.rel_error = norm > 0 ? err / norm : err;
  r.norm_bound = norm > 0 ? allowed / norm : allowed;
  r.pass = s.nonfinite == 0 && s.stray_writes == 0 && s.violations == 0 && err <= allowed;
  return r;
}

CompileRequest rows_reference_request(const std::string& arch, const OpInfo& op) {
  if (op.row_op < 0) throw Error("op " + op.name + " declares no row-op code (OpInfo::row_op) for the device reference");
  CompileRequest req;
  // The op's check, KtuneRowCheck<row_op>, from its folder (kernel_templates/<op>/<op>_check.h).
  req.source = std::string(embedded_file("rows/rows_reference.cu")) + "\n#include \"" + op.name + "_check.h\"\n";
  req.source_name = "rows/rows_reference.cu";
  req.name_expressions = {"ktune_rows_fill", "ktune_rows_verify<" + std::to_string(op.row_op) + ">"}; // RefKernel's order
  req.arch = arch;
  req.context = op.name + " reference kernels for " + arch;
  return req;
}

namespace {

// Host copies in the device's element type: values are generated as floats and rounded to the
// dtype, as the kernel reads them.
struct HostArray {
  DType dtype = DType::f32;
  std::vector<unsigned char> bytes;
  void resize(DType d, size_t n) {
    dtype = d;
    bytes.assign(n * size_t(element_bytes(d)), 0);
  }
  void set(size_t i, float v) {
    if (dtype == DType::f32) std::memcpy(&bytes[i * 4], &v, 4);
    else {
      const uint16_t h = dtype == DType::bf16 ? half::to_bf16(v) : half::to_f16(v);
      std::memcpy(&bytes[i * 2], &h, 2);
    }
  }
};

// The verification kernels of rows_reference.cu, in this order.
enum RefKernel : size_t { kFill, kVerify };

// ktune_rows_verify's output: counts, then the Frobenius sums (rows_reference.cu).
constexpr size_t kCheckWords = 9;

class RowsRunner : public OpRunner {
 public:
  RowsRunner(Compiler& compiler, const DeviceInfo& device) : compiler_(compiler), device_(device) {
    check_ = DeviceBuffer(kCheckWords * 8, "row-op check sums");
  }

  void prepare(const Problem& p, uint64_t seed) override { prepare_at(p, seed, 0); }

  // As served: every scalar of the op away from its default (8x it; 0.5 where it is 0: a kernel
  // that ignores the argument shows), and x, y, weight and bias at the least-aligned offset p's
  // alignment class admits.
  void prepare(const Problem& p, uint64_t seed, Conditions c) override {
    if (c == Conditions::as_timed) return prepare_at(p, seed, 0);
    Problem q = p;
    for (const auto& [name, value] : op_info(p.op).scalars) q.scalars[name] = value != 0 ? value * 8 : 0.5;
    prepare_at(q, seed, least_aligned_offset(p));
  }

  void prepare_at(const Problem& p, uint64_t seed, size_t offset) {
    const bool same_inputs =
        have_inputs_ && p.key() == p_.key() && p.ld == p_.ld && seed == seed_ && offset == offset_;
    p_ = p, seed_ = seed, offset_ = offset, info_ = &op_info(p.op);
    ref_ = &reference_module(*info_);
    rows_ = p.dims[0], cols_ = p.dims[1], ldx_ = p.ld[0], ldy_ = p.ld[1];
    eb_ = element_bytes(p.dtype);
    if (!same_inputs) generate();
    // Poison y, padding included: every byte 0xff is a NaN in f32, bf16 and f16, so an unwritten
    // element fails the finiteness check and a write into the padding shows as a changed element.
    check_cu(driver().cuMemsetD8Async(at(y_), 0xff, y_bytes(), nullptr), "cuMemsetD8Async", "poisoning y of " + p_.key());
  }

  void ensure_workspace(size_t bytes) override {
    if (bytes) throw Error("row kernels take no workspace, the plan asks for " + std::to_string(bytes) + " bytes");
  }

  void launch(Module& m, const LaunchPlan& plan, CUstream stream) override { launch_rows(m, plan, args(), stream); }

  // Every element of every row against the FP64 reference on the device, one block a row
  // (grid-stride): rows_check.h's rule per element, the padding untouched, then rows_verdict.
  VerifyResult verify(CUstream stream, Numerics) override {
    check_cu(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", "before verifying " + p_.key());
    check_cu(driver().cuMemsetD8Async(check_.ptr(), 0, check_.bytes(), nullptr), "cuMemsetD8Async",
             "clearing the check sums of " + p_.key());
    check_cu(driver().cuMemsetD8Async(check_.ptr() + 3 * 8, 0xff, 8, nullptr), "cuMemsetD8Async",
             "clearing the check sums of " + p_.key());
    KtuneRowsArgs a = args();
    int dt = dt_code();
    CUdeviceptr out = check_.ptr();
    void* params[] = {&a, &dt, &out};
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(rows_, 16LL * std::max(1, device_.sm_count)));
    const unsigned grid[3] = {blocks, 1, 1}, block[3] = {256, 1, 1}; // block: rows_reference.cu's kThreads
    ref_->launch(kVerify, grid, block, 0, nullptr, params);          // legacy stream: ordered with the launches
    uint64_t w[kCheckWords];
    check_cu(driver().cuMemcpyDtoH(w, check_.ptr(), sizeof w), "cuMemcpyDtoH", "reading the check sums of " + p_.key());
    RowsCheckSums s;
    s.nonfinite = w[0], s.stray_writes = w[1], s.violations = w[2], s.first_violation = w[3];
    double d[5];
    std::memcpy(d, &w[4], sizeof d);
    s.worst_ratio = d[0], s.err2 = d[1], s.ref2 = d[2], s.ideal2 = d[3], s.allow2 = d[4];
    VerifyResult r = rows_verdict(s, p_.dtype);
    r.conditions = conditions_text(offset_);
    return r;
  }

  void run_runtime(Runtime& rt, CUstream stream) override {
    const KtuneRowsArgs a = args();
    rt.rows(p_, a.x, a.y, a.weight, a.bias, stream);
  }

 private:
  size_t x_bytes() const { return size_t((rows_ - 1) * ldx_ + cols_) * size_t(eb_); }
  size_t y_bytes() const { return size_t((rows_ - 1) * ldy_ + cols_) * size_t(eb_); }
  int dt_code() const { return p_.dtype == DType::f32 ? 0 : p_.dtype == DType::bf16 ? 1 : 2; }

  KtuneRowsArgs args() const {
    return rows_args(p_, reinterpret_cast<const void*>(at(x_)), reinterpret_cast<void*>(at(y_)),
                     info_->row_vectors >= 1 ? reinterpret_cast<const void*>(at(w_)) : nullptr,
                     info_->row_vectors >= 2 ? reinterpret_cast<const void*>(at(b_)) : nullptr);
  }

  // A buffer's data: offset_ bytes past its (256-byte aligned) start.
  CUdeviceptr at(const DeviceBuffer& b) const { return b.ptr() + offset_; }

  // Room for the data at any offset under 256 bytes.
  static void grow(DeviceBuffer& b, size_t data_bytes, const std::string& what) {
    const size_t bytes = data_bytes + 256;
    if (b.bytes() < bytes) {
      b = DeviceBuffer(); // free first: the old and new buffers need not fit together
      b = DeviceBuffer(bytes, what);
    }
  }

  // x uniform in [-3, 3) (softmax rows then span e^6 between their largest and smallest terms),
  // filled on the device, padding included; weight in [0.5, 1.5), bias in [-0.5, 0.5) from the
  // host (one row each). All rounded to the dtype; the device reference reads them where the
  // kernel does.
  void generate() {
    have_inputs_ = false; // until all of it is in place: a failure part-way must not be reused
    grow(x_, x_bytes(), "x of " + p_.key());
    grow(y_, y_bytes(), "y of " + p_.key());
    grow(w_, size_t(cols_ * eb_), "weight of " + p_.key());
    grow(b_, size_t(cols_ * eb_), "bias of " + p_.key());
    CUdeviceptr x = at(x_);
    long long n = static_cast<long long>(x_bytes() / size_t(eb_));
    unsigned long long s = seed_ ^ 0x9e3779b97f4a7c15ull;
    int dt = dt_code();
    float lo = -3.0f, hi = 3.0f;
    void* params[] = {&x, &n, &s, &dt, &lo, &hi};
    launch_grid_stride(*ref_, kFill, n, device_, params, nullptr);

    std::mt19937_64 rng(seed_);
    std::uniform_real_distribution<float> uw(0.5f, 1.5f), ub(-0.5f, 0.5f);
    HostArray w, b;
    w.resize(p_.dtype, size_t(cols_));
    b.resize(p_.dtype, size_t(cols_));
    for (int64_t j = 0; j < cols_; ++j) w.set(size_t(j), uw(rng)), b.set(size_t(j), ub(rng));
    check_cu(driver().cuMemcpyHtoD(at(w_), w.bytes.data(), size_t(cols_ * eb_)), "cuMemcpyHtoD",
             "weight of " + p_.key());
    check_cu(driver().cuMemcpyHtoD(at(b_), b.bytes.data(), size_t(cols_ * eb_)), "cuMemcpyHtoD",
             "bias of " + p_.key());
    check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", "filling x of " + p_.key());
    have_inputs_ = true;
  }

  // The op's fill and verification kernels, compiled at its first problem.
  Module& reference_module(const OpInfo& op) {
    auto& m = refs_[op.name];
    if (!m) {
      const CompileRequest req = rows_reference_request(device_.arch, op);
      const auto k = compiler_.compile(req);
      m = std::make_unique<Module>(k->cubin, k->lowered_names, req.context);
    }
    return *m;
  }

  Compiler& compiler_;
  DeviceInfo device_;
  std::map<std::string, std::unique_ptr<Module>> refs_; // rows_reference.cu with each op's check
  Module* ref_ = nullptr;                               // the current problem's op's
  DeviceBuffer check_;          // ktune_rows_verify's counts and sums
  Problem p_;
  uint64_t seed_ = 0;
  size_t offset_ = 0; // of every buffer's data (Conditions::as_served)
  bool have_inputs_ = false;
  const OpInfo* info_ = nullptr;
  int64_t rows_ = 0, cols_ = 0, ldx_ = 0, ldy_ = 0;
  int eb_ = 4;
  DeviceBuffer x_, y_, w_, b_;
};

} // namespace

std::unique_ptr<OpRunner> make_rows_runner(Compiler& compiler, const DeviceInfo& device) {
  return std::make_unique<RowsRunner>(compiler, device);
}

} // namespace ktune
