#include "tools/problem_options.h"

#include "tools/cli.h"

namespace ktune::cli {

namespace {

// The registered ops and the shape each takes, from their OpInfo: "gemm MxNxK, softmax ROWSxCOLS, ...".
std::string op_shapes() {
  std::string s;
  for (const OpInfo& op : ops()) {
    std::string shape;
    for (const auto& d : op.dims) shape += (shape.empty() ? "" : "x") + d;
    s += (s.empty() ? "" : ", ") + op.name + " " + shape;
  }
  return s;
}

std::string op_names() {
  std::string s;
  for (const OpInfo& op : ops()) s += (s.empty() ? "" : ", ") + op.name;
  return s;
}

} // namespace

void add_problem_options(CLI::App* sub, ProblemOptions& o, ProblemOf of) {
  o.sub = sub;
  add_kernel_option(sub, o.kernels);
  if (of == ProblemOf::family) {
    o.arch = "sm_90";
    sub->add_option("--family", o.family, "Kernel family")->capture_default_str();
    sub->add_option("--arch", o.arch, "Target arch (sm_75 to sm_121, an \"a\" form for arch-specific code: sm_90a, sm_100a)")->capture_default_str();
    sub->add_option("--problem", o.shape,
                    "Problem shape of the family's op, its dimensions joined by x (" + op_shapes() + "); default 4096 each");
  } else {
    sub->add_option("--op", o.op, "The problem's op (" + op_names() + ")")->capture_default_str();
    sub->add_option("--arch", o.arch, "Arch to answer for (no GPU needed), e.g. sm_90");
    sub->add_option("--problem", o.shape, "Problem shape, the op's dimensions joined by x (" + op_shapes() + ")")->required();
  }
  sub->add_option("--layout", o.layout, "GEMM: layouts of A and B, NN (default), NT, TN, TT");
  sub->add_option("--dtype", o.dtype, "Data type of A, B and C: f32, bf16, f16; a --kernel's may take f64 (default: f32, or a --kernel's first)");
}

void load_problem_kernels(ProblemOptions& o) {
  const std::vector<std::string> names = load_kernels(o.kernels);
  if (names.empty()) return;
  // A spec's one family bears its op's name. The command has --family or --op, not both.
  auto given = [&](const char* flag) { return o.sub && o.sub->get_option_no_throw(flag) && o.sub->count(flag) > 0; };
  if (!given("--family")) o.family = names.front();
  if (!given("--op")) o.op = names.front();
}

Problem parse_problem(const ProblemOptions& o, const std::string& op_name) {
  const OpInfo& op = op_info(op_name);
  std::string dflt;
  for (size_t i = 0; i < op.dims.size(); ++i) dflt += i ? "x4096" : "4096";
  const std::string dtype = !o.dtype.empty() ? o.dtype : op.spec ? to_string(op.families().front().dtypes().front()) : "f32";
  return Problem::parse(op.name, o.shape.empty() ? dflt : o.shape,
                        o.layout.empty() ? op.default_layout() : o.layout, parse_dtype(dtype));
}

} // namespace ktune::cli
