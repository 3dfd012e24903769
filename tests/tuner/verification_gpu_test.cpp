// The tuner's gate has teeth: planted wrong GEMM kernels, each at the shape it is named for, go
// through check_as_served_and_timed (what the worker runs for every trial: the check as served,
// then as timed) and must be rejected, while the same kernel without its fault passes at every one
// of those shapes (no false rejections). Then sampled configs of every shipped GEMM family pass the
// gate in every dtype they serve, and their measured errors are printed beside the bounds
// (docs/TEMPLATES.md, "Verification", quotes them).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <future>
#include <vector>
#include <iostream>
#include <map>
#include <string>

#include "db/lending.h"
#include "db/table.h"
#include "gpu_env.h"
#include "ktune/compiler.h"
#include "ktune/family.h"
#include "ktune/gemm_problem.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/gemm_launch.h"
#include "runtime/module.h"
#include "tuner/gemm_op.h"
#include "tuner/op_runner.h"

using namespace ktune;

namespace {

// One naive kernel (a thread an element of C, NN layout) with a fault chosen by MUT; HALF: 0 f32,
// 1 bf16, 2 f16. MUT 0 is the correct kernel.
const char* const kMutantSource = R"(
#include "gemm_args.h"
template <int HALF> __device__ float ld(const void* p, long long i) {
  if (HALF == 0) return ((const float*)p)[i];
  const unsigned short h = ((const unsigned short*)p)[i];
  if (HALF == 1) return __uint_as_float((unsigned)h << 16);
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
// The value the output type holds: rounded to nearest even, or truncated (toward zero).
template <int HALF> __device__ float round_to(float x, bool truncate) {
  if (HALF == 0) return x;
  unsigned short h;
  if (HALF == 1) {
    const unsigned u = __float_as_uint(x);
    h = truncate ? (unsigned short)(u >> 16) : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    return __uint_as_float((unsigned)h << 16);
  }
  if (truncate) asm("cvt.rz.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  else asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
template <int HALF> __device__ void st(void* p, long long i, float x, bool truncate) {
  if (HALF == 0) { ((float*)p)[i] = x; return; }
  const float r = round_to<HALF>(x, truncate);
  unsigned short h;
  if (HALF == 1) h = (unsigned short)(__float_as_uint(r) >> 16);
  else asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(r));
  ((unsigned short*)p)[i] = h;
}
__device__ float tf32(float x) {
  unsigned u;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(u) : "f"(x));
  return __uint_as_float(u);
}
template <int MUT, int HALF>
__global__ void mutant(KtuneGemmArgs g) {
  const int i = blockIdx.y * 16 + threadIdx.y, j = blockIdx.x * 16 + threadIdx.x;
  if (i >= g.M || j >= g.N) return;
  const void* A = g.A;
  if (MUT == 12) A = (const void*)((unsigned long long)A & ~255ull); // assumes cudaMalloc's alignment
  int kend = g.K;
  if (MUT == 4 && g.K > 32) kend = g.K - 32;   // the last K step (32 wide) dropped
  if (MUT == 10) kend = g.K / 8 * 8;            // the K tail of an unaligned K skipped
  float acc = 0.0f, part = 0.0f;
  for (int k = 0; k < kend; ++k) {
    const float a = ld<HALF>(A, (long long)i * g.lda + k), b = ld<HALF>(g.B, (long long)k * g.ldb + j);
    if (MUT == 11) { // 3xTF32 with two products: small(a) x big(b) left out
      const float ab = tf32(a), bb = tf32(b), bs = tf32(b - bb);
      acc = fmaf(ab, bs, acc);
      acc = fmaf(ab, bb, acc);
    } else {
      acc = fmaf(a, b, acc);
    }
    if (MUT == 2 && k == g.K / 2 - 1) { part = round_to<HALF>(acc, false); acc = 0.0f; } // split-K partial kept in the output type
  }
  if (MUT == 2) acc = round_to<HALF>(acc, false) + part;
  float alpha = g.alpha;
  if (MUT == 3) alpha *= 1.001f;
  const long long c = (long long)i * g.ldc + j;
  float out = alpha * acc;
  if (g.beta != 0.0f && MUT != 9) out = fmaf(g.beta, ld<HALF>(g.C, c), out);
  if (MUT == 5 && i == g.M / 2 && j == g.N / 2) out += 1.0f;        // one wrong element
  if (MUT == 6 && blockIdx.x == 0 && blockIdx.y == 0) return;        // one tile never written
  if (MUT == 8) { out = 0.0f; ((float*)g.A)[(long long)i * g.lda] = 0.0f; } // A zeroed, C = 0
  st<HALF>(g.C, c, out, MUT == 1);
  if (MUT == 7 && i == g.M - 1 && j == g.N - 1) st<HALF>(g.C, (long long)g.M * g.ldc, out, false); // one past C
}
)";

enum Mutation {
  kCorrect = 0, kTruncate = 1, kSplitKPartials = 2, kAlphaOff = 3, kLastKStep = 4, kWrongElement = 5, kUnwrittenTile = 6,
  kPastC = 7, kOverwritesA = 8, kIgnoresBeta = 9, kSkipsKTail = 10, kTwoProducts = 11, kAssumesAlignment = 12
};

int half_code(DType t) { return t == DType::f32 ? 0 : t == DType::bf16 ? 1 : 2; }

class VerificationGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    dev_ = ktune::testing::first_gpu(&why);
    if (!dev_) GTEST_SKIP() << "no GPU: " << why;
    ctx_ = std::make_unique<CudaContext>(dev_->ordinal);
    compiler_ = std::make_unique<Compiler>();
    runner_ = make_op_runner("gemm", *compiler_, *dev_);
  }

  Module& mutant(Mutation mut, DType t) {
    const std::string name = "mutant<" + std::to_string(int(mut)) + "," + std::to_string(half_code(t)) + ">";
    auto& m = modules_[name];
    if (!m) {
      CompileRequest req;
      req.source = kMutantSource;
      req.source_name = "tests/verification_mutants.cu";
      req.name_expressions = {name};
      req.arch = dev_->arch;
      req.context = "planted kernel " + name;
      const auto k = compiler_->compile(req);
      m = std::make_unique<Module>(k->cubin, k->lowered_names, req.context);
    }
    return *m;
  }

  // The worker's gate for the kernel at p: both checks, the family's numerics.
  VerifyResult gate(Mutation mut, const GemmProblem& p, Numerics numerics = Numerics::standard) {
    Module& m = mutant(mut, p.dtype);
    LaunchPlan plan;
    LaunchStep s;
    s.grid[0] = unsigned((p.n + 15) / 16), s.grid[1] = unsigned((p.m + 15) / 16);
    s.block[0] = 16, s.block[1] = 16;
    plan.steps.push_back(s);
    runner_->ensure_workspace(0);
    return check_as_served_and_timed(*runner_, p, ++seed_, numerics, [&](CUstream st) { runner_->launch(m, plan, st); });
  }

  const DeviceInfo* dev_ = nullptr;
  std::unique_ptr<CudaContext> ctx_;
  std::unique_ptr<Compiler> compiler_;
  std::unique_ptr<OpRunner> runner_;
  std::map<std::string, std::unique_ptr<Module>> modules_;
  uint64_t seed_ = 4400;
};

struct Planted {
  const char* what;
  Mutation mut;
  const char* shape;
  DType dtype;
  Numerics numerics = Numerics::standard;
};

} // namespace

TEST_F(VerificationGpu, EveryPlantedWrongKernelIsRejectedAndTheCorrectOnePasses) {
  const Planted cases[] = {
      {"truncation instead of rounding to nearest", kTruncate, "1024x1024x1024", DType::bf16},
      {"truncation instead of rounding to nearest", kTruncate, "1024x1024x1024", DType::f16},
      {"truncation instead of rounding to nearest", kTruncate, "512x512x8192", DType::bf16},
      {"split-K partial sums kept in the output type", kSplitKPartials, "1024x1024x4096", DType::bf16},
      {"split-K partial sums kept in the output type", kSplitKPartials, "1024x1024x4096", DType::f16},
      {"alpha off by 0.1 %", kAlphaOff, "512x512x512", DType::f32},
      {"alpha off by 0.1 %", kAlphaOff, "1024x1024x1024", DType::bf16},
      {"alpha off by 0.1 %", kAlphaOff, "1024x1024x1024", DType::f16},
      {"the last K step dropped at K = 32768", kLastKStep, "256x256x32768", DType::bf16},
      {"the last K step dropped at K = 32768", kLastKStep, "256x256x32768", DType::f16},
      {"the last K step dropped at K = 32768", kLastKStep, "256x256x32768", DType::f32},
      {"one wrong element in 4096^2", kWrongElement, "4096x4096x64", DType::bf16},
      {"one wrong element in 4096^2", kWrongElement, "4096x4096x64", DType::f32},
      {"one unwritten tile", kUnwrittenTile, "1024x1024x256", DType::bf16},
      {"a write one element past C", kPastC, "512x512x128", DType::f32},
      {"a write one element past C", kPastC, "512x512x128", DType::bf16},
      {"A overwritten (zeroed, C = 0)", kOverwritesA, "512x512x512", DType::f32},
      {"beta ignored", kIgnoresBeta, "512x512x512", DType::bf16},
      {"beta ignored", kIgnoresBeta, "512x512x4096", DType::f32},
      {"the K tail skipped on an unaligned K", kSkipsKTail, "512x512x1001", DType::f32},
      {"the K tail skipped on an unaligned K", kSkipsKTail, "512x512x1001", DType::bf16},
      {"3xTF32 with two products instead of three", kTwoProducts, "1024x1024x1024", DType::f32, Numerics::tf32x3},
      {"3xTF32 with two products instead of three", kTwoProducts, "256x256x32768", DType::f32, Numerics::tf32x3},
      {"A read at the 256-byte boundary below its pointer", kAssumesAlignment, "512x512x512", DType::bf16},
  };
  for (const Planted& c : cases) {
    const GemmProblem p = GemmProblem::parse(c.shape, "NN", c.dtype);
    const std::string what = std::string(c.what) + " at " + p.key();
    const VerifyResult bad = gate(c.mut, p, c.numerics);
    EXPECT_FALSE(bad.pass) << what << " passed the gate: " << bad.summary();
    std::cout << "[ ktune    ] rejected: " << what << ": " << bad.summary() << "\n";
    // The same kernel without its fault passes at the same shape (the 3xTF32 mutant's control is
    // the FFMA kernel under the standard rule: an emulated split adds roundings the families fold away).
    const VerifyResult good = gate(kCorrect, p, Numerics::standard);
    EXPECT_TRUE(good.pass) << "the correct kernel at " << p.key() << ": " << good.summary();
  }
}

TEST_F(VerificationGpu, GuardsInputsAndServedConditionsAreCheckedByTheirOwnCounters) {
  // Each planted fault shows in the counter that names it, not only in the error.
  const GemmProblem f32 = GemmProblem::parse("512x512x128", "NN", DType::f32);
  EXPECT_GT(gate(kPastC, f32).guard_writes, 0u);
  EXPECT_GT(gate(kOverwritesA, GemmProblem::parse("512x512x512")).input_writes, 0u);
  const VerifyResult beta = gate(kIgnoresBeta, GemmProblem::parse("512x512x512", "NN", DType::bf16));
  EXPECT_NE(beta.conditions.find("as served"), std::string::npos) << beta.summary();
  const VerifyResult aligned = gate(kAssumesAlignment, GemmProblem::parse("512x512x512", "NN", DType::bf16));
  EXPECT_NE(aligned.conditions.find("16 B past"), std::string::npos) << aligned.summary();
  // The unwritten tile: NaN where C was poisoned (as timed), C0's values where it was preloaded
  // (as served, which runs first): either way all 16 x 16 of its elements.
  const VerifyResult tile = gate(kUnwrittenTile, GemmProblem::parse("1024x1024x256", "NN", DType::bf16));
  EXPECT_EQ(tile.nonfinite + tile.violations, 256u) << tile.summary();
  const VerifyResult one = gate(kWrongElement, GemmProblem::parse("4096x4096x64", "NN", DType::bf16));
  EXPECT_EQ(one.violations, 1u) << one.summary();
  EXPECT_EQ(one.worst_index, 2048 * 4096 + 2048) << one.summary();
}

// Sampled configs of every shipped GEMM family through the gate, in each dtype it serves, at
// shapes that cover aligned and unaligned sizes, skinny and long K; the errors are printed as
// fractions of the output's unit roundoff (half) or of cuBLAS SGEMM's error (f32).
TEST_F(VerificationGpu, SampledConfigsOfEveryFamilyPassTheGate) {
  const char* const shapes[] = {"16x4096x4096", "1000x1032x520", "2048x2048x2048", "256x256x32768"};
  const char* env = std::getenv("KTUNE_GATE_SAMPLE");
  const size_t per_shape = env ? size_t(std::atoi(env)) : 2;
  struct Job {
    Family f;
    Config c;
    GemmProblem p;
    std::future<std::shared_ptr<const CompiledKernel>> k;
  };
  std::vector<Job> jobs; // compiled on every core first: the checks then wait on NVRTC only once
  for (const Family& f : builtin_families()) {
    if (f.op() != "gemm" || f.name() == "gemm_naive") continue;
    for (DType t : f.dtypes())
      for (const char* shape : shapes) {
        const GemmProblem p = GemmProblem::parse(shape, "NN", t);
        for (const Config& c : f.sample(p, *dev_, per_shape, 44))
          jobs.push_back({f, c, p, compiler_->compile_async(compile_request(f, c, p, dev_->arch))});
      }
  }
  for (Job& j : jobs) {
    const auto k = j.k.get();
    Module m(k->cubin, k->lowered_names, j.f.name());
    const LaunchPlan plan = j.f.launch_plan(j.c, j.p);
    runner_->ensure_workspace(plan.workspace_bytes);
    const VerifyResult v = check_as_served_and_timed(*runner_, j.p, ++seed_, j.f.numerics(),
                                                     [&](CUstream st) { runner_->launch(m, plan, st); });
    EXPECT_TRUE(v.pass) << j.f.name() << " " << j.c.to_json() << " at " << j.p.key() << ": " << v.summary();
    const GemmErrorRule r = GemmOp::rule(j.p, j.f.numerics());
    std::cout << "[ ktune    ] gate " << j.f.name() << " " << j.p.key() << " rel_error " << v.rel_error;
    if (is_half(j.p.dtype)) std::cout << " = " << v.rel_error / r.u_out << " u";
    else std::cout << " = " << v.rel_error / v.baseline_error << " x cuBLAS SGEMM's " << v.baseline_error;
    std::cout << ", bound " << v.norm_bound << ", worst element at " << v.worst_ratio << " of its bound\n";
  }
  EXPECT_GT(jobs.size(), 20u);
}

// Every entry of the tables shipped for this GPU's arch (3xTF32 included), through the gate at its
// own problem: what the runtime serves from them was verified under the rule it is served under.
// Each entry's verdict is printed, so that one run lists the entries to drop or re-tune.
TEST_F(VerificationGpu, ShippedTablesPassTheGate) {
  struct Job {
    std::string what;
    TableEntry e;
    Family f;
    Config c;
    std::future<std::shared_ptr<const CompiledKernel>> k;
  };
  std::vector<Job> jobs; // compiled on every core first
  for (const auto& [table, origin] : shipped_tables(dev_->arch, true))
    for (const TableEntry& e : table.entries) {
      const Family f = find_family(e.family);
      const Config c = f.canonical(Config::from_json(e.config_json));
      const std::string what = origin + ": " + e.family + " " + c.to_json() + " at " + e.problem.key();
      if (!f.valid(c, e.problem, *dev_)) {
        ADD_FAILURE() << what << " is not valid on this device";
        continue;
      }
      jobs.push_back({what, e, f, c, compiler_->compile_async(compile_request(f, c, e.problem, dev_->arch))});
    }
  std::map<std::string, std::unique_ptr<OpRunner>> runners;
  for (Job& j : jobs) {
    auto& runner = runners[j.e.problem.op];
    if (!runner) runner = make_op_runner(j.e.problem.op, *compiler_, *dev_);
    const auto k = j.k.get();
    Module m(k->cubin, k->lowered_names, j.what);
    const LaunchPlan plan = j.f.launch_plan(j.c, j.e.problem);
    runner->ensure_workspace(plan.workspace_bytes);
    const VerifyResult v = check_as_served_and_timed(*runner, j.e.problem, ++seed_, j.f.numerics(),
                                                     [&](CUstream st) { runner->launch(m, plan, st); });
    EXPECT_TRUE(v.pass) << j.what << ": " << v.summary();
    std::cout << "[ ktune    ] table " << (v.pass ? "pass " : "FAIL ") << j.what << ": " << v.summary() << "\n";
  }
  EXPECT_GT(jobs.size(), 50u);
}
