// The options that name the problem a command works on (ktune compile, space and query): whose op
// it is (--family or --op), the arch, the shape, the layout and the dtype. Declared and parsed once
// here, so that the commands spell and read them alike.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "ktune/problem.h"

namespace ktune::cli {

struct ProblemOptions {
  std::string family = "gemm_simt"; // ProblemOf::family: the problem is of this family's op
  std::string op = "gemm";          // ProblemOf::op
  std::string arch;                 // ProblemOf::family: sm_90 unless given; ProblemOf::op: the GPU's unless given
  std::string shape, layout, dtype; // --problem, --layout, --dtype (default: the op's first dtype)
  std::vector<std::string> kernels; // --kernel: user kernel specs to load (the first names the op and family)
  CLI::App* sub = nullptr;
};

// family: a command about one family's configs (compile, space); the shape defaults to 4096 in
// every dimension. op: a command about the op's problem (query); the shape is required.
enum class ProblemOf { family, op };

// Adds --family or --op, then --kernel, --arch, --problem, --layout and --dtype to sub, filling o.
void add_problem_options(CLI::App* sub, ProblemOptions& o, ProblemOf of);
// Loads the --kernel specs (a bad one is a UsageError naming its field: exit 2 before any work);
// the first one's op and family become o.op and o.family unless --op or --family was given.
void load_problem_kernels(ProblemOptions& o);

// The problem the options name, of op (the family's, or o.op): 4096 in every dimension unless
// --problem gives the shape, the op's first layout unless --layout gives one.
Problem parse_problem(const ProblemOptions& o, const std::string& op);

} // namespace ktune::cli
