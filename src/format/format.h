/* SPDX-License-Identifier: MIT
 *
 * format.h - every on-disk constant of the capture format, in one place.
 *
 * docs/FORMAT.md is the normative text (where this header or the code that
 * uses it disagrees, the code is wrong); this header is its mirror in C. Nothing
 * here is an in-memory-only value: constants named TRK_FMT_*, TRK_CHUNK_*,
 * TRK_REC_*, TRK_ALLOC_* and TRK_TLV_* are written to disk and must never be
 * renumbered. Everything is little-endian regardless of the host.
 *
 * NOTE: when adding a record tag or allocator id, update docs/FORMAT.md
 * (its §9 says when the version changes), src/format/record.c (names),
 * src/reader/decode.c and tests/unit/test_codec.c; a new version also gets a
 * golden capture in tests/golden/.
 */
#ifndef TRK_FORMAT_H
#define TRK_FORMAT_H

#include <stdint.h>

/* The format version. Bump it when a reader of the previous version would
 * misread a new file; readers refuse files whose version is newer than theirs,
 * naming both versions. */
#define TRK_FMT_VERSION 7
/* The oldest version this reader still reads: version 2 only added records
 * (Python frames, imports, marks) and allocator ids, version 3 the C++
 * allocator ids and the FORK header TLV, version 4 the compact heap records
 * (tags 0x80..0xFF, unused before), version 5 the node records (tags
 * 0x18..0x1C, unused before), version 6 the linked LZ4 codec (codec 3,
 * unused before), version 7 the linked zstd codec (codec 4, unused
 * before), so a file of any version is a valid file of every later one. */
#define TRK_FMT_VERSION_MIN 1

/* ---- File header -------------------------------------------------------
 *
 *   0      8  magic            89 54 52 4B 0D 0A 1A 0A  ("\x89TRK\r\n\x1a\n")
 *   8      2  version          TRK_FMT_VERSION
 *  10      2  flags            reserved, 0 (readers refuse a header where it is not)
 *  12      4  header_len       bytes of the whole header, fixed part + TLVs + crc
 *  16      4  pid
 *  20      4  ppid
 *  24      4  root_pid         pid of the first process of this capture set
 *  28      4  page_size
 *  32      8  start_realtime   CLOCK_REALTIME at start, ns since the epoch
 *  40      8  clock_base       CLOCK_MONOTONIC at start, ns (records use this clock)
 *  48      8  session          random id shared by every capture of one `tracker run`
 *  56      4  max_depth        stack depth cap in frames
 *  60      4  options          TRK_OPT_* bits
 *  64      .  TLVs             { u16 tag, u16 zero (checked), u32 len, len bytes }*
 *  n-4     4  crc32c           of bytes [0, header_len - 4)
 *
 * The magic's high first byte and CR LF / ^Z / LF catch 7-bit and newline
 * mangling the way PNG's does.
 */
#define TRK_FMT_MAGIC        "\x89TRK\r\n\x1a\n"
#define TRK_FMT_MAGIC_LEN    8
#define TRK_FMT_HEADER_FIXED 64
#define TRK_FMT_HEADER_MAX   (1u << 20) /* a longer header is corrupt */
#define TRK_FMT_TLV_HEAD     8

enum trk_tlv_tag {
    TRK_TLV_CMDLINE = 1, /* argv, each argument NUL-terminated */
    TRK_TLV_EXE = 2,     /* resolved executable path */
    TRK_TLV_HOST = 3,    /* hostname */
    TRK_TLV_CWD = 4,     /* working directory at start */
    TRK_TLV_VERSION = 5, /* tracker version string that wrote the file */
    TRK_TLV_FORK = 6,    /* fork child: u64 fork seq, u32 parent pid, parent capture's file
                          * name (in this file's directory); since version 3 */
    TRK_TLV_SAMPLE = 7,  /* u64 mean bytes between samples (N), u64 seed: --sample-bytes;
                          * since version 4 */
};

enum trk_option_bit {
    TRK_OPT_MMAP = 1u << 0,        /* mmap family was tracked */
    TRK_OPT_FOLLOW_FORK = 1u << 1, /* forked children write their own captures */
    TRK_OPT_RSS = 1u << 2,         /* RSS samples are present */
    /* PYTORCH_NO_CUDA_MEMORY_CACHING was set at start (`tracker run
     * --cuda-no-caching`): GPU events are tensors, not caching segments.
     * Informational, like every bit here; since version 3 */
    TRK_OPT_CUDA_NO_CACHING = 1u << 3,
    TRK_OPT_HEAP_UNSEEN = 1u << 4, /* malloc is defined ahead of libtracker (by the executable):
                                    * the program's heap was not seen; since version 4 */
};

/* ---- Chunks --------------------------------------------------------------
 *
 * After the header the file is a sequence of chunks, each a 32-byte header
 * followed by stored_len payload bytes:
 *
 *   0  4  magic       "TKCH"
 *   4  1  type        TRK_CHUNK_*
 *   5  1  codec       TRK_CODEC_*
 *   6  2  reserved    0
 *   8  4  stream      DATA: stream id; others 0
 * (a chunk whose reserved fields - these two, and END's arg - are not zero
 * is a bad chunk, skipped)
 *  12  4  stored_len  payload bytes that follow on disk
 *  16  4  raw_len     payload bytes after decompression
 *  20  4  crc32c      over header bytes [4,20) ++ [24,32) ++ stored payload
 *  24  8  arg         DATA: stream offset of the first raw byte
 *                     WATERMARK: seq bound W; END: 0
 *
 * The CRC covers the header fields too, so a flipped length is caught rather
 * than followed into garbage.
 */
#define TRK_CHUNK_MAGIC   "TKCH"
#define TRK_CHUNK_HEAD    32
#define TRK_CHUNK_RAW_MAX (16u << 20)

enum trk_chunk_type {
    TRK_CHUNK_DATA = 1,      /* a piece of one thread stream */
    TRK_CHUNK_WATERMARK = 2, /* every event with seq < arg is in an earlier chunk */
    TRK_CHUNK_END = 3,       /* trailer with totals; final only if nothing follows */
};

enum trk_codec {
    TRK_CODEC_STORED = 0,
    TRK_CODEC_LZ4 = 1, /* one LZ4 block (LZ4_compress_default) */
    TRK_CODEC_HUF = 2, /* one canonical Huffman code over bytes (common/huf.h); since version 4 */
    /* one LZ4 block whose dictionary is the stream's raw bytes just before
     * it, at most TRK_LZ_HIST of them (common/lz_hist.h); since version 6 */
    TRK_CODEC_LZ4_LINK = 3,
    /* one zstd frame whose raw-content prefix is that same history (at most
     * TRK_LZ_HIST bytes); since version 7 */
    TRK_CODEC_ZSTD_LINK = 4,
};
/* A codec-4 frame's window, at most: a chunk's largest raw_len
 * (TRK_CHUNK_RAW_MAX) and its history. */
#define TRK_ZSTD_WINDOW_LOG 25

/* END payload: varints end_ts, reason, chunks, lost, streams, in this order.
 * Readers ignore extra trailing bytes. */
enum trk_end_reason {
    TRK_END_EXIT = 0,  /* normal exit(), atexit ran */
    TRK_END_EXEC = 1,  /* the image exec'd another program */
    TRK_END_UEXIT = 2, /* _exit()/_Exit() */
};

/* ---- Thread stream records ----------------------------------------------
 *
 * A stream is the byte sequence one thread produced; DATA chunks carry
 * consecutive pieces of it. A record is a tag byte then fields:
 *   v  = unsigned LEB128 varint (at most 10 bytes)
 *   z  = zigzag-encoded signed varint
 *   u8 = one byte
 * Delta state per stream, all starting at 0 at stream offset 0:
 *   seq   global sequence number of the stream's last event
 *   ts    CLOCK_MONOTONIC ns of the stream's last event
 *   addr  last address written by any address-bearing record
 *   ip    last native frame of a STACK or node record (a STACK record's
 *         frame of any kind)
 *   sid   id of the last STACK or node record (version 5)
 *   pcode, pline  code id and line of the last Python frame of a node
 *         record (version 5)
 * "seqd" is seq - prev seq (v, > 0), "tsd" is ts - prev ts (z; since
 * version 4 writers never make it negative), "addr" is addr - prev addr (z).
 * See docs/FORMAT.md for each record's fields.
 */
enum trk_rec_tag {
    TRK_REC_THREAD = 0x01,      /* seqd tsd tid:v flags:v (TRK_THREAD_*) */
    TRK_REC_THREAD_NAME = 0x02, /* seqd tsd tid:v len:v bytes */
    TRK_REC_THREAD_EXIT = 0x03, /* seqd tsd */
    TRK_REC_STACK = 0x04,       /* id:v parent:v ip:z(delta) ; no seq */
    TRK_REC_MODULES = 0x05,     /* seqd tsd generation:v count:v */
    TRK_REC_MODULE = 0x06,      /* generation:v base:v path buildid nseg:v seg* ; no seq */
    TRK_REC_RSS = 0x07,         /* seqd tsd anon:v file:v */
    TRK_REC_LOST = 0x08,        /* seqd tsd count:v */
    TRK_REC_MMAP = 0x09,        /* seqd tsd addr:z len:v prot:v flags:v file:u8 stack:v */
    TRK_REC_MUNMAP = 0x0A,      /* seqd tsd addr:z len:v */
    TRK_REC_MREMAP = 0x0B,      /* seqd tsd old:z oldlen:v seq2d:v new:z newlen:v flags:v stack:v */
    TRK_REC_GPU_ALLOC = 0x0C, /* seqd tsd api:u8 kind:u8 device:z addr:z size:v stream:v stack:v */
    TRK_REC_GPU_FREE = 0x0D,  /* seqd tsd api:u8 kind:u8 device:z addr:z */
    TRK_REC_GPU_FAIL = 0x0E,  /* seqd tsd api:u8 kind:u8 device:z size:v result:v stack:v */
    TRK_REC_GPU_MAP = 0x0F,   /* seqd tsd api:u8 op:u8 device:z va:z size:v handle:v offset:v */
    TRK_REC_GPU_MEMINFO = 0x10, /* seqd tsd device:v used:v total:v (driver-reported, NVML) */
    TRK_REC_GPU_ENTER = 0x11,   /* no fields, no seq: host events until GPU_EXIT are the driver's */
    TRK_REC_GPU_EXIT = 0x12,    /* no fields, no seq */
    TRK_REC_PY_CODE = 0x13,   /* id:v firstline:v name:(len:v bytes) file:(len:v bytes) ; no seq */
    TRK_REC_PY_IMPORT = 0x14, /* seqd tsd name:(len:v bytes): this thread starts an import */
    TRK_REC_PY_IMPORT_END = 0x15, /* seqd tsd: this thread's innermost open import finished */
    TRK_REC_PY_MARK = 0x16,       /* seqd tsd what:v (TRK_PY_MARK_*) */
    TRK_REC_PY_INFO = 0x17,       /* seqd tsd version:v flags:v (TRK_PYF_*) */
    /* Since version 5: a stack node in fewer bytes (docs/FORMAT.md §4.3),
     * 0001 1 0 C P with id = sid + 1, or TRK_REC_NODE_ID then
     * h:v = (id - sid - 1) << 2 | C << 1 | P; no seq. Then [pd:v] (parent =
     * id - pd) unless C (parent = sid), then the frame: P = 0 a native
     * ip:z (vs ip), P = 1 a Python frame as code:z (vs pcode) line:z
     * (vs pline). */
    TRK_REC_NODE = 0x18,
    TRK_REC_NODE_ID = 0x1C,
    /* Leak classification at exit (docs/FORMAT.md §4a); since version 4. */
    TRK_REC_LEAK_SCAN = 0x1E,    /* seqd tsd flags:v (TRK_LEAKF_*) blocks:v roots:v */
    TRK_REC_LEAK = 0x1F,         /* seqd tsd addr:z class:u8 (TRK_LEAK_*) leader:z (vs addr) */
    TRK_REC_ALLOC_BASE = 0x20,   /* | kind: seqd tsd addr:z size:v stack:v */
    TRK_REC_FREE_BASE = 0x40,    /* | kind: seqd tsd addr:z */
    TRK_REC_REALLOC_BASE = 0x60, /* | kind: seqd tsd old:z seq2d:v new:z(vs old) size:v stack:v */
    TRK_REC_KIND_MASK = 0x1F,
    TRK_REC_CLASS_MASK = 0xE0,
    /* Since version 4: a tag with bit 7 set is a compact ALLOC or FREE,
     * 1 A KK SS TT (docs/FORMAT.md §4.1):
     *   A   1 = ALLOC (addr size:v stack:v follow), 0 = FREE (addr follows)
     *   KK  kind slot, TRK_COMPACT_ALLOC_KINDS / TRK_COMPACT_FREE_KINDS
     *   SS  seqd 1..3; 0 = a varint seqd follows the tag
     *   TT  tsq 0..2; 3 = a varint tsq follows (after seqd's)
     * ts advances by tsq << TRK_COMPACT_TS_SHIFT ns; addr is a varint
     * zigzag(d/16)<<1 when the delta d is a multiple of 16, else
     * zigzag(d)<<1|1. */
    TRK_REC_COMPACT = 0x80,
    TRK_REC_COMPACT_ALLOC = 0x40,
};

/* The kinds of the four compact slots, in slot order. */
#define TRK_COMPACT_ALLOC_KINDS                                                                    \
    {                                                                                              \
        TRK_ALLOC_MALLOC, TRK_ALLOC_CALLOC, TRK_ALLOC_NEW, TRK_ALLOC_PYMALLOC                      \
    }
#define TRK_COMPACT_FREE_KINDS                                                                     \
    {                                                                                              \
        TRK_ALLOC_FREE, TRK_ALLOC_DELETE, TRK_ALLOC_PYFREE, TRK_ALLOC_DELETE_ARRAY                 \
    }
/* A compact record's time step: 2^10 ns. */
#define TRK_COMPACT_TS_SHIFT 10

/* Node record bits (the tag's low two, or h's). */
#define TRK_NODE_PY    1u /* the frame is a Python frame (code, line) */
#define TRK_NODE_CHAIN 2u /* parent = sid: no pd field */

/* Which entry point made a heap event; the low five bits of ALLOC/FREE/REALLOC
 * tags. 0 is invalid so that a zero byte never decodes as an event. */
enum trk_alloc_kind {
    TRK_ALLOC_MALLOC = 1,
    TRK_ALLOC_CALLOC = 2,
    TRK_ALLOC_REALLOC = 3,
    TRK_ALLOC_REALLOCARRAY = 4,
    TRK_ALLOC_POSIX_MEMALIGN = 5,
    TRK_ALLOC_ALIGNED_ALLOC = 6,
    TRK_ALLOC_MEMALIGN = 7,
    TRK_ALLOC_VALLOC = 8,
    TRK_ALLOC_PVALLOC = 9,
    TRK_ALLOC_MALLOCX = 10,
    TRK_ALLOC_RALLOCX = 11,
    TRK_ALLOC_XALLOCX = 12,
    TRK_ALLOC_FREE = 13,
    TRK_ALLOC_FREE_SIZED = 14,
    TRK_ALLOC_FREE_ALIGNED_SIZED = 15,
    TRK_ALLOC_DALLOCX = 16,
    TRK_ALLOC_SDALLOCX = 17,
    /* Python's object and PyMem allocators (pymalloc), recorded when the
     * run asked for --python-allocators; what they get from malloc or mmap
     * underneath is then not recorded a second time. */
    TRK_ALLOC_PYMALLOC = 18,
    TRK_ALLOC_PYCALLOC = 19,
    TRK_ALLOC_PYREALLOC = 20,
    TRK_ALLOC_PYFREE = 21,
    /* C++ operator new and delete, every form (nothrow, align_val_t and
     * sized ones included) under the kind of its family; since version 3.
     * What the runtime gets from malloc underneath is not recorded again. */
    TRK_ALLOC_NEW = 22,
    TRK_ALLOC_NEW_ARRAY = 23,
    TRK_ALLOC_DELETE = 24,
    TRK_ALLOC_DELETE_ARRAY = 25,
    TRK_ALLOC_KIND_MAX = 25,
};

/* Which API a GPU record came from (the api byte). */
enum trk_gpu_api {
    TRK_GPU_API_CUMEMALLOC = 1,
    TRK_GPU_API_CUMEMALLOCPITCH = 2,
    TRK_GPU_API_CUMEMALLOCMANAGED = 3,
    TRK_GPU_API_CUMEMHOSTALLOC = 4,
    TRK_GPU_API_CUMEMALLOCHOST = 5,
    TRK_GPU_API_CUMEMFREE = 6,
    TRK_GPU_API_CUMEMFREEHOST = 7,
    TRK_GPU_API_CUMEMHOSTREGISTER = 8,
    TRK_GPU_API_CUMEMHOSTUNREGISTER = 9,
    TRK_GPU_API_CUMEMALLOCASYNC = 10,
    TRK_GPU_API_CUMEMALLOCFROMPOOLASYNC = 11,
    TRK_GPU_API_CUMEMFREEASYNC = 12,
    TRK_GPU_API_CUMEMCREATE = 13,
    TRK_GPU_API_CUMEMRELEASE = 14,
    TRK_GPU_API_CUMEMMAP = 15,
    TRK_GPU_API_CUMEMUNMAP = 16,
    TRK_GPU_API_CUMEMADDRESSRESERVE = 17,
    TRK_GPU_API_CUMEMADDRESSFREE = 18,
    TRK_GPU_API_CUIPCOPENMEMHANDLE = 19,
    TRK_GPU_API_CUIPCCLOSEMEMHANDLE = 20,
    TRK_GPU_API_CUMEMIMPORTFROMSHAREABLE = 21,
    TRK_GPU_API_CUARRAYCREATE = 22,
    TRK_GPU_API_CUARRAY3DCREATE = 23,
    TRK_GPU_API_CUARRAYDESTROY = 24,
    TRK_GPU_API_CUMEMPOOLIMPORTPOINTER = 25,
    TRK_GPU_API_HIPMALLOC = 64,
    TRK_GPU_API_HIPFREE = 65,
    TRK_GPU_API_HIPMALLOCMANAGED = 66,
    TRK_GPU_API_HIPHOSTMALLOC = 67,
    TRK_GPU_API_HIPHOSTFREE = 68,
    TRK_GPU_API_HIPMALLOCASYNC = 69,
    TRK_GPU_API_HIPFREEASYNC = 70,
    TRK_GPU_API_HIPMALLOCFROMPOOLASYNC = 71,
    TRK_GPU_API_HIPMEMCREATE = 72,
    TRK_GPU_API_HIPMEMRELEASE = 73,
    TRK_GPU_API_HIPMEMMAP = 74,
    TRK_GPU_API_HIPMEMUNMAP = 75,
    TRK_GPU_API_HIPMEMADDRESSRESERVE = 76,
    TRK_GPU_API_HIPMEMADDRESSFREE = 77,
    TRK_GPU_API_HIPMALLOCPITCH = 78,
    TRK_GPU_API_HIPEXTMALLOCWITHFLAGS = 79,
    TRK_GPU_API_HIPHOSTREGISTER = 80,
    TRK_GPU_API_HIPHOSTUNREGISTER = 81,
};

/* What kind of memory a GPU record is about (the kind byte). Reservations
 * and registrations are recorded but never counted as memory. */
enum trk_gpu_kind {
    TRK_GPU_DEVICE = 1,        /* device memory (cuMemAlloc, hipMalloc) */
    TRK_GPU_MANAGED = 2,       /* unified/managed memory */
    TRK_GPU_PINNED_HOST = 3,   /* page-locked host memory allocated by the driver */
    TRK_GPU_ASYNC = 4,         /* stream-ordered allocation from a memory pool */
    TRK_GPU_VMM_PHYS = 5,      /* VMM physical allocation; addr is the handle */
    TRK_GPU_IMPORTED = 6,      /* memory owned by another process (IPC, shareable handle) */
    TRK_GPU_ARRAY = 7,         /* CUDA array; addr is the handle, size approximate */
    TRK_GPU_VA_RESERVE = 8,    /* address range reservation: never memory */
    TRK_GPU_HOST_REGISTER = 9, /* existing host memory pinned: never new memory */
    TRK_GPU_KIND_MAX = 9,
};

/* GPU_MAP op byte. */
#define TRK_GPU_OP_MAP   1
#define TRK_GPU_OP_UNMAP 2

/* MMAP record "file" byte. */
#define TRK_MAP_ANON 0
#define TRK_MAP_FILE 1

/* Limits of variable-length record fields (docs/FORMAT.md §8): a record
 * over one is malformed. include/tracker/reader.h repeats the two that size
 * struct trk_module; src/reader/open.c asserts that they agree. */
#define TRK_MODULE_PATH_MAX 4096
#define TRK_BUILDID_MAX     64
#define TRK_MODULE_SEGS_MAX 16
#define TRK_THREAD_NAME_MAX 64

/* ---- Python ------------------------------------------------------------------
 *
 * A STACK ip with bit 63 set is a Python frame, not an address (no user-space
 * address has it): bits 24..62 are the id of a PY_CODE record, bits 0..23 the
 * line number (0 = unknown). Python frames stand in the native stack where
 * the interpreter's evaluation loop ran them (docs/FORMAT.md §5).
 */
#define TRK_PYFRAME_BIT       (1ull << 63)
#define TRK_PYFRAME_LINE_BITS 24
#define TRK_PYFRAME_LINE_MAX  ((1u << TRK_PYFRAME_LINE_BITS) - 1)
#define TRK_PY_STR_MAX        1024 /* PY_CODE names and files, PY_IMPORT names */

/* ---- Sampling -----------------------------------------------------------
 *
 * A capture made with --sample-bytes N (TRK_TLV_SAMPLE) gives the whole stack
 * only to sampled allocations; every other heap allocation's stack is one
 * node, its call site, whose STACK ip has bit 62 set (bit 63 clear): the
 * return address is ip & ~TRK_IP_CALLSITE (docs/FORMAT.md §5.1).
 */
#define TRK_IP_CALLSITE (1ull << 62)

/* PY_MARK what. */
#define TRK_PY_MARK_SCRIPT_END 1 /* the script's code finished; interpreter teardown follows */

/* PY_INFO flags. */
#define TRK_PYF_NATIVE     1u /* stacks are hybrid: native frames around the Python ones */
#define TRK_PYF_ALLOCATORS 2u /* pymalloc's allocations are recorded (--python-allocators) */
#define TRK_PYF_PYMALLOC   4u /* pymalloc is Python's object allocator (not PYTHONMALLOC=malloc) */

/* LEAK class byte: valgrind memcheck's four kinds (docs/FORMAT.md §4a). */
#define TRK_LEAK_DEFINITE  1 /* no pointer to it from a root or a reachable block */
#define TRK_LEAK_INDIRECT  2 /* pointed to only by lost blocks; leader: the definite one */
#define TRK_LEAK_POSSIBLE  3 /* reached only through interior pointers */
#define TRK_LEAK_REACHABLE 4 /* a pointer to its start from a root or a reachable block */
#define TRK_LEAK_CLASS_MAX 4

/* LEAK_SCAN flags. */
#define TRK_LEAKF_UNSTOPPED  1u /* a thread did not stop: its whole stack was scanned */
#define TRK_LEAKF_INCOMPLETE 2u /* no classification (LEAK records absent or partial) */
#define TRK_LEAKF_FOREIGN    4u /* blocks not from glibc malloc: whole mappings excluded */
/* A fork child: the heap it inherited (blocks its capture does not list)
 * was scanned as roots, with the free memory between its own blocks. */
#define TRK_LEAKF_INHERITED 8u

/* THREAD record flags. */
#define TRK_THREAD_INTERNAL 1u /* the tracker's own sampling thread, not the program's */

#endif /* TRK_FORMAT_H */
