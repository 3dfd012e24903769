// User kernel specs without a GPU: the examples load, count and compile; expressions follow
// Kernel Tuner's (Python) rules; every malformed spec is refused with its field named; a changed
// source is another op; a spec's arguments pack in its order and types; fills are as declared.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <set>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "core/expr.h"
#include "core/host_code.h"
#include "core/kernel_spec.h"
#include "core/nvrtc_std.h"
#include "ktune/compiler.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "ktune/kernel_spec.h"
#include "runtime/buffers_launch.h"
#include "test_paths.h"
#include "tma_spec.h"
#include "toolkit_headers_spec.h"
#include "project_spec.h"
#include "using_std_spec.h"
#include "thrust_seq_spec.h"
#include "torch_extension_spec.h"
#include "tuner/json_io.h"
#include "tuner/spec_op.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

std::string example(const std::string& name) {
  return std::string(KTUNE_SOURCE_DIR) + "/examples/kernels/" + name + "/" + name + ".json";
}

// Compiles op at a config and problem for sm_90, which must fail: the CompileError (its what() is
// ktune's message, then the compiler's log). A compile that succeeds fails the test, saying what
// compiled (`compiled`), and gives nothing to read.
std::optional<CompileError> compile_failure(Compiler& compiler, const std::string& op, const Config& config,
                                            const Problem& problem, const std::string& compiled) {
  try {
    compiler.compile(compile_request(find_family(op), config, problem, "sm_90"));
    ADD_FAILURE() << compiled;
  } catch (const CompileError& e) {
    return e;
  }
  return std::nullopt;
}

struct Example {
  const char* name;
  const char* shape;
  DType dtype;
};
const Example kExamples[] = {{"transpose", "1000x3000", DType::f32},
                             {"reduction", "1000003", DType::f32},
                             {"conv2d", "1024x1000", DType::f32},
                             {"bias_gelu", "777x4096", DType::bf16},
                             {"l2norm", "1000003", DType::f32},
                             {"jacobi", "1000x700x5", DType::f32}};

TEST(KernelSpec, ExamplesLoadAndTheirDefaultsCompileWithNvrtc) {
  Compiler compiler(2);
  for (const auto& e : kExamples) {
    SCOPED_TRACE(e.name);
    const std::string op = load_kernel_spec(example(e.name));
    EXPECT_EQ(op.substr(0, op.find('@')), e.name);
    EXPECT_EQ(op.size(), std::string(e.name).size() + 9) << "name@ and 8 hex digits of the version";
    EXPECT_EQ(load_kernel_spec(example(e.name)), op) << "an unchanged spec loads as the same op";
    EXPECT_EQ(spec_base_name(op), e.name);
    const Family f = find_family(op);
    const Problem p = Problem::parse(op, e.shape, "", e.dtype);
    const DeviceInfo d = DeviceInfo::nominal("sm_90");
    EXPECT_GT(f.count(p, d), 10u);
    const Config c = f.default_config(p, d);
    EXPECT_TRUE(f.valid(c, p, d)) << c.to_json();
    const auto k = compiler.compile(compile_request(f, c, p, "sm_90"));
    EXPECT_FALSE(k->cubin.empty());
    const KernelSpec& s = spec_of(op);
    EXPECT_EQ(k->lowered_names.size(), s.steps.size()) << "a kernel a step (a loop's step launches it each round)";
    // The reference compiles too, with its own config's defines.
    ASSERT_TRUE(s.check);
    CompileRequest ref;
    ref.source = s.source, ref.source_name = s.source_name, ref.arch = "sm_90", ref.context = "reference";
    ref.name_expressions = s.kernel_names(s.reference_steps, s.reference_config, p);
    ref.options = s.compile_options(s.reference_config, p);
    EXPECT_FALSE(compiler.compile(ref)->cubin.empty());
    // So does a baseline, where the example has one (the transpose: its naive kernel).
    EXPECT_EQ(op_info(op).baseline, s.has_baseline ? "baseline" : "");
    if (s.has_baseline) {
      CompileRequest base = ref;
      base.name_expressions = s.kernel_names(s.baseline_steps, s.baseline_config, p);
      base.options = s.compile_options(s.baseline_config, p);
      EXPECT_FALSE(compiler.compile(base)->cubin.empty());
    }
  }
  EXPECT_TRUE(spec_of(load_kernel_spec(example("transpose"))).has_baseline);
}

// A quoted #include finds a header beside the source that includes it, as under nvcc, without
// include_dirs: the source sits in its own folder, apart from the spec.
TEST(KernelSpec, ASourceIncludesTheHeaderBesideIt) {
  const fs::path dir = fs::temp_directory_path() / ("ktune_spec_beside_" + std::to_string(::getpid()));
  fs::create_directories(dir / "src");
  std::ofstream(dir / "src" / "scale.h") << "#define SCALE_BY 2.0f\n";
  std::ofstream(dir / "src" / "scale.cu") << "#include \"scale.h\"\n"
                                             "__global__ void scale(const float* x, float* y, int n) {\n"
                                             "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = SCALE_BY * x[i]; }\n";
  std::ofstream(dir / "scale.json") << R"json({"ktune_kernel_spec": 1, "name": "beside", "sources": ["src/scale.cu"],
    "kernel": "scale", "dims": ["n"], "params": {"B": [64, 128]},
    "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
             {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"none": "compiled only"}})json";
  const std::string op = load_kernel_spec((dir / "scale.json").string());
  const Family f = find_family(op);
  const Problem p = Problem::parse(op, "1000", "", DType::f32);
  Compiler compiler(1);
  EXPECT_FALSE(compiler.compile(compile_request(f, f.default_config(p, DeviceInfo::nominal("sm_90")), p, "sm_90"))->cubin.empty());
  fs::remove_all(dir);
}

// Under params_as "defines" a parameter the compiled text never names (a block size only the
// launch reads) reaches no -D, so configs that differ only in it share one compile; one named in
// a header the source includes (quoted or angled) does; a header included through a macro leaves
// every parameter a -D.
TEST(KernelSpec, AParameterTheSourceNeverReadsCompilesOnce) {
  const fs::path dir = fs::temp_directory_path() / ("ktune_spec_unread_" + std::to_string(::getpid()));
  fs::create_directories(dir / "inc");
  std::ofstream(dir / "tile.h") << "#define TILE_ROWS (TILE * 2)\n";
  std::ofstream(dir / "inc" / "unroll.h") << "#pragma unroll UNROLL\n";
  std::ofstream(dir / "k.cu") << "#include \"tile.h\"\n#include <unroll.h>\n"
                                 "__global__ void k(const float* x, float* y, int n) {  // BLOCKY in a comment\n"
                                 "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = TILE_ROWS * x[i]; }\n";
  const std::string spec = R"json({"ktune_kernel_spec": 1, "name": "unread", "sources": ["k.cu"], "include_dirs": ["inc"],
    "kernel": "k", "dims": ["n"], "params": {"BLOCK": [64, 128], "TILE": [1, 2], "UNROLL": [1], "BLOCKY": [1]},
    "launch": {"grid": ["ceil_div(n, BLOCK)"], "block": ["BLOCK"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
             {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"none": "compiled only"}})json";
  const std::string op = load_kernel_spec_text(spec, "unread.json", dir.string());
  const KernelSpec& s = spec_of(op);
  const Problem p = Problem::parse(op, "1000", "", DType::f32);
  const auto o = s.compile_options(Config{{"BLOCK", 64}, {"TILE", 2}, {"UNROLL", 1}, {"BLOCKY", 1}}, p);
  auto has = [&](const std::string& x) { return std::find(o.begin(), o.end(), x) != o.end(); };
  EXPECT_FALSE(has("-DBLOCK=64")) << "the launch reads BLOCK, the source does not";
  EXPECT_TRUE(has("-DTILE=2")) << "tile.h reads it";
  EXPECT_TRUE(has("-DUNROLL=1")) << "an angled include from include_dirs reads it";
  EXPECT_TRUE(has("-DBLOCKY=1")) << "named in a comment: kept, as any occurrence";
  const Family f = find_family(op);
  EXPECT_EQ(compile_request(f, Config{{"BLOCK", 64}, {"TILE", 2}, {"UNROLL", 1}, {"BLOCKY", 1}}, p, "sm_90").cache_key(),
            compile_request(f, Config{{"BLOCK", 128}, {"TILE", 2}, {"UNROLL", 1}, {"BLOCKY", 1}}, p, "sm_90").cache_key())
      << "one compile for both block sizes";
  std::ofstream(dir / "m.cu") << "#define HEADER \"tile.h\"\n#include HEADER\n"
                                 "__global__ void k(const float* x, float* y, int n) { y[0] = TILE_ROWS; }\n";
  std::string by_macro = spec;
  by_macro.replace(by_macro.find("\"k.cu\""), 6, "\"m.cu\"");
  const std::string op2 = load_kernel_spec_text(by_macro, "macro.json", dir.string());
  const auto o2 = spec_of(op2).compile_options(Config{{"BLOCK", 64}, {"TILE", 2}, {"UNROLL", 1}, {"BLOCKY", 1}}, p);
  EXPECT_NE(std::find(o2.begin(), o2.end(), "-DBLOCK=64"), o2.end()) << "a header by a macro: every parameter a -D";
  // `# include` with a space, and a folder the options name, are followed; a pasted name (##)
  // leaves every parameter a -D.
  fs::create_directories(dir / "opt");
  std::ofstream(dir / "opt" / "rows.h") << "#define ROWS_OF (UNROLL + 1)\n";
  std::ofstream(dir / "s.cu") << "# include \"tile.h\"\n#  include <rows.h>\n"
                                 "__global__ void k(const float* x, float* y, int n) { y[0] = TILE_ROWS + ROWS_OF; }\n";
  std::string spaced = spec;
  spaced.replace(spaced.find("\"k.cu\""), 6, "\"s.cu\"");
  spaced.replace(spaced.find("\"include_dirs\": [\"inc\"],"), std::string("\"include_dirs\": [\"inc\"],").size(),
                 "\"options\": [\"--include-path=opt\"],");
  const auto o3 = spec_of(load_kernel_spec_text(spaced, "spaced.json", dir.string()))
                      .compile_options(Config{{"BLOCK", 64}, {"TILE", 2}, {"UNROLL", 1}, {"BLOCKY", 1}}, p);
  EXPECT_NE(std::find(o3.begin(), o3.end(), "-DTILE=2"), o3.end()) << "# include \"tile.h\"";
  EXPECT_NE(std::find(o3.begin(), o3.end(), "-DUNROLL=1"), o3.end()) << "a header in a folder of the options";
  std::ofstream(dir / "p.cu") << "#include \"tile.h\"\n#define CAT(a, b) a##b\n"
                                 "__global__ void k(const float* x, float* y, int n) { y[0] = TILE_ROWS + UNROLL + BLOCKY; }\n";
  std::string pasted = spec;
  pasted.replace(pasted.find("\"k.cu\""), 6, "\"p.cu\"");
  const auto o4 = spec_of(load_kernel_spec_text(pasted, "pasted.json", dir.string()))
                      .compile_options(Config{{"BLOCK", 64}, {"TILE", 2}, {"UNROLL", 1}, {"BLOCKY", 1}}, p);
  EXPECT_NE(std::find(o4.begin(), o4.end(), "-DBLOCK=64"), o4.end()) << "a pasted name: every parameter a -D";
  // A parameter the text does not name and no expression reads is refused: its values would
  // compile one kernel.
  std::string idle = spec;
  idle.replace(idle.find("\"BLOCKY\": [1]"), std::string("\"BLOCKY\": [1]").size(), "\"BLOCKY\": [1], \"SPARE\": [1, 2]");
  try {
    load_kernel_spec_text(idle, "idle.json", dir.string());
    ADD_FAILURE() << "SPARE reaches nothing";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("params.SPARE: reaches no kernel"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// A user kernel includes the toolkit's headers as under nvcc: cooperative_groups.h (which on CUDA
// 13 includes libcu++ from include/cccl) and libcu++ itself.
TEST(KernelSpec, KernelsIncludeTheToolkitsHeadersAsUnderNvcc) {
  const fs::path dir = fs::temp_directory_path() / ("ktune_spec_headers_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "cg.cu") << "#include <cooperative_groups.h>\n#include <cuda/std/type_traits>\n"
                                  "namespace cg = cooperative_groups;\n"
                                  "__global__ void cg_sum(const float* x, float* y, int n) {\n"
                                  "  static_assert(cuda::std::is_same<float, float>::value, \"libcu++\");\n"
                                  "  cg::thread_block b = cg::this_thread_block();\n"
                                  "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i];\n"
                                  "  b.sync(); }\n";
  std::ofstream(dir / "cg.json") << R"json({"ktune_kernel_spec": 1, "name": "cg_headers", "sources": ["cg.cu"],
    "kernel": "cg_sum", "dims": ["n"], "params": {"B": [64, 128]},
    "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
             {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"none": "compiled only"}})json";
  const std::string op = load_kernel_spec((dir / "cg.json").string());
  const Family f = find_family(op);
  const Problem p = Problem::parse(op, "1000", "", DType::f32);
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  Compiler compiler(1);
  EXPECT_FALSE(compiler.compile(compile_request(f, f.default_config(p, d), p, "sm_90"))->cubin.empty());
  fs::remove_all(dir);
}

TEST(KernelSpec, ExpressionsFollowKernelTunersPythonRules) {
  const std::vector<std::string> names = {"a", "b"};
  auto eval = [&](const std::string& e, double a, double b) { return Expr(e, names, "t").eval({a, b}); };
  EXPECT_EQ(eval("a // b", 7, 2), 3);
  EXPECT_EQ(eval("a // b", -7, 2), -4) << "floor division, as Python";
  EXPECT_EQ(eval("a % b", -7, 2), 1) << "the remainder of floor division, as Python";
  EXPECT_EQ(eval("a ** 2", 3, 0), 9);
  EXPECT_EQ(eval("a > 1 and not b", 2, 0), 1);
  EXPECT_EQ(eval("a > 1 or b", 0, 0), 0);
  EXPECT_EQ(eval("True and a == 2", 2, 0), 1);
  EXPECT_EQ(eval("ceil_div(a, b)", 7, 2), 4);
  EXPECT_EQ(eval("round_up(a, b)", 7, 4), 8);
  EXPECT_EQ(eval("min(a, b) + max(a, b)", 3, 5), 8);
  EXPECT_EQ(eval("a > b ? a : b", 3, 5), 5);
  EXPECT_EQ(python_to_muparser("x and y or not z_and"), "((x ? ((y) != 0) : 0) ? 1 : (((!z_and)) != 0))")
      << "words only, not parts of names";
  // Short-circuit, as Python's: a guard keeps the division it guards from running.
  EXPECT_EQ(eval("b == 0 or a % b == 0", 7, 0), 1);
  EXPECT_EQ(eval("b != 0 and a // b > 1", 7, 0), 0);
  EXPECT_EQ(eval("b == 0 || a % b == 0", 6, 3), 1);
  EXPECT_EQ(eval("a and b", 2, 3), 1) << "and / or give 0 or 1";
  EXPECT_THROW(eval("b == 1 or a % b == 0", 7, 0), UsageError) << "unguarded, the division still fails";
  // Python's precedence, not muparser's: `not` below the comparisons, comparisons chained, `in`,
  // `a if c else b`, bitwise operators between the comparisons and +, ** right-associative.
  struct Case {
    const char* expr;
    double a, b, want;
    const char* why;
  };
  for (const Case& c : std::vector<Case>{
           {"not a == 1", 2, 0, 1, "not (a == 1), where muparser's ! reads (!a) == 1"},
           {"b % 64 == 0 and not a == 1", 2, 128, 1, ""},
           {"!a == 1", 0, 0, 1, "C's ! binds tightest, as before"},
           {"32 <= a * b <= 1024", 32, 64, 0, "2048 is past the chain's end, (32 <= 2048) <= 1024 is not"},
           {"32 <= a * b <= 1024", 32, 8, 1, ""},
           {"16 < a * b <= 1024", 4, 4, 0, ""},
           {"a < b < 10 > 2", 1, 5, 1, ""},
           {"a in [32, 64]", 64, 0, 1, ""},
           {"a in (32, 64) and b not in [1, 2]", 32, 2, 0, ""},
           {"a not in [1, 2, 3]", 4, 0, 1, ""},
           {"a if b > 0 else 7", 3, 1, 3, ""},
           {"a if b > 0 else 7", 3, 0, 7, ""},
           {"a & (a - 1) == 0", 64, 0, 1, "& binds tighter than ==, as in Python (not C): (64 & 63) == 0"},
           {"a & (a - 1) == 0", 48, 0, 0, ""},
           {"a | b", 5, 2, 7, ""},
           {"a << b", 3, 4, 48, ""},
           {"a >> 1 + b", 64, 1, 16, "shifts below +, as Python"},
           {"~a", 5, 0, -6, ""},
           {"-a ** 2", 3, 0, -9, "** binds tighter than a unary minus on its left"},
           {"2 ** -b", 0, 1, 0.5, ""},
           {"2 ** 3 ** 2", 0, 0, 512, "right-associative"},
           {"0x10 + 1e1", 0, 0, 26, ""}})
    EXPECT_EQ(eval(c.expr, c.a, c.b), c.want) << c.expr << " at a = " << c.a << ", b = " << c.b << ": " << c.why;
  EXPECT_THROW(Expr("a & b", names, "t").eval({1.5, 1}), UsageError) << "bitwise operators take whole numbers";
  for (const auto& [bad, says] : std::vector<std::pair<const char*, const char*>>{
           {"a = 1", "a comparison is '=='"},
           {"a in b", "'in' needs a list of values"},
           {"a in []", "an empty list"},
           {"a if b", "expected 'else'"},
           {"(a + b", "expected ')'"},
           {"a $ b", "unexpected '$'"},
           {"a and", "ends too early"}}) {
    try {
      Expr(bad, names, "f.json: constraints[0]");
      ADD_FAILURE() << bad << " must be refused";
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("f.json: constraints[0]: '") + bad + "'"), std::string::npos) << what;
      EXPECT_NE(what.find(says), std::string::npos) << what;
    }
  }
  EXPECT_EQ(Expr("a + b", names, "t").reads().size(), 2u);
  EXPECT_TRUE(Expr("3 * 4", names, "t").constant());
  try {
    Expr("a + c", names, "f.json: constraints[2]");
    FAIL() << "an unknown name must be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("f.json: constraints[2]: 'a + c': unknown name 'c'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Expr("a +", names, "t"), UsageError);
  EXPECT_THROW(Expr("1 / 0", names, "t"), UsageError) << "a constant division by zero is an error at once";
  EXPECT_THROW(Expr("a / b", names, "t").eval({1, 0}), UsageError);
  EXPECT_THROW(Expr("a // b", names, "t").eval({1, 0}), UsageError);
  EXPECT_THROW(Expr("a % b", names, "t").eval({1, 0}), UsageError);
  EXPECT_THROW(Expr("a", names, "t").eval_integer({1.5, 0}, 0, 10, "x"), UsageError);
}

// A small valid spec in its own folder, for the malformed variants.
class SpecDir {
 public:
  SpecDir() : dir_(fs::temp_directory_path() / ("ktune-spec-" + std::to_string(::getpid()) + "-" + std::to_string(++n_))) {
    fs::create_directories(dir_);
    write("k.cu",
          "template <int B> __global__ void scale(const float* x, float* y, int n, float a) {\n"
          "  int i = blockIdx.x * B + threadIdx.x; if (i < n) y[i] = a * x[i]; }\n"
          "__global__ void scale_ref(const float* x, float* y, int n, float a) {\n"
          "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i]; }\n");
  }
  ~SpecDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void write(const std::string& name, const std::string& text) const {
    fs::create_directories((dir_ / name).parent_path()); // a name may hold folders ("deps/fmt/base.h")
    std::ofstream(dir_ / name) << text;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string dir() const { return dir_.string(); }
  static ojson base() {
    return ojson::parse(R"JSON({
      "ktune_kernel_spec": 1, "name": "scale", "sources": ["k.cu"], "kernel": "scale<{B}>", "params_as": "template",
      "dims": ["n"], "dtypes": ["f32"], "params": {"B": [64, 128, 256]}, "constraints": ["B <= n"],
      "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
      "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
               {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
               {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"},
               {"name": "a", "kind": "scalar", "dtype": "f32", "default": 2.5}],
      "check": {"reference": {"kernel": "scale_ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
  }

 private:
  fs::path dir_;
  static inline int n_ = 0;
};

// Loading spec j must fail with a UsageError whose message holds `error`.
void expect_refused(const ojson& j, const SpecDir& d, const std::string& error) {
  try {
    load_kernel_spec_text(j.dump(), "refused.json", d.dir());
    ADD_FAILURE() << "accepted; expected: " << error;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(error), std::string::npos) << e.what();
  }
}

// Spec j (a kernel over one size, "UNTUNED": [0]) loaded from d compiles for sm_90 at 1000.
void expect_compiles(const ojson& j, const SpecDir& d) {
  const std::string op = load_kernel_spec_text(j.dump(), j.value("name", std::string("spec")) + ".json", d.dir());
  Compiler compiler;
  EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"UNTUNED", 0}}, Problem::parse(op, "1000"), "sm_90")));
}

// A compile-only spec of the kernel k(float* y, int n) of proj.cu, named `name`, under host_code
// skip or as it is.
ojson proj_k_spec(const std::string& name, bool skip) {
  ojson spec = ojson::parse(R"JSON({
    "sources": ["proj.cu"], "kernel": "k", "dims": ["n"], "params": {"UNTUNED": [0]},
    "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]},
    "args": [{"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"}, {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"none": "compile only"}})JSON");
  spec["name"] = name;
  if (skip) spec["host_code"] = "skip";
  return spec;
}

// The kernel k(float* y, int n) of d's proj.cu, with include_dirs {inc}: compiled under host_code
// skip, and refused as it is (its host code, or a header only skip stands in for).
void expect_compiles_under_skip_only(const std::string& name, const std::string& inc, const SpecDir& d) {
  auto spec_text = [&](const char* host_code) {
    ojson spec = ojson::parse(R"JSON({
      "sources": ["proj.cu"], "kernel": "k", "dims": ["n"], "params": {"UNTUNED": [0]},
      "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]},
      "args": [{"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"}, {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
      "check": {"none": "compile only"}})JSON");
    spec["name"] = name + (host_code[0] == 's' ? "" : "_as_is");
    spec["include_dirs"] = {inc};
    spec["host_code"] = host_code;
    return spec.dump();
  };
  Compiler compiler;
  const std::string op = load_kernel_spec_text(spec_text("skip"), name + ".json", d.dir());
  EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"UNTUNED", 0}}, Problem::parse(op, "1000"), "sm_90")));
  const std::string as_is = load_kernel_spec_text(spec_text("compile"), name + "_as_is.json", d.dir());
  EXPECT_THROW(compiler.compile(compile_request(find_family(as_is), Config{{"UNTUNED", 0}}, Problem::parse(as_is, "1000"), "sm_90")), std::exception);
}

// A copy of spec `base` changed by f, as each malformed case wants: `edit(base)([](ojson& j) {...})`.
std::function<ojson(const std::function<void(ojson&)>&)> edit(ojson base) {
  return [base = std::move(base)](const std::function<void(ojson&)>& f) {
    ojson j = base;
    f(j);
    return j;
  };
}

TEST(KernelSpec, TheBaseOfTheMalformedOnesIsValid) {
  SpecDir d;
  const std::string op = load_kernel_spec_text(SpecDir::base().dump(), "base.json", d.dir());
  const Problem p = Problem::parse(op, "1000");
  EXPECT_EQ(find_family(op).count(p, DeviceInfo::nominal("sm_90")), 3u);
  EXPECT_EQ(op_info(op).scalars.size(), 1u) << "a, which the caller passes; n is computed";
}

struct Bad {
  const char* what;
  std::function<void(ojson&)> edit;
  const char* field; // expected in the message: "bad.json: <field>: "
};

TEST(KernelSpec, EveryMalformedSpecIsRefusedNamingItsField) {
  SpecDir d;
  d.write("lib.npy", "not numpy");
  const std::vector<Bad> cases = {
      {"not JSON", [](ojson& j) { j = "{"; }, "not valid JSON"},
      {"unknown top-level field", [](ojson& j) { j["kernal"] = "x"; }, "kernal: unknown field"},
      {"no name", [](ojson& j) { j.erase("name"); }, "name: missing"},
      {"name not an identifier", [](ojson& j) { j["name"] = "my kernel"; }, "name: 'my kernel' is not a C identifier"},
      {"spec version", [](ojson& j) { j["ktune_kernel_spec"] = 2; }, "ktune_kernel_spec:"},
      {"no sources", [](ojson& j) { j.erase("sources"); }, "sources: missing"},
      {"source does not exist", [](ojson& j) { j["sources"] = {"nope.cu"}; }, "sources[0]: source"},
      {"include dir does not exist", [](ojson& j) { j["include_dirs"] = {"nodir"}; }, "include_dirs[0]:"},
      {"warnings off", [](ojson& j) { j["options"] = {"-w"}; }, "options[0]: '-w' hides NVRTC's warning #47"},
      {"warning 47 off", [](ojson& j) { j["options"] = {"--diag-suppress=47"}; }, "options[0]:"},
      {"no dims", [](ojson& j) { j.erase("dims"); }, "dims: missing"},
      {"empty dims", [](ojson& j) { j["dims"] = ojson::array(); }, "dims: expected a non-empty array"},
      {"unknown problem dtype", [](ojson& j) { j["dtypes"] = {"f8"}; }, "dtypes[0]: unknown dtype 'f8'"},
      {"no params", [](ojson& j) { j.erase("params"); }, "params: missing"},
      {"empty domain", [](ojson& j) { j["params"]["B"] = ojson::array(); }, "params.B: expected a non-empty array"},
      {"float value", [](ojson& j) { j["params"]["B"] = {64, 1.5}; }, "params.B[1]: expected an integer"},
      {"repeated value", [](ojson& j) { j["params"]["B"] = {64, 64}; }, "params.B[1]: value 64 repeated"},
      {"parameter named like a builtin", [](ojson& j) { j["params"]["align"] = {1}; }, "params: 'align'"},
      {"constraint with unknown name", [](ojson& j) { j["constraints"] = {"B <= m"}; }, "constraints[0]: 'B <= m': unknown name 'm'"},
      {"constraint syntax", [](ojson& j) { j["constraints"] = {"B <="}; }, "constraints[0]:"},
      {"constraint divides by zero", [](ojson& j) { j["constraints"] = {"B / 0 > 1"}; }, "constraints[0]:"},
      {"arch without sm_", [](ojson& j) { j["arch"] = "90a"; }, "arch: expected sm_<number>"},
      {"arch of one digit", [](ojson& j) { j["arch"] = "sm_9"; }, "arch: expected sm_<number>"},
      {"arch of another suffix", [](ojson& j) { j["arch"] = "sm_90b"; }, "arch: expected sm_<number>"},
      {"arch a number", [](ojson& j) { j["arch"] = 90; }, "arch:"},
      {"arch-specific before sm_90", [](ojson& j) { j["arch"] = "sm_80a"; }, "arch: 'sm_80a': arch-specific targets begin at sm_90a"},
      {"no launch", [](ojson& j) { j.erase("launch"); }, "launch: missing"},
      {"grid of 0", [](ojson& j) { j["launch"]["grid"] = {0}; }, "launch.grid[0]: '0' is below 1"},
      {"four grid dims", [](ojson& j) { j["launch"]["grid"] = {1, 1, 1, 1}; }, "launch.grid: expected 1 to 3"},
      {"no block", [](ojson& j) { j["launch"].erase("block"); }, "launch.block: missing"},
      {"block reads the device", [](ojson& j) { j["launch"]["block"] = {"sm_count"}; },
       "launch.block[0]: 'sm_count' reads sm_count, a device value: only a grid, a when and a computed scalar's value"},
      {"shared memory reads the device", [](ojson& j) { j["launch"]["shared_memory"] = "smem_per_block"; }, "launch.shared_memory:"},
      {"shared memory expression", [](ojson& j) { j["launch"]["shared_memory"] = "B *"; }, "launch.shared_memory:"},
      {"no args", [](ojson& j) { j.erase("args"); }, "args: missing"},
      {"arg without kind", [](ojson& j) { j["args"][0].erase("kind"); }, "args[0].kind: missing"},
      {"unknown arg kind", [](ojson& j) { j["args"][0]["kind"] = "pointer"; }, "args[0].kind: unknown kind 'pointer'"},
      {"unknown buffer dtype", [](ojson& j) { j["args"][0]["dtype"] = "float128"; }, "args[0].dtype: unknown dtype 'float128'"},
      {"buffer without count", [](ojson& j) { j["args"][0].erase("count"); }, "args[0].count: missing"},
      {"count reads a parameter", [](ojson& j) { j["args"][0]["count"] = "n * B"; }, "args[0].count:"},
      {"unknown intent", [](ojson& j) { j["args"][1]["intent"] = "output"; }, "args[1].intent: unknown intent 'output'"},
      {"no output", [](ojson& j) { j["args"][1]["intent"] = "in"; }, "args: no argument is an output"},
      {"fill of an output", [](ojson& j) { j["args"][1]["fill"] = "zeros"; }, "args[1].fill:"},
      {"unknown fill", [](ojson& j) { j["args"][0]["fill"] = "gaussian"; }, "args[0].fill: unknown fill 'gaussian'"},
      {"random range reversed", [](ojson& j) { j["args"][0]["fill"] = {{"random", {1, 0}}}; }, "args[0].fill.random:"},
      {"fill file missing", [](ojson& j) { j["args"][0]["fill"] = {{"file", "none.npy"}}; }, "args[0].fill.file: fill file"},
      {"fill file not npy", [](ojson& j) { j["args"][0]["fill"] = {{"file", "lib.npy"}}; }, "args[0].fill.file:"},
      {"duplicate argument", [](ojson& j) { j["args"][1]["name"] = "x"; }, "args[1].name: argument 'x' named twice"},
      {"scalar with count", [](ojson& j) { j["args"][2]["count"] = 1; }, "args[2].count: a scalar has no count"},
      {"scalar value and default", [](ojson& j) { j["args"][2]["default"] = 1; }, "args[2]: value"},
      {"restore of an input", [](ojson& j) { j["args"][0]["restore"] = true; }, "args[0].restore: only an inout buffer"},
      {"define of the device", [](ojson& j) { j["defines"] = {{"NSM", "sm_count"}}; }, "defines.NSM: 'sm_count' reads sm_count, a device value"},
      {"address of a scalar", [](ojson& j) { j["symbols"] = {{{"name", "p"}, {"address_of", "n"}}}; }, "symbols[0].address_of: 'n' is a scalar"},
      {"address and data", [](ojson& j) { j["symbols"] = {{{"name", "p"}, {"address_of", "x"}, {"from", "x"}}}; },
       "symbols[0]: give exactly one of from"},
      {"address with a count", [](ojson& j) { j["symbols"] = {{{"name", "p"}, {"address_of", "x"}, {"count", 2}}}; },
       "symbols[0].count: a symbol of an address holds one pointer"},
      {"restore of an output", [](ojson& j) { j["args"][1]["restore"] = false; }, "args[1].restore: only an inout buffer"},
      {"restore not a boolean", [](ojson& j) { j["args"][1]["intent"] = "inout", j["args"][1]["restore"] = 1; },
       "args[1].restore: expected true or false"},
      {"restore of a scalar", [](ojson& j) { j["args"][2]["restore"] = true; }, "args[2].restore: a scalar has no restore"},
      {"negative tolerance", [](ojson& j) { j["args"][1]["rtol"] = -1; }, "args[1].rtol: must be >= 0"},
      {"no check", [](ojson& j) { j.erase("check"); }, "check: missing"},
      {"check both", [](ojson& j) { j["check"]["none"] = "x"; }, "check: give exactly one of reference, answer and none"},
      {"empty opt-out reason", [](ojson& j) { j["check"] = {{"none", ""}}; }, "check.none: say why"},
      {"reference without launch", [](ojson& j) { j["check"]["reference"].erase("launch"); }, "check.reference.launch: missing"},
      {"reference config off domain", [](ojson& j) { j["check"]["reference"]["config"] = {{"B", 32}}; }, "check.reference.config.B: 32"},
      {"default misses a parameter", [](ojson& j) { j["default"] = ojson::object(); }, "default.B: missing"},
      {"symbol from a non-argument", [](ojson& j) { j["symbols"] = {{{"name", "c"}, {"from", "z"}}}; }, "symbols[0].from:"},
      {"arch option", [](ojson& j) { j["options"] = {"-arch=sm_80"}; }, "options[0]: the arch"},
      {"flops read a parameter", [](ojson& j) { j["flops"] = "n * B"; }, "flops:"},
      {"placeholder not a name", [](ojson& j) { j["kernel"] = "scale<{C}>"; }, "kernel 'scale<{C}>': {C}"},
      {"cluster not a list", [](ojson& j) { j["launch"]["cluster"] = 2; }, "launch.cluster: expected 1 to 3 expressions"},
      {"cluster of none", [](ojson& j) { j["launch"]["cluster"] = {0}; }, "launch.cluster[0]: '0' is below 1"},
      {"answer and reference", [](ojson& j) { j["check"]["answer"] = {{"y", "y.npy"}}; }, "check: give exactly one of reference, answer and none"},
      {"answer for an input", [](ojson& j) { j["check"] = {{"answer", {{"x", "x.npy"}}}}; }, "check.answer.x: 'x' is not an output"},
      {"answer with random inputs", [](ojson& j) { j["check"] = {{"answer", {{"y", "y_{n}.npy"}}}}; }, "check.answer: 'x' is filled at random"},
      {"answer placeholder not a dim", [](ojson& j) {
         j["args"][0]["fill"] = "ramp";
         j["check"] = {{"answer", {{"y", "y_{m}.npy"}}}};
       }, "check.answer.y.file: 'y_{m}.npy': {m} is not a dimension"},
      {"fill placeholder not a dim", [](ojson& j) { j["args"][0]["fill"] = {{"file", "x_{B}.npy"}}; }, "args[0].fill.file: 'x_{B}.npy': {B}"},
      {"baseline without launch", [](ojson& j) { j["baseline"] = {{"kernel", "scale_ref"}}; }, "baseline.launch: missing"},
      {"baseline of nothing", [](ojson& j) { j["baseline"] = ojson::object(); }, "baseline: give a kernel and its launch"},
      {"baseline config off domain", [](ojson& j) { j["baseline"] = {{"config", {{"B", 3}}}}; }, "baseline.config.B: 3"},
      {"step takes an unknown argument", [](ojson& j) { j["launch"]["args"] = {"x", "z"}; }, "launch.args[1]: 'z' is not one of"},
      {"step args not a list", [](ojson& j) { j["launch"]["args"] = "x"; }, "launch.args: expected the names"},
      {"argument no step takes", [](ojson& j) {
         j["launch"]["args"] = {"x", "y", "n"};
         j["check"]["reference"]["launch"]["args"] = {"x", "y", "n"};
       }, "args[3]: 'a' is in no launch step's args"},
      {"an output's count reads a parameter", [](ojson& j) { j["args"][1]["count"] = "ceil_div(n, B)"; }, "args[1].count:"},
      {"template parameter used nowhere", [](ojson& j) { j["params"]["U"] = {1, 2, 4}; }, "params.U: reaches no kernel"},
      {"check_count of an input", [](ojson& j) { j["args"][0]["check_count"] = 1; }, "args[0].check_count: only outputs"},
      {"check_count reads a parameter", [](ojson& j) { j["args"][1]["check_count"] = "B"; }, "args[1].check_count:"},
      {"8-byte temporary set to a value", [](ojson& j) {
         j["args"].push_back({{"name", "t"}, {"kind", "buffer"}, {"dtype", "f64"}, {"count", "n"}, {"intent", "temp"}, {"fill", {{"value", -1}}}});
       }, "args[4].fill: a temporary is left as it is"},
      {"temporary filled at random", [](ojson& j) {
         j["args"].push_back({{"name", "t"}, {"kind", "buffer"}, {"dtype", "f32"}, {"count", "n"}, {"intent", "temp"}, {"fill", "random"}});
       }, "args[4].fill: a temporary is left as it is"},
      {"setup of the kernel itself", [](ojson& j) { j["setup"] = {{"config", {{"B", 64}}}}; }, "setup: expected {\"kernel\""},
      {"setup with a temporary", [](ojson& j) {
         j["args"].push_back({{"name", "t"}, {"kind", "buffer"}, {"dtype", "f32"}, {"count", "n"}, {"intent", "temp"}});
         j["launch"]["args"] = {"x", "y", "n", "a", "t"};
         j["setup"] = {{"kernel", "scale_ref"}, {"launch", {{"grid", {1}}, {"block", {32}}}}};
       }, "setup: a step passes 't', a temporary"},
      {"post without a compare", [](ojson& j) {
         j["check"] = {{"none", "x"}, {"post", {{"kernel", "scale_ref"}, {"launch", {{"grid", {1}}, {"block", {32}}}}}}};
       }, "check.post: post steps shape outputs for a compare"},
      {"post of the kernel itself", [](ojson& j) { j["check"]["post"] = {{"config", {{"B", 64}}}}; }, "check.post: expected {\"kernel\""},
  };
  EXPECT_GE(cases.size(), 30u);
  for (const Bad& b : cases) {
    ojson j = SpecDir::base();
    b.edit(j);
    const std::string text = j.is_string() ? j.get<std::string>() : j.dump();
    try {
      load_kernel_spec_text(text, "bad.json", d.dir());
      ADD_FAILURE() << b.what << ": accepted";
    } catch (const UsageError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind("bad.json", 0), 0u) << b.what << ": " << msg;
      EXPECT_NE(msg.find(b.field), std::string::npos) << b.what << ": " << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << b.what << ": one line: " << msg;
    }
  }
}

TEST(KernelSpec, AChangedSourceIsAnotherOpAndSoIsAChangedSpec) {
  SpecDir d;
  const std::string a = load_kernel_spec_text(SpecDir::base().dump(), "s.json", d.dir());
  d.write("k.cu", "// a comment changes the source\n" + testing::file_bytes(d.path("k.cu")));
  const std::string b = load_kernel_spec_text(SpecDir::base().dump(), "s.json", d.dir());
  EXPECT_NE(a, b);
  EXPECT_EQ(spec_base_name(a), spec_base_name(b));
  ojson j = SpecDir::base();
  j["params"]["B"] = {64, 128};
  const std::string c = load_kernel_spec_text(j.dump(), "s.json", d.dir());
  EXPECT_NE(c, b);
  // A header the source includes is part of the version too.
  d.write("k.cu", "#include \"h.cuh\"\n" + testing::file_bytes(d.path("k.cu")));
  d.write("h.cuh", "#define ONE 1\n");
  const std::string e = load_kernel_spec_text(SpecDir::base().dump(), "s.json", d.dir());
  d.write("h.cuh", "#define ONE 2\n");
  EXPECT_NE(load_kernel_spec_text(SpecDir::base().dump(), "s.json", d.dir()), e);
}

TEST(KernelSpec, ArgumentsPackInTheSpecsOrderAndTypes) {
  SpecDir d;
  const std::string op = load_kernel_spec_text(SpecDir::base().dump(), "pack.json", d.dir());
  Problem p = Problem::parse(op, "1000");
  p.scalars["a"] = -0.75;
  float x = 0, y = 0;
  BufferArgs args(p, {&x, &y});
  ASSERT_EQ(args.count(), 4u);
  EXPECT_EQ(*static_cast<const void* const*>(args.params()[0]), &x);
  EXPECT_EQ(*static_cast<const void* const*>(args.params()[1]), &y);
  EXPECT_EQ(*static_cast<const int*>(args.params()[2]), 1000) << "n: an int32 computed from the dimension";
  EXPECT_EQ(*static_cast<const float*>(args.params()[3]), -0.75f) << "a: the caller's float";
  EXPECT_THROW(BufferArgs(p, {&x}), UsageError) << "two buffers";
  // A kernel whose only written buffer is updated in place has something to do.
  ojson j = SpecDir::base();
  j["args"][1]["intent"] = "inout";
  const std::string inout = load_kernel_spec_text(j.dump(), "inout.json", d.dir());
  EXPECT_FALSE(BufferArgs(Problem::parse(inout, "1000"), {&x, &y}).empty()) << "y is written: launch";
  EXPECT_TRUE(spec_of(inout).args[1].restore) << "every timed run starts from y as filled unless the spec says not";
  j["args"][1]["restore"] = false;
  EXPECT_FALSE(spec_of(load_kernel_spec_text(j.dump(), "carried.json", d.dir())).args[1].restore);
  j["args"][1].erase("restore");
  // An output checked on its first elements only.
  j["args"][1]["check_count"] = "n / 10";
  const KernelSpec& first = spec_of(load_kernel_spec_text(j.dump(), "first.json", d.dir()));
  EXPECT_EQ(first.checked_count(1, Problem::parse(first.op, "1000")), 100);
  j["args"][1]["check_count"] = "n * 2";
  const KernelSpec& all = spec_of(load_kernel_spec_text(j.dump(), "all.json", d.dir()));
  EXPECT_EQ(all.checked_count(1, Problem::parse(all.op, "1000")), 1000) << "at most its count";
  Problem q = Problem::parse(op, "1000");
  EXPECT_EQ(*static_cast<const float*>(BufferArgs(q, {&x, &y}).params()[3]), 2.5f) << "the spec's default";
}

// A launch of two kernels with arguments of their own (l2norm: the partial sums, then their sum):
// each step gets the spec's arguments it names, in its order; the partials' buffer and their
// count follow the config, in the plan, which travels to the worker whole.
TEST(KernelSpec, StepsTakeTheirOwnArgumentsAndTemporariesFollowTheConfig) {
  const std::string op = load_kernel_spec(example("l2norm"));
  const KernelSpec& s = spec_of(op);
  const Problem p = Problem::parse(op, "1000003");
  const Family f = find_family(op);
  Config c = f.default_config(p, DeviceInfo::nominal("sm_90")); // BLOCK 256, ITEMS 4, VEC 4: 4096 a block
  ASSERT_EQ(c.to_json(), R"({"BLOCK":256,"ITEMS":4,"VEC":4,"FINAL":512})");
  const LaunchPlan plan = f.launch_plan(c, p);
  ASSERT_EQ(plan.steps.size(), 2u);
  EXPECT_EQ(plan.steps[0].args, (std::vector<int>{0, 3, 2})) << "x, partials, n";
  EXPECT_EQ(plan.steps[1].args, (std::vector<int>{3, 4, 1})) << "partials, parts, out";
  EXPECT_EQ(plan.steps[0].grid[0], 245u);
  ASSERT_EQ(plan.spec_args.size(), 5u);
  EXPECT_EQ(plan.spec_args[3].offset, 0);
  EXPECT_EQ(plan.spec_args[3].bytes, 245u * 4u) << "one float a block";
  EXPECT_EQ(plan.workspace_bytes, 1024u) << "256-byte aligned";
  EXPECT_EQ(plan.spec_args[4].value, 245.0) << "parts";
  c.set("BLOCK", 64), c.set("ITEMS", 1), c.set("VEC", 1);
  const LaunchPlan small = f.launch_plan(c, p);
  EXPECT_EQ(small.spec_args[4].value, 15626.0);
  EXPECT_EQ(small.spec_args[3].bytes, 15626u * 4u);
  EXPECT_EQ(small.workspace_bytes, 62720u);
  const LaunchPlan back = plan_from_json(nlohmann::json::parse(plan_to_json(small).dump()));
  EXPECT_EQ(back.steps[1].args, small.steps[1].args);
  ASSERT_EQ(back.spec_args.size(), 5u);
  EXPECT_EQ(back.spec_args[4].value, 15626.0);
  EXPECT_EQ(back.spec_args[3].offset, 0);
  EXPECT_EQ(back.spec_args[3].bytes, 15626u * 4u);
  EXPECT_EQ(back.spec_args[0].offset, -1);
  // The arguments as a launch binds them for that plan: the caller's buffer, the workspace's
  // partials, the computed scalars in their own types.
  float x = 0, out = 0;
  BufferArgs a(p, {&x, &out}, CUdeviceptr(0x10000));
  a.bind(small);
  EXPECT_EQ(*static_cast<const void* const*>(a.params()[0]), &x);
  EXPECT_EQ(*static_cast<const void* const*>(a.params()[1]), &out);
  EXPECT_EQ(*static_cast<const long long*>(a.params()[2]), 1000003);
  EXPECT_EQ(*static_cast<const CUdeviceptr*>(a.params()[3]), CUdeviceptr(0x10000));
  EXPECT_EQ(*static_cast<const int*>(a.params()[4]), 15626);
  a.bind(plan);
  EXPECT_EQ(*static_cast<const int*>(a.params()[4]), 245) << "rebound for another config";
  // The reference takes its own three.
  EXPECT_EQ(s.plan(s.reference_steps, s.reference_config, p).steps[0].args, (std::vector<int>{0, 1, 2}));
  // What needs a config is not asked without one.
  EXPECT_TRUE(s.args[3].follows_config);
  EXPECT_TRUE(s.args[4].follows_config);
  EXPECT_FALSE(s.args[2].follows_config);
  EXPECT_THROW(s.count_of(3, p), Error);
  EXPECT_EQ(s.count_of(3, p, c), 15626);
  EXPECT_NO_THROW(op_info(op).validate(p));
  // A buffer that only fills a symbol (Kernel Tuner's cmem_args) need not be a step's argument.
  SpecDir d;
  ojson j = SpecDir::base();
  j["args"].push_back({{"name", "coef"}, {"kind", "buffer"}, {"dtype", "f32"}, {"count", 4}});
  j["symbols"] = {{{"name", "c_coef"}, {"from", "coef"}}};
  j["launch"]["args"] = {"x", "y", "n", "a"};
  j["check"]["reference"]["launch"]["args"] = {"x", "y", "n", "a"};
  EXPECT_NO_THROW(load_kernel_spec_text(j.dump(), "cmem.json", d.dir()));
  j.erase("symbols");
  EXPECT_THROW(load_kernel_spec_text(j.dump(), "cmem.json", d.dir()), UsageError) << "coef reaches nothing";
}

// A name of the spec's defines reads, in a later expression, as its expression: a launch's
// block of THREADS, a temporary sized by it; what the define reads, the expression reads (a
// caller's buffer sized by a define of a parameter is refused as one sized by the parameter).
TEST(KernelSpec, DefinesReadInLaterExpressions) {
  SpecDir d;
  ojson j = SpecDir::base();
  j["defines"] = {{"THREADS", "B / 2"}, {"ROWS", "THREADS * 4"}};
  j["launch"]["block"] = {"THREADS"};
  j["launch"]["grid"] = {"ceil_div(n, THREADS)"};
  j["kernel"] = "scale<{B}>";
  const std::string op = load_kernel_spec_text(j.dump(), "defines.json", d.dir());
  const Family f = find_family(op);
  const LaunchPlan plan = f.launch_plan(Config{{"B", 128}}, Problem::parse(op, "1000"));
  EXPECT_EQ(plan.steps[0].block[0], 64u);
  EXPECT_EQ(plan.steps[0].grid[0], 16u);
  const auto o = spec_of(op).compile_options(Config{{"B", 128}}, Problem::parse(op, "1000"));
  EXPECT_NE(std::find(o.begin(), o.end(), "-DROWS=256"), o.end()) << "a define of a define";
  j["args"][0]["count"] = "n * ROWS";
  try {
    load_kernel_spec_text(j.dump(), "sized.json", d.dir());
    ADD_FAILURE() << "a caller's buffer sized by a parameter, through a define";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("args[0].count"), std::string::npos) << e.what();
  }
  j = SpecDir::base();
  j["defines"] = {{"n", 4}};
  EXPECT_THROW(load_kernel_spec_text(j.dump(), "clash.json", d.dir()), UsageError) << "a define named like a dimension";
}

// A random range may read the dimensions (class indices below V): the problem's range, at each
// problem; an empty one is the spec's error there.
TEST(KernelSpec, ARandomRangeReadsTheProblem) {
  SpecDir d;
  ojson j = SpecDir::base();
  j["args"][0]["fill"] = {{"random", {0, "n // 10"}}};
  const std::string op = load_kernel_spec_text(j.dump(), "range.json", d.dir());
  const KernelSpec& s = spec_of(op);
  const SpecFill at = fill_at(s, s.args[0].fill, Problem::parse(op, "1000"));
  EXPECT_EQ(at.lo, 0.0);
  EXPECT_EQ(at.hi, 100.0);
  const std::vector<unsigned char> bytes = spec_fill_bytes(at, ElemType::f32, 1000, 7);
  for (size_t i = 0; i < 1000; ++i) {
    const double x = load_elem(bytes.data(), i, ElemType::f32);
    ASSERT_TRUE(x >= 0 && x < 100) << i << ": " << x;
  }
  EXPECT_THROW(fill_at(s, s.args[0].fill, Problem::parse(op, "5")), UsageError) << "[0, 0) at n 5";
  j["args"][0]["fill"] = {{"random", {0, "B"}}};
  EXPECT_THROW(load_kernel_spec_text(j.dump(), "param.json", d.dir()), UsageError) << "a range reads the problem only";
}

// A fill's value, a ramp's start and step and an output's tolerances may follow the problem (an
// atomic sum's error grows with the terms each output gets); they read the dimensions, never the
// config.
TEST(KernelSpec, AValueAndTolerancesReadTheProblem) {
  SpecDir d;
  ojson j = SpecDir::base();
  j["args"][0]["fill"] = {{"value", "1.0 / n"}};
  j["args"][1]["atol"] = "1e-6 * sqrt(n)";
  j["check"]["rtol"] = "n / 1e6";
  const std::string op = load_kernel_spec_text(j.dump(), "value.json", d.dir());
  const KernelSpec& s = spec_of(op);
  const Problem p = Problem::parse(op, "400");
  EXPECT_EQ(fill_value_at(s.args[0].fill, p), 1.0 / 400);
  const std::vector<unsigned char> bytes = spec_fill_bytes(fill_at(s, s.args[0].fill, p), ElemType::f32, 3, 0);
  EXPECT_EQ(load_elem(bytes.data(), 2, ElemType::f32), double(1.0f / 400));
  EXPECT_DOUBLE_EQ(tolerance_at(s, s.args[1], true, p), 2e-5);
  // A temporary set to a value of the problem before every launch: the plan carries the value.
  ojson tj = j;
  tj["args"].push_back({{"name", "t"}, {"kind", "buffer"}, {"dtype", "f32"}, {"count", "n"}, {"intent", "temp"}, {"fill", {{"value", "n / 8"}}}});
  tj["launch"]["args"] = {"x", "y", "n", "t"};
  const KernelSpec& ts = spec_of(load_kernel_spec_text(tj.dump(), "temp.json", d.dir()));
  EXPECT_EQ(ts.plan(ts.steps, Config{{"B", 64}}, Problem::parse(ts.op, "400")).spec_args[4].value, 50.0);
  EXPECT_DOUBLE_EQ(tolerance_at(s, s.args[1], false, p), 4e-4) << "check's rtol, for every output without its own";
  j["args"][1]["rtol"] = 0.5;
  const KernelSpec& own = spec_of(load_kernel_spec_text(j.dump(), "own.json", d.dir()));
  EXPECT_EQ(tolerance_at(own, own.args[1], false, p), 0.5) << "an output's own rtol wins over check's";
  j["args"][1]["atol"] = "1e-3 - n";
  const KernelSpec& neg = spec_of(load_kernel_spec_text(j.dump(), "neg.json", d.dir()));
  try {
    tolerance_at(neg, neg.args[1], true, p);
    ADD_FAILURE() << "a negative atol at n 400";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("atol '1e-3 - n' of y at"), std::string::npos) << e.what();
  }
  // A tolerance that has no valid value at a problem is refused before a run, with the files.
  EXPECT_THROW(check_fill_files(neg, p), UsageError) << "atol 1e-3 - 400";
  j["args"][1]["atol"] = "dtype_bytes == 8 ? 1e-12 : 1e-5";
  const KernelSpec& by_type = spec_of(load_kernel_spec_text(j.dump(), "bytype.json", d.dir()));
  EXPECT_EQ(tolerance_at(by_type, by_type.args[1], true, p), 1e-5) << "an f32 problem's";
  // The dtype's unit roundoff: f16 and bf16 are both 2 bytes, not both as exact.
  {
    ojson e = j;
    e["dtypes"] = {"f32", "f16", "bf16", "f64"};
    e["args"][0]["dtype"] = "dtype", e["args"][1]["dtype"] = "dtype";
    e["args"][1]["atol"] = "4 * sqrt(n) * dtype_eps";
    const KernelSpec& eps = spec_of(load_kernel_spec_text(e.dump(), "eps.json", d.dir()));
    const std::pair<const char*, double> want[] = {{"f32", 0x1p-24}, {"f16", 0x1p-11}, {"bf16", 0x1p-8}, {"f64", 0x1p-53}};
    for (const auto& [dt, u] : want)
      EXPECT_DOUBLE_EQ(tolerance_at(eps, eps.args[1], true, Problem::parse(eps.op, "400", "", parse_dtype(dt))), 80 * u) << dt;
  }
  j["args"][1]["atol"] = "B * 1e-6";
  EXPECT_THROW(load_kernel_spec_text(j.dump(), "param.json", d.dir()), UsageError) << "a tolerance reads the problem only";
  j["args"][1]["atol"] = 0;
  j["args"][0]["fill"] = {{"value", "B"}};
  EXPECT_THROW(load_kernel_spec_text(j.dump(), "fparam.json", d.dir()), UsageError) << "a value reads the problem only";
  // A ramp whose start and step read the dimensions (HeCBench fhd's `i / voxels`).
  j = SpecDir::base();
  j["args"][0]["fill"] = ojson::parse(R"({"ramp": {"start": "n", "step": "1.0 / n"}})");
  const std::string ramp = load_kernel_spec_text(j.dump(), "ramp-dims.json", d.dir());
  const KernelSpec& rs = spec_of(ramp);
  const SpecFill f = fill_at(rs, rs.args[0].fill, Problem::parse(ramp, "8"));
  EXPECT_EQ(f.start, 8);
  EXPECT_EQ(f.step, 0.125);
  const std::vector<unsigned char> ramp_bytes = spec_fill_bytes(f, ElemType::f32, 4, 0);
  EXPECT_EQ(load_elem(ramp_bytes.data(), 3, ElemType::f32), 8.375);
  j["args"][0]["fill"] = ojson::parse(R"({"ramp": {"step": "1 / q"}})");
  expect_refused(j, d, "args[0].fill.ramp.step");
}

// f64 is a problem dtype of user kernels: one spec serves a kernel templated on float and double
// (KTUNE_DTYPE is double at f64, a buffer of the problem's dtype holds 8-byte elements); the
// built-in ops refuse it.
TEST(KernelSpec, AnF64ProblemCompilesTheKernelWithDouble) {
  SpecDir d;
  d.write("t.cu",
          "template <typename T, int B> __global__ void twice(const T* x, T* y, int n) {\n"
          "  int i = blockIdx.x * B + threadIdx.x; if (i < n) y[i] = x[i] + x[i]; }\n");
  ojson j = SpecDir::base();
  j["sources"] = {"t.cu"};
  j["kernel"] = "twice<KTUNE_DTYPE, {B}>";
  j["dtypes"] = {"f32", "f64"};
  j["args"] = ojson::parse(R"([{"name": "x", "kind": "buffer", "dtype": "dtype", "count": "n"},
                               {"name": "y", "kind": "buffer", "dtype": "dtype", "count": "n", "intent": "out"},
                               {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}])");
  j["check"] = {{"reference", {{"config", {{"B", 64}}}}}};
  const std::string op = load_kernel_spec_text(j.dump(), "twice.json", d.dir());
  const KernelSpec& s = spec_of(op);
  const Problem p = Problem::parse(op, "1000", "", DType::f64);
  EXPECT_EQ(p.key().find("/f64/"), op.size()) << p.key();
  EXPECT_EQ(s.args[0].elem(p), ElemType::f64);
  const Family f = find_family(op);
  const CompileRequest req = compile_request(f, Config{{"B", 128}}, p, "sm_90");
  EXPECT_NE(std::find(req.options.begin(), req.options.end(), "-DKTUNE_DTYPE=double"), req.options.end());
  Compiler compiler;
  const auto k = compiler.compile(req);
  ASSERT_EQ(k->lowered_names.size(), 1u);
  EXPECT_NE(k->lowered_names[0].find("IdLi128E"), std::string::npos) << "twice<double, 128>: " << k->lowered_names[0];
  EXPECT_NO_THROW(validate(p));
  EXPECT_THROW(validate(Problem::parse(op, "1000", "", DType::bf16)), UsageError) << "the spec takes f32 and f64";
  try {
    validate(Problem::parse("softmax", "4x4", "", DType::f64));
    ADD_FAILURE() << "softmax at f64";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("f64 is a dtype of user kernels only"), std::string::npos) << e.what();
  }
  EXPECT_EQ(element_bytes(DType::f64), 8);
  EXPECT_EQ(parse_dtype("f64"), DType::f64);
}

// A dimension may be 0 (a flag of the problem: rotary's IS_NEOX), passed as a bool: one byte.
TEST(KernelSpec, AFlagDimensionMayBeZeroAndABoolIsOneByte) {
  SpecDir d;
  ojson j = SpecDir::base();
  j["dims"] = {"n", "neox"};
  j["args"].push_back({{"name", "neox"}, {"kind", "scalar"}, {"dtype", "bool"}, {"value", "neox"}});
  j["launch"]["args"] = {"x", "y", "n", "a"};
  j["check"]["reference"]["launch"]["args"] = {"x", "y", "n", "a", "neox"};
  const std::string op = load_kernel_spec_text(j.dump(), "flag.json", d.dir());
  const KernelSpec& s = spec_of(op);
  EXPECT_EQ(s.args[4].scalar_type, ElemType::u8);
  EXPECT_NO_THROW(validate(Problem::parse(op, "1000x0")));
  EXPECT_EQ(s.scalar_value(4, Problem::parse(op, "1000x1")), 1.0);
  EXPECT_THROW(validate(Problem::parse(op, "1000x-1")), UsageError);
}

// A problem no config serves says which constraints rule them out.
TEST(KernelSpec, NoValidConfigNamesTheConstraintsThatRuleThemOut) {
  SpecDir d;
  ojson j = SpecDir::base();
  j["constraints"] = {"B <= n", "B % 3 == 0"};
  d.write("none.json", j.dump());
  const auto r = testing::run_ktune("space --count --kernel " + d.path("none.json") + " --problem 1000");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("constraints[1]: B % 3 == 0 (rejects every config)"), std::string::npos) << r.out;
  const auto small = testing::run_ktune("space --count --kernel " + d.path("none.json") + " --problem 100");
  EXPECT_NE(small.out.find("constraints[0]: B <= n (rejects 2 of 3)"), std::string::npos) << small.out;
  // A dry run whose every problem no config serves would tune nothing: exit 2; one problem served is a run.
  const auto dry = testing::run_ktune("tune --dry-run --kernel " + d.path("none.json") + " --problem 1000 --problem 100");
  EXPECT_EQ(dry.status, 2) << dry.out;
  EXPECT_NE(dry.out.find("no problem of the run has a valid config"), std::string::npos) << dry.out;
  ojson some = SpecDir::base();
  some["constraints"] = {"B <= n"};
  d.write("some.json", some.dump());
  const auto part = testing::run_ktune("tune --dry-run --kernel " + d.path("some.json") + " --problem 10 --problem 1000");
  EXPECT_EQ(part.status, 0) << part.out;
  EXPECT_NE(part.out.find("note:"), std::string::npos) << "problem 10: B <= n rejects every config: " << part.out;
}

// A loop of launches (docs/KERNEL_SPEC.md, "Loops"): T rounds of a step that reads x and writes
// y, its counter t passed as a scalar, x and y swapped after every round; after an odd number of
// rounds x's data is in y's buffer, and a copy puts it back. The plan holds every launch, and it
// travels to the worker whole.
ojson rounds_spec() {
  return ojson::parse(R"JSON({
    "ktune_kernel_spec": 1, "name": "rounds", "sources": ["k.cu"], "params_as": "template", "dims": ["n", "T"],
    "params": {"B": [64, 128]},
    "launch": {"kernel": "scale<{B}>", "grid": ["ceil_div(n, B)"], "block": ["B"], "repeat": "T", "index": "t",
               "swap": [["x", "y"]], "args": ["x", "y", "n_", "t"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "inout"},
             {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "temp"},
             {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"},
             {"name": "t", "kind": "scalar", "dtype": "f32", "value": "t + 1"}],
    "check": {"none": "the plan only"}})JSON");
}

TEST(KernelSpec, ALoopUnrollsIntoItsLaunchesWithItsCounterAndSwaps) {
  SpecDir d;
  const std::string op = load_kernel_spec_text(rounds_spec().dump(), "rounds.json", d.dir());
  const Family f = find_family(op);
  const LaunchPlan odd = f.launch_plan(Config{{"B", 64}}, Problem::parse(op, "1000x3"));
  ASSERT_EQ(odd.steps.size(), 4u) << "three rounds and the copy back";
  for (int k = 0; k < 3; ++k) {
    const LaunchStep& s = odd.steps[size_t(k)];
    EXPECT_EQ(s.kernel, 0);
    EXPECT_EQ(s.grid[0], 16u);
    EXPECT_EQ(s.set_args, (std::vector<int>{3})) << "t";
    EXPECT_EQ(s.set_values, (std::vector<double>{double(k + 1)})) << "round " << k;
    if (k == 1) {
      EXPECT_EQ(s.alias_args, (std::vector<int>{0, 1})) << "the second round reads y and writes x";
      EXPECT_EQ(s.alias_of, (std::vector<int>{1, 0}));
    } else {
      EXPECT_TRUE(s.alias_args.empty()) << "round " << k;
    }
  }
  const LaunchStep& copy = odd.steps[3];
  EXPECT_TRUE(copy.copy());
  EXPECT_EQ(copy.copy_from, 1);
  EXPECT_EQ(copy.copy_to, 0);
  EXPECT_EQ(copy.copy_bytes, 4000u);
  EXPECT_EQ(f.launch_plan(Config{{"B", 64}}, Problem::parse(op, "1000x4")).steps.size(), 4u) << "even: no copy";
  const LaunchPlan back = plan_from_json(nlohmann::json::parse(plan_to_json(odd).dump()));
  ASSERT_EQ(back.steps.size(), 4u);
  EXPECT_EQ(back.steps[1].set_values, odd.steps[1].set_values);
  EXPECT_EQ(back.steps[1].alias_of, odd.steps[1].alias_of);
  EXPECT_EQ(back.steps[3].copy_bytes, 4000u);
  EXPECT_EQ(back.steps[3].copy_from, 1);
  EXPECT_TRUE(back.steps[3].copy());
  // A launch passes the round's counter and the swapped buffers.
  float x = 0;
  BufferArgs a(Problem::parse(op, "1000x3"), {&x}, CUdeviceptr(0x10000));
  a.bind(odd);
  EXPECT_EQ(*static_cast<const void* const*>(a.params()[0]), &x);
  EXPECT_EQ(*static_cast<const CUdeviceptr*>(a.params()[1]), CUdeviceptr(0x10000)) << "y: ktune's";
}

// Loops within loops, a counter read by the inner loop's rounds, and a step of no rounds (a step
// that only some configs run): its limits do not bind the others.
TEST(KernelSpec, LoopsNestAndAStepOfNoRoundsIsNotLaunched) {
  SpecDir d;
  ojson j = rounds_spec();
  j["launch"] = ojson::parse(R"JSON([
    {"repeat": 2, "index": "i", "steps": [
      {"repeat": "i + 1", "index": "t", "kernel": "scale<{B}>", "grid": ["ceil_div(n, B)"], "block": ["B"],
       "args": ["x", "y", "n_", "t"]}]},
    {"repeat": "B == 64", "kernel": "scale<{B}>", "grid": [1], "block": ["B * 16"], "args": ["x", "y", "n_", "t0"]}])JSON");
  j["args"][3]["value"] = "10 * i + t";
  j["args"].push_back({{"name", "t0"}, {"kind", "scalar"}, {"dtype", "f32"}, {"value", 7}});
  const std::string op = load_kernel_spec_text(j.dump(), "nested.json", d.dir());
  const Family f = find_family(op);
  const Problem p = Problem::parse(op, "1000x1");
  std::vector<double> values;
  const LaunchPlan b64 = f.launch_plan(Config{{"B", 64}}, p);
  for (const auto& s : b64.steps) values.push_back(s.set_values.empty() ? -1 : s.set_values[0]);
  EXPECT_EQ(values, (std::vector<double>{0, 10, 11, -1})) << "i 0: t 0; i 1: t 0, 1; then the B == 64 step";
  EXPECT_EQ(b64.steps[3].block[0], 1024u);
  EXPECT_EQ(f.launch_plan(Config{{"B", 128}}, p).steps.size(), 3u);
  // B 128 would make the last step 2048 threads, but that step does not run then.
  EXPECT_TRUE(f.valid(Config{{"B", 128}}, p, DeviceInfo::nominal("sm_90")));
  EXPECT_TRUE(f.valid(Config{{"B", 64}}, p, DeviceInfo::nominal("sm_90")));
}

// A kernel version chosen by a parameter: one step per version, each run only where VER says
// ("repeat": "VER == v"). A template parameter read only there is used; a step a config skips is
// not compiled for it (its kernel's place holds a launched step's kernel).
TEST(KernelSpec, AParameterChoosesAKernelVersionByItsSteps) {
  SpecDir d;
  ojson j = SpecDir::base();
  j["params"] = {{"B", {64, 128}}, {"VER", {1, 2}}};
  j["launch"] = ojson::parse(R"JSON([
    {"kernel": "scale<{B}>", "grid": ["ceil_div(n, B)"], "block": ["B"], "repeat": "VER == 1"},
    {"kernel": "scale_ref", "grid": ["ceil_div(n, 2 * B)"], "block": ["2 * B"], "repeat": "VER == 2"}])JSON");
  const std::string op = load_kernel_spec_text(j.dump(), "versions.json", d.dir());
  const Family f = find_family(op);
  const Problem p = Problem::parse(op, "1000");
  const LaunchPlan v1 = f.launch_plan(Config{{"B", 64}, {"VER", 1}}, p), v2 = f.launch_plan(Config{{"B", 64}, {"VER", 2}}, p);
  ASSERT_EQ(v1.steps.size(), 1u);
  ASSERT_EQ(v2.steps.size(), 1u);
  EXPECT_EQ(v1.steps[0].kernel, 0);
  EXPECT_EQ(v2.steps[0].kernel, 1);
  EXPECT_EQ(v2.steps[0].block[0], 128u);
  EXPECT_EQ(f.kernel_names(Config{{"B", 64}, {"VER", 1}}, p), (std::vector<std::string>{"scale<64>", "scale<64>"}));
  EXPECT_EQ(f.kernel_names(Config{{"B", 64}, {"VER", 2}}, p), (std::vector<std::string>{"scale_ref", "scale_ref"}));
  // VER 2 at B 1024 would launch 2048 threads; VER 1 at B 1024 does not run that step.
  j["params"]["B"] = {64, 1024};
  const std::string wide = load_kernel_spec_text(j.dump(), "wide.json", d.dir());
  const Family w = find_family(wide);
  const Problem q = Problem::parse(wide, "4000");
  EXPECT_TRUE(w.valid(Config{{"B", 1024}, {"VER", 1}}, q, DeviceInfo::nominal("sm_90")));
  EXPECT_FALSE(w.valid(Config{{"B", 1024}, {"VER", 2}}, q, DeviceInfo::nominal("sm_90")));
}

// Swaps in loops within loops: an inner loop puts its pair back where the enclosing loop's swap
// had them, so that no two arguments pass one buffer; a pair named temporary first keeps the
// caller's buffer; a scalar of counters that is no value at counter 0 is only computed where its
// step runs; a limit is checked at the counters' last round too.
TEST(KernelSpec, LoopsInLoopsKeepTheirSwapsApartAndTheirLimitsAtEveryEnd) {
  SpecDir d;
  ojson j = rounds_spec();
  j["args"].push_back({{"name", "z"}, {"kind", "buffer"}, {"dtype", "f32"}, {"count", "n"}, {"intent", "temp"}});
  j["launch"] = ojson::parse(R"JSON({"repeat": 2, "index": "t", "swap": [["x", "y"]], "steps": [
    {"repeat": 1, "swap": [["x", "z"]], "steps": [{"kernel": "scale<{B}>", "grid": [1], "block": ["B"], "args": ["x", "z", "n_", "t"]}]},
    {"kernel": "scale<{B}>", "grid": [1], "block": ["B"], "args": ["x", "y", "n_", "t"]}]})JSON");
  const std::string op = load_kernel_spec_text(j.dump(), "nested-swaps.json", d.dir());
  const LaunchPlan plan = find_family(op).launch_plan(Config{{"B", 64}}, Problem::parse(op, "1000x3"));
  ASSERT_EQ(plan.steps.size(), 6u);
  EXPECT_TRUE(plan.steps[1].copy());
  EXPECT_EQ(plan.steps[1].copy_from, 4) << "z's buffer";
  EXPECT_EQ(plan.steps[1].copy_to, 0) << "into x's";
  EXPECT_TRUE(plan.steps[2].alias_args.empty());
  EXPECT_EQ(plan.steps[3].alias_args, (std::vector<int>{0})) << "round 2: x passes y's buffer";
  EXPECT_EQ(plan.steps[3].alias_of, (std::vector<int>{1}));
  ASSERT_TRUE(plan.steps[4].copy());
  EXPECT_EQ(plan.steps[4].copy_from, 4);
  EXPECT_EQ(plan.steps[4].copy_to, 1) << "back into the buffer x held in that round";
  EXPECT_EQ(plan.steps[5].alias_args, (std::vector<int>{0, 1}));
  EXPECT_EQ(plan.steps[5].alias_of, (std::vector<int>{1, 0})) << "x and y pass two buffers";
  // The temporary named first: the caller's x still gets the last round after odd rounds.
  j = rounds_spec();
  j["launch"]["swap"] = ojson::parse(R"([["y", "x"]])");
  const std::string rev = load_kernel_spec_text(j.dump(), "reversed.json", d.dir());
  const LaunchPlan odd = find_family(rev).launch_plan(Config{{"B", 64}}, Problem::parse(rev, "1000x3"));
  ASSERT_TRUE(odd.steps.back().copy());
  EXPECT_EQ(odd.steps.back().copy_to, 0) << "into the caller's x";
  // k - 1 rounds of a u32 k - 1: no value at k 0, where no step runs.
  j = rounds_spec();
  j["launch"] = ojson::parse(R"JSON({"repeat": 3, "index": "k", "steps": [
    {"repeat": "k", "index": "t", "kernel": "scale<{B}>", "grid": [1], "block": ["B"], "args": ["x", "y", "n_", "t"]}]})JSON");
  j["args"][3] = {{"name", "t"}, {"kind", "scalar"}, {"dtype", "u32"}, {"value", "k - 1"}};
  const std::string tri = load_kernel_spec_text(j.dump(), "triangle.json", d.dir());
  const LaunchPlan t = find_family(tri).launch_plan(Config{{"B", 64}}, Problem::parse(tri, "1000x3"));
  ASSERT_EQ(t.steps.size(), 3u);
  EXPECT_EQ(t.steps[0].set_values, (std::vector<double>{0}));
  EXPECT_EQ(t.steps[2].set_values, (std::vector<double>{1}));
  // A block that grows with the round: checked at its last round as at its first.
  j = rounds_spec();
  j["params"]["B"] = {64, 512};
  j["launch"]["block"] = {"B * (t + 1)"};
  const std::string grow = load_kernel_spec_text(j.dump(), "grow.json", d.dir());
  const Family g = find_family(grow);
  EXPECT_TRUE(g.valid(Config{{"B", 64}}, Problem::parse(grow, "1000x3"), DeviceInfo::nominal("sm_90")));
  EXPECT_FALSE(g.valid(Config{{"B", 512}}, Problem::parse(grow, "1000x3"), DeviceInfo::nominal("sm_90")))
      << "1536 threads in its third round";
}

// Planning op's config c at problem `shape` must fail with a UsageError whose message holds `error`.
void expect_plan_refused(const std::string& op, const Config& c, const std::string& shape, const std::string& error) {
  try {
    find_family(op).launch_plan(c, Problem::parse(op, shape));
    ADD_FAILURE() << "planned; expected: " << error;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(error), std::string::npos) << e.what();
  }
}

// A malformed variant of a spec: what it is, the edit that makes it, and the error it must raise.
struct SpecEdit {
  const char* what;
  std::function<void(ojson&)> edit;
  const char* error;
};

TEST(KernelSpec, AMalformedLoopIsRefusedNamingItsField) {
  SpecDir d;
  const SpecEdit cases[] = {
      {"counter named like a parameter", [](ojson& j) { j["launch"]["index"] = "B"; }, "launch.index: 'B' is a parameter"},
      {"index without rounds", [](ojson& j) { j["launch"].erase("repeat"); }, "launch.index: only a loop has one"},
      {"a loop without rounds",
       [](ojson& j) {
         j["launch"] = ojson::parse(R"([{"steps": [{"kernel": "k", "grid": [1], "block": [1]}]}])");
         j["args"][3]["value"] = 1;
       },
       "launch[0].repeat: missing"},
      {"swap of an input", [](ojson& j) { j["args"][0]["intent"] = "in"; j["args"].push_back({{"name", "o"}, {"kind", "buffer"}, {"dtype", "f32"}, {"count", "n"}, {"intent", "out"}}); j["launch"]["args"] = {"x", "y", "n_", "t", "o"}; },
       "launch.swap[0]: 'x' is an input"},
      {"swap of a scalar", [](ojson& j) { j["launch"]["swap"] = ojson::parse(R"([["x", "n_"]])"); }, "launch.swap[0]: 'n_' is a scalar"},
      {"swap of different types", [](ojson& j) { j["args"][1]["dtype"] = "f64"; }, "launch.swap[0]: 'x' and 'y' hold different"},
      {"a counter read outside its loop", [](ojson& j) { j["constraints"] = {"t < 4"}; }, "constraints[0]: 't < 4' reads t, a loop's counter"},
      {"a counter read by a size", [](ojson& j) { j["args"][1]["count"] = "n + t"; }, "args[1].count:"},
      {"a counter passed outside its loop",
       [](ojson& j) {
         j["launch"] = ojson::array({j["launch"], {{"kernel", "scale<{B}>"}, {"grid", {1}}, {"block", {"B"}}, {"args", {"x", "y", "n_", "t"}}}});
       },
       "args[3].value: 't + 1' reads t, but the step of kernel scale<{B}> passes it outside that loop"},
      {"a literal step argument", [](ojson& j) { j["launch"]["args"][3] = 5; }, "launch.args[3]: expected the name of one of the spec's args"},
  };
  for (const auto& c : cases) {
    ojson j = rounds_spec();
    c.edit(j);
    try {
      load_kernel_spec_text(j.dump(), "bad.json", d.dir());
      ADD_FAILURE() << c.what << ": accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(c.error), std::string::npos) << c.what << ": " << e.what();
    }
  }
  // Rounds that are no whole number at a problem: the plan's error, naming the field.
  ojson j = rounds_spec();
  j["launch"]["repeat"] = "T / 2";
  expect_plan_refused(load_kernel_spec_text(j.dump(), "half.json", d.dir()), Config{{"B", 64}}, "1000x3",
                      "launch.repeat: 'T / 2' gives 1.5 rounds");
}

// A loop that runs while a condition holds (a BFS's "changed" flag). Where a round's grid reads
// the counter (unrolled): every round up to its repeat, each after its reset and ending in a test
// of the condition; a test that fails goes on past the loop, after the copies that put swapped
// buffers back where the rounds were odd; the last round's test marks the loop's end (the
// condition holding there fails the call). Else the plan holds two rounds the launch repeats.
ojson while_spec(bool unrolled = true) {
  ojson j = rounds_spec();
  if (unrolled) j["launch"]["grid"] = {"ceil_div(n, B) + 0 * t"};
  j["args"].push_back({{"name", "flag"}, {"kind", "buffer"}, {"dtype", "i32"}, {"count", 1}, {"intent", "temp"}, {"fill", "zeros"}});
  j["launch"]["repeat"] = 3;
  j["launch"]["while"] = "flag != 0 and t < n";
  j["launch"]["reset"] = {"flag"};
  j["launch"]["args"] = {"x", "y", "n_", "t", "flag"};
  return j;
}

// Rounds that differ only in the scalars their steps pass and the swaps' parity: an entry that
// starts the counter, two rounds (the second with the swapped buffers), the second's test going
// back to the first; the first's test leaves to the copy back (an odd number of rounds), the
// second's past it; the kernels' counter scalars follow the counter as the launch runs.
TEST(KernelSpec, AWhileLoopOfLikeRoundsHoldsTwoAndRepeatsThem) {
  SpecDir d;
  ojson j = while_spec(false);
  j["launch"]["repeat"] = 1000000;
  const std::string op = load_kernel_spec_text(j.dump(), "while-repeated.json", d.dir());
  const KernelSpec& s = spec_of(op);
  const LaunchPlan plan = find_family(op).launch_plan(Config{{"B", 64}}, Problem::parse(op, "1000x9"));
  ASSERT_EQ(plan.steps.size(), 8u) << "entry; reset, kernel, test twice; the copy back";
  EXPECT_TRUE(plan.steps[0].round_entry);
  EXPECT_EQ(plan.steps[0].round_loop, 0);
  const int t_at = int(s.first_loop_name());
  for (int parity = 0; parity < 2; ++parity) {
    const LaunchStep &reset = plan.steps[size_t(1 + 3 * parity)], &kernel = plan.steps[size_t(2 + 3 * parity)],
                     &test = plan.steps[size_t(3 + 3 * parity)];
    EXPECT_EQ(reset.set_arg, 4);
    EXPECT_EQ(kernel.kernel, 0);
    EXPECT_EQ(kernel.round_loop, 0);
    EXPECT_EQ(kernel.round_index, t_at) << "t + 1 follows the counter as the launch runs";
    EXPECT_EQ(test.test, 0);
    EXPECT_EQ(test.round_loop, 0);
    EXPECT_EQ(test.round_max, 1000000);
    EXPECT_EQ(test.jump, parity == 0 ? 7 : 8) << "after an odd number of rounds, to the copy back";
    EXPECT_EQ(test.jump_back, parity == 0 ? -1 : 1) << "the second round's test goes back to the first round";
  }
  EXPECT_TRUE(plan.steps[2].alias_args.empty());
  EXPECT_EQ(plan.steps[5].alias_args, (std::vector<int>{0, 1})) << "the second round reads y and writes x";
  ASSERT_TRUE(plan.steps[7].copy());
  EXPECT_EQ(plan.steps[7].copy_from, 1);
  const LaunchPlan back = plan_from_json(nlohmann::json::parse(plan_to_json(plan).dump()));
  EXPECT_TRUE(back.steps[0].round_entry);
  EXPECT_EQ(back.steps[6].jump_back, 1);
  EXPECT_EQ(back.steps[6].round_max, 1000000);
  EXPECT_EQ(back.steps[2].round_index, t_at);
  // One round at most: the first round alone, its test leaving to the copy back.
  j["launch"]["repeat"] = 1;
  const std::string one = load_kernel_spec_text(j.dump(), "while-one.json", d.dir());
  const LaunchPlan p1 = find_family(one).launch_plan(Config{{"B", 64}}, Problem::parse(one, "1000x9"));
  ASSERT_EQ(p1.steps.size(), 5u);
  EXPECT_EQ(p1.steps[3].jump, 4);
  EXPECT_EQ(p1.steps[3].round_max, 1);
  // A nested step passing a scalar of the counter: every round unrolled.
  j["launch"]["repeat"] = 3;
  ojson inner = j["launch"];
  inner.erase("while"), inner.erase("reset"), inner.erase("swap"), inner.erase("index");
  inner["repeat"] = 1;
  j["launch"] = {{"repeat", 3}, {"index", "t"}, {"while", "flag != 0"}, {"reset", {"flag"}}, {"steps", {inner}}};
  const std::string nested = load_kernel_spec_text(j.dump(), "while-nested.json", d.dir());
  const LaunchPlan pn = find_family(nested).launch_plan(Config{{"B", 64}}, Problem::parse(nested, "1000x9"));
  EXPECT_EQ(pn.steps.size(), 9u) << "three rounds of reset, kernel, test";
  EXPECT_FALSE(pn.steps[0].round_entry);
}

TEST(KernelSpec, ALoopWhileAConditionHoldsTestsItAfterEveryRound) {
  SpecDir d;
  const std::string op = load_kernel_spec_text(while_spec().dump(), "while.json", d.dir());
  const KernelSpec& s = spec_of(op);
  ASSERT_EQ(s.whiles.size(), 1u);
  EXPECT_EQ(s.order.at(0).until, 0);
  EXPECT_EQ(s.order.at(0).resets, (std::vector<int>{4}));
  const Family f = find_family(op);
  const LaunchPlan plan = f.launch_plan(Config{{"B", 64}}, Problem::parse(op, "1000x9"));
  ASSERT_EQ(plan.steps.size(), 10u) << "three rounds of reset, kernel and test; the copy back after an odd number";
  const size_t t_at = s.first_loop_name();
  for (int k = 0; k < 3; ++k) {
    const LaunchStep &reset = plan.steps[size_t(3 * k)], &kernel = plan.steps[size_t(3 * k + 1)], &test = plan.steps[size_t(3 * k + 2)];
    EXPECT_TRUE(reset.control());
    EXPECT_EQ(reset.set_arg, 4) << "round " << k;
    EXPECT_EQ(kernel.kernel, 0);
    EXPECT_EQ(kernel.set_values, (std::vector<double>{double(k + 1)}));
    EXPECT_TRUE(test.control());
    EXPECT_FALSE(test.copy());
    EXPECT_EQ(test.test, 0);
    EXPECT_EQ(test.test_last, k == 2);
    ASSERT_GT(test.test_values.size(), t_at);
    EXPECT_EQ(test.test_values[t_at], double(k)) << "the condition reads the round's counter";
    // Leaving after 1 or 3 rounds (odd): to the copy back; after 2: past it.
    EXPECT_EQ(test.jump, k == 1 ? 10 : 9) << "round " << k;
  }
  EXPECT_EQ(plan.steps[4].alias_args, (std::vector<int>{0, 1})) << "the second round reads y and writes x";
  ASSERT_TRUE(plan.steps[9].copy());
  EXPECT_EQ(plan.steps[9].copy_from, 1);
  EXPECT_EQ(plan.steps[9].copy_to, 0);
  // The plan travels to the worker whole.
  const LaunchPlan back = plan_from_json(nlohmann::json::parse(plan_to_json(plan).dump()));
  ASSERT_EQ(back.steps.size(), 10u);
  EXPECT_EQ(back.steps[0].set_arg, 4);
  EXPECT_EQ(back.steps[5].test, 0);
  EXPECT_EQ(back.steps[5].jump, 10);
  EXPECT_TRUE(back.steps[8].test_last);
  EXPECT_EQ(back.steps[8].test_values, plan.steps[8].test_values);
  // The condition: the flag's first element after the names, and the dimension n by its value.
  const SpecWhile& w = s.whiles[0];
  std::vector<double> v = plan.steps[2].test_values;
  v.resize(v.size() + w.slots.size(), 0.0);
  const size_t flag_at = plan.steps[2].test_values.size() +
                         size_t(std::find(w.slots.begin(), w.slots.end(), 4) - w.slots.begin());
  ASSERT_LT(flag_at, v.size());
  EXPECT_EQ(w.cond.eval(v), 0) << "flag 0: leave";
  v[flag_at] = 1;
  EXPECT_EQ(w.cond.eval(v), 1) << "flag 1: another round";
  // A swapped flag is reset and read where the round passes it.
  ojson j = while_spec();
  j["args"].push_back({{"name", "flag2"}, {"kind", "buffer"}, {"dtype", "i32"}, {"count", 1}, {"intent", "temp"}});
  j["launch"]["swap"] = ojson::parse(R"([["x", "y"], ["flag", "flag2"]])");
  j["launch"]["args"].push_back("flag2");
  const std::string sw = load_kernel_spec_text(j.dump(), "while-swap.json", d.dir());
  const LaunchPlan p2 = find_family(sw).launch_plan(Config{{"B", 64}}, Problem::parse(sw, "1000x9"));
  EXPECT_TRUE(p2.steps[0].alias_args.empty());
  EXPECT_EQ(p2.steps[3].alias_args, (std::vector<int>{4})) << "round 2 resets the buffer flag passes then: flag2's";
  EXPECT_EQ(p2.steps[3].alias_of, (std::vector<int>{5}));
  EXPECT_EQ(p2.steps[5].alias_args, (std::vector<int>{4})) << "and tests it there";
  ASSERT_EQ(p2.steps.size(), 11u) << "the odd tail puts x and flag back";
  EXPECT_EQ(p2.steps[5].jump, 11);
  EXPECT_EQ(p2.steps[2].jump, 9);
}

// max_of / min_of / sum_of over a buffer: a slot of its own that reads the whole buffer.
TEST(KernelSpec, AConditionMayReduceAWholeBuffer) {
  SpecDir d;
  ojson j = while_spec();
  j["launch"]["while"] = "max_of(y) > 1e-6 and sum_of( x ) > 0 or flag";
  const std::string op = load_kernel_spec_text(j.dump(), "while-max.json", d.dir());
  const KernelSpec& s = spec_of(op);
  const SpecWhile& w = s.whiles.at(0);
  ASSERT_EQ(w.slots.size(), w.reads.size());
  auto slot = [&](int arg, SpecWhile::Read r) {
    for (size_t i = 0; i < w.slots.size(); ++i)
      if (w.slots[i] == arg && w.reads[i] == r) return int(i);
    return -1;
  };
  const int y_max = slot(1, SpecWhile::max), x_sum = slot(0, SpecWhile::sum), flag = slot(4, SpecWhile::first);
  ASSERT_GE(y_max, 0);
  ASSERT_GE(x_sum, 0);
  ASSERT_GE(flag, 0);
  EXPECT_EQ(w.text, "max_of(y) > 1e-6 and sum_of( x ) > 0 or flag");
  std::vector<double> v(s.names.size() + w.slots.size(), 0.0);
  v[s.names.size() + size_t(y_max)] = 1, v[s.names.size() + size_t(x_sum)] = 2;
  EXPECT_EQ(w.cond.eval(v), 1);
  v[s.names.size() + size_t(x_sum)] = -2;
  EXPECT_EQ(w.cond.eval(v), 0);
  // The whole buffers reduce on the GPU: the source ends with the reduction, every list's kernels
  // with it, and each test names it and the plan's scratch for it; a spec without such a read has none.
  EXPECT_TRUE(s.whole_reads);
  EXPECT_NE(s.source.find("#include \"spec_reduce.cuh\""), std::string::npos);
  const Config c = find_family(op).canonical(find_family(op).default_config(Problem::parse(op, "1000x8"), DeviceInfo::nominal("sm_90")));
  const std::vector<std::string> names = s.kernel_names(s.steps, c, Problem::parse(op, "1000x8"));
  ASSERT_EQ(names.size(), s.steps.size() + 1);
  EXPECT_EQ(names.back(), "ktune_spec_reduce");
  const LaunchPlan plan = find_family(op).launch_plan(c, Problem::parse(op, "1000x8"));
  int tests = 0;
  for (const LaunchStep& st : plan.steps)
    if (st.test >= 0) {
      ++tests;
      EXPECT_EQ(st.reduce_kernel, int(s.steps.size()));
      EXPECT_GE(st.reduce_scratch, 0);
      EXPECT_LE(size_t(st.reduce_scratch) + kReduceScratchBytes, plan.workspace_bytes);
    }
  EXPECT_GT(tests, 0);
  const std::string first = load_kernel_spec_text(while_spec().dump(), "while-first.json", d.dir());
  EXPECT_FALSE(spec_of(first).whole_reads);
  for (const LaunchStep& st : find_family(first).launch_plan(c, Problem::parse(first, "1000x8")).steps) EXPECT_EQ(st.reduce_kernel, -1);
  for (const auto& [cond, error] : std::vector<std::pair<std::string, std::string>>{
           {"max_of(n_) > 0", "max_of reads a buffer; 'n_' is a scalar"},
           {"max_of(z) > 0", "launch.while: 'z'"},
           {"max_of y > 0", "max_of takes a buffer argument's name in parentheses"},
           {"n_ > 0 and flag", "reads 'n_', a scalar argument: a condition reads buffers"}}) {
    ojson k = while_spec();
    k["launch"]["while"] = cond;
    expect_refused(k, d, error);
  }
}

TEST(KernelSpec, AMalformedWhileLoopIsRefusedNamingItsField) {
  SpecDir d;
  const SpecEdit cases[] = {
      {"while without rounds", [](ojson& j) { j["launch"].erase("repeat"); }, "launch.index: only a loop has one"},
      {"reset without while", [](ojson& j) { j["launch"].erase("while"); }, "launch.reset: only a loop that runs while"},
      {"a condition of no buffer", [](ojson& j) { j["launch"]["while"] = "t < 2"; }, "launch.while: 't < 2' reads no buffer"},
      {"a condition of the device", [](ojson& j) { j["launch"]["while"] = "flag < sm_count"; }, "reads sm_count, a device value"},
      {"a reset of an output",
       [](ojson& j) { j["launch"]["reset"] = {"x"}; },
       "launch.reset[0]: 'x' is not a temporary with a fill"},
      {"a reset of a temporary without a fill",
       [](ojson& j) { j["launch"]["reset"] = {"y"}; },
       "launch.reset[0]: 'y' is not a temporary with a fill"},
      {"a counter of another loop",
       [](ojson& j) {
         j["launch"] = ojson::array({j["launch"], {{"repeat", 2}, {"index", "u"}, {"kernel", "scale<{B}>"}, {"grid", {1}}, {"block", {"B"}}, {"args", {"x", "y", "n_", "t0", "flag"}}}});
         j["launch"][0]["while"] = "flag != 0 and u < 2";
         j["args"].push_back({{"name", "t0"}, {"kind", "scalar"}, {"dtype", "f32"}, {"value", 1}});
       },
       "launch[0].while: 'flag != 0 and u < 2' reads u, the counter of a loop it is not in"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    ojson j = while_spec();
    c.edit(j);
    expect_refused(j, d, c.error);
  }
  // Setup kernels get no temporaries: a loop of theirs neither reads nor resets one.
  ojson j = while_spec();
  j["setup"] = {{"kernel", "scale<64>"},
                {"launch", {{"repeat", 2}, {"while", "flag != 0"}, {"grid", {1}}, {"block", {64}}, {"args", {"x"}}}}};
  j["args"][0]["intent"] = "inout";
  expect_refused(j, d, "setup: a loop's condition reads 'flag', a temporary");
  j["setup"]["launch"]["while"] = "x > 0";
  j["setup"]["launch"]["reset"] = {"flag"};
  expect_refused(j, d, "setup: a loop resets 'flag', a temporary");
}

// A symbol filled with a slice of its buffer: a tile of a long array a round, as mri-q's host loop
// copies kVals into __constant__ memory before each launch; a slice that follows a parameter only
// is copied once, before the first launch; a slice past its buffer is the plan's error.
TEST(KernelSpec, ASymbolTakesATileOfItsBufferEveryRound) {
  SpecDir d;
  ojson j = ojson::parse(R"JSON({
    "name": "tiles", "sources": ["k.cu"], "params_as": "template", "dims": ["n", "K"],
    "params": {"B": [64, 128], "TILE": [64, 256]},
    "launch": {"repeat": "ceil_div(K, TILE)", "index": "t", "kernel": "scale<{B}>", "grid": ["ceil_div(n, B)"],
               "block": ["B"], "args": ["x", "y", "n_", "kt"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "inout"},
             {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "temp"},
             {"name": "kvals", "kind": "buffer", "dtype": "f32", "count": "K"},
             {"name": "w", "kind": "buffer", "dtype": "f32", "count": "K"},
             {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"},
             {"name": "kt", "kind": "scalar", "dtype": "f32", "value": "min(TILE, K - t * TILE)"}],
    "symbols": [{"name": "ck", "from": "kvals", "offset": "t * TILE", "count": "min(TILE, K - t * TILE)"},
                {"name": "cw", "from": "w", "count": "TILE"}],
    "check": {"none": "the plan only"}})JSON");
  const std::string op = load_kernel_spec_text(j.dump(), "tiles.json", d.dir());
  EXPECT_TRUE(spec_of(op).symbols[0].planned);
  const Family f = find_family(op);
  const LaunchPlan plan = f.launch_plan(Config{{"B", 64}, {"TILE", 256}}, Problem::parse(op, "1000x600"));
  ASSERT_EQ(plan.steps.size(), 7u) << "cw once, then each round's ck tile and launch";
  EXPECT_EQ(plan.steps[0].symbol, 0);
  EXPECT_EQ(plan.steps[1].symbol, 1);
  EXPECT_EQ(plan.steps[1].copy_bytes, 1024u) << "cw: TILE floats";
  const unsigned long long offsets[3] = {0, 256, 512}, bytes[3] = {1024, 1024, 352};
  for (int k = 0; k < 3; ++k) {
    const LaunchStep& copy = plan.steps[size_t(k == 0 ? 0 : 2 * k + 1)];
    EXPECT_TRUE(copy.control());
    EXPECT_FALSE(copy.copy());
    EXPECT_EQ(copy.symbol, 0) << "round " << k;
    EXPECT_EQ(copy.symbol_offset, offsets[k]) << "round " << k;
    EXPECT_EQ(copy.copy_bytes, bytes[k]) << "round " << k;
  }
  EXPECT_EQ(plan.steps[2].kernel, 0);
  EXPECT_EQ(plan.steps[6].kernel, 0);
  EXPECT_EQ(plan.steps[6].set_values, (std::vector<double>{88}));
  const LaunchPlan back = plan_from_json(nlohmann::json::parse(plan_to_json(plan).dump()));
  ASSERT_EQ(back.steps.size(), 7u);
  EXPECT_EQ(back.steps[5].symbol, 0);
  EXPECT_EQ(back.steps[5].symbol_offset, 512u);
  // A reference none of whose steps is in the loop gets the slice at counters 0; an offset
  // without a count takes the rest of the buffer; a parameter read only by a slice is used.
  {
    ojson r = j;
    r["params"]["C"] = {1, 2};
    r["symbols"][1] = {{"name", "cw"}, {"from", "w"}, {"offset", "C"}};
    r["check"] = ojson::parse(R"({"reference": {"kernel": "scale_ref", "launch": {"grid": [1], "block": [32], "args": ["x", "y", "n_"]}}})");
    const std::string ref = load_kernel_spec_text(r.dump(), "tiles-ref.json", d.dir());
    const KernelSpec& rs = spec_of(ref);
    const LaunchPlan rp = rs.plan(rs.reference_steps, rs.reference_config, Problem::parse(ref, "1000x600"));
    ASSERT_EQ(rp.steps.size(), 3u) << "ck's and cw's slices at counters 0, then the reference";
    EXPECT_EQ(rp.steps[0].symbol, 0);
    EXPECT_EQ(rp.steps[0].copy_bytes, 256u) << "ck: the first tile at the reference's TILE 64";
    EXPECT_EQ(rp.steps[1].symbol, 1);
    EXPECT_EQ(rp.steps[1].symbol_offset, 1u);
    EXPECT_EQ(rp.steps[1].copy_bytes, 599u * 4) << "cw: from element C on, the rest of w";
    EXPECT_EQ(rp.steps[2].kernel, 0);
  }
  // A slice past its buffer: the plan names the symbol and the elements.
  j["symbols"][0]["offset"] = "t * TILE + 1";
  expect_plan_refused(load_kernel_spec_text(j.dump(), "past.json", d.dir()), Config{{"B", 64}, {"TILE", 256}}, "1000x600",
                      "symbols[0]: elements 513 to 601 of kvals, which holds 600");
  // Only a symbol from a buffer takes a slice; a slice reads no device value.
  for (const auto& [edit, error] : std::vector<std::pair<std::function<void(ojson&)>, std::string>>{
           {[](ojson& k) { k["symbols"][1] = {{"name", "cw"}, {"dtype", "f32"}, {"count", 4}, {"fill", "ones"}, {"offset", 1}}; },
            "symbols[1].offset: only a symbol filled from a buffer"},
           {[](ojson& k) { k["symbols"][0]["offset"] = "sm_count"; }, "symbols[0].offset: 'sm_count' reads sm_count, a device value"}}) {
    ojson k = j;
    edit(k);
    expect_refused(k, d, error);
  }
}

// A buffer passed from an element on (host code's `d_rmu + i * CHUNK`): the plan holds each round's
// byte offset at the argument's place in the step; an offset past the buffer is the plan's error.
TEST(KernelSpec, AStepPassesABufferFromAnElementOnEveryRound) {
  SpecDir d;
  ojson j = ojson::parse(R"JSON({
    "name": "chunks", "sources": ["k.cu"], "params_as": "template", "dims": ["n"], "params": {"C": [100, 256]},
    "launch": {"repeat": "ceil_div(n, C)", "index": "t", "kernel": "scale<64>", "grid": [1], "block": [64],
               "args": [{"arg": "x", "offset": "t * C"}, {"arg": "y", "offset": "t * C"}, "c"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
             {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "c", "kind": "scalar", "dtype": "i32", "value": "min(C, n - t * C)"}],
    "check": {"none": "the plan only"}})JSON");
  const std::string op = load_kernel_spec_text(j.dump(), "chunks.json", d.dir());
  const LaunchPlan plan = find_family(op).launch_plan(Config{{"C", 256}}, Problem::parse(op, "600"));
  ASSERT_EQ(plan.steps.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(plan.steps[size_t(k)].offset_at, (std::vector<int>{0, 1})) << "round " << k;
    const unsigned long long b = 256ull * 4 * unsigned(k);
    EXPECT_EQ(plan.steps[size_t(k)].offset_bytes, (std::vector<unsigned long long>{b, b})) << "round " << k;
  }
  EXPECT_EQ(plan.steps[2].set_values, (std::vector<double>{88}));
  const LaunchPlan back = plan_from_json(nlohmann::json::parse(plan_to_json(plan).dump()));
  EXPECT_EQ(back.steps[2].offset_at, plan.steps[2].offset_at);
  EXPECT_EQ(back.steps[2].offset_bytes, plan.steps[2].offset_bytes);
  // A parameter read by an offset alone is a parameter of the kernel's work.
  {
    ojson k = j;
    k["launch"]["repeat"] = 2;
    k["args"][2]["value"] = "n";
    EXPECT_NO_THROW(load_kernel_spec_text(k.dump(), "offset-param.json", d.dir()));
  }
  // One round more than the buffer holds: the plan names the element and the buffer.
  j["launch"]["repeat"] = "ceil_div(n, C) + 1";
  j["args"][2]["value"] = "max(0, min(C, n - t * C))";
  expect_plan_refused(load_kernel_spec_text(j.dump(), "past-chunks.json", d.dir()), Config{{"C", 256}}, "600",
                      "args[0].offset: element 768 of x, which holds 600");
  // Only a buffer is passed at an offset.
  j = ojson::parse(j.dump());
  j["launch"]["args"][2] = {{"arg", "c"}, {"offset", 1}};
  expect_refused(j, d, "launch.args[2].arg: 'c' is a scalar");
}

// A grid and a scalar that read a buffer's first element at the launch (Parboil's BFS sizes each
// round's grid by the frontier's length, read back with cudaMemcpy, and passes the length by
// value): the plan marks the step, keeps the grid's place and the names' values, and the repeated
// loop stays two rounds; the grid limit does not evaluate what only the launch knows. Only a grid
// and a computed scalar read values: a block, an offset or a cluster with such a grid is refused.
TEST(KernelSpec, AGridAndAScalarReadABuffersValueAtTheLaunch) {
  SpecDir d;
  ojson j = ojson::parse(R"JSON({
    "name": "frontier", "sources": ["k.cu"], "params_as": "template", "dims": ["n"], "params": {"B": [64, 256]},
    "launch": [
      {"kernel": "scale<1>", "grid": [1], "block": [1], "args": ["x", "q", "n_", "qn"]},
      {"repeat": "n", "index": "level", "while": "qn2 > 0", "reset": ["qn2"], "swap": [["q", "q2"], ["qn", "qn2"]],
       "kernel": "scale<{B}>", "grid": ["ceil_div(qn, B)"], "block": ["B"],
       "args": ["x", "q", "count", "f", "q2", "qn2"]}],
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "inout"},
             {"name": "q", "kind": "buffer", "dtype": "i32", "count": "n", "intent": "temp"},
             {"name": "q2", "kind": "buffer", "dtype": "i32", "count": "n", "intent": "temp"},
             {"name": "qn", "kind": "buffer", "dtype": "i32", "count": 1, "intent": "temp", "fill": {"value": 1}},
             {"name": "qn2", "kind": "buffer", "dtype": "i32", "count": 1, "intent": "temp", "fill": "zeros"},
             {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"},
             {"name": "count", "kind": "scalar", "dtype": "i32", "value": "qn"},
             {"name": "f", "kind": "scalar", "dtype": "f32", "value": "level"}],
    "check": {"none": "the plan only"}})JSON");
  const std::string op = load_kernel_spec_text(j.dump(), "frontier.json", d.dir());
  const KernelSpec& s = spec_of(op);
  EXPECT_TRUE(s.args[6].follows_values);
  EXPECT_FALSE(s.args[6].follows_config);
  ASSERT_EQ(s.value_grids.size(), 1u);
  EXPECT_EQ(s.steps[1].value_grid, 0);
  EXPECT_EQ(s.steps[0].value_grid, -1);
  const Family f = find_family(op);
  const Problem p = Problem::parse(op, "1000");
  EXPECT_EQ(f.count(p, DeviceInfo::nominal("sm_90")), 2u) << "the grid limit passes what only the launch knows";
  const LaunchPlan plan = f.launch_plan(Config{{"B", 64}}, p);
  std::vector<const LaunchStep*> launches;
  for (const LaunchStep& st : plan.steps)
    if (st.kernel == 1) launches.push_back(&st);
  ASSERT_EQ(launches.size(), 2u) << "the loop repeated: two rounds in the plan";
  for (const LaunchStep* st : launches) {
    EXPECT_TRUE(st->reads_values);
    EXPECT_EQ(st->value_grid, 0);
    EXPECT_GE(st->round_loop, 0);
    EXPECT_EQ(st->test_values.size(), s.names.size()) << "the plan's values, which the read values join";
    EXPECT_EQ(st->set_args, (std::vector<int>{6, 7})) << "count from qn, f from the counter";
  }
  // The second round reads qn where the swap put it, though its kernel does not take qn.
  const auto& second = *launches[1];
  const auto at = std::find(second.alias_args.begin(), second.alias_args.end(), 3);
  ASSERT_NE(at, second.alias_args.end()) << "qn read from its own buffer in the swapped round";
  EXPECT_EQ(second.alias_of[size_t(at - second.alias_args.begin())], 4);
  EXPECT_FALSE(plan.steps[0].reads_values);
  const LaunchPlan back = plan_from_json(nlohmann::json::parse(plan_to_json(plan).dump()));
  ASSERT_EQ(back.steps.size(), plan.steps.size());
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    EXPECT_EQ(back.steps[i].reads_values, plan.steps[i].reads_values) << i;
    EXPECT_EQ(back.steps[i].value_grid, plan.steps[i].value_grid) << i;
  }
  // The device's values too: a grid-stride kernel's grid of so many blocks an SM, and the count it
  // takes, known on the GPU the launch runs on.
  {
    ojson k = SpecDir::base();
    k["launch"]["grid"] = {"min(ceil_div(n, B), 4 * sm_count)"};
    k["args"][2]["value"] = "min(n, sm_count * B)";
    const std::string dev = load_kernel_spec_text(k.dump(), "device.json", d.dir());
    const KernelSpec& ds = spec_of(dev);
    EXPECT_TRUE(ds.args[2].follows_values);
    EXPECT_EQ(ds.steps[0].value_grid, 0);
    const LaunchPlan dp = find_family(dev).launch_plan(Config{{"B", 128}}, Problem::parse(dev, "100000"));
    ASSERT_EQ(dp.steps.size(), 1u);
    EXPECT_TRUE(dp.steps[0].reads_values);
    EXPECT_EQ(dp.steps[0].set_args, (std::vector<int>{2}));
    k["launch"]["cluster"] = {2};
    expect_refused(k, d, "launch.cluster: a cluster shape must tile its grid");
  }
  // A buffer only read back (by the grid, here) needs no kernel that takes it; a repeated loop's
  // bound may pass the plan's 2^20 steps (a BFS of 2^24 nodes bounded by its node count).
  {
    ojson k = j;
    k["launch"][0]["args"] = {"x", "q", "n_"};
    const std::string only_read = load_kernel_spec_text(k.dump(), "only-read.json", d.dir());
    const LaunchPlan huge = find_family(only_read).launch_plan(Config{{"B", 64}}, Problem::parse(only_read, "16777216"));
    long long most = 0;
    for (const LaunchStep& st : huge.steps) most = std::max(most, st.round_max);
    EXPECT_EQ(most, 16777216);
  }
  // A step that launches only where `when` holds: of the problem, decided by the plan (and then
  // not compiled, nor bound by its limits, where it fails); of a value, at each launch.
  {
    ojson k = j;
    k["launch"][0]["when"] = "n > 500";
    k["launch"][1]["when"] = "qn <= 16";
    const std::string w = load_kernel_spec_text(k.dump(), "when.json", d.dir());
    const KernelSpec& ws = spec_of(w);
    const Family wf = find_family(w);
    const LaunchPlan big = wf.launch_plan(Config{{"B", 64}}, Problem::parse(w, "1000"));
    const LaunchPlan small = wf.launch_plan(Config{{"B", 64}}, Problem::parse(w, "400"));
    EXPECT_EQ(big.steps.size(), small.steps.size() + 1) << "the first step only where n > 500";
    EXPECT_EQ(big.steps[0].kernel, 0);
    EXPECT_NE(small.steps[0].kernel, 0);
    EXPECT_TRUE(ws.skipped(ws.steps[0], Config{{"B", 64}}, Problem::parse(w, "400")));
    EXPECT_FALSE(ws.skipped(ws.steps[1], Config{{"B", 64}}, Problem::parse(w, "400"))) << "a value's when: at the launch";
    for (const LaunchStep& st : big.steps)
      if (st.kernel == 1) EXPECT_TRUE(st.reads_values && st.value_grid >= 0) << "its when read at each launch";
    EXPECT_EQ(ws.value_grids.at(size_t(ws.steps[1].value_grid))[3].text(), "qn <= 16");
    // A `when` of the loop's counter picks rounds: the loop is unrolled, the step in round 0 only.
    k["launch"][1]["when"] = "level == 0";
    const std::string first = load_kernel_spec_text(k.dump(), "when-first.json", d.dir());
    const LaunchPlan fp = find_family(first).launch_plan(Config{{"B", 64}}, Problem::parse(first, "100"));
    EXPECT_EQ(std::count_if(fp.steps.begin(), fp.steps.end(), [](const LaunchStep& st) { return st.kernel == 1; }), 1);
    EXPECT_TRUE(std::none_of(fp.steps.begin(), fp.steps.end(), [](const LaunchStep& st) { return st.round_loop >= 0; }));
    // A scalar of the step is computed only where its launch-time `when` holds: u32 level - 1 at
    // round 0 is never passed.
    k["launch"][1]["when"] = "qn > 0 and level > 0";
    k["args"][7] = {{"name", "f"}, {"kind", "scalar"}, {"dtype", "u32"}, {"value", "level - 1"}};
    const std::string later = load_kernel_spec_text(k.dump(), "when-later.json", d.dir());
    EXPECT_NO_THROW(find_family(later).launch_plan(Config{{"B", 64}}, Problem::parse(later, "100")));
  }
  for (const auto& [edit, error] : std::vector<std::pair<std::function<void(ojson&)>, std::string>>{
           {[](ojson& k) { k["launch"][0]["when"] = "level > 2"; }, "launch[0].when: 'level > 2' reads level, the counter of a loop it is not in"},
           {[](ojson& k) { k["launch"][1]["block"] = {"qn"}; }, "launch[1].block[0]"},
           {[](ojson& k) { k["launch"][1]["args"][0] = {{"arg", "x"}, {"offset", "qn"}}; }, "launch[1].args[0].offset"},
           {[](ojson& k) { k["launch"][1]["cluster"] = {2}; }, "launch[1].cluster: a cluster shape must tile its grid"},
           {[](ojson& k) { k["args"][0]["count"] = "qn"; }, "args[0].count"}}) {
    ojson k = j;
    edit(k);
    expect_refused(k, d, error);
  }
}

// A step's arguments against the parameters its kernel's mangled name declares (ktune compile
// checks them offline; the GPU checks every kernel, extern "C" ones too, at its first launch).
TEST(KernelSpec, StepArgumentsAreCheckedAgainstTheKernelsSignature) {
  const std::string op = load_kernel_spec(example("l2norm"));
  const KernelSpec& s = spec_of(op);
  const Problem p = Problem::parse(op, "1000003");
  // NVRTC's names of l2norm_partials<1024, 16, 4> and l2norm_finish<1024>.
  const std::string partials = "_Z15l2norm_partialsILi1024ELi16ELi4EEvPKfPfx", finish = "_Z13l2norm_finishILi1024EEvPKfiPf";
  EXPECT_EQ(signature_mismatch(s, s.steps[0], partials, p, "launch step 1"), "");
  EXPECT_EQ(signature_mismatch(s, s.steps[1], finish, p, "launch step 2"), "");
  EXPECT_EQ(signature_mismatch(s, s.reference_steps[0], "l2norm_reference", p, "the reference's step 1"), "")
      << "an extern \"C\" name declares nothing";
  const std::string swapped = signature_mismatch(s, s.steps[1], partials, p, "launch step 2");
  EXPECT_NE(swapped.find("launch step 2: kernel void l2norm_partials<1024, 16, 4>(float const*, float*, long long): argument 2 "
                         "is float*, the spec passes parts (i32)"),
            std::string::npos)
      << swapped;
  SpecStep fewer = s.steps[0];
  fewer.args.pop_back();
  EXPECT_NE(signature_mismatch(s, fewer, partials, p, "launch step 1").find("takes 3 arguments, the spec passes 2: x (a buffer of f32), partials (a buffer of f32)"),
            std::string::npos);
  SpecStep all = s.steps[0];
  all.args.clear(); // all five (x, out, n, partials, parts): a kernel may take the first few
  EXPECT_EQ(signature_mismatch(s, all, partials, p, "launch step 1"), "") << "x, out, n: as l2norm_partials declares";
  EXPECT_NE(signature_mismatch(s, all, finish, p, "launch step 2").find("argument 2 is int, the spec passes out (a buffer of f32)"),
            std::string::npos);
  SpecStep narrow = s.steps[0];
  narrow.args[2] = 4; // parts, an i32, where the kernel takes n as a long long
  EXPECT_NE(signature_mismatch(s, narrow, partials, p, "launch step 1").find("argument 3 is long long, the spec passes parts (i32)"),
            std::string::npos);
  // A float where the kernel takes an int of the same size is a mismatch too; a struct is not told.
  SpecDir d;
  ojson j = SpecDir::base(); // scale<B>(const float*, float*, int, float)
  j["args"][2]["dtype"] = "f32";
  const KernelSpec& f = spec_of(load_kernel_spec_text(j.dump(), "f.json", d.dir()));
  const std::string scale = "_Z5scaleILi64EEvPKfPfif";
  EXPECT_NE(signature_mismatch(f, f.steps[0], scale, Problem::parse(f.op, "1000"), "launch").find("argument 3 is int, the spec passes n (f32)"),
            std::string::npos);
  EXPECT_EQ(signature_mismatch(f, f.steps[0], "_Z5scaleILi64EEvPK6float4PS0_if", Problem::parse(f.op, "1000"), "launch")
                .find("argument 1"),
            std::string::npos)
      << "float4 pointers: nothing to tell but that they are pointers";
  // A null argument fits any pointer parameter, and no value: scale's a (a float) as null is refused.
  ojson nj = SpecDir::base();
  nj["args"][3] = {{"name", "a"}, {"kind", "null"}};
  const KernelSpec& nf = spec_of(load_kernel_spec_text(nj.dump(), "null.json", d.dir()));
  EXPECT_EQ(nf.scalar_value(3, Problem::parse(nf.op, "1000")), 0.0);
  EXPECT_FALSE(nf.args[3].caller_passes()) << "ktune passes it";
  EXPECT_NE(signature_mismatch(nf, nf.steps[0], scale, Problem::parse(nf.op, "1000"), "launch").find("argument 4 is float, the spec passes a (a null pointer)"),
            std::string::npos);
  const std::string masked = "_Z5scaleILi64EEvPKfPfiPKb"; // scale<64>(float const*, float*, int, bool const*)
  EXPECT_EQ(signature_mismatch(nf, nf.steps[0], masked, Problem::parse(nf.op, "1000"), "launch"), "");
  // ktune compile says so and exits 2.
  j = SpecDir::base();
  j["args"][2]["dtype"] = "i64";
  d.write("wide.json", j.dump());
  const auto r = testing::run_ktune("compile --kernel " + d.path("wide.json") + " --problem 1000 --config '{\"B\": 64}'");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("launch step 1: kernel void scale<64>(float const*, float*, int, float): argument 3 is int, the spec passes n (i64)"),
            std::string::npos)
      << r.out;
}

// A spec for an arch past Hopper (a Blackwell kernel's "arch": "sm_100a", a consumer Blackwell's
// "sm_120"): `ktune compile` without --arch compiles for the arch the spec names, where sm_90
// could run nothing of it; with --arch, the arch given.
TEST(KernelSpec, CompileDefaultsToTheSpecsArchPastHopper) {
  SpecDir d;
  for (const char* arch : {"sm_100a", "sm_120"}) {
    SCOPED_TRACE(arch);
    ojson j = SpecDir::base();
    j["arch"] = arch;
    d.write("new.json", j.dump());
    const auto r = testing::run_ktune("compile --kernel " + d.path("new.json") + " --problem 1000 --config '{\"B\": 64}'");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find(std::string("for ") + arch + " in"), std::string::npos) << r.out;
  }
  const auto on_90 = testing::run_ktune("compile --kernel " + d.path("new.json") + " --problem 1000 --config '{\"B\": 64}' --arch sm_90");
  EXPECT_EQ(on_90.status, 2) << on_90.out;
  EXPECT_NE(on_90.out.find("needs sm_120 or newer, device is sm_90"), std::string::npos) << on_90.out;
}

// A cooperative step (grid.sync()) keeps its flag through the plan and its JSON, and its kernel
// compiles under NVRTC (no separate compilation needed for grid.sync()).
TEST(KernelSpec, ACooperativeStepReachesItsLaunch) {
  SpecDir d;
  d.write("coop.cu",
          "#include <cooperative_groups.h>\n"
          "__global__ void coop(const float* x, float* y, int n) {\n"
          "  const int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i];\n"
          "  cooperative_groups::this_grid().sync(); }\n");
  ojson j = SpecDir::base();
  j["sources"] = {"coop.cu"};
  j["kernel"] = "coop";
  j["params_as"] = "defines";
  j["launch"]["persistent"] = true;
  j["launch"]["cooperative"] = true;
  j["args"].erase(3);
  j["check"]["reference"]["kernel"] = "coop";
  const std::string op = load_kernel_spec_text(j.dump(), "coop.json", d.dir());
  const Problem p = Problem::parse(op, "1000");
  const Family f = find_family(op);
  const LaunchPlan plan = f.launch_plan(Config{{"B", 64}}, p);
  EXPECT_TRUE(plan.steps[0].cooperative);
  EXPECT_TRUE(plan.steps[0].persistent);
  EXPECT_TRUE(plan_from_json(nlohmann::json::parse(plan_to_json(plan).dump())).steps[0].cooperative);
  Compiler compiler(1);
  EXPECT_FALSE(compiler.compile(compile_request(f, Config{{"B", 64}}, p, "sm_90"))->cubin.empty());
  j["launch"]["cooperative"] = "yes";
  EXPECT_THROW(load_kernel_spec_text(j.dump(), "coop2.json", d.dir()), UsageError);
}

// A grid or an integer scalar that is no whole number at a problem is the spec's mistake: space
// (count too), compile and a launch all say so, naming the field.
TEST(KernelSpec, AGridOrCountThatIsNoWholeNumberIsAnError) {
  SpecDir d;
  ojson j = SpecDir::base();
  j["launch"]["grid"] = {"n / B"};
  d.write("grid.json", j.dump());
  const auto count = testing::run_ktune("space --count --kernel " + d.path("grid.json") + " --problem 1000");
  EXPECT_EQ(count.status, 2) << count.out;
  EXPECT_NE(count.out.find("launch.grid[0]: 'n / B' gives 15.625"), std::string::npos) << count.out;
  const auto compile = testing::run_ktune("compile --kernel " + d.path("grid.json") + " --problem 1000 --config '{\"B\": 64}'");
  EXPECT_EQ(compile.status, 2) << compile.out;
  EXPECT_NE(compile.out.find("expected a whole number"), std::string::npos) << compile.out;
  EXPECT_EQ(testing::run_ktune("space --count --kernel " + d.path("grid.json") + " --problem 1024").status, 0) << "whole there";
  // A grid of no blocks is a config that cannot serve the problem (space leaves it out, as one past
  // the device's limits), and compile says which limit it breaks.
  j["launch"]["grid"] = {"n // (2 * B)"};
  d.write("grid0.json", j.dump());
  const auto none = testing::run_ktune("compile --kernel " + d.path("grid0.json") + " --problem 200 --config '{\"B\": 128}'");
  EXPECT_EQ(none.status, 2) << none.out;
  EXPECT_NE(none.out.find("invalid config"), std::string::npos) << none.out;
  EXPECT_NE(none.out.find("a grid of 1 to 2^31-1 blocks"), std::string::npos) << none.out;
  j = SpecDir::base();
  j["args"][2]["value"] = "n / 3";
  const std::string op = load_kernel_spec_text(j.dump(), "third.json", d.dir());
  float x = 0, y = 0;
  try {
    BufferArgs a(Problem::parse(op, "1000"), {&x, &y});
    ADD_FAILURE() << "n / 3 packed into an i32";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("args[2].value: 'n / 3' gives 333.33"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(BufferArgs(Problem::parse(op, "999"), {&x, &y}));
  j["args"][2]["value"] = "n * 4294967296";
  const std::string big = load_kernel_spec_text(j.dump(), "big.json", d.dir());
  EXPECT_THROW(BufferArgs(Problem::parse(big, "1000"), {&x, &y}), UsageError) << "past an i32";
}

// A check by answers: inputs and expected outputs from one file a problem ("{n}" in the name),
// read at the problem; a problem without its file is an error naming it.
TEST(KernelSpec, AnswersAndInputsFromAFileAProblem) {
  SpecDir d;
  auto npy = [&](const std::string& name, const std::vector<float>& v) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(v.size()) + ",), }";
    header.resize(118, ' ');
    header += '\n';
    std::string text = std::string("\x93NUMPY\x01\x00", 8) + char(header.size() & 0xff) + char(header.size() >> 8) + header;
    text.append(reinterpret_cast<const char*>(v.data()), v.size() * 4);
    d.write(name, text);
  };
  npy("x_3.npy", {1, 2, 3});
  npy("y_3.npy", {2.5f, 5, 7.5f});
  ojson j = SpecDir::base();
  j["args"][0]["fill"] = {{"file", "x_{n}.npy"}};
  j["check"] = {{"answer", {{"y", "y_{n}.npy"}}}};
  const std::string op = load_kernel_spec_text(j.dump(), "answers.json", d.dir());
  const KernelSpec& s = spec_of(op);
  EXPECT_TRUE(s.answers);
  const Problem p = Problem::parse(op, "3");
  const SpecFill x = fill_at(s, s.args[0].fill, p), y = fill_at(s, s.args[1].answer, p);
  const auto xs = spec_fill_bytes(x, ElemType::f32, 3, 0), ys = spec_fill_bytes(y, ElemType::f32, 3, 0);
  EXPECT_EQ(load_elem(xs.data(), 2, ElemType::f32), 3.0);
  EXPECT_EQ(load_elem(ys.data(), 1, ElemType::f32), 5.0);
  try {
    fill_at(s, s.args[0].fill, Problem::parse(op, "4"));
    ADD_FAILURE() << "no x_4.npy";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("x_4.npy' does not exist"), std::string::npos) << e.what();
  }
  // What a tuning run checks before it starts: every file there, and long enough.
  EXPECT_NO_THROW(check_fill_files(s, p));
  EXPECT_THROW(check_fill_files(s, Problem::parse(op, "4")), UsageError);
  npy("x_5.npy", {1, 2, 3, 4, 5});
  npy("y_5.npy", {1, 2, 3});
  try {
    check_fill_files(s, Problem::parse(op, "5"));
    ADD_FAILURE() << "y_5.npy is short";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("the answer of 'y'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("holds 3 elements, the problem needs 5"), std::string::npos) << e.what();
  }
  // It reads a per-problem file's header and size only: a file too short or not a .npy, named.
  npy("y_5.npy", {1, 2, 3, 4, 5, 6});
  try {
    check_fill_files(s, Problem::parse(op, "5"));
    ADD_FAILURE() << "y_5.npy, named for the problem, holds more than it reads";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("holds 6 elements, the problem reads 5"), std::string::npos) << e.what();
  }
  npy("y_5.npy", {1, 2, 3, 4, 5});
  EXPECT_NO_THROW(check_fill_files(s, Problem::parse(op, "5")));
  d.write("x_6.npy", "\x93NUMPY\x01");
  npy("y_6.npy", {1, 2, 3, 4, 5, 6});
  try {
    check_fill_files(s, Problem::parse(op, "6"));
    ADD_FAILURE() << "x_6.npy is cut inside its header";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("x_6.npy': not a .npy file"), std::string::npos) << e.what();
  }
  ojson raw = j;
  raw["args"][0]["fill"] = {{"file", "x_{n}.bin"}, {"raw_dtype", "f32"}};
  const KernelSpec& rs = spec_of(load_kernel_spec_text(raw.dump(), "raw.json", d.dir()));
  d.write("x_5.bin", std::string(20, '\0'));
  EXPECT_NO_THROW(check_fill_files(rs, Problem::parse(rs.op, "5")));
  d.write("x_5.bin", std::string(18, '\0'));
  try {
    check_fill_files(rs, Problem::parse(rs.op, "5"));
    ADD_FAILURE() << "x_5.bin holds 4.5 floats";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("holds a partial element"), std::string::npos) << e.what();
  }
  d.write("x_5.bin", std::string(16, '\0'));
  try {
    check_fill_files(rs, Problem::parse(rs.op, "5"));
    ADD_FAILURE() << "x_5.bin holds 4 floats";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("x_5.bin' holds 4 elements, the problem needs 5"), std::string::npos) << e.what();
  }
  // ktune tune stops there, exit 2, before a GPU or a database is touched.
  d.write("answers.json", j.dump());
  const auto r = testing::run_ktune("tune --kernel " + d.path("answers.json") + " --problem 3 --problem 4 --db " + d.path("t.db"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("x_4.npy' does not exist"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(d.path("t.db")));
}

TEST(KernelSpec, FillsAreAsDeclared) {
  SpecFill ramp;
  ramp.kind = SpecFill::ramp;
  auto r = spec_fill_bytes(ramp, ElemType::i32, 5, 1);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(load_elem(r.data(), i, ElemType::i32), double(i));
  SpecFill rnd;
  rnd.lo = 2, rnd.hi = 3;
  auto v = spec_fill_bytes(rnd, ElemType::bf16, 1000, 7);
  for (size_t i = 0; i < 1000; ++i) {
    EXPECT_GE(load_elem(v.data(), i, ElemType::bf16), 2.0);
    EXPECT_LE(load_elem(v.data(), i, ElemType::bf16), 3.0);
  }
  EXPECT_EQ(spec_fill_bytes(rnd, ElemType::bf16, 1000, 7), v) << "the same seed, the same data";
  // A ramp with a start, a step and a period; random whole numbers in a float buffer; the
  // first elements of a permutation: distinct, in range, another order at another seed.
  ramp.start = 10, ramp.step = 0.5, ramp.mod = 3;
  r = spec_fill_bytes(ramp, ElemType::f32, 7, 1);
  const double want[] = {10, 10.5, 11, 10, 10.5, 11, 10};
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(load_elem(r.data(), i, ElemType::f32), want[i]) << i;
  rnd.lo = -5, rnd.hi = 5, rnd.integers = true;
  v = spec_fill_bytes(rnd, ElemType::f32, 1000, 3);
  for (size_t i = 0; i < 1000; ++i) {
    const double x = load_elem(v.data(), i, ElemType::f32);
    ASSERT_TRUE(x == std::floor(x) && x >= -5 && x < 5) << i << ": " << x;
  }
  for (int64_t range : {int64_t(1000), int64_t(50000000)}) { // a dense and a sparse shuffle
    SpecFill perm;
    perm.kind = SpecFill::permutation, perm.perm_n = range;
    const auto p1 = spec_fill_bytes(perm, ElemType::i64, 1000, 5), p2 = spec_fill_bytes(perm, ElemType::i64, 1000, 6);
    std::set<int64_t> seen;
    for (size_t i = 0; i < 1000; ++i) {
      const double x = load_elem(p1.data(), i, ElemType::i64);
      ASSERT_TRUE(x >= 0 && x < double(range)) << x;
      seen.insert(int64_t(x));
    }
    EXPECT_EQ(seen.size(), 1000u) << "distinct at range " << range;
    EXPECT_NE(p1, p2) << "another seed, another draw";
  }
  SpecFill small;
  small.kind = SpecFill::permutation, small.perm_n = 10;
  EXPECT_THROW(spec_fill_bytes(small, ElemType::i32, 11, 0), UsageError) << "11 distinct values in [0, 10)";
  // Values past the whole numbers a type holds exactly would collide: refused, not rounded.
  SpecFill wide;
  wide.kind = SpecFill::permutation, wide.perm_n = 4096;
  EXPECT_THROW(spec_fill_bytes(wide, ElemType::f16, 100, 0), UsageError) << "f16 holds whole numbers to 2048";
  EXPECT_THROW(spec_fill_bytes(wide, ElemType::i8, 100, 0), UsageError);
  EXPECT_NO_THROW(spec_fill_bytes(wide, ElemType::f32, 100, 0));
  wide.perm_n = 2049;
  EXPECT_NO_THROW(spec_fill_bytes(wide, ElemType::f16, 100, 0)) << "0 to 2048: all exact in f16";
  // A .npy file of three float64 values read into f32.
  SpecDir d;
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }";
  header.resize(118, ' ');
  header += '\n';
  std::string npy = std::string("\x93NUMPY\x01\x00", 8) + char(header.size() & 0xff) + char(header.size() >> 8) + header;
  for (double x : {1.5, -2.0, 3.25}) npy.append(reinterpret_cast<const char*>(&x), 8);
  d.write("v.npy", npy);
  ojson j = SpecDir::base();
  j["args"][0]["fill"] = {{"file", "v.npy"}};
  const std::string op = load_kernel_spec_text(j.dump(), "npy.json", d.dir());
  const SpecFill& f = spec_of(op).args[0].fill;
  const auto got = spec_fill_bytes(f, ElemType::f32, 3, 0);
  EXPECT_EQ(load_elem(got.data(), 2, ElemType::f32), 3.25);
  EXPECT_THROW(spec_fill_bytes(f, ElemType::f32, 4, 0), UsageError) << "the file holds 3 elements";
}

TEST(Cli, ABadKernelSpecExitsTwoWithOneLineAndTouchesNoDatabase) {
  SpecDir d;
  ojson j = SpecDir::base();
  j["launch"]["grid"] = {0};
  d.write("bad.json", j.dump());
  const std::string db = d.path("never.db");
  for (const std::string cmd : {"tune", "query", "space"}) {
    const std::string args = cmd == "tune"    ? "tune --kernel " + d.path("bad.json") + " --problem 100 --db " + db
                             : cmd == "query" ? "query --kernel " + d.path("bad.json") + " --problem 100 --arch sm_90 --db " + db
                                              : "space --kernel " + d.path("bad.json");
    const auto r = testing::run_ktune(args);
    EXPECT_EQ(r.status, 2) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("bad.json: launch.grid[0]: '0' is below 1"), std::string::npos) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_FALSE(fs::exists(db)) << cmd;
  }
}

TEST(Cli, SpaceOfAKernelSpecCountsWhatItsConstraintsAdmit) {
  const auto r = testing::run_ktune("space --count --kernel " + example("transpose") + " --problem 512x512");
  ASSERT_EQ(r.status, 0) << r.out;
  // The spec's constraints written out here, over its domains (and the device's 1024 threads).
  int want = 0;
  for (int tile : {8, 16, 32, 64})
    for (int rows : {1, 2, 4, 8, 16, 32})
      for (int pad : {0, 1})
        want += tile % rows == 0 && tile * rows <= 1024 && tile * (tile + pad) * 4 <= 48 * 1024;
  EXPECT_EQ(std::stoi(r.out), want);
}

// A user kernel's recorded run (200 conv2d configs on an H200, ktune export --trials) replays
// with every strategy once its spec is loaded; without the spec the log's op is unknown, and the
// message says to load it. The log names conv2d's current version: re-record it with the tables
// when the example changes.
TEST(Cli, SimulateReplaysAUserKernelsRunWithItsSpecLoaded) {
  const std::string trials = std::string(KTUNE_SOURCE_DIR) + "/docs/runs/2026-11-28-h200-conv2d-1024-trials.json";
  for (const char* strategy : {"exhaustive", "random", "annealing", "genetic", "model"}) {
    const auto r = testing::run_ktune("simulate --kernel " + example("conv2d") + " --trials " + trials + " --json --strategy " + strategy);
    ASSERT_EQ(r.status, 0) << strategy << ": " << r.out;
    const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    EXPECT_EQ(j["problems"][0]["space"].get<int>(), 200) << strategy;
    EXPECT_EQ(j["problems"][0]["within_percent"]["5"]["missed"].get<int>(), 0) << strategy << " found a config within 5 %";
  }
  const auto bare = testing::run_ktune("simulate --trials " + trials);
  EXPECT_EQ(bare.status, 2);
  EXPECT_NE(bare.out.find("load its spec (--kernel SPEC)"), std::string::npos) << bare.out;
}

// `ktune compile` of a user kernel compiles its reference too, so a name the source lacks fails on
// any machine, naming the names asked for, not at the first check on a GPU.
TEST(Cli, CompileOfAUserKernelCompilesItsReferenceAndNamesAMissingKernel) {
  SpecDir d;
  d.write("good.json", SpecDir::base().dump());
  auto r = testing::run_ktune("compile --kernel " + d.path("good.json") + " --problem 1000 --config '{\"B\":128}'");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("compiled its reference"), std::string::npos) << r.out;
  // Without --config: the spec's default for the problem (B 64 is the first valid at 1000).
  const auto dflt = testing::run_ktune("compile --kernel " + d.path("good.json") + " --problem 1000");
  EXPECT_EQ(dflt.status, 0) << dflt.out;
  EXPECT_NE(dflt.out.find("compiled B64"), std::string::npos) << dflt.out;
  ojson j = SpecDir::base();
  j["check"]["reference"]["kernel"] = "scale_rf";
  d.write("typo.json", j.dump());
  r = testing::run_ktune("compile --kernel " + d.path("typo.json") + " --problem 1000 --config '{\"B\":128}'");
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("reference of"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kernel names asked for: scale_rf (one of them is not a kernel the source defines)"), std::string::npos) << r.out;
  // Setup kernels compile with it, and a name the source lacks is named there too.
  j = SpecDir::base();
  j["setup"] = {{"kernel", "scale_ref"}, {"launch", {{"grid", {1}}, {"block", {32}}}}};
  d.write("setup.json", j.dump());
  r = testing::run_ktune("compile --kernel " + d.path("setup.json") + " --problem 1000 --config '{\"B\":128}'");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("compiled its setup"), std::string::npos) << r.out;
  j["setup"]["kernel"] = "make_x";
  d.write("setup-typo.json", j.dump());
  r = testing::run_ktune("compile --kernel " + d.path("setup-typo.json") + " --problem 1000 --config '{\"B\":128}'");
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("setup of"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kernel names asked for: make_x"), std::string::npos) << r.out;
}

// `tune --replay` of a user kernel's recorded run: the replay worker loads the run's specs as a
// worker does, and a restriction names the kernel by its spec's name (its version changes with
// each edit). The recording holds every config of block_size_x 16, so each drawn is answered.
TEST(Cli, TuneReplaysAUserKernelsRunWithItsSpecLoaded) {
  SpecDir d;
  d.write("r.json", R"({"family": "conv2d", "domains": {"block_size_x": [16]}})");
  const std::string trials = std::string(KTUNE_SOURCE_DIR) + "/docs/runs/2026-11-28-h200-conv2d-1024-trials.json";
  const auto r = testing::run_ktune("tune --kernel " + example("conv2d") + " --problem 1024x1024 --restrict " + d.path("r.json") +
                                    " --strategy random --budget-evals 4 --warm-start none --replay " + trials + " --db " +
                                    d.path("r.db") + " --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(j["problems"][0]["trials"]["ok"].get<int>(), 4) << r.out;
  EXPECT_EQ(j["worker_restarts"].get<int>(), 0) << r.out;
  d.write("none.json", R"({"domains": {"block_size_x": [16]}})");
  const auto bad = testing::run_ktune("tune --kernel " + example("conv2d") + " --problem 1024x1024 --restrict " +
                                      d.path("none.json") + " --replay " + trials + " --db " + d.path("r2.db"));
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("names no family"), std::string::npos) << bad.out;
}

// Each example's shipped table (examples/kernels/<name>/table-sm_90.json, bench/kernel_specs.sh)
// answers its problem exactly: its entry is of the example's current version (a changed example
// must be tuned again: its old entries would never be served).
TEST(Cli, TheExamplesTablesAnswerTheirProblemsExactly) {
  SpecDir d;
  d.write("empty.db", ""); // an empty database holds nothing tuned: the table answers
  for (const auto& ex : kExamples) {
    const std::string name = ex.name;
    const std::string table = std::string(KTUNE_SOURCE_DIR) + "/examples/kernels/" + name + "/table-sm_90.json";
    const auto t = nlohmann::json::parse(testing::file_bytes(table));
    ASSERT_EQ(t["entries"].size(), 1u) << table;
    const auto& e = t["entries"][0];
    EXPECT_EQ(e["op"].get<std::string>(), load_kernel_spec(example(name))) << "the table is of the example's current version";
    std::string shape;
    for (const auto& d : op_info(e["op"].get<std::string>()).dims) {
      if (!shape.empty()) shape += 'x';
      shape += std::to_string(e[d].get<long long>());
    }
    const auto r = testing::run_ktune("query --kernel " + example(name) + " --table " + table + " --arch sm_90 --db " + d.path("empty.db") + " --dtype " +
                                      e["dtype"].get<std::string>() + " --problem " + shape);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("choice      exact"), std::string::npos) << name << ": " << r.out;
  }
}

// A user kernel's table goes into a database by import, and the database into a report, with the
// spec loaded: its op name parses everywhere. The transpose counts no FLOPs (no "flops" in its
// spec): its table holds 0 TFLOPS and the report leaves it off the roofline.
TEST(Cli, AUserKernelsTableImportsAndReports) {
  SpecDir d;
  const std::string spec = example("transpose"), table = std::string(KTUNE_SOURCE_DIR) + "/examples/kernels/transpose/table-sm_90.json";
  const auto im = testing::run_ktune("import --kernel " + spec + " " + table + " --db " + d.path("k.db"));
  ASSERT_EQ(im.status, 0) << im.out;
  const auto without = testing::run_ktune("import " + table + " --db " + d.path("other.db"));
  EXPECT_EQ(without.status, 2) << "the op is unknown without its spec: " << without.out;
  EXPECT_NE(without.out.find("unknown op 'transpose@"), std::string::npos) << without.out;
  const auto rp = testing::run_ktune("report --kernel " + spec + " --db " + d.path("k.db") + " -o " + d.path("report"));
  EXPECT_EQ(rp.status, 0) << rp.out;
  EXPECT_TRUE(fs::exists(d.path("report") + "/index.html")) << rp.out;
  const auto ex = testing::run_ktune("export --kernel " + spec + " --db " + d.path("k.db") + " -o " + d.path("t.json"));
  EXPECT_EQ(ex.status, 0) << ex.out;
  EXPECT_NE(testing::file_bytes(d.path("t.json")).find("transpose@"), std::string::npos);
  // Without its spec the entry is another program's kernel's, not an unreadable row: export says
  // what it left out and how to include it; a reader of other ops (query) says nothing of it.
  const auto other = testing::run_ktune("export --db " + d.path("k.db") + " -o " + d.path("none.json"));
  EXPECT_EQ(other.status, 2) << "nothing else to export: " << other.out;
  EXPECT_NE(other.out.find("left out 1 entries of user kernels whose specs are not loaded (transpose@"), std::string::npos)
      << other.out;
  EXPECT_EQ(other.out.find("unreadable"), std::string::npos) << other.out;
  const auto q = testing::run_ktune("query --db " + d.path("k.db") + " --arch sm_90 --problem 1024x1024x1024");
  EXPECT_EQ(q.status, 0) << q.out;
  EXPECT_EQ(q.out.find("unreadable"), std::string::npos) << q.out;
  EXPECT_EQ(q.out.find("transpose@"), std::string::npos) << q.out;
}

// A suite names a spec for all its problems or per problem, relative to the suite's folder.
TEST(KernelSpec, ASuiteNamesItsKernelsSpecs) {
  SpecDir d;
  d.write("spec.json", SpecDir::base().dump());
  d.write("suite.json", R"({"name": "mixed", "kernel": "spec.json",
    "problems": [{"n": 1000}, {"n": 4096},
                 {"kernel": ")" + example("transpose") + R"(", "rows": 64, "cols": 128},
                 {"op": "scale_add", "n": 77}]})");
  const std::vector<Problem> ps = load_suite(d.path("suite.json"), "", DType::f32);
  ASSERT_EQ(ps.size(), 4u);
  EXPECT_EQ(ps[0].op, load_kernel_spec(d.path("spec.json")));
  EXPECT_EQ(ps[1].dims, std::vector<int64_t>{4096});
  EXPECT_EQ(ps[2].op, load_kernel_spec(example("transpose")));
  EXPECT_EQ(ps[2].dims, (std::vector<int64_t>{64, 128}));
  EXPECT_EQ(ps[3].op, "scale_add");
  d.write("bad.json", R"({"kernel": 3, "problems": [{"n": 1}]})");
  EXPECT_THROW(load_suite(d.path("bad.json"), "", DType::f32), UsageError);
}

} // namespace
} // namespace ktune

namespace ktune {
namespace {

// A struct argument (a kernel's `Params p`): laid out as C lays out its fields, built by ktune
// for every call from the buffers it points to and values of the problem and config.
constexpr const char* kStructSource =
    "struct Params { const float* x; float* y; int n; float w; uint3 shape; };\n"
    "template <int B> __global__ void scale_p(Params p, int t) {\n"
    "  int i = blockIdx.x * B + threadIdx.x; if (i < p.n) p.y[i] = p.w * p.x[i] + t + p.shape.x; }\n"
    "__global__ void scale_ref(const float* x, float* y, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }\n";

ojson struct_spec() {
  return ojson::parse(R"JSON({
    "name": "scale_p", "sources": ["p.cu"], "kernel": "scale_p<{B}>", "params_as": "template", "dims": ["n"],
    "params": {"B": [64, 128]},
    "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"], "args": ["p", "t"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
             {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "p", "kind": "struct", "fields": [{"name": "x", "buffer": "x"}, {"name": "y", "buffer": "y"},
                                                        {"name": "n", "dtype": "i32", "value": "n"},
                                                        {"name": "w", "dtype": "f32", "value": 0.5},
                                                        {"name": "shape", "dtype": "u32", "value": [7, "B", "n"]}]},
             {"name": "t", "kind": "scalar", "value": 0},
             {"name": "n_", "kind": "scalar", "value": "n"}],
    "check": {"reference": {"kernel": "scale_ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128],
                                                              "args": ["x", "y", "n_"]}}}})JSON");
}

TEST(KernelSpec, AStructArgumentIsLaidOutAsCLaysItOut) {
  SpecDir d;
  d.write("p.cu", kStructSource);
  const std::string op = load_kernel_spec_text(struct_spec().dump(), "p.json", d.dir());
  const KernelSpec& s = spec_of(op);
  const SpecArg& a = s.args[2];
  ASSERT_TRUE(a.is_struct());
  EXPECT_FALSE(a.scalar());
  EXPECT_FALSE(a.caller_passes()) << "ktune builds it";
  // x at 0, y at 8, n at 16, w at 20, shape (three u32, aligned 4) at 24 to 36; the struct's size
  // a multiple of its largest alignment (a pointer's 8): 40.
  ASSERT_EQ(a.fields.size(), 5u);
  EXPECT_EQ(a.fields[0].offset, 0u);
  EXPECT_EQ(a.fields[1].offset, 8u);
  EXPECT_EQ(a.fields[2].offset, 16u);
  EXPECT_EQ(a.fields[3].offset, 20u);
  EXPECT_EQ(a.fields[4].offset, 24u);
  EXPECT_EQ(a.struct_bytes, 40u);
  EXPECT_EQ(a.struct_align, 8u);
  EXPECT_EQ(a.fields[0].buffer, 0);
  EXPECT_EQ(a.fields[1].buffer, 1);
  EXPECT_TRUE(a.follows_config) << "shape reads B";
  // The caller passes x and y, and no scalar of the struct's.
  const OpInfo& info = op_info(op);
  ASSERT_EQ(info.operands.size(), 2u);
  EXPECT_TRUE(info.scalars.empty());
  // The plan computes the values at each config; a launch binds the buffers' addresses.
  const Problem p = Problem::parse(op, "1000");
  Config c;
  c.set("B", 128);
  const LaunchPlan plan = find_family(op).launch_plan(c, p);
  const std::vector<unsigned char>& data = plan.spec_args[2].data;
  ASSERT_EQ(data.size(), 40u);
  auto word = [](const unsigned char* at) {
    unsigned v;
    std::memcpy(&v, at, 4);
    return v;
  };
  EXPECT_EQ(word(data.data() + 16), 1000u);
  float w;
  std::memcpy(&w, data.data() + 20, 4);
  EXPECT_EQ(w, 0.5f);
  EXPECT_EQ(word(data.data() + 24), 7u);
  EXPECT_EQ(word(data.data() + 28), 128u);
  EXPECT_EQ(word(data.data() + 32), 1000u);
  const LaunchPlan back = plan_from_json(nlohmann::json::parse(plan_to_json(plan).dump()));
  EXPECT_EQ(back.spec_args[2].data, data) << "the worker launches the same bytes";
  float x = 0, y = 0;
  BufferArgs args(p, {&x, &y});
  args.bind(plan);
  const unsigned char* bytes = static_cast<const unsigned char*>(args.params()[2]);
  const void* px;
  const void* py;
  std::memcpy(&px, bytes, 8);
  std::memcpy(&py, bytes + 8, 8);
  EXPECT_EQ(px, &x);
  EXPECT_EQ(py, &y);
  EXPECT_EQ(word(bytes + 28), 128u);
  c.set("B", 64);
  args.bind(find_family(op).launch_plan(c, p));
  EXPECT_EQ(word(static_cast<const unsigned char*>(args.params()[2]) + 28), 64u) << "rebound for another config";
  // The kernel's signature: a struct where it takes a struct (or a vector type of its size), no pointer.
  const std::string lowered = "_Z7scale_pILi128EEv6Paramsi"; // scale_p<128>(Params, int)
  EXPECT_EQ(signature_mismatch(s, s.steps[0], lowered, p, "launch"), "");
  EXPECT_NE(signature_mismatch(s, s.steps[0], "_Z7scale_pILi128EEvPKfi", p, "launch").find("the spec passes p (a struct of 40 bytes)"),
            std::string::npos);
  EXPECT_NE(signature_mismatch(s, s.steps[0], "_Z7scale_pILi128EEv4int4i", p, "launch").find("argument 1 is int4"),
            std::string::npos)
      << "an int4 is 16 bytes, the struct 40";
  // A vector type: elements of its kind, at its alignment.
  {
    ojson f4 = struct_spec();
    f4["args"][2]["fields"] = {{{"name", "v"}, {"dtype", "f32"}, {"value", {1, 2, 3, 4}}, {"align", 16}}};
    f4["args"][0]["intent"] = "in";
    f4["launch"]["args"] = {"p", "t", "x", "y"};
    const KernelSpec& v4 = spec_of(load_kernel_spec_text(f4.dump(), "f4.json", d.dir()));
    const std::string takes_float4 = "_Z7scale_pILi128EEv6float4iPKfPf"; // scale_p<128>(float4, int, float const*, float*)
    const Problem q = Problem::parse(v4.op, "1000");
    EXPECT_EQ(signature_mismatch(v4, v4.steps[0], takes_float4, q, "launch"), "");
    f4["args"][2]["fields"][0]["dtype"] = "i32";
    const KernelSpec& i4 = spec_of(load_kernel_spec_text(f4.dump(), "i4.json", d.dir()));
    EXPECT_NE(signature_mismatch(i4, i4.steps[0], takes_float4, q, "launch").find(": float4 holds floating-point elements"),
              std::string::npos);
    f4["args"][2]["fields"][0]["dtype"] = "f32";
    f4["args"][2]["fields"][0].erase("align");
    const KernelSpec& u4 = spec_of(load_kernel_spec_text(f4.dump(), "u4.json", d.dir()));
    EXPECT_EQ(signature_mismatch(u4, u4.steps[0], takes_float4, q, "launch"), "")
        << "the same 16 bytes: the driver copies a parameter to the kernel's own offset";
    // A scalar of a vector type's size is no vector: a uchar4 takes a struct of four u8.
    ojson sc = f4;
    sc["args"][2] = {{"name", "p"}, {"kind", "scalar"}, {"dtype", "u32"}, {"value", 7}};
    const KernelSpec& s4 = spec_of(load_kernel_spec_text(sc.dump(), "s4.json", d.dir()));
    EXPECT_NE(signature_mismatch(s4, s4.steps[0], "_Z7scale_pILi128EEv6uchar4iPKfPf", q, "launch")
                  .find("uchar4 by value is a struct argument (\"kind\": \"struct\") of its elements"),
              std::string::npos);
  }
  // NVRTC compiles it; the cubin records the parameters' sizes (the struct's 40, t's 4), which
  // ktune compile compares with the spec's without a GPU.
  Compiler compiler(1);
  const auto compiled = compiler.compile(compile_request(find_family(op), c, p, "sm_90"));
  ASSERT_FALSE(compiled->cubin.empty());
  EXPECT_EQ(cubin_param_sizes(compiled->cubin, compiled->lowered_names.at(0)), (std::vector<size_t>{40, 4}));
  EXPECT_TRUE(cubin_param_sizes(compiled->cubin, "no_such_kernel").empty());
  EXPECT_TRUE(cubin_param_sizes(std::vector<char>(100, 0), "x").empty()) << "no ELF";
  EXPECT_EQ(param_sizes_mismatch(s, s.steps[0].args, {40, 4}, p, "launch"), "");
  EXPECT_NE(param_sizes_mismatch(s, s.steps[0].args, {48, 4}, p, "launch").find("the kernel declares 2 parameters of 48, 4 bytes; "
                                                                            "the spec passes 2: p 40, t 4"),
            std::string::npos);
  {
    ojson wide = struct_spec();
    wide["args"][2]["fields"][3]["dtype"] = "f64"; // w: the struct 48 bytes, the kernel's 40
    d.write("wide.json", wide.dump());
    const auto r = testing::run_ktune("compile --kernel " + d.path("wide.json") + " --problem 1000 --config '{\"B\": 64}'");
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("the kernel declares 2 parameters of 40, 4 bytes; the spec passes 2: p 48, t 4"), std::string::npos) << r.out;
  }
  // A value its type cannot hold at the problem (n = 1000 in a u8) is told before a run starts.
  {
    ojson small = struct_spec();
    small["args"][2]["fields"][2]["dtype"] = "u8";
    const std::string sop = load_kernel_spec_text(small.dump(), "small.json", d.dir());
    EXPECT_NO_THROW(check_fill_files(spec_of(sop), Problem::parse(sop, "200")));
    try {
      check_fill_files(spec_of(sop), Problem::parse(sop, "1000"));
      ADD_FAILURE() << "1000 in a u8 accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("for u8 p.n"), std::string::npos) << e.what();
    }
  }
  // Past about 4.3 KB of parameters NVRTC records their sizes in another attribute (0x45): read too.
  {
    d.write("big.cu", "struct Big { float v[2000]; const float* x; float* y; int n; };\n"
                      "template <int B> __global__ void big_k(Big p, int t) {\n"
                      "  int i = blockIdx.x * B + threadIdx.x; if (i < p.n) p.y[i] = p.x[i] + p.v[i % 2000] + t; }\n"
                      "__global__ void scale_ref(const float* x, float* y, int n) {\n"
                      "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }\n");
    ojson big = struct_spec();
    big["sources"] = {"big.cu"};
    big["kernel"] = "big_k<{B}>";
    big["args"][2]["fields"] = {{{"name", "v"}, {"dtype", "f32"}, {"value", ojson(std::vector<int>(2000, 0))}},
                                {{"name", "x"}, {"buffer", "x"}}, {{"name", "y"}, {"buffer", "y"}},
                                {{"name", "n"}, {"dtype", "i32"}, {"value", "n"}}};
    const std::string bop = load_kernel_spec_text(big.dump(), "big.json", d.dir());
    EXPECT_EQ(spec_of(bop).args[2].struct_bytes, 8024u);
    const auto bk = compiler.compile(compile_request(find_family(bop), c, Problem::parse(bop, "1000"), "sm_90"));
    EXPECT_EQ(cubin_param_sizes(bk->cubin, bk->lowered_names.at(0)), (std::vector<size_t>{8024, 4}));
    big["args"][2]["fields"][0]["value"] = ojson(std::vector<int>(1998, 0)); // 8 bytes short
    d.write("big_short.json", big.dump());
    const auto r = testing::run_ktune("compile --kernel " + d.path("big_short.json") + " --problem 1000 --config '{\"B\": 64}'");
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("the kernel declares 2 parameters of 8024, 4 bytes; the spec passes 2: p 8016, t 4"), std::string::npos)
        << r.out;
  }
  // A pointer field from an element on: its offset (bytes) in the plan, the address added at the bind.
  {
    ojson at = struct_spec();
    at["args"][2]["fields"][0]["offset"] = "B";
    const std::string aop = load_kernel_spec_text(at.dump(), "at.json", d.dir());
    const LaunchPlan ap = find_family(aop).launch_plan(c, p); // B 64
    unsigned long long off;
    std::memcpy(&off, ap.spec_args[2].data.data(), 8);
    EXPECT_EQ(off, 64u * 4u);
    BufferArgs aa(Problem::parse(aop, "1000"), {&x, &y});
    aa.bind(ap);
    const void* p0;
    std::memcpy(&p0, aa.params()[2], 8);
    EXPECT_EQ(p0, &x + 64);
    at["args"][2]["fields"][0]["offset"] = "n + 1";
    const std::string past = load_kernel_spec_text(at.dump(), "past.json", d.dir());
    EXPECT_THROW(find_family(past).launch_plan(c, Problem::parse(past, "1000")), UsageError) << "past the buffer's 1000";
  }
  // A vector type by value: a struct of one array field, aligned as CUDA aligns it.
  ojson v = struct_spec();
  v["args"][2]["fields"] = {{{"name", "xyzw"}, {"dtype", "f32"}, {"value", {1, 2, 3, 4}}, {"align", 16}}};
  v["args"][2]["fields"].push_back({{"name", "x"}, {"buffer", "x"}});
  v["args"][2]["fields"].push_back({{"name", "y"}, {"buffer", "y"}});
  v["args"][2]["fields"].push_back({{"name", "k"}, {"dtype", "u8"}, {"value", 3}});
  const KernelSpec& vs = spec_of(load_kernel_spec_text(v.dump(), "v.json", d.dir()));
  EXPECT_EQ(vs.args[2].fields[1].offset, 16u);
  EXPECT_EQ(vs.args[2].fields[3].offset, 32u);
  EXPECT_EQ(vs.args[2].struct_bytes, 48u) << "33 bytes, a multiple of 16";
  EXPECT_FALSE(vs.args[2].follows_config);
}

TEST(KernelSpec, AStructsPointersFollowTheRoundsSwaps) {
  SpecDir d;
  d.write("p.cu", kStructSource);
  ojson j = struct_spec();
  j["args"][1]["intent"] = "inout";
  j["launch"]["repeat"] = 3;
  j["launch"]["swap"] = ojson::array({ojson::array({"x", "y"})});
  j["args"][0]["intent"] = "inout";
  const std::string op = load_kernel_spec_text(j.dump(), "swap.json", d.dir());
  Config c;
  c.set("B", 64);
  const LaunchPlan plan = find_family(op).launch_plan(c, Problem::parse(op, "1000"));
  // Rounds 0 and 2 pass the call's x and y; round 1 each other's, through the struct.
  std::vector<const LaunchStep*> launches;
  for (const LaunchStep& s : plan.steps)
    if (s.kernel >= 0) launches.push_back(&s);
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_TRUE(launches[0]->alias_args.empty());
  EXPECT_EQ(launches[1]->alias_args, (std::vector<int>{0, 1}));
  EXPECT_EQ(launches[1]->alias_of, (std::vector<int>{1, 0}));
  EXPECT_TRUE(launches[2]->alias_args.empty());
}

// A struct field that reads a loop's counter: the struct's bytes at each launch of the loop, as
// host code fills its struct a round; passed outside the loop, refused.
TEST(KernelSpec, AStructFieldFollowsItsLoopsCounter) {
  SpecDir d;
  d.write("p.cu", kStructSource);
  ojson j = struct_spec();
  j["launch"]["repeat"] = 3;
  j["launch"]["index"] = "k";
  j["args"][2]["fields"][2]["value"] = "n - k";
  const std::string op = load_kernel_spec_text(j.dump(), "loop.json", d.dir());
  EXPECT_TRUE(spec_of(op).args[2].follows_loop);
  Config c;
  c.set("B", 64);
  const LaunchPlan plan = find_family(op).launch_plan(c, Problem::parse(op, "1000"));
  std::vector<int> n_at;
  for (const LaunchStep& s : plan.steps) {
    if (s.kernel < 0) continue;
    ASSERT_EQ(s.struct_args, (std::vector<int>{2}));
    ASSERT_EQ(s.struct_data.at(0).size(), 40u);
    int n;
    std::memcpy(&n, s.struct_data[0].data() + 16, 4);
    n_at.push_back(n);
  }
  EXPECT_EQ(n_at, (std::vector<int>{1000, 999, 998}));
  const LaunchPlan back = plan_from_json(nlohmann::json::parse(plan_to_json(plan).dump()));
  EXPECT_EQ(back.steps.at(1).struct_data, plan.steps.at(1).struct_data) << "the worker launches the same bytes";
  // Passed by a step outside the loop (the reference, here), it has no value.
  j["check"]["reference"]["launch"]["args"] = {"x", "y", "n_", "p"};
  expect_refused(j, d, "args[2].fields[2].value: 'n - k' reads k, but the step of kernel scale_ref passes it outside that loop");
  // The device's values are a scalar's.
  j = struct_spec();
  j["args"][2]["fields"][2]["value"] = "sm_count";
  expect_refused(j, d, "args[2].fields[2].value: 'sm_count' reads sm_count: a struct's fields are computed from");
}

// A run of other steps (the reference, at its own config) makes none of the structs it does not
// pass: one whose offset its config puts past the buffer fails no check; nor does a run's check of
// the problem's values read a temporary's size that follows the config.
TEST(KernelSpec, OtherRunsMakeOnlyTheStructsTheyPass) {
  SpecDir d;
  d.write("p.cu", kStructSource);
  ojson j = struct_spec();
  j["params"]["B"] = {256, 64};
  j["constraints"] = {"B <= n"};
  j["args"][2]["fields"][0]["offset"] = "n - B";
  const std::string op = load_kernel_spec_text(j.dump(), "side.json", d.dir());
  const KernelSpec& s = spec_of(op);
  const Problem p = Problem::parse(op, "100");
  EXPECT_EQ(s.reference_config.to_json(), "{\"B\":256}");
  EXPECT_NO_THROW(s.plan(s.reference_steps, s.reference_config, p)) << "the reference passes no struct";
  Config c;
  c.set("B", 64);
  EXPECT_NO_THROW(s.plan(s.steps, c, p));
  EXPECT_THROW(s.plan(s.steps, s.reference_config, p), UsageError) << "'n - B' is -156 where the kernel's step passes it";
  // A pointer into a temporary sized by the config, at an offset of the problem's.
  j = struct_spec();
  j["args"].push_back({{"name", "part"}, {"kind", "buffer"}, {"dtype", "f32"}, {"count", "B"}, {"intent", "temp"}});
  j["args"][2]["fields"].push_back({{"name", "part"}, {"buffer", "part"}, {"offset", 1}});
  const std::string top = load_kernel_spec_text(j.dump(), "temp.json", d.dir());
  EXPECT_NO_THROW(check_fill_files(spec_of(top), Problem::parse(top, "100")));
}

TEST(KernelSpec, MalformedStructsAreRefusedWithTheirFieldNamed) {
  SpecDir d;
  d.write("p.cu", kStructSource);
  const auto with = edit(struct_spec());
  expect_refused(with([](ojson& j) { j["args"][2]["fields"][0]["buffer"] = "z"; }), d,
                 "args[2].fields[0].buffer: 'z' is not one of the spec's args");
  expect_refused(with([](ojson& j) { j["args"][2]["fields"][0]["buffer"] = "n_"; }), d,
                 "args[2].fields[0].buffer: 'n_' is not a buffer argument");
  expect_refused(with([](ojson& j) { j["args"][2]["fields"][2]["value"] = "sm_count"; }), d,
                 "args[2].fields[2].value: 'sm_count' reads sm_count: a struct's fields are computed from");
  expect_refused(with([](ojson& j) { j["args"][2]["fields"][3]["align"] = 3; }), d,
                 "args[2].fields[3].align: an alignment is a power of two");
  expect_refused(with([](ojson& j) { j["args"][2]["fields"][3]["align"] = 2; }), d,
                 "args[2].fields[3].align: 2 is below the 4 bytes");
  expect_refused(with([](ojson& j) { j["args"][2]["align"] = 4; }), d, "args[2].align: 4 is below the 8 bytes");
  expect_refused(with([](ojson& j) { j["args"][2]["fields"] = ojson::array(); }), d, "args[2].fields: expected the struct's fields");
  expect_refused(with([](ojson& j) { j["args"][2]["fields"][1]["name"] = "x"; }), d, "args[2].fields[1].name: field 'x' named twice");
  expect_refused(with([](ojson& j) { j["args"][2]["fields"][0]["dtype"] = "f32"; }), d,
                 "args[2].fields[0].dtype: a pointer field names its buffer only");
  expect_refused(with([](ojson& j) { j["args"][2]["fields"][2].erase("value"); }), d,
                 "args[2].fields[2]: a field is a pointer");
  expect_refused(with([](ojson& j) { j["args"][0]["fields"] = ojson::array(); }), d, "args[0].fields: only a struct has fields");
  expect_refused(with([](ojson& j) { j["args"][2]["fields"][4]["value"] = ojson::array(); }), d,
                 "args[2].fields[4].value: expected 1 to 4096 expressions");
  expect_refused(with([](ojson& j) { j["args"][2]["fields"][2]["value"] = "t"; }), d, "unknown name");
  expect_refused(with([](ojson& j) { j["args"][2]["fields"][4]["value"][1] = "sm_count"; }), d,
                 "args[2].fields[4].value[1]: 'sm_count' reads sm_count");
  expect_refused(with([](ojson& j) { j["args"][2]["fields"][2]["offset"] = 1; }), d,
                 "args[2].fields[2].offset: only a pointer field starts at an offset");
  // A setup step gets no temporary, through a struct neither.
  expect_refused(with([](ojson& j) {
                   j["args"].push_back({{"name", "s"}, {"kind", "buffer"}, {"dtype", "f32"}, {"count", "n"}, {"intent", "temp"}});
                   j["args"][2]["fields"].push_back({{"name", "s"}, {"buffer", "s"}});
                   j["setup"] = {{"kernel", "scale_p<64>"},
                                 {"launch", {{"grid", ojson::array({1})}, {"block", ojson::array({64})}, {"args", {"p", "t"}}}}};
                 }),
                 d, "setup: a step passes struct 'p', which points to 's', a temporary");
  // y reaches the kernel only through the struct: without it in a taken struct, nothing takes y.
  expect_refused(with([](ojson& j) {
                   j["args"][2]["fields"].erase(1);
                   j["check"]["reference"]["launch"]["args"] = {"x", "n_"};
                 }),
                 d, "'y' is in no launch step's args");
}


// Texture objects ("kind": "texture"): a linear float4 fetch, a pitched 2D read with bilinear
// filtering, a 3D array; the reference reads the same buffers through pointers.
constexpr const char* kTextureSource =
    "template <int BS>\n"
    "__global__ void tex_sum(cudaTextureObject_t lin, cudaTextureObject_t img, cudaTextureObject_t vol, float* out,\n"
    "                        int n, int w, int h, int d) {\n"
    "  const int i = blockIdx.x * BS + threadIdx.x; if (i >= n) return;\n"
    "  const float4 a = tex1Dfetch<float4>(lin, i);\n"
    "  const int x = i % w, y = (i / w) % h, z = i / (w * h) % d;\n"
    "  out[i] = a.x + a.y + a.z + a.w + tex2D<float>(img, x + 0.25f, y + 0.75f) + tex3D<float>(vol, x + 0.5f, y + 0.5f, z + 0.5f);\n"
    "}\n"
    "__global__ void tex_sum_ref(const float* lin, const float* img, const float* vol, float* out, int n) {\n"
    "  const int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = lin[i] + img[0] + vol[0]; }\n";

ojson texture_spec() {
  return ojson::parse(R"JSON({
    "name": "tex_sum", "sources": ["t.cu"], "kernel": "tex_sum<{BS}>", "params_as": "template", "dims": ["w", "h", "d"],
    "params": {"BS": [64, 128]},
    "launch": {"grid": ["ceil_div(w * h * d, BS)"], "block": ["BS"], "args": ["lin_t", "img_t", "vol_t", "out", "n", "w_", "h_", "d_"]},
    "args": [{"name": "lin", "kind": "buffer", "dtype": "f32", "count": "4 * w * h * d"},
             {"name": "img", "kind": "buffer", "dtype": "f32", "count": "64 * h"},
             {"name": "vol", "kind": "buffer", "dtype": "f32", "count": "w * h * d"},
             {"name": "out", "kind": "buffer", "dtype": "f32", "count": "w * h * d", "intent": "out"},
             {"name": "lin_t", "kind": "texture", "buffer": "lin", "channels": 4},
             {"name": "img_t", "kind": "texture", "buffer": "img", "resource": "pitch2d", "width": "w", "height": "h",
              "pitch": 256, "filter": "linear"},
             {"name": "vol_t", "kind": "texture", "buffer": "vol", "resource": "array", "width": "w", "height": "h", "depth": "d",
              "normalized_coords": true, "address": ["wrap", "clamp"]},
             {"name": "n", "kind": "scalar", "value": "w * h * d"},
             {"name": "w_", "kind": "scalar", "value": "w"}, {"name": "h_", "kind": "scalar", "value": "h"},
             {"name": "d_", "kind": "scalar", "value": "d"}],
    "check": {"reference": {"kernel": "tex_sum_ref", "launch": {"grid": ["ceil_div(w * h * d, 128)"], "block": [128],
                                                                "args": ["lin", "img", "vol", "out", "n"]}}}})JSON");
}

TEST(KernelSpec, ATextureArgumentReadsItsBufferInTheShapeGiven) {
  SpecDir d;
  d.write("t.cu", kTextureSource);
  const std::string op = load_kernel_spec_text(texture_spec().dump(), "t.json", d.dir());
  const KernelSpec& s = spec_of(op);
  for (size_t i : {4u, 5u, 6u}) {
    const SpecArg& a = s.args[i];
    EXPECT_TRUE(a.is_texture()) << a.name;
    EXPECT_FALSE(a.scalar()) << a.name;
    EXPECT_FALSE(a.caller_passes()) << a.name << ": ktune makes it";
    EXPECT_STREQ(a.kind_name(), "texture");
    EXPECT_EQ(a.struct_bytes, 8u) << "a cudaTextureObject_t";
    EXPECT_EQ(a.fields.at(0).buffer, int(i) - 4);
  }
  // The caller passes the four buffers and no texture.
  EXPECT_EQ(op_info(op).operands.size(), 4u);
  const Problem p = Problem::parse(op, "40x30x5");
  const KernelSpec::TextureShape lin = s.texture_at(4, p), img = s.texture_at(5, p), vol = s.texture_at(6, p);
  EXPECT_EQ(lin.width, 6000u) << "the buffer's bytes over a float4's";
  EXPECT_EQ(lin.height, 0u);
  EXPECT_EQ(lin.texel_bytes(), 16u);
  EXPECT_EQ(img.width, 40u);
  EXPECT_EQ(img.height, 30u);
  EXPECT_EQ(img.pitch, 256u);
  EXPECT_EQ(vol.depth, 5u);
  EXPECT_EQ(vol.pitch, 160u) << "rows of w texels, packed";
  EXPECT_EQ(s.args[6].texture.address[0], 0) << "wrap";
  EXPECT_EQ(s.args[6].texture.address[1], 1) << "clamp";
  EXPECT_EQ(s.args[6].texture.address[2], 1) << "the last mode given, for the axes after it";
  EXPECT_NO_THROW(check_fill_files(s, p));
  // Rows of 65 floats do not fit a pitch of 256 bytes: told before a run, naming the texture.
  const Problem wide = Problem::parse(op, "65x30x5");
  try {
    check_fill_files(s, wide);
    ADD_FAILURE() << "a pitch narrower than a row";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("texture img_t at " + wide.key() + ": rows 256 bytes apart hold no 65 texels of 4 bytes"),
              std::string::npos)
        << e.what();
  }
  // The kernel takes unsigned long longs: a texture fits one, not a pointer nor a double.
  const std::string lowered = "_Z7tex_sumILi64EEvyyyPfiiii";
  EXPECT_EQ(signature_mismatch(s, s.steps[0], lowered, p, "launch"), "");
  EXPECT_NE(signature_mismatch(s, s.steps[0], "_Z7tex_sumILi64EEvPKfyyPfiiii", p, "launch")
                .find("argument 1 is float const*, the spec passes lin_t (a texture object, 8 bytes)"),
            std::string::npos);
  EXPECT_NE(signature_mismatch(s, s.steps[0], "_Z7tex_sumILi64EEvdyyPfiiii", p, "launch").find("argument 1 is double"),
            std::string::npos);
  // Compiled, the cubin's parameter sizes agree with the spec's.
  Compiler compiler;
  Config c;
  c.set("BS", 64);
  const auto k = compiler.compile(compile_request(find_family(op), c, p, "sm_90"));
  EXPECT_EQ(cubin_param_sizes(k->cubin, k->lowered_names.at(0)), (std::vector<size_t>{8, 8, 8, 8, 4, 4, 4, 4}));
  EXPECT_EQ(param_sizes_mismatch(s, s.steps[0].args, cubin_param_sizes(k->cubin, k->lowered_names.at(0)), p, "launch"), "");
}

// A texture over a buffer that a round's swap moves reads the buffer the round passes.
TEST(KernelSpec, ATexturesBufferFollowsTheRoundsSwaps) {
  SpecDir d;
  d.write("t.cu", kTextureSource);
  ojson j = texture_spec();
  j["args"][3]["count"] = "64 * h";
  j["args"][3]["intent"] = "inout";
  j["args"][1]["intent"] = "inout";
  j["launch"]["repeat"] = 2;
  j["launch"]["swap"] = ojson::array({ojson::array({"img", "out"})});
  const std::string op = load_kernel_spec_text(j.dump(), "swap.json", d.dir());
  Config c;
  c.set("BS", 64);
  const LaunchPlan plan = find_family(op).launch_plan(c, Problem::parse(op, "40x30x1"));
  std::vector<const LaunchStep*> launches;
  for (const LaunchStep& s : plan.steps)
    if (s.kernel >= 0) launches.push_back(&s);
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_TRUE(launches[0]->alias_args.empty());
  // Round 1: img's texture reads out's buffer, and out is img's.
  EXPECT_EQ(launches[1]->alias_args, (std::vector<int>{1, 3}));
  EXPECT_EQ(launches[1]->alias_of, (std::vector<int>{3, 1}));
  // So out, which only the swap brings under the texture, starts at the texture alignment too (an
  // array's buffer needs none: vol's copy).
  const std::vector<bool> aligned = spec_of(op).texture_aligned();
  EXPECT_EQ(aligned, (std::vector<bool>{true, true, false, true, false, false, false, false, false, false, false}));
  // A temporary swapped with a textured buffer: placed at a multiple of 512 in the workspace,
  // after another (the loop's second step's) of 4800 bytes.
  j["args"][3]["intent"] = "temp";
  j["args"][3]["count"] = "64 * h";
  j["args"].push_back({{"name", "pad"}, {"kind", "buffer"}, {"dtype", "f32"}, {"count", "w * h * d"}, {"intent", "temp"}});
  std::swap(j["args"][3], j["args"][11]); // pad before out among the temporaries
  j["launch"] = {{"repeat", 2}, {"swap", ojson::array({ojson::array({"img", "out"})})},
                 {"steps", {{{"kernel", "tex_sum<{BS}>"}, {"grid", {"ceil_div(w * h * d, BS)"}}, {"block", {"BS"}},
                             {"args", {"lin_t", "img_t", "vol_t", "out", "n", "w_", "h_", "d_"}}},
                            {{"kernel", "tex_sum_ref"}, {"grid", {"ceil_div(w * h * d, 128)"}}, {"block", {128}},
                             {"args", {"lin", "img", "vol", "pad", "n"}}}}}};
  const std::string top = load_kernel_spec_text(j.dump(), "swap_temp.json", d.dir());
  const KernelSpec& ts = spec_of(top);
  const LaunchPlan tp = find_family(top).launch_plan(c, Problem::parse(top, "40x30x1"));
  ASSERT_EQ(ts.args[11].name, "out");
  EXPECT_EQ(tp.spec_args[3].offset, 0);
  EXPECT_EQ(tp.spec_args[11].offset, 5120) << "out, swapped with img: past pad's 4800 bytes at 512, not 256 (4864)";
}

// A problem of no elements: no texel to read, nothing to check before a run.
TEST(KernelSpec, ATextureAtAProblemOfNoElementsIsEmpty) {
  SpecDir d;
  d.write("t.cu", kTextureSource);
  const std::string op = load_kernel_spec_text(texture_spec().dump(), "t.json", d.dir());
  const KernelSpec& s = spec_of(op);
  const Problem p = Problem::parse(op, "0x30x5");
  EXPECT_EQ(s.texture_at(4, p).width, 0u);
  EXPECT_NO_THROW(check_fill_files(s, p));
}

TEST(KernelSpec, MalformedTexturesAreRefusedWithTheirFieldNamed) {
  SpecDir d;
  d.write("t.cu", kTextureSource);
  const auto with = edit(texture_spec());
  EXPECT_NO_THROW(load_kernel_spec_text(texture_spec().dump(), "base.json", d.dir()));
  expect_refused(with([](ojson& j) { j["args"][4]["buffer"] = "n"; }), d, "args[4].buffer: 'n' is not a buffer argument: a texture reads a buffer");
  expect_refused(with([](ojson& j) { j["args"][4]["buffer"] = "zz"; }), d, "args[4].buffer: 'zz' is not one of the spec's args");
  expect_refused(with([](ojson& j) { j["args"][4].erase("buffer"); }), d, "args[4].buffer: missing");
  expect_refused(with([](ojson& j) { j["args"][4]["resource"] = "surface"; }), d, "args[4].resource: unknown resource 'surface'");
  expect_refused(with([](ojson& j) { j["args"][4]["channels"] = 3; }), d, "args[4].channels: a texel holds 1, 2 or 4 channels");
  expect_refused(with([](ojson& j) { j["args"][4]["format"] = "f64"; }), d, "args[4].format: a texel's channel is f32, f16 or an integer");
  expect_refused(with([](ojson& j) { j["args"][0]["dtype"] = "f64"; }), d, "args[4].format: missing: 'lin' holds f64");
  expect_refused(with([](ojson& j) { j["args"][4]["filter"] = "linear"; }), d, "args[4].filter: a linear texture (tex1Dfetch) is read at whole texels");
  expect_refused(with([](ojson& j) { j["args"][5]["format"] = "u8"; }), d,
                 "args[5].filter: linear filtering returns floats: a texel of u8 is filtered only when read normalized");
  expect_refused(with([](ojson& j) { j["args"][4]["read"] = "normalized"; j["args"][4]["format"] = "i32"; }), d,
                 "args[4].read: only 8- and 16-bit integer texels are read as normalized floats, not i32");
  expect_refused(with([](ojson& j) { j["args"][5].erase("height"); }), d, "args[5].height: missing: a pitch2d texture's rows");
  expect_refused(with([](ojson& j) { j["args"][6].erase("width"); }), d, "args[6].width: missing");
  expect_refused(with([](ojson& j) { j["args"][5]["depth"] = 2; }), d, "args[5].depth: only an array texture has slices");
  expect_refused(with([](ojson& j) { j["args"][4]["pitch"] = 64; }), d, "args[4].pitch: a linear texture has no rows");
  expect_refused(with([](ojson& j) { j["args"][4]["height"] = 2; }), d, "args[4].height: a linear texture has no rows");
  expect_refused(with([](ojson& j) { j["args"][4]["address"] = "border"; }), d, "args[4].address: a linear texture (tex1Dfetch) has no address mode");
  expect_refused(with([](ojson& j) { j["args"][5]["width"] = "BS"; }), d, "args[5].width: 'BS' reads BS: a texture's shape is of the dimensions only");
  expect_refused(with([](ojson& j) { j["args"][5]["address"] = "wrap"; }), d, "args[5].address: wrap and mirror address only normalized coordinates");
  expect_refused(with([](ojson& j) { j["args"][6]["address"] = {"wrap", "clamp", "border", "clamp"}; }), d,
                 "args[6].address: one mode, or one an axis (3 here)");
  expect_refused(with([](ojson& j) { j["args"][6]["address"] = "edge"; }), d, "args[6].address: unknown address 'edge'");
  expect_refused(with([](ojson& j) { j["args"][4]["normalized_coords"] = true; }), d,
                 "args[4].normalized_coords: a linear texture (tex1Dfetch) is read at whole texels");
  expect_refused(with([](ojson& j) { j["args"][0]["channels"] = 4; }), d, "args[0].channels: only a texture has channels");
  expect_refused(with([](ojson& j) { j["args"][4]["count"] = 4; }), d, "args[4].count: unknown field");
  // A temporary the config sizes cannot back a texture the problem shapes.
  expect_refused(with([](ojson& j) {
                   j["args"].push_back({{"name", "tmp"}, {"kind", "buffer"}, {"dtype", "f32"}, {"count", "BS * 4"}, {"intent", "temp"}});
                   j["args"][4]["buffer"] = "tmp";
                   j["args"][0]["intent"] = "in";
                   j["check"]["reference"]["launch"]["args"] = {"lin", "img", "vol", "out", "n"};
                 }),
                 d, "args[4].buffer: 'tmp' is a temporary the config sizes");
}


// An address table ("kind": "addresses"): vLLM's copy_blocks, each layer's caches reached through a
// table of their addresses, the layers slices of one buffer here.
constexpr const char* kTableSource = R"CUDA(
template <int B>
__global__ void copy_layers(long long* key_ptrs, float** value_ptrs, const long long* mapping, int block_elems) {
  float* k = reinterpret_cast<float*>(key_ptrs[blockIdx.x]);
  float* v = value_ptrs[blockIdx.x];
  const long long src = mapping[2 * blockIdx.y] * block_elems, dst = mapping[2 * blockIdx.y + 1] * block_elems;
  for (int i = threadIdx.x; i < block_elems; i += B) { k[dst + i] = k[src + i]; v[dst + i] = v[src + i]; }
}
__global__ void copy_ref(float* k, float* v, const long long* mapping, long long layer_elems, int block_elems) {
  const long long base = blockIdx.x * layer_elems;
  const long long src = base + mapping[2 * blockIdx.y] * block_elems, dst = base + mapping[2 * blockIdx.y + 1] * block_elems;
  for (int i = threadIdx.x; i < block_elems; i += blockDim.x) { k[dst + i] = k[src + i]; v[dst + i] = v[src + i]; }
}
)CUDA";

ojson table_spec() {
  return ojson::parse(R"JSON({
    "name": "table_copy", "sources": ["c.cu"], "params_as": "template", "dims": ["layers", "num_blocks", "block_elems", "pairs"],
    "params": {"B": [64, 256]},
    "launch": {"kernel": "copy_layers<{B}>", "grid": ["layers", "pairs"], "block": ["B"], "args": ["key_ptrs", "value_ptrs", "mapping", "E"]},
    "args": [{"name": "k", "kind": "buffer", "dtype": "f32", "count": "layers * num_blocks * block_elems", "intent": "inout"},
             {"name": "v", "kind": "buffer", "dtype": "f32", "count": "layers * num_blocks * block_elems", "intent": "inout"},
             {"name": "key_ptrs", "kind": "addresses", "buffer": "k", "count": "layers", "stride": "num_blocks * block_elems"},
             {"name": "value_ptrs", "kind": "addresses", "buffer": "v", "count": "layers", "offset": "block_elems"},
             {"name": "mapping", "kind": "buffer", "dtype": "i64", "count": "2 * pairs", "fill": {"permutation": "num_blocks"}},
             {"name": "E", "kind": "scalar", "dtype": "i32", "value": "block_elems"},
             {"name": "LE", "kind": "scalar", "dtype": "i64", "value": "num_blocks * block_elems"}],
    "check": {"reference": {"kernel": "copy_ref", "launch": {"grid": ["layers", "pairs"], "block": [256], "args": ["k", "v", "mapping", "LE", "E"]}}}})JSON");
}

TEST(KernelSpec, AnAddressTablePointsAtItsBuffersElements) {
  SpecDir d;
  d.write("c.cu", kTableSource);
  const std::string op = load_kernel_spec_text(table_spec().dump(), "c.json", d.dir());
  const KernelSpec& s = spec_of(op);
  for (size_t i : {2u, 3u}) {
    const SpecArg& a = s.args[i];
    EXPECT_TRUE(a.is_table()) << a.name;
    EXPECT_TRUE(a.made_at_launch()) << a.name;
    EXPECT_FALSE(a.is_texture()) << a.name;
    EXPECT_FALSE(a.caller_passes()) << a.name << ": ktune makes it";
    EXPECT_STREQ(a.kind_name(), "address table");
    EXPECT_EQ(a.struct_bytes, 8u) << "a pointer";
    EXPECT_EQ(a.fields.at(0).buffer, int(i) - 2);
  }
  // The caller passes k, v and the mapping; no table.
  EXPECT_EQ(op_info(op).operands.size(), 3u);
  const Problem p = Problem::parse(op, "4x64x256x16");
  const KernelSpec::TableShape kt = s.table_at(2, p), vt = s.table_at(3, p);
  EXPECT_EQ(kt.count, 4u);
  EXPECT_EQ(kt.offset, 0u);
  EXPECT_EQ(kt.stride, 64u * 256u * 4u) << "a layer's bytes";
  EXPECT_EQ(vt.offset, 256u * 4u) << "from element block_elems on";
  EXPECT_EQ(vt.stride, (4u * 64u * 256u - 256u) / 4u * 4u) << "no stride: what follows the offset in 4 equal slices, in bytes";
  EXPECT_NO_THROW(check_fill_files(s, p));
  EXPECT_EQ(s.table_at(2, Problem::parse(op, "0x64x256x16")).count, 0u) << "no layer: no entry";
  EXPECT_EQ(s.table_at(2, Problem::parse(op, "4x0x256x16")).count, 0u) << "an empty buffer: nothing to point at";
  // No stride, more entries than elements after the offset: no equal slices, refused (not a stride of 0).
  try {
    s.table_at(3, Problem::parse(op, "4x1x1x16"));
    ADD_FAILURE() << "4 entries over 3 elements after the offset";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("address table value_ptrs at " + Problem::parse(op, "4x1x1x16").key() +
                                         ": 4 entries over the 3 elements of v after the offset: no stride given"),
              std::string::npos)
        << e.what();
  }
  // A stride past the buffer: told before a run, naming the table, its last entry and the buffer.
  ojson j = table_spec();
  j["args"][2]["stride"] = "2 * num_blocks * block_elems";
  const std::string wide = load_kernel_spec_text(j.dump(), "wide.json", d.dir());
  try {
    check_fill_files(spec_of(wide), Problem::parse(wide, "4x64x256x16"));
    ADD_FAILURE() << "entries past the buffer";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("address table key_ptrs at " + Problem::parse(wide, "4x64x256x16").key() +
                                         ": its entry 3 points at element 98304 of k, which holds 65536"),
              std::string::npos)
        << e.what();
  }
  // The kernel takes a long long* and a float**: a table fits either, not a value nor a pointer to ints.
  const std::string lowered = "_Z11copy_layersILi64EEvPxPPfPKxi";
  EXPECT_EQ(signature_mismatch(s, s.steps[0], lowered, p, "launch"), "");
  EXPECT_NE(signature_mismatch(s, s.steps[0], "_Z11copy_layersILi64EEvxPPfPKxi", p, "launch")
                .find("argument 1 is long long, the spec passes key_ptrs (an address table: a pointer to 8-byte addresses)"),
            std::string::npos);
  EXPECT_NE(signature_mismatch(s, s.steps[0], "_Z11copy_layersILi64EEvPiPPfPKxi", p, "launch").find("argument 1 is int*"),
            std::string::npos);
  // A char pointer views any buffer's bytes (ggml passes its tensors as const char*); an unsigned
  // char (uint8_t: quantized data) or bool one does not.
  EXPECT_EQ(signature_mismatch(s, s.steps[0], "_Z11copy_layersILi64EEvPxPPfPKci", p, "launch"), "");
  EXPECT_NE(signature_mismatch(s, s.steps[0], "_Z11copy_layersILi64EEvPxPPfPKhi", p, "launch").find("argument 3 is unsigned char const*"),
            std::string::npos);
  EXPECT_NE(signature_mismatch(s, s.steps[0], "_Z11copy_layersILi64EEvPxPPfPKbi", p, "launch").find("argument 3 is bool const*"),
            std::string::npos);
  // Compiled, the cubin's parameter sizes agree with the spec's.
  Compiler compiler;
  Config c;
  c.set("B", 64);
  const auto k = compiler.compile(compile_request(find_family(op), c, p, "sm_90"));
  EXPECT_EQ(k->lowered_names.at(0), lowered);
  EXPECT_EQ(param_sizes_mismatch(s, s.steps[0].args, cubin_param_sizes(k->cubin, k->lowered_names.at(0)), p, "launch"), "");
  // A table's pointer follows a loop's swap as a struct's does (the plan aliases its buffer).
  ojson loop = table_spec();
  loop["args"].push_back({{"name", "k2"}, {"kind", "buffer"}, {"dtype", "f32"}, {"count", "layers * num_blocks * block_elems"}, {"intent", "temp"}});
  loop["launch"]["repeat"] = 2;
  loop["launch"]["swap"] = ojson::array({ojson::array({"k", "k2"})});
  const std::string looped = load_kernel_spec_text(loop.dump(), "loop.json", d.dir());
  const LaunchPlan plan = find_family(looped).launch_plan(c, Problem::parse(looped, "4x64x256x16"));
  int aliased = 0;
  for (const LaunchStep& st : plan.steps)
    for (size_t i = 0; i < st.alias_args.size(); ++i) aliased += st.alias_args[i] == 0 && st.alias_of[i] == 7;
  EXPECT_EQ(aliased, 1) << "the second round's table points into k2";
}

TEST(KernelSpec, MalformedAddressTablesAreRefusedWithTheirFieldNamed) {
  SpecDir d;
  d.write("c.cu", kTableSource);
  const auto with = edit(table_spec());
  expect_refused(with([](ojson& j) { j["args"][2]["buffer"] = "E"; }), d, "args[2].buffer: 'E' is not a buffer argument: an address table points into a buffer");
  expect_refused(with([](ojson& j) { j["args"][2].erase("buffer"); }), d, "args[2].buffer: missing");
  expect_refused(with([](ojson& j) { j["args"][2].erase("count"); }), d, "args[2].count: missing: the table's entries");
  expect_refused(with([](ojson& j) { j["args"][2]["count"] = "B"; }), d, "args[2].count: 'B' reads B: an address table is of the dimensions only");
  expect_refused(with([](ojson& j) { j["args"][2]["stride"] = "sm_count"; }), d, "args[2].stride: 'sm_count' reads sm_count: an address table is of the dimensions only");
  expect_refused(with([](ojson& j) { j["args"][2]["width"] = 4; }), d, "args[2].width: only a texture has width");
  expect_refused(with([](ojson& j) { j["args"][2]["dtype"] = "u64"; }), d, "args[2].dtype: unknown field");
  expect_refused(with([](ojson& j) { j["args"][0]["stride"] = 4; }), d, "args[0].stride: only an address table (\"kind\": \"addresses\") has stride");
  expect_refused(with([](ojson& j) { j["args"][0]["buffer"] = "v"; }), d, "args[0].buffer: only a texture, a surface, an address table and a tensor map read a buffer");
  expect_refused(with([](ojson& j) { j["args"][2]["kind"] = "pointers"; }), d, "args[2].kind: unknown kind 'pointers' (known: buffer, scalar, null, struct, texture, surface, addresses, tensor_map)");
  // A temporary the config sizes cannot back a table the problem shapes.
  expect_refused(with([](ojson& j) {
                   j["args"].push_back({{"name", "tmp"}, {"kind", "buffer"}, {"dtype", "f32"}, {"count", "B * 4"}, {"intent", "temp"}});
                   j["args"][2]["buffer"] = "tmp";
                 }),
                 d, "args[2].buffer: 'tmp' is a temporary the config sizes: an address table points into a buffer the problem sizes");
}

// A surface ("kind": "surface"): an array the launch copies its buffer into and back out of; no
// sampling fields.
TEST(KernelSpec, ASurfaceArgumentIsAnArrayWithoutSampling) {
  SpecDir d;
  d.write("s.cu", "__global__ void twice(cudaSurfaceObject_t s, int w, int h) {\n"
                  "  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;\n"
                  "  if (x < w) surf2Dwrite(2.f * surf2Dread<float>(s, x * 4, y), s, x * 4, y); }\n"
                  "__global__ void twice_ref(float* v, int n) {\n"
                  "  const int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) v[i] *= 2.f; }\n");
  const ojson base = ojson::parse(R"JSON({
    "name": "twice", "sources": ["s.cu"], "kernel": "twice", "dims": ["w", "h"], "params": {"UNTUNED": [0]},
    "launch": {"grid": ["ceil_div(w, 128)", "h"], "block": [128], "args": ["s", "w_", "h_"]},
    "args": [{"name": "v", "kind": "buffer", "dtype": "f32", "count": "w * h", "intent": "inout"},
             {"name": "s", "kind": "surface", "buffer": "v", "width": "w", "height": "h"},
             {"name": "w_", "kind": "scalar", "value": "w"}, {"name": "h_", "kind": "scalar", "value": "h"},
             {"name": "n", "kind": "scalar", "value": "w * h"}],
    "check": {"reference": {"kernel": "twice_ref", "launch": {"grid": ["ceil_div(w * h, 128)"], "block": [128], "args": ["v", "n"]}}}})JSON");
  const std::string op = load_kernel_spec_text(base.dump(), "s.json", d.dir());
  const KernelSpec& s = spec_of(op);
  const SpecArg& a = s.args[1];
  EXPECT_TRUE(a.is_texture());
  EXPECT_TRUE(a.is_surface());
  EXPECT_TRUE(a.has_array()) << "a surface is an array's";
  EXPECT_STREQ(a.kind_name(), "surface");
  EXPECT_FALSE(a.caller_passes());
  const Problem p = Problem::parse(op, "100x7");
  const KernelSpec::TextureShape x = s.texture_at(1, p);
  EXPECT_EQ(x.width, 100u);
  EXPECT_EQ(x.height, 7u);
  EXPECT_EQ(x.pitch, 400u);
  EXPECT_EQ(signature_mismatch(s, s.steps[0], "_Z5twiceyii", p, "launch"), "");
  EXPECT_NE(signature_mismatch(s, s.steps[0], "_Z5twicePfii", p, "launch").find("the spec passes s (a texture object, 8 bytes)"),
            std::string::npos);
  const auto with = edit(base);
  expect_refused(with([](ojson& j) { j["args"][1]["filter"] = "linear"; }), d, "args[1].filter: unknown field");
  expect_refused(with([](ojson& j) { j["args"][1]["resource"] = "linear"; }), d, "args[1].resource: unknown field");
  expect_refused(with([](ojson& j) { j["args"][1].erase("width"); }), d, "args[1].width: missing: a surface's texels along x");
  expect_refused(with([](ojson& j) { j["args"][1]["buffer"] = "n"; }), d, "args[1].buffer: 'n' is not a buffer argument: a surface reads a buffer");
  expect_refused(with([](ojson& j) { j["args"][1]["depth"] = 2; j["args"][1].erase("height"); }), d,
                 "args[1].depth: a 3D surface has a height too");
}


// Dynamic shared memory as a C++ constant of the source (Ktraits::kSmemSize, a CUB TempStorage's
// sizeof): compiled as a probe kernel's template argument, read back from its lowered name.
TEST(KernelSpec, SharedMemoryFromACppConstantIsReadFromTheCompiledProbe) {
  SpecDir d;
  d.write("sm.cu", "template <int B> struct Traits { static constexpr int kSmem = B * 400; };\n"
                   "template <int B> __global__ void fill_smem(float* y, int n) {\n"
                   "  extern __shared__ float buf[]; const int i = blockIdx.x * B + threadIdx.x;\n"
                   "  buf[threadIdx.x] = 1.f; __syncthreads(); if (i < n) y[i] = buf[threadIdx.x]; }\n"
                   "__global__ void fill_ref(float* y, int n) { const int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 1.f; }\n");
  const ojson base = ojson::parse(R"JSON({
    "name": "smem_constant", "sources": ["sm.cu"], "params_as": "template", "dims": ["n"], "params": {"B": [64, 128]},
    "launch": {"kernel": "fill_smem<{B}>", "grid": ["ceil_div(n, B)"], "block": ["B"], "shared_memory": {"constant": "Traits<{B}>::kSmem"},
               "args": ["y", "n_"]},
    "args": [{"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"}, {"name": "n_", "kind": "scalar", "value": "n"}],
    "check": {"reference": {"kernel": "fill_ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128], "args": ["y", "n_"]}}}})JSON");
  const std::string op = load_kernel_spec_text(base.dump(), "sm.json", d.dir());
  const KernelSpec& s = spec_of(op);
  EXPECT_EQ(s.steps.at(0).smem_constant, "Traits<{B}>::kSmem");
  EXPECT_TRUE(s.reference_steps.at(0).smem_constant.empty());
  const Problem p = Problem::parse(op, "100000");
  Config c;
  c.set("B", 128);
  EXPECT_EQ(s.kernel_names(s.steps, c, p),
            (std::vector<std::string>{"fill_smem<128>", "ktune_constant_probe<(unsigned long long)(Traits<128>::kSmem)>"}));
  const LaunchPlan plan = find_family(op).launch_plan(c, p);
  ASSERT_EQ(plan.steps.size(), 1u);
  EXPECT_EQ(plan.steps[0].smem_kernel, 1) << "the probe after the step";
  EXPECT_EQ(plan_from_json(nlohmann::json::parse(plan_to_json(plan).dump())).steps[0].smem_kernel, 1) << "the worker gets it";
  EXPECT_EQ(s.plan(s.reference_steps, s.reference_config, p).steps.at(0).smem_kernel, -1);
  // Compiled: the probe's lowered name holds NVRTC's value of the constant.
  Compiler compiler;
  for (int b : {64, 128}) {
    c.set("B", b);
    const auto k = compiler.compile(compile_request(find_family(op), c, p, "sm_90"));
    ASSERT_EQ(k->lowered_names.size(), 2u);
    unsigned long long bytes = 0;
    EXPECT_FALSE(constant_probe_value(k->lowered_names[0], &bytes)) << k->lowered_names[0];
    ASSERT_TRUE(constant_probe_value(k->lowered_names[1], &bytes)) << k->lowered_names[1];
    EXPECT_EQ(bytes, 400ull * unsigned(b));
  }
  unsigned long long v = 7;
  EXPECT_TRUE(constant_probe_value("_Z20ktune_constant_probeILy0EEvv", &v));
  EXPECT_EQ(v, 0ull);
  EXPECT_FALSE(constant_probe_value("_Z20ktune_constant_probeILy99999999999999999999999EEvv", &v)) << "past 64 bits";
  EXPECT_FALSE(constant_probe_value("_Z20ktune_constant_probeILyEEvv", &v));
  // Refused: no constant, an empty one, another field; a placeholder that is no parameter.
  const auto with = edit(base);
  expect_refused(with([](ojson& j) { j["launch"]["shared_memory"] = ojson::object(); }), d, "launch.shared_memory: expected an expression of the problem or {\"constant\"");
  expect_refused(with([](ojson& j) { j["launch"]["shared_memory"]["constant"] = " "; }), d, "launch.shared_memory.constant: empty");
  expect_refused(with([](ojson& j) { j["launch"]["shared_memory"]["bytes"] = 4; }), d, "launch.shared_memory.bytes: unknown field");
  expect_refused(with([](ojson& j) { j["launch"]["shared_memory"]["constant"] = "Traits<{Q}>::kSmem"; }), d,
                 "shared memory constant 'Traits<{Q}>::kSmem': {Q} is not a parameter, a dimension or {dtype}");
}

// A source written for nvcc includes the C and C++ standard headers NVRTC lacks: ktune's stand in
// (libcu++'s twins with their names in std::, <cfloat>'s limits, <math.h>'s constants, the
// host's library headers empty), each config compiling; a header of the user's own include_dirs
// by the same name wins; device code that uses a host-only header's names fails on them by name.
TEST(KernelSpec, StandardHeadersNvrtcLacksStandInForAKernelWrittenForNvcc) {
  SpecDir d;
  d.write("std.cu", "#include <cstdint>\n#include <cstddef>\n#include <cmath>\n#include <cfloat>\n#include <climits>\n#include <cassert>\n"
                    "#include <limits>\n#include <algorithm>\n#include <type_traits>\n#include <utility>\n#include <array>\n"
                    "#include <math.h>\n#include <stdint.h>\n#include <float.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
                    "#include <vector>\n#include <iostream>\n#include <cuda_fp16.h>\n#include <cub/block/block_reduce.cuh>\n"
                    "#include <stdbool.h>\n#include <omp.h>\n#include <sys/syscall.h>\n#include <strings.h>\n#include <inttypes.h>\n"
                    "template <int B> __global__ void k(const float* x, float* y, int n) {\n"
                    "  const int i = blockIdx.x * B + threadIdx.x;\n  assert(B > 0);\n"
                    "  static_assert(std::is_same<std::uint32_t, uint32_t>::value && sizeof(std::int64_t) == 8, \"\");\n"
                    "  constexpr float big = std::numeric_limits<float>::max();\n  std::array<float, 2> two{{1.f, 2.f}};\n"
                    "  if (i < n) y[i] = std::min(x[i], big) + std::max(0.f, two[0] - 1.f) + float(M_PI - M_PI) + (FLT_MAX > 0 ? 0.f : 1.f)\n"
                    "                   + (INT_MAX > 0 ? 0.f : 1.f) + (std::isnan(x[i]) ? 1.f : 0.f) + std::fabs(0.f);\n}\n"
                    "__global__ void ref(const float* x, float* y, int n) { const int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }\n");
  const ojson base = ojson::parse(R"JSON({
    "name": "std_headers", "sources": ["std.cu"], "kernel": "k<{B}>", "params_as": "template", "dims": ["n"], "params": {"B": [64, 128]},
    "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n_", "kind": "scalar", "value": "n"}],
    "check": {"reference": {"kernel": "ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
  const std::string op = load_kernel_spec_text(base.dump(), "std.json", d.dir());
  auto names = [&](const std::string& o) {
    std::set<std::string> n;
    for (const auto& h : spec_of(o).std_headers) n.insert(h.first);
    return n;
  };
  for (const char* h : {"cstdint", "cmath", "cfloat", "cassert", "algorithm", "math.h", "stdio.h", "vector", "iostream", "stdbool.h", "omp.h",
                        "sys/syscall.h", "strings.h", "inttypes.h"})
    EXPECT_TRUE(names(op).count(h)) << h;
  EXPECT_FALSE(names(op).count("version")) << "libcu++ takes a host library's <version> where it finds one";
  const Problem p = Problem::parse(op, "1000");
  Compiler compiler;
  for (int b : {64, 128}) {
    const CompileRequest req = compile_request(find_family(op), Config{{"B", b}}, p, "sm_90");
    EXPECT_EQ(req.headers, spec_of(op).std_headers);
    EXPECT_NO_THROW(compiler.compile(req)) << "B " << b;
  }
  EXPECT_EQ(spec_side_request(op, "reference", p, "sm_90")->headers, spec_of(op).std_headers);
  // The user's own <cstdint> wins: theirs defines a macro the source requires.
  fs::create_directories(fs::path(d.dir()) / "inc");
  d.write("inc/cstdint", "#pragma once\n#define USERS_OWN_CSTDINT 1\n#include <cuda/std/cstdint>\nusing cuda::std::uint32_t;\n"
                         "namespace std { using cuda::std::uint32_t; using cuda::std::int64_t; }\n");
  d.write("own.cu", "#include <cstdint>\n#ifndef USERS_OWN_CSTDINT\n#error ktune's cstdint, not the user's\n#endif\n"
                    "template <int B> __global__ void k(const float* x, float* y, int n) { const int i = blockIdx.x * B + threadIdx.x;"
                    " if (i < n) y[i] = x[i] + float(std::uint32_t(0)); }\n"
                    "__global__ void ref(const float* x, float* y, int n) { const int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }\n");
  ojson own = base;
  own["name"] = "std_headers_own";
  own["sources"] = {"own.cu"};
  own["include_dirs"] = {"inc"};
  const std::string op2 = load_kernel_spec_text(own.dump(), "own.json", d.dir());
  EXPECT_FALSE(names(op2).count("cstdint"));
  EXPECT_TRUE(names(op2).count("cmath"));
  EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op2), Config{{"B", 64}}, Problem::parse(op2, "1000"), "sm_90")));
  // A host-only header is empty but for its types' empty stand-ins: device code that uses
  // std::vector fails, naming it.
  d.write("vec.cu", "#include <vector>\ntemplate <int B> __global__ void k(const float* x, float* y, int n) { std::vector<float> v; v.push_back(x[0]); }\n"
                    "__global__ void ref(const float* x, float* y, int n) {}\n");
  ojson vec = base;
  vec["name"] = "std_headers_vector";
  vec["sources"] = {"vec.cu"};
  const std::string op3 = load_kernel_spec_text(vec.dump(), "vec.json", d.dir());
  if (const auto e = compile_failure(compiler, op3, Config{{"B", 64}}, Problem::parse(op3, "1000"),
                                     "std::vector compiled in device code")) {
    EXPECT_NE(std::string(e->what()).find("vector"), std::string::npos) << e->what();
  }
}

// A project's .cu file as it is (its kernels beside main, its launches, host helpers, a host
// variable, a struct with a host constructor): refused by NVRTC, which the error says how to
// mend; with "host_code": "skip" its host code is blanked and every config compiles.
TEST(KernelSpec, AProjectsFileWithHostCodeCompilesWhereHostCodeIsSkipped) {
  SpecDir d;
  d.write("proj.cu", R"CUDA(// A project's file as it is: kernels, helpers, host code.
#include <cuda_runtime.h>
#include <stdio.h>
#include <vector>
#define DINLINE __device__ __forceinline__
#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s\n", cudaGetErrorString(e)); exit(1); } } while (0)

namespace util {
DINLINE float twice(float x) { return 2.f * x; }
inline int ceil_div(int a, int b) { return (a + b - 1) / b; }
}  // namespace util

struct Params { const float* a; float* c; int n; Params(int k) : a(nullptr), c(nullptr), n(k) {} __device__ float get() const { return 0.f; } };

template <int B = 128>
__global__ void __launch_bounds__(B) scale2(const float* a, float* c, int n) {
  int i = blockIdx.x * B + threadIdx.x;
  if (i < n) c[i] = util::twice(a[i]);
}
__global__ void scale2_ref(const float* a, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + a[i];
}

template <int B>
void launch(const float* a, float* c, int n, cudaStream_t s) {
  scale2<B><<<util::ceil_div(n, B), B, 0, s>>>(a, c, n);
}

static const char* kName = "scale2 {braces in a string}";

int main(int argc, char** argv) {
  int n = 1 << 20;
  std::vector<float> h(n, 1.f);
  float *a, *c;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&c, n * sizeof(float)));
  launch<256>(a, c, n, 0);
  auto l = [&]() { return n; };
  printf("%s %d\n", kName, l());
  return 0;
}
)CUDA");
  ojson spec = ojson::parse(R"JSON({
    "name": "proj_scale2", "sources": ["proj.cu"], "kernel": "scale2<{B}>", "params_as": "template", "dims": ["n"], "params": {"B": [128, 256]},
    "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "a", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "c", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"reference": {"kernel": "scale2_ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
  Compiler compiler;
  const std::string as_is = load_kernel_spec_text(spec.dump(), "proj.json", d.dir());
  if (const auto e = compile_failure(compiler, as_is, Config{{"B", 128}}, Problem::parse(as_is, "1000"),
                                     "main compiled under NVRTC")) {
    EXPECT_NE(std::string(e->what()).find("NVRTC compiles device code only"), std::string::npos) << e->what();
  }
  spec["name"] = "proj_scale2_skip";
  spec["host_code"] = "skip";
  const std::string op = load_kernel_spec_text(spec.dump(), "proj.json", d.dir());
  EXPECT_TRUE(spec_of(op).skip_host_code);
  for (int b : {128, 256})
    EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"B", b}}, Problem::parse(op, "1000"), "sm_90"))) << b;
  spec["options"] = {"-default-device"};
  expect_refused(spec, d, "host_code: skip blanks the functions without __device__, which -default-device");
  spec["host_code"] = "drop";
  expect_refused(spec, d, "host_code: 'drop' is neither skip");
}

// A project's .cu that writes its kernels and its host launchers through a header's function-like
// macros (candle's `BINARY_OP(float, badd_f32, x + y)` lines with no ';', Apex's group norm
// launchers several macros down): under skip the reading expands each call through the header's
// macros, keeps the kernels' and blanks the launchers', and the kernels compile by name.
TEST(KernelSpec, KernelsAndLaunchersAProjectHeadersMacrosWriteAreReadThroughTheirExpansion) {
  SpecDir d;
  d.write("ops.cuh", R"CUDA(#pragma once
#define UNARY_OP(T, NAME, F) \
  extern "C" __global__ void NAME(const T* in, T* out, int n) { \
    int i = blockIdx.x * blockDim.x + threadIdx.x; \
    if (i < n) { T x = in[i]; out[i] = F; } \
  }
#define LAUNCHER_NAME(NAME, P) void launch_##NAME##_##P(const float* in, float* out, int n, cudaStream_t s)
#define LAUNCHER(NAME, P) LAUNCHER_NAME(NAME, P) { \
    NAME<<<(n + P - 1) / P, P, 0, s>>>(in, out, n); \
    if (cudaGetLastError() != cudaSuccess) printf("launch of " #NAME " failed\n"); \
  }
#define EACH_BLOCK(F, NAME) F(NAME, 128); F(NAME, 256);
#define LAUNCHERS(NAME) EACH_BLOCK(LAUNCHER, NAME)
)CUDA");
  d.write("ops.cu", R"CUDA(#include <cstdio>
#include "ops.cuh"
UNARY_OP(float, neg_f32, -x)
UNARY_OP(float, twice_f32, x + x)
UNARY_OP(double, neg_f64, -x)
LAUNCHERS(twice_f32)
__global__ void twice_ref(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.f * in[i];
}
)CUDA");
  ojson spec = ojson::parse(R"JSON({
    "name": "macro_ops", "sources": ["ops.cu"], "host_code": "skip", "kernel": "twice_f32", "dims": ["n"], "params": {"B": [128]},
    "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "in", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "out", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"reference": {"kernel": "twice_ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
  const std::string op = load_kernel_spec_text(spec.dump(), "ops.json", d.dir());
  const std::string& source = spec_of(op).source;
  EXPECT_NE(source.find("UNARY_OP(float, twice_f32, x + x)"), std::string::npos) << source;
  EXPECT_EQ(source.find("LAUNCHERS(twice_f32)"), std::string::npos) << source;
  Compiler compiler;
  EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"B", 128}}, Problem::parse(op, "1000"), "sm_90")));
}

// A project's file that includes <cuda.h> and <cub/cub.cuh> as nvcc takes them (NVRTC refuses
// both: the driver API's declarations, CUB's device-wide algorithms): ktune hands NVRTC device
// code's view of each, made from the toolkit's own text, and with its host code skipped the file
// compiles at every config. Device code that uses what a view leaves out fails, naming it; a
// spec folder's own cuda.h wins, as its own <cstdint> does.
TEST(KernelSpec, CudaHAndCubsUmbrellaCompileThroughDeviceCodesViewOfThem) {
  if (cuda_include_dir().empty()) GTEST_SKIP() << "no CUDA include folder to make the views from";
  SpecDir d;
  d.write("toolkit.cu", ktune::testing::kToolkitSource);
  auto header = [&](const std::string& op, const std::string& name) -> const std::string* {
    for (const auto& h : spec_of(op).std_headers)
      if (h.first == name) return &h.second;
    return nullptr;
  };
  Compiler compiler;
  const std::string tma = load_kernel_spec_text(ojson::parse(ktune::testing::kToolkitTmaSpec).dump(), "tma.json", d.dir());
  const std::string warp = load_kernel_spec_text(ojson::parse(ktune::testing::kToolkitWarpSpec).dump(), "warp.json", d.dir());
  const std::string* cuda_h = header(tma, "cuda.h");
  const std::string* cub_h = header(tma, "cub/cub.cuh");
  ASSERT_TRUE(cuda_h && cub_h);
  EXPECT_NE(cuda_h->find("CUtensorMap_st"), std::string::npos) << "the types stay";
  EXPECT_NE(cuda_h->find("cuuint64_t opaque[CU_TENSOR_MAP_NUM_QWORDS];"), std::string::npos) << "with their members, behind alignas or _Alignas";
  EXPECT_NE(cuda_h->find("CU_TENSOR_MAP_DATA_TYPE_FLOAT32"), std::string::npos) << "and the enums";
  EXPECT_EQ(cuda_h->find("cuTensorMapEncodeTiled("), std::string::npos) << "the driver API's declarations go";
  EXPECT_EQ(cuda_h->find("\\brief"), std::string::npos) << "and the comments";
  EXPECT_EQ(cub_h->find("cub/device/"), std::string::npos);
  EXPECT_NE(cub_h->find("<cub/warp/warp_reduce.cuh>"), std::string::npos);
  for (int bx : {32, 64})
    for (int by : {4, 16})
      EXPECT_NO_THROW(compiler.compile(compile_request(find_family(tma), Config{{"BX", bx}, {"BY", by}}, Problem::parse(tma, "1000x300"), "sm_90")))
          << bx << "x" << by;
  for (int b : {64, 256})
    EXPECT_NO_THROW(compiler.compile(compile_request(find_family(warp), Config{{"B", b}}, Problem::parse(warp, "1000"), "sm_90"))) << b;
  // Device code that calls a device-wide algorithm fails on its name.
  d.write("device_wide.cu", "#include <cub/cub.cuh>\ntemplate <int B> __global__ void k(const int* x, int* y, int n) {\n"
                            "  size_t bytes = 0; cub::DeviceReduce::Sum(nullptr, bytes, x, y, n); }\n"
                            "__global__ void ref(const int* x, int* y, int n) {}\n");
  ojson wide = ojson::parse(ktune::testing::kToolkitWarpSpec);
  wide["name"] = "toolkit_device_wide";
  wide["sources"] = {"device_wide.cu"};
  wide["launch"]["kernel"] = "k<{B}>";
  wide["check"]["reference"]["kernel"] = "ref";
  wide.erase("host_code");
  const std::string op_wide = load_kernel_spec_text(wide.dump(), "wide.json", d.dir());
  if (const auto e = compile_failure(compiler, op_wide, Config{{"B", 64}}, Problem::parse(op_wide, "1000"),
                                     "cub::DeviceReduce compiled in device code")) {
    EXPECT_NE(std::string(e->what()).find("DeviceReduce"), std::string::npos) << e->what();
  }
  // The spec's own cuda.h wins; CUDA's include folder named among include_dirs does not count as its own.
  fs::create_directories(fs::path(d.dir()) / "inc");
  d.write("inc/cuda.h", "#pragma once\ntypedef struct CUtensorMap_st { alignas(64) unsigned long long opaque[16]; } CUtensorMap;\n");
  ojson own = ojson::parse(ktune::testing::kToolkitTmaSpec);
  own["name"] = "toolkit_own_cuda_h";
  own["include_dirs"] = {"inc"};
  const std::string op_own = load_kernel_spec_text(own.dump(), "own.json", d.dir());
  EXPECT_EQ(header(op_own, "cuda.h"), nullptr);
  EXPECT_NE(header(op_own, "cub/cub.cuh"), nullptr);
  own["name"] = "toolkit_cuda_dir";
  own["include_dirs"] = {cuda_include_dir()};
  const std::string op_dir = load_kernel_spec_text(own.dump(), "dir.json", d.dir());
  EXPECT_NE(header(op_dir, "cuda.h"), nullptr);
}

// A project's kernel file whose host code is also in the project header it includes (llm.c's
// common.h: a host variable, error checks, a timer class, cuBLAS's header): NVRTC refuses it,
// naming the header; with "host_code": "skip" the header is blanked too (an in-memory header by
// the name it is included by), the toolkit's cublas_v2.h and cublas_api.h reach NVRTC as device
// code's views, and what nvcc's implicit headers give (INFINITY, uint) goes before the sources.
// A name that two includes resolve to different files gets no view: one text cannot serve both.
TEST(KernelSpec, AProjectHeadersHostCodeIsSkippedWithItsSources) {
  if (cuda_include_dir().empty()) GTEST_SKIP() << "no CUDA include folder to make the views from";
  SpecDir d;
  fs::create_directories(fs::path(d.dir()) / "dev");
  d.write("dev/common.h", ktune::testing::kProjectCommon);
  d.write("dev/softmax_forward.cu", ktune::testing::kProjectSoftmax);
  ojson spec = ojson::parse(ktune::testing::kProjectSoftmaxSpec);
  Compiler compiler;
  auto header = [&](const std::string& op, const std::string& name) -> const std::string* {
    for (const auto& h : spec_of(op).std_headers)
      if (h.first == name) return &h.second;
    return nullptr;
  };
  spec.erase("host_code");
  spec["name"] = "project_softmax_as_is";
  const std::string as_is = load_kernel_spec_text(spec.dump(), "as_is.json", d.dir());
  EXPECT_EQ(header(as_is, "common.h"), nullptr);
  if (const auto e = compile_failure(compiler, as_is, Config{{"WARPS", 2}}, Problem::parse(as_is, "1000x768"),
                                     "a header's host code compiled under NVRTC")) {
    const std::string what = e->what();
    const size_t at = what.find("the first host code is in ");
    ASSERT_NE(at, std::string::npos) << what;
    EXPECT_NE(what.find("common.h", at), std::string::npos) << "the header's host variable comes first: " << what;
  }
  spec["host_code"] = "skip";
  spec["name"] = "project_softmax";
  const std::string op = load_kernel_spec_text(spec.dump(), "skip.json", d.dir());
  const std::string* common = header(op, "common.h");
  ASSERT_NE(common, nullptr);
  EXPECT_EQ(common->find("void cuda_check("), std::string::npos) << *common;
  EXPECT_EQ(common->find("void start();"), std::string::npos) << "a host member's declaration goes:\n" << *common;
  EXPECT_NE(common->find("struct timeval start_time;"), std::string::npos) << "a data member stays";
  EXPECT_NE(common->find("__device__ inline float warp_max"), std::string::npos);
  EXPECT_NE(common->find("#define cudaCheck(err)"), std::string::npos);
  EXPECT_NE(header(op, "cublas_v2.h"), nullptr);
  EXPECT_NE(header(op, "cublas_api.h"), nullptr) << "the view cublas_v2.h includes";
  EXPECT_EQ(header(op, "cub/cub.cuh"), nullptr) << "a view the sources do not reach is not carried";
  EXPECT_NE(spec_of(op).source.find("#define INFINITY"), std::string::npos);
  EXPECT_NE(spec_of(op).source.find("typedef unsigned int uint;"), std::string::npos);
  EXPECT_EQ(spec_of(op).source.find("typedef unsigned short ushort;"), std::string::npos) << "only the names the text uses";
  for (int w : {2, 8})
    EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"WARPS", w}}, Problem::parse(op, "1000x768"), "sm_90"))) << w;
  EXPECT_NO_THROW(compiler.compile(*spec_side_request(op, "reference", Problem::parse(op, "1000x768"), "sm_90")));
  // Two util.h, one a folder: no view of the name.
  for (const char* dir : {"a", "b"}) {
    fs::create_directories(fs::path(d.dir()) / dir);
    d.write(std::string(dir) + "/util.h", std::string("#pragma once\nint host_") + dir + "(int x) { return x; }\n");
    d.write(std::string(dir) + "/k.cu", "#include \"util.h\"\n");
  }
  ojson two = spec;
  two["name"] = "project_two_utils";
  two["sources"] = {"dev/softmax_forward.cu", "a/k.cu", "b/k.cu"};
  const std::string op_two = load_kernel_spec_text(two.dump(), "two.json", d.dir());
  EXPECT_EQ(header(op_two, "util.h"), nullptr);
  EXPECT_NE(header(op_two, "common.h"), nullptr);
}

// ggml's shape (src/ggml-cuda/common.cuh): an API macro defined in one project header and used in
// another's declarations, C's elaborated types in host declarations (`enum ggml_status` as a
// parameter, `struct obj*` returned), a host class whose data members are the host library's
// containers, a unique_ptr, a mutex, a virtual `= default` destructor, a default argument `= {}`,
// GNU's __extension__ on an anonymous union and programmatic dependent launch's device calls; the
// header included by two names (beside the source, and by its folder from src/). With
// "host_code": "skip" the file compiles as it is, with no warning from NVRTC, and the
// declarations it blanks are the host's only.
TEST(KernelSpec, AGgmlShapedProjectCompilesWhereHostCodeIsSkipped) {
  SpecDir d;
  fs::create_directories(fs::path(d.dir()) / "include");
  fs::create_directories(fs::path(d.dir()) / "src" / "cu");
  d.write("include/api.h", "#pragma once\n#define PROJ_API extern\nenum proj_status { PROJ_OK = 0 };\n"
                           "PROJ_API const char* proj_status_str(enum proj_status s);\n");
  d.write("src/cu/ctx.h", R"CUDA(#pragma once
#include "api.h"
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>
struct obj { int a; };
struct obj* make_obj(int a);
void print_obj(const struct obj* o);
enum proj_status obj_status(const struct obj* o);
PROJ_API int proj_init(int device);
struct proj_pool {
  virtual ~proj_pool() = default;
  virtual void* alloc(size_t size, size_t* actual) = 0;
};
struct proj_ctx {
  int device;
  std::string name;
  std::vector<int> events;
  std::unordered_map<const float*, int> streams;
  std::unique_ptr<proj_pool> pools[2];
  std::mutex lock;
  ~proj_ctx() { events.clear(); }
};
inline bool fusable(const int* g, std::initializer_list<int> outputs = {}) { return g != nullptr && outputs.size() == 0; }
struct block_q { __extension__ union { struct { short d; short m; }; int dm; }; signed char q[4]; };
)CUDA");
  d.write("src/cu/k.cu", R"CUDA(#include "ctx.h"
#include "cu/ctx.h"
template <int B> __global__ void k(const float* x, float* y, int n) {
  cudaGridDependencySynchronize();
  block_q b;
  b.dm = 0;
  const int i = blockIdx.x * B + threadIdx.x;
  if (i < n) y[i] = x[i] + float(b.d);
  cudaTriggerProgrammaticLaunchCompletion();
}
__global__ void ref(const float* x, float* y, int n) { const int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }
void run(proj_ctx& ctx, const float* x, float* y, int n) { k<128><<<(n + 127) / 128, 128>>>(x, y, n); }
)CUDA");
  const ojson spec = ojson::parse(R"JSON({
    "name": "ggml_shaped", "sources": ["src/cu/k.cu"], "include_dirs": ["include", "src"], "host_code": "skip", "kernel": "k<{B}>", "params_as": "template",
    "dims": ["n"], "params": {"B": [64, 128]}, "arch": "sm_90", "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"reference": {"kernel": "ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
  const std::string op = load_kernel_spec_text(spec.dump(), "ggml_shaped.json", d.dir());
  const std::string* ctx = nullptr;
  const std::string* api = nullptr;
  const std::string* ctx_by_folder = nullptr;
  for (const auto& h : spec_of(op).std_headers) {
    if (h.first == "ctx.h") ctx = &h.second;
    if (h.first == "api.h") api = &h.second;
    if (h.first == "cu/ctx.h") ctx_by_folder = &h.second;
  }
  ASSERT_TRUE(ctx && api && ctx_by_folder);
  EXPECT_EQ(*ctx_by_folder, "#pragma once\n#include \"ctx.h\"\n") << "one view, the other name includes it";
  auto has = [](const std::string* t, const std::string& part) { return t->find(part) != std::string::npos; };
  for (const char* gone : {"make_obj(int a)", "print_obj(", "obj_status(", "proj_init(", "virtual ~proj_pool()", "virtual void* alloc(",
                           "~proj_ctx()", "fusable("})
    EXPECT_FALSE(has(ctx, gone)) << gone << " stayed:\n" << *ctx;
  EXPECT_FALSE(has(api, "proj_status_str(")) << *api;
  for (const char* kept : {"struct obj { int a; };", "struct proj_pool {", "std::vector<int> events;", "std::unique_ptr<proj_pool> pools[2];",
                           "std::mutex lock;", "__extension__ union"})
    EXPECT_TRUE(has(ctx, kept)) << kept << " went:\n" << *ctx;
  EXPECT_TRUE(has(api, "enum proj_status { PROJ_OK = 0 };")) << *api;
  Compiler compiler;
  for (int b : {64, 128}) {
    std::shared_ptr<const CompiledKernel> k;
    ASSERT_NO_THROW(k = compiler.compile(compile_request(find_family(op), Config{{"B", b}}, Problem::parse(op, "1000"), "sm_90"))) << b;
    EXPECT_EQ(k->log.find("warning"), std::string::npos) << k->log;
  }
}

// Transformer Engine's shape (transformer_engine/common): a header that includes another beside
// it and is itself included from another folder ("../util/system.h" including "logging.h"),
// NVTX 3 and nvrtc.h for the host code, a class holding the host library's std::once_flag,
// std::function and std::shared_mutex, an operator's declaration, a constexpr template declared
// before a macro writes its specializations, `__host__` on a device constant and __uint128_t in
// device code. With "host_code": "skip" the file compiles as it is: the header beside its
// includer is a view named by its path (less the '/'), NVTX's and nvrtc.h's views are its
// types and macros, and NVRTC is asked for 128-bit integers.
TEST(KernelSpec, ATransformerEngineShapedProjectCompilesWhereHostCodeIsSkipped) {
  if (cuda_include_dir().empty()) GTEST_SKIP() << "no CUDA include folder to make the views from";
  SpecDir d;
  fs::create_directories(fs::path(d.dir()) / "common" / "util");
  fs::create_directories(fs::path(d.dir()) / "common" / "cast");
  d.write("common/util/logging.h", R"CUDA(#pragma once
#include <nvrtc.h>
#include <stdexcept>
#include <string>
#define CHECK_NVRTC(expr) do { nvrtcResult r = (expr); if (r != NVRTC_SUCCESS) throw std::runtime_error(nvrtcGetErrorString(r)); } while (0)
inline void check_nvrtc(nvrtcResult r) { CHECK_NVRTC(r); }
)CUDA");
  // A header with no host code, included beside by a header and by a relative name from the
  // source (SageAttention's cp_async.cuh): one file, so one view, the other name including it.
  d.write("common/util/types.h", "#pragma once\nenum class Fill { zero, keep };\n");
  d.write("common/util/system.h", R"CUDA(#pragma once
#include "types.h"
#include <functional>
#include <iterator>
#include <mutex>
#include <shared_mutex>
#include <string>
#include "logging.h"
class Kernel {
 public:
  Kernel(std::string name);
  ~Kernel();
  Kernel &operator=(Kernel) noexcept;
  friend void swap(Kernel &a, Kernel &b) noexcept;
 private:
  std::once_flag once_;
  std::function<void(int)> callback_;
  std::shared_mutex lock_;
};
int getenv_int(const char* name);
)CUDA");
  d.write("common/common.h", R"CUDA(#pragma once
#include <nvtx3/nvToolsExt.h>
#include <cstdint>
struct NvtxRange {
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
};
template <typename T>
constexpr inline const char *type_name() noexcept;
#define TYPE_NAME(T) template <> inline constexpr const char *type_name<T>() noexcept { return #T; }
TYPE_NAME(float)
TYPE_NAME(int)
#undef TYPE_NAME
constexpr __device__ __host__ int TB_DIM = 32;
__device__ __forceinline__ __uint128_t widen(unsigned long long lo, unsigned long long hi) {
  return (static_cast<__uint128_t>(hi) << 64) | lo;
}
)CUDA");
  // A project header named as a toolkit one, beside the source (TE's util/cuda_runtime.h): the
  // toolkit's views include the toolkit's file, not it.
  d.write("common/cast/library_types.h", "#pragma once\nint project_library_types(int device);\n");
  d.write("common/cast/cast.cu", R"CUDA(#include "../common.h"
#include "../util/system.h"
#include "../util/types.h"
#include <cublas_v2.h>
template <int B> __global__ void k(const float* x, float* y, int n) {
  const int i = blockIdx.x * B + threadIdx.x;
  const __uint128_t w = widen(1ull, 0ull);
  if (i < n) y[i] = x[i] * float(unsigned(w)) + float(type_name<float>()[0] == 'f') - 1.f + float(TB_DIM - 32);
}
__global__ void ref(const float* x, float* y, int n) { const int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }
void cast(const float* x, float* y, int n) { NvtxRange r("cast"); k<128><<<(n + 127) / 128, 128>>>(x, y, n); }
)CUDA");
  const ojson spec = ojson::parse(R"JSON({
    "name": "te_shaped", "sources": ["common/cast/cast.cu"], "host_code": "skip", "kernel": "k<{B}>", "params_as": "template",
    "dims": ["n"], "params": {"B": [64, 128]}, "arch": "sm_90", "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"reference": {"kernel": "ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
  const std::string op = load_kernel_spec_text(spec.dump(), "te_shaped.json", d.dir());
  const KernelSpec& s = spec_of(op);
  auto header = [&](const std::string& name) -> const std::string* {
    for (const auto& h : s.std_headers)
      if (h.first == name) return &h.second;
    return nullptr;
  };
  const std::string logging_name = fs::absolute(fs::path(d.dir()) / "common" / "util" / "logging.h").lexically_normal().string().substr(1);
  const std::string* system = header("../util/system.h");
  ASSERT_NE(system, nullptr);
  EXPECT_NE(system->find("#include \"" + logging_name + "\""), std::string::npos) << "the header beside it, by its path:\n" << *system;
  const std::string* logging = header(logging_name);
  ASSERT_NE(logging, nullptr);
  EXPECT_EQ(logging->find("inline void check_nvrtc"), std::string::npos) << *logging;
  for (const char* gone : {"Kernel(std::string name);", "operator=", "friend void swap", "int getenv_int("})
    EXPECT_EQ(system->find(gone), std::string::npos) << gone << " stayed:\n" << *system;
  const std::string* nvtx = header("nvtx3/nvToolsExt.h");
  ASSERT_NE(nvtx, nullptr);
  EXPECT_EQ(nvtx->find("nvtxImpl.h"), std::string::npos) << "NVTX's implementation is not included";
  EXPECT_NE(nvtx->find("typedef uint64_t nvtxRangeId_t;"), std::string::npos);
  EXPECT_EQ(nvtx->find("nvtxRangePushA("), std::string::npos) << "its host API's declarations go";
  const std::string* nvrtc = header("nvrtc.h");
  ASSERT_NE(nvrtc, nullptr);
  EXPECT_LT(nvrtc->find("#include <stdlib.h>"), nvrtc->find("extern \"C\"")) << "<stdlib.h> out of the extern \"C\" block:\n" << *nvrtc;
  EXPECT_NE(std::find(s.options.begin(), s.options.end(), "--device-int128"), s.options.end());
  const std::string types_name = fs::absolute(fs::path(d.dir()) / "common" / "util" / "types.h").lexically_normal().string().substr(1);
  ASSERT_NE(header(types_name), nullptr) << "a header named by its path is a view whatever it holds";
  ASSERT_NE(header("../util/types.h"), nullptr);
  EXPECT_EQ(*header("../util/types.h"), "#pragma once\n#include \"" + types_name + "\"\n");
  const std::string* cublas_api = header("cublas_api.h");
  ASSERT_NE(cublas_api, nullptr);
  EXPECT_NE(cublas_api->find("#include \"" + cuda_include_dir() + "/library_types.h\""), std::string::npos)
      << "the toolkit's library_types.h, by its path";
  Compiler compiler;
  for (int b : {64, 128})
    EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"B", b}}, Problem::parse(op, "1000"), "sm_90"))) << b;
  EXPECT_NO_THROW(compiler.compile(*spec_side_request(op, "reference", Problem::parse(op, "1000"), "sm_90")));
  // The spec's folder named relative to the working one (`ktune compile --kernel spec.json` run
  // beside it): the header beside its includer is one file by either spelling, and has its view.
  ojson rel = spec;
  rel["name"] = "te_shaped_relative";
  const std::string op_rel = load_kernel_spec_text(rel.dump(), "te_rel.json", fs::relative(d.dir(), fs::current_path()).string());
  bool logging_view = false;
  for (const auto& h : spec_of(op_rel).std_headers) logging_view = logging_view || h.first == logging_name;
  EXPECT_TRUE(logging_view);
  EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op_rel), Config{{"B", 64}}, Problem::parse(op_rel, "1000"), "sm_90")));
}

// A project header named as one of ktune's own (kernel_templates' layernorm.h, which every compile
// hands NVRTC in memory; AWQ's csrc/layernorm/layernorm.h): the project's is the one compiled,
// with host code compiled or skipped, where NVRTC met two headers of one name (and refused the
// program) or took ktune's in place of the user's.
TEST(KernelSpec, AProjectHeaderNamedAsKtunesOwnIsTheProjects) {
  SpecDir d;
  d.write("layernorm.h", "#pragma once\n#define USER_SCALE 3.0f\n#ifndef __CUDACC_RTC__\nvoid layernorm_forward(float* x, int n);\n#endif\n");
  d.write("ln.cu", "#include \"layernorm.h\"\n__global__ void scale3(const float* x, float* y, int n) {\n"
                   "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = USER_SCALE * x[i];\n}\n");
  ojson spec = ojson::parse(R"JSON({
    "name": "user_layernorm_h", "sources": ["ln.cu"], "kernel": "scale3", "dims": ["n"], "params": {"B": [128]},
    "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"none": "a compile test"}})JSON");
  Compiler compiler;
  for (const char* host_code : {"compile", "skip"}) {
    spec["host_code"] = host_code;
    spec["name"] = std::string("user_layernorm_h_") + host_code;
    const std::string op = load_kernel_spec_text(spec.dump(), "ln.json", d.dir());
    const auto& headers = spec_of(op).std_headers;
    const auto own = std::find_if(headers.begin(), headers.end(), [](const auto& h) { return h.first == "layernorm.h"; });
    ASSERT_NE(own, headers.end()) << host_code;
    EXPECT_NE(own->second.find("USER_SCALE"), std::string::npos) << host_code;
    EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"B", 128}}, Problem::parse(op, "1000"), "sm_90"))) << host_code;
  }
}

// A PyTorch extension's kernel file as it is (flash-attention-minimal's, vLLM's shape): PyTorch's
// and pybind11's headers, a host function on torch::Tensor that dispatches, the module's
// definition. NVRTC cannot open them, and the error says what to do; with "host_code": "skip" they
// stand in with the standard headers they bring, and the file compiles; device code that names
// PyTorch's host API (at::Tensor) fails on it.
TEST(KernelSpec, APyTorchExtensionsFileCompilesWhereHostCodeIsSkipped) {
  SpecDir d;
  d.write("ext.cu", R"CUDA(#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
template <typename scalar_t, int B>
__global__ void scale_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, float a, int n) {
  const int64_t i = int64_t(blockIdx.x) * B + threadIdx.x; // int64_t from <cstdint>, through PyTorch's headers
  if (i < n) y[i] = scalar_t(a * float(x[i]));
}
__global__ void scale_ref(const float* x, float* y, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
torch::Tensor scale(torch::Tensor x, double a) {
  const at::cuda::OptionalCUDAGuard guard(device_of(x));
  auto y = torch::empty_like(x);
  const int n = x.numel();
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "scale", [&] {
    scale_kernel<scalar_t, 256><<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), a, n);
  });
  return y;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("scale", &scale, "scale (CUDA)"); }
)CUDA");
  ojson spec = ojson::parse(R"JSON({
    "name": "torch_ext", "sources": ["ext.cu"], "kernel": "scale_kernel<float, {B}>", "params_as": "template", "dims": ["n"],
    "params": {"B": [128, 256]}, "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "a", "kind": "scalar", "dtype": "f32", "value": 0.5}, {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"reference": {"kernel": "scale_ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
  Compiler compiler;
  const std::string as_is = load_kernel_spec_text(spec.dump(), "as_is.json", d.dir());
  if (const auto e = compile_failure(compiler, as_is, Config{{"B", 128}}, Problem::parse(as_is, "1000"),
                                     "torch/extension.h compiled under NVRTC")) {
    EXPECT_NE(std::string(e->what()).find("PyTorch's headers are host C++"), std::string::npos) << e->what();
  }
  spec["name"] = "torch_ext_skip";
  spec["host_code"] = "skip";
  const std::string op = load_kernel_spec_text(spec.dump(), "skip.json", d.dir());
  std::set<std::string> stood_in;
  for (const auto& h : spec_of(op).std_headers) stood_in.insert(h.first);
  for (const char* h : {"torch/extension.h", "ATen/cuda/CUDAContext.h", "c10/cuda/CUDAGuard.h"}) EXPECT_TRUE(stood_in.count(h)) << h;
  for (int b : {128, 256})
    EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"B", b}}, Problem::parse(op, "1000"), "sm_90"))) << b;
  EXPECT_NO_THROW(compiler.compile(*spec_side_request(op, "reference", Problem::parse(op, "1000"), "sm_90")));
  // Device code on PyTorch's host API fails, naming it (its device types compile: the test below).
  d.write("half.cu", "#include <c10/util/Half.h>\ntemplate <int B> __global__ void k(const float* x, float* y, int n) { c10::Half h(x[0]); y[0] = at::Tensor(h).item(); }\n"
                     "__global__ void ref(const float* x, float* y, int n) {}\n");
  ojson half = spec;
  half["name"] = "torch_half";
  half["sources"] = {"half.cu"};
  half["kernel"] = "k<{B}>";
  half["args"] = ojson::parse(R"JSON([{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
                                     {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}])JSON");
  half["check"]["reference"]["kernel"] = "ref";
  const std::string op_half = load_kernel_spec_text(half.dump(), "half.json", d.dir());
  if (const auto e = compile_failure(compiler, op_half, Config{{"B", 128}}, Problem::parse(op_half, "1000"),
                                     "at::Tensor compiled without PyTorch's headers")) {
    EXPECT_NE(e->log().find("Tensor"), std::string::npos) << e->log();
  }
}

// Host classes on the standard library as projects write them (FasterTransformer's logger's
// `const std::string PREFIX = "[FT]";` and a map built from a nested list, TensorRT-LLM's
// exception on std::runtime_error, a vector of tuples from <vector> alone, tinylogger's progress
// bar's steady_clock start under `using namespace std;`, instant-ngp's thread pool's mutex and
// condition variables from <future> and <thread>, tinyfs's directory stream), GNU's `__asm__
// __volatile__` and <math.h>'s M_LOG2E with no include (mamba's selective scan): with
// "host_code": "skip" the file compiles as nvcc compiles it. Device code that reads the host's
// clock fails, naming it.
TEST(KernelSpec, HostClassesOnTheStandardLibraryAndGnuSpellingsCompileWhereHostCodeIsSkipped) {
  SpecDir d;
  d.write("proj.cu", R"CUDA(#include <chrono>
#include <dirent.h>
#include <future>
#include <linux/limits.h>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
class Logger {
  const std::string PREFIX = "[FT]";
  const std::map<int, const std::string> names_ = {{0, "TRACE"}, {10, "DEBUG"}};
  std::vector<std::tuple<int, int>> pairs_;
 public:
  void log(int level, char const* format, ...) __attribute__((format(printf, 3, 4)));
};
using namespace std;
class Progress {
  chrono::steady_clock::time_point start_ = chrono::steady_clock::now();
  std::chrono::high_resolution_clock::time_point last_;
 public:
  chrono::milliseconds elapsed() const { return chrono::duration_cast<chrono::milliseconds>(chrono::steady_clock::now() - start_); }
};
class Pool {
  std::vector<std::thread> threads_;
  std::vector<std::future<void>> pending_;
  std::mutex queue_mutex_;
  std::condition_variable worker_;
 public:
  void wait() { std::unique_lock<std::mutex> lock{queue_mutex_}; worker_.wait(lock); }
};
class Directory {
  DIR* handle_;
  struct dirent* entry_;
  char name_[NAME_MAX + 1];
};
class Error : public std::runtime_error {
 public:
  explicit Error(const char* m) : std::runtime_error(m) {}
  [[nodiscard]] const char* where() const;
};
template <int B> __global__ void k(const float* x, float* y, int n) {
  const int i = blockIdx.x * B + threadIdx.x;
  unsigned r;
  __asm__ __volatile__("mov.u32 %0, %1;" : "=r"(r) : "r"(i));
  if (i < n) y[i] = x[i] * float(M_LOG2E) + float(int(r) - i);
}
__global__ void ref(const float* x, float* y, int n) { const int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] * 1.4426950408889634f; }
)CUDA");
  const ojson spec = ojson::parse(R"JSON({
    "name": "std_host_classes", "sources": ["proj.cu"], "host_code": "skip", "kernel": "k<{B}>", "params_as": "template", "dims": ["n"],
    "params": {"B": [64, 128]}, "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"reference": {"kernel": "ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
  const std::string op = load_kernel_spec_text(spec.dump(), "std_host_classes.json", d.dir());
  EXPECT_NE(spec_of(op).source.find("#define M_LOG2E"), std::string::npos);
  EXPECT_EQ(spec_of(op).source.find("#define M_PI "), std::string::npos) << "only the constants the text uses";
  Compiler compiler;
  for (int b : {64, 128})
    EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"B", b}}, Problem::parse(op, "1000"), "sm_90"))) << b;
  d.write("clock.cu", "#include <chrono>\ntemplate <int B> __global__ void k(const float* x, float* y, int n) {\n"
                      "  y[0] = float(std::chrono::steady_clock::now().time_since_epoch().count());\n}\n"
                      "__global__ void ref(const float* x, float* y, int n) {}\n");
  ojson clock = spec;
  clock["name"] = "std_host_clock_in_device";
  clock["sources"] = {"clock.cu"};
  const std::string in_device = load_kernel_spec_text(clock.dump(), "std_host_clock_in_device.json", d.dir());
  if (const auto e = compile_failure(compiler, in_device, Config{{"B", 64}}, Problem::parse(in_device, "1000"),
                                     "the host's steady_clock::now() compiled in device code")) {
    EXPECT_NE(e->log().find("Unresolved extern function"), std::string::npos) << e->log();
    EXPECT_NE(e->log().find("steady_clock3now"), std::string::npos) << e->log();
  }
}

// What nvcc takes in C++17 and NVRTC's C++17 does not: a host template's explicit instantiations
// through a function-like macro (DeepSpeed's INSTANTIATE_LAUNCH_RMS_NORM(T)), and designated
// initializers (TensorRT-LLM's `return {.phase = _phase};`, a GNU extension to nvcc) in a
// header: the calls go with the template, and the program compiles again as C++20, saying so.
TEST(KernelSpec, InstantiationMacrosAndDesignatedInitializersCompileAsNvccTakesThem) {
  SpecDir d;
  d.write("state.h", R"CUDA(#pragma once
struct State { unsigned phase; };
struct Bar { unsigned _phase; __device__ State exportState() { return {.phase = _phase}; } };
)CUDA");
  d.write("proj.cu", R"CUDA(#include "state.h"
template <typename T> __global__ void k(const T* x, T* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  Bar b{2u};
  if (i < n) y[i] = x[i] * T(b.exportState().phase);
}
template <typename T> void launch_k(const T* x, T* y, int n, cudaStream_t s) { k<T><<<(n + 127) / 128, 128, 0, s>>>(x, y, n); }
#define INSTANTIATE_LAUNCH(T)                   \
    template void launch_k<T>(const T* x,       \
                              T* y,             \
                              int n,            \
                              cudaStream_t s);
INSTANTIATE_LAUNCH(float)
INSTANTIATE_LAUNCH(double)
__global__ void ref(const float* x, float* y, int n) { const int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.f * x[i]; }
)CUDA");
  const ojson spec = ojson::parse(R"JSON({
    "name": "nvcc_dialect", "sources": ["proj.cu"], "host_code": "skip", "kernel": "k<float>", "dims": ["n"],
    "params": {"UNTUNED": [0]}, "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"reference": {"kernel": "ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
  const std::string op = load_kernel_spec_text(spec.dump(), "nvcc_dialect.json", d.dir());
  Compiler compiler;
  std::shared_ptr<const CompiledKernel> k;
  ASSERT_NO_THROW(k = compiler.compile(compile_request(find_family(op), Config{{"UNTUNED", 0}}, Problem::parse(op, "1000"), "sm_90")));
  EXPECT_NE(k->log.find("compiled as C++20"), std::string::npos) << k->log;
  // A dialect the spec names is the one compiled: no second compile in another.
  ojson pinned = spec;
  pinned["name"] = "nvcc_dialect_17";
  pinned["options"] = {"-std=c++17"};
  const std::string op17 = load_kernel_spec_text(pinned.dump(), "nvcc_dialect_17.json", d.dir());
  if (const auto e = compile_failure(compiler, op17, Config{{"UNTUNED", 0}}, Problem::parse(op17, "1000"),
                                     "C++17, as the spec asks, has no designated initializers")) {
    EXPECT_NE(std::string(e->what()).find("nvrtcCompileProgram failed"), std::string::npos) << e->what();
    EXPECT_EQ(e->log().find("compiled as C++20"), std::string::npos) << e->log();
  }
}

// A PyTorch extension as it is (tests/ops/torch_extension_spec.h): its kernel on at::Half,
// at::acc_type and WARP_SHFL_XOR compiles with PyTorch's device types standing in (the
// header's static_asserts hold PyTorch's layout and arithmetic), its launcher's explicit
// instantiations in the .cu go with the template the header's reading blanked, and a PyTorch
// header the project holds itself is the project's.
TEST(KernelSpec, APyTorchExtensionCompilesWithPyTorchsDeviceTypes) {
  SpecDir d;
  fs::create_directories(fs::path(d.dir()) / "csrc");
  d.write("csrc/rms_norm_kernel.cuh", ktune::testing::kTorchExtKernel);
  d.write("csrc/rms_norm.cu", ktune::testing::kTorchExtSource);
  const std::string op = load_kernel_spec_text(ktune::testing::kTorchExtSpec, "torch_ext.json", d.dir());
  const auto& headers = spec_of(op).std_headers;
  auto header = [&](const std::string& name) {
    return std::any_of(headers.begin(), headers.end(), [&](const auto& h) { return h.first == name; });
  };
  EXPECT_TRUE(header("ktune_torch_device_types.h"));
  EXPECT_TRUE(header("torch/extension.h"));
  EXPECT_TRUE(header("ATen/cuda/DeviceUtils.cuh"));
  EXPECT_EQ(spec_of(op).source.find("template void launch_rms_norm"), std::string::npos) << "the instantiations went with their template";
  Compiler compiler;
  for (int w : {1, 8})
    EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"WARPS", w}}, Problem::parse(op, "1000x4096", "", DType::f16), "sm_90"))) << w;
  // The project's own c10/util/complex.h is the one compiled: no stand-in for it.
  fs::create_directories(fs::path(d.dir()) / "csrc/c10/util");
  d.write("csrc/c10/util/complex.h", "#pragma once\n#error the project's own\n");
  ojson own_spec = ojson::parse(ktune::testing::kTorchExtSpec);
  own_spec["name"] = "torch_ext_own_complex";
  const std::string own = load_kernel_spec_text(own_spec.dump(), "torch_ext_own.json", d.dir());
  EXPECT_FALSE(std::any_of(spec_of(own).std_headers.begin(), spec_of(own).std_headers.end(), [](const auto& h) { return h.first == "c10/util/complex.h"; }));
  if (const auto e =
          compile_failure(compiler, own, Config{{"WARPS", 1}}, Problem::parse(own, "1000x4096", "", DType::f16),
                          "the project's header was not the one compiled")) {
    EXPECT_NE(e->log().find("the project's own"), std::string::npos) << e->log();
  }
}

// A kernel on PyTorch's tensor accessors as pytorch3d's and mmcv's are (tests/ops/
// torch_extension_spec.h): PackedTensorAccessor64, TensorInfo with IndexToOffset, THC's atomics on
// at::Half, each laid out as PyTorch lays them out (the source's static_asserts), compiles as it is;
// the spec's structs are the kernel's parameters' sizes (ktune compile reads them from the cubin).
TEST(KernelSpec, APyTorchExtensionOnTensorAccessorsCompiles) {
  SpecDir d;
  d.write("scale.cu", ktune::testing::kTorchAccessorSource);
  const std::string op = load_kernel_spec_text(ktune::testing::kTorchAccessorSpec, "torch_accessor.json", d.dir());
  const auto& headers = spec_of(op).std_headers;
  EXPECT_TRUE(std::any_of(headers.begin(), headers.end(), [](const auto& h) { return h.first == "THC/THCAtomics.cuh"; }));
  Compiler compiler;
  for (int fault : {0, 1})
    EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"BLOCK", 64}, {"FAULT", fault}}, Problem::parse(op, "300x77"), "sm_90")))
        << fault;
  d.write("scale.json", ktune::testing::kTorchAccessorSpec);
  const auto r = testing::run_ktune("compile --kernel " + d.path("scale.json") + " --problem 300x77");
  EXPECT_EQ(r.status, 0) << r.out;
}

// vLLM's fp8 quantization and layernorm kernels as they are: c10::Float8_e4m3fn and Float8_e5m2
// (one byte each, c10's limits as bits, converted by CUDA as PyTorch converts), AMD's fnuz formats
// named in a trait, c10's trait from torch::kInt8 to its C++ type, torch::headeronly's Half (2.9's
// home of c10::Half) in a specialization, and an error class on std::exception from a header that
// includes only <iostream> and <string>, as libstdc++'s bring it. The static_asserts are the
// stand-in's layout, limits and trait.
TEST(KernelSpec, PyTorchsFloat8TypesHeaderOnlyHalfAndStreamsExceptionsCompile) {
  SpecDir d;
  d.write("utils.cuh", "#pragma once\n#include <iostream>\n#include <string>\n"
                       "class Error : public std::exception {\n  std::string msg_;\n public:\n"
                       "  explicit Error(const std::string& m) : msg_(m) {}\n  const char* what() const noexcept override { return msg_.c_str(); }\n};\n");
  d.write("quant.cu", R"CUDA(#include <torch/all.h>
#include <c10/util/Float8_e4m3fn.h>
#include <c10/util/Float8_e4m3fnuz.h>
#include <limits>
#include <type_traits>
#include "utils.cuh"
template <typename T> struct _typeConvert { static constexpr bool exists = false; };
template <> struct _typeConvert<torch::headeronly::Half> { static constexpr bool exists = true; using hip_type = __half; };
static_assert(_typeConvert<c10::Half>::exists, "torch::headeronly::Half is c10::Half");
static_assert(sizeof(c10::Float8_e4m3fn) == 1 && alignof(c10::Float8_e5m2) == 1, "one byte");
static_assert(std::numeric_limits<c10::Float8_e4m3fn>::max().x == 0x7E, "448");
static_assert(std::numeric_limits<c10::Float8_e5m2>::max().x == 0x7B, "57344");
static_assert(!std::numeric_limits<c10::Float8_e4m3fn>::has_infinity && std::numeric_limits<c10::Float8_e5m2>::has_infinity, "");
template <typename T> struct is_quant_type { static constexpr bool value = false; };
template <> struct is_quant_type<c10::impl::ScalarTypeToCPPTypeT<torch::kInt8>> { static constexpr bool value = true; };
static_assert(is_quant_type<int8_t>::value && std::is_same_v<c10::impl::ScalarTypeToCPPTypeT<at::kFloat8_e4m3fn>, c10::Float8_e4m3fn>, "");
template <typename T>
constexpr bool is_fp8 = std::is_same_v<T, c10::Float8_e4m3fn> || std::is_same_v<T, c10::Float8_e4m3fnuz>;
template <typename fp8_type>
__global__ void scaled_quant(fp8_type* out, const float* in, const float* scale, int n) {
  static_assert(is_fp8<fp8_type>, "");
  const float max = static_cast<float>(std::numeric_limits<fp8_type>::max());
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    const float x = in[i] / scale[0];
    out[i] = static_cast<fp8_type>(fmaxf(-max, fminf(x, max)));
  }
}
template __global__ void scaled_quant<c10::Float8_e4m3fn>(c10::Float8_e4m3fn*, const float*, const float*, int);
)CUDA");
  const ojson spec = ojson::parse(R"JSON({
    "name": "vllm_fp8_quant", "sources": ["quant.cu"], "host_code": "skip", "kernel": "scaled_quant<c10::Float8_e4m3fn>", "dims": ["n"], "params": {"UNTUNED": [0]},
    "launch": {"grid": [1], "block": [128]},
    "args": [{"name": "out", "kind": "buffer", "dtype": "u8", "count": "n", "intent": "out"}, {"name": "in", "kind": "buffer", "dtype": "f32", "count": "n"},
             {"name": "scale", "kind": "buffer", "dtype": "f32", "count": 1}, {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"none": "compile only"}})JSON");
  expect_compiles(spec, d);
}

// What glibc's time headers give a project: a stopwatch class's struct timespec member
// (DeepSpeed's StopWatch.h, from <time.h>), and CLOCKS_PER_SEC for device code that spins on
// clock() (Apex's peer memory kernels), through <ctime> or with no include as nvcc's implicit
// headers give it.
TEST(KernelSpec, GlibcsTimeTypesAndClocksPerSecCompile) {
  SpecDir d;
  d.write("StopWatch.h", "#pragma once\n#include <time.h>\nclass Stopwatch {\n  double m_total_time;\n  struct timespec m_start_time;\n"
                         "  struct tm m_when;\n public:\n  void Start() { clock_gettime(CLOCK_MONOTONIC, &m_start_time); }\n};\n");
  d.write("proj.cu", "#include \"StopWatch.h\"\n#include <sys/time.h>\n"
                     "__global__ void k(float* y, int n) {\n  const clock_t start = clock();\n"
                     "  while ((double)(clock() - start) * 1e9 / CLOCKS_PER_SEC < n) {}\n  y[0] = 1.f;\n}\n");
  const ojson spec = ojson::parse(R"JSON({
    "name": "glibc_time", "sources": ["proj.cu"], "host_code": "skip", "kernel": "k", "dims": ["n"], "params": {"UNTUNED": [0]},
    "launch": {"grid": [1], "block": [32]},
    "args": [{"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"}, {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"none": "compile only"}})JSON");
  expect_compiles(spec, d);
}

// What else glibc's headers give a project that nvcc compiles: a data loader's struct with a
// glob_t member and network headers (llm.c's train_gpt2.cu); POSIX threads' and processes' types,
// <memory.h>, the standard streams a using-declaration names, __linux__ (NVRTC has none) with
// Windows' branch not read, a host callback's CUDART_CB and a host array sized by a macro
// (cuda-samples' helpers), all with host code skipped; and the signed exact-width types
// with no include, which nvcc's implicit <stdlib.h> brings through <sys/types.h>
// (FasterTransformer's DenseWeight.h names int8_t so); a <cstdint> after them declares the same
// types, and a text's own typedef is left alone.
TEST(KernelSpec, GlibcsHostHeadersAndImplicitSignedTypesCompile) {
  SpecDir d;
  d.write("weight.h", "#pragma once\ntemplate <typename T> struct DenseWeight { const T* kernel; const int8_t* int8_kernel; int64_t n; };\n");
  d.write("loader.h", "#pragma once\n#include <stdio.h>\n#include <glob.h>\n#include <arpa/inet.h>\n#include <sys/socket.h>\n#include <unistd.h>\n"
                      "#include <memory.h>\n#include <iostream>\n#define TYPE_COUNT 2\n"
                      "#if defined(WIN32) || defined(_WIN64)\n#include <windows.h>\n#define THREADPROC unsigned WINAPI\n"
                      "#elif defined(__linux__)\n#include <pthread.h>\n#define THREADPROC void *\n#else\n#error Unsupported system\n#endif\n"
                      "typedef struct { size_t B; glob_t glob_result; FILE* tokens_file; pthread_t worker; pid_t pid; } DataLoader;\n");
  d.write("host.cu", "#include \"loader.h\"\nusing std::cerr;\nusing std::endl;\nconst char* names[TYPE_COUNT] = {\"a\", \"b\"};\n"
                     "void CUDART_CB done(void* data) { cerr << names[0] << endl; }\nTHREADPROC run(void* arg) { return arg; }\n");
  d.write("proj.cu", "#include \"weight.h\"\n#include \"loader.h\"\n#include <cstdint>\ntypedef signed short int16_t;\n"
                     "__global__ void k(DenseWeight<float> w, float* y, int n) {\n  const int16_t one = 1;\n"
                     "  const int32_t i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = w.kernel[i] + float(w.int8_kernel[i]) + float(w.n + one);\n}\n");
  const ojson spec = ojson::parse(R"JSON({
    "name": "glibc_more", "sources": ["proj.cu", "host.cu"], "host_code": "skip", "kernel": "k", "dims": ["n"], "params": {"UNTUNED": [0]},
    "launch": {"grid": [1], "block": [32], "args": ["w", "y", "n_"]},
    "args": [{"name": "kern", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "q", "kind": "buffer", "dtype": "i8", "count": "n"},
             {"name": "w", "kind": "struct", "fields": [{"name": "kernel", "buffer": "kern"}, {"name": "int8_kernel", "buffer": "q"},
                                                        {"name": "n", "dtype": "i64", "value": "n"}]},
             {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"}, {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"none": "compile only"}})JSON");
  const std::string op = load_kernel_spec_text(spec.dump(), "glibc_more.json", d.dir());
  const std::string& source = spec_of(op).source;
  EXPECT_NE(source.find("using int64_t = signed long long;"), std::string::npos);
  EXPECT_NE(source.find("using int8_t = signed char;"), std::string::npos);
  EXPECT_EQ(source.find("using int16_t ="), std::string::npos) << "the text declares int16_t itself";
  Compiler compiler;
  EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"UNTUNED", 0}}, Problem::parse(op, "1000"), "sm_90")));
}

// A header-only host library in a project's headers (nlohmann/json, which tiny-cuda-nn's kernels
// reach): its host classes' members name std::FILE, std::lconv and std::char_traits' types, its
// functions read in decltype take std::forward_list, std::valarray and std::filesystem::path
// (their declarations stay), it specializes std::hash and std::less in namespace std, and (3.11)
// its constexpr char traits read <string>'s EOF (before any <cstdio>), its traits name
// std::vector<bool>::reference and a map's key_compare, and its class std::allocator_traits of
// std::allocator; device code still calls std::less.
TEST(KernelSpec, AHeaderOnlyHostLibrarysStdUsesCompile) {
  SpecDir d;
  d.write("hostlib.hpp", "#pragma once\n#include <clocale>\n#include <string>\n#include <functional>\n#include <vector>\n#include <map>\n#include <memory>\n"
                         "#include <forward_list>\n#include <valarray>\n#include <filesystem>\n#include <array>\n#include <utility>\n"
                         "namespace lib {\nenum class value_t : unsigned char { null, number };\nstruct json { int v; };\n"
                         "}\n#include <cstdio>\nnamespace lib {\nstruct file_adapter { std::FILE* m_file; };\n"
                         "struct serializer { const std::lconv* loc = nullptr; std::array<std::char_traits<char>::int_type, 4> bytes = {{0, 0, 0, 0}}; };\n"
                         "inline void from_json(const json& j, std::forward_list<int>& l) { l.push_front(j.v); }\n"
                         "inline void from_json(const json& j, std::valarray<float>& l) { l.resize(j.v); }\n"
                         "inline void from_json(const json& j, std::filesystem::path& p) { p = std::to_string(j.v); }\n"
                         "using from_valarray = decltype(from_json(std::declval<const json&>(), std::declval<std::valarray<float>&>()));\n"
                         "using from_list = decltype(from_json(std::declval<const json&>(), std::declval<std::forward_list<int>&>()));\n"
                         "using from_path = decltype(from_json(std::declval<const json&>(), std::declval<std::filesystem::path&>()));\n"
                         "template <class T> struct char_traits_of { static constexpr int eof() noexcept { return static_cast<int>(EOF); } };\n"
                         "using bool_ref = std::vector<bool>::reference;\nusing compare_t = std::map<int, json>::key_compare;\n"
                         "using json_pointer_t = std::allocator_traits<std::allocator<json>>::pointer;\n}\n"
                         "namespace std {\ntemplate <> struct hash<lib::json> { std::size_t operator()(const lib::json& j) const { return j.v; } };\n"
                         "template <> struct less<::lib::value_t> { bool operator()(lib::value_t a, lib::value_t b) const noexcept { return a < b; } };\n}\n");
  d.write("proj.cu", "#include \"hostlib.hpp\"\n"
                     "__global__ void k(const float* x, float* y, int n) {\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "  if (i < n) y[i] = std::less<float>()(x[i], 0.f) ? -x[i] : x[i];\n}\n");
  const ojson spec = ojson::parse(R"JSON({
    "name": "hostlib", "sources": ["proj.cu"], "host_code": "skip", "kernel": "k", "dims": ["n"], "params": {"UNTUNED": [0]},
    "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"none": "compile only"}})JSON");
  expect_compiles(spec, d);
}

// A PyTorch extension's kernel built by a plain CUDAExtension, whose COMMON_NVCC_FLAGS define
// __CUDA_NO_HALF_CONVERSIONS__ and its kin: `half_ptr[i] = c10_half;` (flash-fft-conv's butterfly
// kernels) is ambiguous without them, between __half's assignments from float and from __half.
// It compiles again with them, its log saying so; a kernel that uses __half's operators (vLLM's,
// built without those flags) compiles at the first try, as it is; with the macros named in the
// spec's options, nothing is tried again.
TEST(KernelSpec, ATorchExtensionCompilesAsCppExtensionBuildsIt) {
  SpecDir d;
  d.write("conv.cu", "#include <torch/extension.h>\n#include <cuda_fp16.h>\n"
                     "__global__ void k(const c10::complex<at::Half>* f, half* re, int n) {\n"
                     "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) re[i] = f[i].real();\n}\n");
  d.write("ops.cu", "#include <torch/extension.h>\n#include <cuda_fp16.h>\n"
                    "__global__ void k(const __half* x, __half* y, int n) {\n"
                    "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = x[i] * x[i] + __float2half(1.f);\n}\n");
  auto spec = [](const char* name, const char* source) {
    ojson j = ojson::parse(R"JSON({
      "sources": [], "host_code": "skip", "kernel": "k", "dims": ["n"], "params": {"UNTUNED": [0]},
      "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]},
      "args": [{"name": "x", "kind": "buffer", "dtype": "f16", "count": "2 * n"}, {"name": "y", "kind": "buffer", "dtype": "f16", "count": "n", "intent": "out"},
               {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
      "check": {"none": "compile only"}})JSON");
    j["name"] = name;
    j["sources"] = {source};
    return j;
  };
  Compiler compiler;
  auto compile = [&](const ojson& j) {
    const std::string op = load_kernel_spec_text(j.dump(), j["name"].get<std::string>() + ".json", d.dir());
    return compiler.compile(compile_request(find_family(op), Config{{"UNTUNED", 0}}, Problem::parse(op, "1000"), "sm_90"));
  };
  const auto conv = compile(spec("butterfly", "conv.cu"));
  EXPECT_NE(conv->log.find("compiled as torch.utils.cpp_extension builds an extension"), std::string::npos) << conv->log;
  EXPECT_NE(conv->log.find("more than one operator \"=\""), std::string::npos) << "names the first try's error: " << conv->log;
  const auto ops = compile(spec("half_ops", "ops.cu"));
  EXPECT_EQ(ops->log.find("cpp_extension"), std::string::npos) << ops->log;
  ojson named = spec("butterfly_named", "conv.cu");
  named["options"] = {"-U__CUDA_NO_HALF_CONVERSIONS__"};
  const std::string named_op = load_kernel_spec_text(named.dump(), "butterfly_named.json", d.dir());
  if (const auto e = compile_failure(compiler, named_op, Config{{"UNTUNED", 0}}, Problem::parse(named_op, "1000"),
                                     "compiled with the macro named and no retry")) {
    EXPECT_EQ(e->log().find("cpp_extension"), std::string::npos) << e->log();
  }
}

// PyTorch's atomics (ATen/cuda/Atomic.cuh: atomicAdd and gpuAtomicAdd on at::Half) come with the
// headers that bring them there, THCAtomics.cuh among them (mmcv's), and not with ATen/ATen.h,
// beside which pyg-lib's atomics.cuh defines its own atomicAdd(at::Half*, at::Half).
TEST(KernelSpec, PyTorchsAtomicsComeWithTheirOwnHeaders) {
  SpecDir d;
  d.write("own.cu", "#include <ATen/ATen.h>\n#include <cuda_runtime.h>\n"
                    "static inline __device__ at::Half atomicAdd(at::Half* address, at::Half val) {\n"
                    "  return at::Half(atomicAdd(reinterpret_cast<__half*>(address), static_cast<__half>(val)));\n}\n"
                    "__global__ void k(at::Half* y, int n) {\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  if (i < n) atomicAdd(y + i % 7, at::Half(1.f));\n}\n");
  d.write("thc.cu", "#include <ATen/ATen.h>\n#include <THC/THCAtomics.cuh>\n"
                    "__global__ void k(at::Half* y, int n) {\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  if (i < n) { atomicAdd(y + i % 7, at::Half(1.f)); gpuAtomicAdd(y + i % 5, at::Half(2.f)); }\n}\n");
  for (const char* source : {"own.cu", "thc.cu"}) {
    ojson spec = ojson::parse(R"JSON({
      "host_code": "skip", "kernel": "k", "dims": ["n"], "params": {"UNTUNED": [0]},
      "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]},
      "args": [{"name": "y", "kind": "buffer", "dtype": "f16", "count": "n", "intent": "out"}, {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
      "check": {"none": "compile only"}})JSON");
    spec["name"] = std::string("atomics_") + (source[0] == 'o' ? "own" : "thc");
    spec["sources"] = {source};
    SCOPED_TRACE(source);
    expect_compiles(spec, d);
  }
}

// A using-declaration of a project header's host function (ColossalAI's `using
// colossalAI::cuda::utils::get_vec_size;`, a template on a torch::Tensor, in the .cu) goes with
// the function; one of a name that is a device function too (`copy`, with a host overload) stays,
// and the kernel's call finds the device one. std::unary_function, which libstdc++ keeps, is a
// functor's base (ColossalAI's CastFunctor).
TEST(KernelSpec, AUsingDeclarationOfAHeadersHostFunctionGoesWithIt) {
  SpecDir d;
  d.write("utils/vec_copy.h", "#pragma once\n#include <torch/extension.h>\n#include <functional>\nnamespace proj { namespace utils {\n"
                              "template <typename T> int get_vec_size(const torch::Tensor& t) { return 16 / sizeof(T); }\n"
                              "template <typename T> __device__ void copy(const T* src, T* dst) { *dst = *src; }\n"
                              "inline void copy(const torch::Tensor& a, torch::Tensor& b) { b = a; }\n"
                              "template <typename From, typename To> struct Cast : public std::unary_function<From, To> {\n"
                              "  __host__ __device__ To operator()(From v) { return static_cast<To>(v); }\n};\n} }\n");
  d.write("kv.cu", "#include \"utils/vec_copy.h\"\nusing proj::utils::get_vec_size;\nusing proj::utils::copy;\nusing proj::utils::Cast;\n"
                   "__global__ void k(const float* x, float* y, int n) {\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                   "  if (i < n) { copy(x + i, y + i); y[i] = Cast<float, float>()(y[i]); }\n}\n"
                   "void launch(torch::Tensor x) { const int v = get_vec_size<float>(x); (void)v; }\n");
  const ojson spec = ojson::parse(R"JSON({
    "name": "using_host", "sources": ["kv.cu"], "host_code": "skip", "kernel": "k", "dims": ["n"], "params": {"UNTUNED": [0]},
    "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"none": "compile only"}})JSON");
  expect_compiles(spec, d);
}

// A project's own type with std::numeric_limits specialized in namespace std (the half library's
// `template <> class numeric_limits<half_float::half>`, which CTranslate2's types.h includes): ktune's
// std::numeric_limits is a class of std itself on libcu++'s, so that it may be specialized; the
// standard types' limits are libcu++'s.
TEST(KernelSpec, AProjectSpecializesStdNumericLimits) {
  SpecDir d;
  d.write("myhalf.hpp", "#pragma once\n#include <limits>\nnamespace hf { struct half { unsigned short bits; }; }\n"
                        "namespace std {\ntemplate <> class numeric_limits<hf::half> {\n public:\n"
                        "  static constexpr bool is_specialized = true;\n  static constexpr int digits = 11;\n};\n}\n");
  d.write("proj.cu", "#include \"myhalf.hpp\"\n__global__ void k(float* y, int n) {\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "  static_assert(std::numeric_limits<hf::half>::digits == 11, \"the project's\");\n"
                     "  static_assert(std::numeric_limits<float>::digits == 24 && std::numeric_limits<int>::is_integer, \"libcu++'s\");\n"
                     "  if (i < n) y[i] = std::numeric_limits<float>::max();\n}\n");
  expect_compiles(proj_k_spec("limits_user", true), d);
}

// k2's shapes (its ragged/array ops headers, dtype.cu, rand.cu): std::iterator_traits
// specialized in namespace std for the project's iterators, with only a host container's header
// included (ktune's std::iterator_traits a class of std itself on libcu++'s, as numeric_limits);
// a const array of a class whose constructor checks its arguments on the host (host data, which
// goes with the constructor); a host struct's seed that names std::mt19937::default_seed; a const
// computed with CUDA's math functions (`static const double kMinLogDiffDouble = log(DBL_EPSILON);`,
// initialized at run time: host data), beside a const the kernel reads, which stays.
TEST(KernelSpec, K2ShapesStdIteratorTraitsHostBuiltDataAndEngineSeeds) {
  SpecDir d;
  d.write("ops.h", "#pragma once\n#include <vector>\n#include <random>\n#include <cstdint>\n#include <cmath>\n#include <cfloat>\nnamespace proj {\n"
                   "template <typename T> struct PtrPtr { T** data; __host__ __device__ T operator[](int i) const { return *data[i]; } };\n"
                   "class Traits {\n public:\n  Traits(int kind, int bytes, const char* name) : kind_(kind), bytes_(bytes), name_(name) {\n"
                   "    if (bytes_ <= 0) throw 1;\n  }\n  int Bytes() const { return bytes_; }\n private:\n  int kind_, bytes_;\n  const char* name_;\n};\n"
                   "struct CpuRandState {\n  uint64_t seed = std::mt19937::default_seed;\n  std::mt19937 generator;\n};\n"
                   "static const double kMinLogDiffDouble = log(DBL_EPSILON);\nstatic const float kScale = 3.f;\n}\n"
                   "namespace std {\ntemplate <typename T> struct iterator_traits<proj::PtrPtr<T>> {\n  typedef T value_type;\n};\n}\n");
  d.write("proj.cu", "#include \"ops.h\"\nnamespace proj {\nconst Traits g_traits[] = {{0, 4, \"float\"}, {1, 8, \"double\"}};\n}\n"
                     "__global__ void k(float* y, int n) {\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "  static_assert(sizeof(std::iterator_traits<proj::PtrPtr<double>>::value_type) == 8, \"the project's\");\n"
                     "  static_assert(sizeof(std::iterator_traits<const float*>::value_type) == 4, \"libcu++'s\");\n"
                     "  if (i < n) y[i] = proj::kScale;\n}\n");
  expect_compiles(proj_k_spec("k2_shapes", true), d);
}

// std::thread's member class id, which a host struct holds (Kaldi's CuAllocator: `std::thread::id
// thread_id;` in cu-allocator.h, which its feature kernels' files include), and
// std::this_thread::get_id in a host member.
TEST(KernelSpec, AHostStructHoldsAThreadId) {
  SpecDir d;
  d.write("inc/alloc.h", "#pragma once\n#include <thread>\n#include <cstddef>\n"
                     "struct MemoryBlock {\n  void* begin;\n  bool allocated;\n  std::thread::id thread_id;\n};\n"
                     "class Allocator {\n public:\n  void Free(MemoryBlock* b) { b->thread_id = std::this_thread::get_id(); }\n"
                     " private:\n  MemoryBlock last_;\n};\n");
  d.write("proj.cu", "#include \"alloc.h\"\n__global__ void k(float* y, int n) {\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "  if (i < n) y[i] = 1.f;\n}\n");
  expect_compiles_under_skip_only("thread_id", "inc", d);
}

// Thrust's random numbers in device code (xgboost's row sampler, lightseq's `__host__ __device__`
// generators): <thrust/random.h>'s headers reach NVRTC with their host functions (stream
// operators, a core-access helper) gone, so a kernel draws from its engines and distributions, with
// host_code skip and without. (KernelSpecGpu.ThrustsRandomNumbersAreTheGeneratorsOwn checks the
// draws.)
TEST(KernelSpec, ThrustsRandomNumbersCompileForTheDevice) {
  SpecDir d;
  d.write("proj.cu", "#include <thrust/random.h>\n"
                     "struct uniform {\n  float a, b;\n  __host__ __device__ float operator()(unsigned n) const {\n"
                     "    thrust::default_random_engine rng;\n    thrust::uniform_real_distribution<float> dist(a, b);\n"
                     "    rng.discard(n);\n    return dist(rng);\n  }\n};\n"
                     "__global__ void k(float* y, int n) {\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "  thrust::minstd_rand rng(i);\n  thrust::random::normal_distribution<float> nd(0.f, 1.f);\n"
                     "  if (i < n) y[i] = uniform{0.f, 1.f}(i) + nd(rng);\n}\n");
  for (const bool skip : {false, true}) {
    SCOPED_TRACE(skip ? "skip" : "as it is");
    expect_compiles(proj_k_spec(skip ? "thrust_random_skip" : "thrust_random", skip), d);
  }
}

// Thrust's algorithms under thrust::seq in device code (xgboost's `thrust::lower_bound(thrust::seq,
// ...)` in a kernel): tests/ops/thrust_seq_spec.h's kernel and its reference compile, with host_code
// skip and without. (KernelSpecGpu.ThrustsSequentialAlgorithmsGiveThrustsResults runs them.)
TEST(KernelSpec, ThrustsSequentialAlgorithmsCompileForTheDevice) {
  SpecDir d;
  d.write("seq.cu", ktune::testing::kThrustSeqSource);
  for (const bool skip : {false, true}) {
    SCOPED_TRACE(skip ? "skip" : "as it is");
    ojson spec = ojson::parse(ktune::testing::kThrustSeqSpec);
    spec["name"] = skip ? "thrust_seq_skip" : "thrust_seq";
    if (skip) spec["host_code"] = "skip";
    const std::string op = load_kernel_spec_text(spec.dump(), "seq.json", d.dir());
    Compiler compiler;
    for (int b : {128, 256})
      EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"B", b}}, Problem::parse(op, "1000"), "sm_90"))) << b;
  }
}

// {fmt} in a project's own folders, included for host code (tiny-cuda-nn's common_host.h: `using
// namespace fmt::literals;`, fmt::format in host templates): NVRTC cannot compile its headers
// (constexpr formatting calling fmt's host functions), so they stand in; the compile names
// neither fmt's text nor its host function. Without skip, the project's fmt is compiled as it is
// and fails.
TEST(KernelSpec, AProjectsFmtStandsInUnderSkip) {
  SpecDir d;
  d.write("deps/fmt/base.h", "#pragma once\n#define FMT_BEGIN_NAMESPACE namespace fmt { inline namespace v11 {\n#define FMT_END_NAMESPACE } }\n"
                             "FMT_BEGIN_NAMESPACE\nvoid report_error(const char* message);\n"
                             "constexpr int parse_width(const char* s) { return *s == '{' ? (report_error(\"bad\"), 0) : 1; }\n"
                             "template <typename... T> struct basic_format_string { const char* s; };\n"
                             "template <typename... T> using format_string = basic_format_string<T...>;\nFMT_END_NAMESPACE\n");
  d.write("deps/fmt/format.h", "#pragma once\n#include \"base.h\"\nFMT_BEGIN_NAMESPACE\nnamespace literals {}\n"
                               "template <typename... T> int format(format_string<T...> f, T&&... args) { return parse_width(f.s); }\nFMT_END_NAMESPACE\n");
  d.write("deps/fmt/core.h", "// compatibility\n#include \"format.h\"\n");
  d.write("log.h", "#pragma once\n#include <fmt/core.h>\n#include <fmt/format.h>\nnamespace proj {\nusing namespace fmt::literals;\n"
                   "template <typename... Ts> int log(fmt::format_string<Ts...> msg, Ts&&... args) { return fmt::format(msg, args...); }\n}\n");
  d.write("proj.cu", "#include \"log.h\"\n__global__ void k(float* y, int n) {\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "  if (i < n) y[i] = 2.f;\n}\n");
  expect_compiles_under_skip_only("fmt_user", "deps", d);
}

// A host class's partial specialization whose template arguments hold parentheses (mmcv's
// DeviceRegistry<Ret (*)(Args...), f>) is a class: its data stays, sized by PyTorch's
// c10::DeviceType (`int8_t(at::DeviceType::COMPILE_TIME_MAX_DEVICE_TYPES)`), which stands in as
// PyTorch numbers it; its host members and static host data go (CUTLASS's device adapter's
// `static int device_ordinal_;`), with the latter's definition outside the class.
TEST(KernelSpec, AHostClassSizedByPyTorchsDeviceTypeCompiles) {
  SpecDir d;
  d.write("inc/registry.h", "#pragma once\n#include <torch/types.h>\n"
                            "template <typename F, F f> class DeviceRegistry;\n"
                            "template <typename Ret, typename... Args, Ret (*f)(Args...)>\nclass DeviceRegistry<Ret (*)(Args...), f> {\n public:\n"
                            "  using FunctionType = Ret (*)(Args...);\n"
                            "  static const int MAX_DEVICE_TYPES = int8_t(at::DeviceType::COMPILE_TIME_MAX_DEVICE_TYPES);\n"
                            "  void Register(at::DeviceType device, FunctionType function) { funcs_[int8_t(device)] = function; }\n"
                            " private:\n  FunctionType funcs_[MAX_DEVICE_TYPES];\n  static int device_ordinal_;\n};\n"
                            "template <typename Ret, typename... Args, Ret (*f)(Args...)>\n"
                            "int DeviceRegistry<Ret (*)(Args...), f>::device_ordinal_ = -1;\n");
  d.write("proj.cu", "#include \"registry.h\"\n"
                     "__global__ void k(float* y, int n) {\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "  if (i < n) y[i] = float(int8_t(c10::kCUDA));\n}\n"
                     "int launch(float* y, int n) { k<<<(n + 127) / 128, 128>>>(y, n); return 0; }\n");
  expect_compiles_under_skip_only("device_registry", "inc", d);
}

// The standard library's pieces a project's host code names and device code may use, as libstdc++
// brings them: a host class's string stream (MinkowskiEngine's `std::stringstream stream_;`, lmdeploy's
// `std::ostringstream* oss_;`) and wide string (cuDF's nvtx3.hpp, `message(std::wstring&&) = delete;`),
// <new> for a device allocator's placement new, std::max reached through <iostream> (lmdeploy's
// thread_map.h); a folder on the include path named like a standard header (bevfusion's spconv
// include/utility/) hides none; {fmt} included where no folder holds it (lmdeploy's build fetches it)
// stands in under skip, and is a missing header without it.
TEST(KernelSpec, StandardPiecesHostCodeNamesAndAFetchedFmt) {
  SpecDir d;
  d.write("inc/utility/timer.h", "#pragma once\nstruct Timer { int ticks; };\n");
  d.write("check.h", "#pragma once\n#include <sstream>\n#include <fstream>\n#include <string>\n#include <fmt/format.h>\n"
                     "class CheckStream {\n public:\n  template <class T> CheckStream& operator<<(const T& m) { *oss_ << m; return *this; }\n"
                     "  ~CheckStream() { fmt::print(\"{}\", oss_->str()); }\n private:\n  std::ostringstream* oss_;\n"
                     "  std::stringstream stream_;\n  std::ifstream in_;\n};\n"
                     "struct message {\n  message(std::wstring const& m) noexcept : p{m.c_str()} {}\n  message(std::wstring&&) = delete;\n"
                     "  const void* p;\n};\n");
  d.write("proj.cu", "#include <utility>\n#include <utility/timer.h>\n#include <new>\n#include <iostream>\n#include \"check.h\"\n"
                     "template <int A, int B> struct ThreadMap { static constexpr int kIter = std::max(A / B, 1); };\n"
                     "template <class T> struct dev_alloc {\n  __host__ __device__ T* construct(void* p) { return new (p) T(); }\n};\n"
                     "__global__ void k(float* y, int n) {\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "  std::pair<int, float> p{ThreadMap<8, 4>::kIter, 2.f};\n"
                     "  if (i < n) { dev_alloc<float> a; y[i] = *a.construct(y + i) + std::move(p.second) + p.first; }\n}\n"
                     "void report(const std::string& s) { std::cerr << s << std::endl; }\n");
  expect_compiles_under_skip_only("std_pieces", "inc", d);
}

// A project's branch for compilers other than GCC, which NVRTC takes (it defines no __GNUC__, where
// nvcc's device pass does), spelling GCC's __PRETTY_FUNCTION__ by MSVC's __FUNCSIG__ (lmdeploy's
// macro.h): libcu++'s assert then names __FUNCSIG__, which ktune defines as GCC's. A text that
// defines __FUNCSIG__ itself keeps its own (no -D for NVRTC to refuse as redefined).
TEST(KernelSpec, AnotherCompilersFunctionNameMacroReadsAsGccs) {
  SpecDir d;
  d.write("macro.h", "#pragma once\n#if !defined(__PRETTY_FUNCTION__) && !defined(__GNUC__)\n#define __PRETTY_FUNCTION__ __FUNCSIG__\n#endif\n");
  d.write("proj.cu", "#include \"macro.h\"\n#include <cassert>\n__global__ void k(float* y, int n) {\n"
                     "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n  assert(n > 0);\n  if (i < n) y[i] = 1.f;\n}\n");
  d.write("own.cu", "#define __FUNCSIG__ \"k\"\n#include \"macro.h\"\n#include <cassert>\n__global__ void k(float* y, int n) {\n"
                    "  assert(n > 0);\n  y[0] = 1.f;\n}\n");
  for (const char* source : {"proj.cu", "own.cu"}) {
    ojson spec = ojson::parse(R"JSON({
      "host_code": "skip", "kernel": "k", "dims": ["n"], "params": {"UNTUNED": [0]}, "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]},
      "args": [{"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"}, {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
      "check": {"none": "compile only"}})JSON");
    spec["name"] = std::string("funcsig_") + (source[0] == 'p' ? "gcc" : "own");
    spec["sources"] = {source};
    SCOPED_TRACE(source);
    expect_compiles(spec, d);
  }
}

// An extension built against PyTorch's stable ABI (2.9; torchao's mxfp8 kernels, xformers' sparse24):
// torch::stable::Tensor in host code, torch::headeronly's ScalarType (its float8 and unsigned
// members) in a trait, a kernel taking a header-only packed accessor, laid out as ATen's; pybind11's
// namespace, which PyTorch's headers bring (MinkowskiEngine's `namespace py = pybind11;`).
TEST(KernelSpec, AStableAbiExtensionCompiles) {
  SpecDir d;
  d.write("sparse.cu", "#include <torch/csrc/stable/tensor.h>\n#include <torch/headeronly/core/ScalarType.h>\n"
                       "#include <torch/headeronly/core/TensorAccessor.h>\n#include <cuda_fp16.h>\nusing torch::stable::Tensor;\n"
                       "namespace py = pybind11;\nusing torch::headeronly::Layout;\nnamespace tsa = torch::stable::accelerator;\n"
                       "template <typename T> struct ToAt;\n"
                       "template <> struct ToAt<__half> { static auto constexpr value = torch::headeronly::ScalarType::Half; };\n"
                       "template <> struct ToAt<unsigned short> { static auto constexpr value = torch::headeronly::ScalarType::UInt16; };\n"
                       "constexpr auto kFp8 = torch::headeronly::ScalarType::Float8_e4m3fn;\n"
                       "__global__ void k(torch::headeronly::HeaderOnlyGenericPackedTensorAccessor<int64_t, 2> m) {\n"
                       "  static_assert(ToAt<__half>::value != kFp8, \"two types\");\n"
                       "  if (threadIdx.x < m.size(0)) m[threadIdx.x][0] = int64_t(ToAt<unsigned short>::value);\n}\n"
                       "int64_t rows(const Tensor& t, torch::headeronly::IntHeaderOnlyArrayRef s) {\n"
                       "  tsa::DeviceGuard g(t.get_device());\n  return t.layout() == Layout::Strided ? t.size(0) : s[0];\n}\n");
  const ojson spec = ojson::parse(R"JSON({
    "name": "stable_abi", "sources": ["sparse.cu"], "host_code": "skip", "kernel": "k", "dims": ["n"], "params": {"UNTUNED": [0]},
    "launch": {"grid": [1], "block": [32], "args": ["m"]},
    "args": [{"name": "store", "kind": "buffer", "dtype": "i64", "count": "n", "intent": "out"},
             {"name": "m", "kind": "struct", "fields": [{"name": "data", "buffer": "store"},
                                                        {"name": "sizes", "dtype": "i64", "value": ["n", 1]},
                                                        {"name": "strides", "dtype": "i64", "value": [1, 1]}]}],
    "check": {"none": "compile only"}})JSON");
  expect_compiles(spec, d);
}

// A lambda in a __host__ __device__ function instantiated for a decltype (CuTe's compact_major,
// reached from LayoutLeft::Apply: every file that includes cute/tensor.hpp), which NVRTC leaves
// without an execution space where nvcc gives it the function's: compiled again with
// -default-device, the log saying so. So is a lambda that is a device function's default argument
// (CUTLASS's sm90 grouped tile scheduler's `CallbackBeforeCommit callback = [] (WorkTileInfo info)
// {...}`), whose closure NVRTC infers to be the host's; and where C++17's other errors hid them, in
// a source that is C++20's (FlashInfer's sm120 attention: `auto` parameters), compiled as C++20 and
// with -default-device. A program with an unannotated function of its own (host code kept, as
// "compile" keeps it) fails as it is, with no second compile.
TEST(KernelSpec, ALambdaNvrtcLeavesWithoutASpaceCompilesAsTheDevices) {
  SpecDir d;
  d.write("lam.cu", "template <class F> __host__ __device__ constexpr auto apply1(F f) { return f(1); }\n"
                    "template <class T> __host__ __device__ constexpr auto g(T t) { return apply1([](auto x) { return x + 1; }); }\n"
                    "struct Apply { using type = decltype(g(0)); };\n"
                    "__global__ void k(float* y, int n) {\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  if (i < n) y[i] = Apply::type(1);\n}\n");
  d.write("dflt.cu", "struct Sched {\n  template <class F = int (*)(int)>\n"
                     "  __device__ int next(int v, F f = [](int x) { return x + 1; }) { return f(v); }\n};\n"
                     "__global__ void k(float* y, int n) {\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "  if (i < n) y[i] = float(Sched{}.next(i));\n}\n");
  // C++20 (an abbreviated function template) beside the lambda: both retries together.
  d.write("lam20.cu", "template <class F> __host__ __device__ constexpr auto apply1(F f) { return f(1); }\n"
                      "template <class T> __host__ __device__ constexpr auto g(T t) { return apply1([](auto x) { return x + 1; }); }\n"
                      "struct Apply { using type = decltype(g(0)); };\n__device__ float twice(auto v) { return float(2 * v); }\n"
                      "__global__ void k(float* y, int n) {\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                      "  if (i < n) y[i] = Apply::type(1) + twice(i);\n}\n");
  d.write("host.cu", "template <class T> __host__ __device__ constexpr auto g(T t) { return [](auto x) { return x + 1; }(t); }\n"
                     "struct Apply { using type = decltype(g(0)); };\nint host_side(int v) { return v + 1; }\n"
                     "__global__ void k(float* y, int n) {\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "  if (i < n) y[i] = Apply::type(1);\n}\n");
  auto spec_for = [&](const char* source, const char* host_code) {
    ojson spec = ojson::parse(R"JSON({
      "kernel": "k", "dims": ["n"], "params": {"UNTUNED": [0]}, "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]},
      "args": [{"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"}, {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
      "check": {"none": "compile only"}})JSON");
    spec["name"] = std::string("lambda_space_") + fs::path(source).stem().string() + "_" + host_code[0];
    spec["sources"] = {source};
    spec["host_code"] = host_code;
    return load_kernel_spec_text(spec.dump(), spec["name"].get<std::string>() + ".json", d.dir());
  };
  Compiler compiler;
  for (const char* source : {"lam.cu", "dflt.cu", "lam20.cu"})
  for (const char* host_code : {"skip", "compile"}) {
    SCOPED_TRACE(std::string(source) + " " + host_code);
    const std::string op = spec_for(source, host_code);
    std::shared_ptr<const CompiledKernel> k;
    ASSERT_NO_THROW(k = compiler.compile(compile_request(find_family(op), Config{{"UNTUNED", 0}}, Problem::parse(op, "1000"), "sm_90")));
    EXPECT_NE(k->log.find("compiled with -default-device"), std::string::npos) << k->log;
  }
  const std::string host = spec_for("host.cu", "compile");
  if (const auto e = compile_failure(compiler, host, Config{{"UNTUNED", 0}}, Problem::parse(host, "1000"),
                                     "host_side has no execution space: NVRTC refuses it")) {
    EXPECT_NE(e->log().find("host_side"), std::string::npos) << e->log();
    EXPECT_EQ(e->log().find("-default-device:"), std::string::npos) << e->log();
  }
}

// `using namespace std;` in a namespace or a function, then unqualified math (kaolin's kernels:
// truncf(u), pow(2, level)): under nvcc std's math is CUDA's global one; ktune's std names
// libcu++'s by a using-directive, whose own cuda::std::truncf made the call ambiguous. The
// project's header (with skip, handed in memory) and the source both compile; at global scope the
// text is left as it is.
TEST(KernelSpec, UsingNamespaceStdThenUnqualifiedMathCompiles) {
  SpecDir d;
  d.write("math_utils.cuh", "#pragma once\n#include <cmath>\nnamespace proj {\nusing namespace std;\n"
                            "__device__ inline float frac_of(float u) { return u - truncf(u) + log2(u) + sqrt(2) + pow(u, 2); }\n}\n");
  d.write("proj.cu", "#include \"math_utils.cuh\"\n#include <vector>\nusing namespace std;\nnamespace proj {\nusing namespace std;\n"
                     "__global__ void k(float* y, int level) {\n  y[0] = frac_of(y[1]) + fminf(y[2], 1.f) + fabs(y[3]) + 1.0f / pow(2, level);\n}\n"
                     "}\nvoid host_side(std::vector<float>& v) { v.push_back(1.f); }\n");
  const ojson spec = ojson::parse(R"JSON({
    "name": "using_std_math", "sources": ["proj.cu"], "host_code": "skip", "kernel": "proj::k", "dims": ["n"], "params": {"UNTUNED": [0]},
    "launch": {"grid": [1], "block": [32]},
    "args": [{"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"}, {"name": "level", "kind": "scalar", "dtype": "i32", "value": 3}],
    "check": {"none": "compile only"}})JSON");
  const std::string op = load_kernel_spec_text(spec.dump(), "using_std_math.json", d.dir());
  Compiler compiler;
  EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"UNTUNED", 0}}, Problem::parse(op, "1000"), "sm_90")));
  // The global directive (line 3 of the source) is as written; the namespace's gained the declarations.
  const std::string& src = spec_of(op).source;
  EXPECT_NE(src.find("#include <vector>\nusing namespace std;\nnamespace proj {"), std::string::npos) << src;
  EXPECT_NE(src.find("using namespace std; using ::acos;"), std::string::npos) << src;
}

// `using namespace std;` at global scope, then unqualified math (tests/ops/using_std_spec.h):
// with <cmath> alone (ktune's std:: math is CUDA's global math, as libstdc++'s is its C
// library's) the program compiles as it is; with CUB, which brings libcu++'s cuda::std math, the
// calls the log finds ambiguous are qualified and the program compiled again, its log saying so.
// A call through a macro is not one the log's caret is on: it stays, and the compile fails on it.
TEST(KernelSpec, GlobalUsingNamespaceStdThenUnqualifiedMathCompiles) {
  SpecDir d;
  d.write("mix.cu", ktune::testing::kUsingStdSource);
  const std::string op = load_kernel_spec_text(ktune::testing::kUsingStdSpec, "using_std_global.json", d.dir());
  Compiler compiler;
  {
    std::shared_ptr<const CompiledKernel> k;
    ASSERT_NO_THROW(k = compiler.compile(compile_request(find_family(op), Config{{"B", 128}}, Problem::parse(op, "1000"), "sm_90")));
    EXPECT_NE(k->log.find("call(s) qualified"), std::string::npos) << k->log;
  }
  std::string no_cub = ktune::testing::kUsingStdSource;
  no_cub.replace(no_cub.find("#include <cub/cub.cuh>"), std::strlen("#include <cub/cub.cuh>"), "");
  no_cub.replace(no_cub.find("  typedef cub::BlockReduce"), no_cub.find("  if (threadIdx.x == 0)") - no_cub.find("  typedef cub::BlockReduce"),
                 "  const float m = v;\n");
  d.write("mix.cu", no_cub);
  const std::string plain = load_kernel_spec_text(ktune::testing::kUsingStdSpec, "using_std_plain.json", d.dir());
  std::shared_ptr<const CompiledKernel> k;
  ASSERT_NO_THROW(k = compiler.compile(compile_request(find_family(plain), Config{{"B", 128}}, Problem::parse(plain, "1000"), "sm_90")));
  EXPECT_EQ(k->log.find("qualified"), std::string::npos) << k->log;
  std::string macro = ktune::testing::kUsingStdSource;
  macro.replace(macro.find("using namespace std;\n"), std::strlen("using namespace std;\n"), "using namespace std;\n#define ROOT(v) sqrt(v)\n");
  macro.replace(macro.find("sqrt(fabs(a))"), std::strlen("sqrt(fabs(a))"), "ROOT(::fabs(a))");
  d.write("mix.cu", macro);
  const std::string through = load_kernel_spec_text(ktune::testing::kUsingStdSpec, "using_std_macro.json", d.dir());
  if (const auto e = compile_failure(compiler, through, Config{{"B", 128}}, Problem::parse(through, "1000"),
                                     "the call through ROOT is left ambiguous")) {
    EXPECT_NE(e->log().find("overloaded function \"sqrt\""), std::string::npos) << e->log();
  }
}

// Thrust included for the host code (a benchmark's main sorts a thrust::device_vector, a host
// struct holds one; candle's MoE kernels scan with thrust::inclusive_scan): under NVRTC Thrust's
// host side stands in, its containers taking any initializer, and a kernel's thrust::pair and
// thrust::plus (its device-usable headers) compile; a kernel that calls an algorithm
// thrust::seq's stand-ins lack (thrust::sort_by_key), or one under another policy, fails on its
// name.
TEST(KernelSpec, ThrustsHostSideIncludedForHostCodeCompiles) {
  SpecDir d;
  d.write("sorted.cu", R"CUDA(#include <thrust/device_vector.h>
#include <thrust/host_vector.h>
#include <thrust/sort.h>
#include <thrust/scan.h>
#include <thrust/execution_policy.h>
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/iterator/counting_iterator.h>
#include <iostream>
struct Buffers { thrust::device_vector<float> x; thrust::host_vector<int> h{1, 2}; thrust::device_ptr<float> p; };
__global__ void k(float* y) { thrust::pair<int, float> q(1, 2.f); y[threadIdx.x] = q.second + thrust::plus<float>()(1.f, 2.f); }
int main() {
  thrust::device_vector<float> d(100);
  thrust::sort(thrust::device, d.begin(), d.end());
  thrust::inclusive_scan(thrust::cuda::par, d.begin(), d.end(), d.begin());
  k<<<1, 32>>>(thrust::raw_pointer_cast(d.data()));
  std::cout << d[0] << std::endl;
}
)CUDA");
  const ojson spec = ojson::parse(R"JSON({
    "name": "thrust_host", "sources": ["sorted.cu"], "host_code": "skip", "kernel": "k", "dims": ["n"], "params": {"UNTUNED": [0]},
    "launch": {"grid": [1], "block": [32]},
    "args": [{"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"}], "check": {"none": "compile only"}})JSON");
  const std::string op = load_kernel_spec_text(spec.dump(), "thrust_host.json", d.dir());
  Compiler compiler;
  EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"UNTUNED", 0}}, Problem::parse(op, "64"), "sm_90")));
  for (const auto& [call, name] : {std::pair<std::string, std::string>{"thrust::sort_by_key(thrust::seq, y, y + 32, y)", "sort_by_key"},
                                   {"thrust::sort(thrust::device, y, y + 32)", "device"}}) {
    SCOPED_TRACE(call);
    d.write("uses.cu", "#include <thrust/sort.h>\n#include <thrust/execution_policy.h>\n__global__ void k(float* y) { " + call + "; }\n");
    ojson in_device = spec;
    in_device["name"] = "thrust_in_device_" + name;
    in_device["sources"] = ojson::array({"uses.cu"});
    const std::string uses = load_kernel_spec_text(in_device.dump(), "thrust_in_device.json", d.dir());
    if (const auto e = compile_failure(compiler, uses, Config{{"UNTUNED", 0}}, Problem::parse(uses, "64"), call + " in a kernel compiled")) {
      EXPECT_NE(e->log().find("\"" + name + "\""), std::string::npos) << e->log();
    }
  }
}

// A project built as C++20 whose spec names no dialect (gsplat's camera headers): a concept and a
// requires-clause, a dependent type named without `typename` in a member's declaration, and host
// classes on PyTorch's TorchScript types (a torch::CustomClassHolder base, at::Tensor and
// c10::intrusive_ptr members, c10::optional, a c10::List trait): C++17 refuses it, and it is
// compiled as C++20, its log naming C++17's first error. Where it fails in both dialects, C++20's
// errors are reported (the mistake, not C++17's `concept`), saying so; a source without C++20's
// keywords that fails in both reports C++17's.
TEST(KernelSpec, ACxx20ProjectsFileCompilesAsCxx20WhereNoDialectIsAsked) {
  SpecDir d;
  d.write("camera.h", R"CUDA(#pragma once
#include <type_traits>
#include <vector>
#include <torch/extension.h>
namespace cam {
template <class T> struct is_list : std::false_type {};
template <class T> struct is_list<c10::List<T>> : std::true_type {};
template <class T>
concept Scalar = std::is_arithmetic_v<T>;
struct Lidar : public torch::CustomClassHolder {
  at::Tensor rows;
  c10::intrusive_ptr<Lidar> self;
  c10::optional<float> eps;
  int n_rows() const { return rows.size(0); }
};
template <class Model>
struct Params {
  typename Model::Inner* unused;
  Model::Inner inner;
};
struct Pinhole { struct Inner { float f; }; };
template <class T> requires Scalar<T> __device__ T scaled(const Params<Pinhole>& p, T x) { return x * T(p.inner.f); }
}
)CUDA");
  d.write("proj.cu", "#include \"camera.h\"\n__global__ void k(cam::Params<cam::Pinhole> p, float* y) { y[threadIdx.x] = cam::scaled(p, 2.f); }\n");
  const ojson spec = ojson::parse(R"JSON({
    "name": "cxx20_project", "sources": ["proj.cu"], "host_code": "skip", "kernel": "k", "dims": ["n"], "params": {"UNTUNED": [0]},
    "launch": {"grid": [1], "block": [32], "args": ["p", "y"]},
    "args": [{"name": "p", "kind": "struct", "fields": [{"name": "unused", "dtype": "u64", "value": 0}, {"name": "f", "dtype": "f32", "value": 2}]},
             {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"}], "check": {"none": "compile only"}})JSON");
  const std::string op = load_kernel_spec_text(spec.dump(), "cxx20_project.json", d.dir());
  Compiler compiler;
  std::shared_ptr<const CompiledKernel> k;
  ASSERT_NO_THROW(k = compiler.compile(compile_request(find_family(op), Config{{"UNTUNED", 0}}, Problem::parse(op, "32"), "sm_90")));
  EXPECT_NE(k->log.find("compiled as C++20 (-std=c++20): C++17 refused the source ("), std::string::npos) << k->log;
  // The log of the spec's compile with its source replaced by file's text, which must fail.
  auto failing_log = [&](const std::string& name, const std::string& file, const std::string& text) {
    d.write(file, text);
    ojson variant = spec;
    variant["name"] = name;
    variant["sources"] = ojson::array({file});
    const std::string v = load_kernel_spec_text(variant.dump(), name + ".json", d.dir());
    const auto e = compile_failure(compiler, v, Config{{"UNTUNED", 0}}, Problem::parse(v, "32"),
                                   file + ": an undefined name compiled");
    return e ? e->log() : std::string();
  };
  const std::string bad = failing_log("cxx20_bad", "bad.cu", "#include \"camera.h\"\n__global__ void k(cam::Params<cam::Pinhole> p, float* y) { y[0] = cam::scaled(p, 2.f) + missing; }\n");
  EXPECT_NE(bad.find("compiled again as C++20 (-std=c++20): C++17 refused the source ("), std::string::npos) << bad;
  const std::string head = bad.substr(0, bad.find('\n')); // C++20's first error, at the head
  EXPECT_EQ(head.rfind("first error: ", 0), 0u) << bad;
  EXPECT_NE(head.find("bad.cu(2): error: identifier \"missing\" is undefined"), std::string::npos) << bad;
  EXPECT_NE(bad.find("error: identifier \"missing\" is undefined"), std::string::npos) << bad;
  EXPECT_EQ(bad.find("is not a type name"), std::string::npos) << "C++17's errors: " << bad;
  const std::string plain = failing_log("cxx17_bad", "plain.cu", "template <class M> struct P { M::Inner inner; };\nstruct Q { struct Inner { float f; }; };\n"
                                                                 "__global__ void k(P<Q> p, float* y) { y[0] = p.inner.f + missing; }\n");
  EXPECT_NE(plain.find("is not a type name"), std::string::npos) << "C++17's errors: " << plain;
  EXPECT_EQ(plain.find("compiled again as C++20"), std::string::npos) << plain;
}

// A device-wide algorithm's header included for the host code (kaolin's <cub/device/device_scan.cuh>
// for cub::DeviceScan), which launches through Thrust's host code: under skip it stands for the
// rest of CUB and its agents, which the dispatch layer includes: a kernel's block reduction from
// it compiles, and so does a kernel's own decoupled look-back on cub::ScanTileState (FlashInfer's
// mamba seq_chunk_cumsum.cuh).
TEST(KernelSpec, CubsDeviceWideHeadersStandForTheRestOfCub) {
  SpecDir d;
  d.write("scan.cu", "#include <cub/device/device_scan.cuh>\n#include <cub/device/device_radix_sort.cuh>\n"
                     "template <int B>\n__global__ void block_sums(const int* x, int* y) {\n"
                     "  typedef cub::BlockReduce<int, B> R;\n  __shared__ typename R::TempStorage t;\n"
                     "  const int s = R(t).Sum(x[blockIdx.x * B + threadIdx.x]);\n  if (threadIdx.x == 0) y[blockIdx.x] = s;\n}\n"
                     "using TileState = cub::ScanTileState<int>;\n"
                     "__global__ void init_tiles(TileState tiles, int n) { tiles.InitializeStatus(n); }\n"
                     "size_t scan_bytes(int* x, int n) {\n  size_t bytes = 0;\n  cub::DeviceScan::ExclusiveSum(nullptr, bytes, x, x, n);\n  return bytes;\n}\n");
  const ojson spec = ojson::parse(R"JSON({
    "name": "cub_device", "sources": ["scan.cu"], "host_code": "skip", "params_as": "template", "dims": ["n"], "params": {"B": [128]},
    "launch": {"kernel": "block_sums<{B}>", "grid": ["n / B"], "block": ["B"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "i32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "i32", "count": "n", "intent": "out"}],
    "check": {"none": "compile only"}})JSON");
  const std::string op = load_kernel_spec_text(spec.dump(), "cub_device.json", d.dir());
  Compiler compiler;
  EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"B", 128}}, Problem::parse(op, "1024"), "sm_90")));
}

// A header that declares the floating-point categories as glibc's <math.h> does, an
// enumerator each with a #define of its name (CUTLASS's floating_point_nvrtc.h), after a
// <cmath> that under NVRTC has #defined them already: it compiles, and the categories keep
// their values; in a namespace or at global scope.
TEST(KernelSpec, AHeaderDeclaringTheFloatingPointCategoriesCompilesAfterCmath) {
  const std::string categories = R"CUDA(enum {
  FP_NAN =
# define FP_NAN 0
    FP_NAN,
  FP_INFINITE =
# define FP_INFINITE 1
    FP_INFINITE,
  FP_ZERO =
# define FP_ZERO 2
    FP_ZERO,
  FP_SUBNORMAL =
# define FP_SUBNORMAL 3
    FP_SUBNORMAL,
  FP_NORMAL =
# define FP_NORMAL 4
    FP_NORMAL
};
)CUDA";
  const std::string category = "__device__ inline int category(float x) { return x != x ? FP_NAN : x == 0.f ? FP_ZERO : FP_NORMAL; }\n";
  const std::string values = "static_assert(FP_NAN == 0 && FP_INFINITE == 1 && FP_ZERO == 2 && FP_SUBNORMAL == 3 && FP_NORMAL == 4, \"glibc's values\");\n";
  SpecDir d;
  d.write("fp.h", "#pragma once\nnamespace mylib {\n" + categories + category + "}  // namespace mylib\n" + values);
  d.write("proj.cu", R"CUDA(#include <cmath>
#include "fp.h"
__global__ void k(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = mylib::category(x[i]) == FP_NORMAL ? x[i] : 0.f;
}
)CUDA");
  const ojson spec = ojson::parse(R"JSON({
    "name": "fp_categories", "sources": ["proj.cu"], "kernel": "k", "dims": ["n"],
    "params": {"UNTUNED": [0]}, "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"none": "compile only"}})JSON");
  expect_compiles(spec, d);
  // At global scope (CUTLASS 2.x's half.h under __CUDACC_RTC__, FasterTransformer's): declared
  // once, not twice.
  d.write("fp.h", "#pragma once\n" + categories + "namespace mylib {\n" + category + "}  // namespace mylib\n" + values);
  expect_compiles(spec, d);
}

// A block's threads as a C++ constant of the source (Ktraits::kNThreads, ThunderKittens'
// NUM_THREADS_v): probed as a shared memory constant is, after every shared memory probe, in step
// order; the plan launches {1, 1, 1} with the probe's index, which the worker gets.
TEST(KernelSpec, ABlockFromACppConstantIsProbedAfterTheSharedMemoryConstants) {
  SpecDir d;
  d.write("b.cu", "template <int W> struct Kt { static constexpr int kThreads = 32 * W; static constexpr int kSmem = 8 * kThreads;\n"
                  "  static constexpr int kTwice = 64 * W; };\n"
                  "template <int W> __global__ void fill(float* y, int n) { const int i = blockIdx.x * Kt<W>::kThreads + threadIdx.x;"
                  " if (i < n) y[i] = 1.f; }\n"
                  "template <int W> __global__ void twice(float* y, int n) { const int i = blockIdx.x * Kt<W>::kTwice + threadIdx.x;"
                  " if (i < n) y[i] *= 2.f; }\n"
                  "__global__ void ref(float* y, int n) { const int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.f; }\n");
  const ojson base = ojson::parse(R"JSON({
    "name": "block_constant", "sources": ["b.cu"], "params_as": "template", "dims": ["n"], "params": {"W": [2, 4]},
    "launch": [{"kernel": "fill<{W}>", "grid": ["ceil_div(n, 32 * W)"], "block": {"constant": "Kt<{W}>::kThreads"},
                "shared_memory": {"constant": "Kt<{W}>::kSmem"}},
               {"kernel": "twice<{W}>", "grid": ["ceil_div(n, 64 * W)"], "block": {"constant": "Kt<{W}>::kTwice"}}],
    "args": [{"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"}, {"name": "n_", "kind": "scalar", "value": "n"}],
    "check": {"reference": {"kernel": "ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
  const std::string op = load_kernel_spec_text(base.dump(), "b.json", d.dir());
  const KernelSpec& s = spec_of(op);
  EXPECT_EQ(s.steps.at(0).block_constant, "Kt<{W}>::kThreads");
  EXPECT_EQ(s.steps.at(1).block_constant, "Kt<{W}>::kTwice");
  EXPECT_TRUE(s.steps.at(1).smem_constant.empty());
  const Problem p = Problem::parse(op, "100000");
  Config c;
  c.set("W", 4);
  EXPECT_EQ(s.kernel_names(s.steps, c, p),
            (std::vector<std::string>{"fill<4>", "twice<4>", "ktune_constant_probe<(unsigned long long)(Kt<4>::kSmem)>",
                                      "ktune_constant_probe<(unsigned long long)(Kt<4>::kThreads)>",
                                      "ktune_constant_probe<(unsigned long long)(Kt<4>::kTwice)>"}));
  const LaunchPlan plan = find_family(op).launch_plan(c, p);
  ASSERT_EQ(plan.steps.size(), 2u);
  EXPECT_EQ(plan.steps[0].smem_kernel, 2);
  EXPECT_EQ(plan.steps[0].block_kernel, 3);
  EXPECT_EQ(plan.steps[1].smem_kernel, -1);
  EXPECT_EQ(plan.steps[1].block_kernel, 4);
  for (const LaunchStep& st : plan.steps)
    EXPECT_TRUE(st.block[0] == 1 && st.block[1] == 1 && st.block[2] == 1) << "x comes from the probe at the launch";
  const LaunchPlan back = plan_from_json(nlohmann::json::parse(plan_to_json(plan).dump()));
  EXPECT_EQ(back.steps.at(0).block_kernel, 3) << "the worker gets it";
  EXPECT_EQ(back.steps.at(1).block_kernel, 4);
  EXPECT_EQ(s.plan(s.reference_steps, s.reference_config, p).steps.at(0).block_kernel, -1);
  // Compiled: each probe's lowered name holds NVRTC's value.
  Compiler compiler;
  for (int w : {2, 4}) {
    c.set("W", w);
    const auto k = compiler.compile(compile_request(find_family(op), c, p, "sm_90"));
    ASSERT_EQ(k->lowered_names.size(), 5u);
    const unsigned long long want[3] = {256ull * unsigned(w), 32ull * unsigned(w), 64ull * unsigned(w)};
    for (int j = 0; j < 3; ++j) {
      unsigned long long v = 0;
      ASSERT_TRUE(constant_probe_value(k->lowered_names[size_t(2 + j)], &v)) << k->lowered_names[size_t(2 + j)];
      EXPECT_EQ(v, want[j]) << "probe " << j << " at W " << w;
    }
  }
  // Refused: no constant, an empty one, another field, a constant grid or cluster; a placeholder
  // that is no parameter.
  const auto with = edit(base);
  expect_refused(with([](ojson& j) { j["launch"][0]["block"] = ojson::object(); }), d,
                 "launch[0].block: expected 1 to 3 expressions (x, y, z) or {\"constant\"");
  expect_refused(with([](ojson& j) { j["launch"][0]["block"]["constant"] = ""; }), d, "launch[0].block.constant: empty");
  expect_refused(with([](ojson& j) { j["launch"][0]["block"]["y"] = 2; }), d, "launch[0].block.y: unknown field");
  expect_refused(with([](ojson& j) { j["launch"][0]["grid"] = {{"constant", "Kt<{W}>::kThreads"}}; }), d,
                 "launch[0].grid: expected 1 to 3 expressions");
  expect_refused(with([](ojson& j) { j["launch"][1]["block"]["constant"] = "Kt<{V}>::kTwice"; }), d,
                 "block constant 'Kt<{V}>::kTwice': {V} is not a parameter, a dimension or {dtype}");
}

// "arch": "sm_90a": a kernel of arch-specific instructions (setmaxnreg here, as wgmma) is compiled
// for sm_90a, its reference too (one source), and serves sm_90 devices only; "sm_80" is the oldest
// arch a kernel needs. Without the field the same source fails at ptxas on sm_90.
TEST(KernelSpec, AnArchSpecificKernelCompilesForItsArchAndServesItOnly) {
  SpecDir d;
  d.write("a.cu", "__device__ void grow() { asm volatile(\"setmaxnreg.inc.sync.aligned.u32 240;\\n\"); }\n"
                  "template <int B> __global__ void ones(float* y, int n) {\n"
                  "  if (B > 4096) grow(); const int i = blockIdx.x * B + threadIdx.x; if (i < n) y[i] = 1.f; }\n"
                  "__global__ void ones_ref(float* y, int n) { if (n < 0) grow(); const int i = blockIdx.x * blockDim.x + threadIdx.x;"
                  " if (i < n) y[i] = 1.f; }\n");
  ojson j = ojson::parse(R"JSON({
    "name": "arch_specific", "sources": ["a.cu"], "params_as": "template", "dims": ["n"], "params": {"B": [128, 256]},
    "arch": "sm_90a",
    "launch": {"kernel": "ones<{B}>", "grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"}, {"name": "n_", "kind": "scalar", "value": "n"}],
    "check": {"reference": {"kernel": "ones_ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
  const std::string op = load_kernel_spec_text(j.dump(), "a.json", d.dir());
  EXPECT_EQ(spec_of(op).min_arch, 90);
  EXPECT_TRUE(spec_of(op).arch_specific);
  const Family f = find_family(op);
  EXPECT_EQ(f.compile_arch("sm_90"), "sm_90a");
  const Problem p = Problem::parse(op, "1000");
  Config c;
  c.set("B", 128);
  EXPECT_TRUE(f.valid(c, p, DeviceInfo::nominal("sm_90")));
  const auto on80 = f.violations(c, p, DeviceInfo::nominal("sm_80"));
  ASSERT_FALSE(on80.empty());
  EXPECT_NE(on80[0].find("sm_90"), std::string::npos) << on80[0];
  DeviceInfo blackwell = DeviceInfo::nominal("sm_90");
  blackwell.arch = "sm_100", blackwell.cc_major = 10, blackwell.cc_minor = 0;
  EXPECT_FALSE(f.valid(c, p, blackwell)) << "an sm_90a cubin runs on sm_90 only";
  Compiler compiler;
  const CompileRequest req = compile_request(f, c, p, "sm_90");
  EXPECT_EQ(req.arch, "sm_90a");
  EXPECT_NE(req.context.find("arch sm_90 (compiled for sm_90a)"), std::string::npos) << req.context; // what its errors name
  EXPECT_FALSE(compiler.compile(req)->cubin.empty());
  const auto ref = spec_side_request(op, "reference", p, "sm_90");
  ASSERT_TRUE(ref);
  EXPECT_EQ(ref->arch, "sm_90a");
  EXPECT_FALSE(compiler.compile(*ref)->cubin.empty());
  // The same kernel without the field: ptxas refuses setmaxnreg on sm_90.
  j.erase("arch");
  j["name"] = "arch_plain";
  const std::string plain = load_kernel_spec_text(j.dump(), "b.json", d.dir());
  EXPECT_THROW(compiler.compile(compile_request(find_family(plain), c, Problem::parse(plain, "1000"), "sm_90")), CompileError);
  // "sm_80": the oldest arch, any newer one served, compiled for the device's own.
  j["arch"] = "sm_80";
  j["name"] = "arch_min";
  const std::string min = load_kernel_spec_text(j.dump(), "c.json", d.dir());
  EXPECT_EQ(find_family(min).compile_arch("sm_90"), "sm_90");
  EXPECT_TRUE(find_family(min).valid(c, Problem::parse(min, "1000"), DeviceInfo::nominal("sm_90")));
  DeviceInfo turing = DeviceInfo::nominal("sm_80");
  turing.arch = "sm_75", turing.cc_major = 7, turing.cc_minor = 5;
  EXPECT_FALSE(find_family(min).valid(c, Problem::parse(min, "1000"), turing));
}

// An empty pair of braces in a kernel's name is C++'s (CuTe's `Int<128>{}`), not a placeholder; a
// '{' never closed is an error naming the name.
TEST(KernelSpec, EmptyBracesInAKernelsNameAreCpps) {
  SpecDir d;
  d.write("b.cu", "template <int N> struct Int { static constexpr int value = N; };\n"
                  "template <class T> __global__ void fill(float* y, int n) { const int i = blockIdx.x * T::value + threadIdx.x;"
                  " if (i < n) y[i] = 1.f; }\n");
  ojson j = ojson::parse(R"JSON({
    "name": "braces", "sources": ["b.cu"], "params_as": "template", "dims": ["n"], "params": {"B": [128, 256]},
    "launch": {"kernel": "fill<decltype(Int<{B}>{})>", "grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"}, {"name": "n_", "kind": "scalar", "value": "n"}],
    "check": {"none": "a test of names"}})JSON");
  const std::string op = load_kernel_spec_text(j.dump(), "b.json", d.dir());
  const Problem p = Problem::parse(op, "1000");
  Config c;
  c.set("B", 256);
  EXPECT_EQ(spec_of(op).kernel_names(spec_of(op).steps, c, p), (std::vector<std::string>{"fill<decltype(Int<256>{})>"}));
  const auto k = Compiler().compile(compile_request(find_family(op), c, p, "sm_90"));
  EXPECT_NE(k->lowered_names.at(0).find("fill"), std::string::npos);
  j["launch"]["kernel"] = "fill<decltype(Int<{B>)>";
  j["name"] = "braces_open";
  try {
    const std::string bad = load_kernel_spec_text(j.dump(), "c.json", d.dir());
    spec_of(bad).kernel_names(spec_of(bad).steps, c, Problem::parse(bad, "1000"));
    FAIL() << "an unclosed brace passed";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("a '{' without its '}'"), std::string::npos) << e.what();
  }
}

// A TMA descriptor by value ("kind": "tensor_map"): its shape at a problem and config (packed
// strides, a box of the config's tile), carried in the plan as bytes, 128 bytes by value in the
// kernel's signature; TMA's limits and the buffer's extent refused naming the map.
using ktune::testing::kTmaSource;
using ktune::testing::kTmaSpec;

TEST(KernelSpec, ATensorMapIsItsBuffersShapeAtTheConfigsBox) {
  SpecDir d;
  d.write("tma.cu", kTmaSource);
  const ojson base = ojson::parse(kTmaSpec);
  const std::string op = load_kernel_spec_text(base.dump(), "tma.json", d.dir());
  const KernelSpec& s = spec_of(op);
  ASSERT_TRUE(s.args[1].is_tensor_map());
  EXPECT_EQ(s.args[1].struct_bytes, 128u);
  EXPECT_STREQ(s.args[1].kind_name(), "tensor map");
  const Problem p = Problem::parse(op, "1000x300");
  Config c;
  c.set("BX", 64), c.set("BY", 16);
  const KernelSpec::TensorMapShape x = s.tensor_map_at(1, p, c);
  EXPECT_EQ(x.rank, 2);
  EXPECT_EQ(x.dims[0], 1000u);
  EXPECT_EQ(x.dims[1], 300u);
  EXPECT_EQ(x.strides[0], 4000u) << "packed: a row of floats";
  EXPECT_EQ(x.box[0], 64u);
  EXPECT_EQ(x.box[1], 16u);
  EXPECT_EQ(x.type, ElemType::f32);
  // The plan carries it in the map's own 128 bytes (a struct of one map field); the worker's JSON too.
  const LaunchPlan plan = find_family(op).launch_plan(c, p);
  ASSERT_EQ(plan.spec_args.at(1).data.size(), 128u);
  const auto back = KernelSpec::TensorMapShape::from_bytes(plan.spec_args.at(1).data.data());
  EXPECT_EQ(back.box[0], 64u);
  EXPECT_EQ(back.strides[0], 4000u);
  EXPECT_EQ(plan_from_json(nlohmann::json::parse(plan_to_json(plan).dump())).spec_args.at(1).data, plan.spec_args.at(1).data);
  // Compiled for the kernel's `const __grid_constant__ CUtensorMap`: 128 bytes by value.
  Compiler compiler;
  const auto k = compiler.compile(compile_request(find_family(op), c, p, "sm_90"));
  const std::vector<size_t> sizes = cubin_param_sizes(k->cubin, k->lowered_names.at(0));
  EXPECT_EQ(sizes, (std::vector<size_t>{128, 8, 4, 4}));
  EXPECT_EQ(param_sizes_mismatch(s, s.steps[0].args, sizes, p, "launch"), "");
  EXPECT_EQ(signature_mismatch(s, s.steps[0], k->lowered_names.at(0), p, "launch"), "");
  // At a problem or config TMA cannot take: named.
  auto refused_at = [&](const char* shape, int bx, const char* says) {
    Config cc;
    cc.set("BX", bx), cc.set("BY", 4);
    try {
      s.tensor_map_at(1, Problem::parse(op, shape), cc);
      ADD_FAILURE() << shape << " passed";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("tensor map map"), std::string::npos) << e.what();
    }
  };
  refused_at("1001x300", 32, "TMA needs multiples of 16");
  // Such a problem or config is not a valid config of the family: never compiled to fail at its launch.
  const Family f = find_family(op);
  const auto odd = f.violations(c, Problem::parse(op, "1001x300"), DeviceInfo::nominal("sm_90"));
  ASSERT_EQ(odd.size(), 1u);
  EXPECT_NE(odd[0].find("tensor map map within TMA's limits"), std::string::npos) << odd[0];
  EXPECT_TRUE(f.valid(c, p, DeviceInfo::nominal("sm_90")));
  // A swizzle whose span the box's inner extent passes: 64 floats are 256 bytes, past 128.
  ojson swz = base;
  swz["name"] = "tma_copy_swizzled";
  swz["args"][1]["swizzle"] = 128;
  const std::string swz_op = load_kernel_spec_text(swz.dump(), "swz.json", d.dir());
  const Problem sp = Problem::parse(swz_op, "1000x300");
  Config narrow;
  narrow.set("BX", 32), narrow.set("BY", 4);
  for (const auto& w : find_family(swz_op).violations(narrow, sp, DeviceInfo::nominal("sm_90"))) ADD_FAILURE() << "32 floats, 128 bytes: " << w;
  const auto wide = find_family(swz_op).violations(c, sp, DeviceInfo::nominal("sm_90"));
  ASSERT_EQ(wide.size(), 1u);
  EXPECT_NE(wide[0].find("tensor map map within TMA's limits"), std::string::npos) << wide[0];
  try {
    spec_of(swz_op).tensor_map_at(1, sp, c);
    ADD_FAILURE() << "a box past its swizzle span passed";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("passes its 128-byte swizzle span"), std::string::npos) << e.what();
  }
  // Malformed: named by field.
  const auto with = edit(base);
  expect_refused(with([](ojson& j) { j["args"][1].erase("box"); }), d, "args[1].box: missing");
  expect_refused(with([](ojson& j) { j["args"][1]["box"] = {"BX"}; }), d, "args[1].box: 1 extents for a map of 2 dimensions");
  expect_refused(with([](ojson& j) { j["args"][1]["dims"] = {"BX", "h"}; }), d, "args[1].dims[0]: 'BX' reads BX");
  expect_refused(with([](ojson& j) { j["args"][1]["swizzle"] = 16; }), d, "args[1].swizzle: expected 0, 32, 64 or 128");
  expect_refused(with([](ojson& j) { j["args"][1]["strides"] = {"4 * w", "4"}; }), d, "args[1].strides: 2 strides for a map of 2");
  expect_refused(with([](ojson& j) { j["args"][1]["buffer"] = "w_"; }), d, "is not a buffer argument: a tensor map describes");
  expect_refused(with([](ojson& j) { j["args"][0]["box"] = {"BX"}; }), d, "args[0].box: only a tensor map");
  expect_refused(with([](ojson& j) { j["args"][1]["dims"] = ojson::array(); }), d, "args[1].dims: expected an array of 1 to 5");
}

// Tensor maps inside a struct (a params struct of CUtensorMap members): 128 bytes each at 64-byte
// alignment, the plan's bytes holding each map's shape where the launch encodes it, the struct's
// size the kernel's; a launched step's map TMA cannot take makes the config invalid, named by
// struct and field; malformed map fields refused by field.
using ktune::testing::kTmaStructSource;
using ktune::testing::kTmaStructSpec;

TEST(KernelSpec, AStructHoldsTensorMapsLaidOutAsCudaLaysThemOut) {
  SpecDir d;
  d.write("tma_struct.cu", kTmaStructSource);
  const ojson base = ojson::parse(kTmaStructSpec);
  const std::string op = load_kernel_spec_text(base.dump(), "tma_struct.json", d.dir());
  const KernelSpec& s = spec_of(op);
  const SpecArg& a = s.args[3];
  ASSERT_TRUE(a.is_struct());
  EXPECT_FALSE(a.is_tensor_map());
  EXPECT_TRUE(a.struct_has_maps());
  EXPECT_STREQ(a.kind_name(), "struct");
  // struct { CUtensorMap x, b; float* y; int w, h; }: 128 + 128 + 8 + 4 + 4, padded to 64.
  ASSERT_EQ(a.fields.size(), 5u);
  EXPECT_TRUE(a.fields[0].is_map());
  EXPECT_TRUE(a.fields[1].is_map());
  EXPECT_FALSE(a.fields[2].is_map());
  EXPECT_EQ(a.fields[0].offset, 0u);
  EXPECT_EQ(a.fields[1].offset, 128u);
  EXPECT_EQ(a.fields[2].offset, 256u);
  EXPECT_EQ(a.fields[3].offset, 264u);
  EXPECT_EQ(a.fields[4].offset, 268u);
  EXPECT_EQ(a.struct_align, 64u);
  EXPECT_EQ(a.struct_bytes, 320u);
  EXPECT_TRUE(a.follows_config) << "its maps' boxes are the config's tile";
  const Problem p = Problem::parse(op, "1000x300x3");
  const Config c{{"BX", 64}, {"BY", 16}, {"FAULT", 0}};
  const KernelSpec::TensorMapShape bx = s.tensor_map_at(3, p, c, 1);
  EXPECT_EQ(bx.rank, 2);
  EXPECT_EQ(bx.dims[0], 1000u);
  EXPECT_EQ(bx.strides[0], 4000u);
  EXPECT_EQ(bx.box[0], 64u);
  EXPECT_EQ(bx.box[1], 16u);
  EXPECT_EQ(bx.l2_promotion, 256) << "the default";
  // The plan's bytes: each map's shape in its 128 bytes, the values in theirs (the pointer's
  // offset 0, the launch adding the address).
  const LaunchPlan plan = find_family(op).launch_plan(c, p);
  const std::vector<unsigned char>& data = plan.spec_args.at(3).data;
  ASSERT_EQ(data.size(), 320u);
  for (size_t at : {size_t(0), size_t(128)}) {
    const auto shape = KernelSpec::TensorMapShape::from_bytes(data.data() + at);
    EXPECT_EQ(shape.rank, 2) << at;
    EXPECT_EQ(shape.dims[1], 300u) << at;
    EXPECT_EQ(shape.box[1], 16u) << at;
  }
  int w = 0, h = 0;
  std::memcpy(&w, data.data() + 264, 4), std::memcpy(&h, data.data() + 268, 4);
  EXPECT_EQ(w, 1000);
  EXPECT_EQ(h, 300);
  EXPECT_EQ(plan_from_json(nlohmann::json::parse(plan_to_json(plan).dump())).spec_args.at(3).data, data);
  // The reference passes no struct: no bytes, nothing to encode.
  const LaunchPlan ref = s.plan(s.reference_steps, s.reference_config, p);
  EXPECT_TRUE(ref.spec_args.at(3).data.empty());
  // The kernel's `const __grid_constant__ Params`: 320 bytes.
  Compiler compiler;
  const auto k = compiler.compile(compile_request(find_family(op), c, p, "sm_90"));
  const std::vector<size_t> sizes = cubin_param_sizes(k->cubin, k->lowered_names.at(0));
  EXPECT_EQ(sizes, (std::vector<size_t>{320}));
  EXPECT_EQ(param_sizes_mismatch(s, s.steps[0].args, sizes, p, "launch"), "");
  // A problem TMA cannot take: the config is invalid, the map named by struct and field.
  const Family f = find_family(op);
  const auto odd = f.violations(c, Problem::parse(op, "1001x300x3"), DeviceInfo::nominal("sm_90"));
  ASSERT_EQ(odd.size(), 1u) << "the first broken constraint";
  EXPECT_NE(odd[0].find("tensor map p.x within TMA's limits"), std::string::npos) << odd[0];
  EXPECT_TRUE(f.valid(c, p, DeviceInfo::nominal("sm_90")));
  try {
    s.tensor_map_at(3, Problem::parse(op, "1001x300x3"), c, 0);
    ADD_FAILURE() << "rows of 4004 bytes passed";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor map p.x at "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("TMA needs multiples of 16"), std::string::npos) << e.what();
  }
  // Malformed: named by field.
  const auto with = edit(base);
  expect_refused(with([](ojson& j) { j["args"][3]["fields"][0]["kind"] = "texture"; }), d,
                 "args[3].fields[0].kind: a field of a kind is a tensor map");
  expect_refused(with([](ojson& j) { j["args"][3]["fields"][0].erase("buffer"); }), d,
                 "args[3].fields[0].buffer: missing: the buffer argument the map describes");
  expect_refused(with([](ojson& j) { j["args"][3]["fields"][0]["buffer"] = "n_"; }), d,
                 "is not a buffer argument: a map field describes a buffer");
  expect_refused(with([](ojson& j) { j["args"][3]["fields"][1]["offset"] = 4; }), d, "args[3].fields[1]");
  expect_refused(with([](ojson& j) { j["args"][3]["fields"][1]["value"] = "w"; }), d, "args[3].fields[1]");
  expect_refused(with([](ojson& j) { j["args"][3]["fields"][1]["box"] = {"BX"}; }), d,
                 "args[3].fields[1].box: 1 extents for a map of 2 dimensions");
  expect_refused(with([](ojson& j) { j["args"][3]["fields"][1]["dims"] = {"BX", "h"}; }), d, "args[3].fields[1].dims[0]: 'BX' reads BX");
  expect_refused(with([](ojson& j) { j["args"][3]["fields"][1]["l2_promotion"] = 32; }), d,
                 "args[3].fields[1].l2_promotion: expected 0 (none), 64, 128 or 256");
  // The check before a run leaves maps to the constraint: a problem TMA cannot take is one no
  // config serves (the run says so and goes on), not a refusal of the whole run, even where a
  // box reads no parameter.
  ojson fixed = base;
  fixed["name"] = "tma_rounds_fixed_box";
  fixed["args"][3]["fields"][0]["box"] = {32, 4};
  const std::string fixed_op = load_kernel_spec_text(fixed.dump(), "fixed.json", d.dir());
  EXPECT_NO_THROW(check_fill_files(spec_of(fixed_op), Problem::parse(fixed_op, "1001x300x3")));
  EXPECT_FALSE(find_family(fixed_op).valid(c, Problem::parse(fixed_op, "1001x300x3"), DeviceInfo::nominal("sm_90")));
  // A loop's swap puts y in x's place: a y smaller than x's map is refused, named.
  ojson small = base;
  small["name"] = "tma_rounds_small_y";
  small["args"][2]["count"] = "w * h - 1";
  const std::string small_op = load_kernel_spec_text(small.dump(), "small.json", d.dir());
  try {
    spec_of(small_op).tensor_map_at(3, Problem::parse(small_op, "1000x300x3"), c, 0);
    ADD_FAILURE() << "a map over x, reaching past the y a swap puts in its place, passed";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("which holds 1199996 (a loop's swap puts it in x's place)"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(spec_of(small_op).tensor_map_at(3, Problem::parse(small_op, "1000x300x3"), c, 1)) << "b is swapped with nothing";
  // CuTe's atoms ask for 128-byte promotion: carried to the launch's encode.
  ojson l2 = base;
  l2["name"] = "tma_rounds_l2";
  l2["args"][3]["fields"][1]["l2_promotion"] = 128;
  const std::string l2_op = load_kernel_spec_text(l2.dump(), "l2.json", d.dir());
  const auto l2_plan = find_family(l2_op).launch_plan(c, Problem::parse(l2_op, "1000x300x3"));
  EXPECT_EQ(KernelSpec::TensorMapShape::from_bytes(l2_plan.spec_args.at(3).data.data() + 128).l2_promotion, 128);
  EXPECT_EQ(KernelSpec::TensorMapShape::from_bytes(l2_plan.spec_args.at(3).data.data()).l2_promotion, 256);
}

// Tensor map arguments are structs of one map field: planned as one (the shape in the map's own
// 128 bytes, at a launched step only), their buffer following a loop's swap as a struct's pointer
// does, the kernel's parameters 128 bytes each.
TEST(KernelSpec, ATensorMapArgumentIsPlannedAsAStructOfOneMapField) {
  SpecDir d;
  d.write("tma_struct.cu", kTmaStructSource);
  const std::string op = load_kernel_spec_text(ktune::testing::kTmaArgsSpec, "tma_args.json", d.dir());
  const KernelSpec& s = spec_of(op);
  const SpecArg& mx = s.args[3];
  EXPECT_TRUE(mx.is_tensor_map());
  EXPECT_TRUE(mx.struct_has_maps());
  EXPECT_FALSE(mx.made_at_launch());
  EXPECT_EQ(mx.map_name(0), "mx");
  EXPECT_EQ(mx.struct_bytes, 128u);
  const Problem p = Problem::parse(op, "1000x300x3");
  const Config c{{"BX", 32}, {"BY", 4}, {"FAULT", 0}};
  const LaunchPlan plan = find_family(op).launch_plan(c, p);
  for (size_t k : {size_t(3), size_t(4)}) {
    const std::vector<unsigned char>& data = plan.spec_args.at(k).data;
    ASSERT_EQ(data.size(), 128u) << s.args[k].name;
    const auto shape = KernelSpec::TensorMapShape::from_bytes(data.data());
    EXPECT_EQ(shape.rank, 2);
    EXPECT_EQ(shape.dims[0], 1000u);
    EXPECT_EQ(shape.box[0], 32u);
    EXPECT_EQ(shape.box[1], 4u);
  }
  // Rounds after the first pass y as x (and x as y): mx's buffer among the aliased.
  int swapped = 0;
  for (const LaunchStep& st : plan.steps)
    swapped += std::find(st.alias_args.begin(), st.alias_args.end(), 0) != st.alias_args.end();
  EXPECT_GE(swapped, 1) << "no launch moves x";
  Compiler compiler;
  const auto k = compiler.compile(compile_request(find_family(op), c, p, "sm_90"));
  const std::vector<size_t> sizes = cubin_param_sizes(k->cubin, k->lowered_names.at(0));
  EXPECT_EQ(sizes, (std::vector<size_t>{128, 128, 8, 4, 4}));
  EXPECT_EQ(param_sizes_mismatch(s, s.steps[0].args, sizes, p, "launch"), "");
}


// A struct inside a struct ("kind": "struct" among the fields): laid out as its own (its
// alignment, its padded size) and flattened into the outer one's fields as "inner.field"; the
// kernel's static_asserts pin C's offsets, its parameter size the whole. ThunderKittens' globals
// of gl layouts (pointer, empty dims, rows, cols, a map) is 256 bytes a layout.
struct NestedInner {
  char c;
  double d;
};
struct NestedOuter {
  int a;
  NestedInner in;
  short s;
  NestedInner last;
};

TEST(KernelSpec, AStructInsideAStructIsLaidOutAsItsOwn) {
  SpecDir d;
  d.write("nested.cu", R"CUDA(
struct Inner { char c; double d; };
struct Outer { int a; Inner in; short s; Inner last; };
static_assert(sizeof(Inner) == 16 && sizeof(Outer) == 48, "C's sizes");
__global__ void nested(Outer o, double* y) { y[0] = o.a + o.in.c + o.in.d + o.s + o.last.c + o.last.d; }
__global__ void nested_ref(double* y) { y[0] = 1 + 2 + 3 + 4 + 5 + 6; }
)CUDA");
  const ojson spec = ojson::parse(R"JSON({
    "name": "nested_struct", "sources": ["nested.cu"], "dims": ["n"], "params": {"B": [1]},
    "launch": {"kernel": "nested", "grid": [1], "block": [1], "args": ["o", "y"]},
    "args": [{"name": "y", "kind": "buffer", "dtype": "f64", "count": "n", "intent": "out"},
             {"name": "o", "kind": "struct", "fields": [
               {"name": "a", "value": 1},
               {"name": "in", "kind": "struct", "fields": [{"name": "c", "dtype": "i8", "value": 2}, {"name": "d", "dtype": "f64", "value": 3}]},
               {"name": "s", "dtype": "i16", "value": 4},
               {"name": "last", "kind": "struct", "fields": [{"name": "c", "dtype": "i8", "value": 5}, {"name": "d", "dtype": "f64", "value": "B * 6"}]}]}],
    "check": {"reference": {"kernel": "nested_ref", "launch": {"grid": [1], "block": [1], "args": ["y"]}}}})JSON");
  const std::string op = load_kernel_spec_text(spec.dump(), "nested.json", d.dir());
  const KernelSpec& s = spec_of(op);
  const SpecArg& a = s.args[1];
  ASSERT_EQ(a.fields.size(), 6u);
  // Where this compiler puts them (NVRTC has no offsetof; CUDA lays a struct out as the host does).
  const std::vector<std::pair<std::string, size_t>> at = {
      {"a", offsetof(NestedOuter, a)},           {"in.c", offsetof(NestedOuter, in) + offsetof(NestedInner, c)},
      {"in.d", offsetof(NestedOuter, in) + offsetof(NestedInner, d)}, {"s", offsetof(NestedOuter, s)},
      {"last.c", offsetof(NestedOuter, last) + offsetof(NestedInner, c)}, {"last.d", offsetof(NestedOuter, last) + offsetof(NestedInner, d)}};
  static_assert(sizeof(NestedOuter) == 48, "the kernel's");
  for (size_t i = 0; i < at.size(); ++i) {
    EXPECT_EQ(a.fields[i].name, at[i].first);
    EXPECT_EQ(a.fields[i].offset, at[i].second) << at[i].first;
  }
  EXPECT_EQ(a.struct_bytes, 48u);
  EXPECT_EQ(a.struct_align, 8u);
  EXPECT_TRUE(a.follows_config) << "last.d reads B";
  const Problem p = Problem::parse(op, "1");
  const Config c{{"B", 1}};
  const std::vector<unsigned char> data = find_family(op).launch_plan(c, p).spec_args.at(1).data;
  ASSERT_EQ(data.size(), 48u);
  double last_d = 0;
  std::memcpy(&last_d, data.data() + 40, 8);
  EXPECT_EQ(last_d, 6.0);
  EXPECT_EQ(data[32], 5);
  Compiler compiler;
  const auto k = compiler.compile(compile_request(find_family(op), c, p, "sm_90"));
  const std::vector<size_t> sizes = cubin_param_sizes(k->cubin, k->lowered_names.at(0));
  EXPECT_EQ(sizes, (std::vector<size_t>{48, 8}));
  EXPECT_EQ(param_sizes_mismatch(s, s.steps[0].args, sizes, p, "launch"), "");
  // ThunderKittens' gl: a pointer at a layout's 64-byte alignment, two empty dims, rows, cols, its
  // map at 64 and an empty member after it: 256 bytes; two of them 512.
  d.write("tk.cu", "struct G { char bytes[512]; } __attribute__((aligned(64)));\n__global__ void k(G g, float* y) {}\n");
  ojson gl = ojson::parse(R"JSON({"kind": "struct", "align": 64, "fields": [
    {"name": "raw_ptr", "buffer": "x"}, {"name": "batch", "dtype": "u8", "value": 0}, {"name": "depth", "dtype": "u8", "value": 0},
    {"name": "rows", "dtype": "u64", "value": "n"}, {"name": "cols", "dtype": "u64", "value": 64},
    {"name": "tma", "kind": "tensor_map", "buffer": "x", "dims": [64, "n"], "box": [64, 8]}, {"name": "other", "dtype": "u8", "value": 0}]})JSON");
  ojson tk = ojson::parse(R"JSON({"name": "tk_globals", "sources": ["tk.cu"], "dims": ["n"], "params": {"B": [1]},
    "launch": {"kernel": "k", "grid": [1], "block": [1], "args": ["g", "y"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "64 * n"}, {"name": "g", "kind": "struct", "fields": []},
             {"name": "y", "kind": "buffer", "dtype": "f32", "count": 1, "intent": "out"}],
    "check": {"none": "layout only"}})JSON");
  gl["name"] = "A";
  tk["args"][1]["fields"].push_back(gl);
  gl["name"] = "B";
  tk["args"][1]["fields"].push_back(gl);
  const std::string tk_op = load_kernel_spec_text(tk.dump(), "tk.json", d.dir());
  const SpecArg& g = spec_of(tk_op).args[1];
  EXPECT_EQ(g.struct_bytes, 512u);
  EXPECT_EQ(g.struct_align, 64u);
  ASSERT_EQ(g.fields.size(), 14u);
  EXPECT_EQ(g.fields[5].name, "A.tma");
  EXPECT_EQ(g.fields[5].offset, 64u);
  EXPECT_EQ(g.fields[6].offset, 192u);
  EXPECT_EQ(g.fields[7].name, "B.raw_ptr");
  EXPECT_EQ(g.fields[7].offset, 256u);
  EXPECT_EQ(g.fields[12].offset, 320u);
  EXPECT_TRUE(g.struct_has_maps());
  // Malformed inner fields are named by their path.
  ojson bad = spec;
  bad["args"][1]["fields"][1]["fields"][0]["dtype"] = "f128";
  expect_refused(bad, d, "args[1].fields[1].fields[0].dtype");
  bad = spec;
  bad["args"][1]["fields"][1]["name"] = "a";
  expect_refused(bad, d, "args[1].fields[1].name: field 'a' named twice");
}

// A scalar of the problem's dtype ("dtype": "dtype"): a kernel templated on T that takes `T alpha`
// by value, 4 bytes at f32, 8 at f64, 2 at f16 and bf16.
constexpr const char* kAxpySource =
    "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
    "template <typename T, int B> __global__ void axpy(T alpha, const T* x, T* y, int n) {\n"
    "  const int i = blockIdx.x * B + threadIdx.x; if (i < n) y[i] = T(float(alpha) * float(x[i]) + float(y[i])); }\n"
    "template <typename T> __global__ void axpy_ref(T alpha, const T* x, T* y, int n) {\n"
    "  const int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = T(float(alpha) * float(x[i]) + float(y[i])); }\n";

ojson axpy_spec() {
  return ojson::parse(R"JSON({
    "name": "axpy_t", "sources": ["a.cu"], "params_as": "template", "dims": ["n"], "dtypes": ["f32", "f64", "f16", "bf16"],
    "params": {"B": [64, 128]},
    "launch": {"kernel": "axpy<{dtype}, {B}>", "grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "alpha", "kind": "scalar", "dtype": "dtype", "default": 0.5},
             {"name": "x", "kind": "buffer", "dtype": "dtype", "count": "n"},
             {"name": "y", "kind": "buffer", "dtype": "dtype", "count": "n", "intent": "inout"},
             {"name": "n_", "kind": "scalar", "value": "n"}],
    "check": {"reference": {"kernel": "axpy_ref<{dtype}>", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
}

TEST(KernelSpec, AScalarOfTheProblemsDtypeTakesItsSize) {
  SpecDir d;
  d.write("a.cu", kAxpySource);
  const std::string op = load_kernel_spec_text(axpy_spec().dump(), "a.json", d.dir());
  const KernelSpec& s = spec_of(op);
  EXPECT_TRUE(s.args[0].problem_dtype);
  EXPECT_TRUE(s.args[0].caller_passes()) << "the caller's alpha";
  Compiler compiler;
  Config c;
  c.set("B", 64);
  for (const auto& [dt, bytes] : std::vector<std::pair<DType, size_t>>{{DType::f32, 4}, {DType::f64, 8}, {DType::f16, 2}, {DType::bf16, 2}}) {
    const Problem p = Problem::parse(op, "1000", "", dt);
    EXPECT_EQ(s.args[0].scalar_elem(p), elem_type_of(dt));
    const auto k = compiler.compile(compile_request(find_family(op), c, p, "sm_90"));
    const std::vector<size_t> sizes = cubin_param_sizes(k->cubin, k->lowered_names.at(0));
    EXPECT_EQ(sizes, (std::vector<size_t>{bytes, 8, 8, 4})) << to_string(dt);
    EXPECT_EQ(param_sizes_mismatch(s, s.steps[0].args, sizes, p, "launch"), "") << to_string(dt);
    EXPECT_EQ(signature_mismatch(s, s.steps[0], k->lowered_names.at(0), p, "launch"), "") << to_string(dt) << " " << k->lowered_names.at(0);
  }
  // A 16-bit float of its own: 2 bytes at every problem dtype, which the kernel's `T alpha` matches
  // at f16 only (the signature and the cubin's sizes say so at the others).
  ojson own = axpy_spec();
  own["name"] = "axpy_own_half";
  own["args"][0]["dtype"] = "f16";
  const std::string half_op = load_kernel_spec_text(own.dump(), "own.json", d.dir());
  const KernelSpec& h = spec_of(half_op);
  for (DType dt : {DType::f16, DType::f32}) {
    const Problem p = Problem::parse(half_op, "1000", "", dt);
    EXPECT_EQ(h.args[0].scalar_elem(p), ElemType::f16);
    const auto k = compiler.compile(compile_request(find_family(half_op), c, p, "sm_90"));
    const std::string wrong = param_sizes_mismatch(h, h.steps[0].args, cubin_param_sizes(k->cubin, k->lowered_names.at(0)), p, "launch");
    if (dt == DType::f16) EXPECT_EQ(wrong, "");
    else EXPECT_NE(wrong.find("alpha"), std::string::npos) << wrong;
  }
}

// "programmatic": a step launched as a programmatic dependent of the one before it: the plan's
// step overlaps its previous (and the worker gets the flag); not with a cooperative launch.
TEST(KernelSpec, AProgrammaticStepOverlapsThePreviousKernel) {
  SpecDir d;
  ojson j = SpecDir::base();
  const ojson step = j["launch"];
  j["launch"] = ojson::array({step, step});
  j["launch"][1]["programmatic"] = true;
  const std::string op = load_kernel_spec_text(j.dump(), "pdl.json", d.dir());
  Config c;
  c.set("B", 64);
  const LaunchPlan plan = find_family(op).launch_plan(c, Problem::parse(op, "1000"));
  ASSERT_EQ(plan.steps.size(), 2u);
  EXPECT_FALSE(plan.steps[0].overlap_previous);
  EXPECT_TRUE(plan.steps[1].overlap_previous);
  EXPECT_TRUE(plan_from_json(nlohmann::json::parse(plan_to_json(plan).dump())).steps[1].overlap_previous);
  j["launch"][1]["cooperative"] = true;
  expect_refused(j, d, "launch[1].programmatic: a programmatic dependent launch takes no cooperative launch");
  j["launch"][1].erase("cooperative");
  j["launch"][1]["programmatic"] = 1;
  expect_refused(j, d, "launch[1].programmatic: expected true, false or an expression of the config and problem");
  // A tuned choice: programmatic where the expression holds (FlashInfer's enable_pdl as a parameter).
  j["launch"][1]["programmatic"] = "B == 64 and n > 100";
  const std::string tuned = load_kernel_spec_text(j.dump(), "pdl_tuned.json", d.dir());
  EXPECT_TRUE(find_family(tuned).launch_plan(c, Problem::parse(tuned, "1000")).steps.at(1).overlap_previous);
  EXPECT_FALSE(find_family(tuned).launch_plan(c, Problem::parse(tuned, "100")).steps.at(1).overlap_previous);
  c.set("B", 128);
  EXPECT_FALSE(find_family(tuned).launch_plan(c, Problem::parse(tuned, "1000")).steps.at(1).overlap_previous);
  j["launch"][1]["programmatic"] = "sm_count > 1";
  expect_refused(j, d, "launch[1].programmatic: 'sm_count > 1' reads sm_count, a device value");
}

} // namespace

// offsetof in a constant expression, as nvcc's host compiler folds it (NVIDIA Warp's
// apic_internal.h: `static_assert(offsetof(Bounds, size) == ...)` in a constexpr template), and
// the driver API's function pointer types from <cudaTypedefs.h>, which includes <cuda.h> and
// reached the toolkit's own through it: with "host_code": "skip" the file compiles. The offsets
// asserted are the host compiler's for the same structs; one wrong by a byte fails.
struct OffsetInner {
  int x, y;
};
struct OffsetOuter {
  int a;
  double b;
  char c[10];
  OffsetInner in;
};
template <int N>
struct OffsetBounds {
  int shape[N];
  size_t size;
};

TEST(KernelSpec, ConstantOffsetofAndTheDriversPointerTypesCompile) {
  SpecDir d;
  const auto source = [](size_t bias) {
    return "#include <cstddef>\n#include <cudaTypedefs.h>\n"
           "struct Inner { int x, y; };\nstruct Outer { int a; double b; char c[10]; Inner in; };\n"
           "template <int N> struct Bounds { int shape[N]; size_t size; };\n"
           "template <int N> constexpr bool layout_matches(size_t want) {\n"
           "  static_assert(offsetof(Bounds<N>, size) == " + std::to_string(offsetof(OffsetBounds<3>, size) + bias) + ", \"size\");\n"
           "  return offsetof(Bounds<N>, size) == want;\n}\n"
           "static_assert(layout_matches<3>(" + std::to_string(offsetof(OffsetBounds<3>, size)) + "), \"Bounds<3>\");\n"
           "static_assert(offsetof(Outer, b) == " + std::to_string(offsetof(OffsetOuter, b)) + ", \"b\");\n"
           "static_assert(offsetof(Outer, c[3]) == " + std::to_string(offsetof(OffsetOuter, c) + 3) + ", \"c[3]\");\n"
           "static_assert(offsetof(Outer, in.y) == " + std::to_string(offsetof(OffsetOuter, in) + offsetof(OffsetInner, y)) + ", \"in.y\");\n"
           "static_assert(sizeof(PFN_cuInit_v2000) == sizeof(void*), \"a function pointer\");\n"
           "template <int B> __global__ void k(const float* x, float* y, int n) {\n"
           "  const int i = blockIdx.x * B + threadIdx.x;\n  if (i < n) y[i] = x[i] * float(offsetof(Outer, in.y));\n}\n"
           "__global__ void ref(const float* x, float* y, int n) {}\n";
  };
  d.write("offsets.cu", source(0));
  d.write("wrong.cu", source(1));
  const ojson spec = ojson::parse(R"JSON({
    "name": "constant_offsetof", "sources": ["offsets.cu"], "host_code": "skip", "kernel": "k<{B}>", "params_as": "template", "dims": ["n"],
    "params": {"B": [64]}, "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"reference": {"kernel": "ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
  const std::string op = load_kernel_spec_text(spec.dump(), "constant_offsetof.json", d.dir());
  Compiler compiler;
  EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"B", 64}}, Problem::parse(op, "1000"), "sm_90")));
  ojson wrong = spec;
  wrong["name"] = "constant_offsetof_wrong";
  wrong["sources"] = {"wrong.cu"};
  const std::string off_by_one = load_kernel_spec_text(wrong.dump(), "constant_offsetof_wrong.json", d.dir());
  if (const auto e = compile_failure(compiler, off_by_one, Config{{"B", 64}}, Problem::parse(off_by_one, "1000"),
                                     "a static_assert on an offset one byte off"))
    EXPECT_NE(e->log().find("static assertion failed"), std::string::npos) << e->log();
}


// The spec's `defines` and its options' -D reach the reading of its sources under skip: HOOMD-
// blue's headers hold their host classes in `#ifdef ENABLE_HIP`, which its build defines and the
// reading took for another GPU maker's flag; their host constructors stayed and NVRTC refused
// them. Defined either way, the file compiles.
TEST(KernelSpec, TheSpecsDefinesReachTheReadingOfItsSources) {
  SpecDir d;
  d.write("part.cu", R"CUDA(#ifdef ENABLE_HIP
#include <vector>
class Partition {
 public:
  Partition() : n_(0) { }
  explicit Partition(const std::vector<unsigned int>& ids) : n_(static_cast<unsigned int>(ids.size())) { }
  unsigned int size() const { return n_; }
 private:
  unsigned int n_;
};
#endif
template <int B> __global__ void k(const float* x, float* y, int n) { const int i = blockIdx.x * B + threadIdx.x; if (i < n) y[i] = x[i]; }
__global__ void ref(const float* x, float* y, int n) { const int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }
)CUDA");
  ojson spec = ojson::parse(R"JSON({
    "name": "hip_guarded_host_class", "sources": ["part.cu"], "host_code": "skip", "kernel": "k<{B}>", "params_as": "template", "dims": ["n"],
    "params": {"B": [64]}, "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]}, "defines": {"ENABLE_HIP": 1},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"reference": {"kernel": "ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
  Compiler compiler;
  const std::string by_defines = load_kernel_spec_text(spec.dump(), "hip_guarded_host_class.json", d.dir());
  EXPECT_NO_THROW(compiler.compile(compile_request(find_family(by_defines), Config{{"B", 64}}, Problem::parse(by_defines, "1000"), "sm_90")));
  spec.erase("defines");
  spec["name"] = "hip_guarded_host_class_option";
  spec["options"] = {"-DENABLE_HIP"};
  const std::string by_option = load_kernel_spec_text(spec.dump(), "hip_guarded_host_class_option.json", d.dir());
  EXPECT_NO_THROW(compiler.compile(compile_request(find_family(by_option), Config{{"B", 64}}, Problem::parse(by_option, "1000"), "sm_90")));
}


// A solver library's host side as AMGX writes it, under skip: Thrust wrapped in the project's
// namespace (-DTHRUST_CUB_WRAPPED_NAMESPACE=amgx, then `amgx::thrust::device_ptr<T>`), a container
// on Thrust's `detail::vector_base` (its bundled CUSP's array1d), a host class pointing to a
// `std::type_info`, `std::string` after <iostream> alone, and an enum of another header returned
// by a host member (`AMGX_ERROR parseFile(const char*);`, its ALL_CAPS name no macro once the
// project's files declare it): the file compiles with its kernel.
TEST(KernelSpec, AWrappedThrustAndTheHostLibrarysTypesCompileWhereHostCodeIsSkipped) {
  SpecDir d;
  d.write("error.h", "#pragma once\nenum APP_ERROR { APP_OK = 0, APP_BAD = 1 };\n");
  d.write("config.h", R"CUDA(#pragma once
#include <iostream>
#include <map>
#include <typeinfo>
#include "error.h"
struct Description {
  const std::type_info* type;
  std::string name;
};
class Config {
 public:
  Config();
  APP_ERROR parseFile(const char* filename);
 private:
  std::map<std::string, Description> params_;
};
)CUDA");
  d.write("solver.cu", R"CUDA(#include <thrust/device_ptr.h>
#include <thrust/detail/vector_base.h>
#include "config.h"
namespace app {
template <typename T, typename Alloc>
class array1d : public thrust::detail::vector_base<T, Alloc> {
 public:
  array1d() {}
  explicit array1d(int n) : thrust::detail::vector_base<T, Alloc>(n) {}
};
}
struct Buffers {
  app::thrust::device_ptr<float> values;
  app::array1d<float, int> column;
  Config config;
};
template <int B> __global__ void k(const float* x, float* y, int n) { const int i = blockIdx.x * B + threadIdx.x; if (i < n) y[i] = 2.f * x[i]; }
__global__ void ref(const float* x, float* y, int n) { const int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.f * x[i]; }
)CUDA");
  const ojson spec = ojson::parse(R"JSON({
    "name": "wrapped_thrust_host_types", "sources": ["solver.cu"], "host_code": "skip", "kernel": "k<{B}>", "params_as": "template", "dims": ["n"],
    "params": {"B": [64]}, "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]}, "options": ["-DTHRUST_CUB_WRAPPED_NAMESPACE=app"],
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"reference": {"kernel": "ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
  const std::string op = load_kernel_spec_text(spec.dump(), "wrapped_thrust_host_types.json", d.dir());
  Compiler compiler;
  EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"B", 64}}, Problem::parse(op, "1000"), "sm_90")));
}


// A copy of CCCL a project carries on its include path, newer than the toolkit's (FlashInfer's
// 3rdparty/cccl, laid out as CCCL's repository: libcudacxx/include, cub, thrust; here the
// toolkit's own copied so): its headers are a library's, read as the toolkit's are, not blanked as
// the project's under skip (which took libcu++'s `extern _Tp __cccl_make_dependent;` for a host
// variable and broke its concepts), and ktune's views of Thrust's host side are made from the copy:
// a host-side header only the copy holds is stood in for (made from the toolkit's, it would reach
// NVRTC as it is, host code and all), and cub.cuh's view passes CCCL 3.3's check that refuses NVRTC
// (for the host parts the view leaves out).
TEST(KernelSpec, ACopyOfCcclOnTheIncludePathIsReadAsTheToolkitsIs) {
  const std::string cccl = cuda_include_dir() + "/cccl";
  if (cuda_include_dir().empty() || !fs::is_directory(cccl + "/cuda/std")) GTEST_SKIP() << "no CCCL folder in CUDA's include folder to copy";
  SpecDir d;
  const fs::path copy = fs::path(d.dir()) / "3rdparty" / "cccl";
  for (const auto& [from, to] : {std::pair<const char*, const char*>{"cuda", "libcudacxx/include/cuda"}, {"nv", "libcudacxx/include/nv"},
                                 {"cub", "cub/cub"}, {"thrust", "thrust/thrust"}}) {
    fs::create_directories((copy / to).parent_path());
    fs::copy(cccl + "/" + from, copy / to, fs::copy_options::recursive);
  }
  d.write("3rdparty/cccl/thrust/thrust/copy_only.h", "#pragma once\n#include <vector>\ninline std::vector<int> copy_only() { return {}; }\n");
  // CCCL 3.3's cub.cuh refuses NVRTC for its host parts, which ktune's view of it leaves out.
  {
    const fs::path cub = copy / "cub/cub/cub.cuh";
    std::ifstream in(cub);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    const size_t at = text.find("#include <cub/config.cuh>");
    ASSERT_NE(at, std::string::npos);
    text.insert(text.find('\n', at) + 1, "#ifndef CCCL_DISABLE_CUB_NVRTC_COMPATIBILITY_CHECK\n#  if defined(__CUDACC_RTC__)\n"
                                          "#    error \"Including <cub/cub.cuh> is not supported when compiling with NVRTC.\"\n#  endif\n#endif\n");
    std::ofstream(cub) << text;
  }
  d.write("norm.cu", R"CUDA(#include <thrust/device_vector.h>
#include <thrust/sort.h>
#include <thrust/copy_only.h>
#include <cub/cub.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda/std/concepts>
#include <vector>
template <class T, cuda::std::enable_if_t<cuda::std::floating_point<T>, int> = 0>
__device__ T twice(T v) { return v + v; }
template <int B> __global__ void k(const float* x, float* y, int n) {
  using R = cub::BlockReduce<float, B>;
  __shared__ typename R::TempStorage t;
  const int i = blockIdx.x * B + threadIdx.x;
  const float s = R(t).Sum(i < n ? x[i] : 0.f);
  if (threadIdx.x == 0) y[blockIdx.x] = twice(s);
}
__global__ void ref(const float* x, float* y, int n) {}
void sort_on_the_host(thrust::device_vector<float>& v) { thrust::sort(v.begin(), v.end()); std::vector<int> h = copy_only(); }
)CUDA");
  ojson spec = ojson::parse(R"JSON({
    "name": "cccl_copy", "sources": ["norm.cu"], "host_code": "skip", "kernel": "k<{B}>", "params_as": "template", "dims": ["n"],
    "params": {"B": [128]}, "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "ceil_div(n, 128)", "intent": "out"},
             {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"reference": {"kernel": "ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
  spec["include_dirs"] = {(copy / "libcudacxx/include").string(), (copy / "cub").string(), (copy / "thrust").string()};
  const std::string op = load_kernel_spec_text(spec.dump(), "cccl_copy.json", d.dir());
  Compiler compiler;
  try {
    compiler.compile(compile_request(find_family(op), Config{{"B", 128}}, Problem::parse(op, "1000"), "sm_90"));
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
}

// An object-like macro whose replacement is a pragma directive, in a header and in the source
// (moderngpu's meta.hxx: `#define PRAGMA_UNROLL #pragma unroll` under __CUDA_ARCH__): nvcc's
// separate preprocessor writes the directive on the macro's line, NVRTC refused the '#'. Under
// skip the macro is the _Pragma operator of it, quotes and backslashes escaped, and the file
// compiles; a function-like macro and a line continued are left as they are.
TEST(KernelSpec, AMacroThatWritesAPragmaCompilesWhereHostCodeIsSkipped) {
  SpecDir d;
  d.write("meta.h", "#pragma once\n#ifdef __CUDA_ARCH__\n  #define PRAGMA_UNROLL #pragma unroll\n#else\n  #define PRAGMA_UNROLL\n#endif\n");
  d.write("sum.cu", R"CUDA(#include "meta.h"
#define UNROLL_4 #pragma unroll 4
#define NOTE #pragma message("a \"quoted\" note")
template <int B> __global__ void k(const float* x, float* y, int n) {
  const int i = blockIdx.x * B + threadIdx.x;
  if (i >= n) return;
  float s = 0.f;
  PRAGMA_UNROLL
  for (int j = 0; j < 4; ++j) s += x[i] * float(j);
  UNROLL_4
  for (int j = 0; j < 8; ++j) s += 1.f;
  y[i] = s;
}
NOTE
__global__ void ref(const float* x, float* y, int n) { const int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 6.f * x[i] + 8.f; }
)CUDA");
  const ojson spec = ojson::parse(R"JSON({
    "name": "pragma_macros", "sources": ["sum.cu"], "host_code": "skip", "kernel": "k<{B}>", "params_as": "template", "dims": ["n"],
    "params": {"B": [64]}, "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"reference": {"kernel": "ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
  const std::string op = load_kernel_spec_text(spec.dump(), "pragma_macros.json", d.dir());
  EXPECT_NE(spec_of(op).source.find("#define UNROLL_4 _Pragma(\"unroll 4\")"), std::string::npos) << spec_of(op).source;
  EXPECT_NE(spec_of(op).source.find("#define NOTE _Pragma(\"message(\\\"a \\\\\\\"quoted\\\\\\\" note\\\")\")"), std::string::npos) << spec_of(op).source;
  EXPECT_EQ(with_pragma_operators("#define F(x) #x\n#define G \\\n  #pragma unroll\n"), "#define F(x) #x\n#define G \\\n  #pragma unroll\n");
  Compiler compiler;
  EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"B", 64}}, Problem::parse(op, "1000"), "sm_90")));
}


// A host library's headers as dmlc-core and xgboost write them, under skip: a host class holding
// a `std::exception_ptr`, a map keyed by `std::type_index`, a stream class on
// `std::basic_ostream<char>`, `std::hash` specialized after <string> alone (libstdc++'s brings
// it), a `std::error_code` a host class holds (xgboost's collective Result), a member initialized by
// `std::make_shared`, the sockets' types and constants with a using-declaration of the C library's
// `::inet_ntop` (xgboost's collective socket.h), a base `std::enable_shared_from_this<T>`, a `std::mt19937` alias, a host class holding `std::bernoulli_distribution` (a class, not a
// template: CUTLASS's tensor_fill.h) and an engine of the template's own non-type arguments, an allocator on `thrust::device_malloc_allocator<T>` naming its
// member types, and a constexpr string view whose constructor calls `char_traits::length`,
// which device code runs: the file compiles with its kernel.
TEST(KernelSpec, AHostLibrarysStandardTypesCompileWhereHostCodeIsSkipped) {
  SpecDir d;
  d.write("lib.h", R"CUDA(#pragma once
#include <exception>
#include <mutex>
#include <typeindex>
#include <unordered_map>
#include <ostream>
#include <random>
#include <string>
#include <system_error>
#include <memory>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
namespace lib {
namespace system {
using ::inet_ntop;
}
enum class SockDomain : int { kV4 = AF_INET, kV6 = AF_INET6 };
class SockAddrV6 {
  sockaddr_in6 addr_;
 public:
  explicit SockAddrV6(sockaddr_in6 addr) : addr_{addr} {}
  in_port_t Port() const { return ntohs(addr_.sin6_port); }
};
class Comm : public std::enable_shared_from_this<Comm> {
  pollfd fds_[2];
 public:
  void Run();
};
struct Result {
  std::string message;
  std::error_code errc{};
  explicit Result(std::string msg, std::error_code e) : message{msg}, errc{e} {}
  bool TimedOut() const { return errc == std::errc::timed_out; }
};
class Matrix {
  std::shared_ptr<int> page_ = std::make_shared<int>();
 public:
  int* Page() const { return page_.get(); }
};
class OMPException {
  std::exception_ptr omp_exception_;
  std::mutex mutex_;
 public:
  void Rethrow() { if (omp_exception_) std::rethrow_exception(omp_exception_); }
};
class Registry {
  std::unordered_map<std::type_index, std::string> type_name_;
};
class ostream : public std::basic_ostream<char> {
 public:
  explicit ostream(int size) : std::basic_ostream<char>(nullptr), size_(size) {}
 private:
  int size_;
};
template <typename T> struct optional { T v; bool set; };
using RandomEngine = std::mt19937;
class Filler {
  std::bernoulli_distribution coin_;
  std::uniform_real_distribution<> u_;
  std::mersenne_twister_engine<unsigned, 32, 624, 397, 31, 0x9908b0dfu, 11, 0xffffffffu, 7, 0x9d2c5680u, 15, 0xefc60000u, 18, 1812433253u> e_;
 public:
  bool flip() { return coin_(e_); }
};
struct StringView {
  using Traits = std::char_traits<char>;
  const char* str_;
  unsigned long size_;
  constexpr StringView(const char* s) : str_{s}, size_{s == nullptr ? 0ul : Traits::length(s)} {}
};
}
namespace std {
template <typename T> struct hash<lib::optional<T>> {
  size_t operator()(const lib::optional<T>& o) const { return o.set ? std::hash<T>()(o.v) : 0; }
};
}
)CUDA");
  d.write("k.cu", R"CUDA(#include <thrust/device_malloc_allocator.h>
#include "lib.h"
template <typename T>
class PoolAllocator : public thrust::device_malloc_allocator<T> {
 public:
  using Super = thrust::device_malloc_allocator<T>;
  using pointer = typename Super::pointer;
  pointer allocate(size_t n) { return Super::allocate(n); }
};
template <int B> __global__ void k(const float* x, float* y, int n) {
  const int i = blockIdx.x * B + threadIdx.x;
  if (i < n) y[i] = x[i] * float(lib::StringView("four").size_);
}
__global__ void ref(const float* x, float* y, int n) { const int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 4.f * x[i]; }
)CUDA");
  const ojson spec = ojson::parse(R"JSON({
    "name": "host_library_standard_types", "sources": ["k.cu"], "host_code": "skip", "kernel": "k<{B}>", "params_as": "template", "dims": ["n"],
    "params": {"B": [64]}, "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"reference": {"kernel": "ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
  const std::string op = load_kernel_spec_text(spec.dump(), "host_library_standard_types.json", d.dir());
  Compiler compiler;
  std::shared_ptr<const CompiledKernel> k;
  ASSERT_NO_THROW(k = compiler.compile(compile_request(find_family(op), Config{{"B", 64}}, Problem::parse(op, "1000"), "sm_90")));
  EXPECT_EQ(k->log.find("left out"), std::string::npos) << "the stand-ins' types are complete: " << k->log;
}


// A project's headers test nvcc's __NVCC__ for "compiled by the CUDA compiler" (xgboost's base.h:
// `#if defined(__CUDA__) || defined(__NVCC__)` then `#define XGBOOST_DEVICE __host__ __device__`,
// else nothing): nvcc defines it in its device pass too, NVRTC does not, and the members device
// code calls went as host functions. Under skip the project's files read it as defined (#ifdef,
// #ifndef, defined() and the word alone); the toolkit's headers do not. With them: glibc's
// __assert_fail, which nvcc declares for device code and a project's device assert calls; Thrust's
// fancy iterators after its host-side headers alone (xgboost's thrust::transform_iterator after
// <thrust/device_vector.h>); CUB's dispatch enums after a device-wide algorithm's header
// (`cub::SortOrder`).
TEST(KernelSpec, AProjectsFilesReadNvccAsDefinedWhereHostCodeIsSkipped) {
  SpecDir d;
  d.write("base.h", R"CUDA(#pragma once
#if defined(__CUDA__) || defined(__NVCC__)
#define LIB_DEVICE __host__ __device__
#else
#define LIB_DEVICE
#endif
#ifdef __NVCC__
#define LIB_SCALE 3
#endif
#ifndef __NVCC__
#error "not compiled by the CUDA compiler"
#endif
#if __NVCC__ && defined ( __NVCC__ ) && \
    !defined __NVCC__
#error "continued condition misread"
#endif
#define CHECK(cond) ((cond) ? static_cast<void>(0) : __assert_fail(#cond, __FILE__, __LINE__, __PRETTY_FUNCTION__))
struct Pair {
  float g;
  LIB_DEVICE float Scaled() const { CHECK(g == g); return LIB_SCALE * g; }
};
)CUDA");
  d.write("k.cu", R"CUDA(#include <thrust/device_vector.h>
#include <cub/device/device_radix_sort.cuh>
#include "base.h"
struct Twice { __host__ __device__ float operator()(float v) const { return 2.f * v; } };
template <int B> __global__ void k(const float* x, float* y, int n) {
  const int i = blockIdx.x * B + threadIdx.x;
  if (i >= n) return;
  thrust::transform_iterator<Twice, const float*> t(x, Twice());
  const float order = cub::SortOrder::Ascending == cub::SortOrder::Ascending ? 1.f : 0.f;
  y[i] = Pair{t[i]}.Scaled() * order;
}
__global__ void ref(const float* x, float* y, int n) { const int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 6.f * x[i]; }
)CUDA");
  ojson spec = ojson::parse(R"JSON({
    "name": "nvcc_defined", "sources": ["k.cu"], "host_code": "skip", "kernel": "k<{B}>", "params_as": "template", "dims": ["n"],
    "params": {"B": [64]}, "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"reference": {"kernel": "ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
  const std::string op = load_kernel_spec_text(spec.dump(), "nvcc_defined.json", d.dir());
  Compiler compiler;
  EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"B", 64}}, Problem::parse(op, "1000"), "sm_90")));
  EXPECT_EQ(with_nvcc_defined("#if defined(__NVCC__) || X\n#ifdef __NVCC__ // c\n#ifndef __NVCC__\n#if !defined __NVCC__\nint __NVCC__x;\n#define Y __NVCC__\n"),
            "#if 1 || X\n#if 1 // c\n#if 0\n#if !1\nint __NVCC__x;\n#define Y __NVCC__\n");
  // Compiled as it is, the header is the file on disk: NVRTC defines no __NVCC__.
  spec.erase("host_code");
  spec["name"] = "nvcc_not_defined";
  const std::string as_is = load_kernel_spec_text(spec.dump(), "nvcc_not_defined.json", d.dir());
  EXPECT_THROW(compiler.compile(compile_request(find_family(as_is), Config{{"B", 64}}, Problem::parse(as_is, "1000"), "sm_90")), CompileError);
}


// A spec's constant defines and its options' -D are the project's build's: a source that defines
// one again compiles (its #define wins, as under nvcc), and the family says which they are. A
// define that reads a parameter carries the config's value: its redefinition stays refused.
TEST(KernelSpec, ASourceMayRedefineTheSpecsConstantDefines) {
  SpecDir d;
  d.write("k.cu", "#define PLATFORM_NV\n#define FROM_OPTION 2\n#define SCALED 7\n"
                  "template <int B> __global__ void k(float* y, int n) { const int i = blockIdx.x * B + threadIdx.x; if (i < n) y[i] = 1.f; }\n");
  ojson spec = ojson::parse(R"JSON({
    "name": "build_macros", "sources": ["k.cu"], "kernel": "k<{B}>", "params_as": "template", "dims": ["n"],
    "params": {"B": [64]}, "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]}, "defines": {"PLATFORM_NV": 1}, "options": ["-DFROM_OPTION=3"],
    "args": [{"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"}, {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"none": "compile probe"}})JSON");
  const std::string op = load_kernel_spec_text(spec.dump(), "build_macros.json", d.dir());
  EXPECT_EQ(find_family(op).build_macros(), (std::set<std::string>{"PLATFORM_NV", "FROM_OPTION"}));
  Compiler compiler;
  EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"B", 64}}, Problem::parse(op, "1000"), "sm_90")));
  spec["name"] = "config_macro";
  spec["defines"]["SCALED"] = "B * 2";
  const std::string config = load_kernel_spec_text(spec.dump(), "config_macro.json", d.dir());
  EXPECT_THROW(compiler.compile(compile_request(find_family(config), Config{{"B", 64}}, Problem::parse(config, "1000"), "sm_90")), CompileError);
}


// A host class's data member whose type a library declares for host compilers only (CUTLASS's
// DeviceAllocation holds a `platform::unique_ptr<T, deleter>`, which platform.h declares where
// __CUDACC_RTC__ is not defined; every CUTLASS example includes it through util/device_memory.h):
// under skip the member goes where NVRTC refuses it, and the file compiles, its log saying so. A
// host class whose data device code reads (an argument struct with a host constructor) keeps its
// members. Device code that names a member that went fails, the log saying what went.
TEST(KernelSpec, AHostClassesMemberOfATypeNvrtcLacksGoes) {
  SpecDir d;
  d.write("lib/platform.h", R"CUDA(#pragma once
namespace lib { namespace platform {
#if !defined(__CUDACC_RTC__)
template <class T, class D> class unique_ptr {
  T* p_;
 public:
  unique_ptr(T* p = nullptr) : p_(p) {}
  ~unique_ptr() { if (p_) D()(p_); }
  T* get() const { return p_; }
};
#endif
} }
)CUDA");
  d.write("lib/alloc.h", R"CUDA(#pragma once
#include <cuda_runtime.h>
#include "platform.h"
namespace lib {
template <typename T> class DeviceAllocation {
 public:
  struct deleter { void operator()(T* p) { cudaFree(p); } };
  size_t capacity;
  platform::unique_ptr<T, deleter> smart_ptr;
  DeviceAllocation() : capacity(0) {}
  T* get() const { return smart_ptr.get(); }
};
struct Args {
  const float* x;
  float scale;
  Args(const DeviceAllocation<float>& a, float s) : x(a.get()), scale(s) {}
};
}
)CUDA");
  d.write("k.cu", R"CUDA(#include "lib/alloc.h"
__global__ void k(const lib::Args* a, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a->x[i] * a->scale;
}
int main() { lib::DeviceAllocation<float> x; return 0; }
)CUDA");
  d.write("bad.cu", R"CUDA(#include "lib/alloc.h"
__global__ void k(const lib::DeviceAllocation<float>* a, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = float(sizeof(a->smart_ptr)) + float(a->capacity);
}
)CUDA");
  auto spec_for = [&](const char* source) {
    ojson spec = ojson::parse(R"JSON({
      "host_code": "skip", "kernel": "k", "dims": ["n"], "params": {"UNTUNED": [0]}, "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]},
      "args": [{"name": "a", "kind": "buffer", "dtype": "u8", "count": 64}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
               {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
      "check": {"none": "compile only"}})JSON");
    spec["name"] = std::string("host_data_") + source[0];
    spec["sources"] = {source};
    return load_kernel_spec_text(spec.dump(), spec["name"].get<std::string>() + ".json", d.dir());
  };
  Compiler compiler;
  const std::string op = spec_for("k.cu");
  std::shared_ptr<const CompiledKernel> k;
  ASSERT_NO_THROW(k = compiler.compile(compile_request(find_family(op), Config{{"UNTUNED", 0}}, Problem::parse(op, "1000"), "sm_90")));
  EXPECT_NE(k->log.find("compiled with 1 data member(s) of host classes left out, which NVRTC refused (lib/alloc.h(9): error"), std::string::npos) << k->log;
  const std::string bad = spec_for("bad.cu");
  if (const auto e = compile_failure(compiler, bad, Config{{"UNTUNED", 0}}, Problem::parse(bad, "1000"), "device code reads a member that went")) {
    EXPECT_NE(e->log().find("compiled again with 1 data member(s) of host classes left out"), std::string::npos) << e->log();
    EXPECT_NE(e->log().find("smart_ptr"), std::string::npos) << e->log();
  }
  // The drop itself: the member a log's error points at, over its lines, and no other.
  const std::string begin = kHostDataBegin, end = kHostDataEnd;
  std::string text = "struct A {\n  " + begin + "int n;" + end + "\n  " + begin + "Missing<T,\n    D> p;" + end + "\n  " + begin + "int m;" + end + "\n};\n";
  const std::string before = text;
  std::string first;
  EXPECT_EQ(drop_refused_host_data("a.h(4): error: identifier \"D\" is undefined\nother.h(4): error: x", {{"a.h", &text}}, &first), 1u);
  EXPECT_EQ(first, "a.h(4): error: identifier \"D\" is undefined");
  EXPECT_EQ(text, "struct A {\n  " + begin + "int n;" + end + "\n  " + std::string(begin.size() + 10, ' ') + "\n" + std::string(9 + end.size(), ' ') +
                      "\n  " + begin + "int m;" + end + "\n};\n");
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), std::count(before.begin(), before.end(), '\n'));
  EXPECT_EQ(drop_refused_host_data("a.h(1): error: x\na.h(6): error: y", {{"a.h", &text}}), 0u);
}


// std::max and std::min, which nvcc's implicit headers declare, named by a header with no include
// of <algorithm> (CUTLASS's sm100 epilogues: `std::max(StagesC, StagesD)` in a constant
// expression; its platform.h includes <algorithm> only for host compilers): the prelude names
// libcu++'s in std. A global `using namespace std;` then leaves device code's unqualified max and
// min on floats and ints CUDA's, not ambiguous. Under skip, a lambda's execution space in code that
// stays (xgboost's `[=] XGBOOST_DEVICE(uint64_t i) {...}`, which nvcc takes with --extended-lambda)
// goes: NVRTC refuses any. So are <utility> and <type_traits>, which nvcc's cuda_runtime.h
// includes: a file whose includes bring neither names std::enable_if_t, std::is_same_v,
// std::forward and std::pair (TensorRT's disentangled attention kernel). And <limits>, which
// libstdc++'s <cmath> brings there: std::numeric_limits after CUDA's own headers alone (FlashInfer's
// mamba conversion.cuh).
TEST(KernelSpec, StdMaxAndMinAreThereAsNvccsImplicitHeadersGiveThem) {
  SpecDir d;
  d.write("k.cu", R"CUDA(template <int A, int B> struct Stages { static constexpr int kMost = std::max(A, B), kLeast = std::min(A, B); };
__global__ void k(float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = float(Stages<2, 5>::kMost * 10 + Stages<2, 5>::kLeast);
}
)CUDA");
  d.write("lam.cu", R"CUDA(#define LIB_DEVICE __host__ __device__
template <class F> __host__ __device__ int apply(F f, int i) { return f(i); }
LIB_DEVICE int twice_plus(int k, int i) { return apply([=] LIB_DEVICE(int j) { return 2 * j + k; }, i); }
__global__ void k(float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = float(twice_plus(std::max(1, 0), i) + apply([=] __device__ (int j) { return j; }, i));
}
)CUDA");
  d.write("t.cu", R"CUDA(#include <cstdint>
template <typename T, std::enable_if_t<std::is_same_v<std::decay_t<T>, float>, T>* = nullptr>
__device__ T scaled(T x) { return std::forward<T>(x) * T(2); }
__global__ void k(float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const std::pair<int, float> p{i, 1.f};
  if (i < n) y[i] = scaled(p.second);
}
)CUDA");
  d.write("l.cu", R"CUDA(#include <cuda_fp16.h>
#include <cuda_bf16.h>
__device__ float clipped(float x) {
  constexpr float most = static_cast<float>(std::numeric_limits<short>::max());
  return fminf(fmaxf(x, -most), most);
}
__global__ void k(float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = clipped(y[i]);
}
)CUDA");
  d.write("u.cu", R"CUDA(using namespace std;
constexpr int kMost = std::max(3, 4);
__global__ void k(float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = max(y[i], 1.f) + float(min(i, kMost));
}
)CUDA");
  Compiler compiler;
  for (const char* source : {"k.cu", "u.cu", "lam.cu", "t.cu", "l.cu"}) {
    SCOPED_TRACE(source);
    ojson spec = ojson::parse(R"JSON({
      "kernel": "k", "dims": ["n"], "params": {"UNTUNED": [0]}, "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]},
      "args": [{"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"}, {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
      "check": {"none": "compile only"}})JSON");
    spec["name"] = std::string("std_max_") + source[0];
    spec["sources"] = {source};
    if (source == std::string("lam.cu")) spec["host_code"] = "skip";
    const std::string op = load_kernel_spec_text(spec.dump(), spec["name"].get<std::string>() + ".json", d.dir());
    EXPECT_NO_THROW(compiler.compile(compile_request(find_family(op), Config{{"UNTUNED", 0}}, Problem::parse(op, "1000"), "sm_90")));
  }
}

} // namespace ktune
