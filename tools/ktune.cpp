// The ktune command-line program. Exit status: 0 success, 1 a run-time failure (no GPU, CUDA or
// NVRTC error), 2 bad usage (unknown subcommand or flag, bad shape, unknown family, bad file).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "ktune/compiler.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "runtime/module.h"

namespace {

using namespace ktune;

struct SpaceArgs {
  std::string family = "gemm_simt", arch = "sm_90", problem = "4096x4096x4096", layout = "NN", restrict_file;
  bool count_only = false;
  size_t sample = 5;
  uint64_t seed = 1;
};

Family load_family(const std::string& name, const std::string& restrict_file) {
  Family f = find_family(name);
  if (!restrict_file.empty()) f = f.restricted(SpaceRestriction::from_json_file(restrict_file));
  return f;
}

int cmd_space(const SpaceArgs& a) {
  const Family f = load_family(a.family, a.restrict_file);
  const GemmProblem p = GemmProblem::parse(a.problem, a.layout);
  const DeviceInfo d = DeviceInfo::nominal(a.arch);
  const uint64_t n = f.count(p, d);
  if (a.count_only) {
    std::printf("%llu\n", static_cast<unsigned long long>(n));
    return 0;
  }
  uint64_t raw = 1;
  for (const auto& prm : f.params()) raw *= prm.values.size();
  std::printf("family   %s: %s\n", f.name().c_str(), f.about().c_str());
  std::printf("problem  %s on %s (nominal limits: %d KB shared memory per block)\n", p.key().c_str(), a.arch.c_str(),
              d.max_smem_per_block_optin / 1024);
  std::printf("space    %llu valid of %llu combinations\n\nparameters\n", static_cast<unsigned long long>(n),
              static_cast<unsigned long long>(raw));
  for (const auto& prm : f.params()) {
    std::string vals;
    for (int v : prm.values) {
      if (!vals.empty()) vals += ' ';
      vals += std::to_string(v);
    }
    std::printf("  %-7s {%s}  %s\n", prm.name.c_str(), vals.c_str(), prm.about.c_str());
  }
  std::printf("\nconstraints\n");
  for (const auto& c : f.constraints()) std::printf("  - %s\n", c.why.c_str());
  const auto sample = f.sample(p, d, a.sample, a.seed);
  std::printf("\nsample of %zu (seed %llu)\n", sample.size(), static_cast<unsigned long long>(a.seed));
  for (const auto& c : sample) {
    const LaunchPlan plan = f.launch_plan(c, p);
    std::printf("  %s  threads=%u smem=%uB\n", c.to_json().c_str(), plan.steps[0].block[0] * plan.steps[0].block[1],
                plan.steps[0].dynamic_smem);
  }
  return 0;
}

int cmd_devices() {
  std::string why;
  const auto devices = list_devices(&why);
  if (devices.empty()) {
    std::fprintf(stderr, "ktune: no GPU available: %s\n", why.c_str());
    return 1;
  }
  for (const auto& d : devices) {
    std::printf("%d: %s  %s  %d SMs  %.1f GiB  SM clock %d MHz  memory clock %d MHz  L2 %d MB  driver %d.%d\n",
                d.ordinal, d.name.c_str(), d.arch.c_str(), d.sm_count, d.total_memory / 1073741824.0,
                d.sm_clock_khz / 1000, d.mem_clock_khz / 1000, d.l2_bytes >> 20, d.driver_version / 1000,
                d.driver_version % 1000 / 10);
  }
  std::printf("NVRTC %s\n", Compiler::nvrtc_version().c_str());
  return 0;
}

struct CompileArgs {
  std::string family = "gemm_simt", config, arch = "sm_90", problem = "4096x4096x4096", layout = "NN";
  int device = -1;
};

int cmd_compile(const CompileArgs& a) {
  const Family f = find_family(a.family);
  const GemmProblem p = GemmProblem::parse(a.problem, a.layout);
  const Config c = f.canonical(Config::from_json(a.config));
  Compiler compiler(1);
  const auto k = compiler.compile(compile_request(f, c, p, a.arch));
  std::printf("compiled %s for %s in %.2f s: %zu-byte cubin\n", c.short_string().c_str(), a.arch.c_str(),
              k->compile_seconds, k->cubin.size());
  for (const auto& n : k->lowered_names) std::printf("  kernel %s\n", n.c_str());
  if (!k->log.empty()) std::printf("NVRTC log:\n%s\n", k->log.c_str());
  if (a.device >= 0) {
    CudaContext ctx(a.device);
    Module m(k->cubin, k->lowered_names, f.name() + " " + c.to_json());
    for (size_t i = 0; i < m.kernels(); ++i) {
      const auto at = m.attributes(i);
      std::printf("  kernel %zu: %d registers, %d B static smem, %d B local (spills/stack), max %d threads\n", i,
                  at.registers, at.static_smem, at.local_bytes, at.max_threads);
    }
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"ktune: autotuned CUDA kernels (GEMM) for your shapes on your GPU"};
  app.set_version_flag("--version", std::string(KTUNE_VERSION));
  app.require_subcommand(1);

  SpaceArgs space;
  auto* sp = app.add_subcommand("space", "Count or summarise a family's valid configs for a problem");
  sp->add_option("--family", space.family, "Kernel family")->capture_default_str();
  sp->add_option("--arch", space.arch, "Target arch (sm_80, sm_86, sm_89, sm_90, sm_90a)")->capture_default_str();
  sp->add_option("--problem", space.problem, "Problem shape MxNxK")->capture_default_str();
  sp->add_option("--layout", space.layout, "Layouts of A and B: NN, NT, TN, TT")->capture_default_str();
  sp->add_option("--restrict", space.restrict_file, "JSON file narrowing parameter domains")->check(CLI::ExistingFile);
  sp->add_flag("--count", space.count_only, "Print only the number of valid configs");
  sp->add_option("--sample", space.sample, "How many configs to show")->capture_default_str();
  sp->add_option("--seed", space.seed, "Seed of the sample")->capture_default_str();

  auto* dv = app.add_subcommand("devices", "List the GPUs: name, arch, SMs, memory, clocks, driver");

  CompileArgs comp;
  auto* cp = app.add_subcommand("compile", "Compile one config with NVRTC and report the result");
  cp->add_option("--family", comp.family, "Kernel family")->capture_default_str();
  cp->add_option("--config", comp.config, "Config as JSON, e.g. '{\"BM\":128,...}'")->required();
  cp->add_option("--arch", comp.arch, "Target arch")->capture_default_str();
  cp->add_option("--problem", comp.problem, "Problem shape MxNxK (validity, layout)")->capture_default_str();
  cp->add_option("--layout", comp.layout, "Layouts of A and B")->capture_default_str();
  cp->add_option("--device", comp.device, "Also load it on this GPU and print registers, smem, spills");

  // CLI11 would call an unknown word a missing subcommand; name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::string names;
    for (const auto* sub : app.get_subcommands({})) {
      known = known || sub->get_name() == argv[1];
      if (!names.empty()) names += ", ";
      names += sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "ktune: unknown subcommand '%s' (known: %s). Run 'ktune --help'.\n", argv[1], names.c_str());
      return 2;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "ktune: %s\nRun 'ktune --help' for the subcommands, 'ktune SUBCOMMAND --help' for their flags.\n",
                 e.what());
    return 2;
  }

  try {
    if (sp->parsed()) return cmd_space(space);
    if (dv->parsed()) return cmd_devices();
    if (cp->parsed()) return cmd_compile(comp);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "ktune: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ktune: error: %s\n", e.what());
    return 1;
  }
  return 2;
}
