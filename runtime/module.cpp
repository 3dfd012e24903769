#include "runtime/module.h"

#include <algorithm>

#include "core/kernel_spec.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"

namespace ktune {

CudaContext::CudaContext(int ordinal) {
  check_cu(driver().cuInit(0), "cuInit", "opening device " + std::to_string(ordinal));
  check_cu(driver().cuDeviceGet(&dev_, ordinal), "cuDeviceGet", "device " + std::to_string(ordinal));
  check_cu(driver().cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain", "device " + std::to_string(ordinal));
  make_current();
}

CudaContext::~CudaContext() {
  if (ctx_) driver().cuDevicePrimaryCtxRelease(dev_); // nothing useful to do with a failure while tearing down
}

void CudaContext::make_current() const { check_cu(driver().cuCtxSetCurrent(ctx_), "cuCtxSetCurrent", "primary context"); }

DeviceBuffer::DeviceBuffer(size_t bytes, const std::string& what) : bytes_(bytes) {
  if (bytes) check_cu(driver().cuMemAlloc(&ptr_, bytes), "cuMemAlloc", what + ", " + std::to_string(bytes) + " bytes");
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) driver().cuMemFree(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) driver().cuMemFree(ptr_);
    ptr_ = o.ptr_, bytes_ = o.bytes_;
    o.ptr_ = 0, o.bytes_ = 0;
  }
  return *this;
}

namespace {
// The launch shape as cuLaunchKernelEx and cuOccupancyMaxActiveClusters take it.
CUlaunchConfig launch_config(const unsigned grid[3], const unsigned block[3], unsigned dynamic_smem, CUstream stream) {
  CUlaunchConfig cfg{};
  cfg.gridDimX = grid[0], cfg.gridDimY = grid[1], cfg.gridDimZ = grid[2];
  cfg.blockDimX = block[0], cfg.blockDimY = block[1], cfg.blockDimZ = block[2];
  cfg.sharedMemBytes = dynamic_smem;
  cfg.hStream = stream;
  return cfg;
}

// CTAs per cluster that a kernel was compiled with (__cluster_dims__), 1 without one.
int compiled_cluster_size(CUfunction f, const std::string& context) {
  int dims[3] = {0, 0, 0};
  const CUfunction_attribute at[3] = {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
                                      CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH};
  for (int d = 0; d < 3; ++d) check_cu(driver().cuFuncGetAttribute(&dims[d], at[d], f), "cuFuncGetAttribute(REQUIRED_CLUSTER_*)", context);
  return std::max(1, dims[0]) * std::max(1, dims[1]) * std::max(1, dims[2]);
}
} // namespace

Module::Module(const std::vector<char>& cubin, const std::vector<std::string>& lowered_names, std::string context)
    : smem_limit_(new std::atomic<unsigned>[lowered_names.size()]),
      resident_(new std::atomic<unsigned long long>[lowered_names.size()]), context_(std::move(context)) {
  check_cu(driver().cuModuleLoadData(&module_, cubin.data()), "cuModuleLoadData", context_);
  CUdevice dev = 0;
  int major = 0;
  const CUresult dr = driver().cuCtxGetDevice(&dev);
  const CUresult ar = dr == CUDA_SUCCESS ? driver().cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) : dr;
  const CUresult sr = ar == CUDA_SUCCESS ? driver().cuDeviceGetAttribute(&sm_count_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) : ar;
  if (sr != CUDA_SUCCESS) {
    driver().cuModuleUnload(module_);
    check_cu(sr, dr != CUDA_SUCCESS ? "cuCtxGetDevice" : ar != CUDA_SUCCESS ? "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)" : "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)", context_);
  }
  dependent_launch_ = major >= 9;
  // A constructor that throws runs no destructor: the module is unloaded here on any failure.
  try {
    for (const auto& name : lowered_names) {
      load_function(name, major);
      cubin_params_.push_back(cubin_param_sizes(cubin, name));
    }
  } catch (...) {
    driver().cuModuleUnload(module_);
    throw;
  }
}

void Module::load_function(const std::string& name, int major) {
  CUfunction f = nullptr;
  check_cu(driver().cuModuleGetFunction(&f, module_, name.c_str()), "cuModuleGetFunction", context_ + " kernel " + name);
  // Without opting in, a block gets 48 KB of shared memory less the kernel's static shared
  // memory: the limit starts there, and a launch that asks for more raises it.
  int static_smem = 0;
  check_cu(driver().cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f), "cuFuncGetAttribute(SHARED_SIZE_BYTES)",
           context_ + " kernel " + name);
  smem_limit_[functions_.size()] = unsigned(std::max(0, 48 * 1024 - static_smem));
  // Read once here rather than at each launch: what block_of bounds a block constant by.
  int most = 0;
  check_cu(driver().cuFuncGetAttribute(&most, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f), "cuFuncGetAttribute(MAX_THREADS_PER_BLOCK)",
           context_ + " kernel " + name);
  max_threads_.push_back(most);
  resident_[functions_.size()] = 0; // not asked yet
  // A kernel compiled with a cluster wider than the portable 8 CTAs (__cluster_dims__(16, 1, 1):
  // rows_bulk's CL = 16) launches only with the driver's permission; it is the kernel's own
  // requirement, so it is granted here, once, instead of by every caller.
  if (major >= 9 && compiled_cluster_size(f, context_ + " kernel " + name) > 8)
    check_cu(driver().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
             "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)", context_ + " kernel " + name);
  functions_.push_back(f);
  unsigned long long v = 0;
  constants_.push_back(constant_probe_value(name, &v) ? (long long)std::min<unsigned long long>(v, 1ull << 40) : -1);
}

Module::~Module() {
  if (module_) driver().cuModuleUnload(module_);
}

Module::Module(Module&& o) noexcept
    : module_(o.module_), functions_(std::move(o.functions_)), constants_(std::move(o.constants_)), max_threads_(std::move(o.max_threads_)), cubin_params_(std::move(o.cubin_params_)), smem_limit_(std::move(o.smem_limit_)),
      resident_(std::move(o.resident_)), context_(std::move(o.context_)), once_(std::move(o.once_)), sm_count_(o.sm_count_),
      dependent_launch_(o.dependent_launch_) {
  o.module_ = nullptr;
}

CUdeviceptr Module::global(const std::string& name, size_t* bytes) const {
  CUdeviceptr p = 0;
  size_t n = 0;
  check_cu(driver().cuModuleGetGlobal(&p, &n, module_, name.c_str()), "cuModuleGetGlobal", context_ + ": symbol " + name);
  if (bytes) *bytes = n;
  return p;
}

bool Module::once(const std::string& key) {
  std::lock_guard<std::mutex> lk(once_mu_);
  return once_.insert(key).second;
}

bool Module::changed(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lk(once_mu_);
  auto [it, fresh] = last_.emplace(key, value);
  if (fresh) return true;
  if (it->second == value) return false;
  it->second = value;
  return true;
}

const std::string& Module::checked(size_t i, const std::function<std::string()>& check) {
  std::lock_guard<std::mutex> lk(once_mu_);
  auto it = checks_.find(i);
  if (it == checks_.end()) it = checks_.emplace(i, check()).first;
  return it->second;
}

std::vector<size_t> Module::param_sizes(size_t i) const {
  if (!cubin_params_.at(i).empty()) return cubin_params_[i];
  std::vector<size_t> sizes;
  for (size_t k = 0;; ++k) {
    size_t offset = 0, size = 0;
    const CUresult r = driver().cuFuncGetParamInfo(function(i), k, &offset, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) break; // past the last parameter
    check_cu(r, "cuFuncGetParamInfo", context_ + ", parameter " + std::to_string(k) + " of kernel " + std::to_string(i));
    sizes.push_back(size);
  }
  return sizes;
}

KernelAttributes Module::attributes(size_t i) const {
  KernelAttributes a;
  const CUfunction f = function(i);
  auto get = [&](CUfunction_attribute at, int* v) { check_cu(driver().cuFuncGetAttribute(v, at, f), "cuFuncGetAttribute", context_); };
  get(CU_FUNC_ATTRIBUTE_NUM_REGS, &a.registers);
  get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &a.static_smem);
  get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, &a.local_bytes);
  get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &a.max_threads);
  get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, &a.const_bytes);
  return a;
}

void Module::allow_smem(size_t i, unsigned dynamic_smem) {
  if (dynamic_smem > smem_limit_[i].load(std::memory_order_relaxed)) {
    check_cu(driver().cuFuncSetAttribute(function(i), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(dynamic_smem)),
             "driver().cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", context_ + ", " + std::to_string(dynamic_smem) + " bytes");
    smem_limit_[i] = dynamic_smem;
  }
}

namespace {
unsigned cluster_blocks(const unsigned* cluster) { return cluster ? cluster[0] * cluster[1] * cluster[2] : 1; }
} // namespace

Occupancy Module::occupancy(size_t i, const unsigned grid[3], const unsigned block[3], unsigned dynamic_smem,
                            const unsigned* cluster) {
  const CUfunction f = function(i);
  allow_smem(i, dynamic_smem);
  Occupancy o;
  const int threads = int(block[0] * block[1] * block[2]);
  check_cu(driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(&o.blocks_per_sm, f, threads, dynamic_smem),
           "cuOccupancyMaxActiveBlocksPerMultiprocessor", context_);
  CUlaunchAttribute shape{};
  CUlaunchConfig cfg = launch_config(grid, block, dynamic_smem, nullptr);
  if (cluster_blocks(cluster) > 1) { // given at launch
    o.cluster_size = int(cluster_blocks(cluster));
    shape.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    shape.value.clusterDim.x = cluster[0], shape.value.clusterDim.y = cluster[1], shape.value.clusterDim.z = cluster[2];
    cfg.attrs = &shape, cfg.numAttrs = 1;
  } else { // the kernel's own (__cluster_dims__), if any
    o.cluster_size = compiled_cluster_size(f, context_);
  }
  if (o.cluster_size > 1)
    check_cu(driver().cuOccupancyMaxActiveClusters(&o.max_active_clusters, f, &cfg), "cuOccupancyMaxActiveClusters", context_);
  return o;
}

unsigned Module::resident_blocks(size_t i, const unsigned grid[3], const unsigned block[3], unsigned dynamic_smem,
                                 const unsigned* cluster) {
  const unsigned long long key = (static_cast<unsigned long long>(dynamic_smem) * 2048 + block[0] * block[1] * block[2]) << 32;
  const bool remember = cluster_blocks(cluster) == 1;
  const unsigned long long known = resident_[i].load(std::memory_order_relaxed);
  if (remember && known && (known & ~0xffffffffull) == key) return unsigned(known & 0xffffffffull);
  const Occupancy o = occupancy(i, grid, block, dynamic_smem, cluster);
  // A cluster kernel: whole clusters (the grid must be a multiple of the cluster), as many as fit at once.
  const long long blocks = o.cluster_size > 1 ? (long long)o.max_active_clusters * o.cluster_size : (long long)o.blocks_per_sm * sm_count_;
  if (blocks < 1)
    throw Error(context_ + ": no block of kernel " + std::to_string(i) + " fits an SM (" + std::to_string(dynamic_smem) +
                " bytes of dynamic shared memory), so it has no persistent grid");
  if (remember) resident_[i].store(key | static_cast<unsigned long long>(blocks), std::memory_order_relaxed);
  return unsigned(blocks);
}

long long Module::constant(int probe, const char* what) const {
  // A C++ constant of the source: the value its probe kernel's lowered name holds.
  const long long v = probe >= 0 && size_t(probe) < constants_.size() ? constants_[size_t(probe)] : -1;
  if (v < 0) throw Error("internal: " + context_ + ": kernel " + std::to_string(probe) + " holds no " + what + " constant");
  return v;
}

unsigned Module::dynamic_smem(const LaunchStep& s) const {
  if (s.smem_kernel < 0) return s.dynamic_smem;
  const long long bytes = constant(s.smem_kernel, "shared memory");
  if (bytes > (long long)(UINT32_MAX)) throw Error(context_ + ": a shared memory constant of " + std::to_string(bytes) + " bytes");
  return unsigned(bytes);
}

void Module::block_of(const LaunchStep& s, unsigned block[3]) const {
  for (int d = 0; d < 3; ++d) block[d] = s.block[d];
  if (s.block_kernel < 0) return;
  // The plan could not bound a constant it never saw: the kernel's own limit (its
  // __launch_bounds__, its registers) is what a launch of more threads fails on, named here.
  const long long threads = constant(s.block_kernel, "block");
  const size_t i = size_t(s.kernel);
  const int most = max_threads_.at(i);
  if (threads < 1 || threads > most)
    throw Error(context_ + ": kernel " + std::to_string(i) + "'s block, a constant of the source, is " + std::to_string(threads) +
                " threads; the kernel takes 1 to " + std::to_string(most) + " (its __launch_bounds__, registers and the device's limit)");
  block[0] = unsigned(threads), block[1] = block[2] = 1;
}

void Module::launch(const LaunchStep& s, CUstream stream, void** params) {
  const unsigned smem = dynamic_smem(s);
  unsigned block[3];
  block_of(s, block);
  const size_t i = static_cast<size_t>(s.kernel);
  unsigned grid[3] = {s.grid[0], s.grid[1], s.grid[2]};
  if (s.persistent) {
    grid[0] = std::min(grid[0], resident_blocks(i, s.grid, block, smem, s.cluster));
    grid[0] -= grid[0] % s.cluster[0]; // whole clusters (resident_blocks counts whole clusters: never to 0)
  }
  if (s.cooperative) {
    allow_smem(i, smem);
    CUlaunchAttribute attr = {};
    attr.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attr.value.cooperative = 1;
    CUlaunchConfig cfg = launch_config(grid, block, smem, stream);
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    check_cu(driver().cuLaunchKernelEx(&cfg, function(i), params, nullptr), "cuLaunchKernelEx(COOPERATIVE)", context_);
    return;
  }
  launch(i, grid, block, smem, stream, params, s.overlap_previous, s.balance_clusters, s.cluster);
}

void Module::launch(size_t i, const unsigned grid[3], const unsigned block[3], unsigned dynamic_smem, CUstream stream,
                    void** params, bool overlap_previous, bool balance_clusters, const unsigned* cluster) {
  const CUfunction f = function(i);
  allow_smem(i, dynamic_smem);
  if (cluster_blocks(cluster) > 1) {
    // A launch-time cluster shape: cuLaunchKernelEx with it (and the scheduling policy if asked).
    CUlaunchAttribute attrs[2] = {};
    attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[0].value.clusterDim.x = cluster[0], attrs[0].value.clusterDim.y = cluster[1], attrs[0].value.clusterDim.z = cluster[2];
    unsigned n = 1;
    if (balance_clusters) {
      attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
      attrs[n++].value.clusterSchedulingPolicyPreference = CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING;
    }
    CUlaunchConfig cfg = launch_config(grid, block, dynamic_smem, stream);
    cfg.attrs = attrs;
    cfg.numAttrs = n;
    check_cu(driver().cuLaunchKernelEx(&cfg, f, params, nullptr), "cuLaunchKernelEx(CLUSTER_DIMENSION)", context_);
    return;
  }
  // Both attributes exist from sm_90 on, where dependent_launch_ is set.
  CUlaunchAttribute attrs[2] = {};
  unsigned n = 0;
  if (overlap_previous && dependent_launch_) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[n++].value.programmaticStreamSerializationAllowed = 1;
  }
  if (balance_clusters && dependent_launch_) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
    attrs[n++].value.clusterSchedulingPolicyPreference = CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING;
  }
  if (n > 0) {
    CUlaunchConfig cfg = launch_config(grid, block, dynamic_smem, stream);
    cfg.attrs = attrs;
    cfg.numAttrs = n;
    // The call's name for an error, without building a string on every launch.
    const char* call = n == 2 ? "cuLaunchKernelEx(PROGRAMMATIC_STREAM_SERIALIZATION, CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)"
                       : overlap_previous ? "cuLaunchKernelEx(PROGRAMMATIC_STREAM_SERIALIZATION)"
                                          : "cuLaunchKernelEx(CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)";
    check_cu(driver().cuLaunchKernelEx(&cfg, f, params, nullptr), call, context_);
    return;
  }
  check_cu(driver().cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], dynamic_smem, stream, params, nullptr),
           "cuLaunchKernel", context_);
}

} // namespace ktune
