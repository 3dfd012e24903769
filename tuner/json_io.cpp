#include "tuner/json_io.h"

#include <filesystem>

#include <tuple>
#include <vector>

#include "ktune/error.h"
#include "ktune/kernel_spec.h"
#include "core/json_text.h"
#include "core/text_file.h"
#include "ktune/gemm_problem.h"

namespace ktune {

nlohmann::json problem_to_json(const Problem& p) {
  const OpInfo& info = op_info(p.op);
  nlohmann::json j = {{"op", p.op}, {"dtype", to_string(p.dtype)}, {"align", p.align}};
  if (!info.layouts.empty()) j["layout"] = p.layout;
  for (size_t i = 0; i < info.dims.size() && i < p.dims.size(); ++i) j[info.dims[i]] = p.dims[i];
  for (size_t i = 0; i < info.ld_names.size() && i < p.ld.size(); ++i) j[info.ld_names[i]] = p.ld[i];
  for (const auto& [name, dflt] : info.scalars) j[name] = p.scalar(name);
  return j;
}

Problem problem_from_json(const nlohmann::json& j, const std::string& where, const std::string& default_op) {
  auto text = [&](const char* f, const std::string& dflt) {
    if (!j.contains(f)) return dflt;
    if (!j[f].is_string()) throw UsageError(where + ": \"" + f + "\" must be a string");
    return j[f].get<std::string>();
  };
  try {
    const OpInfo& info = op_info(j.is_object() ? text("op", default_op) : default_op);
    std::string dims_named;
    for (const auto& d : info.dims) dims_named += (dims_named.empty() ? "" : ", ") + d;
    if (!j.is_object()) throw UsageError(where + ": a problem must be an object with " + dims_named);
    auto integer = [&](const std::string& f) -> int64_t {
      if (!j.contains(f)) throw UsageError(where + ": missing \"" + f + "\"");
      if (!j[f].is_number_integer()) throw UsageError(where + ": \"" + f + "\" must be an integer, got " + j[f].dump());
      return j[f].get<int64_t>();
    };
    std::vector<int64_t> dims;
    for (const auto& d : info.dims) dims.push_back(integer(d));
    Problem p = Problem::make(info.name, dims, text("layout", info.default_layout()),
                              parse_dtype(text("dtype", "f32")));
    for (size_t i = 0; i < info.ld_names.size(); ++i)
      if (j.contains(info.ld_names[i])) p.ld[i] = integer(info.ld_names[i]);
    p.align = j.contains("align") ? int(integer("align")) : Problem::alignment_of(p.ld, element_bytes(p.dtype));
    for (const auto& [name, dflt] : info.scalars) {
      if (!j.contains(name)) continue;
      if (!j[name].is_number()) throw UsageError(where + ": \"" + name + "\" must be a number");
      p.scalars[name] = j[name].get<double>();
    }
    validate(p);
    return p;
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    throw UsageError(msg.rfind(where, 0) == 0 ? msg : where + ": " + msg);
  }
}

namespace {

// A launch plan's JSON from one description per struct: each field's name and member, written
// when it differs from the struct's default (so a plain step says only what it has), read back
// where present. The worker must launch exactly what the runtime launches: a field missing here
// would be lost on the way to the worker (a TMA kernel without its maps reads garbage; a swapped
// step without swap_ab computes the wrong product), so every field of LaunchStep and TmaOperand
// is listed, and tests/tuner/worker_test.cpp round-trips every family's plans.
template <class S, class T>
struct Field {
  const char* name;
  T S::*member;
};
template <class S, class T>
constexpr Field<S, T> field(const char* name, T S::*member) {
  return {name, member};
}

template <class T>
nlohmann::json value_json(const T& v) {
  return v;
}
nlohmann::json value_json(const unsigned (&v)[3]) { return {v[0], v[1], v[2]}; }
nlohmann::json value_json(const std::vector<LaunchStep::TmaOperand>& maps);

template <class T>
void read_value(const nlohmann::json& j, T& v) {
  v = j.get<T>();
}
void read_value(const nlohmann::json& j, unsigned (&v)[3]) {
  for (int i = 0; i < 3; ++i) v[i] = j.at(i).get<unsigned>();
}
void read_value(const nlohmann::json& j, std::vector<LaunchStep::TmaOperand>& maps);

template <class T>
bool same(const T& a, const T& b) {
  return a == b;
}
bool same(const unsigned (&a)[3], const unsigned (&b)[3]) { return a[0] == b[0] && a[1] == b[1] && a[2] == b[2]; }
// The default is no maps: a step with any writes them all.
bool same(const std::vector<LaunchStep::TmaOperand>& a, const std::vector<LaunchStep::TmaOperand>& b) {
  return a.empty() && b.empty();
}

template <class S, class... F>
nlohmann::json to_json_by(const S& s, const std::tuple<F...>& fields) {
  nlohmann::json j = nlohmann::json::object();
  const S dflt{};
  std::apply([&](const auto&... f) { ((same(s.*(f.member), dflt.*(f.member)) ? void() : void(j[f.name] = value_json(s.*(f.member)))), ...); },
             fields);
  return j;
}

template <class S, class... F>
S from_json_by(const nlohmann::json& j, const std::tuple<F...>& fields) {
  S s{};
  std::apply([&](const auto&... f) { ((j.contains(f.name) ? read_value(j.at(f.name), s.*(f.member)) : void()), ...); }, fields);
  return s;
}

const auto kTmaFields = std::make_tuple(
    field("operand", &LaunchStep::TmaOperand::operand), field("k_inner", &LaunchStep::TmaOperand::k_inner),
    field("box_inner", &LaunchStep::TmaOperand::box_inner), field("box_outer", &LaunchStep::TmaOperand::box_outer),
    field("packed_offset", &LaunchStep::TmaOperand::packed_offset), field("packed_ld", &LaunchStep::TmaOperand::packed_ld),
    field("elem_bytes", &LaunchStep::TmaOperand::elem_bytes), field("swizzle_bytes", &LaunchStep::TmaOperand::swizzle_bytes),
    field("stacked", &LaunchStep::TmaOperand::stacked), field("box", &LaunchStep::TmaOperand::box));

const auto kStepFields = std::make_tuple(
    field("kernel", &LaunchStep::kernel), field("grid", &LaunchStep::grid), field("block", &LaunchStep::block),
    field("smem", &LaunchStep::dynamic_smem), field("smem_kernel", &LaunchStep::smem_kernel),
    field("block_kernel", &LaunchStep::block_kernel),
    field("overlap_previous", &LaunchStep::overlap_previous),
    field("balance_clusters", &LaunchStep::balance_clusters), field("cluster", &LaunchStep::cluster),
    field("persistent", &LaunchStep::persistent), field("cooperative", &LaunchStep::cooperative),
    field("swap_ab", &LaunchStep::swap_ab), field("tma_maps", &LaunchStep::tma_maps), field("args", &LaunchStep::args),
    field("set_args", &LaunchStep::set_args), field("set_values", &LaunchStep::set_values),
    field("alias_args", &LaunchStep::alias_args), field("alias_of", &LaunchStep::alias_of),
    field("copy_from", &LaunchStep::copy_from), field("copy_to", &LaunchStep::copy_to),
    field("copy_bytes", &LaunchStep::copy_bytes), field("set_arg", &LaunchStep::set_arg), field("test", &LaunchStep::test),
    field("jump", &LaunchStep::jump), field("test_last", &LaunchStep::test_last), field("test_values", &LaunchStep::test_values),
    field("symbol", &LaunchStep::symbol), field("symbol_offset", &LaunchStep::symbol_offset),
    field("offset_at", &LaunchStep::offset_at), field("offset_bytes", &LaunchStep::offset_bytes),
    field("struct_args", &LaunchStep::struct_args), field("struct_data", &LaunchStep::struct_data),
    field("round_loop", &LaunchStep::round_loop), field("round_index", &LaunchStep::round_index),
    field("jump_back", &LaunchStep::jump_back), field("round_max", &LaunchStep::round_max),
    field("round_entry", &LaunchStep::round_entry), field("reads_values", &LaunchStep::reads_values),
    field("value_grid", &LaunchStep::value_grid), field("reduce_kernel", &LaunchStep::reduce_kernel),
    field("reduce_scratch", &LaunchStep::reduce_scratch));

const auto kSpecArgFields =
    std::make_tuple(field("offset", &LaunchPlan::SpecArgValue::offset), field("bytes", &LaunchPlan::SpecArgValue::bytes),
                    field("value", &LaunchPlan::SpecArgValue::value), field("data", &LaunchPlan::SpecArgValue::data));

nlohmann::json value_json(const std::vector<LaunchStep::TmaOperand>& maps) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& m : maps) a.push_back(to_json_by(m, kTmaFields));
  return a;
}
void read_value(const nlohmann::json& j, std::vector<LaunchStep::TmaOperand>& maps) {
  maps.clear();
  for (const auto& m : j) maps.push_back(from_json_by<LaunchStep::TmaOperand>(m, kTmaFields));
}

} // namespace

nlohmann::json plan_to_json(const LaunchPlan& p) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : p.steps) steps.push_back(to_json_by(s, kStepFields));
  nlohmann::json j = {{"steps", steps}, {"workspace", p.workspace_bytes}};
  if (!p.spec_args.empty()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& v : p.spec_args) a.push_back(to_json_by(v, kSpecArgFields));
    j["spec_args"] = a;
  }
  return j;
}

LaunchPlan plan_from_json(const nlohmann::json& j) {
  LaunchPlan p;
  p.workspace_bytes = j.at("workspace").get<size_t>();
  for (const auto& s : j.at("steps")) p.steps.push_back(from_json_by<LaunchStep>(s, kStepFields));
  if (j.contains("spec_args"))
    for (const auto& a : j.at("spec_args")) p.spec_args.push_back(from_json_by<LaunchPlan::SpecArgValue>(a, kSpecArgFields));
  return p;
}

nlohmann::json timing_options_to_json(const TimingOptions& o) {
  return {{"warmup", o.warmup},           {"min_reps", o.min_reps},         {"max_reps", o.max_reps},
          {"min_total_ms", o.min_total_ms}, {"max_total_ms", o.max_total_ms}, {"cutoff_ms", o.cutoff_ms},
          {"race_ms", o.race_ms},         {"launch_lead_us", o.launch_lead_us}};
}

TimingOptions timing_options_from_json(const nlohmann::json& j) {
  TimingOptions o;
  if (j.is_object()) {
    o.warmup = j.value("warmup", o.warmup);
    o.min_reps = j.value("min_reps", o.min_reps);
    o.max_reps = j.value("max_reps", o.max_reps);
    o.min_total_ms = j.value("min_total_ms", o.min_total_ms);
    o.max_total_ms = j.value("max_total_ms", o.max_total_ms);
    o.cutoff_ms = j.value("cutoff_ms", o.cutoff_ms);
    o.race_ms = j.value("race_ms", o.race_ms);
    o.launch_lead_us = j.value("launch_lead_us", o.launch_lead_us);
  }
  return o;
}

std::vector<Problem> load_suite(const std::string& path, const std::string& default_layout, DType default_dtype) {
  const std::string text = read_text_file(path, "suite file");
  check_json_depth(text, "suite file '" + path + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw UsageError("suite file '" + path + "' is not valid JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("problems") || !j["problems"].is_array() || j["problems"].empty())
    throw UsageError("suite file '" + path + "' needs a non-empty \"problems\" array");
  // "kernel": a user kernel's spec (relative to the suite), for the whole suite or one problem:
  // loaded, and its op is the problems'.
  auto spec_op = [&](const nlohmann::json& o, const std::string& where) {
    if (!o["kernel"].is_string()) throw UsageError("suite file '" + path + "': " + where + "\"kernel\" must be a spec file's path");
    std::filesystem::path k(o["kernel"].get<std::string>());
    if (k.is_relative()) k = std::filesystem::path(path).parent_path() / k;
    return load_kernel_spec(k.string());
  };
  const std::string op = j.contains("kernel")                      ? spec_op(j, "")
                         : j.contains("op") && j["op"].is_string() ? j["op"].get<std::string>()
                                                                   : "gemm";
  std::vector<Problem> out;
  for (size_t i = 0; i < j["problems"].size(); ++i) {
    nlohmann::json p = j["problems"][i];
    if (p.is_object() && p.contains("kernel")) {
      p["op"] = spec_op(p, "problem " + std::to_string(i) + ": ");
      p.erase("kernel");
    }
    // The default layout is for ops that have layouts (GEMM's NN); the row ops have none.
    const std::string p_op = p.is_object() && p.contains("op") && p["op"].is_string() ? p["op"].get<std::string>() : op;
    if (p.is_object() && !p.contains("layout") && !default_layout.empty() && !op_info(p_op).layouts.empty())
      p["layout"] = default_layout;
    if (p.is_object() && !p.contains("dtype")) p["dtype"] = to_string(default_dtype);
    out.push_back(problem_from_json(p, "suite '" + path + "' problem " + std::to_string(i), op));
  }
  return out;
}

nlohmann::ordered_json selection_to_json(const Problem& p, const std::string& arch, const Selection& s) {
  using J = nlohmann::ordered_json;
  auto opt = [](const std::optional<double>& v) { return v ? J(*v) : J(nullptr); };
  auto config = [](const Config& c) { return J::parse(c.size() ? c.to_json() : "{}"); };
  J j = {{"problem", p.key()}, {"arch", arch}, {"provenance", to_string(s.provenance)},
         {"family", s.family}, {"config", config(s.config)}, {"source", s.source}};
  j["tuned_problem"] = s.tuned ? J(*s.tuned) : J(nullptr);
  j["distance"] = s.distance;
  j["generalized"] = s.generalized;
  j["time_ms"] = opt(s.time_ms);
  j["cublas_ms"] = opt(s.cublas_ms);
  j["measure_pending"] = s.measure_pending;
  j["measured"] = s.measured;
  j["measured_cublas_ms"] = opt(s.measured_cublas_ms);
  j["why"] = s.why;
  J cands = J::array();
  for (const auto& c : s.candidates)
    cands.push_back({{"family", c.family}, {"config", config(c.config)}, {"source", c.source}, {"tuned_problem", c.tuned},
                     {"distance", c.distance}, {"home_ratio", c.neighbour ? J() : J(c.home_ratio)},
                     {"predicted_ratio", c.neighbour ? J() : J(c.score)}, {"neighbour", c.neighbour},
                     {"generalized", c.generalized}, {"time_ms", opt(c.time_ms)}, {"cublas_ms", opt(c.cublas_ms)},
                     {"measured_ms", opt(c.measured_ms)}});
  j["candidates"] = cands;
  return j;
}

} // namespace ktune
