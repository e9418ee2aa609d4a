"""Defaults, limits and the GPUFRAG_PROBE_* environment variables."""
import math
import operator
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

# THREAD_RETRY_S: after an unexpected error in the probe's loop (logged
# once per kind) the next periodic dump waits this long; OOM snapshots are
# written as they come. MAX_WAIT_S: the longest single wait of the thread
# (it looks again afterwards): a wait past threading.TIMEOUT_MAX overflows.
THREAD_RETRY_S = 1.0
MAX_WAIT_S = 3600.0

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

# The accepted range of each setting, checked where it enters (start()'s
# arguments, the GPUFRAG_PROBE_* variables, `run`'s options), so the thread
# never sees a value it cannot use (an infinite interval overflowed its
# wait and ended it: issue 28).
#
# MIN_INTERVAL_S: a dump every 0.1 s is already 10 fsynced files a second;
# the exporter rescans at most once a second. MAX_INTERVAL_S: a day; for
# OOM captures with (almost) no periodic dumps, use the maximum.
MIN_INTERVAL_S = 0.1
MAX_INTERVAL_S = 86400.0
# MAX_KEEP: OOM snapshots are about 5 MB each at the default history size
# (more with a larger one): 100 of them are already half a gigabyte per
# process (the exporter keeps 20 captures by default).
MAX_KEEP = 100
# MAX_MAX_ENTRIES: at about 240 bytes an entry (above) a million entries
# make a 240 MB file, just under the exporter's default --max-file-bytes
# (256 MiB); a larger ring would write files the exporter refuses.
MAX_MAX_ENTRIES = 1000000
# MAX_LABEL_CHARS: an instance or model label (the sidecar that carries
# them is at most 64 KiB for the exporter).
MAX_LABEL_CHARS = 1024
# MAX_DIR_BYTES: PATH_MAX on Linux.
MAX_DIR_BYTES = 4096

_RANGES = {
    # key: (variable, what, type, minimum, maximum)
    "interval_s": (ENV_INTERVAL, "a number of seconds", float, MIN_INTERVAL_S, MAX_INTERVAL_S),
    "keep": (ENV_KEEP, "a whole number", int, 0, MAX_KEEP),
    "max_entries": (ENV_MAX_ENTRIES, "a whole number", int, 1, MAX_MAX_ENTRIES),
}


def accepted(key):
    """The accepted values of the numeric setting key, in words."""
    _, what, kind, lo, hi = _RANGES[key]
    return "%s from %s to %s" % (what, _fmt(lo), _fmt(hi))


def _fmt(v):
    return "%g" % v if isinstance(v, float) else "%d" % v


def check_number(key, value):
    """value as the numeric setting key (interval_s: float; keep,
    max_entries: int), or ValueError naming the accepted range. Strings
    are parsed (the environment and the command line); a bool is not a
    number; a float count is refused rather than truncated."""
    _, what, kind, lo, hi = _RANGES[key]
    v = value
    if isinstance(v, str):
        try:
            v = kind(v.strip())
        except ValueError:
            v = None
    elif isinstance(v, bool):
        v = None
    elif kind is int:
        try:
            v = operator.index(v)
        except TypeError:
            v = None
    else:
        try:
            v = float(v)
        except (TypeError, ValueError):
            v = None
    if v is None or (kind is float and not math.isfinite(v)) or not lo <= v <= hi:
        raise ValueError("must be %s, not %s" % (accepted(key), _show(value)))
    return v


def check_directory(value):
    """value (str or os.PathLike) as the probe's directory, or ValueError:
    not empty, no NUL byte, at most MAX_DIR_BYTES bytes."""
    try:
        d = os.fspath(value)
    except TypeError:
        d = None
    if not isinstance(d, str):
        raise ValueError("must be a path (str), not %s" % _show(value))
    if not d:
        raise ValueError("is empty")
    if "\0" in d:
        raise ValueError("contains a NUL byte: %s" % _show(d))
    if len(os.fsencode(d)) > MAX_DIR_BYTES:
        raise ValueError("is longer than %d bytes" % MAX_DIR_BYTES)
    return d


def label_problem(value):
    """Why value cannot be an instance or model label (the exporter's
    sidecar holds valid UTF-8 without control characters), or None."""
    if not isinstance(value, str):
        return "must be a string, not %s" % _show(value)
    if not value:
        return "is empty"
    if len(value) > MAX_LABEL_CHARS:
        return "is longer than %d characters" % MAX_LABEL_CHARS
    for i, c in enumerate(value):
        o = ord(c)
        if o < 0x20 or 0x7F <= o < 0xA0:
            return "has a control character (U+%04X) at character %d: %s" % (o, i, _show(value))
        if 0xD800 <= o < 0xE000:
            return "is not valid UTF-8 (an undecodable byte or lone surrogate at character %d): %s" % (i, _show(value))
    return None


def _show(value):
    """value quoted for a message, at most about 80 characters."""
    r = repr(value)
    return r if len(r) <= 80 else r[:77] + "..."


def _from_env(key, default, problems):
    name = _RANGES[key][0]
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return check_number(key, raw)
    except ValueError as e:
        problems.append("%s %s; using the default %s" % (name, e, _fmt(default)))
        return default


def _label_from_env(name, problems):
    raw = os.environ.get(name)
    if not raw:
        return None
    why = label_problem(raw)
    if why is not None:
        problems.append("%s %s; ignored" % (name, why))
        return None
    return raw


def from_env():
    """The probe settings of the environment and a list of problems (bad
    values, each replaced by its default and named with its accepted
    range)."""
    problems = []
    cfg = {
        "directory": os.environ.get(ENV_DIR, ""),
        "interval_s": _from_env("interval_s", DEFAULT_INTERVAL_S, problems),
        "keep": _from_env("keep", DEFAULT_KEEP, problems),
        "max_entries": _from_env("max_entries", DEFAULT_MAX_ENTRIES, problems),
        "history": True,
        "stacks": True,
        "instance": _label_from_env(ENV_INSTANCE, problems),
        "model": _label_from_env(ENV_MODEL, problems),
    }
    for name, key in ((ENV_HISTORY, "history"), (ENV_STACKS, "stacks")):
        raw = os.environ.get(name, "").strip().lower()
        if raw in _FALSE:
            cfg[key] = False
        elif raw and raw not in _TRUE:
            problems.append("%s=%r is not one of %s or %s; %s stays on" % (name, raw, _TRUE, _FALSE, key))
    return cfg, problems
