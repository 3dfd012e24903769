#include "runtime/textures.h"

#include <cstdint>
#include <map>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "ktune/error.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"

namespace ktune {

namespace {

CUarray_format array_format(ElemType t) {
  switch (t) {
    case ElemType::f32: return CU_AD_FORMAT_FLOAT;
    case ElemType::f16: return CU_AD_FORMAT_HALF;
    case ElemType::i8: return CU_AD_FORMAT_SIGNED_INT8;
    case ElemType::u8: return CU_AD_FORMAT_UNSIGNED_INT8;
    case ElemType::i16: return CU_AD_FORMAT_SIGNED_INT16;
    case ElemType::u16: return CU_AD_FORMAT_UNSIGNED_INT16;
    case ElemType::i32: return CU_AD_FORMAT_SIGNED_INT32;
    case ElemType::u32: return CU_AD_FORMAT_UNSIGNED_INT32;
    default: throw Error(std::string("internal: a texture of ") + to_string(t)); // texture_at refuses the others
  }
}

// Everything an object depends on: the context (its id: a context made again at the same address,
// a primary context released and retained, is another), the sampling, the shape, and the
// buffer's address (linear, pitch2d) or the argument, stream and thread whose array it is (array).
using Key = std::vector<uint64_t>;

struct Cache {
  std::mutex mu;
  std::map<Key, TextureObject> objects;
};

Cache& cache() {
  static Cache* c = new Cache; // never destroyed: objects outlive static destruction order
  return *c;
}

} // namespace

// Kept for the process, never destroyed: a kernel queued on any stream, or a call of another
// thread between making its arguments and launching, may still hold one (and a handle destroyed
// is handed out again, so a stale one would read another's data, not fail). A process that makes
// textures over ever new addresses keeps one object each; one that serves ever new shapes of an
// array texture keeps one array each (docs/KERNEL_SPEC.md, "Textures").
TextureObject texture_object(const KernelSpec& s, size_t arg, const KernelSpec::TextureShape& x, CUdeviceptr buffer,
                             CUstream stream, const std::function<std::string()>& what) {
  const SpecArg& a = s.args.at(arg);
  const SpecArg::Texture& t = a.texture;
  const bool array = t.resource == SpecArg::Texture::array;
  const unsigned long long ctx_id = current_context_id(what);
  Key key = {ctx_id, uint64_t(t.surface), uint64_t(t.resource), uint64_t(x.format), uint64_t(x.channels), x.width,
             x.height, x.depth, x.pitch, uint64_t(t.normalized_read), uint64_t(t.linear_filter), uint64_t(t.normalized_coords),
             uint64_t(t.address[0]), uint64_t(t.address[1]), uint64_t(t.address[2])};
  if (array) {
    // One a stream and thread: two calls never copy into one array at once (two threads may share
    // a stream, and CU_STREAM_PER_THREAD is each thread's own).
    key.push_back(uint64_t(reinterpret_cast<uintptr_t>(stream)));
    key.push_back(uint64_t(std::hash<std::thread::id>()(std::this_thread::get_id())));
    key.push_back(std::hash<std::string>()(s.op));
    key.push_back(arg);
  } else {
    key.push_back(uint64_t(buffer));
  }
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lk(c.mu);
    if (const auto it = c.objects.find(key); it != c.objects.end()) return it->second;
  }
  if (!array) {
    const int align = current_device_attribute(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, "texture alignment", what());
    if (buffer % CUdeviceptr(align))
      throw UsageError(what() + ": " + s.args.at(size_t(a.fields.at(0).buffer)).name + " starts at an address that is no multiple of the " +
                       std::to_string(align) + " bytes a texture over a buffer needs (CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT)");
  }
  if (t.resource == SpecArg::Texture::pitch2d) {
    const int align = current_device_attribute(CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, "texture pitch alignment", what());
    if (x.pitch % size_t(align))
      throw UsageError(what() + ": rows " + std::to_string(x.pitch) + " bytes apart: a pitch2d texture's rows are a multiple of " +
                       std::to_string(align) + " bytes apart on this device (CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT)");
  }
  // Made outside a capture only (the driver refuses, and the capture is lost): a call on the
  // stream before capturing makes them, and captured calls find them.
  CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
  check_cu(driver().cuStreamIsCapturing(stream, &capturing), "cuStreamIsCapturing", what());
  if (capturing != CU_STREAM_CAPTURE_STATUS_NONE)
    throw UsageError(what() + ": its " + a.kind_name() + (array ? " and array are" : " object is") +
                     " made at the first call on these buffers and shape" + (array ? ", stream and thread" : "") +
                     ", which a stream being captured (a CUDA graph) cannot do: call once on that stream before the capture");
  std::lock_guard<std::mutex> lk(c.mu);
  if (const auto it = c.objects.find(key); it != c.objects.end()) return it->second; // another thread's, meanwhile
  CUDA_RESOURCE_DESC res{};
  TextureObject made;
  const CUarray_format format = array_format(x.format);
  if (t.resource == SpecArg::Texture::linear) {
    res.resType = CU_RESOURCE_TYPE_LINEAR;
    res.res.linear.devPtr = buffer;
    res.res.linear.format = format;
    res.res.linear.numChannels = unsigned(x.channels);
    res.res.linear.sizeInBytes = x.width * x.texel_bytes();
  } else if (t.resource == SpecArg::Texture::pitch2d) {
    res.resType = CU_RESOURCE_TYPE_PITCH2D;
    res.res.pitch2D.devPtr = buffer;
    res.res.pitch2D.format = format;
    res.res.pitch2D.numChannels = unsigned(x.channels);
    res.res.pitch2D.width = x.width;
    res.res.pitch2D.height = x.height;
    res.res.pitch2D.pitchInBytes = x.pitch;
  } else {
    CUDA_ARRAY3D_DESCRIPTOR d{};
    d.Width = x.width;
    d.Height = x.height; // 0: a 1D array
    d.Depth = x.depth;   // 0: 1D or 2D
    d.Format = format;
    d.NumChannels = unsigned(x.channels);
    if (t.surface) d.Flags = CUDA_ARRAY3D_SURFACE_LDST; // surf*read / surf*write
    check_cu(driver().cuArray3DCreate(&made.array, &d), "cuArray3DCreate", what());
    res.resType = CU_RESOURCE_TYPE_ARRAY;
    res.res.array.hArray = made.array;
  }
  if (t.surface) {
    const CUresult r = driver().cuSurfObjectCreate(&made.object, &res);
    if (r != CUDA_SUCCESS) {
      driver().cuArrayDestroy(made.array); // the create's error is the one to tell
      check_cu(r, "cuSurfObjectCreate", what());
    }
    c.objects.emplace(key, made);
    return made;
  }
  CUDA_TEXTURE_DESC td{};
  for (int k = 0; k < 3; ++k) td.addressMode[k] = CUaddress_mode(t.address[k]);
  td.filterMode = t.linear_filter ? CU_TR_FILTER_MODE_LINEAR : CU_TR_FILTER_MODE_POINT;
  // Integers as they are, unless read normalized (the driver's default promotes 8- and 16-bit
  // ones to [0, 1] floats; the runtime API's cudaReadModeElementType is this flag).
  if (!is_float(x.format) && !t.normalized_read) td.flags |= CU_TRSF_READ_AS_INTEGER;
  if (t.normalized_coords) td.flags |= CU_TRSF_NORMALIZED_COORDINATES;
  const CUresult r = driver().cuTexObjectCreate(&made.object, &res, &td, nullptr);
  if (r != CUDA_SUCCESS) {
    if (made.array) driver().cuArrayDestroy(made.array); // the create's error is the one to tell
    check_cu(r, "cuTexObjectCreate", what());
  }
  c.objects.emplace(key, made);
  return made;
}

namespace {

// The texels between the buffer at `at` (rows x.pitch bytes apart) and the array: into the array,
// or (back) out of it.
void copy_array(CUarray array, const KernelSpec::TextureShape& x, CUdeviceptr at, bool back, CUstream stream,
                const std::string& what) {
  const size_t row = x.width * x.texel_bytes();
  if (!x.depth) { // 1D (one row) or 2D
    CUDA_MEMCPY2D m{};
    (back ? m.dstMemoryType : m.srcMemoryType) = CU_MEMORYTYPE_DEVICE;
    (back ? m.dstDevice : m.srcDevice) = at;
    (back ? m.dstPitch : m.srcPitch) = x.height ? x.pitch : row;
    (back ? m.srcMemoryType : m.dstMemoryType) = CU_MEMORYTYPE_ARRAY;
    (back ? m.srcArray : m.dstArray) = array;
    m.WidthInBytes = row;
    m.Height = x.height ? x.height : 1;
    check_cu(driver().cuMemcpy2DAsync(&m, stream), "cuMemcpy2DAsync", what);
    return;
  }
  CUDA_MEMCPY3D m{};
  (back ? m.dstMemoryType : m.srcMemoryType) = CU_MEMORYTYPE_DEVICE;
  (back ? m.dstDevice : m.srcDevice) = at;
  (back ? m.dstPitch : m.srcPitch) = x.pitch;
  (back ? m.dstHeight : m.srcHeight) = x.height;
  (back ? m.srcMemoryType : m.dstMemoryType) = CU_MEMORYTYPE_ARRAY;
  (back ? m.srcArray : m.dstArray) = array;
  m.WidthInBytes = row;
  m.Height = x.height;
  m.Depth = x.depth;
  check_cu(driver().cuMemcpy3DAsync(&m, stream), "cuMemcpy3DAsync", what);
}

} // namespace

void copy_into_array(CUarray array, const KernelSpec::TextureShape& x, CUdeviceptr from, CUstream stream, const std::string& what) {
  copy_array(array, x, from, false, stream, what);
}

void copy_out_of_array(CUarray array, const KernelSpec::TextureShape& x, CUdeviceptr to, CUstream stream, const std::string& what) {
  copy_array(array, x, to, true, stream, what);
}

} // namespace ktune
