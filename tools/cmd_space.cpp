// ktune space: count or summarise a family's valid configs for a problem (no GPU needed).
#include <algorithm>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/kernel_spec.h"
#include "ktune/device.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "tools/cli.h"
#include "tools/problem_options.h"

namespace ktune::cli {
namespace {

struct SpaceArgs {
  ProblemOptions problem;
  std::string restrict_file;
  bool count_only = false;
  bool default_only = false;
  size_t sample = 5;
  uint64_t seed = 1;
};

// Counting walks every valid config, about a microsecond each: gemm_simt's 60.8 M at 4096^3 take
// most of a minute. Past the first two seconds, say how far it got on stderr (in place on a
// terminal, else a line every five seconds), so that a long count does not look like a hang.
uint64_t count_with_progress(const Family& f, const Problem& p, const DeviceInfo& d, Config* first) {
  using clock = std::chrono::steady_clock;
  const bool tty = isatty(2);
  const auto start = clock::now();
  auto last = start;
  bool shown = false;
  uint64_t n = 0;
  f.enumerate(p, d, [&](const Config& c) {
    if (n == 0) *first = c;
    if ((++n & 0xfffff) != 0) return true; // the clock is read every 2^20 configs
    const auto now = clock::now();
    if (now - start < std::chrono::seconds(2) || (shown && now - last < std::chrono::seconds(tty ? 1 : 5))) return true;
    last = now;
    shown = true;
    std::fprintf(stderr, "%sktune: counting the valid configs of %s: %.1f M so far (%.0f s)%s", tty ? "\r" : "",
                 f.name().c_str(), double(n) / 1e6, std::chrono::duration<double>(now - start).count(),
                 tty ? "" : "\n");
    std::fflush(stderr);
    return true;
  });
  if (shown && tty) std::fprintf(stderr, "\r\033[K"); // the count itself follows on stdout
  return n;
}

int cmd_space(SpaceArgs& a) {
  load_problem_kernels(a.problem);
  const Family f = load_family(a.problem.family, a.restrict_file);
  const Problem p = parse_problem(a.problem, f.op());
  const DeviceInfo d = DeviceInfo::nominal(a.problem.arch);
  // The config the runtime falls back on where nothing tuned lends one (scripts compare it with
  // a sweep: bench/attention_decode_rule.py).
  // A spec's own default that this problem rules out: the first valid config stands in, and the
  // user is told so (the runtime falls back on it too).
  std::string stand_in;
  if (const auto& spec = op_info(f.op()).spec; spec && !spec->default_config.items().empty() && !f.valid(spec->default_config, p, d))
    stand_in = "the spec's default " + spec->default_config.to_json() + " is not valid for " + p.key() + " on " + a.problem.arch +
               " (" + f.violations(spec->default_config, p, d).front() + "): the first valid config stands in";
  if (a.default_only) {
    if (!f.has_default()) throw UsageError("family " + f.name() + " declares no default config");
    if (!stand_in.empty()) std::fprintf(stderr, "ktune: note: %s\n", stand_in.c_str());
    const Config c = f.canonical(f.default_config(p, d));
    if (!f.valid(c, p, d))
      throw UsageError("the default config of " + f.name() + " " + c.to_json() + " is not valid for " + p.key() +
                       " on " + a.problem.arch);
    std::printf("%s\n", c.to_json().c_str());
    return 0;
  }
  Config first;
  const uint64_t n = count_with_progress(f, p, d, &first);
  // The launch plans of the first valid config and of the default, where a spec's grid, size or
  // scalar may be no whole number at this problem: the same error the sample, compile and a launch
  // would give, not a count of configs that cannot run.
  if (n) f.launch_plan(first, p);
  if (f.has_default()) {
    const Config dflt = f.canonical(f.default_config(p, d));
    if (f.valid(dflt, p, d)) f.launch_plan(dflt, p);
  }
  if (a.count_only) {
    std::printf("%llu\n", static_cast<unsigned long long>(n));
    return 0;
  }
  uint64_t raw = 1;
  for (const auto& prm : f.params()) raw *= prm.values.size();
  std::printf("family   %s: %s\n", f.name().c_str(), f.about().c_str());
  std::printf("problem  %s on %s (nominal limits: %d KB shared memory per block)\n", p.key().c_str(), a.problem.arch.c_str(),
              d.max_smem_per_block_optin / 1024);
  std::printf("space    %llu valid of %llu combinations\n", static_cast<unsigned long long>(n),
              static_cast<unsigned long long>(raw));
  if (n == 0) {
    // Say why where a constraint on the problem alone rules the whole family out (e.g. gemm_skinny
    // beyond M = 64); otherwise the constraints below, taken together, leave nothing.
    std::string why;
    for (const auto& c : f.constraints())
      if (c.reads.empty() && !c.pred(Config{}, p, d)) why = c.why;
    std::printf("         nothing in this family is valid for this problem: %s\n",
                why.empty() ? "the constraints below leave no config" : why.c_str());
  }
  std::printf("\nparameters\n");
  for (const auto& prm : f.params()) {
    std::string vals;
    for (int v : prm.values) {
      if (!vals.empty()) vals += ' ';
      vals += std::to_string(v);
    }
    std::printf("  %-7s {%s}  %s\n", prm.name.c_str(), vals.c_str(), prm.about.c_str());
  }
  if (f.has_default()) {
    const Config c = f.canonical(f.default_config(p, d));
    std::printf("\ndefault  %s%s\n", c.to_json().c_str(), f.valid(c, p, d) ? "" : "  (not valid here)");
    if (!stand_in.empty()) std::printf("         (%s)\n", stand_in.c_str());
  }
  // A user kernel's structs as ktune lays them out: each field's offset and type.
  if (const auto& spec = op_info(p.op).spec)
    for (size_t i = 0; i < spec->args.size(); ++i) {
      const SpecArg& arg = spec->args[i];
      if (arg.is_texture()) { // what the launch makes it of, at this problem
        const SpecArg::Texture& t = arg.texture;
        static const char* kResources[] = {"linear", "pitch2d", "array"};
        static const char* kModes[] = {"wrap", "clamp", "mirror", "border"};
        const KernelSpec::TextureShape x = spec->texture_at(i, p);
        std::printf("\n%s %s  %s over %s: %zu x %s channel%s, %zu", arg.kind_name(), arg.name.c_str(), kResources[t.resource],
                    spec->args[size_t(arg.fields[0].buffer)].name.c_str(), size_t(x.channels), to_string(x.format),
                    x.channels > 1 ? "s" : "", x.width);
        if (x.height) std::printf(" x %zu", x.height);
        if (x.depth) std::printf(" x %zu", x.depth);
        std::printf(" texels");
        if (x.height) std::printf(", rows %zu bytes apart", x.pitch);
        if (t.surface) { // no sampling: surf*read and surf*write at byte offsets
          std::printf("; copied in before and back out after each launch\n");
          continue;
        }
        std::printf("; read %s, filter %s, %s coordinates", t.normalized_read ? "normalized" : "as elements",
                    t.linear_filter ? "linear" : "point", t.normalized_coords ? "normalized" : "texel");
        if (t.resource != SpecArg::Texture::linear) { // tex1Dfetch reads 0 past the end, whatever the mode
          std::printf(", address %s", kModes[t.address[0]]);
          for (int k = 1; k < (x.depth ? 3 : x.height ? 2 : 1); ++k) std::printf("/%s", kModes[t.address[k]]);
        }
        std::printf("\n");
        continue;
      }
      if (arg.is_table()) { // the addresses the launch writes, at this problem
        const KernelSpec::TableShape x = spec->table_at(i, p);
        const SpecArg& b = spec->args[size_t(arg.fields[0].buffer)];
        const size_t eb = size_t(elem_bytes(b.elem(p)));
        std::printf("\naddress table %s  %zu entr%s of 8 bytes into %s: element %zu", arg.name.c_str(), x.count,
                    x.count == 1 ? "y" : "ies", b.name.c_str(), x.offset / eb);
        if (x.count > 1) std::printf(" + i * %zu", x.stride / eb);
        std::printf("\n");
        continue;
      }
      // A map's geometry as the spec writes it (the box may follow the config).
      auto geometry = [&](const SpecArg::Field& fl) {
        const SpecArg::TensorMap& t = fl.map;
        std::string g = "over " + spec->args[size_t(fl.buffer)].name + ", innermost first: dims";
        for (const Expr& e : t.dims) g += " [" + e.text() + "]";
        if (!t.strides.empty()) {
          g += ", strides (bytes)";
          for (const Expr& e : t.strides) g += " [" + e.text() + "]";
        }
        g += ", box";
        for (const Expr& e : t.box) g += " [" + e.text() + "]";
        return g + ", swizzle " + (t.swizzle ? std::to_string(t.swizzle) + " B" : std::string("none")) + ", L2 promotion " +
               (t.l2_promotion ? std::to_string(t.l2_promotion) + " B" : std::string("none"));
      };
      if (arg.is_tensor_map()) {
        std::printf("\ntensor map %s  CUtensorMap (128 bytes) %s\n", arg.name.c_str(), geometry(arg.fields[0]).c_str());
        continue;
      }
      if (!arg.is_struct()) continue;
      std::printf("\nstruct %s  %zu bytes, aligned %zu%s\n", arg.name.c_str(), arg.struct_bytes, arg.struct_align,
                  arg.follows_config ? " (values follow the config)" : "");
      for (const SpecArg::Field& fl : arg.fields) {
        const std::string type = fl.is_map()         ? "CUtensorMap (128 bytes) " + geometry(fl)
                                 : fl.buffer >= 0 ? "pointer to " + spec->args[size_t(fl.buffer)].name
                                                : std::string(to_string(fl.type)) +
                                                      (fl.values.size() > 1 ? "[" + std::to_string(fl.values.size()) + "]" : "");
        std::printf("  %-5zu %-12s %s\n", fl.offset, fl.name.c_str(), type.c_str());
      }
    }
  std::printf("\nconstraints\n");
  for (const auto& c : f.constraints()) std::printf("  - %s\n", c.why.c_str());
  const auto sample = f.sample(p, d, a.sample, a.seed);
  std::printf("\nsample of %zu (seed %llu)\n", sample.size(), static_cast<unsigned long long>(a.seed));
  for (const auto& c : sample) {
    const LaunchPlan plan = f.launch_plan(c, p);
    // Each step's kernel, threads and dynamic shared memory (static shared memory: ktune compile
    // --device); the launches of a user kernel's loops counted, each kind once in the order first
    // launched.
    std::vector<std::pair<std::string, int>> runs;
    for (const LaunchStep& st : plan.steps) {
      const std::string one = st.copy()          ? "a copy of " + std::to_string(st.copy_bytes) + " B"
                              : st.symbol >= 0     ? "a copy of " + std::to_string(st.copy_bytes) + " B into symbol " +
                                                             spec_of(p.op).symbols.at(size_t(st.symbol)).name
                              : st.set_arg >= 0    ? "a reset of " + spec_of(p.op).args.at(size_t(st.set_arg)).name
                              : st.round_entry     ? std::string("the start of a loop that repeats its rounds while its condition holds")
                              : st.test >= 0       ? std::string("a test of the loop's condition, which ends it at the first round it fails") +
                                                       (st.round_loop >= 0 ? " (at most " + std::to_string(st.round_max) + " rounds)" : "")
                                                   : (plan.steps.size() > 1 ? "kernel " + std::to_string(st.kernel) + ": " : std::string()) +
                                              (st.block_kernel >= 0 ? std::string("threads a C++ constant")
                                                                    : std::to_string(st.block[0] * st.block[1] * st.block[2]) + " threads") + ", " +
                                              (st.smem_kernel >= 0 ? std::string("dynamic smem a C++ constant (ktune compile tells it)")
                                                                   : std::to_string(st.dynamic_smem) + " B dynamic smem") + [&] {
                                                // Buffers passed from an element on (a chunk a round).
                                                std::string from;
                                                for (int at : st.offset_at)
                                                  from += (from.empty() ? ", " : " and ") +
                                                          spec_of(p.op).args.at(size_t(st.args.at(size_t(at)))).name;
                                                return from.empty() ? from : from + " from an element on";
                                              }() + [&] {
                                                // A grid or scalars from values read back at the launch.
                                                if (st.value_grid >= 0) {
                                                  const auto& at = spec_of(p.op).value_grids.at(size_t(st.value_grid));
                                                  std::string g;
                                                  for (int d = 0; d < 3; ++d)
                                                    if (at[size_t(d)].text() != "1" || g.empty())
                                                      g += (g.empty() ? "" : ", ") + at[size_t(d)].text();
                                                  return ", grid (" + g + ")" +
                                                         (at[3].empty() ? std::string() : " when " + at[3].text()) +
                                                         " at the launch";
                                                }
                                                return std::string(st.reads_values ? ", scalars read back at the launch" : "");
                                              }();
      auto it = std::find_if(runs.begin(), runs.end(), [&](const auto& r) { return r.first == one; });
      if (it != runs.end()) ++it->second;
      else runs.emplace_back(one, 1);
    }
    std::string steps;
    for (const auto& [one, n] : runs) steps += (steps.empty() ? "" : "; ") + one + (n > 1 ? " (x" + std::to_string(n) + ")" : "");
    std::printf("  %s  %s%s\n", c.to_json().c_str(), plan.steps.size() > 1 ? "steps: " : "", steps.c_str());
  }
  return 0;
}

} // namespace

Command add_space(CLI::App& app) {
  auto a = std::make_shared<SpaceArgs>();
  auto* sp = app.add_subcommand("space", "Count or summarise a family's valid configs for a problem");
  add_problem_options(sp, a->problem, ProblemOf::family);
  sp->add_option("--restrict", a->restrict_file, "JSON file narrowing parameter domains")->check(CLI::ExistingFile);
  sp->add_flag("--count", a->count_only, "Print only the number of valid configs");
  sp->add_flag("--default", a->default_only,
               "Print only the family's default config for the problem (JSON; an error where it has none)");
  // A sample is held in memory and printed a line each: beyond 100000 it is a listing, not a sample.
  sp->add_option("--sample", a->sample, "How many configs to show (at most 100000)")
      ->capture_default_str()
      ->check(whole_number(0, 100000));
  sp->add_option("--seed", a->seed, "Seed of the sample")->capture_default_str()->check(whole_number(0));
  return {sp, [a] { return cmd_space(*a); }};
}

} // namespace ktune::cli
