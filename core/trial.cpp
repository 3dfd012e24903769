#include "core/trial.h"

#include <nlohmann/json.hpp>

#include "ktune/error.h"

namespace ktune {

const char* to_string(TrialStatus s) {
  switch (s) {
    case TrialStatus::ok: return "ok";
    case TrialStatus::compile_error: return "compile_error";
    case TrialStatus::launch_error: return "launch_error";
    case TrialStatus::wrong_result: return "wrong_result";
    case TrialStatus::timeout: return "timeout";
    case TrialStatus::crash: return "crash";
  }
  return "?";
}

TrialStatus parse_trial_status(const std::string& s) {
  for (auto t : {TrialStatus::ok, TrialStatus::compile_error, TrialStatus::launch_error, TrialStatus::wrong_result,
                 TrialStatus::timeout, TrialStatus::crash})
    if (s == to_string(t)) return t;
  throw Error("unknown trial status '" + s + "'");
}

nlohmann::json timing_to_json(const Timing& t) {
  return {{"median_ms", t.median_ms}, {"min_ms", t.min_ms}, {"p20_ms", t.p20_ms}, {"p80_ms", t.p80_ms}, {"reps", t.reps}};
}

Timing timing_from_json(const nlohmann::json& j) {
  return Timing{j.at("median_ms").get<double>(), j.at("min_ms").get<double>(), j.at("p20_ms").get<double>(),
                j.at("p80_ms").get<double>(), j.at("reps").get<int>()};
}

} // namespace ktune
