#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_damaged.py - real captures rewritten the way damage and cut-off
writes leave them (docs/FORMAT.md §2), and what every reader says about it:

- a DATA chunk missing although END counts it: reported as missing chunks
  (the capture is damaged), never read as complete;
- a last chunk that claims more bytes than the file holds: the file is
  truncated, not corrupt (no checksum failure), whatever the claimed length
  and even if its partial payload happens to hold the chunk magic; the same
  claim in the middle of a file is still corruption;
- `tracker export` warns for a damaged capture as it does for a truncated
  one."""

import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, eq_all, main  # noqa: E402

DATA, WATERMARK, END = 1, 2, 3


def chunks(data):
    """[(offset, type, stored_len, stream)] of a whole, well-formed capture."""
    hl = struct.unpack_from("<I", data, 12)[0]
    p, out = hl, []
    while p < len(data):
        eq(data[p:p + 4], b"TKCH", "chunk magic at %d" % p)
        stream, stored = struct.unpack_from("<II", data, p + 8)
        out.append((p, data[p + 4], stored, stream))
        p += 32 + stored
    eq(p, len(data), "chunks end with the file")
    return out


def without_last_piece(data):
    """The capture without the last DATA chunk of its biggest stream (the
    program's main thread): the events in it vanish without a gap."""
    cs = chunks(data)
    size = {}
    for _, t, stored, stream in cs:
        if t == DATA:
            size[stream] = size.get(stream, 0) + stored
    main_stream = max(size, key=lambda k: size[k])
    p, _, stored, _ = [c for c in cs if c[1] == DATA and c[3] == main_stream][-1]
    return data[:p] + data[p + 32 + stored:]


def make_capture(env):
    # leaker N SIZE FREE: N blocks, the first FREE of them freed again.
    # Without the leak scan at exit: its records would be the last piece.
    _, out, _ = env.run([env.prog("leaker"), "3000", "40", "1000"],
                        env={"TRACKER_LEAK_SCAN": "0"})
    with open(out, "rb") as f:
        data = f.read()
    return out, data, env.stats(out)


def write(env, name, data):
    p = os.path.join(env.tmp, name)
    with open(p, "wb") as f:
        f.write(data)
    return p


def stats_text(env, path):
    cp = env.run_raw([env.tracker, "stats", path], timeout=60)
    eq(cp.returncode, 0, "tracker stats %s (stderr %r)" % (path, cp.stderr))
    return cp.stdout.decode(errors="replace")


def test_missing_last_data_chunk(env):
    _, data, full = make_capture(env)
    eq(chunks(data)[-1][1], END, "last chunk type")
    # The last DATA piece of its stream: nothing after it shows a gap, so
    # only END's chunk count can tell that it is gone.
    path = write(env, "missing.bin", without_last_piece(data))
    st = env.stats(path)
    check(st["allocations"] + st["frees"] < full["allocations"] + full["frees"],
          "the removed chunk held events (%d+%d of %d+%d)"
          % (st["allocations"], st["frees"], full["allocations"], full["frees"]))
    eq_all([(st.get("missing_chunks"), 1, "missing_chunks"),
            (st["truncated"], False, "truncated (END is there)"),
            (st["checksum_failures"], 0, "checksum_failures"),
            (full.get("missing_chunks"), 0, "missing_chunks of the intact capture")])
    t = stats_text(env, path)
    check("warning: 1 chunk the writer wrote is missing (the capture is damaged)" in t,
          "stats text names the missing chunk:\n" + t)
    cp = env.run_raw([env.tracker, "summary", path], timeout=60)
    eq(cp.returncode, 0, "summary exit status")
    out = cp.stdout.decode(errors="replace") + cp.stderr.decode(errors="replace")
    check("is damaged" in out and "1 chunk missing" in out, "summary warns:\n" + out)


def test_trailing_chunk_longer_than_file(env):
    _, data, full = make_capture(env)
    cs = chunks(data)
    body = data[:cs[-1][0]]  # without END: a writer cut off after its last flush

    def tail(stored, payload):
        h = bytearray(32)
        h[0:4] = b"TKCH"
        h[4] = DATA
        struct.pack_into("<III", h, 8, 1, stored, stored)
        struct.pack_into("<Q", h, 24, 1 << 40)
        return bytes(h) + payload

    cases = [
        ("claims 4 KiB, has 100 bytes", tail(4096, b"\0" * 100)),
        ("claims 2 GiB (more than any chunk)", tail(0x7FFFFFFF, b"\0" * 100)),
        ("partial payload holds the magic", tail(4096, b"xxTKCH" + b"\1" * 40)),
        ("header cut short", tail(4096, b"")[:20]),
    ]
    for what, t in cases:
        path = write(env, "tail.bin", body + t)
        st = env.stats(path, allow_truncated=True)
        eq_all([(st["truncated"], True, "%s: truncated" % what),
                (st["checksum_failures"], 0, "%s: checksum_failures" % what),
                (st["bad_chunks"], 0, "%s: bad_chunks" % what),
                (st["broken_streams"], 0, "%s: broken_streams" % what),
                (st.get("ends_inside_chunk"), True, "%s: ends_inside_chunk" % what),
                (st["allocations"], full["allocations"], "%s: allocations" % what),
                (st["frees"], full["frees"], "%s: frees" % what)])
        t = stats_text(env, path)
        check("truncated" in t and "checksum" not in t, "%s: stats text:\n%s" % (what, t))
    # The same lie in the middle of the file is corruption: the reader finds
    # the next chunk and counts one failure; the file is not truncated.
    p = cs[0][0]
    bad = bytearray(data)
    struct.pack_into("<I", bad, p + 12, len(data))
    path = write(env, "middle.bin", bytes(bad))
    st = env.stats(path, allow_truncated=True)
    eq_all([(st["truncated"], False, "length lie mid-file: truncated"),
            (st["checksum_failures"], 1, "length lie mid-file: checksum_failures"),
            (st.get("ends_inside_chunk"), False, "length lie mid-file: ends_inside_chunk")])


def test_export_warns_damaged(env):
    cap, data, _ = make_capture(env)
    cs = chunks(data)
    missing = write(env, "missing.bin", without_last_piece(data))
    flipped = bytearray(data)
    flipped[cs[0][0] + 40] ^= 0x5A  # inside the first chunk's payload: CRC fails
    flipped = write(env, "flipped.bin", bytes(flipped))
    for path in (cap, missing, flipped):
        out = path[:-4] + ".folded"
        cp = env.run_raw([env.tracker, "export", "--format", "folded", path, "-o", out],
                         timeout=60)
        eq(cp.returncode, 0, "export %s (stderr %r)" % (path, cp.stderr))
        err = cp.stderr.decode(errors="replace")
        warned = "warning: %s is damaged" % path in err
        eq(warned, path != cap, "export of %s warns it is damaged (stderr %r)" % (path, err))


if __name__ == "__main__":
    sys.exit(main(globals()))
