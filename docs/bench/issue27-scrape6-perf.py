#!/usr/bin/env python3
"""Split a `perf script -F comm,tid,period,ip,sym` dump of BenchmarkScrapeInterval by
goroutine role (docs/benchmarks.md, "Issue 27, sixth round: the interval scrape").

usage: issue27-scrape6-perf.py DUMP SCRAPES HZ [FRAME]

Prints the CPU (user and kernel) of the scrape's server goroutine (net/http's conn.serve),
the client's goroutines (net/http's persistConn, the benchmark's io.Copy) and, for scale,
the polls and the Collector's preparation, in ms per scrape. With FRAME (a function name),
also what that function's callees and syscalls took, in samples.
"""
import collections
import sys


def samples(path):
    frames = []
    for line in open(path):
        line = line.rstrip("\n")
        if not line:
            if frames:
                yield frames
            frames = []
        elif line.startswith("\t"):
            ip, _, sym = line.strip().partition(" ")
            frames.append((ip.startswith("ffffffff"), sym))
        else:
            frames = []
    if frames:
        yield frames


def role(stack):
    if "net/http.(*conn).serve" in stack:
        return "server"
    if "persistConn" in stack or "io.Copy" in stack or "(*Client).Get" in stack:
        return "client"
    if "Collector).prepare" in stack:
        return "prepare"
    if "Poll" in stack or "Rescan" in stack:
        return "polls"
    return "other"


def main():
    path, scrapes, hz = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    frame = sys.argv[4] if len(sys.argv) > 4 else None
    roles = collections.Counter()
    callees, syscalls = collections.Counter(), collections.Counter()
    for frames in samples(path):
        syms = [s for _, s in frames]
        roles[role("\n".join(syms))] += 1
        if frame:
            for i in range(len(syms) - 1, 0, -1):
                if frame in syms[i]:
                    callees[syms[i - 1]] += 1
                    kern = [s for k, s in frames[:i] if k and (s.startswith("__x64_sys") or s.startswith("__do_sys"))]
                    syscalls[kern[-1] if kern else ("kernel" if frames[0][0] else "user")] += 1
                    break
    ms = lambda n: 1000 * n / hz / scrapes
    print(" ".join(f"{r} {ms(roles[r]):.3f}" for r in ("server", "client", "polls", "prepare")), "ms per scrape")
    for title, c in (("callees of " + str(frame), callees), ("syscalls under it", syscalls)):
        if c:
            print("==", title)
            for k, n in c.most_common(12):
                print(f"{n:7d}  {k}")


if __name__ == "__main__":
    main()
