// N-dimensional operands with strides on a GPU, on the fixture op strided_scale
// (tests/ops/strided_fixture.h): the buffers runner verifies them with the strides padded past
// packed as served (a kernel that assumes packed storage fails; so does one writing between a
// shaped output's elements), and the runtime and ktune_run_strided serve a (b, h, s, d) view.
#include <gtest/gtest.h>

#include <filesystem>

#include "gpu_env.h"
#include "ktune/compiler.h"
#include "ktune/family.h"
#include "ktune/ktune.h"
#include "ktune/runtime.h"
#include "ops/strided_fixture.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/module.h"
#include "tuner/op_runner.h"

using namespace ktune;

namespace {

// FAULT 0: right; 1: ignores the strides it gets (packed offsets); 2: also writes the element
// one row of d past each (b, s, h) row's end, which lies between y's elements when y is padded.
constexpr const char* kPlanted = R"(
template <int DT, int FAULT>
__global__ void planted(const typename SsElem<DT>::T* x, typename SsElem<DT>::T* y, long long B, long long S,
    long long H, long long D, long long xb, long long xs, long long xh, long long yb, long long ys, long long yh,
    float alpha) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= B * S * H * D) return;
  if (FAULT == 1) xh = D, xs = H * D, xb = S * H * D, yh = D, ys = H * D, yb = S * H * D;
  const long long d = i % D, h = i / D % H, s = i / (D * H) % S, b = i / (D * H * S);
  const long long yi = b * yb + s * ys + h * yh + d;
  ss_store<DT>(y, yi, alpha * ss_load<DT>(x, b * xb + s * xs + h * xh + d));
  if (FAULT == 2 && d == D - 1 && h == H - 1 && s == S - 1 && b == B - 1) return;
  if (FAULT == 2 && d == D - 1 && yh > D) ss_store<DT>(y, yi + 1, 0.0f);
}
)";

int dt_code(DType d) { return d == DType::f32 ? 0 : d == DType::bf16 ? 1 : 2; }

VerifyResult run_planted(OpRunner& runner, Compiler& compiler, const DeviceInfo& d, const Problem& p, int fault,
                         Conditions c) {
  CompileRequest req;
  req.source = std::string(ktune::testing::strided_scale_source()) + kPlanted;
  req.source_name = "planted_strided_scale.cu";
  req.name_expressions = {"planted<" + std::to_string(dt_code(p.dtype)) + "," + std::to_string(fault) + ">"};
  req.arch = d.arch;
  req.context = "planted strided_scale kernel " + req.name_expressions[0];
  const auto k = compiler.compile(req);
  Module m(k->cubin, k->lowered_names, req.context);
  LaunchStep s;
  int64_t n = 1;
  for (int64_t x : p.dims) n *= x;
  s.grid[0] = unsigned((n + 255) / 256);
  s.block[0] = 256;
  const LaunchPlan plan{{s}, 0, {}};
  runner.prepare(p, 23, c);
  runner.launch(m, plan, nullptr);
  return runner.verify(nullptr);
}

} // namespace

TEST(StridedGpu, PlantedKernelsAreRejectedAsServedAndTheFamilyPasses) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  ktune::testing::strided_scale_op();
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  auto runner = make_op_runner("strided_scale", compiler, *d);
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    const Problem p = Problem::make("strided_scale", {2, 37, 3, 24}, "", t);
    for (Conditions c : {Conditions::as_timed, Conditions::as_served}) {
      const VerifyResult ok = run_planted(*runner, compiler, *d, p, 0, c);
      EXPECT_TRUE(ok.pass) << p.key() << " " << to_string(c) << ": " << ok.summary();
    }
    // Packed strides as timed, so the fault shows only as served.
    EXPECT_TRUE(run_planted(*runner, compiler, *d, p, 1, Conditions::as_timed).pass) << p.key();
    const VerifyResult packed = run_planted(*runner, compiler, *d, p, 1, Conditions::as_served);
    EXPECT_FALSE(packed.pass) << p.key() << " strides ignored: " << packed.summary();
    EXPECT_NE(packed.conditions.find("strides padded"), std::string::npos) << packed.conditions;
    const VerifyResult gap = run_planted(*runner, compiler, *d, p, 2, Conditions::as_served);
    EXPECT_FALSE(gap.pass) << p.key() << " writes between y's elements: " << gap.summary();
    EXPECT_GT(gap.stray_writes, 0u) << gap.summary();
  }
  // Both families (the TMA one reads x through a tensor map encoded with the strides as served),
  // on shapes that leave a partial box of heads.
  uint64_t seed = 5;
  for (const char* name : {"strided_scale_simple", "strided_scale_tma"})
  for (DType t : {DType::f32, DType::bf16})
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{1, 1, 1, 1}, {3, 129, 5, 64}, {2, 7, 11, 128}}) {
      const Family f = find_family(name);
      const Problem p = Problem::make("strided_scale", dims, "", t);
      std::vector<Config> cs = f.sample(p, *d, 2, ++seed);
      if (f.valid(f.default_config(p, *d), p, *d)) cs.push_back(f.default_config(p, *d));
      EXPECT_TRUE(!cs.empty() || dims[3] == 1) << name << " has no config for " << p.key();
      for (const Config& c : cs) {
        const auto k = compiler.compile(compile_request(f, c, p, d->arch));
        Module m(k->cubin, k->lowered_names, f.name());
        const LaunchPlan plan = f.launch_plan(c, p);
        const VerifyResult v = check_as_served_and_timed(*runner, p, ++seed, Numerics::standard,
                                                         [&](CUstream st) { runner->launch(m, plan, st); });
        EXPECT_TRUE(v.pass) << name << " " << c.to_json() << " " << p.key() << ": " << v.summary();
      }
    }
}

TEST(StridedGpu, RuntimeAndCApiServeATransposedView) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  ktune::testing::strided_scale_op();
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ktune_strided_gpu_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "k.db").string();
  CudaContext ctx(d->ordinal);
  // x packed (b, s, h, d); y stored (b, h, s, d) and passed as its (b, s, h, d) view.
  const long long B = 2, S = 33, H = 4, D = 16, n = B * S * H * D;
  std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n), -1.0f);
  for (long long i = 0; i < n; ++i) x[size_t(i)] = float(i % 29) * 0.25f - 3.0f;
  DeviceBuffer dx(size_t(n) * 4, "x"), dy(size_t(n) * 4, "y");
  check_cu(driver().cuMemcpyHtoD(dx.ptr(), x.data(), size_t(n) * 4), "cuMemcpyHtoD", "x");
  auto expect_transposed = [&](const char* who, float alpha) {
    check_cu(driver().cuMemcpyDtoH(y.data(), dy.ptr(), size_t(n) * 4), "cuMemcpyDtoH", "y");
    long long wrong = 0;
    for (long long b = 0; b < B; ++b)
      for (long long s = 0; s < S; ++s)
        for (long long h = 0; h < H; ++h)
          for (long long e = 0; e < D; ++e)
            wrong += y[size_t(((b * H + h) * S + s) * D + e)] != alpha * x[size_t(((b * S + s) * H + h) * D + e)];
    EXPECT_EQ(wrong, 0) << who;
  };
  Problem p = Problem::make("strided_scale", {B, S, H, D}, "", DType::f32);
  p.ld = {S * H * D, H * D, D, H * S * D, D, S * D};
  p.scalars["alpha"] = 2.5;
  {
    RuntimeOptions o;
    o.db_path = db;
    Runtime rt(o);
    rt.run(p, {dx.as<void>(), dy.as<void>()}, nullptr);
    check_cu(driver().cuCtxSynchronize(), "cuCtxSynchronize", "after Runtime::run");
    expect_transposed("Runtime::run", 2.5f);
  }
  ktune_handle_t h = nullptr;
  ASSERT_EQ(ktune_create(&h, db.c_str()), KTUNE_SUCCESS) << ktune_last_error();
  const long long dims[] = {B, S, H, D};
  const long long strides[] = {S * H * D, H * D, D, H * S * D, D, S * D};
  void* bufs[] = {dx.as<void>(), dy.as<void>()};
  const double alpha = -0.5;
  ASSERT_EQ(ktune_run_strided(h, "strided_scale", KTUNE_R_32F, dims, 4, strides, 6, bufs, 2, &alpha, 1, nullptr),
            KTUNE_SUCCESS)
      << ktune_last_error();
  check_cu(driver().cuCtxSynchronize(), "cuCtxSynchronize", "after ktune_run_strided");
  expect_transposed("ktune_run_strided", -0.5f);
  EXPECT_EQ(ktune_run_strided(h, "strided_scale", KTUNE_R_32F, dims, 4, strides, 5, bufs, 2, &alpha, 1, nullptr),
            KTUNE_INVALID_VALUE);
  EXPECT_NE(std::string(ktune_last_error()).find("5 strides given"), std::string::npos) << ktune_last_error();
  const long long overlap[] = {S * H * D, H * D, 4, H * S * D, D, S * D};
  EXPECT_EQ(ktune_run_strided(h, "strided_scale", KTUNE_R_32F, dims, 4, overlap, 6, bufs, 2, &alpha, 1, nullptr),
            KTUNE_INVALID_VALUE);
  EXPECT_NE(std::string(ktune_last_error()).find("overlap"), std::string::npos) << ktune_last_error();
  EXPECT_EQ(ktune_destroy(h), KTUNE_SUCCESS);
  fs::remove_all(dir);
}
