// The tuner's runner for attention (OpInfo::runner "attention"): fills, checks and the FP64
// reference on the GPU (kernel_templates/attention/attention_check.cu).
#pragma once
#include <memory>
#include <string>

#include "ktune/compiler.h"
#include "ktune/device_info.h"
#include "tuner/op_runner.h"

namespace ktune {

// The check kernels, in this order: ktune_attn_fill, ktune_attn_guard, ktune_attn_stray,
// ktune_attn_reference.
CompileRequest attention_check_request(const std::string& arch);

std::unique_ptr<OpRunner> make_attention_runner(Compiler& compiler, const DeviceInfo& device);

} // namespace ktune
