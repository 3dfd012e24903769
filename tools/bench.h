// ktune bench: cuBLAS and ktune's runtime choice, timed the tuner's way (verified first, L2
// flushed, medians) in one process, per problem; and the SGEMM ladder at one shape.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ktune/runtime.h"
#include "runtime/timing.h"
#include "ktune/gemm_problem.h"

namespace ktune {

struct BenchRow {
  std::string name; // the problem key, or the ladder rung
  GemmProblem problem;
  Selection selection;       // what ran as "ktune"
  double ktune_ms = 0;       // the runtime's choice (cuBLAS where provenance is cublas)
  double kernel_ms = 0;      // the selected ktune kernel itself, even where cuBLAS was chosen (0: none considered)
  std::string kernel_family; // where cuBLAS was chosen: the family of the kernel timed as kernel_ms
  Config kernel_config;      // and its config
  double cublas_ms = 0;       // cuBLAS: median of its turns' medians (turns rotated with ktune's)
  double rel_error = 0;      // of the runtime's choice against FP64
  double cublas_rel_error = 0; // of cuBLAS on the same inputs against the same reference
  double same_size_copy_tb_s = 0; // a device-to-device copy of the problem's A+B+C bytes, same run
  std::string error;         // non-empty: this row failed (verification or a CUDA error)
};

// What one ktune bench run measured: the rows, and the device-to-device copy bandwidth of the
// same device in the same process (the ceiling memory-bound rows are held against).
struct BenchReport {
  std::vector<BenchRow> rows;
  double copy_tb_s = 0; // bytes read plus bytes written per second, / 1e12
};

struct BenchOptions {
  RuntimeOptions runtime; // where configs come from (database, tables, shipped tables)
  TimingOptions timing;
  uint64_t seed = 1;
};

// Needs a GPU (runtime.device). Rows in problem order.
BenchReport bench_problems(const std::vector<GemmProblem>& problems, const BenchOptions& o);
// configs/ladder.json's rungs at its problem; a rung with an empty family is the runtime's choice.
BenchReport bench_ladder(const std::string& ladder_file, const BenchOptions& o);

// Ops judged by bandwidth (the row ops): the runtime's choice per problem, verified against FP64
// first, then timed; its bandwidth against the device-to-device copy of the same run.
struct BandwidthRow {
  Problem problem;
  Selection selection;
  double ms = 0, tb_s = 0, rel_error = 0;
  double same_size_copy_tb_s = 0; // a device-to-device copy of the op's minimum bytes, same run
  std::string error; // non-empty: this row failed
};
struct BandwidthReport {
  std::vector<BandwidthRow> rows;
  double copy_tb_s = 0;
};
BandwidthReport bench_bandwidth(const std::vector<Problem>& problems, const BenchOptions& o);
std::string format_bandwidth(const BandwidthReport& r, const std::string& device);
std::string bandwidth_json(const BandwidthReport& r, const std::string& device, const std::string& command);

double geomean_ratio(const std::vector<BenchRow>& rows, bool kernel_only);
std::string format_bench(const BenchReport& report, const std::string& device, bool ladder);
std::string bench_json(const BenchReport& report, const std::string& device, const std::string& command);

} // namespace ktune
