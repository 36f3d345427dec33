#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_node_records.py - a Python capture's size (issue 12), from the
writer's own bytes (TRACKER_COMPRESS=0, so every piece is stored):

- its stack definitions are version 5's node records (docs/FORMAT.md §4.3),
  never a STACK record (0x04), at under 5 bytes each on average where STACK
  records took about 10.6 (a Python frame between native ones cost ten
  bytes of ip delta each way), and they read back to the same stacks;
- its heap records' time moves by nothing or by at least the heap quantum
  of 1,048,576 ns (§4.2): a loop that allocates every few hundred us
  records no time steps under it (with the 16 us quantum of before, every
  one of its steps was)."""

import collections
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
from harness import check, eq, main  # noqa: E402
from pyutil import SYS_PY, need_python, pyrun, report  # noqa: E402
import capture_bytes  # noqa: E402  (the record walker of bench/capture_bytes.py)

QUANTUM = 1 << 20
SCRIPT = """
import time
def deep(n, keep):
    if n == 0:
        keep.append(bytearray(3000))  # a new hybrid stack at each depth
        return
    deep(n - 1, keep)
keep = []
for d in range(40):
    deep(d, keep)
for i in range(400):
    keep.append(bytearray(5000 + i))  # one allocation every ~200 us
    time.sleep(0.0002)
print("ran=1")
"""


def streams(path):
    with open(path, "rb") as f:
        data = f.read()
    eq(struct.unpack_from("<H", data, 8)[0], 7, "format version")
    i = struct.unpack_from("<I", data, 12)[0]
    out = {}
    while i + 32 <= len(data):
        typ, codec, stream, stored = data[i + 4], data[i + 5], *struct.unpack_from("<II", data, i + 8)
        if typ == 1:
            eq(codec, 0, "stored piece (TRACKER_COMPRESS=0)")
            out.setdefault(stream, bytearray()).extend(data[i + 32:i + 32 + stored])
        i += 32 + stored
    return out


def walk(b):
    """Yields (tag, record bytes, time step in ns or None) for each record."""
    j = 0
    while j < len(b):
        t = b[j]
        step = None
        if t & 0x80:  # compact heap record: tsq in the tag or a varint
            k = j + 1
            if (t >> 2) & 3 == 0:
                _, k = capture_bytes.v(b, k)
            tq = t & 3
            if tq == 3:
                tq, k = capture_bytes.v(b, k)
            step = tq << 10
        elif 0x20 <= t < 0x80:  # long heap record: seqd then tsd:z
            _, k = capture_bytes.v(b, j + 1)
            z, _ = capture_bytes.v(b, k)
            step = (z >> 1) ^ -(z & 1)
        e = capture_bytes.record(b, j, collections.defaultdict(lambda: [0, 0]),
                                 collections.Counter())
        yield t, bytes(b[j:e]), step
        j = e


def test_node_records_and_heap_quantum(env):
    need_python()
    script = os.path.join(env.tmpdir("s"), "deep.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    _, out, v = pyrun(env, ["--python", SYS_PY, script], extra_env={"TRACKER_COMPRESS": "0"})
    eq(v.get("ran"), 1, "deep.py ran")
    st = env.stats(out)
    eq(st["broken_streams"] + st["checksum_failures"] + st["bad_chunks"], 0, "damage")
    nodes = node_bytes = stack_recs = heap = short = 0
    for b in streams(out).values():
        for tag, rec, step in walk(b):
            if tag == 0x04:
                stack_recs += 1
            elif 0x18 <= tag <= 0x1C:
                nodes += 1
                node_bytes += len(rec)
            if step is not None:
                heap += 1
                short += 0 < step < QUANTUM
    print("%d node records, %.2f bytes each; %d heap records" % (nodes, node_bytes / max(nodes, 1),
                                                                 heap))
    eq(stack_recs, 0, "STACK (0x04) records")
    check(nodes > 1000, "node records: %d" % nodes)
    check(node_bytes < 5 * nodes, "node records: %d bytes for %d" % (node_bytes, nodes))
    check(heap > 400, "heap records: %d" % heap)
    eq(short, 0, "heap time steps under the 1 ms quantum")
    # The stacks read back: each depth's allocation under its own chain of
    # deep() frames.
    depths = set()
    for g in report(env, "leaks", ["-n", "0", out]):
        fr = [f for f in g["stack"] if f.get("function") == "deep"]
        if fr and g["bytes"] == 3001 * g["count"]:  # bytearray adds its NUL
            depths.add(len(fr))
    eq(depths, set(range(1, 41)), "deep() depths of the bytearray(3000) blocks")


if __name__ == "__main__":
    sys.exit(main(globals()))
