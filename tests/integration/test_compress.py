#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_compress.py - how the writer stores thread streams (docs/FORMAT.md
§2, §4.1): a heap-heavy run gets compressed chunks (LZ4, linked since
format 6, linked zstd under --python-allocators since format 7, or HUF, whichever is smaller, each at least 1/16 smaller than its raw piece) by default and
only stored ones with TRACKER_COMPRESS=0, and both read back to the same
exact counts; its heap events use the compact records of format 4."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, ge, main  # noqa: E402
from test_format import chunks  # noqa: E402

DATA = 1
STORED, LZ4, HUF, LINK, ZLINK = 0, 1, 2, 3, 4
N = 200000


def codecs(path):
    with open(path, "rb") as f:
        data = bytearray(f.read())
    eq(data[8], 7, "format version")
    out = []
    for c in chunks(data):
        if c["type"] != DATA:
            continue
        codec = data[c["off"] + 5]
        raw = int.from_bytes(data[c["off"] + 16:c["off"] + 20], "little")
        if codec != STORED:
            check(c["stored"] <= raw - raw // 16,
                  "codec %d chunk at %d: %d of %d bytes" % (codec, c["off"], c["stored"], raw))
        out.append(codec)
    return out, data


def run(env, extra_env):
    # One worker making N 32-byte allocations and freeing all but one.
    _, out, _ = env.run([env.prog("threads"), "1", str(N), "32"], env=extra_env)
    st = env.stats(out)
    ge(st["allocations"], N, "allocations")
    eq(st["lost_events"], 0, "lost events")
    eq(st["checksum_failures"] + st["bad_chunks"] + st["broken_streams"], 0, "damage")
    return st, out


def test_compressed_by_default_stored_when_off(env):
    st, out = run(env, None)
    cs, data = codecs(out)
    check(set(cs) & {LZ4, HUF, LINK}, "a heap-heavy stream has compressed chunks: %s" % sorted(set(cs)))
    st0, out0 = run(env, {"TRACKER_COMPRESS": "0"})
    cs0, _ = codecs(out0)
    eq(sorted(set(cs0)), [STORED], "TRACKER_COMPRESS=0: every DATA chunk stored")
    for k in ("allocations", "frees", "bytes_allocated", "leaked_bytes", "unmatched_frees"):
        eq(st[k], st0[k], "same %s either way" % k)
    check(os.path.getsize(out) < os.path.getsize(out0),
          "HUF made the capture smaller: %d vs %d" % (os.path.getsize(out), os.path.getsize(out0)))


def test_compact_heap_records(env):
    """The stored capture's streams hold compact ALLOC/FREE tags (0x80..0xFF)
    for malloc and free, about one per event."""
    _, out = run(env, {"TRACKER_COMPRESS": "0"})
    cs, data = codecs(out)
    compact = 0
    for c in chunks(data):
        if c["type"] == DATA:
            payload = data[c["off"] + 32:c["off"] + 32 + c["stored"]]
            compact += sum(1 for b in payload if b & 0x80)
    # Every heap event starts with a compact tag; other bytes may have bit 7
    # set too (varint continuation), so this is a lower bound only.
    check(compact >= 2 * N - 1, "compact tags: %d for %d heap events" % (compact, 2 * N - 1))


if __name__ == "__main__":
    sys.exit(main(globals()))
