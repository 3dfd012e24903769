// A stand-in libcuda.so.1 for tests (built into BUILD/tests/fake-driver-current/): every entry point
// ktune loads (runtime/driver.h) exists and returns $KTUNE_FAKE_CUDA_RESULT, a CUresult number
// (default 999, CUDA_ERROR_UNKNOWN). With it on LD_LIBRARY_PATH a test plays, on any machine, a
// driver that is installed but broken, one that sees no device, or the toolkit's stub. Built with
// -DcuTensorMapEncodeTiled=cuTensorMapEncodeTiled_absent (fake-driver-old/) it lacks that entry
// point, as a driver too old for ktune does.
#include <cstdlib>

#include "runtime/driver.h"

// Out-parameters are left alone: a call that "succeeds" reports zero devices through ktune's own
// zero-initialized count.
extern "C" __attribute__((visibility("default"))) int ktune_fake_cuda_result() {
  const char* r = std::getenv("KTUNE_FAKE_CUDA_RESULT");
  return r ? std::atoi(r) : 999;
}

// Each entry point is an alias of that one function, under the versioned name cuda.h maps it to
// (cuMemAlloc -> cuMemAlloc_v2), as the loader looks it up. Every one returns a CUresult, and
// ignoring the arguments is harmless under the x86-64 and AArch64 calling conventions.
#define KTUNE_FAKE_STR(x) #x
#define KTUNE_FAKE_XSTR(x) KTUNE_FAKE_STR(x)
#define KTUNE_FAKE_ALIAS(fn)                                                                                         \
  asm(".globl " KTUNE_FAKE_XSTR(fn) "\n.type " KTUNE_FAKE_XSTR(fn) ", %function\n.set " KTUNE_FAKE_XSTR(fn) \
      ", ktune_fake_cuda_result\n");
KTUNE_DRIVER_FUNCTIONS(KTUNE_FAKE_ALIAS)
