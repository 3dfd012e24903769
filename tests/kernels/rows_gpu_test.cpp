// The row kernels (softmax, LayerNorm, RMSNorm) on a GPU through the tuner's own runner: sampled
// configs of every family, each op and dtype, rows of odd and long lengths, padded leading
// dimensions, against the FP64 reference of every row (rows/rows_reference.cu) under its
// per-element rule (rows/rows_check.h); and planted wrong kernels (kernels/rows_planted.h) that the
// runner must reject.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <future>
#include <iostream>
#include <map>
#include <tuple>

#include "gpu_env.h"
#include "kernels/rows_planted.h"
#include "ktune/compiler.h"
#include "ktune/family.h"
#include "ktune/ktune.h"
#include "ktune/runtime.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/module.h"
#include "tuner/op_runner.h"
#include "tuner/rows_op.h"

using namespace ktune;

TEST(RowsGpu, VerificationHasTeeth) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner("softmax", compiler, *d);
  runner->prepare(Problem::parse("softmax", "5x300", "", DType::bf16), 3);
  const VerifyResult v = runner->verify(nullptr); // nothing ran: y holds its NaN poison
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.nonfinite, 5u * 300u);
}

namespace {

using ktune::testing::RowsFault;

// A planted kernel (kernels/rows_planted.h) run through the runner as the tuner runs a config:
// prepare, launch, verify.
struct Planted {
  const DeviceInfo& d;
  Compiler& compiler;
  std::map<std::string, std::unique_ptr<OpRunner>> runners;

  VerifyResult run(const Problem& p, RowsFault fault, float planted_eps = 0.0f, uint64_t seed = 5) {
    const auto k = compiler.compile(
        ktune::testing::planted_rows_request(op_info(p.op).row_op, p.dtype, fault, d.arch, planted_eps));
    Module m(k->cubin, k->lowered_names, k->lowered_names[0]);
    auto& runner = runners[p.op];
    if (!runner) runner = make_op_runner(p.op, compiler, d);
    runner->prepare(p, seed);
    runner->launch(m, ktune::testing::planted_rows_plan(p), nullptr);
    return runner->verify(nullptr);
  }
};

Problem rows_problem(const char* op, const char* shape, DType dt,
                     std::pair<const char*, double> scalar = {nullptr, 0}) {
  Problem p = Problem::parse(op, shape, "", dt);
  if (scalar.first) p.scalars[scalar.first] = scalar.second;
  return p;
}

} // namespace

// The planted kernel without a fault is a correct kernel (FP32 math, rounded to nearest) and
// passes; each fault is rejected, for the reason it should be.
TEST(RowsGpu, PlantedWrongKernelsAreRejected) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  Planted planted{*d, compiler, {}};
  const std::pair<const char*, double> no_scalar{nullptr, 0};
  for (const char* op : {"softmax", "layernorm", "rmsnorm"})
    for (DType dt : {DType::f32, DType::bf16, DType::f16})
      for (const char* shape : {"64x1000", "9x4099", "4x32000", "256x1"})
        for (double scale : {0.7, 40.0}) {
          if (std::string(op) != "softmax" && scale != 0.7) continue;
          const Problem p =
              rows_problem(op, shape, dt, std::string(op) == "softmax" ? std::pair{"scale", scale} : no_scalar);
          const VerifyResult v = planted.run(p, RowsFault::none);
          EXPECT_TRUE(v.pass) << p.key() << " scale " << scale << ": " << v.summary();
        }

  // (a) One element one unit in the last place off, in one row: exactly that element, in the
  // planted row (16-bit outputs: in f32 one ulp is below the FP32 math's allowance).
  for (const char* op : {"softmax", "layernorm", "rmsnorm"})
    for (DType dt : {DType::bf16, DType::f16}) {
      const Problem p =
          rows_problem(op, "64x1000", dt, std::string(op) == "softmax" ? std::pair{"scale", 0.7} : no_scalar);
      const VerifyResult v = planted.run(p, RowsFault::one_ulp);
      EXPECT_FALSE(v.pass) << p.key() << ": " << v.summary();
      EXPECT_EQ(v.violations, 1u) << p.key() << ": " << v.summary();
      EXPECT_EQ(v.worst_index / p.ld[1], ktune::testing::planted_row(p)) << p.key() << ": " << v.summary();
      EXPECT_EQ(v.nonfinite, 0u) << p.key();
    }

  // (b) The wrong eps. On the runner's inputs (x uniform in [-3, 3), variance ~3) eps 1e-5 for 1e-6
  // changes y by ~1.5e-6 relative: below every 16-bit output's rounding and the FP32 allowance.
  // The wrong eps, where it shows (planted_eps_cases says where and why).
  for (const ktune::testing::PlantedEpsCase& c : ktune::testing::planted_eps_cases()) {
    const Problem p = rows_problem(c.op, c.shape, c.dt, {"eps", c.eps});
    const VerifyResult v = planted.run(p, RowsFault::wrong_eps, c.planted);
    EXPECT_FALSE(v.pass) << p.key() << " eps " << c.eps << " planted " << c.planted << ": " << v.summary();
    EXPECT_GT(v.violations, 0u) << p.key() << " eps " << c.eps << " planted " << c.planted << ": " << v.summary();
  }

  // (c) softmax without the max subtracted: exp(scale * x) overflows where scale * x > 88.7, so
  // at scale 40 (scale * x up to 120 on the runner's inputs) rows come out NaN or zero. (At scale 1
  // nothing overflows and the result is the same but for rounding: no fault to find there.)
  for (DType dt : {DType::f32, DType::bf16}) {
    const Problem p = rows_problem("softmax", "64x1000", dt, {"scale", 40.0});
    const VerifyResult v = planted.run(p, RowsFault::no_max);
    EXPECT_FALSE(v.pass) << p.key() << ": " << v.summary();
    EXPECT_GT(v.nonfinite + v.violations, 1000u) << p.key() << ": " << v.summary();
  }

  // (d) One row never written: its poison is counted, and nothing else.
  for (const char* op : {"softmax", "layernorm", "rmsnorm"}) {
    const Problem p = rows_problem(op, "64x1000", DType::bf16);
    const VerifyResult v = planted.run(p, RowsFault::skip_row);
    EXPECT_FALSE(v.pass) << p.key() << ": " << v.summary();
    EXPECT_EQ(v.nonfinite, 1000u) << p.key() << ": " << v.summary();
    EXPECT_EQ(v.violations, 0u) << p.key() << ": " << v.summary();
  }

  // (e) The weight ignored (the runner's weights are in [0.5, 1.5)).
  for (const char* op : {"layernorm", "rmsnorm"})
    for (DType dt : {DType::f32, DType::bf16}) {
      const Problem p = rows_problem(op, "64x1000", dt);
      const VerifyResult v = planted.run(p, RowsFault::no_weight);
      EXPECT_FALSE(v.pass) << p.key() << ": " << v.summary();
      EXPECT_GT(v.violations, 1000u) << p.key() << ": " << v.summary();
    }
}

// Each family's default config, the shipped kernels as the runtime runs them untuned, passes the
// same check (softmax also at scale 40, where the row max is ~120 and exp's argument large).
TEST(RowsGpu, DefaultConfigsOfEveryFamilyPass) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  std::map<std::string, std::unique_ptr<OpRunner>> runners;
  int checked = 0;
  for (const auto& f : builtin_families()) {
    const std::string op = f.op();
    if (op != "softmax" && op != "layernorm" && op != "rmsnorm") continue;
    for (DType dt : {DType::f32, DType::bf16, DType::f16})
      for (const char* shape : {"64x1000", "16x4096", "4x32000", "2x131072"})
        for (double scale : {0.7, 40.0}) {
          if (op != "softmax" && scale != 0.7) continue;
          Problem p = Problem::parse(op, shape, "", dt);
          if (op == "softmax") p.scalars["scale"] = scale;
          if (!f.has_default() || f.min_arch() > d->arch_number()) continue;
          const Config c = f.default_config(p, *d);
          if (!f.valid(c, p, *d)) continue; // (a family that does not serve the shape, as rows_bulk short rows)
          const std::string what =
              p.key() + " " + f.name() + " " + c.to_json() + (op == "softmax" ? " scale " + std::to_string(scale) : "");
          const auto k = compiler.compile(compile_request(f, c, p, d->arch));
          Module m(k->cubin, k->lowered_names, what);
          auto& runner = runners[op];
          if (!runner) runner = make_op_runner(op, compiler, *d);
          runner->prepare(p, 17);
          runner->launch(m, f.launch_plan(c, p), nullptr);
          const VerifyResult v = runner->verify(nullptr);
          EXPECT_TRUE(v.pass) << what << ": " << v.summary();
          ++checked;
        }
  }
  std::cout << "[ ktune    ] " << checked << " default configs verified\n";
  EXPECT_GT(checked, 100);
}

TEST(RowsGpu, SampledConfigsOfEveryFamilyMatchFp64Reference) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  CudaContext ctx(d->ordinal);
  Compiler compiler; // a thread per core: every case is compiled ahead, then run in order
  struct Case {
    Family f;
    Config c;
    Problem p;
    uint64_t seed;
    std::future<std::shared_ptr<const CompiledKernel>> kernel;
  };
  std::vector<Case> cases;
  uint64_t seed = 11;
  int bulk_rpc_cases = 0, shift_cases = 0;
  for (const char* op : {"softmax", "layernorm", "rmsnorm"})
    for (const auto& f : builtin_families()) {
      if (f.op() != op) continue;
      for (DType dt : {DType::f32, DType::bf16, DType::f16})
        for (const char* shape : {"1x1", "7x1000", "64x768", "33x4096", "3x32000", "2x131072", "9x1001", "5x50257"}) {
          Problem p = Problem::parse(op, shape, "", dt);
          if (std::string(shape) == "7x1000") { // padded rows: the kernels must leave the padding alone
            p.ld = {1008, 1016};
            p.align = Problem::alignment_of(p.ld, element_bytes(dt));
          }
          if (std::string(shape) == "9x1001") { // rows off 16-byte lines, x's and y's at different offsets
            p.ld = {1003, 1005};
            p.align = Problem::alignment_of(p.ld, element_bytes(dt));
          }
          if (std::string(op) == "softmax") p.scalars["scale"] = 0.7;
          for (const Config& c : f.sample(p, *d, 2, seed++))
            cases.push_back({f, c, p, seed, compiler.compile_async(compile_request(f, c, p, d->arch))});
        }
      // The SHIFT form of rows_warp / rows_block (rows not made of whole vectors): every vector
      // width, on rows off 16-byte lines (x's and y's at different offsets, so y is stored a column
      // at a time), odd rows of whole lines' worth, and rows shorter than one vector.
      if (f.name() == std::string(op) + "_warp" || f.name() == std::string(op) + "_block")
        for (DType dt : {DType::f32, DType::bf16, DType::f16})
          for (const char* shape : {"9x1001", "6x4099", "5x7", "3x1"})
            for (int vec : {2, 4, 8}) {
              Problem p = Problem::parse(op, shape, "", dt);
              if (std::string(shape) == "9x1001") {
                p.ld = {1003, 1005};
                p.align = Problem::alignment_of(p.ld, element_bytes(dt));
              }
              if (std::string(op) == "softmax") p.scalars["scale"] = 0.7;
              Config c = f.default_config(p, *d);
              c.set("VEC", vec);
              const int width = f.name() == std::string(op) + "_warp" ? 32 : c["THREADS"];
              const int64_t need = (p.dims[1] + vec - 1 + int64_t(width) * vec - 1) / (int64_t(width) * vec);
              for (int ch : {1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64})
                if (ch >= need) {
                  c.set("CHUNKS", ch);
                  break;
                }
              if (!f.violations(c, p, *d).empty()) continue; // (f32 VEC 8, or registers)
              cases.push_back({f, c, p, seed++, compiler.compile_async(compile_request(f, c, p, d->arch))});
              ++shift_cases;
            }
      // rows_bulk serving several rows a cluster (RPC), one or two buffers: row counts that RPC
      // does not divide, clusters of 1..8, every dtype.
      if (f.name() != std::string(op) + "_bulk") continue;
      for (DType dt : {DType::f32, DType::bf16, DType::f16})
        for (const char* shape : {"37x32000", "5x131072", "37x50257"})
          for (auto [cl, rpc, stages] : {std::tuple{1, 4, 2}, std::tuple{4, 16, 2}, std::tuple{2, 2, 1}, std::tuple{8, 2, 2}})
            for (int store : {0, 1}) {
              Problem p = Problem::parse(op, shape, "", dt);
              if (std::string(op) == "softmax") p.scalars["scale"] = 0.7;
              const Config c{{"VEC", dt == DType::f32 ? 4 : 8}, {"THREADS", 256}, {"CL", cl},       {"PIECES", 2},
                             {"RPC", rpc},                      {"STAGES", stages}, {"STORE", store},
                             {"LB", cl > 1 && store == 1 ? 1 : 0}};
              if (!f.violations(c, p, *d).empty()) continue; // (a slice pair too big for shared memory)
              cases.push_back({f, c, p, seed++, compiler.compile_async(compile_request(f, c, p, d->arch))});
              ++bulk_rpc_cases;
            }
    }
  std::map<std::string, std::unique_ptr<OpRunner>> runners;
  int checked = 0;
  for (auto& cs : cases) {
    const std::string what = cs.p.key() + " ld " + std::to_string(cs.p.ld[0]) + " " + cs.f.name() + " " + cs.c.to_json();
    std::shared_ptr<const CompiledKernel> k;
    try {
      k = cs.kernel.get();
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": " << e.what();
      continue;
    }
    auto& runner = runners[cs.p.op];
    if (!runner) runner = make_op_runner(cs.p.op, compiler, *d);
    Module m(k->cubin, k->lowered_names, what);
    runner->prepare(cs.p, cs.seed);
    runner->launch(m, cs.f.launch_plan(cs.c, cs.p), nullptr);
    const VerifyResult v = runner->verify(nullptr);
    EXPECT_TRUE(v.pass) << what << ": " << v.summary();
    ++checked;
  }
  std::cout << "[ ktune    ] " << checked << " row-kernel configs verified\n";
  EXPECT_GT(bulk_rpc_cases, 80);
  EXPECT_GT(shift_cases, 100);
  EXPECT_GT(checked, 280);
}

// The runtime's and the C API's row entry points on f32 data against FP64 on the host: the Runtime
// without tables (a family default), the C API with the shipped ones (sm_90-rows: an exact or
// nearest entry where one serves 37 x 3000), and a RowsCall handle of the same Runtime, called
// with aligned pointers and then with pointers one float past them (another alignment class, so
// another prepared launch of the one handle).
TEST(RowsGpu, RuntimeAndCApiMatchFp64Reference) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  CudaContext ctx(d->ordinal);
  const int64_t rows = 37, cols = 3000;
  std::vector<float> x(static_cast<size_t>(rows * cols)), w(static_cast<size_t>(cols)), b(static_cast<size_t>(cols));
  uint32_t state = 12345;
  auto next = [&] { return float((state = state * 1664525u + 1013904223u) >> 8) / float(1 << 24) * 6.0f - 3.0f; };
  for (auto& v : x) v = next();
  for (auto& v : w) v = 1.0f + 0.1f * next();
  for (auto& v : b) v = 0.1f * next();
  DeviceBuffer dx(x.size() * 4, "x"), dy(x.size() * 4, "y"), dw(w.size() * 4, "w"), db(b.size() * 4, "b");
  check_cu(driver().cuMemcpyHtoD(dx.ptr(), x.data(), x.size() * 4), "cuMemcpyHtoD", "x");
  check_cu(driver().cuMemcpyHtoD(dw.ptr(), w.data(), w.size() * 4), "cuMemcpyHtoD", "w");
  check_cu(driver().cuMemcpyHtoD(db.ptr(), b.data(), b.size() * 4), "cuMemcpyHtoD", "b");
  // x and y again, one float past a 256-byte boundary.
  DeviceBuffer dxo((x.size() + 1) * 4, "x + 1"), dyo((x.size() + 1) * 4, "y + 1");
  check_cu(driver().cuMemcpyHtoD(dxo.ptr() + 4, x.data(), x.size() * 4), "cuMemcpyHtoD", "x + 1");
  RuntimeOptions o;
  o.db_path = "";
  o.shipped_tables = false;
  Runtime rt(o);
  ktune_handle_t h = nullptr;
  ASSERT_EQ(ktune_create(&h, ""), KTUNE_SUCCESS) << ktune_last_error();
  std::map<std::string, std::unique_ptr<RowsCall>> calls;
  for (int api = 0; api < 4; ++api)
    for (const char* op : {"softmax", "layernorm", "rmsnorm"}) {
      const char* how[] = {" (Runtime)", " (C API)", " (RowsCall)", " (RowsCall, pointers 4 bytes past)"};
      const std::string what = std::string(op) + how[api];
      // Where y is written and read back.
      const CUdeviceptr out = api == 3 ? dyo.ptr() + 4 : dy.ptr();
      check_cu(driver().cuMemsetD8Async(out, 0xff, x.size() * 4, nullptr), "cuMemsetD8Async", what);
      const std::string o_ = op;
      if (api >= 2) {
        Problem p = Problem::make(op, {rows, cols}, "", DType::f32);
        p.ld = {cols, cols};
        p.scalars[o_ == "softmax" ? "scale" : "eps"] = o_ == "softmax" ? 0.5 : o_ == "layernorm" ? 1e-5 : 1e-6;
        auto& call = calls[o_];
        if (!call) call = rt.rows_call(p);
        const void* xin = api == 3 ? static_cast<const void*>(dxo.as<float>() + 1) : dx.as<float>();
        void* yout = api == 3 ? static_cast<void*>(dyo.as<float>() + 1) : dy.as<float>();
        (*call)(xin, yout, o_ == "softmax" ? nullptr : dw.as<float>(), o_ == "layernorm" ? db.as<float>() : nullptr);
      }
      if (api == 0) {
        if (o_ == "softmax") rt.softmax(DType::f32, rows, cols, dx.as<float>(), cols, dy.as<float>(), cols, 0.5f);
        if (o_ == "layernorm") rt.layernorm(DType::f32, rows, cols, dx.as<float>(), cols, dy.as<float>(), cols, dw.as<float>(), db.as<float>(), 1e-5f);
        if (o_ == "rmsnorm") rt.rmsnorm(DType::f32, rows, cols, dx.as<float>(), cols, dy.as<float>(), cols, dw.as<float>(), 1e-6f);
        // Nothing tuned (no tables): the families' defaults were timed against each other at
        // this first call and the fastest kept.
        const Selection sel = rt.best_config(Problem::parse(op, "37x3000"));
        EXPECT_EQ(sel.provenance, Provenance::default_config) << what;
        EXPECT_TRUE(sel.measured) << what << ": " << sel.why;
        EXPECT_GE(sel.candidates.size(), 2u) << what << ": " << sel.why;
        for (const auto& c : sel.candidates) ASSERT_TRUE(c.measured_ms) << what << ": " << c.family << " not timed: " << sel.why;
        const auto fastest = std::min_element(sel.candidates.begin(), sel.candidates.end(),
                                              [](const auto& a, const auto& b) { return *a.measured_ms < *b.measured_ms; });
        EXPECT_EQ(sel.family + sel.config.to_json(), fastest->family + fastest->config.to_json()) << what << ": " << sel.why;
      } else if (api == 1) {
        ktune_status_t st = KTUNE_SUCCESS;
        if (o_ == "softmax") st = ktune_softmax(h, KTUNE_R_32F, int(rows), int(cols), dx.as<float>(), int(cols), dy.as<float>(), int(cols), 0.5f, nullptr);
        if (o_ == "layernorm")
          st = ktune_layernorm(h, KTUNE_R_32F, int(rows), int(cols), dx.as<float>(), int(cols), dy.as<float>(), int(cols), dw.as<float>(), db.as<float>(), 1e-5f, nullptr);
        if (o_ == "rmsnorm")
          st = ktune_rmsnorm(h, KTUNE_R_32F, int(rows), int(cols), dx.as<float>(), int(cols), dy.as<float>(), int(cols), dw.as<float>(), 1e-6f, nullptr);
        ASSERT_EQ(st, KTUNE_SUCCESS) << what << ": " << ktune_last_error();
      }
      std::vector<float> y(x.size());
      check_cu(driver().cuCtxSynchronize(), "cuCtxSynchronize", what);
      check_cu(driver().cuMemcpyDtoH(y.data(), out, y.size() * 4), "cuMemcpyDtoH", what);
      double err = 0, norm = 0;
      for (int64_t i = 0; i < rows; ++i) {
        const float* r = &x[size_t(i * cols)];
        std::vector<double> ref(static_cast<size_t>(cols));
        if (o_ == "softmax") {
          double m = -1e300, s = 0;
          for (int64_t j = 0; j < cols; ++j) m = std::max(m, 0.5 * r[j]);
          for (int64_t j = 0; j < cols; ++j) s += ref[size_t(j)] = std::exp(0.5 * r[j] - m);
          for (auto& v : ref) v /= s;
        } else if (o_ == "layernorm") {
          double mean = 0, var = 0;
          for (int64_t j = 0; j < cols; ++j) mean += r[j];
          mean /= double(cols);
          for (int64_t j = 0; j < cols; ++j) var += (r[j] - mean) * (r[j] - mean);
          for (int64_t j = 0; j < cols; ++j) ref[size_t(j)] = (r[j] - mean) / std::sqrt(var / double(cols) + 1e-5) * w[size_t(j)] + b[size_t(j)];
        } else {
          double ms = 0;
          for (int64_t j = 0; j < cols; ++j) ms += double(r[j]) * r[j];
          for (int64_t j = 0; j < cols; ++j) ref[size_t(j)] = r[j] / std::sqrt(ms / double(cols) + 1e-6) * w[size_t(j)];
        }
        for (int64_t j = 0; j < cols; ++j) {
          const double e = y[size_t(i * cols + j)] - ref[size_t(j)];
          err += std::isfinite(e) ? e * e : 1e300;
          norm += ref[size_t(j)] * ref[size_t(j)];
        }
      }
      EXPECT_LE(std::sqrt(err / norm), rows_tolerance(DType::f32)) << what;
    }
  // Bad input is refused with a message, nothing launched.
  EXPECT_EQ(ktune_softmax(h, KTUNE_R_32F, 4, 8, dx.as<float>(), 4, dy.as<float>(), 8, 1.0f, nullptr), KTUNE_INVALID_VALUE);
  EXPECT_NE(std::string(ktune_last_error()).find("ldx"), std::string::npos) << ktune_last_error();
  ktune_destroy(h);
}
