"""State and test controls of the fake torch (see ../README.md)."""
import collections
import copy
import os
import pickle
import sys
import threading
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
# probe/tests/fake_torch/torch -> the repository root.
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(_HERE))))
DEFAULT_SNAPSHOT = os.path.join(REPO, "snapshot", "testdata", "replay.pickle")
FRAMES = [{"filename": "server.py", "line": 42, "name": "forward"}]


def env_value(name):
    return os.environ.get(name, "")


def env_flag(name):
    return env_value(name) not in ("", "0")


class State:
    """The process's fake CUDA state. Tests reset it with reset()."""

    def __init__(self):
        self.lock = threading.RLock()
        self.devices = int(env_value("FAKE_TORCH_DEVICES") or 1)
        self.initialized = False
        self.broken = env_flag("FAKE_TORCH_BROKEN")
        self.calls = []  # (name, args, kwargs) of every API call
        self.observers = []
        self.history = None  # dict(enabled, context, stacks, max_entries) while recording
        self.traces = [collections.deque() for _ in range(self.devices)]
        self.snapshot_delay_s = 0.0  # _snapshot sleeps this long (slow-dump tests)
        self.snapshot_threads = []  # the thread of each _snapshot call
        self.base = {}
        self.load(env_value("FAKE_TORCH_SNAPSHOT") or DEFAULT_SNAPSHOT)

    def call(self, name, *args, **kwargs):
        with self.lock:
            self.calls.append((name, args, kwargs))
        if self.broken:
            raise RuntimeError("fake torch: %s is broken" % name)

    def calls_named(self, name):
        with self.lock:
            return [c for c in self.calls if c[0] == name]

    def load(self, src, trace=False):
        """Sets the allocator state (segments, allocator_settings, ...) from a
        snapshot dict or pickle file. With trace, the file's trace entries
        happen now: they are recorded if history is on."""
        if isinstance(src, str):
            with open(src, "rb") as f:
                src = pickle.load(f)
        with self.lock:
            self.base = {k: copy.deepcopy(v) for k, v in src.items() if k != "device_traces"}
            n = max(self.devices, len(src.get("device_traces", [])),
                    1 + max([s.get("device", 0) for s in src.get("segments", [])] or [0]))
            while len(self.traces) < n:
                self.traces.append(collections.deque(maxlen=self._maxlen()))
            self.devices = max(self.devices, n)
        if trace:
            for d, tr in enumerate(src.get("device_traces", [])):
                for e in tr:
                    self.record(d, copy.deepcopy(e), raw=True)

    def _maxlen(self):
        return self.history["max_entries"] if self.history else None

    def set_history(self, enabled, context, stacks, max_entries):
        if not self.initialized:  # no device allocators yet: no effect
            return
        with self.lock:
            if enabled is None:
                self.history = None
                return
            self.history = dict(enabled=enabled, context=context, stacks=stacks, max_entries=max_entries)
            self.traces = [collections.deque(t, maxlen=max_entries) for t in self.traces]

    def record(self, device, entry, raw=False):
        """Appends a trace entry to device's ring if history is on; raw
        entries (a fixture's) are kept as they are."""
        with self.lock:
            if self.history is None or self.history["enabled"] != "all":
                return
            if raw:
                self.traces[device].append(entry)
                return
            entry = dict(entry)
            entry.setdefault("stream", 0)
            entry.setdefault("time_us", int(time.time() * 1e6))
            if self.history["context"] in (None, "state"):
                entry["frames"] = []
            else:
                entry.setdefault("frames", FRAMES)
            self.traces[device].append(entry)

    def snapshot(self):
        self.snapshot_threads.append(threading.current_thread())
        if self.snapshot_delay_s:
            time.sleep(self.snapshot_delay_s)
        with self.lock:
            if not self.initialized:
                return {"segments": [], "device_traces": []}
            out = copy.deepcopy(self.base)
            out.setdefault("segments", [])
            out["device_traces"] = [list(t) for t in self.traces]
            return out


STATE = State()


def reset():
    """A fresh process's state (reads the FAKE_TORCH_* variables again)."""
    global STATE
    STATE = State()
    return STATE


def init():
    sys.modules["torch"].cuda.init()


def load(src, trace=False):
    """STATE.load: the allocator state of a snapshot dict or pickle; with
    trace, its trace entries are recorded now (if history is on)."""
    STATE.load(src, trace=trace)


def record(device, entry):
    """STATE.record: one trace entry, if history is on."""
    STATE.record(device, entry)


def alloc(size, addr=0x7F0000000000, device=0):
    """Records an alloc and its free, as a forward pass's temporaries."""
    STATE.record(device, {"action": "alloc", "addr": addr, "size": size})
    STATE.record(device, {"action": "free_requested", "addr": addr, "size": size})
    STATE.record(device, {"action": "free_completed", "addr": addr, "size": size})


def oom(size, device=0, device_free=1 << 20, device_alloc=80 << 30):
    """An out-of-memory error as PyTorch's caching allocator raises it: the
    oom trace entry (if recording), the observers, then the error."""
    cuda = sys.modules["torch"].cuda
    STATE.record(device, {"action": "oom", "device_free": device_free, "size": size})
    for obs in list(STATE.observers):
        obs(device, size, device_alloc, device_free)  # an exception here replaces the OOM error
    raise cuda.OutOfMemoryError(
        "CUDA out of memory. Tried to allocate %d bytes. GPU %d has a total capacity of %d bytes "
        "of which %d bytes is free." % (size, device, device_alloc, device_free))


def break_all(on=True):
    STATE.broken = on
