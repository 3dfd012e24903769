// User kernel specs on a GPU: the spec runner rejects planted wrong kernels (a missed element, a
// write past the end, a write into an input, an error beyond the tolerance, symbols not filled)
// and passes the right one; each example in examples/kernels/ is tuned by `ktune tune` (the real
// worker process), answered exactly by query, and served through the runtime (exact and first
// use) and ktune::Kernel::launch and the C API; a changed source is tuned afresh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/kernel_spec.h"
#include "gpu_env.h"
#include "tma_spec.h"
#include "toolkit_headers_spec.h"
#include "project_spec.h"
#include "using_std_spec.h"
#include "thrust_seq_spec.h"
#include "torch_extension_spec.h"
#include "ktune/compiler.h"
#include "ktune/family.h"
#include "ktune/kernel_spec.h"
#include "ktune/ktune.h"
#include "ktune/runtime.h"
#include "runtime/buffers_launch.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/module.h"
#include "runtime/timing.h"
#include "test_paths.h"
#include "tuner/op_runner.h"
#include "tuner/spec_op.h"

using namespace ktune;
namespace fs = std::filesystem;

namespace {

std::string example(const std::string& name) {
  return std::string(KTUNE_SOURCE_DIR) + "/examples/kernels/" + name + "/" + name + ".json";
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) : path(fs::temp_directory_path() / ("ktune_" + tag + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// One config of a user kernel compiled, loaded and checked as served and as timed; each check
// launches it `launches` times (a second launch finds what the first left behind).
VerifyResult check_config(OpRunner& runner, Compiler& compiler, const DeviceInfo& d, const std::string& op, const Config& c,
                          const Problem& p, uint64_t seed, int launches = 1) {
  const Family f = find_family(op);
  const auto k = compiler.compile(compile_request(f, c, p, d.arch));
  Module m(k->cubin, k->lowered_names, op + " " + c.to_json());
  const LaunchPlan plan = f.launch_plan(c, p);
  return check_as_served_and_timed(runner, p, seed, Numerics::standard, [&](CUstream s) {
    for (int i = 0; i < launches; ++i) runner.launch(m, plan, s);
  });
}

// A kernel whose FAULT parameter plants one mistake (0: none). Its spec checks it against
// scale_ref; d_a is a __constant__ copy of the one-element buffer `a` (FAULT 0 passing shows it
// was filled).
constexpr const char* kPlantedSource = R"CUDA(
__constant__ float d_a[1];
template <int FAULT>
__global__ void planted(const float* x, const float* a, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int last = FAULT == 1 ? n - 1 : FAULT == 2 ? n + 1 : n;
  if (i >= last) return;
  float v = d_a[0] * x[i];
  if (FAULT == 4 && i == 7) v *= 1.001f;
  if (FAULT == 5) v = x[i]; // the scale ignored
  y[i] = v;
  if (FAULT == 3 && i == 0) const_cast<float*>(x)[0] = 0;
}
__global__ void scale_ref(const float* x, const float* a, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a[0] * x[i];
}
)CUDA";

constexpr const char* kPlantedSpec = R"JSON({
  "name": "planted", "sources": ["planted.cu"], "kernel": "planted<{FAULT}>", "params_as": "template",
  "dims": ["n"], "params": {"FAULT": [0, 1, 2, 3, 4, 5]},
  "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
           {"name": "a", "kind": "buffer", "dtype": "f32", "count": 1, "fill": {"random": [0.5, 2]}},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out", "rtol": 1e-6, "atol": 0},
           {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
  "symbols": [{"name": "d_a", "from": "a"}],
  "check": {"reference": {"kernel": "scale_ref", "launch": {"grid": ["ceil_div(n, 256)"], "block": [256]}}}
})JSON";

// The runtime's call of a spec of rounds x <- 0.5 x + t + 1 on the caller's x (its other buffers
// the spec's own): three rounds from 2 give 2, 3, 4.5.
void expect_three_rounds_from_two(const std::string& op, const std::string& db) {
  RuntimeOptions o;
  o.db_path = db;
  Runtime rt(o);
  std::vector<float> hx(1000, 2.f);
  DeviceBuffer dx(hx.size() * 4, "x");
  check_cu(driver().cuMemcpyHtoD(dx.ptr(), hx.data(), hx.size() * 4), "cuMemcpyHtoD", "x");
  rt.run(Problem::parse(op, "1000x3"), {reinterpret_cast<void*>(dx.ptr())}, nullptr);
  check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", "rounds");
  check_cu(driver().cuMemcpyDtoH(hx.data(), dx.ptr(), hx.size() * 4), "cuMemcpyDtoH", "x");
  EXPECT_EQ(hx[0], 4.5f);
  EXPECT_EQ(hx[999], 4.5f);
}

} // namespace

TEST(KernelSpecGpu, PlantedWrongKernelsAreRejectedAndTheRightOnePasses) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_planted");
  std::ofstream(dir.file("planted.cu")) << kPlantedSource;
  std::ofstream(dir.file("planted.json")) << kPlantedSpec;
  const std::string op = load_kernel_spec(dir.file("planted.json"));
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  const Problem p = Problem::parse(op, "100003");
  auto check = [&](int fault) { return check_config(*runner, compiler, *d, op, Config{{"FAULT", fault}}, p, 5); };
  const VerifyResult ok = check(0);
  EXPECT_TRUE(ok.pass) << ok.summary();
  EXPECT_NE(ok.conditions.find("as timed"), std::string::npos) << "both checks ran: " << ok.summary();
  const VerifyResult skips = check(1);
  EXPECT_FALSE(skips.pass);
  EXPECT_EQ(skips.nonfinite, 1u) << skips.summary();
  const VerifyResult past = check(2);
  EXPECT_FALSE(past.pass);
  EXPECT_GT(past.guard_writes, 0u) << past.summary();
  const VerifyResult into = check(3);
  EXPECT_FALSE(into.pass);
  EXPECT_GT(into.input_writes, 0u) << into.summary();
  const VerifyResult off = check(4);
  EXPECT_FALSE(off.pass) << "one element 1e-3 off, rtol 1e-6";
  EXPECT_EQ(off.violations, 1u) << off.summary();
  EXPECT_EQ(off.worst_index, 7) << off.summary();
  const VerifyResult unscaled = check(5);
  EXPECT_FALSE(unscaled.pass);
  EXPECT_GT(unscaled.violations, 100000u) << unscaled.summary();
}

// A two-step launch whose steps take their own arguments, with a temporary and a scalar sized by
// the config (examples/kernels/l2norm): right at configs of 64 to 65536 floats a block, as timed
// and as served; and a spec that tells the second step one partial fewer than the first writes is
// rejected where a block's share of the norm is past the rtol (1e-5): 1024 floats a block or more,
// whose last partial holds >= 1 / 16384 of the sum, 3e-5 of the norm (64 floats a block: 2e-6,
// which no check at that tolerance can see).
TEST(KernelSpecGpu, StepsWithTheirOwnArgumentsAndAConfigsPartialSums) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  const std::string op = load_kernel_spec(example("l2norm"));
  std::string planted = ktune::testing::file_bytes(example("l2norm"));
  const std::string parts = R"x("value": "ceil_div(n, BLOCK * ITEMS * VEC)"})x";
  ASSERT_NE(planted.find(parts), std::string::npos);
  planted.replace(planted.find(parts), parts.size(), R"x("value": "ceil_div(n, BLOCK * ITEMS * VEC) - 1"})x");
  const std::string wrong = load_kernel_spec_text(planted, "l2norm-planted.json", fs::path(example("l2norm")).parent_path().string());
  ASSERT_NE(wrong, op);
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  const Config configs[] = {Config{{"BLOCK", 64}, {"ITEMS", 1}, {"VEC", 1}, {"FINAL", 128}},
                            Config{{"BLOCK", 256}, {"ITEMS", 4}, {"VEC", 1}, {"FINAL", 256}},
                            Config{{"BLOCK", 256}, {"ITEMS", 2}, {"VEC", 2}, {"FINAL", 512}},
                            Config{{"BLOCK", 128}, {"ITEMS", 8}, {"VEC", 4}, {"FINAL", 128}},
                            Config{{"BLOCK", 1024}, {"ITEMS", 16}, {"VEC", 4}, {"FINAL", 1024}}};
  for (const char* n : {"1000003", "16777216"}) {
    int ran = 0;
    for (const Config& c : configs) {
      if (!find_family(op).valid(c, Problem::parse(op, n), *d)) continue;
      ++ran;
      for (const std::string& o : {op, wrong}) {
        if (o == wrong && c["BLOCK"] * c["ITEMS"] * c["VEC"] < 1024) continue;
        auto runner = make_op_runner(o, compiler, *d);
        const Problem p = Problem::parse(o, n);
        const VerifyResult v = check_config(*runner, compiler, *d, o, c, p, 9);
        std::cout << "[ ktune    ] " << (o == op ? "spec   " : "planted") << " " << p.key() << " " << c.to_json() << ": "
                  << v.summary() << "\n";
        if (o == op) {
          EXPECT_TRUE(v.pass) << p.key() << " " << c.to_json() << ": " << v.summary();
        } else {
          EXPECT_FALSE(v.pass) << "one partial left out: " << p.key() << " " << c.to_json() << ": " << v.summary();
          EXPECT_EQ(v.violations, 1u) << v.summary();
        }
      }
    }
    EXPECT_GE(ran, 2) << n;
  }
}

// A temporary set to a value before every launch (a running maximum's start), by a memset of its
// element's width: the kernel overwrites it after reading, so a launch that found the last one's
// values would fail the check that follows the first; and one left as it is is not set.
TEST(KernelSpecGpu, ATemporarySetToAValueBeforeEveryLaunch) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_temp_value");
  std::ofstream(dir.file("floor.cu")) << R"CUDA(
__global__ void floor_at(const float* x, float* m, unsigned short* h, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  y[i] = fmaxf(m[i], x[i]) + (h[i] == 0x3c00 ? 0.f : 100.f); // h: f16 1.0
  m[i] = 5.f, h[i] = 0;
}
__global__ void floor_ref(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(-0.5f, x[i]);
}
extern "C" __global__ void floor_c(const float* x, float* y, int n) { floor_ref(x, y, n); }
)CUDA";
  std::ofstream(dir.file("floor.json")) << R"JSON({
  "name": "floor_at", "sources": ["floor.cu"], "kernel": "floor_at", "dims": ["n"], "params": {"B": [128]},
  "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"], "args": ["x", "m", "h", "y", "n"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
           {"name": "m", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "temp", "fill": {"value": -0.5}},
           {"name": "h", "kind": "buffer", "dtype": "f16", "count": "n", "intent": "temp", "fill": {"value": 1.0}},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out", "rtol": 0, "atol": 0},
           {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
  "check": {"reference": {"kernel": "floor_ref", "launch": {"grid": ["ceil_div(n, 256)"], "block": [256], "args": ["x", "y", "n"]}}}
})JSON";
  const std::string op = load_kernel_spec(dir.file("floor.json"));
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  const Problem p = Problem::parse(op, "100003");
  const Config c{{"B", 128}};
  // Two launches a check: the second finds m and h set again, not the first's 5 and 0.
  const VerifyResult v = check_config(*runner, compiler, *d, op, c, p, 3, 2);
  EXPECT_TRUE(v.pass) << v.summary();
  EXPECT_NE(v.conditions.find("as timed"), std::string::npos) << "both checks ran: " << v.summary();
  // The same kernel with m left as it is (no fill): the second launch reads the first's 5s.
  std::string text = ktune::testing::file_bytes(dir.file("floor.json"));
  const std::string fill = R"x(, "fill": {"value": -0.5})x";
  ASSERT_NE(text.find(fill), std::string::npos);
  text.erase(text.find(fill), fill.size());
  const std::string left = load_kernel_spec_text(text, "floor-left.json", dir.path.string());
  auto left_runner = make_op_runner(left, compiler, *d);
  const VerifyResult lv = check_config(*left_runner, compiler, *d, left, c, Problem::parse(left, "100003"), 3, 2);
  EXPECT_FALSE(lv.pass) << lv.summary();
  EXPECT_GT(lv.violations, 100000u) << "every x below 5: " << lv.summary();
  // An extern "C" kernel's name declares no parameters; its first launch checks them on the GPU:
  // n passed as an i64 where floor_c takes an int is refused, before and after a first try.
  const std::string wide = R"JSON({
  "name": "floor_c", "sources": ["floor.cu"], "kernel": "floor_c", "dims": ["n"], "params": {"B": [128]},
  "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
           {"name": "n", "kind": "scalar", "dtype": "i64", "value": "n"}],
  "check": {"none": "refused at its first launch, before any check"}
})JSON";
  const std::string wop = load_kernel_spec_text(wide, "floor-wide.json", dir.path.string());
  auto wrunner = make_op_runner(wop, compiler, *d);
  const Problem wp = Problem::parse(wop, "1000");
  const Family wf = find_family(wop);
  const auto wk = compiler.compile(compile_request(wf, c, wp, d->arch));
  Module wm(wk->cubin, wk->lowered_names, "floor_c");
  wrunner->prepare(wp, 4);
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      wrunner->launch(wm, wf.launch_plan(c, wp), nullptr);
      ADD_FAILURE() << "an i64 passed where the kernel takes an int";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("the kernel declares 3 parameters of 8, 8, 4 bytes; the spec passes 3: x 8, y 8, n 8"),
                std::string::npos)
          << e.what();
    }
  }
}

// Setup kernels make inputs that depend on each other (a CSR matrix: row pointers that rise to
// nnz, columns sorted in each row) after the fills and before anything reads them: the kernel
// under test reads the row pointers the setup wrote, while the reference derives each row's span
// itself, so a kernel given the fills alone (row pointers all 0) fails; the inputs as set up are
// what must stay unchanged; an output the setup wrote is poisoned again (a kernel that skips a row
// shows), and a kernel that relies on sorted columns sees them sorted.
TEST(KernelSpecGpu, SetupKernelsMakeTheInputsEveryRunReads) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_setup");
  std::ofstream(dir.file("csr.cu")) << R"CUDA(
__device__ int row_start(int r, int rows, int nnz) { return int((long long)r * nnz / rows); }
// One thread a row: its span, and its columns sorted (insertion sort; rows are short). y zeroed,
// which the check must not let stand.
__global__ void make_csr(int* row_ptr, int* cols, float* y, int rows, int nnz) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r > rows) return;
  row_ptr[r] = row_start(r, rows, nnz);
  if (r == rows) return;
  y[r] = 0.f;
  const int a = row_start(r, rows, nnz), b = row_start(r + 1, rows, nnz);
  for (int i = a + 1; i < b; ++i)
    for (int j = i; j > a && cols[j - 1] > cols[j]; --j) { const int t = cols[j]; cols[j] = cols[j - 1]; cols[j - 1] = t; }
}
// FAULT 1 skips the last row; 2 stops a row at its first column out of order (so it relies on
// the setup's sort).
template <int B, int FAULT>
__global__ void spmv(const int* row_ptr, const int* cols, const float* v, const float* x, float* y, int rows) {
  const int r = blockIdx.x * B + threadIdx.x;
  if (r >= rows - (FAULT == 1)) return;
  float s = 0.f;
  for (int i = row_ptr[r]; i < row_ptr[r + 1]; ++i) {
    if (FAULT == 2 && i > row_ptr[r] && cols[i] < cols[i - 1]) break;
    s += v[i] * x[cols[i]];
  }
  y[r] = s;
}
__global__ void spmv_ref(const int* row_ptr, const int* cols, const float* v, const float* x, float* y, int rows, int nnz) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float s = 0.f;
  for (int i = row_start(r, rows, nnz); i < row_start(r + 1, rows, nnz); ++i) s += v[i] * x[cols[i]];
  y[r] = s;
}
)CUDA";
  std::ofstream(dir.file("csr.json")) << R"JSON({
  "name": "csr", "sources": ["csr.cu"], "kernel": "spmv<{B},{FAULT}>", "params_as": "template",
  "dims": ["rows", "n", "nnz"], "params": {"B": [128], "FAULT": [0, 1, 2]},
  "launch": {"grid": ["ceil_div(rows, B)"], "block": ["B"], "args": ["row_ptr", "cols", "v", "x", "y", "rows"]},
  "args": [{"name": "row_ptr", "kind": "buffer", "dtype": "i32", "count": "rows + 1", "fill": "zeros"},
           {"name": "cols", "kind": "buffer", "dtype": "i32", "count": "nnz", "fill": {"random": [0, "n"]}},
           {"name": "v", "kind": "buffer", "dtype": "f32", "count": "nnz"},
           {"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "rows", "intent": "out", "rtol": 0, "atol": 0},
           {"name": "rows", "kind": "scalar", "dtype": "i32", "value": "rows"},
           {"name": "nnz", "kind": "scalar", "dtype": "i32", "value": "nnz"}],
  "setup": {"kernel": "make_csr", "launch": {"grid": ["ceil_div(rows + 1, 256)"], "block": [256],
                                              "args": ["row_ptr", "cols", "y", "rows", "nnz"]}},
  "check": {"reference": {"kernel": "spmv_ref", "launch": {"grid": ["ceil_div(rows, 256)"], "block": [256]}}}
})JSON";
  const std::string op = load_kernel_spec(dir.file("csr.json"));
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  const Problem p = Problem::parse(op, "20011x30000x400000");
  auto check = [&](int fault) { return check_config(*runner, compiler, *d, op, Config{{"B", 128}, {"FAULT", fault}}, p, 9); };
  const VerifyResult ok = check(0);
  EXPECT_TRUE(ok.pass) << ok.summary();
  EXPECT_EQ(ok.input_writes, 0u) << "the inputs as set up are what stays unchanged: " << ok.summary();
  const VerifyResult skips = check(1);
  EXPECT_FALSE(skips.pass);
  EXPECT_EQ(skips.nonfinite, 1u) << "the setup's zeros in y poisoned again: " << skips.summary();
  EXPECT_TRUE(check(2).pass) << "columns sorted by the setup";
  // The same spec without its setup: the kernel reads row pointers of 0 and writes zeros.
  std::string text = ktune::testing::file_bytes(dir.file("csr.json"));
  const size_t at = text.find(R"("setup")"), end = text.find(R"("check")");
  ASSERT_TRUE(at != std::string::npos && end != std::string::npos);
  text.erase(at, end - at);
  const std::string bare = load_kernel_spec_text(text, "csr-bare.json", dir.path.string());
  auto bare_runner = make_op_runner(bare, compiler, *d);
  const VerifyResult no_setup = check_config(*bare_runner, compiler, *d, bare, Config{{"B", 128}, {"FAULT", 0}},
                                             Problem::parse(bare, "20011x30000x400000"), 9);
  EXPECT_FALSE(no_setup.pass);
  EXPECT_GT(no_setup.violations, 10000u) << no_setup.summary();
}

// An f64 problem runs the kernel instantiated on double and checks it at f64's tolerance (rtol
// 1e-9): a planted kernel that computes in float (relative error about 6e-8) is rejected, the
// double one passes; at f32 both pass.
TEST(KernelSpecGpu, AnF64ProblemIsCheckedAtDoublePrecision) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_f64");
  std::ofstream(dir.file("axpy.cu")) << R"CUDA(
template <typename T, int FLOAT>
__global__ void scale(const T* x, T* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  y[i] = FLOAT ? T(float(x[i]) * float(1.0 / 3.0)) : x[i] * T(1.0 / 3.0);
}
)CUDA";
  std::ofstream(dir.file("scale.json")) << R"JSON({
  "name": "scale64", "sources": ["axpy.cu"], "kernel": "scale<KTUNE_DTYPE, {FLOAT}>", "params_as": "template",
  "dims": ["n"], "dtypes": ["f32", "f64"], "params": {"FLOAT": [0, 1]},
  "launch": {"grid": ["ceil_div(n, 256)"], "block": [256]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "dtype", "count": "n"},
           {"name": "y", "kind": "buffer", "dtype": "dtype", "count": "n", "intent": "out"},
           {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
  "check": {"reference": {"config": {"FLOAT": 0}}}
})JSON";
  const std::string op = load_kernel_spec(dir.file("scale.json"));
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  for (DType dt : {DType::f64, DType::f32}) {
    const Problem p = Problem::parse(op, "100003", "", dt);
    const VerifyResult exact = check_config(*runner, compiler, *d, op, Config{{"FLOAT", 0}}, p, 3);
    EXPECT_TRUE(exact.pass) << to_string(dt) << ": " << exact.summary();
    const VerifyResult in_float = check_config(*runner, compiler, *d, op, Config{{"FLOAT", 1}}, p, 3);
    EXPECT_EQ(in_float.pass, dt == DType::f32) << to_string(dt) << ": " << in_float.summary();
    if (dt == DType::f64) EXPECT_GT(in_float.violations, 50000u) << in_float.summary();
  }
}

// check.post brings outputs in no fixed order to one form before the compare: a kernel that fills
// each segment in another order than its reference (as an atomic placement would) passes once both
// outputs' segments are sorted, and fails without the post step; a wrong value still fails with it.
TEST(KernelSpecGpu, PostStepsCompareOutputsInNoFixedOrder) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_post");
  std::ofstream(dir.file("seg.cu")) << R"CUDA(
// MODE 0: in order; 1: each segment of 64 reversed; 2: reversed, and one value wrong.
template <int MODE>
__global__ void place(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int at = MODE ? (i / 64) * 64 + 63 - i % 64 : i;
  y[at] = 2.f * x[i] + (MODE == 2 && i == 100 ? 1.f : 0.f);
}
__global__ void sort_segments(float* y, int n) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s * 64 >= n) return;
  float* v = y + s * 64;
  for (int i = 1; i < 64; ++i)
    for (int j = i; j > 0 && v[j - 1] > v[j]; --j) { const float t = v[j]; v[j] = v[j - 1]; v[j - 1] = t; }
}
)CUDA";
  const std::string spec = R"JSON({
  "name": "place", "sources": ["seg.cu"], "kernel": "place<{MODE}>", "params_as": "template",
  "dims": ["n"], "params": {"MODE": [0, 1, 2]}, "constraints": ["n % 64 == 0"],
  "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out", "rtol": 0, "atol": 0},
           {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
  "check": {"reference": {"config": {"MODE": 0}}POST}
})JSON";
  auto with = [&](const std::string& post) {
    std::string text = spec;
    text.replace(text.find("POST"), 4, post);
    return text;
  };
  const std::string op = load_kernel_spec_text(
      with(R"x(, "post": {"kernel": "sort_segments", "launch": {"grid": ["ceil_div(n, 64 * 32)"], "block": [32], "args": ["y", "n"]}})x"),
      "post.json", dir.path.string());
  const std::string bare = load_kernel_spec_text(with(""), "bare.json", dir.path.string());
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  auto bare_runner = make_op_runner(bare, compiler, *d);
  const Problem p = Problem::parse(op, "65536"), bp = Problem::parse(bare, "65536");
  auto check = [&](OpRunner& r, const std::string& o, const Problem& at, int mode) {
    return check_config(r, compiler, *d, o, Config{{"MODE", mode}}, at, 11);
  };
  EXPECT_TRUE(check(*runner, op, p, 0).pass);
  const VerifyResult reordered = check(*runner, op, p, 1);
  EXPECT_TRUE(reordered.pass) << reordered.summary();
  const VerifyResult wrong = check(*runner, op, p, 2);
  EXPECT_FALSE(wrong.pass);
  // One value off moves in its sorted segment: the elements between its old and new places differ.
  EXPECT_GE(wrong.violations, 1u) << wrong.summary();
  EXPECT_LE(wrong.violations, 64u) << "within one segment: " << wrong.summary();
  const VerifyResult unsorted = check(*bare_runner, bare, bp, 1);
  EXPECT_FALSE(unsorted.pass);
  EXPECT_GT(unsorted.violations, 60000u) << unsorted.summary();
  // One partial sum a block, as many as the config's block takes: the post step adds up the
  // number of partials of the run it follows (parts follows the config), so every block size
  // passes against a reference of 32-element blocks; had it added the post config's count, the
  // larger blocks' sums would take the poison past their last partial.
  std::ofstream(dir.file("parts.cu")) << R"CUDA(
template <int B>
__global__ void partial(const float* x, float* out, int n, float* scratch) {
  if (threadIdx.x) return;
  scratch[blockIdx.x] = 1.f; // a temporary of the kernel's: the post plan lays it out too
  float s = 0.f;
  for (int i = blockIdx.x * B; i < min(n, (blockIdx.x + 1) * B); ++i) s += x[i];
  out[blockIdx.x] = s;
}
__global__ void add_partials(float* out, int parts) {
  float s = 0.f;
  for (int i = 0; i < parts; ++i) s += out[i];
  out[0] = s;
}
)CUDA";
  const std::string parts = load_kernel_spec_text(R"JSON({
  "name": "parts", "sources": ["parts.cu"], "kernel": "partial<{B}>", "params_as": "template",
  "dims": ["n"], "params": {"B": [32, 64, 256]},
  "launch": {"grid": ["ceil_div(n, B)"], "block": [32], "args": ["x", "out", "n", "scratch"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n", "fill": "ones"},
           {"name": "out", "kind": "buffer", "dtype": "f32", "count": "ceil_div(n, 32)", "intent": "out", "check_count": 1,
            "rtol": 0, "atol": 0},
           {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"},
           {"name": "parts", "kind": "scalar", "dtype": "i32", "value": "ceil_div(n, B)"},
           {"name": "scratch", "kind": "buffer", "dtype": "f32", "count": "ceil_div(n, B)", "intent": "temp"}],
  "check": {"reference": {"config": {"B": 32}},
            "post": {"kernel": "add_partials", "launch": {"grid": [1], "block": [1], "args": ["out", "parts"]}}}
})JSON", "parts.json", dir.path.string());
  auto parts_runner = make_op_runner(parts, compiler, *d);
  const Problem pp = Problem::parse(parts, "100000");
  for (int b : {32, 64, 256}) {
    const VerifyResult v = check_config(*parts_runner, compiler, *d, parts, Config{{"B", b}}, pp, 13);
    EXPECT_TRUE(v.pass) << "B " << b << ": " << v.summary();
  }
}

// A kernel whose only written buffer is updated in place (intent inout: an optimizer step, an
// accumulation into a cleared sum) is launched and checked: a planted one that scales by the wrong
// factor is rejected, the right one passes, and the runtime's call changes the buffer.
TEST(KernelSpecGpu, AKernelThatOnlyUpdatesInPlaceIsLaunchedAndChecked) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_inout");
  std::ofstream(dir.file("axpy.cu")) << R"CUDA(
template <int FAULT>
__global__ void axpy(const float* x, float* y, int n, float a) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += (FAULT ? 2.f * a : a) * x[i];
}
__global__ void axpy_ref(const float* x, float* y, int n, float a) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
)CUDA";
  std::ofstream(dir.file("axpy.json")) << R"JSON({
  "name": "axpy", "sources": ["axpy.cu"], "kernel": "axpy<{FAULT}>", "params_as": "template", "dims": ["n"],
  "params": {"FAULT": [0, 1]},
  "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "inout"},
           {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"},
           {"name": "a", "kind": "scalar", "dtype": "f32", "default": 0.5}],
  "check": {"reference": {"kernel": "axpy_ref", "launch": {"grid": ["ceil_div(n, 256)"], "block": [256]}}}
})JSON";
  const std::string op = load_kernel_spec(dir.file("axpy.json"));
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  const Problem p = Problem::parse(op, "100003");
  for (int fault : {0, 1}) {
    const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"FAULT", fault}}, p, 8);
    if (fault) {
      EXPECT_FALSE(v.pass) << "a kernel that updates y by 2a x was taken for a x: " << v.summary();
      EXPECT_GT(v.violations, 90000u) << v.summary();
    } else {
      EXPECT_TRUE(v.pass) << v.summary();
    }
  }
  // The runtime's call updates the caller's y (a spec of the right kernel alone: nothing tuned,
  // so the call is served by its default).
  std::string right = ktune::testing::file_bytes(dir.file("axpy.json"));
  right.replace(right.find("\"axpy<{FAULT}>\""), std::string("\"axpy<{FAULT}>\"").size(), "\"axpy<0>\"");
  right.replace(right.find("\"FAULT\": [0, 1]"), std::string("\"FAULT\": [0, 1]").size(), "\"B\": [128]");
  right.replace(right.find("\"ceil_div(n, 128)\"], \"block\": [128]"), std::string("\"ceil_div(n, 128)\"], \"block\": [128]").size(),
                "\"ceil_div(n, B)\"], \"block\": [\"B\"]");
  const std::string served = load_kernel_spec_text(right, "axpy-right.json", dir.path.string());
  RuntimeOptions o;
  o.db_path = dir.file("none.db");
  Runtime rt(o);
  std::vector<float> hx(1000, 2.f), hy(1000, 1.f);
  DeviceBuffer dx(hx.size() * 4, "x"), dy(hy.size() * 4, "y");
  check_cu(driver().cuMemcpyHtoD(dx.ptr(), hx.data(), hx.size() * 4), "cuMemcpyHtoD", "x");
  check_cu(driver().cuMemcpyHtoD(dy.ptr(), hy.data(), hy.size() * 4), "cuMemcpyHtoD", "y");
  Problem q = Problem::parse(served, "1000");
  rt.run(q, {reinterpret_cast<void*>(dx.ptr()), reinterpret_cast<void*>(dy.ptr())}, nullptr);
  check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", "axpy");
  check_cu(driver().cuMemcpyDtoH(hy.data(), dy.ptr(), hy.size() * 4), "cuMemcpyDtoH", "y");
  EXPECT_EQ(hy[0], 2.f) << "1 + 0.5 x 2";
  EXPECT_EQ(hy[999], 2.f);
}

// Every timed run of an in-place kernel starts from its inout buffer as filled: y += a x, timed
// (warm-up and repetitions) after its check, leaves y one update away from the fill, which the
// check passes again. With "restore": false the runs carry on from each other, y holds many
// updates, and the same check fails: the test can tell the two apart.
TEST(KernelSpecGpu, TimedRunsOfAnInPlaceKernelStartFromTheDataAsFilled) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_restore");
  std::ofstream(dir.file("axpy.cu")) << R"CUDA(
template <int B>
__global__ void axpy(const float* x, float* y, int n, float a) {
  const int i = blockIdx.x * B + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
)CUDA";
  const std::string spec = R"JSON({
  "name": "axpy_NAME", "sources": ["axpy.cu"], "kernel": "axpy<{B}>", "params_as": "template", "dims": ["n"],
  "params": {"B": [128]},
  "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "inout"RESTORE},
           {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"},
           {"name": "a", "kind": "scalar", "dtype": "f32", "default": 0.5}],
  "check": {"reference": {"config": {"B": 128}}}
})JSON";
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  Timer timer(d->l2_bytes);
  TimingOptions o;
  o.warmup = 2, o.min_reps = 10, o.max_reps = 10;
  for (const bool restore : {true, false}) {
    std::string text = spec;
    text.replace(text.find("NAME"), 4, restore ? "restored" : "carried");
    text.replace(text.find("RESTORE"), 7, restore ? "" : ", \"restore\": false");
    const std::string op = load_kernel_spec_text(text, "axpy.json", dir.path.string());
    auto runner = make_op_runner(op, compiler, *d);
    const Problem p = Problem::parse(op, "100003");
    const Family f = find_family(op);
    const Config c{{"B", 128}};
    const auto k = compiler.compile(compile_request(f, c, p, d->arch));
    Module m(k->cubin, k->lowered_names, op);
    const LaunchPlan plan = f.launch_plan(c, p);
    const VerifyResult first =
        check_as_served_and_timed(*runner, p, 5, Numerics::standard, [&](CUstream s) { runner->launch(m, plan, s); });
    ASSERT_TRUE(first.pass) << first.summary();
    const Timing t = timer.time([&](CUstream s) { runner->launch(m, plan, s); }, nullptr, o, "axpy",
                                [&](CUstream s) { runner->restore(s); });
    EXPECT_EQ(t.reps, 10);
    const VerifyResult after = runner->verify(nullptr);
    if (restore)
      EXPECT_TRUE(after.pass) << "the timed runs did not each start from y as filled: " << after.summary();
    else
      EXPECT_FALSE(after.pass) << "13 updates of y in place read as one: " << after.summary();
  }
}

// Every config of a problem is timed on the same inputs (the tuner's timed seed), whatever seed
// its served check drew: a kernel whose time follows its data (here it waits x[0] microseconds)
// reads alike for two configs checked on different seeds, and apart where the timed inputs
// differ, as they did when each config was timed on its own seed's.
TEST(KernelSpecGpu, ConfigsCheckedOnTheirOwnSeedsAreTimedOnTheProblemsInputs) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_seed");
  std::ofstream(dir.file("wait.cu")) << R"CUDA(
template <int B>
__global__ void wait_x(const int* x, int* y) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); while (t - t0 < 1000ull * (unsigned long long)x[0]);
  if (threadIdx.x == 0) y[0] = x[0];
}
)CUDA";
  const std::string op = load_kernel_spec_text(R"JSON({
  "name": "wait_x", "sources": ["wait.cu"], "kernel": "wait_x<{B}>", "params_as": "template", "dims": ["n"],
  "params": {"B": [32, 64]},
  "launch": {"grid": [1], "block": ["B"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "i32", "count": "n", "fill": {"random": [1, 400]}},
           {"name": "y", "kind": "buffer", "dtype": "i32", "count": 1, "intent": "out"}],
  "check": {"reference": {"config": {"B": 32}}}
})JSON", "wait.json", dir.path.string());
  const KernelSpec& spec = spec_of(op);
  const Problem p = Problem::parse(op, "16");
  // x[0] (in microseconds) of the inputs of `seed`, as the runner fills them (the host's fill is
  // the device's, bit for bit).
  auto wait_of = [&](uint64_t seed) {
    const auto b = spec_fill_bytes(fill_at(spec, spec.args[0].fill, p), ElemType::i32, 1, seed * 1000003 + 0);
    int v;
    std::memcpy(&v, b.data(), 4);
    return v;
  };
  uint64_t lo = 0, hi = 0; // seeds of a short and a long wait
  for (uint64_t s = 1; s < 200 && (!lo || !hi); ++s) {
    if (!lo && wait_of(s) < 60) lo = s;
    if (!hi && wait_of(s) > 300) hi = s;
  }
  ASSERT_TRUE(lo && hi);
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  Timer timer(d->l2_bytes);
  TimingOptions o;
  o.min_reps = 5, o.max_reps = 5;
  const Family f = find_family(op);
  auto timed = [&](int b, uint64_t seed, uint64_t timed_seed) {
    const Config c{{"B", b}};
    const auto k = compiler.compile(compile_request(f, c, p, d->arch));
    Module m(k->cubin, k->lowered_names, op);
    const LaunchPlan plan = f.launch_plan(c, p);
    const VerifyResult v = check_as_served_and_timed(*runner, p, seed, timed_seed, Numerics::standard,
                                                     [&](CUstream s) { runner->launch(m, plan, s); });
    EXPECT_TRUE(v.pass) << v.summary();
    return timer.time([&](CUstream s) { runner->launch(m, plan, s); }, nullptr, o, "wait").median_ms;
  };
  const double a = timed(32, lo, hi), b = timed(64, hi, hi);
  EXPECT_NEAR(a / b, 1.0, 0.1) << "one timed seed: " << a << " and " << b << " ms (x[0] " << wait_of(hi) << " us)";
  const double own_lo = timed(32, lo, lo), own_hi = timed(64, hi, hi);
  EXPECT_GT(own_hi / own_lo, 3.0) << "each its own seed: " << own_lo << " and " << own_hi << " ms (x[0] " << wait_of(lo)
                                  << " and " << wait_of(hi) << " us)";
}

// A loop of launches (docs/KERNEL_SPEC.md, "Loops"): T rounds of y = x / 2 + (t + 1), x and y
// swapped after every round, checked against one kernel that runs the T rounds in place. At an odd
// T the result lands in y's buffer and is copied back into the caller's x. A kernel that ignores
// the round's counter, and a spec that forgets the swap, are rejected; the runtime's call leaves
// the T rounds' result in the caller's buffer.
TEST(KernelSpecGpu, ALoopOfLaunchesPassesItsCounterAndSwapsItsBuffers) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_loop");
  std::ofstream(dir.file("rounds.cu")) << R"CUDA(
template <int B, int FAULT>
__global__ void step(const float* x, float* y, int n, int t) {
  const int i = blockIdx.x * B + threadIdx.x;
  if (i < n) y[i] = 0.5f * x[i] + float((FAULT ? 0 : t) + 1);
}
__global__ void rounds_ref(float* x, int n, int T) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int t = 0; t < T; ++t) v = 0.5f * v + float(t + 1);
  x[i] = v;
}
)CUDA";
  const std::string spec = R"JSON({
  "name": "rounds", "sources": ["rounds.cu"], "params_as": "template", "dims": ["n", "T"],
  "params": {"B": [64, 128], "FAULT": [0, 1]},
  "launch": {"kernel": "step<{B},{FAULT}>", "grid": ["ceil_div(n, B)"], "block": ["B"], "repeat": "T", "index": "t",
             "swap": [["x", "y"]], "args": ["x", "y", "n_", "t"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "inout"},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "temp"},
           {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"},
           {"name": "t", "kind": "scalar", "dtype": "i32", "value": "t"},
           {"name": "T_", "kind": "scalar", "dtype": "i32", "value": "T"}],
  "check": {"reference": {"kernel": "rounds_ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128], "args": ["x", "n_", "T_"]}}}
})JSON";
  std::ofstream(dir.file("rounds.json")) << spec;
  const std::string op = load_kernel_spec(dir.file("rounds.json"));
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  for (const char* shape : {"100003x3", "100003x4"})
    for (int fault : {0, 1})
      for (int b : {64, 128}) {
        const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"B", b}, {"FAULT", fault}}, Problem::parse(op, shape), 4);
        if (fault) EXPECT_FALSE(v.pass) << shape << " B " << b << ": a step that ignores its round passed: " << v.summary();
        else EXPECT_TRUE(v.pass) << shape << " B " << b << ": " << v.summary();
      }
  // The same kernel without the swap reads the caller's x every round: x never changes.
  std::string unswapped = spec;
  const std::string swap = "\"swap\": [[\"x\", \"y\"]], ";
  unswapped.erase(unswapped.find(swap), swap.size());
  const std::string no_swap = load_kernel_spec_text(unswapped, "unswapped.json", dir.path.string());
  auto no_swap_runner = make_op_runner(no_swap, compiler, *d);
  const VerifyResult nv = check_config(*no_swap_runner, compiler, *d, no_swap, Config{{"B", 64}, {"FAULT", 0}},
                                       Problem::parse(no_swap, "100003x3"), 4);
  EXPECT_FALSE(nv.pass) << "rounds that never read their last round's result passed: " << nv.summary();
  // The runtime's call, in the caller's x.
  expect_three_rounds_from_two(op, dir.file("none.db"));
}

// Breadth-first search as Rodinia's and most GPU graph codes run it: a level a round, the host
// reading a flag (or the next frontier's size) after each, until a round adds nothing. Node v's
// d out-edges are cols[v * d ...]; cost is the level a node is reached at (-1: never).
constexpr const char* kBfsSource = R"CUDA(
__global__ void bfs_init(int* cost, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) cost[i] = i == 0 ? 0 : -1;
}
// FAULT 1: the flag never raised (the loop leaves after one round); 2: always raised (it never ends).
template <int B, int FAULT>
__global__ void bfs_level(const int* cols, int* cost, int n, int d, int level, int* changed) {
  const int v = blockIdx.x * B + threadIdx.x;
  if (FAULT == 2 && v == 0) *changed = 1;
  if (v >= n || cost[v] != level) return;
  for (int e = 0; e < d; ++e) {
    const int u = cols[(long long)v * d + e];
    if (cost[u] < 0) {
      cost[u] = level + 1;
      if (FAULT != 1) *changed = 1;
    }
  }
}
// Node v's unreached neighbours get level + 1 and join the next frontier (q2, qn2 of them).
__device__ void bfs_visit(const int* cols, int* cost, int d, int level, int v, int* q2, int* qn2) {
  for (int e = 0; e < d; ++e) {
    const int u = cols[(long long)v * d + e];
    if (atomicCAS(&cost[u], -1, level + 1) == -1) q2[atomicAdd(qn2, 1)] = u;
  }
}
// The thread of grid place i visits the frontier's node i, where there is one (count of them).
template <int B>
__device__ void bfs_frontier_node(const int* cols, int* cost, int d, int level, const int* q, int count, int* q2, int* qn2) {
  const int i = blockIdx.x * B + threadIdx.x;
  if (i < count) bfs_visit(cols, cost, d, level, q[i], q2, qn2);
}
// A frontier queue: this round's nodes in q (qn of them), the next round's appended to q2 (qn2).
__global__ void bfs_queue_init(int* cost, int n, int* q, int* qn) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) cost[i] = i == 0 ? 0 : -1;
  if (i == 0) q[0] = 0, qn[0] = 1;
}
template <int B>
__global__ void bfs_queue(const int* cols, int* cost, int d, int level, const int* q, const int* qn, int* q2, int* qn2) {
  bfs_frontier_node<B>(cols, cost, d, level, q, qn[0], q2, qn2);
}
// Parboil's way: the frontier's length read back on the host sizes the round's grid and is passed
// by value. A grid not sized so (gridDim.x != ceil(count / B)) marks node 0 unreachable, which
// the check rejects.
template <int B>
__global__ void bfs_frontier(const int* cols, int* cost, int d, int level, const int* q, int count, int* q2, int* qn2) {
  if (gridDim.x != (count + B - 1) / B) {
    if (blockIdx.x == 0 && threadIdx.x == 0) cost[0] = -7;
    return;
  }
  bfs_frontier_node<B>(cols, cost, d, level, q, count, q2, qn2);
}
// Parboil's other way: a kernel chosen a round by the frontier's length, each counting its rounds
// (in `used`: big, small).
template <int B>
__global__ void bfs_big(const int* cols, int* cost, int d, int level, const int* q, int count, int* q2, int* qn2, int* used) {
  if (blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(&used[0], 1);
  bfs_frontier_node<B>(cols, cost, d, level, q, count, q2, qn2);
}
template <int B>
__global__ void bfs_small(const int* cols, int* cost, int d, int level, const int* q, int count, int* q2, int* qn2, int* used) {
  if (threadIdx.x == 0) atomicAdd(&used[1], 1);
  for (int i = threadIdx.x; i < count; i += B) bfs_visit(cols, cost, d, level, q[i], q2, qn2);
}
// The reference: one thread relaxing every edge until nothing changes.
__global__ void bfs_ref(const int* cols, int* cost, int n, int d) {
  for (int i = 0; i < n; ++i) cost[i] = i == 0 ? 0 : -1;
  for (bool again = true; again;) {
    again = false;
    for (int v = 0; v < n; ++v) {
      if (cost[v] < 0) continue;
      for (int e = 0; e < d; ++e) {
        const int u = cols[(long long)v * d + e];
        if (cost[u] < 0 || cost[u] > cost[v] + 1) cost[u] = cost[v] + 1, again = true;
      }
    }
  }
}
)CUDA";

constexpr const char* kBfsSpec = R"JSON({
  "name": "bfs_flag", "sources": ["bfs.cu"], "params_as": "template", "dims": ["n", "d"],
  "params": {"B": [64, 256], "FAULT": [0, 1, 2]},
  "launch": [
    {"kernel": "bfs_init", "grid": ["ceil_div(n, 256)"], "block": [256], "args": ["cost", "n_"]},
    {"repeat": "n", "index": "level", "while": "changed != 0", "reset": ["changed"], "steps": [
      {"kernel": "bfs_level<{B},{FAULT}>", "grid": ["ceil_div(n, B)"], "block": ["B"],
       "args": ["cols", "cost", "n_", "d_", "level_", "changed"]}]}],
  "args": [{"name": "cols", "kind": "buffer", "dtype": "i32", "count": "n * d", "fill": {"random": [0, "n"], "integers": true}},
           {"name": "cost", "kind": "buffer", "dtype": "i32", "count": "n", "intent": "out"},
           {"name": "changed", "kind": "buffer", "dtype": "i32", "count": 1, "intent": "temp", "fill": "zeros"},
           {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"},
           {"name": "d_", "kind": "scalar", "dtype": "i32", "value": "d"},
           {"name": "level_", "kind": "scalar", "dtype": "i32", "value": "level"}],
  "check": {"reference": {"kernel": "bfs_ref", "launch": {"grid": [1], "block": [1], "args": ["cols", "cost", "n_", "d_"]}}}
})JSON";

constexpr const char* kBfsQueueSpec = R"JSON({
  "name": "bfs_queue", "sources": ["bfs.cu"], "params_as": "template", "dims": ["n", "d"],
  "params": {"B": [64, 256]},
  "launch": [
    {"kernel": "bfs_queue_init", "grid": ["ceil_div(n, 256)"], "block": [256], "args": ["cost", "n_", "q", "qn"]},
    {"repeat": "n", "index": "level", "while": "qn2 > 0", "reset": ["qn2"], "swap": [["q", "q2"], ["qn", "qn2"]],
     "kernel": "bfs_queue<{B}>", "grid": ["ceil_div(n, B)"], "block": ["B"],
     "args": ["cols", "cost", "d_", "level_", "q", "qn", "q2", "qn2"]}],
  "args": [{"name": "cols", "kind": "buffer", "dtype": "i32", "count": "n * d", "fill": {"random": [0, "n"], "integers": true}},
           {"name": "cost", "kind": "buffer", "dtype": "i32", "count": "n", "intent": "out"},
           {"name": "q", "kind": "buffer", "dtype": "i32", "count": "n", "intent": "temp"},
           {"name": "qn", "kind": "buffer", "dtype": "i32", "count": 1, "intent": "temp"},
           {"name": "q2", "kind": "buffer", "dtype": "i32", "count": "n", "intent": "temp"},
           {"name": "qn2", "kind": "buffer", "dtype": "i32", "count": 1, "intent": "temp", "fill": "zeros"},
           {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"},
           {"name": "d_", "kind": "scalar", "dtype": "i32", "value": "d"},
           {"name": "level_", "kind": "scalar", "dtype": "i32", "value": "level"}],
  "check": {"reference": {"kernel": "bfs_ref", "launch": {"grid": [1], "block": [1], "args": ["cols", "cost", "n_", "d_"]}}}
})JSON";

// The queue's spec, Parboil's way: the grid and the count the kernel takes by value from the
// frontier's length read back, which the kernel itself no longer reads.
std::string bfs_frontier_spec() {
  std::string s = kBfsQueueSpec;
  auto edit = [&](const std::string& from, const std::string& to) { s.replace(s.find(from), from.size(), to); };
  edit("\"bfs_queue\"", "\"bfs_frontier\"");
  edit("\"kernel\": \"bfs_queue<{B}>\", \"grid\": [\"ceil_div(n, B)\"]", "\"kernel\": \"bfs_frontier<{B}>\", \"grid\": [\"ceil_div(qn, B)\"]");
  edit("\"q\", \"qn\", \"q2\", \"qn2\"]}],", "\"q\", \"count\", \"q2\", \"qn2\"]}],");
  edit("\"value\": \"level\"}],", "\"value\": \"level\"},\n           {\"name\": \"count\", \"kind\": \"scalar\", \"dtype\": \"i32\", \"value\": \"qn\"}],");
  return s;
}

constexpr const char* kBfsWhenSpec = R"JSON({
  "name": "bfs_when", "sources": ["bfs.cu"], "params_as": "template", "dims": ["n", "d"],
  "params": {"B": [64, 256], "SMALL": [0, 300, 100000000]},
  "launch": [
    {"kernel": "bfs_queue_init", "grid": ["ceil_div(n, 256)"], "block": [256], "args": ["cost", "n_", "q", "qn"]},
    {"repeat": "n", "index": "level", "while": "qn2 > 0", "reset": ["qn2"], "swap": [["q", "q2"], ["qn", "qn2"]], "steps": [
      {"kernel": "bfs_big<{B}>", "grid": ["ceil_div(qn, B)"], "block": ["B"], "when": "qn > SMALL",
       "args": ["cols", "cost", "d_", "level_", "q", "count", "q2", "qn2", "used"]},
      {"kernel": "bfs_small<{B}>", "grid": [1], "block": ["B"], "when": "qn <= SMALL",
       "args": ["cols", "cost", "d_", "level_", "q", "count", "q2", "qn2", "used"]}]}],
  "args": [{"name": "cols", "kind": "buffer", "dtype": "i32", "count": "n * d", "fill": {"random": [0, "n"], "integers": true}},
           {"name": "cost", "kind": "buffer", "dtype": "i32", "count": "n", "intent": "out"},
           {"name": "used", "kind": "buffer", "dtype": "i32", "count": 2, "intent": "inout", "fill": "zeros", "check_count": 0},
           {"name": "q", "kind": "buffer", "dtype": "i32", "count": "n", "intent": "temp"},
           {"name": "qn", "kind": "buffer", "dtype": "i32", "count": 1, "intent": "temp"},
           {"name": "q2", "kind": "buffer", "dtype": "i32", "count": "n", "intent": "temp"},
           {"name": "qn2", "kind": "buffer", "dtype": "i32", "count": 1, "intent": "temp", "fill": "zeros"},
           {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"},
           {"name": "d_", "kind": "scalar", "dtype": "i32", "value": "d"},
           {"name": "level_", "kind": "scalar", "dtype": "i32", "value": "level"},
           {"name": "count", "kind": "scalar", "dtype": "i32", "value": "qn"}],
  "check": {"reference": {"kernel": "bfs_ref", "launch": {"grid": [1], "block": [1], "args": ["cols", "cost", "n_", "d_"]}}}
})JSON";

// BFS levels on the host, for the served call.
std::vector<int> host_bfs(const std::vector<int>& cols, int n, int d) {
  std::vector<int> cost(size_t(n), -1), q{0};
  cost[0] = 0;
  for (size_t h = 0; h < q.size(); ++h)
    for (int e = 0; e < d; ++e) {
      const int u = cols[size_t(q[h]) * size_t(d) + size_t(e)];
      if (cost[size_t(u)] < 0) cost[size_t(u)] = cost[size_t(q[h])] + 1, q.push_back(u);
    }
  return cost;
}

// A random graph of n nodes of deg out-edges each (an LCG from seed), on the GPU.
std::vector<int> random_graph(int n, int deg, uint64_t seed) {
  std::vector<int> cols(size_t(n) * deg);
  uint64_t x = seed;
  for (auto& c : cols) x = x * 6364136223846793005ull + 1442695040888963407ull, c = int((x >> 33) % uint64_t(n));
  return cols;
}

// The runtime's call of BFS spec `op` (cols, cost; nothing tuned) on that graph against BFS on the host.
void expect_runtime_bfs(Runtime& rt, const std::string& op, int n, int deg, uint64_t seed) {
  const std::vector<int> cols = random_graph(n, deg, seed), want = host_bfs(cols, n, deg);
  DeviceBuffer dcols(cols.size() * 4, "cols"), dcost(size_t(n) * 4, "cost");
  check_cu(driver().cuMemcpyHtoD(dcols.ptr(), cols.data(), cols.size() * 4), "cuMemcpyHtoD", "cols");
  check_cu(driver().cuMemsetD32Async(dcost.ptr(), 0x7fffffff, size_t(n), nullptr), "cuMemsetD32Async", "cost");
  rt.run(Problem::parse(op, std::to_string(n) + "x" + std::to_string(deg)),
         {reinterpret_cast<void*>(dcols.ptr()), reinterpret_cast<void*>(dcost.ptr())}, nullptr);
  check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", op);
  std::vector<int> got(static_cast<size_t>(n));
  check_cu(driver().cuMemcpyDtoH(got.data(), dcost.ptr(), got.size() * 4), "cuMemcpyDtoH", "cost");
  EXPECT_EQ(got, want) << op;
  EXPECT_GT(*std::max_element(want.begin(), want.end()), 5) << "a graph of several levels";
}

TEST(KernelSpecGpu, ALoopRunsWhileItsFlagSaysARoundChangedSomething) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_while");
  std::ofstream(dir.file("bfs.cu")) << kBfsSource;
  std::ofstream(dir.file("bfs.json")) << kBfsSpec;
  std::ofstream(dir.file("bfs_queue.json")) << kBfsQueueSpec;
  const std::string op = load_kernel_spec(dir.file("bfs.json")), queue = load_kernel_spec(dir.file("bfs_queue.json"));
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  auto queue_runner = make_op_runner(queue, compiler, *d);
  // Several graphs (seeds) and sizes, so that both parities of the rounds end the queue's loop.
  for (const char* shape : {"20000x3", "5000x2", "777x4"})
    for (uint64_t seed : {1, 2, 3})
      for (int b : {64, 256}) {
        const Problem p = Problem::parse(op, shape), pq = Problem::parse(queue, shape);
        const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"B", b}, {"FAULT", 0}}, p, seed, 2);
        EXPECT_TRUE(v.pass) << shape << " seed " << seed << " B " << b << ": " << v.summary();
        const VerifyResult vq = check_config(*queue_runner, compiler, *d, queue, Config{{"B", b}}, pq, seed, 2);
        EXPECT_TRUE(vq.pass) << "queue " << shape << " seed " << seed << " B " << b << ": " << vq.summary();
      }
  // A flag never raised leaves after one round: the check fails it.
  const VerifyResult early = check_config(*runner, compiler, *d, op, Config{{"B", 64}, {"FAULT", 1}}, Problem::parse(op, "5000x2"), 1);
  EXPECT_FALSE(early.pass) << "a loop that left after its first round passed: " << early.summary();
  // A flag always raised: the call fails at the loop's bound, naming the condition.
  try {
    check_config(*runner, compiler, *d, op, Config{{"B", 64}, {"FAULT", 2}}, Problem::parse(op, "777x4"), 1);
    ADD_FAILURE() << "a loop that never ends ran without an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'changed != 0' still holds after the loop's last round"), std::string::npos) << e.what();
  }
  // The runtime's call (nothing tuned) against BFS on the host; the flag's spec without its
  // planted faults, which a first use could otherwise time.
  std::string clean = kBfsSpec;
  clean.replace(clean.find("\"FAULT\": [0, 1, 2]"), std::strlen("\"FAULT\": [0, 1, 2]"), "\"FAULT\": [0]");
  clean.replace(clean.find("bfs_flag"), std::strlen("bfs_flag"), "bfs_flag_clean");
  const std::string flag = load_kernel_spec_text(clean, "bfs_clean.json", dir.path.string());
  RuntimeOptions o;
  o.db_path = dir.file("none.db");
  Runtime rt(o);
  for (const std::string& which : {flag, queue}) expect_runtime_bfs(rt, which, 30000, 3, 12345);
}

// Each round's grid and the count its kernel takes by value come from the frontier's length read
// back before the launch (Parboil's BFS): verified over several graphs, both parities of the
// swaps' rounds, and equal to a host BFS through the runtime; the same spec with a grid sized by
// n instead (the kernel marks a grid that is not its frontier's) is rejected.
TEST(KernelSpecGpu, EachRoundsGridAndCountAreReadBackBeforeItsLaunch) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_values");
  std::ofstream(dir.file("bfs.cu")) << kBfsSource;
  const std::string op = load_kernel_spec_text(bfs_frontier_spec(), "bfs_frontier.json", dir.path.string());
  std::string fixed = bfs_frontier_spec();
  fixed.replace(fixed.find("\"ceil_div(qn, B)\""), std::strlen("\"ceil_div(qn, B)\""), "\"ceil_div(n, B)\"");
  fixed.replace(fixed.find("\"bfs_frontier\""), std::strlen("\"bfs_frontier\""), "\"bfs_frontier_fixed\"");
  const std::string planted = load_kernel_spec_text(fixed, "bfs_fixed.json", dir.path.string());
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  for (const char* shape : {"20000x3", "5000x2", "777x4"})
    for (uint64_t seed : {1, 2, 3})
      for (int b : {64, 256}) {
        const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"B", b}}, Problem::parse(op, shape), seed, 2);
        EXPECT_TRUE(v.pass) << shape << " seed " << seed << " B " << b << ": " << v.summary();
      }
  auto planted_runner = make_op_runner(planted, compiler, *d);
  const VerifyResult wrong = check_config(*planted_runner, compiler, *d, planted, Config{{"B", 64}}, Problem::parse(planted, "5000x2"), 1);
  EXPECT_FALSE(wrong.pass) << "a grid sized by n passed for the frontier's: " << wrong.summary();
  RuntimeOptions o;
  o.db_path = dir.file("none.db");
  Runtime rt(o);
  expect_runtime_bfs(rt, op, 30000, 3, 777);
}

// A kernel chosen each round by the frontier's length read back (`when`): verified with either
// kernel alone (SMALL 0, SMALL past n) and with both; a config's call through Kernel::launch
// runs one kernel a round, the small one for the short frontiers and the big one for the long.
TEST(KernelSpecGpu, AStepRunsOnlyWhereItsWhenHoldsAtTheLaunch) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_when");
  std::ofstream(dir.file("bfs.cu")) << kBfsSource;
  const std::string op = load_kernel_spec_text(kBfsWhenSpec, "bfs_when.json", dir.path.string());
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  for (const char* shape : {"20000x3", "5000x2"})
    for (uint64_t seed : {1, 2})
      for (int small : {0, 300, 100000000}) {
        const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"B", 64}, {"SMALL", small}}, Problem::parse(op, shape), seed);
        EXPECT_TRUE(v.pass) << shape << " seed " << seed << " SMALL " << small << ": " << v.summary();
      }
  // One config's launch on the caller's buffers: each round ran exactly one of the two kernels.
  const int n = 30000, deg = 3;
  const std::vector<int> cols = random_graph(n, deg, 4242);
  const std::vector<int> want = host_bfs(cols, n, deg);
  const int levels = *std::max_element(want.begin(), want.end());
  ASSERT_GT(levels, 5);
  DeviceBuffer dcols(cols.size() * 4, "cols"), dcost(size_t(n) * 4, "cost"), dused(8, "used");
  check_cu(driver().cuMemcpyHtoD(dcols.ptr(), cols.data(), cols.size() * 4), "cuMemcpyHtoD", "cols");
  check_cu(driver().cuMemsetD32Async(dused.ptr(), 0, 2, nullptr), "cuMemsetD32Async", "used");
  const Problem p = Problem::parse(op, std::to_string(n) + "x" + std::to_string(deg));
  const Family f = find_family(op);
  const Config c{{"B", 256}, {"SMALL", 300}};
  const auto k = compiler.compile(compile_request(f, c, p, d->arch));
  Module m(k->cubin, k->lowered_names, op);
  const LaunchPlan plan = f.launch_plan(c, p);
  DeviceBuffer ws(std::max<size_t>(plan.workspace_bytes, 1), "temporaries");
  BufferArgs a(p, {reinterpret_cast<const void*>(dcols.ptr()), reinterpret_cast<const void*>(dcost.ptr()),
                   reinterpret_cast<const void*>(dused.ptr())}, ws.ptr());
  launch_buffers(m, plan, a, nullptr);
  check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", op);
  std::vector<int> got(static_cast<size_t>(n));
  int used[2] = {0, 0};
  check_cu(driver().cuMemcpyDtoH(got.data(), dcost.ptr(), got.size() * 4), "cuMemcpyDtoH", "cost");
  check_cu(driver().cuMemcpyDtoH(used, dused.ptr(), 8), "cuMemcpyDtoH", "used");
  EXPECT_EQ(got, want);
  EXPECT_EQ(used[0] + used[1], levels + 1) << "one kernel a round: big " << used[0] << ", small " << used[1];
  EXPECT_GT(used[0], 0) << "the big kernel for the long frontiers";
  EXPECT_GT(used[1], 0) << "the small kernel for the short ones";
}

// A kernel that reads its input through a __device__ pointer the host sets with
// cudaMemcpyToSymbol (older code's texture shims, a global table's base): "address_of" sets it to
// the buffer as the call passes it, again where a call passes another. A symbol set to the wrong
// buffer (the output) is rejected; runtime calls on two buffers in turn read each its own.
TEST(KernelSpecGpu, ADevicePointerSymbolHoldsTheAddressOfTheCallsBuffer) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_address");
  std::ofstream(dir.file("ptr.cu")) << R"CUDA(
__device__ const float* g_x;
template <int B>
__global__ void via_ptr(float* y, int n) {
  const int i = blockIdx.x * B + threadIdx.x;
  if (i < n) y[i] = 3 * g_x[i];
}
__global__ void direct(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 3 * x[i];
}
)CUDA";
  const std::string text = R"JSON({
  "name": "via_ptr", "sources": ["ptr.cu"], "kernel": "via_ptr<{B}>", "params_as": "template", "dims": ["n"],
  "params": {"B": [64, 256]},
  "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"], "args": ["y", "n_"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out", "rtol": 0, "atol": 0},
           {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
  "symbols": [{"name": "g_x", "address_of": "x"}],
  "check": {"reference": {"kernel": "direct", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128], "args": ["x", "y", "n_"]}}}
})JSON";
  const std::string op = load_kernel_spec_text(text, "ptr.json", dir.path.string());
  std::string wrong_text = text;
  wrong_text.replace(wrong_text.find("\"address_of\": \"x\""), std::strlen("\"address_of\": \"x\""), "\"address_of\": \"y\"");
  wrong_text.replace(wrong_text.find("\"via_ptr\""), std::strlen("\"via_ptr\""), "\"via_ptr_wrong\"");
  const std::string wrong = load_kernel_spec_text(wrong_text, "ptr_wrong.json", dir.path.string());
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  for (int b : {64, 256}) {
    const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"B", b}}, Problem::parse(op, "100000"), 5, 2);
    EXPECT_TRUE(v.pass) << "B " << b << ": " << v.summary();
  }
  auto wrong_runner = make_op_runner(wrong, compiler, *d);
  const VerifyResult bad = check_config(*wrong_runner, compiler, *d, wrong, Config{{"B", 64}}, Problem::parse(wrong, "100000"), 5);
  EXPECT_FALSE(bad.pass) << "a pointer set to y passed for x: " << bad.summary();
  RuntimeOptions o;
  o.db_path = dir.file("none.db");
  Runtime rt(o);
  const int n = 1000;
  const Problem p = Problem::parse(op, std::to_string(n));
  DeviceBuffer x1(n * 4, "x1"), x2(n * 4, "x2"), y(n * 4, "y");
  check_cu(driver().cuMemsetD32Async(x1.ptr(), 0x3f800000u, n, nullptr), "cuMemsetD32Async", "x1"); // 1
  check_cu(driver().cuMemsetD32Async(x2.ptr(), 0x40000000u, n, nullptr), "cuMemsetD32Async", "x2"); // 2
  for (const auto& [x, want] : {std::pair{&x1, 3.f}, std::pair{&x2, 6.f}, std::pair{&x1, 3.f}}) {
    rt.run(p, {reinterpret_cast<void*>(x->ptr()), reinterpret_cast<void*>(y.ptr())}, nullptr);
    check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", op);
    std::vector<float> got(n);
    check_cu(driver().cuMemcpyDtoH(got.data(), y.ptr(), n * 4), "cuMemcpyDtoH", "y");
    EXPECT_EQ(got.front(), want);
    EXPECT_EQ(got.back(), want);
  }
}

// A grid-stride kernel launched with so many blocks an SM (NVIDIA's grid-stride loop idiom: the
// SM count from cudaDeviceGetAttribute): the grid and the count the kernel takes come from the GPU
// the launch runs on. The kernel writes its grid's size, which the check compares with the count
// the reference gets; the runtime's call shows the count is the device's SM count.
TEST(KernelSpecGpu, AGridOfBlocksAnSmFollowsTheDeviceItRunsOn) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_sms");
  std::ofstream(dir.file("stride.cu")) << R"CUDA(
template <int B>
__global__ void twice(const float* x, float* y, int* g, int n, int blocks) {
  if (blockIdx.x == 0 && threadIdx.x == 0) g[0] = gridDim.x;
  for (int i = blockIdx.x * B + threadIdx.x; i < n; i += gridDim.x * B) y[i] = 2 * x[i];
}
__global__ void twice_ref(const float* x, float* y, int* g, int n, int blocks) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) g[0] = blocks;
  if (i < n) y[i] = 2 * x[i];
}
)CUDA";
  const std::string op = load_kernel_spec_text(R"JSON({
  "name": "twice_sms", "sources": ["stride.cu"], "kernel": "twice<{B}>", "params_as": "template", "dims": ["n"],
  "params": {"B": [128, 256], "PER_SM": [1, 2, 4]},
  "launch": {"grid": ["min(ceil_div(n, B), PER_SM * sm_count)"], "block": ["B"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
           {"name": "g", "kind": "buffer", "dtype": "i32", "count": 1, "intent": "out"},
           {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"},
           {"name": "blocks", "kind": "scalar", "dtype": "i32", "value": "min(ceil_div(n, B), PER_SM * sm_count)"}],
  "check": {"reference": {"kernel": "twice_ref", "config": {"B": 128, "PER_SM": 2},
                          "launch": {"grid": ["ceil_div(n, 256)"], "block": [256]}}}
})JSON", "twice_sms.json", dir.path.string());
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  for (const char* n : {"1000", "3000000"})
    for (int b : {128, 256})
      for (int per : {1, 2, 4}) {
        const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"B", b}, {"PER_SM", per}}, Problem::parse(op, n), 3);
        // The reference writes the count the config's launch would pass at B 128, PER_SM 2.
        const bool same = std::min<long long>((std::atoll(n) + b - 1) / b, per * d->sm_count) ==
                          std::min<long long>((std::atoll(n) + 127) / 128, 2 * d->sm_count);
        EXPECT_EQ(v.pass, same) << n << " B " << b << " PER_SM " << per << ": " << v.summary();
      }
  RuntimeOptions o;
  o.db_path = dir.file("none.db");
  Runtime rt(o);
  const int n = 1 << 22;
  DeviceBuffer dx(size_t(n) * 4, "x"), dy(size_t(n) * 4, "y"), dg(4, "g");
  check_cu(driver().cuMemsetD32Async(dx.ptr(), 0x3f800000u, size_t(n), nullptr), "cuMemsetD32Async", "x");
  rt.run(Problem::parse(op, std::to_string(n)),
         {reinterpret_cast<void*>(dx.ptr()), reinterpret_cast<void*>(dy.ptr()), reinterpret_cast<void*>(dg.ptr())}, nullptr);
  check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", op);
  int g = 0;
  float y = 0;
  check_cu(driver().cuMemcpyDtoH(&g, dg.ptr(), 4), "cuMemcpyDtoH", "g");
  check_cu(driver().cuMemcpyDtoH(&y, dy.ptr() + size_t(n - 1) * 4, 4), "cuMemcpyDtoH", "y");
  const Selection sel = rt.best_config(Problem::parse(op, std::to_string(n)));
  EXPECT_EQ(g, int(sel.config["PER_SM"]) * d->sm_count) << "the served config's blocks an SM times the GPU's " << d->sm_count << " SMs";
  EXPECT_EQ(y, 2.f);
}

// A host loop that reads a whole array back after every round and goes on while its largest
// element is above a tolerance (pagerank's max difference, an iteration's residual): x' = x / 2 + b
// per element until no element moves more than 1e-6, from x_i = i (element 0 settles some 16
// rounds before element 10^5); and a chunked host loop that passes each
// round's chunk of its buffers (`x + t * C`). The reference iterates the same arithmetic in one
// block (a round apart at most, where the two compile it differently: within 1e-5 then, since
// the last round moved no element more than 1e-6).
constexpr const char* kConvergeSource = R"CUDA(
template <int B>
__global__ void halve(const float* x, const float* b, float* y, float* diff, int n) {
  const int i = blockIdx.x * B + threadIdx.x;
  if (i >= n) return;
  const float v = 0.5f * x[i] + b[i];
  diff[i] = fabsf(v - x[i]);
  y[i] = v;
}
__global__ void halve_ref(float* x, const float* b, int n) {
  __shared__ float worst[1024];
  for (int round = 0; round < 1000; ++round) {
    float w = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      const float v = 0.5f * x[i] + b[i];
      w = fmaxf(w, fabsf(v - x[i]));
      x[i] = v;
    }
    worst[threadIdx.x] = w;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) worst[threadIdx.x] = fmaxf(worst[threadIdx.x], worst[threadIdx.x + s]);
      __syncthreads();
    }
    const bool done = !(worst[0] > 1e-6f);
    __syncthreads();
    if (done) return;
  }
}
template <int B>
__global__ void twice(const float* x, float* y, int c) {
  const int i = blockIdx.x * B + threadIdx.x;
  if (i < c) y[i] = 2 * x[i];
}
__global__ void twice_ref(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2 * x[i];
}
)CUDA";

constexpr const char* kConvergeSpec = R"JSON({
  "name": "halve", "sources": ["converge.cu"], "params_as": "template", "dims": ["n"], "params": {"B": [64, 256]},
  "launch": {"repeat": 1000, "while": "max_of(diff) > 1e-6", "swap": [["x", "y"]], "kernel": "halve<{B}>",
             "grid": ["ceil_div(n, B)"], "block": ["B"], "args": ["x", "b", "y", "diff", "n_"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "inout", "fill": "ramp",
            "atol": 1e-5, "rtol": 0},
           {"name": "b", "kind": "buffer", "dtype": "f32", "count": "n", "fill": {"random": [-1, 1]}},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "temp"},
           {"name": "diff", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "temp"},
           {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
  "check": {"reference": {"kernel": "halve_ref", "launch": {"grid": [1], "block": [1024], "args": ["x", "b", "n_"]}}}
})JSON";

constexpr const char* kChunksSpec = R"JSON({
  "name": "chunks", "sources": ["converge.cu"], "params_as": "template", "dims": ["n"], "params": {"B": [64, 256], "C": [100, 4096]},
  "launch": {"repeat": "ceil_div(n, C)", "index": "t", "kernel": "twice<{B}>", "grid": ["ceil_div(C, B)"], "block": ["B"],
             "args": [{"arg": "x", "offset": "t * C"}, {"arg": "y", "offset": "t * C"}, "c"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out", "atol": 0, "rtol": 0},
           {"name": "c", "kind": "scalar", "dtype": "i32", "value": "min(C, n - t * C)"},
           {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
  "check": {"reference": {"kernel": "twice_ref", "launch": {"grid": ["ceil_div(n, 256)"], "block": [256], "args": ["x", "y", "n_"]}}}
})JSON";

TEST(KernelSpecGpu, AConditionOverAWholeBufferAndBuffersPassedFromAnElementOn) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_converge");
  std::ofstream(dir.file("converge.cu")) << kConvergeSource;
  std::ofstream(dir.file("halve.json")) << kConvergeSpec;
  std::ofstream(dir.file("chunks.json")) << kChunksSpec;
  const std::string op = load_kernel_spec(dir.file("halve.json")), chunks = load_kernel_spec(dir.file("chunks.json"));
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  auto chunk_runner = make_op_runner(chunks, compiler, *d);
  for (const char* shape : {"100000", "777", "5"})
    for (int b : {64, 256}) {
      const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"B", b}}, Problem::parse(op, shape), 3, 2);
      EXPECT_TRUE(v.pass) << shape << " B " << b << ": " << v.summary();
      for (int c : {100, 4096}) {
        const VerifyResult vc = check_config(*chunk_runner, compiler, *d, chunks, Config{{"B", b}, {"C", c}}, Problem::parse(chunks, shape), 3);
        EXPECT_TRUE(vc.pass) << "chunks " << shape << " B " << b << " C " << c << ": " << vc.summary();
      }
    }
  // The first element alone decides: the loop stops when element 0 settles, before the others.
  std::string first = kConvergeSpec;
  first.replace(first.find("max_of(diff)"), std::strlen("max_of(diff)"), "diff");
  first.replace(first.find("\"halve\""), 7, "\"halve_first\"");
  const std::string early = load_kernel_spec_text(first, "first.json", dir.path.string());
  auto early_runner = make_op_runner(early, compiler, *d);
  const VerifyResult e = check_config(*early_runner, compiler, *d, early, Config{{"B", 64}}, Problem::parse(early, "100000"), 3);
  EXPECT_FALSE(e.pass) << "a loop that stopped when its first element settled passed: " << e.summary();
  // Every round given the first chunk of y: the rest is never written, and the check fails it.
  std::string fixed = kChunksSpec;
  fixed.replace(fixed.find("{\"arg\": \"y\", \"offset\": \"t * C\"}"), std::strlen("{\"arg\": \"y\", \"offset\": \"t * C\"}"), "\"y\"");
  fixed.replace(fixed.find("\"chunks\""), 8, "\"chunks_fixed\"");
  const std::string one = load_kernel_spec_text(fixed, "fixed.json", dir.path.string());
  auto one_runner = make_op_runner(one, compiler, *d);
  const VerifyResult f = check_config(*one_runner, compiler, *d, one, Config{{"B", 64}, {"C", 100}}, Problem::parse(one, "777"), 3);
  EXPECT_FALSE(f.pass) << "rounds that all wrote y's first chunk passed: " << f.summary();
}

// mri-q's host loop: a long array copied into __constant__ memory a tile a round, each round's
// kernel adding what its tile gives. The reference reads the whole array from global memory.
constexpr const char* kTilesSource = R"CUDA(
__constant__ float ck[256];
__global__ void tiles_zero(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 0;
}
template <int B>
__global__ void tiles_add(const float* x, float* out, int n, int kn) {
  const int i = blockIdx.x * B + threadIdx.x;
  if (i >= n) return;
  float a = out[i];
  for (int j = 0; j < kn; ++j) a += cosf(ck[j] * x[i]);
  out[i] = a;
}
__global__ void tiles_ref(const float* x, const float* kvals, float* out, int n, int K) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double a = 0;
  for (int j = 0; j < K; ++j) a += cos((double)kvals[j] * x[i]);
  out[i] = float(a);
}
)CUDA";

constexpr const char* kTilesSpec = R"JSON({
  "name": "tiles", "sources": ["tiles.cu"], "params_as": "template", "dims": ["n", "K"],
  "params": {"B": [64, 256], "TILE": [64, 100, 256, 512]},
  "launch": [{"kernel": "tiles_zero", "grid": ["ceil_div(n, 256)"], "block": [256], "args": ["out", "n_"]},
             {"repeat": "ceil_div(K, TILE)", "index": "t", "kernel": "tiles_add<{B}>", "grid": ["ceil_div(n, B)"],
              "block": ["B"], "args": ["x", "out", "n_", "kt"]}],
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
           {"name": "kvals", "kind": "buffer", "dtype": "f32", "count": "K", "fill": {"random": [-3, 3]}},
           {"name": "out", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out", "atol": "1e-6 * K", "rtol": 1e-5},
           {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"},
           {"name": "K_", "kind": "scalar", "dtype": "i32", "value": "K"},
           {"name": "kt", "kind": "scalar", "dtype": "i32", "value": "min(TILE, K - t * TILE)"}],
  "symbols": [{"name": "ck", "from": "kvals", "offset": "t * TILE", "count": "min(TILE, K - t * TILE)"}],
  "check": {"reference": {"kernel": "tiles_ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128],
                                                            "args": ["x", "kvals", "out", "n_", "K_"]}}}
})JSON";

TEST(KernelSpecGpu, ASymbolHoldsEachRoundsTileOfALongArray) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_tiles");
  std::ofstream(dir.file("tiles.cu")) << kTilesSource;
  std::ofstream(dir.file("tiles.json")) << kTilesSpec;
  const std::string op = load_kernel_spec(dir.file("tiles.json"));
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  for (const char* shape : {"10000x1000", "3000x77", "5000x256"})
    for (int tile : {64, 100, 256})
      for (int b : {64, 256}) {
        const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"B", b}, {"TILE", tile}}, Problem::parse(op, shape), 5, 2);
        EXPECT_TRUE(v.pass) << shape << " TILE " << tile << " B " << b << ": " << v.summary();
      }
  // Every round given the first tile (no offset): the check fails it.
  std::string first = kTilesSpec;
  const std::string offset = "\"offset\": \"t * TILE\", ";
  first.erase(first.find(offset), offset.size());
  first.replace(first.find("\"tiles\""), 7, "\"tiles_first\"");
  const std::string wrong = load_kernel_spec_text(first, "first.json", dir.path.string());
  auto wrong_runner = make_op_runner(wrong, compiler, *d);
  const VerifyResult w = check_config(*wrong_runner, compiler, *d, wrong, Config{{"B", 64}, {"TILE", 64}}, Problem::parse(wrong, "3000x1000"), 5);
  EXPECT_FALSE(w.pass) << "rounds that all read the first tile passed: " << w.summary();
  // A tile larger than the symbol: the call fails naming both sizes.
  try {
    check_config(*runner, compiler, *d, op, Config{{"B", 64}, {"TILE", 512}}, Problem::parse(op, "3000x1000"), 5);
    ADD_FAILURE() << "a 2048-byte tile went into a 1024-byte symbol";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("the symbol holds 1024 bytes, the slice 2048"), std::string::npos) << e.what();
  }
}

// A kernel that synchronizes its grid (cooperative groups' grid.sync()) between writing one
// partial sum a block and block 0 adding them: launched cooperative and persistent (its grid
// capped to the blocks resident at once), at every block size it sums what the FP64 reference does.
constexpr const char* kGridSumSource = R"CUDA(
#include <cooperative_groups.h>
template <int BLOCK>
__device__ double block_sum(double v) {
  __shared__ double s[BLOCK];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int w = BLOCK / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  const double r = s[0];
  __syncthreads();
  return r;
}
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) grid_sum(const float* x, double* partials, float* out, long long n) {
  double acc = 0;
  for (long long i = blockIdx.x * (long long)BLOCK + threadIdx.x; i < n; i += (long long)gridDim.x * BLOCK) acc += x[i];
  acc = block_sum<BLOCK>(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
  cooperative_groups::this_grid().sync();
  if (blockIdx.x != 0) return;
  double t = 0;
  for (unsigned i = threadIdx.x; i < gridDim.x; i += BLOCK) t += partials[i];
  t = block_sum<BLOCK>(t);
  if (threadIdx.x == 0) out[0] = float(t);
}
// The same with the partials after the sum in its output (as cuda-samples' reductionMultiBlockCG
// keeps them): only out[0] is the answer.
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) grid_sum_out(const float* x, float* out, long long n) {
  double acc = 0;
  for (long long i = blockIdx.x * (long long)BLOCK + threadIdx.x; i < n; i += (long long)gridDim.x * BLOCK) acc += x[i];
  acc = block_sum<BLOCK>(acc);
  if (threadIdx.x == 0) out[1 + blockIdx.x] = float(acc);
  cooperative_groups::this_grid().sync();
  if (blockIdx.x != 0) return;
  double t = 0;
  for (unsigned i = threadIdx.x; i < gridDim.x; i += BLOCK) t += out[1 + i];
  t = block_sum<BLOCK>(t);
  if (threadIdx.x == 0) out[0] = float(t);
}
__global__ void grid_sum_ref(const float* x, float* out, long long n) {
  double acc = 0;
  for (long long i = threadIdx.x; i < n; i += blockDim.x) acc += x[i];
  acc = block_sum<1024>(acc);
  if (threadIdx.x == 0) out[0] = float(acc);
}
)CUDA";

constexpr const char* kGridSumSpec = R"JSON({
  "name": "grid_sum", "sources": ["grid_sum.cu"], "kernel": "grid_sum<{BLOCK}>", "params_as": "template", "dims": ["n"],
  "params": {"BLOCK": [128, 256, 512, 1024]},
  "launch": {"grid": ["ceil_div(n, BLOCK)"], "block": ["BLOCK"], "persistent": true, "cooperative": true,
             "args": ["x", "partials", "out", "n"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n", "fill": {"random": [0, 1]}},
           {"name": "partials", "kind": "buffer", "dtype": "f64", "count": "ceil_div(n, BLOCK)", "intent": "temp"},
           {"name": "out", "kind": "buffer", "dtype": "f32", "count": 1, "intent": "out", "rtol": 1e-6},
           {"name": "n", "kind": "scalar", "dtype": "i64", "value": "n"}],
  "check": {"reference": {"kernel": "grid_sum_ref", "launch": {"grid": [1], "block": [1024], "args": ["x", "out", "n"]}}}
})JSON";

TEST(KernelSpecGpu, ACooperativeLaunchSynchronizesItsGrid) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_coop");
  std::ofstream(dir.file("grid_sum.cu")) << kGridSumSource;
  std::ofstream(dir.file("grid_sum.json")) << kGridSumSpec;
  const std::string op = load_kernel_spec(dir.file("grid_sum.json"));
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  const Problem p = Problem::parse(op, "10000019"); // 10 M: many more blocks than are resident
  for (int block : {128, 256, 512, 1024}) {
    const Config c{{"BLOCK", block}};
    ASSERT_TRUE(find_family(op).launch_plan(c, p).steps[0].cooperative);
    const VerifyResult v = check_config(*runner, compiler, *d, op, c, p, 6);
    EXPECT_TRUE(v.pass) << c.to_json() << ": " << v.summary();
  }
  // The partials in the output after the answer, checked against a config of the kernel itself
  // (1024 threads a block: other partials, fewer of them): check_count 1 compares out[0] alone;
  // without it the partials are compared too, and differ. (A reference kernel that leaves them
  // unwritten needs no check_count: an element the reference leaves NaN is not compared.)
  for (bool first_only : {true, false}) {
    std::string text = R"JSON({
  "name": "grid_sum_out", "sources": ["grid_sum.cu"], "kernel": "grid_sum_out<{BLOCK}>", "params_as": "template", "dims": ["n"],
  "params": {"BLOCK": [256, 1024]},
  "launch": {"grid": ["ceil_div(n, BLOCK)"], "block": ["BLOCK"], "persistent": true, "cooperative": true},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n", "fill": {"random": [0, 1]}},
           {"name": "out", "kind": "buffer", "dtype": "f32", "count": "1 + ceil_div(n, 256)", "intent": "out", "rtol": 1e-6CHECK},
           {"name": "n", "kind": "scalar", "dtype": "i64", "value": "n"}],
  "check": {"reference": {"config": {"BLOCK": 1024}}}
})JSON";
    text.replace(text.find("CHECK"), 5, first_only ? ", \"check_count\": 1" : "");
    const std::string o = load_kernel_spec_text(text, "grid_sum_out.json", dir.path.string());
    auto r = make_op_runner(o, compiler, *d);
    const VerifyResult v = check_config(*r, compiler, *d, o, Config{{"BLOCK", 256}}, Problem::parse(o, "10000019"), 6);
    EXPECT_EQ(v.pass, first_only) << (first_only ? "out[0] is the sum: " : "the partials differ from the reference's: ") << v.summary();
  }
}

// Two inputs filled from one file, one with all its elements and one with its first: each gets its
// own count of them (the runner converts a file per argument count, not once per file).
TEST(KernelSpecGpu, InputsFromOneFileTakeTheirOwnCounts) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_one_file");
  std::ofstream(dir.file("planted.cu")) << kPlantedSource;
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000,), }";
  header.resize(118, ' ');
  header += '\n';
  std::ofstream npy(dir.file("v.npy"), std::ios::binary);
  npy << std::string("\x93NUMPY\x01\x00", 8) << char(header.size() & 0xff) << char(header.size() >> 8) << header;
  for (int i = 0; i < 1000; ++i) {
    const float v = 0.5f + 0.001f * float(i);
    npy.write(reinterpret_cast<const char*>(&v), 4);
  }
  npy.close();
  auto spec = nlohmann::json::parse(kPlantedSpec);
  spec["params"]["FAULT"] = {0};
  spec["args"][0]["fill"] = {{"file", "v.npy"}};
  spec["args"][1]["fill"] = {{"file", "v.npy"}};
  std::ofstream(dir.file("one_file.json")) << spec.dump();
  const std::string op = load_kernel_spec(dir.file("one_file.json"));
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  const Family f = find_family(op);
  const Problem p = Problem::parse(op, "1000");
  const Config c{{"FAULT", 0}};
  const auto k = compiler.compile(compile_request(f, c, p, d->arch));
  Module m(k->cubin, k->lowered_names, "one file");
  const LaunchPlan plan = f.launch_plan(c, p);
  const VerifyResult v = check_as_served_and_timed(*runner, p, 9, Numerics::standard, [&](CUstream s) { runner->launch(m, plan, s); });
  EXPECT_TRUE(v.pass) << v.summary();
  EXPECT_EQ(v.guard_writes, 0u) << v.summary();
}

// A launch-time cluster shape ("cluster" in a launch step) reaches the kernel: each block reads
// its cluster's size (%cluster_nctarank) and writes x only where it is the config's CL, zero
// elsewhere, so a launch without the cluster fails the check. CL 4 does not tile a grid of 6
// blocks: that config is not valid.
TEST(KernelSpecGpu, ALaunchTimeClusterShapeReachesTheKernel) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  if (d->arch_number() < 90) GTEST_SKIP() << "clusters need sm_90";
  TempDir dir("spec_cluster");
  std::ofstream(dir.file("cl.cu")) << R"CUDA(
template <int CL>
__global__ void copy_in_cluster(const float* x, float* y, int n) {
  unsigned size;
  asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = size == CL ? x[i] : 0.0f;
}
__global__ void copy_ref(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}
)CUDA";
  std::ofstream(dir.file("cl.json")) << R"JSON({
  "name": "cluster_copy", "sources": ["cl.cu"], "kernel": "copy_in_cluster<{CL}>", "params_as": "template",
  "dims": ["n"], "params": {"CL": [1, 2, 4]},
  "launch": {"grid": ["ceil_div(n, 128)"], "block": [128], "cluster": ["CL"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
           {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
  "check": {"reference": {"kernel": "copy_ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}, "rtol": 0, "atol": 0}
})JSON";
  const std::string op = load_kernel_spec(dir.file("cl.json"));
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  const Family f = find_family(op);
  const Problem p = Problem::parse(op, "768"); // 6 blocks of 128
  EXPECT_FALSE(f.valid(Config{{"CL", 4}}, p, *d)) << "a cluster of 4 does not tile 6 blocks";
  for (int cl : {1, 2}) {
    const Config c{{"CL", cl}};
    ASSERT_TRUE(f.valid(c, p, *d));
    const auto k = compiler.compile(compile_request(f, c, p, d->arch));
    Module m(k->cubin, k->lowered_names, "cluster copy");
    LaunchPlan plan = f.launch_plan(c, p);
    EXPECT_EQ(plan.steps[0].cluster[0], unsigned(cl));
    const VerifyResult v = check_as_served_and_timed(*runner, p, 3, Numerics::standard, [&](CUstream s) { runner->launch(m, plan, s); });
    EXPECT_TRUE(v.pass) << "CL " << cl << ": " << v.summary();
    if (cl == 2) { // the same kernel launched without its cluster is caught
      plan.steps[0].cluster[0] = 1;
      const VerifyResult bare = check_as_served_and_timed(*runner, p, 4, Numerics::standard, [&](CUstream s) { runner->launch(m, plan, s); });
      EXPECT_FALSE(bare.pass);
      EXPECT_EQ(bare.violations, 768u) << bare.summary();
    }
  }
}

// The tuner fills a spec's buffers on the GPU (spec_check.cu) and the runtime and tests on the
// host (spec_fill_bytes): the same bits for every element type and fill, saturation of integers
// and rounding of halves included.
TEST(KernelSpecGpu, DeviceFillsEqualHostFillsForEveryType) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  CudaContext ctx(d->ordinal);
  Compiler compiler(1);
  const auto k = compiler.compile(spec_check_request(d->arch));
  Module m(k->cubin, k->lowered_names, "spec checks");
  const size_t n = 70001;
  DeviceBuffer buf(n * 8, "fill");
  std::vector<SpecFill> fills(8);
  fills[0].lo = -3e9, fills[0].hi = 5e9; // past every 32-bit integer type's range: saturates
  fills[1].lo = -1, fills[1].hi = 1;
  fills[2].kind = SpecFill::ramp;
  fills[3].kind = SpecFill::constant, fills[3].value = -1234.5678;
  fills[4].kind = SpecFill::ones;
  fills[5].kind = SpecFill::ramp, fills[5].start = -7.25, fills[5].step = 0.1, fills[5].mod = 1000;
  fills[6].lo = -50, fills[6].hi = 50, fills[6].integers = true; // whole numbers in a float buffer too
  fills[7].kind = SpecFill::ramp, fills[7].start = 3, fills[7].step = -2;
  for (int t = 0; t <= int(ElemType::u8); ++t)
    for (size_t f = 0; f < fills.size(); ++f) {
      const ElemType type = ElemType(t);
      const uint64_t seed = 0x1234567ull * (f + 1);
      CUdeviceptr x = buf.ptr();
      long long count = n;
      const DeviceFill df = device_fill(fills[f]);
      int kind = df.kind;
      double lo = df.lo, hi = df.hi, value = df.value;
      unsigned long long s = seed;
      void* params[] = {&x, &count, &t, &kind, &lo, &hi, &value, &s};
      launch_grid_stride(m, 0, count, *d, params, nullptr);
      std::vector<unsigned char> got(n * size_t(elem_bytes(type)));
      check_cu(driver().cuMemcpyDtoH(got.data(), buf.ptr(), got.size()), "cuMemcpyDtoH", "fill");
      EXPECT_EQ(got, spec_fill_bytes(fills[f], type, n, seed)) << to_string(type) << " fill " << f;
    }
}

// A loop condition's whole-buffer reads (max_of, min_of, sum_of) reduce on the GPU
// (spec_reduce.cuh) to what the host's loop over the copied buffer gave: max and min exactly,
// the sum within its rounding, for every element type, at sizes below one block's share and past
// the most blocks; a NaN anywhere reads NaN (the call then fails).
TEST(KernelSpecGpu, WholeBufferReadsReduceOnTheGpuAsTheHostWould) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  CudaContext ctx(d->ordinal);
  Compiler compiler(1);
  CompileRequest req;
  req.source = "#include \"spec_reduce.cuh\"\n";
  req.source_name = "reduce_test.cu";
  req.name_expressions = {"ktune_spec_reduce"};
  req.arch = d->arch;
  req.context = "whole-buffer reads";
  const auto k = compiler.compile(req);
  Module m(k->cubin, k->lowered_names, req.context);
  const size_t most = (size_t(kReduceBlocks) * 2048) * 3 + 17; // past the most blocks: each strides
  DeviceBuffer buf(most * 8, "values"), scratch(kReduceScratchBytes, "scratch");
  SpecFill fill;
  fill.lo = -1000, fill.hi = 1000;
  auto reduce = [&](size_t n, ElemType type, int op) {
    CUdeviceptr x = buf.ptr(), partials = scratch.ptr(), arrived = scratch.ptr() + 8 * kReduceBlocks, out = arrived + 8;
    long long count = (long long)n;
    int t = int(type);
    check_cu(driver().cuMemsetD32Async(arrived, 0, 1, nullptr), "cuMemsetD32Async", "arrived");
    const unsigned grid[3] = {unsigned(std::min<long long>(kReduceBlocks, (count + 2047) / 2048)), 1, 1}, block[3] = {256, 1, 1};
    void* params[] = {&x, &count, &t, &op, &partials, &arrived, &out};
    m.launch(0, grid, block, 0, nullptr, params);
    double r = 0;
    check_cu(driver().cuMemcpyDtoH(&r, out, 8), "cuMemcpyDtoH", "result");
    return r;
  };
  for (size_t n : {size_t(1), size_t(300), size_t(70001), most})
    for (int t = 0; t <= int(ElemType::u8); ++t) {
      const ElemType type = ElemType(t);
      SpecFill f = fill;
      if (!is_float(type)) f.lo = is_unsigned(type) ? 0 : -100, f.hi = 100;
      const std::vector<unsigned char> host = spec_fill_bytes(f, type, n, 77 + n);
      check_cu(driver().cuMemcpyHtoD(buf.ptr(), host.data(), host.size()), "cuMemcpyHtoD", "values");
      double mx = -INFINITY, mn = INFINITY, sum = 0, mag = 0;
      for (size_t i = 0; i < n; ++i) {
        const double v = load_elem(host.data(), i, type);
        mx = std::max(mx, v), mn = std::min(mn, v), sum += v, mag += std::abs(v);
      }
      EXPECT_EQ(reduce(n, type, 1), mx) << to_string(type) << " max of " << n;
      EXPECT_EQ(reduce(n, type, 2), mn) << to_string(type) << " min of " << n;
      EXPECT_NEAR(reduce(n, type, 3), sum, 1e-12 * mag + 1e-300) << to_string(type) << " sum of " << n;
    }
  // A NaN, here the last of 70001 floats: every read is NaN.
  std::vector<float> v(70001, 1.f);
  v.back() = NAN;
  check_cu(driver().cuMemcpyHtoD(buf.ptr(), v.data(), v.size() * 4), "cuMemcpyHtoD", "values");
  for (int op : {1, 2, 3}) EXPECT_TRUE(std::isnan(reduce(v.size(), ElemType::f32, op))) << "op " << op;
}

// A spec's baseline given as a config of the kernel itself is timed as that config's trial is:
// the tuner's ratio of the one to the other is 1 (within timing noise), where finding the
// baseline's module inside each timed call once made a 10 us copy read as 0.5 ms.
TEST(KernelSpecGpu, AConfigBaselineTimesAsThatConfigsTrial) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_config_baseline");
  std::ofstream(dir.file("copy.cu")) << "template <int B>\n__global__ void copy(float* y, const float* x, int n) {\n"
                                        "  const int i = blockIdx.x * B + threadIdx.x;\n  if (i < n) y[i] = x[i];\n}\n";
  std::ofstream(dir.file("copy.json")) << R"JSON({
  "name": "config_baseline_copy", "sources": ["copy.cu"], "params_as": "template", "dims": ["n"], "params": {"B": [256]},
  "launch": {"kernel": "copy<{B}>", "grid": ["ceil_div(n, B)"], "block": ["B"]},
  "baseline": {"config": {"B": 256}},
  "args": [{"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
           {"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
           {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
  "check": {"reference": {"kernel": "copy<256>", "launch": {"grid": ["ceil_div(n, 256)"], "block": [256]}}}
})JSON";
  const auto tuned = ktune::testing::run_ktune("tune --kernel " + dir.file("copy.json") + " --problem 1048576 --db " + dir.file("k.db") +
                                               " --strategy exhaustive --warm-start none");
  ASSERT_EQ(tuned.status, 0) << tuned.out;
  const size_t at = tuned.out.find("x baseline");
  ASSERT_NE(at, std::string::npos) << tuned.out;
  const size_t from = tuned.out.find_last_of(' ', at) + 1;
  const double ratio = std::stod(tuned.out.substr(from, at - from));
  EXPECT_GT(ratio, 0.8) << tuned.out;
  EXPECT_LT(ratio, 1.25) << "the baseline, the same config, read slower than its trial: " << tuned.out;
}

// A reference and a baseline that take NVRTC seconds to compile (2^16 class instantiations in the
// source, none of it in the kernel) are compiled once, ahead of the problem's trials, under
// --load-timeout: with --timeout 2 every trial verifies. When the worker compiled them inside the
// first trial, that trial timed out (bitsandbytes' kDequantizeBlockwise, whose 6.8 MB module's
// reference compile took a fresh worker's first trial past 30 s).
TEST(KernelSpecGpu, AReferenceSlowToCompileCountsInNoTrialsLimit) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_slow_reference");
  std::ofstream(dir.file("slow.cu")) << R"CUDA(
template <int L, int I> struct Spin { static constexpr unsigned v = Spin<L - 1, 2 * I>::v ^ Spin<L - 1, 2 * I + 1>::v; };
template <int I> struct Spin<0, I> { static constexpr unsigned v = unsigned(I) * 2654435761u; };
template <int B>
__global__ void copy(float* y, const float* x, int n) {
  const int i = blockIdx.x * B + threadIdx.x;
  if (i < n) y[i] = x[i] + float(Spin<15, 0>::v & 0u);
}
)CUDA";
  std::ofstream(dir.file("slow.json")) << R"JSON({
  "name": "slow_reference_copy", "sources": ["slow.cu"], "params_as": "template", "dims": ["n"], "params": {"B": [128, 256]},
  "launch": {"kernel": "copy<{B}>", "grid": ["ceil_div(n, B)"], "block": ["B"]},
  "baseline": {"config": {"B": 256}},
  "args": [{"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
           {"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
           {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
  "check": {"reference": {"kernel": "copy<256>", "launch": {"grid": ["ceil_div(n, 256)"], "block": [256]}}}
})JSON";
  const auto t0 = std::chrono::steady_clock::now();
  const auto tuned = ktune::testing::run_ktune("tune --kernel " + dir.file("slow.json") + " --problem 1048576 --db " +
                                                   dir.file("k.db") + " --strategy exhaustive --warm-start none --timeout 2 --json",
                                               (" 2>" + dir.file("err.txt")).c_str());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ifstream err(dir.file("err.txt"));
  const std::string errs((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  ASSERT_EQ(tuned.status, 0) << tuned.out << errs;
  const auto j = nlohmann::json::parse(tuned.out);
  ASSERT_EQ(j.at("problems").size(), 1u) << tuned.out;
  const auto& trials = j["problems"][0].at("trials");
  EXPECT_EQ(trials.value("ok", 0), 2) << tuned.out << errs;
  EXPECT_EQ(trials.value("timeout", 0), 0) << tuned.out << errs;
  // That the load is what the limit spared: the source takes NVRTC longer than one trial's limit
  // (else this test shows nothing).
  const std::string op = load_kernel_spec(dir.file("slow.json"));
  Compiler compiler;
  const Problem p = Problem::parse(op, "1048576");
  const auto started = std::chrono::steady_clock::now();
  (void)compiler.compile(compile_request(find_family(op), Config::from_json(R"({"B": 256})"), p, d->arch));
  const double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_GT(compile_s, 2.0) << "the source compiles faster than the trial's limit; raise Spin's depth";
  std::cout << "tune " << wall << " s, one compile of the source " << compile_s << " s\n";
}

// Every example: tuned by the CLI, answered exactly, served by the runtime.
TEST(KernelSpecGpu, ExamplesAreTunedVerifiedAndServed) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_examples");
  const std::string db = dir.file("k.db");
  struct Ex {
    const char* name;
    const char* shape;      // tuned
    const char* untuned;    // served by first use
    DType dtype;
  };
  const Ex examples[] = {{"transpose", "2048x4096", "1000x3000", DType::f32},
                         {"reduction", "16777216", "1000003", DType::f32},
                         {"conv2d", "2048x2048", "1000x700", DType::f32},
                         {"bias_gelu", "4096x4096", "300x1024", DType::bf16},
                         {"l2norm", "16777216", "1000003", DType::f32},
                         {"jacobi", "2048x2048x20", "1000x700x5", DType::f32}};
  for (const Ex& e : examples) {
    const auto tuned = ktune::testing::run_ktune("tune --kernel " + example(e.name) + " --problem " + e.shape + " --db " + db +
                                                 " --strategy model --budget-evals 12");
    ASSERT_EQ(tuned.status, 0) << tuned.out;
    std::cout << tuned.out;
    if (std::string(e.name) == "transpose") { // its spec's baseline: the naive kernel, timed beside it
      EXPECT_NE(tuned.out.find("x baseline"), std::string::npos) << tuned.out;
    }
    const auto query = ktune::testing::run_ktune("query --kernel " + example(e.name) + " --problem " + e.shape + " --db " + db);
    EXPECT_EQ(query.status, 0) << query.out;
    EXPECT_NE(query.out.find("exact"), std::string::npos) << query.out;
  }
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  RuntimeOptions o;
  o.db_path = db;
  Runtime rt(o);
  uint64_t seed = 70;
  for (const Ex& e : examples) {
    const Kernel k = rt.kernel(example(e.name));
    auto runner = make_op_runner(k.op(), compiler, *d);
    for (const char* shape : {e.shape, e.untuned}) {
      const Problem p = Problem::parse(k.op(), shape, "", e.dtype);
      const Selection s = rt.best_config(p);
      for (Conditions c : {Conditions::as_served, Conditions::as_timed}) {
        runner->prepare(p, ++seed, c);
        runner->run_runtime(rt, nullptr);
        const VerifyResult v = runner->verify(nullptr);
        EXPECT_TRUE(v.pass) << p.key() << " " << to_string(c) << " (" << to_string(s.provenance) << "): " << v.summary();
      }
      if (shape == e.shape) {
        EXPECT_EQ(s.provenance, Provenance::exact) << p.key() << ": " << s.why;
      }
      std::cout << "[ ktune    ] " << p.key() << ": " << to_string(s.provenance) << " " << s.config.to_json() << " (" << s.why
                << ")\n";
    }
  }
}

// ktune::Kernel::launch and the C API on the transpose, compared element for element.
TEST(KernelSpecGpu, KernelLaunchAndTheCApiTransposeExactly) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_launch");
  CudaContext ctx(d->ordinal);
  const int rows = 777, cols = 1234;
  std::vector<float> in(size_t(rows) * cols), out(in.size(), -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(i % 1000) - 500.0f;
  DeviceBuffer din(in.size() * 4, "in"), dout(in.size() * 4, "out");
  check_cu(driver().cuMemcpyHtoD(din.ptr(), in.data(), in.size() * 4), "cuMemcpyHtoD", "in");
  auto wrong = [&] {
    check_cu(driver().cuMemcpyDtoH(out.data(), dout.ptr(), out.size() * 4), "cuMemcpyDtoH", "out");
    long long n = 0;
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) n += out[size_t(c) * rows + r] != in[size_t(r) * cols + c];
    return n;
  };
  RuntimeOptions o;
  o.db_path = dir.file("none.db");
  Runtime rt(o);
  const Kernel k = rt.kernel(example("transpose"));
  k.launch({rows, cols}, {din.as<void>(), dout.as<void>()});
  check_cu(driver().cuCtxSynchronize(), "cuCtxSynchronize", "transpose");
  EXPECT_EQ(wrong(), 0);
  EXPECT_THROW(k.launch({rows, cols}, {din.as<void>()}), UsageError) << "two arguments";
  EXPECT_THROW(k.launch({rows}, {din.as<void>(), dout.as<void>()}), UsageError) << "two dimensions";

  ktune_handle_t h = nullptr;
  ASSERT_EQ(ktune_create(&h, dir.file("none.db").c_str()), KTUNE_SUCCESS) << ktune_last_error();
  char op[64];
  ASSERT_EQ(ktune_kernel_load(h, example("transpose").c_str(), op, sizeof op), KTUNE_SUCCESS) << ktune_last_error();
  EXPECT_EQ(std::string(op), k.op());
  check_cu(driver().cuMemsetD8Async(dout.ptr(), 0, out.size() * 4, nullptr), "cuMemsetD8Async", "out");
  const long long dims[] = {rows, cols};
  const void* args[] = {din.as<void>(), dout.as<void>()};
  ASSERT_EQ(ktune_kernel_launch(h, op, KTUNE_R_32F, dims, 2, args, 2, nullptr), KTUNE_SUCCESS) << ktune_last_error();
  check_cu(driver().cuCtxSynchronize(), "cuCtxSynchronize", "transpose (C API)");
  EXPECT_EQ(wrong(), 0);
  EXPECT_EQ(ktune_kernel_launch(h, op, KTUNE_R_32F, dims, 2, args, 1, nullptr), KTUNE_INVALID_VALUE);
  EXPECT_NE(std::string(ktune_last_error()).find("the spec takes 2"), std::string::npos) << ktune_last_error();
  EXPECT_EQ(ktune_kernel_load(h, dir.file("missing.json").c_str(), op, sizeof op), KTUNE_INVALID_VALUE);
  EXPECT_EQ(ktune_destroy(h), KTUNE_SUCCESS);
}

// A changed source is another op: the next tune tunes it, and query says the old results are not used.
TEST(KernelSpecGpu, AChangedSourceIsTunedAfreshAndItsOldResultsAreNotServed) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_changed");
  for (const char* f : {"transpose.cu", "transpose.json"})
    fs::copy_file(std::string(KTUNE_SOURCE_DIR) + "/examples/kernels/transpose/" + f, dir.file(f));
  const std::string spec = dir.file("transpose.json"), db = dir.file("k.db");
  const std::string tune = "tune --kernel " + spec + " --problem 1024x1024 --db " + db + " --budget-evals 4";
  const auto first = ktune::testing::run_ktune(tune);
  ASSERT_EQ(first.status, 0) << first.out;
  std::ofstream(dir.file("transpose.cu"), std::ios::app) << "\n// changed\n";
  const auto before = ktune::testing::run_ktune("query --kernel " + spec + " --problem 1024x1024 --db " + db);
  EXPECT_EQ(before.status, 0) << before.out;
  EXPECT_EQ(before.out.find("exact"), std::string::npos) << "the old version's entry must not serve: " << before.out;
  EXPECT_NE(before.out.find("not used"), std::string::npos) << before.out;
  const auto second = ktune::testing::run_ktune(tune);
  ASSERT_EQ(second.status, 0) << second.out;
  // Tuned afresh under the new version's name: its trials ran (the first run's op has none here).
  auto op_in = [](const std::string& out) {
    const size_t at = out.find("transpose@");
    return at == std::string::npos ? std::string() : out.substr(at, 18);
  };
  EXPECT_NE(op_in(second.out), op_in(first.out)) << first.out << second.out;
  EXPECT_NE(second.out.find("4/0/0/0/0/0"), std::string::npos) << "four trials of the new version: " << second.out;
  const auto after = ktune::testing::run_ktune("query --kernel " + spec + " --problem 1024x1024 --db " + db);
  EXPECT_NE(after.out.find("exact"), std::string::npos) << after.out;
}

// A struct argument by value (a kernel's `Params p`): ktune lays it out as C does, fills its
// pointers with the round's buffers (a swap moves them) and its values from the problem, the
// config and the round (its counter t). Checked against a reference of plain arguments; a spec whose layout differs from the
// kernel's is refused by the GPU's parameter sizes (a field of another size) or fails the check
// (two fields of one size in the wrong order).
TEST(KernelSpecGpu, AStructArgumentCarriesTheRoundsBuffersAndItsValues) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_struct");
  std::ofstream(dir.file("rounds.cu")) << R"CUDA(
struct RoundArgs { const float* x; float* y; int n; float w; uint3 shape; int t; };
template <int B>
__global__ void round_step(RoundArgs a) {
  const int i = blockIdx.x * B + threadIdx.x;
  if (i >= a.n) return;
  const bool shaped = a.shape.x == 7u && a.shape.y == unsigned(B) && a.shape.z == unsigned(a.n);
  a.y[i] = shaped ? a.w * a.x[i] + float(a.t + 1) : __int_as_float(0x7fc00000);
}
__global__ void rounds_ref(float* x, int n, int T) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int t = 0; t < T; ++t) v = 0.5f * v + float(t + 1);
  x[i] = v;
}
)CUDA";
  const std::string spec = R"JSON({
  "name": "struct_rounds", "sources": ["rounds.cu"], "params_as": "template", "dims": ["n", "T"], "params": {"B": [64, 128]},
  "launch": {"kernel": "round_step<{B}>", "grid": ["ceil_div(n, B)"], "block": ["B"], "repeat": "T", "index": "t",
             "swap": [["x", "y"]], "args": ["a"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "inout"},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "temp"},
           {"name": "a", "kind": "struct", "fields": [{"name": "x", "buffer": "x"}, {"name": "y", "buffer": "y"},
                                                      {"name": "n", "dtype": "i32", "value": "n"},
                                                      {"name": "w", "dtype": "f32", "value": 0.5},
                                                      {"name": "shape", "dtype": "u32", "value": [7, "B", "n"]},
                                                      {"name": "t", "dtype": "i32", "value": "t"}]},
           {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"},
           {"name": "T_", "kind": "scalar", "dtype": "i32", "value": "T"}],
  "check": {"reference": {"kernel": "rounds_ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128], "args": ["x", "n_", "T_"]}}}
})JSON";
  std::ofstream(dir.file("rounds.json")) << spec;
  const std::string op = load_kernel_spec(dir.file("rounds.json"));
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  for (const char* shape : {"100003x3", "100003x4"})
    for (int b : {64, 128}) {
      const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"B", b}}, Problem::parse(op, shape), 4);
      EXPECT_TRUE(v.pass) << shape << " B " << b << ": " << v.summary();
    }
  // Planted layouts: w as an f64 (the struct 48 bytes, the kernel's 40), and w before n (same size).
  auto planted = [&](const std::string& from, const std::string& to, const std::string& name) {
    std::string text = spec;
    text.replace(text.find(from), from.size(), to);
    const std::string wrong = load_kernel_spec_text(text, name, dir.path.string());
    auto r = make_op_runner(wrong, compiler, *d);
    try {
      return check_config(*r, compiler, *d, wrong, Config{{"B", 64}}, Problem::parse(wrong, "100003x3"), 4).pass;
    } catch (const Error& e) {
      return false; // refused at the launch (the parameter's size)
    }
  };
  EXPECT_FALSE(planted("\"dtype\": \"f32\", \"value\": 0.5", "\"dtype\": \"f64\", \"value\": 0.5", "wide.json"))
      << "a struct of 48 bytes passed for one of 40";
  const std::string n_field = "{\"name\": \"n\", \"dtype\": \"i32\", \"value\": \"n\"},\n";
  std::string swapped = spec;
  swapped.erase(swapped.find(n_field), n_field.size());
  const std::string w_field = "{\"name\": \"w\", \"dtype\": \"f32\", \"value\": 0.5},";
  swapped.replace(swapped.find(w_field), w_field.size(), w_field + n_field);
  EXPECT_NE(swapped, spec);
  {
    const std::string wrong = load_kernel_spec_text(swapped, "order.json", dir.path.string());
    auto r = make_op_runner(wrong, compiler, *d);
    const VerifyResult v = check_config(*r, compiler, *d, wrong, Config{{"B", 64}}, Problem::parse(wrong, "100003x3"), 4);
    EXPECT_FALSE(v.pass) << "n and w in each other's places passed: " << v.summary();
  }
  // The runtime's call: the caller passes x alone.
  expect_three_rounds_from_two(op, dir.file("none.db"));
}

// Texture objects ("kind": "texture"): a linear float4 fetch, a pitched 2D read filtered
// bilinearly, a 3D array at normalized coordinates that wrap, 8-bit texels read as normalized
// floats; checked against a reference that reads the same buffers through pointers. Planted
// sampling (point for linear, clamp for wrap, elements for normalized) fails the check. A loop
// whose second step writes the buffer an array texture reads: each round copies it again.
TEST(KernelSpecGpu, TextureArgumentsSampleTheirBuffersAsDeclared) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_texture");
  std::ofstream(dir.file("tex.cu")) << R"CUDA(
template <int BS>
__global__ void tex_sum(cudaTextureObject_t lin, cudaTextureObject_t img, cudaTextureObject_t vol, cudaTextureObject_t b,
                        float* out, int n, int w, int h, int d) {
  const int i = blockIdx.x * BS + threadIdx.x;
  if (i >= n) return;
  const float4 a = tex1Dfetch<float4>(lin, i);
  const int x = i % w, y = (i / w) % h, z = i / (w * h) % d;
  const float f = tex2D<float>(img, x + 0.25f, y + 0.75f);  // a quarter past texel x - 1: bilinear
  const float v = tex3D<float>(vol, (x + 0.5f) / w - 1.0f, (y + 0.5f) / h, (z + 0.5f) / d);  // wraps to texel x
  out[i] = a.x + 2.f * a.y + 3.f * a.z + 4.f * a.w + f + v + tex1Dfetch<float>(b, i);
}
__global__ void tex_sum_ref(const float* lin, const float* img, const float* vol, const unsigned char* b, float* out,
                            int n, int w, int h, int d, int pitch) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float* a = lin + 4 * i;
  const int x = i % w, y = (i / w) % h, z = i / (w * h) % d;
  auto at = [&](int xx, int yy) {
    xx = min(max(xx, 0), w - 1), yy = min(max(yy, 0), h - 1);
    return img[yy * pitch + xx];
  };
  // (x + 0.25, y + 0.75) less half a texel: 0.75 of the way from x - 1 to x, 0.25 from y to y + 1.
  const float f = 0.25f * 0.75f * at(x - 1, y) + 0.75f * 0.75f * at(x, y) + 0.25f * 0.25f * at(x - 1, y + 1) +
                  0.75f * 0.25f * at(x, y + 1);
  out[i] = a[0] + 2.f * a[1] + 3.f * a[2] + 4.f * a[3] + f + vol[(z * h + y) * w + x] + b[i] / 255.f;
}
__global__ void tex_step(cudaTextureObject_t xt, cudaTextureObject_t xl, float* y, int w, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 0.5f * (tex2D<float>(xt, i % w + 0.5f, i / w + 0.5f) + tex1Dfetch<float>(xl, i)) + 1.f;
}
__global__ void put_back(const float* y, float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = y[i];
}
__global__ void rounds_ref(float* x, int n, int T) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += float(T);
}
__global__ void swap_step(cudaTextureObject_t xl, float* y, float* pad, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = tex1Dfetch<float>(xl, i) + 1.f;
  if (i == 0) pad[0] = 0.f;
}
)CUDA";
  const std::string spec = R"JSON({
  "name": "tex_sum", "sources": ["tex.cu"], "kernel": "tex_sum<{BS}>", "params_as": "template", "dims": ["w", "h", "d"],
  "params": {"BS": [64, 128]},
  "launch": {"grid": ["ceil_div(w * h * d, BS)"], "block": ["BS"], "args": ["lin_t", "img_t", "vol_t", "b_t", "out", "n", "w_", "h_", "d_"]},
  "args": [{"name": "lin", "kind": "buffer", "dtype": "f32", "count": "4 * w * h * d"},
           {"name": "img", "kind": "buffer", "dtype": "f32", "count": "64 * h"},
           {"name": "vol", "kind": "buffer", "dtype": "f32", "count": "w * h * d"},
           {"name": "b", "kind": "buffer", "dtype": "u8", "count": "w * h * d", "fill": {"random": [0, 255], "integers": true}},
           {"name": "out", "kind": "buffer", "dtype": "f32", "count": "w * h * d", "intent": "out", "atol": 1e-5, "rtol": 1e-5},
           {"name": "lin_t", "kind": "texture", "buffer": "lin", "channels": 4},
           {"name": "img_t", "kind": "texture", "buffer": "img", "resource": "pitch2d", "width": "w", "height": "h", "pitch": 256,
            "filter": "linear"},
           {"name": "vol_t", "kind": "texture", "buffer": "vol", "resource": "array", "width": "w", "height": "h", "depth": "d",
            "normalized_coords": true, "address": ["wrap", "clamp"]},
           {"name": "b_t", "kind": "texture", "buffer": "b", "read": "normalized"},
           {"name": "n", "kind": "scalar", "value": "w * h * d"},
           {"name": "w_", "kind": "scalar", "value": "w"}, {"name": "h_", "kind": "scalar", "value": "h"},
           {"name": "d_", "kind": "scalar", "value": "d"}, {"name": "pitch", "kind": "scalar", "value": 64}],
  "check": {"reference": {"kernel": "tex_sum_ref", "launch": {"grid": ["ceil_div(w * h * d, 128)"], "block": [128],
                                                              "args": ["lin", "img", "vol", "b", "out", "n", "w_", "h_", "d_", "pitch"]}}}
})JSON";
  std::ofstream(dir.file("tex.json")) << spec;
  const std::string op = load_kernel_spec(dir.file("tex.json"));
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  for (const char* shape : {"40x30x5", "64x17x3"})
    for (int bs : {64, 128}) {
      const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"BS", bs}}, Problem::parse(op, shape), 4);
      EXPECT_TRUE(v.pass) << shape << " BS " << bs << ": " << v.summary();
    }
  auto planted = [&](const std::string& from, const std::string& to, const std::string& name) {
    std::string text = spec;
    EXPECT_NE(text.find(from), std::string::npos) << from;
    text.replace(text.find(from), from.size(), to);
    const std::string wrong = load_kernel_spec_text(text, name, dir.path.string());
    auto r = make_op_runner(wrong, compiler, *d);
    const VerifyResult v = check_config(*r, compiler, *d, wrong, Config{{"BS", 64}}, Problem::parse(wrong, "40x30x5"), 4);
    return v.pass;
  };
  EXPECT_FALSE(planted("\"filter\": \"linear\"", "\"filter\": \"point\"", "point.json")) << "point sampling passed for bilinear";
  EXPECT_FALSE(planted("[\"wrap\", \"clamp\"]", "\"clamp\"", "clamp.json")) << "clamped coordinates passed for wrapped";
  EXPECT_FALSE(planted("\"read\": \"normalized\"", "\"read\": \"element\"", "element.json")) << "integers passed for normalized floats";

  std::ofstream(dir.file("rounds.json")) << R"JSON({
  "name": "tex_rounds", "sources": ["tex.cu"], "dims": ["w", "h", "T"], "params": {"UNTUNED": [0]},
  "launch": {"repeat": "T", "steps": [
    {"kernel": "tex_step", "grid": ["ceil_div(w * h, 128)"], "block": [128], "args": ["xt", "xl", "y", "w_", "n"]},
    {"kernel": "put_back", "grid": ["ceil_div(w * h, 128)"], "block": [128], "args": ["y", "x", "n"]}]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "w * h", "intent": "inout"},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "w * h", "intent": "temp"},
           {"name": "xt", "kind": "texture", "buffer": "x", "resource": "array", "width": "w", "height": "h"},
           {"name": "xl", "kind": "texture", "buffer": "x"},
           {"name": "w_", "kind": "scalar", "value": "w"}, {"name": "n", "kind": "scalar", "value": "w * h"},
           {"name": "T_", "kind": "scalar", "value": "T"}],
  "check": {"reference": {"kernel": "rounds_ref", "launch": {"grid": ["ceil_div(w * h, 128)"], "block": [128], "args": ["x", "n", "T_"]}}}
})JSON";
  const std::string rop = load_kernel_spec(dir.file("rounds.json"));
  auto rrunner = make_op_runner(rop, compiler, *d);
  for (const char* shape : {"64x16x3", "100x7x4"}) {
    const VerifyResult v = check_config(*rrunner, compiler, *d, rop, Config{{"UNTUNED", 0}}, Problem::parse(rop, shape), 4);
    EXPECT_TRUE(v.pass) << shape << ": " << v.summary();
  }
  // A linear texture over a buffer a loop swaps with a temporary, placed after another temporary
  // of 256 bytes: every round's buffer is one a texture may start at.
  std::ofstream(dir.file("swap.json")) << R"JSON({
  "name": "tex_swap", "sources": ["tex.cu"], "dims": ["n", "T"], "params": {"UNTUNED": [0]},
  "launch": {"kernel": "swap_step", "grid": ["ceil_div(n, 128)"], "block": [128], "repeat": "T", "swap": [["x", "y"]],
             "args": ["xl", "y", "pad", "n_"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "inout"},
           {"name": "pad", "kind": "buffer", "dtype": "f32", "count": 64, "intent": "temp"},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "temp"},
           {"name": "xl", "kind": "texture", "buffer": "x"},
           {"name": "n_", "kind": "scalar", "value": "n"}, {"name": "T_", "kind": "scalar", "value": "T"}],
  "check": {"reference": {"kernel": "rounds_ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128], "args": ["x", "n_", "T_"]}}}
})JSON";
  const std::string sop = load_kernel_spec(dir.file("swap.json"));
  auto srunner = make_op_runner(sop, compiler, *d);
  for (const char* shape : {"1000x3", "4099x4"}) {
    const VerifyResult v = check_config(*srunner, compiler, *d, sop, Config{{"UNTUNED", 0}}, Problem::parse(sop, shape), 4);
    EXPECT_TRUE(v.pass) << shape << ": " << v.summary();
  }
  // The runtime's call: the caller passes x alone; at an address no texture may start at, refused.
  RuntimeOptions o;
  o.db_path = dir.file("none.db");
  Runtime rt(o);
  std::vector<float> hx(64 * 16 + 4, 2.f);
  DeviceBuffer dx(hx.size() * 4, "x");
  check_cu(driver().cuMemcpyHtoD(dx.ptr(), hx.data(), hx.size() * 4), "cuMemcpyHtoD", "x");
  rt.run(Problem::parse(rop, "64x16x3"), {reinterpret_cast<void*>(dx.ptr())}, nullptr);
  check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", "rounds");
  check_cu(driver().cuMemcpyDtoH(hx.data(), dx.ptr(), hx.size() * 4), "cuMemcpyDtoH", "x");
  EXPECT_EQ(hx[0], 5.f);
  EXPECT_EQ(hx[64 * 16 - 1], 5.f);
  EXPECT_EQ(hx[64 * 16], 2.f) << "past the problem's elements";
  {
    std::vector<float> h(1000, 1.f);
    DeviceBuffer dh(h.size() * 4, "x of tex_swap");
    check_cu(driver().cuMemcpyHtoD(dh.ptr(), h.data(), h.size() * 4), "cuMemcpyHtoD", "x");
    rt.run(Problem::parse(sop, "1000x3"), {reinterpret_cast<void*>(dh.ptr())}, nullptr);
    check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", "tex_swap");
    check_cu(driver().cuMemcpyDtoH(h.data(), dh.ptr(), h.size() * 4), "cuMemcpyDtoH", "x");
    EXPECT_EQ(h[0], 4.f);
    EXPECT_EQ(h[999], 4.f);
  }
  try {
    rt.run(Problem::parse(rop, "64x16x3"), {reinterpret_cast<void*>(dx.ptr() + 16)}, nullptr);
    check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", "rounds at 16 bytes");
    ADD_FAILURE() << "a texture over a buffer 16 bytes past an allocation's start";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT"), std::string::npos) << e.what();
  }
}

// A surface ("kind": "surface"): a kernel that updates an array in place through surf2Dread and
// surf2Dwrite, T rounds, then a step that reads the buffer through a linear texture: each round's
// writes reach the buffer (copied back out of the array), and the next round's array holds them.
// A planted kernel that skips the last column fails the check.
TEST(KernelSpecGpu, ASurfaceWritesReachItsBufferEveryRound) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_surface");
  std::ofstream(dir.file("surf.cu")) << R"CUDA(
template <int BX, int SKIP>
__global__ void grow(cudaSurfaceObject_t s, int w, int h) {
  const int x = blockIdx.x * BX + threadIdx.x, y = blockIdx.y;
  if (x >= w - SKIP || y >= h) return;
  const float v = surf2Dread<float>(s, x * 4, y);
  surf2Dwrite(2.f * v + 1.f, s, x * 4, y);
}
__global__ void fetch_all(cudaTextureObject_t t, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<float>(t, i);
}
__global__ void grow_ref(float* v, float* out, int n, int T) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = v[i];
  for (int t = 0; t < T; ++t) x = 2.f * x + 1.f;
  v[i] = x;
  out[i] = x;
}
)CUDA";
  const std::string spec = R"JSON({
  "name": "surf_grow", "sources": ["surf.cu"], "params_as": "template", "dims": ["w", "h", "T"],
  "params": {"BX": [64, 128], "SKIP": [0, 1]},
  "launch": [
    {"repeat": "T", "steps": [{"kernel": "grow<{BX}, {SKIP}>", "grid": ["ceil_div(w, BX)", "h"], "block": ["BX"], "args": ["s", "w_", "h_"]}]},
    {"kernel": "fetch_all", "grid": ["ceil_div(w * h, 128)"], "block": [128], "args": ["t", "out", "n"]}],
  "args": [{"name": "v", "kind": "buffer", "dtype": "f32", "count": "w * h", "intent": "inout"},
           {"name": "out", "kind": "buffer", "dtype": "f32", "count": "w * h", "intent": "out"},
           {"name": "s", "kind": "surface", "buffer": "v", "width": "w", "height": "h"},
           {"name": "t", "kind": "texture", "buffer": "v"},
           {"name": "w_", "kind": "scalar", "value": "w"}, {"name": "h_", "kind": "scalar", "value": "h"},
           {"name": "n", "kind": "scalar", "value": "w * h"}, {"name": "T_", "kind": "scalar", "value": "T"}],
  "check": {"reference": {"kernel": "grow_ref", "launch": {"grid": ["ceil_div(w * h, 128)"], "block": [128], "args": ["v", "out", "n", "T_"]}}}
})JSON";
  std::ofstream(dir.file("surf.json")) << spec;
  const std::string op = load_kernel_spec(dir.file("surf.json"));
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  for (const char* shape : {"100x7x3", "256x33x1"})
    for (int bx : {64, 128}) {
      const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"BX", bx}, {"SKIP", 0}}, Problem::parse(op, shape), 4);
      EXPECT_TRUE(v.pass) << shape << " BX " << bx << ": " << v.summary();
    }
  const VerifyResult skips = check_config(*runner, compiler, *d, op, Config{{"BX", 64}, {"SKIP", 1}}, Problem::parse(op, "100x7x3"), 4);
  EXPECT_FALSE(skips.pass) << "a kernel that leaves the last column passed: " << skips.summary();
}

// "programmatic": a step launched as a programmatic dependent of the step before it, which waits
// for it (cudaGridDependencySynchronize) before reading what it wrote: the check passes, at every
// config and round.
TEST(KernelSpecGpu, AProgrammaticStepWaitsForThePreviousKernel) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_pdl");
  std::ofstream(dir.file("pdl.cu")) << R"CUDA(
#include <cuda_device_runtime_api.h> // cudaGridDependencySynchronize under NVRTC
template <int B>
__global__ void first(const float* x, float* y, int n) {
  const int i = blockIdx.x * B + threadIdx.x;
  if (i < n) y[i] = 2.f * x[i];
}
template <int B>
__global__ void second(const float* y, float* z, int n) {
  cudaGridDependencySynchronize(); // y is the step before's
  const int i = blockIdx.x * B + threadIdx.x;
  if (i < n) z[i] = y[i] + 1.f;
}
__global__ void both_ref(const float* x, float* z, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = 2.f * x[i] + 1.f;
}
)CUDA";
  std::ofstream(dir.file("pdl.json")) << R"JSON({
  "name": "pdl_pair", "sources": ["pdl.cu"], "params_as": "template", "dims": ["n"], "params": {"B": [64, 256]},
  "launch": [{"kernel": "first<{B}>", "grid": ["ceil_div(n, B)"], "block": ["B"], "args": ["x", "y", "n_"]},
             {"kernel": "second<{B}>", "grid": ["ceil_div(n, B)"], "block": ["B"], "args": ["y", "z", "n_"], "programmatic": true}],
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "temp"},
           {"name": "z", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out", "atol": 0, "rtol": 0},
           {"name": "n_", "kind": "scalar", "value": "n"}],
  "check": {"reference": {"kernel": "both_ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128], "args": ["x", "z", "n_"]}}}
})JSON";
  const std::string op = load_kernel_spec(dir.file("pdl.json"));
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  for (const char* shape : {"1000003", "16777216"})
    for (int b : {64, 256}) {
      const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"B", b}}, Problem::parse(op, shape), 4);
      EXPECT_TRUE(v.pass) << shape << " B " << b << ": " << v.summary();
    }
}

// A value read back from a buffer a round's swap moved, at a step whose kernel takes both buffers
// of the pair: each round's count is read from the buffer that round passes as `a` (once read
// from the caller's own at every odd round: the swap's two entries mapped a back to itself).
TEST(KernelSpecGpu, AValueReadFollowsTheSwapWhereTheKernelTakesBothBuffers) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_swapped_read");
  std::ofstream(dir.file("sr.cu")) << R"CUDA(
__global__ void count_step(const float* a, float* b, float* log, int n, int t, float c) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] = a[i] + 1.f;
  if (i == 0) log[t] = c;
}
__global__ void count_ref(float* a, float* log, int n, int T) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (i == 0) {
    const float v0 = a[0];
    for (int t = 0; t < T; ++t) log[t] = v0 + float(t);
  }
  a[i] += float(T);
}
)CUDA";
  std::ofstream(dir.file("sr.json")) << R"JSON({
  "name": "swapped_read", "sources": ["sr.cu"], "dims": ["n", "T"], "params": {"UNTUNED": [0]},
  "launch": {"kernel": "count_step", "grid": ["ceil_div(n, 128)"], "block": [128], "repeat": "T", "index": "t",
             "swap": [["a", "b"]], "args": ["a", "b", "log", "n_", "t", "c"]},
  "args": [{"name": "a", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "inout", "fill": "ramp"},
           {"name": "b", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "temp"},
           {"name": "log", "kind": "buffer", "dtype": "f32", "count": "T", "intent": "out", "rtol": 0, "atol": 0},
           {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"},
           {"name": "t", "kind": "scalar", "dtype": "i32", "value": "t"},
           {"name": "c", "kind": "scalar", "dtype": "f32", "value": "a"},
           {"name": "T_", "kind": "scalar", "dtype": "i32", "value": "T"}],
  "check": {"reference": {"kernel": "count_ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128], "args": ["a", "log", "n_", "T_"]}}}
})JSON";
  const std::string op = load_kernel_spec(dir.file("sr.json"));
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  for (const char* shape : {"1000x4", "1000x5"}) {
    const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"UNTUNED", 0}}, Problem::parse(op, shape), 4);
    EXPECT_TRUE(v.pass) << shape << ": " << v.summary();
  }
}

// Address tables ("kind": "addresses"): vLLM's copy_blocks shape, every layer's K and V caches
// reached through tables of their addresses (one an int64 table, one a float**), each pointing
// into the copies the check gives the kernel under test; a planted step that writes a table fails
// the check as a written input, and the table is put back for the configs after it. A loop whose
// table follows the round's swap; the runtime's call, where the caller passes the buffers alone.
// A TMA kernel's `const __grid_constant__ CUtensorMap` ("kind": "tensor_map"): each block loads its
// tile through the map encoded at the launch for the buffer's address (as served: 16 B past a
// 256-byte boundary; zeros past the edges), at every config and two problems, verified exactly.
TEST(KernelSpecGpu, ATensorMapLoadsEachBlocksTileThroughTma) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  if (d->arch_number() < 90) GTEST_SKIP() << "TMA needs sm_90";
  TempDir dir("spec_tma");
  std::ofstream(dir.file("tma.cu")) << ktune::testing::kTmaSource;
  std::ofstream(dir.file("tma.json")) << ktune::testing::kTmaSpec;
  const std::string op = load_kernel_spec(dir.file("tma.json"));
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  for (const char* shape : {"1000x300", "4096x33"})
    for (int bx : {32, 64})
      for (int by : {4, 16}) {
        const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"BX", bx}, {"BY", by}}, Problem::parse(op, shape), 4);
        EXPECT_TRUE(v.pass) << shape << " BX " << bx << " BY " << by << ": " << v.summary();
      }
}

// A project's file that includes <cuda.h> and <cub/cub.cuh> as it is (host code skipped): its TMA
// kernel takes cuda.h's CUtensorMap and its warp reduction is CUB's; both verified at every config.
TEST(KernelSpecGpu, AFileIncludingCudaHAndCubRunsItsKernelsVerified) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  if (d->arch_number() < 90) GTEST_SKIP() << "TMA needs sm_90";
  TempDir dir("spec_toolkit_headers");
  std::ofstream(dir.file("toolkit.cu")) << ktune::testing::kToolkitSource;
  std::ofstream(dir.file("tma.json")) << ktune::testing::kToolkitTmaSpec;
  std::ofstream(dir.file("warp.json")) << ktune::testing::kToolkitWarpSpec;
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  const std::string tma = load_kernel_spec(dir.file("tma.json"));
  auto runner = make_op_runner(tma, compiler, *d);
  for (int bx : {32, 64})
    for (int by : {4, 16}) {
      const VerifyResult v = check_config(*runner, compiler, *d, tma, Config{{"BX", bx}, {"BY", by}}, Problem::parse(tma, "1000x300"), 4);
      EXPECT_TRUE(v.pass) << "BX " << bx << " BY " << by << ": " << v.summary();
    }
  const std::string warp = load_kernel_spec(dir.file("warp.json"));
  auto warp_runner = make_op_runner(warp, compiler, *d);
  for (int b : {64, 256}) {
    const VerifyResult v = check_config(*warp_runner, compiler, *d, warp, Config{{"B", b}}, Problem::parse(warp, "100003"), 4);
    EXPECT_TRUE(v.pass) << "B " << b << ": " << v.summary();
  }
}

// A project's kernel file as llm.c lays one out (its common.h's host code, cuBLAS's header, main,
// -INFINITY and uint from nvcc's implicit headers), host code skipped: its softmax verified
// against the FP64 reference at both configs and two shapes.
TEST(KernelSpecGpu, AProjectsKernelWithHostCodeInItsHeaderVerifies) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_project_header");
  std::filesystem::create_directories(dir.file("dev"));
  std::ofstream(dir.file("dev/common.h")) << ktune::testing::kProjectCommon;
  std::ofstream(dir.file("dev/softmax_forward.cu")) << ktune::testing::kProjectSoftmax;
  std::ofstream(dir.file("softmax.json")) << ktune::testing::kProjectSoftmaxSpec;
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  const std::string op = load_kernel_spec(dir.file("softmax.json"));
  auto runner = make_op_runner(op, compiler, *d);
  for (const char* shape : {"1000x768", "37x5000"})
    for (int w : {2, 8}) {
      const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"WARPS", w}}, Problem::parse(op, shape), 4);
      EXPECT_TRUE(v.pass) << shape << " WARPS " << w << ": " << v.summary();
    }
}

// `using namespace std;` at global scope with CUB (tests/ops/using_std_spec.h): the calls NVRTC
// found ambiguous, qualified by ktune, compute what the global functions named outright do, at
// both configs and two sizes.
TEST(KernelSpecGpu, GlobalUsingNamespaceStdMathVerifies) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_using_std");
  std::ofstream(dir.file("mix.cu")) << ktune::testing::kUsingStdSource;
  std::ofstream(dir.file("mix.json")) << ktune::testing::kUsingStdSpec;
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  const std::string op = load_kernel_spec(dir.file("mix.json"));
  auto runner = make_op_runner(op, compiler, *d);
  for (const char* n : {"1000", "100003"})
    for (int b : {128, 256}) {
      const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"B", b}}, Problem::parse(op, n), 4);
      EXPECT_TRUE(v.pass) << n << " B " << b << ": " << v.summary();
    }
}

// A spec whose source is already in dir, loaded as it is and with host_code skip (the spec's name
// gains "_skip"), verified at B 128 and 256 at one size: the Thrust tests' kernels must compute
// the same under both readings of their sources.
namespace {
void expect_verifies_with_and_without_skip(const DeviceInfo& d, const TempDir& dir, nlohmann::json spec, const std::string& name,
                                           const char* size) {
  for (const bool skip : {false, true}) {
    SCOPED_TRACE(skip ? "skip" : "as it is");
    spec["name"] = skip ? name + "_skip" : name;
    if (skip) spec["host_code"] = "skip";
    std::ofstream(dir.file(name + ".json")) << spec.dump();
    CudaContext ctx(d.ordinal);
    Compiler compiler;
    const std::string op = load_kernel_spec(dir.file(name + ".json"));
    auto runner = make_op_runner(op, compiler, d);
    for (int b : {128, 256}) {
      const VerifyResult v = check_config(*runner, compiler, d, op, Config{{"B", b}}, Problem::parse(op, size), 4);
      EXPECT_TRUE(v.pass) << "B " << b << ": " << v.summary();
    }
  }
}
} // namespace

// Thrust's random numbers in device code (<thrust/random.h>, whose headers ktune hands NVRTC with
// their host functions gone): thrust::minstd_rand's i-th draw, after discard(i) from the default
// seed, checked exactly against the generator's definition (x <- 48271 x mod 2^31 - 1, seed 1)
// computed in 64-bit arithmetic by a reference kernel; and a uniform draw within its range. With
// and without host_code skip.
TEST(KernelSpecGpu, ThrustsRandomNumbersAreTheGeneratorsOwn) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_thrust_random");
  std::ofstream(dir.file("rng.cu")) << R"CUDA(#include <thrust/random.h>
template <int B> __global__ void draws(unsigned* out, float* u, int n) {
  const int i = blockIdx.x * B + threadIdx.x;
  if (i >= n) return;
  thrust::minstd_rand rng;
  rng.discard(i);
  out[i] = rng();
  thrust::default_random_engine e(i + 7);
  thrust::uniform_real_distribution<float> dist(2.f, 3.f);
  const float x = dist(e);
  u[i] = x >= 2.f && x < 3.f ? 1.f : 0.f;
}
__global__ void draws_reference(unsigned* out, float* u, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned long long x = 1, a = 48271, m = 2147483647;  // x_{i+1} = a^(i+1) mod m
  for (int e = i + 1; e > 0; e >>= 1, a = a * a % m)
    if (e & 1) x = x * a % m;
  out[i] = unsigned(x);
  u[i] = 1.f;
}
)CUDA";
  const nlohmann::json spec = nlohmann::json::parse(R"JSON({
    "ktune_kernel_spec": 1, "sources": ["rng.cu"], "kernel": "draws<{B}>", "params_as": "template",
    "dims": ["n"], "params": {"B": [128, 256]}, "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "out", "kind": "buffer", "dtype": "u32", "count": "n", "intent": "out"},
             {"name": "u", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out", "rtol": 0, "atol": 0},
             {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"reference": {"kernel": "draws_reference", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON");
  expect_verifies_with_and_without_skip(*d, dir, spec, "thrust_rng", "100003");
}

// Thrust's algorithms under thrust::seq in a kernel (tests/ops/thrust_seq_spec.h): 32 results a
// thread (searches, extrema with ties, a stable sort's order, reductions, scans with and without an
// initial value, sequence and tabulate, mismatch, copy_if, a search through a transform_iterator
// and one through a thrust::device_ptr) equal the reference's plain loops exactly, at two configs
// and a ragged size, with host_code skip and without.
TEST(KernelSpecGpu, ThrustsSequentialAlgorithmsGiveThrustsResults) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_thrust_seq");
  std::ofstream(dir.file("seq.cu")) << ktune::testing::kThrustSeqSource;
  expect_verifies_with_and_without_skip(*d, dir, nlohmann::json::parse(ktune::testing::kThrustSeqSpec), "thrust_seq_gpu", "20011");
}

// A PyTorch extension's RMS norm as it is (tests/ops/torch_extension_spec.h), on at::Half with
// PyTorch's device types standing in: verified on f16 against the FP64 reference at every config
// and two shapes (a row a warp; the half arithmetic rounds as PyTorch's does).
TEST(KernelSpecGpu, APyTorchExtensionsHalfKernelVerifies) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_torch_ext");
  std::filesystem::create_directories(dir.file("csrc"));
  std::ofstream(dir.file("csrc/rms_norm_kernel.cuh")) << ktune::testing::kTorchExtKernel;
  std::ofstream(dir.file("csrc/rms_norm.cu")) << ktune::testing::kTorchExtSource;
  std::ofstream(dir.file("rms.json")) << ktune::testing::kTorchExtSpec;
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  const std::string op = load_kernel_spec(dir.file("rms.json"));
  auto runner = make_op_runner(op, compiler, *d);
  for (const char* shape : {"1000x4096", "37x1000"})
    for (int w : {1, 4, 8}) {
      const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"WARPS", w}}, Problem::parse(op, shape, "", DType::f16), 4);
      EXPECT_TRUE(v.pass) << shape << " WARPS " << w << ": " << v.summary();
    }
}

// A kernel on PyTorch's tensor accessors (tests/ops/torch_extension_spec.h): a packed accessor
// over a transposed view and a TensorInfo of the output, both struct arguments laid out as
// PyTorch's, verified at every block and two shapes; the kernel that reads the view as if it were
// contiguous (FAULT 1) is rejected.
TEST(KernelSpecGpu, APyTorchAccessorKernelVerifiesOnAStridedView) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_torch_accessor");
  std::ofstream(dir.file("scale.cu")) << ktune::testing::kTorchAccessorSource;
  std::ofstream(dir.file("scale.json")) << ktune::testing::kTorchAccessorSpec;
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  const std::string op = load_kernel_spec(dir.file("scale.json"));
  auto runner = make_op_runner(op, compiler, *d);
  for (const char* shape : {"300x77", "1024x1000"})
    for (int block : {64, 256})
      for (int fault : {0, 1}) {
        const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"BLOCK", block}, {"FAULT", fault}}, Problem::parse(op, shape), 4);
        const std::string at = std::string(shape) + " BLOCK " + std::to_string(block);
        if (fault) EXPECT_FALSE(v.pass) << at << ": the view read as contiguous passed: " << v.summary();
        else EXPECT_TRUE(v.pass) << at << ": " << v.summary();
      }
}

// Tensor maps inside a struct (a params struct of CUtensorMap members), and the same kernel's maps
// as tensor map arguments of their own: each round's block loads its tiles of x and b through the
// two maps, encoded for the buffers the round passes (x's is the last round's y after the swap),
// at every config and at an odd and an even number of rounds; a kernel that loads b's tile through
// x's map is rejected.
TEST(KernelSpecGpu, TensorMapsInAStructFollowTheRoundsBuffers) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  if (d->arch_number() < 90) GTEST_SKIP() << "TMA needs sm_90";
  TempDir dir("spec_tma_struct");
  std::ofstream(dir.file("tma_struct.cu")) << ktune::testing::kTmaStructSource;
  std::ofstream(dir.file("tma_struct.json")) << ktune::testing::kTmaStructSpec;
  std::ofstream(dir.file("tma_args.json")) << ktune::testing::kTmaArgsSpec;
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  for (const char* spec : {"tma_struct.json", "tma_args.json"}) {
    const std::string op = load_kernel_spec(dir.file(spec));
    auto runner = make_op_runner(op, compiler, *d);
    for (const char* shape : {"1000x300x3", "4096x33x4"})
      for (int bx : {32, 64})
        for (int by : {4, 16})
          for (int fault : {0, 1}) {
            const VerifyResult v =
                check_config(*runner, compiler, *d, op, Config{{"BX", bx}, {"BY", by}, {"FAULT", fault}}, Problem::parse(op, shape), 4);
            const std::string at = std::string(spec) + " " + shape + " BX " + std::to_string(bx) + " BY " + std::to_string(by);
            if (fault) EXPECT_FALSE(v.pass) << at << ": b's tile through x's map passed: " << v.summary();
            else EXPECT_TRUE(v.pass) << at << ": " << v.summary();
          }
  }
}

TEST(KernelSpecGpu, AnAddressTablePointsIntoTheRoundsBufferAndStaysIntact) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_tables");
  std::ofstream(dir.file("tables.cu")) << R"CUDA(
template <int B>
__global__ void copy_layers(long long* key_ptrs, float** value_ptrs, const long long* mapping, int block_elems) {
  float* k = reinterpret_cast<float*>(key_ptrs[blockIdx.x]);
  float* v = value_ptrs[blockIdx.x];
  const long long src = mapping[2 * blockIdx.y] * block_elems, dst = mapping[2 * blockIdx.y + 1] * block_elems;
  for (int i = threadIdx.x; i < block_elems; i += B) {
    k[dst + i] = k[src + i];
    v[dst + i] = v[src + i];
  }
}
__global__ void scribble(long long* key_ptrs) { key_ptrs[0] += 4; } // a step that writes its table
__global__ void copy_ref(float* k, float* v, const long long* mapping, long long layer_elems, int block_elems) {
  const long long base = blockIdx.x * layer_elems;
  const long long src = base + mapping[2 * blockIdx.y] * block_elems, dst = base + mapping[2 * blockIdx.y + 1] * block_elems;
  for (int i = threadIdx.x; i < block_elems; i += blockDim.x) {
    k[dst + i] = k[src + i];
    v[dst + i] = v[src + i];
  }
}
template <int B>
__global__ void rows_step(const float* const* rows, float* out, int w) {
  const int r = blockIdx.y, i = blockIdx.x * B + threadIdx.x;
  if (i < w) out[(long long)r * w + i] = 2.f * rows[r][i] + 1.f;
}
__global__ void rows_ref(float* x, long long n, int T) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int t = 0; t < T; ++t) v = 2.f * v + 1.f;
  x[i] = v;
}
)CUDA";
  const std::string copy_spec = R"JSON({
  "name": "table_copy", "sources": ["tables.cu"], "params_as": "template", "dims": ["layers", "num_blocks", "block_elems", "pairs"],
  "params": {"B": [64, 256], "FAULT": [0, 1]}, "constraints": ["2 * pairs <= num_blocks"],
  "launch": [{"kernel": "copy_layers<{B}>", "grid": ["layers", "pairs"], "block": ["B"], "args": ["key_ptrs", "value_ptrs", "mapping", "E"]},
             {"kernel": "scribble", "grid": [1], "block": [1], "args": ["key_ptrs"], "when": "FAULT == 1"}],
  "args": [{"name": "k", "kind": "buffer", "dtype": "f32", "count": "layers * num_blocks * block_elems", "intent": "inout", "atol": 0, "rtol": 0},
           {"name": "v", "kind": "buffer", "dtype": "f32", "count": "layers * num_blocks * block_elems", "intent": "inout", "atol": 0, "rtol": 0},
           {"name": "key_ptrs", "kind": "addresses", "buffer": "k", "count": "layers", "stride": "num_blocks * block_elems"},
           {"name": "value_ptrs", "kind": "addresses", "buffer": "v", "count": "layers"},
           {"name": "mapping", "kind": "buffer", "dtype": "i64", "count": "2 * pairs", "fill": {"permutation": "num_blocks"}},
           {"name": "E", "kind": "scalar", "dtype": "i32", "value": "block_elems"},
           {"name": "LE", "kind": "scalar", "dtype": "i64", "value": "num_blocks * block_elems"}],
  "check": {"reference": {"kernel": "copy_ref", "launch": {"grid": ["layers", "pairs"], "block": [256], "args": ["k", "v", "mapping", "LE", "E"]}}}
})JSON";
  std::ofstream(dir.file("copy.json")) << copy_spec;
  const std::string op = load_kernel_spec(dir.file("copy.json"));
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner(op, compiler, *d);
  for (const char* shape : {"4x64x2048x16", "3x40x999x20"})
    for (int b : {64, 256}) {
      const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"B", b}, {"FAULT", 0}}, Problem::parse(op, shape), 4);
      EXPECT_TRUE(v.pass) << shape << " B " << b << ": " << v.summary();
    }
  const Problem p = Problem::parse(op, "4x64x2048x16");
  const VerifyResult wrote = check_config(*runner, compiler, *d, op, Config{{"B", 64}, {"FAULT", 1}}, p, 4);
  EXPECT_FALSE(wrote.pass) << "a kernel that wrote its address table passed: " << wrote.summary();
  EXPECT_GT(wrote.input_writes, 0u) << wrote.summary();
  const VerifyResult after = check_config(*runner, compiler, *d, op, Config{{"B", 64}, {"FAULT", 0}}, p, 4);
  EXPECT_TRUE(after.pass) << "the table was not put back: " << after.summary();

  // A table over a buffer a loop swaps: each round's rows are that round's buffer's.
  std::ofstream(dir.file("rows.json")) << R"JSON({
  "name": "table_rows", "sources": ["tables.cu"], "params_as": "template", "dims": ["rows", "w", "T"], "params": {"B": [64, 128]},
  "launch": {"kernel": "rows_step<{B}>", "grid": ["ceil_div(w, B)", "rows"], "block": ["B"], "repeat": "T", "swap": [["x", "y"]],
             "args": ["row_ptrs", "y", "w_"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "rows * w", "intent": "inout", "rtol": 1e-6, "atol": 0},
           {"name": "y", "kind": "buffer", "dtype": "f32", "count": "rows * w", "intent": "temp"},
           {"name": "row_ptrs", "kind": "addresses", "buffer": "x", "count": "rows", "stride": "w"},
           {"name": "w_", "kind": "scalar", "value": "w"}, {"name": "n", "kind": "scalar", "dtype": "i64", "value": "rows * w"},
           {"name": "T_", "kind": "scalar", "value": "T"}],
  "check": {"reference": {"kernel": "rows_ref", "launch": {"grid": ["ceil_div(rows * w, 128)"], "block": [128], "args": ["x", "n", "T_"]}}}
})JSON";
  const std::string rows = load_kernel_spec(dir.file("rows.json"));
  auto rows_runner = make_op_runner(rows, compiler, *d);
  for (const char* shape : {"37x1000x3", "37x1000x4"})
    for (int b : {64, 128}) {
      const VerifyResult v = check_config(*rows_runner, compiler, *d, rows, Config{{"B", b}}, Problem::parse(rows, shape), 4);
      EXPECT_TRUE(v.pass) << shape << " B " << b << ": " << v.summary();
    }
  // The runtime's call (no table: first use): the caller passes x alone; 3 rounds of 2x + 1 from 1 give 15.
  RuntimeOptions o;
  o.db_path = dir.file("none.db");
  Runtime rt(o);
  std::vector<float> hx(37 * 1000, 1.f);
  DeviceBuffer dx(hx.size() * 4, "x");
  check_cu(driver().cuMemcpyHtoD(dx.ptr(), hx.data(), hx.size() * 4), "cuMemcpyHtoD", "x");
  for (int call = 0; call < 2; ++call) { // the second finds its table made
    check_cu(driver().cuMemcpyHtoD(dx.ptr(), hx.data(), hx.size() * 4), "cuMemcpyHtoD", "x");
    rt.run(Problem::parse(rows, "37x1000x3"), {reinterpret_cast<void*>(dx.ptr())}, nullptr);
    check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", "rows");
    std::vector<float> got(hx.size());
    check_cu(driver().cuMemcpyDtoH(got.data(), dx.ptr(), got.size() * 4), "cuMemcpyDtoH", "x");
    EXPECT_EQ(std::count(got.begin(), got.end(), 15.f), std::ptrdiff_t(got.size())) << "call " << call;
  }
}

// Dynamic shared memory given as a C++ constant of the source ("shared_memory": {"constant":
// ...}): each config launches with its traits' bytes (the kernel compares %dynamic_smem_size with
// them), past the default 48 KB where B is 128; a CUB BlockScan's TempStorage sized by sizeof, two
// scans through it.
TEST(KernelSpecGpu, SharedMemoryFromACppConstantReachesTheLaunch) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_smem_constant");
  std::ofstream(dir.file("sm.cu")) << R"CUDA(
#include <cub/block/block_scan.cuh>
template <int B> struct Traits { static constexpr int kSmem = B * 400; };
template <int B>
__global__ void fill_smem(float* y, int n) {
  extern __shared__ float buf[];
  unsigned got;
  asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(got));
  const int words = Traits<B>::kSmem / 4;
  for (int k = threadIdx.x; k < words; k += B) buf[k] = float(k);
  __syncthreads();
  const int i = blockIdx.x * B + threadIdx.x;
  if (i < n) y[i] = buf[(i * 7) % 1000] + (got == unsigned(Traits<B>::kSmem) ? 0.f : 1e6f); // every B's holds 1000 words
}
__global__ void fill_ref(float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = float((i * 7) % 1000);
}
template <int B>
__global__ void scan(const int* x, int* y, int n) {
  using Scan = cub::BlockScan<int, B>;
  extern __shared__ char smem[];
  auto& tmp = *reinterpret_cast<typename Scan::TempStorage*>(smem);
  const int i = blockIdx.x * B + threadIdx.x;
  const int v = i < n ? x[i] : 0;
  int in = 0, ex = 0;
  Scan(tmp).InclusiveSum(v, in);
  __syncthreads(); // the storage again
  Scan(tmp).ExclusiveSum(v, ex);
  if (i < n) y[i] = in - ex; // x[i], whatever B: the reference follows no config
}
__global__ void scan_ref(const int* x, int* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}
)CUDA";
  std::ofstream(dir.file("fill.json")) << R"JSON({
  "name": "smem_constant", "sources": ["sm.cu"], "params_as": "template", "dims": ["n"], "params": {"B": [64, 128]},
  "launch": {"kernel": "fill_smem<{B}>", "grid": ["ceil_div(n, B)"], "block": ["B"], "shared_memory": {"constant": "Traits<{B}>::kSmem"},
             "args": ["y", "n_"]},
  "args": [{"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out", "atol": 0, "rtol": 0},
           {"name": "n_", "kind": "scalar", "value": "n"}],
  "check": {"reference": {"kernel": "fill_ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128], "args": ["y", "n_"]}}}
})JSON";
  std::ofstream(dir.file("scan.json")) << R"JSON({
  "name": "cub_scan_smem", "sources": ["sm.cu"], "params_as": "template", "dims": ["n"], "params": {"B": [128, 256]},
  "launch": {"kernel": "scan<{B}>", "grid": ["ceil_div(n, B)"], "block": ["B"],
             "shared_memory": {"constant": "sizeof(typename cub::BlockScan<int, {B}>::TempStorage)"}, "args": ["x", "y", "n_"]},
  "args": [{"name": "x", "kind": "buffer", "dtype": "i32", "count": "n", "fill": {"random": [0, 100]}},
           {"name": "y", "kind": "buffer", "dtype": "i32", "count": "n", "intent": "out"},
           {"name": "n_", "kind": "scalar", "value": "n"}],
  "check": {"reference": {"kernel": "scan_ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128], "args": ["x", "y", "n_"]}}}
})JSON";
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  const std::string fill = load_kernel_spec(dir.file("fill.json"));
  auto runner = make_op_runner(fill, compiler, *d);
  for (int b : {64, 128}) {
    const VerifyResult v = check_config(*runner, compiler, *d, fill, Config{{"B", b}}, Problem::parse(fill, "100003"), 4);
    EXPECT_TRUE(v.pass) << "B " << b << " (" << b * 400 << " bytes): " << v.summary();
  }
  const std::string scan = load_kernel_spec(dir.file("scan.json"));
  auto scan_runner = make_op_runner(scan, compiler, *d);
  for (int b : {128, 256}) {
    const VerifyResult v = check_config(*scan_runner, compiler, *d, scan, Config{{"B", b}}, Problem::parse(scan, "1000003"), 4);
    EXPECT_TRUE(v.pass) << "B " << b << ": " << v.summary();
  }
}

// A block's threads as a C++ constant of the source (Ktraits::kNThreads): two steps of two block
// constants, the first's shared memory a constant too, each kernel checking blockDim and its
// dynamic shared memory (a launch with the plan's {1, 1, 1} block, or another step's constant,
// computes the wrong sum). A constant the kernel cannot take (past its __launch_bounds__, past 1024)
// fails its launch, naming the threads.
TEST(KernelSpecGpu, ABlockFromACppConstantReachesTheLaunch) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_block_constant");
  std::ofstream(dir.file("b.cu")) << R"CUDA(
template <int W> struct Kt {
  static constexpr int kThreads = 32 * W, kSmem = 8 * kThreads, kTwice = 64 * W;
};
template <int W, int LB>
__global__ void __launch_bounds__(LB) fill(float* y, int n) {
  extern __shared__ float buf[];
  unsigned got;
  asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(got));
  buf[threadIdx.x] = float(threadIdx.x);
  __syncthreads();
  const bool right = blockDim.x == Kt<W>::kThreads && blockDim.y == 1 && blockDim.z == 1 && got == unsigned(Kt<W>::kSmem);
  const int i = blockIdx.x * Kt<W>::kThreads + threadIdx.x;
  if (i < n) y[i] = float(i % 1000) + (right ? 0.f : 1e6f) + (buf[threadIdx.x] - float(threadIdx.x));
}
template <int W>
__global__ void twice(float* y, int n) {
  const int i = blockIdx.x * Kt<W>::kTwice + threadIdx.x;
  if (i < n) y[i] = 2.f * y[i] + (blockDim.x == Kt<W>::kTwice ? 0.f : 1e6f);
}
__global__ void ref(float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.f * float(i % 1000);
}
)CUDA";
  std::ofstream(dir.file("b.json")) << R"JSON({
  "name": "block_constant_gpu", "sources": ["b.cu"], "params_as": "template", "dims": ["n"],
  "params": {"W": [2, 4, 8, 64], "LB": [128, 1024]},
  "launch": [{"kernel": "fill<{W}, {LB}>", "grid": ["ceil_div(n, 32 * W)"], "block": {"constant": "Kt<{W}>::kThreads"},
              "shared_memory": {"constant": "Kt<{W}>::kSmem"}},
             {"kernel": "twice<{W}>", "grid": ["ceil_div(n, 64 * W)"], "block": {"constant": "Kt<{W}>::kTwice / ({W} == 64 ? 4 : 1)"}}],
  "args": [{"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out", "atol": 0, "rtol": 0},
           {"name": "n_", "kind": "scalar", "value": "n"}],
  "check": {"reference": {"kernel": "ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}
})JSON";
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  const std::string op = load_kernel_spec(dir.file("b.json"));
  auto runner = make_op_runner(op, compiler, *d);
  const Problem p = Problem::parse(op, "100003");
  for (int w : {2, 4, 8}) {
    const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"W", w}, {"LB", 1024}}, p, 5);
    EXPECT_TRUE(v.pass) << "W " << w << ": " << v.summary();
  }
  // 256 threads past __launch_bounds__(128); 2048 past every kernel's limit.
  for (const auto& [w, lb, threads] : {std::tuple{8, 128, 256}, std::tuple{64, 1024, 2048}}) {
    try {
      const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"W", w}, {"LB", lb}}, p, 5);
      ADD_FAILURE() << "W " << w << " LB " << lb << " launched: " << v.summary();
    } catch (const Error& e) {
      const std::string want = "a constant of the source, is " + std::to_string(threads) + " threads; the kernel takes 1 to ";
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(lb == 128 ? "to 128 " : "to 1024 "), std::string::npos) << e.what();
    }
  }
}

// A scalar of the problem's dtype ("dtype": "dtype"): `T alpha` by value at f32, f64, f16 and bf16
// (4, 8, 2 and 2 bytes), the caller's alpha reaching the kernel in each; a planted alpha the
// kernel reads as the wrong type fails.
TEST(KernelSpecGpu, AScalarOfTheProblemsDtypeReachesTheKernel) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_dtype_scalar");
  std::ofstream(dir.file("a.cu")) << R"CUDA(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
template <typename T, int B> __global__ void axpy(T alpha, const T* x, T* y, int n) {
  const int i = blockIdx.x * B + threadIdx.x;
  if (i < n) y[i] = T(float(alpha) * float(x[i]) + float(y[i]));
}
template <typename T> __global__ void axpy_ref(T alpha, const T* x, T* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = T(float(alpha) * float(x[i]) + float(y[i]));
}
template <typename T> __global__ void axpy_half_alpha(T alpha, const T* x, T* y, int n) { // planted: alpha's 0.5 dropped
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = T(float(x[i]) + float(y[i]));
}
)CUDA";
  const std::string spec = R"JSON({
  "name": "axpy_dtype", "sources": ["a.cu"], "params_as": "template", "dims": ["n"], "dtypes": ["f32", "f64", "f16", "bf16"],
  "params": {"B": [64, 128]},
  "launch": {"kernel": "axpy<{dtype}, {B}>", "grid": ["ceil_div(n, B)"], "block": ["B"]},
  "args": [{"name": "alpha", "kind": "scalar", "dtype": "dtype", "default": 0.5},
           {"name": "x", "kind": "buffer", "dtype": "dtype", "count": "n"},
           {"name": "y", "kind": "buffer", "dtype": "dtype", "count": "n", "intent": "inout"},
           {"name": "n_", "kind": "scalar", "value": "n"}],
  "check": {"reference": {"kernel": "axpy_ref<{dtype}>", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}
})JSON";
  std::ofstream(dir.file("a.json")) << spec;
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  const std::string op = load_kernel_spec(dir.file("a.json"));
  auto runner = make_op_runner(op, compiler, *d);
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"B", 128}}, Problem::parse(op, "100003", "", dt), 4);
    EXPECT_TRUE(v.pass) << to_string(dt) << ": " << v.summary();
  }
  std::string wrong = spec;
  wrong.replace(wrong.find("\"axpy_ref<{dtype}>\""), std::strlen("\"axpy_ref<{dtype}>\""), "\"axpy_half_alpha<{dtype}>\"");
  const std::string planted = load_kernel_spec_text(wrong, "planted.json", dir.path.string());
  auto r = make_op_runner(planted, compiler, *d);
  const VerifyResult v = check_config(*r, compiler, *d, planted, Config{{"B", 128}}, Problem::parse(planted, "100003", "", DType::f64), 4);
  EXPECT_FALSE(v.pass) << "a reference without alpha agreed: " << v.summary();
}

// Module::param_sizes reads a kernel's parameter sizes from the cubin's own record, so that
// compute-sanitizer sees no cuFuncGetParamInfo refused past the last parameter: for kernels of
// pointers, scalars of each size, a struct by value, a template instance and none, it agrees with
// the driver's cuFuncGetParamInfo, parameter by parameter.
TEST(KernelSpecGpu, ModuleParameterSizesAgreeWithTheDriver) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  CompileRequest req;
  req.source = R"CUDA(
struct Box { float lo[3]; double hi; int n; };
__global__ void ptrs(float* a, const int* b, double* c) { a[0] = b[0] + c[0]; }
__global__ void scalars(char c, short s, int i, long long l, float f, double x, float* out) { out[0] = c + s + i + l + f + x; }
__global__ void by_value(Box b, float* out) { out[0] = b.lo[2] + b.hi + b.n; }
template <int N> __global__ void templated(float (*rows)[N], int n) { if (n > 0) rows[0][0] = N; }
__global__ void none() {}
)CUDA";
  req.source_name = "param_sizes.cu";
  req.name_expressions = {"ptrs", "scalars", "by_value", "templated<4>", "none"};
  req.arch = d->arch;
  req.context = "parameter sizes";
  const auto k = compiler.compile(req);
  Module m(k->cubin, k->lowered_names, req.context);
  const std::vector<std::vector<size_t>> expect = {{8, 8, 8}, {1, 2, 4, 8, 4, 8, 8}, {32, 8}, {8, 4}, {}};
  for (size_t i = 0; i < m.kernels(); ++i) {
    std::vector<size_t> driver_sizes;
    for (size_t p = 0;; ++p) {
      size_t offset = 0, size = 0;
      if (driver().cuFuncGetParamInfo(m.function(i), p, &offset, &size) != CUDA_SUCCESS) break;
      driver_sizes.push_back(size);
    }
    EXPECT_EQ(m.param_sizes(i), driver_sizes) << req.name_expressions[i];
    EXPECT_EQ(m.param_sizes(i), expect[i]) << req.name_expressions[i];
    if (i + 1 < m.kernels()) EXPECT_EQ(cubin_param_sizes(k->cubin, k->lowered_names[i]), expect[i]) << "from the cubin";
  }
}

namespace {

// PyTorch's float8 formats by their definitions (c10/util/Float8_e4m3fn.h, Float8_e5m2.h): sign,
// exponent, mantissa; e4m3fn has no infinity and one NaN a sign (S.1111.111), e5m2 is IEEE's
// (infinities and NaNs at the top exponent). From a float: to nearest, ties to even, as IEEE
// rounds; what rounds past the largest finite value is e4m3fn's NaN or e5m2's infinity, of the
// float's sign; a NaN is 0x7F with the float's sign.
struct Fp8Format {
  int mant_bits, bias;
  bool ieee; // e5m2: infinities and NaNs at the top exponent
};
constexpr Fp8Format kE4m3fn{3, 7, false}, kE5m2{2, 15, true};

// The value of code c's magnitude (c < 0x80); NaN for the NaN codes, infinity for e5m2's.
double fp8_value(const Fp8Format& f, int c) {
  const int e = c >> f.mant_bits, m = c & ((1 << f.mant_bits) - 1), top = 0x7F >> f.mant_bits;
  if (!f.ieee && c == 0x7F) return std::nan("");
  if (f.ieee && e == top) return m == 0 ? INFINITY : std::nan("");
  if (e == 0) return std::ldexp(double(m), 1 - f.bias - f.mant_bits);
  return std::ldexp(double((1 << f.mant_bits) + m), e - f.bias - f.mant_bits);
}

uint8_t fp8_from_float(const Fp8Format& f, float x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::isnan(x)) return uint8_t(sign | 0x7F);
  const int max_code = f.ieee ? 0x7B : 0x7E, over = f.ieee ? 0x7C : 0x7F;
  const double a = std::fabs(double(x));
  // The nearest of the finite codes and the one past them (whose value is the next step), ties
  // to the even code: c the last code at or below a, then c + 1 where a is past their midpoint
  // (compared with the midpoint, exact in double: distances to an infinity or to 1e30 tie).
  auto value = [&](int c) { return c <= max_code ? fp8_value(f, c) : 2 * fp8_value(f, max_code) - fp8_value(f, max_code - 1); };
  int best = 0;
  while (best <= max_code && value(best + 1) <= a) ++best;
  if (best <= max_code) {
    const double mid = (value(best) + value(best + 1)) / 2;
    if (a > mid || (a == mid && (best + 1) % 2 == 0)) ++best;
  }
  return uint8_t(sign | (best > max_code ? over : best));
}

uint32_t canonical_bits(float v) {
  if (std::isnan(v)) return 0x7FC00000u;
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

} // namespace

// PyTorch's Float8 types as the stand-in gives them (core/nvrtc_torch.cpp), against their
// definitions: all 256 codes of each format read as floats, and every code's value, each midpoint
// between neighbours and the floats either side of it, zeros, infinities, NaNs and values past the
// largest, of both signs, converted to each format; bit for bit. A kernel converting with
// saturation (CUDA's __NV_SATFINITE, which PyTorch's cast does not do) is rejected.
TEST(KernelSpecGpu, PyTorchsFloat8ConversionsMatchTheirDefinitionsBitForBit) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_float8");
  std::vector<float> xs = {0.f, INFINITY, std::nanf(""), 1e30f, 1e-30f, 480.f, 464.f, 61440.f, 65536.f};
  for (const Fp8Format& f : {kE4m3fn, kE5m2})
    for (int c = 0; c < (f.ieee ? 0x7C : 0x7F); ++c) {
      const double v = fp8_value(f, c), next = c + 1 < (f.ieee ? 0x7C : 0x7F) ? fp8_value(f, c + 1) : 2 * v - fp8_value(f, c - 1);
      const float mid = float((v + next) / 2);
      for (float x : {float(v), mid, std::nextafter(mid, 0.f), std::nextafter(mid, INFINITY)}) xs.push_back(x);
    }
  for (size_t i = 0, n = xs.size(); i < n; ++i) xs.push_back(-xs[i]);
  std::vector<uint8_t> codes(256), enc4(xs.size()), enc5(xs.size());
  std::vector<uint32_t> dec4(256), dec5(256);
  for (int c = 0; c < 256; ++c) {
    codes[c] = uint8_t(c);
    const double s = c & 0x80 ? -1 : 1;
    dec4[c] = canonical_bits(float(s * fp8_value(kE4m3fn, c & 0x7F)));
    dec5[c] = canonical_bits(float(s * fp8_value(kE5m2, c & 0x7F)));
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    enc4[i] = fp8_from_float(kE4m3fn, xs[i]);
    enc5[i] = fp8_from_float(kE5m2, xs[i]);
  }
  auto put = [&](const std::string& name, const void* p, size_t bytes) {
    std::ofstream o(dir.file(name), std::ios::binary);
    o.write(static_cast<const char*>(p), std::streamsize(bytes));
    ASSERT_TRUE(o.good()) << name;
  };
  put("codes.bin", codes.data(), codes.size());
  put("x.bin", xs.data(), xs.size() * 4);
  put("dec4.bin", dec4.data(), dec4.size() * 4);
  put("dec5.bin", dec5.data(), dec5.size() * 4);
  put("enc4.bin", enc4.data(), enc4.size());
  put("enc5.bin", enc5.data(), enc5.size());
  std::ofstream(dir.file("fp8.cu")) << R"CUDA(#include <torch/all.h>
#include <c10/util/Float8_e4m3fn.h>
#include <c10/util/Float8_e5m2.h>
#include <cuda_fp8.h>
__device__ uint32_t bits(float v) { return isnan(v) ? 0x7FC00000u : __float_as_uint(v); }
__global__ void fp8_convert(const uint8_t* codes, const float* x, uint32_t* dec4, uint32_t* dec5, uint8_t* enc4, uint8_t* enc5, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 256) {
    dec4[i] = bits(static_cast<float>(c10::Float8_e4m3fn(codes[i], c10::Float8_e4m3fn::from_bits())));
    dec5[i] = bits(static_cast<float>(c10::Float8_e5m2(codes[i], c10::Float8_e5m2::from_bits())));
  }
  if (i < n) {
    enc4[i] = static_cast<c10::Float8_e4m3fn>(x[i]).x;
    enc5[i] = c10::Float8_e5m2(x[i]).x;
  }
}
__global__ void fp8_convert_saturating(const uint8_t* codes, const float* x, uint32_t* dec4, uint32_t* dec5, uint8_t* enc4, uint8_t* enc5, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 256) {
    dec4[i] = bits(static_cast<float>(c10::Float8_e4m3fn(codes[i], c10::Float8_e4m3fn::from_bits())));
    dec5[i] = bits(static_cast<float>(c10::Float8_e5m2(codes[i], c10::Float8_e5m2::from_bits())));
  }
  if (i < n) {
    enc4[i] = __nv_cvt_float_to_fp8(x[i], __NV_SATFINITE, __NV_E4M3);
    enc5[i] = __nv_cvt_float_to_fp8(x[i], __NV_SATFINITE, __NV_E5M2);
  }
}
)CUDA";
  const std::string spec = R"JSON({
  "name": "torch_fp8", "sources": ["fp8.cu"], "host_code": "skip", "kernel": "fp8_convert", "dims": ["n"], "params": {"UNTUNED": [0]},
  "launch": {"grid": ["ceil_div(n + 256, 256)"], "block": [256]},
  "args": [{"name": "codes", "kind": "buffer", "dtype": "u8", "count": 256, "fill": {"file": "codes.bin", "raw_dtype": "u8"}},
           {"name": "x", "kind": "buffer", "dtype": "f32", "count": "n", "fill": {"file": "x.bin", "raw_dtype": "f32"}},
           {"name": "dec4", "kind": "buffer", "dtype": "u32", "count": 256, "intent": "out"},
           {"name": "dec5", "kind": "buffer", "dtype": "u32", "count": 256, "intent": "out"},
           {"name": "enc4", "kind": "buffer", "dtype": "u8", "count": "n", "intent": "out"},
           {"name": "enc5", "kind": "buffer", "dtype": "u8", "count": "n", "intent": "out"},
           {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
  "check": {"answer": {"dec4": {"file": "dec4.bin", "raw_dtype": "u32"}, "dec5": {"file": "dec5.bin", "raw_dtype": "u32"},
                       "enc4": {"file": "enc4.bin", "raw_dtype": "u8"}, "enc5": {"file": "enc5.bin", "raw_dtype": "u8"}}}
})JSON";
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  const std::string n = std::to_string(xs.size());
  const std::string op = load_kernel_spec_text(spec, "torch_fp8.json", dir.path.string());
  auto runner = make_op_runner(op, compiler, *d);
  const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"UNTUNED", 0}}, Problem::parse(op, n), 4);
  EXPECT_TRUE(v.pass) << v.summary();
  std::string wrong = spec;
  wrong.replace(wrong.find("\"fp8_convert\""), std::strlen("\"fp8_convert\""), "\"fp8_convert_saturating\"");
  const std::string planted = load_kernel_spec_text(wrong, "torch_fp8_sat.json", dir.path.string());
  auto r = make_op_runner(planted, compiler, *d);
  const VerifyResult s = check_config(*r, compiler, *d, planted, Config{{"UNTUNED", 0}}, Problem::parse(planted, n), 4);
  EXPECT_FALSE(s.pass) << "a saturating conversion agreed with PyTorch's: " << s.summary();
}

// offsetof in device code, as NVRTC folds it here (__INTADDR__, a constant where libcu++'s
// pointer difference is none): each element scaled by an offset the kernel reads at run time and
// by one it asserts at compile time, verified against a reference that holds the host compiler's
// offsets for the same structs, at two configs and two sizes.
struct GpuOffsetInner {
  int x, y;
};
struct GpuOffsetOuter {
  int a;
  double b;
  char c[10];
  GpuOffsetInner in;
};

TEST(KernelSpecGpu, OffsetofInDeviceCodeIsTheHostCompilersLayout) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  TempDir dir("spec_offsetof");
  const size_t in_y = offsetof(GpuOffsetOuter, in) + offsetof(GpuOffsetInner, y), b = offsetof(GpuOffsetOuter, b);
  std::ofstream(dir.file("offsets.cu")) << "#include <cstddef>\n"
                                           "struct Inner { int x, y; };\nstruct Outer { int a; double b; char c[10]; Inner in; };\n"
                                           "template <int B> __global__ void k(const float* x, float* y, int n) {\n"
                                           "  constexpr size_t at_b = offsetof(Outer, b);\n"
                                           "  const int i = blockIdx.x * B + threadIdx.x;\n"
                                           "  if (i < n) y[i] = x[i] * float(offsetof(Outer, in.y)) + float(at_b);\n}\n"
                                           "__global__ void ref(const float* x, float* y, int n) {\n"
                                           "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                           "  if (i < n) y[i] = x[i] * " << in_y << ".f + " << b << ".f;\n}\n";
  std::ofstream(dir.file("offsets.json")) << R"JSON({
    "ktune_kernel_spec": 1, "name": "offsetof_in_device_code", "sources": ["offsets.cu"], "kernel": "k<{B}>", "params_as": "template",
    "dims": ["n"], "params": {"B": [64, 256]}, "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
    "args": [{"name": "x", "kind": "buffer", "dtype": "f32", "count": "n"}, {"name": "y", "kind": "buffer", "dtype": "f32", "count": "n", "intent": "out"},
             {"name": "n_", "kind": "scalar", "dtype": "i32", "value": "n"}],
    "check": {"reference": {"kernel": "ref", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON";
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  const std::string op = load_kernel_spec(dir.file("offsets.json"));
  auto runner = make_op_runner(op, compiler, *d);
  for (const char* n : {"1000", "100003"})
    for (int bs : {64, 256}) {
      const VerifyResult v = check_config(*runner, compiler, *d, op, Config{{"B", bs}}, Problem::parse(op, n), 4);
      EXPECT_TRUE(v.pass) << n << " B " << bs << ": " << v.summary();
    }
}
