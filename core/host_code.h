#pragma once
// A project's .cu file holds its host code beside its kernels (main, the launches, host helpers),
// which NVRTC refuses. A spec's "host_code": "skip" blanks the host functions' definitions before
// the compile, so the file compiles as it is in the project.

#include <map>
#include <set>
#include <string>

namespace ktune {

// What the reading of one of a project's files takes from the project around it.
struct ProjectReading {
  // Object-like macros other headers define (a toolkit header's CUBLASWINAPI, defined in the
  // cublas_api.h it includes), read as the text's own are.
  std::map<std::string, std::string> known;
  // Host functions skip blanked in the project's other files (a header's template instantiated
  // in a .cu): their explicit instantiations and using-declarations here go too.
  std::set<std::string> elsewhere;
  // The names the project's other files read in unevaluated operands (names_of;
  // CUTLASS reads conv/detail.hpp's functions in a kernel header's decltype), read as the text's
  // own are.
  std::set<std::string> unevaluated;
  // The oldest arch compiled, as __CUDA_ARCH__ spells it (800 for sm_80; CUDA 13 compiles for
  // sm_75 on): an #if comparing __CUDA_ARCH__ is read where every arch from it on gives one answer.
  int min_arch = 750;
  // Function-like macros the project's files define (defined_function_macros): a call of one at
  // namespace scope whose expansion defines host functions and nothing else goes (Apex's
  // `GN_FWD_BWD_ONE_PASS_DEFINITION(10, 640)`, defined in its macros.h through four more levels
  // of macros).
  std::map<std::string, std::string> function_like;
  // The macros the compile itself defines (a spec's `defines`, its options' -D), each with its
  // value where that is a constant ("" where not): an #if on one is read as NVRTC will read it, not
  // as a macro no file defines (HOOMD-blue wraps whole headers in `#ifdef ENABLE_HIP`, a name
  // the reading otherwise takes for another GPU maker's flag, which a CUDA build never sets).
  std::map<std::string, std::string> defined;
  // The names of the types the project's files declare (names_of): an ALL_CAPS one before a
  // declaration's name is a type, no header's macro that may be an execution space.
  std::set<std::string> types;
  // Mark the data members of host classes (kHostDataBegin ... kHostDataEnd) for the compile, which
  // leaves out those NVRTC refuses (drop_refused_host_data, core/nvrtc_std.h): the views a spec's
  // compile reads, not a reading done for its names alone.
  bool mark_host_data = false;
};

// The comments around a data member of a host class (a class whose member functions all went as
// host code) in a text skip_host_functions read with ProjectReading::mark_host_data.
extern const char* const kHostDataBegin;
extern const char* const kHostDataEnd;

// text with what NVRTC refuses as host code replaced by spaces, every newline and preprocessor
// line kept (so that NVRTC's line numbers stay the file's): at namespace scope (and in extern "C"
// blocks) the definitions and declarations of functions that carry neither __global__ nor
// __device__ (after the text's own object-like macros are expanded: #define DINLINE __device__
// __forceinline__), the explicit instantiations of the function templates it blanked or that
// `elsewhere` names (host functions blanked in the project's other files: a header's template
// instantiated in a .cu), directly or through a function-like macro of the text or the project
// (a call of one whose expansion defines host functions and nothing else goes too), and variables
// with no memory space that are not const, and data naming a function blanked before it; in a
// class body, such member functions' definitions and declarations (not `= default` or `= delete`
// unless virtual; data members stay, but for static ones neither const nor constexpr, host variables;
// an operator's is a function's; a host class's data members marked where
// ProjectReading::mark_host_data asks). A constexpr function without
// an execution space is given `__host__ __device__` instead (nvcc's on both sides), its
// declaration too, as is a function only declared and read in an unevaluated operand (decltype,
// sizeof: a trait's probe; in a class too, and a namespace-scope definition so read keeps its head
// as that declaration; one whose return type is deduced stays whole where it is a template or a
// member of one). `__host__` on a variable goes (nvcc ignores it, NVRTC refuses it). #if conditions are read as NVRTC
// evaluates them: a macro #defined only in a branch NVRTC skips has no meaning here. Left as they
// are: anything whose head has an ALL_CAPS name before its own that the text does not define (a
// header's macro may be an execution space). The braces are read over every #if branch, or where
// they do not balance so, over the first branch of each group; where neither balances, nothing
// is blanked. *blanked: how many definitions and declarations were blanked or given an execution
// space; *names (where given) gains the names of the namespace-scope functions blanked, and
// *device_names those of the namespace-scope device functions and kernels defined. A
// using-declaration of a function blanked here or named by `elsewhere` goes too.
// project: what the reading takes from the project around the text (ProjectReading).
std::string skip_host_functions(const std::string& text, int* blanked, const ProjectReading& project = {},
                                std::set<std::string>* names = nullptr, std::set<std::string>* device_names = nullptr);

// What one reading of a text names, comments and string literals aside: the words read in its
// unevaluated operands (decltype, sizeof, alignof, noexcept), and the types it declares (its
// classes, structs, unions and enums, defined or declared, its typedefs' and aliases' names).
struct TextNames {
  std::set<std::string> unevaluated, types;
};
TextNames names_of(const std::string& text);

// The object-like macros text's #define lines define (name: replacement), added to *macros; one
// defined otherwise again (in *macros before, or in #if branches this reading cannot choose
// between) reads as every meaning's words together.
void defined_macros(const std::string& text, std::map<std::string, std::string>* macros);

// The function-like macros text's #define lines define (name: "(parameters) replacement", its
// comments and line continuations gone), added to *macros; one defined otherwise again (in *macros
// before, or in #if branches) is kept as "", a macro whose expansion is not known.
void defined_function_macros(const std::string& text, std::map<std::string, std::string>* macros);

// A toolkit header that declares the host's API beside the types device code uses (cuda.h: its
// CUtensorMap is a kernel's parameter) as device code can include it under NVRTC:
// skip_host_functions' text without its comments and each line's trailing blanks, every line
// kept (so that NVRTC's line numbers are the header's).
std::string device_view_of_header(const std::string& text, const std::map<std::string, std::string>& known = {});

} // namespace ktune
