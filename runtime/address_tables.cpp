#include "runtime/address_tables.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "ktune/error.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"

namespace ktune {

namespace {

// Everything a table's contents depend on: the context (its id: one made again at the same
// address is another), the buffer's address, the entries and where they point.
using Key = std::vector<uint64_t>;

struct Table {
  CUdeviceptr at = 0;
  std::vector<uint64_t> entries; // what it was made with
  bool handed_out = false;       // since the last address_tables_changed
};

struct Cache {
  std::mutex mu;
  std::map<Key, Table> tables;
};

Cache& cache() {
  static Cache* c = new Cache; // never destroyed: tables outlive static destruction order
  return *c;
}

} // namespace

// Kept for the process, never freed: a kernel queued on any stream may still read one, and a
// freed address handed out again would point a kernel at another's data, not fail. A process that
// calls with ever new buffer addresses keeps one table each (docs/KERNEL_SPEC.md).
CUdeviceptr address_table(const KernelSpec::TableShape& x, CUdeviceptr buffer, CUstream stream,
                          const std::function<std::string()>& what) {
  if (!x.count) return 0;
  const Key key = {current_context_id(what), uint64_t(buffer), x.count, x.offset, x.stride};
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lk(c.mu);
    if (const auto it = c.tables.find(key); it != c.tables.end()) {
      it->second.handed_out = true;
      return it->second.at;
    }
  }
  // Made outside a capture only (an allocation and a copy there would be the graph's, or refused):
  // a call on the stream before capturing makes it, and captured calls find it.
  CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
  check_cu(driver().cuStreamIsCapturing(stream, &capturing), "cuStreamIsCapturing", what());
  if (capturing != CU_STREAM_CAPTURE_STATUS_NONE)
    throw UsageError(what() + ": its table is made at the first call on this buffer and shape, which a stream being captured "
                              "(a CUDA graph) cannot do: call once on that stream before the capture");
  std::lock_guard<std::mutex> lk(c.mu);
  if (const auto it = c.tables.find(key); it != c.tables.end()) { // another thread's, meanwhile
    it->second.handed_out = true;
    return it->second.at;
  }
  Table t;
  t.entries.resize(x.count);
  for (size_t i = 0; i < x.count; ++i) t.entries[i] = uint64_t(buffer) + x.offset + i * x.stride;
  const size_t bytes = x.count * sizeof(uint64_t);
  check_cu(driver().cuMemAlloc(&t.at, bytes), "cuMemAlloc", what() + " (" + std::to_string(bytes) + " bytes of addresses)");
  try {
    // Finished before any kernel can read it, on any stream: a copy from pageable memory may return
    // before its DMA lands, so the stream is waited for.
    check_cu(driver().cuMemcpyHtoDAsync(t.at, t.entries.data(), bytes, stream), "cuMemcpyHtoDAsync", what() + " (filling its addresses)");
    check_cu(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", what() + " (filling its addresses)");
  } catch (...) {
    driver().cuMemFree(t.at); // never handed out: nothing can hold it
    throw;
  }
  t.handed_out = true;
  return c.tables.emplace(key, std::move(t)).first->second.at;
}

size_t address_tables_changed(const std::string& what) {
  const unsigned long long ctx = current_context_id([&] { return what; });
  Cache& c = cache();
  std::lock_guard<std::mutex> lk(c.mu);
  size_t changed = 0;
  std::vector<uint64_t> now;
  for (auto& [key, t] : c.tables) {
    if (key[0] != ctx || !t.handed_out) continue;
    t.handed_out = false;
    const size_t bytes = t.entries.size() * sizeof(uint64_t);
    now.resize(t.entries.size());
    check_cu(driver().cuMemcpyDtoH(now.data(), t.at, bytes), "cuMemcpyDtoH", what + " (reading an address table back)");
    size_t differ = 0;
    const auto* a = reinterpret_cast<const unsigned char*>(now.data());
    const auto* b = reinterpret_cast<const unsigned char*>(t.entries.data());
    for (size_t i = 0; i < bytes; ++i) differ += a[i] != b[i];
    if (!differ) continue;
    changed += differ;
    check_cu(driver().cuMemcpyHtoD(t.at, t.entries.data(), bytes), "cuMemcpyHtoD", what + " (putting an address table back)");
  }
  // The put-back copies landed before the next kernel of any stream reads a table.
  if (changed) check_cu(driver().cuCtxSynchronize(), "cuCtxSynchronize", what + " (after putting address tables back)");
  return changed;
}

} // namespace ktune
