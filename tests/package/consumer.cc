// Uses the public API only (the C++ runtime and the C API), with no GPU needed: the choice the
// shipped sm_90 table makes for a problem, and the C API's answer to a bad argument.
#include <cstdio>

#include "ktune/ktune.h"
#include "ktune/runtime.h"
#include "ktune/gemm_problem.h"

int main() {
  ktune::RuntimeOptions o;
  o.arch = "sm_90";
  o.db_path = "";
  const ktune::Runtime rt(o);
  const ktune::Selection s = rt.best_config(ktune::GemmProblem::parse("16x4096x4096"));
  std::printf("choice %s %s\n", ktune::to_string(s.provenance), s.family.c_str());
  if (ktune_sgemm(nullptr, KTUNE_ROW_MAJOR, KTUNE_OP_N, KTUNE_OP_N, 4, 4, 4, 1.0f, nullptr, 4, nullptr, 4, 0.0f, nullptr, 4,
                  nullptr) != KTUNE_INVALID_VALUE)
    return 1;
  std::printf("c api %s\n", ktune_last_error());
  return rt.entries() > 0 ? 0 : 1;
}
