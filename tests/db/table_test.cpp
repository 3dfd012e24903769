// Tuning tables: format, export/import round trip, and refusals that leave the database alone.
#include "db/table.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "db/lending.h"
#include "db/store.h"
#include "ktune/config.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "test_paths.h"
#include "ktune/gemm_problem.h"

using namespace ktune;

namespace {

std::string tmp(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("ktune-table-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run(const std::string& args) {
  const int st = std::system((ktune::testing::ktune_binary() + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

const char* kGood = R"({"schema": "ktune.table/1", "device": {"name": "GPU X", "arch": "sm_90", "sm_count": 132},
 "entries": [
  {"op": "gemm", "dtype": "f32", "layout": "NN", "m": 64, "n": 64, "k": 64, "align": 16, "family": "gemm_smem",
   "config": {"TILE": 16}, "time_ms": 0.01, "tflops": 0.05, "cublas_ms": 0.02, "template_hash": "abc"},
  {"op": "gemm", "dtype": "f32", "layout": "TN", "m": 100, "n": 30, "k": 7, "align": 4, "family": "gemm_naive",
   "config": {"BX": 32, "BY": 4}, "time_ms": 0.5, "tflops": 0.001, "cublas_ms": null, "template_hash": "def"}]})";

// Configs of the shipped sm_90 table, valid for the shapes below on sm_90.
const char* kSimt = R"({"BM":128,"BN":256,"WM":64,"WN":64,"TM":4,"TN":4,"LN":8,"BK":16,"VEC":4,"AT":1,"PAD":0,)"
                    R"("PIPE":1,"SPLITK":4,"SWZ":1,"EVEN":1,"PACK":0})";
const char* kSkinny =
    R"({"MT":16,"NT":128,"VEC":4,"KG":4,"NC":1,"UNROLL":1,"KC":32,"LDH":0,"CL":0,"SPLITK":4,"ST":4,"MINB":3})";

TableEntry entry(const std::string& family, const std::string& config, const std::string& shape = "1024x1024x1024",
                 const std::string& arch = "sm_90") {
  TableEntry e;
  e.problem = GemmProblem::parse(shape);
  e.arch = arch;
  e.family = family;
  e.config_json = config;
  e.time_ms = 1;
  e.tflops = 1;
  e.template_hash = "abc";
  return e;
}

// base with some parameters' values changed (to nullopt: removed), in base's order.
std::string edited(const char* base, const std::vector<std::pair<std::string, std::optional<int>>>& changes) {
  const Config given = Config::from_json(base);
  Config out;
  for (const auto& [k, v] : given.items()) {
    const auto ch = std::find_if(changes.begin(), changes.end(), [&, &k = k](const auto& c) { return c.first == k; });
    if (ch == changes.end())
      out.set(k, v);
    else if (ch->second)
      out.set(k, *ch->second);
  }
  return out.to_json();
}

// invalid_reason's text, asserting it names the problem (an empty reason would pass any find).
std::string reason(const TableEntry& e) {
  const std::string why = invalid_reason(e);
  EXPECT_FALSE(why.empty()) << e.family << " " << e.config_json << " on " << e.problem.key() << " " << e.arch;
  return why;
}

std::string validation_message(const Table& t, const std::string& origin) {
  try {
    validate_table_entries(t, origin);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "accepted";
}

// parse_table's refusal of text ("accepted" when it parses).
std::string refusal(const std::string& text) {
  try {
    parse_table(text, "T");
  } catch (const UsageError& e) {
    return std::string(e.what());
  }
  return std::string("accepted");
}

} // namespace

TEST(Table, ParsesAndWritesTheDocumentedFormat) {
  const Table t = parse_table(kGood, "good");
  EXPECT_EQ(t.device_name, "GPU X");
  ASSERT_EQ(t.entries.size(), 2u);
  EXPECT_EQ(t.entries[1].problem.key(), "gemm/f32/TN/100x30x7/a4");
  EXPECT_FALSE(t.entries[1].cublas_ms);
  const Table again = parse_table(table_to_json(t), "again");
  EXPECT_EQ(table_to_json(again), table_to_json(t));
}

TEST(Table, RefusesBadTablesWithAClearMessage) {
  const auto msg = refusal;
  std::string s = kGood;
  EXPECT_NE(msg("{oops").find("not valid JSON"), std::string::npos);
  EXPECT_NE(msg(std::string(kGood).replace(std::string(kGood).find("table/1"), 7, "table/9")).find("unknown schema 'ktune.table/9'"),
            std::string::npos);
  EXPECT_NE(msg(std::string(kGood).replace(std::string(kGood).find("\"m\": 64"), 7, "\"m\": 0")).find("entry 0: \"m\" must be an integer > 0"),
            std::string::npos);
  EXPECT_NE(msg(std::string(kGood).replace(std::string(kGood).find("\"time_ms\": 0.5"), 14, "\"time_ms\": -1")).find("entry 1"),
            std::string::npos);
  EXPECT_NE(msg(std::string(kGood).replace(std::string(kGood).find("\"family\": \"gemm_smem\","), 22, "")).find("missing field \"family\""),
            std::string::npos);
  EXPECT_NE(msg(R"({"schema": "ktune.table/1"})").find("missing field \"device\""), std::string::npos);
  // Alignment class 2 exists for 2-byte elements only: a bf16 entry may carry it, an f32 one not.
  const std::string f32_a2 = std::string(kGood).replace(std::string(kGood).find("\"align\": 4"), 10, "\"align\": 2");
  EXPECT_NE(msg(f32_a2).find("entry 1: \"align\" must be 4, 8 or 16"), std::string::npos) << msg(f32_a2);
  std::string bf16_a2 = f32_a2;
  bf16_a2.replace(bf16_a2.find("\"dtype\": \"f32\", \"layout\": \"TN\""), 14, "\"dtype\": \"bf16\"");
  const Table h = parse_table(bf16_a2, "bf16");
  EXPECT_EQ(h.entries[1].problem.key(), "gemm/bf16/TN/100x30x7/a2");
  EXPECT_EQ(table_to_json(parse_table(table_to_json(h), "again")), table_to_json(h));
  // Beyond int's range a value would wrap into the domain (4294967312 is 16 mod 2^32).
  EXPECT_NE(msg(std::string(kGood).replace(std::string(kGood).find("\"TILE\": 16"), 10, "\"TILE\": 4294967312"))
                .find("entry 0: config parameter 'TILE' is out of range"),
            std::string::npos);
  // The gate: optional, an integer 0-1000.
  const std::string with_gate = std::string(kGood).replace(std::string(kGood).find("\"template_hash\": \"def\""), 22,
                                                           "\"template_hash\": \"def\", \"gate\": GATE");
  auto gate = [&](const std::string& v) { return std::string(with_gate).replace(with_gate.find("GATE"), 4, v); };
  for (const char* bad : {"-1", "1.5", "\"2\"", "1001", "null"})
    EXPECT_NE(msg(gate(bad)).find("entry 1: \"gate\" must be an integer from 0 to 1000"), std::string::npos) << bad << ": " << msg(gate(bad));
  const Table g = parse_table(gate("2"), "gate");
  EXPECT_EQ(g.entries[0].gate, 0); // absent: older than any gate
  EXPECT_EQ(g.entries[1].gate, 2);
  EXPECT_EQ(table_to_json(parse_table(table_to_json(g), "again")), table_to_json(g));
}

// Every shipped table, every entry: valid for its family, and stamped with this ktune's gate.
// Raising kGateVersion makes this fail until the tables are verified again under the new gate
// (VerificationGpu.ShippedTablesPassTheGate on the GPU) and re-stamped.
TEST(TableValidation, TheShippedTablesAreValidAndPassedTheCurrentGate) {
  size_t n = 0;
  for (const auto& [t, name] : shipped_tables("sm_90", /*tf32x3=*/true)) {
    ASSERT_FALSE(t.entries.empty()) << name;
    for (const auto& e : t.entries) {
      EXPECT_EQ(invalid_reason(e), "") << name << " " << e.problem.key() << " " << e.family;
      EXPECT_EQ(e.gate, kGateVersion) << name << " " << e.problem.key() << " " << e.family;
      ++n;
    }
    EXPECT_NO_THROW(validate_table_entries(t, name));
  }
  EXPECT_GE(n, 90u);
}

TEST(TableValidation, AConfigRecordedBeforeItsFamilyGainedParametersIsValid) {
  // Each config lacks parameters its family declared later; upgrade() fills them in with the
  // values that reproduce the kernel it was measured with.
  const struct {
    const char *family, *config, *shape, *gained;
  } older[] = {
      {"gemm_simt",
       R"({"BM":128,"BN":256,"WM":64,"WN":64,"TM":4,"TN":4,"BK":16,"VEC":4,"AT":1,"PAD":0,"PIPE":1,"SPLITK":4,"SWZ":1,"EVEN":1})",
       "1024x1024x1024", "PACK"},
      {"gemm_skinny", R"({"MT":1,"NT":256,"VEC":4,"KG":8,"NC":1,"UNROLL":2,"KC":256,"LDH":1,"SPLITK":2})",
       "1x4096x4096", "MINB"},
      {"gemm_tf32x3", R"({"BM":64,"BN":64,"WM":32,"WN":32,"BK":32,"ST":4,"KU":0,"FOLD":4,"SPLITK":1,"SWZ":1,"PACK":0})",
       "1024x1024x1024", "CVT"},
  };
  for (const auto& o : older) {
    const Family f = find_family(o.family);
    ASSERT_TRUE(
        std::any_of(f.params().begin(), f.params().end(), [&](const Family::Param& p) { return p.name == o.gained; }));
    ASSERT_FALSE(Config::from_json(o.config).has(o.gained)) << o.config;
    EXPECT_EQ(invalid_reason(entry(o.family, o.config, o.shape)), "") << o.family;
  }
}

TEST(TableValidation, NamesEachKindOfInvalidEntry) {
  EXPECT_EQ(invalid_reason(entry("gemm_simt", kSimt)), ""); // the base every case below breaks
  EXPECT_EQ(invalid_reason(entry("gemm_skinny", kSkinny, "16x4096x4096")), "");

  std::string why = reason(entry("gemm_evil", kSimt));
  EXPECT_NE(why.find("unknown family 'gemm_evil'"), std::string::npos) << why;
  EXPECT_NE(why.find("gemm_simt"), std::string::npos) << why; // lists the known ones

  why = reason(entry("gemm_smem", R"({"TILE":16,"ZZ":1})"));
  EXPECT_NE(why.find("unknown parameter 'ZZ'"), std::string::npos) << why;
  why = reason(entry("gemm_smem", R"({"TILE":7})"));
  EXPECT_NE(why.find("value 7 is outside the domain of 'TILE'"), std::string::npos) << why;
  why = reason(entry("gemm_simt", edited(kSimt, {{"BM", -5}})));
  EXPECT_NE(why.find("value -5 is outside the domain of 'BM'"), std::string::npos) << why;
  why = reason(entry("gemm_smem", "{}"));
  EXPECT_NE(why.find("parameter 'TILE' is missing"), std::string::npos) << why;
  // One missing parameter that no upgrade supplies (BM was never added later).
  why = reason(entry("gemm_simt", edited(kSimt, {{"BM", std::nullopt}})));
  EXPECT_NE(why.find("parameter 'BM' is missing"), std::string::npos) << why;

  why = reason(entry("gemm_smem", "[16]"));
  EXPECT_NE(why.find("JSON object of integers"), std::string::npos) << why;
  why = reason(entry("gemm_smem", R"({"TILE":"16"})"));
  EXPECT_NE(why.find("'TILE' must be an integer"), std::string::npos) << why;
  why = reason(entry("gemm_smem", R"({"TILE":16.5})"));
  EXPECT_NE(why.find("'TILE' must be an integer"), std::string::npos) << why;
  why = reason(entry("gemm_smem", R"({"TILE":true})")); // a boolean reads as 1 (a spec's true / false parameters)
  EXPECT_NE(why.find("value 1 is outside the domain of 'TILE'"), std::string::npos) << why;
  why = reason(entry("gemm_smem", "{TILE"));
  EXPECT_NE(why.find("not valid JSON"), std::string::npos) << why;

  // A constraint on the problem: gemm_skinny serves M <= 64 only.
  why = reason(entry("gemm_skinny", kSkinny, "4096x4096x4096"));
  EXPECT_NE(why.find("breaks constraint 'M <= 64 (skinny problems only)' for gemm/f32/NN/4096x4096x4096/a16"),
            std::string::npos)
      << why;
  // A constraint on the device: 3 stages of 32 x (128 + 256) floats are 144 KiB, within
  // sm_90's 227 KiB per block, beyond sm_86's 99 KiB.
  const std::string deep = edited(kSimt, {{"BK", 32}, {"PIPE", 3}});
  EXPECT_EQ(invalid_reason(entry("gemm_simt", deep)), "");
  why = reason(entry("gemm_simt", deep, "1024x1024x1024", "sm_86"));
  EXPECT_NE(why.find("breaks constraint 'shared memory within the device's per-block limit'"), std::string::npos)
      << why;
  EXPECT_NE(why.find("nominal sm_86"), std::string::npos) << why;

  // Arches: unparsable, without published limits (nothing can be compiled for it either).
  why = reason(entry("gemm_simt", kSimt, "1024x1024x1024", "sm_xx"));
  EXPECT_NE(why.find("bad arch 'sm_xx'"), std::string::npos) << why;
  why = reason(entry("gemm_simt", kSimt, "1024x1024x1024", "sm_70"));
  EXPECT_NE(why.find("no nominal limits for arch 'sm_70'"), std::string::npos) << why;
  // A dtype the family has no kernel for.
  TableEntry half = entry("gemm_simt", kSimt);
  half.problem = GemmProblem::parse("1024x1024x1024", "NN", DType::f16);
  why = reason(half);
  EXPECT_NE(why.find("does not support dtype f16"), std::string::npos) << why;
}

// m = 2^40 is well-formed (a positive integer) but no GEMM the kernels or cuBLAS take: the entry
// is invalid, so an import refuses the table and a runtime reading it skips the entry. Its key
// would read back as nothing (Problem::parse_key), which is what once made every later read of
// the database fail.
TEST(TableValidation, ADimensionBeyondTheOpsLimitIsInvalid) {
  const std::string big = std::string(kGood).replace(std::string(kGood).find("\"m\": 64"), 7, "\"m\": 1099511627776");
  const Table t = parse_table(big, "big");
  ASSERT_EQ(t.entries[0].problem.key(), "gemm/f32/NN/1099511627776x64x64/a16");
  const std::string why = invalid_reason(t.entries[0]);
  EXPECT_NE(why.find("m = 1099511627776 is out of range (at most 2147483647 for gemm)"), std::string::npos) << why;
  EXPECT_EQ(invalid_reason(t.entries[1]), "");
  EXPECT_NE(validation_message(t, "big.json")
                .find("big.json entry 0 (gemm/f32/NN/1099511627776x64x64/a16, family gemm_smem)"),
            std::string::npos)
      << validation_message(t, "big.json");
  TunedIndex index(DeviceInfo::nominal("sm_90"));
  std::vector<std::string> skipped;
  EXPECT_EQ(index.add(t, "big", SourceTier::user, &skipped), 1u);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("out of range"), std::string::npos) << skipped[0];
  // The store refuses the key itself, in the same transaction: nothing is written.
  const std::string db = tmp("big.db");
  std::filesystem::remove(db);
  Store s(db);
  EXPECT_THROW(s.import_table(t), UsageError);
  EXPECT_EQ(s.count_trials(), 0);
  EXPECT_THROW(s.problem_id(t.entries[0].problem), UsageError);
}

// Numbers a table cannot mean (1e400 overflows a double), and JSON nested past any file ktune
// writes (300000 arrays once overflowed the stack of ktune import).
TEST(Table, RefusesInfiniteNumbersAndDeepNesting) {
  const auto msg = refusal;
  const std::string good = kGood;
  std::string inf = good;
  inf.replace(inf.find("\"time_ms\": 0.01"), 15, "\"time_ms\": 1e400");
  EXPECT_NE(msg(inf).find("number overflow"), std::string::npos) << msg(inf);
  for (size_t depth : {65, 70000, 300000}) {
    std::string deep = good;
    deep.replace(deep.find("{\"TILE\": 16}"), 12, std::string(depth, '[') + std::string(depth, ']'));
    EXPECT_NE(msg(deep).find("T: JSON nested deeper than 64 levels"), std::string::npos) << msg(deep).substr(0, 300);
  }
  std::string sixty_four = good; // the limit itself is fine for the reader (the entry is not)
  sixty_four.replace(sixty_four.find("{\"TILE\": 16}"), 12, std::string(61, '[') + std::string(61, ']'));
  EXPECT_NE(msg(sixty_four).find("\"config\" must be a non-empty object"), std::string::npos) << msg(sixty_four);
  // Brackets inside strings are text, not nesting.
  std::string quoted = good;
  quoted.replace(quoted.find("\"abc\""), 5, "\"" + std::string(1000, '[') + "\"");
  EXPECT_EQ(msg(quoted), "accepted");
}

// A trial log's numbers of the wrong type are usage errors naming the trial (not a JSON library
// exception), and its problems are checked as table entries are.
TEST(Table, TrialLogsRefuseWrongTypesAndOutOfRangeProblems) {
  const std::string log = R"({"schema": "ktune.trials/1", "device": {"name": "G", "arch": "sm_90", "sm_count": 132},
    "problems": [{"op": "gemm", "dtype": "f32", "layout": "NN", "m": M, "n": 64, "k": 64, "align": 16, "cublas_ms": null,
      "trials": [{"family": "gemm_smem", "config": {"TILE": 16}, "status": "ok", "time_ms": 0.1, "compile_s": C,
                  "bench_s": 0.2}]}]})";
  auto with = [&](const std::string& m, const std::string& c) {
    std::string s = log;
    s.replace(s.find("M"), 1, m);
    s.replace(s.find("C"), 1, c);
    return s;
  };
  EXPECT_EQ(parse_trial_log(with("64", "0.5"), "L").problems.size(), 1u);
  for (const char* c : {"\"fast\"", "null", "-1", "[0.5]"}) {
    try {
      parse_trial_log(with("64", c), "L");
      ADD_FAILURE() << c << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("L problem 0 trial 0: \"compile_s\""), std::string::npos) << e.what();
    }
  }
  try {
    parse_trial_log(with("1099511627776", "0.5"), "L");
    ADD_FAILURE() << "m = 2^40 accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
}

TEST(TableValidation, AgainstAGivenDeviceUsesItsLimitsNotTheEntrysArch) {
  // 144 KiB of shared memory (see above), and an arch the one-argument form refuses.
  const TableEntry e = entry("gemm_simt", edited(kSimt, {{"BK", 32}, {"PIPE", 3}}), "1024x1024x1024", "sm_xx");
  EXPECT_NE(reason(e).find("bad arch 'sm_xx'"), std::string::npos);
  EXPECT_EQ(invalid_reason(e, DeviceInfo::nominal("sm_90")), "");
  DeviceInfo small = DeviceInfo::nominal("sm_90");
  small.name = "GPU with 100 KiB";
  small.max_smem_per_block_optin = 100 * 1024;
  const std::string why = invalid_reason(e, small);
  EXPECT_NE(why.find("breaks constraint 'shared memory within the device's per-block limit'"), std::string::npos)
      << why;
  EXPECT_NE(why.find("on GPU with 100 KiB"), std::string::npos) << why;
  // Everything else is still checked.
  EXPECT_NE(invalid_reason(entry("gemm_evil", kSimt), small).find("unknown family 'gemm_evil'"), std::string::npos);
}

TEST(TableValidation, ValidateTableEntriesListsEveryInvalidEntry) {
  Table t;
  t.device_name = "GPU X";
  t.arch = "sm_90";
  t.sm_count = 132;
  t.entries = {entry("gemm_smem", R"({"TILE":7})", "64x64x64"), entry("gemm_smem", R"({"TILE":16})", "64x64x64"),
               entry("gemm_evil", R"({"TILE":16})", "128x64x64")};
  EXPECT_EQ(invalid_reason(t.entries[1]), "");
  std::string msg = validation_message(t, "colleague.json");
  EXPECT_NE(msg.find("colleague.json: 2 of 3 entries are invalid"), std::string::npos) << msg;
  EXPECT_NE(msg.find("entry 0 (gemm/f32/NN/64x64x64/a16, family gemm_smem): config {\"TILE\":7}: value 7 is outside "
                     "the domain of 'TILE'"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("entry 2 (gemm/f32/NN/128x64x64/a16, family gemm_evil): unknown family 'gemm_evil'"),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.find("entry 1"), std::string::npos) << msg;

  t.entries.erase(t.entries.begin());
  msg = validation_message(t, "colleague.json");
  EXPECT_NE(msg.find("colleague.json entry 1 (gemm/f32/NN/128x64x64/a16, family gemm_evil): unknown family"),
            std::string::npos)
      << msg;

  t.entries.pop_back();
  EXPECT_NO_THROW(validate_table_entries(t, "colleague.json"));
  // The documented example table is valid too.
  EXPECT_NO_THROW(validate_table_entries(parse_table(kGood, "good"), "good"));
}

TEST(Table, ExportThenImportGivesAnIdenticalTable) {
  const std::string a = tmp("a.db"), b = tmp("b.db");
  std::filesystem::remove(a), std::filesystem::remove(b);
  Table t = parse_table(kGood, "good");
  {
    Store s(a);
    s.import_table(t);
  }
  const std::string first = table_to_json(Store(a).export_table("sm_90"));
  {
    Store s(b);
    s.import_table(parse_table(first, "exported"));
  }
  EXPECT_EQ(table_to_json(Store(b).export_table("sm_90")), first);
  EXPECT_EQ(parse_table(first, "x").entries.size(), 2u);
  // The gate travels: a table entry of gate 2 comes back out of a database as gate 2.
  Table stamped = t;
  for (auto& e : stamped.entries) e.gate = kGateVersion;
  const std::string c = tmp("c.db");
  std::filesystem::remove(c);
  {
    Store s(c);
    s.import_table(stamped);
  }
  for (const auto& e : Store(c).export_table("sm_90").entries) EXPECT_EQ(e.gate, kGateVersion) << e.problem.key();
}

TEST(Table, ImportKeepsTheFasterEntryPerProblem) {
  const std::string db = tmp("merge.db");
  std::filesystem::remove(db);
  Store s(db);
  Table t = parse_table(kGood, "good");
  EXPECT_EQ(s.import_table(t), 2u);
  Table slower = t, faster = t;
  slower.device_name = faster.device_name = "GPU Y";
  slower.entries[0].time_ms = 1.0;
  slower.entries[0].config_json = R"({"TILE":8})";
  EXPECT_EQ(s.import_table(slower), 0u);
  EXPECT_EQ(s.best("sm_90", "gemm/f32/NN/64x64x64/a16")->config_json, R"({"TILE":16})");
  faster.entries[0].time_ms = 0.001;
  faster.entries[0].config_json = R"({"TILE":32})";
  EXPECT_EQ(s.import_table(faster), 1u);
  EXPECT_EQ(s.best("sm_90", "gemm/f32/NN/64x64x64/a16")->config_json, R"({"TILE":32})");
}

// An imported entry belongs to the table's pseudo-device; a re-tune on a live GPU of the same name
// times cuBLAS again. The export and the runtime's look-up must pair the entry with the faster of
// those readings, or an old, slow reading overstates the entry's lead (the runtime's margin reads it).
TEST(Table, TheEntryIsPairedWithTheFastestCublasReadingOfItsDeviceModel) {
  const std::string db = tmp("baseline.db");
  std::filesystem::remove(db);
  Store s(db);
  s.import_table(parse_table(kGood, "good")); // GPU X, cuBLAS 0.02 ms at 64x64x64
  const std::string key = "gemm/f32/NN/64x64x64/a16";
  ASSERT_EQ(*s.best("sm_90", key)->cublas_ms, 0.02);
  DeviceInfo live;
  live.uuid = "GPU-live", live.name = "GPU X", live.arch = "sm_90", live.sm_count = 132;
  DeviceInfo other = live;
  other.uuid = "GPU-other", other.name = "GPU Z"; // another model: its readings say nothing of GPU X
  const int64_t problem = s.problem_id(Problem::parse_key(key));
  s.record_baseline(s.device_id(other), problem, "cublas", Timing{0.001, 0.001, 0.001, 0.001, 10}, 1.0);
  EXPECT_EQ(*s.best("sm_90", key)->cublas_ms, 0.02);
  s.record_baseline(s.device_id(live), problem, "cublas", Timing{0.015, 0.014, 0.014, 0.016, 10}, 1.0);
  EXPECT_EQ(*s.best("sm_90", key)->cublas_ms, 0.015);
  const Table t = s.export_table("sm_90");
  ASSERT_EQ(t.entries.size(), 2u);
  for (const auto& e : t.entries) {
    if (e.problem.key() == key) EXPECT_EQ(*e.cublas_ms, 0.015);
    else EXPECT_FALSE(e.cublas_ms.has_value()) << e.problem.key(); // no reading anywhere stays none
  }
  // A slower live reading does not replace the faster one.
  s.record_baseline(s.device_id(live), problem, "cublas", Timing{0.03, 0.03, 0.03, 0.03, 10}, 1.0);
  EXPECT_EQ(*s.best("sm_90", key)->cublas_ms, 0.02);
}

TEST(Table, EveryBadImportLeavesTheDatabaseBytesUnchanged) {
  const std::string db = tmp("keep.db");
  std::filesystem::remove(db);
  {
    Store s(db);
    s.import_table(parse_table(kGood, "good"));
  } // closing checkpoints the WAL: the main file now holds everything
  const std::string before = slurp(db);
  ASSERT_FALSE(before.empty());
  const std::vector<std::string> bad = {
      "{not json",
      std::string(kGood).replace(std::string(kGood).find("table/1"), 7, "table/2"),
      std::string(kGood).replace(std::string(kGood).find("\"template_hash\": \"def\""), 22, "\"x\": 1"),
      std::string(kGood).replace(std::string(kGood).find("\"k\": 7"), 6, "\"k\": -7"),
      std::string(kGood).replace(std::string(kGood).find("\"n\": 64"), 7, "\"n\": 0"),
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    const std::string f = tmp("bad" + std::to_string(i) + ".json");
    std::ofstream(f) << bad[i];
    EXPECT_EQ(run("import " + f + " --db " + db), 2) << bad[i];
    EXPECT_EQ(slurp(db), before) << "import of bad table " << i << " changed the database";
    EXPECT_FALSE(std::filesystem::exists(db + "-wal") && std::filesystem::file_size(db + "-wal") > 0);
  }
  const std::string good = tmp("good.json");
  std::ofstream(good) << kGood;
  EXPECT_EQ(run("import " + good + " --db " + db), 0);
  const std::string out = tmp("out.json");
  EXPECT_EQ(run("export --db " + db + " --arch sm_90 -o " + out), 0);
  EXPECT_EQ(parse_table(slurp(out), out).entries.size(), 2u);
  EXPECT_EQ(run("export --db " + db + " --arch sm_80 -o " + out), 2); // nothing for that arch
}
