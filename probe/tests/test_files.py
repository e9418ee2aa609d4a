"""File names, the labels sidecar, the name lock, atomic replacement and
the bounds on the files a probe leaves."""
import json
import os
import pickle
import re
import threading

import pytest
import torch

from gpufrag_probe import _config, _files
from conftest import child_env, pickles, run_python, start, wait_for


def test_name_and_sidecar(tmp_path, fake, monkeypatch):
    monkeypatch.setenv("GPUFRAG_PROBE_INSTANCE", "pod/a__b")
    monkeypatch.setenv("GPUFRAG_PROBE_MODEL", "meta-llama/Llama-3.1-8B__x")
    torch.cuda.init()
    p = start(tmp_path)
    wait_for(lambda: p.path, "a file")
    stem = "pod_a_b__meta-llama_Llama-3.1-8B_x__gpu0"
    assert pickles(tmp_path) == [stem + ".pickle"]
    with open(str(tmp_path / (stem + ".labels.json"))) as f:
        labels = json.load(f)
    # The exporter takes these over the name: the real values, '/' included.
    assert labels == {"instance": "pod/a__b", "model": "meta-llama/Llama-3.1-8B__x", "gpu": ""}
    # The name alone gives the exporter the sanitised parts (its
    # <instance>__<model>__<anything> rule splits at the first two '__').
    assert stem.split("__", 2)[:2] == ["pod_a_b", "meta-llama_Llama-3.1-8B_x"]


def test_sidecar_not_rewritten_when_unchanged(tmp_path, fake):
    torch.cuda.init()
    p = start(tmp_path)
    wait_for(lambda: p.path, "a file")
    side = p.path[:-len(".pickle")] + ".labels.json"
    st = os.stat(side)
    p.stop()
    q = start(tmp_path)  # a restart: same name, same labels
    wait_for(lambda: q.path, "a file")
    assert q.path == p.path
    st2 = os.stat(side)
    assert (st2.st_ino, st2.st_mtime_ns) == (st.st_ino, st.st_mtime_ns)


def test_rank_tag_and_physical_gpu(tmp_path, fake, monkeypatch):
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "6,7")
    torch.cuda.init()
    p = start(tmp_path, instance="i", model="m")
    wait_for(lambda: p.path, "a file")
    assert os.path.basename(p.path) == "i__m__rank3.pickle"
    assert p.labels == {"instance": "i", "model": "m", "gpu": "6"}  # device 0 is GPU 6


def test_gpu_tag_from_the_snapshot_not_the_thread(tmp_path, fake):
    # The host's thread works on cuda:1; the probe's thread would see
    # current_device() == 0, so the name comes from the segments.
    segs = [dict(s, device=1) for s in fake.base["segments"]]
    fake.load({"segments": segs, "device_traces": [[], []]})
    torch.cuda.set_device(1)
    p = start(tmp_path, instance="i", model="m")
    wait_for(lambda: p.path, "a file")
    assert os.path.basename(p.path) == "i__m__gpu1.pickle"


def test_multi_device_tag(tmp_path, fake):
    segs = fake.base["segments"] + [dict(s, device=2) for s in fake.base["segments"]]
    fake.load({"segments": segs, "device_traces": [[], [], []]})
    torch.cuda.init()
    p = start(tmp_path, instance="i", model="m")
    wait_for(lambda: p.path, "a file")
    assert os.path.basename(p.path) == "i__m__gpus0.2.pickle"


def test_second_live_process_with_the_same_labels_gets_a_pid_name(tmp_path, fake):
    torch.cuda.init()
    p = start(tmp_path, instance="i", model="m")
    wait_for(lambda: p.path, "a file")
    code = ("import sys, time, torch, gpufrag_probe\n"
            "torch.cuda.init()\n"
            "p = gpufrag_probe.start(sys.argv[1], interval_s=0.1, instance='i', model='m')\n"
            "t = time.monotonic() + 20\n"
            "while p.path is None and time.monotonic() < t: time.sleep(0.01)\n"
            "print(p.path)\n")
    r = run_python(code, child_env(), args=[str(tmp_path)])
    assert r.returncode == 0, r.stderr
    other = r.stdout.strip()
    assert re.fullmatch(re.escape(str(tmp_path)) + r"/i__m__gpu0-pid\d+\.pickle", other), other
    # Once the first process is gone, a new one takes the stable name back.
    p.stop()
    r = run_python(code, child_env(), args=[str(tmp_path)])
    assert r.stdout.strip() == str(tmp_path / "i__m__gpu0.pickle"), r.stderr


def test_a_lock_tested_by_the_exporter_is_not_taken_for_a_live_process(tmp_path):
    # The exporter holds a shared flock on the lock file for an instant at
    # each rescan to see whether the writer lives; a probe starting then
    # waits it out and keeps the stable name instead of writing -pid<PID>.
    import fcntl
    (tmp_path / ".i__m__gpu0.lock").write_bytes(b"")
    fd = os.open(str(tmp_path / ".i__m__gpu0.lock"), os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    timer = threading.Timer(0.015, os.close, [fd])
    timer.start()
    files = _files.Files(str(tmp_path), 5)
    try:
        stem, problem = files.claim("i__m__gpu0")
    finally:
        timer.join()
        files.release()
    assert (stem, problem) == ("i__m__gpu0", None)


def test_stale_temporary_files_are_removed(tmp_path, fake):
    stale = tmp_path / ".i__m__gpu0.pickle.123.deadbeef.tmp"
    other = tmp_path / ".x__m__gpu0.pickle.123.deadbeef.tmp"  # another name's: left alone
    stale.write_bytes(b"half")
    other.write_bytes(b"half")
    torch.cuda.init()
    p = start(tmp_path, instance="i", model="m")
    wait_for(lambda: p.path, "a file")
    assert not stale.exists() and other.exists()


def test_stale_oom_copy_temporary_files_are_removed(tmp_path, fake):
    # An OOM copy is written under its own name (a hard link, or, where
    # links fail, a temporary file of its own renamed into .gpufrag-oom);
    # a process that died mid-copy leaves that temporary file behind.
    oom = tmp_path / _config.OOM_SUBDIR
    oom.mkdir()
    stale = oom / ".i__m__gpu0.20200101T000000.000000Z.pickle.123.deadbeef.tmp"
    other = oom / ".x__m__gpu0.20200101T000000.000000Z.pickle.123.deadbeef.tmp"  # another name's
    copy = oom / "i__m__gpu0.20200101T000000.000000Z.pickle"  # a kept OOM snapshot, not a temporary
    for f in (stale, other, copy):
        f.write_bytes(b"half")
    torch.cuda.init()
    p = start(tmp_path, instance="i", model="m")
    wait_for(lambda: p.path, "a file")
    assert not stale.exists() and other.exists() and copy.exists()


def test_atomic_write_readers_never_see_a_partial_file(tmp_path, fake):
    # A large state so a write takes many os.write calls.
    fake.load({"segments": fake.base["segments"] * 2000, "device_traces": [[]]})
    torch.cuda.init()
    p = start(tmp_path, interval_s=3600)
    wait_for(lambda: p.path, "a file")
    seen, bad, stop = [0], [], threading.Event()

    def reader():
        while not stop.is_set():
            try:
                with open(p.path, "rb") as f:
                    s = pickle.load(f)
                assert len(s["segments"]) == 6000
                seen[0] += 1
            except Exception as e:  # a partial file would fail to unpickle
                bad.append(repr(e))

    t = threading.Thread(target=reader)
    t.start()
    for _ in range(20):
        assert p.dump() == p.path
    stop.set()
    t.join()
    assert bad == [] and seen[0] > 0
    stem = os.path.basename(p.path)[:-len(".pickle")]
    assert sorted(os.listdir(str(tmp_path))) == ["." + stem + ".lock", stem + ".labels.json", stem + ".pickle"]


def test_atomic_write_sequence(tmp_path, monkeypatch):
    """Temporary name starting with '.', fsync of the file, rename, fsync of
    the directory, in that order."""
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.readlink("/proc/self/fd/%d" % fd)))
        real_fsync(fd)

    def replace(a, b, **kw):  # names relative to the directory's descriptor
        events.append(("replace", a, b))
        real_replace(a, b, **kw)

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd to name the fsynced files")
    monkeypatch.setattr(_files.os, "fsync", fsync)
    monkeypatch.setattr(_files.os, "replace", replace)
    d = str(tmp_path)
    _files.atomic_write(d, "x.pickle", b"data")
    monkeypatch.undo()
    (f1, tmp), rep, (f2, dpath) = events
    assert f1 == "fsync" and os.path.basename(tmp).startswith(".x.pickle.") and tmp.endswith(".tmp")
    assert rep == ("replace", os.path.basename(tmp), "x.pickle")
    assert f2 == "fsync" and dpath == os.path.realpath(d)
    assert os.listdir(d) == ["x.pickle"]


def test_failed_write_keeps_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    d = str(tmp_path)
    _files.atomic_write(d, "x.pickle", b"old")

    def half(fd, data):
        os.write(fd, bytes(data[:2]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_files, "_write_all", half)
    with pytest.raises(OSError):
        _files.atomic_write(d, "x.pickle", b"new data")
    assert os.listdir(d) == ["x.pickle"]
    assert (tmp_path / "x.pickle").read_bytes() == b"old"


def test_oom_copies_are_bounded_per_name(tmp_path, fake, monkeypatch):
    monkeypatch.setattr(_config, "OOM_MIN_GAP_S", 0.0)  # no rate limit: every OOM is captured
    monkeypatch.setattr(_config, "BACKOFF_K", 0.0)
    torch.cuda.init()
    p = start(tmp_path, keep=3, interval_s=3600, instance="i", model="m")
    wait_for(lambda: p.path, "a file")
    other = tmp_path / _config.OOM_SUBDIR / "i__m__gpu0-pid1.20250101T000000.000000Z.pickle"
    other.parent.mkdir()
    other.write_bytes(b"another process's")
    for i in range(6):
        with pytest.raises(torch.cuda.OutOfMemoryError):
            torch._fake.oom(1 << 30)
        wait_for(lambda: p.stats().get("dump:oom", 0) == i + 1, "OOM snapshot %d" % (i + 1))
    copies = p._files.oom_copies()
    assert len(copies) == 3
    for c in copies:  # the newest three, each a complete snapshot
        with open(c, "rb") as f:
            assert [e["action"] for e in pickle.load(f)["device_traces"][0]].count("oom") >= 4
    assert other.exists()
    names = sorted(os.listdir(str(tmp_path)))
    assert names == [_config.OOM_SUBDIR, ".i__m__gpu0.lock", "i__m__gpu0.labels.json", "i__m__gpu0.pickle"]


def test_keep_zero_keeps_no_copy(tmp_path, fake):
    torch.cuda.init()
    p = start(tmp_path, keep=0, interval_s=3600)
    wait_for(lambda: p.path, "a file")
    with pytest.raises(torch.cuda.OutOfMemoryError):
        torch._fake.oom(1 << 30)
    wait_for(lambda: p.stats().get("dump:oom"), "the OOM snapshot")
    assert not (tmp_path / _config.OOM_SUBDIR).exists()
