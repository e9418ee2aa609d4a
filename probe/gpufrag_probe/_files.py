"""The files the probe writes: names, atomic replacement, the labels
sidecar, the name lock, and the bounded OOM copies.

Per probe file name STEM (one per process, <instance>__<model>__<tag>),
DIR holds STEM.pickle (the rolling snapshot), STEM.labels.json (its
labels), .STEM.lock (an exclusive flock held while the process lives,
taken before STEM.pickle is first written: the exporter reads a free lock
as "the writer is gone" and stops exporting the file) and, only while a write
is in progress, one .STEM.pickle.<pid>.<hex>.tmp; DIR/.gpufrag-oom/ holds at
most `keep` STEM.<UTC time>.pickle OOM snapshots, oldest deleted first.

Anyone who can write into DIR (a shared volume) can put a link, a named
pipe or a device at one of these names, so the probe trusts none of them:
DIR is opened once per operation and every name inside it (and inside
.gpufrag-oom, itself opened with O_NOFOLLOW) is used relative to that
descriptor; a file is read only when fstatat says regular file, opened
with O_NOFOLLOW|O_NONBLOCK and checked again with fstat (as the exporter
does, see docs/monitoring.md "What the exporter trusts"); a file is
written as a new temporary (O_CREAT|O_EXCL) renamed over its name.
"""
import binascii
import errno
import json
import os
import re
import stat
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

# _COPY_STAMP matches what follows "STEM." in an OOM copy's name
# (_utc_stamp() + ".pickle").
_COPY_STAMP = r"\d{8}T\d{6}\.\d{6}Z\.pickle"

# _LOCK_TRIES, _LOCK_WAIT_S: a name lock found held is tried this many
# times, this far apart (40 ms in all), before the name is taken to be
# another live process's. The exporter tests each lock at every rescan with
# a shared flock held for microseconds (a free lock means the process that
# wrote the files is gone, docs/monitoring.md), and a probe starting in that
# instant would otherwise write under a -pid name for its whole life.
_LOCK_TRIES = 5
_LOCK_WAIT_S = 0.01

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class HeldError(Exception):
    """The name lock is held by another live process."""


class Refused(OSError):
    """A name in the probe's directory that the probe will not open or
    write through: a symbolic link, a named pipe, a socket, a device, or a
    directory where it expects a file (the exporter refuses the same), or
    anything but a real directory at .gpufrag-oom. key is a short word for
    "log once" (link, pipe, socket, device, directory, other)."""

    def __init__(self, path, mode, expected="a regular file"):
        self.key, what = _file_type(mode)
        super().__init__("%s is %s, not %s: the probe never opens a link, a pipe or a device in its "
                         "directory (the exporter refuses them too)" % (path, what, expected))


def _file_type(mode):
    for test, key, what in ((stat.S_ISLNK, "link", "a symbolic link"), (stat.S_ISFIFO, "pipe", "a named pipe"),
                            (stat.S_ISSOCK, "socket", "a socket"), (stat.S_ISCHR, "device", "a device"),
                            (stat.S_ISBLK, "device", "a device"), (stat.S_ISDIR, "directory", "a directory"),
                            (stat.S_ISREG, "file", "a regular file")):
        if test(mode):
            return key, what
    return "other", "of an unknown type"


def open_dir(path):
    """The probe's directory, as named (links in its path are the
    operator's choice); everything inside is opened relative to it."""
    return os.open(path, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)


def open_subdir(dir_fd, name, path, create=True):
    """The directory dir_fd/name (made when missing and create), never
    through a symbolic link: anything but a real directory is Refused."""
    if create:
        try:
            os.mkdir(name, 0o755, dir_fd=dir_fd)
        except FileExistsError:
            pass
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if not stat.S_ISDIR(st.st_mode):
        raise Refused(path, st.st_mode, "a directory")
    try:
        return os.open(name, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=dir_fd)
    except OSError as e:  # swapped for a link or a file since the check
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            raise Refused(path, stat.S_IFLNK if e.errno == errno.ELOOP else 0, "a directory") from None
        raise


def open_file(dir_fd, name, flags, path, mode=0o644):
    """dir_fd/name opened as the exporter opens its files: only when
    fstatat (not following links) says it is a regular file, so a link,
    pipe, socket, device or directory is never opened (a pipe would block,
    a device could act on open); then with O_NOFOLLOW|O_NONBLOCK, so a file
    swapped in since is neither followed nor waited on, and checked again
    with fstat on the descriptor. With O_CREAT a missing file is created."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        if not flags & os.O_CREAT:
            raise
    else:
        if not stat.S_ISREG(st.st_mode):
            raise Refused(path, st.st_mode)
    try:
        fd = os.open(name, flags | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise Refused(path, stat.S_IFLNK) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(path, st.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_file(dir_fd, name, limit, path):
    """At most limit + 1 bytes of the regular file dir_fd/name (see
    open_file): more than limit means too long."""
    fd = open_file(dir_fd, name, os.O_RDONLY, path)
    try:
        chunks, n = [], 0
        while n <= limit:
            b = os.read(fd, limit + 1 - n)
            if not b:
                break
            chunks.append(b)
            n += len(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view[:_CHUNK])
        view = view[n:]


def _tmp_name(name):
    return ".%s.%d.%s.tmp" % (name, os.getpid(), binascii.hexlify(os.urandom(4)).decode())


def write_at(dir_fd, name, data, also=None):
    """Writes data to dir_fd/name atomically: a new temporary file whose
    name starts with '.' (O_CREAT|O_EXCL|O_NOFOLLOW: never an existing
    file or a link), fsync, an optional hard link also = (directory
    descriptor, name) (the same bytes under a second name, written again if
    the link fails), rename over name (which replaces a link or a pipe
    there, never follows it), fsync of the directory. A failure removes
    the temporary file and raises; name is then unchanged."""
    tmp = _tmp_name(name)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o644, dir_fd=dir_fd)
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        if also is not None:
            also_fd, also_name = also
            try:
                os.link(tmp, also_name, src_dir_fd=dir_fd, dst_dir_fd=also_fd)
                os.fsync(also_fd)
            except OSError:
                write_at(also_fd, also_name, data)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
    os.fsync(dir_fd)


def atomic_write(directory, name, data):
    """write_at in the directory directory; returns directory/name."""
    dir_fd = open_dir(directory)
    try:
        write_at(dir_fd, name, data)
    finally:
        os.close(dir_fd)
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
        (no flock on this file system, a read-only directory, a link or a
        pipe at the lock's name) leave the name unlocked and are returned
        as the second value."""
        os.makedirs(self.directory, exist_ok=True)
        dir_fd = open_dir(self.directory)
        try:
            problem = None
            for stem in (base, "%s-pid%d" % (base, os.getpid())):
                try:
                    self._lock(dir_fd, stem)
                except HeldError:
                    continue
                except OSError as e:
                    problem = e
                self.stem = stem
                self._remove_stale_temps(dir_fd)
                return stem, problem
            self.stem = base  # unreachable in practice: our pid's name is ours
            return base, problem
        finally:
            os.close(dir_fd)

    def _lock(self, dir_fd, stem):
        if fcntl is None:
            return
        name = ".%s.lock" % stem
        fd = open_file(dir_fd, name, os.O_RDWR | os.O_CREAT, os.path.join(self.directory, name))
        for attempt in range(_LOCK_TRIES):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
                if attempt == _LOCK_TRIES - 1:
                    os.close(fd)
                    raise HeldError(stem)
                time.sleep(_LOCK_WAIT_S)
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

    def _oom_dir(self, dir_fd, create):
        return open_subdir(dir_fd, _config.OOM_SUBDIR, os.path.join(self.directory, _config.OOM_SUBDIR), create)

    def _remove_stale_temps(self, dir_fd):
        """Temporary files of this name left by a process that died while
        writing (we hold the name now, so nobody else writes them), in the
        directory and in a real .gpufrag-oom (never through a link): of
        STEM.pickle, STEM.labels.json, and of an OOM copy
        STEM.<UTC time>.pickle (written as a file of its own where a hard
        link fails)."""
        pat = re.compile(r"^\.%s\.(pickle|labels\.json|%s)\.\d+\.[0-9a-f]+\.tmp$"
                         % (re.escape(self.stem), _COPY_STAMP))
        fds = [dir_fd]
        try:
            fds.append(self._oom_dir(dir_fd, create=False))
        except OSError:
            pass
        try:
            for fd in fds:
                try:
                    names = os.listdir(fd)
                except OSError:
                    continue
                for n in names:
                    if pat.match(n):
                        try:
                            os.unlink(n, dir_fd=fd)
                        except OSError:
                            pass
        finally:
            for fd in fds[1:]:
                os.close(fd)

    # --- writing -----------------------------------------------------------

    def pickle_path(self):
        return os.path.join(self.directory, self.stem + ".pickle")

    def write_labels(self, labels):
        """Writes STEM.labels.json unless it already is a regular file
        holding these labels (a link, a pipe or a device there is replaced,
        never opened)."""
        name = self.stem + ".labels.json"
        data = (json.dumps(labels, sort_keys=True) + "\n").encode("utf-8")
        os.makedirs(self.directory, exist_ok=True)
        dir_fd = open_dir(self.directory)
        try:
            try:
                if read_file(dir_fd, name, _SIDECAR_MAX, os.path.join(self.directory, name)) == data:
                    return
            except OSError:
                pass
            write_at(dir_fd, name, data)
        finally:
            os.close(dir_fd)

    def write_snapshot(self, data, oom=False):
        """Replaces STEM.pickle with data; with oom, also keeps it as an OOM
        copy (at most keep of them). Returns (path, copy path or None,
        the copy's problem or None): a .gpufrag-oom that is not a real
        directory (a link) gets no copy, the snapshot is written all the
        same."""
        os.makedirs(self.directory, exist_ok=True)
        dir_fd = open_dir(self.directory)
        sub_fd = also = copy = problem = None
        try:
            if oom and self.keep > 0:
                try:
                    sub_fd = self._oom_dir(dir_fd, create=True)
                    also = (sub_fd, "%s.%s.pickle" % (self.stem, _utc_stamp()))
                    copy = os.path.join(self.directory, _config.OOM_SUBDIR, also[1])
                except OSError as e:
                    problem = e
            write_at(dir_fd, self.stem + ".pickle", data, also=also)
            if sub_fd is not None:
                self._prune_at(sub_fd)
        finally:
            if sub_fd is not None:
                os.close(sub_fd)
            os.close(dir_fd)
        return self.pickle_path(), copy, problem

    def _copy_names(self, sub_fd):
        pat = re.compile(r"^%s\.%s$" % (re.escape(self.stem), _COPY_STAMP))
        return sorted(n for n in os.listdir(sub_fd) if pat.match(n))

    def oom_copies(self):
        """This name's OOM copies, oldest first (none when .gpufrag-oom is
        missing or not a real directory)."""
        try:
            dir_fd = open_dir(self.directory)
        except OSError:
            return []
        try:
            sub_fd = self._oom_dir(dir_fd, create=False)
        except OSError:
            return []
        finally:
            os.close(dir_fd)
        try:
            names = self._copy_names(sub_fd)
        finally:
            os.close(sub_fd)
        sub = os.path.join(self.directory, _config.OOM_SUBDIR)
        return [os.path.join(sub, n) for n in names]

    def _prune_at(self, sub_fd):
        """Deletes the oldest OOM copies past keep."""
        names = self._copy_names(sub_fd)
        for n in names[:max(0, len(names) - self.keep)]:
            try:
                os.unlink(n, dir_fd=sub_fd)
            except OSError:  # gone already, or a directory of that name: not ours
                pass


def _utc_stamp():
    """YYYYMMDDTHHMMSS.ffffffZ: copies of one name sort by time (OOM
    snapshots are at least OOM_MIN_GAP_S apart, so they never collide)."""
    t = time.time()
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(t)) + ".%06dZ" % int((t % 1) * 1e6)
