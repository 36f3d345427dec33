/* SPDX-License-Identifier: MIT
 *
 * lz_link.c - the writer's linked encoders: LZ4 (codec 3) and zstd (codec
 * 4, trk_lzlink_zstd), docs/FORMAT.md §2, over one history per stream.
 *
 * The writer flushes each thread's new bytes every ~10 ms, and a Python
 * program's stream hands it 1-16 KiB pieces: LZ4 on each piece alone finds
 * only the repeats inside it, though the loop that made the piece made the
 * previous one too. Here each stream keeps an LZ4 stream state whose
 * dictionary is the stream's last raw bytes (up to 64 KiB), which the
 * reader keeps as well (common/lz_hist.h): json_roundtrip.py's capture
 * went from 70 to ~50 KB (bench/results_size.md), and with LZ4 HC under a
 * CPU budget (below) to ~42 KB.
 *
 * zstd (codec 4) takes the same pieces where the writer asks for it
 * (--python-allocators): one frame a piece whose prefix is the same history,
 * from one static context on our own memory (zstd then never mallocs).
 *
 * Owns: the per-stream encoder slots (mapped at a stream's first piece,
 * whichever thread writes it: a raw mmap, no malloc; never unmapped),
 * their history, the zstd context, and HC's CPU budget. Must not: write chunks or decide
 * codecs (the writer does), or run without the writer's flush lock.
 */
#include <lz4.h>
#include <lz4hc.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_initStaticCCtx: no malloc in the traced process */
#include <zstd.h>

#include "capture/lz_link.h"
#include "capture/events.h"
#include "capture/own_mem.h"
#include "common/lz_hist.h"

/* A stream keeps its slot while it writes: a piece looks for its stream
 * among the NSLOT slots and, not finding it, takes a free one, then an
 * unmapped one, then the one used longest ago. (Slots by stream id modulo
 * NSLOT, as before, made two live threads whose ids were equal modulo NSLOT
 * evict each other's history at every piece, and a stream id grows with
 * every thread that ever lived.) A stream that lost its slot starts afresh
 * when it comes back: still correct (an encoder with less history only
 * finds fewer matches), and programs with more than NSLOT busy threads are
 * the heap-record-heavy ones where HUF, not LZ4, wins anyway. */
#define NSLOT 16
/* Pieces up to HIST_ROOM - TRK_LZ_HIST bytes are copied behind the history
 * (LZ4's prefix mode, which sees all of it); longer ones are compressed in
 * place with the history as an external dictionary. */
#define HIST_ROOM (2 * TRK_LZ_HIST)
/* LZ4's thorough setting (acceleration 1) where it is cheap: on short
 * pieces (a program that makes them makes few bytes a second), on a
 * stream's first EARLY_BYTES (written once: a Python program's start-up,
 * 40-100 KiB of stack nodes, shrank ~10% more; an empty script's capture
 * 39.4 -> 35.3 KB, for under a millisecond), and on a stream whose last
 * piece shrank this much (a loop's records: LZ4 spends its time per
 * literal, and there are few). Elsewhere the caller's. */
#define SHORT_PIECE 16384
#define EARLY_BYTES (256u << 10)
#define DENSE       4
/* LZ4's HC encoder writes the same blocks, smaller: on json_roundtrip.py's
 * stream, 970 KB raw in 64 KiB linked blocks, 44.9 KB at acceleration 1,
 * 39.6 KB at HC level 4 (39.0 at 9); its start-up piece, 68.6 KB raw,
 * 33.5 -> ~30.5 KB. But it is ~10x slower: ~190 MB/s on that stream, ~47
 * on heap records. So HC takes a piece while its budget lasts: it earns
 * 1/HC_SHARE of the wall time (0.5% of a core), is spent by the time HC
 * takes (measured), holds at most HC_BURST_NS (also the start: a Python
 * program's start-up fits), and HC resumes once HC_RESUME_NS are saved, so
 * a stream changes encoder rarely (each change to HC indexes the 64 KiB
 * history anew, ~0.3 ms, paid from the budget). A piece under HC_MIN is
 * not worth a slot's 256 KiB HC state (mapped at its first HC piece and
 * kept), unless the stream is on HC already; one over HC_MAX (a busy
 * stream's: ~1.4 ms on HC) would overdraw the budget by more than it
 * holds. */
#define HC_MIN       2048
#define HC_MAX       TRK_LZLINK_HC_MAX
#define HC_LEVEL     4
#define HC_SHARE     200
#define HC_BURST_NS  2000000
#define HC_RESUME_NS 500000
static int64_t hc_budget = HC_BURST_NS;
static uint64_t hc_last_ns;
static int hc_forced; /* tests: 1 always HC, -1 never (trk_lzlink_hc_force) */

struct slot {
    LZ4_stream_t lz;
    uint32_t stream;    /* UINT32_MAX: free */
    uint32_t hlen;      /* the encoder's dictionary ends at hist + hlen */
    uint32_t dense;     /* the last piece shrank DENSE-fold or more */
    uint32_t on_hc;     /* the history is in hc, not in lz */
    uint32_t lz_stale;  /* a zstd piece went by: lz and hc have not seen it */
    uint64_t next;      /* stream offset just after the history */
    uint64_t used;      /* the piece count at its last piece (least recently used goes) */
    LZ4_streamHC_t *hc; /* NULL until the slot's first HC piece */
    uint8_t hist[HIST_ROOM];
};

static struct slot *slots[NSLOT];
static uint64_t pieces; /* pieces compressed: the slots' clock */

/* The slot holding stream's encoder, else the one it takes (see NSLOT),
 * with its index in *at; NULL with *at set where the slot is unmapped. */
static struct slot *slot_for(uint32_t stream, int *at)
{
    int free_at = -1, unmapped = -1, oldest = -1;
    for (int i = 0; i < NSLOT; i++) {
        struct slot *s = slots[i];
        if (!s) {
            unmapped = unmapped < 0 ? i : unmapped;
        } else if (s->stream == stream) {
            *at = i;
            return s;
        } else if (s->stream == UINT32_MAX) {
            free_at = free_at < 0 ? i : free_at;
        } else if (oldest < 0 || s->used < slots[oldest]->used) {
            oldest = i;
        }
    }
    *at = free_at >= 0 ? free_at : unmapped >= 0 ? unmapped : oldest;
    return slots[*at];
}

/* Which encoder takes the piece; the history (its last 64 KiB) moves over
 * to it. */
static int pick_hc(struct slot *s, uint32_t len, uint64_t now)
{
    hc_budget += (int64_t)((now - hc_last_ns) / HC_SHARE);
    if (hc_budget > HC_BURST_NS)
        hc_budget = HC_BURST_NS;
    hc_last_ns = now;
    int hc =
        len <= HC_MAX && (s->on_hc ? hc_budget > 0 : hc_budget > HC_RESUME_NS && len >= HC_MIN);
    if (hc_forced)
        hc = hc_forced > 0 && len <= HC_MAX && (s->on_hc || len >= HC_MIN);
    if (hc && !s->hc) {
        void *m = trk_own_map(TRK_OWN_WRITER, sizeof(LZ4_streamHC_t));
        if (!m || !(s->hc = LZ4_initStreamHC(m, sizeof(LZ4_streamHC_t))))
            return s->on_hc = 0; /* no memory: fast LZ4 it is */
    }
    uint32_t k = s->hlen < TRK_LZ_HIST ? s->hlen : TRK_LZ_HIST;
    const char *d = (const char *)s->hist + s->hlen - k;
    if (hc && !s->on_hc) {
        LZ4_resetStreamHC_fast(s->hc, HC_LEVEL);
        if (k)
            LZ4_loadDictHC(s->hc, d, (int)k);
    } else if (!hc && s->on_hc) {
        LZ4_initStream(&s->lz, sizeof(s->lz));
        if (k)
            LZ4_loadDict(&s->lz, d, (int)k);
    }
    s->on_hc = (uint32_t)hc;
    return hc;
}

void trk_lzlink_hc_force(int mode)
{
    hc_forced = mode;
}

/* Both encoders keep their dictionary where the caller says, and move it
 * to the history's start the same way. */
static int enc_continue(struct slot *s, int hc, const uint8_t *src, uint8_t *dst, uint32_t len,
                        int cap, int accel)
{
    return hc ? LZ4_compress_HC_continue(s->hc, (const char *)src, (char *)dst, (int)len, cap)
              : LZ4_compress_fast_continue(&s->lz, (const char *)src, (char *)dst, (int)len, cap,
                                           accel);
}

static uint32_t enc_save(struct slot *s, int hc)
{
    return (uint32_t)(hc ? LZ4_saveDictHC(s->hc, (char *)s->hist, (int)TRK_LZ_HIST)
                         : LZ4_saveDict(&s->lz, (char *)s->hist, (int)TRK_LZ_HIST));
}

/* The stream's slot, history and all (NULL: no memory), after its piece
 * count; a new stream, or one whose pieces bypassed us, starts with no
 * history (a block that uses less than the reader's dictionary is still
 * exact). */
static struct slot *slot_take(uint32_t stream, uint64_t off)
{
    int at;
    struct slot *s = slot_for(stream, &at);
    if (!s) {
        if (!(s = trk_own_map(TRK_OWN_WRITER, sizeof(*s))))
            return NULL;
        s->stream = UINT32_MAX;
        slots[at] = s;
    }
    s->used = ++pieces;
    if (s->stream != stream || s->next != off) {
        LZ4_initStream(&s->lz, sizeof(s->lz));
        s->stream = stream;
        s->hlen = 0;
        s->dense = 0;
        s->on_hc = 0;
        s->lz_stale = 0;
    }
    return s;
}

int trk_lzlink_compress(uint32_t stream, uint64_t off, const uint8_t *src, uint32_t len,
                        uint8_t *dst, int cap, int accel)
{
    struct slot *s = slot_take(stream, off);
    if (!s)
        return -1;
    if (s->lz_stale) { /* the history grew under zstd: LZ4 takes it up from the bytes */
        uint32_t k = s->hlen < TRK_LZ_HIST ? s->hlen : TRK_LZ_HIST;
        LZ4_initStream(&s->lz, sizeof(s->lz));
        if (k)
            LZ4_loadDict(&s->lz, (const char *)s->hist + s->hlen - k, (int)k);
        s->on_hc = 0;
        s->lz_stale = 0;
    }
    if (len < SHORT_PIECE || off < EARLY_BYTES || s->dense)
        accel = 1;
    uint64_t t0 = trk_now_ns();
    if (!hc_last_ns)
        hc_last_ns = t0;
    int hc = pick_hc(s, len, t0);
    int n;
    if (len <= HIST_ROOM - TRK_LZ_HIST) {
        if (s->hlen + len > HIST_ROOM)
            s->hlen = enc_save(s, hc);
        memcpy(s->hist + s->hlen, src, len);
        n = enc_continue(s, hc, s->hist + s->hlen, dst, len, cap, accel);
        s->hlen += len;
    } else {
        n = enc_continue(s, hc, src, dst, len, cap, accel);
        /* src is the ring's: the history must not point into it */
        s->hlen = enc_save(s, hc);
    }
    if (hc)
        hc_budget -= (int64_t)(trk_now_ns() - t0);
    if (n <= 0) {
        s->stream = UINT32_MAX;
        return 0;
    }
    s->next = off + len;
    s->dense = (uint32_t)n * DENSE <= len;
    return n;
}

/* zstd's level: 3 took the --python-allocators streams of bench/workloads
 * to 1.4-3.7x smaller than linked LZ4 (py_alloc_churn's 868 MB: 102 MB
 * under LZ4, 86 MB at level 1, 33 MB at 3), at 46-1000 MB/s depending on
 * the stream (bench/results_size.md). */
#define ZSTD_LEVEL 3
/* One context for every stream (the writer's flush lock serialises them),
 * on our own memory: 1.3 MiB at level 3, mapped at the first zstd piece. */
static ZSTD_CCtx *zc;

/* The piece's bytes after the history's, keeping at least its last
 * TRK_LZ_HIST bytes in hist (what the reader keeps: common/lz_hist.h). */
static void hist_append(struct slot *s, const uint8_t *src, uint32_t len)
{
    if (len >= TRK_LZ_HIST) {
        memcpy(s->hist, src + len - TRK_LZ_HIST, TRK_LZ_HIST);
        s->hlen = TRK_LZ_HIST;
        return;
    }
    if (s->hlen + len > HIST_ROOM) {
        uint32_t k = s->hlen < TRK_LZ_HIST ? s->hlen : TRK_LZ_HIST;
        memmove(s->hist, s->hist + s->hlen - k, k);
        s->hlen = k;
    }
    memcpy(s->hist + s->hlen, src, len);
    s->hlen += len;
}

int trk_lzlink_zstd(uint32_t stream, uint64_t off, const uint8_t *src, uint32_t len, uint8_t *dst,
                    int cap)
{
    if (!zc) {
        size_t need = ZSTD_estimateCCtxSize(ZSTD_LEVEL);
        void *m = trk_own_map(TRK_OWN_WRITER, need);
        if (!m || !(zc = ZSTD_initStaticCCtx(m, need)) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(zc, ZSTD_c_compressionLevel, ZSTD_LEVEL)))
            return zc = NULL, -1;
    }
    struct slot *s = slot_take(stream, off);
    if (!s)
        return -1;
    uint32_t k = s->hlen < TRK_LZ_HIST ? s->hlen : TRK_LZ_HIST;
    size_t n = 0;
    if (!ZSTD_isError(ZSTD_CCtx_reset(zc, ZSTD_reset_session_only)) &&
        (!k || !ZSTD_isError(ZSTD_CCtx_refPrefix(zc, s->hist + s->hlen - k, k)))) {
        n = ZSTD_compress2(zc, dst, (size_t)cap, src, len);
        n = ZSTD_isError(n) ? 0 : n;
    }
    /* Whatever the caller writes, the piece is in the history. */
    hist_append(s, src, len);
    s->lz_stale = 1;
    s->next = off + len;
    return (int)n;
}

void trk_lzlink_drop(uint32_t stream)
{
    for (int i = 0; i < NSLOT; i++)
        if (slots[i] && slots[i]->stream == stream)
            slots[i]->stream = UINT32_MAX;
}

void trk_lzlink_fork_child(void)
{
    hc_budget = HC_BURST_NS; /* the child's capture starts anew */
    hc_last_ns = 0;
    for (int i = 0; i < NSLOT; i++)
        if (slots[i])
            slots[i]->stream = UINT32_MAX;
}
