// A worker that measures nothing: it answers the worker protocol (tuner/worker.h) from a recorded
// trial log (ktune.trials/1, `ktune export --trials`), so that a whole tuning run, compiles
// included, can go on a machine without a GPU: `ktune tune --replay LOG`. Tests of tuning across
// hosts run on it (python/tests/test_ray.py), as ktune simulate replays strategies.
//   eval      -> the recorded outcome of (problem, family, config): ok with the recorded median,
//                or the recorded failure; launch_error when the log does not hold that config
//                (a log older than a parameter is read with the family's upgrade, as tables are)
//   baseline  -> the recorded cuBLAS time of the problem; an error when none is recorded
//   ping      -> ok with the log's device name
#pragma once
#include <string>

#include "db/table.h"
#include "ktune/device_info.h"

namespace ktune {

// The device a replay run tunes "on": the log's GPU, with the published limits of its arch and
// the given uuid (trials are recorded under it, as under a real GPU's).
DeviceInfo replay_device(const TrialLog& log, const std::string& uuid);

// Serves requests on stdin/stdout until stdin closes. pace: sleep that fraction of each trial's
// recorded benchmark time before answering (0: answer at once).
int replay_worker_main(const std::string& log_path, double pace);

} // namespace ktune
