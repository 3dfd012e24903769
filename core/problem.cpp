#include "ktune/problem.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <regex>

#include "core/op_strides.h"
#include "ktune/error.h"

namespace ktune {

const char* to_string(DType d) {
  switch (d) {
    case DType::f32: return "f32";
    case DType::tf32: return "tf32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f64: return "f64";
  }
  return "?";
}

DType parse_dtype(const std::string& s) {
  for (DType d : {DType::f32, DType::tf32, DType::f16, DType::bf16, DType::f64})
    if (s == to_string(d)) return d;
  throw UsageError("unknown dtype '" + s + "' (expected f32, tf32, f16, bf16 or f64)");
}

int element_bytes(DType d) { return is_half(d) ? 2 : d == DType::f64 ? 8 : 4; }

double unit_roundoff(DType d) {
  return std::ldexp(1.0, d == DType::bf16 ? -8 : d == DType::f16 ? -11 : d == DType::f64 ? -53 : -24);
}

namespace {

std::string join_dims(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

std::string out_of_range(const OpInfo& op, size_t i, const std::string& value) {
  return op.dims[i] + " = " + value + " is out of range (at most " + std::to_string(op.max_dim) + " for " + op.name +
         ")";
}

// "AxBx..." with exactly as many non-negative numbers as op has dimensions, each at most its
// max_dim: a shape of the right form with a number too large is "out of range", not "bad".
std::vector<int64_t> parse_dims(const std::string& shape, const OpInfo& op, const std::string& what) {
  std::vector<std::string> parts;
  for (size_t pos = 0; pos <= shape.size();) {
    const size_t x = std::min(shape.find('x', pos), shape.size());
    const std::string part = shape.substr(pos, x - pos);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos) {
      parts.clear();
      break;
    }
    parts.push_back(part);
    pos = x + 1;
  }
  if (parts.size() != op.dims.size()) throw UsageError("bad problem shape '" + shape + "' (expected " + what + ")");
  std::vector<int64_t> dims;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string digits = parts[i].substr(std::min(parts[i].find_first_not_of('0'), parts[i].size() - 1));
    // 18 digits always fit int64_t: no limit of an op is near it.
    if (digits.size() > 18 || std::stoll(digits) > op.max_dim)
      throw UsageError("problem shape '" + shape + "': " + out_of_range(op, i, digits));
    dims.push_back(std::stoll(digits));
  }
  return dims;
}

std::string shape_pattern(const OpInfo& op) {
  std::string s;
  for (size_t i = 0; i < op.dims.size(); ++i) s += (i ? "x" : "") + op.dims[i];
  return s;
}

} // namespace

std::string Problem::shape_string() const { return join_dims(dims); }

std::string Problem::key() const {
  return op + "/" + to_string(dtype) + "/" + (layout.empty() ? "" : layout + "/") + shape_string() + "/a" +
         std::to_string(align);
}

int64_t Problem::dim(const std::string& name) const {
  const auto& names = op_info(op).dims;
  for (size_t i = 0; i < names.size() && i < dims.size(); ++i)
    if (names[i] == name) return dims[i];
  throw Error("op " + op + " has no dimension '" + name + "' (" + key() + ")");
}

double Problem::scalar(const std::string& name) const {
  if (auto it = scalars.find(name); it != scalars.end()) return it->second;
  for (const auto& [n, v] : op_info(op).scalars)
    if (n == name) return v;
  throw Error("op " + op + " has no scalar '" + name + "' (" + key() + ")");
}

bool operator==(const Problem& a, const Problem& b) {
  return a.op == b.op && a.dtype == b.dtype && a.dims == b.dims && a.layout == b.layout && a.ld == b.ld &&
         a.align == b.align;
}

int Problem::alignment_of(const std::vector<int64_t>& ld, int element_bytes) {
  for (int a : {16, 8, 4}) {
    if (a <= element_bytes) break;
    bool all = true;
    // l * element_bytes divisible by a, without the product (a leading dimension read from a file
    // may be anything until validate() bounds it): both are powers of two.
    for (int64_t l : ld) all = all && l % (a / element_bytes) == 0;
    if (all) return a;
  }
  return element_bytes;
}

int Problem::alignment_with_pointers(int align, std::initializer_list<const void*> pointers, int floor) {
  for (const void* p : pointers)
    while (p && align > floor && reinterpret_cast<uintptr_t>(p) % unsigned(align) != 0) align /= 2;
  return align;
}

Problem Problem::make(const std::string& op, std::vector<int64_t> dims, const std::string& layout_given, DType dtype) {
  const OpInfo& info = op_info(op);
  const std::string layout = layout_given.empty() ? info.default_layout() : layout_given; // none named: the op's first
  if (dims.size() != info.dims.size())
    throw UsageError(op + " has " + std::to_string(info.dims.size()) + " dimensions (" + shape_pattern(info) + "), not " +
                     std::to_string(dims.size()));
  const bool known = info.layouts.empty() ? layout.empty()
                                          : std::find(info.layouts.begin(), info.layouts.end(), layout) != info.layouts.end();
  if (!known)
    throw UsageError("unknown layout '" + layout + "' for " + op +
                     (info.layouts.empty() ? " (it has none)" : " (expected " + join(info.layouts) + ")"));
  Problem p;
  p.op = op, p.dtype = dtype, p.dims = std::move(dims), p.layout = layout;
  p.ld = info.min_ld ? info.min_ld(p.dims, layout) : std::vector<int64_t>{};
  p.align = alignment_of(p.ld, element_bytes(dtype));
  return p;
}

Problem Problem::parse(const std::string& op, const std::string& shape, const std::string& layout, DType dtype) {
  const OpInfo& info = op_info(op);
  Problem p = make(
      op,
      parse_dims(shape, info,
                 shape_pattern(info) + ", e.g. " + std::string(info.dims.size() == 3 ? "4096x4096x4096" : "4096x4096")),
      layout, dtype);
  validate(p);
  return p;
}

Problem Problem::parse_key(const std::string& key) {
  std::vector<std::string> parts;
  for (size_t pos = 0;;) {
    const size_t s = key.find('/', pos);
    parts.push_back(key.substr(pos, s == std::string::npos ? std::string::npos : s - pos));
    if (s == std::string::npos) break;
    pos = s + 1;
  }
  auto bad = [&](const std::string& why) { return UsageError("bad problem key '" + key + "': " + why); };
  if (parts.size() < 4) throw bad("expected op/dtype[/layout]/shape/aN");
  const OpInfo& info = op_info(parts[0]);
  const size_t want = info.layouts.empty() ? 4 : 5;
  if (parts.size() != want) throw bad(std::to_string(want) + " parts expected for op " + info.name);
  const std::string& a = parts.back();
  if (a.size() < 2 || a.size() > 3 || a[0] != 'a' || a.find_first_not_of("0123456789", 1) != std::string::npos)
    throw bad("no alignment class");
  try {
    Problem p = make(info.name, parse_dims(parts[want - 2], info, shape_pattern(info)),
                     want == 5 ? parts[2] : std::string(), parse_dtype(parts[1]));
    p.align = std::stoi(a.substr(1));
    validate_key(p);
    return p;
  } catch (const UsageError& e) {
    throw bad(e.what());
  }
}

const OpInfo& op_info(const std::string& name) {
  for (const auto& o : ops())
    if (o.name == name) return o; // on every launch: no allocation on this path
  std::vector<std::string> names;
  for (const auto& o : ops()) names.push_back(o.name);
  // name@version: a user kernel whose spec is not loaded (or is of another version).
  const std::string hint = name.find('@') == std::string::npos ? "" : "; a user kernel's op: load its spec (--kernel SPEC)";
  throw UsageError("unknown op '" + name + "' (known: " + join(names) + ")" + hint);
}

namespace {

// The alignment classes a dtype has: 16, 8, 4 bytes, and 2 for 2-byte elements.
void check_alignment_class(const Problem& p, const std::function<void(const std::string&)>& fail) {
  const int eb = element_bytes(p.dtype);
  if (p.align != 16 && p.align != 8 && p.align != 4 && !(p.align == 2 && eb == 2))
    fail(eb == 2 ? "alignment class must be 2, 4, 8 or 16 bytes" : "alignment class must be 4, 8 or 16 bytes");
}

} // namespace

Problem serving_problem(const Problem& p) {
  const OpInfo& info = op_info(p.op);
  return info.serve_as ? info.serve_as(p) : p;
}

std::string serving_key(const Problem& p) {
  const OpInfo& info = op_info(p.op);
  return info.serve_as ? info.serve_as(p).key() : p.key();
}

int operands_alignment(const Problem& p, int align, const void* const* buffers, size_t n) {
  const OpInfo& info = op_info(p.op);
  for (size_t i = 0; i < n; ++i)
    if (i >= info.operands.size() || info.operands[i].aligns)
      align = Problem::alignment_with_pointers(align, {buffers[i]}, element_bytes(p.dtype));
  return align;
}

void validate(const Problem& p) {
  const OpInfo& info = op_info(p.op);
  auto fail = [&](const std::string& why) { throw UsageError("invalid " + p.op + " problem " + p.key() + ": " + why); };
  if (p.dims.size() != info.dims.size()) fail("expected dimensions " + shape_pattern(info));
  // The built-in ops' kernels are written for f32 and the half types (their families say which).
  if (p.dtype == DType::f64 && !info.spec) fail("f64 is a dtype of user kernels only (kernel specs); " + p.op + " takes f32, bf16 or f16");
  for (size_t i = 0; i < p.dims.size(); ++i) {
    if (p.dims[i] < 0) fail(info.dims[i] + " must be >= 0");
    if (p.dims[i] > info.max_dim) fail(out_of_range(info, i, std::to_string(p.dims[i])));
  }
  const std::vector<int64_t> min = info.min_ld ? info.min_ld(p.dims, p.layout) : std::vector<int64_t>{};
  const bool shaped = has_shaped_operands(info);
  if (p.ld.size() != min.size()) fail(std::to_string(min.size()) + (shaped ? " strides" : " leading dimensions") + " expected");
  // N-dimensional operands take any order of axes that does not overlap, not a minimum per stride.
  if (shaped) validate_strides(p, fail);
  for (size_t i = 0; i < min.size() && !shaped; ++i) {
    const std::string name = i < info.ld_names.size() ? info.ld_names[i] : "leading dimension " + std::to_string(i);
    if (p.ld[i] < std::max<int64_t>(1, min[i]) && !(min[i] == 0 && p.ld[i] == 0))
      fail(name + " is " + std::to_string(p.ld[i]) + " < minimum " + std::to_string(min[i]));
    if (p.ld[i] > info.max_ld)
      fail(name + " = " + std::to_string(p.ld[i]) + " is out of range (at most " + std::to_string(info.max_ld) +
           " for " + info.name + ")");
  }
  check_alignment_class(p, fail);
  if (p.align > Problem::alignment_of(p.ld, element_bytes(p.dtype)))
    fail("alignment class larger than the leading dimensions allow");
  for (const auto& [name, value] : p.scalars) {
    if (std::none_of(info.scalars.begin(), info.scalars.end(), [&](const auto& s) { return s.first == name; }))
      fail("unknown scalar '" + name + "'");
    if (!std::isfinite(value)) fail("scalar '" + name + "' must be finite");
  }
  if (info.validate) info.validate(p);
}

void validate_key(const Problem& p) {
  check_alignment_class(
      p, [&](const std::string& why) { throw UsageError("invalid " + p.op + " problem " + p.key() + ": " + why); });
  // The problem as its least caller makes it: each leading dimension at its minimum, rounded up
  // to what the class needs. A class no leading dimension within the op's limit allows (f32 a16
  // at K = 2^31 - 1, NN) names a problem nobody can call.
  const OpInfo& info = op_info(p.op);
  Problem q = p;
  bool padded = false;
  if (has_shaped_operands(info) && p.dims.size() == info.dims.size()) {
    q.ld = packed_strides(p, std::max(1, p.align / element_bytes(p.dtype)));
    padded = q.ld != packed_strides(p, 1);
  } else if (info.min_ld && p.dims.size() == info.dims.size()) {
    q.ld = info.min_ld(p.dims, p.layout);
    const int64_t step = std::max(1, p.align / element_bytes(p.dtype));
    for (auto& l : q.ld) {
      const int64_t up = (l + step - 1) / step * step;
      padded = padded || up != l;
      l = up;
    }
  }
  try {
    validate(q);
  } catch (const UsageError& e) {
    if (!padded) throw;
    throw UsageError(std::string(e.what()) + " (leading dimensions padded to alignment class " +
                     std::to_string(p.align) + ")");
  }
}

double flops(const Problem& p) { return op_info(p.op).flops(p); }
double min_bytes(const Problem& p) { return op_info(p.op).min_bytes(p); }
double tflops(const Problem& p, double ms) { return ms > 0 ? flops(p) / (ms * 1e-3) / 1e12 : 0; }

double log_distance(const Problem& a, const Problem& b) {
  const OpInfo* info = nullptr; // its derived_dims, where both are of one registered op
  if (a.op == b.op)
    for (const auto& o : ops())
      if (o.name == a.op) {
        info = &o;
        break;
      }
  double sum = 0;
  for (size_t i = 0; i < std::max(a.dims.size(), b.dims.size()); ++i) {
    if (info && i < info->dims.size() &&
        std::find(info->derived_dims.begin(), info->derived_dims.end(), info->dims[i]) != info->derived_dims.end())
      continue;
    const int64_t x = i < a.dims.size() ? a.dims[i] : 1, y = i < b.dims.size() ? b.dims[i] : 1;
    const double d = std::log(double(std::max<int64_t>(x, 1))) - std::log(double(std::max<int64_t>(y, 1)));
    sum += d * d;
  }
  return std::sqrt(sum);
}

} // namespace ktune
