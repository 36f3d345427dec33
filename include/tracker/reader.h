/* SPDX-License-Identifier: MIT
 *
 * tracker/reader.h - public streaming API for reading tracker captures
 * (docs/FORMAT.md). Owns: opening a capture, its header metadata, the merged
 * global-order event stream, stack and module lookups, and the integrity
 * status. Must not: interpret events (that is analysis), print anything, or
 * trust the file: every input, however corrupt, yields an error or a status,
 * never a crash.
 *
 * A reader is not thread-safe; use one per thread. Pointers it returns stay
 * valid as documented per function.
 *
 * Installed as <tracker/reader.h> with libtrkreader.a and its pkg-config
 * file (`pkg-config --cflags --libs --static trkreader`); a program needs
 * nothing else. The values of enum fields (allocator ids, GPU kinds and
 * api values, TRK_OPT_* bits) are those of docs/FORMAT.md.
 */
#ifndef TRACKER_READER_H
#define TRACKER_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct trk_reader;

/* The format's limits that size the structures below (docs/FORMAT.md §8),
 * and the layout of a Python frame value (§5). The reader asserts at build
 * time that they equal the format's own constants. */
#define TRK_READER_BUILDID_MAX       64 /* MODULE build-id bytes */
#define TRK_READER_SEGS_MAX          16 /* MODULE segments */
#define TRK_READER_PYFRAME_LINE_BITS 24 /* line bits of a Python frame value */
#define TRK_READER_FORMAT_VERSION    7  /* newest capture version this reader reads */

/* Header metadata. Strings are NUL-terminated and never NULL ("" when the
 * TLV is absent). */
struct trk_reader_info {
    uint32_t version; /* format version of the file */
    uint32_t pid, ppid, root_pid;
    uint32_t page_size;
    uint64_t start_realtime; /* ns since the Unix epoch */
    uint64_t clock_base;     /* CLOCK_MONOTONIC ns at start; event ts use this clock */
    uint64_t session;
    uint32_t max_depth;
    uint32_t options; /* TRK_OPT_* bits of format.h */
    int argc;
    char **argv; /* argc entries, then NULL */
    const char *exe;
    const char *host;
    const char *cwd;
    const char *writer_version;
    /* A forked child's capture (FORK TLV, format 3): the parent image's
     * capture file (a name in this file's directory), the parent's pid and
     * the seq counter at the fork. fork_seq 0 and fork_parent "" otherwise. */
    uint64_t fork_seq;
    uint32_t fork_parent_pid;
    const char *fork_parent;
    /* A sampled capture (SAMPLE TLV, `tracker run --sample-bytes N`): N, the
     * mean bytes between sample points, and the seed of the draws; 0 when
     * every allocation has its whole stack. In a sampled capture the stack
     * of an allocation that was not sampled is its call site alone, one
     * frame for which trk_ip_is_callsite holds. */
    uint64_t sample_bytes;
    uint64_t sample_seed;
};

enum trk_event_type {
    TRK_EV_ALLOC = 1,    /* heap block acquired: addr, size (requested), stack, kind */
    TRK_EV_FREE,         /* heap block released: addr, kind */
    TRK_EV_MMAP,         /* [addr, addr+size) mapped: stack, map.prot/flags, TRK_EVF_FILE */
    TRK_EV_MUNMAP,       /* [addr, addr+size) unmapped */
    TRK_EV_MREMAP_OLD,   /* first half of mremap: release [addr, addr+size); pair.* */
    TRK_EV_MREMAP_NEW,   /* second half: acquisition of [addr, addr+size); pair.*, stack */
    TRK_EV_THREAD_START, /* first record of a stream; tid is the new thread */
    TRK_EV_THREAD_NAME,  /* thread_name.*; names thread_name.tid (maybe not tid) */
    TRK_EV_THREAD_EXIT,
    TRK_EV_RSS,     /* rss.anon, rss.file: resident bytes */
    TRK_EV_MODULES, /* modules.*: a new module snapshot (see trk_reader_modules) */
    TRK_EV_LOST,    /* lost.count events the thread could not record */
    /* GPU events (docs/FORMAT.md §4, GPU records). kind is the memory kind
     * (enum trk_gpu_kind of format.h), device the ordinal (-1 = unknown). */
    TRK_EV_GPU_ALLOC,   /* GPU memory acquired: addr (a handle for VMM and array kinds),
                         * size, stack, kind, u.gpu.{device, api, stream} */
    TRK_EV_GPU_FREE,    /* GPU memory released: addr, kind, u.gpu.{device, api}; kind 0
                         * and device -1 when the tracker could not tell (take them
                         * from the matching allocation) */
    TRK_EV_GPU_FAIL,    /* allocation refused by the driver: size, stack, kind,
                         * u.gpu.{device, api, result} (2 = out of memory) */
    TRK_EV_GPU_MAP,     /* VMM: [addr, addr+size) now shows u.gpu_map.handle from
                         * u.gpu_map.offset on; placement only, no new memory */
    TRK_EV_GPU_UNMAP,   /* VMM: [addr, addr+size) unmapped (u.gpu_map.*) */
    TRK_EV_GPU_MEMINFO, /* the driver's own figure for this process: u.gpu_meminfo.* */
    /* Python (docs/FORMAT.md §5). */
    TRK_EV_PY_INFO,       /* the interpreter: u.py_info.{version, flags} */
    TRK_EV_PY_IMPORT,     /* this thread starts importing u.py_import.name */
    TRK_EV_PY_IMPORT_END, /* this thread's innermost open import finished */
    TRK_EV_PY_MARK,       /* u.py_mark.what (TRK_PY_MARK_* of format.h) */
    /* Leak classification at exit (docs/FORMAT.md §4a); after every heap
     * event of the capture. */
    TRK_EV_LEAK_SCAN, /* u.leak_scan.*: the scan ran; LEAK events follow */
    TRK_EV_LEAK,      /* the block live at addr is u.leak.cls (TRK_LEAK_* of format.h);
                       * u.leak.leader: for an indirectly lost block, the
                       * definitely lost one it hangs from, else 0 */
};

/* trk_event.flags */
#define TRK_EVF_FROM_REALLOC 0x01 /* FREE/ALLOC is half of a REALLOC record */
#define TRK_EVF_FILE         0x02 /* MMAP: file-backed, not heap */
#define TRK_EVF_DONTUNMAP    0x04 /* MREMAP_*: MREMAP_DONTUNMAP, the old range stays mapped */
#define TRK_EVF_INTERNAL     0x08 /* THREAD_START: the tracker's own thread, not the program's */
/* ALLOC, FREE, MMAP, MUNMAP, MREMAP_*: made by the GPU driver itself, inside a
 * GPU call of the same thread (between its GPU_ENTER and GPU_EXIT records). */
#define TRK_EVF_GPU_DRIVER 0x10
/* ALLOC: not an allocation of this process but a block it inherited live
 * from its parent at fork (docs/FORMAT.md §6). The reader emits these
 * before the file's own events, in the parent's seq order, with the
 * parent's seq, addr, size and kind, stack 0, tid the child's pid and ts the
 * child's clock base. They count as live memory, never as allocations. */
#define TRK_EVF_INHERITED 0x20

/* One event. Halves of a REALLOC record are a FREE of the old address at seq
 * then an ALLOC of the new one at seq2, both with the record's kind and
 * TRK_EVF_FROM_REALLOC; each carries the other half in pair.*. MREMAP becomes
 * MREMAP_OLD at seq then MREMAP_NEW at seq2 likewise. */
struct trk_event {
    uint64_t seq; /* global order; strictly increasing in a valid capture */
    uint64_t ts;  /* CLOCK_MONOTONIC ns */
    uint64_t addr;
    uint64_t size;  /* ALLOC, GPU_ALLOC, GPU_FAIL: requested bytes; mapping events
                     * (GPU_MAP/UNMAP too): length; else 0 */
    uint64_t stack; /* innermost stack node id, 0 = none (ALLOC, MMAP, MREMAP_NEW,
                     * GPU_ALLOC, GPU_FAIL) */
    union {
        struct {
            uint64_t prot, flags; /* as passed to mmap */
        } map;
        struct {
            uint64_t seq;   /* the other half's seq */
            uint64_t addr;  /* the other half's address */
            uint64_t flags; /* MREMAP: mremap flags; REALLOC: 0 */
        } pair;
        struct {
            uint64_t anon, file;
        } rss;
        struct {
            uint64_t count;
        } lost;
        struct {
            uint64_t generation, count;
        } modules;
        struct {
            uint64_t tid;
            const char *name; /* NUL-terminated, valid until trk_reader_close */
        } thread_name;
        struct {
            uint64_t stream; /* GPU_ALLOC: the stream of a stream-ordered allocation, else 0 */
            uint64_t result; /* GPU_FAIL: the driver's error code */
            int32_t device;  /* ordinal, -1 = unknown (also for values out of range) */
            uint8_t api;     /* enum trk_gpu_api of format.h */
        } gpu;               /* GPU_ALLOC, GPU_FREE, GPU_FAIL */
        struct {
            uint64_t handle; /* the physical allocation (its GPU_ALLOC's addr) */
            uint64_t offset; /* where in it the mapping starts */
            int32_t device;
            uint8_t api;
        } gpu_map; /* GPU_MAP, GPU_UNMAP */
        struct {
            uint64_t used, total; /* bytes */
            int32_t device;       /* -1 when the ordinal is out of range */
        } gpu_meminfo;
        struct {
            uint64_t version; /* PY_VERSION_HEX, e.g. 0x030b02f0 for 3.11.2 */
            uint64_t flags;   /* TRK_PYF_* of format.h */
        } py_info;
        struct {
            const char *name; /* the module's dotted name, valid until trk_reader_close */
        } py_import;
        struct {
            uint64_t what;
        } py_mark;
        struct {
            uint64_t flags;  /* TRK_LEAKF_* of format.h */
            uint64_t blocks; /* LEAK events that follow */
            uint64_t roots;  /* bytes scanned as roots */
        } leak_scan;
        struct {
            uint64_t leader;
            uint8_t cls;
        } leak;
    } u;
    uint32_t tid;  /* thread of the stream that recorded the event (0 if unknown) */
    uint8_t type;  /* enum trk_event_type */
    uint8_t kind;  /* allocator id (enum trk_alloc_kind) for heap events, memory kind
                    * (enum trk_gpu_kind) for GPU_ALLOC/FREE/FAIL, else 0 */
    uint8_t flags; /* TRK_EVF_* */
};

struct trk_module {
    uint64_t generation;
    uint64_t base;    /* load bias */
    const char *path; /* NUL-terminated; "" = main executable */
    uint8_t buildid[TRK_READER_BUILDID_MAX];
    uint32_t buildid_len;
    uint32_t nseg;
    struct {
        uint64_t vaddr, memsz; /* vaddr relative to base */
        uint32_t flags;        /* ELF p_flags */
    } seg[TRK_READER_SEGS_MAX];
};

/* The END trailer's own-memory fields, indices into
 * trk_reader_status.own (docs/FORMAT.md §2). */
enum trk_own_field {
    TRK_OWN_PEAK,
    TRK_OWN_TABLES_NOW,
    TRK_OWN_TABLES_PEAK,
    TRK_OWN_THREADS_BYTES,
    TRK_OWN_THREAD_STATES,
    TRK_OWN_PYTHON_BYTES,
    TRK_OWN_PYTHON_BLOCKS,
    TRK_OWN_WRITER_BYTES,
    TRK_OWN_ROTATIONS,
    TRK_OWN_TOTAL,
    TRK_OWN_BASE_FIELDS, /* the fields every version-4 writer wrote */
    TRK_OWN_UNWIND_BYTES = TRK_OWN_BASE_FIELDS,
    TRK_OWN_UNWIND_PEAK,
    TRK_OWN_LEAKSCAN_BYTES,
    TRK_OWN_LEAKSCAN_PEAK,
    TRK_OWN_PREINIT_BYTES,
    TRK_OWN_PREINIT_PEAK,
    TRK_OWN_SAMPLE_BYTES,
    TRK_OWN_SAMPLE_MEMOS,
    TRK_READER_OWN_MAX
};

/* Integrity of what has been read so far; final once trk_reader_next
 * returned 0. */
struct trk_reader_status {
    bool truncated;       /* no final END chunk, or the file ends inside one */
    bool end_seen;        /* the last chunk is an END: the fields below are valid */
    uint32_t end_reason;  /* enum trk_end_reason */
    uint64_t end_ts;      /* CLOCK_MONOTONIC ns */
    uint64_t end_records; /* chunks the writer says it wrote before END */
    uint64_t end_streams;
    /* The unwinder check (TRACKER_UNWIND_CHECK): stacks walked by both the
     * own unwinder and libunwind, how many differed, and walks the own one
     * left to libunwind (END fields 6-8; 0 in older captures). */
    uint64_t unwind_checked, unwind_mismatches, unwind_fallbacks;
    uint64_t lost_events;       /* LOST records plus END's lost field */
    uint64_t checksum_failures; /* chunks skipped for bad CRC or framing */
    uint64_t bad_chunks;        /* good CRC but unusable (type, codec, size) */
    uint64_t broken_streams;    /* streams that stopped decoding (gap, bad record) */
    uint64_t bytes_lost;        /* stream bytes that could not be decoded */
    uint64_t streams;           /* distinct streams seen */
    uint64_t chunks;            /* good chunks read */
    uint64_t records;           /* records decoded */
    uint64_t events;            /* events returned */
    uint64_t order_violations;  /* events released after a larger seq (corrupt order) */
    uint64_t bad_stacks;        /* STACK records ignored (id out of range) */
    uint64_t bad_modules;       /* MODULE records ignored (past the sanity cap) */
    /* A forked child's inherited heap (TRK_EVF_INHERITED events): blocks
     * and requested bytes emitted; inherited_missing when the capture is a
     * fork child's but its parent's capture could not be read (see
     * trk_reader_inherit_error): the inherited heap is then unknown. */
    uint64_t inherited_blocks;
    uint64_t inherited_bytes;
    bool inherited_missing;
    /* Chunks the final END counts that the file does not hold (a lost last
     * piece of a stream shows no gap): the capture is damaged. */
    uint64_t missing_chunks;
    /* Truncated inside a chunk: a write was cut short (a full disk, or a
     * writer still at work), rather than a process that stopped between
     * writes. */
    bool ends_inside_chunk;
    /* The tracker's own memory in the traced process, from the final END
     * (docs/FORMAT.md §2 "Own memory"): own_fields of the own[] values
     * are valid, in the spec's order (TRK_OWN_*); 0 when the capture has
     * none (older writer, or no END). */
    uint32_t own_fields;
    uint64_t own[TRK_READER_OWN_MAX];
};

/* Opens the capture at path and reads its header. Returns 0 and sets *out,
 * or -1 with a one-line message in err (when errlen > 0) that starts with the
 * path, e.g. "x.bin: not a tracker capture (bad magic)"; *out is then NULL. */
int trk_reader_open(const char *path, struct trk_reader **out, char *err, size_t errlen);

/* Same as trk_reader_open on an already open descriptor, which the reader
 * takes over (closes it, even on failure); name is used in messages only. */
int trk_reader_open_fd(int fd, const char *name, struct trk_reader **out, char *err, size_t errlen);

/* Header metadata; never NULL, valid until trk_reader_close. */
const struct trk_reader_info *trk_reader_info(const struct trk_reader *r);

/* Stores the next event in global seq order into *ev. Returns 1 on an event,
 * 0 at the end of the capture (also after corruption: see the status), or -1
 * on a read error (message in trk_reader_error). Memory stays bounded by the
 * events between two watermarks. */
int trk_reader_next(struct trk_reader *r, struct trk_event *ev);

/* Stores up to max (>= 1) next events in global seq order into evs; the
 * faster way to iterate. Returns how many (>= 1), 0 at the end of the
 * capture, or -1 on a read error, like trk_reader_next. */
int trk_reader_next_batch(struct trk_reader *r, struct trk_event *evs, int max);

/* Stores up to max frame addresses of stack node stack_id into ips,
 * innermost first. Returns the number stored: 0 for id 0 or an unknown id;
 * a chain that reaches an undefined node stops there. Stack nodes are known
 * for every event already returned. */
int trk_reader_stack(const struct trk_reader *r, uint64_t stack_id, uint64_t *ips, int max);

/* A Python code object (a function, a module body, a class body). */
struct trk_pycode {
    const char *name; /* qualified name on 3.11+ ("Model.forward"), else the plain name */
    const char *file; /* co_filename as Python had it */
    uint32_t firstline;
};

/* The call site of an allocation that sampling passed over (bit 62 set,
 * bit 63 clear); trk_ip_callsite gives its return address. */
static inline bool trk_ip_is_callsite(uint64_t ip)
{
    return (ip >> 62) == 1;
}

static inline uint64_t trk_ip_callsite(uint64_t ip)
{
    return ip & ~(1ull << 62);
}

/* A stack ip that is a Python frame (bit 63 set) rather than an address:
 * its code object id and line (0 when not known). */
static inline bool trk_ip_is_python(uint64_t ip)
{
    return (ip >> 63) != 0;
}

static inline uint64_t trk_ip_pycode(uint64_t ip)
{
    return (ip & ~(1ull << 63)) >> TRK_READER_PYFRAME_LINE_BITS;
}

static inline uint32_t trk_ip_pyline(uint64_t ip)
{
    return (uint32_t)(ip & ((1u << TRK_READER_PYFRAME_LINE_BITS) - 1));
}

/* The code object with this id, or NULL when the capture never defined it.
 * Code objects are known for every event already returned; valid until
 * trk_reader_close. */
const struct trk_pycode *trk_reader_pycode(const struct trk_reader *r, uint64_t id);

/* Every loaded object of every snapshot decoded so far, in file order of
 * first sight: a MODULE record equal in base, path and build-id to one of
 * the last 64 entries only raises that entry's generation (snapshots repeat
 * most objects), and past 2^16 entries new ones are counted in bad_modules.
 * Returns the count and sets *mods (NULL when 0); valid until the next
 * trk_reader_next or trk_reader_close. */
size_t trk_reader_modules(const struct trk_reader *r, const struct trk_module **mods);

/* Integrity status so far; never NULL, valid until trk_reader_close. */
const struct trk_reader_status *trk_reader_status(const struct trk_reader *r);

/** trk_reader_progress() - how far the reader is into the file, in bytes.
 * Sets *done to the bytes consumed so far and *total to the file size (0
 * when the input is not a regular file, so no fraction can be given). */
void trk_reader_progress(const struct trk_reader *r, uint64_t *done, uint64_t *total);

/* The last read error ("x.bin: read failed: ..."), or "" when none. */
const char *trk_reader_error(const struct trk_reader *r);

/* Why the inherited heap of a fork child's capture is unknown ("" when it
 * is not, or before the first trk_reader_next); valid until close. */
const char *trk_reader_inherit_error(const struct trk_reader *r);

/* Whether to replay a fork child's parent capture into TRK_EVF_INHERITED
 * events (default true); call before the first trk_reader_next. */
void trk_reader_set_inherit(struct trk_reader *r, bool on);

/* The name of an event type ("alloc", ...), "unknown" otherwise; never NULL. */
const char *trk_event_type_name(unsigned type);

/* Frees everything; r may be NULL. */
void trk_reader_close(struct trk_reader *r);

#ifdef __cplusplus
}
#endif

#endif /* TRACKER_READER_H */
