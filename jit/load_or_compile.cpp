#include "jit/load_or_compile.h"

namespace ktune {

std::future<std::shared_ptr<const CompiledKernel>> load_or_compile(const std::vector<const Store*>& stores, Compiler& compiler,
                                                                   const CompileRequest& req, Compiler::Cancel cancel) {
  auto k = std::make_shared<CompiledKernel>();
  const std::string key = req.cache_key();
  for (const Store* store : stores) {
    if (!store || !store->get_binary(key, &k->cubin, &k->lowered_names)) continue;
    k->cache_key = key;
    k->from_cache = true;
    std::promise<std::shared_ptr<const CompiledKernel>> ready;
    ready.set_value(std::move(k));
    return ready.get_future();
  }
  return compiler.compile_async(req, std::move(cancel));
}

} // namespace ktune
