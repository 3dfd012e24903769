// How the runtime serves one kind of op (OpInfo::runner: "gemm", "rows", "buffers"), as
// tuner/op_runner.h's OpRunner tunes, fills and verifies it: Runtime::run (and through it the C
// API's ktune_run and Python's ktune.run) hands a call to the launcher its op names. Each launcher
// lives beside its kind's launch code (gemm_launch.cpp, rows_launch.cpp, buffers_launch.cpp); a
// new kind is one launcher there and one line in op_launcher.cpp.
#pragma once
#include <cuda.h>

#include <vector>

#include "ktune/problem.h"

namespace ktune {

class Runtime;

class OpLauncher {
 public:
  virtual ~OpLauncher() = default;
  // Serves one call of p on stream: buffers in the kind's order (gemm: A, B, C; rows: x, y, weight,
  // bias, null where none; buffers: OpInfo::operands), run-time scalars in p. Throws UsageError
  // for a wrong number of buffers or a problem the op refuses, Error for a failure on the way.
  virtual void run(Runtime& rt, const Problem& p, const std::vector<void*>& buffers, CUstream stream) const = 0;
};

// The launcher of the op's kind; throws UsageError naming the op where the runtime has none.
const OpLauncher& op_launcher(const OpInfo& info);

// Throws UsageError naming the problem unless there are exactly n buffers (`which` lists them).
void check_buffer_count(const Problem& p, const std::vector<void*>& buffers, size_t n, const char* which);

// One per kind, beside its launch code.
const OpLauncher& gemm_launcher();
const OpLauncher& rows_launcher();
const OpLauncher& buffers_launcher();

} // namespace ktune
