#include "runtime/buffers_launch.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>

#include "core/kernel_spec.h"
#include "ktune/error.h"
#include "runtime/address_tables.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "ktune/runtime.h"
#include "runtime/op_launcher.h"
#include "runtime/tensor_maps.h"
#include "runtime/textures.h"

namespace ktune {

namespace {

// The device values of kSpecBuiltins (max_threads, smem_per_block, sm_count, regs_per_block, arch)
// of the current context's GPU, as a launch-time grid or scalar reads them.
static_assert(kSpecBuiltinCount == 3 + 5, "align, dtype_bytes, dtype_eps, then the five device values below");
std::array<double, 5> device_values(const std::string& what) {
  auto get = [&](CUdevice_attribute a, const char* name) { return double(current_device_attribute(a, name, what)); };
  return {get(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads"),
          get(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "opt-in shared memory"),
          get(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count"),
          get(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, "registers"),
          get(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "major") * 10 + get(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "minor")};
}

// A spec's arguments in its order: the caller's buffers and scalars, and the scalars computed
// from the problem alone. The temporaries and the scalars that follow the config are a plan's
// (BufferArgs::bind).
void pack_spec(const KernelSpec& s, const Problem& p, const std::vector<CUdeviceptr>& ptrs,
               std::vector<unsigned long long>& slots) {
  size_t next = 0;
  slots.assign(s.args.size(), 0);
  for (size_t i = 0; i < s.args.size(); ++i) {
    const SpecArg& a = s.args[i];
    unsigned char* slot = reinterpret_cast<unsigned char*>(&slots[i]);
    if (a.buffer && a.intent != SpecArg::temp) {
      const CUdeviceptr v = ptrs.at(next++);
      std::memcpy(slot, &v, sizeof v);
    } else if (a.scalar() && !a.follows_config && !a.set_at_launch()) { // a counter's or a value's: set at each launch
      store_elem(slot, 0, a.scalar_elem(p), s.scalar_value(i, p));
    }
  }
}

} // namespace

BufferArgs::BufferArgs(const Problem& p, const std::vector<const void*>& buffers, CUdeviceptr workspace)
    : p_(&p), workspace_(workspace) {
  const OpInfo& info = op_info(p.op);
  if (buffers.size() != info.operands.size())
    throw UsageError(p.key() + ": " + std::to_string(buffers.size()) + " buffers given, op " + p.op + " takes " +
                     std::to_string(info.operands.size()));
  for (size_t i = 0; i < buffers.size(); ++i) {
    const int64_t n = operand_elements(p, i);
    if (n > 0 && !buffers[i]) throw UsageError(p.key() + ": buffer '" + info.operands[i].name + "' is null");
    if (info.operands[i].written() && n > 0) empty_ = false;
    ptrs_.push_back(reinterpret_cast<CUdeviceptr>(buffers[i]));
  }
  if (info.spec) {
    spec_ = info.spec.get();
    pack_spec(*info.spec, p, ptrs_, slots_);
    const auto& args = info.spec->args;
    if (std::any_of(args.begin(), args.end(), [](const SpecArg& a) { return a.is_struct(); }))
      structs_.resize(slots_.size()); // no allocation a call for specs without one
    if (std::any_of(args.begin(), args.end(), [](const SpecArg& a) { return a.is_texture(); })) {
      textures_.resize(args.size());
      for (size_t i = 0; i < args.size(); ++i)
        if (args[i].is_texture()) textures_[i] = info.spec->texture_at(i, p);
    }
    if (std::any_of(args.begin(), args.end(), [](const SpecArg& a) { return a.is_table(); })) {
      tables_.resize(args.size());
      for (size_t i = 0; i < args.size(); ++i)
        if (args[i].is_table()) tables_[i] = info.spec->table_at(i, p);
    }
    for (size_t i = 0; i < slots_.size(); ++i) {
      const SpecArg& a = args[i];
      if (a.is_struct()) structs_[i].assign((a.struct_bytes + 7) / 8, 0);
      params_.push_back(a.is_struct() ? static_cast<void*>(structs_[i].data()) : static_cast<void*>(&slots_[i]));
    }
    return;
  }
  for (int64_t d : p.dims) dims_.push_back(static_cast<long long>(d));
  for (int64_t s : p.ld) dims_.push_back(static_cast<long long>(s)); // shaped operands' strides follow the dimensions
  for (const auto& [name, value] : info.scalars) scalars_.push_back(static_cast<float>(p.scalar(name)));
  for (auto& v : ptrs_) params_.push_back(&v);
  for (auto& v : dims_) params_.push_back(&v);
  for (auto& v : scalars_) params_.push_back(&v);
}

namespace {

// Struct a's bytes into `out` ((a.struct_bytes + 7) / 8 words): its plan's `data`, each pointer
// field the offset data holds past its buffer's address (address(k), buffer argument k's now),
// each map field the map of the shape data holds over its buffer's address (cached per thread);
// where: the spec, the struct and the problem, for an encode's error. A texture's bytes (its
// object) and a table's (its address) are set at each launch that passes it (launch_buffers).
void build_struct(const SpecArg& a, const std::vector<unsigned char>& data, unsigned long long* out,
                  const std::function<CUdeviceptr(int)>& address, const std::function<std::string()>& where) {
  if (data.size() != a.struct_bytes)
    throw Error("internal: a plan's struct " + a.name + " of " + std::to_string(data.size()) + " bytes, the spec's " +
                std::to_string(a.struct_bytes));
  if (a.made_at_launch()) throw Error(std::string("internal: ") + a.kind_name() + " " + a.name + " built as a struct");
  unsigned char* bytes = reinterpret_cast<unsigned char*>(out);
  std::memcpy(bytes, data.data(), data.size());
  for (const SpecArg::Field& f : a.fields)
    if (f.is_map()) {
      const KernelSpec::TensorMapShape shape = KernelSpec::TensorMapShape::from_bytes(bytes + f.offset);
      if (shape.rank < 1 || shape.rank > KernelSpec::TensorMapShape::kMaxRank)
        throw Error("internal: tensor map " + a.map_name(size_t(&f - a.fields.data())) + " built from a plan that made no shape for it");
      static_assert(sizeof(CUtensorMap) == 128, "a CUtensorMap is 128 bytes");
      const CUtensorMap map = encode_tensor_map(spec_map_key(shape, reinterpret_cast<const void*>(address(f.buffer))),
                                                [&] { return where() + ", tensor map " + a.map_name(size_t(&f - a.fields.data())); });
      std::memcpy(bytes + f.offset, &map, sizeof map);
    } else if (f.buffer >= 0) {
      CUdeviceptr at;
      std::memcpy(&at, bytes + f.offset, sizeof at);
      at += address(f.buffer);
      std::memcpy(bytes + f.offset, &at, sizeof at);
    }
}

} // namespace

CUdeviceptr BufferArgs::table(size_t i, CUdeviceptr at, CUstream stream) const {
  return address_table(tables_.at(i), at, stream, [&] {
    return spec_->path + ": address table " + spec_->args.at(i).name + " over " +
           spec_->args.at(size_t(spec_->args.at(i).fields.at(0).buffer)).name + " at " + p_->key();
  });
}

TextureObject BufferArgs::texture(size_t i, CUdeviceptr at, CUstream stream) const {
  return texture_object(*spec_, i, textures_.at(i), at, stream, [&] {
    return spec_->path + ": " + spec_->args.at(i).kind_name() + " " + spec_->args.at(i).name + " at " + p_->key();
  });
}

void BufferArgs::bind(const LaunchPlan& plan) {
  if (!spec_) return;
  if (plan.spec_args.size() != spec_->args.size())
    throw Error("internal: a plan of " + std::to_string(plan.spec_args.size()) + " spec arguments for " + spec_->path +
                ", which has " + std::to_string(spec_->args.size()));
  for (size_t i = 0; i < spec_->args.size(); ++i) {
    const SpecArg& a = spec_->args[i];
    const LaunchPlan::SpecArgValue& x = plan.spec_args[i];
    unsigned char* slot = reinterpret_cast<unsigned char*>(&slots_[i]);
    if (a.buffer && a.intent == SpecArg::temp) {
      const CUdeviceptr v = workspace_ + CUdeviceptr(x.offset);
      std::memcpy(slot, &v, sizeof v);
    } else if (a.scalar() && a.follows_config && !a.set_at_launch()) {
      slots_[i] = 0;
      store_elem(slot, 0, a.scalar_elem(*p_), x.value);
    }
  }
  // Structs last: their pointers and maps are the buffers' addresses now, temporaries' included
  // (a step whose round moves a buffer builds its own, launch_buffers). A texture or table is made
  // where a step passes it; a struct with maps the plan made no bytes for (no launched step passes
  // it as the call's) is not built.
  for (size_t i = 0; i < spec_->args.size(); ++i) {
    const SpecArg& a = spec_->args[i];
    if (!a.is_struct() || a.made_at_launch() || (a.struct_has_maps() && plan.spec_args[i].data.empty())) continue;
    build_struct(a, plan.spec_args[i].data, structs_[i].data(), [&](int k) { return CUdeviceptr(slots_[size_t(k)]); },
                 [&] { return spec_->path + " at " + p_->key(); });
  }
}

namespace {

// Where the arguments a user kernel's step passes disagree with the parameters its compiled
// kernel declares (their number, or a size: a buffer's pointer is 8 bytes, a scalar its type's),
// which would otherwise launch with garbage in the kernel's later parameters: why, else "".
std::string param_mismatch(const Module& m, const LaunchStep& st, const KernelSpec& s, const Problem& p) {
  return param_sizes_mismatch(s, st.args, m.param_sizes(size_t(st.kernel)), p,
                              m.context() + ", step " + std::to_string(st.kernel + 1));
}

// Temporary i set to its fill (zeros or a value) at `at`: its own buffer, or (a swapped one reset
// before a loop's round) the one it passes there.
void set_temp(Module& m, const KernelSpec& s, const LaunchPlan& plan, const Problem& p, size_t i, CUdeviceptr at, CUstream stream) {
  const SpecArg& a = s.args[i];
  if (!plan.spec_args[i].bytes) return;
  const std::string what = m.context() + ": setting " + a.name + " at " + p.key();
  const ElemType t = a.elem(p);
  const int width = a.fill.kind == SpecFill::zeros ? 1 : elem_bytes(t); // the parse allows values of 1, 2 and 4 bytes
  unsigned char bits[4] = {0, 0, 0, 0};
  if (a.fill.kind == SpecFill::constant) store_elem(bits, 0, t, plan.spec_args[i].value); // the plan's, at p
  const size_t n = plan.spec_args[i].bytes / size_t(width);
  if (width == 4) {
    unsigned v;
    std::memcpy(&v, bits, 4);
    check_cu(driver().cuMemsetD32Async(at, v, n, stream), "cuMemsetD32Async", what);
  } else if (width == 2) {
    unsigned short v;
    std::memcpy(&v, bits, 2);
    check_cu(driver().cuMemsetD16Async(at, v, n, stream), "cuMemsetD16Async", what);
  } else {
    check_cu(driver().cuMemsetD8Async(at, bits[0], n, stream), "cuMemsetD8Async", what);
  }
}

// A user's kernel's work before every launch: temporaries to clear, symbols to fill.
void spec_before_launch(Module& m, const KernelSpec& s, const LaunchPlan& plan, BufferArgs& args, CUstream stream) {
  const Problem& p = args.problem();
  for (size_t i = 0; i < s.args.size(); ++i) {
    const SpecArg& a = s.args[i];
    if (a.buffer && a.intent == SpecArg::temp && a.set_before_launch)
      set_temp(m, s, plan, p, i, args.workspace() + CUdeviceptr(plan.spec_args[i].offset), stream);
  }
  for (size_t k = 0; k < s.symbols.size(); ++k) {
    const SpecSymbol& y = s.symbols[k];
    if (y.planned) continue; // a slice the plan copies (LaunchStep::symbol)
    size_t bytes = 0;
    const CUdeviceptr at = m.global(y.name, &bytes);
    if (y.address_of >= 0) { // a __device__ pointer: the buffer's address, written where it changed
      const CUdeviceptr to = *static_cast<const CUdeviceptr*>(args.params_at(size_t(y.address_of)));
      const std::string what = m.context() + ": setting symbol " + y.name + " to the address of " +
                               s.args[size_t(y.address_of)].name + " at " + p.key();
      if (bytes < sizeof to)
        throw UsageError(s.path + ": " + m.context() + ": symbol " + y.name + " holds " + std::to_string(bytes) +
                         " bytes, an address 8");
      // A graph would replay the captured address whatever a call since set: refused, as host code
      // that sets it outside the graph must be.
      CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
      check_cu(driver().cuStreamIsCapturing(stream, &capturing), "cuStreamIsCapturing", what);
      if (capturing != CU_STREAM_CAPTURE_STATUS_NONE)
        throw UsageError(s.path + ": " + what + ": a symbol that holds a buffer's address is set before the call, which a "
                         "stream being captured (a CUDA graph) would replay with the captured address: call it outside "
                         "the capture");
      // What the last call wrote there (the module's variable is one, as the host program's: calls
      // on several streams at once, with other buffers or before the write of one has run, race).
      const std::string& key = y.name;
      if (m.changed(key, std::to_string(to))) {
        try {
          check_cu(driver().cuMemcpyHtoDAsync(at, &to, sizeof to, stream), "cuMemcpyHtoDAsync", what);
        } catch (...) {
          m.changed(key, ""); // not written: the next call writes it
          throw;
        }
      }
      continue;
    }
    const size_t want = size_t(s.symbol_count(k, p)) * size_t(elem_bytes(y.type));
    if (want > bytes)
      throw UsageError(s.path + ": " + m.context() + ": symbol " + y.name + " holds " + std::to_string(bytes) + " bytes, the spec fills " +
                       std::to_string(want) + " at " + p.key());
    if (y.from_arg >= 0) {
      size_t operand = 0; // the caller's buffers in OpInfo::operands order: count those before it
      for (int i = 0; i < y.from_arg; ++i) operand += s.args[size_t(i)].caller_passes() && s.args[size_t(i)].buffer;
      check_cu(driver().cuMemcpyDtoDAsync(at, args.pointers().at(operand), want, stream), "cuMemcpyDtoDAsync",
               m.context() + ": filling symbol " + y.name + " from " + s.args[size_t(y.from_arg)].name + " at " + p.key());
    } else if (m.once(y.name + " " + p.key())) { // its own fill: the same every launch
      const std::vector<unsigned char> host = spec_fill_bytes(fill_at(s, y.fill, p), y.type, want / size_t(elem_bytes(y.type)), 0x5eed);
      check_cu(driver().cuMemcpyHtoD(at, host.data(), want), "cuMemcpyHtoD", m.context() + ": filling symbol " + y.name);
    }
  }
}

} // namespace

void launch_buffers(Module& m, const LaunchPlan& plan, BufferArgs& args, CUstream stream) {
  if (args.empty()) return;
  if (plan.workspace_bytes && !args.workspace())
    throw Error(m.context() + ": the plan asks for " + std::to_string(plan.workspace_bytes) +
                " bytes of workspace, the launch has none");
  const auto& spec = op_info(args.problem().op).spec;
  if (spec) {
    // Each kernel's parameters against the spec's once (a loop's rounds repeat a few kernels), and
    // whether a loop reads the device back between rounds, which a stream being captured into a
    // CUDA graph cannot do: refused before anything is enqueued.
    std::vector<char> seen;
    bool reads_back = false;
    for (const LaunchStep& s : plan.steps) {
      reads_back = reads_back || s.test >= 0 || !spec->value_reads(s).empty();
      if (s.kernel < 0) continue;
      if (size_t(s.kernel) >= seen.size()) seen.resize(size_t(s.kernel) + 1, 0);
      if (seen[size_t(s.kernel)]) continue;
      seen[size_t(s.kernel)] = 1;
      const std::string& why = m.checked(size_t(s.kernel), [&] { return param_mismatch(m, s, *spec, args.problem()); });
      if (!why.empty()) throw UsageError(why);
    }
    if (reads_back) {
      CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
      const std::string what = m.context() + " at " + args.problem().key();
      check_cu(driver().cuStreamIsCapturing(stream, &capturing), "cuStreamIsCapturing", what);
      if (capturing != CU_STREAM_CAPTURE_STATUS_NONE)
        throw UsageError(spec->path + ": " + what + ": a loop that runs while a condition holds, or a grid or scalar that reads a "
                         "buffer's value, reads the device back during the call, which a stream being captured (a CUDA "
                         "graph) cannot do: call it outside the capture");
    }
    args.bind(plan);
    spec_before_launch(m, *spec, plan, args, stream);
  }
  // A built-in op's kernels get the workspace last, after the scalars and any tensor maps, null
  // when the plan has none: a kernel may declare it whether or not this launch's plan uses it
  // (attention_decode without a split), and the driver reads no more arguments than the kernel
  // declares. A spec's workspace is among its own arguments.
  CUdeviceptr workspace = args.workspace();
  const bool pass_workspace = !spec;
  // The arguments on the stack: this runs on every served call.
  void* params[96];
  const size_t base = args.count();
  // A spec argument's device pointer now, as a control step passes it (alias_args: a swapped buffer).
  auto pointer = [&](const LaunchStep& s, int i) {
    if (i < 0 || size_t(i) >= base) throw Error(m.context() + ": a step on an argument the spec does not have");
    // The first match only: a swapped pair is two entries (x -> y, y -> x), and mapping on would
    // take x back to itself.
    for (size_t j = 0; j < s.alias_args.size(); ++j)
      if (s.alias_args[j] == i) {
        i = s.alias_of.at(j);
        break;
      }
    return *static_cast<const CUdeviceptr*>(args.params()[i]);
  };
  // The rounds each repeated while loop has run (LaunchStep::round_loop), as this call runs them.
  std::vector<long long> rounds_done;
  auto rounds_of = [&](int loop) -> long long& {
    if (size_t(loop) >= rounds_done.size()) rounds_done.resize(size_t(loop) + 1, 0);
    return rounds_done[size_t(loop)];
  };
  // First elements read back since the stream last ran anything that could change them (a launch,
  // a copy, a reset of that buffer): read again, they need no copy and no wait (a round's test
  // read the count the next round's grid reads, a frontier's length that two kernels' `when` read).
  std::vector<std::pair<CUdeviceptr, double>> known;
  // The buffer each array texture's array holds a copy of since the stream last ran anything that
  // could change that buffer (0: none; every call copies before its first launch that reads it).
  std::vector<CUdeviceptr> copied(spec ? spec->args.size() : 0, 0);
  bool any_copied = false;
  auto forget = [&](const std::function<bool(CUdeviceptr)>& written) {
    known.erase(std::remove_if(known.begin(), known.end(), [&](const auto& e) { return written(e.first); }), known.end());
    if (any_copied)
      for (CUdeviceptr& c : copied)
        if (c && written(c)) c = 0;
  };
  // Before a launch of step s (back false): each texture, surface and address table it passes, as
  // its argument, the object or table over the buffer this round passes it; each array texture and
  // surface holding that buffer (host code's cudaMemcpy2DToArray before the kernel), copied where
  // it does not yet. After it (back true): what the kernel wrote through each surface, back into
  // the buffer, which then agrees with the array again.
  auto move_arrays = [&](const LaunchStep& s, bool back) {
    if (!spec) return;
    for (int k : spec->step_args(s.args)) {
      const SpecArg& a = spec->args[size_t(k)];
      // A struct with tensor maps has bytes where a step passes it (the plan's, or the launch's own):
      // never a map of no shape.
      if (!back && a.struct_has_maps() && plan.spec_args.at(size_t(k)).data.empty() &&
          std::find(s.struct_args.begin(), s.struct_args.end(), k) == s.struct_args.end())
        throw Error("internal: struct " + a.name + " with tensor maps passed by a step of a plan that made no bytes for it (" +
                    m.context() + ")");
      if (a.is_table() && !back) args.set_made(size_t(k), args.table(size_t(k), pointer(s, a.fields[0].buffer), stream));
      if (!a.is_texture() || (back && !a.is_surface())) continue;
      const CUdeviceptr at = pointer(s, a.fields[0].buffer);
      const TextureObject o = args.texture(size_t(k), at, stream);
      if (!back) args.set_made(size_t(k), o.object); // the launch copies its argument's bytes
      if (!a.has_array() || (!back && copied[size_t(k)] == at)) continue;
      const std::string& buffer = spec->args[size_t(a.fields[0].buffer)].name;
      const std::string what = m.context() + ": copying " + (back ? std::string(a.kind_name()) + " " + a.name + "'s array back into " + buffer
                                                                  : buffer + " into " + a.kind_name() + " " + a.name + "'s array") +
                               " at " + args.problem().key();
      if (back) copy_out_of_array(o.array, args.texture_shape(size_t(k)), at, stream, what);
      else copy_into_array(o.array, args.texture_shape(size_t(k)), at, stream, what);
      copied[size_t(k)] = at;
      any_copied = true;
    }
  };
  // Elements buffer argument k holds at this call (a temporary: as the plan sized it).
  auto elements_of = [&](size_t k) {
    const SpecArg& a = spec->args[k];
    return a.intent == SpecArg::temp ? plan.spec_args.at(k).bytes / size_t(elem_bytes(a.elem(args.problem())))
                                     : size_t(spec->count_of(k, args.problem()));
  };
  auto first_element = [&](CUdeviceptr at, ElemType t, const std::function<std::string()>& what) {
    for (const auto& [p, v] : known)
      if (p == at) return v;
    unsigned char bytes[8] = {};
    check_cu(driver().cuMemcpyDtoHAsync(bytes, at, size_t(elem_bytes(t)), stream), "cuMemcpyDtoHAsync", what());
    check_cu(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", what()); // what the steps before wrote
    const double v = load_elem(bytes, 0, t);
    known.emplace_back(at, v);
    return v;
  };
  // Whether two of the spec's buffers overlap (a count the caller keeps inside another buffer):
  // a kernel passed one may then write another's first element. Asked once a call, where needed.
  int overlapping = -1;
  auto buffers_overlap = [&] {
    if (overlapping < 0) {
      std::vector<std::pair<CUdeviceptr, CUdeviceptr>> spans;
      for (size_t k = 0; k < spec->args.size(); ++k) {
        const SpecArg& a = spec->args[k];
        if (!a.buffer) continue;
        const size_t bytes = elements_of(k) * size_t(elem_bytes(a.elem(args.problem())));
        const CUdeviceptr from = *static_cast<const CUdeviceptr*>(args.params_at(k));
        if (bytes) spans.emplace_back(from, from + bytes);
      }
      std::sort(spans.begin(), spans.end());
      overlapping = 0;
      for (size_t i = 1; i < spans.size(); ++i)
        if (spans[i].first < spans[i - 1].second) overlapping = 1;
    }
    return overlapping == 1;
  };
  // A kernel of step s writes only what it can reach: the buffers it is passed (as this round
  // passes them) and those a symbol holds the address of; their first elements are read again.
  // (A kernel that writes through pointers it reads from memory is beyond this; docs/KERNEL_SPEC.md.)
  auto forget_written = [&](const LaunchStep& s) {
    if (known.empty() && !any_copied) return;
    if (buffers_overlap()) {
      known.clear();
      std::fill(copied.begin(), copied.end(), 0);
      return;
    }
    std::vector<CUdeviceptr> reach;
    for (int k : spec->step_args(s.args)) {
      if (spec->args[size_t(k)].buffer) reach.push_back(pointer(s, k));
      if (spec->args[size_t(k)].is_texture() && !spec->args[size_t(k)].is_surface()) continue; // read only
      for (const SpecArg::Field& f : spec->args[size_t(k)].fields) // a struct's pointers
        if (f.buffer >= 0) reach.push_back(pointer(s, f.buffer));
    }
    for (const SpecSymbol& y : spec->symbols)
      if (y.address_of >= 0) reach.push_back(pointer(LaunchStep(), y.address_of));
    forget([&](CUdeviceptr at) { return std::find(reach.begin(), reach.end(), at) != reach.end(); });
  };
  // The values of the spec's names a launch's scalars and grid read: the plan's, a repeated
  // loop's counter as it runs, and (reads_values) the first element of each buffer they read,
  // read back now, after what the stream ran before.
  auto launch_values = [&](const LaunchStep& s) {
    std::vector<double> values = s.test_values;
    if (s.round_loop >= 0 && s.round_index >= 0) values.at(size_t(s.round_index)) = double(rounds_of(s.round_loop));
    if (!s.reads_values) return values;
    const size_t names = spec->names.size();
    values.resize(spec->value_names.size(), 0.0);
    const std::array<double, 5> dev = device_values(m.context());
    std::copy(dev.begin(), dev.end(), values.begin() + std::ptrdiff_t(spec->first_device_name()));
    for (size_t i : spec->value_reads(s)) {
      const int k = spec->value_slots.at(i - names);
      const SpecArg& a = spec->args[size_t(k)];
      const ElemType t = a.elem(args.problem());
      auto what = [&] { return m.context() + ": reading " + a.name + "'s first element for a launch at " + args.problem().key(); };
      if (!elements_of(size_t(k))) throw UsageError(spec->path + ": " + what() + ": it holds no element");
      values[i] = first_element(pointer(s, k), t, what);
      if (std::isnan(values[i])) throw Error(spec->path + ": " + what() + ": read NaN");
    }
    return values;
  };
  for (size_t next = 0; next < plan.steps.size();) {
    const LaunchStep& s = plan.steps[next++];
    if (spec && s.control() && s.round_entry) { // a repeated while loop starts: its counter at 0
      rounds_of(s.round_loop) = 0;
      continue;
    }
    if (spec && s.copy()) { // a loop's swapped buffer put back in its own
      const CUdeviceptr to = pointer(LaunchStep(), s.copy_to);
      forget([&](CUdeviceptr at) { return at == to; });
      check_cu(driver().cuMemcpyDtoDAsync(pointer(LaunchStep(), s.copy_to), pointer(LaunchStep(), s.copy_from),
                                          size_t(s.copy_bytes), stream),
               "cuMemcpyDtoDAsync",
               m.context() + ": putting " + spec->args[size_t(s.copy_to)].name + " back after its loop at " + args.problem().key());
      continue;
    }
    if (spec && s.control() && s.symbol >= 0) { // a slice of a buffer into a symbol (a tile a round)
      if (size_t(s.symbol) >= spec->symbols.size()) throw Error(m.context() + ": a copy into a symbol the spec does not have");
      const SpecSymbol& y = spec->symbols[size_t(s.symbol)];
      size_t bytes = 0;
      const CUdeviceptr to = m.global(y.name, &bytes);
      const std::string what = m.context() + ": filling symbol " + y.name + " from " + spec->args[size_t(y.from_arg)].name +
                               " (from element " + std::to_string(s.symbol_offset) + ") at " + args.problem().key();
      if (s.copy_bytes > bytes)
        throw UsageError(spec->path + ": " + what + ": the symbol holds " + std::to_string(bytes) + " bytes, the slice " +
                         std::to_string(s.copy_bytes));
      if (s.copy_bytes)
        check_cu(driver().cuMemcpyDtoDAsync(to, pointer(s, y.from_arg) + s.symbol_offset * (unsigned long long)elem_bytes(y.type),
                                            size_t(s.copy_bytes), stream),
                 "cuMemcpyDtoDAsync", what);
      continue;
    }
    if (spec && s.control() && s.set_arg >= 0) { // a loop's reset before its round
      if (size_t(s.set_arg) >= spec->args.size()) throw Error(m.context() + ": a reset of an argument the spec does not have");
      const CUdeviceptr at = pointer(s, s.set_arg);
      forget([&](CUdeviceptr x) { return x == at; });
      set_temp(m, *spec, plan, args.problem(), size_t(s.set_arg), at, stream);
      continue;
    }
    if (spec && s.control() && s.test >= 0) { // after a round of a loop that runs while a condition holds
      if (size_t(s.test) >= spec->whiles.size()) throw Error(m.context() + ": a test of a loop the spec does not have");
      if (s.jump < 0 || size_t(s.jump) > plan.steps.size()) throw Error(m.context() + ": a loop's exit past the plan");
      const SpecWhile& w = spec->whiles[size_t(s.test)];
      std::vector<double> values = s.test_values;
      const size_t first = values.size();
      if (s.round_loop >= 0 && s.round_index >= 0) values.at(size_t(s.round_index)) = double(rounds_of(s.round_loop));
      values.resize(first + w.slots.size(), 0.0);
      for (size_t i : w.cond.reads()) {
        if (i < first) continue;
        const int k = w.slots.at(i - first);
        const SpecWhile::Read read = w.reads.at(i - first);
        const SpecArg& a = spec->args[size_t(k)];
        const ElemType t = a.elem(args.problem());
        // The first element, or (max_of, min_of, sum_of) all of them, as the host code reads them.
        const size_t held = elements_of(size_t(k));
        if (!held) throw UsageError(w.where + ": '" + w.text + "' reads " + a.name + ", which holds no element at " + args.problem().key());
        const size_t n = read == SpecWhile::first ? 1 : held;
        auto what = [&] { return m.context() + ": reading " + a.name + " for " + w.where + " at " + args.problem().key(); };
        double x = 0;
        if (n == 1) { // the first element: as a launch's value reads it, and kept for one
          x = first_element(pointer(s, k), t, what);
        } else { // max_of, min_of, sum_of: reduced on the GPU (spec_reduce.cuh), 8 bytes back
          if (s.reduce_kernel < 0) throw Error("internal: " + what() + ": a whole-buffer read without its reduction in the plan");
          const CUdeviceptr scratch = args.workspace() + CUdeviceptr(s.reduce_scratch);
          CUdeviceptr from = pointer(s, k), partials = scratch, arrived = scratch + 8 * kReduceBlocks, out = arrived + 8;
          long long count = (long long)n;
          int type = int(t), op = int(read);
          check_cu(driver().cuMemsetD32Async(arrived, 0, 1, stream), "cuMemsetD32Async", what());
          const unsigned grid[3] = {unsigned(std::min<long long>(kReduceBlocks, (count + 2047) / 2048)), 1, 1},
                         block[3] = {256, 1, 1};
          void* params_reduce[] = {&from, &count, &type, &op, &partials, &arrived, &out};
          m.launch(size_t(s.reduce_kernel), grid, block, 0, stream, params_reduce);
          check_cu(driver().cuMemcpyDtoHAsync(&x, out, sizeof x, stream), "cuMemcpyDtoHAsync", what());
          check_cu(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", what()); // the round's kernels first
        }
        // NaN compares false: the loop would stop as if it had converged. A diverging round fails the call.
        if (std::isnan(x))
          throw Error(w.where + ": '" + w.text + "' read NaN from " + a.name + " at " + args.problem().key() +
                      ": the rounds diverged or wrote no value there");
        values[i] = x;
      }
      const bool again = w.cond.eval(values) != 0;
      const bool last = s.round_loop >= 0 ? ++rounds_of(s.round_loop) >= s.round_max : s.test_last;
      if (again && last)
        throw Error(w.where + ": '" + w.text + "' still holds after the loop's last round (its \"repeat\"), at " +
                    args.problem().key() + ": the rounds did not converge, or the loop needs more");
      if (!again) next = size_t(s.jump);
      else if (s.jump_back >= 0) next = size_t(s.jump_back);
      continue;
    }
    if (spec && (!s.args.empty() || !s.set_args.empty() || !s.alias_args.empty() || !s.offset_at.empty() || s.reads_values ||
                 !s.struct_args.empty())) {
      // A user's kernel's step that takes some of the spec's arguments in its own order, or (in a
      // loop) passes other values or buffers than the call's for some, or reads values back.
      std::vector<double> values; // launch_values(s), once the step needs it
      bool have_values = false;
      auto values_now = [&]() -> const std::vector<double>& {
        if (!have_values) values = launch_values(s), have_values = true;
        return values;
      };
      // Its `when` and its grid first: a step that does not launch computes none of its scalars (a
      // count's 1 / qn at an empty frontier).
      LaunchStep at;
      if (s.value_grid >= 0) {
        const auto& grid = spec->value_grids.at(size_t(s.value_grid));
        if (!grid[3].empty() && grid[3].eval(values_now()) == 0) continue; // its `when` fails at this launch
        at = s;
        for (int d = 0; d < 3; ++d)
          at.grid[d] = unsigned(grid[size_t(d)].eval_integer(values_now(), 0, d == 0 ? 2147483647.0 : 65535.0,
                                                             "grid at " + args.problem().key()));
        if (!at.grid[0] || !at.grid[1] || !at.grid[2]) continue; // none of a 0 along an axis
      }
      const size_t n = s.args.empty() ? base : s.args.size();
      if (n > sizeof params / sizeof params[0]) throw Error(m.context() + ": " + std::to_string(n) + " arguments in one step");
      unsigned long long own[sizeof params / sizeof params[0]];
      std::vector<std::vector<unsigned long long>> own_structs; // a struct whose buffers a swap moved
      for (size_t i = 0; i < n; ++i) {
        const int k = s.args.empty() ? int(i) : s.args[i];
        if (k < 0 || size_t(k) >= base) throw Error(m.context() + ": a step takes an argument the spec does not have");
        params[i] = args.params()[k];
        for (size_t j = 0; j < s.alias_args.size(); ++j)
          if (s.alias_args[j] == k) params[i] = args.params()[s.alias_of.at(j)];
        const SpecArg& sa = spec->args[size_t(k)];
        // A struct of this launch's own (its fields read a loop's counter), or the call's with this
        // round's buffers: built here from its bytes, each pointer field its offset past the buffer.
        const std::vector<unsigned char>* data = nullptr;
        for (size_t j = 0; j < s.struct_args.size(); ++j)
          if (s.struct_args[j] == k) data = &s.struct_data.at(j);
        if (sa.is_struct() && !sa.made_at_launch() && (data || std::any_of(sa.fields.begin(), sa.fields.end(), [&](const SpecArg::Field& f) {
              return f.buffer >= 0 && std::find(s.alias_args.begin(), s.alias_args.end(), f.buffer) != s.alias_args.end();
            }))) {
          own_structs.emplace_back((sa.struct_bytes + 7) / 8, 0ull);
          build_struct(sa, data ? *data : plan.spec_args.at(size_t(k)).data, own_structs.back().data(),
                       [&](int b) { return pointer(s, b); }, [&] { return m.context() + " at " + args.problem().key(); });
          params[i] = own_structs.back().data();
        }
        for (size_t j = 0; j < s.set_args.size(); ++j)
          if (s.set_args[j] == k) {
            double value = s.set_values.at(j);
            const SpecArg& a = spec->args[size_t(k)];
            // A repeated while loop's counter as it runs; at a step that reads values, every one
            // (the plan's were not computed where a `when` decides at the launch).
            const std::vector<size_t>& reads = a.value.reads();
            const bool by_round = s.round_loop >= 0 && s.round_index >= 0 &&
                                  std::find(reads.begin(), reads.end(), size_t(s.round_index)) != reads.end();
            if (by_round || s.reads_values) value = spec->scalar_from(size_t(k), values_now(), " at " + args.problem().key());
            own[i] = 0;
            store_elem(reinterpret_cast<unsigned char*>(&own[i]), 0, a.scalar_elem(args.problem()), value);
            params[i] = &own[i];
          }
        for (size_t j = 0; j < s.offset_at.size(); ++j)
          if (size_t(s.offset_at[j]) == i) { // the buffer (as this round passes it) from an element on
            own[i] = *static_cast<const CUdeviceptr*>(params[i]) + s.offset_bytes.at(j);
            params[i] = &own[i];
          }
      }
      move_arrays(s, false);
      forget_written(s);
      m.launch(s.value_grid >= 0 ? at : s, stream, params);
      move_arrays(s, true);
      continue;
    }
    if (!s.tma() && !pass_workspace) {
      if (spec) move_arrays(s, false), forget_written(s);
      m.launch(s, stream, args.params());
      move_arrays(s, true);
      continue;
    }
    // The step's tensor maps after the scalars, encoded for these pointers (cached per thread).
    CUtensorMap maps[TensorMapKey::kMaxRank * 2];
    if (s.tma_maps.size() > sizeof maps / sizeof maps[0] || base + s.tma_maps.size() + 1 > sizeof params / sizeof params[0])
      throw Error(m.context() + ": " + std::to_string(base) + " arguments and " + std::to_string(s.tma_maps.size()) +
                  " tensor maps in one step");
    std::copy(args.params(), args.params() + base, params);
    size_t n = base;
    for (size_t i = 0; i < s.tma_maps.size(); ++i) {
      const LaunchStep::TmaOperand& t = s.tma_maps[i];
      if (t.operand < 0 || size_t(t.operand) >= args.pointers().size())
        throw Error(m.context() + ": tensor map of operand " + std::to_string(t.operand) + ", which the op does not have");
      const void* ptr = reinterpret_cast<const void*>(args.pointers()[size_t(t.operand)]);
      maps[i] = encode_tensor_map(operand_map_key(args.problem(), ptr, t), [&] {
        return m.context() + ", tensor map of " + op_info(args.problem().op).operands[size_t(t.operand)].name + " at " +
               args.problem().key();
      });
      params[n++] = &maps[i];
    }
    if (pass_workspace) params[n++] = &workspace;
    m.launch(s, stream, params);
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
