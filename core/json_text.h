// JSON text from outside the process (tables, trial logs, suites, restrictions, ladders, configs
// read back from a database, the worker's lines): bounded before nlohmann parses it. The parser
// itself is iterative, but copying, comparing and dumping a value recurse once per level: 300000
// arrays in a table's config parameter overflowed ktune import's stack where the message quoting
// the value dumped it. No file ktune reads nests deeper than a handful of levels.
#pragma once
#include <string>
#include <string_view>

namespace ktune {

constexpr int kMaxJsonDepth = 64;

// Throws UsageError "<origin>: JSON nested deeper than 64 levels (at byte N)" when arrays and
// objects nest beyond kMaxJsonDepth; brackets inside strings do not count. One pass, no allocation:
// it does not validate anything else (the parser does).
void check_json_depth(std::string_view text, const std::string& origin);

} // namespace ktune
