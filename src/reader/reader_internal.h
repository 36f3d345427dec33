/* SPDX-License-Identifier: MIT
 *
 * reader_internal.h - the reader's private state, shared by the files of
 * src/reader only. Owns the layout of struct trk_reader and the contracts
 * between framing (source.c), decoding (decode.c), merging (merge.c) and
 * the header (open.c). Must not be included outside src/reader.
 */
#ifndef TRK_READER_INTERNAL_H
#define TRK_READER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/record.h"
#include "tracker/reader.h"

/* LZ4 output never exceeds this input size for a valid raw_len. */
#define TRK_STORED_MAX ((size_t)TRK_CHUNK_RAW_MAX + TRK_CHUNK_RAW_MAX / 255 + 16)

/* More distinct loaded objects than this is not a real process: a hostile
 * file must not make the reader hold gigabytes of module records. */
#define TRK_MODULES_MAX ((size_t)1 << 16)

/* If corrupt or absent watermarks let this many events pile up, the smallest
 * are released anyway: memory must not grow with the file. */
#define TRK_QUEUED_MAX ((size_t)4 << 20)

/* Buffered input over the file: large reads, and a window that can hold the
 * largest chunk so a chunk's payload is decoded in place. */
struct trk_src {
    int fd;
    uint8_t *buf;
    size_t cap;
    size_t pos;   /* next unread byte in buf */
    size_t len;   /* valid bytes in buf */
    uint64_t off; /* file offset of buf[0] */
    bool eof;
    int err; /* errno of a failed read, 0 if none */
};

/* One framed chunk whose CRC matched; payload valid until the next src call. */
struct trk_chunk {
    uint8_t type;
    uint8_t codec;
    uint16_t reserved; /* header bytes [6,8): zero in every version */
    uint32_t stream;
    uint32_t stored_len;
    uint32_t raw_len;
    uint64_t arg;
    const uint8_t *payload;
};

struct trk_stream {
    uint32_t id;
    uint32_t tid;
    uint64_t next_off; /* stream offset the next piece must start at */
    struct trk_rec_state st;
    bool broken;
    /* GPU_ENTER records not yet closed by a GPU_EXIT: host events decoded
     * while it is non-zero are the driver's (TRK_EVF_GPU_DRIVER). A count,
     * not a flag, because a hooked runtime call may enter a hooked driver
     * call. */
    uint32_t gpu_depth;
    uint8_t gpu_flag;    /* TRK_EVF_GPU_DRIVER while gpu_depth > 0, else 0 */
    struct trk_event *q; /* pending events, [qhead, qtail) in seq order */
    size_t qhead, qtail, qcap;
    bool in_heap; /* has an entry in the merge heap */
    /* version 6: the last raw bytes, which a codec-3 or codec-4 piece is
     * decoded against (common/lz_hist.h); hist_cap grows to TRK_LZ_HIST */
    uint8_t *hist;
    uint32_t hist_len, hist_cap;
};

struct trk_heap_ent {
    uint64_t seq;  /* seq of the stream's queue head */
    size_t stream; /* index in streams */
};

struct trk_stack_node {
    uint64_t parent; /* UINT64_MAX: not defined */
    uint64_t ip;
};

/* Thread names live in fixed blocks so that pointers handed out stay valid. */
struct trk_name_block {
    struct trk_name_block *next;
    size_t used;
    char data[];
};

struct trk_reader {
    char *name;
    char err[512];
    struct trk_src src;
    uint64_t file_size; /* 0 when not a regular file (a pipe) */
    struct trk_reader_info info;
    char *info_strings; /* backing store of info.argv and the TLV strings */
    struct trk_reader_status status;
    uint64_t lost_records; /* sum of LOST records */
    uint64_t end_lost;     /* lost field of the last END */
    bool last_was_end;
    uint64_t chunks_before_end; /* chunks read or skipped before the last END */
    /* Framing failures since a chunk header claimed more bytes than the file
     * has left: if no good chunk follows they were inside that cut-off
     * chunk (truncation); if one does, they are counted as corruption. */
    uint64_t cut_pending;
    bool final;        /* no more chunks: release everything */
    uint64_t limit;    /* events with seq < limit may be released */
    uint64_t last_seq; /* last released seq, for order checks */

    uint8_t *raw; /* decompression buffer */
    size_t raw_cap;
    void *zstd; /* the codec-4 decoder (common/zlink.h), made at the first such chunk */

    struct trk_stream *streams;
    size_t nstreams, streams_cap;
    uint32_t *stream_index;  /* open addressing: stream id -> index + 1 */
    size_t stream_index_cap; /* power of two */

    struct trk_heap_ent *heap; /* min-heap on queue head seq, one per non-empty queue */
    size_t heap_len, heap_cap;
    size_t queued; /* events in all queues */

    struct trk_stack_node *stacks;
    size_t stacks_cap;
    size_t stacks_defined;

    struct trk_module *modules;
    size_t nmodules, modules_cap;

    struct trk_name_block *names;

    struct trk_pycode *pycodes; /* index: PY_CODE id; name NULL = undefined */
    size_t pycodes_cap;
    size_t pycodes_defined;

    /* A fork child's inherited heap (inherit.c). */
    int inherit_state;      /* INHERIT_* */
    unsigned inherit_depth; /* captures followed to reach this one */
    struct trk_event *inh;  /* the events to emit, in seq order */
    size_t inh_len, inh_pos;
    char inherit_err[512];
};

enum { INHERIT_PENDING = 0, INHERIT_EMITTING = 1, INHERIT_DONE = 2 };

/* Fork parents followed at most (a chain of forks, or a corrupt loop). */
#define TRK_INHERIT_DEPTH_MAX 64

/* source.c */
void trk_src_init(struct trk_src *s, int fd);
void trk_src_free(struct trk_src *s);
/* Makes n bytes available at buf+pos; returns how many are (fewer at EOF or
 * on error, see err). */
size_t trk_src_ensure(struct trk_src *s, size_t n);
/* Reads the next good chunk. Returns 1 with *c, 0 at the end of the file
 * (setting r->status fields about the tail), -1 on a read error. */
int trk_src_next_chunk(struct trk_reader *r, struct trk_chunk *c);

/* decode.c */
/* Decodes one DATA piece into its stream's queue. */
void trk_decode_piece(struct trk_reader *r, struct trk_chunk *c, const uint8_t *data, size_t len);
/* A piece whose payload is unusable: its stream cannot continue. */
void trk_decode_lost_piece(struct trk_reader *r, struct trk_chunk *c);
/* The dictionary of codec-3 chunk c (FORMAT.md §2): its stream's last raw
 * bytes, in *dict and *len (len 0 for a stream's first piece). Returns -1
 * when the piece cannot be decoded in its place (unknown or broken stream,
 * a gap before it: trk_decode_piece says which) or memory failed. */
int trk_decode_dict(struct trk_reader *r, const struct trk_chunk *c, const uint8_t **dict,
                    size_t *len);
void trk_decode_free(struct trk_reader *r);

/* inherit.c */
/* Emits up to max inherited-block events first; 0 once there are none
 * (left) to emit. */
int trk_inherit_next(struct trk_reader *r, struct trk_event *evs, int max);
void trk_inherit_free(struct trk_reader *r);

/* merge.c */
/* Called after events were appended to stream s whose queue was empty. */
void trk_merge_push(struct trk_reader *r, size_t stream_index);
void trk_merge_free(struct trk_reader *r);

/* Formats r->err as "<name>: <message>". */
void trk_reader_set_error(struct trk_reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* TRK_READER_INTERNAL_H */
