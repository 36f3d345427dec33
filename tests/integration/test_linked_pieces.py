#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_linked_pieces.py - format 6's linked LZ4 (codec 3, docs/FORMAT.md
§2): a program that runs the same loop in rounds, each flushed as its own
piece, gets its later pieces as linked blocks (an offset past 0: decoded
against the stream's earlier bytes) that shrink to a fraction of the first,
and the capture reads back to the same exact counts as a stored one. A
quiet program's stream comes in fewer, longer pieces."""

import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, ge, main  # noqa: E402
from test_compress import DATA, LINK, codecs  # noqa: E402
from test_format import chunks  # noqa: E402

ROUNDS, N = 12, 500  # ~3 KB of heap records a round, 100 ms apart


def run(env, extra_env):
    _, out, _ = env.run([env.prog("linked_pieces"), str(ROUNDS), str(N), "100"], env=extra_env)
    st = env.stats(out)
    ge(st["allocations"], ROUNDS * N, "allocations")
    eq(st["lost_events"], 0, "lost events")
    eq(st["checksum_failures"] + st["bad_chunks"] + st["broken_streams"] + st["bytes_lost"], 0,
       "damage")
    return st, out


def test_rounds_linked(env):
    st, out = run(env, None)
    cs, data = codecs(out)
    linked = []
    for c in chunks(data):
        if c["type"] == DATA and data[c["off"] + 5] == LINK and c["arg"] > 0:
            raw = struct.unpack_from("<I", data, c["off"] + 16)[0]
            linked.append((c["stream"], c["stored"], raw))
    # The program's own thread made the rounds: its stream has the most bytes
    # (the sampler's, RSS records, has pieces of a few dozen).
    total = {}
    for s, _, raw in linked:
        total[s] = total.get(s, 0) + raw
    main_stream = max(total, key=total.get) if total else None
    rounds = [(n, raw) for s, n, raw in linked if s == main_stream and raw >= 1024]
    # The first round has no round before it to repeat, and where the
    # writer's first flush came early it shares its piece with the rest of
    # the program's start-up (CI: 772 of 4080 bytes, start-up's 826 raw
    # bytes and round one's 3254); the last may share its piece with the
    # exit's records where a loaded machine held the writer back for the
    # 100 ms pause. The rounds between are checked.
    rounds = rounds[1:-1]
    check(len(rounds) >= ROUNDS // 2,
          "linked pieces past offset 0 of the program's stream: %s" % linked)
    for n, raw in rounds:
        check(n * 8 < raw, "a round against the rounds before it: %d of %d bytes" % (n, raw))
    st0, out0 = run(env, {"TRACKER_COMPRESS": "0"})
    for k in ("allocations", "frees", "bytes_allocated", "leaked_bytes", "peak_heap_bytes"):
        eq(st[k], st0[k], "same %s either way" % k)



def test_quiet_program_fewer_pieces(env):
    """A program that writes little (20 pairs every 5 ms) is flushed every
    2-4 flush periods, not every one (src/capture/writer.c, QUIET_MAX): at
    most one piece of its stream per 20 ms on average, where every 10 ms
    gave one per cycle."""
    _, out, _ = env.run([env.prog("linked_pieces"), "100", "20", "5"])
    st = env.stats(out)
    ge(st["allocations"], 2000, "allocations")
    eq(st["checksum_failures"] + st["bad_chunks"] + st["broken_streams"], 0, "damage")
    with open(out, "rb") as f:
        data = bytearray(f.read())
    per = {}
    for c in chunks(data):
        if c["type"] == DATA:
            per[c["stream"]] = per.get(c["stream"], 0) + c["stored"] + 32
    main_stream = max(per, key=per.get)
    pieces = sum(1 for c in chunks(data) if c["type"] == DATA and c["stream"] == main_stream)
    check(pieces <= st["duration_s"] / 0.020 + 4,
          "%d pieces in %.3f s" % (pieces, st["duration_s"]))


if __name__ == "__main__":
    sys.exit(main(globals()))
