// The kernel templates, embedded into the library at build time (cmake/embed.cmake), so that a
// program linked against ktune needs no file from kernel_templates/ at run time.
#pragma once
#include <string_view>
#include <vector>

namespace ktune {

struct EmbeddedFile {
  std::string_view path; // relative to kernel_templates/, e.g. "gemm/gemm_simt.cu"
  std::string_view text;
};

const std::vector<EmbeddedFile>& embedded_files();
// Throws Error naming the path when it is not embedded.
std::string_view embedded_file(std::string_view path);

} // namespace ktune
