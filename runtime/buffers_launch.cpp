#include "runtime/buffers_launch.h"

#include "ktune/error.h"
#include "ktune/runtime.h"
#include "runtime/op_launcher.h"
#include "runtime/tensor_maps.h"

namespace ktune {

BufferArgs::BufferArgs(const Problem& p, const std::vector<const void*>& buffers) : p_(&p) {
  const OpInfo& info = op_info(p.op);
  if (buffers.size() != info.operands.size())
    throw UsageError(p.key() + ": " + std::to_string(buffers.size()) + " buffers given, op " + p.op + " takes " +
                     std::to_string(info.operands.size()));
  for (size_t i = 0; i < buffers.size(); ++i) {
    const int64_t n = operand_elements(p, i);
    if (n > 0 && !buffers[i]) throw UsageError(p.key() + ": buffer '" + info.operands[i].name + "' is null");
    if (info.operands[i].output && n > 0) empty_ = false;
    ptrs_.push_back(reinterpret_cast<CUdeviceptr>(buffers[i]));
  }
  for (int64_t d : p.dims) dims_.push_back(static_cast<long long>(d));
  for (int64_t s : p.ld) dims_.push_back(static_cast<long long>(s)); // shaped operands' strides follow the dimensions
  for (const auto& [name, value] : info.scalars) scalars_.push_back(static_cast<float>(p.scalar(name)));
  for (auto& v : ptrs_) params_.push_back(&v);
  for (auto& v : dims_) params_.push_back(&v);
  for (auto& v : scalars_) params_.push_back(&v);
}

void launch_buffers(Module& m, const LaunchPlan& plan, BufferArgs& args, CUstream stream) {
  if (args.empty()) return;
  if (plan.workspace_bytes)
    throw Error(m.context() + ": an op of plain buffers takes no workspace, the plan asks for " +
                std::to_string(plan.workspace_bytes) + " bytes");
  for (const LaunchStep& s : plan.steps) {
    if (!s.tma()) {
      m.launch(s, stream, args.params());
      continue;
    }
    // The step's tensor maps after the scalars, encoded for these pointers (cached per thread).
    CUtensorMap maps[TensorMapKey::kMaxRank * 2];
    if (s.tma_maps.size() > sizeof maps / sizeof maps[0])
      throw Error(m.context() + ": " + std::to_string(s.tma_maps.size()) + " tensor maps in one step");
    std::vector<void*> params(args.params(), args.params() + args.count());
    for (size_t i = 0; i < s.tma_maps.size(); ++i) {
      const LaunchStep::TmaOperand& t = s.tma_maps[i];
      if (t.operand < 0 || size_t(t.operand) >= args.pointers().size())
        throw Error(m.context() + ": tensor map of operand " + std::to_string(t.operand) + ", which the op does not have");
      const void* ptr = reinterpret_cast<const void*>(args.pointers()[size_t(t.operand)]);
      maps[i] = encode_tensor_map(operand_map_key(args.problem(), ptr, t), [&] {
        return m.context() + ", tensor map of " + op_info(args.problem().op).operands[size_t(t.operand)].name + " at " +
               args.problem().key();
      });
      params.push_back(&maps[i]);
    }
    m.launch(s, stream, params.data());
  }
}

// Ops of plain buffers: one per operand (OpInfo::operands), served by Runtime::run_buffers.
class BuffersLauncher final : public OpLauncher {
 public:
  void run(Runtime& rt, const Problem& p, const std::vector<void*>& buffers, CUstream stream) const override {
    rt.run_buffers(p, buffers, stream);
  }
};

const OpLauncher& buffers_launcher() {
  static const BuffersLauncher l;
  return l;
}

} // namespace ktune
