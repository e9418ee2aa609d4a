"""Defaults, limits and the GPUFRAG_PROBE_* environment variables."""
import os

# DEFAULT_INTERVAL_S is the time between periodic dumps: the exporter
# rescans its directory every 10 s by default, so its figures are at most
# about 40 s old, and a dump of the default history size (below) costs well
# under 1% of that time.
DEFAULT_INTERVAL_S = 30.0

# DEFAULT_KEEP is the number of OOM snapshots kept per probe file name in
# DIR/.gpufrag-oom/: the first few of a burst and the latest, at most about
# 25 MB at the default history size (5 MB a file, below).
DEFAULT_KEEP = 5

# DEFAULT_MAX_ENTRIES bounds the allocator's history ring (per device).
# Measured with probe/bench/dump_cost.py on the largest shared snapshot
# (4,657 entries of up to 71 frames, C++ frames included) cycled to 20,000
# entries, each with its own frames list (the costlier case): 240 bytes an
# entry, a 5.1 MB file, pickled in 38 ms and written (fsync included) in
# 18 ms on a loaded 2-core machine; `gpufrag analyze --no-replay`, what the
# exporter runs, reads it in 0.13 s with 83 MB of memory. 100,000 entries
# (PyTorch's documented example) cost 24 MB, 270 ms of pickling with the GIL
# held (0.9% of a 30 s interval before _snapshot() itself) and 248 MB in the
# exporter. 20,000 entries hold 0.5-2 s of an eager-mode server (10,000-
# 40,000 entries/s) and about a minute of a CUDA-graph decode loop (a few
# hundred entries/s): the OOM and the allocations just before it, which is
# what the replay needs (older state is rebuilt from the segments).
DEFAULT_MAX_ENTRIES = 20000

# BACKOFF_K: a dump holds the GIL while _snapshot() builds the state and
# while it is pickled, so the next one waits at least BACKOFF_K times as
# long as those took: the probe's share of the process's time stays below
# 1/BACKOFF_K = 1%, the overhead target, however large the snapshot grows.
# The write and the fsyncs release the GIL and are not counted.
BACKOFF_K = 100.0

# POLL_S: how often the probe looks whether the host has imported torch and
# initialised CUDA (a dictionary lookup and a flag read). History and the
# OOM observer start at most this long after CUDA initialisation, usually
# long before the model's weights have finished loading.
POLL_S = 0.5

# UNNAMED_RETRY_S: until the process has allocated memory (so there is no
# file yet) the periodic dump is retried this often instead of every
# interval, so the file appears as soon as the model's weights start to
# load; a snapshot of an empty allocator costs microseconds.
UNNAMED_RETRY_S = 1.0

# OOM_MIN_GAP_S: an OOM snapshot is taken at most once per
# max(OOM_MIN_GAP_S, BACKOFF_K x the last snapshot's time), so a host that
# catches OOMs in a loop (a batch-size search) pays for a snapshot at most
# once a second. OOMs in between are still in the history, and the probe
# writes a periodic dump at the end of the gap, so the exporter counts them.
OOM_MIN_GAP_S = 1.0

# OOM_QUEUE: OOM snapshots waiting to be written (each may be megabytes):
# one being written and one waiting; more are dropped and counted (the gap
# above makes that rare).
OOM_QUEUE = 2

# EXIT_FLUSH_S: at interpreter exit (an uncaught OOM error ends most
# servers) the probe waits this long for a pending OOM snapshot to be
# written: over 100 times a default-size dump (56 ms, above), well under
# Kubernetes' default 30 s termination grace period.
EXIT_FLUSH_S = 10.0

# NAME_PART_MAX: characters of instance and model kept in a file name
# (a pod name is at most 63); the sidecar holds the full values.
NAME_PART_MAX = 64

# OOM_SUBDIR is where OOM snapshots are kept; names starting with '.' are
# ignored by `gpufrag exporter --snapshots`.
OOM_SUBDIR = ".gpufrag-oom"

ENV_DIR = "GPUFRAG_PROBE_DIR"
ENV_INSTANCE = "GPUFRAG_PROBE_INSTANCE"
ENV_MODEL = "GPUFRAG_PROBE_MODEL"
ENV_INTERVAL = "GPUFRAG_PROBE_INTERVAL"
ENV_KEEP = "GPUFRAG_PROBE_KEEP"
ENV_MAX_ENTRIES = "GPUFRAG_PROBE_MAX_ENTRIES"
ENV_HISTORY = "GPUFRAG_PROBE_HISTORY"
ENV_STACKS = "GPUFRAG_PROBE_STACKS"

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _number(name, kind, default, minimum, problems):
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        v = kind(raw)
        if v < minimum or v != v:  # NaN
            raise ValueError("below %s" % minimum)
        return v
    except ValueError:
        problems.append("%s=%r is not a %s >= %s; using %s" % (name, raw, kind.__name__, minimum, default))
        return default


def from_env():
    """The probe settings of the environment and a list of problems (bad
    values, each replaced by its default)."""
    problems = []
    cfg = {
        "directory": os.environ.get(ENV_DIR, ""),
        "interval_s": _number(ENV_INTERVAL, float, DEFAULT_INTERVAL_S, 0.001, problems),
        "keep": _number(ENV_KEEP, int, DEFAULT_KEEP, 0, problems),
        "max_entries": _number(ENV_MAX_ENTRIES, int, DEFAULT_MAX_ENTRIES, 1, problems),
        "history": True,
        "stacks": True,
        "instance": os.environ.get(ENV_INSTANCE) or None,
        "model": os.environ.get(ENV_MODEL) or None,
    }
    for name, key in ((ENV_HISTORY, "history"), (ENV_STACKS, "stacks")):
        raw = os.environ.get(name, "").strip().lower()
        if raw in _FALSE:
            cfg[key] = False
        elif raw and raw not in _TRUE:
            problems.append("%s=%r is not one of %s or %s; %s stays on" % (name, raw, _TRUE, _FALSE, key))
    return cfg, problems
