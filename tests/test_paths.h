// Where the test binary finds the ktune program: beside its own build tree (tests/ktune_tests ->
// ../ktune), found from /proc/self/exe so that a build folder copied elsewhere still works.
#pragma once
#include <filesystem>
#include <string>

namespace ktune::testing {

inline std::string ktune_binary() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return std::string(KTUNE_BINARY_DIR) + "/ktune";
  return (self.parent_path().parent_path() / "ktune").string();
}

} // namespace ktune::testing
