// Tuning tables: the versioned JSON form of the best configs (docs/TABLE_FORMAT.md), for export,
// import, and the tables shipped with ktune (configs/tables/<arch>.json, embedded).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ktune/problem.h"

namespace ktune {

constexpr const char* kTableSchema = "ktune.table/1";

struct TableEntry {
  GemmProblem problem; // m, n, k, dtype, layout, align (leading dimensions at their minimum)
  std::string arch;    // of the table's device
  std::string family, config_json, template_hash;
  double time_ms = 0, tflops = 0;
  std::optional<double> cublas_ms;
};

struct Table {
  std::string device_name, arch;
  int sm_count = 0;
  std::vector<TableEntry> entries;
};

// Parses and validates a whole table; throws UsageError naming `origin`, the entry index and the
// field on malformed JSON, an unknown schema, missing fields, or sizes/times <= 0.
Table parse_table(const std::string& text, const std::string& origin);
Table read_table_file(const std::string& path);
std::string table_to_json(const Table& t); // pretty-printed, entries in a stable order

} // namespace ktune
