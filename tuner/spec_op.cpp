#include "tuner/spec_op.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>

#include "core/embedded.h"
#include "core/kernel_spec.h"
#include "ktune/error.h"
#include "runtime/address_tables.h"
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

CompileRequest spec_check_request(const std::string& arch) {
  CompileRequest req;
  req.source = std::string(embedded_file("spec/spec_check.cu"));
  req.source_name = "spec/spec_check.cu";
  req.name_expressions = {"ktune_spec_fill", "ktune_spec_differ", "ktune_spec_absmax", "ktune_spec_compare"};
  req.arch = arch;
  req.context = "user-kernel check kernels for " + arch;
  return req;
}

namespace {

constexpr size_t kGuard = 256;
// A buffer a texture over a buffer reads (in some round) starts where a texture may
// (cuTexObjectCreate: the device's texture alignment, 512 bytes on sm_50 to sm_90), past a guard
// of that size, at every condition: a caller's buffer the alignment refuses is refused at the
// call, as host code's would be. An array's copy needs none.
constexpr size_t kTextureLead = 512;
constexpr unsigned char kGuardByte = 0x5a;

// kernel_templates/spec/spec_check.cu's KtuneSpecSums, read back as it lies in device memory.
struct SpecSums {
  double err2 = 0, ref2 = 0, allow2 = 0;
  uint64_t worst_ratio = 0; // the bits of a non-negative double
  uint64_t violations = 0, nonfinite = 0;
  int64_t first_violation = INT64_MAX, first_nonfinite = INT64_MAX;
  double absmax = 0;
};
static_assert(sizeof(SpecSums) == 72, "laid out as KtuneSpecSums");
// Per buffer: its sums, then the bytes of its guards and (inputs) of its data that changed.
struct SpecCheck {
  SpecSums sums;
  uint64_t guard_bytes = 0, input_bytes = 0;
};
static_assert(sizeof(SpecCheck) == 88, "two counters after KtuneSpecSums");

// The check kernels' order in their module (the name expressions of spec_check_request).
enum CheckKernel { kFill, kDiffer, kAbsmax, kCompare };

// Fills, poison, the reference and every compare run on the GPU (spec_check.cu): a check of a
// small kernel costs a few launches, and one of gigabytes copies nothing to the host.
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
    last_args_ = plan.spec_args; // what check.post's steps pass of the config under test
    ensure_workspace(plan.workspace_bytes);
    BufferArgs a(p_, caller_pointers(), plan.workspace_bytes ? ws_.ptr() : 0);
    launch_buffers(m, plan, a, stream);
  }

  VerifyResult verify(CUstream stream, Numerics) override {
    const std::string what = "verifying " + p_.key();
    check_cu(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", "before " + what);
    const KernelSpec& s = spec_of(p_.op);
    VerifyResult r;
    r.conditions = conditions_text(offset_);
    if (!s.check) r.conditions += ", values not checked (" + s.no_check_reason + ")"; // guards and inputs still are
    const std::vector<SpecCheck> init(bufs_.size());
    reserve(sums_, init.size() * sizeof(SpecCheck), "check sums of " + p_.key());
    check_cu(driver().cuMemcpyHtoD(sums_.ptr(), init.data(), init.size() * sizeof(SpecCheck)), "cuMemcpyHtoD", what);
    if (s.check && !have_reference_) {
      if (s.answers) load_answers(s);
      else run_reference(s, stream);
    }
    if (s.has_post) run_post(s, caller_pointers(), last_args_, stream, "the kernel's outputs");
    for (size_t i = 0; i < bufs_.size(); ++i) check_buffer(s, i, stream);
    std::vector<SpecCheck> out(bufs_.size());
    check_cu(driver().cuMemcpyDtoH(out.data(), sums_.ptr(), out.size() * sizeof(SpecCheck)), "cuMemcpyDtoH", what);
    // An address table is an input too: a kernel that wrote through the table's own address
    // fails as one that wrote an input, and the table is put back for the configs after it.
    r.input_writes += address_tables_changed(what);
    double err2 = 0, ref2 = 0, allow2 = 0;
    int64_t first_nonfinite = -1;
    for (const SpecCheck& c : out) {
      r.guard_writes += c.guard_bytes;
      r.input_writes += c.input_bytes;
      err2 += c.sums.err2, ref2 += c.sums.ref2, allow2 += c.sums.allow2;
      double worst;
      std::memcpy(&worst, &c.sums.worst_ratio, sizeof worst);
      r.worst_ratio = std::max(r.worst_ratio, worst);
      r.nonfinite += c.sums.nonfinite;
      if (c.sums.violations && r.violations == 0) r.worst_index = c.sums.first_violation;
      if (c.sums.nonfinite && first_nonfinite < 0) first_nonfinite = c.sums.first_nonfinite;
      r.violations += c.sums.violations;
    }
    // The first output's first element over its bound; else its first non-finite one.
    if (r.worst_index < 0) r.worst_index = first_nonfinite;
    r.rel_error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
    r.norm_bound = ref2 > 0 ? std::sqrt(allow2 / ref2) : std::sqrt(allow2);
    r.pass = r.nonfinite == 0 && r.violations == 0 && r.guard_writes == 0 && r.input_writes == 0;
    return r;
  }

  // Every inout buffer the spec restores, its data as filled (its master) copied back.
  void restore(CUstream stream) override {
    const KernelSpec& s = spec_of(p_.op);
    for (const Buffer& b : bufs_)
      if (s.args[b.arg].intent == SpecArg::inout && s.args[b.arg].restore && b.bytes())
        check_cu(driver().cuMemcpyDtoDAsync(b.dev.ptr() + b.data_at(offset_), b.master.ptr(), b.bytes(), stream),
                 "cuMemcpyDtoDAsync", "putting " + s.args[b.arg].name + " back as filled before a timed run of " + p_.key());
  }

  void run_runtime(Runtime& rt, CUstream stream) override {
    std::vector<void*> ptrs;
    for (const void* b : caller_pointers()) ptrs.push_back(const_cast<void*>(b));
    rt.run(p_, ptrs, stream);
  }

  // The spec's baseline on the prepared buffers, as the kernel under test runs. Its module and
  // plan are found once a problem, outside the timed calls: finding the module builds its compile
  // request and key over the source and headers (0.5-0.8 ms on the host), which a timed call
  // would otherwise carry as GPU idle time the candidates' timing does not.
  void run_baseline(CUstream stream) override {
    load_baseline();
    launch(*baseline_module_, baseline_plan_, stream);
  }
  void load(const Problem& p) override {
    const KernelSpec& s = spec_of(p.op);
    if (s.has_setup) side_module("setup", p);
    if (s.check && !s.answers) side_module("reference", p);
    if (s.has_post) side_module("post", p);
    if (s.has_baseline) side_module("baseline", p);
  }
  void load_baseline() override {
    const KernelSpec& s = spec_of(p_.op);
    if (!s.has_baseline) throw Error(s.path + " declares no baseline");
    if (baseline_module_ && baseline_for_ == p_) return;
    baseline_module_ = &side_module("baseline", p_);
    baseline_plan_ = s.plan(s.baseline_steps, s.baseline_config, p_);
    baseline_for_ = p_;
  }

 private:
  struct Buffer {
    size_t arg = 0; // index into the spec's args
    ElemType type = ElemType::f32;
    int64_t count = 0;
    bool checked = false, poisoned = false; // checked: out or inout; poisoned: out (never read)
    DeviceBuffer dev;    // guards, data, guards: what the kernel under test gets
    DeviceBuffer master; // the data as filled (not for out): what an input must still hold, what the reference reads
    DeviceBuffer ref;    // the reference's copy
    size_t bytes() const { return size_t(count) * size_t(elem_bytes(type)); }
    // dev's bytes in use: guards, offset, data, guards (dev may be larger, from a larger problem
    // before: the rest is neither written nor checked).
    size_t used(size_t offset) const { return data_at(offset) + bytes() + kGuard; }
    bool textured = false; // a texture over a buffer may read it (KernelSpec::texture_aligned)
    // Where its data starts in dev: past the guard and the condition's offset.
    size_t data_at(size_t offset) const { return textured ? kTextureLead : kGuard + offset; }
  };

  // The caller's buffers (OpInfo::operands: the spec's buffers but its temporaries), in order.
  std::vector<const void*> caller_pointers() const {
    std::vector<const void*> v;
    for (const Buffer& b : bufs_) v.push_back(reinterpret_cast<const void*>(b.dev.ptr() + b.data_at(offset_)));
    return v;
  }

  Module& checks() {
    if (!checks_) {
      const CompileRequest req = spec_check_request(device_.arch);
      const auto k = compiler_.compile(req);
      checks_ = std::make_unique<Module>(k->cubin, k->lowered_names, req.context);
    }
    return *checks_;
  }

  // (Re)allocates buf to hold at least `bytes` (never 0: a null pointer is not a buffer).
  static void reserve(DeviceBuffer& buf, size_t bytes, const std::string& what) {
    bytes = std::max<size_t>(bytes, 1);
    if (buf.bytes() >= bytes) return;
    buf = DeviceBuffer();
    buf = DeviceBuffer(bytes, what);
  }

  // Adds to the counter at `count` the bytes of [a, a + n) that differ from [b, b + n) (b = 0: from
  // the guard byte).
  void differ(CUdeviceptr a, CUdeviceptr b, size_t bytes, CUdeviceptr count, CUstream stream) {
    unsigned byte = kGuardByte;
    long long n = static_cast<long long>(bytes);
    void* params[] = {&a, &b, &byte, &n, &count};
    launch_grid_stride(checks(), kDiffer, (n + 15) / 16, device_, params, stream);
  }

  // Buffer i's guards, its data if an input, its values against the reference's if an output,
  // into its SpecCheck.
  void check_buffer(const KernelSpec& s, size_t i, CUstream stream) {
    const Buffer& b = bufs_[i];
    const SpecArg& a = s.args[b.arg];
    CUdeviceptr at = sums_.ptr() + i * sizeof(SpecCheck);
    const CUdeviceptr guards = at + sizeof(SpecSums), inputs = guards + sizeof(uint64_t);
    const size_t data_at = b.data_at(offset_), data_end = data_at + b.bytes();
    differ(b.dev.ptr(), 0, data_at, guards, stream);
    differ(b.dev.ptr() + data_end, 0, b.used(offset_) - data_end, guards, stream);
    if (!b.checked) differ(b.dev.ptr() + data_at, b.master.ptr(), b.bytes(), inputs, stream);
    if (!b.checked || !s.check) return;
    CUdeviceptr got = b.dev.ptr() + data_at, ref = b.ref.ptr();
    long long n = s.checked_count(b.arg, p_); // the first n: an answer ahead of config-dependent partials
    int t = int(b.type);
    const double given_rtol = tolerance_at(s, a, false, p_);
    double rtol = given_rtol >= 0 ? given_rtol : spec_default_rtol(b.type), atol = tolerance_at(s, a, true, p_);
    if (atol < 0) { // rtol x the reference's largest finite magnitude, which the compare reads from `at`
      void* params[] = {&ref, &n, &t, &at};
      launch_grid_stride(checks(), kAbsmax, n, device_, params, stream);
    }
    void* params[] = {&got, &ref, &n, &t, &atol, &rtol, &at};
    launch_grid_stride(checks(), kCompare, n, device_, params, stream);
  }

  // A file's elements (a per-problem file read at p_) converted to b's type, into dst: read and
  // converted on the host once per argument, problem and type.
  void upload_file(const SpecFill& f, const Buffer& b, CUdeviceptr dst, const std::string& what) {
    if (!b.bytes()) return;
    if (file_problem_ != p_.key()) file_fills_.clear(), file_problem_ = p_.key(); // the current problem's only
    auto& bytes = file_fills_[{f.pattern.empty() ? f.file : f.pattern, b.type, b.count}];
    if (bytes.empty()) bytes = spec_fill_bytes(fill_at(spec_of(p_.op), f, p_), b.type, size_t(b.count), 0);
    if (bytes.size() != b.bytes()) throw Error("internal: " + what + " converted to " + std::to_string(bytes.size()) + " bytes for " +
                                               std::to_string(b.bytes()));
    check_cu(driver().cuMemcpyHtoD(dst, bytes.data(), bytes.size()), "cuMemcpyHtoD", what + " of " + p_.key() + " from " + f.file);
  }

  // An input's data as its spec fills it, into b.master.
  void fill(const SpecArg& a, const Buffer& b, uint64_t seed) {
    if (a.fill.kind == SpecFill::from_file) {
      upload_file(a.fill, b, b.master.ptr(), "filling " + a.name);
      return;
    }
    const SpecFill at = fill_at(spec_of(p_.op), a.fill, p_); // a range may read the problem
    if (at.kind == SpecFill::permutation) { // made on the host: a shuffle
      if (!b.bytes()) return;
      const std::vector<unsigned char> host = spec_fill_bytes(at, b.type, size_t(b.count), seed);
      check_cu(driver().cuMemcpyHtoD(b.master.ptr(), host.data(), host.size()), "cuMemcpyHtoD",
               "filling " + a.name + " of " + p_.key() + " with a permutation");
      return;
    }
    CUdeviceptr x = b.master.ptr();
    long long n = b.count;
    const DeviceFill df = device_fill(at);
    int t = int(b.type), kind = df.kind;
    double lo = df.lo, hi = df.hi, value = df.value;
    unsigned long long s = seed;
    void* params[] = {&x, &n, &t, &kind, &lo, &hi, &value, &s};
    launch_grid_stride(checks(), kFill, n, device_, params, nullptr);
  }

  void prepare_at(const Problem& p, uint64_t seed, size_t offset) {
    const KernelSpec& s = spec_of(p.op);
    p_ = p, offset_ = offset, have_reference_ = false;
    std::vector<Buffer> old = std::move(bufs_);
    bufs_.clear();
    const std::string what = "preparing " + p.key();
    const std::vector<bool> aligned = s.texture_aligned();
    for (size_t i = 0; i < s.args.size(); ++i) {
      const SpecArg& a = s.args[i];
      if (!a.buffer || a.intent == SpecArg::temp) continue;
      Buffer b;
      b.arg = i, b.type = a.elem(p), b.count = s.count_of(i, p), b.checked = a.checked();
      b.poisoned = a.intent == SpecArg::out;
      b.textured = aligned[i];
      if (bufs_.size() < old.size()) {
        Buffer& o = old[bufs_.size()];
        b.dev = std::move(o.dev), b.master = std::move(o.master), b.ref = std::move(o.ref);
      }
      reserve(b.dev, b.used(offset), a.name + " of " + p.key());
      if (!b.poisoned) {
        reserve(b.master, b.bytes(), a.name + " (as filled) of " + p.key());
        fill(a, b, seed * 1000003 + i);
      }
      bufs_.push_back(std::move(b));
    }
    if (s.has_setup) run_setup(s);
    for (Buffer& b : bufs_) {
      const CUdeviceptr data = b.dev.ptr() + b.data_at(offset);
      check_cu(driver().cuMemsetD8Async(b.dev.ptr(), kGuardByte, b.used(offset), nullptr), "cuMemsetD8Async", what);
      if (b.poisoned) { // NaN in every float type: an element left unwritten shows
        if (b.bytes()) check_cu(driver().cuMemsetD8Async(data, 0xff, b.bytes(), nullptr), "cuMemsetD8Async", what);
      } else if (b.bytes()) {
        check_cu(driver().cuMemcpyDtoDAsync(data, b.master.ptr(), b.bytes(), nullptr), "cuMemcpyDtoDAsync", what);
      }
    }
    check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", what);
  }

  // The spec's setup kernels on the inputs as filled (their masters, which everything after copies
  // from: the reference, the kernel under test, the check that inputs stay unchanged). An output a
  // step passes is the kernel's own buffer, poisoned after. Not timed: it makes the data.
  void run_setup(const KernelSpec& s) {
    Module& m = side_module("setup", p_);
    const std::string context = "the setup of " + s.path + " on " + p_.key();
    check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", "before " + context); // the fills
    std::vector<const void*> ptrs;
    for (Buffer& b : bufs_)
      ptrs.push_back(reinterpret_cast<const void*>(b.poisoned ? b.dev.ptr() + b.data_at(offset_) : b.master.ptr()));
    const LaunchPlan plan = s.plan(s.setup_steps, s.setup_config, p_);
    BufferArgs a(p_, ptrs, side_workspace(plan));
    launch_buffers(m, plan, a, nullptr);
    check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", "running " + context);
  }

  // The module of a kernel run beside the tuned one (the reference, the baseline) at the current
  // problem, compiled and loaded once (each check of each config runs the reference on fresh
  // inputs). what: "reference", "baseline", "setup", "post".
  Module& side_module(const std::string& what, const Problem& p) {
    const std::optional<CompileRequest> side = spec_side_request(p.op, what, p, device_.arch);
    if (!side) throw Error(spec_of(p.op).path + " has no " + what + " kernel");
    const CompileRequest& req = *side;
    std::shared_ptr<Module>& mod = side_modules_[req.cache_key()];
    if (!mod) {
      const auto compiled = compiler_.compile(req);
      mod = std::make_shared<Module>(compiled->cubin, compiled->lowered_names, req.context);
    }
    return *mod;
  }

  // The expected outputs from the spec's answer files, where the reference's would go.
  void load_answers(const KernelSpec& s) {
    for (Buffer& b : bufs_) {
      if (!b.checked) continue;
      reserve(b.ref, b.bytes(), "answer of " + s.args[b.arg].name);
      upload_file(s.args[b.arg].answer, b, b.ref.ptr(), "the answer for " + s.args[b.arg].name);
    }
    have_reference_ = true;
  }

  // The reference on its own copies of the inputs as filled (its outputs poisoned as the kernel
  // under test's are).
  void run_reference(const KernelSpec& s, CUstream stream) {
    Module& m = side_module("reference", p_);
    const std::string context = "the reference of " + s.path + " on " + p_.key();
    std::vector<const void*> ptrs;
    for (Buffer& b : bufs_) {
      reserve(b.ref, b.bytes(), "reference copy of " + s.args[b.arg].name);
      if (b.poisoned && b.bytes())
        check_cu(driver().cuMemsetD8Async(b.ref.ptr(), 0xff, b.bytes(), stream), "cuMemsetD8Async", context);
      else if (b.bytes())
        check_cu(driver().cuMemcpyDtoDAsync(b.ref.ptr(), b.master.ptr(), b.bytes(), stream), "cuMemcpyDtoDAsync", context);
      ptrs.push_back(reinterpret_cast<const void*>(b.ref.ptr()));
    }
    const LaunchPlan plan = s.plan(s.reference_steps, s.reference_config, p_);
    if (plan.workspace_bytes) reserve(ref_ws_, plan.workspace_bytes, "reference temporaries of " + p_.key());
    BufferArgs a(p_, ptrs, plan.workspace_bytes ? ref_ws_.ptr() : 0);
    launch_buffers(m, plan, a, stream);
    check_cu(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", "running " + context);
    if (s.has_post) run_post(s, ptrs, plan.spec_args, stream, "the reference's outputs");
    have_reference_ = true;
  }

  // The workspace a setup or post plan lays the spec's temporaries out in: their steps pass none
  // (the parse refuses it), yet a plan places every temporary and its binding needs the space.
  CUdeviceptr side_workspace(const LaunchPlan& plan) {
    if (!plan.workspace_bytes) return 0;
    reserve(side_ws_, plan.workspace_bytes, "setup / post temporaries of " + p_.key());
    return side_ws_.ptr();
  }

  // check.post on one set of buffers (the kernel under test's, the reference's): outputs brought to
  // the form the compare reads. Not timed: the kernel's call is over. A scalar that follows the
  // config passes the value of the run it follows (ran: that run's plan's), so a post step adds
  // up as many partials as the config under test wrote.
  void run_post(const KernelSpec& s, const std::vector<const void*>& ptrs, const std::vector<LaunchPlan::SpecArgValue>& ran,
                CUstream stream, const std::string& whose) {
    Module& m = side_module("post", p_);
    const std::string context = "check.post of " + s.path + " on " + whose + " at " + p_.key();
    LaunchPlan plan = s.plan(s.post_steps, s.post_config, p_);
    // A struct with tensor maps the run did not pass (its plan made it no bytes) keeps the post
    // plan's own.
    for (size_t i = 0; i < s.args.size() && i < ran.size() && i < plan.spec_args.size(); ++i)
      if (!s.args[i].buffer && s.args[i].follows_config) {
        plan.spec_args[i].value = ran[i].value;
        if (!(s.args[i].struct_has_maps() && ran[i].data.empty())) plan.spec_args[i].data = ran[i].data;
      }
    BufferArgs a(p_, ptrs, side_workspace(plan));
    launch_buffers(m, plan, a, stream);
    check_cu(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", "running " + context);
  }

  Compiler& compiler_;
  DeviceInfo device_;
  Problem p_;
  size_t offset_ = 0;
  std::vector<Buffer> bufs_;
  DeviceBuffer ws_, ref_ws_, side_ws_, sums_;
  bool have_reference_ = false;
  std::vector<LaunchPlan::SpecArgValue> last_args_; // the last launch's (the config under test)
  std::unique_ptr<Module> checks_;                              // spec_check.cu
  std::map<std::string, std::shared_ptr<Module>> side_modules_; // references and baselines, by compile key
  Module* baseline_module_ = nullptr; // side_modules_'s, with its plan, for baseline_for_
  LaunchPlan baseline_plan_;
  Problem baseline_for_;
  // Files converted for the current problem (file_problem_), by file, element type and count.
  std::map<std::tuple<std::string, ElemType, int64_t>, std::vector<unsigned char>> file_fills_;
  std::string file_problem_;
};

} // namespace

std::optional<CompileRequest> spec_side_request(const std::string& op, const std::string& what, const Problem& p,
                                                const std::string& arch) {
  const KernelSpec& s = spec_of(op);
  const bool ref = what == "reference", setup = what == "setup", post = what == "post";
  if (post ? !s.has_post : setup ? !s.has_setup : ref ? !s.check || s.answers : !s.has_baseline) return std::nullopt;
  const std::vector<SpecStep>& steps = post ? s.post_steps : setup ? s.setup_steps : ref ? s.reference_steps : s.baseline_steps;
  const Config& c = post ? s.post_config : setup ? s.setup_config : ref ? s.reference_config : s.baseline_config;
  CompileRequest req;
  req.source = s.source;
  req.source_name = s.source_name;
  req.name_expressions = s.kernel_names(steps, c, p);
  req.options = s.compile_options(c, p);
  req.build_macros = s.build_macros();
  req.headers = s.std_headers;
  req.arch = op_info(op).families().front().compile_arch(arch); // the spec's "arch": "sm_90a" too
  req.context = what + " of " + s.path + " config " + c.to_json() + " problem " + p.key();
  return req;
}

DeviceFill device_fill(const SpecFill& at) {
  DeviceFill d{int(at.kind), at.lo, at.hi, at.value};
  if (at.kind == SpecFill::ramp) d.lo = at.start, d.hi = at.step, d.value = double(at.mod);
  if (at.kind == SpecFill::random && at.integers) d.kind = 6; // floored in a float buffer too
  return d;
}

std::unique_ptr<OpRunner> make_spec_runner(Compiler& compiler, const DeviceInfo& device) {
  return std::make_unique<SpecRunner>(compiler, device);
}

} // namespace ktune
