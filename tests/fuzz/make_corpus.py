#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make_corpus.py - regenerates the seed corpus of the fuzz targets.

Not run by the tests: its output is committed (corpus/reader/, corpus/record/)
so that the replay test is deterministic. It records small real programs with
the real `tracker run`, then derives what a fuzzer is slow to find by itself:
 - every capture again with its LZ4 chunks stored uncompressed (mutations of
   stored payloads reach the record decoder, mutations of LZ4 rarely do);
 - truncations at each structural boundary, bad headers, CRC failures, junk
   between chunks, and framing-valid corruption with recomputed CRCs (offset
   gaps, duplicated/reordered chunks, unknown types and codecs, bad LZ4,
   malformed records, odd stack trie and module records);
 - synthetic captures with every record type (GPU records too), several
   interleaved streams and watermarks;
 - for fuzz_record, the raw stream bytes of each capture and hand-made streams.
Crash reproducers found by fuzzing are added by hand as crash-*.bin and are
never deleted by this script (it only rewrites files it names itself).

usage: make_corpus.py --build BUILD_DIR [--out tests/fuzz/corpus]
       make_corpus.py --synthetic-only      (rewrites syn_* only)
Python 3 stdlib only; LZ4 through ctypes (liblz4.so.1).
"""

import argparse
import ctypes
import os
import struct
import subprocess
import sys
import tempfile

MAX_FILE = 64 << 10
FMT_VERSION = 7  # the newest version the reader reads (TRK_FMT_VERSION)
HEAD = 32
MAGIC = b"\x89TRK\r\n\x1a\n"
DATA, WATERMARK, END = 1, 2, 3

# ---- CRC-32C (Castagnoli, reflected) ------------------------------------
_T = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _T.append(_c)


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = _T[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283

# ---- LZ4 block codec through the system library ------------------------
_lz4 = ctypes.CDLL("liblz4.so.1")


def lz4_decompress(src, raw_len):
    out = ctypes.create_string_buffer(max(raw_len, 1))
    n = _lz4.LZ4_decompress_safe(src, out, len(src), raw_len)
    if n != raw_len:
        raise ValueError("bad LZ4 block")
    return out.raw[:raw_len]


def lz4_compress(src):
    cap = _lz4.LZ4_compressBound(len(src))
    out = ctypes.create_string_buffer(cap)
    n = _lz4.LZ4_compress_default(src, out, len(src), cap)
    return out.raw[:n]


_lz4.LZ4_createStream.restype = ctypes.c_void_p
_lz4.LZ4_freeStream.argtypes = [ctypes.c_void_p]
_lz4.LZ4_loadDict.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
_lz4.LZ4_compress_fast_continue.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                            ctypes.c_int, ctypes.c_int, ctypes.c_int]


def lz4_compress_linked(src, history):
    """Codec 3 (FORMAT.md §2): one LZ4 block of src against the stream's
    history, its last 64 KiB of raw bytes before src."""
    history = history[-65536:]
    hb = ctypes.create_string_buffer(history, max(len(history), 1))
    st = _lz4.LZ4_createStream()
    _lz4.LZ4_loadDict(st, hb, len(history))
    cap = _lz4.LZ4_compressBound(len(src))
    out = ctypes.create_string_buffer(cap)
    n = _lz4.LZ4_compress_fast_continue(st, src, out, len(src), cap, 1)
    _lz4.LZ4_freeStream(st)
    if n <= 0:
        raise ValueError("LZ4 failed")
    return out.raw[:n]


def lz4_decompress_linked(src, raw_len, history):
    history = history[-65536:]
    out = ctypes.create_string_buffer(max(raw_len, 1))
    n = _lz4.LZ4_decompress_safe_usingDict(src, out, len(src), raw_len, history, len(history))
    if n != raw_len:
        raise ValueError("bad linked LZ4 block")
    return out.raw[:raw_len]


# ---- Varints and records (docs/FORMAT.md §4) ------------------------------
def uv(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zz(v):
    v = ((v + (1 << 63)) % (1 << 64)) - (1 << 63)  # to signed 64-bit
    return uv(((v << 1) ^ (v >> 63)) & ((1 << 64) - 1))


class Stream:
    """Encoder with the per-stream delta state."""

    def __init__(self):
        self.seq = self.ts = self.addr = self.ip = 0
        self.sid = self.pcode = self.pline = 0  # version 5 (FORMAT.md §4.3)
        self.out = bytearray()

    def head(self, tag, seq, ts):
        self.out += bytes([tag]) + uv(seq - self.seq) + zz(ts - self.ts)
        self.seq, self.ts = seq, ts

    def a(self, addr):
        self.out += zz(addr - self.addr)
        self.addr = addr

    def thread(self, seq, ts, tid, flags=0):
        self.head(0x01, seq, ts)
        self.out += uv(tid) + uv(flags)

    def thread_name(self, seq, ts, tid, name):
        self.head(0x02, seq, ts)
        self.out += uv(tid) + uv(len(name)) + name

    def thread_exit(self, seq, ts):
        self.head(0x03, seq, ts)

    def stack(self, sid, parent, ip):
        self.out += bytes([0x04]) + uv(sid) + uv(parent) + zz(ip - self.ip)
        self.ip, self.sid = ip, sid

    def node(self, nid, parent, ip):
        """A version 5 node record (0x18..0x1C), written from FORMAT.md
        §4.3 alone."""
        py, chain = ip >> 63, parent == self.sid
        bits = (2 if chain else 0) | py
        if nid == self.sid + 1:
            self.out += bytes([0x18 | bits])
        else:
            self.out += bytes([0x1C]) + uv((nid - self.sid - 1) << 2 | bits)
        if not chain:
            self.out += uv(nid - parent)
        if py:
            code, line = (ip >> 24) & ((1 << 39) - 1), ip & 0xFFFFFF
            self.out += zz(code - self.pcode) + zz(line - self.pline)
            self.pcode, self.pline = code, line
        else:
            self.out += zz(ip - self.ip)
            self.ip = ip
        self.sid = nid

    def modules(self, seq, ts, gen, count):
        self.head(0x05, seq, ts)
        self.out += uv(gen) + uv(count)

    def module(self, gen, base, path, buildid, segs):
        self.out += bytes([0x06]) + uv(gen) + uv(base) + uv(len(path)) + path
        self.out += uv(len(buildid)) + buildid + uv(len(segs))
        for vaddr, memsz, flags in segs:
            self.out += uv(vaddr) + uv(memsz) + uv(flags)

    def rss(self, seq, ts, anon, file):
        self.head(0x07, seq, ts)
        self.out += uv(anon) + uv(file)

    def lost(self, seq, ts, count):
        self.head(0x08, seq, ts)
        self.out += uv(count)

    def mmap(self, seq, ts, addr, length, prot, flags, file, stack):
        self.head(0x09, seq, ts)
        self.a(addr)
        self.out += uv(length) + uv(prot) + uv(flags) + bytes([file]) + uv(stack)

    def munmap(self, seq, ts, addr, length):
        self.head(0x0A, seq, ts)
        self.a(addr)
        self.out += uv(length)

    def mremap(self, seq, seq2, ts, old, oldlen, new, newlen, flags, stack):
        self.head(0x0B, seq, ts)
        self.a(old)
        self.out += uv(oldlen) + uv(seq2 - seq)
        self.seq = seq2
        self.a(new)
        self.out += uv(newlen) + uv(flags) + uv(stack)

    def alloc(self, kind, seq, ts, addr, size, stack):
        self.head(0x20 | kind, seq, ts)
        self.a(addr)
        self.out += uv(size) + uv(stack)

    def free(self, kind, seq, ts, addr):
        self.head(0x40 | kind, seq, ts)
        self.a(addr)

    def realloc(self, kind, seq, seq2, ts, old, new, size, stack):
        self.head(0x60 | kind, seq, ts)
        self.a(old)
        self.out += uv(seq2 - seq)
        self.seq = seq2
        self.a(new)
        self.out += uv(size) + uv(stack)

    def gpu(self, tag, seq, ts, api, kind, device):
        self.head(tag, seq, ts)
        self.out += bytes([api, kind]) + zz(device)

    def gpu_alloc(self, seq, ts, api, kind, device, addr, size, stream, stack):
        self.gpu(0x0C, seq, ts, api, kind, device)
        self.a(addr)
        self.out += uv(size) + uv(stream) + uv(stack)

    def gpu_free(self, seq, ts, api, kind, device, addr):
        self.gpu(0x0D, seq, ts, api, kind, device)
        self.a(addr)

    def gpu_fail(self, seq, ts, api, kind, device, size, result, stack):
        self.gpu(0x0E, seq, ts, api, kind, device)
        self.out += uv(size) + uv(result) + uv(stack)

    def gpu_map(self, seq, ts, api, op, device, va, size, handle, offset):
        self.gpu(0x0F, seq, ts, api, op, device)
        self.a(va)
        self.out += uv(size) + uv(handle) + uv(offset)

    def gpu_meminfo(self, seq, ts, device, used, total):
        self.head(0x10, seq, ts)
        self.out += uv(device) + uv(used) + uv(total)

    def gpu_scope(self, enter):
        self.out += bytes([0x11 if enter else 0x12])

    def take(self):
        b = bytes(self.out)
        self.out = bytearray()
        return b


# ---- Files ----------------------------------------------------------------
def header(pid=1000, ppid=1, root=1000, page=4096, clock_base=10**9, tlvs=None, version=1,
           hlen=None):
    if tlvs is None:
        tlvs = [(1, b"prog\0arg\0"), (2, b"/usr/bin/prog"), (3, b"host"), (4, b"/tmp"),
                (5, b"0.1.0")]
    body = b"".join(struct.pack("<HHI", t, 0, len(v)) + v for t, v in tlvs)
    n = 64 + len(body) + 4 if hlen is None else hlen
    fixed = MAGIC + struct.pack("<HHIIIIIQQQII", version, 0, n, pid, ppid, root, page,
                                1700000000 * 10**9, clock_base, 0x1234, 64, 7)
    h = fixed + body
    return h + struct.pack("<I", crc32c(h))


def chunk(ctype, payload=b"", stream=0, arg=0, codec=0, raw_len=None, crc=None):
    raw = len(payload) if raw_len is None else raw_len
    h = b"TKCH" + bytes([ctype, codec]) + b"\0\0" + struct.pack("<III", stream, len(payload), raw)
    tail = struct.pack("<Q", arg)
    c = crc32c(h[4:20] + tail + payload) if crc is None else crc
    return h + struct.pack("<I", c) + tail + payload


def end_chunk(end_ts=2 * 10**9, reason=0, chunks=0, lost=0, streams=1):
    return chunk(END, uv(end_ts) + uv(reason) + uv(chunks) + uv(lost) + uv(streams))


def parse(data):
    """Returns (header bytes, [chunk dicts]) for a well-formed file."""
    hlen = struct.unpack_from("<I", data, 12)[0]
    pos, chunks = hlen, []
    while pos + HEAD <= len(data):
        if data[pos:pos + 4] != b"TKCH":
            raise ValueError("not a chunk at %d" % pos)
        ctype, codec = data[pos + 4], data[pos + 5]
        stream, stored, raw = struct.unpack_from("<III", data, pos + 8)
        arg = struct.unpack_from("<Q", data, pos + 24)[0]
        payload = data[pos + HEAD:pos + HEAD + stored]
        chunks.append(dict(type=ctype, codec=codec, stream=stream, raw=raw, arg=arg,
                           payload=payload, off=pos, end=pos + HEAD + stored))
        pos += HEAD + stored
    return data[:hlen], chunks


def raw_payload(c, history=b""):
    if c["codec"] == 3:
        return lz4_decompress_linked(c["payload"], c["raw"], history)
    return lz4_decompress(c["payload"], c["raw"]) if c["codec"] == 1 else c["payload"]


def stored_form(data):
    h, chunks = parse(data)
    out = bytearray(h)
    hist = {}
    for c in chunks:
        raw = raw_payload(c, hist.get(c["stream"], b""))
        if c["type"] == DATA:
            hist[c["stream"]] = (hist.get(c["stream"], b"") + raw)[-65536:]
        out += chunk(c["type"], raw, c["stream"], c["arg"])
    return bytes(out)


def rebuild(h, chunks):
    """Re-emits chunks (dicts, possibly edited) with correct CRCs."""
    out = bytearray(h)
    for c in chunks:
        raw = len(c["payload"]) if c["codec"] == 0 else c["raw"]
        out += chunk(c["type"], c["payload"], c["stream"], c["arg"], c["codec"],
                     c.get("raw_override", raw))
    return bytes(out)


def streams_of(data):
    """Raw bytes of each stream, concatenated in file order."""
    _, chunks = parse(data)
    s = {}
    for c in chunks:
        if c["type"] == DATA:
            b = s.setdefault(c["stream"], bytearray())
            b.extend(raw_payload(c, bytes(b[-65536:])))
    return s


# ---- Recording ------------------------------------------------------------
def record(build, tmp, name, argv, extra_env=None):
    prog = argv[0]
    if not os.path.isabs(prog):
        prog = os.path.join(build, "tests", "integration", prog)
    if not os.access(prog, os.X_OK):
        print("skip %s: %s not built" % (name, prog), file=sys.stderr)
        return []
    d = os.path.join(tmp, name)
    os.makedirs(d)
    out = os.path.join(d, "cap.bin")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")}
    env.update(extra_env or {})
    subprocess.run([os.path.join(build, "tracker"), "run", "-q", "-f", "-o", out, "--", prog]
                   + argv[1:], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=120, cwd=d)
    files = sorted(f for f in os.listdir(d) if f.endswith(".bin"))
    result = []
    for i, f in enumerate(files):
        with open(os.path.join(d, f), "rb") as fh:
            result.append(("%s%s" % (name, "" if f == "cap.bin" else "_child%d" % i), fh.read()))
    return result


PROGRAMS = [
    ("true", ["/bin/true"], None),
    ("leaker", ["leaker", "10", "100"], None),
    ("allocators", ["allocators", "2"], None),
    ("realloc_chain", ["realloc_chain", "20", "16", "8"], None),
    ("threads", ["threads", "4", "40", "64"], None),
    ("handoff", ["handoff", "3", "100", "2"], None),
    ("mmaps", ["mmaps", "1", "mapfile"], None),
    ("forker", ["forker", "@leaker", "2", "10", "2", "10", "2", "10"], None),
    ("killself", ["killself", "0", "40", "60"], None),
    ("sigalloc", ["sigalloc", "5", "2000", "3000"], None),
    ("key_dtor", ["key_dtor", "3", "1", "32"], None),
    ("jemalloc", ["jemalloc_api", "2"], None),
    ("cxx_new", ["cxx_new", "2"], None),
    ("depth1", ["threads", "2", "20", "32"], {"TRACKER_DEPTH": "1"}),
    ("nommap", ["mmaps", "1", "mapfile"], {"TRACKER_MMAP": "0"}),
    ("allocbench", ["@allocbench", "--threads", "2", "--pairs", "400", "--seed", "3"], None),
]


# ---- Synthetic captures ---------------------------------------------------
def synthetic_all_records():
    """Two program threads and the sampler, every record type, interleaved
    by seq across streams with watermarks between flushes."""
    a, b, s = Stream(), Stream(), Stream()
    a.thread(1, 100, 500)
    s.thread(2, 110, 502, flags=1)
    s.modules(3, 120, 1, 2)
    s.module(1, 0x400000, b"", bytes(range(20)), [(0, 0x1000, 5), (0x2000, 0x800, 6)])
    s.module(1, 0x7f0000000000, b"/lib/libc.so.6", b"", [(0, 0x200000, 5)])
    a.stack(1, 0, 0x401000)
    a.stack(2, 1, 0x401100)
    a.alloc(1, 4, 130, 0x10000, 64, 2)
    b.thread(5, 140, 501)
    b.thread_name(6, 141, 501, b"worker")
    b.stack(3, 1, 0x401200)
    b.alloc(2, 7, 150, 0x20000, 4096, 3)
    a.realloc(3, 8, 10, 160, 0x10000, 0x30000, 128, 2)
    b.free(13, 9, 165, 0x20000)
    s.rss(11, 170, 1 << 20, 1 << 21)
    a.mmap(12, 180, 0x7f1000000000, 8192, 3, 0x22, 0, 1)
    a.mremap(13, 14, 190, 0x7f1000000000, 8192, 0x7f2000000000, 16384, 1, 2)
    b.mmap(15, 200, 0x7f3000000000, 4096, 1, 2, 1, 0)
    b.munmap(16, 210, 0x7f3000000000, 4096)
    a.lost(17, 220, 3)
    a.free(1, 18, 230, 0x30000)
    b.thread_exit(19, 240)
    a.thread_name(20, 250, 502, b"tracker-sampler")
    a.thread_exit(21, 260)
    h = header()
    f = bytearray(h)
    f += chunk(DATA, s.take(), stream=3)
    pa = a.take()
    f += chunk(DATA, pa[:0], stream=1)  # an empty piece is legal
    f += chunk(DATA, pa, stream=1)
    f += chunk(WATERMARK, arg=5)
    pb = b.take()
    f += chunk(DATA, lz4_compress(pb), stream=2, codec=1, raw_len=len(pb))
    f += chunk(WATERMARK, arg=22)
    f += end_chunk(streams=3)
    return bytes(f)


def synthetic_many_streams(n=300):
    """Many short streams: the stream index grows several times; ids span
    the whole u32 range."""
    f = bytearray(header())
    seq = 1
    for i in range(n):
        st = Stream()
        st.thread(seq, seq, 1000 + i)
        st.alloc(1, seq + 1, seq + 1, 0x1000 * (i + 1), 16, 0)
        seq += 2
        sid = [0, 0xFFFFFFFF, 0x80000000][i] if i < 3 else i * 2654435761 % (1 << 32)
        f += chunk(DATA, st.take(), stream=sid)
        if i % 50 == 49:
            f += chunk(WATERMARK, arg=seq)
    f += end_chunk(streams=n)
    return bytes(f)


def synthetic_stacks():
    """Stack trie corner cases: a cycle, a self-parent, an undefined parent,
    a parent of 2^64-1, a huge id, redefinition, deep chain."""
    st = Stream()
    st.thread(1, 1, 7)
    for i in range(1, 300):
        st.stack(i, i - 1, 0x400000 + i)
    st.stack(400, 401, 0x500000)
    st.stack(401, 400, 0x500100)  # cycle
    st.stack(402, 402, 0x500200)  # self
    st.stack(403, 999999, 0x500300)  # undefined parent
    st.stack(404, (1 << 64) - 1, 0x500400)  # the reader's "undefined" marker
    st.stack(1 << 40, 1, 0x600000)  # far beyond any sane id
    st.stack(5, 0, 0x700000)  # redefinition
    seq = 2
    for sid in (299, 400, 402, 403, 404, 1 << 40, 5, 77777):
        st.alloc(1, seq, seq, 0x9000 + seq * 16, 8, sid)
        seq += 1
    f = header() + chunk(DATA, st.take(), stream=1) + end_chunk()
    return f


def synthetic_module_limits():
    st = Stream()
    st.thread(1, 1, 7)
    st.modules(2, 2, 1, 3)
    st.module(1, 1, b"/" + b"p" * 4095, bytes(64), [(i, i, i) for i in range(16)])
    st.module(1, 2, b"", b"", [])
    st.module(1, 3, b"x\0y", b"\x01", [(1 << 63, (1 << 64) - 1, 0xFFFFFFFF)])
    st.thread_name(3, 3, 7, b"n" * 64)
    ok = st.take()
    bad = Stream()
    bad.seq, bad.ts = 3, 3
    bad.module(1, 4, b"q", bytes(65), [])  # build-id over the cap: stream breaks
    f = header() + chunk(DATA, ok + bad.take(), stream=1) + end_chunk()
    return f


def synthetic_exec_then_more():
    """END followed by more chunks (a failed exec), then a final END."""
    st = Stream()
    st.thread(1, 1, 7)
    st.alloc(1, 2, 2, 0x1000, 10, 0)
    p1 = st.take()
    st.free(1, 3, 3, 0x1000)
    p2 = st.take()
    f = bytearray(header())
    f += chunk(DATA, p1, stream=1) + end_chunk(reason=1)
    f += chunk(DATA, p2, stream=1, arg=len(p1)) + end_chunk(reason=0, lost=5)
    return bytes(f)


def synthetic_order_violation():
    """Two streams whose watermark lies: a later chunk brings smaller seqs
    than events already released."""
    a, b = Stream(), Stream()
    a.thread(1, 1, 1)
    for i in range(2, 40, 2):
        a.alloc(1, i, i, 0x1000 + i * 64, 16, 0)
    b.thread(3, 1, 2)
    for i in range(5, 40, 2):
        b.free(13, i, i, 0x1000 + (i - 3) * 64)
    f = bytearray(header())
    f += chunk(DATA, a.take(), stream=1) + chunk(WATERMARK, arg=1 << 62)
    f += chunk(DATA, b.take(), stream=2) + end_chunk(streams=2)
    return bytes(f)


def fork_tlv(seq, parent_pid, name):
    return (6, struct.pack("<QI", seq, parent_pid) + name)


def synthetic_fork_parent():
    """A parent image: blocks live and freed before and after the fork at
    seq 10 (syn_fork_child names this file)."""
    st = Stream()
    st.thread(1, 1, 1000)
    for i in range(2, 8):
        st.alloc(1, i, i, 0x1000 * i, 100 * i, 0)
    st.free(13, 8, 8, 0x2000)
    st.realloc(3, 9, 11, 9, 0x3000, 0x9000, 50, 0)  # its release before the fork
    st.free(13, 12, 12, 0x4000)                     # after the fork: still inherited
    return header(version=3) + chunk(DATA, st.take(), stream=1) + end_chunk()


def synthetic_fork_child():
    """A fork child of syn_fork_parent (FORK TLV, format 3) freeing inherited
    blocks and one it never had."""
    st = Stream()
    st.thread(10, 20, 1001)
    st.free(13, 11, 21, 0x4000)
    st.free(24, 12, 22, 0x5000)
    st.free(13, 13, 23, 0xdead0)
    st.alloc(22, 14, 24, 0x8000, 64, 0)
    st.free(25, 15, 25, 0x8000)
    tl = [(1, b"prog\0"), fork_tlv(10, 1000, b"syn_fork_parent.bin")]
    return header(pid=1001, ppid=1000, tlvs=tl, version=3) + chunk(DATA, st.take(), stream=1) \
        + end_chunk()


def synthetic_fork_self():
    """A FORK TLV naming the file itself: the reader must stop following."""
    st = Stream()
    st.thread(10, 20, 1001)
    st.alloc(1, 11, 21, 0x1000, 8, 0)
    tl = [fork_tlv(12, 1001, b"syn_fork_self.bin")]
    return header(pid=1001, tlvs=tl, version=3) + chunk(DATA, st.take(), stream=1) + end_chunk()


def synthetic_fork_bad_tlv():
    """FORK TLVs a writer never makes (short, a path, seq 0): ignored."""
    tl = [(6, b"\1\0"), fork_tlv(5, 1, b"../x.bin"), fork_tlv(0, 1, b"x.bin"),
          fork_tlv(5, 1, b"a\0b")]
    st = Stream()
    st.thread(1, 1, 1)
    st.free(13, 2, 2, 0x1000)
    return header(tlvs=tl, version=3) + chunk(DATA, st.take(), stream=1) + end_chunk()


def synthetic_linked():
    """Version 6: a stream's second and third pieces are linked LZ4 blocks
    (codec 3) that repeat bytes of the pieces before them, the third
    reaching back across the second into the first; a second stream starts
    with one (empty history)."""
    st = Stream()
    st.thread(1, 1, 77)
    seq = 2
    pieces = []
    for rnd in range(3):
        for i in range(40):
            st.alloc(1, seq, seq, 0x10000 + 16 * (i % 5), 32 + i % 7, 0)
            st.free(13, seq + 1, seq + 1, 0x10000 + 16 * (i % 5))
            seq += 2
        pieces.append(st.take())
    other = Stream()
    other.thread(seq, seq, 78)
    for i in range(30):
        other.alloc(1, seq + 1 + i, seq + 1 + i, 0x20000, 64, 0)
    f = bytearray(header(version=6))
    hist, off = b"", 0
    for k, p in enumerate(pieces):
        if k == 0:
            f += chunk(DATA, p, stream=1, arg=0)
        else:
            z = lz4_compress_linked(p, hist)
            assert lz4_decompress_linked(z, len(p), hist) == p
            f += chunk(DATA, z, stream=1, arg=off, codec=3, raw_len=len(p))
        hist += p
        off += len(p)
    op = other.take()
    f += chunk(DATA, lz4_compress_linked(op, b""), stream=2, arg=0, codec=3, raw_len=len(op))
    f += chunk(WATERMARK, arg=1 << 40)
    f += end_chunk(streams=2)
    return bytes(f)


def synthetic_huge_values():
    """Saturating arithmetic in stats: sizes and addresses near 2^64."""
    st = Stream()
    st.thread(1, 1, 7)
    top = (1 << 64) - 4096
    st.alloc(1, 2, 2, top, (1 << 64) - 1, 0)
    st.alloc(1, 3, 3, 1, (1 << 63), 0)
    st.free(1, 4, 4, 1)
    st.mmap(5, 5, top, (1 << 64) - 1, 3, 0x22, 0, 0)
    st.mremap(6, 7, 6, top, 1 << 63, 0, (1 << 64) - 1, 4, 0)  # DONTUNMAP
    st.munmap(8, 8, 0, (1 << 64) - 1)
    st.mremap(9, (1 << 64) - 1, 9, 4096, 4096, 8192, 4096, 0, 0)
    st.rss(10 ** 18, 10, (1 << 64) - 1, (1 << 64) - 1)
    f = header(page=3, clock_base=(1 << 64) - 1) + chunk(DATA, st.take(), stream=1)
    return f + end_chunk(end_ts=0)


def synthetic_many_remaps(n=1040):
    """More MREMAP_OLD halves waiting for their MREMAP_NEW than stats keeps
    pending: one stream per mremap, every seq2 above every seq."""
    f = bytearray(header())
    for i in range(n):
        st = Stream()
        st.mremap(i + 1, 10**6 + i, i, 0x10000 * (i + 1), 4096, 0x20000000 + i * 4096, 4096, 1, 0)
        f += chunk(DATA, st.take(), stream=i + 1)
    return bytes(f + end_chunk(streams=n))


def gpu_stream(tid=9):
    """Every GPU record (docs/FORMAT.md §4): each kind and op, an unknown
    device, a free without kind, driver scopes (nested, and an EXIT without
    ENTER) around host events, device ordinals out of range."""
    st = Stream()
    st.thread(1, 1, tid)
    st.gpu_scope(True)
    st.alloc(1, 2, 2, 0x5000, 4096, 0)  # made by the driver
    st.gpu_scope(True)
    st.mmap(3, 3, 0x7f5000000000, 1 << 21, 3, 0x22, 0, 0)
    st.gpu_scope(False)
    st.gpu_alloc(4, 4, 1, 1, 0, 0x700000000, 1 << 20, 0, 0)
    st.gpu_scope(False)
    st.gpu_scope(False)  # EXIT without ENTER
    st.free(1, 5, 5, 0x5000)
    seq = 6
    for kind in range(1, 10):
        st.gpu_alloc(seq, seq, 64 + kind, kind, kind - 2, 0x800000000 + kind * 0x100000,
                     kind * 4096, kind, 0)
        st.gpu_free(seq + 1, seq + 1, 65, kind if kind % 2 else 0, -1,
                    0x800000000 + kind * 0x100000)
        seq += 2
    st.gpu_fail(seq, seq, 1, 1, 0, 1 << 40, 2, 0)
    st.gpu_alloc(seq + 1, seq + 1, 13, 5, 1, 0x1234, 1 << 21, 0, 0)  # VMM handle
    st.gpu_map(seq + 2, seq + 2, 15, 1, 1, 0x900000000, 1 << 21, 0x1234, 0)
    st.gpu_map(seq + 3, seq + 3, 16, 2, 1, 0x900000000, 1 << 21, 0x1234, 0)
    st.gpu_meminfo(seq + 4, seq + 4, 0, 1 << 30, 80 << 30)
    st.gpu_meminfo(seq + 5, seq + 5, (1 << 64) - 1, 1, 2)  # device wraps negative
    st.gpu_alloc(seq + 6, seq + 6, 1, 1, 1 << 40, 0xa00000000, 64, 0, 0)  # ordinal out of range
    return st.take()


def synthetic_gpu():
    return header() + chunk(DATA, gpu_stream(), stream=1) + end_chunk()


# ---- Derived corruptions ---------------------------------------------------
def corruptions(base):
    """(name, bytes) variants of a well-formed stored capture `base`."""
    h, cs = parse(base)
    hl = len(h)
    out = []
    data_idx = [i for i, c in enumerate(cs) if c["type"] == DATA]
    first = cs[data_idx[0]]
    out.append(("empty", b""))
    out.append(("magic_only", MAGIC))
    out.append(("bad_magic", b"\x89TRX" + base[4:]))
    # One past the reader's version, header CRC valid: refused for the
    # version alone (docs/FORMAT.md §1), not for a checksum.
    newer = bytearray(h)
    struct.pack_into("<H", newer, 8, FMT_VERSION + 1)
    struct.pack_into("<I", newer, hl - 4, crc32c(bytes(newer[:hl - 4])))
    out.append(("version_newer", bytes(newer) + base[hl:]))
    out.append(("version0", base[:8] + b"\x00\x00" + base[10:]))
    out.append(("trunc_fixed_header", base[:40]))
    out.append(("trunc_tlvs", base[:hl - 6]))
    big = bytearray(h)
    struct.pack_into("<I", big, 12, 1 << 21)
    out.append(("header_len_huge", bytes(big) + base[hl:]))
    bad_tlv = header(tlvs=[(1, b"a\0b"), (9, b"unknown tag")])
    bad_tlv = bytearray(bad_tlv)
    struct.pack_into("<I", bad_tlv, 64 + 4, 1000)  # TLV longer than the header
    struct.pack_into("<I", bad_tlv, len(bad_tlv) - 4, crc32c(bytes(bad_tlv[:-4])))
    out.append(("tlv_overflow", bytes(bad_tlv) + base[hl:]))
    out.append(("tlv_odd", header(tlvs=[(1, b"no-final-nul"), (1, b"\0\0\0"), (2, b""),
                                        (77, b"x" * 30)]) + base[hl:]))
    hc = bytearray(base)
    hc[20] ^= 1
    out.append(("header_crc", bytes(hc)))
    out.append(("trunc_after_header", base[:hl]))
    out.append(("trunc_chunk_head", base[:first["off"] + 20]))
    out.append(("trunc_chunk_magic", base[:first["off"] + 3]))
    out.append(("trunc_payload", base[:first["off"] + HEAD + max(1, len(first["payload"]) // 2)]))
    out.append(("trunc_no_end", base[:cs[-1]["off"]]))
    out.append(("trunc_inside_end", base[:cs[-1]["off"] + HEAD + 1]))
    flip = bytearray(base)
    flip[first["off"] + HEAD + len(first["payload"]) // 2] ^= 0x10
    out.append(("crc_mismatch_payload", bytes(flip)))
    flip = bytearray(base)
    flip[first["off"] + 13] ^= 0x40  # stored_len: a length no writer makes
    out.append(("crc_mismatch_length", bytes(flip)))
    junk = base[:first["end"]] + b"TKC" + b"\xff" * 40 + b"TK" + base[first["end"]:]
    out.append(("junk_between_chunks", junk))
    out.append(("junk_tail", base + b"TKCH\x01\x00"))
    # Framing-valid edits (CRCs recomputed).
    def edited(name, fn):
        c2 = [dict(c) for c in cs]
        res = fn(c2)
        out.append((name, rebuild(h, res if res is not None else c2)))
    edited("dup_chunk", lambda c: c[:data_idx[0] + 1] + [dict(first)] + c[data_idx[0] + 1:])
    edited("offset_gap", lambda c: c[data_idx[-1]].update(arg=c[data_idx[-1]]["arg"] + 1))
    edited("reorder", lambda c: c[:data_idx[0]] + c[data_idx[0] + 1:data_idx[-1] + 1]
           + [c[data_idx[0]]] + c[data_idx[-1] + 1:])
    edited("type_unknown", lambda c: c[data_idx[0]].update(type=9))
    edited("codec_unknown", lambda c: c[data_idx[0]].update(codec=7))
    edited("raw_len_mismatch", lambda c: c[data_idx[0]].update(raw_override=len(first["payload"]) + 1))
    edited("raw_len_over_max", lambda c: c[data_idx[0]].update(raw_override=(16 << 20) + 1))
    edited("lz4_garbage", lambda c: c[data_idx[0]].update(codec=1, raw_override=4096,
                                                          payload=b"\xf0" + b"\x00" * 15))
    edited("lz4_empty_raw", lambda c: c[data_idx[0]].update(codec=1, raw_override=0))
    edited("watermark_max", lambda c: c[:1] + [dict(type=WATERMARK, codec=0, stream=0, raw=0,
                                                    arg=(1 << 64) - 1, payload=b"")] + c[1:])
    edited("end_short", lambda c: c[-1].update(payload=uv(5)))
    edited("end_not_last", lambda c: c + [dict(type=WATERMARK, codec=0, stream=0, raw=0,
                                               arg=3, payload=b"")])
    for tag, name in ((0xFF, "tag_unknown"), (0x20, "kind_zero"), (0x32, "kind_over_max")):
        p = bytearray(first["payload"])
        p[len(p) // 2] = tag
        edited("record_" + name, lambda c, p=p: c[data_idx[0]].update(payload=bytes(p)))
    p = first["payload"]
    edited("record_cut", lambda c: c[data_idx[0]].update(payload=p[:-1]))
    edited("record_seqd_zero", lambda c: c[data_idx[0]].update(payload=p + b"\x21\x00\x00\x00\x00\x00"))
    edited("varint_overlong", lambda c: c[data_idx[0]].update(payload=p + b"\x21" + b"\xff" * 11))
    return out


def record_seeds():
    """Hand-made streams for fuzz_record: every record type, limits."""
    st = Stream()
    st.thread(1, 5, 42, 1)
    st.thread_name(2, 6, 42, b"main")
    st.stack(1, 0, 0x401000)
    st.stack(2, 1, 0x400ff0)
    st.modules(3, 7, 1, 1)
    st.module(1, 0x555555554000, b"/bin/x", b"\xab" * 20, [(0, 4096, 5)])
    for k in range(1, 18):
        st.alloc(k, 3 + 3 * k, 8, 0x1000 * k, k * 8, 2)
        st.realloc(k, 4 + 3 * k, 5 + 3 * k, 9, 0x1000 * k, 0x1000 * k + 64, k * 16, 1)
    for k in range(1, 18):
        st.free(k, 100 + k, 50 - k, 0x1000 * k + 64)
    st.mmap(200, 60, 0x7f0000000000, 8192, 3, 0x22, 0, 2)
    st.mmap(201, 61, 0x7f0000100000, 4096, 1, 2, 1, 0)
    st.mremap(202, 203, 62, 0x7f0000000000, 8192, 0x7f0000200000, 16384, 3, 1)
    st.mremap(204, 205, 63, 0x7f0000200000, 16384, 0x7f0000300000, 16384, 7, 1)
    st.munmap(206, 64, 0x7f0000300000, 16384)
    st.rss(207, 65, 123456, 654321)
    st.lost(208, 66, 9)
    st.thread_exit(209, 67)
    every = st.take()
    seeds = [("every_record", every)]
    lim = Stream()
    lim.thread_name(1, 1, 1, b"n" * 64)
    lim.module(1, 2, b"/" * 4096, bytes(64), [(1, 2, 3)] * 16)
    lim.alloc(1, (1 << 64) - 2, (1 << 63), (1 << 64) - 1, (1 << 64) - 1, (1 << 64) - 1)
    seeds.append(("limits", lim.take()))
    over = Stream()
    over.thread_name(1, 1, 1, b"n" * 65)
    seeds.append(("name_over_cap", over.take()))
    seeds.append(("nonminimal_varints", b"\x21\x81\x80\x80\x00\x80\x00\x80\x80\x00\x80\x00\x00"))
    seeds.append(("free_then_garbage", b"\x41\x01\x00\x02" + b"\x00\xff\x60\x01"))
    seeds.append(("gpu", gpu_stream()))
    bad = Stream()
    bad.gpu(0x0F, 1, 1, 15, 3, 0)  # GPU_MAP op 3: refused
    seeds.append(("gpu_map_bad_op", bad.take() + b"\x00" * 4))
    nodes = Stream()  # version 5: chains, jumps, Python frames, both forms
    py = 1 << 63
    nodes.node(1, 0, 0x401000)
    nodes.node(2, 1, py | 3 << 24 | 10)
    nodes.node(3, 2, 0x401400)
    nodes.node(4, 1, py | 7 << 24 | 2)
    nodes.node(9, 4, 0x402000)
    nodes.stack(5, 0, py | 1 << 24 | 1)
    nodes.node(10, 5, 0x400800)
    nodes.node(11, 0, py | ((1 << 39) - 1) << 24 | 0xFFFFFF)
    nodes.alloc(1, 1, 0, 0x10000, 32, 11)
    seeds.append(("node_records", nodes.take()))
    return seeds


# ---- Main -----------------------------------------------------------------
def write(d, name, data, written):
    if len(data) > MAX_FILE:
        print("skip %s: %d bytes" % (name, len(data)), file=sys.stderr)
        return
    path = os.path.join(d, name + ".bin")
    with open(path, "wb") as f:
        f.write(data)
    written.append((path, len(data)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", help="build dir with tracker and the test programs")
    ap.add_argument("--synthetic-only", action="store_true",
                    help="rewrite only the synthetic files (no recording, no derived files)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus"))
    args = ap.parse_args()
    if not args.build and not args.synthetic_only:
        ap.error("--build is needed unless --synthetic-only")
    build = os.path.abspath(args.build or ".")
    rdir, cdir = os.path.join(args.out, "reader"), os.path.join(args.out, "record")
    os.makedirs(rdir, exist_ok=True)
    os.makedirs(cdir, exist_ok=True)
    written = []
    captures = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, argv, env in [] if args.synthetic_only else PROGRAMS:
            argv = list(argv)
            argv = [os.path.join(build, "tests", "integration", a[1:]) if a == "@leaker"
                    else os.path.join(build, "bench", a[1:]) if a == "@allocbench" else a
                    for a in argv]
            captures += record(build, tmp, name, argv, env)
    for name, data in captures:
        write(rdir, "cap_" + name, data, written)
        try:
            stored = stored_form(data)
        except ValueError:
            continue  # truncated (killself): kept only as recorded
        if stored != data:
            write(rdir, "stored_" + name, stored, written)
        for sid, raw in sorted(streams_of(data).items()):
            if raw and len(raw) <= MAX_FILE and (name in ("threads", "allocators", "mmaps",
                                                           "allocbench", "jemalloc")):
                write(cdir, "stream_%s_%d" % (name, sid & 0xFF), raw, written)
    base = dict(captures).get("threads")
    if base:
        for name, data in corruptions(stored_form(base)):
            write(rdir, "bad_" + name, data, written)
    for name, fn in (("all_records", synthetic_all_records), ("many_streams", synthetic_many_streams),
                     ("stacks", synthetic_stacks), ("module_limits", synthetic_module_limits),
                     ("exec_then_more", synthetic_exec_then_more),
                     ("order_violation", synthetic_order_violation),
                     ("huge_values", synthetic_huge_values), ("linked", synthetic_linked),
                     ("many_remaps", synthetic_many_remaps), ("gpu", synthetic_gpu),
                     ("fork_parent", synthetic_fork_parent), ("fork_child", synthetic_fork_child),
                     ("fork_self", synthetic_fork_self), ("fork_bad_tlv", synthetic_fork_bad_tlv)):
        write(rdir, "syn_" + name, fn(), written)
    for name, data in record_seeds():
        write(cdir, "syn_" + name, data, written)
    total = sum(n for _, n in written)
    print("%d files, %d bytes" % (len(written), total))


if __name__ == "__main__":
    main()
