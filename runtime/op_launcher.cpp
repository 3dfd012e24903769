#include "runtime/op_launcher.h"

#include <string>

#include "ktune/error.h"

namespace ktune {

const OpLauncher& op_launcher(const OpInfo& info) {
  if (info.runner == "gemm") return gemm_launcher();
  if (info.runner == "rows") return rows_launcher();
  // A user's kernel is an op of plain buffers with its spec's argument list (BufferArgs packs it).
  // Attention's kernels take the plain-buffer arguments (q, k, v, o, lse, dimensions, strides, scale).
  if (info.runner == "buffers" || info.runner == "spec" || info.runner == "attention") return buffers_launcher();
  throw UsageError("ktune::Runtime::run: op " + info.name + " names runner '" + info.runner +
                   "', which the runtime cannot launch (known: gemm, rows, buffers, spec, attention)");
}

void check_buffer_count(const Problem& p, const std::vector<void*>& buffers, size_t n, const char* which) {
  if (buffers.size() != n)
    throw UsageError("ktune::Runtime::run: " + p.key() + " takes " + std::to_string(n) + " buffers (" + which + "), not " +
                     std::to_string(buffers.size()));
}

} // namespace ktune
