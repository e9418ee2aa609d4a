"""torch.cuda: device queries, lazy initialisation, OutOfMemoryError."""
import threading

from .. import _fake
from . import memory  # noqa: F401  (torch.cuda.memory)


class OutOfMemoryError(RuntimeError):
    """torch.cuda.OutOfMemoryError."""


_tls = threading.local()


def is_available():
    _fake.STATE.call("is_available")
    return _fake.STATE.devices > 0


def is_initialized():
    _fake.STATE.call("is_initialized")
    return _fake.STATE.initialized


def device_count():
    _fake.STATE.call("device_count")
    return _fake.STATE.devices


def init():
    _fake.STATE.call("init")
    _fake.STATE.initialized = True


_lazy_init = init


def current_device():
    """The calling thread's device, as cudaGetDevice: 0 unless set_device
    was called on this thread."""
    _fake.STATE.call("current_device")
    init()
    return getattr(_tls, "device", 0)


def set_device(device):
    _fake.STATE.call("set_device", device)
    init()
    _tls.device = int(device)
