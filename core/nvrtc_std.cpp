#include "core/nvrtc_std.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/host_code.h"
#include "core/kernel_spec.h"
#include "core/text_file.h"

namespace ktune {

namespace {

// cuda::std's names in std:: (the namespace declared first, in case a header of libcu++ includes
// one of these before it opens it). Not <version>: libcu++ includes it where it is found, to take
// a host library's feature macros.
// ::cuda, not cuda: a project's `using namespace at;` (mmcv's pytorch_cpp_helper.hpp) brings
// at::cuda into the global namespace, and a later header's `cuda` would be ambiguous.
const char* const kIntoStd = "namespace cuda { namespace std {} }\nnamespace std { using namespace ::cuda::std; }\n";

// A header whose libcu++ twin (<cuda/std/NAME>) NVRTC finds on CUDA's include/cccl path: the twin,
// its names in std:: as well (a kernel written for nvcc says std::numeric_limits, std::int32_t).
// The using-directive makes qualified lookup in std find cuda::std's names.
std::string twin(const std::string& name) {
  return "#pragma once\n// ktune's <" + name + "> for NVRTC, which has none: libcu++'s, its names in std:: too\n#include <cuda/std/" +
         name + ">\n" + kIntoStd;
}

// A C header: the C++ twin's text, its functions and types in the global namespace as the C
// library's are (NVRTC declares the device's math functions, printf, malloc and memcpy itself).
std::string c_twin(const std::string& name, const std::string& cxx, const std::string& extra = "") {
  return "#pragma once\n// ktune's <" + name + "> for NVRTC, which has none\n#include <" + cxx + ">\n" + extra;
}

// A header of the host's library with no device counterpart: empty, so that a source whose host
// code includes it compiles its device code (its host code must not be compiled: see
// docs/KERNEL_SPEC.md, "sources"); device code that uses its names fails on them by name.
std::string host_only(const std::string& name, const std::string& types = "") {
  return "#pragma once\n// ktune's <" + name + "> for NVRTC: a host-only header, empty for device code" +
         (types.empty() ? "" : " but for the types a host class's data members name") + "\n" + types;
}

// The host's types that a host-only class's data members name (a timer's struct timeval, a
// logger's FILE*): a class's data members stay under host_code skip (its layout), so their types
// must be declared. FILE is opaque, as only pointers to it are used; timeval is glibc's.
// glibc's EOF, which <stdio.h> defines and libstdc++'s <string> brings (char_traits<char>::eof)
const char* const kEof = "#ifndef EOF\n#define EOF (-1)\n#endif\n";
const std::string kFileType = std::string("typedef struct _IO_FILE FILE;\n") + kEof;
// glibc's struct timespec (a stopwatch's clock_gettime reading, DeepSpeed's StopWatch.h), which
// <time.h> and <sys/time.h> both bring, under glibc's guard; its tv_sec is time_t, which
// libcu++'s <ctime> gives NVRTC.
const char* const kTimespec =
    "#ifndef _STRUCT_TIMESPEC\n#define _STRUCT_TIMESPEC 1\nstruct timespec { long tv_sec; long tv_nsec; };\n#endif\n";
const std::string kTimeTypes = std::string(kTimespec) +
    "#ifndef _STRUCT_TIMEVAL\n#define _STRUCT_TIMEVAL 1\nstruct timeval { long tv_sec; long tv_usec; };\n#endif\n"
    "struct timezone { int tz_minuteswest; int tz_dsttime; };\n";
const char* const kClocksPerSec = "#ifndef CLOCKS_PER_SEC\n#define CLOCKS_PER_SEC ((clock_t)1000000)\n#endif\n";
// glibc's struct tm, broken-down time.
const char* const kTm =
    "struct tm { int tm_sec; int tm_min; int tm_hour; int tm_mday; int tm_mon; int tm_year; int tm_wday; int tm_yday; int tm_isdst;\n"
    "  long tm_gmtoff; const char* tm_zone; };\n";

// The host library's containers, strings, exceptions and threading types, which a host class's
// data members and bases name (ggml's CUDA context holds a std::vector and a std::unordered_map,
// FasterTransformer's logger a `const std::string PREFIX = "[FT]";`, TensorRT-LLM's exception
// derives from std::runtime_error): class templates and classes that take any initializer, so
// that the class can be laid out and its member initializers read; device code that uses one
// fails on its missing members by name. Each is declared in its own header only (a second
// definition would be an error where two are included); the headers they come with in the host
// library (<utility>, <tuple>) come too.
const char* const kHostAny =
    "#include <initializer_list>\n#include <utility>\n#include <tuple>\n"
    "#ifndef KTUNE_HOST_ANY\n#define KTUNE_HOST_ANY\nnamespace std {\n"
    "struct __ktune_any {\n  template <class... A> __host__ __device__ __ktune_any(A&&...) {}\n"
    "  __host__ __device__ __ktune_any(std::initializer_list<__ktune_any>) {}\n};\n}\n#endif\n";
// A container's member types, which a host class's or a trait's declarations name
// (nlohmann/json 3.11's `std::vector<bool>::reference`, `object_t::key_compare`). Qualified, so
// that a class outside std is one too (Thrust's containers' stand-ins).
const char* const kContainerTypes =
    "  typedef std::__ktune_any value_type;\n  typedef std::__ktune_any key_type;\n  typedef std::__ktune_any mapped_type;\n"
    "  typedef std::__ktune_any key_compare;\n  typedef std::__ktune_any hasher;\n  typedef std::__ktune_any key_equal;\n"
    "  typedef std::__ktune_any allocator_type;\n  typedef std::__ktune_any& reference;\n  typedef const std::__ktune_any& const_reference;\n"
    "  typedef std::__ktune_any* pointer;\n  typedef const std::__ktune_any* const_pointer;\n  typedef std::__ktune_any* iterator;\n"
    "  typedef const std::__ktune_any* const_iterator;\n  typedef unsigned long size_type;\n  typedef long difference_type;\n";
std::string host_class(const std::string& name, const std::string& base = "", const std::string& members = "") {
  return "class " + name + (base.empty() ? "" : " : public " + base) + " {\n public:\n" + kContainerTypes + members + "  __host__ __device__ " + name +
         "() {}\n  template <class... A> __host__ __device__ " + name + "(A&&...) {}\n  __host__ __device__ " + name +
         "(std::initializer_list<std::__ktune_any>) {}\n};\n";
}
// libstdc++'s containers, strings and streams bring std::min and std::max (bits/stl_algobase.h),
// which a header that includes only one of them may use (lmdeploy's thread_map.h: <iostream>, then
// a constexpr std::max): ktune's <algorithm> with them.
std::string host_types(std::initializer_list<const char*> templates, std::initializer_list<const char*> classes = {}, const std::string& more = "") {
  std::string t = std::string("#include <algorithm>\n") + kHostAny + "namespace std {\n";
  for (const char* n : templates) t += "template <class...>\n" + host_class(n);
  for (const char* n : classes) t += host_class(n);
  return t + more + "}\n";
}

// Class templates of std itself on libcu++'s of the same name (`template <class T> struct hash :
// ::cuda::std::hash<T> {};`): a program may specialize them in namespace std for its own types,
// which a name the using-directive brings from cuda::std does not allow. Each from libcu++'s own
// part of its header where it has one (`part`, under <cuda/std/>), else from the whole header;
// under `guard`, as several of ktune's headers bring the same ones. `classes`: each one's name and
// its parameter's default ("" for none).
std::string std_classes_on_libcuxx(const std::string& guard, std::initializer_list<const char*> parts, const std::string& whole,
                                   std::initializer_list<std::pair<const char*, const char*>> classes) {
  std::string has, inc;
  for (const char* p : parts) {
    has += std::string(has.empty() ? "" : " && ") + "__has_include(<cuda/std/" + p + ">)";
    inc += std::string("#include <cuda/std/") + p + ">\n";
  }
  std::string t = "#ifndef " + guard + "\n#define " + guard + "\n#if " + has + "\n" + inc + "#else\n#include <cuda/std/" + whole + ">\n#endif\n" +
                  "namespace cuda { namespace std {} }\nnamespace std {\nusing namespace ::cuda::std;\n";
  for (const auto& [name, dflt] : classes)
    t += std::string("template <class T") + (*dflt ? std::string(" = ") + dflt : "") + "> struct " + name + " : ::cuda::std::" + name + "<T> {};\n";
  return t + "}\n#endif\n";
}

// std::hash and std::less (nlohmann/json's `template <> struct hash<nlohmann::json>`), from
// libcu++'s own parts of <functional>: the whole of it brings its math into std, which a global
// `using namespace std;` makes ambiguous with CUDA's (the libstdc++ headers that bring std::hash
// do not).
const std::string kStdHashLess = std_classes_on_libcuxx("KTUNE_STD_HASH_LESS", {"__functional/hash.h", "__functional/operations.h"}, "functional",
                                                        {{"hash", ""}, {"less", "void"}});

// std::iterator_traits (k2's `template <typename T> struct iterator_traits<k2::internal::PtrPtr<T>>`,
// for CUB's device-wide scans). In the headers whose libstdc++ twins bring it: <iterator>,
// <algorithm> and, through it, the host library's containers.
const std::string kStdIteratorTraits =
    std_classes_on_libcuxx("KTUNE_STD_ITERATOR_TRAITS", {"__iterator/iterator_traits.h"}, "iterator", {{"iterator_traits", ""}});

// <cfloat>: libcu++'s defines nothing under NVRTC, nor does NVRTC predefine __FLT_MAX__; IEEE
// binary32 and binary64's values, as glibc's float.h gives them.
const char* const kFloatLimits =
    "#ifndef FLT_MAX\n"
    "#define FLT_RADIX 2\n"
    "#define FLT_MANT_DIG 24\n#define DBL_MANT_DIG 53\n"
    "#define FLT_DIG 6\n#define DBL_DIG 15\n#define FLT_DECIMAL_DIG 9\n#define DBL_DECIMAL_DIG 17\n#define DECIMAL_DIG 17\n"
    "#define FLT_MIN_EXP (-125)\n#define DBL_MIN_EXP (-1021)\n#define FLT_MAX_EXP 128\n#define DBL_MAX_EXP 1024\n"
    "#define FLT_MIN_10_EXP (-37)\n#define DBL_MIN_10_EXP (-307)\n#define FLT_MAX_10_EXP 38\n#define DBL_MAX_10_EXP 308\n"
    "#define FLT_MAX 3.40282346638528859811704183484516925e+38F\n#define DBL_MAX 1.79769313486231570814527423731704357e+308\n"
    "#define FLT_MIN 1.17549435082228750796873653722224568e-38F\n#define DBL_MIN 2.22507385850720138309023271733240406e-308\n"
    "#define FLT_EPSILON 1.19209289550781250000000000000000000e-7F\n#define DBL_EPSILON 2.22044604925031308084726333618164062e-16\n"
    "#define FLT_TRUE_MIN 1.40129846432481707092372958328991613e-45F\n#define DBL_TRUE_MIN 4.94065645841246544176568792868221372e-324\n"
    "#endif\n";

// <math.h>'s constants (glibc defines them unless the compile is strictly ANSI).
const char* const kMathConstants =
    "#ifndef M_PI\n"
    "#define M_E 2.7182818284590452354\n#define M_LOG2E 1.4426950408889634074\n#define M_LOG10E 0.43429448190325182765\n"
    "#define M_LN2 0.69314718055994530942\n#define M_LN10 2.30258509299404568402\n#define M_PI 3.14159265358979323846\n"
    "#define M_PI_2 1.57079632679489661923\n#define M_PI_4 0.78539816339744830962\n#define M_1_PI 0.31830988618379067154\n"
    "#define M_2_PI 0.63661977236758134308\n#define M_2_SQRTPI 1.12837916709551257390\n#define M_SQRT2 1.41421356237309504880\n"
    "#define M_SQRT1_2 0.70710678118654752440\n"
    "#endif\n";

// <inttypes.h>'s format macros, as glibc gives them on LP64 (64-bit integers are long).
std::string inttypes_macros() {
  std::string m = "#ifndef PRId64\n";
  const char* conv[] = {"d", "i", "u", "x", "X", "o"};
  for (const char* c : conv) {
    for (const char* bits : {"8", "16", "32"}) m += std::string("#define PRI") + c + bits + " \"" + c + "\"\n";
    m += std::string("#define PRI") + c + "64 \"l" + c + "\"\n";
    m += std::string("#define PRI") + c + "PTR \"l" + c + "\"\n";
  }
  return m + "#endif\n";
}

std::string cmath_header();
std::string cstdlib_header();

std::vector<std::pair<std::string, std::string>> make_headers() {
  std::vector<std::pair<std::string, std::string>> h;
  h.emplace_back("cmath", cmath_header());
  h.emplace_back("cstdlib", cstdlib_header());
  for (const char* n : {"cstdint", "cstddef", "climits", "cassert", "cstring", "type_traits", "utility",
                        "tuple", "array", "bit", "concepts", "numeric", "initializer_list", "complex",
                        "optional", "span", "variant", "atomic", "ratio", "numbers", "bitset", "expected",
                        "mdspan", "ranges", "source_location", "barrier", "latch", "semaphore"})
    h.emplace_back(n, twin(n));
  h.emplace_back("iterator", twin("iterator") + kStdIteratorTraits);
  // <functional>: libcu++'s, and std::function, which it lacks, as the host library's stand-in
  // (a host class's callback member: Transformer Engine's userbuffers.h); std::hash and std::less
  // as classes of std (kStdHashLess).
  // unary_function and binary_function, which C++17 removed and libstdc++ still has (deprecated)
  // in every dialect: a project's functor bases (ColossalAI's CastFunctor).
  h.emplace_back("functional", twin("functional") + host_types({"function"}) + kStdHashLess +
                                   "namespace std {\n"
                                   "template <class Arg, class Result> struct unary_function {\n"
                                   "  typedef Arg argument_type;\n  typedef Result result_type;\n};\n"
                                   "template <class Arg1, class Arg2, class Result> struct binary_function {\n"
                                   "  typedef Arg1 first_argument_type;\n  typedef Arg2 second_argument_type;\n"
                                   "  typedef Result result_type;\n};\n}\n");
  // <limits>: std::numeric_limits as a class of std itself on libcu++'s, as std::hash is: a program
  // may specialize it in namespace std for its own types (the half library's `template <> class
  // numeric_limits<half_float::half>`, which CTranslate2 includes).
  h.emplace_back("limits", twin("limits") + "namespace std {\ntemplate <class T> class numeric_limits : public ::cuda::std::numeric_limits<T> {};\n}\n");
  // <ctime>: glibc's CLOCKS_PER_SEC too, which device code that spins on clock() divides by
  // (Apex's peer memory kernels); libcu++ under NVRTC defines time_t and clock_t only.
  h.emplace_back("ctime", twin("ctime") + kClocksPerSec);
  // <chrono>: libcu++ has no steady_clock where it has no monotonic clock, as under NVRTC (CCCL
  // 3's _LIBCUDACXX_HAS_MONOTONIC_CLOCK() is 0, CCCL 2 defines _LIBCUDACXX_HAS_NO_MONOTONIC_CLOCK),
  // and a host class's data member names its time_point (a logger's progress bar, tinylogger's,
  // which instant-ngp's headers include): the host library's, in libcu++'s chrono beside its
  // system_clock, so that std::chrono stays one namespace. Its now() is declared only (NVRTC
  // refuses a __host__ declaration; a data member's initializer may name it): device code that
  // calls it fails in ptxas, an unresolved extern function named steady_clock::now.
  h.emplace_back("chrono", twin("chrono") +
                               "#if defined(_LIBCUDACXX_HAS_MONOTONIC_CLOCK)\n#if !_LIBCUDACXX_HAS_MONOTONIC_CLOCK()\n#define KTUNE_STEADY_CLOCK\n#endif\n"
                               "#elif defined(_LIBCUDACXX_HAS_NO_MONOTONIC_CLOCK)\n#define KTUNE_STEADY_CLOCK\n#endif\n"
                               "#if defined(KTUNE_STEADY_CLOCK) && defined(_LIBCUDACXX_BEGIN_NAMESPACE_STD)\n"
                               "_LIBCUDACXX_BEGIN_NAMESPACE_STD\nnamespace chrono {\nclass steady_clock {\n public:\n"
                               "  typedef nanoseconds duration;\n  typedef duration::rep rep;\n  typedef duration::period period;\n"
                               "  typedef chrono::time_point<steady_clock, duration> time_point;\n  static constexpr bool is_steady = true;\n"
                               "  __host__ __device__ static time_point now() noexcept;\n};\n}\n_LIBCUDACXX_END_NAMESPACE_STD\n#endif\n");
  // <memory>: libcu++'s public header leaves unique_ptr out (a host class's data member may be
  // one: ggml's CUDA context's memory pools); shared_ptr and weak_ptr, which libcu++ lacks, as the
  // host library's empty stand-ins.
  // Its allocator and allocator_traits likewise (nlohmann/json's basic_json names
  // std::allocator_traits<std::allocator<basic_json>>::pointer in its member types).
  h.emplace_back("memory", twin("memory") +
                               "#if __has_include(<cuda/std/__memory/unique_ptr.h>)\n#include <cuda/std/__memory/unique_ptr.h>\n#endif\n"
                               "#if __has_include(<cuda/std/__memory/allocator.h>)\n#include <cuda/std/__memory/allocator.h>\n#endif\n"
                               "#if __has_include(<cuda/std/__memory/allocator_traits.h>)\n#include <cuda/std/__memory/allocator_traits.h>\n#endif\n" +
                               host_types({"shared_ptr", "weak_ptr", "enable_shared_from_this"}, {},
                                          // which a host class's member initializer calls (xgboost's
                                          // `std::shared_ptr<SparsePage> sparse_page_ = std::make_shared<SparsePage>();`)
                                          "template <class T, class... A> __host__ __device__ shared_ptr<T> make_shared(A&&...) { return shared_ptr<T>(); }\n"));
  h.emplace_back("cfloat", std::string("#pragma once\n// ktune's <cfloat> for NVRTC, which has none\n") + kFloatLimits);
  // <algorithm>: libcu++ has no public header of it; min, max, clamp and minmax are what device
  // code uses of it.
  {
    std::string a = "#pragma once\n// ktune's <algorithm> for NVRTC, which has none: libcu++'s min, max, clamp and minmax, in std:: too\n";
    for (const char* part : {"min", "max", "clamp", "minmax"})
      a += std::string("#if __has_include(<cuda/std/__algorithm/") + part + ".h>)\n#include <cuda/std/__algorithm/" + part + ".h>\n#endif\n";
    a += kIntoStd;
    a += kStdIteratorTraits;
    h.emplace_back("algorithm", a);
  }
  h.emplace_back("stdint.h", c_twin("stdint.h", "cstdint"));
  h.emplace_back("stddef.h", c_twin("stddef.h", "cstddef"));
  h.emplace_back("limits.h", c_twin("limits.h", "climits"));
  h.emplace_back("float.h", c_twin("float.h", "cfloat"));
  h.emplace_back("assert.h", c_twin("assert.h", "cassert"));
  h.emplace_back("stdlib.h", c_twin("stdlib.h", "cstdlib"));
  h.emplace_back("string.h", c_twin("string.h", "cstring"));
  // glibc's old name for <string.h>'s memory functions (cuda-samples' helper_multiprocess.h)
  h.emplace_back("memory.h", c_twin("memory.h", "cstring"));
  h.emplace_back("time.h", c_twin("time.h", "ctime", std::string(kTimespec) + kTm + kClocksPerSec));
  h.emplace_back("math.h", c_twin("math.h", "cmath", kMathConstants));
  // C's bool, true and false are C++'s own keywords.
  h.emplace_back("stdbool.h", "#pragma once\n// ktune's <stdbool.h> for NVRTC: C++ has bool\n#define __bool_true_false_are_defined 1\n");
  h.emplace_back("cinttypes", c_twin("cinttypes", "cstdint", inttypes_macros()));
  h.emplace_back("inttypes.h", c_twin("inttypes.h", "cstdint", inttypes_macros()));
  // printf is NVRTC's own, for device code; the rest of stdio is the host's.
  h.emplace_back("cstdio", host_only("cstdio", kFileType + "namespace std { using ::FILE; }\n"));
  h.emplace_back("stdio.h", host_only("stdio.h", kFileType));
  h.emplace_back("sys/time.h", host_only("sys/time.h", kTimeTypes));
  // POSIX threads' types, as glibc lays them out on x86-64, which a host header's typedefs and a
  // host class's members name (cuda-samples' multithreading.h: `typedef pthread_t CUTThread;`).
  h.emplace_back("pthread.h", host_only("pthread.h", "typedef unsigned long pthread_t;\ntypedef unsigned int pthread_key_t;\ntypedef int pthread_once_t;\n"
                                                     "typedef volatile int pthread_spinlock_t;\n"
                                                     "typedef union { char __size[56]; long __align; } pthread_attr_t;\n"
                                                     "typedef union { char __size[40]; long __align; } pthread_mutex_t;\n"
                                                     "typedef union { char __size[48]; long long __align; } pthread_cond_t;\n"
                                                     "typedef union { char __size[56]; long __align; } pthread_rwlock_t;\n"
                                                     "typedef union { char __size[32]; long __align; } pthread_barrier_t;\n"));
  // glibc's process and I/O types (cuda-samples' helper_multiprocess.h: a struct's pid_t).
  const std::string posix_types = "#ifndef KTUNE_POSIX_TYPES\n#define KTUNE_POSIX_TYPES\ntypedef int pid_t;\ntypedef long ssize_t;\n"
                                  "typedef unsigned int uid_t;\ntypedef unsigned int gid_t;\ntypedef long off_t;\ntypedef unsigned int mode_t;\n#endif\n";
  h.emplace_back("sys/types.h", host_only("sys/types.h", posix_types));
  h.emplace_back("unistd.h", host_only("unistd.h", posix_types));
  // glibc's glob_t, which a host data loader's struct holds (llm.c's DataLoader)
  h.emplace_back("glob.h", host_only("glob.h", "typedef struct { unsigned long gl_pathc; char** gl_pathv; unsigned long gl_offs; int gl_flags;\n"
                                               "  void* gl_closedir; void* gl_readdir; void* gl_opendir; void* gl_lstat; void* gl_stat; } glob_t;\n"));
  h.emplace_back("vector", host_only("vector", host_types({"vector"})));
  // char_traits' types, which a host class's data member names (nlohmann/json's input adapter's
  // `std::array<std::char_traits<char>::int_type, 4>`), and its constexpr members, which a
  // string view's constexpr constructor calls (xgboost's StringView: `Traits::length(str)`, which
  // nvcc takes in device code built with --expt-relaxed-constexpr); libcu++ declares it and
  // defines none.
  h.emplace_back("string", host_only("string", host_types({"basic_string"}, {},
                                                          std::string("typedef basic_string<char> string;\n") +
                                                              "typedef basic_string<wchar_t> wstring;\ntypedef basic_string<char16_t> u16string;\n"
                                                              "typedef basic_string<char32_t> u32string;\n" +
                                                          "template <class C> struct char_traits {\n  typedef C char_type;\n  typedef int int_type;\n"
                                                          "  static constexpr __host__ __device__ unsigned long length(const C* s) { unsigned long n = 0; while (!(s[n] == C())) ++n; return n; }\n"
                                                          "  static constexpr __host__ __device__ bool eq(C a, C b) { return a == b; }\n"
                                                          "  static constexpr __host__ __device__ bool lt(C a, C b) { return a < b; }\n"
                                                          "  static constexpr __host__ __device__ int compare(const C* a, const C* b, unsigned long n) {\n"
                                                          "    for (unsigned long i = 0; i < n; ++i) { if (a[i] < b[i]) return -1; if (b[i] < a[i]) return 1; }\n    return 0;\n  }\n"
                                                          "  static constexpr __host__ __device__ void assign(C& r, const C& a) { r = a; }\n"
                                                          "  static constexpr __host__ __device__ int_type eof() { return -1; }\n"
                                                          "  static constexpr __host__ __device__ int_type to_int_type(C c) { return int_type(c); }\n"
                                                          "  static constexpr __host__ __device__ C to_char_type(int_type i) { return C(i); }\n};\n") +
                                                              kEof));
  // C's locale (glibc's struct lconv, opaque: a host class holds a pointer to it, nlohmann/json's
  // serializer).
  for (const char* n : {"clocale", "locale.h", "locale"})
    h.emplace_back(n, host_only(n, "struct lconv;\nnamespace std { using ::lconv; }\n"));
  h.emplace_back("map", host_only("map", host_types({"map", "multimap"})));
  h.emplace_back("unordered_map", host_only("unordered_map", host_types({"unordered_map", "unordered_multimap"})));
  h.emplace_back("set", host_only("set", host_types({"set", "multiset"})));
  h.emplace_back("unordered_set", host_only("unordered_set", host_types({"unordered_set", "unordered_multiset"})));
  h.emplace_back("list", host_only("list", host_types({"list"})));
  h.emplace_back("forward_list", host_only("forward_list", host_types({"forward_list"})));
  h.emplace_back("valarray", host_only("valarray", host_types({"valarray"})));
  h.emplace_back("filesystem", host_only("filesystem", host_types({}, {}, "namespace filesystem {\n" + host_class("path") + "}\n")));
  h.emplace_back("deque", host_only("deque", host_types({"deque"})));
  h.emplace_back("queue", host_only("queue", host_types({"queue", "priority_queue"})));
  h.emplace_back("stack", host_only("stack", host_types({"stack"})));
  // The threading headers with what libstdc++'s bring of each other: <future> its mutexes,
  // condition variables, std::thread, std::function and smart pointers, <condition_variable> the
  // mutex and its locks, each <chrono> (a thread pool that includes <future> and <thread> holds a
  // std::mutex and std::condition_variables, instant-ngp's thread_pool.h).
  // std::thread with its member class id, which a host struct holds (Kaldi's CuAllocator's
  // `std::thread::id thread_id;`), and std::this_thread.
  h.emplace_back("thread", host_only("thread", "#include <chrono>\n" +
                                                   host_types({}, {}, host_class("thread", "", "  " + host_class("id")) +
                                                                          "namespace this_thread {\n__host__ __device__ thread::id get_id() noexcept;\n}\n")));
  h.emplace_back("mutex", host_only("mutex", "#include <chrono>\n" + host_types({"lock_guard", "unique_lock", "scoped_lock"},
                                                                               {"mutex", "recursive_mutex", "timed_mutex", "once_flag"})));
  h.emplace_back("shared_mutex", host_only("shared_mutex", host_types({"shared_lock"}, {"shared_mutex", "shared_timed_mutex"})));
  h.emplace_back("condition_variable", host_only("condition_variable", "#include <mutex>\n" + host_types({}, {"condition_variable"})));
  h.emplace_back("future", host_only("future", "#include <mutex>\n#include <condition_variable>\n#include <thread>\n#include <functional>\n"
                                               "#include <memory>\n" + host_types({"future", "shared_future", "promise", "packaged_task"})));
  // std::exception_ptr and nested_exception too, which a host class holds (dmlc-core's
  // OMPException, in every xgboost file: `std::exception_ptr omp_exception_;`).
  // The engines that name their default seed (k2's host `uint64_t seed = std::mt19937::default_seed;`),
  // with the standard's values.
  auto seeded_engines = [] {
    std::string e;
    for (const auto& [name, seed] : {std::pair<const char*, const char*>{"mt19937", "5489u"}, {"mt19937_64", "5489u"}, {"minstd_rand", "1u"},
                                     {"minstd_rand0", "1u"}, {"default_random_engine", "1u"}, {"ranlux24_base", "19780503u"},
                                     {"ranlux48_base", "19780503u"}})
      e += host_class(name, "", std::string("  static constexpr unsigned long long default_seed = ") + seed + ";\n");
    return e;
  };
  // <random>'s engines and distributions, which a host class holds or a type alias names
  // (xgboost's context.h: `using RandomEngine = std::mt19937;`).
  // std::bernoulli_distribution is a class, not a template (CUTLASS's host tensor_fill.h holds a
  // `std::bernoulli_distribution bernoulli_dist;`); the engines' own templates take non-type
  // arguments.
  h.emplace_back("random", host_only("random", host_types({"uniform_int_distribution", "uniform_real_distribution", "normal_distribution",
                                                          "discrete_distribution", "exponential_distribution", "poisson_distribution",
                                                          "binomial_distribution", "geometric_distribution", "negative_binomial_distribution",
                                                          "gamma_distribution", "weibull_distribution", "extreme_value_distribution",
                                                          "lognormal_distribution", "chi_squared_distribution", "cauchy_distribution",
                                                          "fisher_f_distribution", "student_t_distribution", "piecewise_constant_distribution",
                                                          "piecewise_linear_distribution"},
                                                         {"ranlux24", "ranlux48", "knuth_b", "random_device", "seed_seq", "bernoulli_distribution"},
                                                         seeded_engines() + "template <class T, auto...>\n" + host_class("mersenne_twister_engine") +
                                                             "template <class T, auto...>\n" + host_class("linear_congruential_engine") +
                                                             "template <class T, auto...>\n" + host_class("subtract_with_carry_engine") +
                                                             "template <class E, auto...>\n" + host_class("discard_block_engine") +
                                                             "template <class E, auto...>\n" + host_class("independent_bits_engine") +
                                                             "template <class E, auto...>\n" + host_class("shuffle_order_engine"))));
  h.emplace_back("exception", host_only("exception", host_types({}, {"exception", "exception_ptr", "nested_exception"})));
  // std::type_index, a host map's key (dmlc-core's JSON registry: `std::unordered_map<std::type_index, std::string>`).
  h.emplace_back("typeindex", host_only("typeindex", "#include <typeinfo>\n" + host_types({}, {"type_index"})));
  // std::type_info, which a host class points to (AMGX's amg_config.h: `const std::type_info *type;`):
  // NVRTC's front end reserves the name and refuses any declaration of it, and names none itself
  // (no RTTI on the device), so the word stands for a class of ktune's, declared only.
  h.emplace_back("typeinfo", host_only("typeinfo", "#include <exception>\n#define type_info __ktune_type_info\n" +
                                                       host_types({}, {}, "class __ktune_type_info;\n" + host_class("bad_cast", "exception") +
                                                                              host_class("bad_typeid", "exception"))));
  {
    std::string errors;
    for (const char* n : {"logic_error", "runtime_error"}) errors += host_class(n, "exception");
    for (const char* n : {"invalid_argument", "domain_error", "length_error", "out_of_range"}) errors += host_class(n, "logic_error");
    for (const char* n : {"range_error", "overflow_error", "underflow_error"}) errors += host_class(n, "runtime_error");
    h.emplace_back("stdexcept", host_only("stdexcept", "#include <exception>\n" + host_types({}, {}, errors)));
  }
  // The standard streams, which a file's `using std::cerr;` at namespace scope names (cuda-samples'
  // simpleMPI): objects of an empty class, the host's streams otherwise; code that writes to one
  // is host code, which skip blanks.
  {
    const std::string streams =
        "#ifndef KTUNE_HOST_STREAMS\n#define KTUNE_HOST_STREAMS\nnamespace std {\n"
        "struct __ktune_stream { __host__ __device__ constexpr __ktune_stream() {} };\n"
        "typedef __ktune_stream ostream;\ntypedef __ktune_stream istream;\n"
        "constexpr __ktune_stream cout, cerr, clog, cin;\n"
        "inline __host__ __device__ const __ktune_stream& endl(const __ktune_stream& s) { return s; }\n"
        "inline __host__ __device__ const __ktune_stream& flush(const __ktune_stream& s) { return s; }\n}\n#endif\n";
    // The stream class templates, which a host class derives from (dmlc-core's
    // `class ostream : public std::basic_ostream<char>`): libcu++ declares them and defines none.
    const std::string stream_templates = "#ifndef KTUNE_HOST_STREAM_TEMPLATES\n#define KTUNE_HOST_STREAM_TEMPLATES\n" +
                                         host_types({"basic_ios", "basic_streambuf", "basic_ostream", "basic_istream", "basic_iostream"},
                                                    {"ios_base", "streambuf"}) +
                                         "#endif\n";
    for (const char* n : {"iostream", "ostream", "istream"}) h.emplace_back(n, host_only(n, "#include <algorithm>\n" + streams + stream_templates));
    h.emplace_back("streambuf", host_only("streambuf", stream_templates));
    // String and file streams as host classes, which a host class's data members name (MinkowskiEngine's
    // `std::stringstream stream_;`, lmdeploy's `std::ostringstream* oss_;`).
    h.emplace_back("sstream", host_only("sstream", streams + host_types({"basic_stringbuf", "basic_istringstream", "basic_ostringstream", "basic_stringstream"},
                                                                        {"stringbuf", "istringstream", "ostringstream", "stringstream"})));
    h.emplace_back("fstream", host_only("fstream", streams + host_types({"basic_filebuf", "basic_ifstream", "basic_ofstream", "basic_fstream"},
                                                                        {"filebuf", "ifstream", "ofstream", "fstream"})));
  }
  // <new>: placement new is NVRTC's own; libcu++'s launder and bad_alloc, in std:: too (a device
  // allocator's construct, cuDF's hash_allocator.cuh in MinkowskiEngine).
  h.emplace_back("new", "#pragma once\n// ktune's <new> for NVRTC, which has none: placement new is NVRTC's own\n"
                        "#if __has_include(<cuda/std/__new/launder.h>)\n#include <cuda/std/__new/launder.h>\n#endif\n"
                        "#if __has_include(<cuda/std/__new/bad_alloc.h>)\n#include <cuda/std/__new/bad_alloc.h>\n#endif\n" +
                        std::string(kIntoStd));
  for (const char* n : {"iomanip", "string_view", "regex", "strings.h", "sys/stat.h", "sys/resource.h", "sys/mman.h", "fcntl.h", "dlfcn.h", "fenv.h", "cfenv",
                        "getopt.h", "cerrno", "errno.h", "csignal", "signal.h", "cctype", "ctype.h", "cstdarg", "stdarg.h",
                        "any", "execution", "omp.h", "sys/syscall.h", "syscall.h", "charconv",
                        "format", "print", "ios", "iosfwd", "cwchar", "cwctype", "wchar.h",
                        "csetjmp", "setjmp.h", "sched.h", "sys/sysinfo.h", "libgen.h", "malloc.h", "memory_resource", "stop_token",
                        "syncstream", "stacktrace",
                        "sys/un.h", "ifaddrs.h", "sys/select.h", "sys/ioctl.h", "sys/wait.h",
                        "sys/ipc.h", "sys/shm.h", "semaphore.h", "sys/file.h", "sys/uio.h", "sys/utsname.h", "sys/times.h",
                        "sys/prctl.h", "termios.h", "pwd.h", "spawn.h", "execinfo.h", "cxxabi.h", "link.h"})
    h.emplace_back(n, host_only(n));
  // <system_error>'s classes, which a host class holds (xgboost's collective Result: `std::error_code
  // errc{};`), and std::errc; system_error on <stdexcept>'s runtime_error, as libstdc++'s.
  h.emplace_back("system_error", host_only("system_error", host_types({}, {"error_code", "error_condition", "error_category"},
                                                                      "enum class errc { invalid_argument = 22, timed_out = 110 };\n" +
                                                                          host_class("system_error", "runtime_error"))));
  // The sockets' types and constants as glibc gives them on x86-64 Linux, which a host class
  // holds (xgboost's collective socket.h: `sockaddr_in6 addr_;`, `enum class SockDomain {
  // kV4 = AF_INET, kV6 = AF_INET6 };`); the functions are the host's (a using-declaration of one,
  // `using ::inet_ntop;`, goes: core/host_code.h).
  const std::string sockets =
      "#ifndef KTUNE_POSIX_SOCKETS\n#define KTUNE_POSIX_SOCKETS\ntypedef unsigned int socklen_t;\ntypedef unsigned short sa_family_t;\n"
      "typedef unsigned short in_port_t;\ntypedef unsigned int in_addr_t;\n"
      "struct sockaddr { sa_family_t sa_family; char sa_data[14]; };\n"
      "struct sockaddr_storage { sa_family_t ss_family; char __ss_padding[118]; unsigned long __ss_align; };\n"
      "struct in_addr { in_addr_t s_addr; };\nstruct in6_addr { unsigned char s6_addr[16]; };\n"
      "struct sockaddr_in { sa_family_t sin_family; in_port_t sin_port; struct in_addr sin_addr; unsigned char sin_zero[8]; };\n"
      "struct sockaddr_in6 { sa_family_t sin6_family; in_port_t sin6_port; unsigned int sin6_flowinfo; struct in6_addr sin6_addr; "
      "unsigned int sin6_scope_id; };\n"
      "struct pollfd { int fd; short events; short revents; };\ntypedef unsigned long nfds_t;\n"
      "struct addrinfo { int ai_flags; int ai_family; int ai_socktype; int ai_protocol; socklen_t ai_addrlen; struct sockaddr* ai_addr; "
      "char* ai_canonname; struct addrinfo* ai_next; };\n"
      "#define AF_UNSPEC 0\n#define AF_UNIX 1\n#define AF_INET 2\n#define AF_INET6 10\n#define PF_UNSPEC AF_UNSPEC\n#define PF_UNIX AF_UNIX\n"
      "#define PF_INET AF_INET\n#define PF_INET6 AF_INET6\n#define SOCK_STREAM 1\n#define SOCK_DGRAM 2\n#define SOL_SOCKET 1\n"
      "#define SO_REUSEADDR 2\n#define SO_ERROR 4\n#define SO_SNDBUF 7\n#define SO_RCVBUF 8\n#define SO_KEEPALIVE 9\n#define SO_RCVTIMEO 20\n"
      "#define SO_SNDTIMEO 21\n#define SO_PROTOCOL 38\n#define SO_DOMAIN 39\n#define SOMAXCONN 4096\n#define MSG_PEEK 0x02\n"
      "#define MSG_DONTWAIT 0x40\n#define MSG_WAITALL 0x100\n#define MSG_NOSIGNAL 0x4000\n#define SHUT_RD 0\n#define SHUT_WR 1\n#define SHUT_RDWR 2\n"
      "#define INADDR_ANY ((in_addr_t)0x00000000)\n#define INADDR_LOOPBACK ((in_addr_t)0x7f000001)\n#define INET_ADDRSTRLEN 16\n"
      "#define INET6_ADDRSTRLEN 46\n#define IPPROTO_IP 0\n#define IPPROTO_TCP 6\n#define IPPROTO_UDP 17\n#define IPPROTO_IPV6 41\n"
      "#define TCP_NODELAY 1\n#define POLLIN 0x001\n#define POLLPRI 0x002\n#define POLLOUT 0x004\n#define POLLERR 0x008\n#define POLLHUP 0x010\n"
      "#define POLLNVAL 0x020\n#define AI_PASSIVE 0x0001\n#define AI_CANONNAME 0x0002\n#define AI_NUMERICHOST 0x0004\n#define NI_MAXHOST 1025\n"
      "#define NI_MAXSERV 32\n#endif\n";
  for (const char* n : {"sys/socket.h", "netinet/in.h", "netinet/tcp.h", "arpa/inet.h", "netdb.h", "poll.h"}) h.emplace_back(n, host_only(n, sockets));
  // A directory stream, opaque as FILE is: a host class holds a pointer to it (tinyfs's
  // directory iterator in instant-ngp, `DIR* m_handle; struct dirent* m_data;`).
  h.emplace_back("dirent.h", host_only("dirent.h", "typedef struct __dirstream DIR;\nstruct dirent;\n"));
  // Linux's limits, as the kernel's header gives them (a host function's `char path[PATH_MAX]`).
  h.emplace_back("linux/limits.h", host_only("linux/limits.h", "#ifndef PATH_MAX\n#define NGROUPS_MAX 65536\n#define ARG_MAX 131072\n"
                                                             "#define LINK_MAX 127\n#define MAX_CANON 255\n#define MAX_INPUT 255\n#define NAME_MAX 255\n"
                                                             "#define PATH_MAX 4096\n#define PIPE_BUF 4096\n#define XATTR_NAME_MAX 255\n"
                                                             "#define XATTR_SIZE_MAX 65536\n#define XATTR_LIST_MAX 65536\n#define RTSIG_MAX 32\n#endif\n"));
  // What libstdc++'s headers bring of its exceptions: its containers and strings std::exception
  // (through <new>), its streams <stdexcept>'s errors too (through <ios>'s system_error). A header
  // that includes only <iostream> and <string> derives its error class from std::exception (vLLM's
  // flashinfer_utils.cuh).
  static const std::set<std::string> bring_errors = {"iostream", "ostream", "istream", "sstream", "fstream", "ios", "system_error"};
  static const std::set<std::string> bring_exception = {"vector", "string", "map", "unordered_map", "set", "unordered_set",
                                                        "list", "forward_list", "deque", "queue", "valarray"};
  // Its streams bring std::string too (<ios>'s locale classes hold one): AMGX's amgx_timer.h names
  // std::string after <iostream>, <iomanip> and <fstream> alone.
  // And std::hash (bits/functional_hash.h) and std::less, which <functional>'s stand-in makes
  // classes of std that a program may specialize: libstdc++'s strings, smart pointers, containers
  // and threads bring them (dmlc-core's optional.h specializes std::hash after <string> and
  // <iostream> alone; the name was libcu++'s, and the specialization in std refused).
  static const std::set<std::string> bring_hash = {"string", "string_view", "memory", "typeindex", "thread", "system_error", "bitset",
                                                   "vector", "optional", "variant", "map", "set", "unordered_map", "unordered_set"};
  for (auto& [name, text] : h) {
    std::string brings = bring_errors.count(name) ? "#include <stdexcept>\n#include <string>\n" : bring_exception.count(name) ? "#include <exception>\n" : "";
    if (bring_hash.count(name)) brings += kStdHashLess;
    if (!brings.empty()) text.insert(text.find('\n') + 1, brings); // after its #pragma once
  }
  return h;
}

// The file's text, or "" where there is none (then no view is made of it).
std::string read_text(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) ? read_text_file(path, "CUDA header") : std::string();
}

// text with each #include's name (and whether it is quoted) given to `as`, which returns the
// name to include by <...>, or "" to drop the line (an empty line keeps the line numbers).
template <class F>
std::string with_includes(const std::string& text, F as) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t inc = line.find("#include");
    const size_t open = inc == std::string::npos ? inc : line.find_first_of("<\"", inc);
    const size_t close = open == std::string::npos ? open : line.find(line[open] == '"' ? '"' : '>', open + 1);
    if (close == std::string::npos) {
      out += line + "\n";
      continue;
    }
    const std::string name = as(line.substr(open + 1, close - open - 1), line[open] == '"');
    out += (name.empty() ? std::string() : line.substr(0, open) + "<" + name + ">" + line.substr(close + 1)) + "\n";
  }
  return out;
}

// CUB's umbrella header with the includes device code cannot compile under NVRTC dropped, and a
// quoted include ("block/...", as CUDA 12's spells them) made <cub/...>: this text has no folder
// to be relative to.
std::string cub_device_view(const std::string& text) {
  // CCCL 3.3's cub.cuh refuses NVRTC (`#error "Including <cub/cub.cuh> is not supported when
  // compiling with NVRTC"`, FlashInfer's copy) for the host parts this view leaves out: its
  // switch for that check set while it is read, as the header names it.
  const char* const kCheck = "CCCL_DISABLE_CUB_NVRTC_COMPATIBILITY_CHECK";
  const bool checks = text.find(kCheck) != std::string::npos;
  const std::string off = checks ? std::string("#ifndef ") + kCheck + "\n#define " + kCheck + "\n#define KTUNE_CUB_CHECK_SET\n#endif\n" : "";
  const std::string on = checks ? std::string("#ifdef KTUNE_CUB_CHECK_SET\n#undef ") + kCheck + "\n#undef KTUNE_CUB_CHECK_SET\n#endif\n" : "";
  std::string body = with_includes(text, [](std::string path, bool quoted) {
    if (quoted && path.rfind("cub/", 0) != 0) path = "cub/" + path;
    const bool host = path.rfind("cub/device/", 0) == 0 || path == "cub/util_allocator.cuh";
    return host ? std::string() : path;
  });
  // After its #pragma once (at the top where it has none), so that a second include reads none of it.
  const size_t once = body.find("#pragma once");
  body.insert(once == std::string::npos ? 0 : body.find('\n', once) + 1, off);
  return body + on + "// ktune's <cub/cub.cuh> for NVRTC: CUB's without its device-wide algorithms and host allocator\n";
}

// CUDA's headers of host APIs that device code reaches through a project's includes (a kernel
// file that includes <cublas_v2.h> for its host code; NCCL's and cuDNN's, where they are installed
// beside them). Not nvrtc.h, which make_views makes apart (its extern "C" block wraps an include
// of <stdlib.h>), nor the graphics interop headers (they include GL's).
const char* const kHostApiHeaders[] = {"cuda.h", "cudaProfiler.h", "cuda_profiler_api.h", "cublas_api.h", "cublas_v2.h", "cublas.h",
                                       "cublasLt.h", "cublasXt.h", "cusparse.h", "cufft.h", "cufftXt.h", "curand.h",
                                       "cusolver_common.h", "cusolverDn.h", "cusolverSp.h", "cusolverMg.h", "cusolverRf.h",
                                       "cusparse_v2.h", "cufftw.h", "nvJitLink.h", "nvblas.h", "nvvm.h", "nccl.h",
                                       // the driver API's function pointer types (a project's cuGetProcAddress, NVIDIA
                                       // Warp's cuda_util.h): found on the toolkit's path, their <cuda.h> would be its own
                                       "cudaTypedefs.h", "cudaProfilerTypedefs.h",
                                       // cuDNN where it is installed with the toolkit (its umbrella and the parts it includes)
                                       "cudnn.h", "cudnn_version.h", "cudnn_graph.h", "cudnn_ops.h", "cudnn_adv.h", "cudnn_cnn.h",
                                       "cudnn_backend.h", "cudnn_v9.h", "cudnn_version_v9.h", "cudnn_graph_v9.h", "cudnn_ops_v9.h",
                                       "cudnn_adv_v9.h", "cudnn_cnn_v9.h", "cudnn_backend_v9.h"};

// A view's quoted #includes as device code reaches them here: one whose file lies in `family`
// (a folder of the toolkit's include dir, "nvtx3") spelled <family/path>, so that NVRTC finds it
// by the name it has here (a view's text has no folder to be relative to), the others <path>; an
// include whose name holds `drop` goes (an empty line keeps the line numbers).
std::string angled_includes(const std::string& text, const std::string& dir, const std::string& family, const std::string& drop) {
  return with_includes(text, [&](const std::string& path, bool quoted) {
    std::error_code ec;
    if (path.find(drop) != std::string::npos) return std::string();
    return quoted && std::filesystem::exists(dir + "/" + family + "/" + path, ec) ? family + "/" + path : path;
  });
}

// The standard headers a view includes at the top of its #if nesting (its include guard's at
// most), moved to its first empty line before them: nvrtc.h includes <stdlib.h> inside its
// extern "C" block, where libcu++'s twin (templates) cannot be. Lines keep their numbers where
// the view has an empty line before (its licence comment, gone).
std::string hoist_std_includes(const std::string& text) {
  std::set<std::string> std_names;
  for (const auto& h : nvrtc_std_headers()) std_names.insert(h.first);
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::vector<std::string> incs;
  size_t first_directive = lines.size();
  int depth = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t hash = lines[i].find_first_not_of(" \t");
    if (hash == std::string::npos || lines[i][hash] != '#') continue;
    first_directive = std::min(first_directive, i);
    const size_t word = lines[i].find_first_not_of(" \t", hash + 1);
    const std::string d = word == std::string::npos ? "" : lines[i].substr(word, lines[i].find_first_of(" \t<\"", word) - word);
    if (d.rfind("if", 0) == 0) ++depth;
    if (d == "endif") --depth;
    const size_t open = lines[i].find('<'), close = lines[i].find('>');
    if (d == "include" && depth <= 1 && open != std::string::npos && close != std::string::npos &&
        std_names.count(lines[i].substr(open + 1, close - open - 1))) {
      incs.push_back(lines[i].substr(hash));
      lines[i].clear();
    }
  }
  if (incs.empty()) return text;
  // One #include a line: an empty line before the first directive for each, else the text's top.
  size_t slot = 0;
  for (size_t i = 0; i < first_directive && slot < incs.size(); ++i)
    if (lines[i].find_first_not_of(" \t") == std::string::npos) lines[i] = incs[slot++];
  std::string out;
  for (; slot < incs.size(); ++slot) out += incs[slot] + "\n";
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// thrust::device_ptr as device code uses it: a pointer that knows its memory is the device's,
// which device code steps through and reads (xgboost's `dh::tcbegin(span)`, a
// `thrust::device_ptr<T const>` over a span, walked by thrust::for_each under thrust::seq). Its
// element type's raw pointer inside, the arithmetic, comparisons and iterator types of one, its
// reference the element's own (on the device Thrust's device_reference reads and writes it so);
// built from nothing, nullptr, a raw pointer (explicitly) or another device_ptr, as Thrust's is;
// its raw_pointer type, which Thrust's pointer traits (its own raw_pointer_cast) read.
// raw_pointer_cast and device_pointer_cast beside it.
const char* const kThrustDevicePtr =
    "#include <cuda/std/iterator>\n#include <cuda/std/type_traits>\n#include <cuda/std/cstddef>\n"
    "THRUST_NAMESPACE_BEGIN\n"
    "template <class T>\nclass device_ptr {\n public:\n"
    "  typedef T element_type;\n  typedef typename ::cuda::std::remove_cv<T>::type value_type;\n"
    "  typedef ::cuda::std::ptrdiff_t difference_type;\n  typedef T* pointer;\n  typedef T* raw_pointer;\n"
    "  typedef typename ::cuda::std::add_lvalue_reference<T>::type reference;\n"
    "  typedef ::cuda::std::random_access_iterator_tag iterator_category;\n"
    "  __host__ __device__ device_ptr() : p_(nullptr) {}\n"
    "  __host__ __device__ device_ptr(decltype(nullptr)) : p_(nullptr) {}\n"
    "  template <class U, class = typename ::cuda::std::enable_if<::cuda::std::is_convertible<U*, T*>::value>::type>\n"
    "  __host__ __device__ explicit device_ptr(U* p) : p_(p) {}\n"
    "  template <class U, class = typename ::cuda::std::enable_if<::cuda::std::is_convertible<U*, T*>::value>::type>\n"
    "  __host__ __device__ device_ptr(const device_ptr<U>& o) : p_(o.get()) {}\n"
    "  __host__ __device__ T* get() const { return p_; }\n"
    "  __host__ __device__ reference operator*() const { return *p_; }\n"
    "  __host__ __device__ T* operator->() const { return p_; }\n"
    "  __host__ __device__ reference operator[](difference_type i) const { return p_[i]; }\n"
    "  __host__ __device__ explicit operator bool() const { return p_ != nullptr; }\n"
    "  __host__ __device__ device_ptr& operator++() { ++p_; return *this; }\n"
    "  __host__ __device__ device_ptr& operator--() { --p_; return *this; }\n"
    "  __host__ __device__ device_ptr operator++(int) { device_ptr t = *this; ++p_; return t; }\n"
    "  __host__ __device__ device_ptr operator--(int) { device_ptr t = *this; --p_; return t; }\n"
    "  __host__ __device__ device_ptr& operator+=(difference_type n) { p_ += n; return *this; }\n"
    "  __host__ __device__ device_ptr& operator-=(difference_type n) { p_ -= n; return *this; }\n"
    "  __host__ __device__ device_ptr operator+(difference_type n) const { return device_ptr(p_ + n); }\n"
    "  __host__ __device__ device_ptr operator-(difference_type n) const { return device_ptr(p_ - n); }\n"
    "  __host__ __device__ difference_type operator-(const device_ptr& o) const { return p_ - o.p_; }\n"
    "  __host__ __device__ bool operator==(const device_ptr& o) const { return p_ == o.p_; }\n"
    "  __host__ __device__ bool operator!=(const device_ptr& o) const { return p_ != o.p_; }\n"
    "  __host__ __device__ bool operator<(const device_ptr& o) const { return p_ < o.p_; }\n"
    "  __host__ __device__ bool operator>(const device_ptr& o) const { return p_ > o.p_; }\n"
    "  __host__ __device__ bool operator<=(const device_ptr& o) const { return p_ <= o.p_; }\n"
    "  __host__ __device__ bool operator>=(const device_ptr& o) const { return p_ >= o.p_; }\n"
    " private:\n  T* p_;\n};\n"
    "template <class T> __host__ __device__ device_ptr<T> operator+(::cuda::std::ptrdiff_t n, const device_ptr<T>& p) { return p + n; }\n"
    "template <class T> __host__ __device__ T* raw_pointer_cast(const device_ptr<T>& p) { return p.get(); }\n"
    "template <class T> __host__ __device__ T* raw_pointer_cast(T* p) { return p; }\n"
    "template <class T> __host__ __device__ device_ptr<T> device_pointer_cast(T* p) { return device_ptr<T>(p); }\n"
    "template <class T> __host__ __device__ device_ptr<T> device_pointer_cast(const device_ptr<T>& p) { return p; }\n"
    "THRUST_NAMESPACE_END\n";

// Thrust's algorithms under its sequential policy, `thrust::seq`, which device code calls inside a
// kernel or a device lambda (xgboost's `thrust::lower_bound(thrust::seq, ...)`, cuDF's, cuGraph's):
// their headers are Thrust's host side, whose dispatch to every backend NVRTC cannot compile. Here
// on libcu++'s algorithms where Thrust's and the standard's agree in arguments and result (each
// forwarded only where this libcu++ has it), and written out where they differ: a thrust::pair
// result (equal_range, mismatch), minmax_element's largest (the first; the standard's is the
// last), for_each's result (the end, not the function),
// transform_reduce's argument order, the scans' and sequence's defaults, and those the standard
// lacks (sequence, tabulate); those written out as Thrust's sequential backend computes them (its
// accumulator types, the order of its operations). Other algorithms, and other policies, fail on
// their name.
std::string thrust_sequential_algorithms() {
  static const char* const kAlgorithm[] = {
      "adjacent_find", "all_of",  "any_of",      "binary_search", "copy",         "copy_backward", "copy_if",      "copy_n",
      "count",         "count_if", "equal",      "fill",          "fill_n",       "find",          "find_end",     "find_first_of",
      "find_if",       "find_if_not", "for_each_n", "generate",    "generate_n",   "includes",      "is_partitioned", "is_sorted",
      "is_sorted_until", "lexicographical_compare", "lower_bound", "max_element", "merge", "min_element", "none_of", "partition",
      "partition_point", "remove", "remove_copy", "remove_copy_if", "remove_if", "replace", "replace_copy", "replace_copy_if",
      "replace_if", "reverse", "reverse_copy", "set_difference", "set_intersection", "set_symmetric_difference", "set_union",
      "swap_ranges", "transform", "unique", "unique_copy", "upper_bound"};
  std::string inc = "#include <cuda/std/numeric>\n#include <cuda/std/iterator>\n#include <cuda/std/type_traits>\n"
                    "#include <cuda/std/functional>\n#include <thrust/pair.h>\n";
  std::string t = "THRUST_NAMESPACE_BEGIN\nnamespace detail {\nstruct seq_t {\n  __host__ __device__ constexpr seq_t() {}\n};\n}\n"
                  "__device__ constexpr detail::seq_t seq{};\n"
                  "#define KTUNE_THRUST_SEQ(f) template <class... A> __host__ __device__ auto f(const detail::seq_t&, A&&... a) "
                  "-> decltype(::cuda::std::f(static_cast<A&&>(a)...)) { return ::cuda::std::f(static_cast<A&&>(a)...); }\n";
  // Each forwarder where this libcu++ has its algorithm's header: its include before Thrust's
  // namespace, the forwarder in it.
  auto if_has = [&](const std::string& h, const std::string& include, const std::string& decl) {
    inc += "#if __has_include(" + h + ")\n" + include + "#endif\n";
    t += "#if __has_include(" + h + ")\n" + decl + "#endif\n";
  };
  for (const std::string f : kAlgorithm)
    if_has("<cuda/std/__algorithm/" + f + ".h>", "#include <cuda/std/__algorithm/" + f + ".h>\n", "KTUNE_THRUST_SEQ(" + f + ")\n");
  for (const char* f : {"adjacent_difference", "inner_product"}) t += std::string("KTUNE_THRUST_SEQ(") + f + ")\n";
  inc += "#include <cuda/std/__algorithm/mismatch.h>\n";
  t += "#undef KTUNE_THRUST_SEQ\n"
       "template <class I, class F> __host__ __device__ I for_each(const detail::seq_t&, I first, I last, F f) {\n"
       "  for (; first != last; ++first) f(*first);\n  return first;\n}\n"
       "template <class I, class T, class... C> __host__ __device__ thrust::pair<I, I> equal_range(const detail::seq_t&, I first, I last, const T& v, C... c) {\n"
       "  return thrust::pair<I, I>(::cuda::std::lower_bound(first, last, v, c...), ::cuda::std::upper_bound(first, last, v, c...));\n}\n"
       "template <class I1, class I2, class... A> __host__ __device__ thrust::pair<I1, I2> mismatch(const detail::seq_t&, I1 first1, I1 last1, I2 first2, A... p) {\n"
       "  auto r = ::cuda::std::mismatch(first1, last1, first2, p...);\n  return thrust::pair<I1, I2>(r.first, r.second);\n}\n"
       // the first largest, as max_element's (the standard's minmax_element gives the last)
       "template <class I, class C> __host__ __device__ thrust::pair<I, I> minmax_element(const detail::seq_t&, I first, I last, C less) {\n"
       "  I imin = first, imax = first;\n  for (; first != last; ++first) {\n    if (less(*first, *imin)) imin = first;\n"
       "    if (less(*imax, *first)) imax = first;\n  }\n  return thrust::pair<I, I>(imin, imax);\n}\n"
       "template <class I> __host__ __device__ thrust::pair<I, I> minmax_element(const detail::seq_t& s, I first, I last) {\n"
       "  return minmax_element(s, first, last, ::cuda::std::less<>());\n}\n"
       // reduce: init InputType(0) by default, as Thrust's generic layer gives it
       "template <class I> __host__ __device__ typename ::cuda::std::iterator_traits<I>::value_type reduce(const detail::seq_t&, I first, I last) {\n"
       "  return ::cuda::std::reduce(first, last, typename ::cuda::std::iterator_traits<I>::value_type(0));\n}\n"
       "template <class I, class T, class... Op> __host__ __device__ T reduce(const detail::seq_t&, I first, I last, T init, Op... op) {\n"
       "  return ::cuda::std::reduce(first, last, init, op...);\n}\n"
       // Thrust's (unary op, init, binary op); the standard's (init, binary op, unary op)
       "template <class I, class U, class T, class B> __host__ __device__ T transform_reduce(const detail::seq_t&, I first, I last, U u, T init, B b) {\n"
       "  for (; first != last; ++first) init = b(init, u(*first));\n  return init;\n}\n"
       "template <class I, class F> __host__ __device__ void tabulate(const detail::seq_t&, I first, I last, F f) {\n"
       "  for (typename ::cuda::std::iterator_traits<I>::difference_type i = 0; first != last; ++first, ++i) *first = f(i);\n}\n"
       "template <class I, class T> __host__ __device__ void sequence(const detail::seq_t&, I first, I last, T init, T step) {\n"
       "  for (unsigned long i = 0; first != last; ++first, ++i) *first = init + step * static_cast<T>(i);\n}\n"
       "template <class I, class T> __host__ __device__ void sequence(const detail::seq_t& s, I first, I last, T init) { sequence(s, first, last, init, T(1)); }\n"
       "template <class I> __host__ __device__ void sequence(const detail::seq_t& s, I first, I last) {\n"
       "  typedef typename ::cuda::std::iterator_traits<I>::value_type T;\n  sequence(s, first, last, T(0), T(1));\n}\n"
       "template <class I, class O, class Op> __host__ __device__ O inclusive_scan(const detail::seq_t&, I first, I last, O result, Op op) {\n"
       "  typedef typename ::cuda::std::iterator_traits<I>::value_type V;\n  if (first == last) return result;\n"
       "  V sum = *first;\n  *result = *first;\n  for (++first, ++result; first != last; ++first, (void)++result) *result = sum = op(sum, *first);\n"
       "  return result;\n}\n"
       "template <class I, class O> __host__ __device__ O inclusive_scan(const detail::seq_t& s, I first, I last, O result) {\n"
       "  return inclusive_scan(s, first, last, result, ::cuda::std::plus<>());\n}\n"
       "template <class I, class O, class T, class Op> __host__ __device__ O inclusive_scan(const detail::seq_t&, I first, I last, O result, T init, Op op) {\n"
       "  typedef ::cuda::std::decay_t<decltype(op(init, *first))> V;\n  if (first == last) return result;\n"
       "  V sum = op(init, *first);\n  *result = sum;\n  for (++first, ++result; first != last; ++first, (void)++result) *result = sum = op(sum, *first);\n"
       "  return result;\n}\n"
       "template <class I, class O, class T, class Op> __host__ __device__ O exclusive_scan(const detail::seq_t&, I first, I last, O result, T init, Op op) {\n"
       "  T sum = init;\n  for (; first != last; ++first, (void)++result) {\n    T tmp = *first;\n    *result = sum;\n    sum = op(sum, tmp);\n  }\n"
       "  return result;\n}\n"
       "template <class I, class O, class T> __host__ __device__ O exclusive_scan(const detail::seq_t& s, I first, I last, O result, T init) {\n"
       "  return exclusive_scan(s, first, last, result, init, ::cuda::std::plus<>());\n}\n"
       "template <class I, class O> __host__ __device__ O exclusive_scan(const detail::seq_t& s, I first, I last, O result) {\n"
       "  return exclusive_scan(s, first, last, result, typename ::cuda::std::iterator_traits<I>::value_type{});\n}\n"
       // sort and stable_sort: an insertion sort, stable, quadratic (a thread's sequential sort is of a short range)
       "template <class I, class C> __host__ __device__ void stable_sort(const detail::seq_t&, I first, I last, C less) {\n"
       "  if (first == last) return;\n  for (I i = first + 1; i != last; ++i) {\n"
       "    typename ::cuda::std::iterator_traits<I>::value_type v = *i;\n    I j = i;\n"
       "    for (; j != first && less(v, *(j - 1)); --j) *j = *(j - 1);\n    *j = v;\n  }\n}\n"
       "template <class I> __host__ __device__ void stable_sort(const detail::seq_t& s, I first, I last) { stable_sort(s, first, last, ::cuda::std::less<>()); }\n"
       "template <class I, class... C> __host__ __device__ void sort(const detail::seq_t& s, I first, I last, C... c) { stable_sort(s, first, last, c...); }\n"
       "THRUST_NAMESPACE_END\n";
  return inc + t;
}

// The toolkit's Thrust folder (CUDA 13 keeps it under cccl/, earlier toolkits beside the other
// headers): the one that holds version.h, or "" where the toolkit has none.
std::string thrust_folder(const std::string& dir) {
  std::error_code ec;
  for (const std::string& thrust : {dir + "/cccl/thrust", dir + "/thrust"})
    if (std::filesystem::is_regular_file(thrust + "/version.h", ec)) return thrust;
  return "";
}

std::map<std::string, std::string> make_views(const std::string& dir) {
  std::map<std::string, std::string> v;
  if (dir.empty()) return v;
  // What each header's declarations carry (CUDAAPI, CUBLASWINAPI, CUDARTAPI) is defined in
  // another: every one's macros are known to all.
  std::map<std::string, std::string> texts, known;
  for (const char* h : kHostApiHeaders)
    if (std::string t = read_text(dir + "/" + h); !t.empty()) texts.emplace(h, std::move(t));
  for (const auto& [name, t] : texts) defined_macros(t, &known);
  defined_macros(read_text(dir + "/crt/host_defines.h"), &known);
  for (const auto& [name, t] : texts)
    v.emplace(name, device_view_of_header(t, known) + "\n// ktune's <" + name + "> for NVRTC: CUDA's, its host functions' declarations gone\n");
  // nvrtc.h (a project's run-time compile of its own kernels, Transformer Engine's rtc.h): its
  // API's declarations gone, its <stdlib.h> out of its extern "C" block.
  if (std::string t = read_text(dir + "/nvrtc.h"); !t.empty())
    v.emplace("nvrtc.h", hoist_std_includes(device_view_of_header(t, known)) + "\n// ktune's <nvrtc.h> for NVRTC: CUDA's, its host functions' declarations gone\n");
  // NVTX 3, header-only: each public header declares the host API (ranges, marks) and includes
  // its implementation (nvtxDetail/*Impl*.h: static inline definitions over dlopen, getenv and
  // pthread), which NVRTC refuses. Device code has no NVTX; a kernel's file reaches it for its
  // host code (Transformer Engine's nvtx.h). The view: the header's types, enums and macros, the
  // implementation's includes gone, the others spelled <nvtx3/...> so that its own come here too.
  std::error_code ec;
  std::map<std::string, std::string> nvtx;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/nvtx3", ec))
    if (e.path().extension() == ".h") nvtx.emplace(e.path().filename().string(), read_text(e.path().string()));
  if (!nvtx.empty()) {
    std::map<std::string, std::string> nvtx_known = known;
    defined_macros(read_text(dir + "/nvtx3/nvtxDetail/nvtxLinkOnce.h"), &nvtx_known);
    for (const auto& [name, t] : nvtx) defined_macros(t, &nvtx_known);
    for (const auto& [name, t] : nvtx)
      v.emplace("nvtx3/" + name, device_view_of_header(angled_includes(t, dir, "nvtx3", "Impl"), nvtx_known) + "\n// ktune's <nvtx3/" +
                                     name + "> for NVRTC: NVTX's types and macros, its host API and implementation gone\n");
  }
  // CUDA 13 keeps CCCL under include/cccl, CUDA 12 beside the other headers.
  for (const std::string& cub : {dir + "/cccl/cub", dir + "/cub"})
    if (const std::string t = read_text(cub + "/cub.cuh"); !t.empty()) {
      v.emplace("cub/cub.cuh", cub_device_view(t));
      // A device-wide algorithm's own header, which a file includes for its host code's
      // cub::DeviceScan (kaolin's <cub/device/device_scan.cuh>) and which launches through
      // Thrust's host code: the rest of CUB in its place, as its includes would have brought.
      std::vector<std::string> host_side = {"cub/util_allocator.cuh"};
      for (auto it = std::filesystem::recursive_directory_iterator(cub + "/device", ec); !ec && it != std::filesystem::recursive_directory_iterator();
           it.increment(ec))
        if (it->path().extension() == ".cuh" && it->path().filename() != "dispatch_common.cuh")
          host_side.push_back("cub/" + std::filesystem::relative(it->path(), cub, ec).generic_string());
      // With the dispatch layer's enums, which compile for the device as they are and which a
      // project's code names beside its host calls (xgboost's `cub::SortOrder::Ascending`).
      const bool common = std::filesystem::is_regular_file(cub + "/device/dispatch/dispatch_common.cuh", ec);
      // And the agents, device code the dispatch layer includes, which compile under NVRTC as they
      // are: a kernel of the project's own may use one (FlashInfer's mamba seq_chunk_cumsum.cuh
      // scans with cub::ScanTileState's decoupled look-back after <cub/device/device_scan.cuh>).
      std::set<std::string> agent_names; // in order: the view's text is the same on every machine
      for (const auto& e : std::filesystem::directory_iterator(cub + "/agent", ec))
        if (e.path().extension() == ".cuh") agent_names.insert(e.path().filename().string());
      std::string agents;
      for (const auto& a : agent_names) agents += "#include <cub/agent/" + a + ">\n";
      for (const auto& name : host_side)
        v.emplace(name, "#pragma once\n#include <cub/cub.cuh>\n" + std::string(common ? "#include <cub/device/dispatch/dispatch_common.cuh>\n" : "") +
                            (name.rfind("cub/device/", 0) == 0 ? agents : std::string()) + "// ktune's <" + name +
                            "> for NVRTC: a host-launched part of CUB; its block, warp, thread, iterator and agent parts in its place\n");
      break;
    }
  // Thrust's host side: its algorithms (launched from the host), containers, memory and execution
  // policies, which a file includes for its host code (candle's MoE kernels scan with
  // thrust::inclusive_scan; a benchmark's main holds its data in thrust::device_vector). NVRTC
  // cannot compile them (host functions; specializations of std::iterator_traits, which ktune's
  // std:: only names). Each such header: Thrust's device-usable headers in its place (pair, tuple,
  // functional, the iterators' bases), and stand-ins of its containers and device_ptr taking any
  // initializer, which a host class's data members name; device code that uses the rest fails on
  // the name. Thrust's headers that compile under NVRTC as they are (CUDA 13: these seven) stay.
  // Its fancy iterators, device code's, which its host side brings (xgboost's device_helpers.cuh
  // names thrust::transform_iterator after <thrust/device_vector.h> and the algorithms alone).
  static const std::string kThrustIterators = [] {
    std::string t;
    for (const char* i : {"counting_iterator", "transform_iterator", "zip_iterator", "constant_iterator", "permutation_iterator", "reverse_iterator",
                          "discard_iterator", "transform_output_iterator"})
      t += std::string("#include <thrust/iterator/") + i + ".h>\n";
    return t;
  }();
  static const std::set<std::string> kThrustDevice = {"addressof.h", "advance.h", "distance.h", "functional.h", "pair.h", "tuple.h", "version.h"};
  if (const std::string thrust = thrust_folder(dir); !thrust.empty()) {
    std::vector<std::string> host_side;
    for (const auto& e : std::filesystem::directory_iterator(thrust, ec))
      if (e.path().extension() == ".h" && !kThrustDevice.count(e.path().filename().string())) host_side.push_back("thrust/" + e.path().filename().string());
    // The containers' base, which a project's own containers derive from (AMGX's bundled CUSP:
    // `class array1d : public thrust::detail::vector_base<T, MemorySpace>`).
    host_side.push_back("thrust/detail/vector_base.h");
    for (const char* system : {"cuda", "cpp", "omp", "tbb"})
      for (const char* part : {"execution_policy.h", "vector.h", "memory.h", "pointer.h", "error.h"})
        if (std::filesystem::is_regular_file(thrust + "/system/" + system + "/" + part, ec))
          host_side.push_back(std::string("thrust/system/") + system + "/" + part);
    // In Thrust's own namespace as its headers open it: a project that wraps Thrust in its own
    // (AMGX's -DTHRUST_CUB_WRAPPED_NAMESPACE=amgx) names `amgx::thrust::device_ptr`.
    std::string containers = std::string(kHostAny) + "#ifndef KTUNE_THRUST_HOST\n#define KTUNE_THRUST_HOST\n" + kThrustDevicePtr +
                             "THRUST_NAMESPACE_BEGIN\n";
    // As the host library's stand-ins are, with their member types, which a host class's aliases
    // name (xgboost's allocator on `thrust::device_malloc_allocator<T>`: `typename Super::pointer`).
    for (const char* n : {"device_vector", "host_vector", "universal_vector", "device_malloc_allocator", "device_new_allocator", "device_allocator"})
      containers += "template <class...>\n" + host_class(n);
    containers += "namespace detail {\ntemplate <class...>\nclass vector_base {\n public:\n  __host__ __device__ vector_base() {}\n"
                  "  template <class... A> __host__ __device__ vector_base(A&&...) {}\n};\n}\nTHRUST_NAMESPACE_END\n" + thrust_sequential_algorithms() +
                  "#endif\n";
    // Its random numbers (<thrust/random.h>) are device code's: thrust_random_views reads them
    // on demand, and no stand-in takes their name.
    if (std::filesystem::is_regular_file(thrust + "/random.h", ec))
      host_side.erase(std::remove(host_side.begin(), host_side.end(), std::string("thrust/random.h")), host_side.end());
    for (const auto& name : host_side)
      v.emplace(name, "#pragma once\n// ktune's <" + name + "> for NVRTC: a host-side part of Thrust; its device-usable headers and "
                      "its containers' stand-ins in its place\n#include <thrust/pair.h>\n#include <thrust/tuple.h>\n#include <thrust/functional.h>\n"
                      "#include <thrust/iterator/iterator_facade.h>\n" + kThrustIterators + containers);
  }
  return v;
}

// Thrust's random numbers (<thrust/random.h>: the engines and distributions, which device code
// draws from: xgboost's row sampling, lightseq's `__host__ __device__` generators): their headers
// hold host functions too (stream operators, a core-access helper), which NVRTC refuses; read as
// "host_code": "skip" reads a project's files, those go and the engines and distributions stay,
// each header by the name Thrust includes it by. Apart from make_views because reading them costs
// every spec load that reaches a toolkit view (~0.04 s on a 2-core machine), and few kernels draw.
std::map<std::string, std::string> thrust_random_views(const std::string& dir) {
  std::map<std::string, std::string> v;
  std::error_code ec;
  const std::string thrust = thrust_folder(dir);
  if (!thrust.empty() && std::filesystem::is_regular_file(thrust + "/random.h", ec)) {
    std::vector<std::filesystem::path> random = {thrust + "/random.h"};
    for (auto it = std::filesystem::recursive_directory_iterator(thrust + "/random", ec); !ec && it != std::filesystem::recursive_directory_iterator();
         it.increment(ec))
      if (it->is_regular_file(ec)) random.push_back(it->path());
    for (const auto& f : random) {
      int blanked = 0;
      const std::string name = "thrust/" + std::filesystem::relative(f, thrust, ec).generic_string();
      v.emplace(name, skip_host_functions(read_text(f.string()), &blanked) + "\n// ktune's <" + name + "> for NVRTC: Thrust's, its host functions gone\n");
    }
  }
  return v;
}

} // namespace

const std::string* nvrtc_toolkit_view(const std::string& include_dir, const std::string& name) {
  static std::mutex mu;
  // Per folder and family, each made once, when a name of its family is first asked for.
  static std::map<std::pair<std::string, bool>, std::map<std::string, std::string>> made;
  std::lock_guard<std::mutex> lk(mu);
  const bool random = name.rfind("thrust/random", 0) == 0;
  auto it = made.find({include_dir, random});
  if (it == made.end())
    it = made.emplace(std::make_pair(include_dir, random), random ? thrust_random_views(include_dir) : make_views(include_dir)).first;
  const auto v = it->second.find(name);
  return v == it->second.end() ? nullptr : &v->second;
}

namespace {

// The math functions std:: also takes integers in (libstdc++'s <cmath>: sqrt(2), pow(2, level) in
// double), which CUDA's global overloads do not: after with_std_math_declarations hides
// cuda::std's, ktune_std_math's templates take those calls.
const char* const kStdMathOne[] = {"acos",  "acosh", "asin",  "asinh", "atan",   "atanh",  "cbrt",      "ceil", "cos",   "cosh",
                                   "erf",   "erfc",  "exp",   "exp2",  "expm1",  "fabs",   "floor",     "ilogb", "lgamma", "llrint",
                                   "llround", "log", "log10", "log1p", "log2",   "logb",   "lrint",     "lround", "nearbyint", "rint",
                                   "round", "sin",   "sinh",  "sqrt",  "tan",    "tanh",   "tgamma",    "trunc"};
const char* const kStdMathTwo[] = {"atan2", "copysign", "fdim", "fmax", "fmin", "fmod", "hypot", "nextafter", "pow", "remainder"};
// <cmath>'s others, with a float overload (the `f` form) and none on integers.
const char* const kStdMathOther[] = {"fma", "frexp", "ldexp", "modf", "nan", "remquo", "scalbln", "scalbn"};

std::string std_math_on_integers() {
  std::string t =
      "#ifndef KTUNE_STD_MATH_ON_INTEGERS\n#define KTUNE_STD_MATH_ON_INTEGERS\n#include <cuda/std/type_traits>\nnamespace ktune_std_math {\n"
      "template <class T> using one_int = typename ::cuda::std::enable_if<::cuda::std::is_integral<T>::value>::type;\n"
      "template <class A, class B> using any_int = typename ::cuda::std::enable_if<::cuda::std::is_arithmetic<A>::value && "
      "::cuda::std::is_arithmetic<B>::value && (::cuda::std::is_integral<A>::value || ::cuda::std::is_integral<B>::value)>::type;\n";
  for (const std::string f : kStdMathOne)
    t += "template <class T, class = one_int<T>> __host__ __device__ auto " + f + "(T x) -> decltype(::" + f + "(double(x))) { return ::" + f +
         "(double(x)); }\n";
  for (const std::string f : kStdMathTwo)
    t += "template <class A, class B, class = any_int<A, B>> __host__ __device__ auto " + f + "(A a, B b) -> decltype(::" + f +
         "(double(a), double(b))) { return ::" + f + "(double(a), double(b)); }\n";
  return t + "}\n#endif\n";
}

// CUDA's global math functions as using-declarations, each after `lead`: float overloads, and
// ktune_std_math's on integers where std:: takes integers too, then abs. Where <cmath> puts them
// in std::, and where with_std_math_declarations puts them after a scoped `using namespace std;`.
std::string global_math_declarations(const std::string& lead) {
  std::string d;
  auto with_float = [&](const std::string& f) { d += lead + "using ::" + f + ";" + lead + "using ::" + f + "f;"; };
  for (const std::string f : kStdMathOne) with_float(f), d += lead + "using ::ktune_std_math::" + f + ";";
  for (const std::string f : kStdMathTwo) with_float(f), d += lead + "using ::ktune_std_math::" + f + ";";
  for (const std::string f : kStdMathOther) with_float(f);
  return d + lead + "using ::abs;";
}

// A libcu++ macro as libcu++'s <cmath> spells it under NVRTC (so that its own later #define is
// the same), or with the namespace itself where a later libcu++ drops its macro.
std::string limits_macro(const char* name, const char* member) {
  return std::string("#ifndef ") + name + "\n#ifdef _CUDA_VSTD\n#define " + name + " _CUDA_VSTD::numeric_limits<float>::" + member +
         "()\n#else\n#define " + name + " ::cuda::std::numeric_limits<float>::" + member + "()\n#endif\n#endif\n";
}

// <cmath>: CUDA's global math functions in std::, as libstdc++'s <cmath> has its C library's
// (`using ::sqrt;`), not libcu++'s: cuda::std::sqrt(float) is another function of the same
// signature as ::sqrt(float), so after a `using namespace std;` at global scope an unqualified
// sqrt(x) found both and was ambiguous, where nvcc finds one. Besides: the overloads on integers
// that libstdc++ has (sqrt(2) in double); the classification and comparison functions as
// templates, which the global functions of the same names (non-templates, returning int) win
// over in an unqualified call; C++17's three-argument hypot and C++20's lerp; float_t, the FP_
// categories, HUGE_VAL, INFINITY and NAN; and libcu++'s <limits> and <type_traits>, which
// libcu++'s <cmath> brought and kernels use after including <cmath> alone. (libcu++'s <complex>
// still brings libcu++'s math into cuda::std.)
std::string cmath_header() {
  std::string m = "#pragma once\n// ktune's <cmath> for NVRTC, which has none: CUDA's math functions in std:: as well\n"
                  "#include <cuda/std/limits>\n#include <cuda/std/type_traits>\n" +
                  std::string(kIntoStd) + std_math_on_integers();
  // The categories are glibc's values; the prelude declares them as enumerators instead where the
  // text does (CUTLASS's floating_point_nvrtc.h).
  m += "#if !defined(FP_NAN) && !defined(KTUNE_FP_CATEGORIES)\n#define FP_NAN 0\n#define FP_INFINITE 1\n#define FP_ZERO 2\n"
       "#define FP_SUBNORMAL 3\n#define FP_NORMAL 4\n#endif\n";
  m += limits_macro("INFINITY", "infinity") + limits_macro("NAN", "quiet_NaN");
  m += "#ifndef HUGE_VALF\n#define HUGE_VALF INFINITY\n#define HUGE_VAL (double(INFINITY))\n#endif\n";
  m += "namespace ktune_std_math {\n"
       "template <class T, class R> using if_float = typename ::cuda::std::enable_if<::cuda::std::is_floating_point<T>::value, R>::type;\n"
       "template <class T, class R> using if_int = typename ::cuda::std::enable_if<::cuda::std::is_integral<T>::value, R>::type;\n"
       "template <class T> __host__ __device__ if_float<T, bool> isnan(T x) { return ::isnan(x) != 0; }\n"
       "template <class T> __host__ __device__ if_int<T, bool> isnan(T) { return false; }\n"
       "template <class T> __host__ __device__ if_float<T, bool> isinf(T x) { return ::isinf(x) != 0; }\n"
       "template <class T> __host__ __device__ if_int<T, bool> isinf(T) { return false; }\n"
       "template <class T> __host__ __device__ if_float<T, bool> isfinite(T x) { return ::isfinite(x) != 0; }\n"
       "template <class T> __host__ __device__ if_int<T, bool> isfinite(T) { return true; }\n"
       "template <class T> __host__ __device__ if_float<T, bool> signbit(T x) { return ::signbit(x) != 0; }\n"
       "template <class T> __host__ __device__ if_int<T, bool> signbit(T x) { return x < T(0); }\n"
       "template <class T> __host__ __device__ if_float<T, int> fpclassify(T x) {\n"
       "  return ::isnan(x) ? FP_NAN : ::isinf(x) ? FP_INFINITE : x == T(0) ? FP_ZERO\n"
       "       : ::fabs(x) < ::cuda::std::numeric_limits<T>::min() ? FP_SUBNORMAL : FP_NORMAL;\n}\n"
       "template <class T> __host__ __device__ if_int<T, int> fpclassify(T x) { return x == T(0) ? FP_ZERO : FP_NORMAL; }\n"
       "template <class T> __host__ __device__ bool isnormal(T x) { return ktune_std_math::fpclassify(x) == FP_NORMAL; }\n"
       "template <class A, class B> __host__ __device__ bool isunordered(A a, B b) { return ktune_std_math::isnan(a) || ktune_std_math::isnan(b); }\n"
       "template <class A, class B> __host__ __device__ bool isgreater(A a, B b) { return !ktune_std_math::isunordered(a, b) && a > b; }\n"
       "template <class A, class B> __host__ __device__ bool isgreaterequal(A a, B b) { return !ktune_std_math::isunordered(a, b) && a >= b; }\n"
       "template <class A, class B> __host__ __device__ bool isless(A a, B b) { return !ktune_std_math::isunordered(a, b) && a < b; }\n"
       "template <class A, class B> __host__ __device__ bool islessequal(A a, B b) { return !ktune_std_math::isunordered(a, b) && a <= b; }\n"
       "template <class A, class B> __host__ __device__ bool islessgreater(A a, B b) { return !ktune_std_math::isunordered(a, b) && a != b; }\n"
       "__host__ __device__ inline float hypot(float a, float b, float c) { return ::norm3df(a, b, c); }\n"
       "__host__ __device__ inline double hypot(double a, double b, double c) { return ::norm3d(a, b, c); }\n"
       // libc++'s: exact at both ends, monotonic, and b where t is 1.
       "template <class T> __host__ __device__ if_float<T, T> lerp(T a, T b, T t) {\n"
       "  if ((a <= T(0) && b >= T(0)) || (a >= T(0) && b <= T(0))) return t * b + (T(1) - t) * a;\n"
       "  if (t == T(1)) return b;\n  const T x = a + t * (b - a);\n"
       "  return (t > T(1)) == (b > a) ? (b < x ? x : b) : (x < b ? x : b);\n}\n}\n";
  m += "typedef float float_t;\ntypedef double double_t;\nnamespace std {\nusing ::float_t;\nusing ::double_t;" + global_math_declarations("\n") + "\n";
  for (const char* f : {"isnan", "isinf", "isfinite", "signbit", "fpclassify", "isnormal", "isunordered", "isgreater", "isgreaterequal",
                        "isless", "islessequal", "islessgreater", "lerp"})
    m += std::string("using ::ktune_std_math::") + f + ";\n";
  return m + "}\n";
}

// <cstdlib>: as <cmath>, the global abs, labs, llabs, malloc and free in std:: (libcu++'s are
// other functions of the same signatures), and libcu++'s div and <cstddef>.
std::string cstdlib_header() {
  return "#pragma once\n// ktune's <cstdlib> for NVRTC, which has none: CUDA's abs and malloc in std:: as well, libcu++'s div\n"
         "#include <cuda/std/cstddef>\n#if __has_include(<cuda/std/__cstdlib/div.h>)\n#include <cuda/std/__cstdlib/div.h>\n#endif\n" +
         std::string(kIntoStd) + "namespace std {\nusing ::abs;\nusing ::labs;\nusing ::llabs;\nusing ::malloc;\nusing ::free;\n}\n";
}

// Where each `using namespace std;` inside braces (a namespace's, a function's) ends: the offset
// after its ';'. At global scope with_std_math_declarations' declarations would change nothing,
// and a global overload declared after them (helper_math.h's fabs(float3)) would be left out of a
// namespace's set.
std::vector<size_t> scoped_using_std_ends(const std::string& text) {
  std::vector<size_t> ends;
  if (find_word(text, "using") == std::string::npos) return ends;
  int depth = 0;
  for (size_t k = 0; k < text.size(); ++k) {
    const char c = text[k];
    if (c == '/' && k + 1 < text.size() && text[k + 1] == '/') {
      k = std::min(text.find('\n', k), text.size());
    } else if (c == '/' && k + 1 < text.size() && text[k + 1] == '*') {
      k = std::min(text.find("*/", k + 2), text.size()) + 1;
    } else if (c == '"' || (c == '\'' && (k == 0 || !std::isalnum(static_cast<unsigned char>(text[k - 1]))))) { // not 1'000's
      for (++k; k < text.size() && text[k] != c && text[k] != '\n'; ++k)
        if (text[k] == '\\') ++k;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}') {
      --depth;
    } else if (depth > 0 && c == 'u' && text.compare(k, 5, "using") == 0 && (k == 0 || (!std::isalnum(static_cast<unsigned char>(text[k - 1])) && text[k - 1] != '_'))) {
      size_t e = text.find_first_not_of(" \t", k + 5);
      if (e == std::string::npos || e == k + 5 || text.compare(e, 9, "namespace") != 0) continue;
      e = text.find_first_not_of(" \t", e + 9);
      if (e == std::string::npos || text.compare(e, 3, "std") != 0) continue;
      e = text.find_first_not_of(" \t", e + 3);
      if (e == std::string::npos || text[e] != ';') continue;
      ends.push_back(e + 1);
      k = e;
    }
  }
  return ends;
}

// Whether the text declares `name` as a type itself (a typedef or an alias), as a source that
// does not rely on <cstdint> may.
bool declares_type(const std::string& text, const std::string& name) {
  for (size_t at = find_word(text, name); at != std::string::npos; at = find_word(text, name, at + name.size())) {
    const size_t after = text.find_first_not_of(" \t", at + name.size());
    if (after != std::string::npos && text[after] == ';') {
      const size_t stmt = text.find_last_of(";{}", at);
      const size_t from = stmt == std::string::npos ? 0 : stmt + 1;
      if (find_word(text.substr(from, at - from), "typedef") != std::string::npos) return true;
    }
    const size_t before = text.find_last_not_of(" \t\n", at == 0 ? 0 : at - 1);
    if (before != std::string::npos && before >= 4 && text.compare(before - 4, 5, "using") == 0 && after != std::string::npos && text[after] == '=')
      return true;
  }
  return false;
}

} // namespace

bool cuda_math_function(const std::string& name) {
  static const std::set<std::string> names = [] {
    std::set<std::string> n;
    for (const char* f : kStdMathOne) n.insert(f), n.insert(std::string(f) + "f");
    for (const char* f : kStdMathTwo) n.insert(f), n.insert(std::string(f) + "f");
    for (const char* f : kStdMathOther) n.insert(f), n.insert(std::string(f) + "f");
    // CUDA's own beyond <cmath>'s.
    for (const char* f : {"exp10", "rsqrt", "rcbrt", "sincos", "sinpi", "cospi", "erfinv", "erfcinv", "normcdf", "normcdfinv"})
      n.insert(f), n.insert(std::string(f) + "f");
    return n;
  }();
  return names.count(name) > 0;
}


std::string nvrtc_nvcc_prelude(const std::string& text) {
  auto uses = [&](const char* w) { return find_word(text, w) != std::string::npos; };
  std::string p;
  const bool inf = uses("INFINITY"), nan = uses("NAN");
  if (inf || nan) p += "#include <cuda/std/limits>\n";
  if (inf) p += limits_macro("INFINITY", "infinity");
  if (nan) p += limits_macro("NAN", "quiet_NaN");
  for (const auto& [name, type] : {std::pair<const char*, const char*>{"uint", "unsigned int"}, {"ushort", "unsigned short"}, {"ulong", "unsigned long"}})
    if (uses(name)) p += std::string("#ifndef ") + name + "\ntypedef " + type + " " + name + ";\n#endif\n";
  // Programmatic dependent launch's device calls (sm_90), which nvcc's cuda_runtime.h declares
  // through <cuda_device_runtime_api.h>; included as cuda_runtime.h does, its internal headers'
  // warning off.
  if (uses("cudaGridDependencySynchronize") || uses("cudaTriggerProgrammaticLaunchCompletion"))
    p += "#ifndef __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__\n#define __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__\n"
         "#define KTUNE_UNDEF_INTERNAL_HEADERS\n#endif\n#include <cuda_device_runtime_api.h>\n"
         "#ifdef KTUNE_UNDEF_INTERNAL_HEADERS\n#undef __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__\n#undef KTUNE_UNDEF_INTERNAL_HEADERS\n#endif\n";
  // glibc's CLOCKS_PER_SEC (<time.h>, which nvcc's implicit headers bring): device code that
  // spins on clock() divides by it (Apex's peer memory kernels).
  if (uses("CLOCKS_PER_SEC")) p += kClocksPerSec;
  // The platform's macros, which nvcc's host compiler defines on Linux and NVRTC does not: a
  // project's `#if defined(__linux__) ... #else #error Unsupported system` (cuda-samples').
  for (const char* m : {"__linux__", "__unix__"})
    if (uses(m)) p += std::string("#ifndef ") + m + "\n#define " + m + " 1\n#endif\n";
  // offsetof as a constant expression, as nvcc's host compiler has it (`static_assert(offsetof(
  // Bounds, size) == ...)`: NVIDIA Warp's apic_internal.h, vLLM's custom all-reduce). libcu++
  // defines it under NVRTC as a difference of pointers, which is no constant, where it is not
  // defined yet (ktune's standard headers may have brought libcu++'s before this line); NVRTC's
  // front end folds __INTADDR__ of a member's address to a constant.
  if (uses("offsetof"))
    p += "#undef offsetof\n#define offsetof(type, member) ((decltype(sizeof(0)))__INTADDR__(&(((type*)0)->member)))\n";
  // glibc's __assert_fail, which nvcc's crt/common_functions.h declares for device code too on
  // Linux (a project's own device assert calls it: xgboost's span.h `CUDA_KERNEL_CHECK`), and
  // NVRTC's declares __assertfail alone: defined on NVRTC's, as libcu++ declares it (C linkage,
  // noexcept, noreturn), so that its declaration after this one agrees.
  if (uses("__assert_fail"))
    p += "extern \"C\" __host__ __device__ __attribute__((__noreturn__)) inline void __assert_fail(const char* a, const char* f, unsigned int l, "
         "const char* fn) noexcept {\n  __assertfail(a, f, l, fn, sizeof(char));\n  __builtin_unreachable();\n}\n";
  // std::max and std::min, which nvcc's implicit headers declare (constexpr, the host's: a
  // constant expression may call them) and a header may name with no include of <algorithm>
  // (CUTLASS's sm100 epilogues, whose platform.h includes <algorithm> only where __CUDACC_RTC__ is
  // not defined): libcu++'s, named in std.
  for (const char* f : {"max", "min"}) {
    const std::string q = std::string("std::") + f;
    bool named = false;
    for (size_t at = text.find(q); at != std::string::npos && !named; at = text.find(q, at + 1))
      named = (at == 0 || !(std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_' || text[at - 1] == ':')) &&
              (at + q.size() == text.size() || !(std::isalnum(static_cast<unsigned char>(text[at + q.size()])) || text[at + q.size()] == '_'));
    if (named)
      p += std::string("#if __has_include(<cuda/std/__algorithm/") + f + ".h>)\n#include <cuda/std/__algorithm/" + f +
           ".h>\nnamespace cuda { namespace std {} }\nnamespace std { using ::cuda::std::" + f + "; }\n#endif\n";
  }
  // <utility> and with it <type_traits>, which nvcc's cuda_runtime.h includes (C++11 on) ahead of
  // every program: a header may name std::enable_if_t, std::is_same_v, std::forward or std::pair
  // with no include that brings them (TensorRT's disentangled attention kernel, whose headers
  // include only <cstddef> and <cstdint>). ktune's twins of both, where the text names one of
  // theirs.
  {
    static const char* const kTraitsAndUtility[] = {"enable_if", "is_", "remove_", "add_", "decay", "conditional", "integral_constant",
                                                    "true_type", "false_type", "bool_constant", "underlying_type", "void_t", "declval",
                                                    "forward", "move", "swap", "exchange", "pair", "make_pair", "index_sequence",
                                                    "make_index_sequence", "integer_sequence", "common_type", "invoke_result", "conjunction",
                                                    "disjunction", "negation", "aligned_storage", "alignment_of", "in_place"};
    bool named = false, limits = false;
    for (size_t at = text.find("std::"); at != std::string::npos && !(named && limits); at = text.find("std::", at + 5)) {
      if (at > 0 && (std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_' || text[at - 1] == ':')) continue;
      for (const char* n : kTraitsAndUtility)
        named = named || text.compare(at + 5, std::strlen(n), n) == 0;
      // <limits> too: libstdc++'s <cmath>, which nvcc's implicit headers include, brings it in
      // C++17 (bits/specfun.h); FlashInfer's mamba conversion.cuh names std::numeric_limits after
      // CUDA's own headers alone.
      limits = limits || text.compare(at + 5, 15, "numeric_limits<") == 0 || text.compare(at + 5, 15, "numeric_limits ") == 0;
    }
    if (named) p += "#include <type_traits>\n#include <utility>\n";
    if (limits) p += "#include <limits>\n";
  }
  // GNU's __extension__ (ggml's anonymous unions in structs), which nvcc's host front end takes
  // and NVRTC's refuses: it only silences -pedantic, so nothing.
  if (uses("__extension__")) p += "#define __extension__\n";
  // GNU's spelling of inline assembly (`__asm__ __volatile__(...)`, llm-awq's GEMM), which NVRTC
  // does not know.
  if (uses("__asm__")) p += "#define __asm__ asm\n";
  if (uses("__volatile__")) p += "#define __volatile__ volatile\n";
  // GCC's bit builtins, which nvcc takes (in constant evaluation: vLLM's `static constexpr int
  // _nextPow2(unsigned)` on __builtin_clz) and NVRTC does not know: constexpr on both sides, the
  // device's instruction where not constant-evaluated. Undefined at 0 as GCC's are (0 here).
  {
    struct Bits { const char* builtin; const char* type; int width; const char* device; };
    const Bits bits[] = {{"__builtin_clz", "unsigned int", 32, "__clz"},          {"__builtin_clzl", "unsigned long", 64, "__clzll"},
                         {"__builtin_clzll", "unsigned long long", 64, "__clzll"}, {"__builtin_ctz", "unsigned int", 32, "__ffs"},
                         {"__builtin_ctzl", "unsigned long", 64, "__ffsll"},       {"__builtin_ctzll", "unsigned long long", 64, "__ffsll"},
                         {"__builtin_popcount", "unsigned int", 32, "__popc"},     {"__builtin_popcountl", "unsigned long", 64, "__popcll"},
                         {"__builtin_popcountll", "unsigned long long", 64, "__popcll"}};
    for (const Bits& b : bits) {
      if (!uses(b.builtin)) continue;
      const std::string name = std::string("__ktune") + (b.builtin + 9), t = b.type, dev = b.device, w = std::to_string(b.width);
      // Bit k of x, from the top (clz) or the bottom (ctz, popcount).
      const std::string bit = dev.rfind("__clz", 0) == 0 ? "(x >> (" + w + " - 1 - k) & 1)" : "(x >> k & 1)";
      const std::string count = dev.rfind("__popc", 0) == 0 ? "n += int(" + bit + ");" : "if (" + bit + ") break;\n    ++n;";
      const std::string device = dev.rfind("__ffs", 0) == 0 ? "(" + dev + "(x) - 1)" : dev + "(x)";
      p += "#ifndef " + std::string(b.builtin) + "\n__host__ __device__ constexpr int " + name + "(" + t + " x) {\n" +
           "  if (x == 0) return 0;\n#ifdef __CUDA_ARCH__\n  if (!__builtin_is_constant_evaluated()) return " + device + ";\n#endif\n" +
           "  int n = 0;\n  for (int k = 0; k < " + w + "; ++k) {\n    " + count + "\n  }\n  return n;\n}\n#define " + b.builtin + "(x) " + name +
           "(x)\n#endif\n";
    }
  }
  // glibc's <stdlib.h>, which nvcc's implicit headers include, brings <sys/types.h> and with it
  // the signed exact-width types (not the unsigned ones): FasterTransformer's DenseWeight.h names
  // int8_t with no include. libcu++'s types, so that a later <cstdint> declares the same ones.
  for (const auto& [name, type] : {std::pair<const char*, const char*>{"int8_t", "signed char"}, {"int16_t", "signed short"},
                                   {"int32_t", "signed int"}, {"int64_t", "signed long long"}})
    if (uses(name) && !declares_type(text, name)) p += std::string("using ") + name + " = " + type + ";\n";
  // with_std_math_declarations' integer overloads, where a `using namespace std;` may take them
  if (!scoped_using_std_ends(text).empty()) p += std_math_on_integers();
  // <math.h>'s M_ constants, which nvcc's implicit headers give and kernels use with no include
  // (mamba's selective scan's M_LOG2E); each that the text uses and does not define itself.
  std::map<std::string, std::string> constants, own;
  defined_macros(kMathConstants, &constants);
  defined_macros(text, &own);
  for (const auto& [name, value] : constants)
    if (uses(name.c_str()) && !own.count(name)) p += "#ifndef " + name + "\n#define " + name + value + "\n#endif\n";
  // The floating-point categories, where the text declares them itself as glibc's <math.h> does,
  // an enumerator each with a #define of its name inside the enum (CUTLASS's
  // floating_point_nvrtc.h, which only NVRTC compiles). libcu++ under NVRTC #defines them where
  // they are not yet, so a <cmath> or <cub/cub.cuh> before that header makes `FP_NAN =` read
  // `0 =`: libcu++'s <cmath> comes first here, and its macros give way to enumerators of the
  // same values, which name the same categories and no declaration's name expands into. Those
  // are a namespace's, named at global scope by a using-directive: the text's own enum may be a
  // global one (CUTLASS 2.x's half.h, FasterTransformer's), whose enumerators a global enum of
  // ktune's would declare twice; after it the text's #defines name the categories again.
  static const char* const kCategories[] = {"FP_NAN", "FP_INFINITE", "FP_ZERO", "FP_SUBNORMAL", "FP_NORMAL"};
  if (std::any_of(std::begin(kCategories), std::end(kCategories), [&](const char* c) { return own.count(c) > 0; })) {
    p += "#include <cuda/std/cmath>\n";
    for (const char* c : kCategories) p += std::string("#undef ") + c + "\n";
    p += "namespace ktune_fp_categories {\nenum { FP_NAN = 0, FP_INFINITE = 1, FP_ZERO = 2, FP_SUBNORMAL = 3, FP_NORMAL = 4 };\n}\n"
         "using namespace ktune_fp_categories;\n";
    p += "#define KTUNE_FP_CATEGORIES\n"; // ktune's <cmath> then leaves them as they are
  }
  return p.empty() ? p : "// ktune: what nvcc's implicit <cuda_runtime.h> gives device code and NVRTC's lacks\n" + p;
}

// The preprocessor directive a line holds (`define`, `if`, ...; "" for none) and, in *after, the
// offset in the line just past its word.
std::string directive_of(const std::string& line, size_t* after) {
  const size_t k = line.find_first_not_of(" \t");
  if (k == std::string::npos || line[k] != '#') return "";
  const size_t d = line.find_first_not_of(" \t", k + 1);
  if (d == std::string::npos) return "";
  size_t e = d;
  while (e < line.size() && std::isalpha(static_cast<unsigned char>(line[e]))) ++e;
  *after = e;
  return line.substr(d, e - d);
}

std::string with_pragma_operators(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    // `# define NAME #pragma what` (no continuation, no parameters).
    size_t k = 0;
    if (!line.empty() && line.back() != '\\' && directive_of(line, &k) == "define") {
      size_t name = line.find_first_not_of(" \t", k), e = name;
      while (e < line.size() && (std::isalnum(static_cast<unsigned char>(line[e])) || line[e] == '_')) ++e;
      const size_t hash = e < line.size() && line[e] != '(' ? line.find_first_not_of(" \t", e) : std::string::npos;
      if (name != std::string::npos && e > name && hash != std::string::npos && line[hash] == '#') {
        const size_t word = line.find_first_not_of(" \t", hash + 1);
        if (word != std::string::npos && line.compare(word, 6, "pragma") == 0 && (word + 6 == line.size() || !std::isalnum(static_cast<unsigned char>(line[word + 6])))) {
          std::string what = line.substr(std::min(line.size(), word + 6));
          what.erase(0, what.find_first_not_of(" \t"));
          std::string quoted;
          for (char c : what) {
            if (c == '\\' || c == '"') quoted += '\\';
            quoted += c;
          }
          line = line.substr(0, hash) + "_Pragma(\"" + quoted + "\")";
        }
      }
    }
    out += line;
    if (end < text.size()) out += '\n';
    at = end + 1;
  }
  return out;
}

std::string with_nvcc_defined(const std::string& text) {
  static const std::string kName = "__NVCC__";
  if (text.find(kName) == std::string::npos) return text;
  std::string out;
  out.reserve(text.size());
  bool continued = false; // a line of an #if condition continued from the line before
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    const bool continues = !line.empty() && line.back() == '\\';
    size_t after = 0;
    const std::string directive = continued ? "" : directive_of(line, &after);
    if (directive == "ifdef" || directive == "ifndef") {
      const size_t w = line.find_first_not_of(" \t", after);
      if (w != std::string::npos && find_word(line, kName, w) == w)
        line = line.substr(0, after - directive.size()) + (directive == "ifdef" ? "if 1" : "if 0") + line.substr(w + kName.size());
    } else if (directive == "if" || directive == "elif" || continued) {
      // `defined ( __NVCC__ )` and `defined __NVCC__` first, then the word alone.
      for (size_t p = find_word(line, kName); p != std::string::npos; p = find_word(line, kName, p + 1)) {
        size_t from = p, to = p + kName.size();
        size_t b = line.find_last_not_of(" \t", p == 0 ? 0 : p - 1);
        size_t f = line.find_first_not_of(" \t", to);
        const bool paren = b != std::string::npos && p > 0 && line[b] == '(' && f != std::string::npos && line[f] == ')';
        const size_t before_word = paren ? (b == 0 ? std::string::npos : line.find_last_not_of(" \t", b - 1)) : b;
        if (before_word != std::string::npos && p > 0 && before_word + 1 >= 7 && line.compare(before_word + 1 - 7, 7, "defined") == 0) {
          from = before_word + 1 - 7;
          if (paren) to = f + 1;
        }
        line = line.substr(0, from) + "1" + line.substr(to);
        p = from;
      }
    }
    continued = (directive == "if" || directive == "elif" || continued) && continues;
    out += line;
    if (end < text.size()) out += '\n';
    at = end + 1;
  }
  return out;
}

std::string with_std_math_declarations(const std::string& text) {
  static const std::string declarations = global_math_declarations(" ");
  std::string out;
  size_t from = 0;
  for (const size_t e : scoped_using_std_ends(text)) {
    out += text.substr(from, e - from) + declarations;
    from = e;
  }
  return from == 0 ? text : out + text.substr(from);
}

namespace {

// Where line `line_no` of `file`, as a compile's log names it, starts in `text` (named `name`),
// through the text's #line directives (a spec's program is its sources, each behind a
// `#line 1 "file"`); npos where the text does not hold that line.
// The file and line a log line's message names ("file(n): error: ..."), `at` the "): " after the
// number; false where the line has none.
bool message_place(const std::string& l, size_t at, std::string* file, size_t* line_no) {
  const size_t open = at == std::string::npos ? at : l.rfind('(', at);
  if (open == std::string::npos) return false;
  *file = l.substr(0, open);
  *line_no = std::strtoul(l.c_str() + open + 1, nullptr, 10);
  return true;
}

size_t line_start(const std::string& text, const std::string& name, const std::string& file, size_t line_no) {
  std::string current = name;
  size_t number = 1; // the number of the line that starts at `at`
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    if (current == file && number == line_no) return at;
    const size_t hash = text.find_first_not_of(" \t", at);
    if (hash < end && text[hash] == '#') {
      const size_t word = text.find_first_not_of(" \t", hash + 1);
      if (word < end && text.compare(word, 4, "line") == 0) {
        const size_t digits = text.find_first_not_of(" \t", word + 4);
        const size_t quote = text.find('"', digits);
        if (digits < end && std::isdigit(static_cast<unsigned char>(text[digits]))) {
          number = std::strtoul(text.c_str() + digits, nullptr, 10);
          if (quote < end) current = text.substr(quote + 1, text.find('"', quote + 1) - quote - 1);
          at = end + 1;
          continue;
        }
      }
    }
    ++number;
    at = end + 1;
  }
  return std::string::npos;
}

} // namespace

size_t qualify_ambiguous_std_calls(const std::string& log, const std::vector<std::pair<std::string, std::string*>>& texts) {
  static const std::string kAmbiguous = "): error: more than one instance of overloaded function \"";
  std::vector<std::string> lines;
  {
    std::istringstream in(log);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  // (text, line, offset, qualifier) of each call to qualify, one entry a call however often reported
  std::set<std::tuple<std::string*, size_t, size_t, std::string>> calls;
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t at = lines[i].find(kAmbiguous);
    std::string file;
    size_t line_no = 0;
    if (!message_place(lines[i], at, &file, &line_no)) continue;
    const size_t name_at = at + kAmbiguous.size();
    const std::string name = lines[i].substr(name_at, lines[i].find('"', name_at) - name_at);
    // The candidates: libcu++'s (`function "cuda::std::__4::abs(int) noexcept"`), and CUDA's global
    // one (`function "abs(int)"`: the call becomes ::abs) or ktune's std:: overload on integers
    // (`function template "auto ktune_std_math::sqrt(T)->double"`: std::sqrt, whose own
    // declarations qualified lookup stops at).
    bool global = false, ours = false, libcu = false;
    size_t k = i + 1;
    for (; k < lines.size(); ++k) {
      const size_t lead = lines[k].find_first_not_of(' ');
      if (lead == std::string::npos || (lines[k].compare(lead, 10, "function \"") != 0 && lines[k].compare(lead, 19, "function template \"") != 0))
        break;
      const std::string candidate = lines[k].substr(lines[k].find('"') + 1);
      global |= candidate.compare(0, name.size() + 1, name + "(") == 0;
      ours |= candidate.find("ktune_std_math::" + name + "(") != std::string::npos;
      libcu |= candidate.find("cuda::std::") != std::string::npos;
    }
    if (!(global || ours) || !libcu || line_no == 0) continue;
    if (k < lines.size() && lines[k].find("argument types are:") != std::string::npos) ++k;
    if (k + 1 >= lines.size()) continue;
    const size_t caret = lines[k + 1].find('^');
    if (caret == std::string::npos || caret < 2 || lines[k].compare(0, 2, "  ") != 0) continue;
    std::string* owner = nullptr;
    size_t start = std::string::npos;
    for (const auto& [text_name, text] : texts)
      if ((start = line_start(*text, text_name, file, line_no)) != std::string::npos) {
        owner = text;
        break;
      }
    if (owner == nullptr) continue;
    const std::string& text = *owner;
    const std::string source_line = text.substr(start, text.find('\n', start) - start);
    // The echoed line is the text's (not one NVRTC shortened), and the caret is on the name as a
    // word that is not yet qualified (through a macro, it would be on the macro's name).
    const size_t col = caret - 2;
    if (lines[k].substr(2) != source_line || source_line.compare(col, name.size(), name) != 0) continue;
    auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    if ((col > 0 && (word(source_line[col - 1]) || source_line[col - 1] == ':' || source_line[col - 1] == '.')) ||
        (col + name.size() < source_line.size() && word(source_line[col + name.size()])))
      continue;
    calls.emplace(owner, line_no, start + col, global ? "::" : "std::");
  }
  // From the end of each text, so that each offset still holds when it is used.
  for (auto it = calls.rbegin(); it != calls.rend(); ++it) std::get<0>(*it)->insert(std::get<2>(*it), std::get<3>(*it));
  return calls.size();
}

size_t drop_refused_host_data(const std::string& log, const std::vector<std::pair<std::string, std::string*>>& texts, std::string* first) {
  // (text, where the member's mark begins, where its end mark ends), one entry a member however
  // often the log names it
  std::set<std::tuple<std::string*, size_t, size_t>> members;
  const std::string begin = kHostDataBegin, end = kHostDataEnd;
  std::istringstream in(log);
  for (std::string l; std::getline(in, l);) {
    size_t at = l.find("): error");
    if (at == std::string::npos) at = l.find("): catastrophic error");
    std::string file;
    size_t line_no = 0;
    if (!message_place(l, at, &file, &line_no)) continue;
    for (const auto& [name, text] : texts) {
      const size_t start = line_no == 0 ? std::string::npos : line_start(*text, name, file, line_no);
      if (start == std::string::npos) continue;
      const size_t stop = std::min(text->find('\n', start), text->size());
      // The members marked on the line or over it: from the last mark before the line's end back,
      // while a mark's member ends after the line's start.
      for (size_t b = text->rfind(begin, stop); b != std::string::npos; b = b == 0 ? std::string::npos : text->rfind(begin, b - 1)) {
        const size_t e = text->find(end, b);
        if (e == std::string::npos || e + end.size() <= start) break;
        if (first && members.empty()) *first = l;
        members.emplace(text, b, e + end.size());
      }
      break;
    }
  }
  for (const auto& [text, a, b] : members)
    for (size_t k = a; k < b; ++k)
      if ((*text)[k] != '\n') (*text)[k] = ' ';
  return members.size();
}

std::string host_library_stand_in(const std::string& name, const std::string& path) {
  // {fmt}'s headers use its FMT_ macros or name its namespace; fmt 11's core.h only includes
  // "format.h". spdlog bundles a copy (<spdlog/fmt/bundled/format.h>). Only a header of such a
  // name is read.
  if (name.rfind("fmt/", 0) != 0 && (path.empty() || name.find("/fmt/bundled/") == std::string::npos)) return "";
  if (!path.empty()) {
    const std::string text = read_text_file(path, "included header");
    if (text.find("FMT_") == std::string::npos && text.find("namespace fmt") == std::string::npos && text.find("#include \"format.h\"") == std::string::npos)
      return "";
  }
  return "#pragma once\n// ktune's stand-in for {fmt}'s <" + name +
         ">: a host-only library NVRTC cannot compile; its types take any initializer\n"
         "#ifndef KTUNE_FMT_STAND_IN\n#define KTUNE_FMT_STAND_IN\n"
         "#define FMT_STRING(s) s\n#define FMT_COMPILE(s) s\n#define FMT_RUNTIME(s) s\n"
         "namespace fmt {\nnamespace literals {}\n"
         "struct __ktune_fmt_any {\n  template <class... A> __host__ __device__ __ktune_fmt_any(A&&...) {}\n};\n"
         "template <class... T> using format_string = __ktune_fmt_any;\n"
         "template <class Char, class... T> using basic_format_string = __ktune_fmt_any;\n"
         "template <class Char> using basic_string_view = __ktune_fmt_any;\n"
         "using string_view = __ktune_fmt_any;\nusing memory_buffer = __ktune_fmt_any;\nusing format_context = __ktune_fmt_any;\n"
         "using format_args = __ktune_fmt_any;\ntemplate <class T, class Char = char, class Enable = void> struct formatter {};\n"
         "}\n#endif\n";
}

const std::vector<std::pair<std::string, std::string>>& nvrtc_std_headers() {
  static const std::vector<std::pair<std::string, std::string>> h = make_headers();
  return h;
}

} // namespace ktune
