// Reading a kernel spec: JSON -> KernelSpec, every field checked with its path in the message
// (docs/KERNEL_SPEC.md is the reference for each field). core/spec_op.cpp turns the result into
// the op and family it registers.
#include "core/kernel_spec.h"
#include "core/embedded.h"
#include "core/host_code.h"
#include "core/nvrtc_std.h"

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/json_text.h"
#include "core/text_file.h"
#include "ktune/error.h"

namespace ktune {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

// An empty kernel: compiled as the name expression ktune_constant_probe<(unsigned long long)(X)>,
// its lowered name spells X's value, which NVRTC computed (the Itanium ABI's literal L y <n> E).
const char* const kConstantProbe =
    "template <unsigned long long V> __global__ void ktune_constant_probe() {} // ktune: SpecStep::smem_constant, block_constant";

bool constant_probe_value(const std::string& lowered, unsigned long long* value) {
  static const std::string head = "_Z20ktune_constant_probeILy", tail = "EEvv";
  if (lowered.size() <= head.size() + tail.size() || lowered.compare(0, head.size(), head) != 0 ||
      lowered.compare(lowered.size() - tail.size(), tail.size(), tail) != 0)
    return false;
  const std::string digits = lowered.substr(head.size(), lowered.size() - head.size() - tail.size());
  if (digits.empty() || digits.size() > 20 || digits.find_first_not_of("0123456789") != std::string::npos) return false;
  errno = 0;
  const unsigned long long v = std::strtoull(digits.c_str(), nullptr, 10);
  if (errno == ERANGE) return false;
  *value = v;
  return true;
}

const std::vector<std::string> kSpecBuiltins = {"align", "dtype_bytes", "dtype_eps", "max_threads", "smem_per_block",
                                                "sm_count", "regs_per_block", "arch"};

size_t find_word(const std::string& text, const std::string& word, size_t from) {
  auto part = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  for (size_t at = from; !word.empty() && (at = text.find(word, at)) != std::string::npos; at += word.size())
    if ((at == 0 || !part(text[at - 1])) && (at + word.size() == text.size() || !part(text[at + word.size()]))) return at;
  return std::string::npos;
}

std::string macro_of_option(const std::string& o) {
  return o.rfind("--define-macro=", 0) == 0 ? o.substr(15) : o.rfind("-D", 0) == 0 ? o.substr(2) : "";
}

std::string trim(const std::string& text) {
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  size_t a = 0, e = text.size();
  while (a < e && space(text[a])) ++a;
  while (e > a && space(text[e - 1])) --e;
  return text.substr(a, e - a);
}

namespace {

struct TypeName {
  const char* name;
  ElemType type;
};
// Kernel Tuner users write numpy's names; ktune's own are the short ones.
constexpr TypeName kTypeNames[] = {
    {"f64", ElemType::f64},    {"float64", ElemType::f64}, {"double", ElemType::f64},  {"f32", ElemType::f32},
    {"float32", ElemType::f32}, {"float", ElemType::f32},  {"f16", ElemType::f16},     {"float16", ElemType::f16},
    {"half", ElemType::f16},   {"bf16", ElemType::bf16},   {"bfloat16", ElemType::bf16}, {"i64", ElemType::i64},
    {"int64", ElemType::i64},  {"i32", ElemType::i32},     {"int32", ElemType::i32},   {"int", ElemType::i32},
    {"i16", ElemType::i16},    {"int16", ElemType::i16},   {"i8", ElemType::i8},       {"int8", ElemType::i8},
    {"u64", ElemType::u64},    {"uint64", ElemType::u64},  {"u32", ElemType::u32},     {"uint32", ElemType::u32},
    {"u16", ElemType::u16},    {"uint16", ElemType::u16},  {"u8", ElemType::u8},       {"uint8", ElemType::u8},
    {"bool", ElemType::u8}}; // C++'s bool: one byte, 0 or 1

bool identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// One spec being read: its origin for messages, and the field-path helpers.
class Reader {
 public:
  Reader(std::string origin, std::string dir) : origin_(std::move(origin)), dir_(std::move(dir)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw UsageError(origin_ + ": " + path + ": " + what);
  }
  std::string where(const std::string& path) const { return origin_ + ": " + path; }
  const std::string& dir() const { return dir_; }

  void known_fields(const ojson& obj, const std::string& path, std::initializer_list<const char*> known) const {
    if (!obj.is_object()) fail(path, "expected an object, got " + std::string(obj.type_name()));
    if (known.size() == 0) return; // any names: the caller checks them
    for (const auto& [k, v] : obj.items()) {
      if (std::any_of(known.begin(), known.end(), [&](const char* n) { return k == n; })) continue;
      std::string list;
      for (const char* n : known) list += (list.empty() ? "" : ", ") + std::string(n);
      fail(path.empty() ? k : path + "." + k, "unknown field (known: " + list + ")");
    }
  }
  std::string str(const ojson& v, const std::string& path) const {
    if (!v.is_string()) fail(path, "expected a string, got " + std::string(v.type_name()));
    return v.get<std::string>();
  }
  std::string ident(const ojson& v, const std::string& path) const {
    const std::string s = str(v, path);
    if (!identifier(s)) fail(path, "'" + s + "' is not a C identifier");
    return s;
  }
  double number(const ojson& v, const std::string& path) const {
    if (!v.is_number()) fail(path, "expected a number, got " + std::string(v.type_name()));
    return v.get<double>();
  }
  // A number, or a string holding an expression: the text to parse.
  std::string expr_text(const ojson& v, const std::string& path) const {
    if (v.is_number_integer()) return std::to_string(v.get<long long>());
    if (v.is_number()) return v.dump();
    if (v.is_boolean()) return v.get<bool>() ? "1" : "0";
    if (!v.is_string()) fail(path, "expected an expression (a string) or a number, got " + std::string(v.type_name()));
    return v.get<std::string>();
  }
  Expr expr(const ojson& v, const std::string& path, const std::vector<std::string>& names) const {
    return Expr(expand(expr_text(v, path)), names, where(path));
  }
  // A name of the spec's `defines` in later expressions (a launch's block of a define's threads)
  // stands for its expression, in parentheses: whatever it reads, the expression reads.
  void add_macro(const std::string& name, const std::string& text) { macros_.emplace_back(name, "(" + text + ")"); }
  std::string expand(std::string text) const {
    for (const auto& [name, value] : macros_)
      for (size_t at = 0; (at = find_word(text, name, at)) != std::string::npos; at += value.size())
        text.replace(at, name.size(), value);
    return text;
  }
  ElemType elem(const ojson& v, const std::string& path, bool allow_problem, bool* problem) const {
    const std::string s = str(v, path);
    if (allow_problem && s == "dtype") return *problem = true, ElemType::f32;
    ElemType t;
    if (!parse_elem_type(s, &t)) {
      std::string list = allow_problem ? "dtype (the problem's)" : "";
      for (const auto& n : kTypeNames) list += (list.empty() ? "" : ", ") + std::string(n.name);
      fail(path, "unknown dtype '" + s + "' (known: " + list + ")");
    }
    return t;
  }
  // The place of the argument called `name` among the spec's args.
  int arg_index(const KernelSpec& s, const std::string& name, const std::string& path) const {
    const auto it = std::find_if(s.args.begin(), s.args.end(), [&](const SpecArg& x) { return x.name == name; });
    if (it == s.args.end()) {
      std::string known;
      for (const SpecArg& x : s.args) known += (known.empty() ? "" : ", ") + x.name;
      fail(path, "'" + name + "' is not one of the spec's args (" + known + ")");
    }
    return int(it - s.args.begin());
  }
  std::string file(const std::string& rel, const std::string& path, const char* what) const {
    fs::path p(rel);
    if (p.is_relative()) p = fs::path(dir_) / p;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) fail(path, std::string(what) + " '" + p.string() + "' does not exist or is not a file");
    return p.lexically_normal().string();
  }

 private:
  std::string origin_, dir_;
  std::vector<std::pair<std::string, std::string>> macros_; // defines' names and their expanded text
};

// A .npy file's payload (format 1.0-3.0, little-endian, C order) and its element type.
using Fail = std::function<void(const std::string&)>; // reports a problem with a file, and throws

// Where the header of a .npy file starts and ends, from its first 12 bytes (or fewer, of a
// short file): version 1 says its length in 2 bytes, later ones in 4.
void npy_header_span(const Fail& fail, const std::string& head, size_t* at, size_t* end) {
  if (head.size() < 10 || head.compare(0, 6, "\x93NUMPY") != 0) fail("not a .npy file");
  const bool v1 = static_cast<unsigned char>(head[6]) == 1;
  *at = v1 ? 10 : 12;
  if (head.size() < *at) fail("truncated header");
  size_t hlen = 0;
  for (size_t i = 0; i < *at - 8; ++i) hlen |= size_t(static_cast<unsigned char>(head[8 + i])) << (8 * i);
  *end = *at + hlen;
}

// The header of a .npy file whose first bytes are `head` (at least its header, or all of a short
// file): its element type, and where its payload starts.
void npy_header(const Fail& fail, const std::string& head, ElemType* type, size_t* payload_at) {
  size_t at = 0, end = 0;
  npy_header_span(fail, head, &at, &end);
  if (end > head.size()) fail("truncated header");
  const std::string header = head.substr(at, end - at);
  if (header.find("'fortran_order': True") != std::string::npos) fail("Fortran order is not read; save it C-contiguous");
  const size_t d = header.find("'descr':");
  const size_t q1 = d == std::string::npos ? d : header.find('\'', d + 8);
  const size_t q2 = q1 == std::string::npos ? q1 : header.find('\'', q1 + 1);
  if (q2 == std::string::npos) fail("no 'descr' in the header");
  const std::string descr = header.substr(q1 + 1, q2 - q1 - 1);
  static const std::pair<const char*, ElemType> kDescr[] = {
      {"<f8", ElemType::f64}, {"<f4", ElemType::f32}, {"<f2", ElemType::f16}, {"<i8", ElemType::i64},
      {"<i4", ElemType::i32}, {"<i2", ElemType::i16}, {"|i1", ElemType::i8},  {"<u8", ElemType::u64},
      {"<u4", ElemType::u32}, {"<u2", ElemType::u16}, {"|u1", ElemType::u8}};
  bool found = false;
  for (const auto& [name, t] : kDescr)
    if (descr == name) *type = t, found = true;
  if (!found) fail("element type '" + descr + "' is not one ktune reads");
  *payload_at = end;
}

void read_npy(const Fail& fail, const std::string& file, SpecFill& f) {
  const std::string bytes = read_text_file(file, "fill file");
  size_t at = 0;
  npy_header(fail, bytes, &f.file_type, &at);
  f.data.assign(bytes.begin() + std::ptrdiff_t(at), bytes.end());
}

// f's elements from `file` (a .npy file, else raw elements of f.file_type).
void read_fill_file(const Fail& fail, const std::string& file, SpecFill& f) {
  if (!f.raw) {
    read_npy(fail, file, f);
  } else {
    const std::string bytes = read_text_file(file, "fill file");
    f.data.assign(bytes.begin(), bytes.end());
  }
  if (f.data.size() % size_t(elem_bytes(f.file_type)) != 0) fail("holds a partial element");
}

// A file fill: {"file": path} (a .npy, or raw with "raw_dtype"); a path with {dim} / {dtype}
// placeholders names one file per problem, read at each problem (fill_at).
void read_file_fill(const Reader& r, const ojson& v, const std::string& path, const std::vector<std::string>& dims, SpecFill& f) {
  f.kind = SpecFill::from_file;
  const std::string given = r.str(v["file"], path + ".file");
  f.raw = !(given.size() > 4 && given.substr(given.size() - 4) == ".npy");
  if (f.raw) {
    if (!v.contains("raw_dtype")) r.fail(path, "a raw file needs \"raw_dtype\" (a .npy file says its own)");
    bool unused = false;
    f.file_type = r.elem(v["raw_dtype"], path + ".raw_dtype", false, &unused);
  }
  if (given.find('{') != std::string::npos) {
    for (size_t at = given.find('{'); at != std::string::npos; at = given.find('{', at + 1)) {
      const size_t end = given.find('}', at);
      const std::string name = end == std::string::npos ? "" : given.substr(at + 1, end - at - 1);
      if (name != "dtype" && std::find(dims.begin(), dims.end(), name) == dims.end())
        r.fail(path + ".file", "'" + given + "': {" + name + "} is not a dimension or {dtype}");
    }
    fs::path pat(given);
    f.file = given;
    f.pattern = (pat.is_relative() ? fs::path(r.dir()) / pat : pat).lexically_normal().string();
    return;
  }
  f.file = r.file(given, path + ".file", "fill file");
  read_fill_file([&](const std::string& m) { r.fail(path + ".file", "'" + f.file + "': " + m); }, f.file, f);
}

// A whole number >= 1 a double holds exactly (a ramp's period, a permutation's range).
int64_t read_whole(const Reader& r, const ojson& v, const std::string& path) {
  const double x = r.number(v, path);
  if (!(x >= 1) || x != std::floor(x) || x > 9.0e15) r.fail(path, "must be a whole number >= 1");
  return int64_t(x);
}

SpecFill read_fill(const Reader& r, const ojson& v, const std::string& path, bool output, const std::vector<std::string>& dims) {
  SpecFill f;
  if (v.is_null()) {
    f.kind = output ? SpecFill::constant : SpecFill::random;
    return f;
  }
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "random") f.kind = SpecFill::random;
    else if (s == "zeros") f.kind = SpecFill::zeros;
    else if (s == "ones") f.kind = SpecFill::ones;
    else if (s == "ramp") f.kind = SpecFill::ramp;
    else if (s == "permutation") f.kind = SpecFill::permutation;
    else r.fail(path, "unknown fill '" + s + "' (known: random, zeros, ones, ramp, permutation, {\"random\": [lo, hi]}, "
                      "{\"value\": v}, {\"ramp\": {...}}, {\"permutation\": n}, {\"file\": path})");
    return f;
  }
  r.known_fields(v, path, {"random", "integers", "value", "file", "raw_dtype", "ramp", "permutation"});
  const bool pair = v.size() == 2 && ((v.contains("file") && v.contains("raw_dtype")) || (v.contains("random") && v.contains("integers")));
  if (v.size() != 1 && !pair) r.fail(path, "one of random, value, ramp, permutation, file");
  if (v.contains("ramp")) { // {"ramp": {"start": s, "step": d, "mod": m}}: s + d * (i % m)
    f.kind = SpecFill::ramp;
    const ojson& o = v["ramp"];
    if (!o.is_object()) r.fail(path + ".ramp", "expected {\"start\": s, \"step\": d, \"mod\": m} (each optional)");
    r.known_fields(o, path + ".ramp", {"start", "step", "mod"});
    // start and step: numbers, or expressions of the dimensions (fhd's i / voxels), at fill_at.
    for (const char* k : {"start", "step"}) {
      if (!o.contains(k)) continue;
      const std::string at = path + ".ramp." + k;
      if (o[k].is_string()) (std::string(k) == "start" ? f.start_at : f.step_at) = r.expr(o[k], at, dims);
      else (std::string(k) == "start" ? f.start : f.step) = r.number(o[k], at);
    }
    if (o.contains("mod")) f.mod = read_whole(r, o["mod"], path + ".ramp.mod");
    return f;
  }
  if (v.contains("permutation")) { // distinct values in [0, n): the first elements of a random permutation
    f.kind = SpecFill::permutation;
    if (v["permutation"].is_string()) f.perm_at = r.expr(v["permutation"], path + ".permutation", dims);
    else f.perm_n = read_whole(r, v["permutation"], path + ".permutation");
    return f;
  }
  if (v.contains("integers")) {
    if (!v["integers"].is_boolean()) r.fail(path + ".integers", "expected true or false");
    f.integers = v["integers"].get<bool>();
  }
  if (v.contains("random")) {
    const ojson& a = v["random"];
    if (!a.is_array() || a.size() != 2) r.fail(path + ".random", "expected [lo, hi]");
    for (int k = 0; k < 2; ++k) {
      const std::string at = path + ".random[" + std::to_string(k) + "]";
      if (a[k].is_string()) (k ? f.hi_at : f.lo_at) = r.expr(a[k], at, dims); // an expression of the dimensions
      else (k ? f.hi : f.lo) = r.number(a[k], at);
    }
    if (f.lo_at.empty() != f.hi_at.empty()) { // one of them an expression: both, for fill_at
      char exact[40];
      std::snprintf(exact, sizeof exact, "%.17g", f.lo_at.empty() ? f.lo : f.hi);
      if (f.lo_at.empty()) f.lo_at = Expr(exact, dims, r.where(path + ".random[0]"));
      else f.hi_at = Expr(exact, dims, r.where(path + ".random[1]"));
    }
    if (f.lo_at.empty() && !(f.lo < f.hi)) r.fail(path + ".random", "lo must be below hi");
  } else if (v.contains("value")) {
    f.kind = SpecFill::constant;
    if (v["value"].is_string()) f.value_at = r.expr(v["value"], path + ".value", dims); // an expression of the dimensions
    else f.value = r.number(v["value"], path + ".value");
  } else if (v.contains("file")) {
    read_file_fill(r, v, path, dims, f);
  } else {
    r.fail(path, "raw_dtype without file");
  }
  return f;
}

// atol / rtol: a number >= 0, or an expression of the problem: its dimensions, align and
// dtype_bytes (one spec of f32 and f64 problems: each its own bound), checked at each problem.
void read_tolerance(const Reader& r, const KernelSpec& s, const ojson& v, const std::string& path, double& x, Expr& e) {
  if (v.is_string()) {
    e = r.expr(v, path, s.names);
    for (size_t n : e.reads())
      if (n < s.params.size() || n >= s.first_device_name())
        r.fail(path, "'" + e.text() + "' reads " + s.names[n] + ": a tolerance follows the problem only (its dimensions, align, dtype_bytes)");
    return;
  }
  x = r.number(v, path);
  if (!(x >= 0)) r.fail(path, "must be >= 0");
}

std::vector<int> read_values(const Reader& r, const ojson& v, const std::string& path) {
  if (!v.is_array() || v.empty()) r.fail(path, "expected a non-empty array of integers");
  std::vector<int> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    if (v[i].is_boolean()) out.push_back(v[i].get<bool>() ? 1 : 0);
    else if (v[i].is_number_integer() && v[i].get<long long>() >= INT32_MIN && v[i].get<long long>() <= INT32_MAX)
      out.push_back(int(v[i].get<long long>()));
    else if (v[i].is_number_float() && v[i].get<double>() == double(int(v[i].get<double>())))
      out.push_back(int(v[i].get<double>()));
    else r.fail(at, "expected an integer (or true / false) in 32 bits, got " + v[i].dump());
    if (std::count(out.begin(), out.end(), out.back()) > 1) r.fail(at, "value " + std::to_string(out.back()) + " repeated");
  }
  return out;
}

// Names a launch expression may read: the parameters, the dimensions, align and dtype_bytes (a
// launch plan does not see the device: a grid that follows the SM count is a persistent step).
// A loop's counter has a value only while a step of the loop is launched.
void refuse_loop_reads(const Reader& r, const KernelSpec& s, const Expr& e, const std::string& path) {
  for (size_t i : e.reads())
    if (i >= s.first_loop_name())
      r.fail(path, "'" + e.text() + "' reads " + s.names[i] +
                       ", a loop's counter: only a step in that loop and the scalars it passes read it");
}

// Every "index" a launch (of the kernel, the reference or the baseline) names: the loops'
// counters, after the builtins in names.
void read_loop_names(const Reader& r, const ojson& j, KernelSpec& s) {
  std::function<void(const ojson&, const std::string&)> scan = [&](const ojson& v, const std::string& path) {
    if (v.is_array()) {
      for (size_t i = 0; i < v.size(); ++i) scan(v[i], path + "[" + std::to_string(i) + "]");
      return;
    }
    if (!v.is_object()) return;
    if (v.contains("index")) {
      const std::string name = r.ident(v["index"], path + ".index");
      const auto last = s.names.begin() + std::ptrdiff_t(s.first_loop_name());
      if (std::find(s.names.begin(), last, name) != last)
        r.fail(path + ".index", "'" + name + "' is a parameter, a dimension or a name ktune gives every expression");
      if (std::find(s.loop_names.begin(), s.loop_names.end(), name) == s.loop_names.end()) {
        s.loop_names.push_back(name);
        s.names.push_back(name);
      }
    }
    if (v.contains("steps")) scan(v["steps"], path + ".steps");
  };
  if (j.contains("launch")) scan(j["launch"], "launch");
  // The other runs of kernels, each where the spec puts it: field `name` of `parent`.
  auto side = [&](const ojson& parent, const char* name, const std::string& path) {
    if (parent.is_object() && parent.contains(name) && parent[name].is_object() && parent[name].contains("launch"))
      scan(parent[name]["launch"], path + ".launch");
  };
  if (j.contains("check")) side(j["check"], "reference", "check.reference"), side(j["check"], "post", "check.post");
  side(j, "baseline", "baseline");
  side(j, "setup", "setup");
}

// "[e]", built by appends: GCC 12 misreads "[" + string as an overlapping copy (-Wrestrict).
std::string index_text(size_t e) {
  std::string t(1, '[');
  t += std::to_string(e);
  t += ']';
  return t;
}

// A scalar that reads a loop's counter has that value only in the loop: every step that passes it
// is in each loop it reads the counter of.
void check_loop_scalars(const Reader& r, const KernelSpec& s) {
  for (const auto* steps : {&s.steps, &s.reference_steps, &s.baseline_steps, &s.setup_steps, &s.post_steps})
    for (const SpecStep& st : *steps)
      for (int i : s.step_args(st.args)) {
        const SpecArg& a = s.args[size_t(i)];
        if (!a.follows_loop) continue;
        std::vector<std::pair<const Expr*, std::string>> exprs{{&a.value, "args[" + std::to_string(i) + "].value"}};
        for (size_t f = 0; f < a.fields.size(); ++f) { // a struct's
          const std::string fk = "args[" + std::to_string(i) + "].fields[" + std::to_string(f) + "]";
          exprs.emplace_back(&a.fields[f].at, fk + ".offset");
          for (size_t e = 0; e < a.fields[f].values.size(); ++e)
            exprs.emplace_back(&a.fields[f].values[e], fk + ".value" + (a.fields[f].values.size() > 1 ? index_text(e) : std::string()));
        }
        for (const auto& [x, field] : exprs)
          for (size_t n : x->reads())
            if (n >= s.first_loop_name() && n < s.names.size() &&
                std::find(st.loop_counters.begin(), st.loop_counters.end(), int(n)) == st.loop_counters.end())
              r.fail(field, "'" + x->text() + "' reads " + s.names[n] + ", but the step of kernel " + st.kernel +
                                " passes it outside that loop" + (st.args.empty() ? " (it names no args, so it passes them all)" : ""));
      }
}

// A launch expression reads parameters, dimensions, align and dtype_bytes, and the counters of
// the loops it is in (`counters`, places in names); not the device.
void check_launch_reads(const Reader& r, const KernelSpec& s, const Expr& e, const std::string& path,
                        const std::vector<int>& counters, bool values = false) {
  const size_t device_from = s.first_device_name(), loops_from = s.first_loop_name();
  for (size_t i : e.reads()) {
    if (i >= s.names.size()) { // a buffer's first element (KernelSpec::value_names)
      if (!values)
        r.fail(path, "'" + e.text() + "' reads buffer " + s.value_names.at(i) +
                         ": only a grid, a when and a computed scalar's value read a buffer's first element, at the launch");
    } else if (i >= loops_from) {
      if (std::find(counters.begin(), counters.end(), int(i)) == counters.end())
        r.fail(path, "'" + e.text() + "' reads " + s.names[i] + ", the counter of a loop it is not in");
    } else if (i >= device_from && !values) {
      r.fail(path, "'" + e.text() + "' reads " + s.names[i] +
                       ", a device value: only a grid, a when and a computed scalar's value read the device, at the "
                       "launch (a block, shared memory, an offset and a loop's rounds follow the config and the problem)");
    }
  }
}

// {"constant": "..."} at `at`: a C++ constant expression of the source (a step's shared memory or
// block, SpecStep::smem_constant and block_constant), its text. expected: what else the field may
// be, for a message; example: constants of that kind.
std::string read_source_constant(const Reader& r, const ojson& c, const std::string& at, const std::string& expected,
                                 const std::string& example) {
  r.known_fields(c, at, {"constant"});
  if (!c.contains("constant")) r.fail(at, "expected " + expected + " or {\"constant\": a C++ constant of the source}");
  std::string text = r.str(c["constant"], at + ".constant");
  if (text.find_first_not_of(" \t") == std::string::npos) r.fail(at + ".constant", "empty: a C++ constant expression (" + example + ")");
  return text;
}

// One launch step's own fields (at: its path); `counters`: the loops it is in.
SpecStep read_step(const Reader& r, const KernelSpec& s, const ojson& o, const std::string& at, const std::string& kernel,
                   const std::vector<int>& counters) {
  SpecStep st;
  if (o.contains("kernel")) st.kernel = r.str(o["kernel"], at + ".kernel");
  else if (!kernel.empty()) st.kernel = kernel;
  else r.fail(at + ".kernel", "missing: name the kernel here or in the spec's \"kernel\"");
  if (st.kernel.find_first_not_of(" \t") == std::string::npos) r.fail(at + ".kernel", "empty kernel name");
  for (const char* field : {"grid", "block", "cluster"}) {
    const std::string fp = at + "." + field;
    const bool cluster = std::string(field) == "cluster";
    if (!o.contains(field)) {
      if (cluster) continue; // optional: none
      r.fail(fp, "missing");
    }
    const ojson& g = o[field];
    const bool grid = std::string(field) == "grid";
    Expr* dst = cluster ? st.cluster : grid ? st.grid : st.block;
    if (!cluster && !grid && g.is_object()) { // a C++ constant of the source: x threads, y = z = 1
      st.block_constant = read_source_constant(r, g, fp, "1 to 3 expressions (x, y, z)", "Ktraits::kNThreads");
      for (size_t d = 0; d < 3; ++d) dst[d] = Expr("1", s.names, r.where(fp));
      continue;
    }
    if (!g.is_array() || g.empty() || g.size() > 3) r.fail(fp, "expected 1 to 3 expressions (x, y, z)");
    for (size_t d = 0; d < 3; ++d) {
      const std::string dp = fp + "[" + std::to_string(d) + "]";
      // A grid may read a buffer's first element, read back at the launch (value_names).
      dst[d] = d < g.size() ? r.expr(g[d], dp, s.value_names) : Expr("1", s.names, r.where(dp));
      check_launch_reads(r, s, dst[d], dp, counters, grid);
      if (dst[d].constant() && dst[d].eval({}) < 1) r.fail(dp, "'" + dst[d].text() + "' is below 1");
    }
  }
  if (o.contains("when")) { // the step launches only where it holds: the problem's, or (a value) each launch's
    st.when = r.expr(o["when"], at + ".when", s.value_names);
    check_launch_reads(r, s, st.when, at + ".when", counters, true);
  }
  if (o.contains("shared_memory") && o["shared_memory"].is_object()) { // a C++ constant of the source
    st.smem_constant = read_source_constant(r, o["shared_memory"], at + ".shared_memory", "an expression of the problem",
                                            "Ktraits::kSmemSize, sizeof(typename BlockScan::TempStorage)");
  }
  st.smem = o.contains("shared_memory") && st.smem_constant.empty() ? r.expr(o["shared_memory"], at + ".shared_memory", s.value_names)
                                                                    : Expr("0", s.names, r.where(at + ".shared_memory"));
  check_launch_reads(r, s, st.smem, at + ".shared_memory", counters);
  if (o.contains("persistent")) {
    if (!o["persistent"].is_boolean()) r.fail(at + ".persistent", "expected true or false");
    st.persistent = o["persistent"].get<bool>();
  }
  if (o.contains("cooperative")) {
    if (!o["cooperative"].is_boolean()) r.fail(at + ".cooperative", "expected true or false");
    st.cooperative = o["cooperative"].get<bool>();
    if (st.cooperative && !st.cluster[0].empty()) r.fail(at + ".cooperative", "a cooperative launch takes no cluster shape");
  }
  if (o.contains("programmatic")) { // a programmatic dependent launch (PDL) of the stream's kernel before it
    if (o["programmatic"].is_string()) { // where an expression of the config and problem holds (a tuned choice)
      st.programmatic_when = r.expr(o["programmatic"], at + ".programmatic", s.names);
      check_launch_reads(r, s, st.programmatic_when, at + ".programmatic", counters);
      st.programmatic = true;
    } else if (!o["programmatic"].is_boolean()) {
      r.fail(at + ".programmatic", "expected true, false or an expression of the config and problem (\"PDL == 1\")");
    } else {
      st.programmatic = o["programmatic"].get<bool>();
    }
    if (st.programmatic && (st.cooperative || !st.cluster[0].empty()))
      r.fail(at + ".programmatic", std::string("a programmatic dependent launch takes no ") +
                                       (st.cooperative ? "cooperative launch" : "cluster shape") + " here (one launch attribute of the two)");
  }
  if (!st.cluster[0].empty() && (s.reads_values(st.grid[0]) || s.reads_values(st.grid[1]) || s.reads_values(st.grid[2])))
    r.fail(at + ".cluster", "a cluster shape must tile its grid, and this grid reads a value known at the launch only (a "
                            "buffer's, the device's): give the cluster in the kernel (__cluster_dims__) or size the grid by "
                            "the problem");
  if (o.contains("args")) { // the spec's arguments by name, read before the steps
    const ojson& a = o["args"];
    if (!a.is_array() || a.empty()) r.fail(at + ".args", "expected the names of the arguments this kernel takes, in its order");
    for (size_t k = 0; k < a.size(); ++k) {
      const std::string ak = at + ".args[" + std::to_string(k) + "]";
      if (a[k].is_object()) { // {"arg": "rmu", "offset": "i * CHUNK"}: the buffer from that element on
        r.known_fields(a[k], ak, {"arg", "offset"});
        if (!a[k].contains("arg") || !a[k].contains("offset")) r.fail(ak, "expected {\"arg\": name, \"offset\": elements}");
        const int i = r.arg_index(s, r.str(a[k]["arg"], ak + ".arg"), ak + ".arg");
        if (!s.args[size_t(i)].buffer) r.fail(ak + ".arg", "'" + s.args[size_t(i)].name + "' is a " +
                                                   std::string(s.args[size_t(i)].kind_name()) + ": only a buffer is passed at an offset");
        st.arg_offsets.resize(a.size());
        st.arg_offsets[k] = r.expr(a[k]["offset"], ak + ".offset", s.value_names);
        check_launch_reads(r, s, st.arg_offsets[k], ak + ".offset", counters);
        st.args.push_back(i);
        continue;
      }
      if (!a[k].is_string())
        r.fail(ak, "expected the name of one of the spec's args, or {\"arg\": name, \"offset\": elements} (a value the "
                   "kernel takes is a scalar argument with its \"value\", which may read a loop's counter)");
      st.args.push_back(r.arg_index(s, r.str(a[k], ak), ak));
    }
  }
  st.loop_counters = counters;
  return st;
}

// A loop's "while" (the condition after every round, over the names and the first element of
// every buffer argument) and "reset" (temporaries set to their fill before every round), read into
// n and whiles; `counters`: the loops the condition may read the counters of, its own included.
void read_while(const Reader& r, const KernelSpec& s, const ojson& o, const std::string& at, const std::vector<int>& counters,
                SpecNode& n, std::vector<SpecWhile>* whiles) {
  SpecWhile w;
  w.where = r.where(at + ".while");
  w.text = r.expr_text(o["while"], at + ".while");
  std::vector<std::string> names = s.names;
  for (size_t k = 0; k < s.args.size(); ++k)
    if (s.args[k].buffer && std::find(names.begin(), names.end(), s.args[k].name) == names.end()) {
      names.push_back(s.args[k].name);
      w.slots.push_back(int(k));
      w.reads.push_back(SpecWhile::first);
    }
  // max_of(b), min_of(b), sum_of(b) over a buffer argument b: each a name of its own (a slot that
  // reads the whole buffer back), in the text muparser reads.
  std::string text = w.text;
  for (const auto& [fn, read] : {std::pair{"max_of", SpecWhile::max}, {"min_of", SpecWhile::min}, {"sum_of", SpecWhile::sum}})
    for (size_t from = 0, at_fn; (at_fn = find_word(text, fn, from)) != std::string::npos;) {
      size_t i = at_fn + std::strlen(fn);
      while (i < text.size() && text[i] == ' ') ++i;
      const size_t open = i;
      const size_t close = open < text.size() && text[open] == '(' ? text.find(')', open) : std::string::npos;
      if (close == std::string::npos) r.fail(at + ".while", "'" + w.text + "': " + fn + " takes a buffer argument's name in parentheses");
      std::string arg = text.substr(open + 1, close - open - 1);
      arg.erase(0, arg.find_first_not_of(' '));
      arg.erase(arg.find_last_not_of(' ') + 1);
      const int k = r.arg_index(s, arg, at + ".while");
      if (!s.args[size_t(k)].buffer) r.fail(at + ".while", "'" + w.text + "': " + fn + " reads a buffer; '" + arg + "' is a " +
                                     std::string(s.args[size_t(k)].kind_name()));
      const std::string name = std::string("ktune_") + fn + "_" + arg;
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        names.push_back(name);
        w.slots.push_back(k);
        w.reads.push_back(read);
      }
      text.replace(at_fn, close + 1 - at_fn, name);
      from = at_fn + name.size();
    }
  for (const SpecArg& a : s.args)
    if (!a.buffer && std::find(names.begin(), names.end(), a.name) == names.end() && find_word(text, a.name) != std::string::npos)
      r.fail(at + ".while", "'" + w.text + "' reads '" + a.name + "', a " + std::string(a.kind_name()) +
                                " argument: a condition reads buffers (their first "
                            "element, or max_of / min_of / sum_of of all), dimensions, parameters and counters");
  w.cond = Expr(r.expand(text), names, w.where);
  bool reads_buffer = false;
  for (size_t i : w.cond.reads()) {
    if (i >= s.names.size()) {
      reads_buffer = true;
    } else if (i >= s.first_loop_name()) {
      if (std::find(counters.begin(), counters.end(), int(i)) == counters.end())
        r.fail(at + ".while", "'" + w.text + "' reads " + s.names[i] + ", the counter of a loop it is not in");
    } else if (i >= s.first_device_name()) {
      r.fail(at + ".while", "'" + w.text + "' reads " + s.names[i] +
                                ", a device value: a condition reads buffers, parameters, dimensions and counters");
    }
  }
  if (!reads_buffer)
    r.fail(at + ".while", "'" + w.text +
                              "' reads no buffer argument (its first element, after every round): a loop of rounds known "
                              "beforehand is a \"repeat\" alone");
  if (o.contains("reset")) {
    const ojson& l = o["reset"];
    if (!l.is_array() || l.empty()) r.fail(at + ".reset", "expected the names of temporaries to set before every round");
    for (size_t k = 0; k < l.size(); ++k) {
      const std::string rk = at + ".reset[" + std::to_string(k) + "]";
      const int i = r.arg_index(s, r.str(l[k], rk), rk);
      const SpecArg& a = s.args[size_t(i)];
      if (!a.buffer || a.intent != SpecArg::temp || !a.set_before_launch)
        r.fail(rk, "'" + a.name + "' is not a temporary with a fill (\"zeros\" or {\"value\": v}): only those are set "
                   "before every round");
      if (std::find(n.resets.begin(), n.resets.end(), i) != n.resets.end()) r.fail(rk, "'" + a.name + "' twice");
      n.resets.push_back(i);
    }
  }
  n.until = int(whiles->size());
  whiles->push_back(std::move(w));
}

// A launch (one entry or a list): its steps, each kernel launch site once in the order written,
// and the order they run in with their loops (docs/KERNEL_SPEC.md, "Loops"). An entry is a step, a
// step with "repeat" (a loop of itself), or a loop {"repeat", "index", "swap", "steps"}.
std::vector<SpecStep> read_steps(const Reader& r, const KernelSpec& s, const ojson& v, const std::string& path,
                                 const std::string& kernel, std::vector<SpecNode>* order, std::vector<SpecWhile>* whiles) {
  std::vector<SpecStep> steps;
  bool loops = false;
  // A step entry: read, kept with the loops it is in, and its node in the order.
  auto leaf = [&](const ojson& o, const std::string& at, const std::vector<int>& counters, const std::vector<Expr>& within,
                  const std::vector<int>& within_counters) {
    SpecNode n;
    n.step = int(steps.size());
    SpecStep st = read_step(r, s, o, at, kernel, counters);
    st.within = within;
    st.within_counters = within_counters;
    steps.push_back(std::move(st));
    return n;
  };
  // within: the rounds of the loops the entries are in, outermost first; within_counters beside it.
  std::function<std::vector<SpecNode>(const ojson&, const std::string&, const std::vector<int>&, const std::vector<Expr>&,
                                       const std::vector<int>&)>
      read;
  read = [&](const ojson& list, const std::string& lp, const std::vector<int>& counters, const std::vector<Expr>& within,
             const std::vector<int>& within_counters) {
    std::vector<ojson> entries;
    if (list.is_array()) {
      if (list.empty()) r.fail(lp, "expected at least one step");
      for (const auto& e : list) entries.push_back(e);
    } else {
      entries.push_back(list);
    }
    std::vector<SpecNode> nodes;
    for (size_t i = 0; i < entries.size(); ++i) {
      const std::string at = list.is_array() ? lp + "[" + std::to_string(i) + "]" : lp;
      const ojson& o = entries[i];
      if (!o.is_object()) r.fail(at, "expected a step (kernel, grid, block, ...) or a loop (repeat, steps)");
      const bool group = o.contains("steps");
      if (group) r.known_fields(o, at, {"repeat", "index", "swap", "while", "reset", "steps"});
      else
        r.known_fields(o, at, {"kernel", "grid", "block", "cluster", "shared_memory", "persistent", "cooperative", "programmatic",
                               "args", "when", "repeat", "index", "swap", "while", "reset"});
      if (!o.contains("repeat")) {
        for (const char* f : {"index", "swap", "while", "reset"})
          if (o.contains(f)) r.fail(at + "." + f, "only a loop has one: give its rounds (\"repeat\")");
        if (group) r.fail(at + ".repeat", "missing: a loop's rounds (an expression; 0 runs its steps not at all)");
        nodes.push_back(leaf(o, at, counters, within, within_counters));
        continue;
      }
      loops = true;
      SpecNode n;
      n.repeat = r.expr(o["repeat"], at + ".repeat", s.names);
      check_launch_reads(r, s, n.repeat, at + ".repeat", counters);
      std::vector<int> inner = counters;
      if (o.contains("index")) {
        const std::string name = r.ident(o["index"], at + ".index");
        const auto it = std::find(s.names.begin() + std::ptrdiff_t(s.first_loop_name()), s.names.end(), name);
        if (it == s.names.end()) r.fail(at + ".index", "'" + name + "' is a parameter, a dimension or a builtin");
        n.index = int(it - s.names.begin());
        if (std::find(counters.begin(), counters.end(), n.index) != counters.end())
          r.fail(at + ".index", "'" + name + "' counts a loop this one is in already");
        inner.push_back(n.index);
      }
      if (o.contains("swap")) {
        const ojson& sw = o["swap"];
        if (!sw.is_array() || sw.empty()) r.fail(at + ".swap", "expected pairs of buffer arguments: [[\"a\", \"b\"], ...]");
        for (size_t k = 0; k < sw.size(); ++k) {
          const std::string sk = at + ".swap[" + std::to_string(k) + "]";
          if (!sw[k].is_array() || sw[k].size() != 2) r.fail(sk, "expected a pair of buffer arguments [\"a\", \"b\"]");
          const int x = r.arg_index(s, r.str(sw[k][0], sk + "[0]"), sk + "[0]");
          const int y = r.arg_index(s, r.str(sw[k][1], sk + "[1]"), sk + "[1]");
          const SpecArg &a = s.args[size_t(x)], &b = s.args[size_t(y)];
          if (x == y) r.fail(sk, "'" + a.name + "' twice");
          for (const SpecArg* e : {&a, &b}) {
            if (!e->buffer) r.fail(sk, "'" + e->name + "' is a " + std::string(e->kind_name()) + ": only buffers are swapped");
            if (e->intent == SpecArg::in)
              r.fail(sk, "'" + e->name + "' is an input the check keeps unchanged, but a swapped buffer is written by the "
                         "loop: make it inout, out or temp");
          }
          if (a.problem_dtype != b.problem_dtype || (!a.problem_dtype && a.type != b.type))
            r.fail(sk, "'" + a.name + "' and '" + b.name + "' hold different element types");
          for (const auto& [p, q] : n.swaps)
            if (p == x || q == x || p == y || q == y) r.fail(sk, "an argument in two pairs");
          // The one whose data ends in its own buffer after odd rounds: the caller's where the
          // other is ktune's temporary, else the first.
          if (a.intent == SpecArg::temp && b.intent != SpecArg::temp) n.swaps.emplace_back(y, x);
          else n.swaps.emplace_back(x, y);
        }
      }
      if (o.contains("reset") && !o.contains("while"))
        r.fail(at + ".reset", "only a loop that runs while a condition holds (\"while\") sets buffers before its rounds");
      if (o.contains("while")) read_while(r, s, o, at, inner, n, whiles);
      std::vector<Expr> in = within;
      in.push_back(n.repeat);
      std::vector<int> in_counters = within_counters;
      in_counters.push_back(n.index);
      if (group) {
        n.body = read(o["steps"], at + ".steps", inner, in, in_counters);
      } else {
        n.body.push_back(leaf(o, at, inner, in, in_counters)); // a step of its own rounds
      }
      nodes.push_back(std::move(n));
    }
    return nodes;
  };
  std::vector<SpecNode> nodes = read(v, path, {}, {}, {});
  order->clear();
  if (loops) *order = std::move(nodes); // else each step once, in order
  return steps;
}

// A buffer argument's fields (at: "args[i]").
void read_buffer(const Reader& r, const KernelSpec& s, const ojson& o, const std::string& at, SpecArg& a) {
  for (const char* f : {"value", "default"})
    if (o.contains(f)) r.fail(at + "." + f, "a buffer has no " + std::string(f) + " (scalars do)");
  if (!o.contains("dtype")) r.fail(at + ".dtype", "missing");
  a.type = r.elem(o["dtype"], at + ".dtype", true, &a.problem_dtype);
  if (!o.contains("count")) r.fail(at + ".count", "missing (elements, an expression of the dimensions)");
  a.count = r.expr(o["count"], at + ".count", s.names);
  const std::string intent = o.contains("intent") ? r.str(o["intent"], at + ".intent") : "in";
  if (intent == "in") a.intent = SpecArg::in;
  else if (intent == "out") a.intent = SpecArg::out;
  else if (intent == "inout") a.intent = SpecArg::inout;
  else if (intent == "temp") a.intent = SpecArg::temp;
  else r.fail(at + ".intent", "unknown intent '" + intent + "' (known: in, out, inout, temp)");
  // The caller allocates its buffers for a problem, whatever config serves it; ktune allocates the
  // temporaries for each config's plan, so theirs may follow the config (a partial sum a block).
  for (size_t n : a.count.reads()) {
    if (n < s.params.size() && a.intent == SpecArg::temp) {
      a.follows_config = true;
    } else if (n < s.params.size() || n >= s.first_device_name()) {
      r.fail(at + ".count", "'" + a.count.text() + "' reads " + s.names[n] +
                                ": a buffer's size follows the problem (its dimensions, align and dtype_bytes), and a "
                                "temporary's the parameters too; not the device or a loop's counter");
    }
  }
  const bool written_only = a.intent == SpecArg::out || a.intent == SpecArg::temp;
  if (written_only && o.contains("fill") && a.intent == SpecArg::out)
    r.fail(at + ".fill", "an output is poisoned before every launch (NaN), not filled; use intent inout for a buffer the kernel reads first");
  a.fill = read_fill(r, o.contains("fill") ? o["fill"] : ojson(), at + ".fill", written_only && !o.contains("fill"), s.dims);
  // A temporary is set before every launch by a memset of its element's width: zeros, or a
  // value for elements of 1, 2 or 4 bytes (a running max starting at -10000).
  if (a.intent == SpecArg::temp && o.contains("fill")) {
    const bool value = a.fill.kind == SpecFill::constant && (a.problem_dtype || elem_bytes(a.type) <= 4);
    if (a.fill.kind != SpecFill::zeros && !value)
      r.fail(at + ".fill", "a temporary is left as it is, cleared before every launch (\"zeros\") or set to a value "
                           "({\"value\": v}, for elements of 4 bytes or less)");
    a.set_before_launch = true;
  }
  if (o.contains("restore")) {
    if (!o["restore"].is_boolean()) r.fail(at + ".restore", "expected true or false");
    if (a.intent != SpecArg::inout)
      r.fail(at + ".restore", "only an inout buffer is put back before each timed run (an input stays as filled, an "
                              "output is written, a temporary follows its fill)");
    a.restore = o["restore"].get<bool>();
  }
  for (const char* t : {"atol", "rtol"}) {
    if (!o.contains(t)) continue;
    if (!a.checked()) r.fail(at + "." + t, "only outputs (intent out or inout) are checked");
    read_tolerance(r, s, o[t], at + "." + t, std::string(t) == "atol" ? a.atol : a.rtol,
                   std::string(t) == "atol" ? a.atol_at : a.rtol_at);
  }
  if (o.contains("check_count")) { // an output whose first elements alone are the answer (the rest: partials)
    if (!a.checked()) r.fail(at + ".check_count", "only outputs (intent out or inout) are checked");
    a.check_count = r.expr(o["check_count"], at + ".check_count", s.names);
    for (size_t n : a.check_count.reads())
      if (n < s.params.size() || n >= s.first_device_name())
        r.fail(at + ".check_count", "'" + a.check_count.text() + "' reads " + s.names[n] +
                                        ": the elements checked follow the problem only");
  }
}

// A scalar argument's fields: its type, and a value computed from the dimensions or the caller's
// default.
void read_scalar(const Reader& r, const KernelSpec& s, const ojson& o, const std::string& at, SpecArg& a) {
  for (const char* f : {"count", "intent", "fill", "atol", "rtol", "check_count", "restore"})
    if (o.contains(f)) r.fail(at + "." + f, "a scalar has no " + std::string(f) + " (buffers do)");
  bool problem = false;
  a.scalar_type = o.contains("dtype") ? r.elem(o["dtype"], at + ".dtype", true, &problem) : ElemType::i32;
  // "dtype": the problem's, as a kernel templated on T takes `T alpha` (f16 and bf16: 2 bytes).
  if (problem) a.problem_dtype = true, a.scalar_type = ElemType::f32;
  if (o.contains("value") && o.contains("default")) r.fail(at, "value (computed) and default (the caller's) exclude each other");
  if (o.contains("value")) {
    a.value = r.expr(o["value"], at + ".value", s.value_names);
    for (size_t n : a.value.reads()) {
      // A buffer's first element or the device's values (its SM count): evaluated at each launch.
      if (n >= s.names.size() || s.device_name(n)) a.follows_values = true;
      else if (n < s.params.size()) a.follows_config = true; // computed for each config's plan
      else if (n >= s.first_loop_name()) a.follows_loop = true; // and for each launch in the loop
    }
  } else {
    a.default_value = o.contains("default") ? r.number(o["default"], at + ".default") : 0;
  }
}

void read_map_geometry(const Reader& r, const KernelSpec& s, const ojson& o, const std::string& at, SpecArg::TensorMap& t);

// A struct argument's fields, laid out as C lays them out; buffers[i] gets the name of the buffer
// field i points to or describes (a map's; "" for a value field), resolved once every argument is
// read.
void read_struct(const Reader& r, const KernelSpec& s, const ojson& o, const std::string& at, SpecArg& a,
                 std::vector<std::string>& buffers) {
  r.known_fields(o, at, {"name", "kind", "fields", "align"});
  if (!o.contains("fields") || !o["fields"].is_array() || o["fields"].empty())
    r.fail(at + ".fields", "expected the struct's fields in order: {\"name\": ..., \"buffer\": arg} (a pointer), "
                           "{\"name\": ..., \"dtype\": ..., \"value\": expression or [expressions]} or "
                           "{\"name\": ..., \"kind\": \"tensor_map\", \"buffer\": arg, \"dims\": ..., \"box\": ...} or "
                           "{\"name\": ..., \"kind\": \"struct\", \"fields\": [...]} (a struct inside it)");
  auto power_of_two = [&](const ojson& x, const std::string& path, size_t least, const char* whose) {
    const double n = r.number(x, path);
    if (!(n >= 1 && n <= 256 && std::floor(n) == n && (size_t(n) & (size_t(n) - 1)) == 0))
      r.fail(path, "an alignment is a power of two from 1 to 256 bytes");
    if (size_t(n) < least) r.fail(path, std::to_string(size_t(n)) + " is below the " + std::to_string(least) + " bytes " + whose);
    return size_t(n);
  };
  // What a field's expression reads: the config's parameters, the loops' counters (its bytes at
  // each launch of the loop), not the device's values (a scalar's, evaluated at the launch).
  auto classify = [&](const Expr& e, const std::string& path) {
    for (size_t n : e.reads()) {
      if (s.device_name(n))
        r.fail(path, "'" + e.text() + "' reads " + s.names[n] +
                         ": a struct's fields are computed from the parameters, the dimensions, align, "
                         "dtype_bytes and loops' counters (a value of the device is a scalar argument's)");
      if (n < s.params.size()) a.follows_config = true;
      if (n >= s.first_loop_name()) a.follows_loop = true;
    }
  };
  std::set<std::string> seen;
  size_t end = 0, align = 1;
  for (size_t i = 0; i < o["fields"].size(); ++i) {
    const std::string fk = at + ".fields[" + std::to_string(i) + "]";
    const ojson& f = o["fields"][i];
    SpecArg::Field x;
    // Its kind (none: a pointer or values), the keys that kind takes, then its name.
    const bool kinded = f.is_object() && f.contains("kind");
    const bool nested = kinded && f["kind"] == "struct", map = kinded && !nested;
    if (map && f["kind"] != "tensor_map")
      r.fail(fk + ".kind", "a field of a kind is a tensor map (\"tensor_map\") or a struct (\"struct\"); a pointer or values field has none");
    r.known_fields(f, fk, nested ? std::initializer_list<const char*>{"name", "kind", "fields", "align"}
                          : map  ? std::initializer_list<const char*>{"name", "kind", "buffer", "dims", "strides", "box", "swizzle",
                                                                      "l2_promotion", "align"}
                                 : std::initializer_list<const char*>{"name", "buffer", "offset", "dtype", "value", "align"});
    if (!f.contains("name")) r.fail(fk + ".name", "missing");
    x.name = r.ident(f["name"], fk + ".name");
    if (!seen.insert(x.name).second) r.fail(fk + ".name", "field '" + x.name + "' named twice");
    if (nested) {
      // A struct inside the struct (a params struct of ThunderKittens' gl layouts, each a pointer,
      // its dims and a map): laid out as its own (its alignment, its padded size), its fields
      // flattened into this one's as "inner.field" at their offsets from its start.
      SpecArg sub;
      std::vector<std::string> sub_buffers;
      read_struct(r, s, f, fk, sub, sub_buffers);
      const size_t base = (end + sub.struct_align - 1) / sub.struct_align * sub.struct_align;
      for (size_t k = 0; k < sub.fields.size(); ++k) {
        SpecArg::Field g = std::move(sub.fields[k]);
        g.name = x.name + "." + g.name;
        g.offset += base;
        a.fields.push_back(std::move(g));
        buffers.push_back(sub_buffers[k]);
      }
      end = base + sub.struct_bytes;
      align = std::max(align, sub.struct_align);
      a.follows_config = a.follows_config || sub.follows_config;
      a.follows_loop = a.follows_loop || sub.follows_loop;
      continue;
    }
    size_t natural;
    if (map) { // a CUtensorMap member: 128 bytes, 64-byte aligned, encoded at the launch
      if (!f.contains("buffer")) r.fail(fk + ".buffer", "missing: the buffer argument the map describes");
      buffers.push_back(r.str(f["buffer"], fk + ".buffer"));
      read_map_geometry(r, s, f, fk, x.map);
      for (const Expr& e : x.map.box) classify(e, fk + ".box");
      x.type = ElemType::u8;
      natural = 64;
    } else if (f.contains("buffer")) { // a pointer to a buffer argument
      for (const char* k : {"dtype", "value"})
        if (f.contains(k)) r.fail(fk + "." + k, "a pointer field names its buffer only (the buffer has the dtype)");
      buffers.push_back(r.str(f["buffer"], fk + ".buffer"));
      x.type = ElemType::u64;
      natural = 8;
      if (f.contains("offset")) { // from an element on
        x.at = r.expr(f["offset"], fk + ".offset", s.names);
        classify(x.at, fk + ".offset");
      }
    } else {
      if (!f.contains("value")) r.fail(fk, "a field is a pointer (\"buffer\": an argument) or values (\"value\")");
      if (f.contains("offset")) r.fail(fk + ".offset", "only a pointer field starts at an offset into its buffer");
      bool problem = false;
      x.type = f.contains("dtype") ? r.elem(f["dtype"], fk + ".dtype", true, &problem) : ElemType::i32;
      if (problem) r.fail(fk + ".dtype", "a field names its own type (f32, i32, ...), not the problem's");
      const ojson& v = f["value"];
      if (v.is_array()) {
        if (v.empty() || v.size() > 4096) r.fail(fk + ".value", "expected 1 to 4096 expressions (an array field's elements)");
        for (size_t e = 0; e < v.size(); ++e) x.values.push_back(r.expr(v[e], fk + ".value[" + std::to_string(e) + "]", s.names));
      } else {
        x.values.push_back(r.expr(v, fk + ".value", s.names));
      }
      for (size_t k = 0; k < x.values.size(); ++k)
        classify(x.values[k], fk + ".value" + (v.is_array() ? "[" + std::to_string(k) + "]" : ""));
      buffers.emplace_back();
      natural = size_t(elem_bytes(x.type));
    }
    x.align = f.contains("align") ? power_of_two(f["align"], fk + ".align", natural, "the field's type needs") : natural;
    x.offset = (end + x.align - 1) / x.align * x.align;
    end = x.offset + (x.is_map() ? 128 : x.values.empty() ? 8 : x.values.size() * size_t(elem_bytes(x.type)));
    align = std::max(align, x.align);
    a.fields.push_back(std::move(x));
  }
  if (o.contains("align")) align = power_of_two(o["align"], at + ".align", align, "its fields need");
  a.struct_align = align;
  a.struct_bytes = (end + align - 1) / align * align;
  // CUDA 12.1 and later on sm_70 and later: 32764 bytes of parameters a kernel (4096 before).
  if (a.struct_bytes > 32764) r.fail(at + ".fields", std::to_string(a.struct_bytes) + " bytes: a kernel's arguments hold 32764 at most");
}

} // namespace

std::pair<const char*, std::string> texel_refusal(const SpecArg::Texture& t, ElemType format) {
  switch (format) {
    case ElemType::f32: case ElemType::f16: case ElemType::i8: case ElemType::u8: case ElemType::i16:
    case ElemType::u16: case ElemType::i32: case ElemType::u32: break;
    default: return {"format", std::string("a texel's channel is f32, f16 or an integer of 8, 16 or 32 bits, not ") + to_string(format)};
  }
  if (t.normalized_read && (is_float(format) || elem_bytes(format) > 2))
    return {"read", std::string("only 8- and 16-bit integer texels are read as normalized floats, not ") + to_string(format)};
  if (t.linear_filter && !is_float(format) && !t.normalized_read)
    return {"filter", std::string("linear filtering returns floats: a texel of ") + to_string(format) +
                          " is filtered only when read normalized (\"read\": \"normalized\")"};
  return {nullptr, ""};
}

namespace {

// How host code reads what no texel type holds, for a refusal of a texel's type.
constexpr const char* kDoubleTexels = " (host code reads a double through an int2 texel: \"format\": \"i32\", \"channels\": 2)";

// An argument the launch makes from a buffer argument's address (a texture's object, an address
// table's address): the buffer's name into `buffers`, resolved with the structs' once every
// argument is read; held as a struct of one 8-byte field (`field`), which the launch replaces.
// what: the buffer's role, for its "missing" refusal.
void read_made_from_buffer(const Reader& r, const ojson& o, const std::string& at, SpecArg& a, std::vector<std::string>& buffers,
                           const char* field, const char* what) {
  if (!o.contains("buffer")) r.fail(at + ".buffer", std::string("missing: ") + what);
  buffers.push_back(r.str(o["buffer"], at + ".buffer"));
  SpecArg::Field f;
  f.name = field;
  f.type = ElemType::u64;
  f.align = 8;
  a.fields.push_back(std::move(f));
  a.struct_bytes = a.struct_align = 8; // cudaTextureObject_t (an unsigned long long), a table's pointer
}

// An expression of the dimensions (and align, dtype_bytes) only: a shape the launch makes one
// object or table for a problem by, not a config. kind: the argument's, for the refusal.
Expr dims_only(const Reader& r, const KernelSpec& s, const ojson& o, const std::string& at, const char* key, const char* kind) {
  Expr e = r.expr(o[key], at + "." + key, s.names);
  for (size_t n : e.reads())
    if (n < s.params.size() || n >= s.first_device_name())
      r.fail(at + "." + key, "'" + e.text() + "' reads " + s.names[n] + ": " + kind + " is of the dimensions only");
  return e;
}

// A texture argument (SpecArg::Texture): its buffer (read_made_from_buffer); its shape's
// expressions read the dimensions only (the launch makes one texture object a buffer and shape).
void read_texture(const Reader& r, const KernelSpec& s, const ojson& o, const std::string& at, SpecArg& a,
                  std::vector<std::string>& buffers, bool surface) {
  if (surface) r.known_fields(o, at, {"name", "kind", "buffer", "format", "channels", "width", "height", "depth", "pitch"});
  else r.known_fields(o, at, {"name", "kind", "buffer", "resource", "format", "channels", "width", "height", "depth", "pitch",
                             "read", "filter", "address", "normalized_coords"});
  SpecArg::Texture& t = a.texture;
  a.texture_arg = true;
  t.surface = surface;
  read_made_from_buffer(r, o, at, a, buffers, "texture", "the buffer argument the texture reads");
  auto choice = [&](const char* key, std::initializer_list<const char*> known, const char* given) {
    const std::string v = o.contains(key) ? r.str(o[key], at + "." + key) : given;
    int i = 0;
    std::string list;
    for (const char* k : known) {
      if (v == k) return i;
      list += (list.empty() ? "" : ", ") + std::string(k);
      ++i;
    }
    r.fail(at + "." + key, "unknown " + std::string(key) + " '" + v + "' (known: " + list + ")");
  };
  t.resource = SpecArg::Texture::Resource(choice("resource", {"linear", "pitch2d", "array"}, surface ? "array" : "linear"));
  if (o.contains("format")) {
    bool problem = false;
    t.format = r.elem(o["format"], at + ".format", false, &problem);
    t.format_given = true;
  }
  if (o.contains("channels")) {
    const double n = r.number(o["channels"], at + ".channels");
    if (n != 1 && n != 2 && n != 4) r.fail(at + ".channels", "a texel holds 1, 2 or 4 channels");
    t.channels = int(n);
  }
  // Of the dimensions (and align, dtype_bytes): the texture is made for the problem, not a config.
  auto shape = [&](const char* key) { return dims_only(r, s, o, at, key, "a texture's shape"); };
  const bool array = t.resource == SpecArg::Texture::array, pitched = t.resource == SpecArg::Texture::pitch2d;
  if (o.contains("width")) t.width = shape("width");
  else if (t.resource != SpecArg::Texture::linear)
    r.fail(at + ".width", surface ? "missing: a surface's texels along x" : "missing: a pitch2d or array texture's texels along x");
  if (o.contains("height")) {
    if (t.resource == SpecArg::Texture::linear) r.fail(at + ".height", "a linear texture has no rows (pitch2d or array have)");
    t.height = shape("height");
  } else if (pitched) {
    r.fail(at + ".height", "missing: a pitch2d texture's rows");
  }
  if (o.contains("depth")) {
    if (!array) r.fail(at + ".depth", "only an array texture has slices (a 3D texture)");
    if (!o.contains("height")) r.fail(at + ".depth", std::string("a 3D ") + (surface ? "surface" : "array texture") + " has a height too");
    t.depth = shape("depth");
  }
  if (o.contains("pitch")) {
    if (!array && !pitched) r.fail(at + ".pitch", "a linear texture has no rows (pitch2d or array have)");
    if (array && !o.contains("height")) r.fail(at + ".pitch", std::string("a 1D ") + (surface ? "surface" : "array texture") + " has no rows");
    t.pitch = shape("pitch");
  }
  t.normalized_read = choice("read", {"element", "normalized"}, "element") == 1;
  t.linear_filter = choice("filter", {"point", "linear"}, "point") == 1;
  if (t.linear_filter && t.resource == SpecArg::Texture::linear)
    r.fail(at + ".filter", "a linear texture (tex1Dfetch) is read at whole texels: filtering needs pitch2d or an array");
  if (t.format_given)
    if (const auto [field, why] = texel_refusal(t, t.format); field)
      r.fail(at + "." + field, why + (std::string(field) == "format" ? kDoubleTexels : ""));
  if (o.contains("normalized_coords")) {
    if (!o["normalized_coords"].is_boolean()) r.fail(at + ".normalized_coords", "expected true or false");
    t.normalized_coords = o["normalized_coords"].get<bool>();
    if (t.normalized_coords && t.resource == SpecArg::Texture::linear)
      r.fail(at + ".normalized_coords", "a linear texture (tex1Dfetch) is read at whole texels: normalized coordinates need pitch2d or an array");
  }
  // CUaddress_mode values: wrap 0, clamp 1, mirror 2, border 3.
  const std::initializer_list<const char*> modes = {"wrap", "clamp", "mirror", "border"};
  for (int& m : t.address) m = 1;
  if (o.contains("address")) {
    if (t.resource == SpecArg::Texture::linear)
      r.fail(at + ".address", "a linear texture (tex1Dfetch) has no address mode: a fetch past its end reads 0");
    const ojson& m = o["address"];
    const int axes = t.depth.empty() ? t.height.empty() ? 1 : 2 : 3;
    if (m.is_array()) {
      if (m.empty() || int(m.size()) > axes)
        r.fail(at + ".address", "one mode, or one an axis (" + std::to_string(axes) + " here)");
      for (size_t k = 0; k < m.size(); ++k) {
        const std::string v = r.str(m[k], at + ".address[" + std::to_string(k) + "]");
        const auto it = std::find_if(modes.begin(), modes.end(), [&](const char* x) { return v == x; });
        if (it == modes.end()) r.fail(at + ".address[" + std::to_string(k) + "]", "unknown address mode '" + v + "' (known: wrap, clamp, mirror, border)");
        t.address[k] = int(it - modes.begin());
      }
      for (int k = int(m.size()); k < 3; ++k) t.address[k] = t.address[m.size() - 1];
    } else {
      const int mode = choice("address", modes, "clamp");
      for (int& x : t.address) x = mode;
    }
    for (int x : t.address)
      if ((x == 0 || x == 2) && !t.normalized_coords)
        r.fail(at + ".address", "wrap and mirror address only normalized coordinates (\"normalized_coords\": true); at texel "
                                "coordinates CUDA clamps: write \"clamp\"");
  }
}

// An address table argument (SpecArg::Table): its buffer as a texture's (read_made_from_buffer);
// count, offset and stride read the dimensions only (the launch makes one table a buffer address
// and problem).
void read_table(const Reader& r, const KernelSpec& s, const ojson& o, const std::string& at, SpecArg& a,
                std::vector<std::string>& buffers) {
  r.known_fields(o, at, {"name", "kind", "buffer", "count", "offset", "stride"});
  a.table_arg = true;
  read_made_from_buffer(r, o, at, a, buffers, "table", "the buffer argument whose elements the table's addresses point to");
  auto of_dims = [&](const char* key) { return dims_only(r, s, o, at, key, "an address table"); };
  if (!o.contains("count")) r.fail(at + ".count", "missing: the table's entries (an expression of the dimensions)");
  a.table.count = of_dims("count");
  if (o.contains("offset")) a.table.offset = of_dims("offset");
  if (o.contains("stride")) a.table.stride = of_dims("stride");
}

// A tensor map's geometry (SpecArg::TensorMap), an argument's or a struct field's: its extents and
// strides read the dimensions only, its box the config too (the tile a block loads), none the
// device or a loop.
void read_map_geometry(const Reader& r, const KernelSpec& s, const ojson& o, const std::string& at, SpecArg::TensorMap& t) {
  auto list = [&](const char* key, bool config) {
    std::vector<Expr> out;
    const std::string k = at + "." + key;
    if (!o[key].is_array() || o[key].empty() || o[key].size() > 5)
      r.fail(k, "expected an array of 1 to 5 expressions, innermost dimension first");
    for (size_t i = 0; i < o[key].size(); ++i) {
      const std::string ki = k + "[" + std::to_string(i) + "]";
      out.push_back(r.expr(o[key][i], ki, s.names));
      for (size_t n : out.back().reads())
        if ((!config && n < s.params.size()) || n >= s.first_device_name())
          r.fail(ki, "'" + out.back().text() + "' reads " + s.names[n] + ": a tensor map's " + key + " are of the dimensions" +
                         (config ? " and the parameters" : "") + " only");
    }
    return out;
  };
  for (const char* key : {"dims", "box"})
    if (!o.contains(key))
      r.fail(at + "." + key, std::string("missing: ") +
                                 (std::string(key) == "dims" ? "the extents in elements, innermost first (cuTensorMapEncodeTiled's globalDim)"
                                                             : "the box a load moves, innermost first (boxDim; it may read the parameters)"));
  t.dims = list("dims", false);
  t.box = list("box", true);
  if (t.box.size() != t.dims.size())
    r.fail(at + ".box", std::to_string(t.box.size()) + " extents for a map of " + std::to_string(t.dims.size()) + " dimensions");
  if (o.contains("strides")) {
    if (t.dims.size() == 1) r.fail(at + ".strides", "a map of one dimension has no strides");
    t.strides = list("strides", false);
    if (t.strides.size() != t.dims.size() - 1)
      r.fail(at + ".strides", std::to_string(t.strides.size()) + " strides for a map of " + std::to_string(t.dims.size()) +
                                  " dimensions: one a dimension past the first, in bytes (globalStrides)");
  }
  if (o.contains("swizzle")) {
    const double w = r.number(o["swizzle"], at + ".swizzle");
    if (w != 0 && w != 32 && w != 64 && w != 128) r.fail(at + ".swizzle", "expected 0, 32, 64 or 128 (bytes)");
    t.swizzle = int(w);
  }
  if (o.contains("l2_promotion")) {
    const double w = r.number(o["l2_promotion"], at + ".l2_promotion");
    if (w != 0 && w != 64 && w != 128 && w != 256) r.fail(at + ".l2_promotion", "expected 0 (none), 64, 128 or 256 (bytes)");
    t.l2_promotion = int(w);
  }
}

// A tensor map argument: its buffer as a texture's (read_made_from_buffer), 128 bytes, its one
// field the map.
void read_tensor_map(const Reader& r, const KernelSpec& s, const ojson& o, const std::string& at, SpecArg& a,
                     std::vector<std::string>& buffers) {
  r.known_fields(o, at, {"name", "kind", "buffer", "dims", "strides", "box", "swizzle", "l2_promotion"});
  a.tensor_map_arg = true;
  read_made_from_buffer(r, o, at, a, buffers, "map", "the buffer argument the map describes");
  a.struct_bytes = 128, a.struct_align = 64; // CUtensorMap: 128 bytes, 64-byte aligned
  read_map_geometry(r, s, o, at, a.fields[0].map);
}

void read_args(const Reader& r, KernelSpec& s, const ojson& v) {
  if (!v.is_array() || v.empty()) r.fail("args", "expected a non-empty array of arguments, in the kernel's order");
  // What a grid or a computed scalar may read besides names: each buffer argument's first element.
  s.value_names = s.names;
  s.value_slots.clear();
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].is_object() && v[i].contains("kind") && v[i]["kind"] == "buffer" && v[i].contains("name") && v[i]["name"].is_string()) {
      const std::string name = v[i]["name"].get<std::string>();
      if (std::find(s.value_names.begin(), s.value_names.end(), name) != s.value_names.end()) continue;
      s.value_names.push_back(name);
      s.value_slots.push_back(int(i));
    }
  std::set<std::string> seen;
  std::vector<std::vector<std::string>> field_buffers(v.size()); // a struct's pointer fields' buffers, by name
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string at = "args[" + std::to_string(i) + "]";
    const ojson& o = v[i];
    r.known_fields(o, at, {"name", "kind", "dtype", "count", "intent", "fill", "atol", "rtol", "check_count", "restore", "value",
                           "default", "fields", "align", "buffer", "resource", "format", "channels", "width", "height", "depth",
                           "pitch", "read", "filter", "address", "normalized_coords", "offset", "stride", "dims", "strides", "box",
                           "swizzle", "l2_promotion"});
    SpecArg a;
    if (!o.contains("name")) r.fail(at + ".name", "missing");
    a.name = r.ident(o["name"], at + ".name");
    if (!seen.insert(a.name).second) r.fail(at + ".name", "argument '" + a.name + "' named twice");
    if (!o.contains("kind")) r.fail(at + ".kind", "missing (buffer or scalar)");
    const std::string kind = r.str(o["kind"], at + ".kind");
    if (kind != "buffer" && kind != "scalar" && kind != "null" && kind != "struct" && kind != "texture" && kind != "surface" &&
        kind != "addresses" && kind != "tensor_map")
      r.fail(at + ".kind", "unknown kind '" + kind + "' (known: buffer, scalar, null, struct, texture, surface, addresses, tensor_map)");
    a.buffer = kind == "buffer";
    for (const char* f : {"fields", "align"})
      if (kind != "struct" && o.contains(f)) r.fail(at + "." + f, "only a struct has " + std::string(f));
    for (const char* f : {"offset", "stride"})
      if (kind != "addresses" && o.contains(f)) r.fail(at + "." + f, "only an address table (\"kind\": \"addresses\") has " + std::string(f));
    for (const char* f : {"resource", "format", "channels", "width", "height", "depth", "pitch", "read", "filter", "address",
                          "normalized_coords"})
      if (kind != "texture" && kind != "surface" && o.contains(f)) r.fail(at + "." + f, "only a texture has " + std::string(f));
    for (const char* f : {"dims", "strides", "box", "swizzle", "l2_promotion"})
      if (kind != "tensor_map" && o.contains(f)) r.fail(at + "." + f, "only a tensor map (\"kind\": \"tensor_map\") has " + std::string(f));
    if (kind != "texture" && kind != "surface" && kind != "addresses" && kind != "tensor_map" && o.contains("buffer"))
      r.fail(at + ".buffer", "only a texture, a surface, an address table and a tensor map read a buffer of their own");
    if (kind == "tensor_map") {
      read_tensor_map(r, s, o, at, a, field_buffers[i]);
    } else if (kind == "addresses") {
      read_table(r, s, o, at, a, field_buffers[i]);
    } else if (kind == "texture" || kind == "surface") {
      read_texture(r, s, o, at, a, field_buffers[i], kind == "surface");
    } else if (kind == "struct") {
      read_struct(r, s, o, at, a, field_buffers[i]);
    } else if (kind == "null") { // a pointer the kernel takes and this use leaves null (an optional mask, vLLM's `finished`)
      r.known_fields(o, at, {"name", "kind"});
      a.null_pointer = true;
      a.scalar_type = ElemType::u64;
      a.value = Expr("0", s.names, r.where(at));
    } else if (a.buffer) {
      read_buffer(r, s, o, at, a);
    } else {
      read_scalar(r, s, o, at, a);
    }
    s.args.push_back(std::move(a));
  }
  // A struct's pointers: to buffers of the spec, given before or after it.
  for (size_t i = 0; i < s.args.size(); ++i)
    for (size_t f = 0; f < s.args[i].fields.size(); ++f) {
      const std::string& name = field_buffers[i][f];
      if (name.empty()) continue;
      // An argument made from one buffer names it at its top ("buffer"), a struct's field in its own.
      const bool texture = s.args[i].is_texture(), made = s.args[i].made_at_launch() || s.args[i].is_tensor_map();
      const std::string fk = "args[" + std::to_string(i) + "]" + (made ? "" : ".fields[" + std::to_string(f) + "]") + ".buffer";
      const int k = r.arg_index(s, name, fk);
      const std::string made_does = texture ? std::string("a ") + s.args[i].kind_name() + " reads"
                                    : s.args[i].is_tensor_map() ? std::string("a tensor map describes")
                                                                : std::string("an address table points into");
      const bool map = s.args[i].fields[f].is_map();
      const std::string field_does = made ? made_does : map ? std::string("a map field describes") : std::string("a pointer field points to");
      if (!s.args[size_t(k)].buffer) r.fail(fk, "'" + name + "' is not a buffer argument: " + field_does + " a buffer");
      s.args[i].fields[f].buffer = k;
      if ((made || map) && s.args[size_t(k)].follows_config)
        r.fail(fk, "'" + name + "' is a temporary the config sizes: " + field_does + " a buffer the problem sizes");
      // Without a format, the buffer's element type (the problem's: at each problem, texture_at).
      const SpecArg& b = s.args[size_t(k)];
      if (texture && !s.args[i].texture.format_given && !b.problem_dtype)
        if (const auto [field, why] = texel_refusal(s.args[i].texture, b.type); field)
          r.fail("args[" + std::to_string(i) + "]." + field, std::string(field) == "format"
                                                                 ? "missing: '" + name + "' holds " + to_string(b.type) + ": " + why + kDoubleTexels
                                                                 : "'" + name + "' holds " + to_string(b.type) + ": " + why);
    }
}

void read_symbols(const Reader& r, KernelSpec& s, const ojson& v) {
  if (!v.is_array()) r.fail("symbols", "expected an array");
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string at = "symbols[" + std::to_string(i) + "]";
    const ojson& o = v[i];
    r.known_fields(o, at, {"name", "dtype", "count", "offset", "from", "fill", "address_of"});
    SpecSymbol y;
    if (!o.contains("name")) r.fail(at + ".name", "missing");
    y.name = r.ident(o["name"], at + ".name");
    if (int(o.contains("from")) + int(o.contains("fill")) + int(o.contains("address_of")) != 1)
      r.fail(at, "give exactly one of from (a buffer argument's data), fill and address_of (a buffer argument's address)");
    if (o.contains("address_of")) { // a __device__ pointer set to a buffer's address
      for (const char* f : {"dtype", "count", "offset"})
        if (o.contains(f)) r.fail(at + "." + f, "a symbol of an address holds one pointer (8 bytes): no " + std::string(f));
      const std::string of = r.str(o["address_of"], at + ".address_of");
      y.address_of = r.arg_index(s, of, at + ".address_of");
      if (!s.args[size_t(y.address_of)].buffer) r.fail(at + ".address_of", "'" + of + "' is a " + std::string(s.args[size_t(y.address_of)].kind_name()) +
                                                               ": only a buffer has an address");
      y.type = ElemType::u64;
      y.count = Expr("1", s.names, r.where(at + ".count"));
    } else if (o.contains("from")) {
      const std::string from = r.str(o["from"], at + ".from");
      for (size_t a = 0; a < s.args.size(); ++a)
        if (s.args[a].name == from && s.args[a].buffer && s.args[a].intent == SpecArg::in) y.from_arg = int(a);
      if (y.from_arg < 0) r.fail(at + ".from", "'" + from + "' is not an input buffer argument");
      y.type = s.args[size_t(y.from_arg)].type;
      y.count = s.args[size_t(y.from_arg)].count;
      if (s.args[size_t(y.from_arg)].problem_dtype) r.fail(at + ".from", "'" + from + "' takes the problem's dtype; a symbol has one type");
      // A slice: offset and count of the dimensions, parameters and loops' counters; an offset
      // without a count takes the rest of the buffer.
      if (o.contains("offset") && !o.contains("count"))
        y.count = Expr("(" + y.count.text() + ") - (" + r.expr_text(o["offset"], at + ".offset") + ")", s.names, r.where(at + ".count"));
      for (const char* f : {"offset", "count"}) {
        if (!o.contains(f)) continue;
        y.planned = true;
        Expr& e = std::string(f) == "offset" ? y.offset : y.count;
        e = r.expr(o[f], at + "." + f, s.names);
        for (size_t n : e.reads()) {
          if (n >= s.first_loop_name()) {
            if (std::find(y.counters.begin(), y.counters.end(), int(n)) == y.counters.end()) y.counters.push_back(int(n));
            y.planned = true;
          } else if (n < s.params.size()) {
            y.planned = true;
          } else if (n >= s.first_device_name()) {
            r.fail(at + "." + f, "'" + e.text() + "' reads " + s.names[n] +
                                     ", a device value: a slice reads dimensions, parameters and loops' counters");
          }
        }
      }
    } else {
      if (o.contains("offset")) r.fail(at + ".offset", "only a symbol filled from a buffer (\"from\") takes a slice of it");
      if (!o.contains("dtype")) r.fail(at + ".dtype", "missing");
      bool problem = false;
      y.type = r.elem(o["dtype"], at + ".dtype", false, &problem);
      if (!o.contains("count")) r.fail(at + ".count", "missing");
      y.count = r.expr(o["count"], at + ".count", s.names);
      for (size_t n : y.count.reads())
        if (n < s.params.size() || n >= s.first_loop_name()) r.fail(at + ".count", "'" + y.count.text() + "' reads " + s.names[n]);
      y.fill = read_fill(r, o["fill"], at + ".fill", false, s.dims);
      if (!y.fill.pattern.empty()) r.fail(at + ".fill", "a symbol's file is one for every problem: no placeholders");
    }
    s.symbols.push_back(std::move(y));
  }
}

Config read_config(const Reader& r, const KernelSpec& s, const ojson& v, const std::string& path) {
  r.known_fields(v, path, {});
  Config c;
  for (const auto& p : s.params) {
    if (!v.contains(p.name)) r.fail(path + "." + p.name, "missing (a config sets every parameter)");
    const std::string at = path + "." + p.name;
    const ojson& x = v[p.name];
    int value = 0;
    if (x.is_boolean()) value = x.get<bool>();
    else if (x.is_number_integer()) value = int(x.get<long long>());
    else r.fail(at, "expected an integer");
    if (std::find(p.values.begin(), p.values.end(), value) == p.values.end())
      r.fail(at, std::to_string(value) + " is not one of the parameter's values");
    c.set(p.name, value);
  }
  for (const auto& [k, x] : v.items())
    if (std::none_of(s.params.begin(), s.params.end(), [&](const KernelSpec::Param& p) { return p.name == k; }))
      r.fail(path + "." + k, "not a parameter of the spec");
  return c;
}

// Whether `name` is a header of the CUDA toolkit's include folder (or its cccl).
bool toolkit_header(const std::string& name) {
  std::error_code ec;
  for (const char* dir : {"/", "/cccl/"})
    if (!cuda_include_dir().empty() && fs::is_regular_file(cuda_include_dir() + dir + name, ec)) return true;
  return false;
}

// The names a text's `#include` lines include (spaces allowed around the '#'), each with its
// closing delimiter ('"' or '>'; 0 for `#include MACRO`, which no reading can follow).
std::vector<std::pair<std::string, char>> includes_of(const std::string& text) {
  std::vector<std::pair<std::string, char>> out;
  for (size_t line = 0; line < text.size(); line = text.find('\n', line) + 1) {
    size_t at = text.find_first_not_of(" \t", line);
    if (at == std::string::npos) break;
    if (text[at] == '#') at = text.find_first_not_of(" \t", at + 1);
    else at = std::string::npos;
    if (at != std::string::npos && text.compare(at, 7, "include") == 0) {
      const size_t q1 = text.find_first_not_of(" \t", at + 7);
      const char close = q1 == std::string::npos ? 0 : text[q1] == '"' ? '"' : text[q1] == '<' ? '>' : 0;
      const size_t q2 = close ? text.find(close, q1 + 1) : std::string::npos;
      if (q2 == std::string::npos) out.emplace_back("", 0);
      else out.emplace_back(text.substr(q1 + 1, q2 - q1 - 1), close);
    }
    if (text.find('\n', line) == std::string::npos) break;
  }
  return out;
}

// Whether a header included by `name` would meet one of ktune's own of that name, which every
// compile hands NVRTC in memory (kernel_templates' layernorm.h, softmax.h, rows_common.cuh): the
// project's file is then handed in memory too, by that name, so that it is the one compiled (AWQ's
// layernorm.h).
bool ktune_header_name(const std::string& name) {
  const auto& h = embedded_headers();
  return std::any_of(h.begin(), h.end(), [&](const auto& e) { return e.first == name; });
}

// text with the quoted #include of each name in `names` (and the angled one too, where `angled`)
// spelled "as its value" (a header's path), the rest of the line and every other line as they are.
std::string with_include_names(const std::string& text, const std::map<std::string, std::string>& names, bool angled = false) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto inc = includes_of(line);
    const auto at = inc.size() == 1 && (inc[0].second == '"' || (angled && inc[0].second == '>')) ? names.find(inc[0].first) : names.end();
    if (at != names.end()) {
      const size_t open = line.find(inc[0].second == '"' ? '"' : '<');
      line = line.substr(0, open) + "\"" + at->second + "\"" + line.substr(line.find(inc[0].second, open + 1) + 1);
    }
    out += line + "\n";
  }
  if (!text.empty() && text.back() != '\n') out.pop_back();
  return out;
}

// The folder a copy of CCCL's libcu++, CUB or Thrust that a project carries (FlashInfer's
// 3rdparty/cccl, newer than the toolkit's, on its include path before it: its `cuda/`, `cub/`,
// `thrust/` and `nv/` names) is included from, or "" where `file` is no such copy's header: the
// nearest folder above it that holds one of those names' own marker (libcu++'s version header,
// CUB's, Thrust's) with the file under that name.
std::string cccl_copy_root(const fs::path& file) {
  static std::mutex mu;
  static std::map<std::string, bool> marked; // folder + '/' + component: the component's marker is there
  const fs::path f = fs::absolute(file).lexically_normal();
  for (fs::path dir = f.parent_path(); !dir.empty() && dir != dir.parent_path(); dir = dir.parent_path()) {
    const fs::path rel = f.lexically_relative(dir);
    const std::string first = rel.begin()->string();
    const char* marker = first == "cuda" || first == "nv" ? "cuda/std/__cccl/version.h" : first == "cub" ? "cub/version.cuh"
                         : first == "thrust"              ? "thrust/version.h" : nullptr;
    if (!marker) continue;
    const std::string key = dir.string() + "/" + marker;
    std::lock_guard<std::mutex> lk(mu);
    auto at = marked.find(key);
    if (at == marked.end()) {
      std::error_code ec;
      at = marked.emplace(key, fs::is_regular_file(key, ec)).first;
    }
    if (at->second) return dir.string();
  }
  return "";
}

// A file under the CUDA toolkit's include folder (include_dirs may name it). in_toolkit: that, or
// one of a copy of CCCL a project carries, which is read as the toolkit's is: its headers are a
// library's, not the project's (skip's reading took libcu++'s `extern _Tp __cccl_make_dependent;`
// for a host variable, and its concepts broke), and ktune's views of its host-side parts are made
// from it.
bool in_toolkit_folder(const fs::path& file) {
  if (cuda_include_dir().empty()) return false;
  std::error_code ec;
  const std::string dir = fs::weakly_canonical(cuda_include_dir(), ec).string() + "/";
  const std::string f = fs::weakly_canonical(file, ec).string();
  return !ec && f.rfind(dir, 0) == 0;
}

bool in_toolkit(const fs::path& file) { return in_toolkit_folder(file) || !cccl_copy_root(file).empty(); }

// The sources' text, each behind a #line naming its file, and every header they include that
// resolves (by a quoted name: beside the including file, then the sources' folders and
// include_dirs; by an angled one: the sources' folders and include_dirs, as the compile's include
// path has them), for the version hash and for KernelSpec::reads_macro.
// *outside: the names included that resolve to none of those files (the toolkit's, NVRTC's own,
// ktune's stand-ins). *views: with "host_code": "skip", the headers the sources include from the spec's folders and
// include_dirs (not the toolkit's) whose host code skip blanks, by the name they are included by
// (NVRTC takes an in-memory header for that name before any folder's). A name that two includes
// resolve to different files is left to NVRTC: one text cannot serve both.
std::vector<std::string> read_sources(const Reader& r, KernelSpec& s, const ojson& v, std::string* hashed,
                                      const std::vector<std::string>& incs, std::vector<std::pair<std::string, std::string>>* views,
                                      std::set<std::string>* outside, const std::map<std::string, std::string>& command_line) {
  std::vector<std::string> files;
  if (v.is_string()) files.push_back(r.file(v.get<std::string>(), "sources", "source"));
  else if (v.is_array() && !v.empty())
    for (size_t i = 0; i < v.size(); ++i)
      files.push_back(r.file(r.str(v[i], "sources[" + std::to_string(i) + "]"), "sources[" + std::to_string(i) + "]", "source"));
  else r.fail("sources", "expected a file name or a non-empty array of them");
  std::set<std::string> seen;
  std::vector<std::string> queue;
  std::map<std::string, std::string> texts; // each file's text, read once
  std::map<std::string, std::string> view_file; // a view's name: the file it was made from ("" once two differ)
  // With host code skipped, a quoted include found beside the file that includes it (not a
  // source: their folders lead the include path) names that header by its whole path, less the
  // leading '/', in the text compiled, and the header is a view by that name: a view is handed to
  // NVRTC in memory, with no folder for NVRTC to find a header beside it from (Transformer
  // Engine's util/system.h includes "logging.h" beside it and is itself included as
  // "../util/system.h"). Not the path itself: NVRTC opens a path from / on disk before looking
  // at its in-memory headers. Per file: name -> that name.
  std::map<std::string, std::map<std::string, std::string>> beside;
  std::set<std::string> path_names;
  std::set<std::string> stand_ins; // the names of the host-only libraries' headers a stand-in replaces
  // Whether the header `name` (found at `path`, "" where no folder holds it) is a host-only library's
  // that a stand-in replaces, the stand-in handed in (once a name).
  auto stands_in = [&](const std::string& name, const std::string& path) {
    if (stand_ins.count(name)) return true;
    const std::string stand_in = host_library_stand_in(name, path);
    if (stand_in.empty()) return false;
    stand_ins.insert(name);
    views->emplace_back(name, stand_in);
    *hashed += "\n//header " + name + "\n" + stand_in;
    return true;
  };
  // Under skip, the project's files read __NVCC__ as defined, as nvcc's passes do (with_nvcc_defined);
  // the toolkit's headers, which NVRTC reads from its own folders, as they are.
  std::set<std::string> nvcc_read; // the files that rewrite changed: a view each, not the file on disk
  auto project_text = [&](const std::string& path, const char* what) {
    const std::string text = read_text_file(path, what);
    if (!s.skip_host_code) return text;
    std::string read = with_nvcc_defined(text);
    if (read != text) nvcc_read.insert(path);
    return read;
  };
  for (const auto& f : files) {
    const std::string& text = texts[f] = project_text(f, "kernel source");
    *hashed += "\n//source " + fs::path(f).filename().string() + "\n" + text;
    queue.push_back(f);
  }
  s.source_name = fs::path(files.front()).filename().string();
  std::vector<std::string> folders;
  for (const auto& f : files) folders.push_back(fs::absolute(fs::path(f)).parent_path().lexically_normal().string());
  while (!queue.empty()) {
    const std::string f = queue.back();
    queue.pop_back();
    if (!seen.insert(f).second) continue;
    const std::string text = texts.at(f);
    s.compiled_text += text + "\n";
    // A macro name pasted together (a##b) is not in the text as a word: the text cannot tell
    // which macros it reads.
    if (text.find("##") != std::string::npos) s.compiled_text_whole = false;
    for (const auto& [name, close] : includes_of(text)) {
      if (!close) {
        s.compiled_text_whole = false; // #include MACRO: a header this reading cannot follow
        continue;
      }
      std::vector<std::string> dirs;
      if (close == '"') dirs.push_back(fs::path(f).parent_path().string());
      dirs.insert(dirs.end(), folders.begin(), folders.end());
      dirs.insert(dirs.end(), incs.begin(), incs.end());
      bool found = false;
      for (const auto& d : dirs) {
        std::error_code ec;
        // Whole paths: a file reached through a relative folder (beside a source of a spec read
        // from ".") and an absolute one (an include_dir) is one file.
        const fs::path h = fs::absolute(fs::path(d) / name).lexically_normal();
        if (!fs::is_regular_file(h, ec)) continue;
        found = true;
        const bool toolkits = in_toolkit(h); // include_dirs may name CUDA's folder: still the toolkit's header
        if (toolkits) outside->insert(name);
        // A host-only library NVRTC cannot compile ({fmt}), included for host code: its stand-in
        // in the header's place, under skip only (without it, the compile names the host code).
        if (s.skip_host_code && !toolkits && stands_in(name, h.string())) break;
        if (!seen.count(h.string())) {
          if (!texts.count(h.string())) texts[h.string()] = toolkits ? read_text_file(h.string(), "included header") : project_text(h.string(), "included header");
          const std::string& header = texts[h.string()];
          *hashed += "\n//header " + name + "\n" + header;
          queue.push_back(h.string());
        }
        // Every name a project's header is included by (ggml's "common.cuh" beside it and
        // "ggml-cuda/common.cuh" from src/), read or not.
        if ((s.skip_host_code || ktune_header_name(name)) && !toolkits) {
          const bool by_path = s.skip_host_code && close == '"' && d == dirs.front() && std::find(files.begin(), files.end(), f) == files.end();
          const std::string path_name = h.string().substr(1);
          if (by_path) beside[f][name] = path_name, path_names.insert(path_name);
          auto [at, fresh] = view_file.emplace(by_path ? path_name : name, h.string());
          if (!fresh && at->second != h.string()) at->second.clear();
        }
        break;
      }
      // A host-only library's header that no folder holds (its project's build fetches it): its
      // stand-in all the same, under skip.
      if (!found && s.skip_host_code && stands_in(name, "")) continue;
      // A quoted header found nowhere ktune looks may be one it cannot read; an angled one is
      // the toolkit's or NVRTC's own (<cuda_bf16.h>, <cstdint>), which read no user macro.
      if (!found && close == '"' && !toolkit_header(name)) s.compiled_text_whole = false;
      if (!found) outside->insert(name);
    }
  }
  // "host_code": "skip": the project's files as they are, their host functions blanked for
  // NVRTC. A macro a declaration carries may be defined in another of the project's headers
  // (ggml.h's GGML_API, in gguf.h): every one's object-like macros are known to all.
  // CUDA's calling-convention macros, empty on Linux, are known too: a host callback's
  // `void CUDART_CB done(void* data)` (cuda-samples') is no execution space.
  // So are the execution spaces of PyTorch's stand-in (core/nvrtc_torch.cpp), which a project's
  // declarations carry: vLLM's `C10_HOST_DEVICE constexpr auto FP8_E4M3_MAX = ...;`, a variable,
  // loses its __host__ as one written out does.
  // The function-like macros of them all likewise: a call in a .cu of a header's macro is expanded
  // through every level of the header's macros (Apex's group norm launchers).
  std::map<std::string, std::string> known, function_macros;
  const int min_arch = s.min_arch ? s.min_arch * 10 : ProjectReading{}.min_arch; // as __CUDA_ARCH__ spells it
  if (s.skip_host_code) {
    for (const char* m : {"CUDART_CB", "CUDARTAPI", "CUDAAPI"}) known.emplace(m, "");
    known.insert(command_line.begin(), command_line.end());
    for (const auto& [m, space] : {std::pair<const char*, const char*>{"C10_HOST_DEVICE", "__host__ __device__"}, {"C10_DEVICE", "__device__"}, {"C10_HOST", "__host__"}})
      known.emplace(m, space);
    for (const auto& [file, text] : texts)
      if (!in_toolkit(file)) {
        defined_macros(text, &known);
        defined_function_macros(text, &function_macros);
      }
  }
  // A host function template may be defined in a header and instantiated in a .cu (mamba's
  // `template void selective_scan_fwd_cuda<float, float>(...);`): the names each file's reading
  // blanks are known to every file's, for their explicit instantiations.
  // A name that is a device function too in some file is left out: an overload on the device
  // side keeps its explicit instantiations and using-declarations.
  // A function one file defines may be read in another's unevaluated operand (CUTLASS's kernel
  // headers' decltype of conv/detail.hpp's helpers): those names are known to every file's too.
  // The types each file declares are known to every file's too (AMGX's enum AMGX_ERROR, in
  // error.h, returned by a host member declared in amg_config.h).
  std::set<std::string> host_functions, unevaluated, types;
  if (s.skip_host_code) {
    for (const auto& [file, text] : texts)
      if (!in_toolkit(file)) {
        const TextNames read = names_of(text);
        unevaluated.insert(read.unevaluated.begin(), read.unevaluated.end());
        types.insert(read.types.begin(), read.types.end());
      }
    std::set<std::string> device_functions;
    for (const auto& [file, text] : texts)
      if (!in_toolkit(file)) {
        int n = 0;
        skip_host_functions(text, &n, ProjectReading{known, {}, unevaluated, min_arch, function_macros, command_line, types}, &host_functions, &device_functions);
      }
    for (const auto& d : device_functions) host_functions.erase(d);
  }
  auto with_paths = [&](const std::string& file) {
    const auto at = beside.find(file);
    return at == beside.end() ? texts.at(file) : with_include_names(texts.at(file), at->second);
  };
  for (const auto& f : files) {
    int blanked = 0;
    const std::string& text = texts.at(f);
    const std::string compiled = with_std_math_declarations(
        s.skip_host_code ? with_pragma_operators(skip_host_functions(text, &blanked, ProjectReading{known, host_functions, unevaluated, min_arch, function_macros, command_line, types, true}))
                         : text);
    s.source += "#line 1 \"" + f + "\"\n" + compiled + (compiled.empty() || compiled.back() == '\n' ? "" : "\n");
  }
  // A file included by two names has one view; the other name's includes it, so that its
  // #pragma once or guard holds as it does for the one file under nvcc.
  // A file reached by its path name is a view whatever it holds, and then every other name of it
  // must be one too: a name NVRTC resolved on disk would be a second copy of the file beside the
  // view (SageAttention's source includes "../cp_async.cuh", a header beside it "cp_async.cuh").
  std::map<std::string, std::vector<std::string>> names_of; // a file: the names it is included by
  for (const auto& [name, file] : view_file)
    if (!file.empty()) names_of[file].push_back(name);
  for (const auto& [file, names] : names_of) {
    int blanked = 0;
    std::string view = s.skip_host_code ? skip_host_functions(with_paths(file), &blanked, ProjectReading{known, host_functions, unevaluated, min_arch, function_macros, command_line, types, true}) : texts.at(file);
    const std::string rewritten = with_std_math_declarations(s.skip_host_code ? with_pragma_operators(view) : view);
    const bool changed = rewritten != view || nvcc_read.count(file); // math declared, a pragma's macro or __NVCC__ rewritten
    view = rewritten;
    const auto path_name = std::find_if(names.begin(), names.end(), [&](const std::string& n) { return path_names.count(n) > 0; });
    const bool ktune_name = std::any_of(names.begin(), names.end(), ktune_header_name);
    if (blanked == 0 && !changed && !beside.count(file) && path_name == names.end() && !ktune_name) continue;
    const std::string& first = path_name != names.end() ? *path_name : names.front();
    views->emplace_back(first, std::move(view));
    for (const auto& name : names)
      if (name != first) views->emplace_back(name, "#pragma once\n#include \"" + first + "\"\n");
  }
  return folders;
}

}  // namespace

namespace {

// The spec's name, about, dimensions and dtypes.
void read_identity(const Reader& r, const ojson& j, KernelSpec& s) {
  if (j.contains("ktune_kernel_spec") && !(j["ktune_kernel_spec"].is_number_integer() && j["ktune_kernel_spec"].get<int>() == 1))
    r.fail("ktune_kernel_spec", "this ktune reads version 1 of the spec format");
  if (!j.contains("name")) r.fail("name", "missing");
  s.name = r.ident(j["name"], "name");
  if (j.contains("about")) s.about = r.str(j["about"], "about");

  if (!j.contains("dims")) r.fail("dims", "missing (the problem's named dimensions, e.g. [\"w\", \"h\"])");
  if (!j["dims"].is_array() || j["dims"].empty()) r.fail("dims", "expected a non-empty array of names");
  for (size_t i = 0; i < j["dims"].size(); ++i) s.dims.push_back(r.ident(j["dims"][i], "dims[" + std::to_string(i) + "]"));
  const ojson dtypes = j.contains("dtypes") ? j["dtypes"] : ojson::array({"f32"});
  if (!dtypes.is_array() || dtypes.empty()) r.fail("dtypes", "expected a non-empty array (f32, bf16, f16, f64)");
  for (size_t i = 0; i < dtypes.size(); ++i) {
    const std::string d = r.str(dtypes[i], "dtypes[" + std::to_string(i) + "]");
    if (d != "f32" && d != "bf16" && d != "f16" && d != "f64")
      r.fail("dtypes[" + std::to_string(i) + "]", "unknown dtype '" + d + "' (known: f32, bf16, f16, f64)");
    s.dtypes.push_back(parse_dtype(d));
  }
}

// The parameters and their domains, then every name an expression may read (KernelSpec::names).
void read_params(const Reader& r, const ojson& j, KernelSpec& s) {
  // A kernel with nothing to tune (only checked and timed) names one parameter of one value that
  // its source does not read: it reaches no -D, and every problem has that one config.
  const char* none = " (a kernel with nothing to tune: one parameter of one value, {\"UNTUNED\": [0]}, that the source "
                     "does not read)";
  if (!j.contains("params")) r.fail("params", std::string("missing") + none);
  const ojson& params = j["params"];
  if (!params.is_object() || params.empty()) r.fail("params", std::string("expected an object of parameter -> values, at least one") + none);
  for (const auto& [k, v] : params.items()) {
    if (!identifier(k)) r.fail("params." + k, "not a C identifier");
    s.params.push_back({k, read_values(r, v, "params." + k)});
  }
  s.names.clear();
  for (const auto& p : s.params) s.names.push_back(p.name);
  for (const auto& d : s.dims) {
    if (std::find(s.names.begin(), s.names.end(), d) != s.names.end()) r.fail("dims", "'" + d + "' is a parameter too");
    s.names.push_back(d);
  }
  for (const auto& b : kSpecBuiltins) {
    if (std::find(s.names.begin(), s.names.end(), b) != s.names.end())
      r.fail("params", "'" + b + "' is a name ktune gives every expression (a device or problem value)");
    s.names.push_back(b);
  }
  for (size_t i = 0; i < s.dims.size(); ++i)
    if (std::count(s.dims.begin(), s.dims.end(), s.dims[i]) > 1) r.fail("dims[" + std::to_string(i) + "]", "'" + s.dims[i] + "' repeated");
}

// How configs reach the compile: parameters and dimensions as defines or not, include folders,
// the sources (with the text they hash into the version), options, extra defines.
void read_compile(Reader& r, const ojson& j, KernelSpec& s, std::string* hashed) {
  auto choice = [&](const char* field, const char* a, const char* b, bool deflt) {
    if (!j.contains(field)) return deflt;
    const std::string v = r.str(j[field], field);
    if (v != a && v != b) r.fail(field, "'" + v + "' is neither " + a + " nor " + b);
    return v == a;
  };
  s.params_as_defines = choice("params_as", "defines", "template", true);
  s.dims_as_defines = choice("dims_as", "defines", "args", false);

  std::vector<std::string> incs;
  const size_t first_include = s.options.size();
  if (j.contains("include_dirs")) {
    const ojson& v = j["include_dirs"];
    if (!v.is_array()) r.fail("include_dirs", "expected an array of directories");
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string at = "include_dirs[" + std::to_string(i) + "]";
      fs::path p(r.str(v[i], at));
      if (p.is_relative()) p = fs::path(r.dir()) / p;
      std::error_code ec;
      if (!fs::is_directory(p, ec)) r.fail(at, "'" + p.string() + "' is not a directory");
      incs.push_back(p.lexically_normal().string());
      s.options.push_back("--include-path=" + incs.back());
    }
  }
  // Include folders and headers the options name: followed as include_dirs are; a header
  // included before the sources (--pre-include) is not read, so the text is not whole.
  std::vector<std::string> option_incs = incs;
  // And the macros the options define (-D, --define-macro=), with the spec's `defines`: the
  // compile's own, which decide the sources' #if groups as NVRTC reads them.
  std::map<std::string, std::string> command_line;
  if (j.contains("options") && j["options"].is_array())
    for (const auto& o : j["options"]) {
      if (!o.is_string()) continue;
      const std::string t = o.get<std::string>();
      for (const char* flag : {"--include-path=", "-I"})
        if (t.rfind(flag, 0) == 0 && t.size() > std::strlen(flag)) {
          fs::path d(t.substr(std::strlen(flag)));
          if (d.is_relative()) d = fs::path(r.dir()) / d;
          option_incs.push_back(d.lexically_normal().string());
        }
      if (t.rfind("-include", 0) == 0 || t.rfind("--pre-include", 0) == 0) s.compiled_text_whole = false;
      if (const std::string d = macro_of_option(t); !d.empty()) {
        const size_t eq = d.find('=');
        command_line[d.substr(0, eq)] = eq == std::string::npos ? "1" : d.substr(eq + 1);
      }
    }
  if (j.contains("host_code")) {
    const std::string h = r.str(j["host_code"], "host_code");
    if (h != "skip" && h != "compile") r.fail("host_code", "'" + h + "' is neither skip (blank the sources' host functions) nor compile");
    s.skip_host_code = h == "skip";
  }
  if (!j.contains("sources")) r.fail("sources", "missing (the .cu file(s), relative to the spec)");
  // The spec's `defines` too (checked below; a value that is a number read as it, another's unknown).
  if (j.contains("defines") && j["defines"].is_object())
    for (const auto& [k, v] : j["defines"].items())
      command_line[k] = v.is_number_integer() ? std::to_string(v.get<long long>()) : "";
  std::vector<std::pair<std::string, std::string>> project_views;
  std::set<std::string> outside;
  const std::vector<std::string> source_dirs = read_sources(r, s, j["sources"], hashed, option_incs, &project_views, &outside, command_line);
  // __int128, which nvcc takes in device code on Linux and NVRTC only when asked (Transformer
  // Engine's ptx.cuh, as __uint128_t): asked where the text names it.
  for (const char* w : {"__int128", "__int128_t", "__uint128_t"})
    if (find_word(s.compiled_text, w) != std::string::npos) {
      s.options.push_back("--device-int128");
      break;
    }
  // MSVC's __FUNCSIG__, GCC's __PRETTY_FUNCTION__: a project's branch for compilers other than
  // GCC, which NVRTC (defining no __GNUC__, where nvcc's device pass does) takes, may spell one by
  // the other (lmdeploy's macro.h: `#define __PRETTY_FUNCTION__ __FUNCSIG__`, then libcu++'s assert
  // names an undefined __FUNCSIG__). Defined as GCC's where the text names it and defines it nowhere.
  if (find_word(s.compiled_text, "__FUNCSIG__") != std::string::npos && s.compiled_text.find("define __FUNCSIG__") == std::string::npos)
    s.options.push_back("-D__FUNCSIG__=__PRETTY_FUNCTION__");
  // A quoted #include is looked for beside the file that includes it first, as nvcc does; NVRTC
  // compiles the sources as one text that has no folder, so theirs lead the include path.
  std::vector<std::string> lead;
  for (const auto& d : source_dirs)
    if (std::find(lead.begin(), lead.end(), "--include-path=" + d) == lead.end()) lead.push_back("--include-path=" + d);
  s.options.insert(s.options.begin() + std::ptrdiff_t(first_include), lead.begin(), lead.end());
  // NVRTC has no standard library headers: ktune's stand in for those the spec's own folders do
  // not hold (in memory, NVRTC would find them before any folder); and for CUDA's headers that
  // hold host code (cuda.h, cub/cub.cuh), device code's view of them (a folder of the spec that is
  // the toolkit's own holds the toolkit's, which is what the view is made from).
  s.std_headers.clear();
  const std::string toolkit = cuda_include_dir();
  auto own = [&](const std::string& name) {
    for (const auto& dirs : {std::cref(source_dirs), std::cref(option_incs)})
      for (const auto& d : dirs.get()) {
        std::error_code ec;
        const fs::path p = fs::path(d) / name;
        // A file, not a folder of that name (bevfusion's spconv include/utility/, beside which
        // <utility> is still the standard one: a compiler's search skips folders).
        if (fs::is_regular_file(p, ec) && !in_toolkit(p)) return true;
      }
    return false;
  };
  for (const auto& h : nvrtc_std_headers())
    if (!own(h.first)) s.std_headers.push_back(h);
  // A CCCL header the include path finds in a copy of CCCL the project carries: its views (CUB's
  // device-wide headers, Thrust's host side) are made from that copy, so that they agree with the
  // rest of it; the toolkit's otherwise. Only CUB's and Thrust's names have such views: the others
  // (cuda.h, the host libraries') need no look along the include path.
  auto cccl_copy_of = [&](const std::string& name) {
    if (name.rfind("cub/", 0) != 0 && name.rfind("thrust/", 0) != 0) return toolkit;
    for (const auto& dirs : {std::cref(source_dirs), std::cref(option_incs)})
      for (const auto& d : dirs.get()) {
        std::error_code ec;
        const fs::path p = fs::path(d) / name;
        if (!fs::is_regular_file(p, ec)) continue;
        const std::string root = cccl_copy_root(p);
        return root.empty() || in_toolkit_folder(p) ? toolkit : root;
      }
    return toolkit;
  };
  // The toolkit's views the sources reach (and those the views include in turn: cublas_v2.h's
  // cublas_api.h), only those: each is a text every compile request carries.
  std::vector<std::string> reach(outside.begin(), outside.end());
  for (std::set<std::string> added; !reach.empty();) {
    const std::string name = reach.back();
    reach.pop_back();
    const std::string* view = nvrtc_toolkit_view(cccl_copy_of(name), name);
    if (!view || own(name) || !added.insert(name).second) continue;
    // A toolkit header's include of another reaches the toolkit's file, as under nvcc, not a
    // project header of that name that the include path puts first (the sources' folders lead
    // it): Transformer Engine's util/cuda_runtime.h beside a source, which nccl.h's
    // <cuda_runtime.h> found. The toolkit's, by its path, where it has no view.
    std::map<std::string, std::string> shadowed;
    for (const auto& inc : includes_of(*view)) {
      reach.push_back(inc.first);
      std::error_code ec;
      if (inc.second && own(inc.first) && !nvrtc_toolkit_view(toolkit, inc.first) && fs::is_regular_file(toolkit + "/" + inc.first, ec))
        shadowed.emplace(inc.first, toolkit + "/" + inc.first);
    }
    s.std_headers.emplace_back(name, shadowed.empty() ? *view : with_include_names(*view, shadowed, true));
  }
  // With host code skipped, a PyTorch extension's file as it is: PyTorch's and pybind11's headers
  // stand in (core/nvrtc_std.h, nvrtc_torch_stand_in); the extension's host functions that use
  // its API are blanked, and device code keeps PyTorch's types (at::Half, c10::complex).
  if (s.skip_host_code) {
    bool torch_types = false;
    auto has = [&](const std::string& name) {
      return std::any_of(s.std_headers.begin(), s.std_headers.end(), [&](const auto& h) { return h.first == name; });
    };
    for (const auto& name : outside) {
      const bool torch = torch_header(name);
      if ((torch || name.rfind("pybind11/", 0) == 0 || name == "Python.h") && !own(name) && !has(name)) {
        s.std_headers.emplace_back(name, nvrtc_torch_stand_in(name));
        torch_types = torch_types || torch;
      }
    }
    if (torch_types && !has(kTorchDeviceTypesHeader)) s.std_headers.emplace_back(kTorchDeviceTypesHeader, nvrtc_torch_device_types());
  }
  for (const auto& h : project_views) { // the project's own header, its host code skipped
    s.std_headers.erase(std::remove_if(s.std_headers.begin(), s.std_headers.end(), [&](const auto& o) { return o.first == h.first; }),
                        s.std_headers.end());
    s.std_headers.push_back(h);
  }
  if (j.contains("options")) {
    const ojson& v = j["options"];
    if (!v.is_array()) r.fail("options", "expected an array of NVRTC options");
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string o = r.str(v[i], "options[" + std::to_string(i) + "]");
      if (o.rfind("-arch", 0) == 0 || o.rfind("--gpu-architecture", 0) == 0)
        r.fail("options[" + std::to_string(i) + "]", "the arch is the device's; ktune sets it");
      // The compile refuses a source that redefines a -D macro by NVRTC's warning #47.
      const bool suppress = o.find("diag-suppress") != std::string::npos || o.find("diag_suppress") != std::string::npos;
      if (o == "-w" || o == "--disable-warnings" || (suppress && o.find("47") != std::string::npos))
        r.fail("options[" + std::to_string(i) + "]", "'" + o + "' hides NVRTC's warning #47, by which ktune refuses a "
                                                     "source that redefines a macro the compile sets (a config's value "
                                                     "would be ignored); suppress other warnings by number");
      // -default-device compiles unannotated functions as the device's: the helpers skip blanks.
      if (s.skip_host_code && (o == "-default-device" || o == "--device-as-default-execution-space"))
        r.fail("host_code", "skip blanks the functions without __device__, which " + o + " (in options) compiles as device functions: choose one");
      s.options.push_back(o);
    }
  }
  if (j.contains("defines")) {
    r.known_fields(j["defines"], "defines", {});
    for (const auto& [k, v] : j["defines"].items()) {
      if (!identifier(k)) r.fail("defines." + k, "not a C identifier");
      if (std::find(s.names.begin(), s.names.end(), k) != s.names.end())
        r.fail("defines." + k, "'" + k + "' is a parameter, a dimension, a loop's counter or a name ktune gives every expression");
      static const char* kReserved[] = {"min", "max", "abs", "floor", "ceil", "ceil_div", "round_up", "sqrt", "log2",
                                        "True", "False", "and", "or", "not", "in", "if", "else"};
      for (const char* w : kReserved)
        if (k == w) r.fail("defines." + k, "'" + k + "' is a function or word of the expressions: name the define otherwise");
      s.defines.emplace_back(k, r.expr(v, "defines." + k, s.names));
      refuse_loop_reads(r, s, s.defines.back().second, "defines." + k);
      // A define reaches the compile, the same for every GPU of an arch: the device's values are
      // the constraints' and the launch's (a grid, a scalar, a `when` read them there).
      for (size_t n : s.defines.back().second.reads())
        if (s.device_name(n))
          r.fail("defines." + k, "'" + s.defines.back().second.text() + "' reads " + s.names[n] +
                                     ", a device value: a define is compiled in, the same for every GPU of an arch; read " +
                                     s.names[n] + " in a constraint, a grid, a computed scalar or a when instead");
      r.add_macro(k, s.defines.back().second.text());
    }
  }
}

// The spec's arch, read before its sources: the reading of their host code compares __CUDA_ARCH__
// with it.
void read_arch(const Reader& r, const ojson& j, KernelSpec& s) {
  if (j.contains("arch")) {
    const std::string a = r.str(j["arch"], "arch");
    try {
      s.min_arch = arch_number(a); // sm_NN or sm_NNN, an optional a
    } catch (const UsageError&) {
    }
    if (!s.min_arch || a[3] == '0')
      r.fail("arch", "expected sm_<number>, the oldest arch the kernel needs (\"sm_80\"), or with an a, an arch-specific "
                     "target (\"sm_90a\": wgmma, setmaxnreg), not '" + a + "'");
    s.arch_specific = a.back() == 'a';
    if (s.arch_specific && s.min_arch < 90) r.fail("arch", "'" + a + "': arch-specific targets begin at sm_90a");
  }
}

void read_constraints(const Reader& r, const ojson& j, KernelSpec& s) {
  for (const char* field : {"constraints", "restrictions"}) {
    if (!j.contains(field)) continue;
    const ojson& v = j[field];
    if (!v.is_array()) r.fail(field, "expected an array of expressions");
    for (size_t i = 0; i < v.size(); ++i) {
      s.constraints.push_back(r.expr(v[i], std::string(field) + "[" + std::to_string(i) + "]", s.names));
      refuse_loop_reads(r, s, s.constraints.back(), std::string(field) + "[" + std::to_string(i) + "]");
    }
  }
  if (j.contains("max_threads")) {
    const double m = r.number(j["max_threads"], "max_threads");
    if (m < 1 || m != double(int(m))) r.fail("max_threads", "expected a positive integer");
    s.max_threads = int(m);
  }
}

// check: the reference (a kernel and its launch, or a config of the kernel itself) and the
// tolerances every output gets where it names none; or the opt-out and its reason.
// A kernel run beside the tuned one (the check's reference, the baseline): a kernel of the
// source with its own launch, or a config of the kernel itself; its config is `config`, else the
// spec's default, else each parameter's first value.
void read_kernel_run(const Reader& r, const KernelSpec& s, const ojson& o, const std::string& path, const std::string& kernel,
                     std::vector<SpecStep>& steps, std::vector<SpecNode>& order, Config& config, std::vector<SpecWhile>* whiles) {
  r.known_fields(o, path, {"kernel", "launch", "config"});
  if (o.contains("kernel") || o.contains("launch")) {
    if (!o.contains("launch")) r.fail(path + ".launch", "missing (grid and block of the kernel)");
    const std::string k = o.contains("kernel") ? r.str(o["kernel"], path + ".kernel") : kernel;
    steps = read_steps(r, s, o["launch"], path + ".launch", k, &order, whiles);
  } else {
    if (!o.contains("config")) r.fail(path, "give a kernel and its launch, or a config of the kernel itself");
    steps = s.steps; // a named config of the kernel itself
    order = s.order;
  }
  if (o.contains("config")) config = read_config(r, s, o["config"], path + ".config");
  else if (!s.default_config.items().empty()) config = s.default_config;
  else
    for (const auto& p : s.params) config.set(p.name, p.values.front());
}

// Setup or check.post: kernels of the source with their own launch (a config of the kernel under
// test makes no inputs and shapes no outputs). They take the caller's buffers, never a temporary:
// the kernel's own scratch, which they do not get.
void read_side_kernels(const Reader& r, const KernelSpec& s, const ojson& o, const std::string& path, const std::string& kernel,
                       std::vector<SpecStep>& steps, std::vector<SpecNode>& order, Config& config, std::vector<SpecWhile>* whiles) {
  if (!o.is_object() || !o.contains("launch"))
    r.fail(path, "expected {\"kernel\": ..., \"launch\": ...}: kernels of the source with their launch");
  const size_t first_while = whiles->size();
  read_kernel_run(r, s, o, path, kernel, steps, order, config, whiles);
  for (const SpecStep& st : steps)
    for (int i : s.step_args(st.args)) {
      if (s.args[size_t(i)].buffer && s.args[size_t(i)].intent == SpecArg::temp)
        r.fail(path, "a step passes '" + s.args[size_t(i)].name + "', a temporary, which only the kernel gets; give each step its args");
      for (const SpecArg::Field& f : s.args[size_t(i)].fields) // nor through a struct
        if (f.buffer >= 0 && s.args[size_t(f.buffer)].intent == SpecArg::temp)
          r.fail(path, "a step passes " + std::string(s.args[size_t(i)].kind_name()) + " '" + s.args[size_t(i)].name +
                           "', which points to '" + s.args[size_t(f.buffer)].name + "', a temporary, which only the kernel gets");
    }
  // Nor does a loop of theirs read or reset one: no kernel of theirs could write it.
  for (size_t k = first_while; k < whiles->size(); ++k)
    for (int i : (*whiles)[k].buffers_read(s.names.size()))
      if (s.args[size_t(i)].intent == SpecArg::temp)
        r.fail(path, "a loop's condition reads '" + s.args[size_t(i)].name + "', a temporary, which only the kernel gets");
  std::function<void(const std::vector<SpecNode>&)> resets = [&](const std::vector<SpecNode>& nodes) {
    for (const SpecNode& n : nodes) {
      if (!n.resets.empty())
        r.fail(path, "a loop resets '" + s.args[size_t(n.resets[0])].name + "', a temporary, which only the kernel gets");
      resets(n.body);
    }
  };
  resets(order);
}

// {"answer": {"y": "expected/y_{n}.npy", ...}}: every output's expected values, from a file (one per
// problem with placeholders), for inputs that are the same at every check: no input is random.
void read_answers(const Reader& r, KernelSpec& s, const ojson& v) {
  if (!v.is_object() || v.empty()) r.fail("check.answer", "expected {\"output name\": \"file\", ...}");
  s.answers = true;
  for (const auto& [name, file] : v.items()) {
    const std::string at = "check.answer." + name;
    auto it = std::find_if(s.args.begin(), s.args.end(), [&](const SpecArg& a) { return a.name == name; });
    if (it == s.args.end() || !it->checked()) r.fail(at, "'" + name + "' is not an output (intent out or inout) of the spec");
    ojson f = file.is_string() ? ojson{{"file", file}} : file;
    if (!f.is_object() || !f.contains("file")) r.fail(at, "expected a file name, or {\"file\": ..., \"raw_dtype\": ...}");
    r.known_fields(f, at, {"file", "raw_dtype"});
    read_file_fill(r, f, at, s.dims, it->answer);
  }
  for (const SpecArg& a : s.args) {
    if (a.checked() && a.answer.kind != SpecFill::from_file) r.fail("check.answer", "no answer for the output '" + a.name + "'");
    if (a.buffer && a.intent != SpecArg::out && a.intent != SpecArg::temp &&
        (a.fill.kind == SpecFill::random || a.fill.kind == SpecFill::permutation))
      r.fail("check.answer", "'" + a.name + "' is filled at random: answers need every input fixed (a file, zeros, ones, ramp or a value)");
  }
}

void read_check(const Reader& r, const ojson& j, KernelSpec& s, const std::string& kernel) {
  if (!j.contains("check")) r.fail("check", "missing: a reference ({\"reference\": ...}) or an explicit {\"none\": \"why\"}");
  const ojson& c = j["check"];
  r.known_fields(c, "check", {"reference", "answer", "none", "atol", "rtol", "post"});
  if (int(c.contains("none")) + int(c.contains("reference")) + int(c.contains("answer")) != 1)
    r.fail("check", "give exactly one of reference, answer and none");
  if (c.contains("none")) {
    if (c.contains("post")) r.fail("check.post", "post steps shape outputs for a compare; check.none compares nothing");
    s.check = false;
    s.no_check_reason = r.str(c["none"], "check.none");
    if (s.no_check_reason.empty()) r.fail("check.none", "say why the kernel is not checked");
  } else {
    if (c.contains("reference"))
      read_kernel_run(r, s, c["reference"], "check.reference", kernel, s.reference_steps, s.reference_order, s.reference_config, &s.whiles);
    else read_answers(r, s, c["answer"]);
    if (c.contains("post")) {
      s.has_post = true;
      read_side_kernels(r, s, c["post"], "check.post", kernel, s.post_steps, s.post_order, s.post_config, &s.whiles);
    }
    for (const char* t : {"atol", "rtol"}) {
      if (!c.contains(t)) continue;
      double x = -1;
      Expr e;
      read_tolerance(r, s, c[t], std::string("check.") + t, x, e);
      for (auto& a : s.args) {
        if (!a.checked()) continue;
        double& v = std::string(t) == "atol" ? a.atol : a.rtol;
        Expr& ve = std::string(t) == "atol" ? a.atol_at : a.rtol_at;
        if (v < 0 && ve.empty()) v = x, ve = e; // an output's own tolerance wins
      }
    }
  }
}

void read_counts(const Reader& r, const ojson& j, KernelSpec& s) {
  for (const char* field : {"flops", "bytes"}) {
    if (!j.contains(field)) continue;
    Expr e = r.expr(j[field], field, s.names);
    for (size_t n : e.reads())
      if (n < s.params.size() || n >= s.first_device_name())
        r.fail(field, "'" + e.text() + "' reads " + s.names[n] + ": counts follow the problem only");
    (std::string(field) == "flops" ? s.flops : s.bytes) = e;
  }
}

// Steps that name their arguments (launch[i].args) may leave one out; every argument must still
// reach some kernel (of the launch, the reference or the baseline) or fill a symbol (a filter in
// __constant__ memory, as Kernel Tuner's cmem_args, need not be a kernel's argument too), or it is
// a mistake.
void check_args_taken(const Reader& r, const KernelSpec& s) {
  std::vector<bool> taken(s.args.size(), false);
  for (const SpecSymbol& y : s.symbols) {
    if (y.from_arg >= 0) taken[size_t(y.from_arg)] = true;
    if (y.address_of >= 0) taken[size_t(y.address_of)] = true;
  }
  for (const auto* steps : {&s.steps, &s.reference_steps, &s.baseline_steps, &s.setup_steps, &s.post_steps})
    for (const SpecStep& st : *steps) {
      if (st.args.empty()) std::fill(taken.begin(), taken.end(), true);
      for (int i : st.args) taken[size_t(i)] = true;
    }
  // A struct a kernel takes reaches the buffers its fields point to (a texture's, a table's too).
  for (size_t i = 0; i < s.args.size(); ++i)
    if (taken[i])
      for (const SpecArg::Field& f : s.args[i].fields)
        if (f.buffer >= 0) taken[size_t(f.buffer)] = true;
  // A loop's swap passes each buffer of a pair where the other was: one taken takes both (a
  // struct's or table's pointer follows the swap into a temporary no step names).
  s.close_over_swaps(taken);
  // A buffer the host only reads back (a loop's condition, a grid, `when` or a scalar of values
  // reads it; a swap puts a kernel's data in it) is taken by those reads.
  for (const SpecWhile& w : s.whiles)
    for (int k : w.buffers_read(s.names.size())) taken[size_t(k)] = true;
  auto read_values = [&](const Expr& e) {
    for (size_t i : e.reads())
      if (i >= s.names.size()) taken[size_t(s.value_slots.at(i - s.names.size()))] = true;
  };
  for (const auto& g : s.value_grids)
    for (const Expr& e : g) read_values(e);
  for (const SpecArg& a : s.args)
    if (a.scalar()) read_values(a.value);
  for (size_t i = 0; i < s.args.size(); ++i)
    if (!taken[i])
      r.fail("args[" + std::to_string(i) + "]", "'" + s.args[i].name +
                                                     "' is in no launch step's args (nor a reference, baseline, setup or post step's, a "
                                                     "symbol's, a struct's, texture's or address table's, or a value a step or loop reads back)");
}

// With params_as "template" a parameter reaches a kernel only through {NAME} in a kernel's name
// or through an expression (a launch's geometry, a define, a size, a constraint): one that does
// neither would multiply the space by its values with the same kernels, timed again and again.
void check_params_used(const Reader& r, const KernelSpec& s) {
  // With params_as "defines", one the compiled text names is a -D it may read.
  std::vector<bool> used(s.params.size(), false);
  if (s.params_as_defines)
    for (size_t i = 0; i < s.params.size(); ++i) used[i] = s.reads_macro(s.params[i].name);
  auto read = [&](const Expr& e) {
    for (size_t i : e.reads())
      if (i < s.params.size()) used[i] = true;
  };
  for (const auto* steps : {&s.steps, &s.reference_steps, &s.baseline_steps})
    for (const SpecStep& st : *steps) {
      for (size_t i = 0; i < s.params.size(); ++i)
        if (st.kernel.find("{" + s.params[i].name + "}") != std::string::npos) used[i] = true;
      for (int d = 0; d < 3; ++d) read(st.grid[d]), read(st.block[d]), read(st.cluster[d]);
      read(st.smem);
      read(st.when); // a version's step where it holds ("qn > SMALL")
      read(st.programmatic_when); // a tuned programmatic launch ("PDL == 1")
      for (const Expr& e : st.within) read(e); // its loops' rounds ("VER == 2": a version's step)
      for (const Expr& e : st.arg_offsets) read(e); // a chunk a round of C elements
    }
  for (const Expr& e : s.constraints) read(e);
  for (const auto& [name, e] : s.defines) read(e);
  for (const SpecArg& a : s.args) {
    read(a.count), read(a.value);
    for (const SpecArg::Field& f : a.fields) {
      for (const Expr& e : f.values) read(e); // a struct's tile size
      for (const Expr& e : f.map.box) read(e); // the tile a map's load moves
      read(f.at);
    }
  }
  for (const SpecSymbol& y : s.symbols)
    if (y.planned) read(y.offset), read(y.count); // a tile of TILE elements
  for (const SpecWhile& w : s.whiles) read(w.cond); // at most MAXIT rounds
  for (size_t i = 0; i < s.params.size(); ++i)
    if (!used[i] && (!s.params_as_defines || s.params[i].values.size() > 1)) // one value: a harmless constant
      r.fail("params." + s.params[i].name,
             "reaches no kernel: " +
                 std::string(s.params_as_defines
                                 ? "neither the sources nor the headers ktune can read name it (its -D would go unread), "
                                   "nor does a kernel's name or an expression read it"
                                 : "with params_as \"template\" a parameter is used through {" + s.params[i].name +
                                       "} in a kernel's name or in an expression") +
                 "; as it is, it would multiply the space by " + std::to_string(s.params[i].values.size()) +
                 " with the same kernels");
}

} // namespace

KernelSpec parse_kernel_spec(const std::string& json, const std::string& origin, const std::string& base_dir) {
  Reader r(origin, base_dir);
  check_json_depth(json, origin);
  ojson j;
  try {
    j = ojson::parse(json);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(origin + ": not valid JSON: " + e.what());
  }
  r.known_fields(j, "", {"$schema", "ktune_kernel_spec", "name", "about", "sources", "include_dirs", "kernel", "dims", "dtypes",
                         "params", "params_as", "dims_as", "defines", "constraints", "restrictions", "max_threads", "host_code",
                         "arch", "launch", "args", "symbols", "check", "baseline", "setup", "flops", "bytes", "default", "options"});
  KernelSpec s;
  s.path = origin, s.dir = base_dir;
  read_identity(r, j, s);
  read_params(r, j, s);
  read_loop_names(r, j, s);
  std::string hashed = json; // the version hashes the spec's text and every source it compiles
  read_arch(r, j, s);
  read_compile(r, j, s, &hashed);
  read_constraints(r, j, s);
  const std::string kernel = j.contains("kernel") ? r.str(j["kernel"], "kernel") : "";
  if (!j.contains("args")) r.fail("args", "missing (the kernel's arguments, in order)");
  read_args(r, s, j["args"]);
  if (std::none_of(s.args.begin(), s.args.end(), [](const SpecArg& a) { return a.checked(); }))
    r.fail("args", "no argument is an output (intent out or inout): nothing to check or to time against");
  if (!j.contains("launch")) r.fail("launch", "missing (grid and block, as expressions)");
  s.steps = read_steps(r, s, j["launch"], "launch", kernel, &s.order, &s.whiles);
  if (j.contains("symbols")) read_symbols(r, s, j["symbols"]);
  if (j.contains("default")) s.default_config = read_config(r, s, j["default"], "default");
  read_check(r, j, s, kernel);
  if (j.contains("baseline")) {
    s.has_baseline = true;
    read_kernel_run(r, s, j["baseline"], "baseline", kernel, s.baseline_steps, s.baseline_order, s.baseline_config, &s.whiles);
  }
  if (j.contains("setup")) {
    s.has_setup = true;
    read_side_kernels(r, s, j["setup"], "setup", kernel, s.setup_steps, s.setup_order, s.setup_config, &s.whiles);
  }
  read_counts(r, j, s);
  for (auto* steps : {&s.steps, &s.reference_steps, &s.baseline_steps, &s.setup_steps, &s.post_steps})
    for (SpecStep& st : *steps)
      if (s.reads_values(st.grid[0]) || s.reads_values(st.grid[1]) || s.reads_values(st.grid[2]) ||
          (!st.when.empty() && s.reads_values(st.when))) {
        // The launch-time parts: the grid (its axes that read values; the others the same at the
        // plan), and `when` (empty: none).
        st.value_grid = int(s.value_grids.size());
        s.value_grids.push_back({st.grid[0], st.grid[1], st.grid[2], st.when});
      }
  check_args_taken(r, s);
  check_loop_scalars(r, s);
  check_params_used(r, s);
  s.version = fnv1a_hex(hashed).substr(0, 8);
  s.op = s.name + "@" + s.version;
  // The compile cache keys on the source's text, and the headers it includes are not in it: the
  // version, which hashes them, is (a changed header is another cubin).
  s.source = "// ktune kernel spec " + s.op + "\n" + nvrtc_nvcc_prelude(s.compiled_text) + s.source;
  // max_of / min_of / sum_of reduce on the GPU, in a kernel compiled with the spec's own.
  s.whole_reads = std::any_of(s.whiles.begin(), s.whiles.end(), [](const SpecWhile& w) {
    return std::any_of(w.reads.begin(), w.reads.end(), [](SpecWhile::Read r) { return r != SpecWhile::first; });
  });
  if (s.whole_reads) s.source += "\n#include \"spec_reduce.cuh\" // ktune_spec_reduce: max_of, min_of, sum_of\n";
  for (const auto* steps : {&s.steps, &s.reference_steps, &s.baseline_steps, &s.setup_steps, &s.post_steps})
    for (const SpecStep& st : *steps) s.constant_probes = s.constant_probes || !st.smem_constant.empty() || !st.block_constant.empty();
  if (s.constant_probes) s.source += std::string("\n") + kConstantProbe + "\n";
  return s;
}

namespace {

// The file a per-problem fill names at p: the placeholders of the name as written (checked when
// the spec loaded) filled, then its folder; throws UsageError when it is not there.
std::string fill_path_at(const KernelSpec& s, const SpecFill& f, const Problem& p) {
  std::string name_at;
  for (size_t i = 0; i < f.file.size(); ++i) {
    const size_t end = f.file[i] == '{' ? f.file.find('}', i) : std::string::npos;
    if (end == std::string::npos) {
      name_at += f.file[i];
      continue;
    }
    const std::string name = f.file.substr(i + 1, end - i - 1);
    const auto d = std::find(s.dims.begin(), s.dims.end(), name);
    name_at += name == "dtype" ? std::string(to_string(p.dtype)) : std::to_string(p.dims.at(size_t(d - s.dims.begin())));
    i = end;
  }
  const fs::path rel(name_at);
  const std::string file = (rel.is_relative() ? fs::path(s.dir) / rel : rel).lexically_normal().string();
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw UsageError(s.path + ": the file of " + p.key() + " ('" + f.file + "' at this problem) '" + file + "' does not exist");
  return file;
}

} // namespace

double fill_value_at(const SpecFill& fill, const Problem& p) {
  if (fill.value_at.empty()) return fill.value;
  const double v = fill.value_at.eval(std::vector<double>(p.dims.begin(), p.dims.end()));
  if (!std::isfinite(v)) throw UsageError(fill.value_at.where() + ": the value '" + fill.value_at.text() + "' at " + p.key() + " is not finite");
  return v;
}

double tolerance_at(const KernelSpec& s, const SpecArg& a, bool atol, const Problem& p) {
  const Expr& e = atol ? a.atol_at : a.rtol_at;
  if (e.empty()) return atol ? a.atol : a.rtol;
  const double v = e.eval(s.problem_values(p));
  if (!(v >= 0) || !std::isfinite(v))
    throw UsageError(e.where() + ": " + (atol ? "atol" : "rtol") + " '" + e.text() + "' of " + a.name + " at " + p.key() + " is " +
                     std::to_string(v) + ": it must be finite and >= 0");
  return v;
}

SpecFill fill_at(const KernelSpec& s, const SpecFill& fill, const Problem& p) {
  if (!fill.perm_at.empty()) {
    SpecFill f = fill;
    const double n = fill.perm_at.eval(std::vector<double>(p.dims.begin(), p.dims.end()));
    if (!(n >= 0) || n != std::floor(n) || n > 9.0e15) // 0: an empty problem's (its buffer holds nothing)
      throw UsageError(fill.perm_at.where() + ": the permutation's range '" + fill.perm_at.text() + "' at " + p.key() + " is " +
                       std::to_string(n) + ": it must be a whole number >= 0");
    f.perm_n = int64_t(n);
    return f;
  }
  if (!fill.value_at.empty()) {
    SpecFill f = fill;
    f.value = fill_value_at(fill, p);
    return f;
  }
  if (!fill.start_at.empty() || !fill.step_at.empty()) { // a ramp of the problem's
    SpecFill f = fill;
    const std::vector<double> v(p.dims.begin(), p.dims.end());
    for (const Expr* e : {&fill.start_at, &fill.step_at}) {
      if (e->empty()) continue;
      const double x = e->eval(v);
      if (!std::isfinite(x)) throw UsageError(e->where() + ": '" + e->text() + "' at " + p.key() + " is not finite");
      (e == &fill.start_at ? f.start : f.step) = x;
    }
    return f;
  }
  if (!fill.lo_at.empty()) { // a random range of the problem's
    SpecFill f = fill;
    const std::vector<double> v(p.dims.begin(), p.dims.end());
    f.lo = fill.lo_at.eval(v), f.hi = fill.hi_at.eval(v);
    if (!(f.lo < f.hi))
      throw UsageError(fill.lo_at.where() + ": the random range [" + std::to_string(f.lo) + ", " + std::to_string(f.hi) +
                       ") at " + p.key() + " is empty: lo must be below hi");
    return f;
  }
  if (fill.pattern.empty()) return fill;
  SpecFill f = fill;
  const std::string file = fill_path_at(s, fill, p);
  f.file = file;
  read_fill_file([&](const std::string& m) { throw UsageError(s.path + ": '" + file + "': " + m); }, file, f);
  return f;
}

namespace {

// The elements a per-problem file holds, from its size and (a .npy) its header alone: what a
// tuning run checks before it starts, without reading files of gigabytes that the runner reads
// again at their problem.
size_t file_elements(const std::string& file, const SpecFill& fill, const Fail& fail) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(file, ec);
  if (ec) fail("cannot read its size: " + ec.message());
  ElemType type = fill.file_type;
  size_t at = 0;
  if (!fill.raw) {
    std::ifstream in(file, std::ios::binary);
    if (!in) fail("cannot be opened");
    std::string head(12, '\0'); // the header's length, then the header
    in.read(head.data(), 12);
    head.resize(size_t(in.gcount()));
    size_t start = 0, end = 0;
    npy_header_span(fail, head, &start, &end);
    head.resize(size_t(std::min<uintmax_t>(end, size))); // a short file: npy_header says so
    in.clear();
    in.seekg(0);
    in.read(head.data(), std::streamsize(head.size()));
    head.resize(size_t(in.gcount()));
    npy_header(fail, head, &type, &at);
  }
  const uintmax_t payload = size > at ? size - at : 0;
  if (payload % uintmax_t(elem_bytes(type)) != 0) fail("holds a partial element");
  return size_t(payload / uintmax_t(elem_bytes(type)));
}

} // namespace

void check_fill_files(const KernelSpec& s, const Problem& p) {
  const auto check = [&](const SpecFill& fill, int64_t count, const std::string& what) {
    if (fill.kind != SpecFill::from_file) return;
    size_t have = 0;
    std::string file = fill.file;
    if (fill.pattern.empty()) { // read when the spec loaded
      have = fill.data.size() / size_t(elem_bytes(fill.file_type));
    } else {
      file = fill_path_at(s, fill, p);
      have = file_elements(file, fill, [&](const std::string& m) { throw UsageError(s.path + ": '" + file + "': " + m); });
    }
    if (int64_t(have) < count)
      throw UsageError(s.path + ": " + what + " at " + p.key() + ": '" + file + "' holds " + std::to_string(have) +
                       " elements, the problem needs " + std::to_string(count));
    // A file named for this problem that holds more than the problem reads: the count's expression
    // and the data disagree (a CSR's nnz typed as a dimension, another size's file), and the kernel
    // would read a cut copy. One file for every problem may be longer: each reads its first elements.
    if (!fill.pattern.empty() && int64_t(have) > count)
      throw UsageError(s.path + ": " + what + " at " + p.key() + ": '" + file + "' holds " + std::to_string(have) +
                       " elements, the problem reads " + std::to_string(count) +
                       ": a file named for one problem must hold exactly what it reads");
  };
  for (size_t i = 0; i < s.args.size(); ++i) {
    const SpecArg& a = s.args[i];
    if (!a.buffer || a.intent == SpecArg::temp) continue; // no file fills a temporary
    const int64_t n = s.count_of(i, p);
    if (a.fill.kind == SpecFill::permutation) // distinct values: no more than the range and the type hold
      check_permutation(fill_at(s, a.fill, p).perm_n, size_t(n), a.elem(p), s.path + ": the fill of '" + a.name + "' at " + p.key());
    check(a.fill, n, "the fill of '" + a.name + "'");
    // A tolerance that reads the problem: finite and >= 0 here, or the run would fail every config.
    if (a.checked()) tolerance_at(s, a, true, p), tolerance_at(s, a, false, p);
    check(a.answer, n, "the answer of '" + a.name + "'");
  }
  for (size_t k = 0; k < s.symbols.size(); ++k)
    if (s.symbols[k].from_arg < 0 && s.symbols[k].address_of < 0)
      check(s.symbols[k].fill, s.symbol_count(k, p), "the fill of symbol '" + s.symbols[k].name + "'");
  // The values the problem alone decides: a computed scalar or a struct's field that its type
  // cannot hold at p (a u32 of 2^32) fails every config's plan; said here, once.
  for (size_t i = 0; i < s.args.size(); ++i) {
    const SpecArg& a = s.args[i];
    if (a.is_texture()) s.texture_at(i, p); // its shape fits its buffer
    else if (a.is_table()) s.table_at(i, p); // its entries point into its buffer
    else if (a.is_struct()) s.struct_bytes_at(i, p, Config()); // its fields that read no parameter
    else if (a.scalar() && !a.value.empty() && !a.follows_config && !a.set_at_launch()) s.scalar_value(i, p);
  }
}

bool parse_elem_type(const std::string& s, ElemType* out) {
  for (const auto& n : kTypeNames)
    if (s == n.name) return *out = n.type, true;
  return false;
}

} // namespace ktune
