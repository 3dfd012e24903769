// Tuning tables: format, export/import round trip, and refusals that leave the database alone.
#include "db/table.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "db/store.h"
#include "ktune/error.h"
#include "test_paths.h"

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
  auto msg = [](const std::string& text) {
    try {
      parse_table(text, "T");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
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
