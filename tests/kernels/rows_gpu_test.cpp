// The row kernels (softmax, LayerNorm, RMSNorm) on a GPU through the tuner's own runner: sampled
// configs of every family, each op and dtype, rows of odd and long lengths, padded leading
// dimensions, against the FP64 reference (tuner/rows_op.cpp) with its tolerance rule.
#include <gtest/gtest.h>

#include <iostream>

#include "gpu_env.h"
#include "ktune/compiler.h"
#include "ktune/family.h"
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

TEST(RowsGpu, SampledConfigsOfEveryFamilyMatchFp64Reference) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  CudaContext ctx(d->ordinal);
  Compiler compiler;
  int checked = 0;
  for (const char* op : {"softmax", "layernorm", "rmsnorm"}) {
    auto runner = make_op_runner(op, compiler, *d);
    std::vector<Family> fams;
    for (auto& f : builtin_families())
      if (f.op() == op) fams.push_back(std::move(f));
    uint64_t seed = 11;
    for (DType dt : {DType::f32, DType::bf16, DType::f16})
      for (const char* shape : {"1x1", "7x1000", "64x768", "33x4096", "3x32000", "2x131072"}) {
        Problem p = Problem::parse(op, shape, "", dt);
        if (std::string(shape) == "7x1000") { // padded rows: the kernels must leave the padding alone
          p.ld = {1008, 1016};
          p.align = Problem::alignment_of(p.ld, element_bytes(dt));
        }
        if (std::string(op) == "softmax") p.scalars["scale"] = 0.7;
        for (const auto& f : fams)
          for (const Config& c : f.sample(p, *d, 3, seed++)) {
            const std::string what = p.key() + " " + f.name() + " " + c.to_json();
            std::shared_ptr<const CompiledKernel> k;
            try {
              k = compiler.compile(compile_request(f, c, p, d->arch));
            } catch (const std::exception& e) {
              ADD_FAILURE() << what << ": " << e.what();
              continue;
            }
            Module m(k->cubin, k->lowered_names, what);
            runner->prepare(p, seed);
            runner->launch(m, f.launch_plan(c, p), nullptr);
            const VerifyResult v = runner->verify(nullptr);
            EXPECT_TRUE(v.pass) << what << ": " << v.summary() << " (tolerance " << rows_tolerance(dt) << ")";
            ++checked;
          }
      }
  }
  std::cout << "[ ktune    ] " << checked << " row-kernel configs verified\n";
  EXPECT_GT(checked, 300);
}
