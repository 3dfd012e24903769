// The kernel templates, embedded into the library at build time (cmake/embed.cmake), so that a
// program linked against ktune needs no file from kernel_templates/ at run time.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ktune {

struct EmbeddedFile {
  std::string_view path; // relative to kernel_templates/, e.g. "gemm/gemm_simt.cu"
  std::string_view text;
};

const std::vector<EmbeddedFile>& embedded_files();
// The embedded headers (.h, .cuh) by the name kernels include them by, their file name (every
// compile hands them to NVRTC in memory under it: jit/compiler.cpp), with their text.
const std::vector<std::pair<std::string, std::string_view>>& embedded_headers();
// Throws Error naming the path when it is not embedded.
std::string_view embedded_file(std::string_view path);

} // namespace ktune
