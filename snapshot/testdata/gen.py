#!/usr/bin/env python3
"""Writes the small synthetic snapshots package snapshot tests always run on
(committed outputs). Run from this directory:  python3 gen.py

They follow the format generations of research notes §6.6, with the values
read_test.go expects:

  modern_p2/p4/p5.pickle  modern format at pickle protocols 2, 4 and 5:
                          3 segments on 2 devices, an active_pending_free
                          block, an expandable segment, a private pool, a
                          trace with time_us, an oom entry and an unknown
                          action, allocator_settings, external_annotations,
                          an unknown top-level key (host_segments)
  mid.pickle              time_us but no allocator_settings
  pre_time.pickle         neither time_us nor allocator_settings
  legacy.pickle           PyTorch 2.0: blocks with history, no address
  legacy_history.pickle   PyTorch 2.0 with longer histories: a live block
                          whose history also records an earlier
                          allocation at its address (merged into it), a
                          free block whose history records two earlier
                          allocations, and a small segment; the history
                          replay (snapshot/analysis) must place every
                          replayable entry at its address
  segment_list.pickle     a bare list of segments
  replay.pickle           a trace consistent with PyTorch's allocator rules
                          (research notes §1-§3), written by hand event by
                          event: a segment from before the trace (two 8 MiB
                          weights, one freed during it), best fit and the
                          1 MiB no-split rule, a small segment, a freed and
                          reused small block, empty_cache (segment_free) and
                          an oversize request; replaying it through the
                          caching model must reproduce every address
                          (snapshot/analysis tests)
"""
import copy
import pickle

MiB = 1 << 20
F1 = {"filename": "train.py", "line": 12, "name": "forward"}
F2 = {"filename": "??", "line": 0, "name": "torch::unwind::unwind()"}
FRAMES = [F1, F2]
S0 = 0x7F0000000000  # small segment, device 0
L0 = 0x7F0000400000  # large segment, device 0 (after S0 in memory)
D1 = 0x7E0000000000  # device 1


def seg(device, address, stype, blocks, stream=0, pool=(0, 0), expandable=False):
    addr = address
    bl = []
    for size, req, state in blocks:
        bl.append({"address": addr, "size": size, "requested_size": req,
                   "state": state, "frames": FRAMES if state != "inactive" else []})
        addr += size
    live = [b for b in bl if b["state"] != "inactive"]
    return {
        "device": device, "address": address,
        "total_size": sum(b["size"] for b in bl),
        "allocated_size": sum(b["size"] for b in bl if b["state"] == "active_allocated"),
        "active_size": sum(b["size"] for b in live),
        "requested_size": sum(b["requested_size"] for b in live),
        "stream": stream, "segment_type": stype, "segment_pool_id": pool,
        "is_expandable": expandable, "frames": FRAMES, "blocks": bl,
    }


def modern():
    # Segments listed large first: Layout must sort by address.
    segs = [
        seg(0, L0, "large", [(12 * MiB, 12 * MiB - 100, "active_allocated"),
                             (8 * MiB, 8 * MiB, "inactive")]),
        seg(0, S0, "small", [(512, 300, "active_allocated"),
                             (1024, 1000, "active_pending_free"),
                             (2 * MiB - 1536, 77, "inactive")]),
        seg(1, D1, "large", [(4 * MiB, 4 * MiB, "active_allocated")],
            stream=93824992235296, pool=(1, 2), expandable=True),
    ]
    t0 = 1_700_000_000_000_000
    trace0 = [
        {"action": "segment_alloc", "addr": L0, "size": 20 * MiB, "stream": 0, "time_us": t0, "frames": FRAMES},
        {"action": "alloc", "addr": L0, "size": 12 * MiB - 100, "stream": 0, "time_us": t0 + 1, "frames": FRAMES},
        {"action": "oom", "device_free": 3 * MiB, "size": 40 * MiB, "stream": 0, "time_us": t0 + 2, "frames": []},
        {"action": "future_action", "addr": 0, "size": 0, "stream": 0, "time_us": t0 + 3, "extra": "kept?"},
        {"action": "snapshot", "addr": 0, "size": 12 * MiB + 1536, "stream": 0, "time_us": t0 + 4},
    ]
    return {
        "segments": segs,
        "device_traces": [trace0, []],
        "allocator_settings": {
            "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True,max_split_size_mb:128",
            "max_split_size": 128 * MiB, "garbage_collection_threshold": 0.6,
            "expandable_segments": True, "pinned_num_register_threads": 1,
            "release_lock_on_cudamalloc": False, "pinned_use_cuda_host_register": False,
            "roundup_power2_divisions": {"1": 4, "2": 0, "1024": 8, "32768": 0},
        },
        "external_annotations": [{"stage": "START", "name": "step", "device": 0, "time_us": t0}],
        "host_segments": [],
    }


def strip_time(d):
    for tr in d["device_traces"]:
        for e in tr:
            e.pop("time_us", None)


def legacy():
    out = []
    for address, blocks in ((S0, [(512, 300, "active_allocated"), (2 * MiB - 512, 0, "inactive")]),
                            (L0, [(20 * MiB, 20 * MiB - 4096, "active_allocated")])):
        bl, addr = [], address
        for size, req, state in blocks:
            b = {"size": size, "requested_size": req if state != "inactive" else 0, "state": state}
            if state != "inactive":
                b["history"] = [{"addr": addr, "real_size": req, "frames": FRAMES}]
            bl.append(b)
            addr += size
        live = [b for b in bl if b["state"] != "inactive"]
        out.append({"device": 0, "address": address, "total_size": sum(b["size"] for b in bl),
                    "allocated_size": sum(b["size"] for b in live), "active_size": sum(b["size"] for b in live),
                    "requested_size": sum(b["requested_size"] for b in live), "stream": 0,
                    "segment_type": "small" if address == S0 else "large", "blocks": bl})
    return {"segments": out, "device_traces": [[{"action": "snapshot", "addr": 0, "size": 512 + 20 * MiB, "stream": 0}]]}


def legacy_history():
    """See the module doc. Offsets in MiB are from the segment's start."""
    def blk(size, req, state, hist):
        b = {"size": size, "requested_size": req, "state": state}
        if hist:
            b["history"] = [{"addr": a, "real_size": n, "frames": FRAMES} for a, n in hist]
        return b
    large = [blk(4 * MiB, 4 * MiB - 100, "active_allocated", [(L0, 4 * MiB - 100), (L0, 2 * MiB)]),
             blk(16 * MiB, 0, "inactive", [(L0 + 4 * MiB, 3 * MiB), (L0 + 9 * MiB, 2 * MiB)])]
    small = [blk(1024, 1000, "active_allocated", [(S0, 1000)]),
             blk(2 * MiB - 1024, 0, "inactive", [])]
    out = []
    for address, stype, bl in ((S0, "small", small), (L0, "large", large)):
        live = [b for b in bl if b["state"] != "inactive"]
        out.append({"device": 0, "address": address, "total_size": sum(b["size"] for b in bl),
                    "allocated_size": sum(b["size"] for b in live), "active_size": sum(b["size"] for b in live),
                    "requested_size": sum(b["requested_size"] for b in live), "stream": 0,
                    "segment_type": stype, "blocks": bl})
    return {"segments": out, "device_traces": [[{"action": "snapshot", "addr": 0, "size": 1024 + 4 * MiB, "stream": 0}]]}


def replay():
    """See the module doc. Offsets in MiB are from each segment's start."""
    s1 = L0 + 32 * MiB  # a 20 MiB segment the trace allocates and empty_cache frees
    s2 = L0 + 64 * MiB  # the 12 MiB segment of an oversize request
    t = [1_700_000_000_000_000]

    def ev(action, addr, size):
        t[0] += 1
        e = {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t[0]}
        if action in ("alloc", "segment_alloc"):
            e["frames"] = FRAMES
        return e

    def free(addr, size):
        return [ev("free_requested", addr, size), ev("free_completed", addr, size)]

    trace = [
        ev("alloc", L0 + 16 * MiB, 3 * MiB),  # the 4 MiB tail after the weights: 1 MiB left, not split
        ev("segment_alloc", s1, 20 * MiB), ev("alloc", s1, 6 * MiB),
        ev("segment_alloc", S0, 2 * MiB), ev("alloc", S0, 512),
        ev("alloc", S0 + 512, 1000),
        *free(S0, 512),
        ev("alloc", S0, 300),  # best fit: the freed 512-byte block, not the tail
        *free(L0 + 8 * MiB, 8 * MiB),  # the second weight
        ev("alloc", L0 + 8 * MiB, 7 * MiB),  # its 8 MiB hole beats s1's 14 MiB; 1 MiB left, not split
        *free(s1, 6 * MiB),
        ev("segment_free", s1, 20 * MiB),  # torch.cuda.empty_cache()
        ev("segment_alloc", s2, 12 * MiB), ev("alloc", s2, 12 * MiB),
    ]
    segs = [
        seg(0, S0, "small", [(512, 300, "active_allocated"), (1024, 1000, "active_allocated"),
                             (2 * MiB - 1536, 0, "inactive")]),
        seg(0, L0, "large", [(8 * MiB, 8 * MiB, "active_allocated"), (8 * MiB, 7 * MiB, "active_allocated"),
                             (4 * MiB, 3 * MiB, "active_allocated")]),
        seg(0, s2, "large", [(12 * MiB, 12 * MiB, "active_allocated")]),
    ]
    return {"segments": segs, "device_traces": [trace],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                                   "garbage_collection_threshold": 0.0, "expandable_segments": False},
            "external_annotations": []}


def write(name, obj, proto=4):
    with open(name, "wb") as f:
        pickle.dump(obj, f, protocol=proto)


def main():
    for p in (2, 4, 5):
        write(f"modern_p{p}.pickle", modern(), p)
    mid = modern()
    del mid["allocator_settings"], mid["external_annotations"], mid["host_segments"]
    write("mid.pickle", mid)
    pre = copy.deepcopy(mid)
    strip_time(pre)
    write("pre_time.pickle", pre)
    write("legacy.pickle", legacy())
    write("legacy_history.pickle", legacy_history())
    write("segment_list.pickle", modern()["segments"][:2])
    write("replay.pickle", replay())


if __name__ == "__main__":
    main()
