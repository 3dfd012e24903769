"""ktune.tune: the `ktune tune` program as a subprocess, with a progress bar from its trial log."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from . import _ktune
from ._runtime import dtype_name, reload


def find_cli():
    """The `ktune` program: $KTUNE_CLI, the one installed in the package (ktune/bin), the build
    tree's (a CMake build of the module), or `ktune` on PATH."""
    env = os.environ.get("KTUNE_CLI")
    if env:
        return env
    here = [os.path.dirname(os.path.abspath(_ktune.__file__)), os.path.dirname(os.path.abspath(__file__))]
    for d in here:
        p = os.path.join(d, "bin", "ktune")
        if os.access(p, os.X_OK):
            return p
    if os.access(_ktune.build_cli, os.X_OK):
        return _ktune.build_cli
    p = shutil.which("ktune")
    if p:
        return p
    raise _ktune.KtuneError("ktune.tune: the ktune program was not found (set KTUNE_CLI, or install with pip install .)")


def _problem(p, dtype, layout):
    """(shape 'MxNxK', dtype, layout) of one entry of tune()'s problems."""
    if isinstance(p, str):
        shape = p
    elif isinstance(p, dict):
        shape = "%dx%dx%d" % (p["m"], p["n"], p["k"])
        dtype, layout = p.get("dtype", dtype), p.get("layout", layout)
    elif isinstance(p, (tuple, list)) and len(p) in (3, 4, 5):
        shape = "%dx%dx%d" % tuple(int(v) for v in p[:3])
        if len(p) > 3:
            dtype = p[3]
        if len(p) > 4:
            layout = p[4]
    else:
        raise _ktune.UsageError("ktune.tune: a problem is 'MxNxK', (m, n, k[, dtype[, layout]]) or a dict "
                                "with m, n, k (got %r)" % (p,))
    try:
        m, n, k = (int(v) for v in shape.lower().split("x"))
    except ValueError:
        raise _ktune.UsageError("ktune.tune: bad problem shape %r (expected MxNxK, e.g. 4096x4096x4096)" % (shape,))
    dtype, layout = dtype_name(dtype), str(layout)
    return "%dx%dx%d" % (m, n, k), dtype, layout, _ktune.problem_key(m, n, k, dtype, layout)


class _Bar:
    """tqdm where installed, else a one-line text bar on stderr."""

    def __init__(self, total, enabled):
        self.total, self.n, self.enabled, self.tq = total, 0, enabled, None
        if not enabled:
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:
            tqdm = None
        if tqdm is not None:
            self.tq = tqdm(total=total, unit="problem", desc="ktune tune", dynamic_ncols=True)

    def update(self, n, note):
        if not self.enabled:
            return
        if self.tq is not None:
            self.tq.update(n - self.tq.n)
            self.tq.set_postfix_str(note, refresh=True)
            return
        width = 24
        filled = int(width * n / max(self.total, 1))
        line = "ktune tune [%s%s] %d/%d %s" % ("#" * filled, "." * (width - filled), n, self.total, note)
        sys.stderr.write("\r" + line[:160].ljust(min(160, max(len(line), 80))))
        sys.stderr.flush()

    def close(self):
        if not self.enabled:
            return
        if self.tq is not None:
            self.tq.close()
        else:
            sys.stderr.write("\n")
            sys.stderr.flush()


def tune(problems, budget_seconds=30.0, families=None, db=None, progress=True, dtype="f32", layout="NN",
         strategy=None, budget_evals=None, device=0, seed=None, trials_out=None, kernel=None, kernel_op=None, ray=None):
    """Tune problems on the GPU and record the results in the database (default: ktune's, i.e.
    default_db_path()), as `ktune tune` does; returns its JSON summary (per problem: best family,
    config, time_ms, tflops, cublas_ms, ratio_to_cublas, trial counts).

    problems: 'MxNxK' strings, (m, n, k[, dtype[, layout]]) tuples or dicts with m, n, k (and
    optionally dtype, layout); dtype and layout are the defaults. budget_seconds: wall seconds per
    problem (None: the program's default evaluation budget); families: kernel families (default: the
    ones that compete at run time); strategy: exhaustive, random, annealing, genetic or model.
    progress: a progress bar (tqdm if installed, else text) fed by the trial log as trials land;
    trials_out: also keep that log (JSON lines) here. Later ktune.gemm calls in this process see
    the new results. Raises KtuneError when the program fails (e.g. no GPU), UsageError on bad
    arguments.

    ray: 'auto', 'local' or a Ray cluster's address: tune on every GPU of that cluster instead,
    one Ray actor a GPU, the trials streamed into db (ktune._ray_tune; needs Ray: pip install
    'ktune[ray]'); device and trials_out do not apply, and progress is a line per GPU event.
    """
    if isinstance(problems, (str, dict)) or (isinstance(problems, tuple) and problems and isinstance(problems[0], int)):
        problems = [problems]
    if kernel is not None:  # a user's kernel (ktune.Kernel.tune): shapes of its dimensions, its one dtype
        dt = dtype_name(dtype)
        parsed = [(p, dt, "", "%s/%s/%s/a16" % (kernel_op, dt, p)) for p in problems]
    else:
        parsed = [_problem(p, dtype, layout) for p in problems]
    if not parsed:
        raise _ktune.UsageError("ktune.tune: no problems")
    if budget_seconds is not None and not budget_seconds > 0:
        raise _ktune.UsageError("ktune.tune: budget_seconds must be positive")
    groups = {}  # one program run per (dtype, layout): the program takes one of each
    for shape, dt, lay, key in parsed:
        groups.setdefault((dt, lay), []).append((shape, key))
    cli = find_cli()
    if ray is not None:
        if trials_out is not None:
            raise _ktune.UsageError("ktune.tune: trials_out is for a run on one GPU; with ray the trials go to db")
        return _tune_ray(cli, groups, families, budget_seconds, budget_evals, strategy, seed, db, kernel, ray, progress)
    keys = [key for _, _, _, key in parsed]
    bar = _Bar(len(keys), progress)
    state = {"done": set(), "trials": 0, "best": {}, "current": None}
    runs = []
    tmpdir = tempfile.mkdtemp(prefix="ktune-tune-")
    try:
        log = trials_out or os.path.join(tmpdir, "trials.jsonl")
        for (dt, lay), items in groups.items():
            cmd = [cli, "tune", "--json", "--trials-out", log, "--device", str(int(device))]
            cmd += _words(dt, lay, kernel, items, families, budget_seconds, budget_evals, strategy, seed, db)
            runs.append(_run(cmd, log, tmpdir, [k for _, k in items], keys, state, bar))
    finally:
        bar.close()
        shutil.rmtree(tmpdir, ignore_errors=True)
    reload()
    result = {"problems": [p for r in runs for p in r.get("problems", [])], "runs": runs}
    if runs:
        result["device"] = runs[0].get("device")
        result["wall_s"] = sum(r.get("wall_s", 0) for r in runs)
    return result


def _words(dt, lay, kernel, items, families, budget_seconds, budget_evals, strategy, seed, db):
    """`ktune tune` options of one (dtype, layout) group, without the device and the trial log."""
    cmd = ["--dtype", dt]
    cmd += ["--kernel", kernel] if kernel is not None else ["--layout", lay]
    for shape, _ in items:
        cmd += ["--problem", shape]
    for f in families or ():
        cmd += ["--family", str(f)]
    if budget_seconds is not None:
        cmd += ["--budget-seconds", repr(float(budget_seconds))]
    if budget_evals is not None:
        cmd += ["--budget-evals", str(int(budget_evals))]
    if strategy is not None:
        cmd += ["--strategy", str(strategy)]
    if seed is not None:
        cmd += ["--seed", str(int(seed))]
    if db is not None:
        cmd += ["--db", str(db)]
    return cmd


def _tune_ray(cli, groups, families, budget_seconds, budget_evals, strategy, seed, db, kernel, address, progress):
    from . import _ray_tune

    runs = []
    for (dt, lay), items in groups.items():
        words = _words(dt, lay, kernel, items, families, budget_seconds, budget_evals, strategy, seed, db)
        words += ["--ray", str(address)] + ([] if progress else ["--quiet"])
        try:
            s = _ray_tune.run(words, cli)
        except _ray_tune.RayTuneError as e:
            raise (_ktune.UsageError if e.code == 2 else _ktune.KtuneError)("ktune.tune(ray=%r): %s" % (address, e))
        if s["left"] or s["failed"]:
            raise _ktune.KtuneError("ktune.tune(ray=%r): not tuned: %s%s" % (
                address, ", ".join(s["left"] + list(s["failed"])), "".join("; " + l for l in s["lost"])))
        runs.append(s)
    reload()
    return {"problems": [p for r in runs for p in r["problems"]], "runs": runs,
            "devices": [d for r in runs for d in r["devices"]]}


def _note(state):
    cur = state["current"]
    if cur is None:
        return "starting"
    best = state["best"].get(cur)
    return "%s  %d trials%s" % (cur, state["trials"], "" if best is None else ", best %.2f TFLOPS" % best)


def _run(cmd, log, tmpdir, group_keys, keys, state, bar):
    out_path, err_path = os.path.join(tmpdir, "stdout"), os.path.join(tmpdir, "stderr")
    open(log, "a").close()
    with open(log, "r") as follow, open(out_path, "w") as out, open(err_path, "w") as err:
        follow.seek(0, os.SEEK_END)  # an existing trials_out keeps its earlier runs; follow from here
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        pending = ""
        try:
            while True:
                rc = proc.poll()
                chunk = follow.read()
                if chunk:
                    pending += chunk
                    *lines, pending = pending.split("\n")
                    for line in lines:
                        _trial(line, keys, state)
                    bar.update(len(state["done"]), _note(state))
                if rc is not None and not chunk:
                    break
                if not chunk:
                    time.sleep(0.2)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    state["done"].update(group_keys)
    state["current"] = None
    bar.update(len(state["done"]), "done" if len(state["done"]) == len(keys) else "")
    with open(err_path) as f:
        err = f.read()
    with open(out_path) as f:
        out = f.read()
    if rc != 0:
        exc = _ktune.UsageError if rc == 2 else _ktune.KtuneError
        raise exc("ktune tune failed (exit %d): %s" % (rc, err.strip() or out.strip() or "no message"))
    try:
        return json.loads(out)
    except ValueError:
        raise _ktune.KtuneError("ktune tune printed no JSON summary: %s" % out[-2000:])


def _trial(line, keys, state):
    line = line.strip()
    if not line:
        return
    try:
        t = json.loads(line)
    except ValueError:
        return
    key = t.get("problem")
    if key != state["current"]:
        if state["current"] is not None:
            state["done"].add(state["current"])  # the program tunes its problems one after another
        state["current"], state["trials"] = key, 0
    state["trials"] += 1
    if t.get("status") == "ok" and t.get("tflops") is not None:
        state["best"][key] = max(state["best"].get(key, 0.0), float(t["tflops"]))
