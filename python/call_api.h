// What ktune._ktune offers the optional PyTorch extension ktune._torch_ext (python/torch_ext.cpp),
// as a table of C functions in the capsule ktune._ktune._call_api. The two modules are separate
// shared objects, each with its own copy of anything static, and may be built with hidden symbols:
// the extension reaches ktune's runtime only through these functions, and no C++ exception crosses
// between them (a function that cannot do its work says so by its result).
#pragma once

#include <Python.h>

#define KTUNE_CALL_API_VERSION 1u
#define KTUNE_CALL_API_CAPSULE "ktune._ktune._call_api"

extern "C" {

struct KtuneCallApi {
  unsigned version;  // KTUNE_CALL_API_VERSION of the module that made the table
  // The handle inside a ktune._ktune.RowsCall / GemmCall object; null when obj is not one. The
  // handle lives as long as obj does.
  const void* (*rows_handle)(PyObject* obj);
  const void* (*gemm_handle)(PyObject* obj);
  // Runs the call and returns 1 when its launch is prepared for these pointers (only the launch
  // is left: nothing to look up, compile or measure); returns 0 without running when it is not,
  // or when the launch fails. The caller then takes the full path, which prepares or reports.
  int (*rows_run_ready)(const void* handle, const void* x, void* y, const void* weight, const void* bias,
                        void* stream);
  int (*gemm_run_ready)(const void* handle, const void* a, const void* b, void* c, float alpha, void* stream);
};

}  // extern "C"
