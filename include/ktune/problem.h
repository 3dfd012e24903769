// What is computed, for any op: the identity that the store, the tables, the runtime's lookup and
// the tuner share. Each op (GEMM first; kernel_templates/<op>/) registers an OpInfo that names its
// dimensions and layouts and counts its FLOPs and bytes; its typed view (GemmProblem for GEMM,
// include/ktune/gemm_problem.h) converts to and from Problem.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ktune {

class Family;

// f64: a dtype of user kernels (kernel specs) only; built-in ops refuse it (validate()).
enum class DType { f32, tf32, f16, bf16, f64 };
// Storage order of an operand. C is always row-major; A and B are row-major ('N') or
// column-major ('T', i.e. the transposed matrix stored row-major), as BLAS names them.
enum class Layout { row, col };

const char* to_string(DType d);
DType parse_dtype(const std::string& s); // throws UsageError
// Bytes of one element of A, B and C: 4 for f32 (and tf32, stored as f32), 2 for f16 and bf16, 8 for f64.
int element_bytes(DType d);
// Unit roundoff of the type results are stored in: 2^-24 for f32 (and tf32, stored as f32), 2^-8
// for bf16, 2^-11 for f16, 2^-53 for f64: the error of the one rounding of an output element.
double unit_roundoff(DType d);
inline bool is_half(DType d) { return d == DType::f16 || d == DType::bf16; }

// One problem of any op. Its key, op/dtype[/layout]/D0xD1x.../aN (GEMM:
// gemm/f32/NN/4096x4096x4096/a16; softmax: softmax/bf16/4096x32000/a16), names it everywhere.
struct Problem {
  std::string op;              // a registered op (op_info)
  DType dtype = DType::f32;
  std::vector<int64_t> dims;   // the op's dimensions, in the order its OpInfo names them
  std::string layout;          // the op's storage flags (GEMM: NN, NT, TN, TT); empty when it has none
  // The op's strides in elements, in OpInfo::ld_names order: one leading dimension per matrix
  // (GEMM: lda, ldb, ldc; row ops: ldx, ldy), or every stride but the innermost of each
  // N-dimensional operand (OpInfo::Operand::shape), operand after operand.
  std::vector<int64_t> ld;
  // Alignment class in bytes (16, 8, 4, or 2 for 2-byte elements): the largest that divides every
  // pointer's address and every stride in bytes.
  int align = 16;
  // Run-time scalars of a call (GEMM: alpha, beta; softmax: scale; norms: eps), by the op's names
  // for them; absent ones take the op's defaults. Not part of the key: one tuned config serves them all.
  std::map<std::string, double> scalars;

  std::string shape_string() const; // "4096x4096x4096"
  std::string key() const;
  // The dimension the op calls `name`; throws Error when the op has none by that name.
  int64_t dim(const std::string& name) const;
  // The scalar `name`, or the op's default for it; throws Error when the op has none by that name.
  double scalar(const std::string& name) const;

  // Leading dimensions at the op's minimum and the alignment class they allow. Throws UsageError
  // on an unknown op, a wrong number of dimensions, or a layout the op does not have (empty: the
  // op's first, OpInfo::default_layout).
  static Problem make(const std::string& op, std::vector<int64_t> dims, const std::string& layout = {},
                      DType dtype = DType::f32);
  // "D0xD1x..." as many as the op has, then validated (the op's own checks included).
  static Problem parse(const std::string& op, const std::string& shape, const std::string& layout = {},
                       DType dtype = DType::f32);
  // The inverse of key(); throws UsageError on a malformed key or one that names no problem the
  // op can serve (validate_key).
  static Problem parse_key(const std::string& key);
  // The largest class in {16, 8, 4} that divides every leading dimension in bytes, never below
  // the element size.
  static int alignment_of(const std::vector<int64_t>& ld, int element_bytes);
  // align narrowed (halved, not below floor) until it divides every non-null pointer's address.
  static int alignment_with_pointers(int align, std::initializer_list<const void*> pointers, int floor = 2);
};

bool operator==(const Problem& a, const Problem& b);

// What an op declares once, for every layer that handles its problems without knowing the op.
struct KernelSpec;

struct OpInfo {
  std::string name, about;
  std::vector<std::string> dims;    // e.g. {"m", "n", "k"}; shape strings list them in this order
  std::vector<std::string> layouts; // the layouts it accepts; empty: none (the first is the default)
  // The layout a problem takes where none is named: the first of layouts, "" for an op without.
  std::string default_layout() const { return layouts.empty() ? std::string() : layouts.front(); }
  std::vector<std::string> ld_names; // its leading dimensions, in Problem::ld order
  // The largest dimension and leading dimension the op's kernels and its baseline library take.
  // A problem beyond either is refused wherever it enters (validate): a key that no reader could
  // serve must never reach a database.
  int64_t max_dim = INT32_MAX, max_ld = INT32_MAX;
  std::vector<std::pair<std::string, double>> scalars; // run-time scalars and their defaults
  // The library the tuner times beside every problem ("cublas"), or "" when there is none in C++.
  std::string baseline;
  // The smallest leading dimensions of a problem of these dimensions and layout.
  std::function<std::vector<int64_t>(const std::vector<int64_t>& dims, const std::string& layout)> min_ld;
  // The op's own checks beyond the generic ones (sizes >= 0, leading dimensions >= minimum,
  // alignment class allowed); throws UsageError naming the field.
  std::function<void(const Problem&)> validate;
  std::function<double(const Problem&)> flops;     // useful FLOPs (TFLOPS figures)
  std::function<double(const Problem&)> min_bytes; // bytes every input read and every output written once
  // Which of the tuner's runners fills, verifies and times the op (tuner/op_runners.cpp): "gemm",
  // "rows" (one output row per input row).
  std::string runner;
  // Row ops: the vectors of cols elements read besides x (0 none, 1 weight, 2 weight and bias), and
  // the FP64 reference of one row in the op's semantics: x and y of cols elements, w / b null
  // where the op has none (or the caller passes none: then 1 and 0).
  int row_vectors = 0;
  std::function<void(const Problem&, const double* x, const double* w, const double* b, double* y)> reference_row;
  // Row ops: the op's code for the row kernels and the device reference that checks them
  // (KTUNE_ROWS_<OP>, kernel_templates/<op>/<op>_check.h; the same semantics as reference_row); -1 for
  // other ops.
  int row_op = -1;

  // Ops of plain buffers (runner "buffers"; docs/ADDING_AN_OP.md): the kernels take one pointer
  // per operand in this order, then every dimension as a long long, then every stride of
  // Problem::ld (shaped operands') as a long long, then every scalar as a float.
  // The tuner fills the inputs, poisons the outputs, checks guard bytes around every buffer and
  // compares the outputs with `reference`; the runtime, the C API (ktune_run) and Python
  // (ktune.run) pass the caller's buffers in the same order.
  struct Operand {
    std::string name;
    bool output = false; // written (and only written) by the kernels; inputs are only read
    bool updated = false; // read and written in place (a user kernel's inout buffer)
    // Written by the kernels: a call whose written operands are all empty has nothing to do.
    bool written() const { return output || updated; }
    std::function<int64_t(const Problem&)> count; // elements, contiguous
    double lo = -1, hi = 1;                       // inputs: uniform random values in [lo, hi)
    // An N-dimensional operand: the op's dimensions along its axes, outermost first (attention's
    // q: {"batch", "seq", "heads", "dim"}); count is then unused. Its innermost axis is contiguous
    // (vector loads and tensor maps need it); every other stride is the caller's, in Problem::ld,
    // any order of axes whose elements do not overlap (a (B, H, S, D) view of (B, S, H, D)
    // storage). Its kernels get those strides as long longs after the dimensions. Empty: a flat
    // operand of count contiguous elements.
    std::vector<std::string> shape;
    // Bytes an element when not the problem's dtype's (a user's kernel's int32 indices); 0: the
    // dtype's.
    int elem_bytes = 0;
    // false: the kernels read or write it one element at a time (attention's cumulative lengths,
    // block table, sequence lengths and log-sum-exp), so its pointer does not narrow the problem's
    // alignment class (operands_alignment).
    bool aligns = true;

    Operand() = default;
    // A flat operand of count(p) contiguous elements.
    Operand(std::string name_, bool output_, std::function<int64_t(const Problem&)> count_, double lo_ = -1,
            double hi_ = 1)
        : name(std::move(name_)), output(output_), count(std::move(count_)), lo(lo_), hi(hi_) {}
    // An N-dimensional operand along the op's dimensions `shape_`, outermost first.
    static Operand shaped(std::string name_, bool output_, std::vector<std::string> shape_, double lo_ = -1,
                          double hi_ = 1) {
      Operand o(std::move(name_), output_, nullptr, lo_, hi_);
      o.shape = std::move(shape_);
      return o;
    }
  };
  std::vector<Operand> operands;
  // The FP64 reference: in[i] holds the i-th input's values as the kernel reads them (rounded to
  // the dtype); fills out[j] with the j-th output's exact values and mag[j] with the magnitude
  // each element's rounding error scales with (the sum of the absolute values of its terms). A
  // shaped operand's array is its whole buffer (operand_elements), indexed by operand_strides;
  // the output elements between a shaped output's own are not read.
  std::function<void(const Problem&, const std::vector<const double*>& in, const std::vector<double*>& out,
                     const std::vector<double*>& mag)>
      reference;
  // The FP32 roundings an output element's terms pass through before its final rounding to the
  // dtype (scale_add with one multiply and one fma: 2): its bound is the dtype's unit roundoff
  // of |exact| plus gamma(roundings) of its magnitude (docs/ADDING_AN_OP.md, "Verification").
  int roundings = 1;

  // The op's kernel families, declared in its folder (builtin_families() collects them).
  std::function<std::vector<Family>()> families;

  // Another op whose tuned entries may lend their configs to this op's problems, where a family of
  // that op and one of this op take the same parameters (attention_paged's decode family is
  // attention's with the keys looked up in a block table): the op, this op's family for each
  // lending family, and the problem of that op a problem of this one stands for (the distance to a
  // lender is measured between those). Empty op: none. First use measures what is lent, as any
  // lender (db/lending.h).
  struct LendsFrom {
    std::string op;
    std::vector<std::pair<std::string, std::string>> families; // lending family, serving family
    std::function<Problem(const Problem&)> as;
  };
  LendsFrom lends_from;

  // The problem whose selection, first-use measurement and prepared kernel serve a problem of this
  // op, where some of its dimensions change neither the kernels nor their launch plan: the runtime
  // keys its choice by it and launches with the caller's problem. attention_varlen's packed token
  // counts change with every serving step; its families' kernels and grids depend on the batch and
  // the longest lengths only. Null: the problem itself (serving_problem).
  std::function<Problem(const Problem&)> serve_as;
  // Dimensions serve_as sets from the others (attention_varlen's token totals, attention_paged's
  // page count): they tell nothing of their own about how alike two problems are, and counted they
  // would count the batch and lengths twice, so log_distance leaves them out.
  std::vector<std::string> derived_dims;

  // A user's kernel (runner "spec"): its parsed spec, which says its arguments, fills, launch
  // and check (core/kernel_spec.h); null for built-in ops.
  std::shared_ptr<const KernelSpec> spec;
};

// The registered ops: the built-in ones (kernel_templates/ops.cpp lists them, one name each), then
// those added by register_op. A deque: references to an entry stay valid as others are added.
const std::deque<OpInfo>& ops();
// Adds an op after the built-in ones (a test fixture, a kernel a user brings). For an op of
// N-dimensional operands it fills min_ld (packed strides) and ld_names ("<operand>.<dim>": the
// stride along that dimension). Throws UsageError when the name is taken or the declaration is
// inconsistent (shaped operands beside min_ld, an axis naming no dimension). Register before any
// thread looks ops up: the list is not guarded against concurrent change.
const OpInfo& register_op(OpInfo op);
// The built-in ops' declarations (kernel_templates/ops.cpp), before register_op's completion.
std::vector<OpInfo> builtin_ops();
// The elements operand i's buffer spans: count(p) for a flat operand; for a shaped one the
// farthest element's offset plus one (0 when an extent is 0).
int64_t operand_elements(const Problem& p, size_t i);
// Bytes of one element of operand i at p (Operand::elem_bytes, else the dtype's).
int operand_element_bytes(const Problem& p, size_t i);
// A shaped operand's extents and strides, outermost first (the innermost stride is 1); empty for a
// flat operand.
std::vector<int64_t> operand_extents(const Problem& p, size_t i);
std::vector<int64_t> operand_strides(const Problem& p, size_t i);
// Throws UsageError listing the known ops when name is not one of them.
const OpInfo& op_info(const std::string& name);
// OpInfo::serve_as of p's op applied to p, or p.
Problem serving_problem(const Problem& p);
// serving_problem(p).key(), without a copy of p for an op that has no serve_as (every call of
// Runtime::run builds it).
std::string serving_key(const Problem& p);
// align narrowed to what the pointers of p's operands allow (n of them, in the op's order; null
// ones and those whose Operand::aligns is false left out).
int operands_alignment(const Problem& p, int align, const void* const* buffers, size_t n);

// Throws UsageError naming the problem and the offending field; a dimension beyond the op's
// max_dim is "out of range" with the limit.
void validate(const Problem& p);
// What a key names, validated: validate() of the problem with its leading dimensions at their
// minimum rounded up to its alignment class, which a key does not carry (a problem tuned with
// padded leading dimensions keeps its class in its key; parse_key gives them back at their
// minimum). Tables and the store hold keys, so this is their check.
void validate_key(const Problem& p);
double flops(const Problem& p);
double min_bytes(const Problem& p);
// TFLOPS of p done in ms milliseconds (0 for ms <= 0).
double tflops(const Problem& p, double ms);

// How far apart two problems of one op are for lending configs: the Euclidean distance over the
// logs of their dimensions (a dimension of 0 counts as 1), the op's derived_dims left out. Used by
// the runtime's nearest lookup and by warm starts.
double log_distance(const Problem& a, const Problem& b);

} // namespace ktune
