"""bench/attention_acceptance.py reads the bench's JSON and judges each acceptance bar: met where the
figures clear it, not met where one row falls short, and a row ktune did not serve is never met."""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "bench", "attention_acceptance.py")


def row(model, b, h, hk, sq, sk, d, causal, ms, **others):
    """One bench row: ktune's time and each other backend's (ms); the ratios as the bench stores them."""
    r = dict(model=model, batch=b, heads=h, kv_heads=hk, q_len=sq, kv_len=sk, head_dim=d,
             layout="causal" if causal else "full", dtype="bf16")
    flops = 4 * b * h * sq * sk * d / (2 if causal else 1)
    backends = {k: dict(status="ok", ms=v) for k, v in others.items()}
    if ms is not None:
        backends["ktune"] = dict(status="ok", ms=ms, tflops=flops / ms / 1e9, kv_tb_s=1.0, of_copy=0.5)
    out = dict(row=r, backends=backends)
    if ms is not None:
        out["ktune_vs_best"] = min(others.values()) / ms
        out["ktune_vs_flash"] = others["flash"] / ms
    return out


def run(tmp_path, public=None, untuned=None, paged=None, tables=None, paged_cold=None, served=False):
    if public is not None:
        (tmp_path / "public.json").write_text(json.dumps(dict(device="test GPU", rows=public)))
    for name, rows in (untuned or {}).items():
        (tmp_path / ("untuned-%s.json" % name)).write_text(json.dumps(dict(rows=rows)))
    for name, rows in (tables or {}).items():
        (tmp_path / ("tables-%s.json" % name)).write_text(json.dumps(dict(rows=rows)))
    if paged is not None:
        (tmp_path / "paged.json").write_text(json.dumps(dict(rows=paged, warm_small_inputs=served)))
    if paged_cold is not None:
        (tmp_path / "paged-cold.json").write_text(json.dumps(dict(rows=paged_cold, warm_small_inputs=False)))
    done = subprocess.run([sys.executable, TOOL, str(tmp_path)], capture_output=True, text=True)
    return done.returncode, done.stdout, done.stderr


def line(out, bar):
    hits = [x for x in out.splitlines() if bar in x]
    assert len(hits) == 1, (bar, out)
    return hits[0]


def test_bars_met_and_not_met(tmp_path):
    # A 16k non-causal prompt at 1.1x cuDNN and 700 TFLOPS; a causal one at 0.98x cuDNN; a decode row at
    # 1.5x and one at 0.99x the best backend.
    f16k = 4 * 16 * 16384 * 16384 * 128 / 700e9
    public = [row("a", 1, 16, 16, 16384, 16384, 128, False, f16k, flash=2 * f16k, cudnn=1.1 * f16k),
              row("b", 1, 32, 8, 4096, 4096, 128, True, 1.0, flash=1.9, cudnn=0.98),
              row("c", 1, 32, 8, 1, 32768, 128, True, 0.040, flash=0.08, cudnn=0.06),
              row("d", 64, 32, 8, 1, 2048, 128, True, 0.101, flash=0.2, cudnn=0.1)]
    untuned = {"good": [row("e", 2, 8, 8, 512, 512, 64, False, 1.0, flash=1.5, cudnn=1.05)],
               "bad": [row("f", 2, 8, 8, 512, 512, 64, False, 1.0, flash=1.5, cudnn=1.2),
                       row("g", 2, 8, 8, 512, 512, 64, False, 1.0, flash=1.5, cudnn=0.85)]}
    paged = [dict(row=public[2]["row"], columns={"page 64": dict(status="ok", vs_contiguous=0.97),
                                                 "page 256": dict(status="wrong (max |err| ...)")})]
    rc, out, err = run(tmp_path, public, untuned, paged)
    assert rc == 0, err
    assert line(out, "non-causal: >= 1.0x cuDNN").startswith("met ")
    assert "700-700 TFLOPS" in line(out, "non-causal")
    causal = line(out, "tokens causal: >= 1.0x cuDNN")
    assert causal.startswith("NOT MET") and "0.980x cuDNN" in causal
    decode = line(out, "public decode rows")
    assert decode.startswith("NOT MET") and "min 0.990x" in decode
    assert line(out, "good (nobody tuned, no table)").startswith("met ")
    bad = line(out, "bad (nobody tuned, no table)")
    assert bad.startswith("NOT MET") and "min 0.850x" in bad
    assert line(out, "page 64 within").startswith("met ")
    p256 = line(out, "page 256 within")
    assert p256.startswith("NOT MET") and "not measured" in p256


def test_the_paged_bar_is_judged_as_served_with_the_cold_figure_beside_it(tmp_path):
    r = row("c", 1, 32, 8, 1, 1024, 128, True, 0.010, flash=0.02, cudnn=0.02)["row"]
    served = [dict(row=r, columns={"page 64": dict(status="ok", vs_contiguous=0.96),
                                   "page 256": dict(status="ok", vs_contiguous=0.955)})]
    cold = [dict(row=r, columns={"page 64": dict(status="ok", vs_contiguous=0.94),
                                 "page 256": dict(status="ok", vs_contiguous=0.97)})]
    rc, out, err = run(tmp_path, paged=served, paged_cold=cold, served=True)
    assert rc == 0, err
    bar = line(out, "page 64 within 5 % of contiguous (as served")
    assert bar.startswith("met ") and "min 0.960x" in bar
    lines = out.splitlines()
    at = lines.index(bar)
    assert "every input cold" in lines[at + 1] and "min 0.940x" in lines[at + 1]
    # Without the served run's mark the bar is the plain one, and the cold file is not required.
    plain_dir = tmp_path / "plain"
    plain_dir.mkdir()
    rc, out, err = run(plain_dir, paged=cold)
    assert rc == 0, err
    plain = line(out, "page 64 within")
    assert plain.startswith("NOT MET") and "as served" not in plain and "every input cold" not in out


def test_a_row_ktune_did_not_serve_fails_its_bars(tmp_path):
    public = [row("a", 1, 16, 16, 8192, 8192, 128, False, None, flash=2.0, cudnn=1.0),
              row("b", 1, 16, 16, 8192, 8192, 128, False, 0.5, flash=2.0, cudnn=1.0)]
    rc, out, err = run(tmp_path, public)
    assert rc == 0, err
    assert line(out, "every public row served").startswith("NOT MET")
    assert line(out, "non-causal: >= 1.0x cuDNN").startswith("NOT MET")
    assert line(out, ">= 1.0x the best backend").startswith("NOT MET")


def test_no_results_is_an_error(tmp_path):
    rc, out, err = run(tmp_path)
    assert rc == 1 and "no results" in err
    (tmp_path / "public.json").write_text("{not json")
    rc, out, err = run(tmp_path)
    assert rc == 1 and "cannot read" in err


def test_a_step_that_failed_was_skipped_or_left_no_json_is_not_measured(tmp_path):
    # Paths as another machine wrote them: the files are looked for here, by name.
    (tmp_path / "steps.txt").write_text("public\texit 124\t/dev/out/public.json\n"
                                        "decode-mha\tskipped (30 s of 540 left)\n"
                                        "public\texit 0\t/dev/out/public.json\nchunked\texit 1\t/dev/out/untuned-chunked.json\n"
                                        "probe2:tables\texit 0\t/dev/out/tables-probe2.json\n")
    public = [row("b", 1, 16, 16, 8192, 8192, 128, False, 0.5, flash=2.0, cudnn=1.0)]
    rc, out, err = run(tmp_path, public, tables={"probe2x": public})
    assert rc == 0, err
    assert "step public" not in out  # its last run exited 0 and its JSON is here
    assert line(out, "step decode-mha measured").startswith("NOT MET") and "skipped" in out
    assert "exit 1" in line(out, "step chunked measured")
    assert "no tables-probe2.json" in line(out, "step probe2:tables measured")
    assert line(out, "probe2x (nobody tuned, shipped tables)").startswith("met ")


def test_read_floor_bar(tmp_path):
    """The decode rows' times against bench/read_floor's at their K and V bytes: 1 x 32/8 x 32768 x 128
    reads 128 MiB; at 50 us against a floor of 45.8 us it is at 91.6 %, at 52 us 88.1 %."""
    key = "attention/bf16/causal/1x32x8x1x32768x128/a16"
    floor = dict(sizes=[dict(mib=128, read_ms=0.0458)])
    for ms, met, share in ((0.050, True, "91.6 %"), (0.052, False, "88.1 %")):
        (tmp_path / "floor-bench.json").write_text(json.dumps(dict(rows=[dict(problem=key, ms=ms)])))
        (tmp_path / "floor-read.json").write_text(json.dumps(floor))
        rc, out, err = run(tmp_path)
        assert rc == 0, err
        bar = line(out, "read_floor")
        assert bar.startswith("met " if met else "NOT MET") and share in bar, bar
    # Where the floor also timed a split read merged across blocks, each row shows it beside the bar
    # (the best of the two merges), and the bar is still judged against the plain read.
    floor = dict(sizes=[dict(mib=128, read_ms=0.0458, combine_read_ms=0.0481, cluster_read_ms=0.0488)])
    (tmp_path / "floor-bench.json").write_text(json.dumps(dict(rows=[dict(problem=key, ms=0.052)])))
    (tmp_path / "floor-read.json").write_text(json.dumps(floor))
    rc, out, err = run(tmp_path)
    assert rc == 0, err
    assert line(out, "read_floor").startswith("NOT MET")
    assert "a split read merged 48.1 us (95.2 % of the floor), ktune 92.5 % of it" in out, out
    # A row with no floor at its bytes, or that failed, is not measured.
    rows = [dict(problem=key, ms=0.05), dict(problem="attention/bf16/causal/1x32x8x1x1024x128/a16", ms=0.01),
            dict(problem="attention/bf16/causal/2x32x8x1x32768x128/a16", error="wrong result")]
    (tmp_path / "floor-bench.json").write_text(json.dumps(dict(rows=rows)))
    rc, out, err = run(tmp_path)
    bar = line(out, "read_floor")
    assert bar.startswith("NOT MET") and "no floor at 4 MiB" in bar and "wrong result" in bar, bar


def test_decode_ceiling(tmp_path):
    """The decode geomean's ceiling: 1 x 32/8 x 1024 (8 blocks of work: it must split) at 1.2x the best
    backend and half its read floor could reach 2.4x at the floor, 1.92x at a merge floor of 0.8 of
    it; 64 x 32/8 x 2048 (512 blocks: no split) at the floor stays 1.0x. Geomeans 1.549x and 1.386x."""
    public = [row("Llama-3 8B", 1, 32, 8, 1, 1024, 128, True, 0.009, flash=0.0108, cudnn=0.0108),
              row("Llama-3 8B", 64, 32, 8, 1, 2048, 128, True, 0.2, flash=0.2, cudnn=0.2)]
    bench = dict(rows=[dict(problem="attention/bf16/causal/1x32x8x1x1024x128/a16", ms=0.010),
                       dict(problem="attention/bf16/causal/64x32x8x1x2048x128/a16", ms=0.2)])
    floor = dict(sm_count=132, sizes=[dict(mib=4, read_ms=0.005, combine_read_ms=0.00625, cluster_read_ms=0.007),
                                      dict(mib=512, read_ms=0.2)])
    (tmp_path / "floor-bench.json").write_text(json.dumps(bench))
    (tmp_path / "floor-read.json").write_text(json.dumps(floor))
    rc, out, err = run(tmp_path, public=public)
    assert rc == 0, err
    assert "1.549x in geomean at the read floor, 1.386x with the rows that must split (1) at the split-and-merge floor" in out, out
    # Without a merge floor at the split row's bytes, the read floor stands in for it, and says so.
    floor["sizes"][0] = dict(mib=4, read_ms=0.005)
    (tmp_path / "floor-read.json").write_text(json.dumps(floor))
    rc, out, err = run(tmp_path, public=public)
    assert "1.549x with the rows that must split (1) at the split-and-merge floor (not measured at 4 MiB" in out, out
