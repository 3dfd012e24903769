#include "tuner/spec_op.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "core/kernel_spec.h"
#include "ktune/error.h"
#include "runtime/buffers_launch.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"

namespace ktune {

double spec_default_rtol(ElemType t) {
  switch (t) {
    case ElemType::f64: return 1e-9;
    case ElemType::f32: return 1e-4;
    case ElemType::f16: return 1e-2;
    case ElemType::bf16: return 2e-2;
    default: return 0; // integers: exact
  }
}

namespace {

constexpr size_t kGuard = 256;
constexpr unsigned char kGuardByte = 0x5a;

// f(i, value) for the n elements of type t at p, with the type's load hoisted out of the loop
// (outputs of 10^8 elements are compared on every check).
template <class F>
void for_each_value(ElemType t, const unsigned char* p, size_t n, F&& f) {
  auto run = [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, p + i * sizeof(T), sizeof(T));
      f(i, double(v));
    }
  };
  switch (t) {
    case ElemType::f64: return run(double());
    case ElemType::f32: return run(float());
    case ElemType::i64: return run(int64_t());
    case ElemType::i32: return run(int32_t());
    case ElemType::i16: return run(int16_t());
    case ElemType::i8: return run(int8_t());
    case ElemType::u64: return run(uint64_t());
    case ElemType::u32: return run(uint32_t());
    case ElemType::u16: return run(uint16_t());
    case ElemType::u8: return run(uint8_t());
    default:
      for (size_t i = 0; i < n; ++i) f(i, load_elem(p, i, t)); // f16, bf16: a conversion anyway
  }
}

class SpecRunner : public OpRunner {
 public:
  SpecRunner(Compiler& compiler, const DeviceInfo& device) : compiler_(compiler), device_(device) {}

  void prepare(const Problem& p, uint64_t seed) override { prepare_at(p, seed, 0); }
  // As served: every buffer at the least-aligned offset p's alignment class admits.
  void prepare(const Problem& p, uint64_t seed, Conditions c) override {
    prepare_at(p, seed, c == Conditions::as_served ? least_aligned_offset(p) : 0);
  }

  void ensure_workspace(size_t bytes) override {
    if (bytes > ws_.bytes()) {
      ws_ = DeviceBuffer();
      ws_ = DeviceBuffer(bytes, "temporaries of " + p_.key());
    }
  }

  void launch(Module& m, const LaunchPlan& plan, CUstream stream) override {
    ensure_workspace(plan.workspace_bytes);
    BufferArgs a(p_, caller_pointers(bufs_), plan.workspace_bytes ? ws_.ptr() : 0);
    launch_buffers(m, plan, a, stream);
  }

  VerifyResult verify(CUstream stream, Numerics) override {
    check_cu(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", "before verifying " + p_.key());
    const KernelSpec& s = spec_of(p_.op);
    VerifyResult r;
    r.conditions = conditions_text(offset_);
    if (!s.check) {
      // Opted out in the spec: the guards and inputs are still checked, the values are not.
      r.conditions += ", values not checked (" + s.no_check_reason + ")";
    } else if (!have_reference_) {
      run_reference(s, stream);
    }
    double err2 = 0, ref2 = 0, allow2 = 0;
    size_t out = 0;
    for (size_t i = 0; i < bufs_.size(); ++i) {
      Buffer& b = bufs_[i];
      const std::vector<unsigned char> now = read_back(b, s.args[b.arg].name);
      const size_t data_at = kGuard + offset_, data_bytes = b.bytes();
      // Byte by byte only where a block compare finds a difference (inputs of a gigabyte).
      auto differing = [&](size_t from, size_t to, bool guard) {
        if (std::memcmp(now.data() + from, b.host.data() + from, to - from) == 0) return uint64_t(0);
        uint64_t n = 0;
        for (size_t j = from; j < to; ++j) n += guard ? now[j] != kGuardByte : now[j] != b.host[j];
        return n;
      };
      r.guard_writes += differing(0, data_at, true) + differing(data_at + data_bytes, now.size(), true);
      if (!b.checked) r.input_writes += differing(data_at, data_at + data_bytes, false);
      if (!b.checked || !s.check) continue;
      const std::vector<double>& ref = ref_out_[out++];
      const SpecArg& a = s.args[b.arg];
      double largest = 0;
      for (double w : ref)
        if (std::isfinite(w)) largest = std::max(largest, std::abs(w));
      const double rtol = a.rtol >= 0 ? a.rtol : spec_default_rtol(b.type);
      const double atol = a.atol >= 0 ? a.atol : rtol * largest;
      for_each_value(b.type, now.data() + data_at, size_t(b.count), [&](size_t e, double got) {
        const double want = ref[e];
        if (!std::isfinite(got) && std::isfinite(want)) {
          if (r.nonfinite++ == 0 && r.worst_index < 0) r.worst_index = int64_t(e);
          return;
        }
        if (!std::isfinite(want)) return; // the reference's own Inf or NaN: nothing to hold it to
        const double d = got - want, bound = atol + rtol * std::abs(want);
        err2 += d * d, ref2 += want * want, allow2 += bound * bound;
        const double ratio = bound > 0 ? std::abs(d) / bound : (d == 0 ? 0 : INFINITY);
        if (ratio > r.worst_ratio) r.worst_ratio = ratio;
        if (ratio > 1 && r.violations++ == 0) r.worst_index = int64_t(e);
      });
    }
    r.rel_error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
    r.norm_bound = ref2 > 0 ? std::sqrt(allow2 / ref2) : std::sqrt(allow2);
    r.pass = r.nonfinite == 0 && r.violations == 0 && r.guard_writes == 0 && r.input_writes == 0;
    return r;
  }

  void run_runtime(Runtime& rt, CUstream stream) override {
    std::vector<void*> ptrs;
    for (const void* b : caller_pointers(bufs_)) ptrs.push_back(const_cast<void*>(b));
    rt.run(p_, ptrs, stream);
  }

 private:
  struct Buffer {
    size_t arg = 0; // index into the spec's args
    ElemType type = ElemType::f32;
    int64_t count = 0;
    bool checked = false;
    DeviceBuffer dev;
    std::vector<unsigned char> host; // guards and data as written
    size_t bytes() const { return size_t(count) * size_t(elem_bytes(type)); }
  };

  // The caller's buffers (OpInfo::operands: the spec's buffers but its temporaries), in order.
  std::vector<const void*> caller_pointers(const std::vector<Buffer>& bufs) const {
    std::vector<const void*> v;
    for (const Buffer& b : bufs) v.push_back(reinterpret_cast<const void*>(b.dev.ptr() + kGuard + offset_));
    return v;
  }

  std::vector<unsigned char> read_back(const Buffer& b, const std::string& name) const {
    std::vector<unsigned char> now(b.host.size());
    check_cu(driver().cuMemcpyDtoH(now.data(), b.dev.ptr(), now.size()), "cuMemcpyDtoH", "reading back " + name + " of " + p_.key());
    return now;
  }

  void prepare_at(const Problem& p, uint64_t seed, size_t offset) {
    const KernelSpec& s = spec_of(p.op);
    p_ = p, offset_ = offset, have_reference_ = false;
    std::vector<Buffer> old = std::move(bufs_);
    bufs_.clear();
    for (size_t i = 0; i < s.args.size(); ++i) {
      const SpecArg& a = s.args[i];
      if (!a.buffer || a.intent == SpecArg::temp) continue;
      Buffer b;
      b.arg = i, b.type = a.elem(p), b.count = s.count_of(i, p), b.checked = a.checked();
      const size_t bytes = 2 * kGuard + offset + b.bytes();
      b.host.assign(bytes, kGuardByte);
      unsigned char* data = b.host.data() + kGuard + offset;
      if (a.intent == SpecArg::out) {
        std::memset(data, 0xff, b.bytes()); // NaN in every float type: an element left unwritten shows
      } else {
        const auto fill = spec_fill_bytes(a.fill, b.type, size_t(b.count), seed * 1000003 + i);
        std::memcpy(data, fill.data(), fill.size());
      }
      const size_t k = bufs_.size();
      if (k < old.size() && old[k].dev.bytes() >= bytes) b.dev = std::move(old[k].dev);
      else b.dev = DeviceBuffer(bytes, a.name + " of " + p.key());
      check_cu(driver().cuMemcpyHtoD(b.dev.ptr(), b.host.data(), bytes), "cuMemcpyHtoD", a.name + " of " + p.key());
      bufs_.push_back(std::move(b));
    }
  }

  // The reference on copies of the inputs as prepared, into its own outputs.
  void run_reference(const KernelSpec& s, CUstream stream) {
    CompileRequest req;
    req.source = s.source;
    req.source_name = s.source_name;
    req.name_expressions = s.kernel_names(s.reference_steps, s.reference_config, p_);
    req.options = s.compile_options(s.reference_config, p_);
    req.arch = device_.arch;
    req.context = "reference of " + s.path + " config " + s.reference_config.to_json() + " problem " + p_.key();
    // Loaded once per compile (each check of each config runs it on fresh inputs).
    std::shared_ptr<Module>& mod = ref_modules_[req.cache_key()];
    if (!mod) {
      const auto compiled = compiler_.compile(req);
      mod = std::make_shared<Module>(compiled->cubin, compiled->lowered_names, req.context);
    }
    Module& m = *mod;
    std::vector<DeviceBuffer> copies;
    std::vector<const void*> ptrs;
    for (const Buffer& b : bufs_) { // the inputs as the kernel under test got them (the outputs poisoned)
      copies.emplace_back(std::max<size_t>(b.bytes(), 1), "reference copy of " + s.args[b.arg].name);
      const unsigned char* data = b.host.data() + kGuard + offset_;
      if (b.checked) check_cu(driver().cuMemcpyHtoD(copies.back().ptr(), data, b.bytes()), "cuMemcpyHtoD", req.context);
      else check_cu(driver().cuMemcpyDtoD(copies.back().ptr(), b.dev.ptr() + kGuard + offset_, b.bytes()), "cuMemcpyDtoD", req.context);
      ptrs.push_back(reinterpret_cast<const void*>(copies.back().ptr()));
    }
    const LaunchPlan plan = s.plan(s.reference_steps, s.reference_config, p_);
    DeviceBuffer ws;
    if (plan.workspace_bytes) ws = DeviceBuffer(plan.workspace_bytes, "reference temporaries of " + p_.key());
    BufferArgs a(p_, ptrs, ws.ptr());
    launch_buffers(m, plan, a, stream);
    check_cu(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", "running the " + req.context);
    ref_out_.clear();
    for (size_t i = 0; i < bufs_.size(); ++i) {
      if (!bufs_[i].checked) continue;
      std::vector<unsigned char> bytes(bufs_[i].bytes());
      check_cu(driver().cuMemcpyDtoH(bytes.data(), copies[i].ptr(), bytes.size()), "cuMemcpyDtoH", req.context);
      ref_out_.emplace_back(size_t(bufs_[i].count));
      std::vector<double>& values = ref_out_.back();
      for_each_value(bufs_[i].type, bytes.data(), values.size(), [&](size_t e, double v) { values[e] = v; });
    }
    have_reference_ = true;
  }

  Compiler& compiler_;
  DeviceInfo device_;
  Problem p_;
  size_t offset_ = 0;
  std::vector<Buffer> bufs_;
  DeviceBuffer ws_;
  bool have_reference_ = false;
  std::vector<std::vector<double>> ref_out_; // the reference's values of each checked buffer, in order
  std::map<std::string, std::shared_ptr<Module>> ref_modules_; // by the reference's compile key
};

} // namespace

std::unique_ptr<OpRunner> make_spec_runner(Compiler& compiler, const DeviceInfo& device) {
  return std::make_unique<SpecRunner>(compiler, device);
}

} // namespace ktune
