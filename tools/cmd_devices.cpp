// ktune devices: the GPUs the driver sees, and the NVRTC version.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/compiler.h"
#include "ktune/device.h"
#include "tools/cli.h"

namespace ktune::cli {
namespace {

int cmd_devices(bool json) {
  std::string why;
  const auto devices = list_devices(&why);
  if (devices.empty()) {
    std::fprintf(stderr, "ktune: no GPU available: %s\n", why.c_str());
    return 1;
  }
  if (json) { // for programs: python/ktune/_ray_tune.py learns its GPU's uuid this way
    nlohmann::json list = nlohmann::json::array();
    for (const auto& d : devices)
      list.push_back({{"ordinal", d.ordinal}, {"name", d.name}, {"arch", d.arch}, {"uuid", d.uuid},
                      {"sm_count", d.sm_count}, {"memory_bytes", d.total_memory}, {"sm_clock_khz", d.sm_clock_khz},
                      {"mem_clock_khz", d.mem_clock_khz}, {"l2_bytes", d.l2_bytes}, {"driver_version", d.driver_version}});
    std::printf("%s\n", nlohmann::json{{"devices", list}, {"nvrtc", Compiler::nvrtc_version()}}.dump(2).c_str());
    return 0;
  }
  for (const auto& d : devices) {
    std::printf("%d: %s  %s  %d SMs  %.1f GiB  SM clock %d MHz  memory clock %d MHz  L2 %d MB  driver %d.%d\n",
                d.ordinal, d.name.c_str(), d.arch.c_str(), d.sm_count, d.total_memory / 1073741824.0,
                d.sm_clock_khz / 1000, d.mem_clock_khz / 1000, d.l2_bytes >> 20, d.driver_version / 1000,
                d.driver_version % 1000 / 10);
  }
  std::printf("NVRTC %s\n", Compiler::nvrtc_version().c_str());
  return 0;
}

} // namespace

Command add_devices(CLI::App& app) {
  auto* dv = app.add_subcommand("devices", "List the GPUs: name, arch, SMs, memory, clocks, driver");
  auto json = std::make_shared<bool>(false);
  dv->add_flag("--json", *json, "As JSON (ordinal, name, arch, uuid, SMs, memory, clocks, driver)");
  return {dv, [json] { return cmd_devices(*json); }};
}

} // namespace ktune::cli
