"""torch.cuda.memory: _snapshot and _record_memory_history."""
import sys

from .. import _fake


def _snapshot(device=None):
    _fake.STATE.call("_snapshot")
    return _fake.STATE.snapshot()


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize, device=None):
    _fake.STATE.call("_record_memory_history", enabled=enabled, context=context, stacks=stacks,
                     max_entries=max_entries, device=device)
    if enabled not in (None, "state", "all"):
        raise ValueError("enabled must be None, 'state' or 'all'")
    if context not in (None, "state", "alloc", "all"):
        raise ValueError("context must be None, 'state', 'alloc' or 'all'")
    if stacks not in ("python", "all"):
        raise ValueError("stacks must be 'python' or 'all'")
    _fake.STATE.set_history(enabled, context, stacks, int(max_entries))


def _record_memory_history_legacy(enabled, record_context=True, trace_alloc_max_entries=1,
                                  trace_alloc_record_context=False, device=None, _enable_expensive_cpp=False):
    """PyTorch 2.0's signature (FAKE_TORCH_API=2.0)."""
    _fake.STATE.call("_record_memory_history", enabled=enabled, record_context=record_context,
                     trace_alloc_max_entries=trace_alloc_max_entries)
    _fake.STATE.set_history("all" if enabled else None, "all", "python", int(trace_alloc_max_entries))


def _dump_snapshot(filename="dump_snapshot.pickle"):
    import pickle
    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)


if _fake.env_value("FAKE_TORCH_API") == "2.0":
    _record_memory_history = _record_memory_history_legacy  # noqa: F811
