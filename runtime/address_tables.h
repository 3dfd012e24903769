// Address tables for a spec's "addresses" arguments (SpecArg::Table, docs/KERNEL_SPEC.md "Address
// tables"): device memory holding the addresses of a buffer's elements, entry i at
// buffer + offset + i * stride bytes, as host code fills an array of data_ptr()s and copies it to
// the GPU before its kernel (vLLM's key_cache_ptrs, a batched GEMM's A / B / C arrays).
// A table is a pure function of its context, buffer address and shape, so it is made once and
// kept process-wide: a problem called again on the same buffers (an inference loop, the tuner's
// timed runs) makes none, and any stream or thread may share it.
#pragma once
#include <cuda.h>

#include <cstddef>
#include <functional>
#include <string>

#include "core/kernel_spec.h"

namespace ktune {

// The table of shape x over the buffer at `buffer`, on the current context: made at the first
// call (cuMemAlloc, then a copy on `stream` waited for, so that a kernel on any stream finds it
// filled) and kept. 0 for a table of no entries. Throws UsageError while `stream` is being captured and the
// table is not made yet, CudaError naming what() for a failed driver call.
CUdeviceptr address_table(const KernelSpec::TableShape& x, CUdeviceptr buffer, CUstream stream,
                          const std::function<std::string()>& what);

// The bytes that differ from what they were made with, over the tables address_table handed out
// on the current context since the last call (a kernel that wrote through its table's address,
// not its buffer's), each table put back as made. The tuner's check counts them with the inputs a
// kernel must leave unchanged. Synchronous: call after the kernels ran.
size_t address_tables_changed(const std::string& what);

} // namespace ktune
