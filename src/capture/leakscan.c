/* SPDX-License-Identifier: MIT
 *
 * leakscan.c - the exit-time leak scan's driver (leakscan.h): rebuild the
 * live block set from the capture (leak_live.c), mark from the roots
 * (leak_roots.c, leak_mark.c), and write the result into the exiting
 * thread's stream as one LEAK_SCAN record and a LEAK record per block
 * (docs/FORMAT.md §4a). Must not: wait for the writer thread (the caller
 * holds its lock; a full ring is drained through the caller's drain).
 */
#include "capture/leakscan.h"
#include "capture/events.h"
#include "capture/output.h"
#include "prim/sys.h"

struct emit {
    struct trk_thread *t;
    trk_leakscan_drain_fn drain;
    uint64_t ts;
    int broken;
};

static const uint8_t class_of[] = {
    [TRK_LB_UNREACHED] = TRK_LEAK_DEFINITE,
    [TRK_LB_INDIRECT] = TRK_LEAK_INDIRECT,
    [TRK_LB_POSSIBLE] = TRK_LEAK_POSSIBLE,
    [TRK_LB_REACHABLE] = TRK_LEAK_REACHABLE,
};

/* Room for one record, draining the ring into the file when it is full. */
static int room(struct emit *e)
{
    if (e->broken)
        return -1;
    if (trk_ring_free(e->t) < TRK_REC_MAX)
        e->drain();
    if (trk_ring_free(e->t) < TRK_REC_MAX) {
        e->broken = 1;
        return -1;
    }
    return 0;
}

static void put(struct emit *e, const uint8_t *buf, const uint8_t *end, uint64_t seq)
{
    if (trk_ring_put(e->t, buf, (size_t)(end - buf)) == 0) {
        e->t->last_seq = seq;
        trk_commit(e->t);
    } else {
        e->broken = 1;
    }
}

static void emit_scan(struct emit *e, uint32_t flags, uint64_t blocks, uint64_t roots)
{
    uint8_t buf[TRK_REC_MAX];
    if (room(e))
        return;
    uint64_t seq = trk_ev_seq();
    uint8_t *end = trk_enc_leak_scan(buf, &e->t->enc, seq, e->ts, flags, blocks, roots);
    put(e, buf, end, seq);
}

static void emit_blocks(struct emit *e, const struct trk_lset *s)
{
    uint8_t buf[TRK_REC_MAX];
    for (size_t i = 0; i < s->n && !room(e); i++) {
        const struct trk_lblock *b = &s->v[i];
        uint64_t leader = b->state == TRK_LB_INDIRECT ? s->v[b->leader].addr : 0;
        uint64_t seq = trk_ev_seq();
        uint8_t *end =
            trk_enc_leak(buf, &e->t->enc, seq, e->ts, b->addr, class_of[b->state], leader);
        put(e, buf, end, seq);
    }
}

void trk_leakscan_run(struct trk_thread *t, int fd, const void *stack_top,
                      trk_leakscan_drain_fn drain)
{
    if (!t || fd < 0)
        return;
    struct trk_lset s;
    uint32_t flags = 0;
    if (trk_lset_load(&s, fd) != 0) {
        flags = TRK_LEAKF_INCOMPLETE;
    } else {
        if (trk_output_inherits())
            s.flags |= TRK_LEAKF_INHERITED;
        trk_lroots_scan(&s, stack_top);
    }
    flags |= s.flags;
    struct emit e = {.t = t, .drain = drain, .ts = trk_now_ns()};
    uint64_t n = flags & TRK_LEAKF_INCOMPLETE ? 0 : s.n;
    emit_scan(&e, flags, n, s.root_bytes);
    if (n)
        emit_blocks(&e, &s);
    trk_lset_free(&s);
}
