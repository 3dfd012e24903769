#pragma once
// Standard headers for user kernels under NVRTC, which ships none: a source written for nvcc
// includes <cstdint>, <cmath>, <cfloat>, <cassert> or, for its host code, <cstdio> and <vector>.
// Handed to NVRTC as in-memory headers (KernelSpec::std_headers), only those a spec's own folders
// and include_dirs do not hold (a user's own <cstdint> wins).

#include <string>
#include <utility>
#include <vector>

namespace ktune {

// (name, text) of each: libcu++'s twin (<cuda/std/NAME>) with its names in std:: too; <cmath> and
// <cstdlib> CUDA's global functions in std:: (as libstdc++'s are its C library's); <cfloat> and
// <math.h>'s constants spelled out; the host's library headers (<vector>, <iostream>) empty.
const std::vector<std::pair<std::string, std::string>>& nvrtc_std_headers();

// Device code's view of one of CUDA's own headers that mix host code into what kernels include,
// by the name it is included by, made once from the toolkit's file under include_dir (CUDA's
// include folder); nullptr for a name that has none, or where the toolkit lacks the file:
//   <cuda.h> and the host libraries' headers (cublas_api.h, cublas_v2.h, cublasLt.h, cusparse.h,
//     cufft.h, curand.h, cusolverDn.h, cuda_profiler_api.h, ...): device_view_of_header's, the
//     macros those headers define known to each (CUBLASWINAPI is cublas_api.h's, cublasLt.h's
//     declarations carry it); their types, enums and macros stay (a TMA kernel takes a CUtensorMap);
//   <nvrtc.h>: the same, its <stdlib.h> moved out of its extern "C" block; cuDNN's cudnn*.h where
//     the toolkit's folder holds them;
//   <nvtx3/...>: NVTX 3's types and macros, its host API and the implementation its headers
//     include (nvtxDetail/*Impl*.h) gone, its own includes spelled <nvtx3/...>;
//   <cub/cub.cuh>: CUB's umbrella without its device-wide algorithms (cub/device/, launched from
//     the host) and its host caching allocator; the block, warp, thread and iterator parts stay;
//   Thrust's host side (<thrust/sort.h>, <thrust/device_vector.h>, the execution policies: all its
//     top-level headers that do not compile under NVRTC): its device-usable headers, and
//     stand-ins of its containers and device_ptr taking any initializer.
const std::string* nvrtc_toolkit_view(const std::string& include_dir, const std::string& name);

// A host-only library whose headers NVRTC cannot compile, included for host code: the stand-in
// ktune hands NVRTC for the header `name` (as included) found at `path` (read only where the name
// is the library's), or "" for any other. `path` "": found in no folder of the include path (a
// project whose build fetches the library, lmdeploy's CMake FetchContent of {fmt}): the name
// alone decides. {fmt} (`<fmt/format.h>`, `<fmt/core.h>`
// ...: its constexpr formatting calls its host functions; tiny-cuda-nn's common_host.h): the
// namespaces fmt and fmt::literals (a `using namespace fmt::literals;`), format_string,
// string_view, memory_buffer and the like taking any initializer, and FMT_STRING / FMT_COMPILE;
// code that formats is host code, which host_code's skip blanks.
std::string host_library_stand_in(const std::string& name, const std::string& path);

// What nvcc's implicit <cuda_runtime.h> gives device code and NVRTC's does not, for the names
// `text` (the sources and their headers) uses, each where no macro of that name is set:
// <math.h>'s INFINITY and NAN (as libcu++'s <cmath> spells them under NVRTC, so that including it
// after is no redefinition), glibc's uint, ushort and ulong (<sys/types.h>, which nvcc's
// <stdlib.h> brings). "" where the text uses none. Goes before the sources.
std::string nvrtc_nvcc_prelude(const std::string& text);

// text with each `using namespace std;` followed, on its line, by using-declarations of CUDA's
// global math functions (`using ::truncf;` ...). ktune's std:: names libcu++'s by a
// using-directive, and libcu++ declares its own cuda::std::truncf beside CUDA's ::truncf, so an
// unqualified truncf(x) after `using namespace std;` is ambiguous where under nvcc std::truncf is
// ::truncf; the declarations make the global one the name's meaning in that namespace or block
// (kaolin's `namespace kaolin { using namespace std; ... truncf(u) }`). At global scope they
// cannot: both are then found in one scope (qualify_ambiguous_std_calls, after the compile).
std::string with_std_math_declarations(const std::string& text);

// Whether `name` is one of CUDA's global math functions (sqrt, sqrtf, log, logf, pow, ...): none is
// constexpr, so a namespace-scope const initialized by a call of one is initialized at run time.
bool cuda_math_function(const std::string& name);

// text with each object-like macro whose replacement is a pragma directive (moderngpu's `#define
// PRAGMA_UNROLL #pragma unroll`) defined as the _Pragma operator of it instead. nvcc preprocesses
// apart, and the directive its preprocessor writes on the macro's line is one to its front end;
// NVRTC preprocesses as it parses, and refuses the '#'. Lines and line numbers are kept.
std::string with_pragma_operators(const std::string& text);

// text with nvcc's __NVCC__ read as defined in its #if, #elif, #ifdef and #ifndef lines
// (`defined(__NVCC__)`, `defined __NVCC__` and the word alone as 1; #ifdef __NVCC__ as #if 1,
// #ifndef as #if 0). nvcc defines it in both its passes, the device's too, and a project's
// headers test it for "compiled by the CUDA compiler" (xgboost's `#if defined(__CUDA__) ||
// defined(__NVCC__)` then `#define XGBOOST_DEVICE __host__ __device__`, else nothing: its
// device functions became host ones); NVRTC does not define it, and defining it for the whole
// compile would take the toolkit's headers (CCCL's, which test NVRTC's own macro first or not)
// down their nvcc paths. A project's files only, then. Lines and line numbers are kept.
std::string with_nvcc_defined(const std::string& text);

// The calls a compile's log finds ambiguous between libcu++'s cuda::std function and CUDA's
// global one of the same signature (qualified `::name(...)`) or ktune's std:: overload on
// integers (`std::name(...)`, sqrt(2)), in `texts` (file name as the log gives it -> that file's
// text, whose #line directives are followed): after a `using namespace std;` at global scope both
// are found in one scope wherever libcu++'s math is in the program (CUB and <complex> bring it;
// ktune's <cmath> does not), so an unqualified truncf(x) or abs(i) is ambiguous under NVRTC where
// under nvcc std's are the global ones. Only the calls the log points at (its caret's column, the
// echoed line checked against the text) change; a call the log shows through a macro stays.
// Returns how many changed.
size_t qualify_ambiguous_std_calls(const std::string& log, const std::vector<std::pair<std::string, std::string*>>& texts);

// The data members of host classes that the log's errors point at (a line from a member's
// kHostDataBegin to its kHostDataEnd, core/host_code.h), blanked in `texts` (named as for
// qualify_ambiguous_std_calls), marks and all, every newline kept: a host class's member whose
// type NVRTC cannot name (one a library declares only for host compilers) goes, as nvcc's device
// pass never compiles the host members that would use it. Returns how many went; *first (where
// given) is the log's first line that pointed at one.
size_t drop_refused_host_data(const std::string& log, const std::vector<std::pair<std::string, std::string*>>& texts,
                              std::string* first = nullptr);

// PyTorch's and pybind11's headers for NVRTC under host_code skip (core/nvrtc_torch.cpp), which
// the include path does not hold or NVRTC could not compile if it did: the stand-in for `name`
// (torch/..., ATen/..., c10/..., THC/..., pybind11/..., Python.h) brings the standard headers
// PyTorch's bring (vLLM's kernels say int64_t through them), and for PyTorch's own
// (torch_header), the device view of its types (kTorchDeviceTypesHeader, one text all include):
// c10::Half and BFloat16 as PyTorch lays them out and computes with them, c10::complex,
// at::acc_type and opmath_type, the C10_ macros, ATen's WARP_SHFL, gpuAtomicAdd and atomicAdd on
// Half and BFloat16, numeric_limits, PhiloxCudaState (a dropout kernel's seed, with
// at::cuda::philox::unpack), the tensor accessors (PackedTensorAccessor32/64, TensorAccessor) and
// at::cuda::detail::TensorInfo with IndexToOffset. PyTorch's host API (streams, c10::List) is
// declared at most, and the types a host class derives from or holds (at::Tensor,
// c10::intrusive_ptr, torch::CustomClassHolder) laid out with no API: the host code that uses it
// is what skip blanks.
extern const char* const kTorchDeviceTypesHeader;
bool torch_header(const std::string& name);
const std::string& nvrtc_torch_device_types();
std::string nvrtc_torch_stand_in(const std::string& name);

} // namespace ktune
