// The tuner's runner for attention (OpInfo::runner "attention"; kernel_templates/attention/): every
// buffer between guard bytes, inputs filled on the GPU from the seed, outputs poisoned, and the
// check (guards, inputs unchanged, writes between the output's elements, the FP64 reference
// compared with O and the log-sum-exp under attention_check.cu's bound) on the GPU too: a check of
// a 16k-token prefill copies nothing to the host.
#include "tuner/attention_op.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "attention/attention_varlen.h"
#include "core/embedded.h"
#include "core/op_strides.h"
#include "ktune/error.h"
#include "runtime/buffers_launch.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"

namespace ktune {

CompileRequest attention_check_request(const std::string& arch) {
  CompileRequest req;
  req.source = std::string(embedded_file("attention/attention_check.cu"));
  req.source_name = "attention/attention_check.cu";
  req.name_expressions = {"ktune_attn_fill", "ktune_attn_guard", "ktune_attn_stray", "ktune_attn_reference",
                          "ktune_attn_fill_int"};
  req.arch = arch;
  req.context = "attention check kernels for " + arch;
  return req;
}

namespace {

constexpr size_t kGuard = 256;
constexpr unsigned char kGuardByte = 0x5a;
enum CheckKernel { kFill, kGuardK, kStray, kReference, kFillInt };

// An operand of attention or attention_paged by name (their orders differ).
size_t operand_index(const Problem& p, const std::string& name) {
  const auto& ops = op_info(p.op).operands;
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].name == name) return i;
  throw Error("op " + p.op + " has no operand " + name);
}

// attention_check.cu's KtuneAttnSums and KtuneAttnCheck, as they lie in device memory.
struct AttnSums {
  double err2 = 0, ref2 = 0, allow2 = 0;
  uint64_t worst_ratio = 0;
  uint64_t violations = 0, nonfinite = 0;
  int64_t first_violation = INT64_MAX, first_nonfinite = INT64_MAX;
  double worst() const {
    double w;
    std::memcpy(&w, &worst_ratio, sizeof w);
    return w;
  }
};
struct AttnCheck {
  AttnSums o, lse;
  uint64_t guard_bytes = 0, input_elements = 0, stray_elements = 0;
};
static_assert(sizeof(AttnSums) == 64 && sizeof(AttnCheck) == 152, "laid out as attention_check.cu's structs");

class AttentionRunner : public OpRunner {
 public:
  AttentionRunner(Compiler& compiler, const DeviceInfo& device) : compiler_(compiler), device_(device) {}

  void prepare(const Problem& p, uint64_t seed) override { prepare_at(p, seed, 0, false); }

  // As served: the scale away from its default (0.685 instead of 1 / sqrt(head_dim): no power of
  // two), every pointer at the least-aligned offset of p's class, and every stride of q, k, v and
  // o one alignment step past packed (a kernel that assumes packed rows shows); attention_varlen's
  // sequences ragged, one of them empty (as timed: all of even length); attention_paged's lengths
  // drawn from 0 to the capacity and its pages shared between sequences (as timed: every sequence
  // full and no page twice, as a contiguous cache of the shape is timed, so that a paged trial
  // compares with its contiguous twin and does not hang on one draw: at batch 1, a single random
  // length).
  void prepare(const Problem& p, uint64_t seed, Conditions c) override {
    if (c == Conditions::as_timed) return prepare_at(p, seed, 0, false);
    Problem q = p;
    q.scalars["scale"] = 0.5 * 1.37;
    const int64_t step = std::max(1, q.align / element_bytes(q.dtype));
    q.ld = packed_strides(q, step, step);
    prepare_at(q, seed, least_aligned_offset(p), true);
  }

  // attention_decode's split partials. Scratch, so no guards; filled with 0xFF bytes (NaN) before
  // every config: served, the workspace holds the last call's leftovers, so a kernel that counts
  // on zeroed or stale scratch fails here too.
  void ensure_workspace(size_t bytes) override {
    if (!bytes) return;
    reserve(workspace_, bytes, "the attention runner's workspace"); // before any prepare: no problem yet
    check_cu(driver().cuMemsetD8Async(workspace_.ptr(), 0xFF, bytes, nullptr), "cuMemsetD8Async",
             "filling the attention runner's workspace (" + std::to_string(bytes) + " bytes)");
  }

  void launch(Module& m, const LaunchPlan& plan, CUstream stream) override {
    BufferArgs a(p_, const_pointers(), plan.workspace_bytes ? workspace_.ptr() : 0);
    launch_buffers(m, plan, a, stream);
  }

  VerifyResult verify(CUstream stream, Numerics) override {
    const std::string what = "verifying " + p_.key();
    check_cu(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", "before " + what);
    const AttnCheck init;
    reserve(sums_, sizeof(AttnCheck), "check sums of " + p_.key());
    check_cu(driver().cuMemcpyHtoD(sums_.ptr(), &init, sizeof init), "cuMemcpyHtoD", what);
    const CUdeviceptr guards = sums_.ptr() + offsetof(AttnCheck, guard_bytes);
    const CUdeviceptr inputs = sums_.ptr() + offsetof(AttnCheck, input_elements);
    const CUdeviceptr stray = sums_.ptr() + offsetof(AttnCheck, stray_elements);
    const OpInfo& info = op_info(p_.op);
    for (size_t i = 0; i < bufs_.size(); ++i) {
      const Buffer& b = bufs_[i];
      const size_t data_at = kGuard + offset_, data_end = data_at + b.bytes;
      guard_check(b.dev.ptr(), data_at, guards, stream);
      guard_check(b.dev.ptr() + data_end, kGuard, guards, stream);
      if (!info.operands[i].output && host_filled_[i].empty()) fill(i, inputs, stream);
    }
    stray_check(stray, stream);
    reference(stream);
    AttnCheck out;
    check_cu(driver().cuMemcpyDtoH(&out, sums_.ptr(), sizeof out), "cuMemcpyDtoH", what);
    out.input_elements += host_filled_changes(what);
    VerifyResult r;
    r.conditions = conditions_text(offset_);
    if (offset_) r.conditions += ", scale 0.685, strides padded past packed";
    r.guard_writes = out.guard_bytes, r.input_writes = out.input_elements, r.stray_writes = out.stray_elements;
    r.nonfinite = out.o.nonfinite + out.lse.nonfinite;
    r.violations = out.o.violations + out.lse.violations;
    r.worst_ratio = std::max(out.o.worst(), out.lse.worst());
    if (out.o.violations) r.worst_index = out.o.first_violation;
    else if (out.o.nonfinite) r.worst_index = out.o.first_nonfinite;
    if (out.lse.violations || out.lse.nonfinite)
      r.conditions += "; log-sum-exp: " + std::to_string(out.lse.violations) + " over their bound, " +
                      std::to_string(out.lse.nonfinite) + " not finite (first at row " +
                      std::to_string(std::min(out.lse.first_violation, out.lse.first_nonfinite)) + ")";
    r.rel_error = out.o.ref2 > 0 ? std::sqrt(out.o.err2 / out.o.ref2) : std::sqrt(out.o.err2);
    r.norm_bound = out.o.ref2 > 0 ? std::sqrt(out.o.allow2 / out.o.ref2) : std::sqrt(out.o.allow2);
    r.pass = r.nonfinite == 0 && r.violations == 0 && r.guard_writes == 0 && r.input_writes == 0 && r.stray_writes == 0;
    return r;
  }

  void run_runtime(Runtime& rt, CUstream stream) override { rt.run(p_, pointers(), stream); }

 private:
  struct Buffer {
    DeviceBuffer dev; // guards, offset, data, guards
    size_t bytes = 0; // the data's
    uint64_t seed = 0;
  };

  std::vector<void*> pointers() const {
    std::vector<void*> v;
    for (const Buffer& b : bufs_) v.push_back(reinterpret_cast<void*>(b.dev.ptr() + kGuard + offset_));
    return v;
  }
  std::vector<const void*> const_pointers() const {
    const std::vector<void*> v = pointers();
    return {v.begin(), v.end()};
  }

  static void reserve(DeviceBuffer& buf, size_t bytes, const std::string& what) {
    bytes = std::max<size_t>(bytes, 1);
    if (buf.bytes() >= bytes) return;
    buf = DeviceBuffer();
    buf = DeviceBuffer(bytes, what);
  }

  Module& checks() {
    if (!checks_) {
      const CompileRequest req = attention_check_request(device_.arch);
      const auto k = compiler_.compile(req);
      checks_ = std::make_unique<Module>(k->cubin, k->lowered_names, req.context);
    }
    return *checks_;
  }

  void prepare_at(const Problem& p, uint64_t seed, size_t offset, bool ragged) {
    const OpInfo& info = op_info(p.op);
    p_ = p, offset_ = offset, ragged_ = ragged;
    bufs_.resize(info.operands.size());
    host_filled_.assign(info.operands.size(), {});
    for (size_t i = 0; i < bufs_.size(); ++i) {
      Buffer& b = bufs_[i];
      const std::string what = info.operands[i].name + " of " + p.key();
      b.bytes = size_t(operand_elements(p, i)) * size_t(operand_element_bytes(p, i));
      b.seed = seed * 0x9e3779b97f4a7c15ull + i;
      const size_t used = 2 * kGuard + offset + b.bytes;
      reserve(b.dev, used, what);
      check_cu(driver().cuMemsetD8Async(b.dev.ptr(), kGuardByte, used, nullptr), "cuMemsetD8Async", "guards of " + what);
      const CUdeviceptr data = b.dev.ptr() + kGuard + offset;
      if (info.operands[i].output) { // NaN in FP32, bf16 and f16: an element never written shows
        check_cu(driver().cuMemsetD8Async(data, 0xff, b.bytes, nullptr), "cuMemsetD8Async", "poisoning " + what);
      } else if (varlen() && info.operands[i].elem_bytes == 4) { // cumulative lengths, made here
        const bool keys = info.operands[i].name == "cu_seqlens_k";
        host_filled_[i] = varlen_cu_seqlens(p.dims[keys ? 7 : 6], p.dims[0], p.dims[keys ? 4 : 3], ragged ? b.seed | 1 : 0,
                                            keys ? p.dims[0] - 1 : 1);
        check_cu(driver().cuMemcpyHtoD(data, host_filled_[i].data(), b.bytes), "cuMemcpyHtoD", "filling " + what);
      } else if (paged() && !ragged && info.operands[i].name == "block_table") {
        host_filled_[i] = distinct_pages(size_t(operand_elements(p, i)), p.dims[7], b.seed);
        check_cu(driver().cuMemcpyHtoD(data, host_filled_[i].data(), b.bytes), "cuMemcpyHtoD", "filling " + what);
      } else {
        fill(i, 0, nullptr);
      }
    }
    check_cu(driver().cuCtxSynchronize(), "cuCtxSynchronize", "after filling the inputs of " + p.key());
  }

  // attention_paged's block table as timed: `entries` pages of the `pages` in the cache in a random
  // order, no page twice while the cache has enough (a cache some time into serving). Drawn with
  // repeats, as the served conditions are, a table of 16 entries over 16 pages names about 10
  // distinct ones, and the trial reads a third of its keys from L2.
  static std::vector<int32_t> distinct_pages(size_t entries, int64_t pages, uint64_t seed) {
    std::vector<int32_t> perm(size_t(std::max<int64_t>(pages, 1)));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), std::mt19937_64(seed));
    std::vector<int32_t> table(entries);
    for (size_t j = 0; j < entries; ++j) table[j] = perm[j % perm.size()];
    return table;
  }

  // Elements of the inputs filled from the host (varlen's cumulative lengths, paged's block table
  // as timed) that the kernel changed.
  uint64_t host_filled_changes(const std::string& what) {
    uint64_t changed = 0;
    for (size_t i = 0; i < host_filled_.size(); ++i) {
      if (host_filled_[i].empty()) continue;
      std::vector<int32_t> now(host_filled_[i].size());
      check_cu(driver().cuMemcpyDtoH(now.data(), bufs_[i].dev.ptr() + kGuard + offset_, now.size() * sizeof(int32_t)),
               "cuMemcpyDtoH", what);
      for (size_t j = 0; j < now.size(); ++j) changed += now[j] != host_filled_[i][j];
    }
    return changed;
  }

  // Input i filled from its seed (count 0), or its elements that differ from that fill added to
  // the counter at `count`. attention_paged's int32 operands: pages of the cache anywhere in the
  // pool (a page may serve several sequences, as shared prefixes do), and lengths from 0 (a
  // sequence with no key) to the capacity, or (as timed) the capacity.
  void fill(size_t i, CUdeviceptr count, CUstream stream) {
    const OpInfo::Operand& o = op_info(p_.op).operands[i];
    CUdeviceptr x = bufs_[i].dev.ptr() + kGuard + offset_;
    long long n = operand_elements(p_, i);
    if (o.elem_bytes == 4) {
      const bool table = o.name == "block_table";
      long long lo = table || ragged_ ? 0 : p_.dims[4], hi = table ? p_.dims[7] - 1 : p_.dims[4];
      unsigned long long seed = bufs_[i].seed;
      void* params[] = {&x, &n, &lo, &hi, &seed, &count};
      launch_grid_stride(checks(), kFillInt, n, device_, params, stream);
      return;
    }
    int f16 = p_.dtype == DType::f16;
    double lo = o.lo, hi = o.hi;
    unsigned long long seed = bufs_[i].seed;
    void* params[] = {&x, &n, &f16, &lo, &hi, &seed, &count};
    launch_grid_stride(checks(), kFill, n, device_, params, stream);
  }

  void guard_check(CUdeviceptr a, size_t bytes, CUdeviceptr count, CUstream stream) {
    long long n = static_cast<long long>(bytes);
    unsigned byte = kGuardByte;
    void* params[] = {&a, &n, &byte, &count};
    launch_grid_stride(checks(), kGuardK, n, device_, params, stream);
  }

  // o's elements outside its view (padding of strided rows) must still hold the poison.
  void stray_check(CUdeviceptr count, CUstream stream) {
    const size_t kO = operand_index(p_, "o");
    std::vector<int64_t> e = operand_extents(p_, kO), s = operand_strides(p_, kO);
    std::vector<size_t> order(e.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s[a] > s[b]; });
    long long span = operand_elements(p_, kO);
    // The kernel's four axes: attention_varlen's (token, head, head_dim) after an axis of one
    // whose stride passes the span.
    long long ext[4], str[4];
    const size_t pad = 4 - order.size();
    for (size_t a = 0; a < pad; ++a) ext[a] = 1, str[a] = std::max(span, 1LL);
    for (size_t a = pad; a < 4; ++a) ext[a] = e[order[a - pad]], str[a] = std::max<int64_t>(1, s[order[a - pad]]);
    CUdeviceptr o = bufs_[kO].dev.ptr() + kGuard + offset_;
    void* params[] = {&o, &span, &ext[0], &ext[1], &ext[2], &ext[3], &str[0], &str[1], &str[2], &str[3], &count};
    launch_grid_stride(checks(), kStray, span, device_, params, stream);
  }

  void reference(CUstream stream) {
    const std::vector<void*> all = pointers();
    std::vector<void*> ptr;
    for (const char* name : {"q", "k", "v", "o", "lse"}) ptr.push_back(all[operand_index(p_, paged() ? paged_name(name) : name)]);
    std::vector<long long> dims(p_.dims.begin(), p_.dims.begin() + 6), ld(p_.ld.begin(), p_.ld.end());
    if (varlen() && ld.size() == 8) // token and head strides: the reference's (batch, sequence, head), no batch stride
      for (size_t x = 0; x < 4; ++x) ld.insert(ld.begin() + 3 * x, 0);
    if (ld.size() != 12) throw Error("attention problem " + p_.key() + " has " + std::to_string(ld.size()) + " strides, not 12");
    const double given = p_.scalar("scale");
    double scale = given != 0 ? double(float(given)) : 1.0 / std::sqrt(double(p_.dims[5]));
    int f16 = p_.dtype == DType::f16, causal = p_.layout == "causal";
    double u_p = unit_roundoff(p_.dtype);
    CUdeviceptr sums = sums_.ptr();
    std::vector<void*> params;
    for (auto& x : ptr) params.push_back(&x);
    for (auto& d : dims) params.push_back(&d);
    for (auto& s : ld) params.push_back(&s);
    params.push_back(&scale), params.push_back(&f16), params.push_back(&causal), params.push_back(&u_p);
    params.push_back(&sums);
    void* bt = paged() ? all[operand_index(p_, "block_table")] : nullptr;
    void* lens = paged() ? all[operand_index(p_, "seq_lens")] : nullptr;
    long long page = paged() ? p_.dims[6] : 1, pps = paged() ? p_.dims[4] / p_.dims[6] : 0;
    params.push_back(&bt), params.push_back(&lens), params.push_back(&page), params.push_back(&pps);
    void* cu_q = varlen() ? all[operand_index(p_, "cu_seqlens_q")] : nullptr;
    void* cu_k = varlen() ? all[operand_index(p_, "cu_seqlens_k")] : nullptr;
    long long total_q = varlen() ? p_.dims[6] : 0;
    params.push_back(&cu_q), params.push_back(&cu_k), params.push_back(&total_q);
    const unsigned grid[3] = {unsigned((p_.dims[3] + 31) / 32), unsigned(p_.dims[1]), unsigned(p_.dims[0])};
    const unsigned block[3] = {256, 1, 1};
    const unsigned smem = unsigned((32 * (p_.dims[5] + 1) + 64 * p_.dims[5]) * 4);
    checks().launch(kReference, grid, block, smem, stream, params.data());
  }

  bool paged() const { return p_.op == "attention_paged"; }
  bool varlen() const { return p_.op == "attention_varlen"; }
  static const char* paged_name(const char* name) {
    return std::string(name) == "k" ? "k_cache" : std::string(name) == "v" ? "v_cache" : name;
  }

  Compiler& compiler_;
  DeviceInfo device_;
  Problem p_;
  size_t offset_ = 0;
  bool ragged_ = false; // as served: varlen's and paged's lengths uneven
  std::vector<Buffer> bufs_;
  std::vector<std::vector<int32_t>> host_filled_; // per operand: its fill when made on the host
  DeviceBuffer sums_, workspace_;
  std::unique_ptr<Module> checks_;
};

} // namespace

std::unique_ptr<OpRunner> make_attention_runner(Compiler& compiler, const DeviceInfo& device) {
  return std::make_unique<AttentionRunner>(compiler, device);
}

} // namespace ktune
