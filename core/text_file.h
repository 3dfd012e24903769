// Reading a whole user-named file (suites, restrictions, tables, trial logs): one place for the
// "cannot read" messages, which name what the file was meant to be.
#pragma once
#include <fstream>
#include <sstream>
#include <string>

#include "ktune/error.h"

namespace ktune {

// what: "suite file", "table file", ... Throws UsageError when the file cannot be opened or read.
inline std::string read_text_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read " + what + " '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw UsageError("error reading " + what + " '" + path + "'");
  return ss.str();
}

} // namespace ktune
