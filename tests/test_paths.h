// Where the test binary finds the ktune program: beside its own build tree (tests/ktune_tests ->
// ../ktune), found from /proc/self/exe so that a build folder copied elsewhere still works. And
// how tests run it and read what it wrote.
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ktune::testing {

inline std::string ktune_binary() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return std::string(KTUNE_BINARY_DIR) + "/ktune";
  return (self.parent_path().parent_path() / "ktune").string();
}

struct CliRun {
  int status;
  std::string out; // stdout and stderr together, or what run_ktune's redirect leaves
};

// A shell command's exit status and what it printed on stdout.
inline CliRun run_command(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

// The ktune program as a user runs it. The output read is stdout and stderr together unless
// `redirect` says otherwise.
inline CliRun run_ktune(const std::string& args, const char* redirect = " 2>&1") {
  return run_command(ktune_binary() + " " + args + redirect);
}

inline std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace ktune::testing
