#!/usr/bin/env python3
"""Writes the pickle fixtures of package snapshot/pickle (committed outputs).

Run from this directory:  python3 gen.py
Any Python 3.8+ works; the outputs do not depend on the version because every
dump names its protocol. Fixtures:

  plain_p2/p4/p5.pickle   the same plain value (plain.json is its JSON form,
                          with tuples as lists) at protocols 2, 4 and 5
  bytes_p4.pickle         bytes values (SHORT_BINBYTES, BINBYTES)
  hostile_p2.pickle       class E whose __reduce__ is os.system: GLOBAL + REDUCE
  hostile_p4.pickle       the same at protocol 4: STACK_GLOBAL + REDUCE
  huge_binunicode8.pickle 12 bytes declaring a 1 TiB BINUNICODE8 string
  deep.pickle             lists nested 2000 deep (over the default MaxDepth)
  truncated.pickle        plain_p4.pickle cut in half
Nothing here is ever unpickled: hostile_*.pickle would run `echo pwned`.
"""
import json
import os
import pickle
import struct
import sys

PLAIN = {
    "segments": [
        {
            "device": 0,
            "address": 139_637_976_727_552,  # > 2^31: LONG1
            "total_size": 2_097_152,
            "segment_type": "small",
            "segment_pool_id": (0, 0),
            "is_expandable": False,
            "blocks": [{"size": 512, "state": "active_allocated"}],
        }
    ],
    "ints": [0, 1, 255, 256, 65535, 65536, -1, -129, 2**31, -(2**31) - 1,
             2**63 - 1, -(2**63), 2**64 - 1],
    "floats": [0.0, 0.5, -2.25, 1e300],
    "consts": [True, False, None],
    "tuples": [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4)],
    "text": ["", "ascii", "h\u00e9llo \u2603", "x" * 300],
    "shared": None,
    "big": {str(i): i for i in range(20)},
}
shared = {"filename": "a.py", "line": 3, "name": "f"}
PLAIN["shared"] = [shared, shared, [shared]]


class E:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def write(name, data):
    with open(name, "wb") as f:
        f.write(data)


def main():
    for proto in (2, 4, 5):
        write(f"plain_p{proto}.pickle", pickle.dumps(PLAIN, protocol=proto))
    with open("plain.json", "w") as f:
        json.dump(PLAIN, f, indent=1, sort_keys=True)
        f.write("\n")
    write("bytes_p4.pickle", pickle.dumps({"short": b"\x00\x01", "long": b"z" * 300}, protocol=4))
    write("hostile_p2.pickle", pickle.dumps({"x": E()}, protocol=2))
    write("hostile_p4.pickle", pickle.dumps({"x": E()}, protocol=4))
    # PROTO 4, BINUNICODE8 with length 2^40, then STOP: 12 bytes.
    write("huge_binunicode8.pickle", b"\x80\x04\x8d" + struct.pack("<Q", 1 << 40) + b".")
    sys.setrecursionlimit(20000)
    v = []
    for _ in range(2000):
        v = [v]
    write("deep.pickle", pickle.dumps(v, protocol=4))
    p4 = pickle.dumps(PLAIN, protocol=4)
    write("truncated.pickle", p4[: len(p4) // 2])


if __name__ == "__main__":
    main()
