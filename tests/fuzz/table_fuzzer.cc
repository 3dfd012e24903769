// libFuzzer harness for what ktune reads from users' files (configure with clang++ and
// -DKTUNE_LIBFUZZER=ON; tests/CMakeLists.txt): the input is read as a table, a trial log and a
// space restriction. Each must either refuse it with a UsageError or accept something that writes
// back and reads again, with keys that parse back; any other exception, crash or hang is a finding.
// The gtest Fuzz.* (tests/db/fuzz_test.cpp) runs seeded mutations of the same readers on every
// build; this explores further. Corpus: configs/tables/*.json, tests/data/*.json.
#include <cstddef>
#include <cstdint>
#include <string>

#include "db/table.h"
#include "ktune/error.h"
#include "ktune/family.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ktune;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    Table t = parse_table(text, "fuzz");
    validate_table_entries(t, "fuzz");
    for (const auto& e : t.entries) Problem::parse_key(e.problem.key());
    validate_table_entries(parse_table(table_to_json(t), "again"), "again");
  } catch (const UsageError&) {
  }
  try {
    const TrialLog log = parse_trial_log(text, "fuzz");
    parse_trial_log(trial_log_to_json(log), "again");
  } catch (const UsageError&) {
  }
  try {
    const SpaceRestriction r = SpaceRestriction::from_json(text, "fuzz");
    find_family(r.family.empty() ? "gemm_smem" : r.family).restricted(r);
  } catch (const UsageError&) {
  }
  return 0;
}
