#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_linked_pieces.py - format 6's linked LZ4 (codec 3, docs/FORMAT.md
§2), and format 7's linked zstd (codec 4, under --python-allocators): a program that runs the same loop in rounds, each flushed as its own
piece, gets its later pieces as linked blocks (an offset past 0: decoded
against the stream's earlier bytes) that shrink to a fraction of the first,
and the capture reads back to the same exact counts as a stored one. A
quiet program's stream comes in fewer, longer pieces."""

import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, ge, main  # noqa: E402
from test_compress import DATA, LINK, ZLINK, codecs  # noqa: E402
from test_format import chunks  # noqa: E402

ROUNDS, N = 12, 500  # ~3 KB of heap records a round, 100 ms apart


def run(env, extra_env, extra=()):
    _, out, _ = env.run([env.prog("linked_pieces"), str(ROUNDS), str(N), "100"], env=extra_env,
                        extra=extra)
    st = env.stats(out)
    ge(st["allocations"], ROUNDS * N, "allocations")
    eq(st["lost_events"], 0, "lost events")
    eq(st["checksum_failures"] + st["bad_chunks"] + st["broken_streams"] + st["bytes_lost"], 0,
       "damage")
    return st, out


def linked_rounds(data, codec=LINK):
    """{stream: [(stored, raw)]} of the linked pieces past offset 0 of at
    least 1 KiB, in file order (the sampler's, RSS records, are a few dozen
    bytes each)."""
    per = {}
    for c in chunks(data):
        if c["type"] == DATA and data[c["off"] + 5] == codec and c["arg"] > 0:
            raw = struct.unpack_from("<I", data, c["off"] + 16)[0]
            if raw >= 1024:
                per.setdefault(c["stream"], []).append((c["stored"], raw))
    return per


def test_rounds_linked(env):
    rounds_linked(env, None, LINK)


def test_rounds_linked_zstd(env):
    """Format 7: where Python's own allocators are traced the writer's
    linked pieces are zstd frames (codec 4) against the same history; the
    rounds shrink as under LZ4 and the capture reads back to the same exact
    counts as a stored one (the option alone picks the codec: this
    program is not Python)."""
    cs, _ = rounds_linked(env, None, ZLINK, ["--python-allocators"])
    check(LINK not in cs, "no linked LZ4 piece beside zstd: %s" % sorted(set(cs)))


def rounds_linked(env, extra_env, codec, extra=()):
    st, out = run(env, extra_env, extra)
    cs, data = codecs(out)
    per = linked_rounds(data, codec)
    # The program's own thread made the rounds: its stream has the most bytes.
    main_stream = max(per, key=lambda s: sum(raw for _, raw in per[s])) if per else None
    rounds = per.get(main_stream, [])
    # The first round has no round before it to repeat, and where the
    # writer's first flush came early it shares its piece with the rest of
    # the program's start-up (CI: 772 of 4080 bytes, start-up's 826 raw
    # bytes and round one's 3254); the last may share its piece with the
    # exit's records where a loaded machine held the writer back for the
    # 100 ms pause. The rounds between are checked.
    rounds = rounds[1:-1]
    check(len(rounds) >= ROUNDS // 2,
          "linked pieces past offset 0 of the program's stream: %s" % per)
    for n, raw in rounds:
        check(n * 8 < raw, "a round against the rounds before it: %d of %d bytes" % (n, raw))
    st0, out0 = run(env, dict(extra_env or {}, TRACKER_COMPRESS="0"), extra)
    for k in ("allocations", "frees", "bytes_allocated", "leaked_bytes", "peak_heap_bytes"):
        eq(st[k], st0[k], "same %s either way" % k)
    return cs, data



def test_two_threads_linked(env):
    """Two threads doing the rounds in turn each get their later rounds
    as linked pieces, also where their stream ids are equal modulo 16 to
    another's: with 14 or 15 threads started and ended before, the second
    thread's id is 16 or 17, and the main thread's and the sampler's are 0
    and 1 (whichever came first). The writer picked a stream's encoder by its
    id modulo 16, so there each piece evicted the other stream's history and
    the second thread's rounds stayed as large as its first; a stream keeps
    its encoder while it writes now (src/capture/lz_link.c)."""
    for churn in (14, 15):
        _, out, _ = env.run([env.prog("linked_pieces"), str(ROUNDS), str(N), "100", str(churn)])
        st = env.stats(out)
        ge(st["allocations"], 2 * ROUNDS * N, "allocations")
        eq(st["lost_events"], 0, "lost events")
        eq(st["checksum_failures"] + st["bad_chunks"] + st["broken_streams"] + st["bytes_lost"], 0,
           "damage")
        _, data = codecs(out)
        per = linked_rounds(data)
        busy = sorted(per, key=lambda s: -sum(raw for _, raw in per[s]))[:2]
        eq(len(busy), 2, "streams with linked rounds (churn %d): %s" % (churn, per))
        # Most rounds, not each, of both threads together: a thread's first
        # rounds still move while glibc sets up the second thread's arena
        # (1,100-1,800 of 3,850 bytes seen). A round of random sizes alone is
        # ~2,460 bytes: with the history evicted at every piece, none of a
        # thread's rounds passes.
        small = [(s, n) for s in busy for n, raw in per[s] if n * 8 < raw]
        check(len(small) >= ROUNDS,
              "churn %d: rounds against the rounds before them: %s"
              % (churn, {s: per[s] for s in busy}))


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
