// Launching the plan of an op of plain buffers (OpInfo::runner "buffers", and a user's kernel,
// "spec"). A built-in op's kernels get one device pointer per operand in OpInfo::operands order,
// then each dimension as a long long, then each stride of Problem::ld (N-dimensional operands')
// as a long long, then each scalar (the problem's, else the op's default) as a float; a TMA
// step's kernel then gets the step's tensor maps (LaunchStep::TmaOperand::box), a CUtensorMap
// each by value, and last the plan's workspace (LaunchPlan::workspace_bytes; null when it has
// none). A user's kernel gets its spec's arguments in the spec's order and types: the caller's
// buffers (OpInfo::operands), its temporaries in the workspace, its scalars computed or the
// problem's. The one place the tuner's runners, the runtime and its first use launch such
// ops through.
#pragma once
#include <cuda.h>

#include <vector>

#include "core/kernel_spec.h"
#include "ktune/family.h"
#include "ktune/problem.h"
#include "runtime/module.h"
#include "runtime/textures.h"

namespace ktune {

// The kernel arguments of one launch, kept together so that their addresses stay valid.
class BufferArgs {
 public:
  // Throws UsageError naming the op when the number of buffers is not its number of operands or
  // a buffer of a non-empty operand is null.
  // workspace: the plan's scratch memory (LaunchPlan::workspace_bytes; a spec's temporaries), 0
  // when it asks for none.
  BufferArgs(const Problem& p, const std::vector<const void*>& buffers, CUdeviceptr workspace = 0);
  // params() points into this object's own vectors.
  BufferArgs(const BufferArgs&) = delete;
  BufferArgs& operator=(const BufferArgs&) = delete;
  void** params() { return params_.data(); }
  const void* params_at(size_t i) const { return params_.at(i); }
  size_t count() const { return params_.size(); }
  const std::vector<CUdeviceptr>& pointers() const { return ptrs_; }
  const Problem& problem() const { return *p_; } // the caller's: it must outlive these arguments
  CUdeviceptr workspace() const { return workspace_; }
  // True when every operand the kernels write (outputs, and buffers updated in place) is empty:
  // there is nothing to launch.
  bool empty() const { return empty_; }
  // A user's kernel: its temporaries (in the workspace) and the scalars that follow the config,
  // as plan makes them (LaunchPlan::spec_args); launch_buffers calls it. Nothing for other ops.
  void bind(const LaunchPlan& plan);
  // Texture (or surface) argument i's object over the buffer at `at` (another than the call's
  // where a round's swap moved it; runtime/textures.h), made on the current context for stream;
  // and set as argument i, at each launch of a step that passes it (a plan's steps that do not
  // make none).
  TextureObject texture(size_t i, CUdeviceptr at, CUstream stream) const;
  const KernelSpec::TextureShape& texture_shape(size_t i) const { return textures_.at(i); }
  // Address table argument i's table over the buffer at `at` (runtime/address_tables.h), made on
  // the current context at the first call and kept.
  CUdeviceptr table(size_t i, CUdeviceptr at, CUstream stream) const;
  // Argument i's 8 bytes (SpecArg::made_at_launch: a texture's object, a table's address), as the
  // launch that passes it makes them.
  void set_made(size_t i, unsigned long long value) { structs_.at(i).at(0) = value; }

 private:
  const Problem* p_;
  const KernelSpec* spec_ = nullptr; // a user's kernel's
  std::vector<CUdeviceptr> ptrs_;
  std::vector<long long> dims_; // the dimensions, then the strides
  std::vector<float> scalars_;
  std::vector<unsigned long long> slots_; // a spec's arguments, one 8-byte slot each
  // A spec's struct arguments (SpecArg::fields), beside slots_: their bytes (8-byte words), filled
  // by bind; empty for the others.
  std::vector<std::vector<unsigned long long>> structs_;
  // A spec's texture and address table arguments' shapes at the problem, beside slots_; empty
  // where it has none.
  std::vector<KernelSpec::TextureShape> textures_;
  std::vector<KernelSpec::TableShape> tables_;
  std::vector<void*> params_;
  CUdeviceptr workspace_ = 0;
  bool empty_ = true;
};

// Every step of plan with args, in order; nothing when args is empty. A user's kernel's symbols
// are filled and its zero-filled temporaries cleared first, on the stream. Throws Error naming
// the module when the plan asks for a workspace that args lack.
void launch_buffers(Module& m, const LaunchPlan& plan, BufferArgs& args, CUstream stream);

} // namespace ktune
