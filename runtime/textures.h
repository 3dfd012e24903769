// Texture and surface objects for a spec's texture and surface arguments (SpecArg::Texture,
// docs/KERNEL_SPEC.md "Textures"): made with cuTexObjectCreate (cuSurfObjectCreate) as host code
// makes them with cudaCreateTextureObject, over the buffer itself (linear, pitch2d) or over a
// CUDA array the launch copies the buffer into (array). Kept process-wide: a texture object over a buffer is a pure function of its address,
// shape and sampling, so a problem called again on the same buffers, as an inference loop or the
// tuner's timed runs do, reuses it; an array is kept a (spec argument, shape, context, stream,
// thread), so that two calls never copy into one array at once.
#pragma once
#include <cuda.h>

#include <functional>
#include <string>

#include "core/kernel_spec.h"

namespace ktune {

struct TextureObject {
  unsigned long long object = 0; // a CUtexObject, or a surface's CUsurfObject
  CUarray array = nullptr;       // resource "array" (a surface's): the array the launch copies the buffer into; else null
};

// The texture object of texture argument `arg` of spec s with shape x over the buffer at `buffer`
// (resource array: the argument's array for `stream` and the calling thread; its contents are
// copy_into_array's), on the current context, made at the first call and kept. Throws UsageError
// for a buffer address the device's texture alignment refuses and for one to make while `stream`
// is being captured, CudaError naming what() for a failed driver call.
TextureObject texture_object(const KernelSpec& s, size_t arg, const KernelSpec::TextureShape& x, CUdeviceptr buffer,
                             CUstream stream, const std::function<std::string()>& what);

// The texels of the buffer at `from` (rows x.pitch bytes apart) into the array, on stream; and a
// surface's array back into its buffer after a launch (the pitch's gaps between rows untouched).
void copy_into_array(CUarray array, const KernelSpec::TextureShape& x, CUdeviceptr from, CUstream stream, const std::string& what);
void copy_out_of_array(CUarray array, const KernelSpec::TextureShape& x, CUdeviceptr to, CUstream stream, const std::string& what);

} // namespace ktune
