"""A broken torch and a failing disk never raise into the host; each kind
of error is logged once."""
import errno
import os
import shutil

import pytest
import torch

from gpufrag_probe import _files
from conftest import child_env, pickles, run_python, start, wait_for


def probe_warnings(caplog, text):
    return [r for r in caplog.records if r.name == "gpufrag_probe" and text in r.getMessage()]


def test_every_torch_api_raising(tmp_path, fake, caplog):
    torch.cuda.init()
    fake.broken = True  # is_initialized, _snapshot, history, observer: all raise
    p = start(tmp_path)
    wait_for(lambda: p.stats().get("is_initialized:RuntimeError", 0) >= 3, "three failed polls")
    assert p.running
    assert len(probe_warnings(caplog, "is_initialized failed")) == 1
    assert p.dump() is None
    assert pickles(tmp_path) == []


def test_torch_breaking_after_start(tmp_path, fake, caplog):
    torch.cuda.init()
    p = start(tmp_path)
    wait_for(lambda: p.path, "the first dump")
    fake.broken = True
    n = len(fake.calls_named("_snapshot"))
    wait_for(lambda: p.stats().get("snapshot:RuntimeError", 0) >= 3, "three failed snapshots")
    assert len(fake.calls_named("_snapshot")) > n and p.running
    assert len(probe_warnings(caplog, "snapshot failed")) == 1
    with pytest.raises(torch.cuda.OutOfMemoryError):  # the host's own error, unchanged
        torch._fake.oom(1 << 30)
    fake.broken = False
    wait_for(lambda: p.stats()["dump:periodic"] >= 2, "dumps again once torch works")


def test_broken_torch_in_a_fresh_process(tmp_path):
    code = ("import sys, time, torch, gpufrag_probe\n"
            "p = gpufrag_probe.start(sys.argv[1], interval_s=0.1)\n"
            "torch._fake.STATE.initialized = True\n"
            "time.sleep(1.5)\n"
            "assert p.running\n"
            "print('host fine')\n")
    r = run_python(code, child_env(FAKE_TORCH_BROKEN=1), args=[str(tmp_path)])
    assert r.returncode == 0 and "host fine" in r.stdout, r.stderr
    assert r.stderr.count("gpufrag_probe") == 1, r.stderr  # one line (Python's last-resort handler)


def test_disk_full(tmp_path, fake, monkeypatch, caplog):
    torch.cuda.init()
    p = start(tmp_path)
    wait_for(lambda: p.path, "the first dump")
    good = open(p.path, "rb").read()

    def full(fd, data):
        os.write(fd, bytes(data[:10]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_files, "_write_all", full)
    wait_for(lambda: p.stats().get("write:OSError:ENOSPC", 0) >= 3, "three failed writes")
    assert p.dump() is None  # the API too: no exception
    assert len(probe_warnings(caplog, "No space left")) == 1
    assert sorted(os.listdir(str(tmp_path))) == sorted(
        ["." + os.path.basename(p.path)[:-7] + ".lock", os.path.basename(p.path), os.path.basename(p.path)[:-7] + ".labels.json"])
    assert open(p.path, "rb").read() == good  # the last good snapshot stays
    n = p.stats()["write:OSError:ENOSPC"]
    with pytest.raises(torch.cuda.OutOfMemoryError):  # the OOM write fails too, quietly
        torch._fake.oom(1 << 30)
    wait_for(lambda: p.stats()["write:OSError:ENOSPC"] > n, "another failed write")
    assert "dump:oom" not in p.stats()
    assert len(probe_warnings(caplog, "No space left")) == 1
    monkeypatch.undo()
    n = p.stats().get("dump:periodic", 0)
    wait_for(lambda: p.stats().get("dump:periodic", 0) > n, "a dump once there is space")


def test_read_only_directory(tmp_path, fake, monkeypatch, caplog):
    d = tmp_path / "ro"
    d.mkdir()
    real_open = os.open

    def ro_open(path, flags, *a, **kw):  # EROFS for writes under d (root ignores chmod)
        where = os.readlink("/proc/self/fd/%d" % kw["dir_fd"]) if kw.get("dir_fd") is not None else str(path)
        if where.startswith(os.path.realpath(str(d))) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, "Read-only file system", path)
        return real_open(path, flags, *a, **kw)

    monkeypatch.setattr(_files.os, "open", ro_open)
    torch.cuda.init()
    p = start(d)
    wait_for(lambda: p.stats().get("write:OSError:EROFS", 0) >= 3, "three failed writes")
    monkeypatch.undo()
    assert p.running and os.listdir(str(d)) == []
    assert len(probe_warnings(caplog, "Read-only file system")) <= 3  # once per kind: lock, labels, snapshot
    kinds = [k for k in p.stats() if "EROFS" in k]
    assert len(probe_warnings(caplog, "Read-only file system")) == len(kinds)


def test_directory_removed_is_recreated(tmp_path, fake):
    d = tmp_path / "snaps"
    torch.cuda.init()
    p = start(d)
    wait_for(lambda: p.path, "the first dump")
    shutil.rmtree(str(d))
    wait_for(lambda: os.path.exists(p.path), "the file again")


def test_directory_that_cannot_exist(tmp_path, fake, caplog):
    f = tmp_path / "file"
    f.write_text("not a directory")
    torch.cuda.init()
    p = start(f / "snaps")
    wait_for(lambda: p.stats().get("write:NotADirectoryError:ENOTDIR", 0) >= 2, "two failed dumps")
    assert p.running
    assert len(probe_warnings(caplog, "write failed")) == 1
