"""torch._C: only the out-of-memory observer hook."""
from . import _fake


def _cuda_attach_out_of_memory_observer(fn):
    _fake.STATE.call("_cuda_attach_out_of_memory_observer", fn)
    if not callable(fn):
        raise TypeError("observer must be callable")
    # PyTorch's native allocator attaches the observer to each device
    # allocator it has; before CUDA initialisation there are none.
    if _fake.STATE.initialized:
        _fake.STATE.observers.append(fn)


def _remove_if_configured():
    if _fake.env_flag("FAKE_TORCH_NO_OBSERVER"):
        del globals()["_cuda_attach_out_of_memory_observer"]


_remove_if_configured()
