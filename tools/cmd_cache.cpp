// ktune cache: what the runtime's cubin cache holds (RuntimeOptions::cubin_cache), --clear to empty
// it, --max-mb to trim it to a size (least recently used first, as runtimes do past their limit,
// RuntimeOptions::cubin_cache_max_mb).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "db/store.h"
#include "ktune/error.h"
#include "tools/cli.h"

namespace ktune::cli {
namespace {

struct CacheArgs {
  std::string path;
  bool clear = false;
  int64_t max_mb = -1;
};

int cmd_cache(const CacheArgs& a) {
  const std::string path = a.path.empty() ? default_cubin_cache_path() : a.path;
  if (path.empty()) {
    std::printf("no cubin cache: KTUNE_CUBIN_CACHE is set empty\n");
    return 0;
  }
  if (!std::filesystem::exists(path)) {
    std::printf("cubin cache %s: none yet (a runtime creates it when it first compiles a kernel)\n", path.c_str());
    return 0;
  }
  Store store(path, /*read_only=*/!a.clear && a.max_mb < 0);
  if (a.clear) {
    const int64_t n = store.clear_binaries();
    std::printf("cubin cache %s: deleted %lld cubins\n", path.c_str(), static_cast<long long>(n));
    return 0;
  }
  if (a.max_mb >= 0) {
    const auto t = store.trim_binaries(a.max_mb * 1000000, a.max_mb * 1000000);
    std::printf("cubin cache %s: deleted %lld least recently used cubins (%.1f MB)\n", path.c_str(),
                static_cast<long long>(t.cubins), double(t.bytes) / 1e6);
  }
  int64_t cubins = 0, bytes = 0;
  const auto counts = store.binary_counts();
  for (const auto& c : counts) cubins += c.cubins, bytes += c.bytes;
  std::printf("cubin cache %s: %lld cubins, %.1f MB\n", path.c_str(), static_cast<long long>(cubins), double(bytes) / 1e6);
  for (const auto& c : counts)
    std::printf("  %-8s %6lld cubins %9.1f MB\n", c.arch.c_str(), static_cast<long long>(c.cubins), double(c.bytes) / 1e6);
  const int64_t limit = default_cubin_cache_max_mb();
  if (limit > 0) std::printf("runtimes keep at most %lld MB here (least recently used go first; $KTUNE_CUBIN_CACHE_MAX_MB)\n", static_cast<long long>(limit));
  else std::printf("runtimes keep every cubin here ($KTUNE_CUBIN_CACHE_MAX_MB=0)\n");
  return 0;
}

} // namespace

Command add_cache(CLI::App& app) {
  auto a = std::make_shared<CacheArgs>();
  auto* c = app.add_subcommand("cache", "Show (or --clear) the cubins runtimes kept for later processes");
  c->add_option("--path", a->path, "Cubin cache file (default: $KTUNE_CUBIN_CACHE, else ~/.cache/ktune/cubins.db)");
  auto* clear = c->add_flag("--clear", a->clear, "Delete every cached cubin (runtimes compile them again when needed)");
  c->add_option("--max-mb", a->max_mb,
                "Delete the least recently used cubins until the cache holds at most this many MB")
      ->check(whole_number(0, int64_t(1) << 40)) // the bound $KTUNE_CUBIN_CACHE_MAX_MB has (db/store.cpp)
      ->excludes(clear);
  return {c, [a] { return cmd_cache(*a); }};
}

} // namespace ktune::cli
