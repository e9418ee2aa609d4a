"""The vLLM general plugin entry point."""
import os
import re
import subprocess
import sys
import textwrap

import gpufrag_probe
from gpufrag_probe import _probe, vllm_plugin
from conftest import PROBE, child_env, pickles


def test_entry_point_declared():
    with open(os.path.join(PROBE, "pyproject.toml")) as f:
        text = f.read()
    section = re.search(r'^\[project\.entry-points\."vllm\.general_plugins"\]\n(.*?)(?=^\[|\Z)', text, re.S | re.M)
    assert section, "no vllm.general_plugins entry point in pyproject.toml"
    assert re.search(r'^gpufrag_probe = "gpufrag_probe\.vllm_plugin:register"$', section.group(1), re.M)
    assert callable(vllm_plugin.register)


def test_register_without_env_does_nothing():
    vllm_plugin.register()
    assert _probe._probes == {}


def test_register_starts_once_per_process(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUFRAG_PROBE_DIR", str(tmp_path))
    monkeypatch.setenv("GPUFRAG_PROBE_INTERVAL", "7")
    monkeypatch.setenv("GPUFRAG_PROBE_KEEP", "2")
    vllm_plugin.register()
    (p,) = _probe._probes.values()
    assert p.running and p.directory == str(tmp_path) and p.interval_s == 7.0 and p.keep == 2
    vllm_plugin.register()  # vLLM may load plugins more than once per process
    assert list(_probe._probes.values()) == [p]
    assert gpufrag_probe.start_from_env() is p


def test_register_never_raises(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUFRAG_PROBE_DIR", str(tmp_path))
    monkeypatch.setattr(_probe, "register", lambda p: 1 / 0)
    monkeypatch.setattr(gpufrag_probe, "_register", lambda p: 1 / 0)
    assert gpufrag_probe.start_from_env("test") is None
    vllm_plugin.register()


SERVER = textwrap.dedent("""
    import multiprocessing, os, sys, time

    def worker(d):
        # What vLLM does in a worker it starts: load the general plugins,
        # then initialise CUDA.
        from gpufrag_probe import vllm_plugin
        vllm_plugin.register()
        import torch
        torch.cuda.init()
        end = time.monotonic() + 20
        while not (os.path.isdir(d) and [n for n in os.listdir(d) if n.endswith(".pickle")]) and time.monotonic() < end:
            time.sleep(0.01)

    if __name__ == "__main__":
        from gpufrag_probe import vllm_plugin
        vllm_plugin.register()  # the API server: no CUDA, so no file
        ctx = multiprocessing.get_context("spawn")
        w = ctx.Process(target=worker, args=(os.environ["GPUFRAG_PROBE_DIR"],))
        w.start()
        w.join()
        sys.exit(w.exitcode)
""")


def test_plugin_in_a_spawned_worker_names_the_served_model(tmp_path):
    script = tmp_path / "vllm_like_server.py"  # argv[0] names vllm, as the vllm command does
    script.write_text(SERVER)
    d = tmp_path / "snaps"
    env = child_env(GPUFRAG_PROBE_DIR=d, GPUFRAG_PROBE_INTERVAL="0.1", GPUFRAG_PROBE_INSTANCE="pod-1")
    r = subprocess.run([sys.executable, str(script), "serve", "org/Model-7B", "--tensor-parallel-size", "1"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert pickles(d) == ["pod-1__org_Model-7B__gpu0.pickle"]
    with open(str(d / "pod-1__org_Model-7B__gpu0.labels.json")) as f:
        assert '"model": "org/Model-7B"' in f.read()
