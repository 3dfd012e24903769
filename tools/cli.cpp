// What the ktune program's subcommands share: the storage-dtype rule, atomic file writes, loading a
// family (with a restriction). The options naming a problem: tools/problem_options.h.
#include "tools/cli.h"

#include "ktune/kernel_spec.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ktune/error.h"

namespace ktune::cli {

const char* const kTf32x3Help =
    "Also use the shipped 3xTF32 table (gemm_tf32x3, gemm_wgmma_tf32x3: FP32 on TF32 tensor cores, FP32-accurate on finite inputs; "
    "not bit-identical to FFMA; inf inputs give NaN)";

Family load_family(const std::string& name, const std::string& restrict_file) {
  Family f = find_family(name);
  if (!restrict_file.empty()) f = f.restricted(SpaceRestriction::from_json_file(restrict_file));
  return f;
}

// tf32 names a compute mode, not a storage type: FP32 problems opt in to the tensor cores with
// --tf32x3. Every other dtype is what A, B and C hold.
void require_storage_dtype(DType d) {
  if (d == DType::tf32) throw UsageError("dtype tf32 is not a storage type: tune f32 problems (with --tf32x3 for the tensor cores)");
}

void check_named_database(const std::string& db) {
  if (!db.empty() && !std::filesystem::is_regular_file(db))
    throw UsageError("--db: database " + db + (std::filesystem::exists(db) ? " is not a file" : " does not exist"));
}

void check_output_file(const std::string& out, const std::string& option) {
  if (out.empty()) throw UsageError(option + ": an output file is needed, got an empty name");
  const std::filesystem::path p(out);
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) throw UsageError(option + ": " + out + " is a folder, not a file");
  const auto dir = p.parent_path();
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec))
    throw UsageError(option + ": the folder of " + out + " does not exist");
}

// Writes beside the target and renames: a failed export never leaves half a file behind, nor the
// temporary one.
void write_atomically(const std::string& out, const std::string& text) {
  check_output_file(out, "output");
  const std::string tmp = out + ".tmp";
  std::error_code ec;
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    f.close();
    if (!f) {
      std::filesystem::remove(tmp, ec);
      throw Error("cannot write " + tmp);
    }
  }
  std::filesystem::rename(tmp, out, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(tmp, ec);
    throw Error("cannot rename " + tmp + " to " + out + ": " + why);
  }
}

CLI::Validator whole_number(int64_t lo, int64_t hi) {
  const std::string range =
      hi == INT64_MAX ? ">= " + std::to_string(lo) : "from " + std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(s.c_str(), &end, 10);
        if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])) || *end || errno == ERANGE || v < lo || v > hi)
          return "'" + s + "' is not a whole number " + range;
        return {};
      },
      "", "whole number " + range);
}

CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        errno = 0;
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])) || *end || errno == ERANGE ||
            !std::isfinite(v) || !(v > 0))
          return "'" + s + "' is not a finite number > 0";
        return {};
      },
      "", "positive number");
}

std::string command_line(int argc, char** argv) {
  std::string cmd = "ktune";
  for (int i = 1; i < argc; ++i) cmd += std::string(" ") + argv[i];
  return cmd;
}

// Keeps the entries of one dtype ("" keeps all); refuses an unknown name.
void keep_dtype(Table& t, const std::string& dtype) {
  if (dtype.empty()) return;
  const DType d = parse_dtype(dtype);
  std::erase_if(t.entries, [&](const TableEntry& e) { return e.problem.dtype != d; });
}

void add_kernel_option(CLI::App* sub, std::vector<std::string>& paths) {
  // One value a flag: the word after it may be the command's own argument (import FILE).
  sub->add_option("--kernel", paths, "A user kernel spec (JSON, docs/KERNEL_SPEC.md) to load; repeatable")
      ->check(CLI::ExistingFile)
      ->allow_extra_args(false);
}

std::vector<std::string> load_kernels(const std::vector<std::string>& paths) {
  std::vector<std::string> ops;
  for (const auto& p : paths) ops.push_back(load_kernel_spec(p));
  return ops;
}

} // namespace ktune::cli
