// JSON forms of the tuner's values: problems (suites, the worker protocol), launch plans and
// timings. One place, so the suite reader, the worker and the store agree on field names.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/trial.h"
#include "runtime/timing.h"
#include "ktune/family.h"
#include "ktune/gemm_problem.h"
#include "ktune/runtime.h"

namespace ktune {

// A problem of any op: {"op", "dtype", "layout", its dimensions by name, its leading dimensions by
// name, its scalars by name, "align"}.
nlohmann::json problem_to_json(const Problem& p);
// Accepts the op's dimensions by name (GEMM: {"m","n","k"}) plus optional "op" (default_op),
// "layout" (the op's first), "dtype" (f32), leading dimensions (GEMM: "lda", "ldb", "ldc"; the
// minimum), scalars (GEMM: "alpha" 1, "beta" 0) and "align" (derived), validated by the op.
// Throws UsageError naming `where` and the field.
Problem problem_from_json(const nlohmann::json& j, const std::string& where, const std::string& default_op = "gemm");

nlohmann::json plan_to_json(const LaunchPlan& p);
LaunchPlan plan_from_json(const nlohmann::json& j);

// The timing options of a worker request (every field, cutoff_ms included), and back: missing
// fields keep TimingOptions' defaults.
nlohmann::json timing_options_to_json(const TimingOptions& o);
TimingOptions timing_options_from_json(const nlohmann::json& j);

// The runtime's answer for p on arch, every field of Selection and its candidates: what
// `ktune query --json` prints and what the Python package's best_config() returns.
nlohmann::ordered_json selection_to_json(const Problem& p, const std::string& arch, const Selection& s);

// A suite file: {"name": ..., "op": "gemm" (optional), "problems": [{"m":..,"n":..,"k":..}, ...]};
// problems without a layout or dtype take the defaults given (an empty layout: the op's first).
// Throws UsageError on a missing or unreadable file, malformed JSON, or a bad problem (naming its
// index).
std::vector<Problem> load_suite(const std::string& path, const std::string& default_layout = "",
                                DType default_dtype = DType::f32);

} // namespace ktune
