"""Label discovery (instance, model, rank, GPU) and file-name parts."""
import os
import re
import socket
import sys

from . import _config

UNKNOWN = "unknown"


def _first_label(values):
    """The first of values that can be a label (see
    _config.label_problem: valid UTF-8, no control characters), or None."""
    for v in values:
        if v and _config.label_problem(v) is None:
            return v
    return None


def instance(explicit=None):
    """explicit, else GPUFRAG_PROBE_INSTANCE, else Kubernetes' POD_NAME
    (set through the downward API), else the host name; a value that
    cannot be a label is passed over."""
    v = _first_label((explicit, os.environ.get(_config.ENV_INSTANCE), os.environ.get("POD_NAME")))
    if v:
        return v
    try:
        return _first_label((socket.gethostname(),)) or UNKNOWN
    except OSError:
        return UNKNOWN


def _option(argv, names):
    """The value of the first of names in argv ("--x V" or "--x=V")."""
    for i, a in enumerate(argv):
        for n in names:
            if a == n and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                return argv[i + 1]
            if a.startswith(n + "="):
                return a[len(n) + 1:] or None
    return None


def _vllm_serve_model(argv):
    """MODEL of `vllm serve MODEL ...`: argv[0] is vLLM's script (the
    `vllm` command, or vllm/entrypoints/cli/main.py under python -m)."""
    if len(argv) >= 3 and argv[1] == "serve" and "vllm" in argv[0] and not argv[2].startswith("-"):
        return argv[2]
    return None


def model_from_argv(argv):
    """The served model of a vLLM or SGLang command line, or None:
    --served-model-name (both; its first value), else vLLM's
    `vllm serve MODEL` or --model, else SGLang's --model-path. Workers
    started by multiprocessing (spawn or fork) see the parent's sys.argv."""
    argv = [a for a in argv if isinstance(a, str)]
    return (_option(argv, ("--served-model-name",)) or _vllm_serve_model(argv)
            or _option(argv, ("--model", "--model-path")))


def model(explicit=None, argv=None):
    """explicit, else GPUFRAG_PROBE_MODEL, else the command line's model,
    else "unknown"; a value that cannot be a label is passed over."""
    return _first_label((explicit, os.environ.get(_config.ENV_MODEL),
                         model_from_argv(sys.argv if argv is None else argv))) or UNKNOWN


def rank():
    """RANK, else LOCAL_RANK (torchrun and most launchers), as a string of
    at most 9 ASCII digits, or None."""
    for name in ("RANK", "LOCAL_RANK"):
        v = os.environ.get(name, "").strip()
        if v.isascii() and v.isdigit() and len(v) <= 9:
            return str(int(v))
    return None


def physical_gpu(device):
    """The GPU behind CUDA device index device: its entry of
    CUDA_VISIBLE_DEVICES when that lists it (an index, a GPU-/MIG- UUID)
    and it can be a label, else the index itself."""
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis:
        items = [v.strip() for v in vis.split(",") if v.strip()]
        if 0 <= device < len(items) and _config.label_problem(items[device]) is None:
            return items[device]
    return str(device)


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_UNDERSCORES = re.compile(r"_{2,}")


def name_part(value, limit=_config.NAME_PART_MAX):
    """value as one part of <instance>__<model>__<tag>: characters outside
    [A-Za-z0-9._-] become '_', runs of '_' become one (so '__', the
    separator, cannot appear), no leading '.' or '_' (a leading '.' would
    hide the file from the exporter), no trailing '_', at most limit
    characters; "unknown" if nothing is left."""
    s = _UNDERSCORES.sub("_", _UNSAFE.sub("_", value or ""))
    s = s.lstrip("._")[:limit].rstrip("_")
    return s or UNKNOWN
