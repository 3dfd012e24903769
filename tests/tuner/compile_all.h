// Shared by the NVRTC compile tests (compiler_test.cpp, skinny16_test.cpp): compiles every
// (config, problem) pair on the pool and reports each failure with its config.
#pragma once
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <utility>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/family.h"
#include "ktune/gemm_problem.h"

namespace ktune::testing {

template <class P>
void compile_all(const Family& f, const std::vector<std::pair<Config, P>>& cases, const std::string& arch) {
  Compiler compiler;
  std::vector<std::future<std::shared_ptr<const CompiledKernel>>> futs;
  for (const auto& [c, p] : cases) futs.push_back(compiler.compile_async(compile_request(f, c, p, arch)));
  for (size_t i = 0; i < futs.size(); ++i) {
    try {
      const auto k = futs[i].get();
      EXPECT_GT(k->cubin.size(), 0u);
      EXPECT_EQ(k->lowered_names.size(), f.kernel_names(cases[i].first, cases[i].second).size());
    } catch (const std::exception& e) {
      ADD_FAILURE() << arch << " " << cases[i].first.to_json() << " " << cases[i].second.key() << ": " << e.what();
    }
  }
}

} // namespace ktune::testing
