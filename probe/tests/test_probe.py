"""Periodic dumps, waiting for CUDA, history, dump(), stop()."""
import os
import pickle
import threading

import pytest
import torch

import gpufrag_probe
from gpufrag_probe import _config, _probe
from conftest import FIXTURES, pickles, start, wait_for


def load(path):
    with open(path, "rb") as f:
        return pickle.load(f)


def test_waits_for_cuda_then_dumps_periodically(tmp_path, fake):
    p = start(tmp_path)
    # Before CUDA is initialised: no file, no history, no observer, and the
    # probe itself never initialised CUDA.
    wait_for(lambda: fake.calls_named("is_initialized"), "the probe to poll is_initialized")
    assert pickles(tmp_path) == []
    assert not fake.initialized
    assert fake.calls_named("_record_memory_history") == []
    assert fake.calls_named("_cuda_attach_out_of_memory_observer") == []
    for forbidden in ("init", "set_device", "current_device", "device_count", "is_available"):
        assert fake.calls_named(forbidden) == [], forbidden
    torch.cuda.init()
    wait_for(lambda: p.stats().get("dump:periodic", 0) >= 3, "three periodic dumps")
    assert pickles(tmp_path) == ["%s__unknown__gpu0.pickle" % p.labels["instance"]]
    snap = load(p.path)
    with open(os.path.join(FIXTURES, "replay.pickle"), "rb") as f:
        want = pickle.load(f)
    assert snap["segments"] == want["segments"]  # what _snapshot() returned
    assert snap["allocator_settings"] == want["allocator_settings"]


def test_history_arguments_and_ring(tmp_path, fake):
    torch.cuda.init()
    p = start(tmp_path, max_entries=7)
    wait_for(lambda: p.stats().get("dump:periodic"), "a dump")
    (call,) = fake.calls_named("_record_memory_history")
    assert call[2] == {"enabled": "all", "context": "all", "stacks": "python", "max_entries": 7, "device": None}
    for i in range(5):
        torch._fake.alloc(512 * (i + 1))
    n = p.stats()["dump:periodic"]
    wait_for(lambda: p.stats()["dump:periodic"] > n, "a dump after the allocations")
    trace = load(p.path)["device_traces"][0]
    assert len(trace) == 7  # 15 entries recorded, the ring keeps max_entries
    assert [e["action"] for e in trace[-3:]] == ["alloc", "free_requested", "free_completed"]
    assert trace[-1]["size"] == 512 * 5 and trace[-1]["frames"]
    p.stop()
    assert fake.calls_named("_record_memory_history")[-1][2]["enabled"] is None
    assert fake.history is None


def test_history_without_stacks(tmp_path, fake):
    torch.cuda.init()
    p = start(tmp_path, stacks=False)
    wait_for(lambda: p.stats().get("dump:periodic"), "a dump")
    (call,) = fake.calls_named("_record_memory_history")
    assert call[2]["enabled"] == "all" and call[2]["context"] is None
    torch._fake.alloc(100)
    assert p.dump() == p.path
    assert [(e["action"], e["frames"]) for e in load(p.path)["device_traces"][0]] == [
        ("alloc", []), ("free_requested", []), ("free_completed", [])]


def test_history_off(tmp_path, fake):
    torch.cuda.init()
    p = start(tmp_path, history=False)
    wait_for(lambda: p.stats().get("dump:periodic"), "a dump")
    assert fake.calls_named("_record_memory_history") == []
    torch._fake.alloc(100)
    assert p.dump() == p.path
    assert load(p.path)["device_traces"] == [[]]
    p.stop()
    assert fake.calls_named("_record_memory_history") == []  # not turned off: never turned on


def test_history_api_without_keywords_degrades(tmp_path, fake, monkeypatch, caplog):
    monkeypatch.setattr(torch.cuda.memory, "_record_memory_history", torch.cuda.memory._record_memory_history_legacy)
    torch.cuda.init()
    p = start(tmp_path)
    wait_for(lambda: p.stats().get("dump:periodic"), "a dump")
    assert fake.history is None and not p.stats()["history"]
    msgs = [r.getMessage() for r in caplog.records if "no allocation history" in r.getMessage()]
    assert len(msgs) == 1 and "older than 2.1" in msgs[0], msgs


def test_history_api_missing_degrades(tmp_path, fake, monkeypatch, caplog):
    monkeypatch.delattr(torch.cuda.memory, "_record_memory_history")
    torch.cuda.init()
    p = start(tmp_path)
    wait_for(lambda: p.stats().get("dump:periodic", 0) >= 2, "two dumps")
    msgs = [r.getMessage() for r in caplog.records if "no allocation history" in r.getMessage()]
    assert len(msgs) == 1 and "missing" in msgs[0], msgs


def test_nothing_allocated_means_no_file(tmp_path, fake):
    fake.load({"segments": [], "device_traces": [[]]})
    torch.cuda.init()
    p = start(tmp_path, interval_s=3600)  # retried every UNNAMED_RETRY_S until there is memory
    wait_for(lambda: len(fake.calls_named("_snapshot")) >= 2, "two snapshots")
    assert p.stats()["next_interval_s"] == _config.UNNAMED_RETRY_S
    assert pickles(tmp_path) == [] and p.path is None and p.dump() is None
    fake.load(os.path.join(FIXTURES, "replay.pickle"))
    wait_for(lambda: p.path, "a file once memory is allocated")


def test_dump_before_cuda_returns_none(tmp_path, fake):
    p = start(tmp_path)
    assert p.dump() is None
    assert pickles(tmp_path) == []
    assert not fake.initialized


def test_manual_dump_from_another_thread(tmp_path, fake):
    torch.cuda.init()
    p = start(tmp_path, interval_s=3600)
    wait_for(lambda: p.stats().get("dump:periodic"), "the first dump")
    out = []
    t = threading.Thread(target=lambda: out.append(p.dump("checkpoint")))
    t.start()
    t.join()
    assert out == [p.path] and p.stats()["dump:checkpoint"] == 1


def test_start_is_idempotent_per_directory(tmp_path, fake):
    a = start(tmp_path)
    b = start(tmp_path)
    assert a is b
    c = start(tmp_path / "other")
    assert c is not a
    a.stop()
    assert not a.running
    d = start(tmp_path)
    assert d is not a and d.running


def test_start_rejects_bad_arguments(tmp_path):
    for kw in ({"interval_s": 0}, {"interval_s": -1}, {"keep": -1}, {"max_entries": 0}):
        with pytest.raises(ValueError):
            gpufrag_probe.start(str(tmp_path), **kw)
    with pytest.raises(ValueError):
        gpufrag_probe.start("")


def test_stop_ends_the_thread(tmp_path, fake):
    p = start(tmp_path)
    p.stop()
    assert not p._thread.is_alive()
    torch.cuda.init()
    assert p.dump() is not None  # dump still works on request; no thread
    assert not p._thread.is_alive()


def test_never_imports_torch(tmp_path):
    from conftest import child_env, run_python
    code = ("import sys, time, gpufrag_probe\n"
            "p = gpufrag_probe.start(sys.argv[1], interval_s=0.1)\n"
            "time.sleep(3 * %r)\n"
            "assert p.running\n"
            "assert 'torch' not in sys.modules, 'the probe imported torch'\n" % _config.POLL_S)
    r = run_python(code, child_env(), args=[str(tmp_path)])
    assert r.returncode == 0, r.stderr
    assert os.listdir(str(tmp_path)) == []


def test_next_interval():
    assert _probe.next_interval(30.0, 0.01) == 30.0
    assert _probe.next_interval(30.0, 0.3) == 30.0
    assert _probe.next_interval(30.0, 1.0) == _config.BACKOFF_K * 1.0
    assert _config.BACKOFF_K == 100.0  # the 1% overhead bound the README states


def test_slow_dump_pushes_the_next_back(tmp_path, fake):
    fake.snapshot_delay_s = 0.05
    torch.cuda.init()
    p = start(tmp_path, interval_s=_config.MIN_INTERVAL_S)
    wait_for(lambda: p.stats()["next_interval_s"] > 1, "the wait after the first dump")
    s = p.stats()  # stable: the next dump is seconds away
    assert s["last_dump_s"] >= 0.05
    assert s["next_interval_s"] == _config.BACKOFF_K * s["last_dump_s"] >= 5.0
