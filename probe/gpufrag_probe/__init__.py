"""gpufrag-probe: puts a running PyTorch, vLLM or SGLang process's CUDA
caching allocator in front of `gpufrag exporter --snapshots DIR`, and
captures the allocator's state at an out-of-memory error.

    import gpufrag_probe
    probe = gpufrag_probe.start("/var/run/gpufrag")

A daemon thread waits until the host has imported torch and initialised
CUDA (it never does either itself), turns on the allocator's history
(bounded), attaches an OOM observer, and then replaces one file,
DIR/<instance>__<model>__<tag>.pickle, every interval_s seconds with what
torch.cuda.memory._dump_snapshot() writes. See README.md.

No code changes in a server: the vLLM plugin (gpufrag_probe.vllm_plugin,
when GPUFRAG_PROBE_DIR is set) or `python -m gpufrag_probe run --dir DIR
-- COMMAND ...`.
"""
import logging
import os

from . import _config
from ._probe import Probe, next_interval, register as _register

__all__ = ["Probe", "start", "start_from_env", "next_interval", "__version__"]
__version__ = "0.1.0"

log = logging.getLogger("gpufrag_probe")


def start(directory, *, interval_s=_config.DEFAULT_INTERVAL_S, instance=None, model=None, history=True,
          keep=_config.DEFAULT_KEEP, max_entries=_config.DEFAULT_MAX_ENTRIES, stacks=True):
    """Starts a probe writing into directory and returns it (the running one
    when this process already has a probe on directory).

    interval_s: seconds between periodic dumps (at least 100 times the last
    dump's duration). instance, model: the exporter's labels (None:
    GPUFRAG_PROBE_INSTANCE / _MODEL, else discovered: POD_NAME or the host
    name; vLLM's or SGLang's model from the command line; else "unknown").
    history: record the allocator's events (needed for OOM counts and
    replay). stacks: with each event its Python stack (call sites in the
    analysis; costs a stack walk per allocation and free). keep: OOM
    snapshots kept in directory/.gpufrag-oom/. max_entries: history entries
    kept per device.

    Invalid arguments raise ValueError here, in the caller, naming the
    argument and its accepted range (interval_s 0.1 to 86400, keep 0 to
    100, max_entries 1 to 1,000,000; see README.md); nothing the probe does
    later raises into the host."""
    return _register(Probe(directory, interval_s, instance, model, history, keep, max_entries, stacks))


def start_from_env(source="env"):
    """Starts the probe configured by GPUFRAG_PROBE_* when GPUFRAG_PROBE_DIR
    is set (the vLLM plugin and the `run` wrapper's sitecustomize). Never
    raises; returns the Probe or None."""
    try:
        cfg, problems = _config.from_env()
        if not cfg["directory"]:
            return None
        for p in problems:
            log.warning("gpufrag_probe: %s", p)
        d = cfg.pop("directory")
        return start(d, **cfg)
    except Exception as e:
        try:
            log.warning("gpufrag_probe: not started (%s, pid %d): %s: %s", source, os.getpid(), type(e).__name__, e)
        except Exception:
            pass
        return None
