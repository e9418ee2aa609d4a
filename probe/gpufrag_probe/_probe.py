"""The probe: a daemon thread that dumps the CUDA caching allocator's
snapshot into a directory, and an OOM observer that captures the snapshot
at an out-of-memory error."""
import atexit
import collections
import errno
import logging
import os
import pickle
import sys
import threading
import time

from . import _config, _files, _labels, _torchapi

log = logging.getLogger("gpufrag_probe")


def next_interval(interval_s, last_dump_s):
    """The wait before the next periodic dump: interval_s, or BACKOFF_K
    times the last dump's duration when that is longer. A dump's duration
    is the part that holds the GIL: _snapshot() and the pickling (the write
    and the fsyncs release it and cost the host nothing)."""
    return max(interval_s, _config.BACKOFF_K * last_dump_s)


def error_kind(where, e):
    """A short key for "log once": where, the exception type, and errno."""
    kind = "%s:%s" % (where, type(e).__name__)
    if isinstance(e, _files.Refused):
        kind += ":" + e.key
    elif isinstance(e, OSError) and e.errno in errno.errorcode:
        kind += ":" + errno.errorcode[e.errno]
    return kind


def _arg(name, check, value):
    """check(value), its ValueError naming the argument."""
    try:
        return check(value)
    except ValueError as e:
        raise ValueError("gpufrag_probe: %s %s" % (name, e)) from None


class Probe:
    """A running probe; see gpufrag_probe.start."""

    def __init__(self, directory, interval_s, instance, model, history, keep, max_entries, stacks=True):
        self.directory = os.path.abspath(_arg("directory", _config.check_directory, directory))
        self.interval_s = _arg("interval_s", lambda v: _config.check_number("interval_s", v), interval_s)
        self.keep = _arg("keep", lambda v: _config.check_number("keep", v), keep)
        self.max_entries = _arg("max_entries", lambda v: _config.check_number("max_entries", v), max_entries)
        for name, v in (("instance", instance), ("model", model)):
            why = None if v is None else _config.label_problem(v)
            if why is not None:
                raise ValueError("gpufrag_probe: %s %s" % (name, why))
        self.history = bool(history)
        self.stacks = bool(stacks)
        self._instance, self._model = instance, model
        self._files = _files.Files(self.directory, self.keep)
        self.labels = None  # {"instance", "model", "gpu"} once named
        self._counts = collections.Counter()  # dumps by reason, errors by kind
        self._seen = set()
        self._init_process_state()

    def _init_process_state(self):
        """State that belongs to one process (rebuilt in a forked child)."""
        self._pid = os.getpid()
        self._write_lock = threading.Lock()
        # _cv guards _jobs (OOM snapshots to write), _pending (those plus the
        # one being written) and _catchup_at; the thread waits on it.
        self._cv = threading.Condition(threading.Lock())
        self._jobs = collections.deque()
        self._pending = 0
        self._stopping = threading.Event()
        self._history_on = False
        self._last_dump_s = 0.0  # snapshot + pickle: the GIL-holding part
        self._last_snapshot_s = 0.0
        self._last_pickle_s = 0.0
        self._last_write_s = 0.0
        self._last_oom_at = None
        self._catchup_at = None
        self._next_s = self.interval_s
        self.path = None
        self._thread = threading.Thread(target=self._run, name="gpufrag-probe", daemon=True)

    # --- public ------------------------------------------------------------

    def dump(self, reason="manual"):
        """Takes a snapshot now, in the calling thread, and replaces the
        probe's file with it. Returns the file's path, or None when nothing
        was written (CUDA not initialised yet, no memory allocated yet, or an
        error, logged once per kind)."""
        try:
            torch = _torchapi.ready()
            if torch is None:
                self._warn("dump:not_ready", "gpufrag_probe: no dump (%s): torch is not imported "
                           "or CUDA is not initialised in this process", reason)
                return None
            t0 = time.monotonic()
            snap = _torchapi.snapshot(torch)
            self._last_snapshot_s = time.monotonic() - t0
            return self._write(snap, reason)
        except Exception as e:
            self._fail("dump", e)
            return None

    def stop(self, timeout_s=_config.EXIT_FLUSH_S):
        """Stops the thread (after it writes a pending OOM snapshot, waiting
        at most timeout_s), turns off the history it turned on, releases its
        file name. The OOM observer stays attached (PyTorch cannot detach
        one) and does nothing for a stopped probe."""
        try:
            _unregister(self)
            with self._cv:
                self._stopping.set()
                self._cv.notify_all()
            if self._thread.is_alive() and self._thread is not threading.current_thread():
                self._thread.join(timeout_s)
            if self._history_on:
                torch = _torchapi.ready()
                if torch is not None:
                    _torchapi.stop_history(torch)
                self._history_on = False
            self._files.release()
        except Exception as e:
            self._fail("stop", e)

    def stats(self):
        """Counters for tests and debugging: dumps by reason ("dump:REASON"),
        errors by kind, the last dump's and snapshot's seconds, the next
        periodic wait, the file path."""
        out = dict(self._counts)
        out.update(last_dump_s=self._last_dump_s, last_snapshot_s=self._last_snapshot_s,
                   last_pickle_s=self._last_pickle_s, last_write_s=self._last_write_s,
                   next_interval_s=self._next_s, path=self.path, history=self._history_on)
        return out

    @property
    def running(self):
        return self._thread.is_alive() and not self._stopping.is_set()

    # --- logging -----------------------------------------------------------

    def _warn(self, kind, msg, *args):
        self._counts[kind] += 1
        if kind in self._seen:
            return
        self._seen.add(kind)
        try:
            log.warning(msg + " (logged once)", *args)
        except Exception:
            pass

    def _fail(self, where, e):
        kind = error_kind(where, e)
        self._warn(kind, "gpufrag_probe: %s failed in %s: %s: %s", where, self.directory, type(e).__name__, e)

    # --- the thread --------------------------------------------------------

    def _start(self):
        self._thread.start()
        return self

    def _run(self):
        try:
            torch = self._wait_for_cuda()
            if torch is None:
                self._drain()
                return
            self._setup(torch)
            due = time.monotonic()
            while not self._stopping.is_set():
                try:
                    due = self._step(torch, due)
                except Exception as e:  # logged once per kind; the OOM capture goes on
                    self._warn(error_kind("thread", e), "gpufrag_probe: error in the probe's loop in %s: %s: %s; "
                               "it goes on (OOM snapshots as they come, the next dump in %g s)",
                               self.directory, type(e).__name__, e, _config.THREAD_RETRY_S)
                    due = time.monotonic() + _config.THREAD_RETRY_S
            self._drain()
        except BaseException as e:  # not an Exception: the thread ends, the host goes on
            self._fail("thread", e)
            with self._cv:
                self._jobs.clear()
                self._pending = 0
                self._cv.notify_all()

    def _step(self, torch, due):
        """Waits until due (a periodic dump), an OOM snapshot to write, or
        stop; does the one that came; returns the next due time."""
        with self._cv:
            while True:
                if self._catchup_at is not None:
                    due = min(due, self._catchup_at)
                wait = due - time.monotonic()
                if self._stopping.is_set() or self._jobs or wait <= 0:
                    break
                # Bounded: a wait beyond threading.TIMEOUT_MAX overflows.
                self._cv.wait(min(wait, _config.MAX_WAIT_S))
            if self._stopping.is_set():
                return due
            job = self._jobs.popleft() if self._jobs else None
            if job is None:
                self._catchup_at = None
        if job is not None:
            self._write_oom(job)
            return due
        took = self._periodic(torch)
        self._next_s = next_interval(self.interval_s, took)
        if self._files.stem is None:  # nothing allocated yet: look again soon
            self._next_s = min(self._next_s, _config.UNNAMED_RETRY_S)
        return time.monotonic() + self._next_s

    def _drain(self):
        """Writes the OOM snapshots still queued (stop and exit)."""
        while True:
            with self._cv:
                if not self._jobs:
                    return
                job = self._jobs.popleft()
            self._write_oom(job)

    def _wait_for_cuda(self):
        while not self._stopping.is_set():
            try:
                torch = _torchapi.ready()
            except Exception as e:
                self._fail("is_initialized", e)
                torch = None
            if torch is not None:
                return torch
            self._stopping.wait(_config.POLL_S)
        return None

    def _setup(self, torch):
        if self.history:
            try:
                _torchapi.record_history(torch, self.max_entries, self.stacks)
                self._history_on = True
            except _torchapi.Unsupported as e:
                self._warn("history:unsupported", "gpufrag_probe: no allocation history: %s", e)
            except Exception as e:
                self._fail("history", e)
        try:
            _attach_observer(torch)
        except _torchapi.Unsupported as e:
            self._warn("observer:unsupported", "gpufrag_probe: no OOM capture at the error: %s "
                       "(periodic dumps still carry the OOM entries of the history)", e)
        except Exception as e:
            self._fail("observer", e)

    def _periodic(self, torch):
        """One periodic dump; returns the seconds it held the GIL for
        (_snapshot() and the pickling)."""
        t0 = time.monotonic()
        self._last_pickle_s = 0.0
        try:
            snap = _torchapi.snapshot(torch)
            self._last_snapshot_s = time.monotonic() - t0
            self._write(snap, "periodic")
        except Exception as e:
            self._fail("snapshot", e)
            self._last_snapshot_s = time.monotonic() - t0
        took = self._last_snapshot_s + self._last_pickle_s
        self._last_dump_s = took
        return took

    def _write_oom(self, job):
        snap, device, alloc, device_free = job
        try:
            path = self._write(snap, "oom", oom_device=device)
            if path is not None:
                log.warning("gpufrag_probe: out of memory on cuda:%d (%d bytes requested, %d free): "
                            "snapshot written to %s", device, alloc, device_free, path)
        except Exception as e:
            self._fail("oom", e)
        finally:
            with self._cv:
                self._pending -= 1
                self._cv.notify_all()

    # --- naming and writing ------------------------------------------------

    def _name(self, devices):
        """Fixes the file name from the first snapshot that shows which
        devices the process uses."""
        rank = _labels.rank()
        gpus = [_labels.physical_gpu(d) for d in devices]
        if rank is not None:
            tag = "rank" + rank
        elif len(gpus) == 1:
            tag = "gpu" + _labels.name_part(gpus[0])
        else:
            tag = "gpus" + ".".join(_labels.name_part(g) for g in gpus)
        inst = _labels.instance(self._instance)
        mdl = _labels.model(self._model)
        gpu = gpus[0] if len(gpus) == 1 and gpus[0] != str(devices[0]) else ""
        base = "%s__%s__%s" % (_labels.name_part(inst), _labels.name_part(mdl), tag)
        stem, problem = self._files.claim(base)
        if problem is not None:
            self._fail("lock", problem)
        self.labels = {"instance": inst, "model": mdl, "gpu": gpu}
        try:
            self._files.write_labels(self.labels)
        except Exception as e:
            self._fail("labels", e)
        log.info("gpufrag_probe: writing %s (instance %r, model %r) every %g s",
                 self._files.pickle_path(), inst, mdl, self.interval_s)

    def _write(self, snap, reason, oom_device=None):
        with self._write_lock:
            if self._files.stem is None:
                devices = _torchapi.devices(snap) or ([oom_device] if oom_device is not None else [])
                if not devices:
                    return None  # nothing allocated yet: no name, no file
                try:
                    self._name(devices)
                except OSError as e:  # the directory cannot be made: named at the next dump
                    self._fail("write", e)
                    return None
            t0 = time.monotonic()
            try:
                data = pickle.dumps(snap, protocol=pickle.DEFAULT_PROTOCOL)
            except Exception as e:
                self._fail("pickle", e)
                return None
            finally:
                self._last_pickle_s = time.monotonic() - t0
            t0 = time.monotonic()
            try:
                path, _, problem = self._files.write_snapshot(data, oom=(reason == "oom"))
            except OSError as e:  # a full disk, a read-only or vanished directory: one kind each
                self._fail("write", e)
                return None
            finally:
                self._last_write_s = time.monotonic() - t0
            if problem is not None:  # .gpufrag-oom is a link (or not a directory): no copy
                self._fail("oom_copy", problem)
            self.path = path
            self._counts["dump:" + reason] += 1
            return path

    # --- the OOM observer (runs on the host's failing allocation) ----------

    def _on_oom(self, torch, device, alloc, device_free):
        if self._stopping.is_set() or self._pid != os.getpid() or not self._thread.is_alive():
            return
        now = time.monotonic()
        gap = max(_config.OOM_MIN_GAP_S, _config.BACKOFF_K * self._last_snapshot_s)
        if self._last_oom_at is not None and now - self._last_oom_at < gap:
            # In the history already; a periodic dump at the gap's end.
            self._counts["oom:skipped"] += 1
            with self._cv:
                self._catchup_at = self._last_oom_at + gap
                self._cv.notify_all()
            return
        self._last_oom_at = now
        snap = _torchapi.snapshot(torch)
        self._last_snapshot_s = time.monotonic() - now
        with self._cv:
            if len(self._jobs) >= _config.OOM_QUEUE:
                full = True
            else:
                full = False
                self._jobs.append((snap, int(device), int(alloc), int(device_free)))
                self._pending += 1
                self._cv.notify_all()
        if full:
            self._warn("oom:queue_full", "gpufrag_probe: an OOM snapshot was dropped: %d are already waiting",
                       _config.OOM_QUEUE)

    def _flush(self, timeout_s):
        """Waits until pending OOM snapshots are written (interpreter exit)."""
        if self._pid != os.getpid() or not self._thread.is_alive():
            return
        with self._cv:
            self._cv.wait_for(lambda: self._pending == 0, timeout_s)

    def _after_fork(self):
        """In a forked child: the thread did not survive, the name and its
        lock belong to the parent. Start afresh."""
        self._files.release()
        self._files = _files.Files(self.directory, self.keep)
        self.labels = None
        self._seen = set()
        self._counts = collections.Counter()
        self._init_process_state()
        self._start()


# --- process-wide state -----------------------------------------------------

_registry_lock = threading.Lock()
_probes = {}  # directory -> running Probe of this process
_observer_pid = None  # the process whose allocator has our observer


def _observer(device, alloc, device_alloc, device_free):
    """The one OOM observer of the process: PyTorch calls it on the thread
    whose allocation failed, then raises its OutOfMemoryError. It must not
    raise (an exception here would replace PyTorch's error)."""
    try:
        torch = sys.modules.get("torch")
        for p in list(_probes.values()):
            try:
                p._on_oom(torch, device, alloc, device_free)
            except Exception as e:
                p._fail("oom_observer", e)
    except Exception:
        pass


def _attach_observer(torch):
    global _observer_pid
    with _registry_lock:
        if _observer_pid == os.getpid():
            return
        _torchapi.attach_oom_observer(torch, _observer)
        _observer_pid = os.getpid()


def register(p):
    """Starts p unless a probe of this process already writes into its
    directory; returns the running one."""
    with _registry_lock:
        cur = _probes.get(p.directory)
        if cur is not None and cur.running and cur._pid == os.getpid():
            return cur
        _probes[p.directory] = p
    return p._start()


def _unregister(p):
    with _registry_lock:
        if _probes.get(p.directory) is p:
            del _probes[p.directory]


def _at_exit():
    """Interpreter exit (an uncaught OOM error, usually): write what the
    observer captured before daemon threads are stopped."""
    deadline = time.monotonic() + _config.EXIT_FLUSH_S
    for p in list(_probes.values()):
        try:
            p._flush(max(0.0, deadline - time.monotonic()))
        except Exception:
            pass


def _after_fork_child():
    global _observer_pid, _registry_lock
    _registry_lock = threading.Lock()
    _observer_pid = None  # a forked child's allocator starts without observers
    for p in list(_probes.values()):
        try:
            if not p._stopping.is_set():
                p._after_fork()
        except Exception:
            pass


atexit.register(_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_child)
