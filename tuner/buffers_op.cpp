#include "tuner/buffers_op.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "core/op_strides.h"
#include "ktune/error.h"
#include "runtime/buffers_launch.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"

namespace ktune {

double buffers_element_bound(DType out, int roundings, double exact, double magnitude) {
  const double u32 = std::ldexp(1.0, -24), k = double(std::max(roundings, 0));
  const double gamma = k * u32 / (1 - k * u32);
  const double tiny = std::ldexp(1.0, out == DType::f16 ? -25 : out == DType::bf16 ? -134 : -150);
  return unit_roundoff(out) * std::abs(exact) + gamma * magnitude * (1 + unit_roundoff(out)) + tiny;
}

namespace {

// Bytes before and after every buffer's data that the kernels must leave as they were.
constexpr size_t kGuard = 256;
constexpr unsigned char kGuardByte = 0x5a;

double value_of(const unsigned char* bytes, size_t i, DType d) {
  if (d == DType::f32) {
    float f;
    std::memcpy(&f, bytes + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, bytes + 2 * i, 2);
  return d == DType::bf16 ? half::from_bf16(h) : half::from_f16(h);
}

void store_value(unsigned char* bytes, size_t i, DType d, float v) {
  if (d == DType::f32) return std::memcpy(bytes + 4 * i, &v, 4), void();
  const uint16_t h = d == DType::bf16 ? half::to_bf16(v) : half::to_f16(v);
  std::memcpy(bytes + 2 * i, &h, 2);
}

class BuffersRunner : public OpRunner {
 public:
  explicit BuffersRunner(const DeviceInfo& device) : device_(device) {}

  void prepare(const Problem& p, uint64_t seed) override { prepare_at(p, seed, 0); }

  // As served: every scalar away from its default, every buffer at the least-aligned offset p's
  // class admits, and every N-dimensional operand with strides past packed (each outer stride one
  // alignment step beyond its axes' span: a kernel that assumes packed storage shows). The i-th
  // scalar becomes (1.37 + 0.61 i) times its default (0.5 where that is 0), negated for odd i: no
  // power of two (x8 would leave a bf16 input times the scalar exact, so a kernel that rounds its
  // terms to 16 bits passed), no two alike (a kernel that swaps two scalars shows) and of both
  // signs.
  void prepare(const Problem& p, uint64_t seed, Conditions c) override {
    if (c == Conditions::as_timed) return prepare_at(p, seed, 0);
    Problem q = p;
    int i = 0;
    for (const auto& [name, value] : op_info(p.op).scalars) {
      const double f = (1.37 + 0.61 * i) * (i % 2 ? -1 : 1);
      q.scalars[name] = (value != 0 ? value : 0.5) * f;
      ++i;
    }
    const int64_t step = std::max(1, q.align / element_bytes(q.dtype));
    q.ld = packed_strides(q, step, step); // each outer stride one alignment step past packed
    prepare_at(q, seed, least_aligned_offset(p));
  }

  void ensure_workspace(size_t bytes) override {
    if (bytes) throw Error("op " + p_.op + " takes no workspace, the plan asks for " + std::to_string(bytes) + " bytes");
  }

  void launch(Module& m, const LaunchPlan& plan, CUstream stream) override {
    const std::vector<void*> ptrs = pointers();
    BufferArgs a(p_, std::vector<const void*>(ptrs.begin(), ptrs.end()));
    launch_buffers(m, plan, a, stream);
  }

  VerifyResult verify(CUstream stream, Numerics) override {
    check_cu(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", "before verifying " + p_.key());
    const OpInfo& info = op_info(p_.op);
    if (!have_reference_) compute_reference(info);
    VerifyResult r;
    double err2 = 0, ref2 = 0, allow2 = 0;
    size_t out_index = 0;
    for (size_t i = 0; i < bufs_.size(); ++i) {
      Buffer& b = bufs_[i];
      std::vector<unsigned char> now(b.host.size());
      check_cu(driver().cuMemcpyDtoH(now.data(), b.dev.ptr(), now.size()), "cuMemcpyDtoH",
               "reading back " + info.operands[i].name + " of " + p_.key());
      const size_t data_at = kGuard + offset_, data_bytes = size_t(b.count) * size_t(eb_);
      for (size_t j = 0; j < now.size(); ++j) {
        const bool in_data = j >= data_at && j < data_at + data_bytes;
        if (!in_data) r.guard_writes += now[j] != kGuardByte;
        else if (!b.output) r.input_writes += now[j] != b.host[j];
      }
      if (!b.output) continue;
      const std::vector<double>& ref = ref_[out_index];
      const std::vector<double>& mag = mag_[out_index];
      for (int64_t e = 0; e < b.count; ++e) {
        if (!b.in_view.empty() && !b.in_view[size_t(e)]) { // between a shaped output's elements: poison stays
          const size_t at = data_at + size_t(e) * size_t(eb_);
          r.stray_writes += std::memcmp(now.data() + at, b.host.data() + at, size_t(eb_)) != 0;
          continue;
        }
        const double v = value_of(now.data() + data_at, size_t(e), p_.dtype);
        if (!std::isfinite(v)) {
          ++r.nonfinite;
          continue;
        }
        const double d = v - ref[size_t(e)];
        const double bound = buffers_element_bound(p_.dtype, info.roundings, ref[size_t(e)], mag[size_t(e)]);
        err2 += d * d, ref2 += ref[size_t(e)] * ref[size_t(e)], allow2 += bound * bound;
        const double ratio = std::abs(d) / bound;
        if (ratio > r.worst_ratio) r.worst_ratio = ratio;
        if (ratio > 1 && r.violations++ == 0) r.worst_index = e;
      }
      ++out_index;
    }
    r.rel_error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
    r.norm_bound = ref2 > 0 ? std::sqrt(allow2 / ref2) : std::sqrt(allow2);
    r.pass = r.nonfinite == 0 && r.violations == 0 && r.guard_writes == 0 && r.input_writes == 0 && r.stray_writes == 0;
    r.conditions = conditions_text(offset_);
    if (offset_ && !p_.ld.empty()) r.conditions += ", strides padded past packed";
    return r;
  }


  void run_runtime(Runtime& rt, CUstream stream) override {
    rt.run(p_, pointers(), stream);
  }

 private:
  struct Buffer {
    bool output = false;
    int64_t count = 0;
    DeviceBuffer dev;
    std::vector<unsigned char> host; // guards and data as written (inputs), for the read-back checks
    std::vector<double> values;      // inputs: the values the kernel reads
    std::vector<char> in_view;       // shaped outputs: which of the span's elements are the operand's
  };

  // Marks the offsets of a shaped operand's elements (every index of its extents times its strides).
  static std::vector<char> view_of(const Problem& p, size_t i, int64_t span) {
    const std::vector<int64_t> e = operand_extents(p, i), s = operand_strides(p, i);
    std::vector<char> v(size_t(span), 0);
    if (span == 0) return v;
    std::vector<int64_t> idx(e.size(), 0);
    for (;;) {
      int64_t off = 0;
      for (size_t a = 0; a < e.size(); ++a) off += idx[a] * s[a];
      v[size_t(off)] = 1;
      size_t a = e.size();
      while (a > 0 && ++idx[a - 1] == e[a - 1]) idx[--a] = 0;
      if (a == 0) return v;
    }
  }

  // Every buffer's data, in operand order.
  std::vector<void*> pointers() const {
    std::vector<void*> v;
    for (const Buffer& b : bufs_) v.push_back(reinterpret_cast<void*>(b.dev.ptr() + kGuard + offset_));
    return v;
  }

  void prepare_at(const Problem& p, uint64_t seed, size_t offset) {
    const OpInfo& info = op_info(p.op);
    if (!info.reference || info.operands.empty())
      throw Error("op " + p.op + " declares no operands or no reference (OpInfo::operands, OpInfo::reference)");
    p_ = p, offset_ = offset, eb_ = element_bytes(p.dtype);
    have_reference_ = false;
    bufs_.resize(info.operands.size());
    std::mt19937_64 rng(seed);
    for (size_t i = 0; i < bufs_.size(); ++i) {
      const OpInfo::Operand& o = info.operands[i];
      Buffer& b = bufs_[i];
      b.output = o.output, b.count = operand_elements(p, i);
      b.in_view.clear();
      if (b.output && !o.shape.empty()) b.in_view = view_of(p, i, b.count);
      if (b.count < 0) throw Error("op " + p.op + ": operand " + o.name + " has a negative size at " + p.key());
      const size_t bytes = 2 * kGuard + offset + size_t(b.count) * size_t(eb_);
      b.host.assign(bytes, kGuardByte);
      unsigned char* data = b.host.data() + kGuard + offset;
      b.values.clear();
      if (b.output) {
        std::memset(data, 0xff, size_t(b.count) * size_t(eb_)); // NaN in f32, bf16 and f16: unwritten shows
      } else {
        std::uniform_real_distribution<float> u(float(o.lo), float(o.hi));
        b.values.resize(size_t(b.count));
        for (int64_t e = 0; e < b.count; ++e) {
          store_value(data, size_t(e), p.dtype, u(rng));
          b.values[size_t(e)] = value_of(data, size_t(e), p.dtype);
        }
      }
      if (b.dev.bytes() < bytes) {
        b.dev = DeviceBuffer();
        b.dev = DeviceBuffer(bytes, o.name + " of " + p.key());
      }
      check_cu(driver().cuMemcpyHtoD(b.dev.ptr(), b.host.data(), bytes), "cuMemcpyHtoD", o.name + " of " + p.key());
    }
  }

  void compute_reference(const OpInfo& info) {
    std::vector<const double*> in;
    std::vector<double*> out, mag;
    ref_.clear(), mag_.clear();
    for (const Buffer& b : bufs_)
      if (b.output) ref_.emplace_back(size_t(b.count)), mag_.emplace_back(size_t(b.count));
    size_t k = 0;
    for (const Buffer& b : bufs_) {
      if (b.output) out.push_back(ref_[k].data()), mag.push_back(mag_[k].data()), ++k;
      else in.push_back(b.values.data());
    }
    info.reference(p_, in, out, mag);
    have_reference_ = true;
  }

  DeviceInfo device_;
  Problem p_;
  size_t offset_ = 0;
  int eb_ = 4;
  std::vector<Buffer> bufs_;
  bool have_reference_ = false;
  std::vector<std::vector<double>> ref_, mag_; // per output, in operand order
};

} // namespace

std::unique_ptr<OpRunner> make_buffers_runner(const DeviceInfo& device) { return std::make_unique<BuffersRunner>(device); }

} // namespace ktune
