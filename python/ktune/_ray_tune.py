"""Tuning on every GPU of a Ray cluster: `ktune tune ... --ray auto|ADDRESS` (the C++ program
hands its words to `python -m ktune._ray_tune`) and ktune.tune(..., ray=ADDRESS).

Ray places one actor on each GPU of the cluster (num_gpus=1). An actor tunes one problem at a
time with the ktune program of its node (`ktune tune --suite ONE --device 0`, Ray having set
CUDA_VISIBLE_DEVICES) into a shard database of its own, and every second streams the trials and
baseline readings recorded there since its last look (`ktune export --trial-set --after-id`) to
the driver, which records them in the run's database (`ktune import --trial-set`). So a trial
reaches the driver's database a second or two after it was measured, from any node.

Failures (docs/SCALING.md, "Across hosts"):
- a node (or its actor) dies: its problem goes back to the queue and another GPU takes it; the
  trials it had streamed stay recorded under its device;
- the driver dies: the same command again resumes. Each problem goes preferably to the GPU that
  holds trials of it (by device uuid), whose actor starts from those trials (imported into its
  shard), so the ones already measured are skipped and count towards the budget;
- a trial is recorded once: the database keeps the first row of each (device, problem, family,
  template, config), so a set streamed twice adds nothing.
GPUs of different models in one cluster are refused unless --allow-mixed-devices, as on one host.
"""

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

# Options of `ktune tune` the driver owns: with a value, and without.
_DRIVER_VALUE = {"--ray", "--db", "--trials-out", "--devices", "--device", "--suite", "--problem"}
_DRIVER_FLAGS = {"--json", "--quiet", "--dry-run", "--allow-mixed-devices"}
# Options of `ktune tune` that name files.
_PATH_OPTIONS = {"--restrict", "--warm-start", "--kernel", "--replay"}


class RayTuneError(Exception):
    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


def _split(words):
    """(the driver's options {name: [values]}, the rest) of `tune` words."""
    own, rest = {}, []
    i = 0
    while i < len(words):
        w = words[i]
        name, eq, val = w.partition("=")
        if name in _DRIVER_VALUE:
            if not eq:
                if i + 1 >= len(words):
                    raise RayTuneError("%s needs a value" % name, 2)
                i += 1
                val = words[i]
            own.setdefault(name, []).append(val)
        elif w in _DRIVER_FLAGS:
            own.setdefault(w, []).append(True)
        else:
            rest.append(w)
        i += 1
    return own, rest


def _run(cmd, what, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, **kw)
    if p.returncode != 0:
        raise RayTuneError("%s failed (exit %d): %s" % (what, p.returncode, (p.stderr or p.stdout).strip()[-3000:]),
                           2 if p.returncode == 2 else 1)
    return p.stdout


def _die_with_parent():
    # A tuning run outlives nothing: when the actor's process is killed (its node lost, the
    # driver gone) the kernel kills the `ktune tune` under it too (prctl PR_SET_PDEATHSIG).
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:
        pass


def _export(cli, db, out, device_uuid="", problems=(), after_id=0):
    cmd = [cli, "export", "--trial-set", "--db", db, "-o", out, "--after-id", str(after_id)]
    if device_uuid:
        cmd += ["--device-uuid", device_uuid]
    for p in problems:
        cmd += ["--problem", p]
    _run(cmd, "ktune export --trial-set")
    with open(out) as f:
        return f.read()


class TuneActor:
    """One GPU of the cluster (Ray gives it num_gpus=1): tunes the problems the driver hands it."""

    def __init__(self, cli, rest, replay):
        import ray

        self.cli = cli if cli and os.access(cli, os.X_OK) else (shutil.which("ktune") or cli)
        self.rest, self.replay = list(rest), replay
        self.dir = tempfile.mkdtemp(prefix="ktune-ray-")
        self.count = 0
        ctx = ray.get_runtime_context()
        self.node = ctx.get_node_id()
        self.host = os.uname().nodename
        gpus = ray.get_gpu_ids()
        slot = str(gpus[0]) if gpus else "0"
        if replay:
            # No GPU measures: the replayed log's model, under a uuid of this node and slot, so
            # that a resumed driver finds this GPU's trials again while the node lives.
            with open(replay) as f:
                dev = json.load(f)["device"]
            self.device = {"uuid": "replay-%s-gpu%s" % (self.node[:16], slot), "name": dev["name"], "arch": dev["arch"]}
        else:
            devs = json.loads(_run([self.cli, "devices", "--json"], "ktune devices on " + self.host))["devices"]
            if not devs:
                raise RayTuneError("ktune devices lists no GPU on %s although Ray gave this actor one" % self.host)
            d = devs[0]
            self.device = {"uuid": d.get("uuid") or "%s-%s" % (self.host, slot), "name": d["name"], "arch": d["arch"]}

    def info(self):
        return dict(self.device, node=self.node, host=self.host)

    def tune(self, entry, prior):
        """Tunes one problem (a suite entry); yields ("trials", trial set JSON) as they are
        recorded, then ("warnings", the run's "ktune: " lines of stderr) where there are any, and
        finally ("done", the program's --json summary)."""
        self.count += 1
        base = os.path.join(self.dir, "p%d" % self.count)
        shard, suite = base + ".db", base + "-suite.json"
        cursor = 0
        if prior:
            with open(base + "-prior.json", "w") as f:
                f.write(prior)
            _run([self.cli, "import", "--trial-set", base + "-prior.json", "--db", shard], "ktune import of the prior trials")
            known = json.loads(_export(self.cli, shard, base + "-out.json"))
            cursor = max([t["id"] for t in known["trials"]] or [0])
        with open(suite, "w") as f:
            json.dump({"problems": [entry]}, f)
        cmd = [self.cli, "tune"] + self.rest + ["--suite", suite, "--db", shard, "--json", "--device", "0"]
        if self.replay:
            cmd += ["--replay-uuid", self.device["uuid"]]
        with open(base + "-stdout", "w") as out, open(base + "-stderr", "w") as err:
            proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
            try:
                # The run's end is noticed within 0.2 s; its trials are streamed every second.
                last = time.monotonic()
                while True:
                    rc = proc.poll()
                    if (rc is not None or time.monotonic() - last >= 1.0) and os.path.exists(shard):
                        last = time.monotonic()
                        text = _export(self.cli, shard, base + "-out.json", after_id=cursor)
                        got = json.loads(text)
                        if got["trials"] or rc is not None:
                            cursor = max([t["id"] for t in got["trials"]] or [cursor])
                            yield ("trials", text)
                    if rc is not None:
                        break
                    time.sleep(0.2)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        with open(base + "-stderr") as f:
            err = f.read()
        with open(base + "-stdout") as f:
            out = f.read()
        for p in (shard, shard + "-wal", shard + "-shm"):
            if os.path.exists(p):
                os.remove(p)
        if rc != 0:
            raise RayTuneError("ktune tune on %s (%s) failed (exit %d): %s" %
                               (self.host, self.device["name"], rc, err.strip()[-3000:] or out[-2000:]), rc)
        # The run's warnings (a baseline reading that failed, say: --json makes it quiet otherwise)
        # would stay in this node's files: the driver prints them.
        warnings = [line for line in err.splitlines() if line.startswith("ktune: ")]
        if warnings:
            yield ("warnings", "\n".join(warnings))
        yield ("done", out)


class _Queue:
    """The problems not yet tuned. A GPU takes one it holds trials of first (resume), else one
    no live GPU holds; one that another live GPU holds waits for it."""

    def __init__(self, keys, holders):
        self.pending = list(keys)
        self.holders = holders  # key -> set of device uuids with trials of it
        self.live = set()
        self.cv = threading.Condition()

    def take(self, uuid):
        with self.cv:
            while True:
                if not self.pending:
                    return None
                mine = [k for k in self.pending if uuid in self.holders.get(k, ())]
                free = [k for k in self.pending if not (self.holders.get(k, set()) & self.live)]
                pick = (mine or free or [None])[0]
                if pick is not None:
                    self.pending.remove(pick)
                    return pick
                self.cv.wait(1.0)

    def finish(self, key, back=False, uuid=None):
        with self.cv:
            if back:
                self.pending.insert(0, key)
            if uuid is not None:
                self.live.discard(uuid)
            self.cv.notify_all()


def _log(quiet, msg):
    if not quiet:
        sys.stderr.write("ktune: %s\n" % msg)
        sys.stderr.flush()


def run(words, cli=None):
    """Runs `ktune tune WORDS` (WORDS holding --ray) across the cluster. Returns the summary
    (problems in order, each with device, best, trial counts; the GPUs; the GPUs lost)."""
    try:
        import ray
    except ImportError:
        raise RayTuneError("--ray needs Ray in this Python (%s): pip install 'ktune[ray]' (or pip install ray)" %
                           sys.executable, 2)
    from ._tune import find_cli

    cli = cli or find_cli()
    if words and words[0] == "tune":
        words = words[1:]
    own, rest = _split(words)
    address = own["--ray"][-1]
    for bad, why in (("--devices", "takes every GPU of the cluster"), ("--device", "takes every GPU of the cluster"),
                     ("--trials-out", "streams trials into --db")):
        if bad in own:
            raise RayTuneError("--ray %s: %s is for a run on one host" % (why, bad), 2)
    quiet = "--quiet" in own or "--json" in own
    db = own.get("--db", [None])[-1] or os.environ.get("KTUNE_DB") or os.path.join(
        os.path.expanduser("~"), ".cache", "ktune", "ktune.db")
    db = os.path.abspath(db)
    # Files the options name are opened by the program on each node, whose working directory is
    # Ray's: relative paths are made absolute here (nodes elsewhere need the same path to hold them).
    replay = None
    for i, w in enumerate(rest):
        name, eq, val = w.partition("=")
        if name not in _PATH_OPTIONS or not (eq or i + 1 < len(rest)):
            continue
        at, val = (i, val) if eq else (i + 1, rest[i + 1])
        if os.path.exists(val):
            val = os.path.abspath(val)
            rest[at] = name + "=" + val if eq else val
        if name == "--replay":
            replay = val
    # The problems as the program resolves them (suite, shapes, op, dtype, layout, kernels).
    plan = [cli, "tune", "--dry-run"] + rest
    for name in ("--suite", "--problem"):
        for v in own.get(name, []):
            plan += [name, v]
    entries = json.loads(_run(plan, "ktune tune --dry-run"))["problems"]
    for e in entries:  # a suite's relative paths, for nodes that run elsewhere
        if "kernel" in e:
            e["kernel"] = os.path.abspath(e["kernel"])
    keys = [e.pop("key") for e in entries]
    by_key = dict(zip(keys, entries))

    work = tempfile.mkdtemp(prefix="ktune-ray-driver-")
    try:
        os.makedirs(os.path.dirname(db), exist_ok=True)
        # Which GPU holds trials of which of this run's problems (the rest of the database stays put).
        held = json.loads(_export(cli, db, os.path.join(work, "held.json"), problems=keys)) if os.path.exists(db) \
            else {"trials": []}
        holders = {}
        for t in held["trials"]:
            holders.setdefault(t["problem"], set()).add(t["device"])

        env = {"KTUNE_CLI": cli, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        try:
            if address == "local":  # a cluster of this machine alone, for this run
                ray.init(runtime_env={"env_vars": env}, log_to_driver=False, include_dashboard=False)
            else:
                ray.init(address=address, runtime_env={"env_vars": env}, log_to_driver=False)
        except Exception as e:
            raise RayTuneError("cannot reach the Ray cluster at %s: %s (start one with `ray start --head`, or give "
                               "--ray local for one on this machine)" % (address, e))
        try:
            return _drive(ray, cli, rest, replay, db, keys, by_key, holders, own, quiet, work)
        finally:
            ray.shutdown()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _drive(ray, cli, rest, replay, db, keys, by_key, holders, own, quiet, work):
    gpus = int(ray.cluster_resources().get("GPU", 0))
    if gpus < 1:
        raise RayTuneError("the Ray cluster has no GPU (ray.cluster_resources() lists none)")
    Actor = ray.remote(num_gpus=1, max_restarts=0)(TuneActor)
    actors = [Actor.remote(cli, rest, replay) for _ in range(gpus)]
    infos = []
    for a in actors:
        try:
            infos.append(ray.get(a.info.remote(), timeout=600))
        except Exception as e:
            raise RayTuneError("a GPU's actor did not start: %s" % e)
    models = sorted({i["name"] for i in infos})
    if len(models) > 1 and "--allow-mixed-devices" not in own:
        raise RayTuneError("the cluster's GPUs are of different models (%s): results are keyed by model; tune each "
                           "model apart, or give --allow-mixed-devices" % ", ".join(models), 2)
    _log(quiet, "tuning %d problem(s) on %d GPU(s) of %d node(s) of the Ray cluster into %s" %
         (len(keys), len(infos), len({i["node"] for i in infos}), db))
    queue = _Queue(keys, holders)
    queue.live = {i["uuid"] for i in infos}
    lock = threading.Lock()
    results, lost, failed = {}, [], {}
    counter = [0]

    def record(text):
        with lock:
            counter[0] += 1
            path = os.path.join(work, "in-%d.json" % counter[0])
            with open(path, "w") as f:
                f.write(text)
            _run([cli, "import", "--trial-set", path, "--db", db], "ktune import --trial-set into " + db)
            os.remove(path)

    def gpu(actor, info):
        try:
            serve(actor, info)
        finally:  # a GPU that stops for any reason holds no problem back from the others
            with queue.cv:
                queue.live.discard(info["uuid"])
                queue.cv.notify_all()

    def serve(actor, info):
        tag = "GPU %s (%s, node %s)" % (info["uuid"], info["name"], info["node"][:8])
        while True:
            key = queue.take(info["uuid"])
            if key is None:
                return
            prior = ""
            if info["uuid"] in holders.get(key, ()):
                with lock:
                    prior = _export(cli, db, os.path.join(work, "prior-%s.json" % info["uuid"]), info["uuid"], [key])
            _log(quiet, "%s: %s" % (tag, key))
            trials = 0
            try:
                for ref in actor.tune.options(num_returns="streaming").remote(by_key[key], prior):
                    kind, payload = ray.get(ref)
                    if kind == "trials":
                        trials += len(json.loads(payload)["trials"])
                        record(payload)
                    elif kind == "warnings":
                        for line in payload.splitlines():
                            _log(False, "%s, %s: %s" % (tag, key, line[len("ktune: "):]))
                    else:
                        summary = json.loads(payload)
                        p = summary["problems"][0]
                        p.update(device_name=info["name"], device_uuid=info["uuid"], node=info["node"])
                        results[key] = p
            except (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError) as e:
                lost.append("%s lost while tuning %s (%d trials of it recorded): %s" %
                            (tag, key, trials, str(e).splitlines()[0] if str(e) else type(e).__name__))
                _log(False, lost[-1] + "; the problem goes back to the others")
                queue.finish(key, back=True, uuid=info["uuid"])
                return
            except ray.exceptions.RayTaskError as e:
                cause = getattr(e, "cause", None) or e
                failed[key] = "%s: %s" % (tag, cause)
                _log(False, "%s failed on %s: %s" % (tag, key, cause))
                queue.finish(key)
                if isinstance(cause, RayTuneError) and cause.code == 2:
                    return  # a usage error fails everywhere alike
                continue
            queue.finish(key)
            p = results.get(key, {})
            _log(quiet, "%s: %s done, %d trials streamed%s" %
                 (tag, key, trials, "" if "ratio_to_cublas" not in p else ", %.3fx %s" % (p["ratio_to_cublas"], p.get("baseline", ""))))

    threads = [threading.Thread(target=gpu, args=(a, i), daemon=True) for a, i in zip(actors, infos)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    left = [k for k in keys if k not in results and k not in failed]
    return {"problems": [results.get(k, {"problem": k, "error": failed.get(k, "not tuned: no GPU left")}) for k in keys],
            "devices": infos, "lost": lost, "failed": failed, "left": left, "db": db}


def format_summary(s):
    lines = ["%-40s %-28s %-16s %10s %8s %s" % ("problem", "device", "family", "time_ms", "ratio", "trials")]
    for p in s["problems"]:
        if "error" in p:
            lines.append("%-40s %s" % (p["problem"], p["error"]))
            continue
        ratio = p.get("ratio_to_cublas")
        trials = ", ".join("%s %d" % kv for kv in sorted(p.get("trials", {}).items()))
        lines.append("%-40s %-28s %-16s %10s %8s %s%s" % (
            p["problem"], p["device_name"][:28], p.get("family", "-"),
            "%.4f" % p["time_ms"] if "time_ms" in p else "-", "%.3fx" % ratio if ratio else "-", trials or "-",
            " (skipped %d)" % p["skipped"] if p.get("skipped") else ""))
    for l in s["lost"]:
        lines.append("lost: " + l)
    return "\n".join(lines) + "\n"


def main(argv=None):
    words = list(sys.argv[1:] if argv is None else argv)
    # stdout carries the summary alone: Ray's own lines (a lost raylet's notice, say) go to stderr.
    sys.stdout.flush()
    summary_fd = os.dup(1)
    os.dup2(2, 1)
    try:
        s = run(words, os.environ.get("KTUNE_CLI") or None)
    except RayTuneError as e:
        sys.stderr.write("ktune: %s\n" % e)
        return e.code
    with os.fdopen(summary_fd, "w") as out:
        out.write(json.dumps(s, indent=2) + "\n" if "--json" in words else format_summary(s))
    if s["left"] or s["failed"]:
        sys.stderr.write("ktune: %d problem(s) not tuned: %s\n" % (len(s["left"]) + len(s["failed"]),
                                                                  ", ".join(s["left"] + list(s["failed"]))))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
