/* SPDX-License-Identifier: MIT
 *
 * merge.c - global order (docs/FORMAT.md §3): dispatches chunks, and merges
 * the per-stream queues by seq with a min-heap, releasing events below the
 * current watermark. Owns trk_reader_next and the END/truncation status.
 * Must not: decode records (decode.c) or frame chunks (source.c).
 */
#include <lz4.h>
#include <stdlib.h>
#include <string.h>

#include "common/huf.h"
#include "common/varint.h"
#include "common/zlink.h"
#include "reader/reader_internal.h"

/* Heap entries cache their stream's head seq: comparisons then touch only
 * the heap array, not each stream's queue. */
static void sift_up(struct trk_reader *r, size_t pos)
{
    struct trk_heap_ent x = r->heap[pos];
    while (pos > 0) {
        size_t parent = (pos - 1) / 2;
        if (r->heap[parent].seq <= x.seq)
            break;
        r->heap[pos] = r->heap[parent];
        pos = parent;
    }
    r->heap[pos] = x;
}

static void sift_down(struct trk_reader *r, size_t pos)
{
    struct trk_heap_ent x = r->heap[pos];
    size_t n = r->heap_len;
    for (;;) {
        size_t c = 2 * pos + 1;
        if (c >= n)
            break;
        if (c + 1 < n && r->heap[c + 1].seq < r->heap[c].seq)
            c++;
        if (x.seq <= r->heap[c].seq)
            break;
        r->heap[pos] = r->heap[c];
        pos = c;
    }
    r->heap[pos] = x;
}

void trk_merge_push(struct trk_reader *r, size_t si)
{
    struct trk_stream *s = &r->streams[si];
    if (s->in_heap)
        return;
    /* The heap holds at most one entry per stream. */
    if (r->heap_len == r->heap_cap) {
        size_t cap = r->heap_cap ? r->heap_cap * 2 : 16;
        struct trk_heap_ent *h = realloc(r->heap, cap * sizeof(*h));
        if (!h)
            return; /* out of memory: this stream's events are not released */
        r->heap = h;
        r->heap_cap = cap;
    }
    s->in_heap = true;
    r->heap[r->heap_len].seq = s->q[s->qhead].seq;
    r->heap[r->heap_len].stream = si;
    r->heap_len++;
    sift_up(r, r->heap_len - 1);
}

void trk_merge_free(struct trk_reader *r)
{
    free(r->heap);
    r->heap = NULL;
    r->heap_len = r->heap_cap = 0;
}

/* ---- Chunks ---------------------------------------------------------------- */

static void handle_end(struct trk_reader *r, const uint8_t *p, size_t len)
{
    const uint8_t *end = p + len;
    uint64_t v[8] = {0};
    /* Missing trailing fields read as 0; extra ones are ignored by design. */
    int k = 0;
    while (k < 8 && trk_get_varint(&p, end, &v[k]) == 0)
        k++;
    r->status.end_ts = v[0];
    r->status.end_reason = (uint32_t)v[1];
    r->status.end_records = v[2];
    r->end_lost = v[3];
    r->status.end_streams = v[4];
    r->status.unwind_checked = v[5];
    r->status.unwind_mismatches = v[6];
    r->status.unwind_fallbacks = v[7];
    r->status.lost_events = r->lost_records + r->end_lost;
    /* Own memory (since version 4): a count, then that many fields; the
     * ones after those we know are a later writer's. */
    uint64_t n = 0;
    r->status.own_fields = 0;
    if (k < 8 || trk_get_varint(&p, end, &n) < 0)
        return;
    for (uint64_t i = 0; i < n && i < TRK_READER_OWN_MAX; i++) {
        if (trk_get_varint(&p, end, &r->status.own[i]) < 0)
            break;
        r->status.own_fields = (uint32_t)i + 1;
    }
}

/* Returns the chunk's raw payload, decompressing into r->raw; NULL when the
 * chunk is unusable despite its good CRC (counted as a bad chunk). */
static const uint8_t *chunk_payload(struct trk_reader *r, const struct trk_chunk *c,
                                    const uint8_t *dict, size_t dict_len)
{
    if (c->codec == TRK_CODEC_STORED) {
        if (c->stored_len != c->raw_len)
            goto bad;
        return c->payload;
    }
    /* Codecs 3 and 4 (versions 6, 7) need their stream's history: DATA
     * only, decoded in handle_chunk. */
    if (c->codec != TRK_CODEC_LZ4 && c->codec != TRK_CODEC_HUF &&
        !((c->codec == TRK_CODEC_LZ4_LINK || c->codec == TRK_CODEC_ZSTD_LINK) && dict))
        goto bad;
    if (c->raw_len > r->raw_cap) {
        size_t cap = r->raw_cap ? r->raw_cap : 1u << 20;
        while (cap < c->raw_len)
            cap *= 2;
        uint8_t *b = realloc(r->raw, cap);
        if (!b)
            goto bad;
        r->raw = b;
        r->raw_cap = cap;
    }
    if (c->raw_len == 0) {
        if (c->stored_len == 0)
            return c->payload;
        goto bad;
    }
    if (c->codec == TRK_CODEC_HUF) {
        if (trk_huf_decode(c->payload, c->stored_len, r->raw, c->raw_len) < 0)
            goto bad;
        return r->raw;
    }
    if (c->codec == TRK_CODEC_ZSTD_LINK) {
        if (!r->zstd)
            r->zstd = trk_zlink_new(NULL, NULL);
        if (trk_zlink_decode(r->zstd, r->raw, c->raw_len, c->payload, c->stored_len, dict,
                             dict_len) < 0)
            goto bad;
        return r->raw;
    }
    int n = c->codec == TRK_CODEC_LZ4_LINK
                ? LZ4_decompress_safe_usingDict((const char *)c->payload, (char *)r->raw,
                                                (int)c->stored_len, (int)c->raw_len,
                                                (const char *)dict, (int)dict_len)
                : LZ4_decompress_safe((const char *)c->payload, (char *)r->raw, (int)c->stored_len,
                                      (int)c->raw_len);
    if (n != (int)c->raw_len)
        goto bad;
    return r->raw;
bad:
    r->status.bad_chunks++;
    return NULL;
}

/* Fields FORMAT.md §2 reserves must be zero: the reserved half-word, the
 * stream of WATERMARK and END, END's arg. A chunk that breaks this despite
 * its good CRC was not written by a writer of any version. */
static bool chunk_fields_ok(const struct trk_chunk *c)
{
    if (c->reserved != 0)
        return false;
    if (c->type != TRK_CHUNK_DATA && c->stream != 0)
        return false;
    return c->type != TRK_CHUNK_END || c->arg == 0;
}

static void handle_chunk(struct trk_reader *r, struct trk_chunk *c)
{
    r->status.chunks++;
    if (!chunk_fields_ok(c)) {
        r->last_was_end = false;
        r->status.bad_chunks++;
        if (c->type == TRK_CHUNK_DATA)
            trk_decode_lost_piece(r, c);
        return;
    }
    r->last_was_end = c->type == TRK_CHUNK_END;
    switch (c->type) {
    case TRK_CHUNK_DATA: {
        const uint8_t *dict = NULL;
        size_t dict_len = 0;
        if ((c->codec == TRK_CODEC_LZ4_LINK && r->info.version >= 6) ||
            (c->codec == TRK_CODEC_ZSTD_LINK && r->info.version >= 7)) {
            /* No history to decode it against: not a bad chunk, a piece
             * of a stream already broken or after a gap. An empty history
             * is a valid dictionary (a stream's first piece). */
            static const uint8_t none[1];
            if (trk_decode_dict(r, c, &dict, &dict_len) < 0) {
                trk_decode_piece(r, c, NULL, c->raw_len);
                break;
            }
            if (!dict)
                dict = none;
        }
        const uint8_t *p = chunk_payload(r, c, dict, dict_len);
        if (p)
            trk_decode_piece(r, c, p, c->raw_len);
        else
            trk_decode_lost_piece(r, c);
        break;
    }
    case TRK_CHUNK_WATERMARK:
        if (c->arg > r->limit)
            r->limit = c->arg;
        break;
    case TRK_CHUNK_END: {
        /* A chunk skipped for its CRC is damage already counted: only what
         * left no trace at all is "missing". */
        r->chunks_before_end = r->status.chunks - 1 + r->status.checksum_failures;
        const uint8_t *p = chunk_payload(r, c, NULL, 0);
        if (p)
            handle_end(r, p, c->raw_len);
        break;
    }
    default:
        r->status.bad_chunks++;
        break;
    }
}

/* The file is over: everything queued may go, and the status is final. */
static void finish(struct trk_reader *r)
{
    r->final = true;
    r->status.end_seen = r->last_was_end;
    if (!r->last_was_end)
        r->status.truncated = true;
    /* END counts every chunk written before it. Fewer in the file means
     * some are gone without a trace (a stream's last piece leaves no gap);
     * more (an END that failed to decode reads as 0) says nothing. */
    if (r->last_was_end && r->status.end_records > r->chunks_before_end)
        r->status.missing_chunks = r->status.end_records - r->chunks_before_end;
}

/* ---- Iteration ------------------------------------------------------------- */

/* Pops the events of the heap's top stream that may go now, up to max:
 * while below the watermark (or at the end) and no later than any other
 * stream's head, so one heap fix-up serves a whole run. */
static int take_run(struct trk_reader *r, struct trk_event *evs, int max)
{
    struct trk_stream *s = &r->streams[r->heap[0].stream];
    uint64_t bound = UINT64_MAX;
    if (r->heap_len > 1)
        bound = r->heap[1].seq;
    if (r->heap_len > 2 && r->heap[2].seq < bound)
        bound = r->heap[2].seq;
    bool release_all = r->final || r->queued > TRK_QUEUED_MAX;
    uint64_t limit = release_all ? UINT64_MAX : r->limit;
    int n = 0;
    while (n < max && s->qhead < s->qtail) {
        const struct trk_event *e = &s->q[s->qhead];
        if ((e->seq >= limit && !release_all) || (n > 0 && e->seq > bound))
            break;
        if (e->seq <= r->last_seq && r->status.events > 0)
            r->status.order_violations++;
        r->last_seq = e->seq;
        r->status.events++;
        evs[n++] = *e;
        s->qhead++;
    }
    r->queued -= (size_t)n;
    if (s->qhead == s->qtail) {
        s->qhead = s->qtail = 0;
        s->in_heap = false;
        if (--r->heap_len > 0) {
            r->heap[0] = r->heap[r->heap_len];
            sift_down(r, 0);
        }
    } else if (n > 0) {
        r->heap[0].seq = s->q[s->qhead].seq;
        sift_down(r, 0);
    }
    return n;
}

int trk_reader_next_batch(struct trk_reader *r, struct trk_event *evs, int max)
{
    if (__builtin_expect(r->inherit_state != INHERIT_DONE, 0)) {
        int k = trk_inherit_next(r, evs, max);
        if (k != 0)
            return k;
    }
    int n = 0;
    while (n < max) {
        if (r->heap_len > 0) {
            int got = take_run(r, evs + n, max - n);
            n += got;
            if (got > 0)
                continue;
        }
        /* Nothing may go yet: hand out what we have before reading on. */
        if (n > 0 || r->final)
            return n;
        struct trk_chunk c;
        int rc = trk_src_next_chunk(r, &c);
        if (rc < 0)
            return -1;
        if (rc == 0)
            finish(r);
        else
            handle_chunk(r, &c);
    }
    return n;
}

int trk_reader_next(struct trk_reader *r, struct trk_event *ev)
{
    return trk_reader_next_batch(r, ev, 1);
}
