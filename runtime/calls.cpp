// GemmCall, RowsCall and BuffersCall (include/ktune/runtime.h): Runtime::gemm_ex, rows and run
// without the lookup by key on every call. A call computes the alignment class its pointers allow
// (a few bit tests), takes the prepared launch kept for that class, and launches; only the first
// call of a class goes through the runtime's lookup (which resolves, measures at first use and
// compiles as gemm_ex / rows / run do). Python's per-call host cost is what decides eager speed at
// small shapes (bench/rows_call_overhead.py), and most of the runtime's share of it was building
// the key.
#include <string>

#include "ktune/error.h"
#include "ktune/runtime.h"
#include "core/kernel_spec.h"
#include "ktune/kernel_spec.h"
#include "runtime/buffers_launch.h"
#include "runtime/op_launcher.h"
#include "runtime/runtime_impl.h"

namespace ktune {
namespace {

int slot_of(int align) { return align >= 16 ? 0 : align == 8 ? 1 : align == 4 ? 2 : 3; }

} // namespace

GemmCall::GemmCall(Runtime& rt, const GemmProblem& p) : rt_(rt), p_(p) {
  require_storage(p_, "ktune::Runtime::gemm_call");
  p_.alpha = 1.0f, p_.beta = 0.0f; // each call gives its own
  p_.align = GemmProblem::alignment_of(p_.eff_lda(), p_.eff_ldb(), p_.eff_ldc(), element_bytes(p_.dtype));
  // An empty C is a valid problem that computes nothing (as gemm_ex takes it); anything else is
  // checked now, once, instead of at every call.
  if (p_.m != 0 && p_.n != 0) p_.validate();
  else if (p_.m < 0 || p_.n < 0 || p_.k < 0) p_.validate();
}

void GemmCall::operator()(const void* A, const void* B, void* C, float alpha, float beta, CUstream stream) const {
  GemmProblem p = p_;
  p.alpha = alpha, p.beta = beta;
  // BLAS's quick returns, exactly as gemm_ex takes them (no kernel reads A or B).
  if (blas_quick_path(p)) return rt_.scale_only(p, C, stream);
  p.align = GemmProblem::alignment_with_pointers(p_.align, A, B, C);
  std::atomic<const void*>& slot = prepared_[slot_of(p.align)];
  const void* prep = slot.load(std::memory_order_acquire);
  if (!prep) {
    prep = rt_.prepared_gemm(p, A, B, stream);
    slot.store(prep, std::memory_order_release);
  }
  rt_.launch(prep, p, A, B, C, stream);
}

bool GemmCall::ready(const void* A, const void* B, const void* C, float alpha) const {
  if (alpha == 0.0f || blas_quick_path(p_)) return false; // the quick returns go through cuBLAS
  const int align = GemmProblem::alignment_with_pointers(p_.align, A, B, C);
  return prepared_[slot_of(align)].load(std::memory_order_acquire) != nullptr;
}

RowsCall::RowsCall(Runtime& rt, const Problem& p) : rt_(rt), p_(p) {
  if (p_.op == "gemm") throw UsageError("ktune::Runtime::rows_call: " + p_.key() + " is a GEMM (use gemm_call)");
  p_.align = Problem::alignment_of(p_.ld, element_bytes(p_.dtype));
  // As rows() takes them: an empty problem computes nothing; anything else is checked now.
  const bool empty = rows_empty(p_) && p_.dims[0] >= 0 && p_.dims[1] >= 0;
  if (!empty) validate(p_);
}

void RowsCall::operator()(const void* x, void* y, const void* weight, const void* bias, CUstream stream) const {
  if (rows_empty(p_)) return;
  if (!x || !y) throw UsageError("ktune::Runtime::rows: x or y is null for " + p_.key());
  const int align = Problem::alignment_with_pointers(p_.align, {x, y, weight, bias}, element_bytes(p_.dtype));
  std::atomic<const void*>& slot = prepared_[slot_of(align)];
  const void* prep = slot.load(std::memory_order_acquire);
  if (!prep) {
    Problem p = p_;
    p.align = align;
    prep = rt_.prepared_rows(p, x, y, weight, bias, stream);
    if (!prep) return; // ran inside a capture, nothing kept yet
    slot.store(prep, std::memory_order_release);
  }
  // The launch reads sizes, strides and scalars, not the alignment class: p_ serves every slot.
  rt_.launch_prepared_rows(prep, p_, x, y, weight, bias, stream);
}

bool RowsCall::ready(const void* x, const void* y, const void* weight, const void* bias) const {
  if (rows_empty(p_) || !x || !y) return false;
  const int align = Problem::alignment_with_pointers(p_.align, {x, y, weight, bias}, element_bytes(p_.dtype));
  return prepared_[slot_of(align)].load(std::memory_order_acquire) != nullptr;
}

BuffersCall::BuffersCall(Runtime& rt, const Problem& p) : rt_(rt), p_(p) {
  if (&op_launcher(op_info(p_.op)) != &buffers_launcher())
    throw UsageError("ktune::Runtime::buffers_call: " + p_.key() + " is not an op of plain buffers (use gemm_call or rows_call)");
  validate(p_);
  p_.align = Problem::alignment_of(p_.ld, element_bytes(p_.dtype));
  empty_ = true;
  const OpInfo& info = op_info(p_.op);
  for (size_t i = 0; i < info.operands.size(); ++i)
    if (info.operands[i].written() && operand_elements(p_, i) > 0) empty_ = false;
}

int BuffersCall::align_of(const void* const* buffers, size_t n) const {
  return operands_alignment(p_, p_.align, buffers, n);
}

void BuffersCall::operator()(const void* const* buffers, size_t n, CUstream stream) const {
  if (empty_) return;
  const std::vector<const void*> ptrs(buffers, buffers + n); // BufferArgs checks the count and the nulls
  const int align = align_of(buffers, n);
  std::atomic<const void*>& slot = prepared_[slot_of(align)];
  const void* prep = slot.load(std::memory_order_acquire);
  if (!prep) {
    Problem p = p_;
    p.align = align;
    BufferArgs check(p, ptrs); // a wrong count or a null pointer: the UsageError before any lookup
    prep = rt_.prepared_buffers(p, std::vector<void*>(const_cast<void* const*>(buffers), const_cast<void* const*>(buffers) + n), stream);
    if (!prep) return; // ran inside a capture, nothing kept yet
    slot.store(prep, std::memory_order_release);
  }
  rt_.launch_prepared_buffers(prep, p_, ptrs, stream);
}

bool BuffersCall::ready(const void* const* buffers, size_t n) const {
  if (empty_) return false;
  return prepared_[slot_of(align_of(buffers, n))].load(std::memory_order_acquire) != nullptr;
}

std::unique_ptr<BuffersCall> Runtime::buffers_call(const Problem& p) {
  return std::unique_ptr<BuffersCall>(new BuffersCall(*this, p));
}

std::unique_ptr<GemmCall> Runtime::gemm_call(const GemmProblem& p) { return std::unique_ptr<GemmCall>(new GemmCall(*this, p)); }

std::unique_ptr<RowsCall> Runtime::rows_call(const Problem& p) { return std::unique_ptr<RowsCall>(new RowsCall(*this, p)); }

Kernel Runtime::kernel(const std::string& spec_path) {
  const std::string op = load_kernel_spec(spec_path);
  impl_->refresh_index(); // a new op: its entries in the store and tables were skipped when the index was built
  return Kernel(*this, op);
}

Kernel Runtime::loaded_kernel(const std::string& op) {
  if (!op_info(op).spec) throw UsageError("op " + op + " is not a user's kernel");
  return Kernel(*this, op);
}

Problem Kernel::problem(const std::vector<int64_t>& dims, const std::vector<const void*>& args, std::optional<DType> dtype) const {
  const KernelSpec& s = spec_of(op_);
  Problem p = Problem::make(op_, dims, "", dtype ? *dtype : s.dtypes.front());
  if (args.empty()) return p;
  std::string names;
  size_t want = 0;
  for (const SpecArg& a : s.args)
    if (a.caller_passes()) names += (want++ ? ", " : "") + a.name;
  if (args.size() != want)
    throw UsageError("ktune::Kernel " + op_ + ": " + std::to_string(args.size()) + " arguments given, the spec takes " +
                     std::to_string(want) + " (" + names + ")");
  size_t k = 0;
  for (const SpecArg& a : s.args) {
    if (!a.caller_passes()) continue;
    const void* v = args[k++];
    if (a.buffer) continue;
    if (!v) throw UsageError("ktune::Kernel " + op_ + ": scalar " + a.name + " is passed as a null pointer");
    p.scalars[a.name] = load_elem(static_cast<const unsigned char*>(v), 0, a.scalar_elem(p));
  }
  return p;
}

void Kernel::launch(const std::vector<int64_t>& dims, const std::vector<const void*>& args, CUstream stream,
                    std::optional<DType> dtype) const {
  const Problem p = problem(dims, args, dtype);
  std::vector<void*> buffers;
  size_t k = 0;
  for (const SpecArg& a : spec_of(op_).args) {
    if (!a.caller_passes()) continue;
    if (a.buffer) buffers.push_back(const_cast<void*>(args[k]));
    ++k;
  }
  rt_->run(p, buffers, stream);
}

Selection Kernel::best_config(const std::vector<int64_t>& dims, std::optional<DType> dtype, int align) const {
  Problem p = problem(dims, {}, dtype);
  p.align = align;
  return rt_->best_config(p);
}

} // namespace ktune
