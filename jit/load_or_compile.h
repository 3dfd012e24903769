// A config's cubin, from the stores' binary caches or else from NVRTC. Here, on the compiler's
// floor (jit/), rather than beside the Store (db/): the store only keeps bytes by key, and db/
// does not reach the compiler.
#pragma once
#include <future>
#include <memory>
#include <vector>

#include "db/store.h"
#include "ktune/compiler.h"

namespace ktune {

// A config's cubin: from the binary cache of the first of `stores` that holds req's cache key
// (null entries are skipped), else compiled by NVRTC on compiler's pool. The one way the tuner
// and the runtime fetch cubins. A cache hit comes back as a ready future with from_cache set.
// cancel: Compiler::compile_async's.
std::future<std::shared_ptr<const CompiledKernel>> load_or_compile(const std::vector<const Store*>& stores, Compiler& compiler,
                                                                   const CompileRequest& req, Compiler::Cancel cancel = nullptr);

} // namespace ktune
