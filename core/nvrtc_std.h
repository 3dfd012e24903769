#pragma once
// Standard headers for user kernels under NVRTC, which ships none: a source written for nvcc
// includes <cstdint>, <cmath>, <cfloat>, <cassert> or, for its host code, <cstdio> and <vector>.
// Handed to NVRTC as in-memory headers (KernelSpec::std_headers), only those a spec's own folders
// and include_dirs do not hold (a user's own <cstdint> wins).

#include <string>
#include <utility>
#include <vector>

namespace ktune {

// (name, text) of each: libcu++'s twin (<cuda/std/NAME>) with its names in std:: too; <cfloat>
// and <math.h>'s constants spelled out; the host's library headers (<vector>, <iostream>) empty.
const std::vector<std::pair<std::string, std::string>>& nvrtc_std_headers();

// (name, text) of CUDA's own headers that mix host code into what device code includes, as
// device code can take them, made once from the toolkit's files under include_dir (CUDA's
// include folder; none where it does not hold them):
//   <cuda.h>: device_view_of_header's (the driver API's declarations gone; its types, enums and
//     macros stay: a TMA kernel takes a CUtensorMap);
//   <cub/cub.cuh>: CUB's umbrella without its device-wide algorithms (cub/device/, launched from
//     the host) and its host caching allocator; the block, warp, thread and iterator parts stay.
const std::vector<std::pair<std::string, std::string>>& nvrtc_toolkit_views(const std::string& include_dir);

} // namespace ktune
