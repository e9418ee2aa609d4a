"""OOM capture: the snapshot taken at the error with its history, written
by the probe's thread; the host's error unchanged."""
import os
import pickle
import threading

import pytest
import torch

from gpufrag_probe import _config
from conftest import FIXTURES, child_env, run_python, start, wait_for


def load(path):
    with open(path, "rb") as f:
        return pickle.load(f)


def actions(snap, device=0):
    return [e["action"] for e in snap["device_traces"][device]]


def test_oom_capture_with_history(tmp_path, fake):
    torch.cuda.init()
    p = start(tmp_path, interval_s=3600, instance="i", model="m")
    wait_for(lambda: p.path, "the first dump")
    assert len(fake.observers) == 1  # attached after CUDA initialisation
    torch._fake.alloc(4096)
    with pytest.raises(torch.cuda.OutOfMemoryError) as err:
        torch._fake.oom(3 << 30, device_free=5 << 20)
    assert "Tried to allocate %d bytes" % (3 << 30) in str(err.value)  # PyTorch's error, as raised
    wait_for(lambda: p.stats().get("dump:oom"), "the OOM snapshot")
    snap = load(str(tmp_path / "i__m__gpu0.pickle"))
    assert actions(snap) == ["alloc", "free_requested", "free_completed", "oom"]
    oom = snap["device_traces"][0][-1]
    assert oom["size"] == 3 << 30 and oom["device_free"] == 5 << 20  # PyTorch's oom entry keys
    (copy,) = p._files.oom_copies()
    assert load(copy) == snap
    # The snapshot was taken on the failing thread (the host's), not later.
    assert fake.snapshot_threads[-1] is threading.current_thread()


def test_oom_snapshot_is_the_state_at_the_error(tmp_path, fake, monkeypatch):
    torch.cuda.init()
    p = start(tmp_path, interval_s=3600)
    wait_for(lambda: p.path, "the first dump")
    gate = threading.Event()
    real = p._files.write_snapshot

    def slow(data, oom=False):
        gate.wait(20)
        return real(data, oom)

    monkeypatch.setattr(p._files, "write_snapshot", slow)
    with pytest.raises(torch.cuda.OutOfMemoryError):
        torch._fake.oom(1 << 30)
    torch._fake.alloc(512)  # the host goes on before the probe writes
    gate.set()
    wait_for(lambda: p.stats().get("dump:oom"), "the OOM snapshot")
    assert actions(load(p.path))[-1] == "oom"


def test_observer_never_raises(tmp_path, fake, monkeypatch, caplog):
    torch.cuda.init()
    p = start(tmp_path, interval_s=3600)
    wait_for(lambda: p.path, "the first dump")

    def broken():
        raise RuntimeError("snapshot broke at the OOM")

    monkeypatch.setattr(torch.cuda.memory, "_snapshot", broken)
    for _ in range(3):
        p._last_oom_at = None  # no rate limit between these
        with pytest.raises(torch.cuda.OutOfMemoryError):  # not RuntimeError: the host's error is PyTorch's
            torch._fake.oom(1 << 30)
    logged = [r for r in caplog.records if "oom_observer" in r.getMessage()]
    assert len(logged) == 1 and "snapshot broke" in logged[0].getMessage()
    assert p.stats()["oom_observer:RuntimeError"] == 3


def test_oom_burst_is_rate_limited_then_caught_up(tmp_path, fake):
    torch.cuda.init()
    p = start(tmp_path, interval_s=3600)
    wait_for(lambda: p.path, "the first dump")
    periodic = p.stats()["dump:periodic"]
    for _ in range(3):
        with pytest.raises(torch.cuda.OutOfMemoryError):
            torch._fake.oom(1 << 30)
    s = p.stats()
    assert len(fake.snapshot_threads) == periodic + 1  # one snapshot at the OOMs, not three
    assert s["oom:skipped"] == 2
    # At the end of the gap a periodic dump carries all three oom entries.
    wait_for(lambda: p.stats()["dump:periodic"] > periodic, "the catch-up dump (about %g s)" % _config.OOM_MIN_GAP_S)
    assert actions(load(p.path)).count("oom") == 3


def test_oom_before_any_segment_names_the_file_from_the_device(tmp_path, fake):
    fake.load({"segments": [], "device_traces": [[], []]})
    torch.cuda.init()
    p = start(tmp_path, interval_s=3600, instance="i", model="m")
    wait_for(lambda: fake.observers, "the observer")
    with pytest.raises(torch.cuda.OutOfMemoryError):
        torch._fake.oom(1 << 40, device=1)
    wait_for(lambda: p.stats().get("dump:oom"), "the OOM snapshot")
    assert os.path.basename(p.path) == "i__m__gpu1.pickle"
    assert actions(load(p.path), device=1) == ["oom"]


def test_no_observer_api_degrades(tmp_path, fake, monkeypatch, caplog):
    monkeypatch.delattr(torch._C, "_cuda_attach_out_of_memory_observer")
    torch.cuda.init()
    p = start(tmp_path, interval_s=0.1)
    wait_for(lambda: p.path, "the first dump")
    with pytest.raises(torch.cuda.OutOfMemoryError):
        torch._fake.oom(1 << 30)
    # No capture at the error, but the next periodic dump has the oom entry.
    wait_for(lambda: "oom" in actions(load(p.path)), "a periodic dump with the oom entry")
    msgs = [r.getMessage() for r in caplog.records if "no OOM capture" in r.getMessage()]
    assert len(msgs) == 1


def test_one_observer_for_several_probes(tmp_path, fake):
    torch.cuda.init()
    a = start(tmp_path / "a", interval_s=3600)
    b = start(tmp_path / "b", interval_s=3600)
    wait_for(lambda: a.path and b.path, "both files")
    assert len(fake.observers) == 1
    with pytest.raises(torch.cuda.OutOfMemoryError):
        torch._fake.oom(1 << 30)
    wait_for(lambda: a.stats().get("dump:oom") and b.stats().get("dump:oom"), "both OOM snapshots")
    b.stop()
    a._last_oom_at = None
    with pytest.raises(torch.cuda.OutOfMemoryError):
        torch._fake.oom(1 << 30)
    wait_for(lambda: a.stats().get("dump:oom") == 2, "a's second OOM snapshot")
    assert b.stats()["dump:oom"] == 1  # stopped: its observer does nothing


EXIT_SCRIPT = r"""
import sys, time, torch, gpufrag_probe
from gpufrag_probe import _files
real = _files.atomic_write
def slow(*a, **kw):  # a write that outlasts the host's exit without the flush
    time.sleep(1.0)
    return real(*a, **kw)
torch.cuda.init()
p = gpufrag_probe.start(sys.argv[1], interval_s=3600, instance="i", model="m")
t = time.monotonic() + 20
while p.path is None and time.monotonic() < t: time.sleep(0.01)
_files.atomic_write = slow
torch._fake.alloc(1024)
torch._fake.oom(2 << 30)  # uncaught: the interpreter exits
"""


def test_uncaught_oom_is_written_before_exit(tmp_path):
    r = run_python(EXIT_SCRIPT, child_env(), args=[str(tmp_path)])
    assert r.returncode == 1 and "OutOfMemoryError" in r.stderr, r.stderr
    snap = load(str(tmp_path / "i__m__gpu0.pickle"))
    assert actions(snap)[-1] == "oom"
    assert len(os.listdir(str(tmp_path / _config.OOM_SUBDIR))) == 1


def test_fixture_trace_through_the_fake(tmp_path, fake):
    """The fake serves a fixture's recorded trace as if it happened while
    history was on (how an end-to-end test makes a replayable capture)."""
    torch.cuda.init()
    p = start(tmp_path, interval_s=3600)
    wait_for(lambda: p.path, "the first dump")
    torch._fake.load(os.path.join(FIXTURES, "replay.pickle"), trace=True)
    with pytest.raises(torch.cuda.OutOfMemoryError):
        torch._fake.oom(64 << 20, device_free=0)
    wait_for(lambda: p.stats().get("dump:oom"), "the OOM snapshot")
    with open(os.path.join(FIXTURES, "replay.pickle"), "rb") as f:
        want = pickle.load(f)["device_traces"][0]
    got = load(p.path)["device_traces"][0]
    assert got[:-1] == want and got[-1]["action"] == "oom"
