// What users hand ktune, mutated: tables, suite files, trial logs and space restrictions, each
// generated from a seed (byte flips, truncation, deep nesting, huge / negative / float / string
// numbers, unknown and duplicated keys, wrong types, m = 2^40, empty strings, unicode). Every case
// is either refused with a UsageError that leaves the database as it was, or taken and then
// servable by every reader: export_table, export_trials, trial_rows, a Runtime's best_config for
// each of its problems. Nothing else may happen: no other exception, no crash, no case that runs
// for seconds. The imports run in-process (a few through the ktune program).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

#include "db/store.h"
#include "db/table.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "ktune/runtime.h"
#include "test_paths.h"
#include "tuner/json_io.h"

using namespace ktune;
using json = nlohmann::ordered_json;

namespace {

// The cases come from this seed; KTUNE_FUZZ_SEED=N explores others (a failure names its case).
uint64_t seed() {
  const char* s = std::getenv("KTUNE_FUZZ_SEED");
  return s && *s ? std::stoull(s) : 45;
}
constexpr double kSlowCaseS = 5; // one case this slow is a hang in the making

// Scratch files on tmpfs where there is one: thousands of small writes and SQLite commits.
std::string scratch(const std::string& name) {
  const std::filesystem::path base = std::filesystem::is_directory("/dev/shm") ? std::filesystem::path("/dev/shm")
                                                                               : std::filesystem::temp_directory_path();
  const auto dir = base / ("ktune-fuzz-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// A document cut to its first n elements of `array`: small bases keep every case cheap.
json base(const std::string& relative, const char* array, size_t n) {
  json j = json::parse(read_file(std::string(KTUNE_SOURCE_DIR) + "/" + relative));
  json& a = j[array];
  while (a.size() > n) a.erase(a.size() - 1);
  return j;
}

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}
  size_t below(size_t n) { return n ? size_t(rng_() % n) : 0; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[below(v.size())];
  }

  // One to three mutations of doc, then perhaps one on its text.
  std::string mutate(json doc) {
    const size_t n = 1 + below(3);
    std::string deep; // text to put where the placeholder string is (nesting nlohmann must not copy)
    for (size_t i = 0; i < n; ++i) structured(doc, deep);
    std::string text = below(2) ? doc.dump(1) : doc.dump();
    if (!deep.empty()) {
      const size_t at = text.find("\"@@DEEP@@\"");
      if (at != std::string::npos) text.replace(at, 10, deep);
    }
    if (below(4) == 0) textual(text);
    return text;
  }

 private:
  std::mt19937_64 rng_; // its sequence is fixed by the standard: the same cases everywhere

  static json hostile_number(size_t i) {
    static const std::vector<json> v = {json(int64_t(1) << 40),
                                        json(int64_t(1) << 31),
                                        json(INT32_MAX),
                                        json(-1),
                                        json(0),
                                        json(1.5),
                                        json(1e300),
                                        json(-1e300),
                                        json(uint64_t(1) << 63),
                                        json(UINT64_MAX),
                                        json(INT64_MIN),
                                        json(4096.0),
                                        json(1e-320),
                                        json(-0.0),
                                        json(99999999999),
                                        json(16),
                                        json(64),
                                        json(1)};
    return v[i % v.size()];
  }
  json hostile_value() {
    switch (below(4)) {
      case 0:
        return hostile_number(below(100));
      case 1: {
        static const std::vector<json> types = {json(nullptr), json(true),     json(""),         json("x"),
                                                json::array(), json::object(), json::array({1}), json({{"a", 1}})};
        return pick(types);
      }
      case 2:
        return hostile_string();
      default:
        return known_value();
    }
  }
  json hostile_string() {
    static const std::vector<std::string> s = {"",
                                               "gemm_simt",
                                               "\u00e9\u4e2d\u6587",
                                               "\U0001F600",
                                               std::string("a\0b", 3),
                                               "sm_90",
                                               "sm_75",
                                               "sm_90a",
                                               "NN",
                                               "bf16",
                                               "softmax",
                                               "../../x",
                                               "f64",
                                               "gemm/f32/NN",
                                               "TT",
                                               "layernorm",
                                               "ok",
                                               "crash",
                                               "\x7f"};
    if (below(20) == 0) { // (one draw per statement: the order of a call's arguments is the compiler's)
      const size_t n = 10000 + below(1000);
      return std::string(n, char('A' + below(26)));
    }
    return pick(s);
  }
  // A value one of the fields could legitimately hold, for the field chosen or another.
  json known_value() {
    static const std::vector<json> v = {json("gemm"),
                                        json("softmax"),
                                        json("rmsnorm"),
                                        json("layernorm"),
                                        json("conv"),
                                        json("f32"),
                                        json("tf32"),
                                        json("f16"),
                                        json("bf16"),
                                        json("NN"),
                                        json("NT"),
                                        json("TN"),
                                        json("TT"),
                                        json("gemm_simt"),
                                        json("gemm_skinny"),
                                        json("gemm_tc16"),
                                        json("gemm_smem"),
                                        json("gemm_naive"),
                                        json("gemm_wgmma"),
                                        json("softmax_warp"),
                                        json("rmsnorm_bulk"),
                                        json("sm_80"),
                                        json("sm_90"),
                                        json("sm_100"),
                                        json(2),
                                        json(4),
                                        json(8),
                                        json(16),
                                        json(32),
                                        json(3),
                                        json(128),
                                        json(4096),
                                        json(1000),
                                        json(1001),
                                        json(0.001)};
    return pick(v);
  }

  // Every value of doc, by pointer, and every object.
  static void walk(json& j, std::vector<json*>& all, std::vector<json*>& objects, std::vector<json*>& arrays) {
    all.push_back(&j);
    if (j.is_object()) {
      objects.push_back(&j);
      for (auto& [k, v] : j.items()) walk(v, all, objects, arrays);
    } else if (j.is_array()) {
      arrays.push_back(&j);
      for (auto& v : j) walk(v, all, objects, arrays);
    }
  }

  void structured(json& doc, std::string& deep) {
    std::vector<json*> all, objects, arrays;
    walk(doc, all, objects, arrays);
    json& node = *pick(all);
    const size_t kind = below(9);
    if ((objects.empty() && kind >= 1 && kind <= 4) || (arrays.empty() && kind == 5)) { // an earlier mutation left none
      node = hostile_value();
      return;
    }
    switch (kind) {
      case 0:
        node = hostile_value();
        break;
      case 1: { // a field of an object set to something hostile or plausible
        json& o = *pick(objects);
        if (o.empty()) break;
        auto it = o.begin();
        std::advance(it, below(o.size()));
        it.value() = below(2) ? hostile_value() : known_value();
        break;
      }
      case 2: { // a field removed
        json& o = *pick(objects);
        if (o.empty()) break;
        auto it = o.begin();
        std::advance(it, below(o.size()));
        const std::string key = it.key(); // erase must not read the key it destroys
        o.erase(key);
        break;
      }
      case 3: { // an unknown key
        static const std::vector<std::string> keys = {"zzz", "M", "m ", "\u00e9", "", "entries", "schema", "key", "ld"};
        pick(objects)->operator[](pick(keys)) = hostile_value();
        break;
      }
      case 4: { // a dimension of the op, huge (m = 2^40) or not
        static const std::vector<std::string> dims = {"m",   "n",   "k",   "rows",  "cols",
                                                      "lda", "ldb", "ldc", "align", "sm_count"};
        json& o = *pick(objects);
        o[pick(dims)] = below(3) ? json(int64_t(1) << 40) : hostile_number(below(100));
        break;
      }
      case 5: { // an element repeated (duplicate entries or problems)
        json& a = *pick(arrays);
        if (!a.empty()) a.push_back(json(a[below(a.size())]));
        break;
      }
      case 6: { // a config parameter at a hostile value
        for (json* o : objects)
          if (o->contains("config") && (*o)["config"].is_object() && !(*o)["config"].empty() && below(2)) {
            json& c = (*o)["config"];
            auto it = c.begin();
            std::advance(it, below(c.size()));
            it.value() = below(2) ? hostile_number(below(100)) : known_value();
            break;
          }
        break;
      }
      case 7: { // deep nesting, at and past the limit, and deep enough to overflow a recursive dump
        static const std::vector<size_t> depths = {60, 64, 65, 1000, 70000, 300000, 1000000};
        const size_t d = pick(depths);
        deep = std::string(d, '[') + (below(2) ? "1" : "") + std::string(d, ']');
        if (below(3) == 0) deep = std::string(d, '['); // unterminated: the depth check or the parser says why
        node = "@@DEEP@@";
        break;
      }
      default:
        node = hostile_string();
        break;
    }
  }

  void textual(std::string& text) {
    if (text.empty()) return;
    switch (below(5)) {
      case 0: // byte flips
        for (size_t i = 0, n = 1 + below(4); i < n; ++i) text[below(text.size())] = char(rng_() & 0xff);
        break;
      case 1:
        text.resize(below(text.size()));
        break;  // truncated
      case 2: { // a key duplicated in its object, first with another value
        const size_t q = text.find("\":", below(text.size()));
        if (q == std::string::npos) break;
        const size_t open = text.rfind('"', q - 1);
        if (open == std::string::npos) break;
        const std::string key = text.substr(open, q + 2 - open);
        text.insert(open, key + hostile_number(below(100)).dump() + ",");
        break;
      }
      case 3: { // a number spelled as no JSON number is, or as a very long one
        static const std::vector<std::string> spell = {"99999999999999999999999999",
                                                       "1e99999",
                                                       "-0",
                                                       "00012",
                                                       "1.",
                                                       ".5",
                                                       "0x10",
                                                       "NaN",
                                                       "Infinity",
                                                       "-",
                                                       "1e-99999",
                                                       "18446744073709551616"};
        const size_t at = text.find_first_of("0123456789", below(text.size()));
        if (at == std::string::npos) break;
        const size_t end = text.find_first_not_of("0123456789.eE+-", at);
        text.replace(at, (end == std::string::npos ? text.size() : end) - at, pick(spell));
        break;
      }
      default: {
        const size_t at = below(text.size());
        text.insert(at, pick(std::vector<std::string>{"\xff", "\xc3", "\\u0000", "\\ud800", ","}));
      }
    }
  }
};

// The database's files as they stand: any write, committed or rolled back into the WAL, moves
// a size or a modification time.
struct Fingerprint {
  std::vector<std::pair<uintmax_t, int64_t>> files;
  int64_t trials = 0;
  bool operator==(const Fingerprint&) const = default;
};

Fingerprint fingerprint(const std::string& db, const Store& s) {
  Fingerprint f;
  for (const char* ext : {"", "-wal"}) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(db + ext, ec);
    const auto time = std::filesystem::last_write_time(db + ext, ec);
    f.files.emplace_back(ec ? 0 : size, ec ? 0 : int64_t(time.time_since_epoch().count()));
  }
  f.trials = s.count_trials();
  return f;
}

// A runtime call of p: p's leading dimensions are at their minimum, which a key's class may exceed
// (tuned with padded ones); pad them to it as the caller would have.
Problem as_called(Problem p) {
  const int eb = element_bytes(p.dtype);
  if (p.align > eb)
    for (auto& ld : p.ld) ld = (ld + p.align / eb - 1) / (p.align / eb) * (p.align / eb);
  return p;
}

struct Counts {
  size_t rejected = 0, accepted = 0;
};

// Runs one case, failing the test with the case's text where it misbehaves.
template <class F>
void timed_case(const std::string& what, size_t i, const std::string& text, F&& body) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    body();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << " case " << i << " threw " << typeid(e).name() << ": " << e.what() << "\n"
                  << text.substr(0, 2000);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, kSlowCaseS) << what << " case " << i << " took " << s << " s\n" << text.substr(0, 2000);
}

class Fuzz : public ::testing::Test {
 protected:
  void SetUp() override { std::filesystem::remove_all(std::filesystem::path(scratch("x")).parent_path()); }
  void TearDown() override { std::filesystem::remove_all(std::filesystem::path(scratch("x")).parent_path()); }
};

// Tables: refused cleanly, or imported and then read back whole by every reader.
TEST_F(Fuzz, MutatedTablesAreRefusedCleanlyOrServedWhole) {
  const std::vector<json> bases = {base("configs/tables/sm_90.json", "entries", 4),
                                   base("configs/tables/sm_90-rows.json", "entries", 4),
                                   base("configs/tables/sm_90-half.json", "entries", 3)};
  constexpr size_t kCases = 12000, kPerDatabase = 200;
  Mutator mut(seed());
  Counts n;
  const auto t0 = std::chrono::steady_clock::now();
  std::string db;
  std::optional<Store> store;
  size_t accepted_here = kPerDatabase;
  ::testing::internal::CaptureStderr(); // runtimes name the older-gate entries they leave out
  for (size_t i = 0; i < kCases; ++i) {
    if (accepted_here >= kPerDatabase) { // a fresh database now and then keeps every read small
      store.reset();
      db = scratch("fuzz-" + std::to_string(i) + ".db");
      store.emplace(db);
      store->set_durable(false);
      accepted_here = 0;
    }
    const std::string text = mut.mutate(bases[i % bases.size()]);
    timed_case("table", i, text, [&] {
      const Fingerprint before = fingerprint(db, *store);
      Table t;
      try {
        t = parse_table(text, "fuzz");
        if (t.entries.empty()) throw UsageError("no entries");
        validate_table_entries(t, "fuzz");
      } catch (const UsageError&) {
        // A table whose key no reader could parse back is refused by the store itself too, and
        // its rolled-back transaction leaves no trace.
        bool unkeyable = false;
        for (const auto& e : t.entries) {
          try {
            validate_key(e.problem);
          } catch (const UsageError&) {
            unkeyable = true;
          }
        }
        if (unkeyable) {
          EXPECT_THROW(store->import_table(t), UsageError) << text.substr(0, 2000);
        }
        EXPECT_TRUE(fingerprint(db, *store) == before) << "a refused table changed the database\n"
                                                       << text.substr(0, 2000);
        ++n.rejected;
        return;
      }
      store->import_table(t);
      ++n.accepted, ++accepted_here;
      const Store ro(db, /*read_only=*/true);
      const Table out = ro.export_table(t.arch);
      std::set<std::string> exported;
      for (const auto& e : out.entries) exported.insert(e.problem.key());
      for (const auto& e : t.entries) EXPECT_TRUE(exported.count(e.problem.key())) << e.problem.key() << "\n" << text;
      // What export writes, import reads.
      const Table again = parse_table(table_to_json(out), "exported");
      validate_table_entries(again, "exported");
      EXPECT_EQ(ro.trial_rows().size(), size_t(ro.count_trials())) << "a stored row is unreadable\n" << text;
      parse_trial_log(trial_log_to_json(ro.export_trials(t.arch)), "exported trials");
      RuntimeOptions o;
      o.arch = "sm_90";
      o.db_path = db;
      o.shipped_tables = false;
      o.cubin_cache = "";
      const Runtime rt(o);
      for (const auto& e : t.entries) rt.best_config(as_called(e.problem));
    });
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("unreadable"), std::string::npos) << "a reader skipped a stored row:\n" << err.substr(0, 4000);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ fuzz     ] seed %llu, %zu tables: %zu refused, %zu imported and served (%.1f s)\n",
              static_cast<unsigned long long>(seed()), kCases, n.rejected, n.accepted, s);
  EXPECT_GT(n.accepted, kCases / 20) << "the mutations leave too little valid to serve";
  EXPECT_GT(n.rejected, kCases / 2);
}

// Suite files: refused cleanly, or every problem in them is one a runtime and the store serve.
TEST_F(Fuzz, MutatedSuitesAreRefusedCleanlyOrServed) {
  const std::vector<json> bases = {base("configs/suites/quick.json", "problems", 4),
                                   base("configs/suites/rows.json", "problems", 4),
                                   base("configs/suites/unaligned.json", "problems", 4)};
  constexpr size_t kCases = 6000;
  Mutator mut(seed() + 1);
  Counts n;
  const auto t0 = std::chrono::steady_clock::now();
  RuntimeOptions o;
  o.arch = "sm_90";
  o.shipped_tables = false;
  o.cubin_cache = "";
  const Runtime rt(o);
  const std::string db = scratch("suites.db");
  Store store(db);
  store.set_durable(false);
  const std::string path = scratch("suite.json");
  for (size_t i = 0; i < kCases; ++i) {
    const std::string text = mut.mutate(bases[i % bases.size()]);
    write_file(path, text);
    timed_case("suite", i, text, [&] {
      std::vector<Problem> problems;
      try {
        problems = load_suite(path, "NN", DType::f32);
      } catch (const UsageError&) {
        ++n.rejected;
        return;
      }
      ++n.accepted;
      for (const auto& p : problems) {
        EXPECT_EQ(Problem::parse_key(p.key()).key(), p.key());
        store.problem_id(p);
        rt.best_config(p);
      }
    });
  }
  EXPECT_EQ(store.trial_rows().size(), 0u);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ fuzz     ] %zu suites: %zu refused, %zu served (%.1f s)\n", kCases, n.rejected, n.accepted, s);
  EXPECT_GT(n.accepted, kCases / 20);
  EXPECT_GT(n.rejected, kCases / 4);
}

// Trial logs (ktune simulate) and space restrictions (--restrict): refused cleanly, or read and
// written back as they were read.
TEST_F(Fuzz, MutatedTrialLogsAndRestrictionsAreRefusedCleanlyOrRead) {
  const json log = base("tests/data/h100-gemm_simt-exhaustive-replay.json", "problems", 2);
  json trimmed = log;
  for (auto& p : trimmed["problems"])
    while (p["trials"].size() > 3) p["trials"].erase(p["trials"].size() - 1);
  const json restriction = json::parse(R"({"family": "gemm_smem", "domains": {"TILE": [16, 32]}})");
  Mutator mut(seed() + 2);
  Counts logs, restrictions;
  for (size_t i = 0; i < 1000; ++i) {
    const std::string text = mut.mutate(trimmed);
    timed_case("trial log", i, text, [&] {
      try {
        const TrialLog l = parse_trial_log(text, "fuzz");
        EXPECT_EQ(trial_log_to_json(parse_trial_log(trial_log_to_json(l), "again")), trial_log_to_json(l));
        ++logs.accepted;
      } catch (const UsageError&) {
        ++logs.rejected;
      }
    });
  }
  for (size_t i = 0; i < 1000; ++i) {
    const std::string text = mut.mutate(restriction);
    timed_case("restriction", i, text, [&] {
      try {
        const SpaceRestriction r = SpaceRestriction::from_json(text, "fuzz");
        find_family(r.family.empty() ? "gemm_smem" : r.family).restricted(r);
        ++restrictions.accepted;
      } catch (const UsageError&) {
        ++restrictions.rejected;
      }
    });
  }
  std::printf("[ fuzz     ] 1000 trial logs: %zu refused, %zu read; 1000 restrictions: %zu refused, %zu read\n",
              logs.rejected, logs.accepted, restrictions.rejected, restrictions.accepted);
}

// A few of the mutated tables through the ktune program itself: exit 2 and the database's bytes
// as they were, or exit 0 and query, export and report still answer.
TEST_F(Fuzz, TheProgramRefusesOrServesMutatedTables) {
  const json b = base("configs/tables/sm_90.json", "entries", 2);
  Mutator mut(seed() + 3);
  const std::string db = scratch("cli.db");
  const std::string seed_table = scratch("seed.json");
  write_file(seed_table, b.dump());
  ASSERT_EQ(ktune::testing::run_ktune("import " + seed_table + " --db " + db).status, 0);
  std::vector<std::string> texts;
  for (size_t i = 0; i < 12; ++i) texts.push_back(mut.mutate(b));
  texts.push_back(b.dump());                   // the base itself
  for (const size_t depth : {70000, 300000}) { // 300000 arrays in a config parameter once overflowed the stack
    json deep = b;
    deep["entries"][0]["config"]["BM"] = "@@DEEP@@";
    std::string t = deep.dump();
    t.replace(t.find("\"@@DEEP@@\""), 10, std::string(depth, '[') + std::string(depth, ']'));
    texts.push_back(t);
  }
  size_t refused = 0, taken = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string f = scratch("cli-" + std::to_string(i) + ".json");
    write_file(f, texts[i]);
    const std::string before = read_file(db);
    const auto r = ktune::testing::run_ktune("import " + f + " --db " + db);
    ASSERT_TRUE(r.status == 0 || r.status == 2) << "exit " << r.status << ": " << r.out << "\n"
                                                << texts[i].substr(0, 2000);
    if (r.status == 2) {
      ++refused;
      EXPECT_EQ(read_file(db), before) << texts[i].substr(0, 2000);
      continue;
    }
    ++taken;
    const auto q = ktune::testing::run_ktune("query --arch sm_90 --problem 64x64x64 --db " + db);
    EXPECT_EQ(q.status, 0) << q.out;
    const auto x = ktune::testing::run_ktune("export --arch sm_90 --db " + db + " -o " + scratch("out.json"));
    EXPECT_EQ(x.status, 0) << x.out;
    const auto rp = ktune::testing::run_ktune("report --arch sm_90 --db " + db + " -o " + scratch("report"));
    EXPECT_EQ(rp.status, 0) << rp.out;
    EXPECT_EQ((q.out + x.out + rp.out).find("unreadable"), std::string::npos) << q.out << x.out << rp.out;
  }
  EXPECT_GT(refused, 0u);
  EXPECT_GT(taken, 0u);
}

} // namespace
