// The vocabulary of one evaluation, shared by the tuner (which produces it), the store (which
// records it) and the tools (which report it): what happened to a trial and how long it took.
#pragma once
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace ktune {

// Outcome of one evaluation. Only `ok` trials can become the best.
enum class TrialStatus { ok, compile_error, launch_error, wrong_result, timeout, crash };
const char* to_string(TrialStatus s);
TrialStatus parse_trial_status(const std::string& s); // throws Error

// The verification gate a trial passed, recorded with it so that a config checked by an older,
// weaker gate is never served as if checked by this one. 2: the rule of docs/TEMPLATES.md
// ("Verification"): every element against FP64 with the per-element and norm bounds, inputs and
// guards checked, once as served (alpha -1.25, beta 0.5 with C preloaded, least-aligned pointers;
// row ops at 8x their scalars) and once as timed. 0: anything recorded before the gate had a
// number (alpha 1, beta 0, aligned buffers, one norm bound). Raise it whenever the gate gets
// stricter; the runtime then stops serving entries below it until `ktune tune` re-verifies them.
constexpr int kGateVersion = 2;

struct Timing {
  double median_ms = 0, min_ms = 0, p20_ms = 0, p80_ms = 0;
  int reps = 0;
};
// A Timing's five fields as JSON ({"median_ms", "min_ms", "p20_ms", "p80_ms", "reps"}): the form
// the worker protocol, trial logs and trial sets carry. timing_from_json reads it back unchecked
// (throws nlohmann's errors on a missing field); files are validated by db/table.cpp's reader.
nlohmann::json timing_to_json(const Timing& t);
Timing timing_from_json(const nlohmann::json& j);

// One evaluation as the store records it and a trial set carries it between databases.
struct TrialRecord {
  std::string family, config_json, config_hash, template_hash;
  TrialStatus status = TrialStatus::ok;
  std::string error;
  Timing timing;             // zeros unless status == ok
  double tflops = 0;
  double rel_error = -1;     // -1: not verified
  int gate = kGateVersion;   // the verification gate it passed (kGateVersion); 0 for older records
  int registers = 0, smem_bytes = 0, spill_bytes = 0;
  double compile_s = 0, bench_s = 0;
};

} // namespace ktune
