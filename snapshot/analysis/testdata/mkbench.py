#!/usr/bin/env python3
"""Writes the ~3 MB snapshot docs/benchmarks-analyze.md measures (not committed).

    python3 mkbench.py SRC.pickle OUT.pickle [TARGET_BYTES]

SRC is a real trace-bearing snapshot (the shared kkaitlyn111 file, 1 MB).
Real writers share frame dicts through the pickle memo; writers and
recordings with context="all" and many distinct stacks share less, and the
file grows. This script unshares the frame lists of trace entries (copying
each frame dict; strings stay shared) until the file reaches TARGET_BYTES
(default 3,000,000), so parse cost grows while the allocator trace, and
therefore the replay, stays the real one. Only dict, list, str, int, float
and bool values are written (pickle protocol 4, as torch writes).
"""
import pickle
import sys


def main():
    src, out = sys.argv[1], sys.argv[2]
    target = int(sys.argv[3]) if len(sys.argv) > 3 else 3_000_000
    with open(src, "rb") as f:
        s = pickle.load(f)  # SRC must be trusted: this is CPython's unpickler
    trace = [e for tr in s["device_traces"] for e in tr]
    lo, hi = 0, len(trace)
    # Binary search the number of entries to unshare.
    base = [e.get("frames") for e in trace]
    while lo < hi:
        mid = (lo + hi) // 2
        for i, e in enumerate(trace):
            if "frames" in e:
                e["frames"] = [dict(fr) for fr in base[i]] if i < mid else base[i]
        n = len(pickle.dumps(s, protocol=4))
        if n < target:
            lo = mid + 1
        else:
            hi = mid
    for i, e in enumerate(trace):
        if "frames" in e:
            e["frames"] = [dict(fr) for fr in base[i]] if i < lo else base[i]
    with open(out, "wb") as f:
        pickle.dump(s, f, protocol=4)


if __name__ == "__main__":
    main()
