// "host_code": "skip" (core/host_code.h): what NVRTC refuses as host code is blanked, lines kept;
// device code, types and const data stay; where the reading cannot be sure, nothing is blanked.
#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <set>
#include <string>

#include "core/host_code.h"

using namespace ktune;

namespace {

std::string skipped(const std::string& text, int* n) { return skip_host_functions(text, n); }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// What the reading must have blanked from out, and what it must have kept.
void expect_parts(const std::string& out, std::initializer_list<const char*> gone, std::initializer_list<const char*> kept) {
  for (const char* g : gone) EXPECT_FALSE(has(out, g)) << g << " stayed:\n" << out;
  for (const char* k : kept) EXPECT_TRUE(has(out, k)) << k << " went:\n" << out;
}

} // namespace

TEST(HostCode, HostFunctionsAndVariablesGoDeviceCodeStays) {
  const std::string text =
      "#include <vector>\n"
      "#define DINLINE __device__ __forceinline__\n"
      "#define CHECK(x) do { if ((x) != 0) { printf(\"fail\\n\"); } } while (0)\n"
      "namespace util {\n"
      "DINLINE float twice(float x) { return 2.f * x; }\n"
      "inline int ceil_div(int a, int b) { return (a + b - 1) / b; }\n"
      "}  // namespace util\n"
      "constexpr int kTile = 128;\n"
      "static const float kScale = 0.5f;\n"
      "static const char* kName = \"a { brace in a string\";\n"
      "const char* const kFixed = \"fixed\";\n"
      "int counter = 0;\n"
      "int host_decl(int);\n"
      "void report(const char* what, int line);\n"
      "const float* lookup(int k);\n"
      "const Params kBuilt(4);\n"
      "__device__ int dev_decl(int);\n"
      "__constant__ float table[4];\n"
      "typedef float real;\n"
      "struct Params {\n"
      "  float* y; int n;\n"
      "public:\n"
      "  Params(int k) : y(nullptr), n(k) {}\n"
      "  int host_size() const { return n; }\n"
      "  static void throw_it(const char* file, int line);\n"
      "  Params& operator=(const Params&) = default;\n"
      "  void (*callback)(int);\n"
      "  __device__ float at(int i) const { return y[i]; }\n"
      "};\n"
      "template <int B = 128>\n"
      "__global__ void __launch_bounds__(B) k(Params p) { p.y[threadIdx.x] = util::twice(kScale) + table[0]; }\n"
      "__host__ __device__ inline int both(int a) { return a; }\n"
      "template <int B> void launch(Params p) { k<B><<<1, B>>>(p); }\n"
      "extern \"C\" {\n"
      "__global__ void c_kernel(float* y) { y[0] = 1.f; }\n"
      "void c_host(float* y) { c_kernel<<<1, 1>>>(y); }\n"
      "}\n"
      "template __global__ void k<64>(Params);\n"
      "template <int B> __global__ void kern(float* y) { y[0] = B; }\n"
      "template void kern<32>(float*);\n"
      "template <typename T> void reduce(T* x, int n) { kern<32><<<1, 1>>>(x); }\n"
      "template void reduce<float>(float* x, int n);\n"
      "int main(int argc, char** argv) {\n"
      "  std::vector<float> v(10);\n"
      "  auto l = [&]() { return argc; };\n"
      "  CHECK(l());\n"
      "  return 0;\n"
      "}\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  EXPECT_EQ(out.size(), text.size());
  // Gone: host functions (a namespace's, a template, an extern "C" block's, main, a member's
  // definition and declaration), a
  // host function's declaration and a host template's explicit instantiation, variables that are not const.
  for (const char* gone : {"ceil_div(int a", "void launch(", "void c_host(", "int main(", "int host_size()", "Params(int k)",
                           "int host_decl(int)", "int counter", "kName =",
                           "void report(const char* what", "lookup(int k)",
                           "void reduce(T* x", "template void reduce<float>",
                           "throw_it("})
    EXPECT_FALSE(has(out, gone)) << gone << " stayed:\n" << out;
  // Kept: device functions (through a macro of the text), kernels, constants, const data, types,
  // an access specifier, an explicit instantiation, the preprocessor's lines.
  for (const char* kept : {"DINLINE float twice", "__global__ void __launch_bounds__(B) k(Params p)", "constexpr int kTile",
                           "static const float kScale", "const char* const kFixed", "const Params kBuilt(4);", "__device__ int dev_decl(int);",
                           "__constant__ float table[4];", "typedef float real;", "public:", "__device__ float at(int i)",
                           "__host__ __device__ inline int both", "__global__ void c_kernel", "template __global__ void k<64>",
                           "template void kern<32>(float*);", "Params& operator=(const Params&) = default;",
                           "void (*callback)(int);",
                           "#define CHECK(x)", "#include <vector>", "extern \"C\" {", "namespace util {"})
    EXPECT_TRUE(has(out, kept)) << kept << " went:\n" << out;
  EXPECT_EQ(n, 14);
}

// DeepSpeed's shape: a host template's explicit instantiations written through a function-like
// macro, one call a type with no ';' of its own, one under an #ifdef. The calls go with the
// template (they would name one no longer there) and the statement after them is still read;
// a macro that instantiates a kernel, or a function that stays, stays.
TEST(HostCode, InstantiationsThroughAMacroGoWithTheirTemplate) {
  const std::string text =
      "template <typename T> __global__ void kern(T* y) { y[0] = T(1); }\n"
      "template <typename T> __device__ T twice(T x) { return x + x; }\n"
      "template <typename T> void launch_kern(T* y, int n, cudaStream_t s) { kern<T><<<1, 1, 0, s>>>(y); }\n"
      "#define INSTANTIATE_LAUNCH(T)                  \\\n"
      "    template void launch_kern<T>(T * y,       \\\n"
      "                                 int n,       \\\n"
      "                                 cudaStream_t s);\n"
      "#define INSTANTIATE_KERNEL(T) template __global__ void kern<T>(T*);\n"
      "#define INSTANTIATE_TWICE(T) template __device__ T twice<T>(T);\n"
      "INSTANTIATE_LAUNCH(float)\n"
      "INSTANTIATE_LAUNCH(__half)\n"
      "#ifdef BF16_AVAILABLE\n"
      "INSTANTIATE_LAUNCH(__nv_bfloat16)\n"
      "#endif\n"
      "INSTANTIATE_KERNEL(float)\n"
      "INSTANTIATE_TWICE(float)\n"
      "int counter = 0;\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  expect_parts(out, {"void launch_kern(", "INSTANTIATE_LAUNCH(float)", "INSTANTIATE_LAUNCH(__half)", "INSTANTIATE_LAUNCH(__nv_bfloat16)", "int counter"},
               {"__global__ void kern(T* y)", "__device__ T twice(T x)", "#define INSTANTIATE_LAUNCH(T)", "#ifdef BF16_AVAILABLE", "#endif",
                "INSTANTIATE_KERNEL(float)", "INSTANTIATE_TWICE(float)"});
  EXPECT_EQ(n, 5); // the template, three calls, the variable
}

// A declarator list's names after the first are no macros before a name (FlashAttention's
// layer_norm: `extern FwdRegistry FWD_FUNCS, PARALLEL_FWD_FUNCS;`, host registries of launchers,
// which NVRTC refuses in a namespace); a ',' in a template's arguments opens no list, so an
// unknown macro after it still keeps the statement, and a device list stays.
TEST(HostCode, ADeclaratorListsOtherNamesAreNoMacros) {
  const std::string text =
      "#include <unordered_map>\n"
      "namespace layer_norm {\n"
      "using FwdRegistry = std::unordered_map<int, int>;\n"
      "extern FwdRegistry FWD_FUNCS, PARALLEL_FWD_FUNCS;\n"
      "extern int COUNT_A, COUNT_B;\n"
      "std::pair<int, int> UNKNOWN_SPACE pick(int);\n"
      "__device__ int DEV_A, DEV_B;\n"
      "}\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"FWD_FUNCS", "COUNT_A"}, {"using FwdRegistry", "std::pair<int, int> UNKNOWN_SPACE pick(int);", "__device__ int DEV_A, DEV_B;"});
  EXPECT_EQ(n, 2);
}

TEST(HostCode, WhereTheReadingCannotBeSureNothingGoes) {
  int n = 0;
  // A macro from a header (not defined here) before the name may be an execution space.
  const std::string macro = "#include \"common.h\"\nHOST_DEVICE_INLINE float f(float x) { return x; }\n";
  EXPECT_EQ(skipped(macro, &n), macro);
  EXPECT_EQ(n, 0);
  // An ALL_CAPS word inside a template's argument, or after a class's `::`, is none: a host
  // function returning std::array<float, Params::MAX_COEFFS> goes (gsplat's coefficient padding),
  // where one with a header's macro before its name stays.
  const std::string in_args = "#include <array>\n#include \"params.h\"\n"
                              "inline std::array<float, Params::MAX_COEFFS> pad(const float* s) { return {}; }\n"
                              "inline Grid<MAX_DIMS>::Index at(int i) { return {}; }\n"
                              "HOST_DEVICE_INLINE std::array<float, Params::MAX_COEFFS> keep(const float* s) { return {}; }\n";
  const std::string out = skipped(in_args, &n);
  EXPECT_EQ(n, 2) << out;
  EXPECT_EQ(out.find("return {}; }\ninline Grid"), std::string::npos) << out;
  EXPECT_NE(out.find("HOST_DEVICE_INLINE std::array<float, Params::MAX_COEFFS> keep(const float* s) { return {}; }"), std::string::npos) << out;
  // Braces that balance neither over every #if branch nor over the first of each: nothing goes.
  const std::string branches = "#ifdef A\nvoid f(int a) {\n#endif\n  (void)a;\n}\n}\nint main() { return 0; }\n";
  EXPECT_EQ(skipped(branches, &n), branches);
  EXPECT_EQ(n, 0);
}

// Constructors whose member initializers hold braces (TensorRT-LLM's QuantMode): the body is the
// brace group after the last initializer. A host one goes whole, a constexpr one becomes
// __host__ __device__, and what follows is still read.
TEST(HostCode, AConstructorsBracedInitializersAreNoBody) {
  const std::string text =
      "struct S {\n"
      "  int a, b;\n"
      "  S() : a{1}, b{2} { a += b; }\n"
      "  S(int x, int y) : a(x), b{y} {}\n"
      "  explicit constexpr S(unsigned v) noexcept : a{int(v)}, b(0) {}\n"
      "  __device__ int sum() const { return a + b; }\n"
      "};\n"
      "int main() { return 0; }\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"S() :", "a += b", "S(int x, int y)", "b{y}", "int main"},
               {"int a, b;", "__host__ __device__ constexpr S(unsigned v) noexcept : a{int(v)}, b(0) {}", "__device__ int sum() const"});
  EXPECT_EQ(n, 4);
}

// cuda.h's shape: declarations of the driver API between #if and #define lines, a name that is a
// macro of the text (#define cuMemcpy __CUDA_API_PTDS(cuMemcpy)), const char** parameters. The
// declarations go; every preprocessor line stays (blanking a statement must not take the
// #define before it); a const object built by a constructor stays (the constructor, a host
// member function, goes as in a source).
TEST(HostCode, AToolkitHeadersDeclarationsGoItsPreprocessorLinesStay) {
  const std::string text =
      "#include <stdlib.h>\n"
      "typedef int CUresult;\n"
      "#define cuMemcpy __CUDA_API_PTDS(cuMemcpy)\n"
      "#ifdef _WIN32\n#define CUDAAPI __stdcall\n#else\n#define CUDAAPI\n#endif\n"
      "/** Returns the error's string. */\n"
      "CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr);\n"
      "#if defined(VERSION_2)\n#define cuInit cuInit_v2\n#endif\n"
      "CUresult CUDAAPI cuInit(unsigned int Flags);\n"
      "CUresult CUDAAPI cuMemcpy(unsigned long long dst, unsigned long long src, size_t n);\n"
      "typedef struct CUtensorMap_st { alignas(64) unsigned long long opaque[16]; } CUtensorMap; // kept\n"
      "struct Shape { Shape(int) {} };\n"
      "const Shape kShape(4);\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(n, 4) << out;
  for (const char* gone : {"cuGetErrorString(", "cuInit(unsigned", "cuMemcpy(unsigned"}) EXPECT_FALSE(has(out, gone)) << gone << ":\n" << out;
  for (const char* kept : {"#ifdef _WIN32\n#define CUDAAPI __stdcall\n#else\n#define CUDAAPI\n#endif\n", "#if defined(VERSION_2)\n#define cuInit cuInit_v2\n#endif\n",
                           "#define cuMemcpy __CUDA_API_PTDS(cuMemcpy)\n", "CUtensorMap_st", "const Shape kShape(4);"})
    EXPECT_TRUE(has(out, kept)) << kept << " went:\n" << out;
  // The device view: the same, its comments and the blanked lines' blanks gone, every line kept.
  const std::string view = device_view_of_header(text);
  EXPECT_EQ(std::count(view.begin(), view.end(), '\n'), std::count(text.begin(), text.end(), '\n'));
  EXPECT_FALSE(has(view, "Returns the error's string")) << view;
  EXPECT_FALSE(has(view, "// kept")) << view;
  EXPECT_FALSE(has(view, " \n")) << "trailing blanks:\n" << view;
  EXPECT_TRUE(has(view, "typedef struct CUtensorMap_st { alignas(64) unsigned long long opaque[16]; } CUtensorMap;\n")) << view;
  EXPECT_TRUE(has(view, "#define CUDAAPI\n#endif\n\n\n#if defined(VERSION_2)")) << "the comment's line and the declaration's, empty:\n" << view;
}

// C's elaborated types: a class-key that only names a function's or a variable's type does not
// make the statement a type's declaration (the host function goes); one that declares or defines
// a type keeps it, with its attributes and base clause, and its body is read as a class's.
TEST(HostCode, AnElaboratedTypeInADeclarationIsNoTypesDeclaration) {
  const std::string text =
      "struct obj { int a; };\n"
      "struct obj* make_obj(int a);\n"
      "void print_obj(const struct obj* o);\n"
      "enum status { OK = 0 };\n"
      "int status_of(enum status s);\n"
      "union u* u_of(int k);\n"
      "class C* c_of(int k);\n"
      "struct fwd;\n"
      "enum class Mode : int { A, B };\n"
      "struct alignas(16) V { float x; };\n"
      "struct __attribute__((packed)) P { char c; int i; };\n"
      "template <int N> struct Base {};\n"
      "struct D : Base<(1)> { int d; };\n"
      "struct R { ~R() = default; R(int k) : r(k) {} int r; };\n"
      "struct pool { virtual ~pool() = default; virtual void* alloc(unsigned long n) = 0; int used; };\n"
      "struct opts { int a; };\n"
      "int run(int n, opts o = {});\n"
      "__device__ int dev(int);\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(out.size(), text.size());
  expect_parts(out, {"make_obj(int a)", "print_obj(", "status_of(", "u_of(", "c_of(", "R(int k)", "virtual ~pool()", "alloc(", "run(int n"},
               {"struct obj { int a; };", "enum status { OK = 0 };", "struct fwd;", "enum class Mode : int { A, B };",
                "struct alignas(16) V { float x; };", "struct __attribute__((packed)) P { char c; int i; };", "struct D : Base<(1)> { int d; };",
                "struct R { ~R() = default;", "int r; };", "struct pool {", "int used; };", "struct opts { int a; };", "__device__ int dev(int);"});
  EXPECT_EQ(n, 9) << out;
}

// ggml's kernels open their body's `if constexpr (...) {` once in each branch of an #if on the
// GPU's maker: read over every branch the braces do not balance, so the text is read over the
// first branch of each #if group; a host function goes (with a later branch inside it), the
// kernel stays whole, and a later branch between statements stays.
TEST(HostCode, BracesOpenedInEachBranchOfAnIfAreReadOverItsFirstBranch) {
  const std::string text =
      "static inline int max_block(int cc) {\n"
      "#if defined(AMD)\n  return 512;\n#else\n  return 256;\n#endif\n}\n"
      "template <int R> __global__ void k(float* y) {\n"
      "#if defined(AMD)\n  if constexpr (R != 64) { y[0] = 0.f; } else {\n#else\n  if constexpr (R != 32) { y[0] = 0.f; } else {\n#endif\n"
      "  y[0] = 1.f;\n  }\n}\n"
      "#if defined(AMD)\nint host_only(int);\n#else\n__device__ int on_device(int);\n#endif\n"
      "void launch(float* y) { k<32><<<1, 1>>>(y); }\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(out.size(), text.size());
  expect_parts(out, {"max_block(", "return 512;", "return 256;", "host_only(", "void launch("},
               {"if constexpr (R != 64) { y[0] = 0.f; } else {", "if constexpr (R != 32) { y[0] = 0.f; } else {", "y[0] = 1.f;\n  }\n}",
                "__device__ int on_device(int);", "#if defined(AMD)\n", "#else\n", "#endif\n"});
  EXPECT_EQ(n, 3) << out;
  // Of an `#if 0`, the branch after it is the one read.
  const std::string zero = "#if 0\nvoid old(int a) {\n#else\nvoid f(long a) {\n#endif\n  (void)a;\n}\n__global__ void g() {}\n";
  const std::string z = skipped(zero, &n);
  EXPECT_FALSE(has(z, "void f(long a)")) << z;
  EXPECT_TRUE(has(z, "void old(int a) {\n")) << "the dead branch between statements stays:\n" << z;
  EXPECT_TRUE(has(z, "__global__ void g() {}")) << z;
  // A host function whose head is written once per branch goes whole.
  const std::string heads = "#ifdef A\nvoid f(int a) {\n#else\nvoid f(long a) {\n#endif\n  (void)a;\n}\n__global__ void g() {}\n";
  const std::string h = skipped(heads, &n);
  EXPECT_FALSE(has(h, "void f(")) << h;
  EXPECT_TRUE(has(h, "#ifdef A\n") && has(h, "#else\n") && has(h, "__global__ void g() {}")) << h;
}

// Data that names a host function blanked before it (a table of host callbacks, as ggml's
// backend interfaces) goes with it; data naming a device function, an alias and a device
// variable stay. A function only declared and asked about in the alias's decltype is kept for
// both sides, so that the alias still names it.
TEST(HostCode, DataNamingABlankedHostFunctionGoesWithIt) {
  const std::string text =
      "struct iface { void (*free_buffer)(void*); int (*size)(); };\n"
      "static void free_buffer(void* p) { (void)p; }\n"
      "static int buffer_size();\n"
      "__device__ int dev_size() { return 4; }\n"
      "static const iface host_iface = {\n  /* .free_buffer = */ free_buffer,\n  /* .size = */ buffer_size,\n};\n"
      "static const int kCount = 4;\n"
      "using size_fn = decltype(&buffer_size);\n"
      "__device__ int (*dev_fn)() = dev_size;\n"
      "__global__ void k(int* y) { y[0] = dev_fn() + kCount; }\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"void free_buffer(void* p)", "host_iface", "/* .size = */"},
               {"struct iface {", "__host__ __device__ static int buffer_size();", "__device__ int dev_size()", "static const int kCount = 4;", "using size_fn = decltype(&buffer_size);",
                "__device__ int (*dev_fn)() = dev_size;", "__global__ void k("});
  EXPECT_EQ(n, 3) << out;
}

// Namespace-scope data whose initializer calls a host function that skip blanked in another of
// the project's files (xgboost's `auto const kRegister... = elementwise::RegisterValidationCuda<
// Check>();`, whose template went from its header) goes, as nvcc initializes it on the host; data
// that calls a device function stays.
TEST(HostCode, DataInitializedByAnotherFilesHostFunctionGoes) {
  const std::string text =
      "namespace obj {\nnamespace {\n"
      "auto const kRegisterValidation =\n    elementwise::RegisterValidationCuda<LabelCheck>();\n"
      "const int kSize = dev_size();\n"
      "}\n}\n__global__ void k(int* y) { y[0] = 1; }\n";
  int n = 0;
  ProjectReading project;
  project.elsewhere = {"RegisterValidationCuda"};
  const std::string out = skip_host_functions(text, &n, project);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  expect_parts(out, {"kRegisterValidation", "RegisterValidationCuda<LabelCheck>()"},
               {"const int kSize = dev_size();", "__global__ void k("});
  // Without the project's other files, the function is not known: the data stays.
  expect_parts(skipped(text, &n), {}, {"auto const kRegisterValidation ="});
}

// A constexpr function without an execution space is nvcc's on both sides (constant-evaluated
// in a traits class; called from device code as PyTorch extensions build): it becomes
// __host__ __device__, in a class too, its line kept; one already __host__ gains __device__. A
// C++ keyword a header #defines for an old compiler (in an #if not evaluated here) is not read
// as its macro; a member function's declaration behind an attribute goes as a plain one does.
TEST(HostCode, AConstexprFunctionBecomesHostDeviceAndAttributesHideNoDeclaration) {
  const std::string text =
      "#if __cplusplus < 201103L\n#define constexpr\n#endif\n"
      "constexpr int cmax(int a, int b) { return a > b ? a : b; }\n"
      "template <class T> static constexpr T ceildiv(T a, T b) { return (a + b - 1) / b; }\n"
      "__host__ constexpr int twice(int a) { return 2 * a; }\n"
      "static float constexpr kMax = 65504.f;\n"
      "template <int N> struct Traits {\n  static constexpr int kSmem = cmax(N * 4, 256);\n  static constexpr int size() { return N; }\n"
      "  void host_only();\n};\n"
      "class Logger {\n public:\n  void log(int level, char const* format, ...) __attribute__((format(printf, 3, 4)));\n"
      "  [[nodiscard]] bool ok() const;\n  alignas(16) float pad[4];\n#if __cplusplus\n  alignas(64)\n#else\n  _Alignas(64)\n#endif\n"
      "  unsigned long long opaque[16];\n  WEIRD_ATTR(8) int tag;\n};\n"
      "__global__ void k(float* y) { y[0] = ceildiv(cmax(3, 4), 2) + kMax; }\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  expect_parts(out, {"void host_only()", "void log(", "bool ok()"},
               {"__host__ __device__ constexpr int cmax(int a, int b) { return a > b ? a : b; }",
                "template <class T> static __host__ __device__ constexpr T ceildiv(T a, T b)", "__host__ __device__ constexpr int twice(int a)",
                "static float constexpr kMax = 65504.f;", "static constexpr int kSmem = cmax(N * 4, 256);",
                "static __host__ __device__ constexpr int size() { return N; }", "alignas(16) float pad[4];", "#define constexpr\n",
                "  _Alignas(64)\n#endif\n  unsigned long long opaque[16];", "WEIRD_ATTR(8) int tag;"});
  EXPECT_EQ(n, 7) << out;
}

// CUTLASS's shape: macros defined in #if branches chosen by what the compiler defines. The
// branch NVRTC compiles gives the macro its meaning (CUTLASS_HOST_DEVICE is __device__
// __host__, not the last branch's inline; a dialect test reads __cplusplus as C++17), a macro
// defined in a branch not known either way is nobody's, a name that qualifies another
// (`cutlass::`, a macro of the user's choosing) is no execution space, and a constexpr
// written through a macro makes a function __host__ __device__ as the keyword does.
TEST(HostCode, ConditionsAreReadAsNvrtcSeesThem) {
  const std::string text =
      "#if defined(__CUDACC__) || defined(__CUDACC_RTC__)\n"
      "#define CUTLASS_HOST_DEVICE __forceinline__ __device__ __host__\n"
      "#define CUTLASS_HOST __host__\n"
      "#else\n"
      "#define CUTLASS_HOST_DEVICE inline\n"
      "#define CUTLASS_HOST inline\n"
      "#endif\n"
      "#if defined(_MSC_VER)\n#define CPP_LEVEL _MSVC_LANG\n#else\n#define CPP_LEVEL __cplusplus\n#endif\n"
      "#if (CPP_LEVEL >= 201703L) && !defined(__clang__)\n#define CONSTEXPR_IF_17 constexpr\n#else\n#define CONSTEXPR_IF_17\n#endif\n"
      "#if PROJECT_FLAG\n#define MAYBE_HD __device__\n#endif\n"
      "#define cutlass user_cutlass\n"
      "namespace cutlass { struct Status { int v; }; }\n"
      "CUTLASS_HOST_DEVICE int hd(int a) { return a; }\n"
      "CUTLASS_HOST int host_only(int a) { return a + 1; }\n"
      "cutlass::Status run_it(int n) { return cutlass::Status{n}; }\n"
      "CONSTEXPR_IF_17 int cx(int a) { return 3 * a; }\n"
      "MAYBE_HD int unsure(int a) { return a; }\n"
      "__global__ void k(int* y) { y[0] = hd(1) + cx(2); }\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  expect_parts(out, {"int host_only(", "Status run_it("},
               {"CUTLASS_HOST_DEVICE int hd(int a) { return a; }", "__host__ __device__ CONSTEXPR_IF_17 int cx(int a)",
                "MAYBE_HD int unsure(int a) { return a; }", "#define CUTLASS_HOST_DEVICE inline", "namespace cutlass { struct Status",
                "__global__ void k("});
  EXPECT_EQ(n, 3) << out; // two blanked, one made __host__ __device__
}

// DeepSpeed's cublas_wrappers.h: a declaration whose default argument, and ';', are written once
// in each branch of an #if on HIP. The branch NVRTC skips is not read: the declaration goes whole,
// over the branch NVRTC compiles, and the next one is read from its own start.
TEST(HostCode, AStatementEndingInEachBranchOfAnIfGoesWhole) {
  const std::string text =
      "int gemm(int m,\n"
      "#if defined(__HIP_PLATFORM_AMD__)\n"
      "         rocblas_gemm_algo algo = rocblas_gemm_algo_standard);\n"
      "#else\n"
      "         cublasGemmAlgo_t algo = CUBLAS_GEMM_DEFAULT);\n"
      "#endif\n"
      "int gemm_half(int m,\n"
      "  #ifdef __HIP_PLATFORM_AMD__\n"
      "              rocblas_gemm_algo algo = rocblas_gemm_algo_standard);\n"
      "  #else\n"
      "              cublasGemmAlgo_t algo = CUBLAS_GEMM_DEFAULT_TENSOR_OP);\n"
      "  #endif\n"
      "__global__ void k(float* y) { y[0] = 1.f; }\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  expect_parts(out, {"int gemm(", "CUBLAS_GEMM_DEFAULT)", "int gemm_half(", "CUBLAS_GEMM_DEFAULT_TENSOR_OP"},
               {"#if defined(__HIP_PLATFORM_AMD__)", "#else", "  #endif", "__global__ void k(float* y)"});
  EXPECT_EQ(n, 2) << out;
}

// Transformer Engine's shapes (common.h, util/rtc.h, swizzle.cu) and CuTe's (tuple.hpp): an
// operator's declaration is a function's (its '=' no initializer's); a constexpr function's
// declaration gets the execution space its definition would (the explicit specializations a
// macro writes then compile as its); `__host__` on a variable, which nvcc ignores with a warning
// and NVRTC refuses, goes; a function declared only to be asked about in decltype or sizeof is
// kept for both sides rather than blanked; a C++20 concept is no variable (gsplat's IsTorch). A
// function's declaration of either kind stays blanked.
TEST(HostCode, OperatorsConstexprDeclarationsHostVariablesAndUnevaluatedDeclarations) {
  const std::string text =
      "struct Kernel {\n  Kernel(int n);\n  Kernel &operator=(Kernel) noexcept;\n  bool operator<=(const Kernel& o) const;\n"
      "  int operator()(int i) const;\n  friend void swap(Kernel &a, Kernel &b) noexcept;\n  constexpr Kernel() noexcept = default;\n"
      "  int n;\n};\n"
      "bool operator==(const Kernel& a, const Kernel& b);\n"
      "template <typename T>\nconstexpr inline const char *type_name() noexcept;\n"
      "#define TYPE_NAME(T) template <> inline constexpr const char *type_name<T>() noexcept { return #T; }\n"
      "TYPE_NAME(int)\n"
      "constexpr __device__ __host__ int TB_DIM = 32;\n"
      "static constexpr __host__ __device__ float K[2] = {1.f, 2.f};\n"
      "__host__ __device__ int both(int x);\n"
      "constexpr int kSame(3);\n"
      "template <class T> auto has_size(T*) -> decltype(sizeof(T), int());\n"
      "template <class T> auto has_size(...) -> char;\n"
      "template <class T> struct sized { static constexpr bool value = sizeof(has_size<T>((T*)0)) == sizeof(int); };\n"
      "template <class T>\nconcept Sized = sized<T>::value;\n"
      "int host_only(int x);\n"
      "__global__ void k(float* y) { y[0] = TB_DIM + sized<float>::value + type_name<int>()[0]; }\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  expect_parts(out, {"Kernel(int n);", "operator=", "operator<=", "operator()", "friend void swap", "operator==", "int host_only(",
                     "__device__ __host__ int TB_DIM", "__host__ __device__ float K"},
               {"constexpr Kernel() noexcept = default;", "  int n;", "concept Sized = sized<T>::value;",
                "template <typename T>\n__host__ __device__ constexpr inline const char *type_name() noexcept;", "TYPE_NAME(int)",
                "constexpr __device__          int TB_DIM = 32;", "static constexpr          __device__ float K[2]",
                "__host__ __device__ int both(int x);", "constexpr int kSame(3);",
                "template <class T> __host__ __device__ auto has_size(T*) -> decltype(sizeof(T), int());",
                "template <class T> __host__ __device__ auto has_size(...) -> char;", "static constexpr bool value = sizeof("});
}

// A variable of an elaborated type (Apex's `class ManagedObjects mo;` after the class, glibc's
// `struct timeval tv;`) is a variable's declaration, not a type's: a host one goes. A type's
// declaration with no body (`struct X;`, a specialization's, an opaque enum's) stays.
TEST(HostCode, AVariableOfAnElaboratedTypeIsNoTypesDeclaration) {
  const std::string text =
      "class ManagedObjects { public: int n; };\n"
      "class ManagedObjects mo;\n"
      "struct timeval { long s; };\n"
      "static struct timeval tv;\n"
      "struct Fwd;\n"
      "template <class T> struct Box;\n"
      "template <> struct Box<int>;\n"
      "enum Mode : int;\n"
      "enum class Kind : unsigned char;\n"
      "struct alignas(16) Aligned;\n"
      "__device__ struct timeval dev_tv;\n"
      "__global__ void k(int* y) { y[0] = dev_tv.s; }\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"class ManagedObjects mo;", "static struct timeval tv;"},
               {"class ManagedObjects { public: int n; };", "struct timeval { long s; };", "struct Fwd;", "template <class T> struct Box;",
                "template <> struct Box<int>;", "enum Mode : int;", "enum class Kind : unsigned char;", "struct alignas(16) Aligned;",
                "__device__ struct timeval dev_tv;"});
  EXPECT_EQ(n, 2) << out;
}

// A file saved with Windows' line ends (FasterTransformer's headers): read as with "\n" ones, a
// macro's "\\\r\n" continuation included, and given back with its "\r"s where they were.
TEST(HostCode, WindowsLineEndsReadAsUnixOnes) {
  const std::string text =
      "#pragma once\r\n#define DEV \\\r\n  __device__\r\nnamespace ft {\r\n\r\ntemplate<typename T>\r\n"
      "void invoke(const T* x, int n);\r\nDEV int twice(int a) { return 2 * a; }\r\n}  // namespace ft\r\n"
      "__global__ void k(int* y) { y[0] = ft::twice(1); }\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(out.size(), text.size()) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\r'), std::count(text.begin(), text.end(), '\r')) << "each \\r kept";
  expect_parts(out, {"void invoke("}, {"#define DEV \\\r\n  __device__\r\n", "DEV int twice(int a) { return 2 * a; }\r\n",
                                       "__global__ void k(int* y)"});
  EXPECT_EQ(n, 1) << out;
}

// A function-like macro whose replacement defines a host function (candle's launchers, one call a
// type) goes where it is called; one whose replacement defines a kernel stays.
TEST(HostCode, AMacroCallDefiningHostFunctionsGoes) {
  const std::string text =
      "template <typename T> __global__ void kern(T* y) { y[0] = T(1); }\n"
      "#define LAUNCHER(tag, T)                                  \\\n"
      "  extern \"C\" void launch_##tag(T* y, void* stream) {  \\\n"
      "    kern<T><<<1, 32, 0, (cudaStream_t)stream>>>(y);       \\\n"
      "  }\n"
      "#define KERNEL(tag, T) __global__ void fill_##tag(T* y) { y[threadIdx.x] = T(0); }\n"
      "LAUNCHER(f32, float)\n"
      "LAUNCHER(f16, __half)\n"
      "KERNEL(f32, float)\n"
      "__device__ int stays;\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  expect_parts(out, {"LAUNCHER(f32, float)", "LAUNCHER(f16, __half)"},
               {"#define LAUNCHER(tag, T)", "KERNEL(f32, float)", "__global__ void kern(T* y)", "__device__ int stays;"});
  EXPECT_EQ(n, 2) << out;
}

// Another GPU maker's build flag (PyTorch's USE_ROCM, ggml's GGML_USE_HIP) is no macro under
// NVRTC: its branch is not read and the branch NVRTC compiles is, also where the braces balance
// over the first branch of each #if only (ggml's kernels).
TEST(HostCode, AnotherMakersBuildFlagsBranchIsNotRead) {
  const std::string text =
      "#if defined(GGML_USE_HIP)\n"
      "static int nwarps_host(const int cc, const int warp_size) { return cc > 9 ? 8 : 256 / warp_size; }\n"
      "#else\n"
      "static int nwarps_host(const int /*cc*/, const int warp_size) { return 256 / warp_size; }\n"
      "#endif\n"
      "#ifndef USE_ROCM\n"
      "__device__ float lane_sum(float v) { return v; }\n"
      "#else\n"
      "__device__ float lane_sum(float v) { return -v; }\n"
      "#endif\n"
      "__global__ void k(float* y, int n) {\n"
      "#if defined(AMD_MFMA_AVAILABLE)\n"
      "  for (int i = 0; i < n; ++i) { if (i < 4) {\n"
      "#else\n"
      "  for (int i = 0; i < n; ++i) { {\n"
      "#endif\n"
      "    y[i] = lane_sum(1.f);\n"
      "  } }\n"
      "}\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  expect_parts(out, {"return 256 / warp_size; }"}, {"return cc > 9 ? 8", "__device__ float lane_sum(float v) { return v; }", "__global__ void k("});
  EXPECT_EQ(n, 1) << out;
}

// Another platform's build flag likewise (Kaldi's timer.h: `#if defined(_MSC_VER) ||
// defined(MINGW)` opens a namespace and a Windows timer class, `#else` the POSIX one, the
// namespace closed once after both): the branch NVRTC compiles is the one read, its host members
// going.
TEST(HostCode, AnotherPlatformsBuildFlagsBranchIsNotRead) {
  const std::string text =
      "#if defined(_MSC_VER) || defined(MINGW)\n"
      "namespace kaldi {\n"
      "class Timer {\n public:\n  Timer() { Reset(); }\n  void Reset() { QueryPerformanceCounter(&start_); }\n"
      " private:\n  LARGE_INTEGER start_;\n};\n"
      "#else\n"
      "namespace kaldi {\n"
      "class Timer {\n public:\n  Timer() { Reset(); }\n  void Reset() { gettimeofday(&start_, nullptr); }\n"
      " private:\n  struct timeval start_;\n};\n"
      "#endif\n"
      "__device__ float twice(float x) { return 2.f * x; }\n"
      "}  // namespace kaldi\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  expect_parts(out, {"gettimeofday"}, {"QueryPerformanceCounter", "__device__ float twice"});
  EXPECT_EQ(n, 2) << out;
}

// A __host__ __device__ function taking the host library's containers (spconv's tensorview) is
// host code: blanked, as nvcc would refuse it on the device; one taking plain types stays. So is a
// const object of one (pytorch_scatter's reduce2REDUCE map, initialized at run time); a const
// table of ints stays.
TEST(HostCode, AHostDeviceFunctionTakingHostContainersGoes) {
  const std::string text =
      "#include <vector>\n"
      "#define TV_HOST_DEVICE_INLINE __forceinline__ __device__ __host__\n"
      "TV_HOST_DEVICE_INLINE unsigned row_index(std::vector<int> &shape, std::vector<int> &idx) { return shape.size() + idx[0]; }\n"
      "TV_HOST_DEVICE_INLINE unsigned named(const std :: string& s) { return s.size(); }\n"
      "TV_HOST_DEVICE_INLINE unsigned row_index(const int* shape, const int* idx, int n) { return shape[n - 1] * idx[0]; }\n"
      "enum ReductionType { SUM, MEAN };\n"
      "const std::map<std::string, ReductionType> reduce2REDUCE = {{\"sum\", SUM}, {\"mean\", MEAN}};\n"
      "const int kTable[2] = {1, 2};\n"
      "__global__ void k(unsigned* y, const int* s) { y[0] = row_index(s, s, 2) + kTable[1]; }\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"shape.size() + idx[0]", "return s.size();", "reduce2REDUCE"},
               {"return shape[n - 1] * idx[0];", "const int kTable[2] = {1, 2};", "enum ReductionType", "__global__ void k("});
  EXPECT_EQ(n, 3) << out;
}

// A macro defined otherwise in branches the reading cannot choose between (glm's execution space
// and constexpr macros, on the project's own flags and the compiler's version) reads as every
// meaning's words together: a function one meaning makes __device__ or constexpr is kept or made
// __host__ __device__, not blanked by whichever #define came last. #undef then #define is one
// meaning after another.
TEST(HostCode, AMacroDefinedOtherwiseInBranchesReadsAsAllItsMeanings) {
  const std::string text =
      "#if defined(LIB_FORCE_DEVICE)\n#define LIB_FUNC __device__\n#elif defined(LIB_FORCE_HOST)\n#define LIB_FUNC __host__\n"
      "#elif LIB_CUDA\n#define LIB_FUNC __device__ __host__\n#else\n#define LIB_FUNC\n#endif\n"
      "#if LIB_HAS_CONSTEXPR\n#define LIB_CONSTEXPR constexpr\n#else\n#define LIB_CONSTEXPR\n#endif\n"
      "#define LIB_HOST inline\n#undef LIB_HOST\n#define LIB_HOST static\n"
      "LIB_FUNC float twice(float x) { return 2.f * x; }\n"
      "LIB_CONSTEXPR int cube(int x) { return x * x * x; }\n"
      "LIB_HOST int host_only(int x) { return x + 1; }\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"int host_only("}, {"LIB_FUNC float twice(float x)", "__host__ __device__ LIB_CONSTEXPR int cube("});
  EXPECT_EQ(n, 2) << out;
}

// A header-only host library's idioms (nlohmann/json's, which tiny-cuda-nn's kernels' headers
// include): a macro statement with no ';' before a namespace (a _Pragma or nothing), a macro
// that is a whole template parameter list before a class, an access specifier's macro defined
// `public` or `private` on the project's flags, an attribute's macro whose meaning calls a
// function-like macro or names a string (`_Pragma("FUNC_IS_PURE;")`), a trait's probe declared
// in a class and read in sizeof, a function read in decltype, a data member initialized by a
// function that goes, and a function-like macro whose replacement declares a function it reads
// in decltype.
TEST(HostCode, AHeaderOnlyHostLibrarysIdiomsAreReadThrough) {
  const std::string text =
      "#define WRAP_(x) x\n"
      "#if defined(__GNUC__)\n#define PURE __attribute__((__pure__))\n#elif defined(__TI__)\n#define PURE _Pragma(\"FUNC_IS_PURE;\")\n"
      "#else\n#define PURE\n#endif\n"
      "#if HAS_NODISCARD\n#define NODISCARD WRAP_([[nodiscard]])\n#else\n#define NODISCARD\n#endif\n"
      "#if defined(LIB_TESTS)\n#define PRIVATE_UNLESS_TESTED public\n#else\n#define PRIVATE_UNLESS_TESTED private\n#endif\n"
      "#define DIAG_POP\n"
      "#define TPL_DECL template <template <typename...> class ArrayType, class StringType>\n"
      "#define CAN_CALL(name) namespace detail2 { struct name##_tag {}; template <typename... T> name##_tag name(T&&...); \\\n"
      "  template <typename... T> using result_of_##name = decltype(name(std::declval<T>()...)); }\n"
      "#define DEV_ATTR(x) __device__\n"
      "DIAG_POP\nnamespace lib {\n"
      "inline int host_helper(int x) { return x + 1; }\n"
      "static inline bool little_endianess(int num = 1) noexcept { return *reinterpret_cast<char*>(&num) == 1; }\n"
      "inline long adapter(const char* first, const char* last) { return last - first; }\n"
      "using adapter_t = decltype(adapter(nullptr, nullptr));\n"
      "CAN_CALL(begin);\n"
      "template <typename T> struct probe {\n"
      "  template <typename C> static char test(decltype(&C::capacity));\n"
      "  template <typename C> static long test(...);\n"
      "  enum { value = sizeof(test<T>(nullptr)) == sizeof(char) };\n};\n"
      "class reader {\n public:\n  NODISCARD\n  static int meta() { return 1; }\n"
      "  PURE\n  static char point() noexcept { return '.'; }\n"
      "  DEV_ATTR(1) int twice(int x) const { return 2 * x; }\n"
      " PRIVATE_UNLESS_TESTED:\n  int count = 0;\n  const bool is_little_endian = little_endianess();\n};\n"
      "TPL_DECL\nclass basic_json {\n public:\n  static int get_allocator() { return 1; }\n"
      "  union json_value {\n    int* object;\n    json_value() = default;\n    json_value(int v) noexcept : object(nullptr) {}\n  };\n"
      " PRIVATE_UNLESS_TESTED:\n  json_value m_value = {};\n};\n}\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  expect_parts(out, {"host_helper", "static int meta()", "static char point()", "= little_endianess()", "static int get_allocator()",
                     "json_value(int v)"},
               {"DEV_ATTR(1) int twice(int x) const", "  int count = 0;", "  const bool is_little_endian", "json_value() = default;",
                "  json_value m_value = {};", "  int* object;",
                "__host__ __device__ inline long adapter(const char* first, const char* last) ;",
                "using adapter_t = decltype(adapter(nullptr, nullptr));",
                "template <typename C> __host__ __device__ static char test(decltype(&C::capacity));",
                "template <typename C> __host__ __device__ static long test(...);",
                "template <typename... T> __host__ __device__ name##_tag name(T&&...);", "CAN_CALL(begin);"});
  EXPECT_EQ(out.find("return last - first"), std::string::npos) << "the body of a function read only in decltype goes";
}

// An ALL_CAPS template parameter before a member's name is no header's macro (tiny-cuda-nn's
// `template <typename PARAMS_T> class ParametricObject { PARAMS_T* params() const { ... } };`),
// and a body in one #if branch with the pure-specifier in another (`virtual void f() #if
// defined(NO_FWD) { throw ...; } #else = 0; #endif`) goes whole.
TEST(HostCode, TemplateParametersAndAPureSpecifierInAnotherBranch) {
  const std::string text =
      "template <typename T, typename PARAMS_T, typename COMPUTE_T = T, int N_DIMS = 3>\n"
      "class Object {\npublic:\n  PARAMS_T* params() const { return m_params; }\n"
      "  virtual void inference(int n)\n#if defined(NO_FWD)\n  { throw 1; }\n#else\n  = 0;\n#endif\n"
      "  virtual size_t n_params() const = 0;\n  UNKNOWN_SPACE int kept(int x) { return x; }\n"
      "  PARAMS_T* m_params = nullptr;\n};\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  expect_parts(out, {"params() const", "virtual void inference(int n)", "{ throw 1; }", "  = 0;\n#endif", "n_params()"},
               {"#if defined(NO_FWD)", "#else", "UNKNOWN_SPACE int kept(int x) { return x; }", "PARAMS_T* m_params = nullptr;"});
}

// nlohmann/json 3.11's namespace macros, whose replacements open and close scopes
// (`NLOHMANN_JSON_NAMESPACE_BEGIN`: `namespace nlohmann { inline namespace json_abi_v3_11_3 {`),
// are statements of their own, so that what follows them is read (a class after a template-list
// macro); a function whose head starts with an attribute's function-like macro
// (`JSON_HEDLEY_NON_NULL(1)`) is known by its own name, and a using-declaration of it goes.
TEST(HostCode, ScopeMacrosAndUsingDeclarationsOfBlankedFunctions) {
  const std::string text =
      "#ifndef NS_BEGIN\n#define NS_BEGIN \\\n    namespace nl \\\n    { \\\n    inline namespace v3 \\\n    {\n#endif\n"
      "#ifndef NS_END\n#define NS_END \\\n    }  /* namespace v3 */ \\\n    }  // namespace nl\n#endif\n"
      "#define NON_NULL(...) __attribute__((__nonnull__(__VA_ARGS__)))\n"
      "#define TPL_DECL template <class StringType, class CustomBaseClass>\n"
      "NS_BEGIN\nnamespace detail {\ninline int helper(int x) { return x; }\n}\nNS_END\n"
      "NS_BEGIN\nTPL_DECL\nclass basic_json // NOLINT\n    : public base<CustomBaseClass>\n{\n  public:\n"
      "    static int get_allocator() { return 1; }\n  private:\n    int get_impl(int* /*unused*/) const { return 1; }\n    int m_value = 0;\n};\n"
      "inline namespace literals {\nNON_NULL(1)\ninline int operator \"\"_json(const char* s, unsigned long n) { return int(n); }\n}\n"
      "NS_END\n"
      "using nl::literals::operator \"\"_json; // NOLINT\n"
      "using nl::basic_json;\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  expect_parts(out, {"inline int helper(", "get_allocator()", "get_impl(", "NON_NULL(1)\n", "operator \"\"_json(const char* s", "using nl::literals::operator"},
               {"NS_BEGIN\nnamespace detail {", "class basic_json // NOLINT", "    int m_value = 0;", "using nl::basic_json;"});
}

// An export macro between the class-key and the name (spdlog's `class SPDLOG_API spdlog_ex`, one
// meaning of which is `__attribute__((visibility("default")))`) leaves the class a class, whose
// host members go; a variable of an elaborated type stays a variable.
TEST(HostCode, AnExportMacroBeforeAClassNameKeepsItAClass) {
  const std::string text =
      "#ifdef LIB_COMPILED\n#if defined(_WIN32)\n#define LIB_API __declspec(dllexport)\n#else\n"
      "#define LIB_API __attribute__((visibility(\"default\")))\n#endif\n#else\n#define LIB_API\n#endif\n"
      "class LIB_API lib_ex : public base {\npublic:\n    explicit lib_ex(int msg);\n    const char *what() const noexcept override;\n"
      "private:\n    int msg_;\n};\n"
      "struct timeval tv;\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"explicit lib_ex(int msg);", "what() const", "struct timeval tv;"}, {"class LIB_API lib_ex : public base {", "    int msg_;"});
}

// A constexpr function's declaration in a class is one when only a function could be it: a friend
// (the half library's `friend HALF_CONSTEXPR_NOERR bool operator==(half, half);`, constexpr in one
// meaning of its macro), an operator, or `const` after its parentheses, even with bare type names
// for parameters (which a variable's initializer could also be). Each gets `__host__ __device__`,
// as the definition after the class does, so that the definition keeps its friendship; after
// `friend`. `constexpr A a(b);` stays data.
TEST(HostCode, ConstexprFriendsAndMembersWithBareTypeParametersGetBothSpaces) {
  const std::string text =
      "#if HALF_ENABLE_CPP11_CONSTEXPR\n#define HALF_CONSTEXPR_NOERR constexpr\n#else\n#define HALF_CONSTEXPR_NOERR\n#endif\n"
      "namespace hf {\nclass half {\n public:\n  friend HALF_CONSTEXPR_NOERR bool operator==(half, half);\n"
      "  friend constexpr int bits(half);\n  constexpr int g(half) const;\n  friend half sqrt(half);\n private:\n  unsigned short data_;\n};\n"
      "inline HALF_CONSTEXPR_NOERR bool operator==(half x, half y) { return x.data_ == y.data_; }\n"
      "inline half sqrt(half x) { return x; }\nstruct A { int v; };\nconstexpr A b{1};\nconstexpr A a(b);\n}\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"friend half sqrt(half);", "inline half sqrt"},
               {"friend __host__ __device__ HALF_CONSTEXPR_NOERR bool operator==(half, half);",
                "friend __host__ __device__ constexpr int bits(half);", "__host__ __device__ constexpr int g(half) const;",
                "__host__ __device__ inline HALF_CONSTEXPR_NOERR bool operator==(half x, half y)", "constexpr A a(b);"});
  EXPECT_FALSE(has(out, "__host__ __device__ constexpr A a(b)")) << out;
}

// A derived class's using-declaration of a base's member functions that skip blanked (CTranslate2's
// `using UnaryOp::operator();`, the base's pure virtual host operator) goes with them; one of a
// base whose member is a device function stays, and an alias stays.
TEST(HostCode, AUsingDeclarationOfABasesBlankedMembersGoes) {
  const std::string text =
      "class UnaryOp {\n public:\n  virtual void operator()(const int&, int&) const = 0;\n  void run(int);\n};\n"
      "class SoftMax : public UnaryOp {\n public:\n  using UnaryOp::operator();\n  using UnaryOp::run;\n  using value_type = float;\n};\n"
      "struct Plus {\n  __device__ float operator()(float a, float b) const { return a + b; }\n};\n"
      "struct PlusToo : Plus {\n  using Plus::operator();\n};\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"using UnaryOp::operator();", "using UnaryOp::run;"}, {"using value_type = float;", "using Plus::operator();"});
}

// A class defined by a qualified name (lmdeploy's `template <> struct fmt::formatter<DataType> :
// formatter<string_view> { auto format(...) const {...} };`) is a class: its host members go, its
// device ones stay; `struct ns::T t;` is still a variable of that type, whose words stay.
TEST(HostCode, AClassDefinedByAQualifiedNameIsAClass) {
  const std::string text =
      "namespace lib { template <class T> struct formatter {}; struct S; struct T {}; }\nenum class DataType { kHalf };\n"
      "template <> struct lib::formatter<DataType> : lib::T {\n  int format(DataType t) const { return int(t); }\n};\n"
      "struct lib::S {\n  int host_side() const { return 1; }\n  __device__ int twice(int x) const { return 2 * x; }\n};\n"
      "struct lib::T global_t;\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"int format(DataType t) const", "int host_side() const"},
               {"template <> struct lib::formatter<DataType> : lib::T {", "struct lib::S {", "__device__ int twice(int x) const { return 2 * x; }"});
  EXPECT_EQ(n, 3) << out; // the two members and the host variable
}

// A function-like macro whose replacement defines a class (robin_hood.h's ROBIN_HOOD_HASH_INT(T),
// `template <> struct hash<T> { size_t operator()(T obj) const noexcept {...} }`): its host members
// are blanked in the #define, its continuation lines kept; a device member stays. A macro whose
// replacement is no class's definition is left as it is.
TEST(HostCode, AMacroDefiningAClassLosesItsHostMembers) {
  const std::string text =
      "template <class T> struct hash;\n"
      "#define HASH_INT(T) \\\n  template <> \\\n  struct hash<T> { \\\n"
      "    unsigned long operator()(T obj) const noexcept { return static_cast<unsigned long>(obj); } \\\n"
      "    __device__ T twice(T x) const { return x + x; } \\\n  }\n"
      "#define RETURN_ONE(name) int name() { return 1; } int name##_too = 2\n"
      "HASH_INT(int);\nHASH_INT(char);\n__global__ void k(float* x) { x[threadIdx.x] = hash<int>().twice(1); }\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"unsigned long operator()(T obj)"},
               {"  struct hash<T> { \\\n", "__device__ T twice(T x) const { return x + x; } \\\n  }\n",
                "#define RETURN_ONE(name) int name() { return 1; } int name##_too = 2\n", "HASH_INT(int);\nHASH_INT(char);\n"});
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n'));
}

// A constexpr function that throws and is no template (lmdeploy's `constexpr cudaDataType
// to_cuda_dtype(DataType)`, `default: throw std::runtime_error(...)`) goes as a host function: NVRTC
// would compile it for the device, which cannot throw. A template that throws, compiled only where
// used, and a constexpr function that does not throw become __host__ __device__.
TEST(HostCode, AConstexprFunctionThatThrowsGoesUnlessATemplate) {
  const std::string text =
      "enum DataType { kHalf, kFloat };\n"
      "constexpr int to_cuda_dtype(DataType t) {\n  switch (t) {\n    case kHalf: return 2;\n    default: throw 1;\n  }\n}\n"
      "template <class T> constexpr int checked(T v) { return v < 0 ? throw 1 : int(v); }\n"
      "constexpr int twice(int v) { return 2 * v; } // \"throw\" in a comment is no throw\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"to_cuda_dtype", "case kHalf"},
               {"template <class T> __host__ __device__ constexpr int checked(T v)", "__host__ __device__ constexpr int twice(int v)"});
}

// A using-declaration of a base's blanked member through a member alias of the base
// (MinkowskiEngine's coordinate maps: `using base_type = CoordinateMap<...>;` then `using
// base_type::const_coordinate_data;`) goes with the member, as one that names the base does; an
// alias's using-declaration of a device member stays.
TEST(HostCode, AUsingDeclarationThroughABasesAliasGoesWithItsBlankedMember) {
  const std::string text =
      "template <typename T> class Base {\n public:\n  T const* data() const { return p; }\n  __device__ T at(int i) const { return p[i]; }\n  T* p;\n};\n"
      "template <typename T> class Derived : public Base<T> {\n  using base_type = Base<T>;\n  typedef Base<T> self_base;\n public:\n"
      "  using base_type::data;\n  using self_base::at;\n};\ntemplate class Derived<float>;\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"T const* data() const", "using base_type::data;"}, {"using self_base::at;", "using base_type = Base<T>;", "typedef Base<T> self_base;"});
}

// CUTLASS 3's sm90 collectives under skip. A function an unevaluated operand reads whose return
// type is deduced needs its body there: a template's or a class template's member stays whole,
// `__host__ __device__` (the blockwise-scaling mainloop's `static auto getTmaSFA() {...}` in
// `decltype(getTmaSFA())`); a non-template one goes as before. A name read so in another file of
// the project counts too (conv/detail.hpp's helper, read in a kernel header's decltype); a
// member's definition outside its class is not kept so (cuDF's nvtx3.hpp: `inline domain const&
// domain::get<domain::global>()`, whose class's host member `get` goes), `get` read in a decltype
// elsewhere or not.
TEST(HostCode, ADeducedFunctionReadInADecltypeStaysWholeInATemplate) {
  const std::string text =
      "template <class T> struct Mainloop {\n  struct Params {\n    static auto make_sfa() {\n      return T(1);\n    }\n"
      "    using Sfa = decltype(make_sfa());\n    Sfa sfa;\n  };\n};\n"
      "struct Plain {\n  static auto make_plain() { return host_value(); }\n  using P = decltype(make_plain());\n};\n"
      "template <class T, class S>\nauto shape_helper(S const& s) {\n  return T::shape(s);\n}\n"
      "struct domain {\n  template <class D> static domain const& get() { static domain d; return d; }\n};\n"
      "template <>\ninline domain const& domain::get<int>() { static domain d; return d; }\n";
  int n = 0;
  std::string out = skipped(text, &n);
  expect_parts(out, {"make_plain() {", "shape_helper(S const& s) {"},
               {"__host__ __device__ static auto make_sfa() {\n      return T(1);", "using P = decltype(make_plain());"});
  ProjectReading project;
  project.unevaluated = {"shape_helper", "get"};
  out = skip_host_functions(text, &n, project);
  expect_parts(out, {"domain::get<int>()", "static domain const& get()"}, {"template <class T, class S>\n__host__ __device__ auto shape_helper(S const& s) {\n  return T::shape(s);"});
}

// What is data in a class stays data: a member whose type's template arguments hold a call
// (CUTLASS's `array_aligned<T, size<1>(Tile{})> smem;`, with `size` read in a decltype elsewhere)
// gets no execution space; a partial specialization whose template arguments hold parentheses
// (`struct Has_SwapAB<T, void_t<decltype(T::SwapAB)>>`, `enable_if_t<not (...)>`) is a class, its
// host members blanked as any class's. A static data member that is not const is a host
// variable (CUTLASS's device adapter's `CUTLASS_THREAD_LOCAL static int device_ordinal_;`): it
// goes, and its definition outside the class; const and constexpr ones stay.
TEST(HostCode, DataInAClassStaysAndAStaticHostMemberGoes) {
  const std::string text =
      "#define THREAD_LOCAL\n"
      "template <class T, int N> struct array_aligned { T v[N]; };\n"
      "template <int I, class S> __host__ __device__ constexpr int size(S) { return 4; }\n"
      "struct Tile {};\nusing Count = decltype(size<1>(Tile{}));\n"
      "template <class T> struct Storage {\n  array_aligned<T, size<1>(Tile{})> smem;\n};\n"
      "template <class T, class = void> struct Has_SwapAB { static constexpr bool value = false; };\n"
      "template <class T> struct Has_SwapAB<T, void_t<decltype(T::SwapAB)>> {\n  static constexpr bool value = T::SwapAB;\n"
      "  int host_probe() { return 1; }\n};\n"
      "template <class M> class Gemm<M, enable_if_t<not (is_tuple<M>::value)>> {\n public:\n  void run() {}\n"
      "  __device__ void operator()() {}\n};\n"
      "template <class K> class Adapter {\n  THREAD_LOCAL static int device_ordinal_;\n  static int sms_;\n"
      "  static constexpr int kStages = 2;\n  static const int kWarps = 4;\n};\n"
      "template <class K> THREAD_LOCAL int Adapter<K>::device_ordinal_ = -1;\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"__host__ __device__ array_aligned", "host_probe", "void run()", "static int device_ordinal_;", "static int sms_;",
                     "Adapter<K>::device_ordinal_ = -1;"},
               {"  array_aligned<T, size<1>(Tile{})> smem;", "struct Has_SwapAB<T, void_t<decltype(T::SwapAB)>> {",
                "static constexpr bool value = T::SwapAB;", "__device__ void operator()() {}", "static constexpr int kStages = 2;",
                "static const int kWarps = 4;"});
}

// An #if on __CUDA_ARCH__ is read where every arch the spec compiles for gives one answer:
// Marlin's `#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800` (a stub for older GPUs closing the
// namespace in each branch, so that the braces balance in neither reading of both branches) is
// dead from sm_80 on, and the host functions of its #else branch go. From CUDA 13's oldest arch
// (sm_75, no spec arch) the comparison is not known: the first branch is read, as before.
TEST(HostCode, AnIfOnTheArchIsReadForTheArchsCompiled) {
  const std::string text =
      "namespace marlin {\n#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800\n__global__ void repack(int* p) {}\n}  // namespace marlin\n"
      "int repack_host(int v) { return v; }\n#else\n__global__ void repack(int* p) { p[0] = 1; }\n}  // namespace marlin\n"
      "int repack_host(int v) { return v + 1; }\n#endif\n"
      "#if __CUDA_ARCH__ >= 900\n__device__ int hopper() { return 1; }\n#endif\n";
  int n = 0;
  ProjectReading sm80;
  sm80.min_arch = 800;
  expect_parts(skip_host_functions(text, &n, sm80), {"return v + 1;"}, {"p[0] = 1;", "__device__ int hopper()"});
  // With no arch named, the text balances over no reading of every arch from sm_75 on: it is read
  // as the newest arch compiles it (the stub's branch not at all), not as its first branches
  // (which blanked the stub's host function and left the #else branch's).
  expect_parts(skipped(text, &n), {"return v + 1;"}, {"p[0] = 1;", "__device__ int hopper()"});
  // A text that balances as no arch compiles it is still read over its first branches.
  const std::string maker = "#ifdef KT_PLATFORM_A\nint a_host(int v) { if (v) {\n#else\nint b_host(int v) { if (v) {\n#endif\n"
                            "return v; } return 0; }\n__global__ void k(int* p) { p[0] = 2; }\n";
  expect_parts(skipped(maker, &n), {"int a_host", "return 0;"}, {"p[0] = 2;"});
}

TEST(HostCode, AFunctionLikeMacrosDefinitionIsReadWithoutItsCommentsAndOneDefinedTwiceIsUnknown) {
  std::map<std::string, std::string> defs;
  defined_function_macros("#define TWICE(x) /* doubled */ ((x) * 2) // note\n"
                          "#  define JOIN(a, b) \\\n  a##b\n"
                          "#define PLAIN 3\n"
                          "#ifdef KT_A\n#define PICK(x) (x)\n#else\n#define PICK(x) (-(x))\n#endif\n"
                          "#define SAME(x) x\n#define SAME(x) x\n",
                          &defs);
  ASSERT_EQ(defs.count("TWICE"), 1u);
  EXPECT_EQ(defs.count("PLAIN"), 0u);
  EXPECT_EQ(defs["TWICE"].find("doubled"), std::string::npos) << defs["TWICE"];
  EXPECT_EQ(defs["TWICE"].find("note"), std::string::npos) << defs["TWICE"];
  EXPECT_NE(defs["TWICE"].find("((x) * 2)"), std::string::npos) << defs["TWICE"];
  EXPECT_NE(defs["JOIN"].find("a##b"), std::string::npos) << defs["JOIN"];
  EXPECT_EQ(defs["PICK"], "");
  EXPECT_NE(defs["SAME"], "");
}

TEST(HostCode, ACallOfAProjectsMacroWhoseExpansionDefinesHostFunctionsGoes) {
  // As Apex's group norm: the .cu calls one macro, which reaches host launchers through more
  // levels of another header's macros, the function's name pasted from the arguments.
  const std::string macros =
      "#define RUN_NAME(T, P) void run_##P##_##T(const int& params, cudaStream_t stream)\n"
      "#define RUN_FUNCTION(T, P) \\\n  RUN_NAME(T, P) { \\\n    auto kernel = k<T>; /* the kernel */ \\\n"
      "    CHECK(cudaLaunchKernel((const void*)kernel, dim3(1), dim3(32), nullptr, 0, stream)); \\\n  }\n"
      "#define EACH(FUNCTION, P) FUNCTION(float, P); FUNCTION(double, P);\n"
      "#define DEFINITION(P) EACH(RUN_FUNCTION, P)\n"
      "#define KERNEL(N) __global__ void kern_##N(int* p) { p[0] = N; }\n";
  const std::string text = "#include \"macros.h\"\ntemplate <typename T> __global__ void k(T* p) { p[0] = T(1); }\n"
                           "DEFINITION(/* pass */ fwd)\nKERNEL(3)\n";
  ProjectReading project;
  defined_function_macros(macros, &project.function_like);
  int n = 0;
  expect_parts(skip_host_functions(text, &n, project), {"DEFINITION("}, {"__global__ void k(T* p)", "KERNEL(3)"});
  // Without the header's macros the call is not known, and stays.
  expect_parts(skipped(text, &n), {}, {"DEFINITION("});
  // The text's own macros expand too, the text's definitions over the project's.
  expect_parts(skipped(macros + text, &n), {"DEFINITION(/*", "DEFINITION(fwd"}, {"KERNEL(3)"});
  ProjectReading other = project;
  other.function_like["RUN_NAME"] = "(T, P) __device__ void run_##P##_##T(const int& params)";
  expect_parts(skip_host_functions(text, &n, other), {}, {"DEFINITION("});
}

TEST(HostCode, AVariablesHostSpaceThroughAKnownMacroGoesAsAWrittenOneDoes) {
  // vLLM's fp8/common.cuh: `C10_HOST_DEVICE constexpr auto FP8_E4M3_MAX = ...;`, nvcc ignoring the
  // __host__ of a variable, NVRTC refusing it; a function's stays.
  const std::string text = "C10_HOST_DEVICE constexpr float kMax = 448.f;\nC10_HOST constexpr int kN = 4;\n"
                           "template <typename T>\nMAYBE_HOST_DEVICE static constexpr T kMaxOf = T(1);\n"
                           "C10_HOST_DEVICE inline float twice(float x) { return 2.f * x; }\n";
  int n = 0;
  ProjectReading project;
  project.known = {{"C10_HOST_DEVICE", "__host__ __device__"}, {"C10_HOST", "__host__"}, {"MAYBE_HOST_DEVICE", "C10_HOST_DEVICE"}};
  const std::string out = skip_host_functions(text, &n, project);
  expect_parts(out, {"C10_HOST_DEVICE constexpr float", "C10_HOST constexpr int"},
               {"__device__      constexpr float kMax = 448.f;", "constexpr int kN = 4;", "C10_HOST_DEVICE inline float twice",
                "__device__        static constexpr T kMaxOf"});
  // Unknown, the macro stays: it may be no execution space.
  expect_parts(skipped(text, &n), {}, {"C10_HOST_DEVICE constexpr float kMax"});
}

// A data member's default initializer that builds a class whose constructors skip blanked (here,
// or in the project's other files: instant-ngp's testbed.h builds common_host.h's `Ema<float>` from
// a braced list, adam_optimizer.h's AdamOptimizer from a float, a fs::path from "") or calls a
// host function of another file (`tcnn::supports_jit_fusion()`) goes; the member stays. A class
// with a constructor that stays (a device one, constexpr, `= default`) is built on the device too:
// its initializers stay, and so do a pointer's, a smart pointer's to such a class, and one of a
// member named as a host function is (Transformer Engine's `int sm_count = 0;`).
TEST(HostCode, AMembersInitializerThatRunsHostConstructorsGoes) {
  const std::string text =
      "class Opt {\n public:\n  Opt(float lr) : lr_(lr) {}\n  float lr_;\n};\n"
      "class Dev {\n public:\n  __host__ __device__ Dev(float v) : v_(v) {}\n  Dev(const char* s) : v_(0.f) {}\n  float v_;\n};\n"
      "class Lit {\n public:\n  constexpr Lit(int v) : v_(v) {}\n  Lit(const char* s);\n  int v_;\n};\n"
      "class Def {\n public:\n  Def() = default;\n  Def(const char* s);\n  int* p;\n};\n"
      "class Holder {\n  Opt a = Opt(0.5f);\n  Opt b = {1.5f};\n  Opt c{2.5f};\n  Opt* p = nullptr;\n  Dev d = Dev(3.5f);\n"
      "  Lit l = Lit(4);\n  Def e = {};\n  Ema<float> ms = {EmaType::Time, 100};\n  bool fused = tcnn::supports_jit_fusion();\n"
      "  int n = 7;\n  int sm_count = 0;\n  std::shared_ptr<Opt> shared = nullptr;\n};\n";
  int n = 0;
  ProjectReading project;
  project.elsewhere = {"Ema::Ema", "supports_jit_fusion", "sm_count"};
  const std::string out = skip_host_functions(text, &n, project);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  expect_parts(out, {"= Opt(0.5f)", "= {1.5f}", "{2.5f}", "= {EmaType::Time, 100}", "= tcnn::supports_jit_fusion()"},
               {"  Opt a ", "  Opt b ", "  Opt c", "  Opt* p = nullptr;", "  Dev d = Dev(3.5f);", "  Lit l = Lit(4);", "  Def e = {};",
                "  Ema<float> ms ", "  bool fused ", "  int n = 7;", "  int sm_count = 0;", "  std::shared_ptr<Opt> shared = nullptr;"});
  // Without the project's other files, their classes and functions are not known: those stay.
  expect_parts(skipped(text, &n), {"= Opt(0.5f)"}, {"= {EmaType::Time, 100}", "= tcnn::supports_jit_fusion()"});
}

// Where the braces balance over no reading but the first branches (a definition's head in each
// branch of an #if on a project's macro), a group whose every branch balances on its own is read
// whole: a function defined once a branch goes whichever NVRTC compiles (tinyexr's miniz,
// `tdefl_compress_lz_codes` once for unaligned loads, once not).
TEST(HostCode, AGroupWhoseBranchesEachBalanceIsReadWholeAmongFirstBranches) {
  const std::string text = "#if USE_WIDE\nstatic int start(int argc, wchar_t** argv) {\n#else\nstatic int start(int argc, char** argv) {\n#endif\n"
                           "  return argc;\n}\n"
                           "#if FAST_PATH\nstatic int pick() { return 11; }\n#else\nstatic int pick() { return 22; }\n#endif\n"
                           "__global__ void k(int* y) { y[0] = 33; }\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"return argc", "return 11", "return 22"}, {"__global__ void k(int* y) { y[0] = 33; }", "#else"});
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
}

// The text's own types named in ALL_CAPS (tinyexr's `union FP32`, a typedef's UINT) are no
// header's macros: a host function that returns one goes. An ALL_CAPS word the text does not
// declare may be an execution space: that function stays.
TEST(HostCode, TheTextsOwnAllCapsTypesAreNoMacros) {
  const std::string text = "union FP32 { unsigned int u; float f; };\nstruct RGB : Base { float r, g, b; };\nenum class MODE { A, B };\n"
                           "typedef unsigned int UINT;\nusing HALF = unsigned short;\n"
                           "static FP32 to_fp32(unsigned int u) { FP32 x; x.u = u; return x; }\n"
                           "static RGB grey(float v) { return RGB{v, v, v}; }\n"
                           "static MODE first() { return MODE::A; }\n"
                           "static UINT twice(UINT x) { return 2 * x; }\n"
                           "static HALF zero() { return 0; }\n"
                           "static SPACE_MACRO int kept() { return 1; }\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"to_fp32", "grey", "first()", "twice", "zero()"}, {"union FP32 { unsigned int u; float f; };", "static SPACE_MACRO int kept() { return 1; }"});
}

// Data at namespace scope that holds a lambda with no execution space is host data: NVRTC infers
// the closure's space to be the host's and refuses it (instant-ngp's `static const
// stbi_io_callbacks istream_stbi_callbacks = { [](void* context, ...) {...}, ... };`). A device
// variable's lambda (its own `__device__` goes, as any lambda's execution space in code that
// stays), a constexpr one (the retry with -default-device serves device code that calls it), an
// attribute and an array's subscript are no such data.
TEST(HostCode, DataHoldingAHostLambdaGoes) {
  const std::string text = "static const callbacks io = {\n  [](void* c, char* d, int n) { return read(c, d, n); },\n"
                           "  [](void* c) mutable { seek(c); },\n};\n"
                           "auto on_exit = [] { cleanup(); };\n"
                           "__device__ auto dev = [] __device__ (int x) { return x + 1; };\n"
                           "constexpr auto twice = [](int x) { return 2 * x; };\n"
                           "[[maybe_unused]] static const int kSlots[2] = {1, 2};\n"
                           "static const int kFirst = kSlots[0];\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  expect_parts(out, {"callbacks io", "return read", "seek(c)", "on_exit", "cleanup"},
               {"__device__ auto dev = []            (int x) { return x + 1; };", "constexpr auto twice = [](int x) { return 2 * x; };",
                "[[maybe_unused]] static const int kSlots[2] = {1, 2};", "static const int kFirst = kSlots[0];"});
}

// The language's own words read in an unevaluated operand name no function: after a
// `decltype(void(...))`, tiny-cuda-nn's `std::function<void(LogSeverity, const std::string&)>
// g_log_callback = [](...) {...};` is a host variable, which goes, not a declaration of `void`
// read in decltype, which would stay given `__host__ __device__`.
TEST(HostCode, KeywordsReadInDecltypeNameNoFunction) {
  const std::string text = "template <class T> using void_t_of = decltype(void(sizeof(T)), int());\n"
                           "std::function<void(int, const std::string&)> g_log_callback = [](int severity, const std::string& msg) {\n"
                           "  report(severity, msg);\n};\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"g_log_callback", "report(", "__host__"}, {"using void_t_of = decltype(void(sizeof(T)), int());"});
  ProjectReading project;
  project.unevaluated = names_of(text).unevaluated;
  EXPECT_EQ(project.unevaluated.count("void"), 0u);
  EXPECT_EQ(project.unevaluated.count("int"), 0u);
  EXPECT_EQ(project.unevaluated.count("T"), 1u) << "a name of the program's own stays";
  expect_parts(skip_host_functions(text, &n, project), {"g_log_callback", "__host__"}, {});
}

// A header that defines CUDA's execution spaces away for its host-only compilers (faiss's
// StaticUtils.h: `#ifndef __host__ #define __host__ #define __device__ #endif`) changes nothing
// under NVRTC, which defines them: read as nothing, they made every `__host__ __device__`
// function after them a host one, blanked (Tensor::getSize, called by faiss's kernels). Nor does
// a definition in a branch the reading cannot decide make them macros of the project.
TEST(HostCode, ExecutionSpacesAHeaderDefinesAwayStayNvrtcs) {
  const std::string guard = "#ifndef __host__\n#define __host__\n#define __device__\n#endif\n";
  const std::string undecided = "#if HOST_ONLY_BUILD\n#define __host__\n#define __device__\n#endif\n";
  const std::string rest = "struct Tensor {\n  __host__ __device__ inline int getSize(int i) const { return size_[i]; }\n  int size_[4];\n};\n"
                           "__host__ __device__ constexpr int divUp(int a, int b) { return (a + b - 1) / b; }\n"
                           "inline int host_only(int a) { return a; }\n";
  for (const std::string& head : {guard, undecided}) {
    int n = 0;
    const std::string out = skipped(head + rest, &n);
    expect_parts(out, {"host_only"}, {"__host__ __device__ inline int getSize(int i) const { return size_[i]; }",
                                      "__host__ __device__ constexpr int divUp(int a, int b)"});
    std::map<std::string, std::string> known;
    defined_macros(head, &known);
    EXPECT_EQ(known.count("__host__"), 0u) << head;
    EXPECT_EQ(known.count("__device__"), 0u) << head;
    ProjectReading project;
    project.known = known;
    expect_parts(skip_host_functions(rest, &n, project), {"host_only"}, {"inline int getSize(int i) const"});
  }
}

// A parameter whose type is a template's (`DeviceTensor<T, Dim>&& t`) makes a declaration a
// function's: faiss's `__host__` move constructor and move assignment were read as variables
// built by a constructor, their `__host__` taken away as a variable's, and NVRTC refused the
// host functions that were left. A const object built from a comparison stays.
TEST(HostCode, AParameterOfATemplatesTypeMakesAFunctionsDeclaration) {
  const std::string text = "template <typename T, int Dim>\nclass DeviceTensor : public Tensor<T, Dim> {\n public:\n"
                           "  __host__ DeviceTensor();\n  __host__ DeviceTensor(DeviceTensor<T, Dim>&& t);\n"
                           "  __host__ DeviceTensor<T, Dim>& operator=(DeviceTensor<T, Dim>&& t);\n"
                           "  __host__ int copyFrom(const std::vector<T>& v, cudaStream_t s);\n"
                           "  __host__ __device__ int dims() const { return Dim; }\n};\n"
                           "const Limit kBelow(kLow < kHigh, kHigh > kLow);\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"DeviceTensor();", "DeviceTensor<T, Dim>&& t", "copyFrom"},
               {"__host__ __device__ int dims() const { return Dim; }", "const Limit kBelow(kLow < kHigh, kHigh > kLow);"});
}

// A macro of the text before a template's parameter list (faiss's
// `FAISS_PRAGMA_IMPRECISE_FUNCTION_BEGIN`, a _Pragma, on the line before `template <bool
// AllActive = false, size_t LevelWidth = 0>`) is read past: the defaults' '=' made the host
// function template data, and the reading of the rest of the file was lost with it.
TEST(HostCode, AMacroBeforeATemplatesParameterListIsReadPast) {
  const std::string text = "#define IMPRECISE_BEGIN _Pragma(\"GCC push_options\")\n#define IMPRECISE_END _Pragma(\"GCC pop_options\")\n"
                           "IMPRECISE_BEGIN\ntemplate <bool AllActive = false, int Width = 0>\n"
                           "static inline void level_dot(const float* q, float* out) { out[0] = q[0]; }\nIMPRECISE_END\n"
                           "static inline void after(const float* q) { (void)q; }\n"
                           "template <int N = 4>\n__global__ void k(float* y) { y[0] = N; }\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  expect_parts(out, {"level_dot", "out[0] = q[0]", "after("}, {"__global__ void k(float* y) { y[0] = N; }", "#define IMPRECISE_BEGIN"});
}

// The variables a class is defined with at namespace scope are the host's (NVIDIA Warp's cuBQL:
// `static struct ZeroTy { __both__ operator float() const {...} } zero MAYBE_UNUSED;`): they go,
// with the `static` that would be left with no object, and the class stays. A typedef's name, an
// attribute of the class (`} PACKED;`), a const object and a device variable stay.
TEST(HostCode, VariablesDefinedWithTheirClassGo) {
  const std::string text = "#define MAYBE_UNUSED __attribute__((unused))\n#define PACKED __attribute__((packed))\n"
                           "#define BOTH __host__ __device__\n"
                           "static struct ZeroTy {\n  BOTH operator float() const { return 0; }\n} zero MAYBE_UNUSED;\n"
                           "struct Two { int a; } two, *two_p;\n"
                           "struct Packed { int a; } PACKED;\nstruct Attr { int a; } __attribute__((aligned(16)));\n"
                           "typedef struct { int a; } Alias;\nconst struct Lit { int a; } lit = {1};\n"
                           "__device__ struct Dev { int a; } dev;\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  expect_parts(out, {"static struct", "zero MAYBE_UNUSED", "two, *two_p"},
               {"struct ZeroTy {", "BOTH operator float() const { return 0; }", "struct Two { int a; }", "struct Packed { int a; } PACKED;",
                "struct Attr { int a; } __attribute__((aligned(16)));", "typedef struct { int a; } Alias;",
                "const struct Lit { int a; } lit = {1};", "__device__ struct Dev { int a; } dev;"});
}

// Explicit instantiations of host function templates written inside namespaces in a macro
// (cuBQL's CUBQL_INSTANTIATE_BINARY_BVH(T,D): `namespace cuBQL { namespace cuda { template void
// sahBuilder<T,D>(...); } }`) go with their templates, as those written outside any do.
TEST(HostCode, InstantiationsInsideNamespacesOfAMacroGoWithTheirTemplates) {
  const std::string text = "namespace lib { namespace cuda {\ntemplate <typename T, int D> void build(T* boxes, int n) { launch(boxes, n); }\n} }\n"
                           "#define INSTANTIATE(T, D) \\\n  namespace lib { \\\n  namespace cuda { \\\n"
                           "    template void build<T, D>(T* boxes, int n); \\\n  } \\\n  }\n"
                           "INSTANTIATE(float, 3)\nINSTANTIATE(double, 2)\n"
                           "__global__ void k(float* y) { y[0] = 1.f; }\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"launch(boxes, n)", "INSTANTIATE(float, 3)", "INSTANTIATE(double, 2)"},
               {"#define INSTANTIATE(T, D)", "__global__ void k(float* y) { y[0] = 1.f; }"});
}

// The macros the compile defines (a spec's `defines`, its options' -D) are read as NVRTC will
// read them: HOOMD-blue wraps whole headers in `#ifdef ENABLE_HIP`, a name the reading otherwise
// takes for another GPU maker's flag that a CUDA build never sets, so that nothing in them was
// read and their host code stayed. An #undef in the text ends one.
TEST(HostCode, TheCompilesOwnDefinesDecideItsGroups) {
  const std::string text = "#ifdef ENABLE_HIP\nclass Partition {\n public:\n  Partition() : n(0) { }\n  void set(int k) { n = k; }\n  int n;\n};\n"
                           "inline int host_only(int a) { return a; }\n#else\nstatic int other_branch() { return 1; }\n#endif\n"
                           "#if HOOMD_LONGREAL_SIZE == 64\ninline double wide() { return 1.0; }\n#endif\n"
                           "#undef ENABLE_HIP\n#ifdef ENABLE_HIP\ninline int after_undef() { return 2; }\n#endif\n";
  int n = 0;
  ProjectReading project;
  project.defined = {{"ENABLE_HIP", ""}, {"HOOMD_LONGREAL_SIZE", "64"}};
  const std::string out = skip_host_functions(text, &n, project);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  expect_parts(out, {"Partition() : n(0) { }", "void set(int k)", "host_only", "wide()"},
               {"class Partition {", "int n;", "static int other_branch() { return 1; }", "inline int after_undef() { return 2; }"});
  // Without them, the group is another maker's, never compiled: nothing in it is read.
  expect_parts(skipped(text, &n), {}, {"Partition() : n(0) { }", "inline int host_only(int a) { return a; }"});
}

// A type another of the project's files declares (AMGX's `enum AMGX_ERROR`, in error.h) is no
// unknown ALL_CAPS macro before a declaration's name, as the text's own types are not: the host
// member `AMGX_ERROR parseFile(const char* filename);` goes. Unknown to the reading, it stays.
TEST(HostCode, TheProjectsAllCapsTypesAreNoMacros) {
  const std::string text = "class Config {\n public:\n  Config();\n  APP_ERROR parseFile(const char* filename);\n"
                           "  __host__ __device__ APP_ERROR check() const { return APP_ERROR(0); }\n};\n"
                           "static APP_ERROR report(APP_ERROR e) { return e; }\n";
  int n = 0;
  ProjectReading project;
  project.types = names_of("enum APP_ERROR { APP_OK, APP_BAD };\ntypedef struct { int n; } APP_HANDLE;\n").types;
  EXPECT_EQ(project.types, (std::set<std::string>{"APP_ERROR", "APP_HANDLE"}));
  expect_parts(skip_host_functions(text, &n, project), {"parseFile", "report("},
               {"__host__ __device__ APP_ERROR check() const { return APP_ERROR(0); }", "class Config {"});
  expect_parts(skipped(text, &n), {}, {"APP_ERROR parseFile(const char* filename);", "static APP_ERROR report(APP_ERROR e) { return e; }"});
}

// A host variable of function pointer type (`static void (*handler)(int) = nullptr;`) goes, and
// names no function `void`: a data member whose initializer reads `void` (dmlc-core's `any`:
// `static const size_t kStack = sizeof(void *) * 3;`, a template argument below it) kept its
// initializer only while `void` was no blanked function's name.
TEST(HostCode, AFunctionPointerVariableNamesNoFunctionVoid) {
  const std::string text = "static void (*handler)(int) = nullptr;\n"
                           "class any {\n  static const unsigned long kStack = sizeof(void *) * 3;\n"
                           "  union Data { typename aligned<kStack>::type stack; void* heap; };\n};\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"handler"}, {"static const unsigned long kStack = sizeof(void *) * 3;", "union Data {"});
}

// `override` and `final` make a member function virtual as `virtual` does: a defaulted one is
// the host's (its vtable is) and goes with its base's (xgboost's `~JsonObject() override =
// default;` after `virtual ~Value() = default;`, which NVRTC then refused as overriding nothing).
TEST(HostCode, AnOverridingDefaultedFunctionGoesAsAVirtualOneDoes) {
  const std::string text = "struct Value {\n  virtual ~Value() = default;\n  Value() = default;\n  int kind;\n};\n"
                           "struct Object : Value {\n  ~Object() override = default;\n  Object() = default;\n"
                           "  Object& operator=(const Object&) = default;\n};\n"
                           "struct Last final : Value {\n  ~Last() final = default;\n};\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  expect_parts(out, {"virtual ~Value()", "~Object() override", "~Last() final"},
               {"Value() = default;", "Object() = default;", "Object& operator=(const Object&) = default;", "struct Last final : Value {"});
}

// A class whose member functions all go as host code is the host's: read for a compile
// (ProjectReading::mark_host_data), its non-static data members are marked, so that the compile
// can leave out one whose type NVRTC refuses (drop_refused_host_data). Not those of a class with a
// member that stays (a device one, a constexpr one given both spaces), nor static members, nor
// anything without the reading asking.
TEST(HostCode, AHostClassesDataMembersAreMarkedForTheCompile) {
  const std::string text = "template <class T> class Alloc {\n public:\n  struct deleter { void operator()(T* p) const; };\n"
                           "  unsigned long capacity;\n  platform::unique_ptr<T, deleter>\n      smart_ptr;\n  static int count;\n"
                           "  static const int kBytes = 4;\n  using type = T;\n  Alloc() : capacity(0) {}\n  T* get() const { return nullptr; }\n};\n"
                           "struct Mixed {\n  float* p;\n  Mixed() {}\n  __device__ float at(int i) const { return p[i]; }\n};\n"
                           "struct Sized {\n  int n;\n  constexpr int size() const { return n; }\n  void print() const;\n};\n"
                           "struct Plain {\n  int a;\n};\n";
  int n = 0;
  ProjectReading project;
  project.mark_host_data = true;
  const std::string out = skip_host_functions(text, &n, project);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n')) << "lines kept";
  const std::string b = kHostDataBegin, e = kHostDataEnd;
  expect_parts(out, {"T* get()"},
               {(b + "unsigned long capacity;" + e).c_str(), (b + "platform::unique_ptr<T, deleter>\n      smart_ptr;" + e).c_str(),
                "  float* p;\n", "  int n;\n", "  int a;\n", "static const int kBytes = 4;", "using type = T;"});
  // Two marks for each of Alloc's members and none elsewhere: not `static int count;` (a host
  // variable, blanked), the constant, the alias, the nested class or the other classes' data.
  size_t marks = 0;
  for (size_t at = out.find(b); at != std::string::npos; at = out.find(b, at + 1)) ++marks;
  EXPECT_EQ(marks, 2u) << out;
  EXPECT_EQ(skipped(text, &n).find(b), std::string::npos) << "marked without mark_host_data";
}

// A using-declaration of a host function is read by its qualified name where the unqualified one
// is a device function's too: xgboost's `using xgboost::common::MakeIndexTransformIter;` (a host
// template) goes though `dh::MakeIndexTransformIter` is a device one, and `using
// dh::MakeIndexTransformIter;` stays; so in another file through the project's qualified names.
// A class template's deduction guide is no host function: it stays, and a using-declaration of
// the class with it.
TEST(HostCode, AUsingDeclarationIsReadByItsQualifiedName) {
  const std::string text = "namespace xgboost::common {\ntemplate <class Fn> auto MakeIter(Fn&& fn) { return fn(0); }\n"
                           "template <class T> class Span { T* p; };\ntemplate <class T> Span(T*) -> Span<T>;\n}\n"
                           "namespace dh {\ntemplate <class Fn> __device__ auto MakeIter(Fn fn) { return fn(0); }\n}\n"
                           "namespace enc {\nusing xgboost::common::MakeIter;\nusing dh::MakeIter;\nusing xgboost::common::Span;\n}\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"auto MakeIter(Fn&& fn)", "using xgboost::common::MakeIter;"},
               {"using dh::MakeIter;", "using xgboost::common::Span;", "template <class T> Span(T*) -> Span<T>;", "__device__ auto MakeIter(Fn fn)"});
  // In another of the project's files: the qualified name of the host template, not of the device one.
  ProjectReading project;
  project.elsewhere = {"xgboost::common::MakeIter"};
  const std::string other = "namespace xgboost {\nusing common::MakeIter;\n}\nusing dh::MakeIter;\n";
  expect_parts(skip_host_functions(other, &n, project), {"using common::MakeIter;"}, {"using dh::MakeIter;"});
}

// A virtual member (`override`) read in an unevaluated operand goes with its base's, not given
// __host__ __device__: xgboost's `MetaInfo& Info() override;`, read in a decltype elsewhere, then
// overrode nothing (NVRTC's "does not override a base class member").
TEST(HostCode, AnOverridingMemberReadUnevaluatedGoesWithItsBase) {
  const std::string text = "struct Info {};\nclass Base {\n public:\n  virtual Info& Get() = 0;\n};\n"
                           "class Derived : public Base {\n public:\n  Info& Get() override;\n  int tag() const;\n};\n"
                           "using GetT = decltype(static_cast<Derived*>(nullptr)->Get());\n"
                           "using TagT = decltype(static_cast<Derived*>(nullptr)->tag());\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"virtual Info& Get() = 0;", "Info& Get() override;"}, {"__host__ __device__ int tag() const;", "using GetT = decltype("});
}

// A function-like macro whose replacement defines a class inside namespaces it opens (xgboost's
// DECLARE_FIELD_ENUM_CLASS(E): `namespace dmlc { namespace parameter { template <> class
// FieldEntry<E> : public FieldEntry<int> {...}; } /* namespace parameter */ }`, called at
// namespace scope): its host members are blanked in the #define too. One that writes more after
// the class than the namespaces' closings stays as it is.
TEST(HostCode, AMacroDefiningAClassInNamespacesLosesItsHostMembers) {
  const std::string text =
      "namespace lib { namespace param { template <class T> class Entry { public: virtual void Set(int v) const {} }; } }\n"
      "#define DECLARE_ENTRY(E) \\\n  namespace lib { \\\n  namespace param { \\\n  template <> \\\n"
      "  class Entry<E> : public Entry<int> { \\\n   public: \\\n    void Set(int v) const override { Entry<int>::Set(v); } \\\n"
      "  }; \\\n  } /* namespace param */ \\\n  } /* namespace lib */\n"
      "#define DECLARE_MORE(E) namespace lib { template <> class Entry<E> { public: void Set(int v) const {} }; } int E##_count = 0;\n"
      "enum class Mode { kA };\nDECLARE_ENTRY(Mode)\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"void Set(int v) const override"},
               {"  class Entry<E> : public Entry<int> { \\\n", "  } /* namespace param */ \\\n",
                "#define DECLARE_MORE(E) namespace lib { template <> class Entry<E> { public: void Set(int v) const {} }; } int E##_count = 0;\n",
                "DECLARE_ENTRY(Mode)\n"});
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n'));
}

// A lambda's execution space in code that stays (xgboost's `[=] XGBOOST_DEVICE(uint64_t i) {...}`
// in a __host__ __device__ function): nvcc takes it with --extended-lambda, NVRTC refuses any, and
// a lambda without one takes the space of the function around it. The words go, written out or
// through a macro of the text's that means only execution spaces; another macro stays.
TEST(HostCode, ALambdasExecutionSpaceGoesInCodeThatStays) {
  const std::string text = "#define LIB_DEVICE __host__ __device__\n#define ALIGNED __align__(8)\n"
                           "__host__ __device__ int f(int k) {\n  auto a = [=] LIB_DEVICE(int i) { return i + k; };\n"
                           "  auto b = [&] __device__ (int i) { return i * k; };\n  int arr[2] = {1, 2};\n"
                           "  auto c = [=](int i) { return arr[i] + k; };\n  return a(1) + b(2) + c(0);\n}\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  expect_parts(out, {"[=] LIB_DEVICE(", "[&] __device__ ("}, {"auto a = [=]           (int i)", "auto b = [&]            (int i)", "auto c = [=](int i)",
                                                          "__host__ __device__ int f(int k) {"});
  EXPECT_EQ(out.size(), text.size()) << "columns kept";
}

// A template parameter's default with a comparison inside parentheses (FlashInfer's prefill.cuh:
// `bool = kOpt && (HEAD_DIM / 16 > 16) && ((HEAD_DIM / 16) % NUM_WARPS == 0)>` before `struct
// VOSplitSmem {};`): the '>' inside them closes no list. Read as closing it, the list ended early,
// the primary template went, and its partial specialization after it failed to compile.
TEST(HostCode, AComparisonInAParenthesizedDefaultClosesNoTemplateList) {
  const std::string text =
      "template <unsigned A, bool E,\n"
      "          bool = E && (A / 16 > 16) &&\n"
      "                 ((A / 16) % 4 == 0)>\n"
      "struct Smem {};\n"
      "template <unsigned A, bool E>\n"
      "struct Smem<A, E, true> { float p[A]; };\n"
      "template <class T, class = decltype(sizeof(T) > 4), int N = (sizeof(T) < 8 ? 1 : 2)>\n"
      "__device__ int width(T) { return N; }\n"
      "void host_fn() {}\n";
  int n = 0;
  const std::string out = skipped(text, &n);
  EXPECT_EQ(n, 1) << out;
  expect_parts(out, {"host_fn"}, {"struct Smem {};", "struct Smem<A, E, true>", "__device__ int width(T)"});
}
