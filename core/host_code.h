#pragma once
// A project's .cu file holds its host code beside its kernels (main, the launches, host helpers),
// which NVRTC refuses. A spec's "host_code": "skip" blanks the host functions' definitions before
// the compile, so the file compiles as it is in the project.

#include <string>

namespace ktune {

// text with what NVRTC refuses as host code at namespace scope (and in extern "C" blocks)
// replaced by spaces, every newline kept (so that NVRTC's line numbers stay the file's): the
// definitions and declarations of functions that carry neither __global__ nor __device__ (after
// the text's own object-like macros are expanded: #define DINLINE __device__ __forceinline__),
// and variables with no memory space that are not const. Left as they are: class bodies and what
// they define; anything whose head has an ALL_CAPS name before its own that the text does not
// define (a header's macro may be an execution space), or a constructor's member initializers.
// Where the text's braces do not balance as this reading sees them (#if branches that each open
// one), nothing is blanked. *blanked: how many definitions were.
std::string skip_host_functions(const std::string& text, int* blanked);

// A toolkit header that declares the host's API beside the types device code uses (cuda.h: its
// CUtensorMap is a kernel's parameter) as device code can include it under NVRTC:
// skip_host_functions' text without its comments and each line's trailing blanks, every line
// kept (so that NVRTC's line numbers are the header's).
std::string device_view_of_header(const std::string& text);

} // namespace ktune
