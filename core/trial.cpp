#include "core/trial.h"

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

} // namespace ktune
