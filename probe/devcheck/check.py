"""The checks of probe/device-check.sh (read it first): runs workload.py
without the probe, under the probe with history off and on, then into an
out-of-memory error under the probe, and checks the files with gpufrag.

    python check.py --gpufrag BIN --work DIR [--out DIR] [--seconds S] [--budget S]

Every check prints PASS, FAIL, SKIP or INFO with its figure; the summary
table is printed at the end and written to OUT/device-check.json. Exit
status: 0 if no check failed, 1 otherwise."""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.dirname(HERE)
REPO = os.path.dirname(PROBE)
OOM_CHUNK = 1 << 30  # workload.py's OOM_CHUNK
OVERHEAD_TARGET_PCT = 1.0  # issue 15: below 1% of decode step time at the default interval
INSTANCE = "devcheck"

results = []
T0 = time.monotonic()


def record(name, status, figure="", detail=""):
    results.append({"check": name, "status": status, "figure": figure, "detail": detail})
    print("%-5s %-44s %s%s" % (status, name, figure, ("  (" + detail + ")") if detail else ""), flush=True)


def elapsed():
    return time.monotonic() - T0


def run(cmd, timeout, env=None, log=None):
    """Runs cmd; returns (exit status or None on timeout, output)."""
    try:
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                           text=True, errors="replace")
        out, rc = r.stdout, r.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or b"").decode("utf-8", "replace") if isinstance(e.stdout, bytes) else (e.stdout or ""), None
    if log:
        with open(log, "w") as f:
            f.write(out)
    return rc, out


def tail(s, n=15):
    return "\n".join(s.strip().splitlines()[-n:])


def workload(work, name, mode, probe_args, seconds, timeout):
    """Runs workload.py (under `python -m gpufrag_probe run` when probe_args
    is not None); returns (exit status, result dict or None, snapshot dir)."""
    out = os.path.join(work, name + ".json")
    snaps = os.path.join(work, name + "-snapshots")
    cmd = [sys.executable, os.environ.get("DEVCHECK_WORKLOAD") or os.path.join(HERE, "workload.py"), mode,
           "--out", out, "--seconds", str(seconds)]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    # DEVCHECK_PYTHONPATH: extra import path for the workload (a dry run of
    # these checks against probe/tests/fake_torch and a stand-in workload).
    extra = os.environ.get("DEVCHECK_PYTHONPATH")
    env.pop("PYTHONPATH", None)
    if extra:
        env["PYTHONPATH"] = extra
    if probe_args is not None:  # PROBE for the wrapper; the command gets the boot directory in front
        env["PYTHONPATH"] = PROBE + (os.pathsep + extra if extra else "")
        cmd = [sys.executable, "-m", "gpufrag_probe", "run", "--dir", snaps, "--instance", INSTANCE,
               "--model", "tiny-llama"] + probe_args + ["--"] + cmd
    print("\n--- %s (t=%.0fs): %s" % (name, elapsed(), " ".join(cmd)), flush=True)
    rc, text = run(cmd, timeout, env=env, log=os.path.join(work, name + ".log"))
    res = None
    if os.path.exists(out):
        with open(out) as f:
            res = json.load(f)
    if rc is None:
        print("timed out after %d s:\n%s" % (timeout, tail(text)), flush=True)
    elif res is None or (rc != 0 and mode == "decode"):
        print("exit status %s:\n%s" % (rc, tail(text, 30)), flush=True)
    return rc, res, snaps


def analyze(gpufrag, path, work, name):
    rc, text = run(gpufrag + ["analyze", path, "--json"], 120, log=os.path.join(work, name + ".analyze.json"))
    if rc != 0:
        return None, "exit status %s: %s" % (rc, tail(text, 5))
    try:
        return json.loads(text), ""
    except ValueError as e:
        return None, "not JSON: %s: %s" % (e, text[:200])


def check_replay(doc, name):
    ok = True
    for d in doc.get("devices", []):
        r = d.get("replay") or {}
        if r.get("skipped"):
            record("%s: replay, device %d" % (name, d["device"]), "FAIL", "skipped", r["skipped"])
            ok = False
            continue
        figs = "alloc addresses %d/%d, segment sizes %d/%d, segment frees %d/%d, final blocks %d/%d" % (
            r.get("address_matches", 0), r.get("allocs", 0), r.get("segment_size_matches", 0),
            r.get("segment_allocs", 0), r.get("segment_free_matches", 0), r.get("segment_frees", 0),
            r.get("final_block_matches", 0), r.get("final_blocks", 0))
        exact = (r.get("allocs", 0) > 0 and r.get("address_matches") == r.get("allocs")
                 and r.get("segment_size_matches") == r.get("segment_allocs")
                 and r.get("segment_free_matches") == r.get("segment_frees")
                 and r.get("final_block_matches") == r.get("final_blocks"))
        mism = (r.get("mismatches") or [])[:3]
        record("%s: replay address-exact, device %d" % (name, d["device"]), "PASS" if exact else "FAIL", figs,
               "source %s, seeded %d segments; %s" % (r.get("source"), r.get("seeded_segments", 0),
                                                       "; ".join(mism) if mism else "no mismatch"))
        ok = ok and exact
    return ok


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def exporter_check(gpufrag, snaps, work):
    """gpufrag exporter on the OOM run's directory: gpufrag_ooms_total for
    the instance, and a capture in --capture-dir."""
    cap = os.path.join(work, "captures")
    port = free_port()
    log = open(os.path.join(work, "exporter.log"), "w")
    proc = subprocess.Popen(gpufrag + ["exporter", "--snapshots", snaps, "--capture-dir", cap, "--rescan", "1s",
                                       "--listen", "127.0.0.1:%d" % port], stdout=log, stderr=subprocess.STDOUT)
    text, err = "", ""
    try:
        end = time.monotonic() + 30
        while time.monotonic() < end:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
                    text = r.read().decode()
                if any(l.startswith("gpufrag_ooms_total{") for l in text.splitlines()):
                    break
            except OSError as e:
                err = str(e)
            time.sleep(1)
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
    ooms = [l for l in text.splitlines() if l.startswith("gpufrag_ooms_total{") and 'instance="%s"' % INSTANCE in l]
    total = sum(float(l.rsplit(" ", 1)[1]) for l in ooms)
    record("exporter: gpufrag_ooms_total{instance=%s}" % INSTANCE, "PASS" if total >= 1 else "FAIL",
           "%g" % total, "; ".join(ooms)[:300] or ("no series; " + err))
    caps = sorted(os.listdir(cap)) if os.path.isdir(cap) else []
    record("exporter: capture in --capture-dir", "PASS" if caps else "FAIL", "%d file(s)" % len(caps),
           ", ".join(caps)[:200])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpufrag", required=True, help="path of the gpufrag binary")
    ap.add_argument("--work", required=True)
    ap.add_argument("--out")
    ap.add_argument("--seconds", type=float, default=50.0, help="decode seconds per overhead run")
    ap.add_argument("--budget", type=float, default=450.0, help="seconds for all runs (then later ones skip)")
    a = ap.parse_args()
    gpufrag = [a.gpufrag]
    os.makedirs(a.work, exist_ok=True)

    import torch  # the versions, before anything long; CUDA stays uninitialised in this process
    env = {"python": sys.version.split()[0], "torch": torch.__version__,
           "cuda": getattr(getattr(torch, "version", None), "cuda", None),
           "gpu": "(available)" if torch.cuda.is_available() else None}
    try:
        import transformers
        env["transformers"] = transformers.__version__
    except Exception:
        env["transformers"] = None
    rc, ver = run(gpufrag + ["version"], 120)
    env["gpufrag"] = ver.strip().splitlines()[-1] if rc == 0 and ver.strip() else "(gpufrag version: %s)" % rc
    print("environment: %s" % json.dumps(env), flush=True)
    if not env["gpu"]:
        record("CUDA device", "FAIL", "none", "torch.cuda.is_available() is False")
        return finish(a, env)

    per_run = a.seconds + 90  # imports, model build and the 5 s warm-up: well under 90 s
    runs = {}

    def decode_run(name, args):
        if elapsed() + per_run > a.budget:
            record("run " + name, "SKIP", "", "over the %.0f s budget at t=%.0f s" % (a.budget, elapsed()))
            return
        rc, res, snaps = workload(a.work, name, "decode", args, a.seconds, per_run)
        ok = rc == 0 and res is not None and res.get("decode")
        record("run " + name, "PASS" if ok else "FAIL",
               "%d steps, mean %.3f ms, p50 %.3f, p99 %.3f, max %.3f" % tuple(
                   [res["decode"][k] for k in ("steps", "mean_ms", "p50_ms", "p99_ms", "max_ms")]) if ok else "",
               (res or {}).get("model", "exit status %s" % rc))
        if ok:
            runs[name] = (res, snaps)

    # The default settings first, then the OOM, then the cheaper variants
    # as the budget allows.
    decode_run("baseline", None)
    if "baseline" in runs:
        env["gpu"] = runs["baseline"][0].get("gpu", env["gpu"])
    decode_run("probe-history-on", [])
    periodic_check(gpufrag, runs, a.work)
    if elapsed() + 120 > a.budget + 60:
        record("run oom", "SKIP", "", "over budget at t=%.0f s" % elapsed())
    else:
        oom_check(gpufrag, a.work)
    decode_run("probe-history-no-stacks", ["--no-stacks"])
    decode_run("probe-history-off", ["--no-history"])
    overhead_checks(runs)
    return finish(a, env)


def periodic_check(gpufrag, runs, work):
    """The periodic snapshot, history on: read back and replayed."""
    if "probe-history-on" not in runs:
        record("analyze periodic snapshot", "SKIP", "", "no probe-history-on run")
        return
    res, _ = runs["probe-history-on"]
    path = (res.get("probe") or {}).get("path")
    if not path or not os.path.exists(path):
        record("analyze periodic snapshot", "FAIL", "no file", str(path))
        return
    doc, err = analyze(gpufrag, path, work, "periodic")
    record("analyze periodic snapshot", "PASS" if doc else "FAIL", os.path.basename(path), err)
    if doc:
        check_replay(doc, "periodic")


def oom_check(gpufrag, work):
    rc, res, snaps = workload(work, "oom", "oom", [], 0, 240)
    got = res is not None and "oom_after_chunks" in res
    record("run oom: OutOfMemoryError in the probed process", "PASS" if got and rc == 1 else "FAIL",
           "after %s x 1 GiB, exit status %s" % ((res or {}).get("oom_after_chunks"), rc),
           (res or {}).get("oom_error", "")[:160])
    oomdir = os.path.join(snaps, ".gpufrag-oom")
    caps = sorted(os.listdir(oomdir)) if os.path.isdir(oomdir) else []
    record("OOM capture in DIR/.gpufrag-oom", "PASS" if len(caps) == 1 else "FAIL", "%d file(s)" % len(caps),
           ", ".join(caps))
    if not caps:
        return
    doc, err = analyze(gpufrag, os.path.join(oomdir, caps[-1]), work, "oom")
    record("analyze OOM capture", "PASS" if doc else "FAIL", caps[-1], err)
    if doc:
        ooms = [o for d in doc.get("devices", []) for o in (d.get("ooms") or [])]
        named = [o for o in ooms if OOM_CHUNK in (o.get("requested_bytes"), o.get("alloc_size_bytes"))]
        o = (named or ooms or [{}])[0]
        record("OOM explained with the failed size", "PASS" if named else "FAIL",
               "requested %s, alloc size %s (want %d)" % (o.get("requested_bytes"), o.get("alloc_size_bytes"),
                                                         OOM_CHUNK),
               "cause: %s; %s" % (o.get("cause"), (o.get("why") or "")[:200]))
        check_replay(doc, "oom capture")
    rolling = [n for n in os.listdir(snaps) if n.endswith(".pickle")]
    record("rolling file after the OOM", "PASS" if len(rolling) == 1 else "FAIL", ", ".join(rolling))
    exporter_check(gpufrag, snaps, work)


def overhead_checks(runs):
    base = runs.get("baseline")
    if not base:
        record("overhead", "SKIP", "", "no baseline run")
        return
    b = base[0]["decode"]
    drift = 100.0 * (b["second_half_mean_ms"] / b["first_half_mean_ms"] - 1)
    record("baseline noise (2nd half vs 1st half mean)", "INFO", "%+.2f%%" % drift)
    for name in ("probe-history-off", "probe-history-no-stacks", "probe-history-on"):
        if name not in runs:
            continue
        r = runs[name][0]
        over = 100.0 * (r["decode"]["mean_ms"] / b["mean_ms"] - 1)
        record("overhead %s (mean step time)" % name, "PASS" if over < OVERHEAD_TARGET_PCT else "FAIL",
               "%+.2f%%" % over, "target < %g%%; p50 %+.2f%%, max step %.1f vs %.1f ms" % (
                   OVERHEAD_TARGET_PCT, 100.0 * (r["decode"]["p50_ms"] / b["p50_ms"] - 1),
                   r["decode"]["max_ms"], b["max_ms"]))
        p = r.get("probe")
        if not p:
            record("%s: probe in the process" % name, "FAIL", "no probe", "the run wrapper did not start it")
            continue
        st = p["stats"]
        record("%s: probe dumps" % name, "PASS" if st.get("dump:periodic", 0) >= 1 else "FAIL",
               "%d periodic, next wait %.1f s" % (st.get("dump:periodic", 0), st.get("next_interval_s", 0)),
               "labels %s, history %s" % (p["labels"], p["history"]))
        record("%s: _snapshot() wall time" % name, "INFO", "min %.1f ms, max %.1f ms" % (
            1e3 * p["snapshot_s"][0], 1e3 * p["snapshot_s"][-1]), "%s trace entries" % p["trace_entries"])
        record("%s: pickle of the snapshot" % name, "INFO", "min %.1f ms, %d bytes" % (
            1e3 * p["pickle_s"][0], p["pickle_bytes"]))
        dump = p["snapshot_s"][0] + p["pickle_s"][0]
        record("%s: dump x 100 within the interval" % name, "PASS" if 100 * dump <= p["interval_s"] else "FAIL",
               "%.1f ms x 100 <= %.0f s" % (1e3 * dump, p["interval_s"]))
        if p.get("entries_per_s"):
            record("%s: history entries per second" % name, "INFO", "%.0f/s" % p["entries_per_s"],
                   "max_entries %d hold %.1f s" % (p["max_entries"], p["max_entries"] / p["entries_per_s"]))


def finish(a, env):
    failed = [r for r in results if r["status"] == "FAIL"]
    print("\n=== summary (%.0f s)" % elapsed())
    w = max(len(r["check"]) for r in results) if results else 10
    for r in results:
        print("%-5s %-*s %s" % (r["status"], w, r["check"], r["figure"]))
    print("%d checks, %d failed" % (len(results), len(failed)))
    doc = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "environment": env,
           "seconds": elapsed(), "checks": results}
    for d in filter(None, (a.out, a.work)):
        try:
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "device-check.json"), "w") as f:
                json.dump(doc, f, indent=1)
        except OSError as e:
            print("cannot write %s: %s" % (d, e))
    if a.out:
        keep_artifacts(a.work, os.path.join(a.out, "device-check"))
    return 1 if failed else 0


# ARTIFACT_MAX: the largest file copied into $OUT (logs, analyze JSON, the
# snapshots the probe wrote, for fixtures and later comparison); the small
# model's snapshots are a few MB.
ARTIFACT_MAX = 16 << 20


def keep_artifacts(work, dest):
    for root, _, files in os.walk(work):
        if os.path.abspath(root).startswith(os.path.abspath(dest)):
            continue
        for n in files:
            src = os.path.join(root, n)
            if n.endswith(".lock") or os.path.getsize(src) > ARTIFACT_MAX:
                continue
            rel = os.path.relpath(src, work).replace(os.sep + ".gpufrag-oom" + os.sep, os.sep + "gpufrag-oom" + os.sep)
            os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
            try:
                shutil.copy(src, os.path.join(dest, rel))
            except OSError:
                pass


if __name__ == "__main__":
    sys.exit(main())
