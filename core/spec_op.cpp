// A kernel spec as an op: its KernelSpec's evaluations (values, sizes, defines, launch plans),
// the one family and the OpInfo it registers (runner "spec"), and load_kernel_spec.
#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include "core/half.h"
#include "core/kernel_spec.h"
#include "core/text_file.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "ktune/kernel_spec.h"

namespace ktune {

const char* to_string(ElemType t) {
  static const char* const names[] = {"f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8"};
  return names[int(t)];
}

int elem_bytes(ElemType t) {
  static const int bytes[] = {8, 4, 2, 2, 8, 4, 2, 1, 8, 4, 2, 1};
  return bytes[int(t)];
}

bool is_float(ElemType t) { return t == ElemType::f64 || t == ElemType::f32 || t == ElemType::f16 || t == ElemType::bf16; }

bool is_unsigned(ElemType t) { return t == ElemType::u8 || t == ElemType::u16 || t == ElemType::u32 || t == ElemType::u64; }

ElemType elem_type_of(DType d) {
  return d == DType::f16 ? ElemType::f16 : d == DType::bf16 ? ElemType::bf16 : d == DType::f64 ? ElemType::f64 : ElemType::f32;
}

namespace {

template <class T>
T load_as(const unsigned char* b, size_t i) {
  T v;
  std::memcpy(&v, b + i * sizeof(T), sizeof(T));
  return v;
}
template <class T>
void store_as(unsigned char* b, size_t i, T v) {
  std::memcpy(b + i * sizeof(T), &v, sizeof(T));
}
template <class T>
T saturate(double v) {
  const double r = std::nearbyint(v);
  if (std::isnan(r)) return T(0);
  if (r <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (r >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return T(r);
}

} // namespace

double load_elem(const unsigned char* b, size_t i, ElemType t) {
  switch (t) {
    case ElemType::f64: return load_as<double>(b, i);
    case ElemType::f32: return load_as<float>(b, i);
    case ElemType::f16: return half::from_f16(load_as<uint16_t>(b, i));
    case ElemType::bf16: return half::from_bf16(load_as<uint16_t>(b, i));
    case ElemType::i64: return double(load_as<int64_t>(b, i));
    case ElemType::i32: return load_as<int32_t>(b, i);
    case ElemType::i16: return load_as<int16_t>(b, i);
    case ElemType::i8: return load_as<int8_t>(b, i);
    case ElemType::u64: return double(load_as<uint64_t>(b, i));
    case ElemType::u32: return load_as<uint32_t>(b, i);
    case ElemType::u16: return load_as<uint16_t>(b, i);
    case ElemType::u8: return load_as<uint8_t>(b, i);
  }
  return 0;
}

void store_elem(unsigned char* b, size_t i, ElemType t, double v) {
  switch (t) {
    case ElemType::f64: return store_as<double>(b, i, v);
    case ElemType::f32: return store_as<float>(b, i, float(v));
    case ElemType::f16: return store_as<uint16_t>(b, i, half::to_f16(float(v)));
    case ElemType::bf16: return store_as<uint16_t>(b, i, half::to_bf16(float(v)));
    case ElemType::i64: return store_as<int64_t>(b, i, saturate<int64_t>(v));
    case ElemType::i32: return store_as<int32_t>(b, i, saturate<int32_t>(v));
    case ElemType::i16: return store_as<int16_t>(b, i, saturate<int16_t>(v));
    case ElemType::i8: return store_as<int8_t>(b, i, saturate<int8_t>(v));
    case ElemType::u64: return store_as<uint64_t>(b, i, saturate<uint64_t>(v));
    case ElemType::u32: return store_as<uint32_t>(b, i, saturate<uint32_t>(v));
    case ElemType::u16: return store_as<uint16_t>(b, i, saturate<uint16_t>(v));
    case ElemType::u8: return store_as<uint8_t>(b, i, saturate<uint8_t>(v));
  }
}

namespace {

uint64_t mix64(uint64_t z) { // splitmix64
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A counter-based generator: element i's value does not depend on the others, so a large buffer
// fills on every core, and the same seed gives the same data. The tuner fills on the GPU with
// its twin, ktune_uniform01 (kernel_templates/common/ktune_random.cuh), to the same bits.
double uniform01(uint64_t seed, uint64_t i) { return double(mix64(seed ^ mix64(i)) >> 11) * 0x1.0p-53; }

} // namespace

void check_permutation(int64_t n, size_t count, ElemType t, const std::string& what) {
  if (n < 0 || int64_t(count) > n)
    throw UsageError(what + ": a permutation of [0, " + std::to_string(n) + ") has no " + std::to_string(count) + " distinct elements");
  // Its values must stay distinct in the buffer's type: up to the last whole number a float holds
  // exactly (2 to the bits of its significand: 2^11 in f16, 2^8 in bf16, 2^24 in f32, 2^53 in
  // f64), within an integer type's range.
  const int bits = 8 * elem_bytes(t);
  const double exact = is_float(t) ? std::ldexp(1.0, t == ElemType::f16 ? 11 : t == ElemType::bf16 ? 8 : t == ElemType::f32 ? 24 : 53)
                                   : std::ldexp(1.0, is_unsigned(t) ? bits : bits - 1) - 1;
  if (n > 0 && double(n - 1) > exact)
    throw UsageError(what + ": a permutation of [0, " + std::to_string(n) + ") in " + to_string(t) + " elements: values past " +
                     std::to_string(int64_t(exact)) + " are not held exactly, and would collide"); // < 2^53 where it throws
}

std::vector<int64_t> spec_permutation(int64_t n, size_t count, uint64_t seed) {
  if (n < 0 || int64_t(count) > n)
    throw UsageError("a permutation of [0, " + std::to_string(n) + ") has no " + std::to_string(count) + " distinct elements");
  // A partial Fisher-Yates shuffle over the range, its swaps kept in a map when the range is far
  // larger than the count (slots of a cache of millions for a few hundred tokens).
  std::vector<int64_t> out(count);
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  if (n <= int64_t(4 * count + 1024)) {
    std::vector<int64_t> all(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) all[size_t(i)] = i;
    for (size_t i = 0; i < count; ++i) {
      const int64_t j = int64_t(i) + int64_t(rng() % uint64_t(n - int64_t(i)));
      std::swap(all[i], all[size_t(j)]);
      out[i] = all[i];
    }
    return out;
  }
  std::unordered_map<int64_t, int64_t> moved;
  auto at = [&](int64_t k) {
    auto it = moved.find(k);
    return it == moved.end() ? k : it->second;
  };
  for (size_t i = 0; i < count; ++i) {
    const int64_t j = int64_t(i) + int64_t(rng() % uint64_t(n - int64_t(i)));
    const int64_t vi = at(int64_t(i)), vj = at(j);
    out[i] = vj;
    moved[j] = vi;
  }
  return out;
}

std::vector<unsigned char> spec_fill_bytes(const SpecFill& f, ElemType t, size_t count, uint64_t seed) {
  std::vector<unsigned char> out(count * size_t(elem_bytes(t)));
  const size_t have = f.data.size() / size_t(elem_bytes(f.file_type));
  if (f.kind == SpecFill::from_file && have < count)
    throw UsageError("fill file '" + f.file + "' holds " + std::to_string(have) + " elements, " + std::to_string(count) +
                     " are needed");
  if (f.kind == SpecFill::permutation) {
    check_permutation(f.perm_n ? f.perm_n : int64_t(count), count, t, "a permutation fill");
    const std::vector<int64_t> perm = spec_permutation(f.perm_n ? f.perm_n : int64_t(count), count, seed);
    for (size_t i = 0; i < count; ++i) store_elem(out.data(), i, t, double(perm[i]));
    return out;
  }
  auto fill = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) {
      double v = 0;
      switch (f.kind) {
        case SpecFill::random: {
          // Rounded after the product, never fused into an fma (as -ffp-contract=fast does on
          // aarch64): the device fill (spec_check.cu) rounds it so.
          volatile double scaled = (f.hi - f.lo) * uniform01(seed, i);
          const double r = f.lo + scaled;
          v = is_float(t) && !f.integers ? r : std::floor(r);
          break;
        }
        case SpecFill::zeros: v = 0; break;
        case SpecFill::ones: v = 1; break;
        case SpecFill::ramp: {
          volatile double scaled = f.step * double(f.mod > 0 ? int64_t(i) % f.mod : int64_t(i)); // as the device rounds it
          v = f.start + scaled;
          break;
        }
        case SpecFill::constant: v = f.value; break;
        case SpecFill::from_file: v = load_elem(f.data.data(), i, f.file_type); break;
        case SpecFill::permutation: break; // above
      }
      store_elem(out.data(), i, t, v);
    }
  };
  // Tuning a problem of 2^28 elements fills it for every check: on all cores past a million.
  const size_t threads = count < (size_t(1) << 20) ? 1 : std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t k = 1; k < threads; ++k) pool.emplace_back(fill, count * k / threads, count * (k + 1) / threads);
  fill(0, count / threads);
  for (auto& th : pool) th.join();
  return out;
}

std::vector<double> KernelSpec::values(const Config& c, const Problem& p, const DeviceInfo& d) const {
  std::vector<double> v;
  v.reserve(names.size());
  for (const auto& prm : params) v.push_back(c.has(prm.name) ? c[prm.name] : 0);
  for (size_t i = 0; i < dims.size(); ++i) v.push_back(i < p.dims.size() ? double(p.dims[i]) : 0);
  // kSpecBuiltins' order
  v.push_back(p.align);
  v.push_back(element_bytes(p.dtype));
  v.push_back(unit_roundoff(p.dtype)); // dtype_eps: what a tolerance from the dtype's error analysis reads
  v.push_back(d.max_threads_per_block);
  v.push_back(d.max_smem_per_block_optin);
  v.push_back(d.sm_count);
  v.push_back(d.max_regs_per_block);
  v.push_back(d.arch.empty() ? 0 : d.arch_number());
  v.resize(names.size(), 0.0); // the loops' counters: 0 outside a launch of their steps
  return v;
}

namespace {
// What expressions of the problem and the config (launch plans, defines) see of the device:
// nothing; the family's constraints see the real one.
const DeviceInfo& no_device() {
  static const DeviceInfo d;
  return d;
}
} // namespace

std::vector<double> KernelSpec::problem_values(const Problem& p) const { return values(Config(), p, no_device()); }

std::vector<double> KernelSpec::arg_values(const SpecArg& a, const Config& c, const Problem& p) const {
  if (!a.follows_config) return problem_values(p);
  if (c.items().empty()) throw Error("internal: " + a.name + " follows the config, asked without one at " + p.key());
  return values(c, p, no_device());
}

int64_t KernelSpec::count_of(size_t arg, const Problem& p, const Config& c) const {
  const SpecArg& a = args.at(arg);
  return a.count.eval_integer(arg_values(a, c, p), 0, double(int64_t(1) << 50), "elements at " + p.key());
}

int64_t KernelSpec::checked_count(size_t arg, const Problem& p) const {
  const int64_t all = count_of(arg, p);
  const SpecArg& a = args.at(arg);
  if (a.check_count.empty()) return all;
  return std::min<int64_t>(all, a.check_count.eval_integer(problem_values(p), 0, double(int64_t(1) << 50), "elements checked at " + p.key()));
}

std::vector<int> SpecWhile::buffers_read(size_t names) const {
  std::vector<int> out;
  for (size_t i : cond.reads())
    if (i >= names && std::find(out.begin(), out.end(), slots.at(i - names)) == out.end()) out.push_back(slots.at(i - names));
  return out;
}

int64_t KernelSpec::symbol_count(size_t i, const Problem& p) const {
  if (symbols.at(i).planned) throw Error(path + ": symbol " + symbols[i].name + " is a slice its plan copies");
  return symbols.at(i).count.eval_integer(problem_values(p), 0, 1e12, "elements at " + p.key());
}

double KernelSpec::scalar_value(size_t arg, const Problem& p, const Config& c) const {
  const SpecArg& a = args.at(arg);
  if (a.value.empty()) return p.scalar(a.name);
  return scalar_from(arg, arg_values(a, c, p), (a.follows_config ? " (config " + c.to_json() + ", " : " (") + p.key() + ")");
}

namespace {

// e at v as integer type t holds it: a whole number in its range (a count that came out 4369.07
// is a spec's mistake, the last partial left out, not something to round); what for the error.
double whole_number_of(const Expr& e, ElemType t, const std::vector<double>& v, const std::string& what) {
  const int bits = 8 * elem_bytes(t);
  const bool no_sign = is_unsigned(t);
  const double lo = no_sign ? 0.0 : -std::ldexp(1.0, bits - 1);
  const double hi = std::min(std::ldexp(1.0, no_sign ? bits : bits - 1) - 1, 9.0e15); // 2^53: exact in a double
  return double(e.eval_integer(v, lo, hi, what));
}

} // namespace

double KernelSpec::scalar_from(size_t arg, const std::vector<double>& v, const std::string& context) const {
  const SpecArg& a = args.at(arg);
  if (is_float(a.scalar_type)) return a.value.eval(v);
  return whole_number_of(a.value, a.scalar_type, v, std::string("for ") + to_string(a.scalar_type) + " " + a.name + context);
}

std::vector<unsigned char> KernelSpec::struct_bytes_at(size_t arg, const Problem& p, const Config& c) const {
  const SpecArg& a = args.at(arg);
  // Without a config (a run's check of what the problem alone decides), the fields that read a
  // parameter are left 0.
  const bool problem_only = c.items().empty();
  const std::string context = (a.follows_config && !problem_only ? " (config " + c.to_json() + ", " : " (") + p.key() + ")";
  return struct_bytes_from(arg, problem_only ? problem_values(p) : values(c, p, no_device()), p, c, context, problem_only);
}

std::vector<unsigned char> KernelSpec::struct_bytes_from(size_t arg, const std::vector<double>& v, const Problem& p,
                                                         const Config& c, const std::string& context, bool problem_only) const {
  const SpecArg& a = args.at(arg);
  std::vector<unsigned char> out(a.struct_bytes, 0);
  // What a run's check before it cannot know: a parameter's value, a loop's counter.
  auto reads_param = [&](const Expr& e) {
    const auto r = e.reads();
    return std::any_of(r.begin(), r.end(), [&](size_t n) { return n < params.size() || n >= first_loop_name(); });
  };
  for (size_t fi = 0; fi < a.fields.size(); ++fi) {
    const SpecArg::Field& f = a.fields[fi];
    if (f.buffer >= 0 && !f.at.empty() && !(problem_only && (reads_param(f.at) || args.at(size_t(f.buffer)).follows_config))) {
      // a pointer from an element on: its offset in bytes (with no config, not where the
      // buffer's size follows one)
      const SpecArg& b = args.at(size_t(f.buffer));
      const long long count = count_of(size_t(f.buffer), p, c);
      const long long at = f.at.eval_integer(v, 0, double(count), "for " + a.name + "." + f.name + ".offset, elements of " +
                                                                      b.name + " (" + std::to_string(count) + ")" + context);
      store_elem(out.data() + f.offset, 0, ElemType::u64, double(at) * elem_bytes(b.elem(p)));
    }
    if (f.is_map()) { // its shape where the launch encodes the map
      // With no config, none: whether TMA takes it at a problem is the family's constraint (a
      // problem no config can serve is not one to refuse a whole run for), for the steps that pass it.
      if (problem_only) continue;
      const std::vector<unsigned char> shape = tensor_map_at(arg, p, c, fi).to_bytes();
      std::memcpy(out.data() + f.offset, shape.data(), shape.size());
      continue;
    }
    for (size_t e = 0; e < f.values.size(); ++e) {
      if (problem_only && reads_param(f.values[e])) continue;
      const std::string what = "for " + std::string(to_string(f.type)) + " " + a.name + "." + f.name +
                               (f.values.size() > 1 ? "[" + std::to_string(e) + "]" : "") + context;
      double x;
      if (is_float(f.type)) {
        x = f.values[e].eval(v);
        if (!std::isfinite(x)) throw UsageError(path + ": " + what + ": '" + f.values[e].text() + "' is not finite");
      } else {
        x = whole_number_of(f.values[e], f.type, v, what);
      }
      store_elem(out.data() + f.offset, e, f.type, x);
    }
  }
  return out;
}

std::vector<bool> KernelSpec::texture_aligned() const {
  std::vector<bool> out(args.size(), false);
  for (const SpecArg& a : args)
    if (a.is_texture() && !a.has_array()) out[size_t(a.fields[0].buffer)] = true;
  if (std::find(out.begin(), out.end(), true) != out.end()) close_over_swaps(out);
  return out;
}

void KernelSpec::close_over_swaps(std::vector<bool>& marked) const {
  // Every pair any loop of any list swaps, then the pairs' closure over those marked.
  std::vector<std::pair<int, int>> pairs;
  std::function<void(const std::vector<SpecNode>&)> collect = [&](const std::vector<SpecNode>& nodes) {
    for (const SpecNode& n : nodes) {
      pairs.insert(pairs.end(), n.swaps.begin(), n.swaps.end());
      collect(n.body);
    }
  };
  for (const auto* o : {&order, &reference_order, &baseline_order, &setup_order, &post_order}) collect(*o);
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [x, y] : pairs)
      if (marked[size_t(x)] != marked[size_t(y)]) marked[size_t(x)] = marked[size_t(y)] = true, grew = true;
  }
}

KernelSpec::TextureShape KernelSpec::texture_at(size_t arg, const Problem& p) const {
  const SpecArg& a = args.at(arg);
  if (!a.is_texture()) throw Error("internal: texture_at of " + a.name + ", a " + a.kind_name());
  const SpecArg::Texture& t = a.texture;
  const size_t k = size_t(a.fields.at(0).buffer);
  const SpecArg& b = args.at(k);
  auto head = [&] { return path + ": " + a.kind_name() + " " + a.name + " at " + p.key() + ": "; };
  TextureShape x;
  x.format = t.format_given ? t.format : b.elem(p);
  x.channels = t.channels;
  if (const auto [field, why] = texel_refusal(t, x.format); field) // a problem's dtype (the parse told the others)
    throw UsageError(head() + b.name + " holds " + to_string(x.format) + ": " + why + (std::string(field) == "format" ? ": give the texture a \"format\"" : ""));
  const size_t bytes = size_t(count_of(k, p)) * size_t(elem_bytes(b.elem(p))); // no temporary the config sizes: the parse
  if (!bytes) return x; // a problem of no elements: nothing to launch, no texel to read
  const std::vector<double> v = problem_values(p);
  auto size = [&](const Expr& e, const char* key, double least) {
    return size_t(e.eval_integer(v, least, 1e15, std::string("for texture ") + a.name + "." + key + " at " + p.key()));
  };
  const size_t texel = x.texel_bytes();
  if (t.width.empty()) { // linear: the whole buffer
    if (bytes % texel)
      throw UsageError(head() + b.name + "'s " + std::to_string(bytes) + " bytes are no whole number of " + std::to_string(texel) +
                       "-byte texels: give the texture's width");
    x.width = bytes / texel;
  } else {
    x.width = size(t.width, "width", 0);
  }
  if (!t.height.empty()) x.height = size(t.height, "height", 0);
  if (!t.depth.empty()) x.depth = size(t.depth, "depth", 0);
  // A problem of no texels along an axis: nothing to fit (no kernel reads one; the driver makes none).
  if (!x.width || (!t.height.empty() && !x.height) || (!t.depth.empty() && !x.depth)) return x;
  const size_t row = x.width * texel;
  x.pitch = t.pitch.empty() ? (x.height ? row : 0) : size(t.pitch, "pitch", 1);
  if (x.height && x.pitch < row)
    throw UsageError(head() + "rows " + std::to_string(x.pitch) + " bytes apart hold no " + std::to_string(x.width) + " texels of " +
                     std::to_string(texel) + " bytes");
  const size_t rows = x.height ? x.height * (x.depth ? x.depth : 1) : 1;
  const size_t covers = (rows - 1) * x.pitch + row;
  if (covers > bytes)
    throw UsageError(head() + "it reads " + std::to_string(covers) + " bytes of " + b.name + ", which holds " + std::to_string(bytes));
  return x;
}

KernelSpec::TableShape KernelSpec::table_at(size_t arg, const Problem& p) const {
  const SpecArg& a = args.at(arg);
  if (!a.is_table()) throw Error("internal: table_at of " + a.name + ", a " + a.kind_name());
  const SpecArg::Table& t = a.table;
  const size_t k = size_t(a.fields.at(0).buffer);
  const SpecArg& b = args.at(k);
  const std::string where = " at " + p.key();
  const size_t elements = size_t(count_of(k, p)); // no temporary the config sizes: the parse
  const std::vector<double> v = problem_values(p);
  TableShape x;
  x.count = size_t(t.count.eval_integer(v, 0, 1e12, "for address table " + a.name + ".count" + where));
  if (!x.count || !elements) return TableShape{}; // nothing to point at: no kernel reads an entry
  const size_t eb = size_t(elem_bytes(b.elem(p)));
  const size_t offset = t.offset.empty() ? 0 : size_t(t.offset.eval_integer(v, 0, 1e15, "for address table " + a.name + ".offset" + where));
  size_t stride = 0;
  if (!t.stride.empty()) stride = size_t(t.stride.eval_integer(v, 0, 1e15, "for address table " + a.name + ".stride" + where));
  else if (x.count > 1) {
    const size_t after = elements - std::min(offset, elements);
    stride = after / x.count; // equal slices of what follows the offset
    if (!stride)
      throw UsageError(path + ": address table " + a.name + where + ": " + std::to_string(x.count) + " entries over the " +
                       std::to_string(after) + " elements of " + b.name +
                       " after the offset: no stride given, and equal slices would hold none (give the table a stride)");
  }
  // Each entry at an element of the buffer: the last one's too.
  const double last = double(offset) + double(x.count - 1) * double(stride);
  char last_text[32];
  std::snprintf(last_text, sizeof last_text, "%.0f", last);
  if (last >= double(elements))
    throw UsageError(path + ": address table " + a.name + where + ": its entry " + std::to_string(x.count - 1) + " points at element " +
                     last_text + " of " + b.name + ", which holds " + std::to_string(elements) +
                     (t.stride.empty() && x.count > 1 ? " (no stride given: the elements after the offset in equal slices, none here)" : ""));
  x.offset = offset * eb;
  x.stride = stride * eb;
  return x;
}

std::vector<unsigned char> KernelSpec::TensorMapShape::to_bytes() const {
  static_assert(kBytes == sizeof rank + sizeof dims + sizeof strides + sizeof box + sizeof type + sizeof swizzle + sizeof l2_promotion && kBytes <= 128,
                "a shape's bytes are its fields', within a map's 128");
  std::vector<unsigned char> b(kBytes);
  unsigned char* at = b.data();
  for (const auto& [ptr, n] : std::initializer_list<std::pair<const void*, size_t>>{
           {&rank, sizeof rank}, {dims, sizeof dims}, {strides, sizeof strides}, {box, sizeof box}, {&type, sizeof type}, {&swizzle, sizeof swizzle}, {&l2_promotion, sizeof l2_promotion}})
    std::memcpy(at, ptr, n), at += n;
  return b;
}

KernelSpec::TensorMapShape KernelSpec::TensorMapShape::from_bytes(const unsigned char* at) {
  TensorMapShape x;
  for (const auto& [ptr, n] : std::initializer_list<std::pair<void*, size_t>>{
           {&x.rank, sizeof x.rank}, {x.dims, sizeof x.dims}, {x.strides, sizeof x.strides}, {x.box, sizeof x.box}, {&x.type, sizeof x.type},
           {&x.swizzle, sizeof x.swizzle}, {&x.l2_promotion, sizeof x.l2_promotion}})
    std::memcpy(ptr, at, n), at += n;
  return x;
}

KernelSpec::TensorMapShape KernelSpec::tensor_map_at(size_t arg, const Problem& p, const Config& c, size_t field) const {
  const SpecArg& a = args.at(arg);
  if (field >= a.fields.size() || !a.fields[field].is_map())
    throw Error("internal: tensor_map_at of " + a.name + " field " + std::to_string(field) + ", no map");
  const SpecArg::TensorMap& t = a.fields[field].map;
  const size_t k = size_t(a.fields[field].buffer);
  const SpecArg& b = args.at(k);
  const std::string name = a.map_name(field);
  const std::string where = " at " + p.key() + (c.items().empty() ? "" : " config " + c.to_json());
  auto refuse = [&](const std::string& why) { throw UsageError(path + ": tensor map " + name + where + ": " + why); };
  const std::vector<double> v = values(c, p, no_device());
  TensorMapShape x;
  x.rank = int(t.dims.size());
  x.type = b.elem(p);
  x.swizzle = t.swizzle;
  x.l2_promotion = t.l2_promotion;
  const uint64_t eb = uint64_t(elem_bytes(x.type));
  for (int i = 0; i < x.rank; ++i) {
    const std::string n = std::to_string(i);
    x.dims[i] = uint64_t(t.dims[size_t(i)].eval_integer(v, 1, 4294967296.0, "for tensor map " + name + ".dims[" + n + "]" + where));
    x.box[i] = uint32_t(t.box[size_t(i)].eval_integer(v, 1, 256, "for tensor map " + name + ".box[" + n + "] (TMA boxes are 1 to 256)" + where));
    if (i == 0) continue;
    // No strides given: packed, each dimension right after the one inside it. A given stride may be
    // 0 (a dimension of extent 1, as host code passes it); below 2^40 bytes.
    x.strides[i - 1] = t.strides.empty() ? (i == 1 ? eb : x.strides[i - 2]) * x.dims[i - 1]
                                         : uint64_t(t.strides[size_t(i - 1)].eval_integer(
                                               v, 0, 1099511627775.0, "for tensor map " + name + ".strides[" + std::to_string(i - 1) + "]" + where));
    if (x.strides[i - 1] % 16)
      refuse((t.strides.empty() ? "dimension " + std::to_string(i) + " (packed) starts every " : "strides[" + std::to_string(i - 1) + "] is ") +
             std::to_string(x.strides[i - 1]) + " bytes: TMA needs multiples of 16");
  }
  if ((uint64_t(x.box[0]) * eb) % 16) refuse("its box's inner extent is " + std::to_string(uint64_t(x.box[0]) * eb) + " bytes: TMA moves multiples of 16");
  if (x.swizzle && uint64_t(x.box[0]) * eb > uint64_t(x.swizzle))
    refuse("its box's inner extent of " + std::to_string(uint64_t(x.box[0]) * eb) + " bytes passes its " + std::to_string(x.swizzle) +
           "-byte swizzle span");
  // Its last element within the buffer, and within every buffer a loop's swap may put in its place
  // (summed in doubles: no wrap at any extent).
  double last = double(x.dims[0]) * double(eb);
  for (int i = 1; i < x.rank; ++i) last += double(x.dims[i] - 1) * double(x.strides[i - 1]);
  std::vector<bool> in_place(args.size(), false);
  in_place[k] = true;
  close_over_swaps(in_place);
  for (size_t j = 0; j < args.size(); ++j) {
    if (!in_place[j]) continue;
    const double held = double(count_of(j, p, c)) * double(eb);
    if (last <= held) continue;
    char text[64];
    std::snprintf(text, sizeof text, "%.0f bytes into ", last);
    refuse("it reaches " + std::string(text) + args[j].name + ", which holds " + std::to_string(uint64_t(held)) +
           (j == k ? std::string() : " (a loop's swap puts it in " + b.name + "'s place)"));
  }
  return x;
}

const std::vector<SpecNode>& KernelSpec::order_of(const std::vector<SpecStep>& st) const {
  if (&st == &steps) return order;
  if (&st == &reference_steps) return reference_order;
  if (&st == &baseline_steps) return baseline_order;
  if (&st == &setup_steps) return setup_order;
  if (&st == &post_steps) return post_order;
  static const std::vector<SpecNode> none; // steps of no spec list: each once, in order
  return none;
}

namespace {

std::string number_text(double v) {
  if (v == std::floor(v) && std::abs(v) < 9.0e15) return std::to_string(static_cast<long long>(v));
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

const char* c_type(DType d) {
  return d == DType::bf16 ? "__nv_bfloat16" : d == DType::f16 ? "__half" : d == DType::f64 ? "double" : "float";
}

} // namespace

namespace {

// A kernel parameter's type as a demangled C++ signature spells it: a pointer (to `pointee`), or
// a value; `bytes` and `floating` where the type (or the pointee) is one of C's arithmetic types
// or CUDA's 16-bit floats, else 0 (a struct: its size cannot be told from its name).
struct ParamType {
  std::string text;
  bool pointer = false;
  int bytes = 0;
  bool floating = false;
  bool vector = false; // one of CUDA's vector types by value (float4)
  bool bytes_view = false; // a pointer to plain char: a view of any buffer's bytes
};

ParamType param_type(const std::string& text) {
  ParamType t;
  t.text = trim(text);
  std::string base = t.text;
  if (!base.empty() && base.back() == '*') {
    t.pointer = true;
    base.pop_back();
    if (base.find('*') != std::string::npos) return t; // a pointer to pointers: no arithmetic pointee
  }
  for (const char* q : {" const", " volatile", " __restrict__", " __restrict"})
    for (size_t at; (at = base.find(q)) != std::string::npos;) base.erase(at, std::strlen(q));
  base = trim(base);
  if (base.rfind("const ", 0) == 0) base = trim(base.substr(6));
  static const std::pair<const char*, std::pair<int, bool>> kTypes[] = {
      {"float", {4, true}},  {"double", {8, true}},        {"__half", {2, true}},        {"__nv_bfloat16", {2, true}},
      {"int", {4, false}},   {"unsigned int", {4, false}}, {"long", {8, false}},         {"unsigned long", {8, false}},
      {"long long", {8, false}}, {"unsigned long long", {8, false}}, {"short", {2, false}}, {"unsigned short", {2, false}},
      {"char", {1, false}},  {"signed char", {1, false}},  {"unsigned char", {1, false}}, {"bool", {1, false}}};
  // CUDA's vector types by value: a struct argument of their size and kind of elements fits them.
  // A pointer to one (a float4 view of a float buffer) tells nothing of the buffer's elements.
  static const std::pair<const char*, std::pair<int, bool>> kVectors[] = {
      {"int2", {8, false}},   {"int3", {12, false}},  {"int4", {16, false}},   {"uint2", {8, false}},
      {"uint3", {12, false}}, {"uint4", {16, false}}, {"dim3", {12, false}},   {"float2", {8, true}},
      {"float3", {12, true}}, {"float4", {16, true}}, {"double2", {16, true}}, {"short2", {4, false}},
      {"ushort2", {4, false}}, {"char4", {4, false}}, {"uchar4", {4, false}},  {"longlong2", {16, false}},
      {"__half2", {4, true}}, {"__nv_bfloat162", {4, true}}};
  for (const auto& [name, kind] : kTypes)
    if (base == name) t.bytes = kind.first, t.floating = kind.second;
  t.bytes_view = t.pointer && base == "char"; // uint8_t* and int8_t* stay 1-byte elements (quantized data)
  if (!t.pointer)
    for (const auto& [name, kind] : kVectors)
      if (base == name) t.bytes = kind.first, t.floating = kind.second, t.vector = true;
  return t;
}

// The parameter types of a mangled C++ function name; false where it names none (extern "C").
bool demangled_params(const std::string& mangled, std::vector<ParamType>* out, std::string* demangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !d) return false;
  *demangled = d;
  std::free(d);
  const std::string& n = *demangled;
  if (n.empty() || n.back() != ')') return false;
  size_t open = std::string::npos;
  for (size_t i = n.size(), depth = 0; i-- > 0;) { // the parameter list: the last top-level parentheses
    if (n[i] == ')') ++depth;
    else if (n[i] == '(' && --depth == 0) {
      open = i;
      break;
    }
  }
  if (open == std::string::npos) return false;
  const std::string list = n.substr(open + 1, n.size() - open - 2);
  out->clear();
  if (trim(list).empty() || trim(list) == "void") return true;
  int depth = 0;
  size_t from = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '(' || c == '<' || c == '[') ++depth;
    else if (c == ')' || c == '>' || c == ']') --depth;
    else if (c == ',' && depth == 0) {
      out->push_back(param_type(list.substr(from, i - from)));
      from = i + 1;
    }
  }
  return true;
}

} // namespace

std::vector<int> KernelSpec::step_args(const std::vector<int>& named) const {
  if (!named.empty()) return named;
  std::vector<int> all(args.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = int(i);
  return all;
}

std::string signature_mismatch(const KernelSpec& s, const SpecStep& st, const std::string& lowered, const Problem& p,
                               const std::string& what) {
  std::vector<ParamType> params;
  std::string demangled;
  if (!demangled_params(lowered, &params, &demangled)) return "";
  const std::vector<int> taken = s.step_args(st.args);
  const std::string head = s.path + ": " + what + ": kernel " + demangled;
  auto arg_text = [&](int i) {
    const SpecArg& a = s.args[size_t(i)];
    return a.name + " (" +
           (a.buffer        ? std::string("a buffer of ") + to_string(a.elem(p))
            : a.is_texture()  ? std::string("a texture object, 8 bytes")
            : a.is_table()    ? std::string("an address table: a pointer to 8-byte addresses")
            : a.is_tensor_map() ? std::string("a tensor map, a CUtensorMap of 128 bytes by value")
            : a.is_struct()   ? "a struct of " + std::to_string(a.struct_bytes) + " bytes" + (a.struct_has_maps() ? ", tensor maps among its fields" : "")
            : a.null_pointer ? std::string("a null pointer")
                             : std::string(to_string(a.scalar_elem(p)))) +
           ")";
  };
  if (!KernelSpec::arity_fits(!st.args.empty(), params.size(), taken.size())) {
    std::string given;
    for (int i : taken) given += (given.empty() ? "" : ", ") + arg_text(i);
    return head + " takes " + std::to_string(params.size()) + " arguments, the spec passes " + std::to_string(taken.size()) +
           ": " + given;
  }
  for (size_t k = 0; k < params.size() && k < taken.size(); ++k) {
    const SpecArg& a = s.args[size_t(taken[k])];
    const ParamType& t = params[k];
    const std::string at = head + ": argument " + std::to_string(k + 1) + " is " + t.text + ", the spec passes " + arg_text(taken[k]);
    if (a.null_pointer) {
      if (!t.pointer) return at;
      continue; // null fits any pointer
    }
    if (a.is_table()) { // a pointer to addresses: int64_t*, T**, void**; not a pointer to 4-byte or smaller values
      if (!t.pointer || (t.bytes && t.bytes != 8)) return at;
      continue;
    }
    if (a.is_struct()) { // a struct by value: no pointer, and where the kernel's is a built-in type, its size
      if (t.pointer || (t.bytes && size_t(t.bytes) != a.struct_bytes)) return at;
      // A texture object is an unsigned long long (cudaTextureObject_t, CUtexObject).
      if (a.is_texture() && (t.floating || t.vector)) return at;
      // A vector type: elements of its kind (float4: floats). Its alignment does not matter here:
      // the driver copies a parameter's bytes to the kernel's own offset.
      if (t.vector && std::any_of(a.fields.begin(), a.fields.end(), [&](const SpecArg::Field& f) {
            return f.buffer >= 0 || is_float(f.type) != t.floating;
          }))
        return at + ": " + t.text + " holds " + (t.floating ? "floating-point" : "integer") + " elements";
      continue;
    }
    if (t.pointer != a.buffer) return at;
    // A vector type by value is a struct of its elements (a u32 for a uchar4 has its size, not its
    // meaning: the host code fills x, y, z, w).
    if (t.vector && !t.pointer) return at + ": " + t.text + " by value is a struct argument (\"kind\": \"struct\") of its elements";
    if (!t.bytes) continue; // a struct, or a pointer to one (a float4 view of floats): nothing to tell
    // A char pointer reads any buffer's bytes (ggml's `const char* cx`, C's aliasing exception).
    if (t.bytes_view && a.buffer) continue;
    const ElemType e = a.buffer ? a.elem(p) : a.scalar_elem(p);
    if (t.bytes != elem_bytes(e) || (!a.buffer && t.floating != is_float(e))) return at;
  }
  return "";
}

std::string param_sizes_mismatch(const KernelSpec& s, const std::vector<int>& named, const std::vector<size_t>& sizes,
                                 const Problem& p, const std::string& what) {
  const std::vector<int> taken = s.step_args(named);
  auto size_of = [&](int i) {
    const SpecArg& a = s.args[size_t(i)];
    return a.buffer ? sizeof(void*) : a.is_struct() ? a.struct_bytes : size_t(elem_bytes(a.scalar_elem(p)));
  };
  bool same = KernelSpec::arity_fits(!named.empty(), sizes.size(), taken.size());
  for (size_t k = 0; same && k < sizes.size(); ++k) same = sizes[k] == size_of(taken[k]);
  if (same) return "";
  std::string declared, passed;
  for (size_t z : sizes) declared += (declared.empty() ? "" : ", ") + std::to_string(z);
  for (int i : taken) passed += (passed.empty() ? "" : ", ") + s.args[size_t(i)].name + " " + std::to_string(size_of(i));
  return s.path + ": " + what + ": the kernel declares " + std::to_string(sizes.size()) + " parameters of " + declared +
         " bytes; the spec passes " + std::to_string(taken.size()) + ": " + passed +
         " (bytes; a buffer is a pointer, a struct its layout): check the step's args, their dtypes and a struct's fields";
}

std::vector<size_t> cubin_param_sizes(const std::vector<char>& cubin, const std::string& name) {
  // ELF64, little-endian: the section headers, their names, then the kernel's .nv.info records.
  // A record is a format byte and an attribute byte, then: EIFMT_SVAL (4) a u16 length and that
  // many bytes; every other format (NVAL 1, BVAL 2, HVAL 3) two bytes more. The sizes are in
  // EIATTR_KPARAM_INFO (0x17: index u32, ordinal u16, offset u16, a u32 whose bits 18 to 31 are
  // the size) or, where a kernel's parameters pass about 4.3 KB, 0x45 (the same, the size the
  // whole u32). Every read is bounds-checked without a sum that could wrap.
  const auto* b = reinterpret_cast<const unsigned char*>(cubin.data());
  const size_t n = cubin.size();
  auto fits = [&](size_t at, size_t len) { return at <= n && len <= n - at; };
  auto u16 = [&](size_t at) { return fits(at, 2) ? size_t(b[at] | b[at + 1] << 8) : size_t(0); };
  auto u32 = [&](size_t at) { return fits(at, 4) ? size_t(u16(at) | u16(at + 2) << 16) : size_t(0); };
  auto u64 = [&](size_t at) { return fits(at, 8) ? u32(at) | u32(at + 4) << 32 : size_t(0); };
  if (n < 64 || std::memcmp(b, "\x7f" "ELF", 4) != 0 || b[4] != 2 || b[5] != 1) return {};
  const size_t shoff = u64(0x28), shentsize = u16(0x3a), shnum = u16(0x3c), shstrndx = u16(0x3e);
  if (shentsize < 64 || shstrndx >= shnum || shoff > n || shnum > (n - shoff) / shentsize) return {};
  auto section = [&](size_t i, size_t field) { return shoff + i * shentsize + field; };
  const size_t names = u64(section(shstrndx, 0x18));
  const std::string want = ".nv.info." + name;
  for (size_t i = 0; i < shnum; ++i) {
    const size_t name_at = u32(section(i, 0));
    if (names > n || name_at > n - names || !fits(names + name_at, want.size() + 1) ||
        std::memcmp(b + names + name_at, want.c_str(), want.size() + 1) != 0)
      continue;
    const size_t from = u64(section(i, 0x18)), size = u64(section(i, 0x20));
    if (!fits(from, size)) return {};
    std::map<size_t, size_t> by_ordinal;
    for (size_t k = 0; k + 4 <= size;) {
      const size_t at = from + k;
      const unsigned format = b[at], attr = b[at + 1];
      if (format == 4) {
        const size_t len = u16(at + 2);
        if (len > size - k - 4) return {}; // past the section: not a record this reads right
        if ((attr == 0x17 || attr == 0x45) && len >= 12)
          by_ordinal[u16(at + 8)] = attr == 0x17 ? (u32(at + 12) >> 18) & 0x3fff : u32(at + 12);
        k += 4 + len;
      } else if (format >= 1 && format <= 3) {
        k += 4;
      } else {
        return {}; // a format this does not know
      }
    }
    std::vector<size_t> out;
    for (const auto& [ordinal, bytes] : by_ordinal) {
      if (ordinal != out.size()) return {}; // a gap: not a record this reads right
      out.push_back(bytes);
    }
    return out;
  }
  return {};
}

bool KernelSpec::passes_launched(size_t arg, const std::vector<SpecStep>& st, const Config& c, const Problem& p) const {
  for (const SpecStep& t : st) {
    const std::vector<int> taken = step_args(t.args);
    if (std::find(taken.begin(), taken.end(), int(arg)) != taken.end() && !skipped(t, c, p)) return true;
  }
  return false;
}

bool KernelSpec::skipped(const SpecStep& st, const Config& c, const Problem& p) const {
  if (st.within.empty() && st.when.empty()) return false;
  const std::vector<double> v = values(c, p, no_device());
  // A `when` of the config and the problem alone (no counter, nothing of the launch) that fails.
  if (!st.when.empty() && !reads_values(st.when)) {
    const auto r = st.when.reads();
    if (std::none_of(r.begin(), r.end(), [&](size_t i) { return i >= first_loop_name(); }) && st.when.eval(v) == 0) return true;
  }
  for (const Expr& e : st.within) {
    const auto r = e.reads();
    if (std::none_of(r.begin(), r.end(), [&](size_t i) { return i >= first_loop_name(); }) && e.eval(v) <= 0) return true;
  }
  return false;
}

std::vector<size_t> KernelSpec::value_reads(const LaunchStep& s) const {
  std::vector<size_t> need;
  if (!s.reads_values) return need;
  auto add = [&](const Expr& e) {
    for (size_t i : e.reads())
      if (i >= names.size() && std::find(need.begin(), need.end(), i) == need.end()) need.push_back(i);
  };
  if (s.value_grid >= 0)
    for (const Expr& e : value_grids.at(size_t(s.value_grid))) add(e); // an empty `when` reads nothing
  for (int k : s.set_args)
    if (args.at(size_t(k)).follows_values) add(args[size_t(k)].value);
  return need;
}

namespace {
// The C++ constant probes a spec's kernels end with, in their order: every step's shared memory
// constant in step order, then every step's block constant. f(step index, block).
template <class F>
void for_each_constant_probe(const std::vector<SpecStep>& st, F f) {
  for (const bool block : {false, true})
    for (size_t j = 0; j < st.size(); ++j)
      if (!(block ? st[j].block_constant : st[j].smem_constant).empty()) f(j, block);
}
} // namespace

std::vector<std::string> KernelSpec::kernel_names(const std::vector<SpecStep>& st, const Config& c, const Problem& p) const {
  // A step the config never launches (a kernel version of another config) is not compiled: it
  // takes the name of one that is launched, so that the kernels keep their places (a template a
  // config cannot instantiate would otherwise fail every config that skips it).
  std::vector<bool> skip(st.size());
  for (size_t j = 0; j < st.size(); ++j) skip[j] = skipped(st[j], c, p);
  const size_t stand_in = size_t(std::find(skip.begin(), skip.end(), false) - skip.begin());
  // {NAME} placeholders filled: a parameter's value, a dimension's, {dtype}'s C type. An empty
  // pair is C++'s own (a value-initialized temporary, CuTe's `Int<128>{}`) and stays.
  auto expand = [&](const std::string& text, const char* what) {
    std::string n;
    for (size_t i = 0; i < text.size();) {
      if (text[i] != '{') {
        n += text[i++];
        continue;
      }
      const size_t close = text.find('}', i);
      if (close == std::string::npos)
        throw UsageError(path + ": " + what + " '" + text + "': a '{' without its '}'");
      const std::string key = text.substr(i + 1, close - i - 1);
      if (key.empty()) {
        n += "{}";
      } else if (key == "dtype") {
        n += c_type(p.dtype);
      } else {
        const auto it = std::find(names.begin(), names.end(), key);
        if (it == names.end() || size_t(it - names.begin()) >= params.size() + dims.size())
          throw UsageError(path + ": " + what + " '" + text + "': {" + key + "} is not a parameter, a dimension or {dtype}");
        const size_t k = size_t(it - names.begin());
        n += k < params.size() ? std::to_string(c[key]) : std::to_string(p.dims.at(k - params.size()));
      }
      i = close + 1;
    }
    return n;
  };
  std::vector<std::string> out;
  for (size_t j = 0; j < st.size(); ++j) out.push_back(expand(st[stand_in < st.size() && skip[j] ? stand_in : j].kernel, "kernel"));
  if (whole_reads) out.push_back("ktune_spec_reduce"); // after the steps: LaunchStep::reduce_kernel
  // Then the constant probes (plan's LaunchStep::smem_kernel and block_kernel count them the same
  // way); a step the config never launches probes 0, not a constant it may not instantiate.
  for_each_constant_probe(st, [&](size_t j, bool block) {
    out.push_back(std::string("ktune_constant_probe<(unsigned long long)(") +
                  (skip[j] ? std::string("0")
                           : expand(block ? st[j].block_constant : st[j].smem_constant, block ? "block constant" : "shared memory constant")) +
                  ")>");
  });
  return out;
}

const std::string& cuda_include_dir() {
  static const std::string dir = [] {
    for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
      if (const char* v = std::getenv(env); v && *v && std::filesystem::exists(std::string(v) + "/include/cuda_bf16.h"))
        return std::string(v) + "/include";
    return std::filesystem::exists("/usr/local/cuda/include/cuda_bf16.h") ? std::string("/usr/local/cuda/include") : "";
  }();
  return dir;
}

bool KernelSpec::reads_macro(const std::string& name) const {
  return !compiled_text_whole || find_word(compiled_text, name) != std::string::npos;
}

std::vector<std::string> KernelSpec::compile_options(const Config& c, const Problem& p) const {
  std::vector<std::string> o;
  if (params_as_defines)
    for (const auto& [k, v] : c.items())
      if (reads_macro(k)) o.push_back("-D" + k + "=" + std::to_string(v));
  if (dims_as_defines)
    for (size_t i = 0; i < dims.size(); ++i) o.push_back("-D" + dims[i] + "=" + std::to_string(p.dims.at(i)));
  if (!defines.empty()) {
    const std::vector<double> v = values(c, p, no_device());
    for (const auto& [k, e] : defines) o.push_back("-D" + k + "=" + number_text(e.eval(v)));
  }
  o.push_back(std::string("-DKTUNE_DTYPE=") + c_type(p.dtype));
  o.insert(o.end(), options.begin(), options.end());
  // The toolkit's headers (cuda_fp16.h, cuda_bf16.h, cooperative_groups.h), which NVRTC finds only
  // on a path: user kernels include them as they would under nvcc. CUDA 13 keeps libcu++, CUB and
  // Thrust (cuda/std/..., which cooperative_groups.h itself includes) in include/cccl, a path nvcc
  // adds by itself.
  const std::string& toolkit = cuda_include_dir();
  if (!toolkit.empty()) o.push_back("--include-path=" + toolkit);
  static const bool cccl = !toolkit.empty() && std::filesystem::exists(toolkit + "/cccl/cuda/std");
  if (cccl) o.push_back("--include-path=" + toolkit + "/cccl");
  return o;
}

std::set<std::string> KernelSpec::build_macros() const {
  std::set<std::string> m;
  for (const auto& [k, e] : defines)
    if (e.constant()) m.insert(k);
  for (const auto& o : options)
    if (const std::string d = macro_of_option(o); !d.empty()) m.insert(d.substr(0, d.find('=')));
  return m;
}

LaunchPlan KernelSpec::plan(const std::vector<SpecStep>& st, const Config& c, const Problem& p) const {
  std::vector<double> v = values(c, p, no_device());
  LaunchPlan plan;
  // The temporaries one after another in the workspace, 256-byte aligned; the computed scalars;
  // the structs these steps pass (another's, a reference's config need not make: zeros).
  plan.spec_args.resize(args.size());
  std::vector<bool> passed(args.size(), false), aligned;
  for (const SpecStep& t : st)
    for (int k : step_args(t.args)) passed[size_t(k)] = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const SpecArg& a = args[i];
    LaunchPlan::SpecArgValue& x = plan.spec_args[i];
    if (a.buffer && a.intent == SpecArg::temp) {
      // A temporary a texture reads starts where a texture may (cuTexObjectCreate: the device's
      // texture alignment, 512 bytes on sm_50 to sm_90).
      if (aligned.empty()) aligned = texture_aligned();
      if (aligned[i]) plan.workspace_bytes = (plan.workspace_bytes + 511) / 512 * 512;
      x.offset = (long long)plan.workspace_bytes;
      x.bytes = size_t(count_of(i, p, c)) * size_t(elem_bytes(a.elem(p)));
      plan.workspace_bytes += (x.bytes + 255) / 256 * 256;
      // The value it is set to before every launch, at this problem: once here, not at each call.
      if (a.set_before_launch && a.fill.kind == SpecFill::constant) x.value = fill_value_at(a.fill, p);
    } else if (a.struct_has_maps()) { // a tensor map argument too
      // Its maps' shapes where a launched step passes it and its bytes are the call's (one that
      // reads a loop's counter has its bytes at each launch, LaunchStep::struct_data); no bytes
      // otherwise, and none built (a map of no shape is no map to launch with).
      if (!a.follows_loop && passes_launched(i, st, c, p)) x.data = struct_bytes_at(i, p, c);
    } else if (a.is_struct()) {
      // One that reads a loop's counter has its bytes at each launch (LaunchStep::struct_data).
      x.data = a.follows_loop || !passed[i] ? std::vector<unsigned char>(a.struct_bytes, 0) : struct_bytes_at(i, p, c);
    } else if (!a.buffer && !a.value.empty() && !a.set_at_launch()) { // a counter's or a value's: set at each launch (set_args)
      x.value = scalar_value(i, p, c);
    }
  }
  // The scratch of the GPU's whole-buffer reads (kernel_templates/spec/spec_reduce.cuh): a partial
  // a block (at most kReduceBlocks), the blocks' arrival count, the result; one for the plan,
  // placed after the temporaries the first time a test needs it.
  long long scratch_at = -1;
  auto reduce_scratch = [&] {
    if (scratch_at < 0) {
      scratch_at = (long long)plan.workspace_bytes;
      plan.workspace_bytes += (kReduceScratchBytes + 255) / 256 * 256;
    }
    return scratch_at;
  };
  // Which argument's buffer each buffer argument passes now: its own, or (swapped after a round
  // of a loop) its partner's.
  std::vector<int> holds(args.size());
  for (size_t i = 0; i < holds.size(); ++i) holds[i] = int(i);
  // For messages: the config and problem, with the loops' counters now.
  const std::string head = " (config " + c.to_json() + ", " + p.key(), at = head + ")";
  auto where = [&] {
    std::string t = head;
    for (size_t k = first_loop_name(); k < names.size(); ++k)
      if (v[k] != 0) t += ", " + names[k] + " " + number_text(v[k]);
    return t + ")";
  };
  // Unrolled, a plan holds every launch; a spec whose loops come to more is a mistake (or a
  // problem too large for a plan of launches: a kernel that loops itself).
  constexpr size_t kMaxLaunches = 1 << 20;
  auto push = [&](LaunchStep&& s) {
    if (plan.steps.size() >= kMaxLaunches)
      throw UsageError(path + ": the launch unrolls to more than " + std::to_string(kMaxLaunches) + " launches" + at);
    plan.steps.push_back(std::move(s));
  };
  // Step s passes argument k as the buffer k holds now, where that is another's (once a step).
  auto alias = [&](LaunchStep& s, int k) {
    if (holds[size_t(k)] == k || std::find(s.alias_args.begin(), s.alias_args.end(), k) != s.alias_args.end()) return;
    s.alias_args.push_back(k);
    s.alias_of.push_back(holds[size_t(k)]);
  };
  // A control step (kernel -1) on arguments `on`.
  auto control = [&](const std::vector<int>& on) {
    LaunchStep s;
    s.kernel = -1;
    for (int k : on) alias(s, k);
    return s;
  };
  // The copies that put each swapped pair's first back in its own buffer of before the loop, from
  // where `now` has it.
  auto copy_back = [&](const SpecNode& n, const std::vector<int>& before, const std::vector<int>& now) {
    for (const auto& [x, y] : n.swaps) {
      if (now[size_t(x)] == before[size_t(x)]) continue;
      LaunchStep s;
      s.kernel = -1;
      s.copy_from = now[size_t(x)];
      s.copy_to = before[size_t(x)];
      s.copy_bytes = (unsigned long long)count_of(size_t(x), p, c) * (unsigned long long)elem_bytes(args[size_t(x)].elem(p));
      push(std::move(s));
    }
  };
  // Each planned symbol's slice as last copied (offset, count); none yet.
  std::vector<std::pair<long long, long long>> slices(symbols.size(), {-1, -1});
  // The innermost while loop the plan repeats rather than unrolls, and its counter's place in
  // names, while its rounds are planned (-1: none); how many such loops the plan has.
  int round_loop_now = -1, round_index_now = -1, compact_loops = 0;
  auto reads_name = [](const Expr& e, int index) {
    if (e.empty() || index < 0) return false;
    const std::vector<size_t>& r = e.reads();
    return std::find(r.begin(), r.end(), size_t(index)) != r.end();
  };
  // Whether step t is in every loop whose counter symbol y's slice reads (where the plan copies it).
  auto in_loops_of = [](const SpecSymbol& y, const SpecStep& t) {
    return std::all_of(y.counters.begin(), y.counters.end(), [&](int n) {
      return std::find(t.loop_counters.begin(), t.loop_counters.end(), n) != t.loop_counters.end();
    });
  };
  // The copy of symbol k's slice at the counters now, where it differs from the last one copied.
  auto copy_slice = [&](size_t k, const std::string& where_now) {
    const SpecSymbol& y = symbols[k];
    const std::string field = "symbols[" + std::to_string(k) + "]";
    const long long from = y.offset.empty() ? 0 : y.offset.eval_integer(v, 0, 1e15, field + ".offset" + where_now);
    const long long n = y.count.eval_integer(v, 0, 1e15, field + ".count" + where_now);
    const long long size = count_of(size_t(y.from_arg), p, c);
    if (from + n > size)
      throw UsageError(path + ": " + field + ": elements " + std::to_string(from) + " to " + std::to_string(from + n) + " of " +
                       args[size_t(y.from_arg)].name + ", which holds " + std::to_string(size) + where_now);
    if (slices[k] == std::make_pair(from, n)) return;
    slices[k] = {from, n};
    LaunchStep copy;
    copy.kernel = -1;
    copy.symbol = int(k);
    copy.symbol_offset = (unsigned long long)from;
    copy.copy_bytes = (unsigned long long)n * (unsigned long long)elem_bytes(y.type);
    push(std::move(copy));
  };
  // A plan none of whose steps is in a slice's loops (a reference of its own) gets the slice its
  // counters at 0 give, before its first launch: the same every call, never what a call left.
  for (size_t k = 0; k < symbols.size(); ++k)
    if (symbols[k].planned && std::none_of(st.begin(), st.end(), [&](const SpecStep& t) { return in_loops_of(symbols[k], t); }))
      copy_slice(k, at);
  auto launch = [&](size_t i) {
    const SpecStep& t = st[i];
    const std::string where_now = where();
    // A `when` the plan knows: the step is in the plan or not (one of values: at each launch).
    if (!t.when.empty() && !reads_values(t.when) && t.when.eval(v) == 0) return;
    const bool when_at_launch = !t.when.empty() && reads_values(t.when);
    LaunchStep s;
    s.kernel = int(i);
    for (int d = 0; d < 3; ++d) {
      // A grid that reads a buffer's value is evaluated at each launch (value_grid); 1 here.
      s.grid[d] = reads_values(t.grid[d])
                      ? 1u
                      : unsigned(t.grid[d].eval_integer(v, 1, d == 0 ? 2147483647.0 : 65535.0, "grid" + where_now));
      s.block[d] = unsigned(t.block[d].eval_integer(v, 1, 1024, "threads" + where_now));
    }
    s.value_grid = t.value_grid;
    s.reads_values = t.value_grid >= 0;
    if (!t.cluster[0].empty())
      for (int d = 0; d < 3; ++d) s.cluster[d] = unsigned(t.cluster[d].eval_integer(v, 1, 8, "cluster blocks" + where_now));
    s.dynamic_smem = unsigned(t.smem.eval_integer(v, 0, 4.0e9, "bytes of dynamic shared memory" + where_now));
    // The index of this step's probe among the kernels kernel_names lists: after the steps and
    // the reduction, in for_each_constant_probe's order.
    auto probe_kernel = [&](bool block) {
      int k = int(st.size()) + (whole_reads ? 1 : 0), found = -1;
      for_each_constant_probe(st, [&](size_t j, bool b) {
        if (&st[j] == &t && b == block) found = k;
        ++k;
      });
      return found;
    };
    if (!t.smem_constant.empty()) s.smem_kernel = probe_kernel(false);
    if (!t.block_constant.empty()) s.block_kernel = probe_kernel(true);
    s.persistent = t.persistent;
    s.cooperative = t.cooperative;
    s.overlap_previous = t.programmatic && (t.programmatic_when.empty() || t.programmatic_when.eval(v) != 0);
    s.args = t.args;
    // The slices of buffers this launch's symbols hold (a tile a round), copied where they change.
    // A step outside a loop a slice follows gets none: the symbol holds what the loop left.
    for (size_t k = 0; k < symbols.size(); ++k)
      if (symbols[k].planned && in_loops_of(symbols[k], t)) copy_slice(k, where_now);
    for (size_t j = 0; j < t.arg_offsets.size(); ++j) { // buffers passed from an element on
      if (t.arg_offsets[j].empty()) continue;
      const size_t k = size_t(t.args[j]);
      const long long count = count_of(k, p, c);
      const std::string field = "launch step of " + t.kernel + ": args[" + std::to_string(j) + "].offset";
      const long long at_element = t.arg_offsets[j].eval_integer(v, 0, 1e15, field + where_now);
      if (at_element > count)
        throw UsageError(path + ": " + field + ": element " + std::to_string(at_element) + " of " + args[k].name + ", which holds " +
                         std::to_string(count) + where_now);
      s.offset_at.push_back(int(j));
      s.offset_bytes.push_back((unsigned long long)at_element * (unsigned long long)elem_bytes(args[k].elem(p)));
    }
    for (int k : step_args(t.args)) {
      const SpecArg& a = args[size_t(k)];
      if (a.scalar() && a.set_at_launch()) {
        s.set_args.push_back(k);
        // A value's, or any at a step whose `when` decides at the launch: computed there, after the
        // read and only where the step launches (reads_values).
        s.set_values.push_back(a.follows_values || when_at_launch ? 0.0 : scalar_from(size_t(k), v, where_now));
        s.reads_values = s.reads_values || a.follows_values;
      }
      alias(s, k);
      // A struct whose fields read a loop's counter: its bytes at this launch.
      if (a.is_struct() && a.follows_loop) {
        s.struct_args.push_back(k);
        s.struct_data.push_back(struct_bytes_from(size_t(k), v, p, c, where_now));
      }
      // A struct's pointers follow the swaps as the kernel's own buffer arguments do (the host
      // code fills its struct with the round's pointers).
      for (const SpecArg::Field& f : a.fields)
        if (f.buffer >= 0) alias(s, f.buffer);
      if (a.follows_loop && round_index_now >= 0 && reads_name(a.value, round_index_now)) {
        s.round_loop = round_loop_now; // its value follows the counter the launch keeps
        s.round_index = round_index_now;
        s.test_values = v;
      }
    }
    if (s.reads_values) {
      s.test_values = v; // what the read values join at the launch
      // The buffers whose values it reads, as this round passes them (after swaps), though the
      // kernel may not take them (a frontier's count the host reads, not the kernel).
      for (size_t n : value_reads(s)) alias(s, value_slots.at(n - names.size()));
    }
    push(std::move(s));
  };
  // Whether nothing in `nodes` but the scalars their own steps pass (nested: none) reads counter
  // `index`: the rounds of a while loop with that body differ only in those scalars and the swaps'
  // parity, so the plan holds two of them and the launch repeats them (LaunchStep::round_loop).
  std::function<bool(const std::vector<SpecNode>&, int, bool)> periodic = [&](const std::vector<SpecNode>& nodes, int index,
                                                                              bool nested) {
    for (const SpecNode& m : nodes) {
      if (m.step < 0) {
        if (reads_name(m.repeat, index) || (m.until >= 0 && reads_name(whiles[size_t(m.until)].cond, index)) ||
            !periodic(m.body, index, true))
          return false;
        continue;
      }
      const SpecStep& t = st[size_t(m.step)];
      for (int d = 0; d < 3; ++d)
        if (reads_name(t.grid[d], index) || reads_name(t.block[d], index) || reads_name(t.cluster[d], index)) return false;
      if (reads_name(t.smem, index) || reads_name(t.when, index)) return false; // a `when` of the counter picks rounds
      for (const Expr& e : t.arg_offsets)
        if (reads_name(e, index)) return false;
      if (nested)
        for (int k : step_args(t.args))
          if (reads_name(args[size_t(k)].value, index)) return false;
      for (int k : step_args(t.args)) // a struct of the counter: its bytes are the plan's, a launch each
        for (const SpecArg::Field& f : args[size_t(k)].fields) {
          if (reads_name(f.at, index)) return false;
          for (const Expr& e : f.values)
            if (reads_name(e, index)) return false;
        }
    }
    return true;
  };
  std::function<void(const std::vector<SpecNode>&)> run = [&](const std::vector<SpecNode>& nodes) {
    for (const SpecNode& n : nodes) {
      if (n.step >= 0) {
        launch(size_t(n.step));
        continue;
      }
      // A while loop whose rounds the launch repeats (below) holds two of them whatever its bound:
      // a BFS bounded by its nodes may have more than the plan's steps.
      const bool repeated = n.until >= 0 && periodic(n.body, n.index, false) &&
                            std::none_of(symbols.begin(), symbols.end(), [&](const SpecSymbol& y) {
                              return y.planned && (reads_name(y.offset, n.index) || reads_name(y.count, n.index));
                            });
      const long long rounds = n.repeat.eval_integer(v, 0, repeated ? 9.0e15 : double(kMaxLaunches), "rounds" + where());
      const std::vector<int> before = holds; // an enclosing loop's swaps hold here
      for (const auto& [x, y] : n.swaps)
        if (count_of(size_t(x), p, c) != count_of(size_t(y), p, c))
          throw UsageError(path + ": a loop swaps " + args[size_t(x)].name + " and " + args[size_t(y)].name + ", which hold " +
                           std::to_string(count_of(size_t(x), p, c)) + " and " + std::to_string(count_of(size_t(y), p, c)) +
                           " elements" + at);
      if (n.until >= 0) {
        // A loop that runs while its condition holds: rounds each ending in a test that leaves the
        // loop where the condition fails, to the copies that put the swapped buffers back after an
        // odd number of rounds, or past them after an even one. Where its rounds differ only in
        // what its counter gives the scalars its own steps pass and the swaps' parity (repeated),
        // the plan holds two, after a step that starts the counter at 0, and the second's test
        // goes back to the first while the condition holds, the counter one up at every test; else
        // every round up to `rounds` is unrolled.
        if (rounds == 0) continue;
        const std::vector<int> read_args = whiles[size_t(n.until)].buffers_read(names.size());
        const int loop = repeated ? compact_loops++ : -1;
        if (repeated) {
          LaunchStep entry = control({});
          entry.round_loop = loop;
          entry.round_entry = true;
          push(std::move(entry));
        }
        const int outer_loop = round_loop_now, outer_index = round_index_now;
        if (repeated) round_loop_now = loop, round_index_now = n.index;
        const size_t first_round = plan.steps.size();
        std::vector<size_t> exits[2]; // the tests leaving after an even / odd number of rounds
        for (long long k = 0; k < (repeated ? std::min(rounds, 2LL) : rounds); ++k) {
          if (n.index >= 0) v[size_t(n.index)] = double(k);
          // A repeated round's launches find the last round's slices, not the plan's: each copies its own.
          if (repeated) std::fill(slices.begin(), slices.end(), std::make_pair(-1LL, -1LL));
          for (int r : n.resets) {
            LaunchStep s = control({r});
            s.set_arg = r;
            push(std::move(s));
          }
          run(n.body);
          LaunchStep t = control(read_args); // read as this round passed them
          t.test = n.until;
          t.test_values = v;
          const auto& reads = whiles[size_t(n.until)].reads;
          if (std::any_of(reads.begin(), reads.end(), [](SpecWhile::Read r) { return r != SpecWhile::first; })) {
            t.reduce_kernel = int(st.size()); // kernel_names puts ktune_spec_reduce after the steps
            t.reduce_scratch = reduce_scratch();
          }
          if (repeated) {
            t.round_loop = loop;
            t.round_index = n.index;
            t.round_max = rounds;
            t.jump_back = k == 1 ? int(first_round) : -1;
          } else {
            t.test_last = k + 1 == rounds;
          }
          exits[(k + 1) % 2].push_back(plan.steps.size());
          push(std::move(t));
          for (const auto& [x, y] : n.swaps) std::swap(holds[size_t(x)], holds[size_t(y)]);
        }
        round_loop_now = outer_loop, round_index_now = outer_index;
        std::vector<int> odd = before;
        for (const auto& [x, y] : n.swaps) std::swap(odd[size_t(x)], odd[size_t(y)]);
        const size_t odd_tail = plan.steps.size();
        copy_back(n, before, odd);
        for (size_t e : exits[1]) plan.steps[e].jump = int(odd_tail);
        for (size_t e : exits[0]) plan.steps[e].jump = int(plan.steps.size());
        if (n.index >= 0) v[size_t(n.index)] = 0;
        holds = before;
        // Where the rounds stopped is known only when they run: the next launch copies its slices.
        std::fill(slices.begin(), slices.end(), std::make_pair(-1LL, -1LL));
        continue;
      }
      for (long long k = 0; k < rounds; ++k) {
        if (n.index >= 0) v[size_t(n.index)] = double(k);
        run(n.body);
        for (const auto& [x, y] : n.swaps) std::swap(holds[size_t(x)], holds[size_t(y)]);
      }
      if (n.index >= 0) v[size_t(n.index)] = 0;
      // After an odd number of rounds the first of each pair holds its data in the buffer its
      // partner held when the loop began: copied back into its own of then (the second's is left
      // holding the same), so that what follows the loop, an enclosing loop's rounds included,
      // finds each argument where it was.
      copy_back(n, before, holds);
      holds = before;
    }
  };
  const std::vector<SpecNode>& order = order_of(st);
  if (order.empty())
    for (size_t i = 0; i < st.size(); ++i) launch(i);
  else
    run(order);
  return plan;
}

namespace {

std::vector<std::string> param_reads(const KernelSpec& s, const std::vector<const Expr*>& es) {
  std::vector<std::string> r;
  for (const Expr* e : es)
    for (size_t i : e->reads())
      if (i < s.params.size() && std::find(r.begin(), r.end(), s.names[i]) == r.end()) r.push_back(s.names[i]);
  // Family::restrict wants them declared, in any order; depth is the last one
  return r;
}

// Why no config is valid: the constraints that reject every combination of the parameters'
// values, else those that reject the most (at most 200000 combinations looked at).
std::string why_none(const Family& f, const Problem& p, const DeviceInfo& d) {
  std::map<std::string, size_t> rejects;
  size_t seen = 0;
  Config c;
  std::function<void(size_t)> each = [&](size_t k) {
    if (seen >= 200000) return;
    if (k == f.params().size()) {
      ++seen;
      for (const auto& w : f.violations(c, p, d)) ++rejects[w];
      return;
    }
    for (int v : f.params()[k].values) {
      c.set(f.params()[k].name, v);
      each(k + 1);
    }
  };
  each(0);
  std::vector<std::pair<size_t, std::string>> by;
  for (const auto& [w, n] : rejects) by.emplace_back(n, w);
  std::sort(by.begin(), by.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  const bool all = seen < 200000; // every combination looked at
  for (size_t i = 0; i < by.size() && (by[i].first == seen || i < 3); ++i)
    out += "\n  - " + by[i].second +
           (by[i].first == seen ? (all ? " (rejects every config)" : " (rejects all " + std::to_string(seen) + " looked at)")
                                : " (rejects " + std::to_string(by[i].first) + " of " + std::to_string(seen) + ")");
  return out.empty() ? "" : ":" + out;
}

// The counters' values a step's launch limits are checked at: every counter 0, and each loop at
// its last round (outermost first, so that an inner loop's rounds see their outer counters' last):
// the ends of the range an expression monotone in its counters takes. A plan unrolls every round
// and names any other that breaks a limit.
std::vector<std::vector<double>> counter_ends(const SpecStep& t, std::vector<double> v) {
  std::vector<std::vector<double>> out{v};
  bool last = false;
  for (size_t k = 0; k < t.within.size() && k < t.within_counters.size(); ++k) {
    const int i = t.within_counters[k];
    if (i < 0) continue;
    const double rounds = t.within[k].eval(v);
    if (rounds >= 1) v[size_t(i)] = rounds - 1, last = true;
  }
  if (last) out.push_back(std::move(v));
  return out;
}

Family spec_family(const std::shared_ptr<const KernelSpec>& sp) {
  const KernelSpec& s = *sp;
  Family f(s.op, s.source_name);
  f.op(s.op).dtypes(s.dtypes).source_text(s.source).describe(s.about.empty() ? "a user's kernel from " + s.path : s.about);
  if (s.min_arch) f.min_arch(s.min_arch).arch_specific(s.arch_specific);
  for (const auto& p : s.params) f.param(p.name, p.values);
  for (const Expr& e : s.constraints)
    f.restrict(e.where() + ": " + e.text(), param_reads(s, {&e}), [sp, e](const Config& c, const Problem& p, const DeviceInfo& d) {
      return e.eval(sp->values(c, p, d)) != 0;
    });
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const SpecStep& st = s.steps[i];
    const std::string step = s.steps.size() > 1 ? "launch[" + std::to_string(i) + "]" : "launch";
    // What a limit of the step reads: its own expressions, and the rounds of the loops it is in.
    auto reads = [&](std::vector<const Expr*> es) {
      for (const Expr& e : st.within) es.push_back(&e);
      return param_reads(s, es);
    };
    // Each limit holds at both ends of the step's counters (counter_ends); a step not launched
    // (skipped) does not bind the config.
    auto limit = [&](std::string why, std::vector<const Expr*> es,
                     std::function<bool(const SpecStep&, const std::vector<double>&, const DeviceInfo&)> holds) {
      f.restrict(std::move(why), reads(std::move(es)), [sp, i, holds](const Config& c, const Problem& p, const DeviceInfo& d) {
        const SpecStep& t = sp->steps[i];
        if (sp->skipped(t, c, p)) return true;
        for (const auto& v : counter_ends(t, sp->values(c, p, d)))
          if (!holds(t, v, d)) return false;
        return true;
      });
    };
    // A block that is a constant of the source is bounded at its launch (Module::block_of).
    if (st.block_constant.empty())
      limit(step + ": threads a block (block x * y * z) within the device's limit" +
                (s.max_threads ? " and max_threads " + std::to_string(s.max_threads) : std::string()),
            {&st.block[0], &st.block[1], &st.block[2]}, [sp](const SpecStep& t, const std::vector<double>& v, const DeviceInfo& d) {
              const double n = t.block[0].eval(v) * t.block[1].eval(v) * t.block[2].eval(v);
              return n >= 1 && n <= d.max_threads_per_block && (!sp->max_threads || n <= sp->max_threads);
            });
    limit(step + ": dynamic shared memory within the device's opt-in limit", {&st.smem},
          [](const SpecStep& t, const std::vector<double>& v, const DeviceInfo& d) {
            return t.smem.eval(v) <= d.max_smem_per_block_optin;
          });
    limit(step + ": a grid of 1 to 2^31-1 blocks along x, 1 to 65535 along y and z", {&st.grid[0], &st.grid[1], &st.grid[2]},
          [sp](const SpecStep& t, const std::vector<double>& v, const DeviceInfo&) {
            // An axis that reads a buffer's value is known at the launch only (checked there).
            auto at = [&](int d) { return sp->reads_values(t.grid[d]) ? 1.0 : t.grid[d].eval(v); };
            const double x = at(0), y = at(1), z = at(2);
            return x >= 1 && x <= 2147483647.0 && y >= 1 && y <= 65535 && z >= 1 && z <= 65535;
          });
    if (st.cluster[0].empty()) continue;
    limit(step + ": a cluster of at most 8 blocks that tiles the grid, on sm_90 or later",
          {&st.cluster[0], &st.cluster[1], &st.cluster[2], &st.grid[0], &st.grid[1], &st.grid[2]},
          [](const SpecStep& t, const std::vector<double>& v, const DeviceInfo& d) {
            double blocks = 1;
            for (int k = 0; k < 3; ++k) {
              const double n = t.cluster[k].eval(v), g = t.grid[k].eval(v);
              if (n < 1 || n != std::floor(n) || std::fmod(g, n) != 0) return false;
              blocks *= n;
            }
            return blocks <= 8 && (blocks == 1 || d.arch_number() >= 90);
          });
  }
  // A tensor map a launched step passes must be one TMA takes (strides, box, swizzle span, within
  // its buffer): a config whose box breaks a limit, or a problem whose rows are no multiple of 16
  // bytes, is not valid, rather than compiled and failed at its launch.
  for (size_t i = 0; i < s.args.size(); ++i)
    for (size_t fi = 0; fi < s.args[i].fields.size(); ++fi) {
      const SpecArg::Field& fl = s.args[i].fields[fi];
      if (!fl.is_map()) continue;
      std::vector<const Expr*> es;
      for (const Expr& e : fl.map.box) es.push_back(&e);
      for (const SpecStep& st : s.steps) {
        if (!st.when.empty()) es.push_back(&st.when);
        for (const Expr& e : st.within) es.push_back(&e);
      }
      f.restrict("tensor map " + s.args[i].map_name(fi) + " within TMA's limits (strides and the box's inner bytes multiples of 16, a box of 1 to "
                 "256 an axis within the swizzle span, inside its buffer)",
                 param_reads(s, es), [sp, i, fi](const Config& c, const Problem& p, const DeviceInfo&) {
                   if (!sp->passes_launched(i, sp->steps, c, p)) return true;
                   try {
                     sp->tensor_map_at(i, p, c, fi);
                     return true;
                   } catch (const UsageError&) {
                     return false;
                   }
                 });
    }
  f.kernels([sp](const Config& c, const Problem& p) { return sp->kernel_names(sp->steps, c, p); });
  f.launch([sp](const Config& c, const Problem& p) { return sp->plan(sp->steps, c, p); });
  f.options([sp](const Config& c, const Problem& p) { return sp->compile_options(c, p); });
  f.build_macros(sp->build_macros());
  f.headers(sp->std_headers);
  // The spec's default where it is valid, else the first valid config in declaration order.
  const Family bare = f;
  f.defaults([sp, bare](const Problem& p, const DeviceInfo& d) {
    if (!sp->default_config.items().empty() && bare.valid(sp->default_config, p, d)) return sp->default_config;
    Config first;
    bare.enumerate(p, d, [&](const Config& c) { return first = c, false; });
    if (first.items().empty())
      throw UsageError(sp->path + ": no config of the spec is valid for " + p.key() + " on " + d.arch + why_none(bare, p, d));
    return first;
  });
  return f;
}

OpInfo spec_op_info(const std::shared_ptr<const KernelSpec>& sp) {
  const KernelSpec& s = *sp;
  OpInfo o;
  o.name = s.op;
  o.about = (s.about.empty() ? "user kernel " + s.name : s.about) + " (spec " + s.path + ", version " + s.version + ")";
  o.dims = s.dims;
  for (const auto& a : s.args)
    if (a.scalar() && a.value.empty()) o.scalars.emplace_back(a.name, a.default_value);
  o.min_ld = [](const std::vector<int64_t>&, const std::string&) { return std::vector<int64_t>{}; };
  o.validate = [sp](const Problem& p) {
    // A dimension may be 0: a flag of the problem (rotary's IS_NEOX), or an empty batch (a call
    // whose outputs are all empty launches nothing).
    for (size_t i = 0; i < p.dims.size(); ++i)
      if (p.dims[i] < 0) throw UsageError("invalid " + sp->name + " problem " + p.key() + ": " + sp->dims[i] + " must be >= 0");
    if (std::find(sp->dtypes.begin(), sp->dtypes.end(), p.dtype) == sp->dtypes.end())
      throw UsageError("invalid " + sp->name + " problem " + p.key() + ": the spec takes dtypes " + [&] {
        std::string l;
        for (DType d : sp->dtypes) l += (l.empty() ? "" : ", ") + std::string(to_string(d));
        return l;
      }());
    // A negative or absurd size names its field (a temporary's that follows the config: at a plan).
    for (size_t i = 0; i < sp->args.size(); ++i)
      if (sp->args[i].buffer && !sp->args[i].follows_config) sp->count_of(i, p);
  };
  const std::vector<double> none;
  o.flops = [sp](const Problem& p) {
    return sp->flops.empty() ? 0.0 : sp->flops.eval(sp->problem_values(p));
  };
  o.min_bytes = [sp](const Problem& p) {
    if (!sp->bytes.empty()) return sp->bytes.eval(sp->problem_values(p));
    double b = 0;
    for (size_t i = 0; i < sp->args.size(); ++i)
      if (sp->args[i].buffer && sp->args[i].intent != SpecArg::temp)
        b += double(sp->count_of(i, p)) * elem_bytes(sp->args[i].elem(p)) * (sp->args[i].intent == SpecArg::inout ? 2 : 1);
    return b;
  };
  o.runner = "spec";
  if (s.has_baseline) o.baseline = "baseline"; // summaries show the tuned kernel's speed-up over it
  for (size_t i = 0; i < s.args.size(); ++i) {
    const SpecArg& a = s.args[i];
    if (!a.buffer || a.intent == SpecArg::temp) continue;
    o.operands.emplace_back(a.name, a.intent == SpecArg::out, [sp, i](const Problem& p) { return sp->count_of(i, p); },
                            a.fill.lo, a.fill.hi);
    o.operands.back().updated = a.intent == SpecArg::inout;
    if (!a.problem_dtype) o.operands.back().elem_bytes = elem_bytes(a.type);
  }
  o.families = [sp] { return std::vector<Family>{spec_family(sp)}; };
  o.spec = sp;
  return o;
}

std::string register_spec(KernelSpec parsed) {
  static std::mutex m;
  std::lock_guard<std::mutex> lk(m);
  for (const auto& o : ops())
    if (o.name == parsed.op) return o.name; // the same spec and sources: already served
  auto sp = std::make_shared<const KernelSpec>(std::move(parsed));
  // Find now what a first use would find wrong, while the spec is being loaded: the name
  // expressions' placeholders, and for a probe problem (every dimension 4096, sm_90's limits) the
  // first valid config's path through the constraints (a division by zero on it), its launch
  // plan (a grid of 0) and names.
  Config first;
  for (const auto& p : sp->params) first.set(p.name, p.values.front());
  OpInfo info = spec_op_info(sp);
  Problem probe;
  probe.op = sp->op;
  probe.dims.assign(sp->dims.size(), 4096);
  probe.dtype = sp->dtypes.front();
  sp->kernel_names(sp->steps, first, probe);
  if (sp->check) sp->kernel_names(sp->reference_steps, sp->reference_config, probe);
  if (sp->has_setup) sp->kernel_names(sp->setup_steps, sp->setup_config, probe);
  if (sp->has_post) sp->kernel_names(sp->post_steps, sp->post_config, probe);
  const Family f = info.families().front();
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  Config valid;
  f.enumerate(probe, d, [&](const Config& c) { return valid = c, false; });
  if (!valid.items().empty()) {
    // The probe's problem is not the user's: a grid or a count that is no whole number at 4096
    // ("n / 3") says nothing of the spec (the user's problems meet it at their plans); a division
    // by zero or a name it lacks does. A launch with loops is not unrolled here: their rounds at
    // 4096 (a triangular loop's millions of launches) say nothing of the user's problems either.
    if (sp->order.empty()) try {
        sp->plan(sp->steps, valid, probe);
      } catch (const NotWholeError&) {
      }
    sp->kernel_names(sp->steps, valid, probe);
  }
  return register_op(std::move(info)).name;
}

} // namespace

std::string load_kernel_spec(const std::string& path) {
  const std::string text = read_text_file(path, "kernel spec");
  const std::string dir = std::filesystem::path(path).parent_path().string();
  KernelSpec s = parse_kernel_spec(text, path, dir.empty() ? "." : dir);
  s.file = std::filesystem::absolute(path).lexically_normal().string();
  return register_spec(std::move(s));
}

std::string spec_path(const std::string& op) {
  const std::string& f = spec_of(op).file;
  if (f.empty()) throw UsageError("op " + op + " was loaded from JSON text, not a file: no other process can load it");
  return f;
}

std::string load_kernel_spec_text(const std::string& json, const std::string& origin, const std::string& base_dir) {
  return register_spec(parse_kernel_spec(json, origin, base_dir.empty() ? "." : base_dir));
}

std::string spec_base_name(const std::string& op) {
  const size_t at = op.find('@');
  return at == std::string::npos ? op : op.substr(0, at);
}

const KernelSpec& spec_of(const std::string& op) {
  const OpInfo& o = op_info(op);
  if (!o.spec) throw Error("op " + op + " is not a user's kernel (it has no spec)");
  return *o.spec;
}

} // namespace ktune
