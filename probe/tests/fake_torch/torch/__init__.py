"""A fake of the few PyTorch APIs gpufrag_probe uses (see ../README.md)."""
__version__ = "2.5.0+fake"

from . import _fake  # noqa: E402  (state first: cuda and _C read it)
from . import _C  # noqa: E402
from . import cuda  # noqa: E402

OutOfMemoryError = cuda.OutOfMemoryError
