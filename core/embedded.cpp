#include "core/embedded.h"

#include <string>

#include "ktune/error.h"

namespace ktune {

std::string_view embedded_file(std::string_view path) {
  for (const auto& f : embedded_files())
    if (f.path == path) return f.text;
  throw Error("kernel template '" + std::string(path) + "' is not embedded in this build of ktune");
}

} // namespace ktune
