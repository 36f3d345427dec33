#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_format.py - the capture format as docs/FORMAT.md states it, checked
against the files real writers made and against a reader built from the
installed library only:

- tests/golden/v<N>.bin, written by the real writer of each format version,
  still give the `tracker stats --json` recorded beside them (v<N>.stats.json;
  every key recorded there must match exactly: the values derive from the
  file alone, so nothing depends on this machine);
- a capture of a newer version is refused with one line naming both
  versions, before its checksum is looked at; the fuzz corpus's newer-version
  seed is refused for its version;
- reserved fields (§1, §2) are written as zero by every writer, and a reader
  refuses a header whose reserved fields are not, and skips such a chunk as a
  bad chunk;
- a program outside the project compiles against a staged `meson install`
  (<tracker/reader.h>, pkg-config trkreader) and reads a golden capture."""

import glob
import json
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, eq, main  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "golden")
CORPUS = os.path.join(HERE, "..", "fuzz", "corpus", "reader")
VERSIONS = (1, 2, 3, 4, 5, 6, 7)
READER_VERSION = 7
DATA, WATERMARK, END = 1, 2, 3

_T = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _T.append(_c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _T[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def golden(v):
    with open(os.path.join(GOLDEN, "v%d.bin" % v), "rb") as f:
        return bytearray(f.read())


def reseal_header(data):
    """Recomputes the header CRC after an edit, so only the edit is wrong."""
    hl = struct.unpack_from("<I", data, 12)[0]
    struct.pack_into("<I", data, hl - 4, crc32c(bytes(data[:hl - 4])))
    return data


def tlvs(data):
    """[(offset, tag, reserved, len)] of the header's TLVs."""
    hl = struct.unpack_from("<I", data, 12)[0]
    p, out = 64, []
    while p < hl - 4:
        tag, res, ln = struct.unpack_from("<HHI", data, p)
        out.append((p, tag, res, ln))
        p += 8 + ln
    eq(p, hl - 4, "TLVs end at the header CRC")
    return out


def chunks(data):
    """[dict] of every chunk of a whole, well-formed capture."""
    p = struct.unpack_from("<I", data, 12)[0]
    out = []
    while p < len(data):
        eq(bytes(data[p:p + 4]), b"TKCH", "chunk magic at %d" % p)
        res, stream, stored = struct.unpack_from("<HII", data, p + 6)
        arg = struct.unpack_from("<Q", data, p + 24)[0]
        out.append(dict(off=p, type=data[p + 4], reserved=res, stream=stream, stored=stored,
                        arg=arg))
        p += 32 + stored
    eq(p, len(data), "chunks end with the file")
    return out


def reseal_chunk(data, c):
    p, n = c["off"], c["stored"]
    crc = crc32c(bytes(data[p + 4:p + 20]) + bytes(data[p + 24:p + 32 + n]))
    struct.pack_into("<I", data, p + 20, crc)
    return data


def write(env, name, data):
    path = os.path.join(env.tmpdir(name), "cap.bin")
    with open(path, "wb") as f:
        f.write(bytes(data))
    return path


def refused(env, path):
    """Runs `tracker stats` on a capture it must refuse; returns stderr."""
    cp = env.run_raw([env.tracker, "stats", "--json", path], timeout=60)
    err = cp.stderr.decode(errors="replace").strip()
    check(cp.returncode != 0, "%s: accepted, stdout %r" % (path, cp.stdout[:200]))
    eq(cp.stdout, b"", "nothing on stdout for a refused capture")
    eq(len(err.splitlines()), 1, "one line on stderr: %r" % err)
    return err


def test_golden_stats(env):
    for v in VERSIONS:
        path = os.path.join(GOLDEN, "v%d.bin" % v)
        eq(struct.unpack_from("<H", golden(v), 8)[0], v, "version field of %s" % path)
        with open(os.path.join(GOLDEN, "v%d.stats.json" % v)) as f:
            want = json.load(f)
        got = env.stats(path)
        for key, value in want.items():
            eq(got.get(key), value, "v%d.bin: stats %s" % (v, key))


def test_golden_versions_read_alike(env):
    """The goldens record the same program (allocators 1): every version
    must give the same heap figures."""
    keys = ("allocations", "frees", "bytes_allocated", "peak_heap_bytes", "leaked_bytes",
            "by_allocator", "threads", "truncated", "checksum_failures", "bad_chunks",
            "broken_streams", "missing_chunks")
    last = VERSIONS[-1]
    base = env.stats(os.path.join(GOLDEN, "v%d.bin" % last))
    for v in VERSIONS[:-1]:
        st = env.stats(os.path.join(GOLDEN, "v%d.bin" % v))
        for k in keys:
            eq(st[k], base[k], "v%d.bin vs v%d.bin: %s" % (v, last, k))


def test_newer_version_refused(env):
    want = "capture version %d is newer than this reader (%d)" % (READER_VERSION + 1,
                                                                  READER_VERSION)
    data = golden(READER_VERSION)
    struct.pack_into("<H", data, 8, READER_VERSION + 1)
    stale = write(env, "stale", data)  # the version is checked before the CRC
    sealed = write(env, "sealed", reseal_header(bytearray(data)))
    for path in (stale, sealed):
        err = refused(env, path)
        eq(err, "tracker: %s: %s" % (path, want), "message for a newer capture")
    struct.pack_into("<H", data, 8, 0xFFFF)
    err = refused(env, write(env, "max", reseal_header(data)))
    check("capture version 65535 is newer than this reader (%d)" % READER_VERSION in err, err)


def test_corpus_newer_version_seed(env):
    """The fuzz corpus's newer-version seed must be refused for its version,
    not for a checksum (it once was a version 2 file, valid since)."""
    seeds = [p for p in glob.glob(os.path.join(CORPUS, "bad_version*.bin"))
             if not p.endswith("bad_version0.bin")]
    eq(len(seeds), 1, "one newer-version seed in the corpus: %s" % seeds)
    err = refused(env, seeds[0])
    check("is newer than this reader (%d)" % READER_VERSION in err, err)
    err = refused(env, os.path.join(CORPUS, "bad_version0.bin"))
    check("unsupported capture version 0" in err, err)


def test_writers_write_reserved_zero(env):
    """Every reserved field is zero in what today's writer and the writers
    of the golden versions wrote (FORMAT.md §1, §2)."""
    _, out, _ = env.run([env.prog("leaker"), "3", "10"])
    with open(out, "rb") as f:
        files = [("today", bytearray(f.read()))] + [("v%d" % v, golden(v)) for v in VERSIONS]
    for name, data in files:
        eq(struct.unpack_from("<H", data, 10)[0], 0, "%s: header flags" % name)
        for off, tag, res, _ in tlvs(data):
            eq(res, 0, "%s: TLV %d at %d reserved field" % (name, tag, off))
        cs = chunks(data)
        check(any(c["type"] == END for c in cs), "%s: has an END" % name)
        for c in cs:
            eq(c["reserved"], 0, "%s: chunk at %d reserved" % (name, c["off"]))
            if c["type"] != DATA:
                eq(c["stream"], 0, "%s: type %d chunk's stream" % (name, c["type"]))
            if c["type"] == END:
                eq(c["arg"], 0, "%s: END arg" % name)


def test_reserved_header_fields_refused(env):
    data = golden(3)
    struct.pack_into("<H", data, 10, 1)
    err = refused(env, write(env, "flags", reseal_header(data)))
    check("corrupt header (reserved flags 0x0001)" in err, err)
    data = golden(3)
    off, tag = tlvs(data)[0][:2]
    struct.pack_into("<H", data, off + 2, 0x100)
    err = refused(env, write(env, "tlv", reseal_header(data)))
    check("corrupt header (TLV %d reserved field 0x0100)" % tag in err, err)


def test_reserved_chunk_fields_skip_the_chunk(env):
    clean = env.stats(os.path.join(GOLDEN, "v3.bin"))
    eq(clean["bad_chunks"], 0, "golden v3 has no bad chunk")

    def edited(label, pick, field, value):
        data = golden(3)
        cs = chunks(data)
        c = pick(cs)
        fmt, at = {"reserved": ("<H", 6), "stream": ("<I", 8), "arg": ("<Q", 24)}[field]
        struct.pack_into(fmt, data, c["off"] + at, value)
        return env.stats(write(env, label, reseal_chunk(data, c)), allow_truncated=True)

    st = edited("data", lambda cs: [c for c in cs if c["type"] == DATA][0], "reserved", 1)
    eq((st["bad_chunks"], st["broken_streams"], st["checksum_failures"]), (1, 1, 0),
       "DATA chunk with reserved bits: (bad chunks, broken streams, checksum failures)")
    check(st["allocations"] < clean["allocations"], "its events are not read")
    wms = lambda cs: [c for c in cs if c["type"] == WATERMARK][0]  # noqa: E731
    st = edited("wm", wms, "stream", 5)
    eq((st["bad_chunks"], st["broken_streams"], st["truncated"]), (1, 0, False),
       "WATERMARK with a stream: (bad chunks, broken streams, truncated)")
    eq(st["allocations"], clean["allocations"], "every event still read")
    st = edited("end", lambda cs: cs[-1], "arg", 1)
    eq((st["bad_chunks"], st["truncated"]), (1, True),
       "END with an arg: skipped, so no trailer: (bad chunks, truncated)")
    st = edited("endres", lambda cs: cs[-1], "reserved", 0x8000)
    eq((st["bad_chunks"], st["truncated"]), (1, True), "END with reserved bits")


def test_codec4_damage(env):
    """A damaged codec-4 (linked zstd) piece is a bad chunk that breaks its
    stream, read past with no crash: a frame whose magic or header was hit,
    or whose raw_len is off by one; and a codec-4 chunk in a version-6
    file, where the codec did not exist yet (FORMAT.md §2)."""
    clean = env.stats(os.path.join(GOLDEN, "v7.bin"))
    data = golden(7)
    z = [c for c in chunks(data) if c["type"] == DATA and data[c["off"] + 5] == 4]
    eq(len(z), 1, "golden v7: its main stream's piece is codec 4")
    c = z[0]

    def damaged(label, edit, src=7, pick=None):
        d = golden(src)
        ch = pick(d) if pick else c
        edit(d, ch)
        st = env.stats(write(env, label, reseal_chunk(d, ch)), allow_truncated=True)
        eq((st["bad_chunks"], st["broken_streams"], st["checksum_failures"]), (1, 1, 0),
           "%s: (bad chunks, broken streams, checksum failures)" % label)
        check(st["allocations"] < clean["allocations"], "%s: its events are not read" % label)

    def flip(at):
        return lambda d, ch: d.__setitem__(ch["off"] + 32 + at, d[ch["off"] + 32 + at] ^ 0x55)

    damaged("zstd_magic", flip(0))
    damaged("zstd_frame_header", flip(4))
    damaged("raw_len", lambda d, ch: struct.pack_into(
        "<I", d, ch["off"] + 16, struct.unpack_from("<I", d, ch["off"] + 16)[0] + 1))
    damaged("v6_codec4", lambda d, ch: d.__setitem__(ch["off"] + 5, 4), src=6,
            pick=lambda d: [x for x in chunks(d) if x["type"] == DATA and d[x["off"] + 5] == 3][0])


def test_third_party_build(env):
    """A program outside the project builds against the staged install of
    the reader library alone and reads the newest golden capture."""
    build = os.path.dirname(env.tracker)  # tracker lies at the top of the build dir
    tools = {t: shutil.which(t) for t in ("meson", "pkg-config")}
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not all(tools.values()) or not cc:
        raise Skip("needs meson, pkg-config and a C compiler: %s cc=%s" % (tools, cc))
    stage = env.tmpdir("stage")
    cp = env.run_raw([tools["meson"], "install", "-C", build, "--destdir", stage, "--no-rebuild",
                      "--tags", "devel"], timeout=300)
    eq(cp.returncode, 0, "meson install: %s" % cp.stderr.decode(errors="replace"))
    pcs = glob.glob(os.path.join(stage, "**", "pkgconfig", "trkreader.pc"), recursive=True)
    eq(len(pcs), 1, "one trkreader.pc staged")
    check(glob.glob(os.path.join(stage, "**", "include", "tracker", "reader.h"), recursive=True),
          "tracker/reader.h staged")
    pc_env = {"PKG_CONFIG_PATH": os.path.dirname(pcs[0]), "PKG_CONFIG_SYSROOT_DIR": stage}
    cp = env.run_raw([tools["pkg-config"], "--cflags", "--libs", "--static", "trkreader"],
                     env=pc_env)
    eq(cp.returncode, 0, "pkg-config trkreader: %s" % cp.stderr.decode(errors="replace"))
    flags = cp.stdout.decode().split()
    check(any(f.startswith("-I" + stage) for f in flags), "include dir from the stage: %s" % flags)
    # A sanitized build installs a sanitized library: link its runtime too.
    with open(os.path.join(build, "meson-info", "intro-buildoptions.json")) as f:
        san = [o["value"] for o in json.load(f) if o["name"] == "b_sanitize"]
    if san and san[0] != "none":
        flags.append("-fsanitize=" + san[0])
    exe = os.path.join(env.tmpdir("prog"), "third_party")
    src = os.path.join(GOLDEN, "third_party.c")
    # Only the staged include dir: nothing of the source tree is visible.
    cp = env.run_raw([cc, "-std=c17", "-Wall", "-Wextra", "-Werror", src, "-o", exe] + flags,
                     timeout=120)
    eq(cp.returncode, 0, "third-party build: %s" % cp.stderr.decode(errors="replace"))
    path = os.path.join(GOLDEN, "v%d.bin" % READER_VERSION)
    cp = env.run_raw([exe, path], timeout=60)
    eq(cp.returncode, 0, "third_party ran: %s" % cp.stderr.decode(errors="replace"))
    got = dict(line.split("=", 1) for line in cp.stdout.decode().split())
    st = env.stats(path)
    eq(got["reader_version"], str(READER_VERSION), "TRK_READER_FORMAT_VERSION")
    eq(got["version"], str(READER_VERSION), "header version")
    eq(int(got["pid"]), st["pid"], "pid")
    eq(int(got["events"]), st["events"], "events")
    eq(int(got["allocations"]), st["allocations"], "allocations")
    eq(int(got["frees"]), st["frees"], "frees")
    eq(int(got["bytes"]), st["bytes_allocated"], "bytes allocated")
    eq(got["truncated"], "0", "truncated")


if __name__ == "__main__":
    sys.exit(main(globals()))
