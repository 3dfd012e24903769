// Runtime: construction (options checked, the device or a nominal one for an arch, the tuned
// index from the store, the user's tables and the shipped ones) and what it says about itself.
// The jobs it does are in their own files (runtime/runtime_impl.h lists them).
#include "ktune/runtime.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/embedded.h"
#include "db/store.h"
#include "db/table.h"
#include "ktune/device.h"
#include "ktune/error.h"
#include "runtime/runtime_impl.h"

namespace ktune {

const char* to_string(Provenance p) {
  switch (p) {
    case Provenance::exact:
      return "exact";
    case Provenance::nearest:
      return "nearest";
    case Provenance::default_config:
      return "default";
    case Provenance::cublas:
      return "cublas";
  }
  return "?";
}

Runtime::Runtime(RuntimeOptions o) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.opts = std::move(o);
  if (m.opts.cubin_cache == kDefaultCubinCache) m.opts.cubin_cache = default_cubin_cache_path();
  if (m.opts.cubin_cache_max_mb == kDefaultCubinCacheLimit) m.opts.cubin_cache_max_mb = default_cubin_cache_max_mb();
  if (m.opts.cubin_cache_max_mb < 0)
    throw UsageError("ktune runtime: cubin_cache_max_mb must be >= 0 (0: no limit) or kDefaultCubinCacheLimit, not " +
                     std::to_string(m.opts.cubin_cache_max_mb));
  if (m.opts.measure_margin < 0 || m.opts.measure_margin >= 1)
    throw UsageError("ktune runtime: measure_margin must be in [0, 1), not " + std::to_string(m.opts.measure_margin));
  if (m.opts.arch.empty()) {
    m.device = device_by_ordinal(m.opts.device);
    m.arch = m.device.arch;
  } else {
    m.device = DeviceInfo::nominal(m.opts.arch);
    m.arch = m.opts.arch;
  }
  m.build_index();
}

// The index of every tuned entry the store and the tables hold for the ops registered now (a row
// of an op not registered, a user kernel not loaded yet, is skipped).
void Runtime::Impl::build_index() {
  Impl& m = *this;
  m.index = std::make_unique<TunedIndex>(m.device);
  m.index_ops = ops().size();
  // A database file not written yet, or created empty, holds nothing tuned: the tables answer.
  std::error_code ec;
  if (!m.opts.db_path.empty() && std::filesystem::exists(m.opts.db_path) &&
      std::filesystem::file_size(m.opts.db_path, ec) > 0 && !ec) {
    m.store = std::make_unique<Store>(m.opts.db_path, /*read_only=*/true);
    if (const auto archs = m.store->best_archs(); std::find(archs.begin(), archs.end(), m.arch) != archs.end())
      m.add(m.store->export_table(m.arch), "store " + m.opts.db_path, SourceTier::user);
  }
  for (const auto& t : m.opts.tables) m.add(read_table_file(t), "table " + t, SourceTier::user);
  if (m.opts.shipped_tables || m.opts.tf32x3)
    for (auto& [t, source] : shipped_tables(m.arch, m.opts.tf32x3)) {
      const bool tf32x3_table = source.size() > 7 && source.substr(source.size() - 7) == "-tf32x3";
      if (tf32x3_table ? m.opts.tf32x3 : m.opts.shipped_tables) m.add(t, source, SourceTier::shipped);
    }
}

Runtime::~Runtime() = default;

const std::string& Runtime::arch() const { return impl_->arch; }
size_t Runtime::entries() const { return impl_->index->size(); }

} // namespace ktune
