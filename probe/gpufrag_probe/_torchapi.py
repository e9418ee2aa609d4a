"""The only PyTorch APIs the probe touches, reached through sys.modules so
that the probe never imports torch (nor initialises CUDA) itself."""
import sys


class Unsupported(Exception):
    """This PyTorch lacks an API the probe would use (the probe goes on
    without that feature)."""


def ready():
    """The torch module once the host has imported it completely and
    initialised CUDA, else None. Costs a dictionary lookup and a flag read."""
    mod = sys.modules.get("torch")
    if mod is None:
        return None
    spec = getattr(mod, "__spec__", None)
    if spec is not None and getattr(spec, "_initializing", False):
        return None  # the host's import of torch is still running
    cuda = getattr(mod, "cuda", None)
    if cuda is None or not cuda.is_initialized():
        return None
    return mod


def snapshot(torch):
    """torch.cuda.memory._snapshot(): what _dump_snapshot pickles."""
    return torch.cuda.memory._snapshot()


def record_history(torch, max_entries, stacks=True):
    """Starts recording every allocator event, at most max_entries per
    device (the PyTorch >= 2.1 signature), with the Python stack of each
    event (context="all", stacks="python") or, without stacks, none
    (context=None: the events alone, which replay and OOM counts need)."""
    fn = getattr(getattr(torch.cuda, "memory", None), "_record_memory_history", None)
    if fn is None:
        raise Unsupported("torch.cuda.memory._record_memory_history is missing (PyTorch %s)"
                          % getattr(torch, "__version__", "?"))
    try:
        fn(enabled="all", context="all" if stacks else None, stacks="python", max_entries=max_entries)
    except TypeError as e:
        raise Unsupported("torch.cuda.memory._record_memory_history does not take enabled/context/stacks/"
                          "max_entries (PyTorch %s is older than 2.1): %s" % (getattr(torch, "__version__", "?"), e))


def stop_history(torch):
    torch.cuda.memory._record_memory_history(enabled=None)


def attach_oom_observer(torch, fn):
    attach = getattr(getattr(torch, "_C", None), "_cuda_attach_out_of_memory_observer", None)
    if attach is None:
        raise Unsupported("torch._C._cuda_attach_out_of_memory_observer is missing (PyTorch %s)"
                          % getattr(torch, "__version__", "?"))
    attach(fn)


def devices(snap):
    """The devices holding segments in a snapshot, sorted."""
    out = set()
    segs = snap.get("segments", ()) if isinstance(snap, dict) else snap
    for s in segs or ():
        if isinstance(s, dict) and isinstance(s.get("device"), int):
            out.add(s["device"])
    return sorted(out)
