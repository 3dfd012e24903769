// Driver-API plumbing: the device context, device buffers, and loaded cubins with their kernels.
#pragma once
#include <cuda.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "ktune/family.h"

namespace ktune {

// The primary context of one device, made current on this thread. Sharing the primary context
// means cuBLAS (runtime API) and ktune's kernels see the same allocations.
class CudaContext {
 public:
  explicit CudaContext(int ordinal);
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;
  void make_current() const;
  CUdevice device() const { return dev_; }

 private:
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
};

// Owns cuMemAlloc'd memory; move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t bytes, const std::string& what);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = 0, o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  template <class T>
  T* as() const { return reinterpret_cast<T*>(ptr_); }

 private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

struct KernelAttributes {
  int registers = 0;
  int static_smem = 0;    // bytes
  int local_bytes = 0;    // per thread; > 0 means spills or a stack frame
  int max_threads = 0;    // the most threads per block this kernel can launch with
  int const_bytes = 0;
};

// How many blocks of a kernel the device holds at once, for one launch shape.
struct Occupancy {
  int blocks_per_sm = 0;
  int cluster_size = 1;         // CTAs per thread block cluster the kernel was compiled with (1: none)
  int max_active_clusters = 0;  // cluster_size > 1: clusters resident at once on the whole device
};

// A loaded cubin and the kernels looked up by their lowered names.
class Module {
 public:
  Module(const std::vector<char>& cubin, const std::vector<std::string>& lowered_names, std::string context);
  ~Module();
  Module(Module&& o) noexcept;
  Module& operator=(Module&&) = delete;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  size_t kernels() const { return functions_.size(); }
  CUfunction function(size_t i) const { return functions_.at(i); }
  KernelAttributes attributes(size_t i) const;
  // Blocks resident per SM for this block shape and dynamic shared memory, and for a kernel with
  // compile-time cluster dimensions the clusters resident at once (a grid of more clusters runs
  // in waves). Raises the kernel's dynamic shared-memory limit like launch() does.
  // cluster: a launch-time cluster shape (LaunchStep::cluster), for a kernel compiled without one.
  Occupancy occupancy(size_t i, const unsigned grid[3], const unsigned block[3], unsigned dynamic_smem,
                      const unsigned* cluster = nullptr);
  const std::string& context() const { return context_; }
  // The address and size of a __constant__ or __device__ variable of the module (a user's
  // kernel's symbols); throws Error naming it when the module has none by that name.
  CUdeviceptr global(const std::string& name, size_t* bytes) const;
  // True the first time it is asked for `key` (then false): work done once per module, such as
  // filling a symbol whose contents do not change between launches.
  bool once(const std::string& key);
  // True when `value` differs from the last one given for `key` (or none was): then records it.
  // What a module-global variable holds (a __device__ pointer a call sets), so that an unchanged
  // one is not written again.
  bool changed(const std::string& key, const std::string& value);
  // What check() returned for kernel i, which runs the first time it is asked for i and is kept:
  // "" where the check passed, else why not (a user kernel's parameters against its spec's
  // arguments: every launch after a failed check fails the same way).
  const std::string& checked(size_t i, const std::function<std::string()>& check);
  // The size in bytes of each parameter kernel i declares, in order: as the cubin records them
  // (cubin_param_sizes, read at load), else as cuFuncGetParamInfo gives them one by one until it
  // refuses an index (an error compute-sanitizer reports, which the cubin's record avoids).
  std::vector<size_t> param_sizes(size_t i) const;

  // Raises the kernel's dynamic shared-memory limit first when the launch asks for more than the
  // default 48 KB (needed once per kernel; remembered). Safe to call from several threads.
  // overlap_previous: launch as a programmatic dependent of the stream's previous kernel where
  // the device has it (sm_90 on; see LaunchStep::overlap_previous), else as a plain launch.
  // balance_clusters: the load-balancing cluster scheduling policy (LaunchStep::balance_clusters).
  // cluster: a launch-time cluster shape (LaunchStep::cluster; null or {1, 1, 1}: none).
  void launch(size_t i, const unsigned grid[3], const unsigned block[3], unsigned dynamic_smem, CUstream stream,
              void** params, bool overlap_previous = false, bool balance_clusters = false, const unsigned* cluster = nullptr);
  // One step of a launch plan, with its flags; a persistent step's grid[0] capped at resident_blocks.
  void launch(const LaunchStep& s, CUstream stream, void** params);
  // The dynamic shared memory step s launches with: its own, or the C++ constant its probe kernel
  // holds (LaunchStep::smem_kernel). Throws Error for a probe this module does not hold.
  unsigned dynamic_smem(const LaunchStep& s) const;
  // The block step s launches with: its own, or x the C++ constant its probe kernel holds
  // (LaunchStep::block_kernel). Throws Error naming the threads where the kernel cannot take them.
  void block_of(const LaunchStep& s, unsigned block[3]) const;
  // Blocks of kernel i the device holds at once for this block shape and shared memory (whole
  // clusters for a cluster kernel): the grid of a persistent launch. Computed once per shape. grid:
  // the launch's own (the cluster query wants a grid of whole clusters; its size does not matter).
  // With a launch-time cluster shape: asked of the driver at each call (not remembered).
  unsigned resident_blocks(size_t i, const unsigned grid[3], const unsigned block[3], unsigned dynamic_smem,
                           const unsigned* cluster = nullptr);

 private:
  void allow_smem(size_t i, unsigned dynamic_smem); // raises the kernel's dynamic smem limit once
  // Looks up one kernel of the module and reads what launches need of it; major: the device's.
  void load_function(const std::string& name, int major);
  // The constant probe kernel `probe` holds; Error (internal, naming `what`) where it holds none.
  long long constant(int probe, const char* what) const;
  CUmodule module_ = nullptr;
  std::vector<CUfunction> functions_;
  // Per kernel: the C++ constant a probe kernel's lowered name holds (constant_probe_value), the
  // dynamic shared memory or block of the steps that name it (LaunchStep::smem_kernel,
  // block_kernel); -1: no probe.
  std::vector<long long> constants_;
  std::vector<int> max_threads_; // per kernel: CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, read at load
  std::vector<std::vector<size_t>> cubin_params_; // per kernel: its parameters' sizes as the cubin records them (empty: none read)
  std::unique_ptr<std::atomic<unsigned>[]> smem_limit_; // per kernel: the limit already set
  // Per kernel: resident_blocks' last answer, (shared memory x 2048 + threads) << 32 | blocks.
  std::unique_ptr<std::atomic<unsigned long long>[]> resident_;
  std::string context_;
  std::mutex once_mu_;
  std::set<std::string> once_;
  std::map<std::string, std::string> last_; // changed(): the last value of each key
  std::map<size_t, std::string> checks_; // checked(): per kernel, under once_mu_
  int sm_count_ = 0;
  bool dependent_launch_ = false; // the context's device runs programmatic dependent launches (sm_90 on)
};

} // namespace ktune
