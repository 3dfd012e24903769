// A kernel family: a template source plus its descriptor (parameters and domains, constraints,
// kernel instantiations, launch geometry). Built-in families are declared with this same API,
// next to their templates in kernel_templates/; a user declares their own the same way.
//
//   Family f("my_gemm", "gemm/my_gemm.cu");   // op "gemm" unless .op("...") says otherwise
//   f.param("BM", {64, 128}).param("BK", {8, 16})
//    .restrict("tile fits shared memory", {"BM", "BK"},
//              [](const Config& c, const Problem&, const DeviceInfo& d) { ... })
//    .kernels([](const Config& c, const Problem& p) { return std::vector<std::string>{...}; })
//    .launch([](const Config& c, const Problem& p) { return LaunchPlan{...}; });
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ktune/config.h"
#include "ktune/device_info.h"
#include "ktune/problem.h"

namespace ktune {

// How a family computes, where its op's error rule depends on it (tuner/gemm_op.cpp; docs/TEMPLATES.md,
// "Verification"). standard: the dtype's own arithmetic (FP32 FFMA, or FP32 accumulation of half
// products). tf32x3: FP32 GEMM as three TF32 products of a big/small split of every operand, which
// costs up to 3 * 2^-22 of |a||b| a product and promises an error at or below cuBLAS SGEMM's.
enum class Numerics { standard, tf32x3 };
const char* to_string(Numerics n);
Numerics parse_numerics(const std::string& s); // throws UsageError

struct LaunchStep {
  int kernel = 0; // index into the family's kernel name expressions
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned dynamic_smem = 0;
  // A user kernel's dynamic shared memory given as a C++ constant of its source (a CUB
  // TempStorage's sizeof, Ktraits::kSmemSize): kernel smem_kernel is the compiled probe
  // ktune_constant_probe<V> whose template argument V is that constant, which Module reads from its
  // lowered name and launches with in place of dynamic_smem. -1: none.
  int smem_kernel = -1;
  // A user kernel's threads a block given as a C++ constant of its source (Ktraits::kNThreads):
  // kernel block_kernel is the probe holding it, which Module launches with as block x (block is
  // then {1, 1, 1}). -1: none.
  int block_kernel = -1;
  // Programmatic dependent launch (sm_90): the step's blocks may be scheduled while the previous
  // step's last blocks still run. Only for kernels that wait for the previous grid
  // (griddepcontrol.wait) before reading what it wrote; elsewhere the flag is ignored.
  bool overlap_previous = false;
  // Cluster kernels (sm_90): ask the scheduler to balance clusters over the SMs
  // (CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING) instead of its default spread, which can leave
  // SMs of a GPC without a CTA when clusters do not tile it. Ignored for kernels without clusters.
  bool balance_clusters = false;
  // A thread block cluster shape given at launch (sm_90; CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION),
  // for kernels compiled without __cluster_dims__; the grid is a multiple of it. {1, 1, 1}: none.
  unsigned cluster[3] = {1, 1, 1};
  // Persistent kernels (they stride over their work by gridDim.x): the launch caps grid[0] at the
  // blocks the device holds at once (occupancy x SMs, whole clusters), so every block is resident
  // and none waits for a wave. The plan's grid[0] is the uncapped count (one block a work unit).
  bool persistent = false;
  // Kernels that synchronize their whole grid (cooperative groups' grid.sync()): launched with
  // CU_LAUNCH_ATTRIBUTE_COOPERATIVE, which needs every block resident at once (with persistent,
  // the grid is capped to that; else a grid too large is the driver's error).
  bool cooperative = false;
  // GEMM steps that compute C^T = B^T A^T (gemm_wgmma's SWAP): launch_gemm passes the kernel B as
  // its A and A as its B, with M and N and lda and ldb swapped (the tensor maps too); the kernel
  // stores C transposed itself, so C and ldc stay the caller's.
  bool swap_ab = false;
  // A user's kernel (an op with a KernelSpec): the spec arguments this step's kernel takes, in its
  // order (indices into KernelSpec::args); empty: every one, in the spec's order.
  std::vector<int> args;
  // A user's kernel in a loop: scalar arguments this launch passes other values of (a computed
  // scalar that reads the loop's counter), and buffer arguments that pass another argument's
  // buffer (swapped after a round); indices into KernelSpec::args.
  std::vector<int> set_args;
  std::vector<double> set_values;
  std::vector<int> alias_args, alias_of;
  // A user's kernel's step that passes a buffer at an offset: the places in its args, and the bytes.
  std::vector<int> offset_at;
  std::vector<unsigned long long> offset_bytes;
  // A user's kernel's step that passes a struct whose fields read a loop's counter: the structs
  // (indices into KernelSpec::args) and their bytes at this launch (pointer fields: offsets).
  std::vector<int> struct_args;
  std::vector<std::vector<unsigned char>> struct_data;
  // A user's kernel: not a kernel but a device-to-device copy of copy_bytes from argument
  // copy_from's buffer to copy_to's (a loop's swapped buffer put back in its own); kernel is -1.
  int copy_from = -1, copy_to = -1;
  unsigned long long copy_bytes = 0;
  bool copy() const { return kernel < 0 && copy_from >= 0; }
  // A user's kernel's loop that runs while a condition holds (KernelSpec::whiles), kernel -1:
  // - set_arg >= 0: set that temporary (the loop's "reset"; its buffer now: alias_args) to its fill
  //   before a round;
  // - test >= 0: after a round, read loop `test`'s condition with the names' values test_values
  //   and the first element of each buffer it reads (as this round passed them: alias_args); where
  //   it is false, go on at step `jump`; where it holds after the last round (test_last), the call
  //   fails, since the loop did not end within its rounds.
  int set_arg = -1, test = -1, jump = -1;
  bool test_last = false;
  // A test whose condition reads a whole buffer (max_of, min_of, sum_of): the module's
  // ktune_spec_reduce (its kernel index) reduces it on the GPU into the workspace's scratch at
  // reduce_scratch (bytes), and 8 bytes are read back. -1: none.
  int reduce_kernel = -1;
  long long reduce_scratch = -1;
  std::vector<double> test_values;
  // A while loop whose rounds differ only in what its counter gives its condition and the scalars
  // its own steps pass holds two rounds (the swaps' two parities) and runs them again and again:
  // round_loop numbers it within the plan (its counter kept as the launch runs); round_entry marks
  // the step that starts it (counter 0); its tests (round_max: the most rounds) go on to the next
  // step or back to jump_back while the condition holds; a kernel step with round_loop set
  // computes the scalars that read counter round_index (a place in KernelSpec::names) from
  // test_values and the counter now.
  int round_loop = -1, round_index = -1, jump_back = -1;
  long long round_max = 0;
  bool round_entry = false;
  // A user's kernel's step whose grid (value_grid >= 0: its place in KernelSpec::value_grids) or
  // scalars read a buffer's first element: read back before the launch (the stream synchronized)
  // and evaluated with test_values, the plan's values of the spec's names (a repeated loop's
  // counter as it runs); a grid of 0 blocks along any axis launches nothing.
  bool reads_values = false;
  int value_grid = -1;
  // A user's kernel's symbol (KernelSpec::symbols) filled from a slice of its buffer argument:
  // copy_bytes from element symbol_offset (kernel -1).
  int symbol = -1;
  unsigned long long symbol_offset = 0;
  bool control() const { return kernel < 0 && copy_from < 0; }
  // TMA (sm_90): the tensor maps the step's kernel takes, one per operand it reads or writes
  // through TMA. A GEMM step with any takes KtuneGemmTmaArgs with the maps encoded for each
  // launch's pointers and sizes (launch_gemm); without, the plain block. An op of plain buffers
  // gets them after its scalars (box, below). Per
  // map: the operand (in the op's order; GEMM: GemmOperand, A B C), whether its contiguous
  // dimension is K (A row-major, B column-major, C always: row-major, N contiguous) or M / N, and
  // the box (elements along the contiguous dimension, then along the other) one copy moves.
  struct TmaOperand {
    int operand = 0;
    bool k_inner = false;
    unsigned box_inner = 0, box_outer = 0;
    // >= 0: an earlier step of the plan packed the operand into the workspace (16-byte rows), at
    // this byte offset with leading dimension packed_ld (elements); the map reads that copy.
    long long packed_offset = -1, packed_ld = 0;
    // Element size (2: bf16 / f16 words; 4: FP32 / TF32) and the swizzle span of the box's
    // contiguous extent (128 or 64 bytes; the box's contiguous bytes equal it).
    unsigned elem_bytes = 2, swizzle_bytes = 128;
    // Copies of the operand stacked along M / N in the packed buffer (gemm_wgmma_tf32x3: the big
    // halves, then the small ones): the map's M / N extent is this many times the problem's.
    unsigned stacked = 1;
    // An N-dimensional operand (OpInfo::Operand::shape) of an op of plain buffers: the box along
    // each of its axes, outermost first; the map covers the operand with its caller's strides,
    // elements of the problem's dtype, swizzle_bytes 0 (none), 32, 64 or 128. Its kernels get the
    // step's maps after the scalars, a 128-byte CUtensorMap each (__grid_constant__), in this
    // list's order (runtime/buffers_launch.h). box_inner, box_outer and k_inner are GEMM's.
    std::vector<unsigned> box{};
  };
  std::vector<TmaOperand> tma_maps;
  bool tma() const { return !tma_maps.empty(); }
  // The map of `operand`, or null when the step has none for it.
  const TmaOperand* tma_of(int operand) const {
    for (const auto& m : tma_maps)
      if (m.operand == operand) return &m;
    return nullptr;
  }
};

struct LaunchPlan {
  std::vector<LaunchStep> steps; // in launch order; the main kernel need not be first
  size_t workspace_bytes = 0;    // scratch device memory the steps share (split-K sums, packed operands)
  // A user's kernel: per argument of its spec, what this config makes of it, since a temporary's
  // size and a computed scalar's value may follow the config (one partial sum a block, and their
  // count for the step that adds them up): a temporary's byte offset in the workspace and its
  // bytes; a computed scalar's value. Empty for built-in ops.
  struct SpecArgValue {
    long long offset = -1; // temporaries
    size_t bytes = 0;
    double value = 0; // scalars the spec computes; a temporary's value set before every launch
    // A struct (SpecArg::fields): its bytes at this config, pointer fields 0.
    std::vector<unsigned char> data;
  };
  std::vector<SpecArgValue> spec_args;
  // The step of kernel 0, the family's main kernel (what reports of threads and smem describe).
  const LaunchStep& main_step() const {
    for (const auto& s : steps)
      if (s.kernel == 0) return s;
    return steps.at(0);
  }
};

// Narrows domains without recompiling: {"family": "gemm_simt", "domains": {"BK": [8, 16]}}.
// Values outside a parameter's declared domain are an error, so a typo cannot widen the space.
struct SpaceRestriction {
  std::string family;
  std::map<std::string, std::vector<int>> domains;
  // Whether it narrows `family`: its name, or a user kernel's ("conv2d@36451a48") by the spec's
  // name alone ("conv2d"), since the version after the @ changes with every edit of the source.
  bool narrows(const std::string& family_name) const;
  static SpaceRestriction from_json_file(const std::string& path); // throws UsageError
  static SpaceRestriction from_json(const std::string& text, const std::string& origin);
};

namespace detail {
// The type of a callback's argument I, decayed: the problem type a family's callbacks take.
template <class F, size_t I, class = void>
struct arg_type : arg_type<decltype(&F::operator()), I> {};
template <class R, class C, size_t I, class... A>
struct arg_type<R (C::*)(A...) const, I> {
  using type = std::decay_t<std::tuple_element_t<I, std::tuple<A...>>>;
};
template <class R, size_t I, class... A>
struct arg_type<R (*)(A...), I> {
  using type = std::decay_t<std::tuple_element_t<I, std::tuple<A...>>>;
};
template <class F, size_t I>
using arg_t = typename arg_type<std::decay_t<F>, I>::type;
} // namespace detail

class Family {
 public:
  // Callbacks see the op-generic Problem. A family may declare them on its op's typed view
  // instead (GemmProblem, any type with a static View::from(const Problem&)): the builder converts.
  using Predicate = std::function<bool(const Config&, const Problem&, const DeviceInfo&)>;
  using KernelsFn = std::function<std::vector<std::string>(const Config&, const Problem&)>;
  using LaunchFn = std::function<LaunchPlan(const Config&, const Problem&)>;

  struct Param {
    std::string name;
    std::vector<int> values;
    std::string about;
  };
  struct Constraint {
    std::string why;
    std::vector<std::string> reads; // parameters the predicate reads; checked once all are bound
    Predicate pred;
    size_t depth = 0; // index of the last parameter in reads (set by restrict)
  };

  Family(std::string name, std::string source_path);

  // Declaration (builder). Order of param() calls is the enumeration order: put the parameters
  // that constraints prune most first.
  Family& param(const std::string& name, std::vector<int> values, std::string about = {});
  template <class F>
  Family& restrict(std::string why, std::vector<std::string> reads, F pred) {
    return restrict_generic(std::move(why), std::move(reads), Predicate(on_problem<1>(std::move(pred))));
  }
  template <class F>
  Family& kernels(F fn) {
    kernels_ = KernelsFn(on_problem<1>(std::move(fn)));
    return *this;
  }
  template <class F>
  Family& launch(F fn) {
    launch_ = LaunchFn(on_problem<1>(std::move(fn)));
    return *this;
  }
  // The config the runtime falls back to for a problem nothing was tuned near; it must be valid
  // for every problem the family serves at all (of a supported dtype and arch, within the
  // constraints that hold for every config, e.g. gemm_wgmma's alignment); tests check this over
  // many shapes, and the runtime skips a default that is not valid.
  using DefaultFn = std::function<Config(const Problem&, const DeviceInfo&)>;
  template <class F>
  Family& defaults(F fn) {
    default_ = DefaultFn(on_problem<0>(std::move(fn)));
    return *this;
  }
  // For a config specialised to some shapes (e.g. no bounds checks, aligned vector loads), the
  // same tiling in forms that serve more shapes, nearest first; the runtime takes the first one
  // valid for the asked shape when the tuned config is not, and warm starts offer them all as
  // seeds. Empty when the config is already general.
  using GeneralizeFn = std::function<std::vector<Config>(const Config&)>;
  // For generalize functions: c with each setting's parameter values in turn, in order, without c
  // itself and without repeats.
  using Setting = std::vector<std::pair<const char*, int>>;
  static std::vector<Config> variants(const Config& c, const std::vector<Setting>& settings);
  Family& generalize(GeneralizeFn fn) {
    generalize_ = std::move(fn);
    return *this;
  }
  std::vector<Config> generalized(const Config& c) const { return generalize_ ? generalize_(c) : std::vector<Config>{}; }
  // For a config tuned elsewhere and lent to problem p, the configs one or two choices away that
  // most often decide a shape it was not tuned for (gemm_wgmma: the tile that fills p's waves best,
  // multicast, stream-K), nearest first: the runtime's first use times them beside the lenders and
  // warm starts try them right after the configs they lend. Some may be invalid for p (callers skip
  // those). Empty by default.
  using NeighborFn = std::function<std::vector<Config>(const Config&, const Problem&, const DeviceInfo&)>;
  template <class F>
  Family& neighbors(F fn) {
    neighbors_ = NeighborFn(on_problem<1>(std::move(fn)));
    return *this;
  }
  std::vector<Config> neighbors_of(const Config& c, const Problem& p, const DeviceInfo& d) const {
    return neighbors_ ? neighbors_(c, p, d) : std::vector<Config>{};
  }
  // Fills in parameters a family gained after configs were recorded (tables, trial logs,
  // warm-start files), with the value that reproduces the kernel those configs were measured
  // with; and where a family dropped a value, maps it to the one kept in its place (its family
  // says why that one serves, e.g. attention_decode_paged's splits in turns), so that a recorded
  // entry keeps answering. canonical() applies it, so every config read from outside passes
  // through it.
  using UpgradeFn = std::function<Config(Config)>;
  Family& upgrade(UpgradeFn fn) {
    upgrade_ = std::move(fn);
    return *this;
  }
  Family& min_arch(int arch) { min_arch_ = arch; return *this; }
  // How fast a speedup this family recorded at one problem fades as a prediction for another
  // (per unit of log distance; db/lending.h's kLendDecay when unset). A family whose speed follows
  // the bytes it streams rather than the shape, and whose neighbours refit the grid to the new
  // shape, declares a slower decay so that its lenders are measured at far shapes.
  Family& lend_decay(double per_log_distance) { lend_decay_ = per_log_distance; return *this; }
  std::optional<double> lend_decay() const { return lend_decay_; }
  // The op whose problems the family computes (op_info names it); "gemm" unless set.
  Family& op(std::string name) { op_ = std::move(name); return *this; }
  // The family uses arch-specific instructions (sm_90a: wgmma, setmaxnreg): it is compiled for
  // "sm_<min_arch>a" whatever arch the device reports, and serves devices of exactly min_arch
  // (an sm_90a cubin loads on compute capability 9.0 only).
  Family& arch_specific(bool on = true) { arch_specific_ = on; return *this; }
  Family& dtypes(std::vector<DType> d) { dtypes_ = std::move(d); return *this; }
  Family& describe(std::string about) { about_ = std::move(about); return *this; }
  Family& numerics(Numerics n) { numerics_ = n; return *this; }
  // Source text for a family whose template is not embedded in the library (a user's kernel);
  // it may #include the embedded headers (e.g. "gemm_common.cuh").
  Family& source_text(std::string text) { source_text_ = std::move(text); return *this; }
  // NVRTC options a config adds for a problem (a user's kernel: -D for each parameter and
  // define); part of the compile's cache key.
  using OptionsFn = std::function<std::vector<std::string>(const Config&, const Problem&)>;
  Family& options(OptionsFn fn) { options_ = std::move(fn); return *this; }
  std::vector<std::string> compile_options(const Config& c, const Problem& p) const {
    return options_ ? options_(c, p) : std::vector<std::string>{};
  }
  // The macros of its options that are the project's build's, not a config's
  // (CompileRequest::build_macros).
  Family& build_macros(std::set<std::string> m) { build_macros_ = std::move(m); return *this; }
  const std::set<std::string>& build_macros() const { return build_macros_; }
  // In-memory headers (name, text) its compiles get beside the embedded ones (a user's kernel:
  // the standard headers NVRTC lacks, KernelSpec::std_headers); part of the cache key.
  using Headers = std::vector<std::pair<std::string, std::string>>;
  Family& headers(Headers h) { headers_ = std::move(h); return *this; }
  const Headers& headers() const { return headers_; }

  const std::string& name() const { return name_; }
  const std::string& op() const { return op_; }
  const std::string& source_path() const { return source_path_; }
  const std::string& about() const { return about_; }
  // The template source: source_text() if set, else the embedded file at source_path().
  std::string source() const;
  const std::vector<Param>& params() const { return params_; }
  const std::vector<Constraint>& constraints() const { return constraints_; }
  int min_arch() const { return min_arch_; }
  bool arch_specific() const { return arch_specific_; }
  // The NVRTC target for a device of `arch`: arch itself, or with the "a" suffix for an
  // arch-specific family ("sm_90" -> "sm_90a"; "sm_90a" stays).
  std::string compile_arch(const std::string& arch) const;
  const std::vector<DType>& dtypes() const { return dtypes_; }
  Numerics numerics() const { return numerics_; }

  // The same values in the declared parameter order (the canonical form hashes depend on), after
  // upgrade(); throws UsageError on an unknown or missing parameter.
  Config canonical(const Config& c) const;
  // c with upgrade() applied and nothing checked or reordered: what violations() should judge
  // for a config recorded outside this build (a table, a database), so that one written before
  // the family gained a parameter is not reported as missing it.
  Config upgraded(const Config& c) const { return upgrade_ ? upgrade_(c) : c; }

  // Empty when valid; otherwise why not: unknown or missing parameters, values outside a domain,
  // an unsupported dtype or arch, else the first broken constraint in declaration order (a
  // constraint may assume the ones declared before it hold).
  std::vector<std::string> violations(const Config& c, const Problem& p, const DeviceInfo& d) const;
  bool valid(const Config& c, const Problem& p, const DeviceInfo& d) const { return violations(c, p, d).empty(); }

  // Depth-first walk of the valid configs in declaration order, pruning a branch as soon as a
  // constraint whose parameters are all bound fails. visit returns false to stop early.
  void enumerate(const Problem& p, const DeviceInfo& d, const std::function<bool(const Config&)>& visit) const;
  uint64_t count(const Problem& p, const DeviceInfo& d) const;
  // n distinct valid configs drawn uniformly at random (fewer if the space is smaller); the same
  // seed gives the same sample. With `until`, drawing stops at that time with what it has (a
  // sparse space's sample enumerates the whole space, seconds for gemm_wgmma's): the tuner's
  // time budget covers its strategies' own work.
  std::vector<Config> sample(const Problem& p, const DeviceInfo& d, size_t n, uint64_t seed,
                             std::optional<std::chrono::steady_clock::time_point> until = std::nullopt) const;

  // Instantiations and geometry for a valid config. kernel_names()[i] is a C++ name expression
  // NVRTC resolves, e.g. "gemm_simt<128,128,8,...>".
  std::vector<std::string> kernel_names(const Config& c, const Problem& p) const;
  LaunchPlan launch_plan(const Config& c, const Problem& p) const;
  bool has_default() const { return bool(default_); }
  Config default_config(const Problem& p, const DeviceInfo& d) const; // throws Error without one

  // A copy whose domains are intersected with r's; throws UsageError on a family-name mismatch,
  // an unknown parameter, or a value the family never declared.
  Family restricted(const SpaceRestriction& r) const;

 private:
  bool supports(const Problem& p, const DeviceInfo& d, std::string* why) const;
  Family& restrict_generic(std::string why, std::vector<std::string> reads, Predicate pred);
  // fn itself when its argument I is a Problem, else fn behind a conversion to that type.
  template <size_t I, class F>
  static auto on_problem(F fn) {
    using View = detail::arg_t<F, I>;
    if constexpr (std::is_same_v<View, Problem>) {
      return fn;
    } else if constexpr (I == 0) {
      return [fn = std::move(fn)](const Problem& p, const auto&... rest) { return fn(View::from(p), rest...); };
    } else {
      return [fn = std::move(fn)](const auto& first, const Problem& p, const auto&... rest) {
        return fn(first, View::from(p), rest...);
      };
    }
  }

  std::string name_, source_path_, about_, source_text_;
  Headers headers_;
  std::vector<Param> params_;
  std::vector<Constraint> constraints_;
  KernelsFn kernels_;
  LaunchFn launch_;
  DefaultFn default_;
  GeneralizeFn generalize_;
  NeighborFn neighbors_;
  UpgradeFn upgrade_;
  OptionsFn options_;
  std::set<std::string> build_macros_;
  int min_arch_ = 0;
  std::optional<double> lend_decay_;
  std::string op_ = "gemm";
  bool arch_specific_ = false;
  std::vector<DType> dtypes_ = {DType::f32};
  Numerics numerics_ = Numerics::standard;
};

// The families that ship with ktune (gemm_naive, gemm_smem, gemm_simt, ...), declared in
// kernel_templates/<op>/*.cpp. Cheap to call: each call builds the descriptors afresh.
std::vector<Family> builtin_families();
// Throws UsageError listing the known names when name is not one of them.
Family find_family(const std::string& name);
// The families `ktune tune` searches when none is named: every one that competes at run time by
// default, plus the opt-in gemm_tf32x3 when asked for. Each problem is tuned with those of them
// that can serve it.
std::vector<std::string> tuning_family_names(bool tf32x3);

} // namespace ktune
