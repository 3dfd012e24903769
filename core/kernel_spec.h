// The parsed form of a kernel spec (include/ktune/kernel_spec.h; docs/KERNEL_SPEC.md): what the
// spec runner (tuner/spec_op.cpp) fills, launches and checks, and what the runtime's spec
// launcher (runtime/spec_launch.cpp) packs a call's arguments with. Built once by
// load_kernel_spec and shared by the op's OpInfo (OpInfo::spec) and its family.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/expr.h"
#include "ktune/config.h"
#include "ktune/device_info.h"
#include "ktune/family.h"
#include "ktune/problem.h"

namespace ktune {

// Element types of a spec's buffers and scalars.
enum class ElemType { f64, f32, f16, bf16, i64, i32, i16, i8, u64, u32, u16, u8 };
const char* to_string(ElemType t);
int elem_bytes(ElemType t);
bool is_float(ElemType t);
bool is_unsigned(ElemType t);
// "f32", "float32", "float", "int32", "int", ... -> ElemType; false when unknown.
bool parse_elem_type(const std::string& s, ElemType* out);
ElemType elem_type_of(DType d); // f32 / f16 / bf16 (tf32 is not a storage type: f32)
// The value at element i of bytes of type t, and storing v there (rounded to nearest, saturating
// integers).
double load_elem(const unsigned char* bytes, size_t i, ElemType t);
void store_elem(unsigned char* bytes, size_t i, ElemType t, double v);

struct SpecFill {
  // permutation: distinct values, the first elements of a random permutation of [0, perm_n).
  enum Kind { random, zeros, ones, ramp, constant, from_file, permutation } kind = random;
  double lo = -1, hi = 1, value = 0;
  bool integers = false; // random: floored in a float buffer too (keys that compare equal)
  // ramp: start + step * (i % mod) (mod 0: i).
  double start = 0, step = 1;
  int64_t mod = 0;
  Expr start_at, step_at; // a ramp's start and step as expressions of the dimensions; empty: the numbers
  int64_t perm_n = 0; // permutation: the range, at a problem (fill_at); 0: the buffer's count
  Expr perm_at;       // permutation: the range as an expression of the dimensions; empty: the count
  // A random range that reads the dimensions ({"random": [0, "V"]}: class indices below V): lo and
  // hi at each problem (fill_at); empty where given as numbers.
  Expr lo_at, hi_at;
  // A value that reads the dimensions ({"value": "1.0 / n"}); empty where given as a number.
  Expr value_at;
  std::string file;                // as given, for messages
  std::vector<unsigned char> data; // file: its elements (.npy payload or raw bytes)
  ElemType file_type = ElemType::f32;
  // A file named per problem ("x_{n}.npy": {dim} and {dtype} placeholders): read at each problem
  // by fill_at, not when the spec loads. Absolute.
  std::string pattern;
  bool raw = false; // pattern: a raw file of file_type elements, not a .npy
};

// count elements of type t as fill says (random ones from seed); throws UsageError when a file
// holds fewer than count elements.
std::vector<unsigned char> spec_fill_bytes(const SpecFill& fill, ElemType t, size_t count, uint64_t seed);
// The first count elements of a random permutation of [0, n) (seeded): distinct values. Throws
// UsageError when count > n.
std::vector<int64_t> spec_permutation(int64_t n, size_t count, uint64_t seed);
// Throws UsageError (what: the fill, for the message) where count distinct values of [0, n) cannot
// be had in elements of type t: n below count, or past the whole numbers t holds exactly.
void check_permutation(int64_t n, size_t count, ElemType t, const std::string& what);

struct KernelSpec;
// The GPU's whole-buffer reads of a loop's condition (kernel_templates/spec/spec_reduce.cuh): at
// most this many blocks of 256 threads, and the scratch they need (a partial a block, the arrival
// count, the result).
constexpr unsigned kReduceBlocks = 1024;
constexpr size_t kReduceScratchBytes = 8 * size_t(kReduceBlocks) + 8 + 8;
// How many names kSpecBuiltins holds (below).
constexpr size_t kSpecBuiltinCount = 8;
// fill as it stands at problem p: a per-problem file (SpecFill::pattern) read, with its
// placeholders filled from p; any other fill as it is. Throws UsageError naming the file.
SpecFill fill_at(const KernelSpec& s, const SpecFill& fill, const Problem& p);
// Every file the spec fills from at problem p (inputs, answers, symbols; per-problem ones named
// for p) exists, reads, and holds the elements p needs: what a tuning run checks before it starts,
// so that a missing or short file is a usage error then, not a failed trial on the GPU; and a
// permutation fill's range holds the buffer's count of distinct values; and every computed scalar
// and struct that follows the problem alone holds its value there.
void check_fill_files(const KernelSpec& s, const Problem& p);
// A constant fill's value at problem p (SpecFill::value_at evaluated, or the number given).
double fill_value_at(const SpecFill& fill, const Problem& p);

struct SpecArg {
  std::string name;
  bool buffer = true;
  // Buffers.
  bool problem_dtype = false; // "dtype": the problem's dtype (a scalar's too: a kernel's `T alpha`)
  ElemType type = ElemType::f32;
  Expr count; // elements, over the dimensions
  enum Intent { in, out, inout, temp } intent = in;
  // inout: every timed run starts from the data as filled, put back untimed before it (a BFS's
  // visited flags, a sort's keys: a call finds them so); false ("restore": false): from what the
  // run before left (a solver's step that goes on where the last stopped), no copy a run.
  bool restore = true;
  SpecFill fill;
  double atol = -1, rtol = -1; // outputs: per-element |out - ref| <= atol + rtol |ref|; -1: the dtype's default
  // Tolerances that follow the problem (an atomic sum's error grows with the terms per output):
  // expressions of the dimensions and dtype_bytes, evaluated at each check (tolerance_at); empty:
  // the numbers above.
  Expr atol_at, rtol_at;
  // Outputs: how many of the first elements are compared with the reference (an answer in out[0]
  // and per-block partials after it, whose number follows the config); empty: all of them.
  Expr check_count;
  SpecFill answer; // outputs, when the check reads answers from files (KernelSpec::answers): the expected values
  // Scalars: a value computed from the dimensions, or (no value) one the caller passes at run time.
  Expr value;
  double default_value = 0; // the caller's scalars: what the tuner runs with
  ElemType scalar_type = ElemType::i32;
  // "kind": "null": a pointer argument passed as null (a scalar of value 0, 8 bytes, that a
  // kernel's pointer parameter takes).
  bool null_pointer = false;
  // A temporary with a fill ("zeros" or a value): set before every launch; else left as it is.
  bool set_before_launch = false;
  // A temporary's count or a computed scalar's value reads a parameter (one partial sum a block,
  // and their count): known only with a config, at KernelSpec::plan.
  bool follows_config = false;
  // A computed scalar's value reads a loop's counter (KernelSpec::loop_names): set for each
  // launch of a step in that loop (LaunchStep::set_args).
  bool follows_loop = false;
  // A computed scalar's value reads a buffer's first element (KernelSpec::value_names) or the
  // device's values: computed at each launch of a step that passes it (LaunchStep::reads_values).
  bool follows_values = false;
  // A computed scalar set at each launch of a step that passes it (LaunchStep::set_args), not once
  // a call.
  bool set_at_launch() const { return follows_loop || follows_values; }
  // "kind": "struct": a struct passed by value (a kernel's `Params p`, a `uint3`), laid out as C
  // lays out its fields in order: each at the next multiple of its alignment, the struct's size a
  // multiple of the largest. A field is a pointer to a buffer argument (as the step's round passes
  // it: a swap moves it too) or scalars of one type computed from the problem and the config (one
  // value, or an array: a uint3's three). ktune builds it for every call; the caller passes none.
  // A tensor map (a `"kind": "tensor_map"` argument's, or a struct field's: a kernel's params
  // struct holding its CUtensorMap members, CuTe's TMA copy atoms): cuTensorMapEncodeTiled's
  // extents and strides of the dimensions, innermost first, a box that may follow the config (the
  // tile a block loads), a swizzle. Empty dims: none.
  struct TensorMap {
    std::vector<Expr> dims, strides, box; // elements, bytes (dimensions 1..), elements; innermost first
    int swizzle = 0;                      // bytes: 0, 32, 64, 128
    int l2_promotion = 256;               // bytes the L2 fetches a load's lines in: 0 (none), 64, 128, 256
  };
  struct Field {
    std::string name;
    // A pointer to this buffer argument (index into args), or the buffer a map field describes;
    // -1: values.
    int buffer = -1;
    // A map field (128 bytes, 64-byte aligned): the plan's bytes hold its shape at this config
    // (KernelSpec::TensorMapShape::to_bytes), which the launch replaces with the map it encodes
    // for the buffer's address as the round passes it.
    TensorMap map;
    bool is_map() const { return !map.dims.empty(); }
    ElemType type = ElemType::i32;
    std::vector<Expr> values; // the elements of a value field
    // A pointer field's element offset into its buffer (host code's `p.x = d_x + off`); empty: 0.
    Expr at;
    size_t offset = 0, align = 0;
  };
  std::vector<Field> fields;
  size_t struct_bytes = 0, struct_align = 0;
  // "kind": "texture": a texture object (cudaTextureObject_t, 8 bytes) reading a buffer argument,
  // as host code makes one with cudaCreateTextureObject: over the buffer itself (linear, pitch2d)
  // or over a CUDA array the launch copies the buffer into (array). Held as a struct of one pointer
  // field (fields[0]: the buffer, which a round's swap moves as it moves a struct's pointer), whose
  // 8 bytes the launch replaces with the texture object made for that address (runtime/textures.h).
  // "kind": "surface" is one too (cudaSurfaceObject_t over a CUDA array the launch copies the
  // buffer into before and back out of after each launch that passes it: surf2Dwrite's results
  // land in the buffer); it has no sampling (read, filter, address, coordinates).
  struct Texture {
    bool surface = false;
    enum Resource { linear, pitch2d, array } resource = linear;
    bool format_given = false; // "format": a channel's type; else the buffer's element type
    ElemType format = ElemType::f32;
    int channels = 1;                 // 1, 2 or 4 elements of format a texel
    Expr width, height, depth, pitch; // texels (x, rows, slices) and bytes a row; of the dimensions
    bool normalized_read = false;     // 8/16-bit integers read as floats in [0, 1] ([-1, 1] signed)
    bool linear_filter = false, normalized_coords = false;
    int address[3] = {0, 0, 0};       // CUaddress_mode: 0 wrap, 1 clamp, 2 mirror, 3 border
  };
  bool texture_arg = false;
  Texture texture;
  // "kind": "addresses": a table in device memory of `count` addresses of a buffer argument's
  // elements, entry i at element offset + i * stride (a pointer per layer's cache, per batch
  // entry's matrix: host code's array of data_ptr()s copied to the GPU), as the step's round
  // passes the buffer. Held as a struct of one pointer field, as a texture is, whose 8 bytes the
  // launch replaces with the table's address (runtime/address_tables.h). Of the dimensions only.
  struct Table {
    Expr count, offset, stride; // stride empty: the buffer's count over `count` (equal slices)
  };
  bool table_arg = false;
  Table table;
  // "kind": "tensor_map": a TMA descriptor (CUtensorMap, 128 bytes by value: a kernel's
  // `const __grid_constant__ CUtensorMap`) over a buffer argument, as host code makes one with
  // cuTensorMapEncodeTiled. A struct of one map field (fields[0], at 0), planned and built as any
  // struct with maps: its shape in the plan's bytes, encoded for the address the round passes.
  bool tensor_map_arg = false;
  bool is_texture() const { return texture_arg; } // a texture or a surface
  bool is_table() const { return table_arg; }
  bool is_tensor_map() const { return tensor_map_arg; }
  // An argument the launch makes from its buffer's address as the round passes it, at each launch
  // that passes it: a texture's or surface's object, an address table's address (8 bytes). Never
  // built as a struct.
  bool made_at_launch() const { return texture_arg || table_arg; }
  bool is_struct() const { return !fields.empty(); }
  // Map field i's name in messages: a tensor map argument's own, a struct's "p.tma_a".
  std::string map_name(size_t i) const { return tensor_map_arg ? name : name + "." + fields.at(i).name; }
  // A struct with a map field among its fields (a tensor map argument is one).
  bool struct_has_maps() const {
    return std::any_of(fields.begin(), fields.end(), [](const Field& f) { return f.is_map(); });
  }
  // A scalar argument (computed or the caller's): neither a buffer nor a struct (nor a texture).
  bool scalar() const { return !buffer && !is_struct(); }
  bool is_surface() const { return texture_arg && texture.surface; }
  // A CUDA array the launch copies the buffer into: an array texture's, a surface's.
  bool has_array() const { return texture_arg && texture.resource == Texture::array; }
  // For messages: buffer, texture, surface, address table, struct or scalar.
  const char* kind_name() const {
    return buffer        ? "buffer"
           : is_surface() ? "surface"
           : is_texture() ? "texture"
           : is_table()   ? "address table"
           : is_tensor_map() ? "tensor map"
           : is_struct()  ? "struct"
                          : "scalar";
  }

  ElemType elem(const Problem& p) const { return problem_dtype ? elem_type_of(p.dtype) : type; }
  // A scalar's type at problem p: its own, or the problem's (f32, f64, f16, bf16).
  ElemType scalar_elem(const Problem& p) const { return problem_dtype ? elem_type_of(p.dtype) : scalar_type; }
  bool checked() const { return buffer && (intent == out || intent == inout); }
  bool caller_passes() const { return buffer ? intent != temp : !is_struct() && value.empty(); }
};

// Whether texture t reads channels of type `format` as it says: a texel type at all (f32, f16, or
// an integer of 8, 16 or 32 bits), a normalized read of 8- or 16-bit integers only, linear
// filtering of floats (or of integers read normalized). The field that refuses ("format", "read",
// "filter") and why, to follow "...: "; {nullptr, ""} where it reads them.
std::pair<const char*, std::string> texel_refusal(const SpecArg::Texture& t, ElemType format);

// An output's atol (rtol: false) at problem p: its expression evaluated, or the number given (-1:
// none given). Throws UsageError for a negative or non-finite value.
double tolerance_at(const KernelSpec& s, const SpecArg& a, bool atol, const Problem& p);

// __constant__ / __device__ variables filled before every launch: from a buffer argument's data
// (copied device to device) or with their own fill.
struct SpecSymbol {
  std::string name;
  ElemType type = ElemType::f32;
  Expr count;
  int from_arg = -1; // index into args, or -1: fill
  // "address_of": a __device__ pointer variable set to that buffer argument's address as the call
  // passes it (host code's cudaMemcpyToSymbol(d_ptr, &d_buf, sizeof d_buf)); -1: none.
  int address_of = -1;
  SpecFill fill;
  // From a buffer: the first element copied (an expression; empty: 0). A slice (offset or count
  // given: of the dimensions, the parameters and loops' counters; a tile of a long array a round,
  // as mri-q's host loop copies into __constant__ memory) is copied by the plan (LaunchStep::symbol)
  // before each launch of a step in every loop it reads the counter of, where it differs from the
  // last slice copied (planned); the whole buffer is copied before every call.
  Expr offset;
  bool planned = false;
  std::vector<int> counters; // the loops' counters it reads (places in KernelSpec::names)
};

struct SpecStep {
  std::string kernel; // name expression with {NAME} placeholders
  // The arguments this step's kernel takes, in its order (indices into KernelSpec::args); empty:
  // every argument in the spec's order.
  std::vector<int> args;
  // Beside args: an offset (elements) into that buffer the kernel gets instead of its start, an
  // expression of the parameters, dimensions and the step's loops' counters (a chunk a round:
  // `d_rmu + i * CHUNK`); empty Expr: none. Empty where no argument has one.
  std::vector<Expr> arg_offsets;
  Expr grid[3], block[3], smem;
  // "shared_memory": {"constant": "..."}: a C++ constant expression of the source, {NAME}
  // placeholders filled as a kernel name's (Ktraits<{BM}>::kSmemSize), compiled as the template
  // argument of a probe kernel after the steps (KernelSpec::kernel_names; LaunchStep::smem_kernel);
  // empty: smem, an expression.
  std::string smem_constant;
  // "block": {"constant": "..."}: the threads of a 1-D block as a C++ constant of the source
  // (Ktraits::kNThreads, ThunderKittens' NUM_THREADS_v<...>), probed as smem_constant is, after the
  // shared memory probes (LaunchStep::block_kernel); block is then {1, 1, 1} and the launch takes x
  // from the probe. Empty: block, expressions.
  std::string block_constant;
  Expr cluster[3]; // LaunchStep::cluster; empty: none
  // "when": the step launches only where it holds (empty: always); one that reads only what the
  // plan knows is decided there, one that reads a value at each launch.
  Expr when;
  // Its grid or `when` reads what only the launch knows (a buffer's first element, the device's
  // values; KernelSpec::value_names): their place in KernelSpec::value_grids; -1: none.
  int value_grid = -1;
  bool persistent = false;         // LaunchStep::persistent: grid x capped at the blocks resident at once
  bool cooperative = false;        // LaunchStep::cooperative: grid.sync() kernels
  // "programmatic": launched as a programmatic dependent of the stream's kernel before it
  // (LaunchStep::overlap_previous, sm_90 on): it may start while that one's last blocks run, and
  // must wait for it (griddepcontrol.wait, cudaGridDependencySynchronize) before reading its output.
  bool programmatic = false;
  // "programmatic" given as an expression of the config and the problem (a tuned PDL choice,
  // "PDL == 1"): the launch is a programmatic one where it holds. Empty: the boolean alone.
  Expr programmatic_when;
  // The loops the step is in, outermost first: their round counts, and their counters' places in
  // KernelSpec::names (-1: a loop without one). A step in a loop of no rounds is not launched
  // (KernelSpec::skipped).
  std::vector<Expr> within;
  std::vector<int> within_counters; // beside within: each loop's counter, or -1
  std::vector<int> loop_counters;
};

// The order a launch's steps run in, with their loops (docs/KERNEL_SPEC.md, "Loops"): a node is
// one step (its index into the launch's steps) or a loop of nodes, run `repeat` rounds with its
// counter (`index`, a place in KernelSpec::names) at 0, 1, ..., exchanging the buffers of each
// `swaps` pair of arguments after every round.
struct SpecNode {
  int step = -1; // a step; -1: a loop
  Expr repeat;
  int index = -1;
  std::vector<std::pair<int, int>> swaps; // indices into KernelSpec::args
  std::vector<SpecNode> body;
  // A loop that runs while a condition holds ("while"): its place in KernelSpec::whiles, read after
  // every round; repeat is then the most rounds. -1: a loop of repeat rounds.
  int until = -1;
  // Temporaries set to their fill before every round of the loop ("reset": a flag the round's
  // kernels raise); indices into KernelSpec::args.
  std::vector<int> resets;
};

// A loop's condition (SpecNode::until): an expression of KernelSpec::names and, after them, of one
// value a slot read back after every round from a buffer argument as the round passed it: its
// first element (the flag or count a round's kernels write), or the max, min or sum of all its
// elements (`max_of(diffs)`: the host's loop over an array).
struct SpecWhile {
  enum Read { first, max, min, sum };
  Expr cond;
  std::vector<int> slots;   // indices into KernelSpec::args, one per name after KernelSpec::names
  std::vector<Read> reads;  // beside slots
  std::string text, where;  // the condition as written, and "launch[1].while", for messages
  // The buffer arguments the condition reads (each once), given how many names precede the slots.
  std::vector<int> buffers_read(size_t names) const;
};

struct KernelSpec {
  std::string path, dir, name, op, version, about;
  std::string file; // the spec file's absolute path; empty for a spec given as text
  std::string source, source_name;
  // The text a compile reads: the sources and every header of theirs that resolves to a file
  // (not the toolkit's); whole unless a source includes a header by a macro.
  std::string compiled_text;
  bool compiled_text_whole = true;
  // Whether the compiled text may read macro `name` (it holds the identifier, comments included;
  // or the text is not whole). A parameter it does not read reaches no -D, so configs that differ
  // only in it (a block size only the launch reads) share one compile.
  bool reads_macro(const std::string& name) const;
  std::vector<std::string> options; // extra NVRTC options, include paths resolved
  std::vector<std::string> dims;
  std::vector<DType> dtypes;
  struct Param {
    std::string name;
    std::vector<int> values;
  };
  std::vector<Param> params;
  bool params_as_defines = true, dims_as_defines = false;
  std::vector<std::pair<std::string, Expr>> defines;
  std::vector<Expr> constraints;
  int max_threads = 0; // Kernel Tuner's max_threads: block x * y * z at most this (0: the device's limit only)
  // "arch": "sm_80" (the oldest arch the kernel needs; 0: any) or "sm_90a" (arch-specific
  // instructions, wgmma, setmaxnreg: compiled for sm_90a, serving sm_90 devices only; Family's
  // min_arch and arch_specific).
  int min_arch = 0;
  bool arch_specific = false;
  std::vector<SpecStep> steps;
  // The order of steps, reference_steps and baseline_steps with their loops; empty: each step once,
  // in order.
  std::vector<SpecNode> order, reference_order, baseline_order, setup_order, post_order;
  // The loops' counters, readable by the expressions of steps in their loops and by computed
  // scalars those steps pass; they follow kSpecBuiltins in names.
  std::vector<std::string> loop_names;
  std::vector<SpecWhile> whiles; // the conditions of the loops that run while one holds
  // Some condition reads a whole buffer (max_of, min_of, sum_of): the source ends with
  // kernel_templates/spec/spec_reduce.cuh, and every list's kernels end with its
  // ktune_spec_reduce (LaunchStep::reduce_kernel).
  bool whole_reads = false;
  // Some step's dynamic shared memory or block is a C++ constant (SpecStep::smem_constant,
  // block_constant): the source ends with the probe kernel's template, kConstantProbe.
  bool constant_probes = false;
  // The standard headers NVRTC lacks (<cstdint>, <cmath>, <cfloat>, <vector>: core/nvrtc_std.h)
  // that neither the sources' folders nor include_dirs hold, handed to every compile in memory.
  std::vector<std::pair<std::string, std::string>> std_headers;
  // "host_code": "skip": the sources' host functions (main, launches, helpers) blanked before the
  // compile (core/host_code.h), so that a project's .cu file compiles as it is.
  bool skip_host_code = false;
  std::vector<SpecArg> args;
  std::vector<SpecSymbol> symbols;
  // The check: reference steps run once per problem with reference_config's defines; or the
  // expected outputs read from files (answers: each checked argument's `answer`, the inputs all
  // fixed); or none.
  bool check = true;
  bool answers = false;
  std::string no_check_reason;
  std::vector<SpecStep> reference_steps;
  Config reference_config;
  // check.post: kernels that bring outputs to one canonical form before the compare (sort each
  // segment an atomic placement filled in no fixed order; add up per-block partials), run on the
  // kernel under test's buffers after it and on the reference's after it; not timed, not served.
  bool has_post = false;
  std::vector<SpecStep> post_steps;
  Config post_config;
  // The baseline the tuned kernel's speed-up is shown against (OpInfo::baseline "baseline"): a
  // kernel of the source with its launch, or a config of the kernel itself; none when absent.
  bool has_baseline = false;
  std::vector<SpecStep> baseline_steps;
  Config baseline_config;
  // Setup: kernels of the source that make inputs whose values depend on each other (a CSR
  // matrix's row pointers and sorted columns, a neighbour list from positions), run after the
  // fills of every input set and before anything reads it (the reference, the kernel, the
  // baseline), with setup_config's defines; not timed, not served. None when absent.
  bool has_setup = false;
  std::vector<SpecStep> setup_steps;
  Config setup_config;
  Expr flops, bytes;
  Config default_config; // empty: the first valid config
  // Names every expression may read, in this order: params, dims, then the device and problem
  // values kSpecBuiltins lists, then loop_names.
  std::vector<std::string> names;
  size_t first_loop_name() const { return params.size() + dims.size() + kSpecBuiltinCount; }
  // The device's values among names (after align, dtype_bytes and dtype_eps): max_threads ... arch.
  size_t first_device_name() const { return params.size() + dims.size() + 3; }
  bool device_name(size_t i) const { return i >= first_device_name() && i < first_loop_name(); }
  // What a grid and a computed scalar may read besides names (and, of names, the device's values,
  // evaluated at the launch on the GPU it runs on): a buffer argument's first element,
  // read back when the step launches (a frontier's length that sizes the next round's grid, as
  // host code reads it with cudaMemcpy before the launch): names, then one name a buffer argument
  // (value_slots: its index into args) not already among them.
  std::vector<std::string> value_names;
  std::vector<int> value_slots;
  // Whether e reads what only a launch knows: a buffer's value or the device's (its SM count).
  bool reads_values(const Expr& e) const {
    const std::vector<size_t>& r = e.reads();
    return std::any_of(r.begin(), r.end(), [&](size_t i) { return i >= names.size() || device_name(i); });
  }
  // The buffers (places in value_names past names) whose first element launch step s's grid,
  // `when` and scalars read (LaunchStep::reads_values): what the launch reads back, and what the
  // plan aliases where a round's swap moved it.
  std::vector<size_t> value_reads(const LaunchStep& s) const;
  // The launch-time parts of steps (SpecStep::value_grid, LaunchStep::value_grid): the grid's x,
  // y and z, then `when` (empty: none).
  std::vector<std::array<Expr, 4>> value_grids;

  // names' values for config c (unset parameters 0) of problem p on device d.
  std::vector<double> values(const Config& c, const Problem& p, const DeviceInfo& d) const;
  // names' values for what follows the problem only (sizes, scalar values, counts): no config,
  // no device (any device gives the same).
  std::vector<double> problem_values(const Problem& p) const;
  // Element count of buffer argument i at p (throws UsageError naming the field when negative);
  // a temporary that follows the config needs c.
  int64_t count_of(size_t arg, const Problem& p, const Config& c = Config()) const;
  // The elements of output argument i compared with the reference at p: its check_count (at most
  // its count), else all.
  int64_t checked_count(size_t arg, const Problem& p) const;
  // The elements symbols[i] is filled with at p.
  int64_t symbol_count(size_t i, const Problem& p) const;
  // The value of scalar argument i at p (and c, for one that follows the config): its
  // expression, else the problem's scalar of that name.
  double scalar_value(size_t arg, const Problem& p, const Config& c = Config()) const;
  // Struct argument i's bytes at p and c: its value fields computed, its pointer fields their
  // offsets in bytes (the launch adds the buffers' addresses). With no config, the fields that
  // read a parameter or a loop's counter are 0 (what the problem alone decides, checked before a run). Throws UsageError naming the field for a value
  // that is not finite or (integers) not a whole number its type holds.
  std::vector<unsigned char> struct_bytes_at(size_t arg, const Problem& p, const Config& c) const;
  // Texture argument i's shape at p: its texel type and sizes, checked against its buffer's bytes
  // and the rows against the pitch; throws UsageError naming the texture. What the launch makes
  // its texture object from, and what a run checks before it starts (check_fill_files).
  struct TextureShape {
    ElemType format = ElemType::f32;
    int channels = 1;
    size_t width = 0, height = 0, depth = 0, pitch = 0; // height, depth 0: fewer dimensions
    size_t texel_bytes() const { return size_t(elem_bytes(format)) * size_t(channels); }
  };
  TextureShape texture_at(size_t arg, const Problem& p) const;
  // Address table argument i at p: its entries and where they point, in bytes past its buffer's
  // address, checked to point at elements of the buffer (a problem of no elements: no entry);
  // throws UsageError naming the table. What the launch makes the table from (runtime/address_tables.h).
  struct TableShape {
    size_t count = 0, offset = 0, stride = 0; // entries; bytes: the first entry's, between entries
  };
  TableShape table_at(size_t arg, const Problem& p) const;
  // Tensor map argument i (or struct i's map field) at p and c: what cuTensorMapEncodeTiled takes but the address (rank,
  // extents, strides in bytes, box, element type, swizzle bytes), innermost first, checked against
  // its buffer's bytes and TMA's limits; throws UsageError naming the map. As bytes (to_bytes /
  // from_bytes): the plan's data for it (LaunchPlan::SpecArgValue::data), which the launch encodes
  // with the buffer's address.
  struct TensorMapShape {
    static constexpr int kMaxRank = 5;
    int rank = 0;
    uint64_t dims[kMaxRank] = {};
    uint64_t strides[kMaxRank - 1] = {};
    uint32_t box[kMaxRank] = {};
    ElemType type = ElemType::f32;
    int swizzle = 0, l2_promotion = 256;
    // The bytes of to_bytes: the fields one after another, no padding (at most a map's 128, so a
    // struct's map field holds its shape in the plan).
    static constexpr size_t kBytes = sizeof(int) * 3 + sizeof(uint64_t) * (2 * kMaxRank - 1) + sizeof(uint32_t) * kMaxRank + sizeof(ElemType);
    std::vector<unsigned char> to_bytes() const;
    static TensorMapShape from_bytes(const unsigned char* bytes); // kBytes of them
  };
  // field: the map field of a struct argument (a tensor map argument's is its field 0).
  TensorMapShape tensor_map_at(size_t arg, const Problem& p, const Config& c, size_t field = 0) const;
  // Whether a step of `st` that config c launches at p passes argument `arg` (skipped steps not).
  bool passes_launched(size_t arg, const std::vector<SpecStep>& st, const Config& c, const Problem& p) const;
  // Beside args: the buffers a texture over a buffer (linear, pitch2d; not an array's) may read in
  // some round, its own and those a loop's swap exchanges with it: where they start, the device's
  // texture alignment (512 bytes) must hold (the plan's temporaries, the check's buffers).
  std::vector<bool> texture_aligned() const;
  // Beside args: `marked` grown by every buffer a loop's swap (in any list's loops) exchanges with a
  // marked one, until no pair differs: the buffers a round may pass where a marked one was.
  void close_over_swaps(std::vector<bool>& marked) const;
  // The same from the names' values v (a launch's, with its loops' counters); context for errors.
  // problem_only: the fields that read a parameter left 0.
  std::vector<unsigned char> struct_bytes_from(size_t arg, const std::vector<double>& v, const Problem& p, const Config& c,
                                               const std::string& context, bool problem_only = false) const;
  // The arguments a step's kernel takes (SpecStep::args, LaunchStep::args): those it names, else
  // all of them in order.
  std::vector<int> step_args(const std::vector<int>& named) const;
  // Whether a kernel that declares `declared` parameters fits a step that passes `passed`
  // arguments: as many; or, where the step names none and so passes all, the first few.
  static bool arity_fits(bool named, size_t declared, size_t passed) {
    return named ? declared == passed : declared <= passed;
  }
  // Whether config c at p never launches step st: a loop it is in has no rounds (told where the
  // rounds read no loop counter: "VER == 2", "T - 1"; an inner loop of "i" rounds runs at some i).
  // Such a step's launch limits do not bind c, and its kernel is not compiled for c.
  bool skipped(const SpecStep& st, const Config& c, const Problem& p) const;
  // The launch plan of `steps` (the family's, the reference's or the baseline's) for c at p, in
  // their order with every loop unrolled: each launch's grid, block and arguments (a loop's
  // counter in the scalars that read it, swapped buffers; a copy that puts a swapped buffer back
  // after an odd number of rounds), every temporary's place in the workspace (256-byte aligned)
  // and every computed scalar's value (LaunchPlan::spec_args); throws UsageError naming the field
  // for a grid or block of 0 or past the device's limits, or a loop's rounds that are no whole
  // number from 0 up.
  std::vector<std::string> kernel_names(const std::vector<SpecStep>& steps, const Config& c, const Problem& p) const;
  std::vector<std::string> compile_options(const Config& c, const Problem& p) const;
  // The macros compile_options sets whatever the config: the constant defines and the options'
  // -D (CompileRequest::build_macros).
  std::set<std::string> build_macros() const;
  LaunchPlan plan(const std::vector<SpecStep>& steps, const Config& c, const Problem& p) const;
  // Scalar argument i's value from the names' values v; context for its error.
  double scalar_from(size_t arg, const std::vector<double>& v, const std::string& context) const;
  // The order that runs `steps` (one of steps, reference_steps, baseline_steps, setup_steps and
  // post_steps; none for another list).
  const std::vector<SpecNode>& order_of(const std::vector<SpecStep>& steps) const;

 private:
  // The values argument a's expressions read at p: with c where it follows the config.
  std::vector<double> arg_values(const SpecArg& a, const Config& c, const Problem& p) const;
};

// Where the arguments step st passes disagree with the parameters its compiled kernel (`lowered`,
// NVRTC's name of it) declares in its mangled name: their number (a step that names no arguments
// passes all, of which its kernel may take the first few), a buffer for a value or the
// other way round, a size or (values) an integer for a float: why, naming `what` (the step), the
// kernel and the argument; "" where they agree or the name tells nothing (an extern "C" kernel:
// the GPU checks it at its first launch), and for structs.
std::string signature_mismatch(const KernelSpec& s, const SpecStep& st, const std::string& lowered, const Problem& p,
                               const std::string& what);

// Where the parameter sizes a compiled kernel declares (the GPU's cuFuncGetParamInfo, or the
// cubin's own record of them: cubin_param_sizes) disagree with what a step passing `named`
// arguments (empty: all) gives it, a buffer 8 bytes, a scalar its type's, a struct its layout's:
// why, naming `what` (the module and step), every size and the step's arguments; "" where they
// agree. The driver reads no more arguments than the kernel declares: a step that names none may
// pass more.
std::string param_sizes_mismatch(const KernelSpec& s, const std::vector<int>& named, const std::vector<size_t>& sizes,
                                 const Problem& p, const std::string& what);

// The byte sizes of kernel `name`'s parameters as a cubin records them (ELF section
// .nv.info.<name>, its EIATTR_KPARAM_INFO entries, which NVRTC writes for every kernel): the check
// the GPU makes at a first launch, made without one. Empty where the cubin is no ELF, has no such
// section or records no parameter (a kernel of none).
std::vector<size_t> cubin_param_sizes(const std::vector<char>& cubin, const std::string& name);

// Parses and checks a spec (JSON text; relative paths from base_dir) and reads its sources; throws
// UsageError "<origin>: <field path>: <what>". Registers nothing (load_kernel_spec does).
KernelSpec parse_kernel_spec(const std::string& json, const std::string& origin, const std::string& base_dir);

// Where `word` stands in `text` at or after `from` as a whole identifier (no letter, digit or _ on
// either side); npos where it does not.
size_t find_word(const std::string& text, const std::string& word, size_t from = 0);

// The macro an NVRTC option defines, "NAME" or "NAME=VALUE" (-D, --define-macro=); "" for another option.
std::string macro_of_option(const std::string& option);

// text without the white space (std::isspace) at its two ends.
std::string trim(const std::string& text);

// The CUDA toolkit's include folder (CUDA_HOME, CUDA_PATH, else /usr/local/cuda), which user
// kernels' compiles search as nvcc does; "" where there is none.
const std::string& cuda_include_dir();

// The builtins every spec expression may read besides its parameters and dimensions: the
// problem's align, dtype_bytes and dtype_eps (its dtype's unit roundoff: 2^-24 for f32 and tf32,
// 2^-11 f16, 2^-8 bf16, 2^-53 f64), then the device's values.
extern const std::vector<std::string> kSpecBuiltins;

// The kernel template whose instantiations carry a C++ constant of a spec's source in their
// lowered names (SpecStep::smem_constant, block_constant), and the value one such name holds: false where `lowered`
// is not one (every other kernel).
extern const char* const kConstantProbe;
bool constant_probe_value(const std::string& lowered, unsigned long long* value);


// The spec of a registered op (OpInfo::spec); throws Error when op has none.
const KernelSpec& spec_of(const std::string& op);

} // namespace ktune
