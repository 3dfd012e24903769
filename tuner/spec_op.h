// The tuner's runner for a user's kernel (OpInfo::runner "spec"; docs/KERNEL_SPEC.md): every
// buffer of the spec filled as it says (random, zeros, ones, ramp, a constant, a file), outputs
// poisoned, guard bytes around each, temporaries in a workspace; verification runs the spec's
// reference (a kernel of the same source, or a named config) once per prepared input set on the
// same inputs and holds each output element to |out - ref| <= atol + rtol |ref|. All of it runs
// on the GPU (spec_check.cu): a check costs a few launches, whatever the buffers' size.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "ktune/compiler.h"
#include "ktune/device_info.h"
#include "tuner/op_runner.h"

namespace ktune {

struct SpecFill;

enum class ElemType;

// The tolerance an output of type t is held to when its spec gives none: rtol, and atol as rtol
// times the output's largest |reference| (differences of summation order scale with the output).
double spec_default_rtol(ElemType t);

// The runner's fill, compare and byte-compare kernels (kernel_templates/spec/spec_check.cu), in
// this order: ktune_spec_fill, ktune_spec_differ, ktune_spec_absmax, ktune_spec_compare.
CompileRequest spec_check_request(const std::string& arch);

// The compile of a spec's reference, baseline or setup kernels (what: "reference", "baseline", "setup") for
// problem p: the spec's source, those steps' kernel names and that config's options; none where
// the spec has no such kernel (no baseline; a check by answers, or none).
std::optional<CompileRequest> spec_side_request(const std::string& op, const std::string& what, const Problem& p,
                                                const std::string& arch);

std::unique_ptr<OpRunner> make_spec_runner(Compiler& compiler, const DeviceInfo& device);

// ktune_spec_fill's (spec_check.cu) kind, lo, hi and value for a fill at a problem (fill_at's):
// what makes on the GPU the bytes spec_fill_bytes makes on the host. Not for files and
// permutations, made on the host.
struct DeviceFill {
  int kind = 0;
  double lo = 0, hi = 0, value = 0;
};
DeviceFill device_fill(const SpecFill& at);

} // namespace ktune
