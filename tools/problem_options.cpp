#include "tools/problem_options.h"

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
  if (of == ProblemOf::family) {
    o.arch = "sm_90";
    sub->add_option("--family", o.family, "Kernel family")->capture_default_str();
    sub->add_option("--arch", o.arch, "Target arch (sm_80, sm_86, sm_89, sm_90, sm_90a)")->capture_default_str();
    sub->add_option("--problem", o.shape,
                    "Problem shape of the family's op, its dimensions joined by x (" + op_shapes() + "); default 4096 each");
  } else {
    sub->add_option("--op", o.op, "The problem's op (" + op_names() + ")")->capture_default_str();
    sub->add_option("--arch", o.arch, "Arch to answer for (no GPU needed), e.g. sm_90");
    sub->add_option("--problem", o.shape, "Problem shape, the op's dimensions joined by x (" + op_shapes() + ")")->required();
  }
  sub->add_option("--layout", o.layout, "GEMM: layouts of A and B, NN (default), NT, TN, TT");
  sub->add_option("--dtype", o.dtype, "Data type of A, B and C: f32, bf16, f16")->capture_default_str();
}

Problem parse_problem(const ProblemOptions& o, const std::string& op_name) {
  const OpInfo& op = op_info(op_name);
  std::string dflt;
  for (size_t i = 0; i < op.dims.size(); ++i) dflt += i ? "x4096" : "4096";
  return Problem::parse(op.name, o.shape.empty() ? dflt : o.shape,
                        o.layout.empty() ? op.default_layout() : o.layout, parse_dtype(o.dtype));
}

} // namespace ktune::cli
