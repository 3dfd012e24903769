// ktune report: an HTML page of a database's recorded trials, with its figures as SVG files.
// The page is self-contained (inline CSS and SVG; no scripts, fonts or network at view time).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace ktune {

struct ReportOptions {
  std::string db;                    // empty: default_db_path()
  std::string out_dir;               // DIR: DIR/index.html and DIR/*.svg
  std::string arch;                  // empty: the one arch the database holds trials for
  std::optional<double> copy_tb_s;   // memory roof; else assumed (the store records none)
  std::optional<double> peak_tflops; // compute roof; else assumed per dtype and arch
  std::string note;                  // a line under the title (where the data comes from)
  std::vector<std::string> kernels;  // user kernel specs whose ops the database holds (--kernel)
  std::string command;               // the command line, shown on the page
};

// Registers `report` on app, filling o when parsed.
CLI::App* add_report_subcommand(CLI::App& app, ReportOptions& o);

// Reads the database (read-only: the file is never written) and writes the report. Throws
// UsageError (a missing database, no trials, a bad value) or Error (an unreadable database, an
// unwritable DIR). Returns 0.
int run_report(const ReportOptions& o);
// The same, with o.command taken from the program's arguments ("ktune report ...").
int run_report(ReportOptions o, int argc, char** argv);

} // namespace ktune
