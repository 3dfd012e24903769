#include "core/embedded.h"

#include <string>

#include "ktune/error.h"

namespace ktune {

const std::vector<std::pair<std::string, std::string_view>>& embedded_headers() {
  static const std::vector<std::pair<std::string, std::string_view>> h = [] {
    std::vector<std::pair<std::string, std::string_view>> v;
    for (const auto& f : embedded_files()) {
      const std::string_view p = f.path;
      const bool header = (p.size() > 2 && p.substr(p.size() - 2) == ".h") || (p.size() > 4 && p.substr(p.size() - 4) == ".cuh");
      if (header) v.emplace_back(std::string(p.substr(p.rfind('/') + 1)), f.text);
    }
    return v;
  }();
  return h;
}

std::string_view embedded_file(std::string_view path) {
  for (const auto& f : embedded_files())
    if (f.path == path) return f.text;
  throw Error("kernel template '" + std::string(path) + "' is not embedded in this build of ktune");
}

} // namespace ktune
