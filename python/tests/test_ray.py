"""`ktune tune --ray` on a Ray cluster of several local nodes (ray.cluster_utils.Cluster), each
with one logical GPU and no real one: the ktune program on each node compiles for real (NVRTC)
and measures nothing, answering every evaluation from a recorded H100 trial log (`--replay`,
tuner/replay_worker.h). Covers work spread over nodes, a node killed mid-run and the driver
killed and resumed: nothing lost, nothing recorded twice.

Needs Ray (tools/test.sh installs it and sets KTUNE_REQUIRE_RAY=1, so that CI fails rather than
skips without it). Run by ctest as Python.ray (label slow)."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

import pytest

pytestmark = pytest.mark.ray

if os.environ.get("KTUNE_REQUIRE_RAY") == "1":
    import ray  # noqa: F401  (fails the module: CI must run these)
    from ray.cluster_utils import Cluster
else:
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOG = os.path.join(REPO, "tests", "data", "h100-gemm_simt-exhaustive-replay.json")


def _cli():
    cli = os.environ.get("KTUNE_CLI")
    if not cli:
        pytest.fail("KTUNE_CLI is not set: run through ctest (Python.ray), which names the ktune program")
    return cli


@pytest.fixture
def work():
    d = tempfile.mkdtemp(prefix="ktune-ray-test-")
    with open(LOG) as f:
        log = json.load(f)
    problems = [{"m": p["m"], "n": p["n"], "k": p["k"]} for p in log["problems"]]
    suite = os.path.join(d, "suite.json")
    with open(suite, "w") as f:
        json.dump({"problems": problems}, f)
    # The recording covers an old, small gemm_simt space: the run searches that part of today's
    # (LN, a later parameter, at the values its configs upgrade to), so that most trials hit it.
    domains = {}
    for p in log["problems"]:
        for t in p["trials"]:
            for name, v in t["config"].items():
                domains.setdefault(name, set()).add(v)
    domains["LN"] = {min(32, wn // tn) for wn in domains["WN"] for tn in domains["TN"]}
    domains["PACK"] = {0}
    restrict = os.path.join(d, "restrict.json")
    with open(restrict, "w") as f:
        json.dump({"family": "gemm_simt", "domains": {k: sorted(v) for k, v in domains.items()}}, f)
    recorded = {}
    for p in log["problems"]:
        for t in p["trials"]:
            if t["status"] == "ok":
                cfg = dict(t["config"], LN=min(32, t["config"]["WN"] // t["config"]["TN"]), PACK=0)
                recorded[(p["key"], json.dumps(cfg, sort_keys=True))] = t["time_ms"]
    return {"dir": d, "suite": suite, "restrict": restrict, "db": os.path.join(d, "main.db"), "keys": [p["key"] for p in log["problems"]],
            "recorded": recorded}


def _cluster(gpu_nodes):
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 0})
    nodes = [c.add_node(num_cpus=1, num_gpus=1) for _ in range(gpu_nodes)]
    c.wait_for_nodes()
    return c, nodes


def _cmd(work, address, budget, pace):
    return [_cli(), "tune", "--suite", work["suite"], "--family", "gemm_simt", "--restrict", work["restrict"], "--strategy", "random",
            "--budget-evals", str(budget), "--warm-start", "none", "--replay", LOG, "--replay-pace", str(pace),
            # A worker's reply waits for a loaded CI machine, not for a GPU: a generous limit.
            "--timeout", "120", "--db", work["db"], "--ray", address, "--json"]


def _env():
    env = dict(os.environ)
    env["KTUNE_PYTHON"] = sys.executable  # the interpreter that has Ray drives the run
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _rows(db):
    """(device uuid, problem key, config, median_ms, status) of every trial in db."""
    if not os.path.exists(db):
        return []
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=30)
    try:
        return con.execute("SELECT d.uuid, p.key, t.config, t.median_ms, t.status FROM trials t JOIN devices d ON "
                           "d.id = t.device_id JOIN problems p ON p.id = t.problem_id").fetchall()
    except sqlite3.OperationalError:  # the schema is not there yet
        return []
    finally:
        con.close()


def _by_problem(rows):
    out = {}
    for uuid, key, _, _, _ in rows:
        out.setdefault(key, {}).setdefault(uuid, 0)
        out[key][uuid] += 1
    return out


def _check_no_doubles(rows):
    keys = [(u, k, json.dumps(json.loads(c), sort_keys=True)) for u, k, c, _, _ in rows]
    assert len(keys) == len(set(keys)), "a trial was recorded twice"


def _start(cmd, cwd=None):
    """The driver, started as a user starts it; stdout and stderr kept."""
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=cwd)


def _poll(proc, found, limit=300):
    """Polls found() every 0.3 s while the driver runs, for at most limit seconds; its last answer."""
    deadline = time.time() + limit
    got = found()
    while not got and time.time() < deadline and proc.poll() is None:
        time.sleep(0.3)
        got = found()
    return got


def _wait(proc, limit):
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail("ktune tune --ray did not finish in %d s; stderr:\n%s" % (limit, err[-4000:]))
    return proc.returncode, out, err


def test_ray_spreads_problems_over_nodes_and_records_every_trial_once(work):
    cluster, nodes = _cluster(2)
    try:
        budget = 4
        # From the run's directory, the restriction named relatively: the nodes' programs run
        # elsewhere and still find it.
        cmd = [w if w != work["restrict"] else "restrict.json" for w in _cmd(work, cluster.address, budget, 0)]
        proc = _start(cmd, cwd=work["dir"])
        rc, out, err = _wait(proc, 600)
        assert rc == 0, err[-4000:]
        summary = json.loads(out)
        rows = _rows(work["db"])
        _check_no_doubles(rows)
        per = _by_problem(rows)
        assert sorted(per) == sorted(work["keys"])
        for key, devs in per.items():  # a problem's trials all come from one GPU, the budget's worth
            assert list(devs.values()) == [budget], (key, devs)
        used = {next(iter(d)) for d in per.values()}
        node_ids = {n.node_id[:16] for n in nodes}
        assert len(used) == 2 and {u.split("-")[1] for u in used} == node_ids, used
        # What was recorded is what the H100 measured: the replay's times, config by config.
        ok = [(k, json.dumps(json.loads(c), sort_keys=True), ms) for _, k, c, ms, st in rows if st == "ok"]
        assert ok, "no trial came back ok: the replay found none of the configs"
        for key, cfg, ms in ok:
            assert work["recorded"][(key, cfg)] == pytest.approx(ms), (key, cfg)
        assert {p["problem"] for p in summary["problems"]} == set(work["keys"])
        no_ratio = [p for p in summary["problems"] if p.get("time_ms") and "ratio_to_cublas" not in p]
        assert not no_ratio, (no_ratio, err[-3000:])
        con = sqlite3.connect(work["db"])
        assert con.execute("SELECT COUNT(*) FROM baselines").fetchone()[0] == len(work["keys"])
        assert con.execute("SELECT COUNT(*) FROM best").fetchone()[0] == len(work["keys"])
        con.close()
        # ktune.tune(ray=...) measures for real: these nodes' logical GPUs are not there, and the
        # error says so rather than tuning nothing.
        import ktune
        with pytest.raises(ktune.KtuneError, match="did not start"):
            ktune.tune(["64x64x64"], ray=cluster.address, db=os.path.join(work["dir"], "real.db"), progress=False)
        with pytest.raises(ktune.UsageError, match="trials_out"):
            ktune.tune(["64x64x64"], ray=cluster.address, trials_out=os.path.join(work["dir"], "t.jsonl"))
    finally:
        cluster.shutdown()


def test_ray_node_killed_mid_run_its_problem_requeued_nothing_lost_or_doubled(work):
    cluster, nodes = _cluster(3)
    try:
        budget = 10
        proc = _start(_cmd(work, cluster.address, budget, 4.0))

        def mid_run():  # (device, problem, its trials per device) of a problem half done
            for key, devs in _by_problem(_rows(work["db"])).items():
                for uuid, n in devs.items():
                    if 2 <= n < budget - 2:
                        return uuid, key, dict(devs)
            return None

        caught = _poll(proc, mid_run)
        assert caught is not None, "no problem was caught mid-run"
        victim, victim_key, seen = caught
        node = next(n for n in nodes if victim.split("-")[1] == n.node_id[:16])
        cluster.remove_node(node, allow_graceful=False)
        rc, out, err = _wait(proc, 600)
        assert rc == 0, err[-4000:]
        assert "lost while tuning " + victim_key in err, err[-4000:]
        rows = _rows(work["db"])
        _check_no_doubles(rows)
        per = _by_problem(rows)
        # The lost GPU's trials stay; another GPU tuned the problem to its budget.
        assert per[victim_key][victim] >= seen[victim]
        assert budget in [n for u, n in per[victim_key].items() if u != victim], per[victim_key]
        for key in work["keys"]:
            assert budget in per[key].values(), (key, per[key])
        assert len(json.loads(out)["lost"]) == 1
    finally:
        cluster.shutdown()


def test_ray_driver_killed_and_resumed_skips_what_was_measured(work):
    cluster, _ = _cluster(2)
    try:
        budget = 8
        cmd = _cmd(work, cluster.address, budget, 4.0)
        proc = _start(cmd)
        _poll(proc, lambda: len(_rows(work["db"])) >= 5)
        before = _rows(work["db"])
        assert len(before) >= 5 and proc.poll() is None, "the run ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)  # the driver (the program exec'd into Python)
        proc.communicate()
        before = _rows(work["db"])
        assert len(before) < budget * len(work["keys"])
        proc = _start(cmd)
        rc, out, err = _wait(proc, 600)
        assert rc == 0, err[-4000:]
        rows = _rows(work["db"])
        _check_no_doubles(rows)
        # Every trial measured before the kill is still there, unchanged, and none was measured again:
        # each problem has exactly its budget, all on the GPU that started it.
        assert set(before) <= set(rows)
        for key, devs in _by_problem(rows).items():
            assert list(devs.values()) == [budget], (key, devs)
        summary = json.loads(out)
        assert sum(p.get("skipped", 0) for p in summary["problems"]) >= len(before)
    finally:
        cluster.shutdown()
