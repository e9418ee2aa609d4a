"""Shared fixtures: the fake torch (fake_torch/) on sys.path, a fresh fake
CUDA state and no running probe for every test, and wait_for."""
import os
import subprocess
import sys
import time

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.dirname(TESTS)  # probe/: holds the gpufrag_probe package
FAKE_TORCH = os.path.join(TESTS, "fake_torch")
REPO = os.path.dirname(PROBE)
FIXTURES = os.path.join(REPO, "snapshot", "testdata")

for p in (PROBE, FAKE_TORCH):
    if p not in sys.path:
        sys.path.insert(0, p)

import torch  # noqa: E402  (the fake)
import gpufrag_probe  # noqa: E402
from gpufrag_probe import _probe  # noqa: E402

assert torch.__version__.endswith("+fake"), "tests must run against fake_torch, not %s" % torch.__file__

# DEADLINE_S: how long a test waits for something the probe does in its
# thread. Nothing waits this long unless it is broken; generous for a
# loaded 2-core CI machine.
DEADLINE_S = 20.0


def wait_for(cond, what, deadline_s=DEADLINE_S):
    """Polls cond() until it is true; fails naming what after deadline_s."""
    end = time.monotonic() + deadline_s
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            pytest.fail("timed out after %.0f s waiting for %s" % (deadline_s, what))
        time.sleep(0.01)


@pytest.fixture(autouse=True)
def fake(monkeypatch):
    """A fresh process's fake CUDA state; no GPUFRAG_PROBE_* or rank from the
    caller's environment; every probe stopped afterwards."""
    for k in list(os.environ):
        if k.startswith("GPUFRAG_PROBE_") or k in ("RANK", "LOCAL_RANK", "POD_NAME", "CUDA_VISIBLE_DEVICES") \
                or k.startswith("FAKE_TORCH_"):
            monkeypatch.delenv(k)
    state = torch._fake.reset()
    _probe._observer_pid = None  # the new fake allocator has no observer
    yield state
    for p in list(_probe._probes.values()):
        p.stop(timeout_s=5)
    _probe._probes.clear()


def child_env(**extra):
    """Environment for a child Python: the probe and the fake torch
    importable, no bytecode files in the tree."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GPUFRAG_PROBE_") and not k.startswith("FAKE_TORCH_")
           and k not in ("RANK", "LOCAL_RANK", "POD_NAME", "PYTHONPATH")}
    env["PYTHONPATH"] = os.pathsep.join([PROBE, FAKE_TORCH])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_python(code, env, timeout=60, args=()):
    """Runs python -c code; returns the CompletedProcess (text)."""
    return subprocess.run([sys.executable, "-c", code] + list(args), env=env, capture_output=True,
                          text=True, timeout=timeout)


def start(directory, **kw):
    kw.setdefault("interval_s", 0.1)
    return gpufrag_probe.start(str(directory), **kw)


def pickles(directory):
    return sorted(n for n in os.listdir(str(directory)) if n.endswith(".pickle"))
