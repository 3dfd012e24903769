// Which driver outcomes mean "no GPU" (list_devices returns none, GPU tests skip) and which mean "a
// driver that is installed but broken" (an error: GPU tests fail). Runs without a GPU: the driver is
// played by a stand-in libcuda.so.1 (tests/fake_driver/libcuda.cc) put first on LD_LIBRARY_PATH of
// a ktune devices child process. (No "Gpu" in the names: these run without one, and
// tools/gpu-check.sh picks GPU tests by that word.)
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "ktune/device.h"
#include "runtime/driver.h"
#include "runtime/no_gpu.h"
#include "test_paths.h"

namespace {

TEST(DeviceProbe, OnlyNoDeviceAndTheStubMeanNoDevice) {
  EXPECT_TRUE(ktune::cuinit_means_no_gpu(CUDA_ERROR_NO_DEVICE));
  EXPECT_TRUE(ktune::cuinit_means_no_gpu(CUDA_ERROR_STUB_LIBRARY));
  for (CUresult r : {CUDA_SUCCESS, CUDA_ERROR_UNKNOWN, CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,
                     CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_OPERATING_SYSTEM,
                     CUDA_ERROR_DEVICE_UNAVAILABLE, CUDA_ERROR_SYSTEM_NOT_READY, CUDA_ERROR_NOT_PERMITTED, CUDA_ERROR_INVALID_DEVICE})
    EXPECT_FALSE(ktune::cuinit_means_no_gpu(r)) << r;
}

// ktune devices with every driver call answering `result` (a CUresult number).
ktune::testing::CliRun devices_with_fake_driver(int result, const char* dir = KTUNE_FAKE_DRIVER_DIR) {
  return ktune::testing::run_command(std::string("env LD_LIBRARY_PATH=") + dir + " KTUNE_FAKE_CUDA_RESULT=" +
                                     std::to_string(result) + " " + ktune::testing::ktune_binary() + " devices 2>&1");
}

TEST(DeviceProbe, ADriverWithoutADeviceMeansNone) {
  for (int r : {int(CUDA_ERROR_NO_DEVICE), int(CUDA_ERROR_STUB_LIBRARY), int(CUDA_SUCCESS) /* and a count of 0 */}) {
    const auto run = devices_with_fake_driver(r);
    EXPECT_EQ(run.status, 1) << r << ": " << run.out;
    EXPECT_NE(run.out.find("ktune: no GPU available: "), std::string::npos) << r << ": " << run.out;
  }
  EXPECT_NE(devices_with_fake_driver(CUDA_ERROR_STUB_LIBRARY).out.find("stub"), std::string::npos);
  EXPECT_NE(devices_with_fake_driver(CUDA_SUCCESS).out.find("no CUDA device"), std::string::npos);
}

TEST(DeviceProbe, ABrokenDriverIsAnErrorNotNone) {
  for (int r : {int(CUDA_ERROR_UNKNOWN), int(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH), int(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE),
                int(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER), int(CUDA_ERROR_OPERATING_SYSTEM)}) {
    const auto run = devices_with_fake_driver(r);
    EXPECT_EQ(run.status, 1) << r << ": " << run.out;
    EXPECT_NE(run.out.find("ktune: error: the NVIDIA driver is installed but does not work: cuInit failed"), std::string::npos)
        << r << ": " << run.out;
    EXPECT_EQ(run.out.find("no GPU"), std::string::npos) << r << ": " << run.out;
  }
}

// A libcuda.so.1 that loads but lacks an entry point ktune needs is a driver too old, not none.
TEST(DeviceProbe, ADriverTooOldIsAnErrorNotNone) {
  const auto run = devices_with_fake_driver(CUDA_SUCCESS, KTUNE_OLD_FAKE_DRIVER_DIR);
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_NE(run.out.find("ktune: error: the NVIDIA driver is installed but cannot be used: libcuda.so.1 lacks cuTensorMapEncodeTiled"),
            std::string::npos)
      << run.out;
}

// Without the stand-in, on a machine without libcuda.so.1 (CI): none, saying why, and no error.
TEST(DeviceProbe, NoDriverLibraryMeansNone) {
  std::string why;
  if (ktune::try_driver(&why)) GTEST_SKIP() << "this machine has libcuda.so.1";
  std::string none;
  EXPECT_TRUE(ktune::list_devices(&none).empty());
  EXPECT_NE(none.find("cannot load libcuda.so.1"), std::string::npos) << none;
}

} // namespace
