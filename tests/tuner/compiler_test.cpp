// NVRTC compiles without a GPU, so every family's templates are compile-checked in CI.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "ktune/compiler.h"
#include "ktune/error.h"
#include "core/embedded.h"
#include "tuner/compile_all.h"
#include "tuner/gemm_op.h"
#include "tuner/rows_op.h"
#include "tuner/spec_op.h"
#include "ktune/gemm_problem.h"

using namespace ktune;

namespace {

const char* kLayouts[] = {"NN", "NT", "TN", "TT"};

using ktune::testing::compile_all;

std::vector<std::pair<Config, GemmProblem>> every_config_every_layout(const Family& f, const std::string& arch) {
  std::vector<std::pair<Config, GemmProblem>> cases;
  for (const char* l : kLayouts) {
    const auto p = GemmProblem::parse("1000x1000x1000", l);
    f.enumerate(p, DeviceInfo::nominal(arch), [&](const Config& c) {
      cases.emplace_back(c, p);
      return true;
    });
  }
  return cases;
}

// 200 seeded random configs at an aligned shape and 20 at an unaligned one (where packing
// applies), plus, for every parameter and every value in its domain, one valid config that has
// that value (the corners); layouts rotate over the cases.
std::vector<std::pair<Config, GemmProblem>> simt_sample(const std::string& arch) {
  const Family f = find_family("gemm_simt");
  const auto d = DeviceInfo::nominal(arch);
  std::vector<std::pair<Config, GemmProblem>> cases;
  // 2048^3: large enough for every tile, small enough that SPLITK = 16 fits the workspace cap;
  // 2047x2049x2051 the same, unaligned and divided by no tile.
  auto problem = [&](size_t i) { return GemmProblem::parse("2048x2048x2048", kLayouts[i % 4]); };
  auto unaligned = [&](size_t i) { return GemmProblem::parse("2047x2049x2051", kLayouts[i % 4]); };
  for (const auto& c : f.sample(problem(0), d, 200, 2026)) cases.emplace_back(c, problem(cases.size()));
  for (const auto& c : f.sample(unaligned(0), d, 20, 2027)) cases.emplace_back(c, unaligned(cases.size()));
  for (const auto& prm : f.params())
    for (int v : prm.values) {
      SpaceRestriction r;
      r.domains[prm.name] = {v};
      const Family one_value = f.restricted(r);
      auto one = one_value.sample(problem(0), d, 1, 7 + v);
      const bool aligned = !one.empty();
      if (!aligned) one = one_value.sample(unaligned(0), d, 1, 7 + v); // PACK = 1 is for these only
      EXPECT_EQ(one.size(), 1u) << "no valid config with " << prm.name << "=" << v << " on " << arch;
      if (!one.empty()) cases.emplace_back(one[0], aligned ? problem(cases.size()) : unaligned(cases.size()));
    }
  return cases;
}

// One config for every value of every parameter of f, each drawn (seed + value) at the first of
// `problems` where that value is valid; a value valid at none of them fails the test.
void add_one_per_value(const Family& f, const DeviceInfo& d, const std::vector<GemmProblem>& problems, uint64_t seed,
                       std::vector<std::pair<Config, GemmProblem>>& cases) {
  for (const auto& prm : f.params())
    for (int v : prm.values) {
      SpaceRestriction r;
      r.domains[prm.name] = {v};
      const Family one_value = f.restricted(r);
      bool found = false;
      for (const auto& p : problems) {
        const auto one = one_value.sample(p, d, 1, seed + v);
        if (!one.empty()) {
          cases.emplace_back(one[0], p);
          found = true;
          break;
        }
      }
      EXPECT_TRUE(found) << "no valid config with " << prm.name << "=" << v;
    }
}

} // namespace

// The verification kernels every tuning run and GPU test starts with (f32 and half forms): a
// compile error there stops everything, so it is caught here, without a GPU.
TEST(Compiler, ReferenceKernelsCompileForEveryArch) {
  Compiler compiler(1);
  for (const char* arch : {"sm_75", "sm_80", "sm_90"}) { // CUDA 13's oldest arch is sm_75
    const auto k = compiler.compile(GemmOp::reference_request(arch));
    EXPECT_GT(k->cubin.size(), 0u) << arch;
    EXPECT_EQ(k->lowered_names.size(), GemmOp::reference_request(arch).name_expressions.size()) << arch;
    for (const char* op : {"softmax", "layernorm", "rmsnorm"}) {
      const auto r = compiler.compile(rows_reference_request(arch, op_info(op)));
      EXPECT_GT(r->cubin.size(), 0u) << arch << " " << op;
      EXPECT_EQ(r->lowered_names.size(), 2u) << arch << " " << op;
    }
    const auto s = compiler.compile(spec_check_request(arch));
    EXPECT_EQ(s->lowered_names.size(), 4u) << arch << " user-kernel checks";
  }
}

TEST(Compiler, EveryNaiveAndSmemConfigCompilesForSm80AndSm90) {
  for (const char* arch : {"sm_80", "sm_90"})
    for (const char* fam : {"gemm_naive", "gemm_smem"}) {
      const Family f = find_family(fam);
      const auto cases = every_config_every_layout(f, arch);
      EXPECT_GT(cases.size(), 8u);
      compile_all(f, cases, arch);
    }
}

TEST(Compiler, SampledAndCornerSimtConfigsCompileForSm80) {
  const auto cases = simt_sample("sm_80");
  EXPECT_GE(cases.size(), 260u);
  compile_all(find_family("gemm_simt"), cases, "sm_80");
}

TEST(Compiler, SampledAndCornerSimtConfigsCompileForSm90) {
  const auto cases = simt_sample("sm_90");
  EXPECT_GE(cases.size(), 260u);
  compile_all(find_family("gemm_simt"), cases, "sm_90");
}

// gemm_skinny's valid parameters depend on B's layout (KG or NC) and on M (MT), so it is drawn
// per layout and row count, plus one config for every value of every parameter in some layout.
TEST(Compiler, SampledAndCornerSkinnyConfigsCompileForSm90) {
  const Family f = find_family("gemm_skinny");
  const auto d = DeviceInfo::nominal("sm_90");
  std::vector<std::pair<Config, GemmProblem>> cases;
  for (const char* rows : {"1x4096x4096", "16x4096x4096", "48x4096x4096"})
    for (const char* l : kLayouts) {
      const auto p = GemmProblem::parse(rows, l);
      for (const auto& c : f.sample(p, d, 4, 11)) cases.emplace_back(c, p);
    }
  std::vector<GemmProblem> corners;
  for (const char* rows : {"1x4096x4096", "4x4096x4096", "16x4096x4096", "48x4096x4096"})
    for (const char* l : {"NN", "NT"}) corners.push_back(GemmProblem::parse(rows, l));
  add_one_per_value(f, d, corners, 5, cases);
  EXPECT_GE(cases.size(), 48u + 20u);
  compile_all(f, cases, "sm_90");
}

// gemm_tf32x3: sampled over the four layouts at a dividing shape (PACK = 0) and an unaligned one
// (PACK = 1), plus one config for every value of every parameter, on sm_80 and sm_90.
TEST(Compiler, SampledAndCornerTf32x3ConfigsCompileForSm80AndSm90) {
  const Family f = find_family("gemm_tf32x3");
  for (const char* arch : {"sm_80", "sm_90"}) {
    const auto d = DeviceInfo::nominal(arch);
    std::vector<std::pair<Config, GemmProblem>> cases;
    for (const char* shape : {"2048x2048x2048", "1000x1000x1001"})
      for (const char* l : kLayouts) {
        const auto p = GemmProblem::parse(shape, l);
        for (const auto& c : f.sample(p, d, 3, 17)) cases.emplace_back(c, p);
      }
    // PACK = 1 is valid only at the unaligned shape, every other value at the dividing one.
    add_one_per_value(f, d, {GemmProblem::parse("2048x2048x2048"), GemmProblem::parse("1000x1000x1001")}, 7, cases);
    compile_all(f, cases, arch);
  }
}

// gemm_tc16 (bf16/f16 on mma.sync), on sm_80 and sm_90 in both dtypes and all four layouts: one
// sampled config at an aligned dividing shape (unpacked, 16-byte loads), one packed split-K config
// at an unaligned shape (2999^3, 77x1001x33, 1x4096x4096 with an odd ldb, 301x203x137 in turn),
// one config at an odd-sized or non-dividing shape, one at a shape whose packed copies would
// exceed the workspace cap (the unpacked element-load form), plus one config for every value of
// every parameter. The first version ran on an H100 (tests/kernels/tc16_gpu_test.cpp); the packed,
// split-K, column-major and element paths are compile-checked here.
TEST(Compiler, SampledAndCornerTc16ConfigsCompileForSm80AndSm90) {
  const Family f = find_family("gemm_tc16");
  SpaceRestriction packed_split;
  packed_split.domains = {{"SPLITK", {2, 4, 8}}, {"PACK", {1}}};
  const Family ps = f.restricted(packed_split);
  for (const char* arch : {"sm_80", "sm_90"}) {
    const auto d = DeviceInfo::nominal(arch);
    std::vector<std::pair<Config, GemmProblem>> cases;
    uint64_t seed = 19;
    int packed = 0, split = 0, elements = 0;
    auto take = [&](const Family& from, const GemmProblem& p) {
      const auto one = from.sample(p, d, 1, ++seed);
      EXPECT_EQ(one.size(), 1u) << "nothing valid for " << p.key() << " on " << arch;
      if (one.empty()) return;
      cases.emplace_back(one[0], p);
      packed += one[0]["PACK"];
      split += one[0]["SPLITK"] > 1;
    };
    for (DType t : {DType::bf16, DType::f16})
      for (size_t l = 0; l < 4; ++l) {
        const char* layout = kLayouts[l];
        take(f, GemmProblem::parse("2048x2048x2048", layout, t));
        auto odd_ld = GemmProblem::parse("1x4096x4096", layout, t);
        odd_ld.ldb = odd_ld.eff_ldb() + 1;
        odd_ld.align = 2;
        const GemmProblem unaligned[] = {GemmProblem::parse("2999x2999x2999", layout, t),
                                         GemmProblem::parse("77x1001x33", layout, t), odd_ld,
                                         GemmProblem::parse("301x203x137", layout, t)};
        take(ps, unaligned[(l + (t == DType::f16)) % 4]);
        const char* other[] = {"1000x1032x520", "77x1001x33", "1x4096x4096", "301x203x137"};
        take(f, GemmProblem::parse(other[(l + 2 * (t == DType::f16)) % 4], layout, t));
      }
    // Packed copies over 512 MiB: only the unpacked kernel with element loads serves these.
    for (DType t : {DType::bf16, DType::f16}) {
      const auto huge = GemmProblem::parse("16383x16385x16387", kLayouts[t == DType::f16 ? 3 : 1], t);
      for (const auto& c : f.sample(huge, d, 1, ++seed)) {
        EXPECT_EQ(c["PACK"], 0) << c.to_json();
        // ...PACK = 0, LDM, SMEM, CPA = 1, CP16 = 0, F16, A_COL, B_COL> (TT for f16, NT for bf16)
        const std::string name = f.kernel_names(c, huge)[0], tail = t == DType::f16 ? ",1,0,1,1,1>" : ",1,0,0,0,1>";
        EXPECT_EQ(name.substr(name.size() - tail.size()), tail) << name;
        cases.emplace_back(c, huge);
        ++elements;
      }
    }
    EXPECT_GE(packed, 8);
    EXPECT_GE(split, 8);
    EXPECT_EQ(elements, 2);
    // PACK = 1 is valid only where the problem is unaligned or not divided, every other value at 2048^3.
    add_one_per_value(f, d,
                      {GemmProblem::parse("2048x2048x2048", "NN", DType::bf16),
                       GemmProblem::parse("2999x2999x2999", "TN", DType::f16)},
                      9, cases);
    EXPECT_GE(cases.size(), 24u + 2u + 20u);
    compile_all(f, cases, arch);
  }
}

TEST(Compiler, DroppingACompilerWithQueuedWorkEndsItSafely) {
  // One worker, a queue of compiles, and the compiler destroyed at once: the compile running
  // finishes while the compiler's cache still exists, and those not started are dropped, their
  // futures broken promises (a tune whose budget abandoned a pool's worth of compiles exits
  // without compiling them all). Before the cache outlived the workers a GPU test unwinding this
  // way crashed (SIGSEGV in a worker); this test guards the contract: every future ready (none
  // dangles or hangs), each a cubin or a broken promise, no crash.
  const Family f = find_family("gemm_naive");
  const auto p = GemmProblem::parse("1000x1000x1000");
  std::vector<std::future<std::shared_ptr<const CompiledKernel>>> futs;
  {
    Compiler compiler(1);
    f.enumerate(p, DeviceInfo::nominal("sm_90"), [&](const Config& c) {
      futs.push_back(compiler.compile_async(compile_request(f, c, p, "sm_90")));
      return futs.size() < 6;
    });
  }
  ASSERT_EQ(futs.size(), 6u);
  size_t compiled = 0, dropped = 0;
  for (auto& fu : futs) {
    ASSERT_EQ(fu.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    try {
      EXPECT_GT(fu.get()->cubin.size(), 0u);
      ++compiled;
    } catch (const std::future_error& e) {
      EXPECT_EQ(e.code(), std::future_errc::broken_promise);
      ++dropped;
    }
  }
  EXPECT_EQ(compiled + dropped, 6u);
  EXPECT_GT(dropped, 0u) << "one worker cannot have started six compiles before the compiler was dropped";
}

namespace {

// Compiles that count themselves as they start and then wait at `gate`: a one-byte cubin each,
// once let go.
void hold_compiles(Compiler& compiler, std::shared_future<void> gate, std::atomic<int>& started) {
  compiler.set_backend([gate, &started](const CompileRequest&) {
    ++started;
    gate.wait();
    auto k = std::make_shared<CompiledKernel>();
    k->cubin = {'x'};
    return k;
  });
}

} // namespace

// A run that ends without waiting for its compiles (TuneOptions::leave_running_compiles) asks the
// pool how many are running and drops those queued: two of five held in a blocked backend on two
// threads are counted as running, the three queued are dropped (broken promises, never started),
// and the two finish once let go.
TEST(Compiler, CountsItsRunningCompilesAndDropsThoseQueued) {
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  std::atomic<int> started{0};
  Compiler compiler(2);
  hold_compiles(compiler, gate, started);
  std::vector<std::future<std::shared_ptr<const CompiledKernel>>> futs;
  for (int i = 0; i < 5; ++i) {
    CompileRequest r;
    r.source = "// request " + std::to_string(i);
    r.source_name = "blocked.cu";
    r.arch = "sm_90";
    futs.push_back(compiler.compile_async(r));
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (started < 2 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(started.load(), 2);
  EXPECT_EQ(compiler.running(), 2u);
  compiler.drop_queued();
  go.set_value();
  size_t compiled = 0, dropped = 0;
  for (auto& fu : futs) {
    ASSERT_EQ(fu.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    try {
      EXPECT_EQ(fu.get()->cubin.size(), 1u);
      ++compiled;
    } catch (const std::future_error& e) {
      EXPECT_EQ(e.code(), std::future_errc::broken_promise);
      ++dropped;
    }
  }
  EXPECT_EQ(compiled, 2u);
  EXPECT_EQ(dropped, 3u);
  EXPECT_EQ(started.load(), 2) << "a dropped compile was started";
  while (compiler.running() > 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(compiler.running(), 0u);
}

// A search whose time ran out raises its queued compiles' cancel flags: on one thread held by a
// blocked compile, the queued compile whose flag is raised is skipped when its turn comes (its
// future an Error saying so, nothing compiled), the one whose flag is not compiles.
TEST(Compiler, ACompileItsCallerStoppedWaitingForIsNotStarted) {
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  std::atomic<int> started{0};
  Compiler compiler(1);
  hold_compiles(compiler, gate, started);
  auto request = [](const char* name) {
    CompileRequest r;
    r.source = std::string("// ") + name;
    r.source_name = "cancel.cu";
    r.arch = "sm_90";
    r.context = name;
    return r;
  };
  Compiler::Cancel held = std::make_shared<std::atomic<bool>>(false), dropped = std::make_shared<std::atomic<bool>>(false),
                   kept = std::make_shared<std::atomic<bool>>(false);
  auto first = compiler.compile_async(request("first"), held);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (started < 1 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(started.load(), 1);
  auto second = compiler.compile_async(request("second"), dropped);
  auto third = compiler.compile_async(request("third"), kept);
  dropped->store(true);
  held->store(true); // running already: it finishes
  go.set_value();
  EXPECT_EQ(first.get()->cubin.size(), 1u);
  try {
    second.get();
    ADD_FAILURE() << "a compile whose caller stopped waiting ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not started"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("second"), std::string::npos) << e.what();
  }
  EXPECT_EQ(third.get()->cubin.size(), 1u);
  EXPECT_EQ(started.load(), 2) << "the skipped compile reached the backend";
  EXPECT_EQ(compiler.cache_size(), 2u);
}

// A request that names its own dialect (a spec's "-std=c++20") compiles in it, without NVRTC's
// warning that ours came first.
TEST(Compiler, ARequestsOwnDialectReplacesTheDefault) {
  CompileRequest r;
  r.source = "template <class T> concept Small = sizeof(T) <= 4;\n"
             "template <Small T> __global__ void k(T* y) { y[threadIdx.x] = T(1); }\n";
  r.source_name = "dialect.cu";
  r.arch = "sm_90";
  r.name_expressions = {"k<float>"};
  r.options = {"-std=c++20"};
  const auto k = Compiler(1).compile(r);
  EXPECT_FALSE(k->cubin.empty());
  // Ours first, theirs after, NVRTC logs: "--std (-std)=c++17" followed by "--std (-std)=c++20".
  // (Not the same source without the option: NVRTC 13.0 crashes on a concept under C++17.)
  EXPECT_EQ(k->log.find("c++17"), std::string::npos) << k->log;
}

TEST(Compiler, InvalidConfigIsRejectedBeforeCompiling) {
  const Family f = find_family("gemm_simt");
  Config c{{"BM", 128}, {"BN", 128}, {"WM", 64}, {"WN", 64}, {"TM", 8}, {"TN", 8}, {"LN", 8}, {"BK", 8}, {"VEC", 4}, {"AT", 1},
           {"PAD", 4}, {"PIPE", 2}, {"SPLITK", 1}, {"SWZ", 1}, {"EVEN", 0}, {"PACK", 0}};
  const auto unaligned = GemmProblem::parse("2999x2999x2999");
  try {
    compile_request(f, c, unaligned, "sm_90");
    FAIL() << "an invalid config produced a compile request";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("alignment"), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.to_json()), std::string::npos) << msg;
    EXPECT_NE(msg.find(unaligned.key()), std::string::npos) << msg;
  }
}

TEST(Compiler, SyntaxErrorCarriesTheNvrtcLogAndTheConfig) {
  Family f("broken", "user/broken.cu");
  f.source_text("#include \"gemm_args.h\"\ntemplate <int X> __global__ void broken(KtuneGemmArgs p) { int y = X +; }\n")
      .param("X", {1})
      .kernels([](const Config& c, const GemmProblem&) {
        return std::vector<std::string>{"broken<" + std::to_string(c["X"]) + ">"};
      })
      .launch([](const Config&, const GemmProblem&) { return LaunchPlan{}; });
  Compiler compiler(1);
  const Config c{{"X", 1}};
  try {
    compiler.compile(compile_request(f, c, GemmProblem::parse("8x8x8"), "sm_90"));
    FAIL() << "a syntax error compiled";
  } catch (const CompileError& e) {
    EXPECT_NE(e.log().find("error"), std::string::npos) << e.log();
    EXPECT_NE(e.log().find("user/broken.cu"), std::string::npos) << e.log();
    EXPECT_NE(std::string(e.what()).find("family broken config {\"X\":1}"), std::string::npos) << e.what();
  }
}

// Warnings before the error (a deprecated type's notes): the log's head names the error, so that
// a trial's message and a summary's first line do.
TEST(Compiler, TheFirstErrorLeadsTheLogWhenWarningsComeFirst) {
  CompileRequest r;
  r.source = "__global__ void k(float* y) { int unused = 1; y[threadIdx.x] = 1; }\n"
             "__global__ void j(uint* y) { y[threadIdx.x] = 1; }\n";
  r.source_name = "user/warned.cu";
  r.name_expressions = {"k"};
  r.arch = "sm_90";
  r.context = "warned";
  Compiler compiler(1);
  try {
    compiler.compile(r);
    FAIL() << "uint is not a type under NVRTC";
  } catch (const CompileError& e) {
    const std::string head = e.log().substr(0, e.log().find('\n'));
    EXPECT_NE(head.find("error"), std::string::npos) << e.log();
    EXPECT_NE(head.find("warned.cu(2): error"), std::string::npos) << "line 2, after line 1's warning: " << e.log();
  }
}

// A source that #defines a macro the compile sets (-DN=4096) again would compile with its own
// value (NVRTC only warns): refused, naming the macro; a guarded define is taken.
TEST(Compiler, ASourceThatRedefinesAMacroTheConfigSetsIsRefused) {
  CompileRequest r;
  r.source = "#define N 1000\n__global__ void k(float* y) { y[threadIdx.x] = N; }\n";
  r.source_name = "user/redefine.cu";
  r.name_expressions = {"k"};
  r.options = {"-DN=4096"};
  r.arch = "sm_90";
  r.context = "redefine";
  Compiler compiler(1);
  try {
    compiler.compile(r);
    FAIL() << "the source's N would have replaced the config's";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("the source defines N again, which the compile sets (-DN=4096)"), std::string::npos)
        << e.what();
    EXPECT_EQ(e.log().rfind("the source defines N again", 0), 0u) << "a trial records the log: the reason leads it";
  }
  r.source = "#ifndef N\n#define N 1000\n#endif\n__global__ void k(float* y) { y[threadIdx.x] = N; }\n";
  EXPECT_FALSE(compiler.compile(r)->cubin.empty());
}

// A macro the project's build sets whatever the config (a spec's constant define, its options'
// -D) is the source's to define again, as nvcc takes it with a warning: HOOMD-blue's CMake passes
// -D__HIP_PLATFORM_NVCC__ and its bundled HIP header #defines it too. A config's stays refused.
TEST(Compiler, ASourceMayRedefineABuildMacro) {
  CompileRequest r;
  r.source = "#define __HIP_PLATFORM_NVCC__\n#define N 1000\n__global__ void k(float* y) { y[threadIdx.x] = N; }\n";
  r.source_name = "user/build_macro.cu";
  r.name_expressions = {"k"};
  r.options = {"-D__HIP_PLATFORM_NVCC__=1", "-DN=4096"};
  r.arch = "sm_90";
  r.context = "build_macro";
  Compiler compiler(1);
  try {
    compiler.compile(r);
    FAIL() << "the source's N would have replaced the config's";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("the source defines __HIP_PLATFORM_NVCC__ again"), std::string::npos) << e.what();
  }
  r.build_macros = {"__HIP_PLATFORM_NVCC__"};
  try {
    compiler.compile(r);
    FAIL() << "the source's N would have replaced the config's";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("the source defines N again, which the compile sets (-DN=4096)"), std::string::npos) << e.what();
  }
  r.source = "#define __HIP_PLATFORM_NVCC__\n__global__ void k(float* y) { y[threadIdx.x] = 1.f; }\n";
  EXPECT_FALSE(compiler.compile(r)->cubin.empty());
}

TEST(Compiler, CacheServesRepeatsAndKeysOnArch) {
  const Family f = find_family("gemm_smem");
  const auto p = GemmProblem::parse("64x64x64");
  Compiler compiler(1);
  const auto r90 = compile_request(f, Config{{"TILE", 16}}, p, "sm_90");
  const auto first = compiler.compile(r90);
  EXPECT_FALSE(first->from_cache);
  const auto second = compiler.compile(r90);
  EXPECT_TRUE(second->from_cache);
  EXPECT_EQ(first->cubin, second->cubin);
  EXPECT_EQ(compiler.cache_hits(), 1u);
  const auto r80 = compile_request(f, Config{{"TILE", 16}}, p, "sm_80");
  EXPECT_NE(r80.cache_key(), r90.cache_key());
  EXPECT_FALSE(compiler.compile(r80)->from_cache);
  // The layout is a template argument: a TT problem is a different instantiation.
  EXPECT_NE(compile_request(f, Config{{"TILE", 16}}, GemmProblem::parse("64x64x64", "TT"), "sm_90").cache_key(),
            r90.cache_key());
}

TEST(Compiler, Sm90aCompiles) {
  const Family f = find_family("gemm_smem");
  Compiler compiler(1);
  EXPECT_GT(compiler.compile(compile_request(f, Config{{"TILE", 32}}, GemmProblem::parse("64x64x64"), "sm_90a"))->cubin.size(), 0u);
  EXPECT_THROW(compile_request(f, Config{{"TILE", 32}}, GemmProblem::parse("64x64x64"), "compute_90"), UsageError);
}

TEST(Compiler, TemplatesAreEmbeddedAsTheyAreOnDisk) {
  std::ifstream in(std::string(KTUNE_SOURCE_DIR) + "/kernel_templates/gemm/gemm_simt.cu");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(std::string(embedded_file("gemm/gemm_simt.cu")), ss.str());
  EXPECT_THROW(embedded_file("gemm/none.cu"), Error);
}
