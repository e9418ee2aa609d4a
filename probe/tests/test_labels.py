"""Label discovery: environment overrides, Kubernetes, vLLM and SGLang
command lines, rank, GPU; file-name parts."""
import socket

import pytest

from gpufrag_probe import _config, _labels


def test_instance(monkeypatch):
    assert _labels.instance() == socket.gethostname()
    monkeypatch.setenv("POD_NAME", "vllm-7d9f-abcde")
    assert _labels.instance() == "vllm-7d9f-abcde"
    monkeypatch.setenv("GPUFRAG_PROBE_INSTANCE", "override")
    assert _labels.instance() == "override"
    assert _labels.instance("explicit") == "explicit"


@pytest.mark.parametrize("argv,want", [
    (["/usr/local/bin/vllm", "serve", "meta-llama/Llama-3.1-8B", "--tensor-parallel-size", "2"],
     "meta-llama/Llama-3.1-8B"),
    (["/opt/venv/lib/python3.11/site-packages/vllm/entrypoints/cli/main.py", "serve", "Qwen/Qwen2-7B"],
     "Qwen/Qwen2-7B"),
    (["vllm", "serve", "meta-llama/Llama-3.1-8B", "--served-model-name", "llama8b", "other"], "llama8b"),
    (["vllm", "serve", "m", "--served-model-name=llama"], "llama"),
    (["/x/vllm/entrypoints/openai/api_server.py", "--model", "mistralai/Mistral-7B", "--port", "8000"],
     "mistralai/Mistral-7B"),
    (["api_server.py", "--model=mistralai/Mistral-7B"], "mistralai/Mistral-7B"),
    (["/x/sglang/launch_server.py", "--model-path", "deepseek-ai/DeepSeek-V3", "--tp", "8"],
     "deepseek-ai/DeepSeek-V3"),
    (["/x/sglang/launch_server.py", "--model-path", "/models/ds", "--served-model-name", "ds"], "ds"),
    (["vllm", "serve", "--port", "8000"], None),  # no model given: not the port's value
    (["train.py", "--lr", "1e-4"], None),
    (["serve", "x"], None),  # not vLLM's serve
])
def test_model_from_argv(argv, want):
    assert _labels.model_from_argv(argv) == want


def test_model(monkeypatch):
    assert _labels.model(argv=["train.py"]) == "unknown"
    assert _labels.model(argv=["vllm", "serve", "a/b"]) == "a/b"
    monkeypatch.setenv("GPUFRAG_PROBE_MODEL", "override")
    assert _labels.model(argv=["vllm", "serve", "a/b"]) == "override"
    assert _labels.model("explicit", argv=["vllm", "serve", "a/b"]) == "explicit"


def test_rank(monkeypatch):
    assert _labels.rank() is None
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert _labels.rank() == "1"
    monkeypatch.setenv("RANK", "05")
    assert _labels.rank() == "5"
    monkeypatch.setenv("RANK", "x")  # not a rank: LOCAL_RANK
    assert _labels.rank() == "1"


def test_physical_gpu(monkeypatch):
    assert _labels.physical_gpu(1) == "1"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4, 5")
    assert _labels.physical_gpu(0) == "4" and _labels.physical_gpu(1) == "5"
    assert _labels.physical_gpu(2) == "2"  # not listed: the index
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-8a2f,MIG-1c3e")
    assert _labels.physical_gpu(1) == "MIG-1c3e"


@pytest.mark.parametrize("value,want", [
    ("meta-llama/Llama-3.1-8B", "meta-llama_Llama-3.1-8B"),
    ("a__b___c", "a_b_c"),  # the separator cannot appear inside a part
    ("_a_", "a"),
    (".hidden", "hidden"),  # a leading '.' would hide the file from the exporter
    ("../../etc", "etc"),
    ("模型", "unknown"),
    ("", "unknown"),
    (None, "unknown"),
    ("x" * 100, "x" * _config.NAME_PART_MAX),
    ("a" * 63 + "/b", "a" * 63),  # cut, then no trailing '_'
])
def test_name_part(value, want):
    got = _labels.name_part(value)
    assert got == want
    assert "__" not in got and not got.startswith((".", "_")) and not got.endswith("_")


def test_env_config(monkeypatch):
    cfg, problems = _config.from_env()
    assert problems == [] and cfg["directory"] == "" and cfg["history"] is True
    assert (cfg["interval_s"], cfg["keep"], cfg["max_entries"]) == (
        _config.DEFAULT_INTERVAL_S, _config.DEFAULT_KEEP, _config.DEFAULT_MAX_ENTRIES)
    for k, v in (("DIR", "/d"), ("INTERVAL", "2.5"), ("KEEP", "0"), ("MAX_ENTRIES", "100"), ("HISTORY", "off"),
                 ("STACKS", "0"), ("INSTANCE", "i"), ("MODEL", "m")):
        monkeypatch.setenv("GPUFRAG_PROBE_" + k, v)
    cfg, problems = _config.from_env()
    assert problems == []
    assert cfg == {"directory": "/d", "interval_s": 2.5, "keep": 0, "max_entries": 100, "history": False,
                   "stacks": False, "instance": "i", "model": "m"}


def test_env_config_bad_values_fall_back(monkeypatch):
    for k, v in (("INTERVAL", "0"), ("KEEP", "-1"), ("MAX_ENTRIES", "many"), ("HISTORY", "maybe"), ("STACKS", "?")):
        monkeypatch.setenv("GPUFRAG_PROBE_" + k, v)
    cfg, problems = _config.from_env()
    assert len(problems) == 5 and cfg["stacks"] is True
    assert (cfg["interval_s"], cfg["keep"], cfg["max_entries"], cfg["history"]) == (
        _config.DEFAULT_INTERVAL_S, _config.DEFAULT_KEEP, _config.DEFAULT_MAX_ENTRIES, True)
    monkeypatch.setenv("GPUFRAG_PROBE_INTERVAL", "nan")
    assert _config.from_env()[0]["interval_s"] == _config.DEFAULT_INTERVAL_S
