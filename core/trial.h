// The vocabulary of one evaluation, shared by the tuner (which produces it), the store (which
// records it) and the tools (which report it): what happened to a trial and how long it took.
#pragma once
#include <string>

namespace ktune {

// Outcome of one evaluation. Only `ok` trials can become the best.
enum class TrialStatus { ok, compile_error, launch_error, wrong_result, timeout, crash };
const char* to_string(TrialStatus s);
TrialStatus parse_trial_status(const std::string& s); // throws Error

struct Timing {
  double median_ms = 0, min_ms = 0, p20_ms = 0, p80_ms = 0;
  int reps = 0;
};

} // namespace ktune
