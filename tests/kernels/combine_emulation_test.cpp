// attention_combine.cuh, the splits' merge that attention_decode and attention_wgmma share, run on
// the CPU: the header's own text (as embedded in ktune) compiled by the host compiler with
// kernels/combine_emulation/main.cc, beside a stand-in attention_mma.cuh that emulates a warp, and
// checked against an FP64 merge over head dims 64-256, 2-128 splits, padded head dims, f16 and
// bf16, rows past a block's end and rows no split saw a key of. Then the GPU test's planted faults
// of the header (ops/attention_combine_faults.h), each of which must fail here too: the merge's
// indexing is checked without a GPU, its speed and memory ordering only on one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/embedded.h"
#include "ops/attention_combine_faults.h"
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
using ktune::testing::run_command;

struct Emulated {
  bool built;
  int status;
  std::string out;
};

// The merge's header text `header` built and run in a folder of its own under `root`.
Emulated emulate(const fs::path& root, const std::string& tag, const std::string& header) {
  const fs::path dir = root / tag;
  fs::create_directories(dir);
  std::ofstream(dir / "attention_combine.cuh") << header;
  const fs::path here = fs::path(KTUNE_SOURCE_DIR) / "tests" / "kernels" / "combine_emulation";
  fs::copy_file(here / "attention_mma.cuh", dir / "attention_mma.cuh", fs::copy_options::overwrite_existing);
  const std::string exe = (dir / "emulate").string();
  const auto build = run_command(std::string(KTUNE_HOST_CXX) + " -std=c++20 -O0 -w -I" + dir.string() + " " +
                                 (here / "main.cc").string() + " -o " + exe + " 2>&1");
  if (build.status != 0) return {false, build.status, build.out};
  const auto run = run_command(exe + " 2>&1");
  return {true, run.status, run.out};
}

} // namespace

TEST(CombineEmulation, MergesAsFp64AndRejectsThePlantedFaults) {
  const std::string header(ktune::embedded_file(ktune::testing::kCombineHeader));
  ASSERT_FALSE(header.empty());
  const fs::path root = fs::temp_directory_path() / ("ktune-combine-emulation-" + std::to_string(::getpid()));
  fs::remove_all(root);

  const Emulated clean = emulate(root, "clean", header);
  ASSERT_TRUE(clean.built) << clean.out;
  EXPECT_EQ(clean.status, 0) << clean.out;
  EXPECT_NE(clean.out.find("0 wrong in all"), std::string::npos) << clean.out;

  int n = 0;
  for (const auto& fault : ktune::testing::kCombineFaults) {
    std::string planted = header;
    const size_t at = planted.find(fault.from);
    ASSERT_NE(at, std::string::npos) << "planted fault '" << fault.name << "' no longer matches attention_combine.cuh";
    planted.replace(at, std::string(fault.from).size(), fault.to);
    const Emulated v = emulate(root, "fault" + std::to_string(n++), planted);
    ASSERT_TRUE(v.built) << fault.name << ": " << v.out;
    EXPECT_EQ(v.status, 1) << fault.name << " passed the emulation:\n" << v.out;
    std::cout << "[ ktune    ] planted, " << fault.name << ": "
              << v.out.substr(v.out.rfind('\n', v.out.size() - 2) + 1);
  }
  fs::remove_all(root);
}
