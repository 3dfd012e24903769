#include "runtime/l2_flush.h"

#include <algorithm>
#include <string>

#include "runtime/cuda_check.h"
#include "runtime/driver.h"

namespace ktune {

namespace {

// The flush kernel, as PTX for the driver to compile for whatever GPU it runs on (nvcc -ptx of:
// sum every float4 of p, store the sum only if it is exactly -1, which the fill pattern never
// gives, so the loads cannot be optimised away and nothing is written), and the delay kernel
// (one thread spinning on %globaltimer for ns nanoseconds).
constexpr char kFlushPtx[] = R"(.version 7.0
.target sm_75
.address_size 64
.visible .entry ktune_l2_flush(.param .u64 p, .param .u64 n, .param .u64 out)
{
  .reg .pred %p<4>;
  .reg .f32 %f<16>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<17>;
  ld.param.u64 %rd8, [p];
  ld.param.u64 %rd9, [n];
  ld.param.u64 %rd10, [out];
  mov.u32 %r1, %ntid.x;
  cvt.u64.u32 %rd1, %r1;
  mov.u32 %r2, %ctaid.x;
  mul.wide.u32 %rd11, %r2, %r1;
  mov.u32 %r3, %tid.x;
  cvt.u64.u32 %rd12, %r3;
  add.s64 %rd16, %rd11, %rd12;
  setp.ge.u64 %p1, %rd16, %rd9;
  @%p1 bra DONE;
  mov.u32 %r4, %nctaid.x;
  cvt.u64.u32 %rd13, %r4;
  mul.lo.s64 %rd3, %rd13, %rd1;
  cvta.to.global.u64 %rd4, %rd10;
  cvta.to.global.u64 %rd5, %rd8;
  mov.f32 %f15, 0f00000000;
LOOP:
  shl.b64 %rd14, %rd16, 4;
  add.s64 %rd15, %rd5, %rd14;
  ld.global.nc.v4.f32 {%f4, %f5, %f6, %f7}, [%rd15];
  add.f32 %f12, %f4, %f5;
  add.f32 %f13, %f6, %f7;
  add.f32 %f14, %f12, %f13;
  add.f32 %f15, %f15, %f14;
  add.s64 %rd16, %rd16, %rd3;
  setp.lt.u64 %p2, %rd16, %rd9;
  @%p2 bra LOOP;
  setp.neu.f32 %p3, %f15, 0fBF800000;
  @%p3 bra DONE;
  st.global.f32 [%rd4], %f15;
DONE:
  ret;
}

.visible .entry ktune_delay(.param .u64 ns)
{
  .reg .pred %p<2>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [ns];
  mov.u64 %rd2, %globaltimer;
  add.s64 %rd3, %rd2, %rd1;
SPIN:
  mov.u64 %rd4, %globaltimer;
  setp.lt.u64 %p1, %rd4, %rd3;
  @%p1 bra SPIN;
  ret;
}
)";

} // namespace

L2Flusher::L2Flusher(int l2_bytes) : buf_(size_t(std::max(l2_bytes, 1 << 20)) * 2, "L2 flush buffer") {
  const std::string what = "L2 flush buffer of " + std::to_string(buf_.bytes()) + " bytes";
  check_cu(driver().cuMemsetD32Async(buf_.ptr(), 0x3f800000u, buf_.bytes() / 4, nullptr), "cuMemsetD32Async", what);
  check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", what);
  check_cu(driver().cuModuleLoadData(&module_, kFlushPtx), "cuModuleLoadData", "the L2 flush kernel (PTX)");
  const CUresult r1 = driver().cuModuleGetFunction(&flush_, module_, "ktune_l2_flush");
  const CUresult r2 = r1 == CUDA_SUCCESS ? driver().cuModuleGetFunction(&delay_, module_, "ktune_delay") : r1;
  if (r2 != CUDA_SUCCESS) {
    driver().cuModuleUnload(module_);
    check_cu(r2, "cuModuleGetFunction", r1 != CUDA_SUCCESS ? "ktune_l2_flush" : "ktune_delay");
  }
}

L2Flusher::~L2Flusher() {
  if (module_) driver().cuModuleUnload(module_);
}

void L2Flusher::flush(CUstream stream) {
  CUdeviceptr p = buf_.ptr(), out = buf_.ptr();
  unsigned long long n = buf_.bytes() / 16;
  void* params[] = {&p, &n, &out};
  check_cu(driver().cuLaunchKernel(flush_, 1024, 1, 1, 256, 1, 1, 0, stream, params, nullptr), "cuLaunchKernel",
           "ktune_l2_flush (flushing L2)");
}

void L2Flusher::delay(CUstream stream, double us) {
  unsigned long long ns = (unsigned long long)(us * 1000);
  void* params[] = {&ns};
  check_cu(driver().cuLaunchKernel(delay_, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr), "cuLaunchKernel",
           "ktune_delay (holding the stream while the timed launch is queued)");
}

} // namespace ktune
