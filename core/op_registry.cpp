// The list of ops every layer looks problems up in, and what an op of N-dimensional operands
// (OpInfo::Operand::shape) derives from its declaration: its strides' names, their packed values
// and the span of each operand's buffer.
#include <algorithm>
#include <mutex>

#include "core/op_strides.h"
#include "ktune/error.h"
#include "ktune/problem.h"

namespace ktune {

namespace {

size_t axis_of(const OpInfo& op, const std::string& dim) {
  const auto it = std::find(op.dims.begin(), op.dims.end(), dim);
  return it == op.dims.end() ? op.dims.size() : size_t(it - op.dims.begin());
}

// A shaped operand's strides packed (row-major over its axes), each rounded up to `step` elements
// and then `extra` more, but the innermost, which is 1: with extra 0 the smallest strides of that
// alignment.
std::vector<int64_t> packed_outer_strides(const OpInfo& op, const OpInfo::Operand& o, const std::vector<int64_t>& dims,
                                          int64_t step, int64_t extra) {
  std::vector<int64_t> s(o.shape.size() - 1);
  int64_t inner = 1, extent = dims[axis_of(op, o.shape.back())];
  for (size_t a = o.shape.size() - 1; a-- > 0;) {
    const int64_t want = std::max<int64_t>(1, inner * extent);
    s[a] = (want + step - 1) / step * step + extra;
    inner = s[a], extent = dims[axis_of(op, o.shape[a])];
  }
  return s;
}

// Every shaped operand's outer strides of op at dims, as packed_outer_strides (Problem::ld order).
std::vector<int64_t> packed_all(const OpInfo& op, const std::vector<int64_t>& dims, int64_t step, int64_t extra) {
  std::vector<int64_t> all;
  for (const auto& o : op.operands)
    if (!o.shape.empty())
      for (int64_t s : packed_outer_strides(op, o, dims, step, extra)) all.push_back(s);
  return all;
}

// Fills what a shaped op's strides need; throws UsageError on an inconsistent declaration.
OpInfo complete(OpInfo op) {
  const bool shaped = has_shaped_operands(op);
  auto bad = [&](const std::string& why) { return UsageError("op " + op.name + ": " + why); };
  if (op.name.empty()) throw UsageError("an op needs a name");
  for (const auto& d : op.derived_dims)
    if (std::find(op.dims.begin(), op.dims.end(), d) == op.dims.end())
      throw bad("derived dimension '" + d + "' is not a dimension");
  if (!shaped) return op;
  if (op.min_ld || !op.ld_names.empty())
    throw bad("N-dimensional operands derive their strides; the op declares min_ld or ld_names too");
  for (const auto& o : op.operands) {
    for (const auto& d : o.shape)
      if (axis_of(op, d) == op.dims.size()) throw bad("operand " + o.name + " has an axis '" + d + "' that is not a dimension");
    if (o.shape.empty() && !o.count) throw bad("operand " + o.name + " has neither a shape nor a count");
    for (size_t a = 0; a + 1 < o.shape.size(); ++a) op.ld_names.push_back(o.name + "." + o.shape[a]);
  }
  const OpInfo copy = op; // the lambda must not hold a reference into the list it is stored in
  op.min_ld = [copy](const std::vector<int64_t>& dims, const std::string&) { return packed_all(copy, dims, 1, 0); };
  return op;
}

std::deque<OpInfo>& registry() {
  static std::deque<OpInfo> list = [] {
    std::deque<OpInfo> l;
    for (auto& o : builtin_ops()) l.push_back(complete(std::move(o)));
    return l;
  }();
  return list;
}

// The first index of operand i's strides in Problem::ld.
size_t first_stride(const OpInfo& op, size_t i) {
  size_t at = 0;
  for (size_t k = 0; k < i; ++k)
    if (!op.operands[k].shape.empty()) at += op.operands[k].shape.size() - 1;
  return at;
}

} // namespace

const std::deque<OpInfo>& ops() { return registry(); }

bool has_shaped_operands(const OpInfo& op) {
  return std::any_of(op.operands.begin(), op.operands.end(), [](const auto& o) { return !o.shape.empty(); });
}

const OpInfo& register_op(OpInfo op) {
  static std::mutex m;
  std::lock_guard<std::mutex> lock(m);
  for (const auto& o : registry())
    if (o.name == op.name) throw UsageError("op '" + op.name + "' is already registered");
  registry().push_back(complete(std::move(op)));
  return registry().back();
}

std::vector<int64_t> operand_extents(const Problem& p, size_t i) {
  const OpInfo& op = op_info(p.op);
  std::vector<int64_t> e;
  for (const auto& d : op.operands.at(i).shape) e.push_back(p.dims.at(axis_of(op, d)));
  return e;
}

std::vector<int64_t> operand_strides(const Problem& p, size_t i) {
  const OpInfo& op = op_info(p.op);
  const OpInfo::Operand& o = op.operands.at(i);
  if (o.shape.empty()) return {};
  const size_t at = first_stride(op, i);
  std::vector<int64_t> s(p.ld.begin() + std::ptrdiff_t(std::min(at, p.ld.size())),
                         p.ld.begin() + std::ptrdiff_t(std::min(at + o.shape.size() - 1, p.ld.size())));
  if (s.size() + 1 != o.shape.size()) // the caller's strides: a usage error, like validate()'s
    throw UsageError(p.key() + ": " + std::to_string(p.ld.size()) + " strides, operand " + o.name + " needs entries " +
                std::to_string(at) + ".." + std::to_string(at + o.shape.size() - 2));
  s.push_back(1);
  return s;
}

int operand_element_bytes(const Problem& p, size_t i) {
  const int b = op_info(p.op).operands.at(i).elem_bytes;
  return b ? b : element_bytes(p.dtype);
}

int64_t operand_elements(const Problem& p, size_t i) {
  const OpInfo& op = op_info(p.op);
  const OpInfo::Operand& o = op.operands.at(i);
  if (o.shape.empty()) return o.count(p);
  const std::vector<int64_t> e = operand_extents(p, i), s = operand_strides(p, i);
  int64_t last = 0;
  for (size_t a = 0; a < e.size(); ++a) {
    if (e[a] <= 0) return 0;
    last += (e[a] - 1) * s[a]; // validate() bounds extents and strides by 2^31: no overflow below rank 8
  }
  // Not empty whatever the strides: a negative one must reach validate() (which refuses it), not
  // make the operand look empty to a caller that skips empty problems.
  return std::max<int64_t>(last + 1, 1);
}

// Called by validate() for an op of shaped operands: every stride in range and no two elements of
// one operand at the same address (sorted by stride, each axis must step past the whole extent of
// the axes inside it).
void validate_strides(const Problem& p, const std::function<void(const std::string&)>& fail) {
  const OpInfo& op = op_info(p.op);
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const OpInfo::Operand& o = op.operands[i];
    if (o.shape.empty()) continue;
    const std::vector<int64_t> e = operand_extents(p, i), s = operand_strides(p, i);
    std::vector<size_t> order;
    for (size_t a = 0; a < e.size(); ++a) {
      if (s[a] < 1 || s[a] > op.max_ld)
        fail("stride " + o.name + "." + o.shape[a] + " = " + std::to_string(s[a]) + " is out of range (1.." +
             std::to_string(op.max_ld) + ")");
      if (e[a] > 1) order.push_back(a);
    }
    if (std::any_of(e.begin(), e.end(), [](int64_t x) { return x == 0; })) continue;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s[a] < s[b] || (s[a] == s[b] && a > b); });
    int64_t reach = 1; // elements an axis must step over: the span of the axes inside it
    for (size_t k = 0; k < order.size(); ++k) {
      const size_t a = order[k];
      if (s[a] < reach)
        fail("operand " + o.name + "'s elements overlap: stride along " + o.shape[a] + " is " + std::to_string(s[a]) +
             ", the axes inside it span " + std::to_string(reach));
      reach = s[a] * e[a];
    }
  }
}

std::vector<int64_t> packed_strides(const Problem& p, int64_t step, int64_t extra) {
  return packed_all(op_info(p.op), p.dims, step, extra);
}

} // namespace ktune
