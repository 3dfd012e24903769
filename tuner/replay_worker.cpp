#include "tuner/replay_worker.h"

#include <chrono>
#include <iostream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "ktune/config.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "tuner/json_io.h"
#include "tuner/worker.h"

namespace ktune {

DeviceInfo replay_device(const TrialLog& log, const std::string& uuid) {
  DeviceInfo d = DeviceInfo::nominal(log.arch);
  d.name = log.device_name;
  if (log.sm_count > 0) d.sm_count = log.sm_count;
  d.uuid = uuid;
  return d;
}

namespace {

// The recorded outcomes keyed by problem key, family and config (canonical text).
struct Recording {
  std::string device;
  std::map<std::string, LoggedTrial> trials;
  std::map<std::string, double> cublas_ms;
};

std::string trial_key(const std::string& problem, const std::string& family, const Config& c) {
  return problem + " " + family + " " + nlohmann::json::parse(c.to_json()).dump(); // keys sorted: order-free
}

Recording load(const std::string& path) {
  const TrialLog log = read_trial_log_file(path);
  Recording r;
  r.device = log.device_name;
  for (const auto& p : log.problems) {
    // A log older than a parameter of its family names configs without it: upgraded, as a table
    // entry is, they name the kernel that was measured (two records of one: db/table.h's replaces).
    for (const auto& t : p.trials) {
      const auto [at, fresh] =
          r.trials.emplace(trial_key(p.problem.key(), t.family, find_family(t.family).upgraded(Config::from_json(t.config_json))), t);
      if (!fresh && replaces(t, at->second)) at->second = t;
    }
    if (p.cublas_ms) r.cublas_ms[p.problem.key()] = *p.cublas_ms;
  }
  return r;
}

Timing flat(double ms) { return Timing{ms, ms, ms, ms, 1}; }

nlohmann::json eval(const Recording& r, const nlohmann::json& req, double pace) {
  const Problem p = problem_from_json(req.at("problem"), "eval request");
  const std::string family = req.at("family").get<std::string>();
  const Config config = Config::from_json(req.at("config").dump());
  const auto it = r.trials.find(trial_key(p.key(), family, config));
  const LoggedTrial* t = it == r.trials.end() ? nullptr : &it->second;
  if (!t)
    return {{"status", "launch_error"}, {"error", "replay: " + family + " " + config.to_json() + " on " + p.key() + " is not in the recording"}};
  if (pace > 0) std::this_thread::sleep_for(std::chrono::duration<double>(pace * t->bench_s));
  if (t->status == "ok") return {{"status", "ok"}, {"timing", timing_to_json(flat(t->time_ms))}, {"rel_error", 0.0}};
  // A compile error or a crash recorded on the GPU cannot recur here (the compile was real, and
  // nothing runs): the trial fails as a launch error that names what was recorded.
  const std::string status = t->status == "wrong_result" ? t->status : "launch_error";
  return {{"status", status}, {"error", "replay: recorded as " + t->status}};
}

} // namespace

int replay_worker_main(const std::string& log_path, double pace) {
  ProtocolOut proto("ktune replay-worker");
  if (!proto.ok()) return 1;
  const Recording r = load(log_path);
  std::string line;
  while (std::getline(std::cin, line)) {
    nlohmann::json out;
    try {
      check_json_depth(line, "worker request");
      const nlohmann::json req = nlohmann::json::parse(line);
      const std::string op = req.at("op").get<std::string>();
      if (op == "eval") {
        out = eval(r, req, pace);
      } else if (op == "baseline") {
        const std::string key = problem_from_json(req.at("problem"), "baseline request").key();
        const auto it = r.cublas_ms.find(key);
        if (it == r.cublas_ms.end()) throw Error("replay: no baseline recorded for " + key);
        out = {{"status", "ok"}, {"timing", timing_to_json(flat(it->second))}};
      } else if (op == "ping") {
        out = {{"status", "ok"}, {"device", r.device}};
      } else {
        throw Error("unknown worker op '" + op + "'");
      }
    } catch (const std::exception& e) {
      out = {{"status", "launch_error"}, {"error", e.what()}, {"sticky", false}};
    }
    if (!proto.reply(out)) return 1;
  }
  return 0;
}

} // namespace ktune
