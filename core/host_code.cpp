#include "core/host_code.h"
#include "core/nvrtc_std.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/kernel_spec.h" // find_word, trim

namespace ktune {

const char* const kHostDataBegin = "/*__ktune_host_data_begin*/";
const char* const kHostDataEnd = "/*__ktune_host_data_end*/";

namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// A C++ keyword a header may #define for an old compiler (CUTLASS's platform.h: `#define
// constexpr` before C++11, in an #if this reading does not evaluate): never read as its macro.
// Nor are CUDA's execution and memory spaces, which a header defines away for its host-only
// compilers (faiss's StaticUtils.h: `#ifndef __host__ #define __host__ ...`): NVRTC defines them,
// and read as nothing they would make every `__host__ __device__` function after a host one.
bool keyword(const std::string& w) {
  static const std::set<std::string> k = {"constexpr", "const", "static", "inline", "noexcept", "override", "final", "nullptr",
                                          "thread_local", "alignas", "alignof", "decltype", "static_assert", "explicit", "virtual",
                                          "volatile", "consteval", "constinit", "char16_t", "char32_t", "__host__", "__device__",
                                          "__global__", "__shared__", "__constant__", "__managed__", "__forceinline__", "__noinline__"};
  return k.count(w) > 0;
}

// The language's own words, which name no function a declaration may seem to (a fundamental
// type's, an operator's, a cast's).
bool language_word(const std::string& w) {
  static const std::set<std::string> reserved = {
      "void", "bool", "char", "wchar_t", "char8_t", "char16_t", "char32_t", "short", "int", "long", "signed", "unsigned", "float", "double",
      "auto", "const", "volatile", "typename", "template", "struct", "class", "union", "enum", "true", "false", "nullptr", "this",
      "sizeof", "decltype", "alignof", "noexcept", "new", "delete", "operator", "static_cast", "reinterpret_cast", "const_cast", "dynamic_cast"};
  return reserved.count(w) > 0;
}

// The index just past the string or character literal that opens at t[i].
size_t literal_end(const std::string& t, size_t i) {
  const char q = t[i];
  for (++i; i < t.size() && t[i] != q && t[i] != '\n'; ++i)
    if (t[i] == '\\') ++i;
  return std::min(i + 1, t.size());
}

// A function-like macro's definition from its #define line (continuations and all), from the
// '(' after its name at n: "(parameters) replacement", its comments and continuations gone.
std::string definition_of(const std::string& line, size_t n) {
  std::string def;
  for (size_t c = n; c < line.size(); ++c) {
    if (line[c] == '"' || line[c] == '\'') {
      const size_t l = literal_end(line, c);
      def += line.substr(c, l - c);
      c = l - 1;
    } else if (line.compare(c, 2, "//") == 0) {
      break;
    } else if (line.compare(c, 2, "/*") == 0) {
      const size_t close = line.find("*/", c + 2);
      def += ' ';
      if (close == std::string::npos) break;
      c = close + 1;
    } else if (line[c] == '\\' && c + 1 < line.size() && (line[c + 1] == '\n' || line[c + 1] == '\r')) {
      def += ' ';
    } else if (line[c] != '\r') {
      def += line[c] == '\n' ? ' ' : line[c];
    }
  }
  return def;
}

// How NVRTC reads an #if's condition, where the words it holds decide it: `defined` of a macro
// NVRTC defines (__CUDACC__, __CUDACC_RTC__, __CUDA_ARCH__, the execution spaces) or the compile
// does (`defined`: the spec's defines and -D options), or of another compiler's or a host
// platform's (__NVCC__, __clang__, __GNUC__, _MSC_VER, HIP's), __cplusplus (C++17's, the
// dialect compiled unless a spec names another), numbers, with !, comparisons, && and ||
// between; a macro the text defined where every branch around its #define is one NVRTC compiles
// (`sure`: CUTLASS's CUTLASS_CPLUSPLUS, __cplusplus) is read as its replacement; anything else
// (a project's other macros, arithmetic) is kMaybe. __CUDA_ARCH__ is each arch from min_arch on
// (as it spells them, 800 for sm_80): a comparison of it is known where all give one answer
// (`__CUDA_ARCH__ < 800` guards Marlin's fallback for older GPUs; a spec of "arch": "sm_80" never
// compiles it).
enum Truth { kNo, kYes, kMaybe };
// The archs CUDA 13 compiles for, as __CUDA_ARCH__ spells them, and one newer than any.
const std::vector<long long>& compiled_archs() {
  static const std::vector<long long> archs = {750, 800, 860, 870, 880, 890, 900, 1000, 1030, 1100, 1200, 1210, 9990};
  return archs;
}
Truth nvrtc_condition(const std::string& e, const std::map<std::string, std::string>& sure, int min_arch, int depth = 0,
                      const std::map<std::string, std::string>* defined = nullptr) {
  // __linux__ and __unix__ as nvcc's host compiler has them on Linux (nvrtc_nvcc_prelude defines them).
  // CUDA's execution and memory spaces are macros of NVRTC's own headers.
  static const std::set<std::string> defined_here = {"__CUDACC__", "__CUDACC_RTC__", "__CUDA_ARCH__", "__cplusplus", "__linux__", "__unix__",
                                                     "__host__", "__device__", "__global__", "__shared__", "__constant__", "__managed__",
                                                     "__forceinline__", "__noinline__"};
  // Windows' and macOS's platform macros too (cuda-samples' `defined(WIN32) || defined(_WIN64)`):
  // ktune's NVRTC runs on Linux.
  static const std::set<std::string> not_here = {"__NVCC__", "__clang__", "__GNUC__", "_MSC_VER", "_MSVC_LANG", "_WIN32", "__CUDA__",
                                                 "__NVCOMPILER", "_NVHPC_CUDA", "__HIPCC__", "__HIP__", "__HIP_PLATFORM_AMD__",
                                                 "__HIP_DEVICE_COMPILE__", "WIN32", "_WIN64", "WIN64", "__MINGW32__", "__MINGW64__",
                                                 "__CYGWIN__", "__APPLE__"};
  // A project's flag for another GPU maker's build (PyTorch's USE_ROCM, ggml's GGML_USE_HIP and
  // GGML_USE_MUSA, mmcv's MMCV_WITH_MUSA), or for another platform's (Kaldi's MINGW, which its
  // build sets on MinGW: `#if defined(_MSC_VER) || defined(MINGW)` opens its Windows timer): a
  // CUDA build on Linux never sets it, so NVRTC reads it as no macro, unless the text itself
  // defines it where NVRTC compiles (or the compile's -D does, which is read first).
  static const std::set<std::string> other_parts = {"HIP",   "ROCM",   "MUSA",   "HIPCC",  "MINGW", "MINGW32", "MINGW64",
                                                    "WIN32", "WIN64", "WINDOWS", "CYGWIN", "APPLE", "MACOS",   "DARWIN"};
  auto other_maker = [&](const std::string& w) {
    if (sure.count(w)) return false;
    for (size_t a = 0; a < w.size();) {
      size_t b = w.find('_', a);
      if (b == std::string::npos) b = w.size();
      const std::string part = w.substr(a, b - a);
      if (other_parts.count(part)) return true;
      a = b + 1;
    }
    return false;
  };
  std::vector<std::string> tok;
  for (size_t k = 0; k < e.size();) {
    if (std::isspace(static_cast<unsigned char>(e[k]))) {
      ++k;
    } else if (ident_char(e[k])) {
      size_t n = k;
      while (n < e.size() && ident_char(e[n])) ++n;
      const std::string w = e.substr(k, n - k);
      const auto m = sure.find(w);
      const bool after_defined = !tok.empty() && (tok.back() == "defined" || (tok.back() == "(" && tok.size() > 1 && tok[tok.size() - 2] == "defined"));
      if (m != sure.end() && !after_defined) { // the macro's replacement, read in its place
        if (depth >= 8) return kMaybe;
        return nvrtc_condition(e.substr(0, k) + " (" + m->second + ") " + e.substr(n), sure, min_arch, depth + 1, defined);
      } else {
        tok.push_back(w);
      }
      k = n;
    } else if (e.compare(k, 2, "&&") == 0 || e.compare(k, 2, "||") == 0 || e.compare(k, 2, "<=") == 0 || e.compare(k, 2, ">=") == 0 ||
               e.compare(k, 2, "==") == 0 || e.compare(k, 2, "!=") == 0) {
      tok.push_back(e.substr(k, 2));
      k += 2;
    } else if (std::string("()!<>").find(e[k]) != std::string::npos) {
      tok.push_back(std::string(1, e[k++]));
    } else {
      return kMaybe; // arithmetic, a character literal: not read
    }
  }
  // A value and the others it may take in the compile: __cplusplus is C++17's here, but the
  // compile may be C++20's (a spec's -std=c++20, or the retry for designated initializers);
  // __CUDA_ARCH__ is any arch from min_arch on. A comparison is known only where every value
  // gives one answer.
  struct Val {
    bool known;
    long long v;
    std::vector<long long> also = {};
  };
  const Val unknown{false, 0};
  const std::vector<long long>& archs = compiled_archs();
  size_t at = 0;
  bool bad = false;
  auto next = [&]() -> std::string { return at < tok.size() ? tok[at] : std::string(); };
  std::function<Val()> any;
  std::function<Val()> unary = [&]() -> Val {
    if (at >= tok.size()) return bad = true, unknown;
    const std::string t = tok[at++];
    if (t == "!") {
      const Val v = unary();
      return v.known ? Val{true, v.v == 0} : unknown;
    }
    if (t == "(") {
      const Val v = any();
      if (next() != ")") bad = true;
      ++at;
      return v;
    }
    if (t == "defined") {
      const bool paren = next() == "(";
      if (paren) ++at;
      if (at >= tok.size() || !ident_char(tok[at][0])) return bad = true, unknown;
      const std::string w = tok[at++];
      if (paren && next() != ")") bad = true;
      if (paren) ++at;
      if (defined && defined->count(w)) return Val{true, 1}; // the compile's own -D
      return defined_here.count(w) ? Val{true, 1} : not_here.count(w) || other_maker(w) ? Val{true, 0} : unknown;
    }
    if (std::isdigit(static_cast<unsigned char>(t[0]))) {
      size_t used = 0;
      try {
        const long long v = std::stoll(t, &used, 0);
        if (t.find_first_not_of("uUlL", used) == std::string::npos) return {true, v};
      } catch (const std::exception&) {
      }
      return unknown;
    }
    if (t == "__cplusplus") return {true, 201703, {202002}};
    if (t == "__CUDA_ARCH__") { // min_arch, and every arch above it
      Val v{true, min_arch};
      for (long long a : archs)
        if (a > min_arch) v.also.push_back(a);
      return v;
    }
    // A name: 0 where no macro, a value this reading does not know where one.
    return not_here.count(t) || other_maker(t) ? Val{true, 0} : unknown;
  };
  auto relation = [&]() {
    Val v = unary();
    for (std::string op = next(); op == "<" || op == ">" || op == "<=" || op == ">=" || op == "==" || op == "!="; op = next()) {
      ++at;
      const Val r = unary();
      if (!v.known || !r.known) {
        v = unknown;
        continue;
      }
      auto holds = [&](long long a, long long b) {
        return op == "<" ? a < b : op == ">" ? a > b : op == "<=" ? a <= b : op == ">=" ? a >= b : op == "==" ? a == b : a != b;
      };
      const bool b = holds(v.v, r.v);
      bool one = true;
      for (long long a : v.also) one = one && holds(a, r.v) == b;
      for (long long a : r.also) one = one && holds(v.v, a) == b;
      v = one ? Val{true, b} : unknown;
    }
    return v;
  };
  auto both = [](Val a, Val b, bool conj) -> Val {
    const bool a0 = a.known && a.v == 0, b0 = b.known && b.v == 0, a1 = a.known && a.v != 0, b1 = b.known && b.v != 0;
    if (conj) return a0 || b0 ? Val{true, 0} : a1 && b1 ? Val{true, 1} : Val{false, 0};
    return a1 || b1 ? Val{true, 1} : a0 && b0 ? Val{true, 0} : Val{false, 0};
  };
  std::function<Val()> conj = [&]() {
    Val v = relation();
    while (next() == "&&") ++at, v = both(v, relation(), true);
    return v;
  };
  any = [&]() {
    Val v = conj();
    while (next() == "||") ++at, v = both(v, conj(), false);
    return v;
  };
  const Val v = tok.empty() ? unknown : any();
  return bad || at != tok.size() || !v.known ? kMaybe : v.v != 0 ? kYes : kNo;
}

// The text with comments, string and character literals and preprocessor lines replaced by
// spaces (newlines kept), so that braces and words are the code's own; the object-like macros
// the preprocessor lines define go into *macros, and (*kind)[k] says what t[k] belongs to; the
// function-like ones, where function_like is given, go there (name: replacement after the
// parameter list), and where definitions is given there too as definition_of reads them. A
// #define in a branch NVRTC does not compile (nvrtc_condition: CUTLASS's `#if defined(__NVCC__)
// ... #elif defined(__CUDACC_RTC__) ... #else #define CUTLASS_HOST_DEVICE inline`) is not read.
// With first_branches, the text of each #if group's #elif and #else branches is not read either
// (kLater): a reading of one branch of each, as the preprocessor makes one (of an `#if 0`, the
// branch after it).
// But for the groups `whole` names (by the offset of their #if's '#'), whose every branch
// balances its braces on its own (self_balanced_groups): all their branches are read, as a
// function defined once a branch (tinyexr's miniz: `#if MINIZ_USE_UNALIGNED_LOADS_AND_STORES &&
// ... static mz_bool tdefl_compress_lz_codes(...) {...} #else` the same function `#endif`) is
// code whichever branch is compiled.
// The macros the compile itself defines (`defined`, ProjectReading::defined) are defined from the
// text's first line, with their values, until it #undefs them.
// A branch NVRTC does not compile (kDead) is never read: a statement may end in each branch of an
// #if on the platform (DeepSpeed's `..., rocblas_gemm_algo algo = ...);` under HIP, `...,
// cublasGemmAlgo_t algo = ...);` else), and its text is not the code NVRTC sees.
enum CharKind : char { kCode, kPreprocessor, kComment, kLiteral, kLater, kDead };
std::string code_only(const std::string& t, std::map<std::string, std::string>* macros, std::vector<CharKind>* kind, bool first_branches = false,
                      std::map<std::string, std::string>* function_like = nullptr, int min_arch = ProjectReading{}.min_arch,
                      std::map<std::string, std::string>* definitions = nullptr, const std::set<size_t>* whole = nullptr,
                      const std::map<std::string, std::string>* defined = nullptr) {
  std::string o = t;
  kind->assign(t.size(), kCode);
  auto mark = [&](size_t a, size_t b, CharKind k) { std::fill(kind->begin() + std::ptrdiff_t(a), kind->begin() + std::ptrdiff_t(std::min(b, t.size())), k); };
  auto blank = [&](size_t a, size_t b) {
    for (size_t k = a; k < b && k < o.size(); ++k)
      if (o[k] != '\n') o[k] = ' ';
  };
  bool line_start = true;
  struct Group {
    bool reading, taken;      // this branch is the one read; one was
    bool dead, settled;       // NVRTC does not compile this branch; it compiles an earlier one
    bool live, none_before;   // NVRTC compiles this branch; it compiles none before it
    bool whole;               // every branch is read (in `whole`)
  };
  std::vector<Group> groups; // each open #if group
  // macros #defined where every branch around is live, from the compile's own on
  std::map<std::string, std::string> sure = defined ? *defined : std::map<std::string, std::string>{};
  std::map<std::string, std::string> given = sure; // the compile's own, less those the text #undefs
  std::set<std::string> undefined;         // #undef'd, not #defined again yet
  auto in_later = [&]() { return std::any_of(groups.begin(), groups.end(), [](const Group& g) { return !g.reading; }); };
  auto in_dead = [&]() { return std::any_of(groups.begin(), groups.end(), [](const Group& g) { return g.dead; }); };
  auto in_live = [&]() { return std::all_of(groups.begin(), groups.end(), [](const Group& g) { return g.live; }); };
  for (size_t i = 0; i < t.size();) {
    const char c = t[i];
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    // A line of a branch not read (a directive, indented or not, is still read).
    const bool directive_line = line_start && t[std::min(t.find_first_not_of(" \t", i), t.size() - 1)] == '#';
    if (((first_branches && in_later()) || in_dead()) && !directive_line) {
      size_t e = t.find('\n', i);
      if (e == std::string::npos) e = t.size();
      blank(i, e);
      mark(i, e, in_dead() ? kDead : kLater);
      i = e;
      continue;
    }
    if (line_start && (c == ' ' || c == '\t')) {
      ++i;
      continue;
    }
    if (line_start && c == '#') { // a preprocessor line, with its continuations
      size_t e = i;
      while (e < t.size() && t[e] != '\n') e += (t[e] == '\\' && e + 1 < t.size()) ? 2 : 1;
      std::string line = t.substr(i + 1, e - i - 1);
      for (size_t k = 0; k + 1 < line.size(); ++k)
        if (line[k] == '\\' && line[k + 1] == '\n') line[k] = line[k + 1] = ' ';
      size_t k = line.find_first_not_of(" \t");
      auto directive = [&](const char* d) {
        const size_t n = std::strlen(d);
        return k != std::string::npos && line.compare(k, n, d) == 0 && (k + n == line.size() || !ident_char(line[k + n]));
      };
      // The condition as NVRTC reads it (#ifdef X as defined(X)).
      auto condition = [&](const char* d) {
        const size_t a = k + std::strlen(d);
        const std::string rest = a < line.size() ? line.substr(a) : std::string();
        const std::string named = rest.substr(0, rest.find("//"));
        const std::string dir(d);
        const bool ifdef = dir == "ifdef" || dir == "elifdef", ifndef = dir == "ifndef" || dir == "elifndef";
        return nvrtc_condition(ifdef ? "defined(" + named + ")" : ifndef ? "!defined(" + named + ")" : named, sure, min_arch, 0, &given);
      };
      if (directive("if") || directive("ifdef") || directive("ifndef")) {
        const size_t v = line.find_first_not_of(" \t", k + 2);
        const bool zero = directive("if") && v != std::string::npos && line[v] == '0' && line.find_first_not_of(" \t", v + 1) == std::string::npos;
        const Truth t = condition(directive("ifdef") ? "ifdef" : directive("ifndef") ? "ifndef" : "if");
        // The first branch read is the first NVRTC may compile (of an `#if 0` or `#if
        // defined(USE_ROCM)`, a later one).
        groups.push_back({!zero && t != kNo, !zero && t != kNo, t == kNo, t == kYes, t == kYes, t == kNo, whole != nullptr && whole->count(i) > 0});
      } else if ((directive("elif") || directive("elifdef") || directive("elifndef") || directive("else")) && !groups.empty()) {
        Group& g = groups.back();
        if (directive("else")) {
          g.dead = g.settled;
          g.live = g.none_before;
        } else {
          const Truth t = condition(directive("elifdef") ? "elifdef" : directive("elifndef") ? "elifndef" : "elif");
          g.dead = g.settled || t == kNo;
          g.live = g.none_before && t == kYes;
          g.settled = g.settled || t == kYes;
          g.none_before = g.none_before && t == kNo;
        }
        g.reading = (g.whole || !g.taken) && !g.dead;
        g.taken = g.taken || !g.dead;
      } else if (directive("endif") && !groups.empty()) {
        groups.pop_back();
      }
      if (directive("undef") && !(first_branches && in_later()) && !in_dead()) {
        const size_t a = line.find_first_not_of(" \t", k + 5);
        size_t n = a;
        while (n < line.size() && ident_char(line[n])) ++n;
        // The macro stays for the reading, which reads the text once its #defines are all read
        // (cuda.h #undefs its __CUDA_DEPRECATED at its end); a #define after is no other meaning.
        if (a != std::string::npos) sure.erase(line.substr(a, n - a)), given.erase(line.substr(a, n - a)), undefined.insert(line.substr(a, n - a));
      }
      if (directive("define") && !(first_branches && in_later()) && !in_dead()) {
        k = line.find_first_not_of(" \t", k + 6);
        size_t n = k;
        while (n < line.size() && ident_char(line[n])) ++n;
        if (k != std::string::npos && n > k && (n == line.size() || line[n] != '(')) {
          const std::string name = line.substr(k, n - k), replacement = n < line.size() ? line.substr(n) : std::string();
          // Defined again otherwise, with no #undef between (in branches this reading cannot
          // choose between: glm's GLM_CUDA_FUNC_DECL as __device__, __host__, both or nothing;
          // GLM_CONSTEXPR as constexpr or nothing), the macro reads as every meaning's words
          // together: a function one branch makes a device function or constexpr stays, as
          // where the reading cannot be sure (the last meaning alone made glm's functions host
          // functions, where NVRTC compiles them __device__ __host__).
          if (!keyword(name)) {
            const auto had = macros->find(name);
            const bool after_undef = undefined.erase(name) > 0;
            if (had == macros->end() || after_undef) (*macros)[name] = replacement;
            else if (had->second.find(replacement) == std::string::npos) had->second += " " + replacement;
          }
          if (!keyword(name) && in_live()) sure[name] = replacement.substr(0, std::min(replacement.find("//"), replacement.find("/*")));
          else sure.erase(name);
        } else if (k != std::string::npos && n > k && function_like != nullptr && line.find(')', n) != std::string::npos) {
          (*function_like)[line.substr(k, n - k)] = line.substr(line.find(')', n) + 1);
          if (definitions != nullptr) (*definitions)[line.substr(k, n - k)] = definition_of(line, n);
        }
      }
      blank(i, e);
      mark(i, e, kPreprocessor);
      i = e;
      continue;
    }
    line_start = false;
    if (c == '/' && i + 1 < t.size() && t[i + 1] == '/') {
      size_t e = t.find('\n', i);
      if (e == std::string::npos) e = t.size();
      blank(i, e);
      mark(i, e, kComment);
      i = e;
    } else if (c == '/' && i + 1 < t.size() && t[i + 1] == '*') {
      size_t e = t.find("*/", i + 2);
      e = e == std::string::npos ? t.size() : e + 2;
      blank(i, e);
      mark(i, e, kComment);
      i = e;
    } else if (c == 'R' && i + 1 < t.size() && t[i + 1] == '"' && (i == 0 || !ident_char(t[i - 1]))) { // R"d(...)d"
      const size_t open = t.find('(', i + 2);
      std::string close(1, ')'); // built by appends: GCC 12 misreads ")" + string as an overlapping copy (-Wrestrict)
      if (open != std::string::npos) close += t.substr(i + 2, open - i - 2);
      close += '"';
      size_t e = open == std::string::npos ? std::string::npos : t.find(close, open);
      e = e == std::string::npos ? t.size() : e + close.size();
      blank(i, e);
      mark(i, e, kLiteral);
      i = e;
    } else if (c == '"' || (c == '\'' && (i == 0 || !std::isalnum(static_cast<unsigned char>(t[i - 1]))))) {
      size_t e = i + 1;
      while (e < t.size() && t[e] != c && t[e] != '\n') e += t[e] == '\\' ? 2 : 1;
      e = std::min(e + 1, t.size());
      blank(i, e);
      mark(i, e, kLiteral);
      i = e;
    } else {
      ++i;
    }
  }
  return o;
}

// The #if groups (by the offset of their #if's '#') of a reading of every branch (code and kind,
// from code_only) with two branches or more, whose every branch balances its braces on its own
// and never closes one opened before it.
std::set<size_t> self_balanced_groups(const std::string& t, const std::string& code, const std::vector<CharKind>& kind) {
  struct Open {
    size_t at;
    long depth, low;
    int branches;
    bool balanced;
  };
  std::vector<Open> open;
  std::set<size_t> whole;
  auto close_branch = [](Open& g) { g.balanced = g.balanced && g.depth == 0 && g.low >= 0; };
  for (size_t k = 0; k < t.size(); ++k) {
    if (kind[k] == kPreprocessor && t[k] == '#' && (k == 0 || kind[k - 1] != kPreprocessor)) {
      size_t d = t.find_first_not_of(" \t", k + 1), e = d;
      while (e < t.size() && ident_char(t[e])) ++e;
      const std::string directive = d < t.size() ? t.substr(d, e - d) : "";
      if (directive == "if" || directive == "ifdef" || directive == "ifndef") {
        open.push_back({k, 0, 0, 1, true});
      } else if (!open.empty() && (directive == "elif" || directive == "elifdef" || directive == "elifndef" || directive == "else")) {
        close_branch(open.back());
        open.back().depth = open.back().low = 0;
        ++open.back().branches;
      } else if (!open.empty() && directive == "endif") {
        close_branch(open.back());
        if (open.back().balanced && open.back().branches > 1) whole.insert(open.back().at);
        open.pop_back();
      }
    } else if (kind[k] == kCode && (code[k] == '{' || code[k] == '}')) {
      for (Open& g : open) {
        g.depth += code[k] == '{' ? 1 : -1;
        g.low = std::min(g.low, g.depth);
      }
    }
  }
  return whole;
}

// The words of s (identifiers and keywords), each macro the text defines expanded (to depth 8).
void words_of(const std::string& s, const std::map<std::string, std::string>& macros, int depth, std::vector<std::string>* out) {
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '"') { // a string literal's text names nothing (a macro's `_Pragma("FUNC_IS_PURE;")`)
      for (++i; i < s.size() && s[i] != '"'; ++i)
        if (s[i] == '\\') ++i;
      ++i;
      continue;
    }
    if (!ident_char(s[i]) || std::isdigit(static_cast<unsigned char>(s[i]))) {
      ++i;
      continue;
    }
    size_t e = i;
    while (e < s.size() && ident_char(s[e])) ++e;
    const std::string w = s.substr(i, e - i);
    const auto m = macros.find(w);
    if (m != macros.end() && depth < 8) words_of(m->second, macros, depth + 1, out);
    else out->push_back(w);
    i = e;
  }
}

// Whether a head ends `namespace NAME` as written (`namespace a::b`, an anonymous `namespace`)
// after other text: a statement of a macro with no ';' of its own before it (nlohmann/json's
// `JSON_HEDLEY_DIAGNOSTIC_POP`, a _Pragma or nothing, then `namespace nlohmann {`), which would
// otherwise make the namespace's body one declaration's, left unread.
bool names_namespace(const std::string& head) {
  size_t at = std::string::npos;
  for (size_t k = head.find("namespace"); k != std::string::npos; k = head.find("namespace", k + 1))
    if ((k == 0 || !ident_char(head[k - 1])) && (k + 9 == head.size() || !ident_char(head[k + 9]))) at = k;
  if (at == std::string::npos) return false;
  for (size_t k = at + 9; k < head.size(); ++k)
    if (!ident_char(head[k]) && head[k] != ':' && !std::isspace(static_cast<unsigned char>(head[k]))) return false;
  return true;
}

// The C library's and POSIX's host functions that a project's header brings into its namespace
// by a using-declaration of the global one (xgboost's collective socket.h: `using ::inet_ntop;`):
// their headers' stand-ins (core/nvrtc_std.cpp) declare the types and constants alone.
bool c_library_host_function(const std::string& name) {
  static const std::set<std::string> names = {
      "inet_ntop", "inet_pton", "inet_addr", "inet_ntoa", "htons", "htonl", "ntohs", "ntohl", "socket", "bind", "listen", "accept",
      "connect", "send", "recv", "sendto", "recvfrom", "sendmsg", "recvmsg", "shutdown", "getsockopt", "setsockopt", "getsockname",
      "getpeername", "getaddrinfo", "freeaddrinfo", "gai_strerror", "getnameinfo", "gethostname", "gethostbyname", "poll", "select",
      "close", "read", "write", "fcntl", "ioctl", "pipe", "dup", "dup2", "open", "lseek", "fsync", "unlink", "getpid", "sleep", "usleep"};
  return names.count(name) > 0;
}

bool all_caps(const std::string& w) {
  bool letter = false;
  for (char c : w) {
    if (std::islower(static_cast<unsigned char>(c))) return false;
    letter = letter || std::isupper(static_cast<unsigned char>(c));
  }
  return letter && w.size() > 1;
}

// A head with its leading template parameter lists blanked (their defaults may hold '=' and '(');
// an explicit instantiation's `template` (no '<' after it) stays. A macro of the text that is one
// whole template parameter list (nlohmann/json's `NLOHMANN_BASIC_JSON_TPL_DECLARATION` before
// `class basic_json`) is blanked as the list it writes; one that writes something else before
// the lists (faiss's `FAISS_PRAGMA_IMPRECISE_FUNCTION_BEGIN`, a _Pragma or nothing, on the line
// before `template <bool AllActive = false, ...>`) is read past.
std::string without_template_lists(std::string head, const std::map<std::string, std::string>& macros) {
  // Where the template parameter list starting at `k` of t ("template <...>") ends, or npos.
  auto list_end = [](const std::string& t, size_t k) {
    if (t.compare(k, 8, "template") != 0 || (k + 8 < t.size() && ident_char(t[k + 8]))) return std::string::npos;
    const size_t a = t.find_first_not_of(" \t\n\\", k + 8);
    if (a == std::string::npos || t[a] != '<') return std::string::npos;
    // Inside parentheses '<' and '>' are comparisons (a default's `(D / 16 > 16)`, FlashInfer's
    // VOSplitSmem: C++ asks for the parentheses there) or a template-id's, balanced either way.
    int angles = 0, parens = 0;
    for (size_t e = a; e < t.size(); ++e) {
      if (t[e] == '(') ++parens;
      else if (t[e] == ')') parens = std::max(0, parens - 1);
      else if (parens == 0 && t[e] == '<') ++angles;
      else if (parens == 0 && t[e] == '>' && --angles == 0) return e;
    }
    return std::string::npos;
  };
  size_t k = head.find_first_not_of(" \t\n");
  while (k != std::string::npos) {
    size_t e = list_end(head, k);
    if (e == std::string::npos && ident_char(head[k])) {
      size_t w = k;
      while (w < head.size() && ident_char(head[w])) ++w;
      const auto m = macros.find(head.substr(k, w - k));
      if (m == macros.end()) break;
      const std::string& r = m->second;
      const size_t b = r.find_first_not_of(" \t\n\\");
      const size_t end = b == std::string::npos ? std::string::npos : list_end(r, b);
      if (end == std::string::npos || r.find_first_not_of(" \t\n\\", end + 1) != std::string::npos) {
        k = head.find_first_not_of(" \t\n", w);
        continue;
      }
      e = w - 1;
    }
    if (e == std::string::npos) break;
    head = head.substr(0, k) + std::string(e + 1 - k, ' ') + head.substr(e + 1);
    k = head.find_first_not_of(" \t\n", e + 1);
  }
  return head;
}

bool holds_any(const std::vector<std::string>& words, std::initializer_list<const char*> more);

// *s with each template's argument list, its angle brackets with it, as spaces (one left open, to
// the end). With after_names_only, only a list whose '<' follows a name right away (a template-id,
// where `a < b` is a comparison's), and one left open stays.
void blank_template_arguments(std::string* s, bool after_names_only = false) {
  for (size_t open = s->find('<'); open != std::string::npos; open = s->find('<', open + 1)) {
    if (after_names_only && (open == 0 || !ident_char((*s)[open - 1]))) continue;
    int depth = 0;
    size_t k = open;
    for (; k < s->size(); ++k) {
      if ((*s)[k] == '<') ++depth;
      else if ((*s)[k] == '>' && --depth == 0) break;
    }
    if (after_names_only && k == s->size()) break;
    std::fill(s->begin() + std::ptrdiff_t(open), s->begin() + std::ptrdiff_t(std::min(k + 1, s->size())), ' ');
  }
}

// An ALL_CAPS word before the name (before any '(' or '=') that the text does not define: a
// header's macro may be an execution or memory space.
bool unknown_macro_before_name(const std::string& head, const std::map<std::string, std::string>& macros,
                               const std::map<std::string, std::string>& not_macros) {
  // The declared name itself (the last word before the '(', '=', an array's '[' or the ',' after
  // a declarator list's first name) is left out: a name that is a macro of the text (#define
  // cuMemcpy __CUDA_API_PTDS(cuMemcpy), in cuda.h) is no memory space; nor is an array's bound
  // (cuda-samples' `const char* names[TYPE_COUNT] = {...}`), nor a list's other names
  // (FlashAttention's layer_norm `extern FwdRegistry FWD_FUNCS, PARALLEL_FWD_FUNCS;`; a ',' inside
  // a template's arguments is none).
  size_t bound = head.find('[');
  while (bound != std::string::npos && ((bound + 1 < head.size() && head[bound + 1] == '[') || (bound > 0 && head[bound - 1] == '[')))
    bound = head.find('[', bound + 1); // an attribute's [[...]], before the name
  size_t list = std::string::npos;
  for (size_t k = 0, angle = 0; k < head.size() && list == std::string::npos && head[k] != '(' && head[k] != '='; ++k) {
    if (head[k] == '<') ++angle;
    else if (head[k] == '>' && angle > 0) --angle;
    else if (head[k] == ',' && angle == 0) list = k;
  }
  std::string lead = head.substr(0, std::min({head.find('('), head.find('='), bound, list}));
  size_t e = lead.find_last_not_of(" \t\n");
  e = e == std::string::npos ? 0 : e + 1;
  while (e > 0 && ident_char(lead[e - 1])) --e;
  lead.resize(e);
  // A name that qualifies another (`cutlass::half_t`, where CUTLASS #defines cutlass itself to
  // a namespace of the user's choosing) is a namespace's or a class's, no execution space.
  for (size_t q = lead.find("::"); q != std::string::npos; q = lead.find("::", q + 2)) {
    size_t b = lead.find_last_not_of(" \t\n", q == 0 ? 0 : q - 1);
    if (q == 0 || b == std::string::npos) continue;
    for (++b; b > 0 && ident_char(lead[b - 1]); --b) lead[b - 1] = ' ';
  }
  // Nor is a template's argument (a return type's std::array<float, Params::MAX_COEFFS>, gsplat's).
  blank_template_arguments(&lead);
  std::vector<std::string> before;
  words_of(lead, macros, 0, &before);
  // not_macros: the text's function-like macros (name: replacement) and its templates'
  // parameters (name: ""). A function-like macro is known where its replacement names no
  // execution or memory space (nlohmann/json's `JSON_HEDLEY_WARN_UNUSED_RESULT`, one meaning of
  // which is `JSON_HEDLEY_DIAGNOSTIC_DISABLE_CPP98_COMPAT_WRAP_([[nodiscard]])`); a template
  // parameter is no macro.
  auto known_call = [&](const std::string& w) {
    const auto f = not_macros.find(w);
    if (f == not_macros.end()) return false;
    std::vector<std::string> r;
    words_of(f->second, macros, 0, &r);
    return !holds_any(r, {"__host__", "__device__", "__global__", "__constant__", "__shared__", "__managed__"});
  };
  for (const auto& w : before)
    if (all_caps(w) && w != "FILE" && !known_call(w)) return true;
  return false;
}

// What a top-level pair of parentheses holds reads as a parameter list rather than a
// constructor's arguments: empty, or a word followed by another word, a '*' or a '&' (int n,
// char*, const T&), or a builtin type's name alone (f(int)). A template's arguments, a '<'
// right after a name to its '>', are read past, so that a template-id is a type's word too
// (faiss's move constructor `__host__ DeviceTensor(DeviceTensor<T, Dim, InnerContig, IndexT,
// PtrTraits>&& t);`); a comparison spelled `a < b` is no template's.
bool reads_as_parameters(const std::string& parameters, const std::map<std::string, std::string>& macros) {
  if (parameters.find_first_not_of(" \t\n") == std::string::npos) return true;
  std::string inside = parameters;
  blank_template_arguments(&inside, true);
  std::vector<std::string> words;
  words_of(inside, macros, 0, &words);
  for (const auto& w : words)
    if (w == "void" || w == "int" || w == "char" || w == "float" || w == "double" || w == "long" || w == "short" || w == "unsigned" ||
        w == "signed" || w == "bool" || w == "const" || w == "size_t")
      return true;
  for (size_t k = 0; k < inside.size(); ++k) {
    if (!ident_char(inside[k]) || std::isdigit(static_cast<unsigned char>(inside[k])) || (k > 0 && ident_char(inside[k - 1]))) continue;
    size_t e = k;
    while (e < inside.size() && ident_char(inside[e])) ++e;
    const size_t next = inside.find_first_not_of(" \t\n", e);
    if (next != std::string::npos && next > e && (ident_char(inside[next]) && !std::isdigit(static_cast<unsigned char>(inside[next]))))
      return true; // two words in a row: a type and a name
    if (next != std::string::npos && (inside[next] == '*' || inside[next] == '&')) {
      const size_t after = inside.find_first_not_of(" \t\n*&", next);
      if (after == std::string::npos || inside[after] == ',' || ident_char(inside[after])) return true;
    }
    k = e;
  }
  return false;
}

// The head with an operator function's symbol (`operator=`, `operator<=`, `operator()`,
// `operator[]`) spelled as letters, so that its '=' is no initializer's and its parentheses no
// parameter list's: `Kernel &operator=(Kernel) noexcept;` declares a function.
std::string with_operator_names(std::string head) {
  for (size_t k = find_word(head, "operator"); k != std::string::npos; k = find_word(head, "operator", k + 8)) {
    size_t a = head.find_first_not_of(" \t\n", k + 8);
    if (a == std::string::npos) break;
    if (head.compare(a, 2, "()") == 0 || head.compare(a, 2, "[]") == 0) {
      head[a] = head[a + 1] = 'o';
      continue;
    }
    for (; a < head.size() && std::strchr("=+-*/%^&|~!<>,", head[a]) && head[a] != '\0'; ++a) head[a] = 'o';
  }
  return head;
}

// The first parameter list of a declaration's head at its top level: its '(' and ')' in *open
// and *close; false where a '=' (an initializer), a '[' or a '{' comes first, or there is none.
bool parameter_list(const std::string& head, size_t* open, size_t* close) {
  int depth = 0;
  *open = *close = std::string::npos;
  for (size_t k = 0; k < head.size() && *close == std::string::npos; ++k) {
    const char h = head[k];
    if (depth == 0 && h == '=' && *open == std::string::npos) return false; // a data member's initializer
    if (h == '(' || h == '[' || h == '{') {
      if (depth == 0 && h == '(') *open = k;
      if (depth == 0 && h != '(') return false; // an array or a braced initializer: data
      ++depth;
    } else if (h == ')' || h == ']' || h == '}') {
      if (--depth == 0 && *open != std::string::npos) *close = k;
    }
  }
  return *open != std::string::npos && *close != std::string::npos;
}

// Where a function's head (template parameter lists blanked) takes the execution space skip gives
// a constexpr function: before its constexpr or consteval keyword as the head spells it, or,
// through a macro (CUTLASS's CUTLASS_CONSTEXPR_IF_CXX17: `words` hold constexpr), before its
// first word; npos where it is not constexpr.
size_t constexpr_keyword_at(const std::string& head, const std::vector<std::string>& words) {
  for (const char* w : {"constexpr", "consteval"})
    if (const size_t k = find_word(head, w); k != std::string::npos) return k;
  return std::find(words.begin(), words.end(), "constexpr") != words.end() ? head.find_first_not_of(" \t\n") : std::string::npos;
}

// The execution space skip adds to a function whose words are `words`: __device__ beside its own
// __host__, else both.
const char* space_to_add(const std::vector<std::string>& words) {
  return std::find(words.begin(), words.end(), "__host__") != words.end() ? "__device__ " : "__host__ __device__ ";
}

// The head with its attributes blanked (`[[nodiscard]]`, `__attribute__((format(printf, 2, 3)))`,
// alignas(16), C's _Alignas(16), __align__(16), __declspec(align(16))), so that their parentheses are no
// parameter list's.
std::string without_attributes(std::string head) {
  for (size_t k = 0; k < head.size(); ++k) {
    size_t end = std::string::npos;
    if (head.compare(k, 2, "[[") == 0) {
      end = head.find("]]", k + 2);
      if (end != std::string::npos) end += 2;
    } else if (ident_char(head[k]) && (k == 0 || !ident_char(head[k - 1]))) {
      size_t e = k;
      while (e < head.size() && ident_char(head[e])) ++e;
      const std::string w = head.substr(k, e - k);
      const size_t open = head.find_first_not_of(" \t\n", e);
      if ((w == "__attribute__" || w == "alignas" || w == "_Alignas" || w == "__align__" || w == "__declspec") && open != std::string::npos && head[open] == '(') {
        int depth = 0;
        for (end = open; end < head.size(); ++end) {
          if (head[end] == '(') ++depth;
          else if (head[end] == ')' && --depth == 0) break;
        }
        end = end < head.size() ? end + 1 : std::string::npos;
      } else {
        k = e - 1;
        continue;
      }
    }
    if (end == std::string::npos) continue;
    for (size_t b = k; b < end; ++b)
      if (head[b] != '\n') head[b] = ' ';
    k = end - 1;
  }
  return head;
}

// Where the name a function's head declares begins and ends ([*begin, *end) in head): the last word
// before its parameter list, template arguments after it (reduce<int>) left out; false where there
// is none.
bool declared_name_at(const std::string& head, size_t* begin, size_t* end) {
  const std::string lead = head.substr(0, head.find('('));
  size_t e = lead.find_last_not_of(" \t\n");
  if (e != std::string::npos && lead[e] == '>') { // an explicit instantiation's template arguments
    int depth = 0;
    for (;; --e) {
      depth += lead[e] == '>' ? 1 : lead[e] == '<' ? -1 : 0;
      if (depth == 0 || e == 0) break;
    }
    e = e == 0 ? std::string::npos : lead.find_last_not_of(" \t\n", e - 1);
  }
  if (e == std::string::npos || !ident_char(lead[e])) return false;
  size_t b = e + 1;
  while (b > 0 && ident_char(lead[b - 1])) --b;
  *begin = b, *end = e + 1;
  return true;
}

// The name a function's head declares (declared_name_at); "" where there is none.
std::string declared_name(const std::string& head) {
  size_t b = 0, e = 0;
  return declared_name_at(head, &b, &e) ? head.substr(b, e - b) : "";
}

// Whether the name a function's head declares is qualified (`inline domain const&
// domain::get<domain::global>() {...}`, a member's definition outside its class, cuDF's nvtx3.hpp):
// the class's own declaration of the member is what an unevaluated operand finds.
bool qualified_name(const std::string& head) {
  size_t b = 0, e = 0;
  if (!declared_name_at(head, &b, &e) || b == 0) return false;
  const size_t before = head.find_last_not_of(" \t\n", b - 1);
  return before != std::string::npos && before > 0 && head[before] == ':' && head[before - 1] == ':';
}

// An explicit instantiation (`template void reduce<int>(int*, int);`, template with no '<'
// after it) of a function: its name, or "".
std::string instantiated_function(const std::string& stmt) {
  const size_t k = stmt.find_first_not_of(" \t\n");
  if (k == std::string::npos || stmt.compare(k, 8, "template") != 0 || (k + 8 < stmt.size() && ident_char(stmt[k + 8]))) return "";
  const size_t a = stmt.find_first_not_of(" \t\n", k + 8);
  if (a == std::string::npos || stmt[a] == '<' || stmt.find('(') == std::string::npos) return "";
  return declared_name(stmt);
}

// Whether text names one of the host library's containers or strings (std::vector, std::string,
// the maps and sets, std::function, std::shared_ptr).
bool holds_host_container(const std::string& text) {
  for (const char* c : {"vector", "string", "map", "unordered_map", "set", "unordered_set", "function", "shared_ptr", "list", "deque"}) {
    for (size_t k = find_word(text, c); k != std::string::npos; k = find_word(text, c, k + 1)) {
      // `std::` before it, spaced or not
      const size_t colons = text.find_last_not_of(" \t\n", k - 1);
      if (colons == std::string::npos || colons < 1 || text.compare(colons - 1, 2, "::") != 0) continue;
      const size_t q = text.find_last_not_of(" \t\n", colons - 2);
      if (q != std::string::npos && q >= 2 && text.compare(q - 2, 3, "std") == 0 && (q < 3 || !ident_char(text[q - 3]))) return true;
    }
  }
  return false;
}

// Whether a function head's parameter list names one of them.
bool takes_host_container(const std::string& head) {
  size_t open = 0, close = 0;
  return parameter_list(head, &open, &close) && holds_host_container(head.substr(open, close - open));
}

// Whether code (comments and literals blanked) holds a lambda expression: a '[' where an
// expression starts (after '=', ',', '(', '{' or '?', or first), not an attribute's `[[`, whose
// matching ']' is followed by its parameters, its body or `mutable`.
bool holds_lambda(const std::string& code) {
  for (size_t k = code.find('['); k != std::string::npos; k = code.find('[', k + 1)) {
    if (k + 1 < code.size() && code[k + 1] == '[') {
      ++k;
      continue;
    }
    const size_t before = k == 0 ? std::string::npos : code.find_last_not_of(" \t\n", k - 1);
    if (before != std::string::npos && std::string("=,({?").find(code[before]) == std::string::npos) continue;
    int depth = 0;
    size_t e = k;
    for (; e < code.size(); ++e)
      if (code[e] == '[') ++depth;
      else if (code[e] == ']' && --depth == 0) break;
    const size_t after = e < code.size() ? code.find_first_not_of(" \t\n", e + 1) : std::string::npos;
    if (after != std::string::npos && (code[after] == '(' || code[after] == '{' || find_word(code.substr(after, 7), "mutable") == 0)) return true;
  }
  return false;
}

// Whether a statement's words declare something other than a host function or variable: an
// alias, an assertion, inline assembly, a kernel or device function; or one of `more`. (A type's
// declaration is declared_type's.)
bool holds_any(const std::vector<std::string>& words, std::initializer_list<const char*> more) {
  static const std::set<std::string> always = {"typedef", "using", "static_assert", "__global__", "__device__", "asm", "__asm__"};
  for (const auto& w : words) {
    if (always.count(w)) return true;
    for (const char* m : more)
      if (w == m) return true;
  }
  return false;
}

// s with its parentheses and brackets, and what they hold, as spaces.
std::string outside_brackets(std::string s) {
  int depth = 0;
  for (char& h : s) {
    const bool open = h == '(' || h == '[', close = h == ')' || h == ']';
    if (close) --depth;
    if (depth > 0 || open || close) h = ' ';
    if (open) ++depth;
  }
  return s;
}

// The class-key of the type a statement (template parameter lists blanked) declares or defines,
// or "" where it names one only as a function's or a variable's type (`struct obj* make_obj(int);`,
// `void print(const struct obj* o);`, ggml's `GGML_API const char* f(enum ggml_status s);`): the
// first class-key of the head (what comes before any body) outside parentheses and brackets,
// with no top-level '(' before a base clause's ':' (or an enum's underlying type's) other than
// an attribute's (alignas(16), __align__(16), __attribute__((packed)), __declspec(align(16)), an
// ALL_CAPS macro's call) or one in the template arguments after the class-key.
std::string declared_type(const std::string& stmt, const std::map<std::string, std::string>& macros) {
  // A definition's statement (`struct X { ... };`, `struct X { ... } x;`): its head is what comes
  // before the body.
  std::string head = stmt;
  int depth = 0;
  for (size_t k = 0; k < stmt.size(); ++k) {
    if (stmt[k] == '(' || stmt[k] == '[') ++depth;
    else if (stmt[k] == ')' || stmt[k] == ']') --depth;
    else if (stmt[k] == '{' && depth == 0) {
      head = stmt.substr(0, k);
      break;
    }
  }
  const std::string top = outside_brackets(head);
  std::vector<std::string> words;
  words_of(top, macros, 0, &words);
  const auto key = std::find_if(words.begin(), words.end(), [](const std::string& w) { return w == "class" || w == "struct" || w == "union" || w == "enum"; });
  if (key == words.end()) return "";
  // No body: `struct X;` declares a type, `class ManagedObjects mo;` (Apex's nccl_p2p_cuda.cu)
  // and `struct timeval tv;` a variable of one, a name after the type's (up to an enum's base).
  if (head.size() == stmt.size()) {
    std::string upto = top.substr(0, [&] {
      for (size_t k = 0; k < top.size(); ++k)
        if (top[k] == ':' && !(k + 1 < top.size() && top[k + 1] == ':') && !(k > 0 && top[k - 1] == ':')) return k;
      return top.size();
    }());
    for (size_t k = 0, angle = 0; k < upto.size(); ++k) { // template arguments name no declarator (`struct X<int>;`)
      if (upto[k] == '<') ++angle;
      else if (upto[k] == '>' && angle > 0) --angle, upto[k] = ' ';
      if (angle > 0) upto[k] = ' ';
    }
    // Read unexpanded: a macro of the text between the class-key and the name is an attribute's
    // or an export's (spdlog's `class SPDLOG_API spdlog_ex`, one meaning of which is
    // `__attribute__((visibility("default")))`, whose words are no declarator).
    // Where the class-key itself came through a macro, expanded.
    auto is_key = [](const std::string& w) { return w == "class" || w == "struct" || w == "union" || w == "enum"; };
    // A qualified name is one name (`template <> struct fmt::formatter<DataType>`, lmdeploy's, is a
    // class's head, not a variable of type fmt named formatter): its parts joined.
    {
      std::string joined;
      auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
      for (size_t k = 0; k < upto.size(); ++k) {
        if (upto.compare(k, 2, "::") != 0) {
          joined += upto[k];
          continue;
        }
        while (!joined.empty() && space(joined.back())) joined.pop_back();
        joined += '_';
        for (k += 2; k < upto.size() && space(upto[k]);) ++k;
        --k;
      }
      upto = joined;
    }
    std::vector<std::string> named;
    words_of(upto, {}, 0, &named);
    if (std::none_of(named.begin(), named.end(), is_key)) named.clear(), words_of(upto, macros, 0, &named);
    auto k = std::find_if(named.begin(), named.end(), is_key);
    if (k == named.end()) return "";
    if (*k == "enum" && k + 1 != named.end() && (k[1] == "class" || k[1] == "struct")) ++k;
    int names = 0;
    for (++k; k < named.end(); ++k)
      if (!(*k == "alignas" || *k == "__align__" || *k == "__attribute__" || *k == "__declspec" || *k == "final" || all_caps(*k) ||
            macros.count(*k)))
        ++names;
    if (names >= 2) return "";
  }
  // Parentheses in the template arguments after the class-key are an argument's (a partial
  // specialization's: CUTLASS's `struct Has_SwapAB<T, void_t<decltype(T::SwapAB)>>`,
  // `class GemmUniversal<..., enable_if_t<not (is_tuple<Mma_>::value)>>`).
  const size_t key_at = find_word(head, *key);
  depth = 0;
  for (size_t k = 0, angle = 0; k < head.size(); ++k) {
    const char h = head[k];
    if (depth == 0 && key_at != std::string::npos && k > key_at && (h == '<' || (h == '>' && angle > 0))) {
      if (h == '<') ++angle;
      else --angle;
      continue;
    }
    if (angle > 0 && depth == 0 && h != '(') continue;
    if (depth == 0 && h == ':') {
      if (k + 1 < head.size() && head[k + 1] == ':') ++k; // a qualified name's
      else break;                                         // a base clause
    } else if (h == '(' || h == '[') {
      if (depth == 0 && h == '(' && angle == 0) {
        size_t e = head.find_last_not_of(" \t\n", k == 0 ? 0 : k - 1);
        size_t b = e == std::string::npos || k == 0 ? 0 : e + 1;
        while (b > 0 && ident_char(head[b - 1])) --b;
        const std::string w = e == std::string::npos || k == 0 ? "" : head.substr(b, e + 1 - b);
        if (!(w == "alignas" || w == "__align__" || w == "__attribute__" || w == "__declspec" || all_caps(w))) return "";
      }
      ++depth;
    } else if (h == ')' || h == ']') {
      --depth;
    }
  }
  return *key;
}

// A statement at namespace scope, ended by ';', that NVRTC refuses as host code: a function's
// declaration without an execution space, or a variable without a memory space that is not
// const (const and constexpr variables are the device's too). Type declarations, aliases,
// concepts (C++20's `template <class T> concept IsTorch = ...;`, gsplat's), static_assert and
// explicit instantiations of kernels stay.
bool host_declaration(const std::string& stmt, const std::map<std::string, std::string>& macros,
                      const std::map<std::string, std::string>& not_macros) {
  const std::string head = with_operator_names(without_template_lists(stmt, macros));
  std::vector<std::string> words;
  words_of(head, macros, 0, &words);
  if (words.empty() || holds_any(words, {"namespace", "friend", "__constant__", "__shared__", "__managed__", "constexpr", "concept"}) ||
      !declared_type(head, macros).empty())
    return false;
  if (words[0] == "template" || unknown_macro_before_name(head, macros, not_macros)) return false;
  const bool has_const = std::find(words.begin(), words.end(), "const") != words.end();
  // Top level: a parameter list (a function's declaration), the declarator's last '*' and a
  // const after it (a const pointer).
  int depth = 0;
  bool paren = false, assign = false;
  size_t last_star = std::string::npos, end = head.size();
  for (size_t k = 0; k < head.size(); ++k) {
    const char h = head[k];
    if (h == '(' || h == '[' || h == '{') {
      if (depth == 0 && h == '(' && !assign) paren = true;
      ++depth;
    } else if (h == ')' || h == ']' || h == '}') {
      --depth;
    } else if (depth == 0 && h == '=' && !assign) {
      assign = true;
      end = k;
    } else if (depth == 0 && h == '*' && !assign) {
      last_star = k;
    }
  }
  // A class template's deduction guide (xgboost's `template <typename T> Span(std::vector<T>&) ->
  // Span<T>;`): no function, which NVRTC takes as it is; read as one, its name went into the
  // names of host functions, and a using-declaration of the class with it.
  if (size_t open = 0, close = 0; paren && parameter_list(head, &open, &close)) {
    const size_t after = head.find_first_not_of(" \t\n", close + 1);
    std::vector<std::string> lead;
    words_of(head.substr(0, open), macros, 0, &lead);
    if (after != std::string::npos && head.compare(after, 2, "->") == 0 &&
        (lead.size() == 1 || (lead.size() == 2 && lead[0] == "explicit")))
      return false;
  }
  if (paren) {
    // A function's declaration, or a variable built by a constructor (const Foo x(1, 2): a const
    // object, the device's too). Only a const before the parentheses can make the latter; and
    // parentheses that hold parameters (const char* name(int n)) still make a function.
    const size_t open = head.find('(');
    std::vector<std::string> lead;
    words_of(head.substr(0, open), macros, 0, &lead);
    if (std::find(lead.begin(), lead.end(), "const") == lead.end()) return true;
    const size_t close = head.find(')', open);
    return reads_as_parameters(head.substr(open + 1, close == std::string::npos ? std::string::npos : close - open - 1), macros);
  }
  if (!has_const) return true;  // a variable NVRTC takes as the host's
  // A const object of the host library's containers (pytorch_scatter's `const std::map<std::string,
  // ReductionType> reduce2REDUCE = {...};`): initialized at run time, which NVRTC refuses; the
  // host's data.
  if (last_star == std::string::npos && holds_host_container(head.substr(0, end))) return true;
  if (last_star == std::string::npos) return false; // a const object
  std::vector<std::string> after;
  words_of(head.substr(last_star, end - last_star), macros, 0, &after);
  return std::find(after.begin(), after.end(), "const") == after.end(); // a pointer to const, itself not
}

// Whether what follows a head's parameter list (its ')' at close) ends a function's declarator:
// cv and ref qualifiers, noexcept(...), virt specifiers, a trailing return type, a macro of them.
// A word of a type and a name after the parentheses (`_Alignas(64) cuuint64_t opaque[16];`, an
// attribute this reading does not know), or a template argument list's '>' (CUTLASS's
// `array_aligned<T, size<1>(Tile{})> smem;`, whose parentheses are a call's), make it data.
bool ends_as_declarator(const std::string& head, size_t close, const std::map<std::string, std::string>& macros) {
  if (head.find("->", close) != std::string::npos) return true;
  const size_t eq = head.find('=', close);
  std::string rest = head.substr(close + 1, eq == std::string::npos ? std::string::npos : eq - close - 1);
  int d = 0;
  for (char& c : rest) {
    if (c == '(') ++d;
    const bool inside = d > 0;
    if (c == ')') --d;
    if (inside || c == ')') c = ' ';
  }
  if (rest.find('>') != std::string::npos) return false;
  std::vector<std::string> after;
  words_of(rest, macros, 0, &after);
  static const std::set<std::string> qualifiers = {"const", "volatile", "noexcept", "throw", "override", "final", "__host__", "__device__"};
  for (const auto& w : after)
    if (!qualifiers.count(w) && !all_caps(w)) return false;
  return true;
}

// A static data member that NVRTC refuses as a host variable: `static` without const, constexpr or
// a memory space (CUTLASS's device adapter's `CUTLASS_THREAD_LOCAL static int device_ordinal_;`,
// its device count cached for the host), with no parentheses before any initializer (a
// function's or a function pointer's, or a macro's call this reading cannot see into). Device code
// cannot read a host variable under nvcc either; its out-of-class definition, a namespace-scope
// variable, goes as host_declaration says.
bool host_static_member(const std::string& stmt, const std::map<std::string, std::string>& macros,
                        const std::map<std::string, std::string>& not_macros) {
  const std::string head = without_template_lists(stmt, macros);
  std::vector<std::string> words;
  words_of(head.substr(0, head.find('=')), macros, 0, &words);
  if (std::find(words.begin(), words.end(), "static") == words.end() || !declared_type(head, macros).empty()) return false;
  if (holds_any(words, {"const", "constexpr", "__managed__", "__constant__", "__shared__", "friend", "decltype"})) return false;
  if (unknown_macro_before_name(head, macros, not_macros)) return false;
  return head.substr(0, head.find('=')).find('(') == std::string::npos;
}

// A member function's declaration in a class body that NVRTC refuses as the host's: a parameter
// list, no execution space, not `= default` or `= delete` (the compiler's own, which NVRTC takes).
// Data members stay, a function pointer among them (`void (*fp)(int);`), as does anything whose
// parentheses may be another construct's (decltype, alignas) or whose head holds a macro the text
// does not define.
bool host_member_declaration(const std::string& stmt, const std::map<std::string, std::string>& macros,
                             const std::map<std::string, std::string>& not_macros) {
  const std::string head = with_operator_names(without_attributes(without_template_lists(stmt, macros)));
  std::vector<std::string> words;
  words_of(head, macros, 0, &words);
  if (words.empty() || holds_any(words, {"decltype"}) || !declared_type(head, macros).empty()) return false;
  if (unknown_macro_before_name(head, macros, not_macros)) return false;
  // The first top-level '(' before any '=': a parameter list, unless it opens a declarator.
  size_t open, close;
  if (!parameter_list(head, &open, &close)) return false;
  const size_t first = head.find_first_not_of(" \t\n", open + 1);
  if (first != std::string::npos && first < close && std::string("*&^").find(head[first]) != std::string::npos) return false;
  // After the parameters: `= default` and `= delete` stay, but a virtual `= default` (NVRTC
  // takes it as the host's: its vtable is), `override` or `final` making it one as `virtual`
  // does (xgboost's `~JsonObject() override = default;`, whose base's virtual destructor goes);
  // `= 0` (pure virtual) goes.
  std::vector<std::string> tail;
  words_of(head.substr(close + 1), macros, 0, &tail);
  if (!ends_as_declarator(head, close, macros)) return false;
  const bool is_virtual = std::find(words.begin(), words.end(), "virtual") != words.end() || holds_any(tail, {"override", "final"});
  return (is_virtual || std::find(tail.begin(), tail.end(), "default") == tail.end()) && std::find(tail.begin(), tail.end(), "delete") == tail.end();
}

// Where a declaration (no body) of a constexpr function without an execution space gets one: the
// offset in stmt of its constexpr (or, through a macro, of its first word after any template
// parameter list), as skip gives a definition's; npos for anything else. Its definitions are
// given `__host__ __device__` too, so that the declaration and they agree (Transformer Engine's
// `template <typename T> constexpr inline const char *type_name() noexcept;`).
size_t constexpr_declaration_at(const std::string& stmt, const std::map<std::string, std::string>& macros,
                                const std::map<std::string, std::string>& not_macros) {
  const std::string head = with_operator_names(without_attributes(without_template_lists(stmt, macros)));
  std::vector<std::string> words;
  words_of(head, macros, 0, &words);
  if (words.empty() || holds_any(words, {"__constant__", "__shared__", "__managed__", "decltype"}) ||
      !declared_type(head, macros).empty() || unknown_macro_before_name(head, macros, not_macros))
    return std::string::npos;
  if (std::find(words.begin(), words.end(), "constexpr") == words.end() && std::find(words.begin(), words.end(), "consteval") == words.end())
    return std::string::npos;
  size_t open, close;
  if (!parameter_list(head, &open, &close)) return std::string::npos; // a variable's initializer, or data
  const std::string inside = head.substr(open + 1, close - open - 1);
  std::vector<std::string> tail;
  words_of(head.substr(close + 1), macros, 0, &tail);
  // Only a function is a friend, an operator, or has a qualifier or trailing return after its
  // parentheses (`friend constexpr bool operator==(half, half);`, `constexpr int g(half) const;`,
  // whose parameters are bare type names).
  const bool function_only = holds_any(words, {"friend", "operator"}) || holds_any(tail, {"const", "noexcept", "override", "final"}) ||
                             head.find("->", close) != std::string::npos;
  if (inside.find_first_not_of(" \t\n") != std::string::npos && !function_only && !reads_as_parameters(inside, macros))
    return std::string::npos; // `constexpr A a(3);`: a variable built by a constructor
  if (std::find(tail.begin(), tail.end(), "default") != tail.end() || std::find(tail.begin(), tail.end(), "delete") != tail.end())
    return std::string::npos; // the compiler's own, which NVRTC takes as it is
  size_t k = constexpr_keyword_at(head, words);
  if (k == std::string::npos) k = head.find_first_not_of(" \t\n"); // consteval through a macro
  // A friend's declaration gets the space after `friend`, as the definition it befriends gets it
  // (the half library's `friend HALF_CONSTEXPR_NOERR bool operator==(half, half);`, constexpr in
  // one of its meanings: blanked, the kept definition lost its access to the class's members).
  if (const size_t f = find_word(head, "friend"); f != std::string::npos && f + 7 <= head.size() && k <= f) k = f + 7;
  return k;
}

// Each `__host__` a variable's declaration carries, written out (Transformer Engine's `constexpr
// __device__ __host__ int TB_DIM = 32;`) or through a known macro (vLLM's `C10_HOST_DEVICE
// constexpr auto FP8_E4M3_MAX = ...;`): nvcc warns that it does not apply (#1835) and goes on,
// NVRTC refuses it. As the word's offset in stmt, its length and what replaces it (a macro's
// meaning less its __host__, padded to the word's length where shorter). A function's declaration
// gives none.
struct HostWord {
  size_t at, length;
  std::string with;
};
std::vector<HostWord> variable_host_words(const std::string& stmt, const std::map<std::string, std::string>& macros) {
  std::vector<HostWord> at;
  for (size_t k = 0; k < stmt.size(); ++k) {
    if (!ident_char(stmt[k]) || (k > 0 && ident_char(stmt[k - 1]))) continue;
    size_t e = k;
    while (e < stmt.size() && ident_char(stmt[e])) ++e;
    const std::string w = stmt.substr(k, e - k);
    if (w == "__host__") {
      at.push_back({k, 8, ""});
    } else if (const auto m = macros.find(w); m != macros.end()) {
      // Its meaning's words, each macro in it expanded (vLLM's MAYBE_HOST_DEVICE, C10_HOST_DEVICE).
      std::vector<std::string> meaning;
      words_of(m->second, macros, 0, &meaning);
      if (std::find(meaning.begin(), meaning.end(), "__host__") != meaning.end()) {
        std::string rest;
        for (const auto& x : meaning)
          if (x != "__host__") rest += (rest.empty() ? "" : " ") + x;
        at.push_back({k, w.size(), rest.size() < w.size() ? rest + std::string(w.size() - rest.size(), ' ') : rest});
      }
    }
    k = e - 1;
  }
  if (at.empty()) return at;
  const std::string head = with_operator_names(without_attributes(without_template_lists(stmt, macros)));
  std::vector<std::string> words;
  words_of(head, macros, 0, &words);
  for (const char* w : {"friend", "__global__", "typedef", "using"})
    if (std::find(words.begin(), words.end(), w) != words.end()) return {};
  if (words.empty() || !declared_type(head, macros).empty()) return {};
  int depth = 0;
  for (size_t k = 0; k < head.size(); ++k) {
    const char h = head[k];
    if (depth == 0 && h == '=') break;
    if (depth == 0 && h == '(') {
      const size_t close = head.find(')', k);
      if (close == std::string::npos || reads_as_parameters(head.substr(k + 1, close - k - 1), macros)) return {}; // a function's
    }
    if (h == '(' || h == '[' || h == '{') ++depth;
    else if (h == ')' || h == ']' || h == '}') --depth;
  }
  return at;
}

// Whether a head declares a template (a `template <...>` with parameters; an explicit
// specialization's `template <>` declares none, its members are compiled as they are).
bool declares_template(const std::string& head) {
  for (size_t k = find_word(head, "template"); k != std::string::npos; k = find_word(head, "template", k + 8)) {
    const size_t a = head.find_first_not_of(" \t\n", k + 8);
    if (a == std::string::npos || head[a] != '<') continue;
    const size_t b = head.find_first_not_of(" \t\n", a + 1);
    if (b != std::string::npos && head[b] != '>') return true;
  }
  return false;
}

// The names read in the text's unevaluated operands (decltype, sizeof, alignof, noexcept): a
// function declared and only asked about there is nvcc's on both sides and needs no definition
// (CuTe's `auto has_tuple_size(T*) -> bool_constant<...>;`, read in
// `decltype(detail::has_tuple_size((T*)0))`), so skip gives its declaration `__host__ __device__`
// where it would blank it (NVRTC would find no function of that name).
std::set<std::string> unevaluated_names(const std::string& code) {
  // The language's own words name no function (`decltype(void(...))` reads no function `void`,
  // which tiny-cuda-nn's `std::function<void(LogSeverity, const std::string&)> g_log_callback =
  // [](...) {...};` would then seem to declare).
  std::set<std::string> names;
  for (const char* op : {"decltype", "sizeof", "alignof", "noexcept"})
    for (size_t k = find_word(code, op); k != std::string::npos; k = find_word(code, op, k + 1)) {
      size_t a = code.find_first_not_of(" \t\n", k + std::strlen(op));
      if (a == std::string::npos || code[a] != '(') continue;
      int depth = 0;
      for (size_t e = a; e < code.size(); ++e) {
        if (code[e] == '(') ++depth;
        else if (code[e] == ')' && --depth == 0) break;
        if (ident_char(code[e]) && !ident_char(code[e - 1])) {
          size_t w = e;
          while (w < code.size() && ident_char(code[w])) ++w;
          if (!language_word(code.substr(e, w - e))) names.insert(code.substr(e, w - e));
        }
      }
    }
  return names;
}

// text with each "\r\n" as "\n" (a file saved with Windows' line ends: FasterTransformer's headers),
// and for each line whether it ended so.
std::string without_crs(const std::string& text, std::vector<bool>* crlf) {
  std::string out;
  out.reserve(text.size());
  for (size_t k = 0; k < text.size(); ++k) {
    if (text[k] == '\r' && k + 1 < text.size() && text[k + 1] == '\n') {
      if (crlf) crlf->push_back(true);
      continue;
    }
    if (text[k] == '\n' && crlf && (k == 0 || text[k - 1] != '\r')) crlf->push_back(false);
    out += text[k];
  }
  return out;
}
} // namespace

void defined_macros(const std::string& text, std::map<std::string, std::string>* macros) {
  std::vector<CharKind> kind;
  code_only(text.find("\r\n") == std::string::npos ? text : without_crs(text, nullptr), macros, &kind);
}

namespace {
std::string skip_host_functions_lf(const std::string& text, int* blanked, const ProjectReading& project, std::set<std::string>* names,
                                   std::set<std::string>* device_names);

// A function-like macro as defined_function_macros keeps it: "(a, b) replacement".
struct FunctionMacro {
  std::vector<std::string> params;
  bool variadic = false;
  std::string body;
};

bool parse_function_macro(const std::string& def, FunctionMacro* m) {
  const size_t close = def.find(')');
  if (def.empty() || def[0] != '(' || close == std::string::npos) return false;
  *m = FunctionMacro{};
  const std::string list = def.substr(1, close - 1);
  if (!trim(list).empty()) {
    for (size_t a = 0; a <= list.size();) {
      size_t e = list.find(',', a);
      if (e == std::string::npos) e = list.size();
      const std::string p = trim(list.substr(a, e - a));
      a = e + 1;
      if (p == "...") m->variadic = true;
      else if (p.empty() || m->variadic || !std::all_of(p.begin(), p.end(), ident_char)) return false; // GNU's named `args...` too
      else m->params.push_back(p);
    }
  }
  m->body = def.substr(close + 1);
  return true;
}

// The function-like macros a call may expand through: the text's own (own, as code_only reads
// them) over the project's, without copying the project's, each parsed once, where first called.
class FunctionMacros {
 public:
  explicit FunctionMacros(const std::map<std::string, std::string>& project) : project_(project) {}
  std::map<std::string, std::string> own;
  // A reading afresh: the text's own definitions go, and what was parsed of them.
  void clear_own() {
    own.clear();
    parsed_.clear();
  }
  bool empty() const { return own.empty() && project_.empty(); }
  // Whether name is defined one way (a macro defined two ways is "": not read).
  bool defined(const std::string& name) const {
    const std::string* d = definition(name);
    return d != nullptr && !d->empty();
  }
  // name's macro, parsed; nullptr where it is not defined one way or its parameters do not read.
  const FunctionMacro* find(const std::string& name) {
    auto p = parsed_.find(name);
    if (p == parsed_.end()) {
      FunctionMacro m;
      const std::string* d = definition(name);
      const bool ok = d != nullptr && parse_function_macro(*d, &m);
      p = parsed_.emplace(name, std::make_pair(ok, std::move(m))).first;
    }
    return p->second.first ? &p->second.second : nullptr;
  }

 private:
  const std::string* definition(const std::string& name) const {
    auto d = own.find(name);
    if (d != own.end()) return &d->second;
    d = project_.find(name);
    return d != project_.end() ? &d->second : nullptr;
  }
  const std::map<std::string, std::string>& project_;
  std::map<std::string, std::pair<bool, FunctionMacro>> parsed_;
};

// m's replacement with args in place of its parameters, `#p` a string of p's argument and `##`
// pasting what is either side of it, as the preprocessor substitutes before it rescans.
std::string substituted(const FunctionMacro& m, const std::vector<std::string>& args) {
  auto argument = [&](const std::string& word, std::string* into) {
    for (size_t k = 0; k < m.params.size(); ++k)
      if (m.params[k] == word) return *into = args[k], true;
    if (word != "__VA_ARGS__" || !m.variadic) return false;
    into->clear();
    for (size_t k = m.params.size(); k < args.size(); ++k) *into += (k > m.params.size() ? ", " : "") + args[k];
    return true;
  };
  const std::string& b = m.body;
  std::string r;
  for (size_t i = 0; i < b.size();) {
    if (b[i] == '"' || b[i] == '\'') {
      const size_t e = literal_end(b, i);
      r += b.substr(i, e - i);
      i = e;
    } else if (b[i] == '#' && i + 1 < b.size() && b[i + 1] == '#') {
      r += "##";
      i += 2;
    } else if (b[i] == '#') {
      size_t a = b.find_first_not_of(" \t", i + 1), e = a;
      while (e < b.size() && ident_char(b[e])) ++e;
      std::string arg;
      if (a == std::string::npos || e == a || !argument(b.substr(a, e - a), &arg)) {
        r += b[i++];
        continue;
      }
      r += '"';
      for (char c : arg) r += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
      r += '"';
      i = e;
    } else if (ident_char(b[i]) && (i == 0 || !ident_char(b[i - 1]))) {
      size_t e = i;
      while (e < b.size() && ident_char(b[e])) ++e;
      std::string arg;
      r += argument(b.substr(i, e - i), &arg) ? arg : b.substr(i, e - i);
      i = e;
    } else {
      r += b[i++];
    }
  }
  std::string pasted;
  for (size_t i = 0; i < r.size(); ++i) {
    if (r[i] == '"' || r[i] == '\'') {
      const size_t e = literal_end(r, i);
      pasted += r.substr(i, e - i);
      i = e - 1;
    } else if (r.compare(i, 2, "##") == 0) {
      while (!pasted.empty() && (pasted.back() == ' ' || pasted.back() == '\t')) pasted.pop_back();
      const size_t next = r.find_first_not_of(" \t", i + 2);
      if (next == std::string::npos) break;
      i = next - 1;
    } else {
      pasted += r[i];
    }
  }
  return pasted;
}

// text with the calls of defs' function-like macros expanded and rescanned, a macro not again
// inside its own expansion; false where a call's parentheses do not close, its arguments do not
// fit the macro, or the expansion outgrows *budget characters.
bool expand_function_macros(const std::string& text, FunctionMacros& defs, std::set<std::string>* active, size_t* budget,
                            std::string* out) {
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '"' || text[i] == '\'') {
      const size_t e = literal_end(text, i);
      *out += text.substr(i, e - i);
      i = e;
      continue;
    }
    if (!ident_char(text[i]) || (i > 0 && ident_char(text[i - 1]))) {
      *out += text[i++];
      continue;
    }
    size_t e = i;
    while (e < text.size() && ident_char(text[e])) ++e;
    const std::string name = text.substr(i, e - i);
    const size_t open = text.find_first_not_of(" \t\n", e);
    const FunctionMacro* m = active->count(name) || open == std::string::npos || text[open] != '(' ? nullptr : defs.find(name);
    if (m == nullptr) {
      *out += name;
      i = e;
      continue;
    }
    std::vector<std::string> args(1);
    size_t k = open + 1;
    for (int depth = 0; k < text.size(); ++k) {
      const char c = text[k];
      if (c == '"' || c == '\'') {
        const size_t l = literal_end(text, k);
        args.back() += text.substr(k, l - k);
        k = l - 1;
        continue;
      }
      if (c == ')' && depth == 0) break;
      if (c == '(') ++depth;
      else if (c == ')') --depth;
      if (c == ',' && depth == 0) args.emplace_back();
      else args.back() += c;
    }
    if (k >= text.size()) return false;
    for (auto& a : args) a = trim(a);
    if (m->params.empty() && args.size() == 1 && args[0].empty()) args.clear(); // M()
    if (m->variadic ? args.size() < m->params.size() : args.size() != m->params.size()) return false;
    active->insert(name);
    std::string x;
    const bool ok = expand_function_macros(substituted(*m, args), defs, active, budget, &x);
    active->erase(name);
    if (!ok || x.size() > *budget) return false;
    *budget -= x.size();
    *out += x;
    i = k + 1;
  }
  return true;
}

} // namespace

void defined_function_macros(const std::string& text, std::map<std::string, std::string>* macros) {
  for (size_t i = 0; i < text.size();) {
    size_t e = i;
    while (e < text.size() && text[e] != '\n')
      e += text[e] != '\\' ? 1 : text.compare(e + 1, 2, "\r\n") == 0 ? 3 : e + 1 < text.size() ? 2 : 1; // a '\\' before "\r\n" too
    std::string line = text.substr(i, e - i);
    i = e + 1;
    size_t k = line.find_first_not_of(" \t");
    if (k == std::string::npos || line[k] != '#') continue;
    k = line.find_first_not_of(" \t", k + 1);
    if (k == std::string::npos || line.compare(k, 6, "define") != 0) continue;
    const size_t a = line.find_first_not_of(" \t", k + 6);
    if (a == std::string::npos || a == k + 6) continue;
    size_t n = a;
    while (n < line.size() && ident_char(line[n])) ++n;
    if (n == a || n >= line.size() || line[n] != '(') continue;
    const std::string def = definition_of(line, n);
    const std::string name = line.substr(a, n - a);
    const auto had = macros->find(name);
    if (had == macros->end()) (*macros)[name] = def;
    else if (trim(had->second) != trim(def)) had->second.clear();
  }
}

std::string skip_host_functions(const std::string& text, int* blanked, const ProjectReading& project, std::set<std::string>* names,
                                std::set<std::string>* device_names) {
  if (text.find("\r\n") == std::string::npos) return skip_host_functions_lf(text, blanked, project, names, device_names);
  // Read with "\n" line ends (a "\r" is no blank to the reading: `template<...>` after it, a
  // macro's "\\\r\n" continuation), the "\r"s put back where they were: the lines are the same.
  std::vector<bool> crlf;
  const std::string lf = skip_host_functions_lf(without_crs(text, &crlf), blanked, project, names, device_names);
  std::string out;
  out.reserve(text.size());
  size_t line = 0;
  for (char c : lf) {
    if (c == '\n' && line < crlf.size() && crlf[line++]) out += '\r';
    out += c;
  }
  return out;
}

namespace {
// A macro's replacement as a text of its own: its continuation lines' backslashes blanked (the
// same length, so that an offset in it is one in the #define).
std::string as_text(std::string replacement) {
  for (size_t k = 0; k + 1 < replacement.size(); ++k)
    if (replacement[k] == '\\' && (replacement[k + 1] == '\n' || replacement[k + 1] == '\r')) replacement[k] = ' ';
  return replacement;
}

// The names of the types a text (as code_only leaves it) declares, ALL_CAPS or not (tinyexr's
// `union FP32 {...};`, AMGX's `enum AMGX_ERROR` in error.h): a class, struct, union or enum
// defined or declared, a typedef's or an alias's name.
std::set<std::string> type_names(const std::string& code) {
  std::set<std::string> names;
  for (const char* key : {"struct", "class", "union", "enum", "using", "typedef"})
    for (size_t k = find_word(code, key); k != std::string::npos; k = find_word(code, key, k + 1)) {
      const std::string kw = key;
      if (kw == "typedef") { // its name is the last word before the ';' outside braces and parentheses
        size_t e = k, depth = 0;
        for (; e < code.size() && !(depth == 0 && code[e] == ';'); ++e)
          if (code[e] == '{' || code[e] == '(' || code[e] == '[') ++depth;
          else if ((code[e] == '}' || code[e] == ')' || code[e] == ']') && depth > 0) --depth;
        size_t w = code.find_last_not_of(" \t\n", e - 1);
        if (e < code.size() && w != std::string::npos && w > k && ident_char(code[w])) {
          size_t b = w + 1;
          while (b > 0 && ident_char(code[b - 1])) --b;
          names.insert(code.substr(b, w + 1 - b));
        }
        continue;
      }
      size_t a = code.find_first_not_of(" \t\n", k + kw.size());
      if (kw == "enum" && a != std::string::npos && (find_word(code.substr(a, 6), "class") == 0 || find_word(code.substr(a, 6), "struct") == 0))
        a = code.find_first_not_of(" \t\n", code.find_first_of(" \t\n", a));
      size_t b = a;
      while (b < code.size() && ident_char(code[b])) ++b;
      if (a == std::string::npos || b == a || b >= code.size()) continue;
      const size_t after = code.find_first_not_of(" \t\n", b);
      if (after == std::string::npos) continue;
      // A definition or a declaration of the type (`{`, a base's `:`, `;`, `final`), or an alias's `=`.
      const bool declares = kw == "using" ? code[after] == '=' : (code[after] == '{' || code[after] == ';' || (code[after] == ':' && code.compare(after, 2, "::") != 0) ||
                                                                   find_word(code.substr(after, 5), "final") == 0);
      if (declares) names.insert(code.substr(a, b - a));
    }
  return names;
}

std::string skip_host_functions_lf(const std::string& text, int* blanked, const ProjectReading& project, std::set<std::string>* names,
                                   std::set<std::string>* device_names) {
  const std::set<std::string>& elsewhere = project.elsewhere;
  *blanked = 0;
  // Each '{''s matching '}', found in a first pass that also checks that the braces balance: over
  // every branch of the #if groups, or where those do not balance, as one arch compiles them
  // (below), or over the first branch of each (ggml's kernels open their body's `if constexpr
  // (...) {` in each branch of an #if on the GPU's maker); a later branch inside what goes goes
  // with it.
  std::map<std::string, std::string> macros, function_like;
  FunctionMacros definitions(project.function_like);
  std::vector<CharKind> kind;
  std::string code;
  std::vector<size_t> match;
  std::set<size_t> whole; // the groups a reading of first branches reads whole
  auto balanced = [&](bool first_branches, long long arch) {
    macros = project.known;
    function_like.clear();
    definitions.clear_own();
    code = code_only(text, &macros, &kind, first_branches, &function_like, int(arch), &definitions.own, &whole, &project.defined);
    match.assign(code.size(), std::string::npos);
    std::vector<size_t> open;
    for (size_t i = 0; i < code.size(); ++i)
      if (code[i] == '{') {
        open.push_back(i);
      } else if (code[i] == '}') {
        if (open.empty()) return false;
        match[open.back()] = i;
        open.pop_back();
      }
    return open.empty();
  };
  // Where every branch over every arch compiled does not balance, every branch as the newest arch
  // compiles them, then as it and the next older do, and so on (`__CUDA_ARCH__` read as each of
  // them), before the first branches: Marlin's stub kernel and host entry point for GPUs older
  // than sm_80 close the namespace that its `#else` branch closes again, and the first branch is
  // the stub. A spec that names no arch is compiled for the GPU it is tuned on; the stub serves
  // GPUs older than the kernel's own arch, and compiled for one of those, its host code stays and
  // NVRTC names it.
  const std::vector<long long>& archs = compiled_archs();
  bool read = balanced(false, project.min_arch);
  if (!read) whole = self_balanced_groups(text, code, kind);
  for (auto a = archs.rbegin(); !read && a != archs.rend() && *a > project.min_arch; ++a) read = balanced(false, *a);
  if (!read && !balanced(true, project.min_arch)) return text;
  std::string out = text;
  // The first character of code in [a, end), end where there is none.
  auto first_code = [&](size_t a, size_t end) {
    while (a < end && (kind[a] != kCode || std::isspace(static_cast<unsigned char>(code[a])))) ++a;
    return a;
  };
  // [a, b], but for its preprocessor lines: a statement's text runs from the previous one's end,
  // over the #if and #define lines between them, which must stay.
  // A later #if branch before the statement's first word is between statements: it stays.
  auto blank = [&](size_t a, size_t b) {
    const size_t first = first_code(a, b + 1);
    for (size_t k = a; k <= b; ++k)
      if (out[k] != '\n' && kind[k] != kPreprocessor && !((kind[k] == kLater || kind[k] == kDead) && k < first)) out[k] = ' ';
    ++*blanked;
  };
  // A class defined with the variables it declares, at namespace scope (NVIDIA Warp's cuBQL:
  // `static struct ZeroTy { __both__ operator float() const {...} ... } zero MAYBE_UNUSED;`):
  // the variables are the host's, which NVRTC refuses, as host_declaration reads a variable
  // alone; they go, and the `static` that would have no object left with them, and the class
  // stays. Not a typedef's names, a const or constexpr object (the device's too, as
  // host_declaration keeps it) or a variable in a memory space. [a, b) is the statement.
  auto blank_host_declarators = [&](size_t a, size_t b) {
    size_t body = a;
    for (int d = 0; body < b && !(code[body] == '{' && d == 0); ++body) {
      if (code[body] == '(' || code[body] == '[') ++d;
      else if (code[body] == ')' || code[body] == ']') --d;
    }
    if (body >= b || match[body] == std::string::npos || match[body] >= b) return;
    const std::string head = code.substr(a, body - a), tail = code.substr(match[body] + 1, b - match[body] - 1);
    std::vector<std::string> hw, tw;
    words_of(head, macros, 0, &hw);
    words_of(tail, macros, 0, &tw);
    // A declarator: a word of the tail outside parentheses and brackets that is no macro and no
    // attribute's keyword (`} __attribute__((packed));` and `} PACKED;` qualify the class).
    const std::string top = outside_brackets(tail);
    bool declarator = false;
    for (size_t k = 0; k < top.size(); ++k) {
      if (!ident_char(top[k]) || (k > 0 && ident_char(top[k - 1]))) continue;
      size_t e = k;
      while (e < top.size() && ident_char(top[e])) ++e;
      const std::string w = top.substr(k, e - k);
      declarator = declarator || (!std::isdigit(static_cast<unsigned char>(w[0])) && !macros.count(w) && !function_like.count(w) &&
                                  w != "__attribute__" && w != "__align__" && w != "alignas" && w != "__declspec");
      k = e;
    }
    if (!declarator || declared_type(head + "{}", macros).empty() ||
        holds_any(hw, {"typedef", "const", "constexpr", "template", "extern", "__constant__", "__shared__", "__managed__"}) ||
        holds_any(tw, {"const", "__constant__", "__shared__", "__managed__"}))
      return;
    blank(match[body] + 1, b - 1);
    if (const size_t st = find_word(head, "static"); st != std::string::npos) blank(a + st, a + st + 5), --*blanked;
  };
  // A declaration's initializer (after its '=', or its braces) as words into *init, and, where it
  // builds the declared object's own type through its constructors (`= {...}`, `= ""` to a path;
  // not a pointer or a reference), that type's words into *type, less its template's arguments (a
  // std::shared_ptr<GPUMemory<T>> is no GPUMemory) and the declared name (TE's `int sm_count =
  // 0;`, where a host function is sm_count). Returns where the initializer starts (npos: none).
  auto initializer_words = [&](const std::string& stmt, std::vector<std::string>* init, std::vector<std::string>* type) {
    size_t eq = std::string::npos, brace = std::string::npos;
    for (size_t k = 0, d = 0; k < stmt.size(); ++k) {
      if (d == 0 && stmt[k] == '{' && brace == std::string::npos) brace = k;
      if (stmt[k] == '(' || stmt[k] == '[' || stmt[k] == '<' || stmt[k] == '{') ++d;
      else if ((stmt[k] == ')' || stmt[k] == ']' || stmt[k] == '>' || stmt[k] == '}') && d > 0) --d;
      else if (d == 0 && stmt[k] == '=' && (k + 1 == stmt.size() || stmt[k + 1] != '=') && (k == 0 || std::string("=!<>").find(stmt[k - 1]) == std::string::npos)) {
        eq = k;
        break;
      }
    }
    const size_t init_at = eq != std::string::npos ? eq : brace;
    if (init_at == std::string::npos) return init_at;
    words_of(stmt.substr(init_at + (eq != std::string::npos ? 1 : 0)), macros, 0, init);
    if (stmt.find_first_of("*&") > init_at) {
      std::string head = stmt.substr(0, init_at);
      size_t e = head.find_last_not_of(" \t\n");
      e = e == std::string::npos ? 0 : e + 1;
      while (e > 0 && ident_char(head[e - 1])) head[--e] = ' ';
      blank_template_arguments(&head);
      words_of(head, macros, 0, type);
    }
    return init_at;
  };
  std::set<std::string> blanked_names; // of the namespace-scope functions blanked so far
  // The namespaces around the statement read (not inline or unnamed ones, which a qualified name
  // need not spell), each with where its body ends; and the namespace-scope functions blanked and
  // defined for the device so far by their names so qualified ("ns::inner::name"), which
  // using-declarations are read by.
  std::vector<std::pair<std::string, size_t>> namespaces;
  std::set<std::string> blanked_qualified, device_qualified;
  auto qualified = [&](const std::string& name) {
    std::string q;
    for (const auto& n : namespaces) q += n.first + "::";
    return q + name;
  };
  // How a using-declaration's qualified name (`using a::b::f;`, read from any namespace it may be
  // relative to) reads: 1 where it is that of a host function blanked here or in the project's
  // other files and of no device function here, 0 where it is a device function's or a type's, -1
  // where the qualified names do not say (an operator's, a name no reading recorded so).
  const std::set<std::string> text_types = type_names(code);
  auto qualified_reading = [&](const std::string& stmt) {
    std::string q;
    for (char ch : stmt.substr(find_word(stmt, "using") + 5))
      if (!std::isspace(static_cast<unsigned char>(ch))) q += ch;
    if (q.compare(0, 2, "::") == 0) q.erase(0, 2);
    if (q.find("::") == std::string::npos || q.find_first_of("<>(),\"") != std::string::npos) return -1;
    // A type's name (a class template's deduction guide, `Span(std::vector<T>&) -> Span<T>;`,
    // reads as a host function's declaration) is no function's.
    const std::string last = q.substr(q.rfind("::") + 2);
    if (project.types.count(last) || text_types.count(last)) return 0;
    auto names_it = [&](const std::string& full) {
      return full == q || (full.size() > q.size() + 2 && full.compare(full.size() - q.size(), q.size(), q) == 0 &&
                           full.compare(full.size() - q.size() - 2, 2, "::") == 0);
    };
    if (std::any_of(device_qualified.begin(), device_qualified.end(), names_it)) return 0;
    return std::any_of(blanked_qualified.begin(), blanked_qualified.end(), names_it) || std::any_of(elsewhere.begin(), elsewhere.end(), names_it) ? 1 : -1;
  };
  std::set<std::string> blanked_members; // of the member functions blanked so far, as "class::name"
  // Of the device member functions defined so far, likewise, and the constructors that stay (a
  // device one, constexpr, `= default`): a class with one is built on the device too.
  std::set<std::string> device_members;
  auto kept_constructor = [&](const std::string& cls) {
    device_members.insert(cls + "::" + cls);
    if (device_names) device_names->insert(cls + "::" + cls);
  };
  // Whether a function-like macro's replacement explicitly instantiates a host function template
  // this pass blanked (DeepSpeed's `#define INSTANTIATE_LAUNCH_RMS_NORM(T) template void
  // launch_rms_norm<T>(...);`, called once a type), and nothing that stays.
  auto instantiates_blanked = [&](const std::string& replacement) {
    bool any = false;
    for (size_t a = 0; a < replacement.size();) {
      size_t e = replacement.find(';', a);
      if (e == std::string::npos) e = replacement.size();
      std::string piece = replacement.substr(a, e - a);
      a = e + 1;
      // The namespaces the instantiations are written in (cuBQL's CUBQL_INSTANTIATE_BINARY_BVH(T,D):
      // `namespace cuBQL { namespace cuda { template void sahBuilder<T,D>(...); } }`): their
      // openings and closings around a piece are no part of it.
      for (size_t k = piece.find_first_not_of(" \t\n"); k != std::string::npos; k = piece.find_first_not_of(" \t\n")) {
        if (piece[k] == '}') piece.erase(0, k + 1);
        else if (const size_t open = piece.find('{', k); (piece.compare(k, 9, "namespace") == 0 || piece.compare(k, 16, "inline namespace") == 0) &&
                                                           open != std::string::npos)
          piece.erase(0, open + 1);
        else break;
      }
      if (piece.find_first_not_of(" \t\n") == std::string::npos) continue;
      std::vector<std::string> w;
      words_of(piece, macros, 0, &w);
      const std::string inst = instantiated_function(piece);
      if (inst.empty() || !(blanked_names.count(inst) || elsewhere.count(inst)) || holds_any(w, {})) return false;
      any = true;
    }
    return any;
  };
  // Whether a function-like macro's replacement defines host functions (or declares them) and
  // nothing else (candle's `#define MMVQ_LAUNCHER_PLAIN(tag, ...) extern "C" void
  // launch_mmvq_gguf_##tag##_plain(...) { ... }`, called once a type at namespace scope): this
  // reading of the replacement as a text of its own blanks it whole. The call then goes, as the
  // definitions it writes would.
  auto defines_host_functions = [&](const std::string& replacement) {
    const std::string r = as_text(replacement);
    int n = 0;
    const std::string left = skip_host_functions_lf(r, &n, ProjectReading{macros, {}, {}, project.min_arch, {}, project.defined, project.types}, nullptr, nullptr);
    return n > 0 && left.find_first_not_of(" \t\n\r;") == std::string::npos; // an empty statement is nothing
  };
  std::vector<std::pair<size_t, std::string>> annotate; // where an execution space goes in
  // "Base::name" of a using-declaration `using ns::Base::name;` (an operator's name is `operator`,
  // as a blanked member's is known), "" where it names no class member.
  // The classes a member alias names (`using base_type = Base<T>;`, `typedef Base<T> base_type;`), by
  // the alias: a derived class's `using base_type::data;` (MinkowskiEngine's coordinate maps) is a
  // using-declaration of Base's data.
  std::map<std::string, std::string> aliased;
  auto note_alias = [&](const std::string& stmt) {
    std::vector<std::string> w;
    words_of(stmt, {}, 0, &w);
    if (w.size() < 3) return;
    std::string alias, type;
    const size_t eq = stmt.find('=');
    if (w[0] == "using" && eq != std::string::npos) alias = w[1], type = stmt.substr(eq + 1);
    else if (w[0] == "typedef") alias = w.back(), type = stmt.substr(stmt.find("typedef") + 7);
    else return;
    type = type.substr(0, type.find('<'));
    std::vector<std::string> tw;
    words_of(type, {}, 0, &tw);
    if (!tw.empty() && ident_char(tw.back()[0]) && tw.back() != alias) aliased[alias] = tw.back();
  };
  auto using_member = [&](const std::string& stmt) {
    std::string t;
    for (char ch : stmt.substr(stmt.find("using") + 5))
      if (!std::isspace(static_cast<unsigned char>(ch))) t += ch;
    t = t.substr(0, t.find_first_of("(<[=+-*/!&|^%~"));
    const size_t last = t.rfind("::");
    if (last == std::string::npos || last == 0) return std::string();
    const size_t before = t.rfind("::", last - 1);
    const size_t from = before == std::string::npos ? 0 : before + 2;
    const auto alias = aliased.find(t.substr(from, last - from));
    return alias == aliased.end() ? t.substr(from) : alias->second + t.substr(last);
  };
  // The name a function's head declares, past the calls of the text's function-like macros before
  // it (nlohmann/json's attribute `JSON_HEDLEY_NON_NULL(1) inline json operator ""_json(...)`,
  // whose first '(' is the macro's).
  auto function_name = [&](std::string head) {
    for (size_t k = 0; k < head.size(); ++k) {
      if (!ident_char(head[k]) || (k > 0 && ident_char(head[k - 1]))) continue;
      size_t e = k;
      while (e < head.size() && ident_char(head[e])) ++e;
      const size_t open = head.find_first_not_of(" \t\n", e);
      if (!function_like.count(head.substr(k, e - k)) || open == std::string::npos || head[open] != '(') {
        k = e;
        continue;
      }
      size_t close = open;
      for (int d = 0; close < head.size(); ++close) {
        if (head[close] == '(') ++d;
        else if (head[close] == ')' && --d == 0) break;
      }
      if (close >= head.size()) break;
      std::fill(head.begin() + std::ptrdiff_t(k), head.begin() + std::ptrdiff_t(close + 1), ' ');
      k = close;
    }
    return declared_name(head);
  };
  // Words that are no macro of a header the reading cannot see: the text's function-like macros,
  // and the parameters its templates declare (tiny-cuda-nn's `template <typename PARAMS_T>`, then
  // `PARAMS_T* params() const { ... }` in the class: an ALL_CAPS word before a name).
  std::map<std::string, std::string> not_macros = function_like;
  for (size_t k = find_word(code, "template"); k != std::string::npos; k = find_word(code, "template", k + 8)) {
    const size_t a = code.find_first_not_of(" \t\n", k + 8);
    if (a == std::string::npos || code[a] != '<') continue;
    int depth = 0;
    size_t part = a + 1;
    for (size_t e = a; e < code.size(); ++e) {
      const char c = code[e];
      if (c == '<' || c == '(' || c == '[' || c == '{') ++depth;
      const bool end = (c == '>' || c == ')' || c == ']' || c == '}') && --depth == 0;
      if ((depth == 1 && c == ',') || end) { // a parameter's text: its name is its last word before any default
        std::string param = code.substr(part, e - part);
        int d = 0;
        for (size_t q = 0; q < param.size(); ++q) {
          if (param[q] == '<' || param[q] == '(') ++d;
          else if (param[q] == '>' || param[q] == ')') --d;
          else if (d == 0 && param[q] == '=') {
            param.resize(q);
            break;
          }
        }
        size_t w = param.find_last_not_of(" \t\n.");
        if (w != std::string::npos && ident_char(param[w])) {
          size_t b = w + 1;
          while (b > 0 && ident_char(param[b - 1])) --b;
          not_macros.emplace(param.substr(b, w + 1 - b), "");
        }
        part = e + 1;
      }
      if (end) break;
    }
  }
  // Nor are the names of the types the text declares, or the project's other files do (tinyexr's
  // `union FP32 {...};`, then `static FP32 half_to_float(FP16 h) {...}`; AMGX's `AMGX_ERROR
  // parseFile(const char *filename);` in a class of amg_config.h, its enum in error.h).
  for (const auto& t : type_names(code)) not_macros.emplace(t, "");
  for (const auto& t : project.types) not_macros.emplace(t, "");
  std::set<std::string> unevaluated = unevaluated_names(code);
  unevaluated.insert(project.unevaluated.begin(), project.unevaluated.end());
  // Statements from `start` to a ';' or a '{', over [from, to): namespace scope, or a class's body
  // (where only member functions' definitions are looked at, and an access specifier ends a
  // statement).
  // cls: the class whose body [from, to) is ("" at namespace scope): its blanked member functions
  // are also known as "cls::name", which a derived class's using-declaration names.
  // templated: [from, to) is the body of a class template (or of a class inside one), whose member
  // functions are compiled only where used.
  std::function<void(size_t, size_t, bool, const std::string&, bool)> scan = [&](size_t from, size_t to, bool in_class, const std::string& cls,
                                                                                bool templated) {
    size_t start = from;
    int parens = 0;
    // In a class body: its member functions that went as host code and those that stay (a device
    // one, one given an execution space, one left as it is), and its non-static data members,
    // [first character, ';'], for project.mark_host_data.
    int host_functions = 0, kept_functions = 0;
    std::vector<std::pair<size_t, size_t>> data_members;
    for (size_t i = from; i < to; ++i) {
      const char c = code[i];
      // A statement that is a function-like macro's call whose replacement ends with its ';' or a
      // body's '}' (no ';' after the call needed: Transformer Engine's TYPE_NAME(T) writes a
      // specialization's definition): it goes where it instantiates what this pass blanked, and
      // ends its statement either way.
      // A statement that begins with a macro of the text opening or closing a scope (nlohmann/json
      // 3.11's `NLOHMANN_JSON_NAMESPACE_BEGIN`, `namespace nlohmann { inline namespace ... {`, then
      // `NLOHMANN_BASIC_JSON_TPL_DECLARATION class basic_json ... {`): the macro is a statement of
      // its own, which the braces of its replacement end (this reading matches the text's braces
      // only); what follows it is the next.
      if (parens == 0 && ident_char(c) && !std::isdigit(static_cast<unsigned char>(c)) && (i == 0 || !ident_char(code[i - 1])) &&
          code.find_first_not_of(" \t\n", start) == i) {
        size_t e = i;
        while (e < to && ident_char(code[e])) ++e;
        const auto m = macros.find(code.substr(i, e - i));
        if (m != macros.end() && m->second.find_first_of("{}") != std::string::npos) {
          start = e;
          i = e - 1;
          continue;
        }
      }
      if (!in_class && parens == 0 && !definitions.empty() && ident_char(c) && (i == 0 || !ident_char(code[i - 1])) &&
          code.find_first_not_of(" \t\n", start) == i) {
        size_t e = i;
        while (e < to && ident_char(code[e])) ++e;
        const std::string name = code.substr(i, e - i);
        const size_t open = code.find_first_not_of(" \t\n", e);
        if (definitions.defined(name) && open < to && code[open] == '(') {
          size_t close = open;
          for (int d = 0; close < to; ++close) {
            if (code[close] == '(') ++d;
            else if (code[close] == ')' && --d == 0) break;
          }
          // The call as the preprocessor expands it, through the text's function-like macros and
          // the project's (Apex's group norm: a call in the .cu, five levels of macros in its
          // macros.h, host launchers at the bottom); where it cannot be expanded, the macro's
          // replacement as it is.
          std::string x;
          std::set<std::string> active;
          size_t budget = size_t(1) << 22;
          if (close < to && !expand_function_macros(code.substr(i, close + 1 - i), definitions, &active, &budget, &x)) {
            const auto own = function_like.find(name);
            x = own == function_like.end() ? std::string() : own->second;
          }
          const size_t last = x.find_last_not_of(" \t\n");
          if (close < to && last != std::string::npos && (x[last] == ';' || x[last] == '}')) {
            const size_t after = code.find_first_not_of(" \t\n", close + 1);
            if (after < to && code[after] == ';') close = after;
            if (instantiates_blanked(x) || defines_host_functions(x)) blank(start, close);
            start = close + 1;
            i = close;
            continue;
          }
        }
      }
      if (c == '(' || c == '[') ++parens;
      else if (c == ')' || c == ']') --parens;
      else if (c == '}' && parens == 0) { // a namespace or extern "C" block's end (not a default argument's `= {}`)
        start = i + 1;
        if (!in_class && !namespaces.empty() && namespaces.back().second == i) namespaces.pop_back();
      }
      else if (c == ';' && parens == 0) {
        const std::string stmt = code.substr(start, i - start);
        // The explicit instantiation of a host function template this pass blanked goes too (it
        // would name a template that is no longer there); a kernel's stays.
        const std::string inst = in_class ? "" : instantiated_function(stmt);
        std::vector<std::string> w;
        if (!inst.empty()) words_of(stmt, macros, 0, &w);
        const bool host_instance = !inst.empty() && (blanked_names.count(inst) || elsewhere.count(inst)) && !holds_any(w, {});
        const size_t cx = host_instance ? std::string::npos : constexpr_declaration_at(stmt, macros, not_macros);
        const std::vector<HostWord> host_words = variable_host_words(stmt, macros);
        if (cx != std::string::npos) {
          std::vector<std::string> sw;
          words_of(stmt, macros, 0, &sw);
          annotate.emplace_back(start + cx, space_to_add(sw));
          ++*blanked;
        } else if (!host_words.empty()) {
          for (auto h = host_words.rbegin(); h != host_words.rend(); ++h)
            if (h->with.empty()) out.replace(start + h->at, h->length, h->length, ' ');
            else if (h->with.size() == h->length) out.replace(start + h->at, h->length, h->with);
            else out.replace(start + h->at, h->length, std::string(h->length, ' ')), annotate.emplace_back(start + h->at, h->with);
          ++*blanked;
        } else if (in_class) {
          note_alias(stmt);
          // A member function declared and only read in an unevaluated operand (nlohmann/json's
          // `template <typename C> static one test(decltype(&C::capacity));` in
          // `sizeof(test<T>(nullptr))`, a trait's probe): given `__host__ __device__`, as at
          // namespace scope, so that the operand still finds it. Not a virtual one (`override`,
          // `final`), whose vtable is the host's: it goes with its base's (xgboost's
          // `MetaInfo& Info() override;`, read in a decltype elsewhere, then overrode nothing).
          const std::string head = without_template_lists(stmt, macros);
          size_t open = 0, close = 0;
          std::vector<std::string> sw;
          words_of(head, macros, 0, &sw);
          const std::string name = parameter_list(head, &open, &close) ? declared_name(head.substr(0, open)) : "";
          const size_t first = name.empty() ? std::string::npos : head.find_first_not_of(" \t\n", open + 1);
          const bool declarator = first < close && std::string("*&^").find(head[first]) != std::string::npos; // `int (*fp)(int);`: data
          if (!name.empty() && !declarator && ends_as_declarator(head, close, macros) && unevaluated.count(name) && !keyword(name) && name != "sizeof" && name != "__attribute__" &&
              !holds_any(sw, {"__host__", "friend", "virtual", "override", "final"}) && declared_type(head, macros).empty() &&
              !unknown_macro_before_name(head, macros, not_macros)) {
            annotate.emplace_back(start + head.find_first_not_of(" \t\n"), space_to_add(sw));
            ++*blanked;
            ++kept_functions;
          } else if (host_static_member(stmt, macros, not_macros)) {
            blank(start, i);
          } else if (host_member_declaration(stmt, macros, not_macros)) {
            blank(start, i);
            ++host_functions;
            if (!name.empty() && !cls.empty()) blanked_members.insert(cls + "::" + name);
          } else if (!cls.empty() && name == cls) {
            kept_constructor(cls); // `json_value() = default;`
          } else if (!sw.empty() && sw.front() == "using" && stmt.find('=') == std::string::npos &&
                     std::find(sw.begin(), sw.end(), "namespace") == sw.end() && std::find(sw.begin(), sw.end(), "typename") == sw.end() &&
                     (blanked_members.count(using_member(stmt)) || elsewhere.count(using_member(stmt)))) {
            // A using-declaration of a base's member functions that skip blanked (CTranslate2's
            // `using UnaryOp::operator();`, the base's pure virtual host operator, in op.h) goes
            // with them; `elsewhere` leaves out names that are device functions too.
            blank(start, i);
          } else if (name.empty() && (!blanked_names.empty() || !blanked_members.empty() || !elsewhere.empty())) {
            // A data member whose default initializer calls a function skip blanked, here or in
            // the project's other files (nlohmann/json's `const bool is_little_endian =
            // little_endianess();`, instant-ngp's `bool m_jit_fusion = tcnn::supports_jit_fusion();`),
            // or builds a class whose constructors skip blanked, here or there, and none stays
            // for the device (instant-ngp's `AdamOptimizer<vec2> offset = AdamOptimizer<vec2>(0.0f);`,
            // `Ema<float> ms = {EEmaType::Time, 100};`, their host constructors in other headers):
            // the initializer goes with it, the member stays (the class's layout); the
            // constructors that would run it are host code, blanked too.
            std::vector<std::string> init, type;
            const size_t init_at = initializer_words(stmt, &init, &type);
            const auto blanked_call = [&](const std::string& x) {
              const std::string ctor = x + "::" + x;
              return blanked_names.count(x) > 0 || elsewhere.count(x) > 0 || (blanked_members.count(ctor) > 0 && device_members.count(ctor) == 0) ||
                     elsewhere.count(ctor) > 0;
            };
            if ((std::any_of(init.begin(), init.end(), blanked_call) || std::any_of(type.begin(), type.end(), blanked_call)) &&
                !holds_any(sw, {"__device__", "__constant__", "__shared__", "constexpr", "template", "operator"}) && declared_type(stmt, macros).empty())
              blank(start + init_at, i - 1);
          }
          // What the class is built of: a member function's declaration that stays (a device
          // one's, or one the reading leaves as it is), or a non-static data member (not a type,
          // an alias, a friend or a static one; none over a preprocessor line, which the marks
          // around it could not leave out whole).
          const auto said = [&](const char* w) { return std::find(sw.begin(), sw.end(), w) != sw.end(); };
          if (!name.empty() && !declarator && out.compare(start, i - start, text, start, i - start) == 0 && !said("friend") && !said("using") &&
              !said("typedef") && !said("static_assert") && !said("default") && !said("delete"))
            ++kept_functions;
          std::vector<std::string> dw;
          words_of(stmt, macros, 0, &dw);
          const size_t lead = first_code(start, i);
          bool over_directive = false;
          for (size_t k = lead; k < i && !over_directive; ++k) over_directive = kind[k] == kPreprocessor;
          if (project.mark_host_data && name.empty() && lead < i && !over_directive && !dw.empty() && declared_type(stmt, macros).empty() &&
              !holds_any(dw, {"typedef", "using", "static", "friend", "template", "class", "struct", "union", "enum", "namespace",
                              "constexpr", "operator", "__shared__", "__constant__", "__device__", "extern"}))
            data_members.emplace_back(lead, i);
        } else if (!host_instance && host_declaration(stmt, macros, not_macros) && stmt.find('(') != std::string::npos &&
                   unevaluated.count(declared_name(without_template_lists(stmt, macros))) && !qualified_name(without_template_lists(stmt, macros))) {
          const std::string head = without_template_lists(stmt, macros);
          std::vector<std::string> sw;
          words_of(head, macros, 0, &sw);
          annotate.emplace_back(start + head.find_first_not_of(" \t\n"), space_to_add(sw));
          ++*blanked;
        } else if (host_instance || host_declaration(stmt, macros, not_macros)) {
          blank(start, i);
          // The name of a function it declares; a keyword is none (`static void (*handler)(int) =
          // nullptr;`, a host variable, reads as a function named `void`, and xgboost's dmlc
          // `any`'s `static const size_t kStack = sizeof(void *) * 3;` then lost its initializer).
          if (stmt.find('(') != std::string::npos)
            if (const std::string f = function_name(without_template_lists(stmt, macros)); !language_word(f))
              blanked_names.insert(f), blanked_qualified.insert(qualified(f));
        } else {
          // Data that names a function this pass blanked (ggml's `static const
          // ggml_backend_buffer_i iface = { free_buffer, ... };`, a table of host callbacks) goes
          // with it, and so does data that holds a lambda with no execution space (instant-ngp's
          // `static const stbi_io_callbacks istream_stbi_callbacks = { [](void* context, ...) {...},
          // ... };`), whose closure NVRTC infers to be the host's and refuses; a device variable's,
          // a constexpr one's (the retry with -default-device serves device code that calls it)
          // or an alias's stays.
          std::vector<std::string> sw;
          words_of(stmt, macros, 0, &sw);
          // Or whose initializer calls a host function that skip blanked in another of the
          // project's files (xgboost's `auto const kRegisterMulticlassValidationCuda =
          // elementwise::RegisterValidationCuda<MulticlassLabelCheck>();`, a host registration
          // whose template went from its header): `elsewhere` leaves out names that are device
          // functions too.
          std::vector<std::string> init, type;
          initializer_words(stmt, &init, &type);
          const bool names_blanked = std::any_of(sw.begin(), sw.end(), [&](const std::string& x) { return blanked_names.count(x) > 0; }) ||
                                     std::any_of(init.begin(), init.end(), [&](const std::string& x) { return elsewhere.count(x) > 0; });
          const bool host_lambda = holds_lambda(stmt) && !holds_any(sw, {"constexpr"});
          // So does a variable its initializer builds through a class's constructors that all
          // went as host code, here or in the project's other files (k2's `const DtypeTraits
          // g_dtype_traits_array[] = {{kUnknownBase, 0, "Any", 0}, ...};`, whose constructor
          // checks its arguments on the host): nvcc's dynamic initialization of host data.
          const bool host_built = std::any_of(type.begin(), type.end(), [&](const std::string& x) {
            const std::string ctor = x + "::" + x;
            return (blanked_members.count(ctor) > 0 && device_members.count(ctor) == 0) || elsewhere.count(ctor) > 0;
          });
          // And a const one its initializer computes with CUDA's math functions (k2's `static const
          // double kMinLogDiffDouble = log(DBL_EPSILON);`): initialized at run time, host data
          // under nvcc, which NVRTC refuses as a __device__ variable's dynamic initialization.
          const bool run_time_math = holds_any(sw, {"const"}) && !holds_any(sw, {"constexpr", "__device__"}) &&
                                     std::any_of(init.begin(), init.end(), cuda_math_function);
          if ((names_blanked || host_lambda || host_built || run_time_math) && !holds_any(sw, {"__constant__", "__shared__", "__managed__", "namespace", "template"}) &&
              declared_type(stmt, macros).empty())
            blank(start, i);
          // A using-declaration of a function this pass blanked (nlohmann/json 3.11's `using
          // nlohmann::literals::json_literals::operator ""_json;` at global scope), or that skip
          // blanked in another of the project's files (ColossalAI's `using
          // colossalAI::cuda::utils::get_vec_size;` in a .cu, of a header's host function on a
          // torch::Tensor; `elsewhere` leaves out names that are device functions too), goes too;
          // an alias (`using X = ...`) and a using-directive stay. A name that is a device function
          // too in another namespace is read qualified: xgboost's `using
          // xgboost::common::MakeIndexTransformIter;` of a host template goes, though `dh::` has a
          // device function of that name.
          else if (const int by_qualified = sw.size() >= 2 && sw.front() == "using" ? qualified_reading(stmt) : -1;
                   sw.size() >= 2 && sw.front() == "using" && stmt.find('=') == std::string::npos &&
                   std::find(sw.begin(), sw.end(), "namespace") == sw.end() &&
                   (by_qualified == 1 || (by_qualified == -1 && (blanked_names.count(sw.back()) || elsewhere.count(sw.back()))) ||
                    (sw.size() == 2 && stmt.find("::") != std::string::npos && c_library_host_function(sw.back()))))
            blank(start, i);
          else if (!in_class)
            blank_host_declarators(start, i);
        }
        start = i + 1;
      } else if (c == ':' && parens == 0 && in_class && !(i + 1 < to && code[i + 1] == ':') && !(i > 0 && code[i - 1] == ':')) {
        std::vector<std::string> w;
        words_of(code.substr(start, i - start), macros, 0, &w);
        // An access specifier, or a macro of one (nlohmann/json's `JSON_PRIVATE_UNLESS_TESTED:`,
        // `public` or `private` on the project's flags, read as both).
        if (!w.empty() && std::all_of(w.begin(), w.end(), [](const std::string& x) { return x == "public" || x == "private" || x == "protected"; }))
          start = i + 1;
      }
      if (c != '{' || parens != 0) continue;
      const std::string head = without_template_lists(code.substr(start, i - start), macros);
      std::vector<std::string> words;
      words_of(head, macros, 0, &words);
      // A function-like macro of the text in the head reads as its replacement's words too (`#define
      // DEV_ATTR(x) __device__`: its function is a device function).
      for (size_t w = 0, count = words.size(); w < count; ++w)
        if (const auto f = function_like.find(words[w]); f != function_like.end()) words_of(f->second, macros, 0, &words);
      const bool is_namespace = (!words.empty() && (words[0] == "namespace" || (words[0] == "inline" && words.size() > 1 && words[1] == "namespace"))) ||
                                names_namespace(head);
      const bool is_extern_block = words.size() == 1 && words[0] == "extern"; // extern "C" { (the literal blanked)
      if (!in_class && (is_namespace || is_extern_block)) { // its body is namespace scope too
        if (is_namespace && match[i] != std::string::npos && !(words.size() > 1 && words[0] == "inline")) {
          std::string name; // `namespace a::b {`, or the first word of one with an attribute
          for (size_t w = 1; w < words.size() && (w == 1 || names_namespace(head)); ++w) name += (name.empty() ? "" : "::") + words[w];
          if (!name.empty()) namespaces.emplace_back(name, match[i]);
        }
        start = i + 1;
        continue;
      }
      size_t close = match[i];
      // Top-level '(' and '=' of the head (outside parentheses and brackets), and a ':' after
      // the parameters (a constructor's member initializers).
      bool paren = false, assign = false, member_init = false;
      {
        int d = 0;
        bool after_params = false;
        for (size_t k = 0; k < head.size(); ++k) {
          const char h = head[k];
          if (h == '(' || h == '[') {
            if (d == 0 && h == '(') paren = true;
            ++d;
          } else if (h == ')' || h == ']') {
            if (--d == 0 && h == ')') after_params = true;
          } else if (d == 0 && h == '=' && !(k + 1 < head.size() && head[k + 1] == '=') &&
                     !(k > 0 && std::string("=!<>").find(head[k - 1]) != std::string::npos)) {
            assign = true;
          } else if (d == 0 && after_params && h == ':' && !(k + 1 < head.size() && head[k + 1] == ':') && !(k > 0 && head[k - 1] == ':')) {
            member_init = true;
          }
        }
      }
      const std::string type_key = declared_type(head, macros);
      const bool type_def = !type_key.empty();
      bool device = false, is_operator = false, kernel = false;
      for (const auto& w : words) {
        device = device || w == "__global__" || w == "__device__";
        kernel = kernel || w == "__global__";
        is_operator = is_operator || w == "operator";
      }
      // A function's definition: a parameter list and no initializer ('=' outside parentheses,
      // operator= aside), not a class.
      const bool function = paren && (!assign || is_operator) && !type_def;
      if (function && device && in_class) ++kept_functions;
      if (function && device) {
        if (device_names) device_names->insert(cls.empty() ? function_name(head) : cls + "::" + function_name(head));
        if (cls.empty() && !in_class) {
          device_qualified.insert(qualified(function_name(head)));
          if (device_names) device_names->insert(qualified(function_name(head)));
        }
        if (!cls.empty()) device_members.insert(cls + "::" + function_name(head));
      }
      // A __host__ __device__ function that takes the host library's containers (spconv's
      // `TV_HOST_DEVICE_INLINE unsigned rowArrayIdx(std::vector<int> &shape, ...)`) is host code:
      // nvcc compiles it for the device only where device code calls it, and then refuses their
      // host members; NVRTC's stand-ins have none. It goes as a host function does.
      if (function && device && !kernel && takes_host_container(head)) device = false;
      // A constructor whose member initializers hold a brace (`: mValue{value}, n(0) {}`): this
      // '{' is an initializer's, which a ',' or the body's '{' follows. Its body is the brace
      // group after the last initializer; where the initializers do not read so, it is left as
      // it is.
      bool braced_init = false;
      auto next_code = [&](size_t k) { return std::min(code.find_first_not_of(" \t\n", k), to); };
      if (function && member_init && next_code(close + 1) < to && (code[next_code(close + 1)] == ',' || code[next_code(close + 1)] == '{')) {
        braced_init = true;
        for (size_t n = next_code(close + 1); n < to;) {
          if (code[n] == '{') { // the body
            close = match[n];
            braced_init = close == std::string::npos;
            break;
          }
          if (code[n] != ',') break;
          const size_t g = std::min(code.find_first_of("({;}", n + 1), to); // the next initializer's arguments
          if (g >= to || code[g] == ';' || code[g] == '}') break;
          size_t e = g;
          if (code[g] == '{') {
            e = match[g];
          } else {
            for (int d = 0; e < to; ++e) {
              if (code[e] == '(') ++d;
              else if (code[e] == ')' && --d == 0) break;
            }
          }
          if (e == std::string::npos || e >= to) break;
          n = next_code(e + 1);
        }
        if (braced_init) close = match[i];
      }
      // A constexpr function without an execution space is nvcc's host and device function alike
      // where it is constant-evaluated (a traits class's `static constexpr int kSmem = cmax(...)`)
      // and, as PyTorch extensions build (--expt-relaxed-constexpr), where device code calls it
      // (Marlin's ceildiv): it becomes __host__ __device__ rather than going.
      // Not one that throws and is no template (lmdeploy's `constexpr cudaDataType to_cuda_dtype(DataType
      // t) { switch (t) { ... default: throw std::runtime_error(...); } }`): NVRTC compiles every
      // such function for the device, which cannot throw, where nvcc compiles it only where device
      // code calls it; it goes as a host function does. A template's is compiled only where used.
      size_t constexpr_at = constexpr_keyword_at(head, words);
      if (constexpr_at != std::string::npos && !in_class && find_word(code.substr(i, close - i), "throw") != std::string::npos &&
          find_word(code.substr(start, i - start), "template") == std::string::npos)
        constexpr_at = std::string::npos;
      if (function && !device && !braced_init && !unknown_macro_before_name(head, macros, not_macros) && constexpr_at != std::string::npos) {
        annotate.emplace_back(start + constexpr_at, space_to_add(words));
        ++*blanked;
        if (in_class) ++kept_functions;
        if (!cls.empty() && function_name(head) == cls) kept_constructor(cls);
      } else if (function && !device && !braced_init && !unknown_macro_before_name(head, macros, not_macros)) {
        // A namespace-scope function an unevaluated operand reads (nlohmann/json's
        // `using contiguous_bytes_input_adapter = decltype(input_adapter(...));`) stays as its
        // declaration, `__host__ __device__` (the operand's call needs no body), where its return
        // type is written out; its body goes.
        // One whose return type is deduced needs its body there: where it is a template or a
        // member of one (compiled only where used), it stays whole, `__host__ __device__`
        // (CUTLASS's sm90 blockwise-scaling mainloop: `static auto getTmaSFA() { ... }` in its
        // Params, read in `using TMA_SFA = decltype(getTmaSFA());`).
        const std::string name = function_name(head);
        const bool deduced = std::find(words.begin(), words.end(), "auto") != words.end() && head.find("->") == std::string::npos;
        const bool read_unevaluated = unevaluated.count(name) && !qualified_name(head);
        if (read_unevaluated && deduced && !member_init && name != cls &&
            (templated || declares_template(code.substr(start, i - start)))) {
          annotate.emplace_back(start + head.find_first_not_of(" \t\n"), space_to_add(words));
          ++*blanked;
          if (in_class) ++kept_functions;
          i = close;
          start = close + 1;
          continue;
        }
        blank(start, close);
        if (in_class) ++host_functions;
        if (!in_class && read_unevaluated && !deduced && !member_init) {
          for (size_t k = start; k < i; ++k)
            if (kind[k] == kCode) out[k] = text[k]; // the head again
          out[i] = ';';
          annotate.emplace_back(start + head.find_first_not_of(" \t\n"), space_to_add(words));
        } else if (!in_class) {
          blanked_names.insert(name);
          blanked_qualified.insert(qualified(name));
        } else {
          if (!cls.empty()) blanked_members.insert(cls + "::" + name);
        }
        // The body in one #if branch and a pure-specifier in another (tiny-cuda-nn's `virtual void
        // f(...)` then `#if defined(TCNN_NO_FWD_BWD) { throw ...; } #else = 0; #endif`): the other
        // branch's `= 0;` goes with the function.
        const size_t after = next_code(close + 1);
        if (after < to && code[after] == '=') {
          const size_t semi = code.find(';', after);
          if (semi < to && code.find_first_of("{}", after) > semi) {
            blank(close + 1, semi);
            --*blanked;
            close = semi;
          }
        }
      }
      // A class's body: its member functions in turn (enum bodies hold none).
      if (type_def && type_key != "enum") {
        // The class's name: the last word of its head before a base clause.
        std::string h = without_template_lists(head, macros);
        for (size_t k = 0; k < h.size(); ++k)
          if (h[k] == ':' && (k + 1 >= h.size() || h[k + 1] != ':') && (k == 0 || h[k - 1] != ':')) {
            h.resize(k);
            break;
          }
        std::vector<std::string> hw;
        words_of(h, macros, 0, &hw);
        scan(i + 1, close, true, hw.empty() ? std::string() : hw.back(), templated || declares_template(code.substr(start, i - start)));
      }
      // Past this brace group: a function's body ends its statement; a class's or an
      // initializer's goes on to its ';'.
      i = close;
      if (function) start = close + 1;
    }
    // A class whose member functions all went as host code (one at least) is the host's: its data
    // members are marked (kHostDataBegin ... kHostDataEnd), so that the compile leaves out those
    // NVRTC refuses (drop_refused_host_data). Their types may be ones a library hides from NVRTC
    // (CUTLASS's DeviceAllocation holds a `platform::unique_ptr`, which platform.h declares only
    // where __CUDACC_RTC__ is not defined). They stay otherwise: device code may read a host
    // class's data (a kernel's argument struct with a host constructor).
    if (in_class && host_functions > 0 && kept_functions == 0)
      for (const auto& [a, b] : data_members) {
        annotate.emplace_back(a, kHostDataBegin);
        annotate.emplace_back(b + 1, kHostDataEnd);
      }
  };
  scan(0, code.size(), false, "", false);
  // A function-like macro whose replacement declares a function that the replacement reads in an
  // unevaluated operand (nlohmann/json's NLOHMANN_CAN_CALL_STD_FUNC_IMPL(std_name): `template
  // <typename... T> std_name##_tag std_name(T&&...);` read in `decltype(std_name(...))`): the
  // declaration gets `__host__ __device__` in the #define itself, as it would in the text. One whose
  // replacement defines a class (robin_hood.h's ROBIN_HOOD_HASH_INT(T), `template <> struct
  // hash<T> { size_t operator()(T obj) const noexcept {...} }`, in MinkowskiEngine): its host
  // members blanked in the #define, as in a class of the text. Where reading the replacement as a
  // text of its own would change anything else, it stays as it is.
  for (size_t k = 0; k < text.size(); ++k) {
    if (kind[k] != kPreprocessor || (k > 0 && text[k - 1] != '\n')) continue;
    size_t e = k; // the directive's end, over its continuation lines
    while (e < text.size() && !(text[e] == '\n' && (e == 0 || text[e - 1] != '\\'))) ++e;
    size_t d = text.find_first_not_of(" \t", k);
    if (d < e && text[d] == '#') d = text.find_first_not_of(" \t", d + 1);
    if (d < e && text.compare(d, 6, "define") == 0) {
      size_t n = text.find_first_not_of(" \t", d + 6), w = n;
      while (w < e && ident_char(text[w])) ++w;
      const size_t params_end = w < e && text[w] == '(' && w > n ? text.find(')', w) : std::string::npos;
      if (params_end < e && function_like.count(text.substr(n, w - n))) {
        const size_t a = params_end + 1;
        const std::string r = as_text(text.substr(a, e - a));
        int changed = 0;
        const std::string left = skip_host_functions_lf(r, &changed, ProjectReading{macros, {}, project.unevaluated, project.min_arch, {}, project.defined, project.types}, nullptr, nullptr);
        std::vector<std::pair<size_t, std::string>> inserted;
        std::vector<size_t> blanks; // where the reading blanked a class's host members
        // The class may be written inside namespaces the replacement opens (xgboost's
        // DECLARE_FIELD_ENUM_CLASS(E): `namespace dmlc { namespace parameter { template <> class
        // FieldEntry<E> : public FieldEntry<int> {...}; } }`, host members, called at namespace
        // scope): the class's head follows their openings, and only their closings follow it.
        size_t head_at = 0;
        int namespaces_opened = 0;
        for (;;) {
          const size_t k = r.find_first_not_of(" \t\n", head_at);
          size_t after = std::string::npos;
          if (k != std::string::npos && r.compare(k, 9, "namespace") == 0) after = k + 9;
          else if (k != std::string::npos && r.compare(k, 16, "inline namespace") == 0) after = k + 16;
          if (after == std::string::npos || (after < r.size() && ident_char(r[after]))) break;
          const size_t open = r.find('{', after);
          if (open == std::string::npos || r.find_first_of(";}(", after) < open) break;
          head_at = open + 1;
          ++namespaces_opened;
        }
        const size_t body = r.find('{', head_at);
        const std::string class_key =
            body == std::string::npos ? "" : declared_type(without_template_lists(r.substr(head_at, body - head_at), macros), macros);
        size_t body_end = std::string::npos; // the class's closing brace: the replacement's last but a ';' and the namespaces' closings
        for (size_t b = body, depth = 0; b < r.size() && body_end == std::string::npos; ++b)
          if (r[b] == '{') ++depth;
          else if (r[b] == '}' && --depth == 0) body_end = b;
        bool closes_only = body_end != std::string::npos;
        int closings = 0;
        for (size_t b = body_end == std::string::npos ? r.size() : body_end + 1; b < r.size() && closes_only; ++b) {
          if (r.compare(b, 2, "/*") == 0) { // a comment (`} /* namespace dmlc */`)
            b = std::min(r.find("*/", b + 2), r.size() - 1) + 1;
            continue;
          }
          closes_only = std::string(" \t\n;}").find(r[b]) != std::string::npos;
          closings += r[b] == '}';
        }
        const bool defines_class = !class_key.empty() && class_key != "enum" && closes_only && closings == namespaces_opened;
        size_t q = 0, j = 0;
        bool only_insertions = changed > 0;
        while (only_insertions && j < left.size()) {
          if (q < r.size() && left[j] == r[q]) {
            ++q, ++j;
            continue;
          }
          if (defines_class && q > body && q < r.size() && left[j] == ' ' && r[q] != '\n') {
            blanks.push_back(a + q);
            ++q, ++j;
            continue;
          }
          bool found = false;
          for (const char* add : {"__host__ __device__ ", "__device__ "})
            if (left.compare(j, std::strlen(add), add) == 0) {
              inserted.emplace_back(a + q, add);
              j += std::strlen(add);
              found = true;
              break;
            }
          only_insertions = found;
        }
        if (only_insertions && q == r.size() && (!inserted.empty() || !blanks.empty())) {
          annotate.insert(annotate.end(), inserted.begin(), inserted.end());
          for (size_t b : blanks) out[b] = ' ';
          *blanked += int(inserted.size()) + (blanks.empty() ? 0 : 1);
        }
      }
    }
    k = e;
  }
  if (names) {
    names->insert(blanked_names.begin(), blanked_names.end());
    names->insert(blanked_qualified.begin(), blanked_qualified.end());
    names->insert(blanked_members.begin(), blanked_members.end());
  }
  // A lambda's execution space in the code that stays (xgboost's `[=] XGBOOST_DEVICE(uint64_t i)
  // {...}` in a __host__ __device__ function, `__host__ __device__` through its macro): nvcc takes
  // it with --extended-lambda, and NVRTC refuses any; a lambda without one takes the space of the
  // function around it, which is what the annotation said. The words between the capture's `]`
  // and the parameters' `(` go where each is an execution space or a macro of the text's that
  // means only such words.
  auto space_only = [&](const std::string& w) {
    if (w == "__host__" || w == "__device__") return true;
    const auto m = macros.find(w);
    if (m == macros.end()) return false;
    std::vector<std::string> mw;
    words_of(m->second, macros, 0, &mw);
    return !mw.empty() && std::all_of(mw.begin(), mw.end(), [](const std::string& x) { return x == "__host__" || x == "__device__" || x == "__forceinline__" || x == "inline"; });
  };
  for (size_t k = code.find(']'); k != std::string::npos; k = code.find(']', k + 1)) {
    size_t e = k + 1;
    bool any = false, only = true;
    std::vector<std::pair<size_t, size_t>> spans;
    for (;;) {
      while (e < code.size() && std::isspace(static_cast<unsigned char>(code[e]))) ++e;
      if (e >= code.size() || !ident_char(code[e])) break;
      size_t w = e;
      while (w < code.size() && ident_char(code[w])) ++w;
      only = only && space_only(code.substr(e, w - e));
      spans.emplace_back(e, w);
      any = true;
      e = w;
    }
    if (!any || !only || e >= code.size() || code[e] != '(' || kind[k] != kCode) continue;
    for (const auto& [a, b] : spans)
      for (size_t q = a; q < b; ++q) out[q] = ' ';
    ++*blanked;
  }
  // The execution spaces given (their lines' columns after them move; no line does).
  std::sort(annotate.begin(), annotate.end());
  for (auto a = annotate.rbegin(); a != annotate.rend(); ++a) out.insert(a->first, a->second);
  return out;
}

} // namespace

TextNames names_of(const std::string& text) {
  std::map<std::string, std::string> macros;
  std::vector<CharKind> kind;
  const std::string code = code_only(without_crs(text, nullptr), &macros, &kind);
  return {unevaluated_names(code), type_names(code)};
}

std::string device_view_of_header(const std::string& text, const std::map<std::string, std::string>& known) {
  int blanked = 0;
  const std::string kept = skip_host_functions(text, &blanked, ProjectReading{known, {}, {}, ProjectReading{}.min_arch, {}, {}, {}});
  std::map<std::string, std::string> macros;
  std::vector<CharKind> kind;
  code_only(kept, &macros, &kind);
  std::string out, line;
  for (size_t k = 0; k <= kept.size(); ++k) {
    if (k == kept.size() || kept[k] == '\n') {
      line.erase(line.find_last_not_of(" \t") + 1); // npos + 1 == 0: a line of blanks goes
      out += line;
      if (k < kept.size()) out += '\n';
      line.clear();
    } else if (kind[k] != kComment) {
      line += kept[k];
    }
  }
  return out;
}

} // namespace ktune
