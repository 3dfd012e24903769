// Where the time of a multi-kernel launch plan goes (split-K reduce, operand packing), measured
// on the GPU with the tuner's timer (L2 flushed, medians; docs/PERFORMANCE.md):
//   plan         the plan as ktune runs it (the reduce a programmatic dependent launch on sm_90)
//   serialized   the same steps launched plainly, each after the previous one has finished
//   main         the main kernel alone (its inputs left in the workspace by a full run)
//   others       the other steps alone (packing, reduce)
// plan - main is what the extra steps cost beside the main kernel; plan against serialized is
// what the dependent launch saves. Every config is verified against FP64 first.
//   plan_steps --problem 16x4096x4096 --family gemm_skinny --config '{...}' [--config ...] [--dtype bf16]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/device.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "runtime/gemm_launch.h"
#include "runtime/module.h"
#include "tuner/gemm_op.h"
#include "runtime/timing.h"
#include "ktune/gemm_problem.h"

using namespace ktune;

int main(int argc, char** argv) {
  CLI::App app{"Time a launch plan's steps: whole, serialized, main kernel alone, the others alone"};
  std::string shape, layout = "NN", family = "gemm_skinny", dtype = "f32";
  std::vector<std::string> configs;
  int ordinal = 0;
  app.add_option("--problem", shape, "Problem MxNxK")->required();
  app.add_option("--layout", layout, "Layouts of A and B");
  app.add_option("--dtype", dtype, "Data type of A, B and C: f32, bf16, f16")->capture_default_str();
  app.add_option("--family", family, "Kernel family");
  app.add_option("--config", configs, "Config as JSON (repeatable)")->required();
  app.add_option("--device", ordinal, "GPU ordinal");
  CLI11_PARSE(app, argc, argv);
  try {
    const GemmProblem p = GemmProblem::parse(shape, layout, parse_dtype(dtype));
    const Family f = find_family(family);
    const DeviceInfo d = device_by_ordinal(ordinal);
    CudaContext ctx(d.ordinal);
    Compiler compiler;
    GemmOp op(compiler, d);
    Timer timer(d.l2_bytes);
    std::printf("%s, %s\n%-9s %-9s %-10s %-11s %-9s %-9s  config\n", d.name.c_str(), p.key().c_str(), "regs", "blocks/SM",
                "plan us", "serial. us", "main us", "others us");
    for (const auto& text : configs) {
      const Config c = f.canonical(Config::from_json(text));
      const auto k = compiler.compile(compile_request(f, c, p, d.arch)); // throws UsageError when c is not valid for p
      Module m(k->cubin, k->lowered_names, family + " " + c.to_json());
      const LaunchPlan plan = f.launch_plan(c, p);
      op.ensure_workspace(plan.workspace_bytes);
      const VerifyResult v = op.check(p, 7, [&](const KtuneGemmArgs& a, CUstream s) { launch_gemm(m, plan, a, s); }, nullptr);
      if (!v.pass) throw Error(family + " " + c.to_json() + " on " + p.key() + ": wrong result: " + v.summary());
      const KtuneGemmArgs args = op.args();
      // The workspace still holds what the verified run left there (packed operands, partial
      // sums), so every partial plan below reads meaningful data.
      auto time_us = [&](const LaunchPlan& pl) {
        return pl.steps.empty() ? 0.0
                                : 1000 * timer.time([&](CUstream s) { launch_gemm(m, pl, args, s); }, nullptr, TimingOptions{}).median_ms;
      };
      LaunchPlan serialized = plan, main_only = plan, others = plan;
      for (auto& s : serialized.steps) s.overlap_previous = false;
      main_only.steps.clear(), others.steps.clear();
      for (const auto& s : plan.steps) {
        LaunchStep plain = s;
        plain.overlap_previous = false; // alone, nothing precedes it to overlap
        (s.kernel == 0 ? main_only : others).steps.push_back(plain);
      }
      const LaunchStep& ms = plan.main_step();
      const Occupancy occ = m.occupancy(0, ms.grid, ms.block, ms.dynamic_smem);
      std::printf("%-9d %-9d %-10.2f %-11.2f %-9.2f %-9.2f  %s\n", m.attributes(0).registers, occ.blocks_per_sm, time_us(plan),
                  time_us(serialized), time_us(main_only), time_us(others), c.to_json().c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plan_steps: %s\n", e.what());
    return 1;
  }
  return 0;
}
