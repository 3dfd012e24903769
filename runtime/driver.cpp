#include "runtime/driver.h"

#include <dlfcn.h>

#include "ktune/error.h"

namespace ktune {
namespace {

struct Loaded {
  DriverApi api;
  std::string error; // empty when every entry point was found
};

#define KTUNE_STR(x) #x
#define KTUNE_XSTR(x) KTUNE_STR(x) // expands cuda.h's renaming macros before quoting

Loaded load() {
  Loaded l;
  // Never dlclose: the driver stays for the life of the process, like a linked library would.
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    const char* e = dlerror();
    l.error = std::string("cannot load libcuda.so.1 (no NVIDIA driver on this machine?): ") + (e ? e : "dlopen failed");
    return l;
  }
#define KTUNE_DRIVER_LOAD(fn)                                                                   \
  l.api.fn = reinterpret_cast<decltype(&::fn)>(dlsym(h, KTUNE_XSTR(fn)));                       \
  if (!l.api.fn && l.error.empty()) l.error = "libcuda.so.1 lacks " KTUNE_XSTR(fn) " (driver too old?)";
  KTUNE_DRIVER_FUNCTIONS(KTUNE_DRIVER_LOAD)
#undef KTUNE_DRIVER_LOAD
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

} // namespace

const DriverApi* try_driver(std::string* why) {
  const Loaded& l = loaded();
  if (!l.error.empty()) {
    if (why) *why = l.error;
    return nullptr;
  }
  return &l.api;
}

const DriverApi& driver() {
  std::string why;
  const DriverApi* d = try_driver(&why);
  if (!d) throw Error("no NVIDIA driver: " + why);
  return *d;
}

} // namespace ktune
