"""What a dump costs on the CPU, measured on real snapshot pickles: for each
file, the pickling time of its snapshot (pickle.dumps, what the probe does
holding the GIL), its size, the atomic write (write, fsync, rename, fsync
of the directory: gpufrag_probe's own code) and the trace bytes per entry;
then the largest trace scaled to the probe's history sizes.

    python3 probe/bench/dump_cost.py [/work/shared/data/snapshots/*.pickle]

Prints a table and, with --json FILE, writes the figures. Best of
--repeat runs (default 10) so that other load on the machine does not
count; no GPU, no torch."""
import argparse
import glob
import json
import os
import pickle
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gpufrag_probe import _config, _files  # noqa: E402


def best(fn, repeat):
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def entries(s):
    return sum(len(t) for t in s.get("device_traces", [])) if isinstance(s, dict) else 0


def measure(name, snap, repeat, tmp):
    data = pickle.dumps(snap, protocol=pickle.DEFAULT_PROTOCOL)
    t_pickle = best(lambda: pickle.dumps(snap, protocol=pickle.DEFAULT_PROTOCOL), repeat)
    t_write = best(lambda: _files.atomic_write(tmp, "x.pickle", data), repeat)
    n = entries(snap)
    trace_bytes = 0
    if n:
        bare = dict(snap, device_traces=[[] for _ in snap["device_traces"]])
        trace_bytes = len(data) - len(pickle.dumps(bare, protocol=pickle.DEFAULT_PROTOCOL))
    return {"file": name, "bytes": len(data), "entries": n, "pickle_ms": t_pickle * 1e3,
            "write_fsync_ms": t_write * 1e3, "trace_bytes_per_entry": trace_bytes / n if n else None,
            "pickle_us_per_entry": None}


def scaled(snap, n):
    """snap with its device-0 trace cycled to n entries: each entry a new
    dict with its own frames list (the real file shares some lists between
    entries: this is the costlier case), the frame dicts shared as
    _snapshot() shares them."""
    tr = snap["device_traces"][0]
    reps = []
    for i in range(n):
        e = dict(tr[i % len(tr)])
        e["frames"] = list(e.get("frames", ()))
        e["time_us"] = e.get("time_us", 0) + i  # distinct values, as a real trace has
        reps.append(e)
    return dict(snap, device_traces=[reps] + [[] for _ in snap["device_traces"][1:]])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args()
    files = a.files or sorted(glob.glob("/work/shared/data/snapshots/*.pickle"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        biggest = None
        for f in files:
            with open(f, "rb") as fh:
                snap = pickle.load(fh)
            rows.append(measure(os.path.basename(f), snap, a.repeat, tmp))
            if entries(snap) and (biggest is None or entries(snap) > entries(biggest[1])):
                biggest = (os.path.basename(f), snap)
        if biggest is not None:
            for n in (_config.DEFAULT_MAX_ENTRIES, 5 * _config.DEFAULT_MAX_ENTRIES):
                s = scaled(biggest[1], n)
                bare = dict(s, device_traces=[[] for _ in s["device_traces"]])
                r = measure("%s, trace x%d entries" % (biggest[0][:24], n), s, max(3, a.repeat // 3), tmp)
                t_bare = best(lambda: pickle.dumps(bare, protocol=pickle.DEFAULT_PROTOCOL), a.repeat)
                r["pickle_us_per_entry"] = (r["pickle_ms"] / 1e3 - t_bare) / n * 1e6
                rows.append(r)
    print("%-62s %10s %8s %10s %10s %8s %8s" % ("file", "bytes", "entries", "pickle ms", "write ms", "B/entry",
                                               "us/entry"))
    for r in rows:
        print("%-62s %10d %8d %10.2f %10.2f %8s %8s" % (
            r["file"][:62], r["bytes"], r["entries"], r["pickle_ms"], r["write_fsync_ms"],
            "%.0f" % r["trace_bytes_per_entry"] if r["trace_bytes_per_entry"] else "-",
            "%.2f" % r["pickle_us_per_entry"] if r["pickle_us_per_entry"] else "-"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"python": sys.version.split()[0], "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
