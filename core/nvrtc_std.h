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

} // namespace ktune
