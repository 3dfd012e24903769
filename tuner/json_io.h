// JSON forms of the tuner's values: problems (suites, the worker protocol), launch plans and
// timings. One place, so the suite reader, the worker and the store agree on field names.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/trial.h"
#include "ktune/family.h"
#include "ktune/gemm_problem.h"
#include "ktune/runtime.h"

namespace ktune {

nlohmann::json problem_to_json(const GemmProblem& p);
// Accepts {"m","n","k"} plus optional "layout" (NN), "dtype" (f32), "lda", "ldb", "ldc", "alpha",
// "beta" (0), "align" (derived). Throws UsageError naming `where` and the field.
GemmProblem problem_from_json(const nlohmann::json& j, const std::string& where);

nlohmann::json plan_to_json(const LaunchPlan& p);
LaunchPlan plan_from_json(const nlohmann::json& j);

nlohmann::json timing_to_json(const Timing& t);

// The runtime's answer for p on arch, every field of Selection and its candidates: what
// `ktune query --json` prints and what the Python package's best_config() returns.
nlohmann::ordered_json selection_to_json(const GemmProblem& p, const std::string& arch, const Selection& s);
Timing timing_from_json(const nlohmann::json& j);

// A suite file: {"name": ..., "problems": [{"m":..,"n":..,"k":..}, ...]}. Throws UsageError on a
// missing or unreadable file, malformed JSON, or a bad problem (naming its index).
std::vector<GemmProblem> load_suite(const std::string& path, const std::string& default_layout = "NN",
                                    DType default_dtype = DType::f32);

} // namespace ktune
