// ktune compile: one config through NVRTC, its kernels, and (with --device) registers, spills and
// the occupancy of the launch the config makes.
#include <algorithm>
#include <CLI/CLI.hpp>
#include <climits>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/kernel_spec.h"
#include "ktune/compiler.h"
#include "ktune/device.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "runtime/module.h"
#include "tools/cli.h"
#include "tools/problem_options.h"
#include "tuner/spec_op.h"

namespace ktune::cli {
namespace {

struct CompileArgs {
  ProblemOptions problem;
  std::string config, cubin_out;
  int device = -1;
};

int cmd_compile(CompileArgs& a) {
  load_problem_kernels(a.problem);
  if (!a.cubin_out.empty()) check_output_file(a.cubin_out, "--cubin");
  const Family f = find_family(a.problem.family);
  // No --arch: sm_90, unless the family cannot run there (a spec's "arch": "sm_100a"): then the
  // arch it names.
  const bool arch_given = a.problem.sub && a.problem.sub->count("--arch") > 0;
  if (!arch_given && (f.min_arch() > 90 || (f.arch_specific() && f.min_arch() != 90))) a.problem.arch = "sm_" + std::to_string(f.min_arch());
  const Problem p = parse_problem(a.problem, f.op());
  // No --config: the family's default for the problem (what the runtime falls back on).
  if (a.config.empty() && !f.has_default()) throw UsageError("give --config: family " + f.name() + " declares no default config");
  const Config given = a.config.empty() ? f.default_config(p, DeviceInfo::nominal(a.problem.arch)) : Config::from_json(a.config);
  const Config c = f.canonical(given);
  // A value the family reads as another (its upgrade maps a value its space dropped onto the one it
  // kept): compiled as read, and said, so that the cubin is not taken for the value asked.
  for (const auto& [name, value] : given.items())
    if (c.has(name) && c[name] != value)
      std::fprintf(stderr, "ktune: family %s reads %s %d as %d (the value its space keeps in its place)\n",
                   f.name().c_str(), name.c_str(), value, c[name]);
  // A config not valid here says which limits it breaks (a grid of 0 blocks among them) before its
  // launch is planned; a valid one whose grid, size or scalar is no whole number: the launch's error, now.
  const CompileRequest req = compile_request(f, c, p, a.problem.arch); // an arch-specific family adds the "a"
  const LaunchPlan plan = f.launch_plan(c, p);
  Compiler compiler(1);
  const auto k = compiler.compile(req);
  std::printf("compiled %s for %s in %.2f s: %zu-byte cubin\n", c.short_string().c_str(), req.arch.c_str(),
              k->compile_seconds, k->cubin.size());
  // Each kernel once, with how many launches of its plan run it where more than one (a user
  // kernel's loop).
  // A user kernel's steps (of the launch, the reference, ...) inside a loop that runs while a
  // condition holds: their kernels' places.
  auto in_while_of = [&](const std::vector<SpecStep>* steps) {
    std::vector<int> in_while;
    const auto& spec = op_info(f.op()).spec;
    if (!spec || !steps) return in_while;
    std::function<void(const std::vector<SpecNode>&, bool)> walk = [&](const std::vector<SpecNode>& nodes, bool inside) {
      for (const SpecNode& n : nodes) {
        if (n.step >= 0 && inside) in_while.push_back(n.step);
        walk(n.body, inside || n.until >= 0);
      }
    };
    walk(spec->order_of(*steps), false);
    return in_while;
  };
  auto list_kernels = [&](const std::vector<std::string>& names, const LaunchPlan& launches, const std::vector<SpecStep>* steps) {
    const std::vector<int> in_while = in_while_of(steps);
    for (size_t i = 0; i < names.size(); ++i) {
      const auto& n = names[i];
      if (unsigned long long v = 0; constant_probe_value(n, &v)) { // a step's shared memory or block, a constant of the source
        for (const LaunchStep& s : launches.steps)
          if (s.smem_kernel == int(i) || s.block_kernel == int(i)) { // the step the plan launches with it (none: one this config skips)
            if (s.smem_kernel == int(i))
              std::printf("  shared memory of kernel %d's launch, a constant of the source: %llu bytes\n", s.kernel, v);
            else
              std::printf("  threads a block of kernel %d's launch, a constant of the source: %llu\n", s.kernel, v);
            break;
          }
        continue;
      }
      if (std::find(names.begin(), names.begin() + std::ptrdiff_t(i), n) != names.begin() + std::ptrdiff_t(i)) continue;
      const auto times = std::count_if(launches.steps.begin(), launches.steps.end(), [&](const LaunchStep& s) {
        return !s.copy() && size_t(s.kernel) < names.size() && names[size_t(s.kernel)] == n;
      });
      // A loop that runs while a condition holds may stop before the rounds its plan holds, or
      // repeat the two it holds.
      const bool while_loop = std::any_of(launches.steps.begin(), launches.steps.end(), [&](const LaunchStep& s) {
        return !s.copy() && size_t(s.kernel) < names.size() && names[size_t(s.kernel)] == n &&
               std::find(in_while.begin(), in_while.end(), s.kernel) != in_while.end();
      });
      if (while_loop) std::printf("  kernel %s (%td in the plan, in a loop that runs while a condition holds)\n", n.c_str(), times);
      else if (times > 1) std::printf("  kernel %s (%td launches)\n", n.c_str(), times);
      else std::printf("  kernel %s\n", n.c_str());
    }
  };
  const auto& own_spec = op_info(f.op()).spec;
  list_kernels(k->lowered_names, plan, own_spec ? &own_spec->steps : nullptr);
  if (!k->log.empty()) std::printf("NVRTC log:\n%s\n", k->log.c_str());
  // A user kernel's reference and baseline compile too: a name the source lacks, or a define its
  // config misses, fails here rather than on the GPU at the first check. Each step's arguments
  // are checked against what its kernel's (mangled) name declares.
  if (const auto& spec = op_info(f.op()).spec) {
    std::string wrong;
    // The parameters' sizes too, as the cubin records them (what the GPU compares at a first
    // launch): an extern "C" kernel's, whose name declares nothing, and a struct's layout.
    auto check = [&](const std::vector<SpecStep>& steps, const Config& config, const CompiledKernel& compiled,
                     const std::string& what) {
      const std::vector<std::string>& lowered = compiled.lowered_names;
      const std::vector<std::string> named = spec->kernel_names(steps, config, p); // as the spec writes them
      for (size_t i = 0; i < steps.size() && i < lowered.size(); ++i) {
        if (spec->skipped(steps[i], config, p)) continue; // not launched: another step's kernel stands in
        const std::string step = what + " step " + std::to_string(i + 1);
        std::string w = signature_mismatch(*spec, steps[i], lowered[i], p, step);
        const std::vector<size_t> sizes = cubin_param_sizes(compiled.cubin, lowered[i]);
        if (w.empty() && !sizes.empty()) w = param_sizes_mismatch(*spec, steps[i].args, sizes, p, step + ", kernel " + named.at(i));
        if (!w.empty() && wrong.empty()) wrong = w;
      }
    };
    check(spec->steps, c, *k, "launch");
    const struct {
      const char* what;
      const std::vector<SpecStep>& steps;
      const Config& config;
    } sides[] = {{"reference", spec->reference_steps, spec->reference_config},
                 {"baseline", spec->baseline_steps, spec->baseline_config},
                 {"setup", spec->setup_steps, spec->setup_config},
                 {"post", spec->post_steps, spec->post_config}};
    for (const auto& side : sides) {
      const std::optional<CompileRequest> side_req = spec_side_request(f.op(), side.what, p, req.arch);
      if (!side_req) continue;
      const LaunchPlan side_plan = spec->plan(side.steps, side.config, p);
      const auto compiled = compiler.compile(*side_req);
      std::printf("compiled its %s: %zu-byte cubin\n", side.what, compiled->cubin.size());
      list_kernels(compiled->lowered_names, side_plan, &side.steps);
      check(side.steps, side.config, *compiled, std::string("the ") + side.what + "'s");
    }
    if (!wrong.empty()) {
      std::fflush(stdout); // what compiled, before the error that follows it
      throw UsageError(wrong);
    }
  }
  if (!a.cubin_out.empty()) {
    // For the disassembler: cuobjdump --dump-sass FILE
    write_atomically(a.cubin_out, std::string(k->cubin.begin(), k->cubin.end()));
    std::printf("wrote the cubin to %s\n", a.cubin_out.c_str());
  }
  if (a.device >= 0) {
    CudaContext ctx(a.device);
    Module m(k->cubin, k->lowered_names, f.name() + " " + c.to_json());
    for (size_t i = 0; i < m.kernels(); ++i) {
      const auto at = m.attributes(i);
      std::printf("  kernel %zu: %d registers, %d B static smem, %d B local (spills/stack), max %d threads\n", i,
                  at.registers, at.static_smem, at.local_bytes, at.max_threads);
    }
    // Occupancy at the launch the plan makes for this problem: a grid beyond what the device
    // holds at once runs in waves (with clusters, often sooner than blocks per SM suggest).
    if (f.valid(c, p, device_by_ordinal(a.device))) {
      std::vector<std::string> seen; // a loop's launches of one shape, reported once
      for (const auto& s : f.launch_plan(c, p).steps) {
        if (s.kernel < 0) continue; // a copy, or a loop's reset or test
        const unsigned smem = m.dynamic_smem(s); // a C++ constant's too
        unsigned block[3];
        m.block_of(s, block);
        char key[128];
        std::snprintf(key, sizeof key, "%d %u %u %u %u %u %u %u", s.kernel, s.grid[0], s.grid[1], s.grid[2], block[0], block[1],
                      block[2], smem);
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
        seen.push_back(key);
        const Occupancy o = m.occupancy(size_t(s.kernel), s.grid, block, smem);
        const unsigned blocks = s.grid[0] * s.grid[1] * s.grid[2];
        std::printf("  launch of kernel %d at %s: grid %ux%ux%u (%u blocks) of %u threads, %u B dynamic smem: %d blocks per SM",
                    s.kernel, p.key().c_str(), s.grid[0], s.grid[1], s.grid[2], blocks, block[0] * block[1] * block[2],
                    smem, o.blocks_per_sm);
        if (o.cluster_size > 1)
          std::printf("; clusters of %d: %d resident at once, the grid has %u", o.cluster_size, o.max_active_clusters,
                      blocks / unsigned(o.cluster_size));
        std::printf("\n");
      }
    } else {
      std::printf("  (the config is not valid for %s on this device: no launch to report)\n", p.key().c_str());
    }
  }
  return 0;
}

} // namespace

Command add_compile(CLI::App& app) {
  auto a = std::make_shared<CompileArgs>();
  auto* cp = app.add_subcommand("compile", "Compile one config with NVRTC and report the result");
  add_problem_options(cp, a->problem, ProblemOf::family);
  cp->add_option("--config", a->config, "Config as JSON, e.g. '{\"BM\":128,...}' (default: the family's default for the problem)");
  cp->add_option("--device", a->device, "Also load it on this GPU and print registers, smem, spills")
      ->check(whole_number(0, INT_MAX));
  cp->add_option("-o,--cubin", a->cubin_out, "Write the cubin here (cuobjdump --dump-sass reads it)");
  return {cp, [a] { return cmd_compile(*a); }};
}

} // namespace ktune::cli
