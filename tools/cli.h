// The ktune program's subcommands, one file each (tools/cmd_<name>.cpp; report: tools/report.cpp).
// Each add_<name> adds its subcommand, flags and action to the app; main (tools/ktune.cpp) runs the
// action of the one parsed. Exit status of an action: 0 success, 1 a run-time failure; bad usage
// throws UsageError (main turns it into status 2).
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "db/table.h"
#include "ktune/family.h"
#include "ktune/problem.h"

namespace ktune::cli {

using namespace ktune;

struct Command {
  CLI::App* sub = nullptr;
  std::function<int()> run;
};

Command add_space(CLI::App& app);
Command add_devices(CLI::App& app);
Command add_compile(CLI::App& app);
// argv: the words after the program (tune --ray hands them to the Python driver).
Command add_tune(CLI::App& app, std::vector<std::string> argv);
Command add_query(CLI::App& app);
Command add_export(CLI::App& app);
Command add_import(CLI::App& app);
Command add_simulate(CLI::App& app);
Command add_cache(CLI::App& app);
// command_line: the invocation, recorded in the --json file.
Command add_bench(CLI::App& app, const std::string& command_line);

// Shared by the subcommands (tools/cli.cpp).
extern const char* const kTf32x3Help;
Family load_family(const std::string& name, const std::string& restrict_file);
void require_storage_dtype(DType d);
// Throws UsageError naming `option` unless out can be written as a file: not empty, not a folder,
// in a folder that exists. Commands call it before any work, so that bad usage costs nothing.
void check_output_file(const std::string& out, const std::string& option);
// A --db the user named must be an existing file: a runtime takes a missing database for one not
// written yet (the default's first use), so a typo would otherwise read as "nothing tuned".
void check_named_database(const std::string& db);
// Writes beside out and renames; on any failure nothing is left behind (neither out nor the
// temporary file). Runs check_output_file(out, "output") first.
void write_atomically(const std::string& out, const std::string& text);
// Checks for numeric options, applied to the text before CLI11 converts it: "-1" into a size_t
// option would wrap to 2^64 - 1, and CLI11's own range checks print their bounds as 310-digit
// doubles. whole_number: a base-10 integer in [lo, hi]; positive_number: a finite number > 0.
CLI::Validator whole_number(int64_t lo, int64_t hi = INT64_MAX);
CLI::Validator positive_number();
std::string command_line(int argc, char** argv);
// --kernel PATH (repeatable): a user kernel spec (docs/KERNEL_SPEC.md) whose op the command also
// knows; load_kernels registers them and returns their ops' names, in order.
void add_kernel_option(CLI::App* sub, std::vector<std::string>& paths);
std::vector<std::string> load_kernels(const std::vector<std::string>& paths);
void keep_dtype(Table& t, const std::string& dtype);

} // namespace ktune::cli
