// The op scale_add (kernel_templates/scale_add/) on a GPU, end to end through the generic pieces
// an op of plain buffers gets without code of its own: the tuner's "buffers" runner rejects
// planted wrong kernels and passes both families; `ktune tune` (the real worker process) tunes
// it into a database; query, bench, the runtime (exact, lent and first-use paths), the C API's
// ktune_run serve it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/embedded.h"
#include "gpu_env.h"
#include "ktune/compiler.h"
#include "ktune/family.h"
#include "ktune/ktune.h"
#include "ktune/runtime.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/module.h"
#include "test_paths.h"
#include "tuner/op_runner.h"
#include "tuner/session.h"

using namespace ktune;

namespace {

// Kernels with scale_add's arguments, each wrong in one way the runner must see (FAULT 0 is right).
enum Fault { kNone, kSkipsLast, kIgnoresBeta, kRoundsTerms, kWritesPastEnd, kWritesIntoX };

constexpr const char* kPlanted = R"(
template <int DT> __device__ __forceinline__ float planted_round(float v) {
  // The dtype's rounding (bf16 for f32: a precision fault in every dtype).
  if (DT == 2) return scale_add_to_float<2>(scale_add_from_float<2>(v));
  return scale_add_to_float<1>(scale_add_from_float<1>(v));
}
template <int DT, int FAULT>
__global__ void planted(const typename ScaleAddElem<DT>::T* x, const typename ScaleAddElem<DT>::T* y,
                        typename ScaleAddElem<DT>::T* out, long long n, float alpha, float beta) {
  const long long j = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long last = FAULT == 1 ? n - 1 : FAULT == 4 ? n + 1 : n;
  if (j >= last) return;
  if (FAULT == 2) beta = 1.0f;
  float fx, fy;
  if constexpr (DT == 0) fx = x[j], fy = y[j];
  else fx = scale_add_to_float<DT>(x[j]), fy = scale_add_to_float<DT>(y[j]);
  const float r = FAULT == 3 ? planted_round<DT>(alpha * fx) + planted_round<DT>(beta * fy) : fmaf(alpha, fx, beta * fy);
  out[j] = scale_add_from_float<DT>(r);
  if (FAULT == 5 && j == 0) const_cast<typename ScaleAddElem<DT>::T*>(x)[0] = out[0];
}
)";

int dt_code(DType d) { return d == DType::f32 ? 0 : d == DType::bf16 ? 1 : 2; }

VerifyResult run_planted(OpRunner& runner, Compiler& compiler, const DeviceInfo& d, const Problem& p, Fault fault) {
  CompileRequest req;
  req.source = std::string(embedded_file("scale_add/scale_add.cu")) + kPlanted;
  req.source_name = "planted_scale_add.cu";
  req.name_expressions = {"planted<" + std::to_string(dt_code(p.dtype)) + "," + std::to_string(int(fault)) + ">"};
  req.arch = d.arch;
  req.context = "planted scale_add kernel " + req.name_expressions[0];
  const auto k = compiler.compile(req);
  Module m(k->cubin, k->lowered_names, req.context);
  LaunchStep s;
  s.grid[0] = unsigned((p.dims[0] + 255) / 256);
  s.block[0] = 256;
  const LaunchPlan plan{{s}, 0, {}};
  return check_as_served_and_timed(runner, p, 17, Numerics::standard, [&](CUstream st) { runner.launch(m, plan, st); });
}

} // namespace

TEST(ScaleAddGpu, PlantedWrongKernelsAreRejectedAndBothFamiliesPass) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner("scale_add", compiler, *d);
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    const Problem p = Problem::parse("scale_add", "100003", "", t);
    const VerifyResult ok = run_planted(*runner, compiler, *d, p, kNone);
    EXPECT_TRUE(ok.pass) << p.key() << " the right planted kernel: " << ok.summary();
    const VerifyResult skips = run_planted(*runner, compiler, *d, p, kSkipsLast);
    EXPECT_FALSE(skips.pass) << p.key();
    EXPECT_EQ(skips.nonfinite, 1u) << skips.summary();
    const VerifyResult beta = run_planted(*runner, compiler, *d, p, kIgnoresBeta);
    EXPECT_FALSE(beta.pass) << p.key() << " beta ignored (caught only as served, beta = -1.98): " << beta.summary();
    EXPECT_NE(beta.conditions.find("as served"), std::string::npos) << beta.summary();
    const VerifyResult rounds = run_planted(*runner, compiler, *d, p, kRoundsTerms);
    EXPECT_FALSE(rounds.pass) << p.key() << " terms rounded to 16 bits: " << rounds.summary();
    EXPECT_GT(rounds.violations, 0u);
    const VerifyResult past = run_planted(*runner, compiler, *d, p, kWritesPastEnd);
    EXPECT_FALSE(past.pass) << p.key();
    EXPECT_GT(past.guard_writes, 0u) << past.summary();
    const VerifyResult into = run_planted(*runner, compiler, *d, p, kWritesIntoX);
    EXPECT_FALSE(into.pass) << p.key();
    EXPECT_GT(into.input_writes, 0u) << into.summary();
    // Nothing launched: the poisoned output fails.
    runner->prepare(p, 3);
    EXPECT_EQ(runner->verify(nullptr).nonfinite, uint64_t(p.dims[0]));
  }
  // Both families, defaults and samples, at sizes that leave vector tails and one element.
  uint64_t seed = 40;
  for (const char* name : {"scale_add_simple", "scale_add_vec"}) {
    const Family f = find_family(name);
    for (DType t : {DType::f32, DType::bf16, DType::f16})
      for (const char* n : {"1", "1000003", "4194304"}) {
        const Problem p = Problem::parse("scale_add", n, "", t);
        std::vector<Config> cs = f.sample(p, *d, 3, ++seed);
        cs.push_back(f.default_config(p, *d));
        for (const Config& c : cs) {
          const auto k = compiler.compile(compile_request(f, c, p, d->arch));
          Module m(k->cubin, k->lowered_names, name);
          const LaunchPlan plan = f.launch_plan(c, p);
          const VerifyResult v = check_as_served_and_timed(*runner, p, ++seed, Numerics::standard,
                                                           [&](CUstream st) { runner->launch(m, plan, st); });
          EXPECT_TRUE(v.pass) << name << " " << c.to_json() << " " << p.key() << ": " << v.summary();
        }
      }
  }
}

TEST(ScaleAddGpu, TunedByTheCliThenServedByQueryBenchRuntimeAndCApi) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ktune_scale_add_gpu_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "k.db").string(), suite = (dir / "suite.json").string();
  std::ofstream(suite) << R"({"name": "scale_add", "op": "scale_add",
    "problems": [{"n": 16777216, "dtype": "bf16"}, {"n": 1000003, "dtype": "f32"}]})";
  const auto tuned = ktune::testing::run_ktune("tune --suite " + suite + " --db " + db + " --budget-evals 10");
  ASSERT_EQ(tuned.status, 0) << tuned.out;
  std::cout << tuned.out;
  const auto query = ktune::testing::run_ktune("query --db " + db + " --op scale_add --dtype bf16 --problem 16777216");
  EXPECT_EQ(query.status, 0) << query.out;
  EXPECT_NE(query.out.find("exact"), std::string::npos) << query.out;
  const auto bench = ktune::testing::run_ktune("bench --suite " + suite + " --db " + db);
  EXPECT_EQ(bench.status, 0) << bench.out;
  EXPECT_NE(bench.out.find("scale_add/bf16/16777216"), std::string::npos) << bench.out;
  std::cout << bench.out;

  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner("scale_add", compiler, *d);
  RuntimeOptions o;
  o.db_path = db;
  Runtime rt(o);
  uint64_t seed = 90;
  // The tuned shapes (exact), one near them (lent), and unaligned and tiny ones (first use).
  for (const auto& [shape, t] : std::vector<std::pair<const char*, DType>>{
           {"16777216", DType::bf16}, {"1000003", DType::f32}, {"12000001", DType::bf16}, {"3", DType::f16}}) {
    const Problem p = Problem::parse("scale_add", shape, "", t);
    const Selection s = rt.best_config(p);
    for (Conditions c : {Conditions::as_served, Conditions::as_timed}) {
      runner->prepare(p, ++seed, c);
      runner->run_runtime(rt, nullptr);
      const VerifyResult v = runner->verify(nullptr);
      EXPECT_TRUE(v.pass) << p.key() << " " << to_string(c) << " (" << to_string(s.provenance) << " " << s.family
                          << "): " << v.summary();
    }
    if (std::string(shape) == "16777216") {
      EXPECT_EQ(s.provenance, Provenance::exact) << s.why;
    }
    std::cout << "[ ktune    ] " << p.key() << ": " << to_string(s.provenance) << " " << s.family << " (" << s.why << ")\n";
  }

  // The C API: exact small-integer arithmetic, so the result is compared bit for bit.
  ktune_handle_t h = nullptr;
  ASSERT_EQ(ktune_create(&h, db.c_str()), KTUNE_SUCCESS) << ktune_last_error();
  const long long n = 100001;
  std::vector<float> x(n), y(n), out(n, -1.0f);
  for (long long i = 0; i < n; ++i) x[size_t(i)] = float(i % 13) * 0.5f, y[size_t(i)] = float(i % 7) * 0.25f;
  DeviceBuffer dx(n * 4, "x"), dy(n * 4, "y"), dout(n * 4, "out");
  check_cu(driver().cuMemcpyHtoD(dx.ptr(), x.data(), n * 4), "cuMemcpyHtoD", "x");
  check_cu(driver().cuMemcpyHtoD(dy.ptr(), y.data(), n * 4), "cuMemcpyHtoD", "y");
  void* bufs[] = {dx.as<void>(), dy.as<void>(), dout.as<void>()};
  const double scalars[] = {2.0, -4.0};
  ASSERT_EQ(ktune_run(h, "scale_add", KTUNE_R_32F, &n, 1, bufs, 3, scalars, 2, nullptr), KTUNE_SUCCESS) << ktune_last_error();
  check_cu(driver().cuMemcpyDtoH(out.data(), dout.ptr(), n * 4), "cuMemcpyDtoH", "out");
  long long wrong = 0;
  for (long long i = 0; i < n; ++i) wrong += out[size_t(i)] != 2.0f * x[size_t(i)] - 4.0f * y[size_t(i)];
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(ktune_run(h, "scale_add", KTUNE_R_32F, &n, 1, bufs, 2, scalars, 2, nullptr), KTUNE_INVALID_VALUE);
  EXPECT_NE(std::string(ktune_last_error()).find("takes 3"), std::string::npos) << ktune_last_error();
  EXPECT_EQ(ktune_run(h, "scale_ad", KTUNE_R_32F, &n, 1, bufs, 3, scalars, 2, nullptr), KTUNE_INVALID_VALUE);
  EXPECT_NE(std::string(ktune_last_error()).find("unknown op"), std::string::npos) << ktune_last_error();
  const double three[] = {1, 2, 3};
  EXPECT_EQ(ktune_run(h, "scale_add", KTUNE_R_32F, &n, 1, bufs, 3, three, 3, nullptr), KTUNE_INVALID_VALUE);
  EXPECT_EQ(ktune_destroy(h), KTUNE_SUCCESS);
  fs::remove_all(dir);
}
