// gemm_wgmma's config geometry (defined in gemm_wgmma.cpp, the family's descriptor), for the files
// that reason about its configs beside it: the neighbour heuristics (gemm_wgmma_neighbours.cpp).
// Host-only, hence .hpp: the build embeds kernel_templates/'s .h, .cuh and .cu files for NVRTC,
// and every embedded header is part of every template's hash (jit/compiler.cpp), so a host header
// there would change every kernel's hash and void every cached cubin and recorded trial.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ktune/config.h"
#include "ktune/device_info.h"
#include "ktune/gemm_problem.h"

namespace ktune::wgmma {

// FP32 accumulators per thread of a consumer warpgroup.
int accumulators(const Config& c);
// Dynamic and static shared memory of the kernel.
size_t smem_bytes(const Config& c);
size_t static_smem_bytes(const Config& c);
// The kernel's M and N (SWAP = 1 computes C^T: its M is the problem's N).
int64_t kernel_m(bool swap, const GemmProblem& p);
int64_t kernel_n(bool swap, const GemmProblem& p);
// Work units (output tiles, pairs of them under MC) and blocks along x of the main grid.
int64_t units(const Config& c, const GemmProblem& p);
int64_t grid_x(const Config& c, const GemmProblem& p);

// The neighbours of config c lent to p (Family::neighbors_of; gemm_wgmma_neighbours.cpp).
std::vector<Config> neighbours(const Config& c, const GemmProblem& p, const DeviceInfo& d);

} // namespace ktune::wgmma
