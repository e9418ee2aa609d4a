"""Settings and files the probe does not trust (issue 28, item 6): every
setting is checked where it enters, the thread survives its own errors,
and files in the directory are opened as the exporter opens them (regular
files only, never through a link, never blocking on a pipe)."""
import json
import logging
import math
import os
import pickle
import stat
import subprocess
import sys

import pytest
import torch

import gpufrag_probe
from gpufrag_probe import _config, _files, _probe
from conftest import child_env, start, wait_for

# SHORT_S: how long a test waits for what the fixed probe does at once; a
# probe blocked on a pipe or dead fails the test after this long instead of
# hanging the suite.
SHORT_S = 5.0


def probe_warnings(caplog, text):
    return [r.getMessage() for r in caplog.records if r.name == "gpufrag_probe" and text in r.getMessage()]


def oom_and_wait(p, n=1):
    """An OOM in the host; waits until the probe has written its n-th OOM
    snapshot."""
    with pytest.raises(torch.cuda.OutOfMemoryError):
        torch._fake.oom(1 << 30)
    wait_for(lambda: p.stats().get("dump:oom", 0) >= n, "OOM snapshot %d" % n, SHORT_S)


# --- settings ----------------------------------------------------------------

@pytest.mark.parametrize("kw,words", [
    ({"interval_s": math.inf}, "interval_s must be a number of seconds from 0.1 to 86400, not inf"),
    ({"interval_s": 1e10}, "interval_s must be a number of seconds from 0.1 to 86400"),
    ({"interval_s": math.nan}, "interval_s must be"),
    ({"interval_s": 0.05}, "interval_s must be"),
    ({"interval_s": True}, "interval_s must be"),
    ({"interval_s": None}, "interval_s must be"),
    ({"keep": 101}, "keep must be a whole number from 0 to 100, not 101"),
    ({"keep": 2.5}, "keep must be"),
    ({"keep": -1}, "keep must be"),
    ({"max_entries": 10 ** 6 + 1}, "max_entries must be a whole number from 1 to 1000000"),
    ({"max_entries": 0}, "max_entries must be"),
    ({"instance": "pod\n1"}, "instance has a control character (U+000A) at character 3"),
    ({"model": "m\x00"}, "model has a control character (U+0000)"),
    ({"model": "caf\udce9"}, "model is not valid UTF-8"),
    ({"instance": ""}, "instance is empty"),
    ({"instance": "x" * 1025}, "instance is longer than 1024 characters"),
])
def test_start_refuses_a_setting_out_of_range(tmp_path, kw, words):
    with pytest.raises(ValueError) as e:
        gpufrag_probe.start(str(tmp_path), **kw)
    assert words in str(e.value)
    assert _probe._probes == {}


@pytest.mark.parametrize("directory,words", [
    ("", "directory is empty"),
    ("a\0b", "directory contains a NUL byte"),
    ("/x" * 2049, "directory is longer than 4096 bytes"),
    (3, "directory must be a path"),
])
def test_start_refuses_a_bad_directory(directory, words):
    with pytest.raises(ValueError) as e:
        gpufrag_probe.start(directory)
    assert words in str(e.value)


def test_accepted_bounds(tmp_path):
    for kw in ({"interval_s": 0.1}, {"interval_s": 86400}, {"keep": 0}, {"keep": 100},
               {"max_entries": 1}, {"max_entries": 10 ** 6}):
        p = gpufrag_probe.start(str(tmp_path / str(len(_probe._probes))), **kw)
        key, val = next(iter(kw.items()))
        assert getattr(p, key) == val and type(getattr(p, key)) is type(_config.check_number(key, val))


@pytest.mark.parametrize("var,raw", [
    ("INTERVAL", "inf"), ("INTERVAL", "1e10"), ("INTERVAL", "-inf"), ("INTERVAL", "0.01"),
    ("KEEP", "1000000"), ("MAX_ENTRIES", "99999999999"),
])
def test_env_out_of_range_names_the_variable_and_range(monkeypatch, var, raw):
    monkeypatch.setenv("GPUFRAG_PROBE_" + var, raw)
    cfg, problems = _config.from_env()
    key = {"INTERVAL": "interval_s", "KEEP": "keep", "MAX_ENTRIES": "max_entries"}[var]
    assert cfg[key] == {"interval_s": _config.DEFAULT_INTERVAL_S, "keep": _config.DEFAULT_KEEP,
                        "max_entries": _config.DEFAULT_MAX_ENTRIES}[key]
    (msg,) = problems
    assert msg.startswith("GPUFRAG_PROBE_%s must be %s, not %r; using the default" % (var, _config.accepted(key), raw))


def test_env_label_with_a_control_character_is_ignored(monkeypatch):
    monkeypatch.setenv("GPUFRAG_PROBE_INSTANCE", "pod\x1b]0;pwned\x07")
    monkeypatch.setenv("GPUFRAG_PROBE_MODEL", "m")
    cfg, problems = _config.from_env()
    assert cfg["instance"] is None and cfg["model"] == "m"
    (msg,) = problems
    assert msg.startswith("GPUFRAG_PROBE_INSTANCE has a control character (U+001B)") and msg.endswith("ignored")
    # Discovery passes over it too: POD_NAME, else the host name.
    monkeypatch.setenv("POD_NAME", "pod-1")
    from gpufrag_probe import _labels
    assert _labels.instance() == "pod-1"


def test_env_interval_inf_still_captures_ooms(tmp_path, fake, monkeypatch, caplog):
    # The reported case: the interval was accepted, the thread's wait
    # overflowed, the thread ended and no OOM snapshot was ever written.
    monkeypatch.setenv("GPUFRAG_PROBE_DIR", str(tmp_path))
    monkeypatch.setenv("GPUFRAG_PROBE_INTERVAL", "inf")
    torch.cuda.init()
    p = gpufrag_probe.start_from_env("test")
    assert p is not None and p.interval_s == _config.DEFAULT_INTERVAL_S
    assert len(probe_warnings(caplog, "GPUFRAG_PROBE_INTERVAL must be a number of seconds from 0.1 to 86400")) == 1
    wait_for(lambda: p.path, "the first dump", SHORT_S)
    oom_and_wait(p)
    assert p.running and len(p._files.oom_copies()) == 1


def test_run_refuses_an_option_out_of_range(tmp_path):
    for args, words in ((["--interval", "inf"], "argument --interval: must be a number of seconds from 0.1 to 86400"),
                        (["--interval", "1e10"], "argument --interval: must be"),
                        (["--keep", "101"], "argument --keep: must be a whole number from 0 to 100"),
                        (["--max-entries", "0"], "argument --max-entries: must be"),
                        (["--model", "a\tb"], "argument --model: has a control character (U+0009)")):
        r = subprocess.run([sys.executable, "-m", "gpufrag_probe", "run", "--dir", str(tmp_path)] + args
                           + ["--", sys.executable, "-c", "print('ran')"],
                           env=child_env(), capture_output=True, text=True, timeout=30)
        assert (r.returncode, r.stdout) == (2, ""), (args, r.stdout, r.stderr)
        assert words in r.stderr, (args, r.stderr)


# --- the thread --------------------------------------------------------------

def test_thread_survives_an_error_in_its_loop(tmp_path, fake, monkeypatch, caplog):
    def broken(interval_s, last_dump_s):
        raise RuntimeError("broken scheduling")

    monkeypatch.setattr(_probe, "next_interval", broken)
    monkeypatch.setattr(_config, "THREAD_RETRY_S", 0.1, raising=False)
    torch.cuda.init()
    p = start(tmp_path, interval_s=3600)
    wait_for(lambda: p.stats().get("thread:RuntimeError", 0) >= 3, "three failed rounds", SHORT_S)
    assert p.running
    assert len(probe_warnings(caplog, "broken scheduling")) == 1  # logged once
    n = p.stats()["dump:periodic"]
    assert n >= 3  # the periodic dumps go on, THREAD_RETRY_S apart
    oom_and_wait(p)  # and so does the OOM capture
    p.stop(timeout_s=SHORT_S)
    assert not p._thread.is_alive()


def test_a_wait_past_timeout_max_does_not_end_the_thread(tmp_path, fake):
    # start() refuses such an interval; the thread must survive one anyway
    # (a backoff after a very slow dump could ask for a long wait too).
    torch.cuda.init()
    p = _probe.Probe(str(tmp_path), 60, "i", "m", True, 5, 100)
    p.interval_s = 1e10  # past threading.TIMEOUT_MAX (about 292 years)
    _probe.register(p)
    wait_for(lambda: p.stats().get("next_interval_s") == 1e10, "the long wait", SHORT_S)
    oom_and_wait(p)
    assert p.running and not [k for k in p.stats() if k.startswith("thread:")]


# --- files in the directory ----------------------------------------------------

def unblock(fifo):
    """Opens the writing end of fifo, so a reader blocked in open() (the
    bug) returns and the process can end."""
    try:
        if stat.S_ISFIFO(os.lstat(fifo).st_mode):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


def test_pipe_at_the_sidecar_is_replaced_not_opened(tmp_path, fake):
    fifo = str(tmp_path / "i__m__gpu0.labels.json")
    os.mkfifo(fifo)
    torch.cuda.init()
    try:
        p = start(tmp_path, instance="i", model="m")
        wait_for(lambda: p.path, "the first dump (the probe must not wait on the pipe)", SHORT_S)
        p.stop(timeout_s=SHORT_S)
        assert not p._thread.is_alive()
    finally:
        unblock(fifo)
    assert stat.S_ISREG(os.lstat(fifo).st_mode)
    with open(fifo) as f:
        assert json.load(f) == {"instance": "i", "model": "m", "gpu": ""}


def test_read_file_never_blocks_and_never_follows(tmp_path):
    d = str(tmp_path)
    os.mkfifo(os.path.join(d, "pipe"))
    (tmp_path / "target").write_text("secret")
    os.symlink(str(tmp_path / "target"), os.path.join(d, "link"))
    (tmp_path / "dir").mkdir()
    (tmp_path / "big").write_bytes(b"x" * 100)
    fd = os.open(d, os.O_RDONLY)
    try:
        for name, key in (("pipe", "pipe"), ("link", "link"), ("dir", "directory")):
            with pytest.raises(_files.Refused) as e:
                _files.read_file(fd, name, 10, os.path.join(d, name))
            assert e.value.key == key and str(e.value).startswith(os.path.join(d, name) + " is a")
        assert _files.read_file(fd, "big", 10, "big") == b"x" * 11  # bounded: limit + 1
    finally:
        os.close(fd)
        unblock(os.path.join(d, "pipe"))


def test_linked_sidecar_is_replaced_not_followed(tmp_path, fake):
    # A link to a file holding exactly the labels: read through the link it
    # looked right and stayed a link, which the exporter refuses.
    outside = tmp_path / "outside.json"
    outside.write_bytes((json.dumps({"gpu": "", "instance": "i", "model": "m"}, sort_keys=True) + "\n").encode())
    d = tmp_path / "snaps"
    d.mkdir()
    side = d / "i__m__gpu0.labels.json"
    os.symlink(str(outside), str(side))
    torch.cuda.init()
    p = start(d, instance="i", model="m")
    wait_for(lambda: p.path, "the first dump", SHORT_S)
    assert stat.S_ISREG(os.lstat(str(side)).st_mode)
    assert side.read_bytes() == outside.read_bytes()


def test_pipe_at_the_lock_is_not_opened(tmp_path, fake):
    d = tmp_path / "snaps"
    d.mkdir()
    os.mkfifo(str(d / ".i__m__gpu0.lock"))
    torch.cuda.init()
    p = start(d, instance="i", model="m")
    wait_for(lambda: p.path, "the first dump", SHORT_S)
    assert p.stats().get("lock:Refused:pipe") == 1  # the name is used unlocked, as when flock fails
    assert stat.S_ISFIFO(os.lstat(str(d / ".i__m__gpu0.lock")).st_mode)  # not ours to delete


@pytest.mark.parametrize("kind", ["link", "file"])
def test_oom_dir_that_is_not_a_directory(tmp_path, fake, caplog, kind):
    outside = tmp_path / "outside"
    outside.mkdir()
    # What a probe that followed the link would have acted on: a stale
    # temporary of its name (deleted at start) and old copies (pruned).
    planted = [".i__m__gpu0.pickle.1.deadbeef.tmp", "i__m__gpu0.20200101T000000.000000Z.pickle",
               "i__m__gpu0.20200102T000000.000000Z.pickle"]
    for n in planted:
        (outside / n).write_bytes(b"not the probe's")
    d = tmp_path / "snaps"
    d.mkdir()
    sub = d / _config.OOM_SUBDIR
    if kind == "link":
        os.symlink(str(outside), str(sub))
    else:
        sub.write_bytes(b"a file")
    torch.cuda.init()
    p = start(d, instance="i", model="m", keep=1, interval_s=3600)
    wait_for(lambda: p.path, "the first dump", SHORT_S)
    oom_and_wait(p)  # the snapshot is written all the same, without its copy
    assert sorted(os.listdir(str(outside))) == sorted(planted)
    assert p.stats()["oom_copy:Refused:" + kind] == 1 and p._files.oom_copies() == []
    what = "a symbolic link" if kind == "link" else "a regular file"
    assert len(probe_warnings(caplog, "%s is %s, not a directory" % (sub, what))) == 1
    with open(p.path, "rb") as f:
        assert "oom" in [e["action"] for e in pickle.load(f)["device_traces"][0]]
    assert os.path.islink(str(sub)) == (kind == "link")  # left as it was


def test_no_write_follows_a_link_in_the_directory(tmp_path, fake, monkeypatch):
    # Every name the probe creates in DIR or DIR/.gpufrag-oom is created
    # with O_EXCL or O_NOFOLLOW relative to a directory descriptor, or
    # renamed into place (which replaces a link, never follows it).
    monkeypatch.setattr(_config, "OOM_MIN_GAP_S", 0.0)
    monkeypatch.setattr(_config, "BACKOFF_K", 0.0)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "t").write_bytes(b"keep")
    d = tmp_path / "snaps"
    (d / _config.OOM_SUBDIR).mkdir(parents=True)
    os.symlink(str(outside / "t"), str(d / "i__m__gpu0.pickle"))
    opened = []
    real_open = os.open

    def spy(path, flags, *a, **kw):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            opened.append((path, flags, kw.get("dir_fd")))
        return real_open(path, flags, *a, **kw)

    monkeypatch.setattr(_files.os, "open", spy)
    torch.cuda.init()
    p = start(d, instance="i", model="m", interval_s=3600)
    wait_for(lambda: p.path, "the first dump", SHORT_S)
    oom_and_wait(p)
    monkeypatch.undo()
    assert (outside / "t").read_bytes() == b"keep" and not os.path.islink(p.path)
    assert opened
    for path, flags, dir_fd in opened:
        assert dir_fd is not None and os.sep not in path, path
        assert flags & os.O_EXCL or flags & os.O_NOFOLLOW, path
