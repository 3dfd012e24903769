#include "tuner/json_io.h"


#include "ktune/error.h"
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
    Problem p = Problem::make(info.name, dims, text("layout", info.layouts.empty() ? "" : info.layouts[0]),
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

nlohmann::json plan_to_json(const LaunchPlan& p) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : p.steps) {
    nlohmann::json step = {{"kernel", s.kernel},
                           {"grid", {s.grid[0], s.grid[1], s.grid[2]}},
                           {"block", {s.block[0], s.block[1], s.block[2]}},
                           {"smem", s.dynamic_smem},
                           {"overlap_previous", s.overlap_previous}};
    if (s.balance_clusters) step["balance_clusters"] = true; // (absent: the default policy, as before)
    if (s.persistent) step["persistent"] = true;             // (absent: the grid as planned, as before)
    if (s.swap_ab) step["swap_ab"] = true;                   // (absent: A and B as given, as before)
    // Only TMA steps carry their tensor-map boxes (the other steps' JSON is as before).
    if (s.tma) {
      auto op = [](const LaunchStep::TmaOperand& o) {
        nlohmann::json j = {{"k_inner", o.k_inner}, {"box", {o.box_inner, o.box_outer}}};
        if (o.packed_offset >= 0) j["packed"] = {o.packed_offset, o.packed_ld}; // read from the workspace copy
        // FP32 operands (gemm_wgmma_tf32x3) only: the half families' JSON is as before.
        if (o.elem_bytes != 2 || o.swizzle_bytes != 128 || o.stacked != 1)
          j["elements"] = {{"bytes", o.elem_bytes}, {"swizzle", o.swizzle_bytes}, {"stacked", o.stacked}};
        return j;
      };
      step["tma"] = {{"a", op(s.tma_a)}, {"b", op(s.tma_b)}};
      if (s.tma_c.box_inner > 0) step["tma"]["c"] = op(s.tma_c); // (absent: C stored without TMA, as before)
    }
    steps.push_back(std::move(step));
  }
  return {{"steps", steps}, {"workspace", p.workspace_bytes}};
}

LaunchPlan plan_from_json(const nlohmann::json& j) {
  LaunchPlan p;
  p.workspace_bytes = j.at("workspace").get<size_t>();
  for (const auto& s : j.at("steps")) {
    LaunchStep st;
    st.kernel = s.at("kernel").get<int>();
    for (int i = 0; i < 3; ++i) {
      st.grid[i] = s.at("grid")[i].get<unsigned>();
      st.block[i] = s.at("block")[i].get<unsigned>();
    }
    st.dynamic_smem = s.at("smem").get<unsigned>();
    // The worker must launch what the runtime launches: a step that overlaps its predecessor
    // times differently from one that waits for it.
    st.overlap_previous = s.at("overlap_previous").get<bool>();
    st.balance_clusters = s.value("balance_clusters", false);
    st.persistent = s.value("persistent", false);
    // Without it a kernel that computes C^T = B^T A^T would get A and B as given: a wrong result.
    st.swap_ab = s.value("swap_ab", false);
    // A TMA kernel launched without its tensor maps reads garbage maps (an illegal instruction).
    if (s.contains("tma")) {
      auto op = [](const nlohmann::json& o) {
        LaunchStep::TmaOperand r;
        r.k_inner = o.at("k_inner").get<bool>();
        r.box_inner = o.at("box")[0].get<unsigned>();
        r.box_outer = o.at("box")[1].get<unsigned>();
        // Without it a packed operand's map would read the unaligned original (a failed encode).
        if (o.contains("packed")) r.packed_offset = o.at("packed")[0].get<long long>(), r.packed_ld = o.at("packed")[1].get<long long>();
        // Without it an FP32 operand's map would read 16-bit words (wrong strides and swizzle).
        if (o.contains("elements")) {
          const auto& e = o.at("elements");
          r.elem_bytes = e.at("bytes").get<unsigned>(), r.swizzle_bytes = e.at("swizzle").get<unsigned>();
          r.stacked = e.at("stacked").get<unsigned>();
        }
        return r;
      };
      st.tma = true;
      st.tma_a = op(s.at("tma").at("a"));
      st.tma_b = op(s.at("tma").at("b"));
      // Without it a TMA-store kernel would store through an unset map.
      if (s.at("tma").contains("c")) st.tma_c = op(s.at("tma").at("c"));
    }
    p.steps.push_back(st);
  }
  return p;
}

nlohmann::json timing_to_json(const Timing& t) {
  return {{"median_ms", t.median_ms}, {"min_ms", t.min_ms}, {"p20_ms", t.p20_ms}, {"p80_ms", t.p80_ms}, {"reps", t.reps}};
}

nlohmann::json timing_options_to_json(const TimingOptions& o) {
  return {{"warmup", o.warmup},           {"min_reps", o.min_reps},         {"max_reps", o.max_reps},
          {"min_total_ms", o.min_total_ms}, {"max_total_ms", o.max_total_ms}, {"cutoff_ms", o.cutoff_ms},
          {"launch_lead_us", o.launch_lead_us}};
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
    o.launch_lead_us = j.value("launch_lead_us", o.launch_lead_us);
  }
  return o;
}

Timing timing_from_json(const nlohmann::json& j) {
  return Timing{j.at("median_ms").get<double>(), j.at("min_ms").get<double>(), j.at("p20_ms").get<double>(),
                j.at("p80_ms").get<double>(), j.at("reps").get<int>()};
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
  const std::string op = j.contains("op") && j["op"].is_string() ? j["op"].get<std::string>() : "gemm";
  std::vector<Problem> out;
  for (size_t i = 0; i < j["problems"].size(); ++i) {
    nlohmann::json p = j["problems"][i];
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
