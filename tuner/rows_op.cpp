#include "tuner/rows_op.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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
  const double u = out == DType::bf16 ? std::ldexp(1.0, -8) : out == DType::f16 ? std::ldexp(1.0, -11) : 0.0;
  return u + 1e-5;
}

double rows_subnormal_half_spacing(DType out) {
  return std::ldexp(1.0, out == DType::f16 ? -25 : out == DType::bf16 ? -134 : -150);
}

CompileRequest rows_reference_request(const std::string& arch) {
  CompileRequest req;
  req.source = std::string(embedded_file("rows/rows_reference.cu"));
  req.source_name = "rows/rows_reference.cu";
  req.name_expressions = {"ktune_rows_fill", "ktune_rows_check"}; // RefKernel's order
  req.arch = arch;
  req.context = "row-op reference kernels for " + arch;
  return req;
}

namespace {

// Host copies in the device's element type: values are generated as floats, rounded to the
// dtype, and read back as the rounded values, so the reference sees exactly the kernel's inputs.
struct HostArray {
  DType dtype = DType::f32;
  std::vector<unsigned char> bytes;
  size_t size() const { return bytes.size() / size_t(element_bytes(dtype)); }
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
  double get(size_t i) const {
    if (dtype == DType::f32) {
      float v;
      std::memcpy(&v, &bytes[i * 4], 4);
      return v;
    }
    uint16_t h;
    std::memcpy(&h, &bytes[i * 2], 2);
    return dtype == DType::bf16 ? half::from_bf16(h) : half::from_f16(h);
  }
};

// The verification kernels of rows_reference.cu, in this order.
enum RefKernel : size_t { kFill, kCheck };

class RowsRunner : public OpRunner {
 public:
  RowsRunner(Compiler& compiler, const DeviceInfo& device) : device_(device) {
    const CompileRequest req = rows_reference_request(device.arch);
    const auto k = compiler.compile(req);
    ref_ = std::make_unique<Module>(k->cubin, k->lowered_names, req.context);
    counts_ = DeviceBuffer(2 * sizeof(unsigned long long), "row-op check counts");
  }

  void prepare(const Problem& p, uint64_t seed) override {
    const bool same_inputs = have_inputs_ && p.key() == p_.key() && p.ld == p_.ld && seed == seed_;
    p_ = p, seed_ = seed, info_ = &op_info(p.op);
    if (!info_->reference_row) throw Error("op " + p.op + " declares no row reference (OpInfo::reference_row)");
    rows_ = p.dims[0], cols_ = p.dims[1], ldx_ = p.ld[0], ldy_ = p.ld[1];
    eb_ = element_bytes(p.dtype);
    if (!same_inputs) generate();
    // Poison y, padding included: every byte 0xff is a NaN in f32, bf16 and f16, so an unwritten
    // element fails the finiteness check and a write into the padding shows as a changed element.
    check_cu(driver().cuMemsetD8Async(y_.ptr(), 0xff, y_bytes(), nullptr), "cuMemsetD8Async", "poisoning y of " + p_.key());
  }

  void ensure_workspace(size_t bytes) override {
    if (bytes) throw Error("row kernels take no workspace, the plan asks for " + std::to_string(bytes) + " bytes");
  }

  void launch(Module& m, const LaunchPlan& plan, CUstream stream) override { launch_rows(m, plan, args(), stream); }

  VerifyResult verify(CUstream stream) override {
    check_cu(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", "before verifying " + p_.key());
    // The whole output on the device: finiteness and untouched padding.
    check_cu(driver().cuMemsetD8Async(counts_.ptr(), 0, counts_.bytes(), nullptr), "cuMemsetD8Async", "clearing the check counts of " + p_.key());
    CUdeviceptr y = y_.ptr();
    long long rows = rows_, cols = cols_, ld = ldy_;
    int dt = dt_code();
    CUdeviceptr counts = counts_.ptr();
    void* params[] = {&y, &rows, &cols, &ld, &dt, &counts};
    launch_grid_stride(*ref_, kCheck, (rows_ - 1) * ldy_ + cols_, device_, params, nullptr); // legacy stream: ordered with the launches
    unsigned long long c[2] = {0, 0};
    check_cu(driver().cuMemcpyDtoH(c, counts_.ptr(), sizeof c), "cuMemcpyDtoH", "reading the check counts of " + p_.key());
    VerifyResult r;
    r.nonfinite = static_cast<int64_t>(c[0]);
    r.stray_writes = static_cast<int64_t>(c[1]);
    // FP64 reference on the sampled rows, against their y copied back.
    HostArray ys;
    copy_rows(ys, y_, ldy_, "y");
    double err = 0, ref_norm = 0, compared = 0;
    std::vector<double> ref(static_cast<size_t>(cols_));
    for (size_t s = 0; s < sampled_.size(); ++s) {
      reference_row(s, ref);
      for (int64_t j = 0; j < cols_; ++j) {
        const double d = ys.get(s * size_t(cols_) + size_t(j)) - ref[size_t(j)];
        if (std::isfinite(d)) err += d * d;
        ref_norm += ref[size_t(j)] * ref[size_t(j)];
        ++compared;
      }
    }
    r.rel_error = ref_norm > 0 ? std::sqrt(err / ref_norm) : std::sqrt(err);
    const double allowed = rows_tolerance(p_.dtype) * std::sqrt(ref_norm) + std::sqrt(compared) * rows_subnormal_half_spacing(p_.dtype);
    r.pass = r.nonfinite == 0 && r.stray_writes == 0 && std::sqrt(err) <= allowed;
    return r;
  }

  void run_baseline(CUstream) override { throw Error("op " + p_.op + " has no baseline library in C++"); }
  void run_runtime(Runtime& rt, CUstream stream) override {
    const KtuneRowsArgs a = args();
    rt.rows(p_, a.x, a.y, a.weight, a.bias, stream);
  }

 private:
  // Rows the FP64 reference checks, spread over the matrix (first and last included): every row
  // runs the same code, and the reference of all 16384 x 128256 would cost seconds.
  static constexpr int64_t kSampledRows = 64;

  size_t x_bytes() const { return size_t((rows_ - 1) * ldx_ + cols_) * size_t(eb_); }
  size_t y_bytes() const { return size_t((rows_ - 1) * ldy_ + cols_) * size_t(eb_); }
  int dt_code() const { return p_.dtype == DType::f32 ? 0 : p_.dtype == DType::bf16 ? 1 : 2; }

  KtuneRowsArgs args() const {
    return rows_args(p_, reinterpret_cast<const void*>(x_.ptr()), reinterpret_cast<void*>(y_.ptr()),
                     info_->row_vectors >= 1 ? reinterpret_cast<const void*>(w_.ptr()) : nullptr,
                     info_->row_vectors >= 2 ? reinterpret_cast<const void*>(b_.ptr()) : nullptr);
  }

  static void grow(DeviceBuffer& b, size_t bytes, const std::string& what) {
    if (b.bytes() < bytes) {
      b = DeviceBuffer(); // free first: the old and new buffers need not fit together
      b = DeviceBuffer(std::max<size_t>(bytes, 256), what);
    }
  }

  // The sampled rows of a rows x ld matrix on the device, packed rows x cols on the host.
  void copy_rows(HostArray& h, const DeviceBuffer& d, int64_t ld, const char* what) const {
    h.resize(p_.dtype, sampled_.size() * size_t(cols_));
    const size_t row_bytes = size_t(cols_) * size_t(eb_);
    for (size_t s = 0; s < sampled_.size(); ++s)
      check_cu(driver().cuMemcpyDtoH(&h.bytes[s * row_bytes], d.ptr() + size_t(sampled_[s] * ld) * size_t(eb_), row_bytes),
               "cuMemcpyDtoH", std::string("reading row ") + std::to_string(sampled_[s]) + " of " + what + " of " + p_.key());
  }

  // x uniform in [-3, 3) (softmax rows then span e^6 between their largest and smallest terms),
  // filled on the device, padding included; weight in [0.5, 1.5), bias in [-0.5, 0.5) from the
  // host (one row each). All rounded to the dtype.
  void generate() {
    have_inputs_ = false; // until all of it is in place: a failure part-way must not be reused
    grow(x_, x_bytes(), "x of " + p_.key());
    grow(y_, y_bytes(), "y of " + p_.key());
    grow(w_, size_t(cols_ * eb_), "weight of " + p_.key());
    grow(b_, size_t(cols_ * eb_), "bias of " + p_.key());
    CUdeviceptr x = x_.ptr();
    long long n = static_cast<long long>(x_bytes() / size_t(eb_));
    unsigned long long s = seed_ ^ 0x9e3779b97f4a7c15ull;
    int dt = dt_code();
    float lo = -3.0f, hi = 3.0f;
    void* params[] = {&x, &n, &s, &dt, &lo, &hi};
    launch_grid_stride(*ref_, kFill, n, device_, params, nullptr);

    std::mt19937_64 rng(seed_);
    std::uniform_real_distribution<float> uw(0.5f, 1.5f), ub(-0.5f, 0.5f);
    w_host_.resize(p_.dtype, size_t(cols_));
    b_host_.resize(p_.dtype, size_t(cols_));
    w64_.resize(size_t(cols_)), b64_.resize(size_t(cols_));
    for (int64_t j = 0; j < cols_; ++j) {
      w_host_.set(size_t(j), uw(rng)), b_host_.set(size_t(j), ub(rng));
      w64_[size_t(j)] = w_host_.get(size_t(j)), b64_[size_t(j)] = b_host_.get(size_t(j)); // the rounded values
    }
    check_cu(driver().cuMemcpyHtoD(w_.ptr(), w_host_.bytes.data(), size_t(cols_ * eb_)), "cuMemcpyHtoD", "weight of " + p_.key());
    check_cu(driver().cuMemcpyHtoD(b_.ptr(), b_host_.bytes.data(), size_t(cols_ * eb_)), "cuMemcpyHtoD", "bias of " + p_.key());

    const int64_t sampled = std::min<int64_t>(rows_, kSampledRows);
    sampled_.clear();
    for (int64_t k = 0; k < sampled; ++k) sampled_.push_back(sampled == 1 ? 0 : k * (rows_ - 1) / (sampled - 1));
    copy_rows(x_rows_, x_, ldx_, "x"); // synchronous: the fill has finished
    have_inputs_ = true;
  }

  // The op's FP64 reference (OpInfo::reference_row, in the op's own file) on the s-th sampled
  // row, from the rounded inputs the kernel saw.
  void reference_row(size_t s, std::vector<double>& out) const {
    std::vector<double> x(static_cast<size_t>(cols_));
    for (int64_t j = 0; j < cols_; ++j) x[size_t(j)] = x_rows_.get(s * size_t(cols_) + size_t(j));
    info_->reference_row(p_, x.data(), info_->row_vectors >= 1 ? w64_.data() : nullptr,
                         info_->row_vectors >= 2 ? b64_.data() : nullptr, out.data());
  }

  DeviceInfo device_;
  std::unique_ptr<Module> ref_; // rows_reference.cu
  DeviceBuffer counts_;
  Problem p_;
  uint64_t seed_ = 0;
  bool have_inputs_ = false;
  const OpInfo* info_ = nullptr;
  int64_t rows_ = 0, cols_ = 0, ldx_ = 0, ldy_ = 0;
  int eb_ = 4;
  std::vector<int64_t> sampled_; // row indices, ascending
  HostArray x_rows_, w_host_, b_host_; // x_rows_: the sampled rows of x, packed
  std::vector<double> w64_, b64_;       // weight and bias as the reference reads them
  DeviceBuffer x_, y_, w_, b_;
};

} // namespace

std::unique_ptr<OpRunner> make_rows_runner(Compiler& compiler, const DeviceInfo& device) {
  return std::make_unique<RowsRunner>(compiler, device);
}

} // namespace ktune
