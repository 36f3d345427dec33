#!/usr/bin/env python3
"""Where a capture's bytes go: raw bytes per record kind (and per field of
the compact heap records), from a capture written with TRACKER_COMPRESS=0
(every chunk stored, docs/FORMAT.md §2). Decodes the records of
docs/FORMAT.md §4 without the reader library, so it also shows field sizes
the reader does not keep.

Usage: TRACKER_COMPRESS=0 tracker run -o X.bin ... ; bench/capture_bytes.py X.bin
"""
import collections
import struct
import sys

NAMES = {1: "THREAD", 2: "THREAD_NAME", 3: "THREAD_EXIT", 4: "STACK", 5: "MODULES",
         6: "MODULE", 7: "RSS", 8: "LOST", 9: "MMAP", 10: "MUNMAP", 11: "MREMAP",
         0x13: "PY_CODE", 0x14: "PY_IMPORT", 0x15: "PY_IMPORT_END", 0x16: "PY_MARK",
         0x17: "PY_INFO", 0x1E: "LEAK_SCAN", 0x1F: "LEAK"}


def v(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def skip(b, i, n):
    for _ in range(n):
        _, i = v(b, i)
    return i


def record(b, i, out, fields):
    """Decodes one record at i; returns the next offset."""
    t = b[i]
    j = i + 1
    if t & 0x80:
        alloc = t & 0x40
        name = "c" + ("ALLOC" if alloc else "FREE") + str((t >> 4) & 3)
        k = j
        if ((t >> 2) & 3) == 0:
            _, j = v(b, j)
        fields[name + ".seqd"] += j - k
        k = j
        if (t & 3) == 3:
            _, j = v(b, j)
        fields[name + ".tsq"] += j - k
        k = j
        _, j = v(b, j)
        fields[name + ".addr"] += j - k
        if alloc:
            k = j
            _, j = v(b, j)
            fields[name + ".size"] += j - k
            k = j
            _, j = v(b, j)
            fields[name + ".stack"] += j - k
        fields[name + ".tag"] += 1
    elif t >= 0x20:
        cls, kind = t & 0xE0, t & 0x1F
        name = {0x20: "ALLOC", 0x40: "FREE", 0x60: "REALLOC"}[cls] + str(kind)
        j = skip(b, j, {0x20: 5, 0x40: 3, 0x60: 7}[cls])
    elif 0x18 <= t <= 0x1C:  # node records, version 5 (docs/FORMAT.md §4.3)
        h = t & 3
        if t == 0x1C:
            k = j
            h, j = v(b, j)
            fields["NODE.h"] += j - k
        name = "NODE.py" if h & 1 else "NODE"
        k = j
        if not h & 2:
            _, j = v(b, j)
        fields["NODE.parent"] += j - k
        k = j
        j = skip(b, j, 2 if h & 1 else 1)
        fields["NODE.frame"] += j - k
    else:
        name = NAMES.get(t, hex(t))
        if t in (1,):
            j = skip(b, j, 4)
        elif t == 2:
            j = skip(b, j, 3)
            n, j = v(b, j)
            j += n
        elif t == 3:
            j = skip(b, j, 2)
        elif t == 4:
            k = j
            _, j = v(b, j)
            fields["STACK.id"] += j - k
            k = j
            _, j = v(b, j)
            fields["STACK.parent"] += j - k
            k = j
            _, j = v(b, j)
            fields["STACK.ip"] += j - k
        elif t == 5:
            j = skip(b, j, 4)
        elif t == 6:
            j = skip(b, j, 2)
            n, j = v(b, j)
            j += n
            n, j = v(b, j)
            j += n
            n, j = v(b, j)
            j = skip(b, j, 3 * n)
        elif t in (7,):
            j = skip(b, j, 4)
        elif t == 8:
            j = skip(b, j, 3)
        elif t == 9:
            j = skip(b, j, 6)
            j += 1
            j = skip(b, j, 1)
        elif t == 10:
            j = skip(b, j, 4)
        elif t == 11:
            j = skip(b, j, 9)
        elif t == 0x13:
            j = skip(b, j, 2)
            n, j = v(b, j)
            j += n
            n, j = v(b, j)
            j += n
        elif t == 0x14:
            j = skip(b, j, 2)
            n, j = v(b, j)
            j += n
        elif t == 0x15:
            j = skip(b, j, 2)
        elif t in (0x16,):
            j = skip(b, j, 3)
        elif t == 0x17:
            j = skip(b, j, 4)
        elif t == 0x1E:
            j = skip(b, j, 5)
        elif t == 0x1F:
            j = skip(b, j, 3)
            j += 1
            j = skip(b, j, 1)
        else:
            raise ValueError(f"tag {t:#x} not handled (GPU records are not)")
    out[name][0] += 1
    out[name][1] += j - i
    return j


def main():
    data = open(sys.argv[1], "rb").read()
    hlen = struct.unpack_from("<I", data, 12)[0]
    i = hlen
    streams = collections.defaultdict(bytearray)
    total_chunk = 0
    while i + 32 <= len(data):
        magic, typ, codec, _, stream, stored, raw = struct.unpack_from("<4sBBHIII", data, i)
        if magic != b"TKCH":
            raise SystemExit(f"bad chunk at {i}")
        if codec != 0 and typ == 1:
            raise SystemExit("compressed chunk: record with TRACKER_COMPRESS=0")
        if typ == 1:
            streams[stream] += data[i + 32:i + 32 + stored]
        total_chunk += 32
        i += 32 + stored
    out = collections.defaultdict(lambda: [0, 0])
    fields = collections.Counter()
    for b in streams.values():
        j = 0
        while j < len(b):
            j = record(b, j, out, fields)
    raw = sum(c[1] for c in out.values())
    print(f"file {len(data)} B, header {hlen}, chunk headers {total_chunk}, records {raw} B")
    print(f"{'record':16} {'count':>10} {'bytes':>11} {'%':>6} {'B/rec':>6}")
    for name, (n, nb) in sorted(out.items(), key=lambda kv: -kv[1][1]):
        print(f"{name:16} {n:10d} {nb:11d} {100 * nb / raw:6.1f} {nb / n:6.2f}")
    print("fields:")
    for name, nb in sorted(fields.items(), key=lambda kv: -kv[1]):
        print(f"  {name:22} {nb:11d} {100 * nb / raw:6.1f}")


if __name__ == "__main__":
    main()
