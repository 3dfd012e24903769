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
  std::string shape, layout, dtype = "f32"; // --problem, --layout, --dtype
};

// family: a command about one family's configs (compile, space); the shape defaults to 4096 in
// every dimension. op: a command about the op's problem (query); the shape is required.
enum class ProblemOf { family, op };

// Adds --family or --op, then --arch, --problem, --layout and --dtype to sub, filling o.
void add_problem_options(CLI::App* sub, ProblemOptions& o, ProblemOf of);

// The problem the options name, of op (the family's, or o.op): 4096 in every dimension unless
// --problem gives the shape, the op's first layout unless --layout gives one.
Problem parse_problem(const ProblemOptions& o, const std::string& op);

} // namespace ktune::cli
