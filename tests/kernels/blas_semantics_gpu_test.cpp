// BLAS semantics on every kernel path (launch_gemm, runtime/module.h): alpha == 0 or K == 0 gives
// C = beta * C without reading A or B (they hold NaN here, or are null), beta == 0 never reads C
// (it holds NaN), alpha == 0 with beta == 1 and M == 0 or N == 0 launch nothing. Every family
// runs a sample of configs drawn to cover its kernel paths (split-K and its reduce, packing,
// pipelines and stage rings, EVEN, skinny's thread groups, columns per warp and clusters) on
// aligned and unaligned shapes, each config with the plan of the full problem, as a runtime would
// launch it. The kernels' own K == 0 handling is checked too, with launch_gemm's rewriting of the
// arguments bypassed. C's rows are padded beyond N, and the padding must come back bit for bit.
// The CPU test at the end compiles the same sample with NVRTC, so that a machine without a GPU
// still catches a config of the sample that does not compile.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

#include "gemm/gemm_families.h"
#include "gpu_env.h"
#include "ktune/compiler.h"
#include "runtime/cuda_check.h"
#include "runtime/gemm_launch.h"
#include "runtime/module.h"
#include "ktune/gemm_problem.h"

using namespace ktune;

namespace {

// Shapes: skinny (M <= 64) and not, odd sizes that no tile divides, a long K against a tiny C,
// one that the tiles divide (EVEN and gemm_tf32x3's unpacked form apply there) and a large odd
// one. alpha == 0 costs no K loop, so 2999^3 is as cheap as C is.
const char* const kShapes[] = {"16x512x300", "2x2x5000", "33x257x129", "128x4096x4096", "2999x2999x2999"};
const char* const kAll[] = {"NN", "NT", "TN", "TT"};

// A shape in a layout with C's rows padded by at least 4 floats beyond N (the padding is checked
// for stray writes). The alignment class stays what the shape's own leading dimensions give.
GemmProblem problem(const char* shape, const char* layout) {
  GemmProblem p = GemmProblem::parse(shape, layout);
  p.ldc = (p.n + 3) / 4 * 4 + 4;
  p.align = GemmProblem::alignment_of(p.eff_lda(), p.eff_ldb(), p.ldc);
  p.validate();
  return p;
}

// Configs drawn from a family with some domains cut down (none: the whole space), n per shape,
// the layout rotating over `layouts` from shape to shape. Draws that are valid only where the
// tiles divide the problem (EVEN, gemm_tf32x3 unpacked), or only where they do not (PACK), are
// drawn only there: proving a space empty costs the sampler a walk over all of it.
enum class Where { every_shape, dividing, not_dividing };
const char* const kDividing = "128x4096x4096";

struct Draw {
  const char* what;
  std::map<std::string, std::vector<int>> domains;
  size_t n;
  std::vector<const char*> layouts;
  Where where = Where::every_shape;
};
struct FamilyDraws {
  const char* family;
  std::vector<Draw> draws;
};

const std::vector<FamilyDraws>& draws() {
  const std::vector<const char*> all(std::begin(kAll), std::end(kAll));
  static const std::vector<FamilyDraws> d = {
      {"gemm_naive", {{"any", {}, 2, all}}},
      {"gemm_smem", {{"any", {}, 2, all}}},
      {"gemm_simt",
       {{"any", {}, 3, all},
        {"one K slice", {{"SPLITK", {1}}}, 1, all},
        {"split-K", {{"SPLITK", {2, 4, 8, 16}}}, 2, all},
        {"packed", {{"PACK", {1}}}, 2, all, Where::not_dividing},
        {"packed split-K", {{"PACK", {1}}, {"SPLITK", {2, 4, 8, 16}}}, 1, all, Where::not_dividing},
        {"single buffer", {{"PIPE", {0}}}, 1, all},
        {"register double buffer", {{"PIPE", {1}}}, 1, all},
        {"cp.async stages", {{"PIPE", {2, 3, 4}}}, 1, all},
        {"EVEN", {{"EVEN", {1}}}, 2, all, Where::dividing},
        {"EVEN split-K", {{"EVEN", {1}}, {"SPLITK", {2, 4, 8, 16}}}, 1, all, Where::dividing}}},
      {"gemm_skinny",
       {{"any", {}, 3, all},
        {"one K slice", {{"SPLITK", {1}}}, 2, all},
        {"cp.async stage ring", {{"ST", {2, 3, 4, 6}}}, 2, {"NN", "TN"}},
        {"split-K through the reduce", {{"CL", {0}}, {"SPLITK", {2, 4, 8, 16, 32, 64}}}, 2, all},
        {"clusters", {{"CL", {1}}, {"SPLITK", {2, 4, 8}}}, 2, all},
        {"clusters and the reduce", {{"CL", {1}}, {"SPLITK", {16, 32, 64}}}, 1, all},
        {"thread groups along K", {{"KG", {2, 4, 8, 16, 32}}}, 1, {"NN", "TN"}},
        {"columns per warp", {{"NC", {2, 4, 8}}}, 1, {"NT", "TT"}}}},
      {"gemm_tf32x3",
       {{"any", {}, 2, all},
        {"one K slice", {{"SPLITK", {1}}}, 1, all},
        {"split-K", {{"SPLITK", {2, 4, 8, 16}}}, 2, all},
        {"unpacked", {{"PACK", {0}}}, 2, all, Where::dividing},
        {"packed split-K", {{"PACK", {1}}, {"SPLITK", {2, 4, 8, 16}}}, 1, all, Where::not_dividing}}},
  };
  return d;
}

struct Case {
  std::string family;
  Config config;
  GemmProblem p; // the config is valid for it
  std::string what;
  std::string describe() const {
    return family + " (" + what + ") " + config.to_json() + " on " + p.key() + " ldc=" + std::to_string(p.ldc);
  }
};

// Every draw at every shape where it has valid configs, seeded by its position: the same device
// limits give the same cases (the CPU test below compiles those of nominal sm_90).
std::vector<Case> sample_cases(const DeviceInfo& d) {
  std::vector<Case> out;
  uint64_t seed = 0;
  for (const auto& fd : draws()) {
    const Family full = find_family(fd.family);
    for (size_t si = 0; si < std::size(kShapes); ++si)
      for (size_t di = 0; di < fd.draws.size(); ++di) {
        const Draw& dr = fd.draws[di];
        ++seed;
        const bool dividing = std::string(kShapes[si]) == kDividing;
        if ((dr.where == Where::dividing && !dividing) || (dr.where == Where::not_dividing && dividing)) continue;
        SpaceRestriction r;
        r.family = fd.family;
        r.domains = dr.domains;
        const Family f = dr.domains.empty() ? full : full.restricted(r);
        const GemmProblem p = problem(kShapes[si], dr.layouts[(si + di) % dr.layouts.size()]);
        for (const Config& c : f.sample(p, d, dr.n, 20261201 + seed)) out.push_back({fd.family, c, p, dr.what});
      }
  }
  return out;
}

// Whether the cases reach the kernel paths the draws are for (the count of each).
std::map<std::string, int> coverage(const std::vector<Case>& cases) {
  std::map<std::string, int> n;
  for (const auto& fd : draws()) n[fd.family] = 0;
  for (const Case& c : cases) {
    const Config& k = c.config;
    const bool b_col = c.p.b == Layout::col;
    ++n[c.family];
    ++n[c.family + " " + c.p.layout_string()];
    if (c.family == "gemm_simt") {
      ++n[k["SPLITK"] > 1 ? "gemm_simt SPLITK > 1" : "gemm_simt SPLITK = 1"];
      if (k["PACK"]) ++n["gemm_simt PACK = 1"];
      if (k["PACK"] && k["SPLITK"] > 1) ++n["gemm_simt PACK = 1, SPLITK > 1"];
      if (k["EVEN"]) ++n["gemm_simt EVEN = 1"];
      if (k["EVEN"] && k["SPLITK"] > 1) ++n["gemm_simt EVEN = 1, SPLITK > 1"];
      ++n["gemm_simt PIPE = " + std::to_string(std::min(k["PIPE"], 2)) + (k["PIPE"] >= 2 ? "+" : "")];
    } else if (c.family == "gemm_skinny") {
      if (k["ST"] >= 2) ++n["gemm_skinny ST >= 2"];
      if (k["SPLITK"] == 1) ++n["gemm_skinny SPLITK = 1"];
      if (!k["CL"] && k["SPLITK"] > 1) ++n["gemm_skinny SPLITK > 1, CL = 0"];
      if (k["CL"] && k["SPLITK"] <= 8) ++n["gemm_skinny CL = 1, SPLITK <= 8"];
      if (k["CL"] && k["SPLITK"] > 8) ++n["gemm_skinny CL = 1, SPLITK > 8"];
      if (!b_col && k["KG"] > 1) ++n["gemm_skinny KG > 1"];
      if (b_col && k["NC"] > 1) ++n["gemm_skinny NC > 1"];
    } else if (c.family == "gemm_tf32x3") {
      ++n[k["SPLITK"] > 1 ? "gemm_tf32x3 SPLITK > 1" : "gemm_tf32x3 SPLITK = 1"];
      ++n[std::string("gemm_tf32x3 PACK = ") + (k["PACK"] ? "1" : "0")];
    }
  }
  return n;
}

void expect_coverage(const std::vector<Case>& cases, bool clusters) {
  const auto n = coverage(cases);
  std::vector<std::string> want;
  for (const auto& fd : draws()) {
    want.push_back(fd.family);
    for (const char* l : kAll) want.push_back(std::string(fd.family) + " " + l);
  }
  for (const char* k :
       {"gemm_simt SPLITK = 1", "gemm_simt SPLITK > 1", "gemm_simt EVEN = 1, SPLITK > 1", "gemm_skinny SPLITK = 1",
        "gemm_tf32x3 SPLITK = 1", "gemm_simt PACK = 1", "gemm_simt PACK = 1, SPLITK > 1", "gemm_simt EVEN = 1",
        "gemm_simt PIPE = 0", "gemm_simt PIPE = 1", "gemm_simt PIPE = 2+", "gemm_skinny ST >= 2",
        "gemm_skinny SPLITK > 1, CL = 0", "gemm_skinny KG > 1", "gemm_skinny NC > 1", "gemm_tf32x3 SPLITK > 1",
        "gemm_tf32x3 PACK = 0", "gemm_tf32x3 PACK = 1"})
    want.push_back(k);
  if (clusters) // sm_90 on
    for (const char* k : {"gemm_skinny CL = 1, SPLITK <= 8", "gemm_skinny CL = 1, SPLITK > 8"}) want.push_back(k);
  for (const auto& w : want) {
    const auto it = n.find(w);
    EXPECT_TRUE(it != n.end() && it->second > 0) << "the sample has no case of " << w;
  }
}

// Quiet NaNs with distinct payloads: where a value in C came from is then visible.
constexpr uint32_t kNanA = 0x7fc0a0a0u, kNanB = 0x7fc0b0b0u, kPoisonC = 0x7fc0c0c0u, kPoisonWs = 0x7fc0e0e0u;

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float from_bits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

size_t a_elems(const GemmProblem& p) {
  return size_t(std::max<int64_t>(1, p.a == Layout::row ? p.m : p.k)) * size_t(p.eff_lda());
}
size_t b_elems(const GemmProblem& p) {
  return size_t(std::max<int64_t>(1, p.b == Layout::row ? p.k : p.n)) * size_t(p.eff_ldb());
}
size_t c_elems(const GemmProblem& p) { return size_t(p.m) * size_t(p.eff_ldc()); }

// Kernel arguments as launch_gemm's callers build them, over the given pointers.
KtuneGemmArgs args_for(const GemmProblem& p, const float* A, const float* B, float* C, float* ws, float alpha,
                       float beta) {
  KtuneGemmArgs a{};
  a.A = A, a.B = B, a.C = C, a.workspace = ws;
  a.lda = p.eff_lda(), a.ldb = p.eff_ldb(), a.ldc = p.eff_ldc();
  a.ws_ld = gemm_workspace_ld(p.n);
  a.M = int(p.m), a.N = int(p.n), a.K = int(p.k);
  a.alpha = alpha, a.beta = beta;
  return a;
}

// The plan's steps launched with the arguments exactly as given, as launch_gemm would launch them
// but without its BLAS handling: what the kernels themselves do with K == 0 and alpha != 0.
void launch_raw(Module& m, const LaunchPlan& plan, KtuneGemmArgs a) {
  void* params[] = {&a};
  for (const auto& s : plan.steps) m.launch(s, nullptr, params);
}

void sync(const std::string& what) { check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", what); }

// What C must hold after a launch, in its M x N part (the padding must always be unchanged).
enum class Want { zeros, half_of_old, unchanged };

// Device buffers of one case: A and B filled with NaN, C, a device copy of C's initial values,
// the plan's workspace; and on the host C's initial values: finite (a few -0) in the M x N part,
// a NaN pattern in the padding.
struct Buffers {
  DeviceBuffer a, b, c, c_old, ws;
  std::vector<float> old;

  Buffers(const GemmProblem& p, size_t workspace_bytes)
      : a(a_elems(p) * 4, "A (NaN)"),
        b(b_elems(p) * 4, "B (NaN)"),
        c(c_elems(p) * 4, "C"),
        c_old(c_elems(p) * 4, "initial C"),
        ws(workspace_bytes, "workspace"),
        old(c_elems(p)) {
    check_cu(driver().cuMemsetD32Async(a.ptr(), kNanA, a_elems(p), nullptr), "cuMemsetD32Async", "A");
    check_cu(driver().cuMemsetD32Async(b.ptr(), kNanB, b_elems(p), nullptr), "cuMemsetD32Async", "B");
    const size_t ldc = size_t(p.eff_ldc());
    for (size_t i = 0; i < old.size(); ++i) {
      const size_t col = i % ldc;
      // Multiples of 1/64 in [-16, 16): halving them is exact, as is beta * c on the device.
      const uint32_t h = uint32_t(i) * 2654435761u;
      old[i] = col >= size_t(p.n) ? from_bits(kPoisonC) : i % 97 == 5 ? -0.0f : (float((h >> 7) % 2048) - 1024) / 64;
    }
    check_cu(driver().cuMemcpyHtoD(c_old.ptr(), old.data(), old.size() * 4), "cuMemcpyHtoD", "initial C");
    sync("filling A and B");
  }
};

// Runs one launch on freshly initialised C (the NaN pattern everywhere where beta == 0, else the
// initial values) and workspace (NaN), then checks C; "" when it is right, else what is wrong.
template <class Launch>
std::string run_and_check(const GemmProblem& p, Buffers& buf, bool beta_zero, Want want, const Launch& launch) {
  const size_t n = c_elems(p), ldc = size_t(p.eff_ldc());
  std::vector<float> init = buf.old;
  if (beta_zero) {
    std::fill(init.begin(), init.end(), from_bits(kPoisonC));
    check_cu(driver().cuMemsetD32Async(buf.c.ptr(), kPoisonC, n, nullptr), "cuMemsetD32Async", "poisoning C");
  } else {
    check_cu(driver().cuMemcpyDtoD(buf.c.ptr(), buf.c_old.ptr(), n * 4), "cuMemcpyDtoD", "restoring C");
  }
  if (buf.ws.bytes())
    check_cu(driver().cuMemsetD32Async(buf.ws.ptr(), kPoisonWs, buf.ws.bytes() / 4, nullptr), "cuMemsetD32Async",
             "workspace");
  launch();
  sync("the launch under test");
  std::vector<float> out(n);
  check_cu(driver().cuMemcpyDtoH(out.data(), buf.c.ptr(), n * 4), "cuMemcpyDtoH", "reading C");
  size_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < n; ++i) {
    const size_t row = i / ldc, col = i % ldc;
    bool ok;
    if (col >= size_t(p.n) || want == Want::unchanged)
      ok = bits(out[i]) == bits(init[i]);
    else if (want == Want::zeros)
      ok = out[i] == 0.0f;
    else
      ok = out[i] == 0.5f * init[i];
    if (!ok && bad++ == 0)
      first << "C(" << row << ", " << col << ") = " << out[i] << " (bits 0x" << std::hex << bits(out[i]) << std::dec
            << "), initially " << init[i] << (col >= size_t(p.n) ? " (padding)" : "");
  }
  if (!bad) return "";
  return std::to_string(bad) + " wrong elements of C, first " + first.str();
}

// The sample for the device, compiled once for all tests of the suite.
struct Compiled {
  Case c;
  std::shared_ptr<const CompiledKernel> k; // null: it did not compile (error says why)
  std::string error;
};

class BlasSemanticsGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    dev_ = ktune::testing::first_gpu(&why);
    if (!dev_) GTEST_SKIP() << "no GPU: " << why;
    ctx_ = std::make_unique<CudaContext>(dev_->ordinal);
  }
  static void TearDownTestSuite() {
    compiled_.reset();
    compiler_.reset();
  }

  const std::vector<Compiled>& compiled() {
    if (!compiled_) {
      compiler_ = std::make_unique<Compiler>();
      const auto cases = sample_cases(*dev_);
      expect_coverage(cases, dev_->arch_number() >= 90);
      std::map<std::string, std::shared_future<std::shared_ptr<const CompiledKernel>>> by_key;
      std::vector<std::shared_future<std::shared_ptr<const CompiledKernel>>> futs;
      for (const Case& c : cases) {
        const CompileRequest req = compile_request(find_family(c.family), c.config, c.p, dev_->arch);
        auto it = by_key.find(req.cache_key()); // a config drawn at two shapes in one layout compiles once
        if (it == by_key.end()) it = by_key.emplace(req.cache_key(), compiler_->compile_async(req).share()).first;
        futs.push_back(it->second);
      }
      compiled_ = std::make_unique<std::vector<Compiled>>();
      for (size_t i = 0; i < cases.size(); ++i) {
        Compiled x{cases[i], nullptr, ""};
        try {
          x.k = futs[i].get();
        } catch (const std::exception& e) {
          x.error = e.what();
        }
        compiled_->push_back(std::move(x));
      }
      std::cout << "[ ktune    ] " << cases.size() << " (config, shape) cases, " << by_key.size() << " cubins\n";
    }
    return *compiled_;
  }

  // Runs check(case, module, plan, buffers) -> failures for every case of the sample; a sticky
  // CUDA error ends the test (it leaves the context unusable). Returns the cases run per family.
  template <class Check>
  std::map<std::string, int> for_each_case(const Check& check) {
    std::map<std::string, int> ran;
    for (const Compiled& x : compiled()) {
      if (!x.k) {
        ADD_FAILURE() << x.c.describe() << " does not compile: " << x.error;
        continue;
      }
      const Family f = find_family(x.c.family);
      try {
        Module m(x.k->cubin, x.k->lowered_names, x.c.describe());
        const LaunchPlan plan = f.launch_plan(x.c.config, x.c.p);
        Buffers buf(x.c.p, plan.workspace_bytes);
        for (const std::string& failure : check(x.c, m, plan, buf)) ADD_FAILURE() << x.c.describe() << ": " << failure;
        ++ran[x.c.family];
      } catch (const CudaError& e) {
        ADD_FAILURE() << x.c.describe() << ": " << e.what();
        if (e.is_sticky()) return ran; // the context is unusable from here on
      } catch (const std::exception& e) {
        ADD_FAILURE() << x.c.describe() << ": " << e.what();
      }
    }
    return ran;
  }

  void expect_every_family(const std::map<std::string, int>& ran) {
    for (const auto& fd : draws()) {
      const auto it = ran.find(fd.family);
      EXPECT_TRUE(it != ran.end() && it->second > 0) << fd.family << " ran no case";
    }
  }

  const DeviceInfo* dev_ = nullptr;
  std::unique_ptr<CudaContext> ctx_;
  static std::unique_ptr<Compiler> compiler_;
  static std::unique_ptr<std::vector<Compiled>> compiled_;
};

std::unique_ptr<Compiler> BlasSemanticsGpu::compiler_;
std::unique_ptr<std::vector<Compiled>> BlasSemanticsGpu::compiled_;

} // namespace

// alpha == 0 through launch_gemm with A and B full of NaN, then null: C = 0 (C held NaN and must
// not have been read), C = 0.5 * C exactly, and with beta == 1 C untouched bit for bit.
TEST_F(BlasSemanticsGpu, AlphaZeroGivesBetaTimesCWithoutReadingAOrB) {
  const auto ran = for_each_case([](const Case& c, Module& m, const LaunchPlan& plan, Buffers& buf) {
    const GemmProblem& p = c.p;
    const float* nan_a = buf.a.as<const float>();
    const float* nan_b = buf.b.as<const float>();
    float* C = buf.c.as<float>();
    float* ws = buf.ws.as<float>();
    struct Run {
      const char* what;
      const float *A, *B;
      float beta;
      Want want;
    };
    const Run runs[] = {{"alpha = 0, beta = 0, A and B NaN", nan_a, nan_b, 0.0f, Want::zeros},
                        {"alpha = 0, beta = 0, A and B null", nullptr, nullptr, 0.0f, Want::zeros},
                        {"alpha = 0, beta = 0.5, A and B NaN", nan_a, nan_b, 0.5f, Want::half_of_old},
                        {"alpha = 0, beta = 0.5, A and B null", nullptr, nullptr, 0.5f, Want::half_of_old},
                        {"alpha = 0, beta = 1, A and B NaN", nan_a, nan_b, 1.0f, Want::unchanged}};
    std::vector<std::string> failures;
    for (const Run& r : runs) {
      const KtuneGemmArgs a = args_for(p, r.A, r.B, C, ws, 0.0f, r.beta);
      const std::string e = run_and_check(p, buf, r.beta == 0.0f, r.want, [&] { launch_gemm(m, plan, a, nullptr); });
      if (!e.empty()) failures.push_back(std::string(r.what) + ": " + e);
    }
    return failures;
  });
  expect_every_family(ran);
}

// K == 0 with the plan of the full problem: through launch_gemm (alpha = 1, and an infinite
// alpha, which BLAS never multiplies when K == 0), and launched step by step with the arguments
// as given, alpha = 1, so that each kernel's own K == 0 path (prologues, split-K slices and their
// reduce, packing, stage rings, clusters) is what is checked.
TEST_F(BlasSemanticsGpu, KZeroGivesBetaTimesCOnEveryKernelPath) {
  const auto ran = for_each_case([](const Case& c, Module& m, const LaunchPlan& plan, Buffers& buf) {
    const GemmProblem& p = c.p;
    const float* nan_a = buf.a.as<const float>();
    const float* nan_b = buf.b.as<const float>();
    float* C = buf.c.as<float>();
    float* ws = buf.ws.as<float>();
    const float inf = std::numeric_limits<float>::infinity();
    struct Run {
      const char* what;
      bool raw;
      const float *A, *B;
      float alpha, beta;
      Want want;
    };
    const Run runs[] = {
        {"launch_gemm, K = 0, alpha = 1, beta = 0, A and B NaN", false, nan_a, nan_b, 1.0f, 0.0f, Want::zeros},
        {"launch_gemm, K = 0, alpha = inf, beta = 0.5, A and B null", false, nullptr, nullptr, inf, 0.5f,
         Want::half_of_old},
        {"kernels, K = 0, alpha = 1, beta = 0, A and B null", true, nullptr, nullptr, 1.0f, 0.0f, Want::zeros},
        {"kernels, K = 0, alpha = 1, beta = 0, A and B NaN", true, nan_a, nan_b, 1.0f, 0.0f, Want::zeros},
        {"kernels, K = 0, alpha = 1, beta = 0.5, A and B NaN", true, nan_a, nan_b, 1.0f, 0.5f, Want::half_of_old}};
    std::vector<std::string> failures;
    for (const Run& r : runs) {
      KtuneGemmArgs a = args_for(p, r.A, r.B, C, ws, r.alpha, r.beta);
      a.K = 0;
      const std::string e = run_and_check(p, buf, r.beta == 0.0f, r.want, [&] {
        if (r.raw)
          launch_raw(m, plan, a);
        else
          launch_gemm(m, plan, a, nullptr);
      });
      if (!e.empty()) failures.push_back(std::string(r.what) + ": " + e);
    }
    return failures;
  });
  expect_every_family(ran);
}

// M == 0 or N == 0 launches nothing: C, a sentinel of the full problem's size, stays as it was
// bit for bit, and no workspace is asked for. A plan whose only step names a kernel the module
// does not have shows that no launch was even attempted (Module::function would throw).
TEST_F(BlasSemanticsGpu, EmptyCLaunchesNothing) {
  const auto ran = for_each_case([](const Case& c, Module& m, const LaunchPlan& plan, Buffers& buf) {
    const GemmProblem& p = c.p;
    std::vector<std::string> failures;
    const int sizes[][2] = {{0, int(p.n)}, {int(p.m), 0}, {0, 0}};
    for (const auto& mn : sizes) {
      KtuneGemmArgs a =
          args_for(p, buf.a.as<const float>(), buf.b.as<const float>(), buf.c.as<float>(), nullptr, 1.0f, 0.5f);
      a.M = mn[0], a.N = mn[1];
      const std::string e = run_and_check(p, buf, true, Want::unchanged, [&] { launch_gemm(m, plan, a, nullptr); });
      if (!e.empty()) failures.push_back("M = " + std::to_string(a.M) + ", N = " + std::to_string(a.N) + ": " + e);
    }
    return failures;
  });
  expect_every_family(ran);

  // The quick returns never reach a launch; the same plan with a real product does.
  const Compiled& x = compiled().front();
  ASSERT_TRUE(x.k) << x.error;
  Module m(x.k->cubin, x.k->lowered_names, x.c.describe());
  LaunchPlan bogus;
  bogus.steps.resize(1);
  bogus.steps[0].kernel = 1000;
  KtuneGemmArgs a = args_for(x.c.p, nullptr, nullptr, nullptr, nullptr, 1.0f, 0.0f);
  KtuneGemmArgs empty_m = a, empty_n = a, scale_by_one = a, negative = a;
  empty_m.M = 0, empty_n.N = 0;
  scale_by_one.alpha = 0.0f, scale_by_one.beta = 1.0f;
  negative.K = -1;
  EXPECT_NO_THROW(launch_gemm(m, bogus, empty_m, nullptr));
  EXPECT_NO_THROW(launch_gemm(m, bogus, empty_n, nullptr));
  EXPECT_NO_THROW(launch_gemm(m, bogus, scale_by_one, nullptr));
  EXPECT_THROW(launch_gemm(m, bogus, a, nullptr), std::out_of_range);
  EXPECT_THROW(launch_gemm(m, bogus, negative, nullptr), Error);
}

// NVRTC needs no GPU: the sample the GPU tests draw on an H100 (sm_90 limits) compiles, and it
// covers the kernel paths it is drawn for.
TEST(BlasSemantics, SampledConfigsCompileForSm90) {
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  const auto cases = sample_cases(d);
  expect_coverage(cases, true);
  Compiler compiler;
  std::map<std::string, std::shared_future<std::shared_ptr<const CompiledKernel>>> by_key;
  std::vector<std::string> keys;
  for (const Case& c : cases) {
    const CompileRequest req = compile_request(find_family(c.family), c.config, c.p, d.arch);
    if (!by_key.count(req.cache_key())) by_key.emplace(req.cache_key(), compiler.compile_async(req).share());
    keys.push_back(req.cache_key());
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    try {
      const auto k = by_key.at(keys[i]).get();
      EXPECT_GT(k->cubin.size(), 0u);
      EXPECT_EQ(k->lowered_names.size(), find_family(cases[i].family).kernel_names(cases[i].config, cases[i].p).size());
    } catch (const std::exception& e) {
      ADD_FAILURE() << cases[i].describe() << ": " << e.what();
    }
  }
  std::cout << "[ ktune    ] " << cases.size() << " (config, shape) cases, " << by_key.size() << " cubins compiled\n";
}
