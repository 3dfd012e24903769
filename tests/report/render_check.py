#!/usr/bin/env python3
"""Opens ktune report pages in headless Chromium and checks that they render cleanly.

For each page: no console error, no uncaught exception, no error logged by the browser (a failed
load, a blocked resource), no request other than file: and data: URLs (the page must be
self-contained), and every <svg class="figure"> has as many rendered elements of class "point" as
its data-points attribute says, each with a non-empty box inside the figure. Optional --expect
ID=N pins a figure's count.

With --ktune and --table, first builds a database from a tuning table (ktune import, no GPU),
writes its report (ktune report) and checks it against the counts the table implies.

Talks to Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe): the Python
standard library is all it needs. Exit status: 0 pass, 1 fail, 77 skipped (no Chromium).
"""
import argparse
import fcntl
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SKIP = 77
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def find_browser(given):
    if given:
        return given if os.access(given, os.X_OK) else None
    for name in BROWSERS:
        p = shutil.which(name)
        if p:
            return p
    return None


class Chromium:
    """A headless Chromium driven over --remote-debugging-pipe (fd 3 in, fd 4 out)."""

    def __init__(self, exe, profile):
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()
        # Out of the way of 3 and 4 before the child moves its ends there.
        hi = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_chrome_r, from_chrome_w)]
        for fd in (to_chrome_r, from_chrome_w):
            os.close(fd)

        def child_fds():
            os.dup2(hi[0], 3)
            os.dup2(hi[1], 4)

        args = [exe, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-default-apps", "--mute-audio", "--user-data-dir=" + profile,
                "about:blank"]
        self.proc = subprocess.Popen(args, preexec_fn=child_fds, close_fds=False, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for fd in hi:
            os.close(fd)
        self.out = os.fdopen(to_chrome_w, "wb", buffering=0)
        self.inp = os.fdopen(from_chrome_r, "rb", buffering=0)
        self.msgs = queue.Queue()
        self.events = []
        self.next_id = 0
        self.stderr = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()

    def _read(self):
        buf = b""
        while True:
            chunk = self.inp.read(65536)
            if not chunk:
                self.msgs.put(None)
                return
            buf += chunk
            while b"\0" in buf:
                msg, buf = buf.split(b"\0", 1)
                self.msgs.put(json.loads(msg))

    def _pump(self, timeout):
        m = self.msgs.get(timeout=timeout)
        if m is None:
            raise RuntimeError("Chromium closed the pipe; its stderr:\n" +
                               b"".join(self.stderr).decode(errors="replace")[-3000:])
        if "id" not in m:
            self.events.append(m)
        return m

    def call(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.out.write(json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            m = self._pump(max(0.01, deadline - time.time()))
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})

    def wait_event(self, method, session, timeout=30):
        deadline = time.time() + timeout
        seen = 0
        while True:
            for e in self.events[seen:]:
                if e.get("method") == method and e.get("sessionId") == session:
                    return e
            seen = len(self.events)
            self._pump(max(0.01, deadline - time.time()))

    def drain(self, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                self._pump(max(0.01, deadline - time.time()))
            except queue.Empty:
                break

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# Runs in the page: per figure, its data-points and its rendered point elements.
FIGURES_JS = r"""
(() => {
  const out = [];
  for (const svg of document.querySelectorAll('svg.figure')) {
    const box = svg.getBoundingClientRect();
    const pts = [...svg.querySelectorAll('.point')];
    let drawn = 0;
    for (const p of pts) {
      const r = p.getBoundingClientRect();
      const st = getComputedStyle(p);
      if (r.width > 0 && r.height > 0 && st.display !== 'none' && st.visibility !== 'hidden' &&
          r.left >= box.left - 1 && r.right <= box.right + 1 && r.top >= box.top - 1 && r.bottom <= box.bottom + 1)
        drawn++;
    }
    out.push({id: svg.id, dataPoints: svg.getAttribute('data-points'), points: pts.length, drawn,
              width: box.width, height: box.height});
  }
  return JSON.stringify({figures: out, images: document.images.length, scripts: document.scripts.length,
                         title: document.title});
})()
"""


def check_page(browser, html, expect, min_figures):
    """Returns a list of failures for one page."""
    fails = []
    url = Path(html).resolve().as_uri()
    target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Runtime", "Log", "Page", "Network"):
        browser.call(domain + ".enable", session=session)
    first_event = len(browser.events)
    browser.call("Page.navigate", {"url": url}, session=session)
    browser.wait_event("Page.loadEventFired", session)
    browser.drain(0.5)  # late errors
    for e in browser.events[first_event:]:
        if e.get("sessionId") != session:
            continue
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.exceptionThrown":
            fails.append("page error: " + json.dumps(p.get("exceptionDetails", {}))[:400])
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            fails.append("console error: " + json.dumps(p.get("args", []))[:400])
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            fails.append("browser error: " + p["entry"].get("text", "") + " " + p["entry"].get("url", ""))
        elif m == "Network.requestWillBeSent":
            req = p.get("request", {}).get("url", "")
            if not (req.startswith("file:") or req.startswith("data:") or req == "about:blank"):
                fails.append("request to " + req + " (the page must be self-contained)")
    r = browser.call("Runtime.evaluate", {"expression": FIGURES_JS, "returnByValue": True}, session=session)
    if "exceptionDetails" in r:
        fails.append("figure check script failed: " + json.dumps(r["exceptionDetails"])[:400])
        return fails
    page = json.loads(r["result"]["value"])
    figs = page["figures"]
    if len(figs) < min_figures:
        fails.append(f"{len(figs)} figures, expected at least {min_figures}")
    if page["scripts"] or page["images"]:
        fails.append(f"{page['scripts']} scripts and {page['images']} images (expected none)")
    by_id = {}
    for f in figs:
        by_id[f["id"]] = f
        if f["dataPoints"] is None or not f["dataPoints"].isdigit():
            fails.append(f"figure {f['id']}: no data-points attribute")
            continue
        n = int(f["dataPoints"])
        if f["width"] <= 0 or f["height"] <= 0:
            fails.append(f"figure {f['id']}: not rendered ({f['width']}x{f['height']})")
        if f["points"] != n or f["drawn"] != n:
            fails.append(f"figure {f['id']}: data-points {n}, {f['points']} point elements, {f['drawn']} rendered")
    for fid, n in expect.items():
        if fid not in by_id:
            fails.append(f"figure {fid} missing")
        elif by_id[fid]["dataPoints"] != str(n):
            fails.append(f"figure {fid}: data-points {by_id[fid]['dataPoints']}, expected {n}")
    total = sum(int(f["dataPoints"] or 0) for f in figs)
    print(f"{html}: {len(figs)} figures, {total} points, title {page['title']!r}")
    browser.call("Target.closeTarget", {"targetId": target})
    return fails


def report_from_table(ktune, table, work):
    """ktune import TABLE into a fresh database, ktune report it; returns (index.html, expected counts)."""
    db, out = os.path.join(work, "t.db"), os.path.join(work, "report")
    for args in ([ktune, "import", table, "--db", db], [ktune, "report", "--db", db, "-o", out]):
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(" ".join(args) + f" failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    entries = json.load(open(table))["entries"]
    # One imported trial per problem: no convergence to plot; the report lists those problems in one
    # table instead.
    page = open(os.path.join(out, "index.html"), encoding="utf-8").read()
    listed = "%d problem(s) with a single recorded trial" % len(entries)
    if listed not in page:
        raise RuntimeError(f"the report of {table} does not say '{listed}'")
    if "conv-trials-" in page:
        raise RuntimeError(f"the report of {table} plots convergence of single-trial problems")
    expect = {}
    expect["vs-cublas"] = sum(1 for e in entries if e.get("cublas_ms"))
    expect["roofline"] = len(entries)
    expect["importance"] = 0
    return os.path.join(out, "index.html"), expect


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("html", nargs="*", help="report pages to check")
    ap.add_argument("--chromium", help="browser executable (default: the first of %s on PATH)" % ", ".join(BROWSERS))
    ap.add_argument("--ktune", help="ktune program, to build a report from --table")
    ap.add_argument("--table", help="tuning table (ktune.table/1) to import and report")
    ap.add_argument("--expect", action="append", default=[], metavar="ID=N", help="figure ID must have N points")
    ap.add_argument("--min-figures", type=int, default=4)
    a = ap.parse_args()
    exe = find_browser(a.chromium)
    if not exe:
        print("SKIPPED: no Chromium found (install it: apt-get install chromium); the report was not rendered")
        return SKIP
    if bool(a.ktune) != bool(a.table):
        ap.error("--ktune and --table go together")
    expect = dict((k, int(v)) for k, v in (e.split("=", 1) for e in a.expect))
    work = tempfile.mkdtemp(prefix="ktune-render-")
    fails = []
    try:
        pages = [(h, expect, a.min_figures) for h in a.html]
        if a.table:
            html, exp = report_from_table(a.ktune, a.table, work)
            pages.insert(0, (html, exp, len(exp)))
        if not pages:
            ap.error("nothing to check: give HTML pages or --ktune with --table")
        browser = Chromium(exe, os.path.join(work, "profile"))
        try:
            version = browser.call("Browser.getVersion")["product"]
            print("browser:", version)
            for html, exp, min_figures in pages:
                fails += [f"{html}: {f}" for f in check_page(browser, html, exp, min_figures)]
        finally:
            browser.close()
    except Exception as e:  # the browser or ktune failed: that is a failure, not a skip
        fails.append(f"{type(e).__name__}: {e}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for f in fails:
        print("FAIL:", f)
    if not fails:
        print("PASS: every page rendered without errors and every figure has its points")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
