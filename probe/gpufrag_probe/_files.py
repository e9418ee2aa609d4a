"""The files the probe writes: names, atomic replacement, the labels
sidecar, the name lock, and the bounded OOM copies.

Per probe file name STEM (one per process, <instance>__<model>__<tag>),
DIR holds STEM.pickle (the rolling snapshot), STEM.labels.json (its
labels), .STEM.lock (held while the process lives) and, only while a write
is in progress, one .STEM.pickle.<pid>.<hex>.tmp; DIR/.gpufrag-oom/ holds at
most `keep` STEM.<UTC time>.pickle OOM snapshots, oldest deleted first.
"""
import binascii
import errno
import json
import os
import re
import time

from . import _config

try:
    import fcntl
except ImportError:  # not POSIX: no name lock
    fcntl = None

# _CHUNK: bytes per os.write call; the GIL is released during each write,
# so the host's threads run while a large snapshot goes to disk.
_CHUNK = 8 << 20

# _SIDECAR_MAX: a labels sidecar read back to compare is at most this long
# (the exporter refuses more than 64 KiB).
_SIDECAR_MAX = 64 << 10


class HeldError(Exception):
    """The name lock is held by another live process."""


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view[:_CHUNK])
        view = view[n:]


def atomic_write(directory, name, data, also=None):
    """Writes data to directory/name atomically: a temporary file whose name
    starts with '.', fsync, an optional hard link to also (the same bytes
    under a second name, written again if the link fails), rename over
    name, fsync of the directory. A failure removes the temporary file and
    raises; name is then unchanged."""
    tmp = os.path.join(directory, ".%s.%d.%s.tmp" % (name, os.getpid(), binascii.hexlify(os.urandom(4)).decode()))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        if also is not None:
            try:
                os.link(tmp, also)
            except OSError:
                atomic_write(os.path.dirname(also), os.path.basename(also), data)
        os.replace(tmp, os.path.join(directory, name))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)
    return os.path.join(directory, name)


class Files:
    """The files of one probe in one directory."""

    def __init__(self, directory, keep):
        self.directory = directory
        self.keep = keep
        self.stem = None
        self._lock_fd = None

    # --- naming ------------------------------------------------------------

    def claim(self, base):
        """Takes the name base, or base-pid<PID> when another live process
        holds base's lock, and returns it. Errors other than a held lock
        (no flock on this file system, a read-only directory) leave the
        name unlocked and are returned as the second value."""
        os.makedirs(self.directory, exist_ok=True)
        problem = None
        for stem in (base, "%s-pid%d" % (base, os.getpid())):
            try:
                self._lock(stem)
            except HeldError:
                continue
            except OSError as e:
                problem = e
            self.stem = stem
            self._remove_stale_temps()
            return stem, problem
        self.stem = base  # unreachable in practice: our pid's name is ours
        return base, problem

    def _lock(self, stem):
        if fcntl is None:
            return
        fd = os.open(os.path.join(self.directory, ".%s.lock" % stem),
                     os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0), 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise HeldError(stem)
            raise
        self._lock_fd = fd

    def release(self):
        """Closes the name lock (stop, or a forked child's inherited copy,
        which leaves the parent's lock in place)."""
        if self._lock_fd is not None:
            try:
                os.close(self._lock_fd)
            except OSError:
                pass
            self._lock_fd = None

    def _remove_stale_temps(self):
        """Temporary files of this name left by a process that died while
        writing (we hold the name now, so nobody else writes them)."""
        pat = re.compile(r"^\.%s\.(pickle|labels\.json)\.\d+\.[0-9a-f]+\.tmp$" % re.escape(self.stem))
        for d in (self.directory, os.path.join(self.directory, _config.OOM_SUBDIR)):
            try:
                names = os.listdir(d)
            except OSError:
                continue
            for n in names:
                if pat.match(n):
                    try:
                        os.unlink(os.path.join(d, n))
                    except OSError:
                        pass

    # --- writing -----------------------------------------------------------

    def pickle_path(self):
        return os.path.join(self.directory, self.stem + ".pickle")

    def write_labels(self, labels):
        """Writes STEM.labels.json unless it already holds labels."""
        name = self.stem + ".labels.json"
        data = (json.dumps(labels, sort_keys=True) + "\n").encode("utf-8")
        try:
            with open(os.path.join(self.directory, name), "rb") as f:
                if f.read(_SIDECAR_MAX + 1) == data:
                    return
        except OSError:
            pass
        os.makedirs(self.directory, exist_ok=True)
        atomic_write(self.directory, name, data)

    def write_snapshot(self, data, oom=False):
        """Replaces STEM.pickle with data; with oom, also keeps it as an OOM
        copy (at most keep of them). Returns (path, copy path or None)."""
        os.makedirs(self.directory, exist_ok=True)
        also = None
        if oom and self.keep > 0:
            sub = os.path.join(self.directory, _config.OOM_SUBDIR)
            os.makedirs(sub, exist_ok=True)
            also = os.path.join(sub, "%s.%s.pickle" % (self.stem, _utc_stamp()))
        path = atomic_write(self.directory, self.stem + ".pickle", data, also=also)
        if also is not None:
            self.prune()
        return path, also

    def oom_copies(self):
        """This name's OOM copies, oldest first."""
        sub = os.path.join(self.directory, _config.OOM_SUBDIR)
        pat = re.compile(r"^%s\.\d{8}T\d{6}\.\d{6}Z\.pickle$" % re.escape(self.stem))
        try:
            names = os.listdir(sub)
        except OSError:
            return []
        return [os.path.join(sub, n) for n in sorted(n for n in names if pat.match(n))]

    def prune(self):
        """Deletes the oldest OOM copies past keep."""
        copies = self.oom_copies()
        for p in copies[:max(0, len(copies) - self.keep)]:
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass


def _utc_stamp():
    """YYYYMMDDTHHMMSS.ffffffZ: copies of one name sort by time (OOM
    snapshots are at least OOM_MIN_GAP_S apart, so they never collide)."""
    t = time.time()
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(t)) + ".%06dZ" % int((t % 1) * 1e6)
