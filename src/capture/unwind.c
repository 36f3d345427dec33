/* SPDX-License-Identifier: MIT
 *
 * unwind.c - the own unwinder's hot path: a walk over the calling thread's
 * stack with one packed CFA rule per return address, cached in a lock-free
 * table shared by every thread, and the per-thread walk memo that replays
 * walks seen before. The differential check against libunwind
 * (TRACKER_UNWIND_CHECK) is unwind_check.c; walks that end at a stop frame
 * are unwind_stop.c; the step both use is unwind_walk.h.
 *
 * It gives exactly the frames libunwind's unw_backtrace gives (1.6 x86_64
 * fast trace: return addresses, not minus one; a frame whose return address
 * is undefined ends the walk; an address under 0x4000 ends it), or -1 when
 * any frame is not a standard one: the caller then runs libunwind for the
 * whole walk, so that signal frames, DWARF expressions, code without unwind
 * info and JIT code are libunwind's answer by construction. Never takes a
 * lock, never allocates on the walk; rules are read on a miss by
 * unwind_cfi.c. Must not call stdio (trk_log only, once).
 */
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/config.h"
#include "capture/own_mem.h"
#include "capture/unwind.h"
#include "capture/unwind_walk.h"
#include "prim/sys.h"

int trk_unwind_own;

/* ---- Rule cache ------------------------------------------------------------
 *
 * Open addressing, linear probing over 16 slots, keyed by lookup address (a
 * return address minus one). A key, once claimed, never changes, so a rule
 * read beside a matching key is that key's rule (0: not read yet). When an
 * object is unloaded, the rules of its address range are zeroed
 * (trk_unwind_forget_range), so that an object loaded there next is read
 * afresh.
 *
 * The table doubles when half full or when a probe window is full in a
 * table over a quarter full (import torch sees some 60,000 return
 * addresses: 128 Ki entries, 2 MiB), from 16 Ki entries (256 KiB of
 * address space) up to 1 Mi (16 MiB). A walk may still be in the table it
 * outgrew, so that one stays mapped, but its pages go back to the system
 * (MADV_DONTNEED): a walk there reads empty slots, i.e. misses, and
 * computes the rule. Past the largest size a rule that finds no slot is
 * computed each time (slow, still right). */
#define RC_BITS_MIN 14
#define RC_BITS_MAX 20
#define RC_PROBE    16
_Atomic(struct rc_table *) trk_unwind_rct;

static size_t rc_len(unsigned bits)
{
    return sizeof(struct rc_table) + (sizeof(struct rc_ent) << bits);
}

/* Counted as the tracker's own memory (own_mem.h, `tracker stats`). */
static struct rc_table *rc_new(unsigned bits)
{
    struct rc_table *t = trk_own_map(TRK_OWN_UNWIND, rc_len(bits));
    if (t)
        t->bits = bits;
    return t;
}

void trk_unwind_configure(int own, unsigned every)
{
    trk_unwind_check_every(every);
    if (!own || atomic_load(&trk_unwind_rct))
        return;
    atomic_store(&trk_unwind_rct, rc_new(RC_BITS_MIN));
    trk_unwind_own = atomic_load(&trk_unwind_rct) != NULL;
}

/* Raw syscalls only: this may run in a signal handler. */
__attribute__((noinline)) static void rc_grow(struct rc_table *old)
{
    if (old->bits >= RC_BITS_MAX ||
        atomic_load_explicit(&trk_unwind_rct, memory_order_relaxed) != old)
        return;
    struct rc_table *t = rc_new(old->bits + 1);
    if (!t)
        return;
    size_t old_len = rc_len(old->bits);
    if (!atomic_compare_exchange_strong(&trk_unwind_rct, &old, t)) {
        trk_own_unmap(TRK_OWN_UNWIND, t, rc_len(t->bits));
        return;
    }
    /* all but the first page: the header (bits) must stay as it was for a
     * reader that loaded the old table just before the switch */
    uintptr_t first = (uintptr_t)old + 4096;
    uintptr_t end = (uintptr_t)old + old_len;
    if (end > first) {
        syscall(SYS_madvise, (void *)first, (size_t)(end - first), MADV_DONTNEED);
        trk_own_add(TRK_OWN_UNWIND, -(int64_t)(trk_own_pages(old_len) - 4096), 0);
    }
}

__attribute__((noinline)) static uint64_t rule_fill(struct rc_ent *e, uintptr_t pc)
{
    uint64_t r = trk_unwind_rule_lookup(pc);
    if (!r) /* no module holds pc yet: not cached, the table may catch up */
        return trk_ur_pack(TRK_UR_FALLBACK, 0, 0, 0);
    if (e)
        atomic_store_explicit(&e->val, r, memory_order_relaxed);
    return r;
}

/* The probe beyond the first slot, and every rule that is not a cached
 * standard one (a miss, LAST, FALLBACK). */
__attribute__((noinline)) uint64_t trk_unwind_rule_slow(uintptr_t pc)
{
    struct rc_table *t = atomic_load_explicit(&trk_unwind_rct, memory_order_acquire);
    uint64_t h = (pc * 0x9E3779B97F4A7C15ULL) >> (64 - t->bits);
    uint64_t mask = ((uint64_t)1 << t->bits) - 1;
    for (unsigned i = 0; i < RC_PROBE; i++) {
        struct rc_ent *e = &t->e[(h + i) & mask];
        uintptr_t k = atomic_load_explicit(&e->key, memory_order_relaxed);
        if (k == pc) {
            uint64_t v = atomic_load_explicit(&e->val, memory_order_relaxed);
            if (v != 0)
                return v;
            return rule_fill(e, pc);
        }
        if (k == 0) {
            if (atomic_compare_exchange_strong_explicit(&e->key, &k, pc, memory_order_relaxed,
                                                        memory_order_relaxed)) {
                unsigned used = atomic_fetch_add_explicit(&t->used, 1, memory_order_relaxed);
                uint64_t r = rule_fill(e, pc);
                if (used + 1 > (1u << t->bits) / 2)
                    rc_grow(t);
                return r;
            }
            if (k == pc)
                return rule_fill(e, pc);
        }
    }
    /* a full window in a quarter-full table is bad luck, not growth */
    if (atomic_load_explicit(&t->used, memory_order_relaxed) > (1u << t->bits) / 4)
        rc_grow(t);
    return rule_fill(NULL, pc);
}

_Atomic uint32_t trk_unwind_memo_gen;

void trk_unwind_forget_range(uintptr_t lo, uintptr_t hi)
{
    /* Every memoized walk may have used these rules (see walk_memo). Once
     * before, once after: a walk that began in between, and may have read
     * a rule being cleared, is left with a generation no longer current. */
    atomic_fetch_add_explicit(&trk_unwind_memo_gen, 1, memory_order_release);
    struct rc_table *t = atomic_load(&trk_unwind_rct);
    if (!t)
        return;
    for (size_t i = 0; i < ((size_t)1 << t->bits); i++) {
        uintptr_t k = atomic_load_explicit(&t->e[i].key, memory_order_relaxed);
        if (k - lo < hi - lo)
            atomic_store_explicit(&t->e[i].val, 0, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&trk_unwind_memo_gen, 1, memory_order_release);
}

/* ---- Walk memo --------------------------------------------------------------
 *
 * A walk is a pure function of its start state (pc, rsp, rbp), of the rules
 * (fixed while trk_unwind_memo_gen is: trk_unwind_forget_range bumps it), and of the
 * stack words it reads: each frame's return address at CFA-8 and, where the
 * frame saved rbp, that slot. So a walk from a state a recorded walk started
 * from, which finds the same word at every address that walk read, gives
 * that walk's frames. The replay compares those words in order instead of
 * finding and applying a rule per frame; each address it reads follows from
 * the words already found equal, so it reads exactly what the walk would,
 * and cannot fault where the walk would not. Where a word differs, the state
 * at that frame is still the recorded one: the walk goes on from there and
 * records the rest over the entry.
 *
 * Per thread (a signal handler that allocates mid-walk finds the memo busy
 * and walks plainly): MEMO_WAYS entries, two ways a set keyed by start
 * state, of MEMO_LEVELS frames each; a longer walk chains into the entry of
 * the state where the previous one ends, so a deep stack is a few entries. */
#define MEMO_WAYS   64
#define MEMO_LEVELS 24
/* An entry also ends after the first frame whose CFA leaves the 2 KiB of
 * stack its first frame is in: walks that differ in depth below still end
 * their entries at the same frames above, so the entries above are found
 * again (entries cut every 24 frames from the start are not). */
#define MEMO_LINE_SHIFT 11
/* A walk's first entry is recorded only for a start state seen before:
 * where nearly every allocation comes from a call site of its own (import
 * torch: a library's static constructors, 1.1 M walks), recording the
 * first frames cost about twice a plain step, plus the entry's upkeep,
 * and evicted entries that were found again. */
#define MEMO_SEEN 128 /* 16-bit tags: with sc[], the memo is 92,624 bytes (23 pages) */
struct memo_lvl {
    uintptr_t cfa, ra;
};
struct memo_ent {
    uintptr_t pc0, sp0, bp0;
    uint32_t gen;
    uint16_t nlev;         /* levels recorded; 0: empty */
    uint8_t needs_bp;      /* a rule reads bp0 before any frame restores rbp */
    uint8_t ended;         /* the walk returned after nlev levels (a LAST rule) */
    uint8_t nskip;         /* levels in the skipped range (our frames) */
    uint8_t nout;          /* addresses the levels give */
    uint8_t nchk;          /* saved-rbp words the fast replay compares, in chk */
    uint8_t next;          /* 1 + the entry the walk went on with last time (walk_memo) */
    uint32_t usebp;        /* bit i: level i's rule reads rbp */
    uint32_t live;         /* bit i: level i's saved rbp is read later (memo_finish) */
    uint32_t used;         /* memo_find's clock when last found or claimed */
    struct trk_memo_id id; /* stacks.c's, for a walk this entry gives whole */
    uintptr_t bp_end;      /* rbp after the last level (the last one read) */
    struct memo_lvl lv[MEMO_LEVELS];
    uintptr_t bpv[MEMO_LEVELS]; /* the saved rbp read at cfa[-slot] */
    uint16_t slot[MEMO_LEVELS]; /* 0: the frame did not save rbp */
    /* The saved-rbp words whose value a later rule reads (and the last
     * one, which the walk carries on with): a word that is read and then
     * overwritten by the next frame's before any rule uses it cannot
     * change the walk, and in code without frame pointers, where rbp is a
     * saved general register, it differs from call to call. */
    struct {
        uintptr_t addr, val;
    } chk[MEMO_LEVELS];
    /* Where nskip > 0: the addresses the levels give, in order, so that
     * the fast replay compares and then copies instead of testing each
     * address against our range (import torch: 2 in 3 replayed frames are
     * in entries holding our dlopen and import wrappers). */
    uintptr_t out[MEMO_LEVELS];
};
_Static_assert(MEMO_LEVELS <= 32, "usebp and live are 32-bit masks");
/* The levels of an entry beyond the frame where a walk left it, kept
 * while that walk records over them: where it reaches one of their
 * states again (same CFA, return address and, where a later rule reads
 * it, rbp), the rest is theirs, compared word by word as a replay is. A
 * program's stacks differ near the allocation and agree further up. */
struct memo_old {
    unsigned n, j;
    uint8_t ended;
    uint32_t usebp, live;
    uintptr_t bp_in; /* rbp before the first of them */
    struct memo_lvl lv[MEMO_LEVELS];
    uintptr_t bpv[MEMO_LEVELS];
    uint16_t slot[MEMO_LEVELS];
};

struct trk_unwind_memo {
    int busy;
    uint32_t clock; /* memo_find's: which way was used last */
    /* Where most frames are stepped with rules anyway (stacks that differ
     * all the way up each time), recording costs more than it saves:
     * walk_any then walks plainly for a while. */
    uint32_t walks, bypass;
    uint64_t frames, recorded;
    struct memo_ent *last; /* the entry that gave the last walk whole */
    struct memo_old old;   /* walk_memo's (not on the stack: a sigaltstack is small) */
    /* Start states a walk began at lately that no entry holds (a tag per
     * hash, walk_memo): one seen the first time is walked plainly. */
    uint16_t seen[MEMO_SEEN];
    struct trk_unwind_sc sc; /* stopped walks' (unwind_stop.c) */
    struct memo_ent e[MEMO_WAYS];
};

struct trk_memo_id *trk_unwind_memo_last(struct trk_unwind_memo *m)
{
    return m->last ? &m->last->id : NULL;
}

size_t trk_unwind_memo_size(void)
{
    return sizeof(struct trk_unwind_memo);
}

struct trk_unwind_memo *trk_unwind_memo_new(void)
{
    return trk_own_map(TRK_OWN_UNWIND, sizeof(struct trk_unwind_memo));
}

/* Two ways a set: with one, two start states that hash alike (a dozen in
 * a loop is common) evict each other on every walk. */
static inline int memo_key_is(const struct memo_ent *e, uintptr_t pc, uintptr_t sp, uintptr_t bp,
                              uint32_t gen)
{
    return e->nlev && e->pc0 == pc && e->sp0 == sp && e->gen == gen &&
           (!e->needs_bp || e->bp0 == bp);
}

/* The entry for a start state: the one holding it, or the way to record
 * it in (the one used longer ago). */
static inline struct memo_ent *memo_find(struct trk_unwind_memo *m, uintptr_t pc, uintptr_t sp,
                                         uintptr_t bp, uint32_t gen, int *hit)
{
    uint64_t h = ((uint64_t)pc ^ ((uint64_t)sp << 17)) * 0x9E3779B97F4A7C15ULL;
    struct memo_ent *e = &m->e[(h >> (64 - 5)) * 2];
    uint32_t now = ++m->clock;
    for (int w = 0; w < 2; w++)
        if (memo_key_is(&e[w], pc, sp, bp, gen)) {
            e[w].used = now;
            *hit = 1;
            return &e[w];
        }
    *hit = 0;
    struct memo_ent *v = (int32_t)(e[0].used - e[1].used) <= 0 ? &e[0] : &e[1];
    v->used = now;
    return v;
}
_Static_assert(MEMO_WAYS == 64, "memo_find takes 5 bits: 32 sets of 2");

/* Makes levels [0, nlev) of a recorded entry valid, with what the fast
 * replay needs to know about them: one pass from the end back (it runs at
 * every entry recorded, ~900,000 times on import torch). */
static void memo_finish(struct memo_ent *e, unsigned nlev, int ended, uintptr_t skip_lo,
                        uintptr_t span)
{
    unsigned nskip = 0, nout = 0, nchk = 0;
    /* rbp is live after the last level (the walk may go on with it) */
    uint32_t live = 1, live_mask = 0, usebp = e->usebp;
    unsigned first_slot = nlev; /* the innermost level that restores rbp */
    for (unsigned i = nlev; i-- > 0;) {
        uintptr_t ra = e->lv[i].ra;
        if (ra >= 0x4000) { /* else the last: the walk ends there */
            unsigned ours = ra - skip_lo < span;
            nskip += ours;
            nout += !ours;
        }
        unsigned slot = e->slot[i];
        if (slot) {
            if (live) {
                live_mask |= 1u << i;
                e->chk[nchk].addr = e->lv[i].cfa - 8u * slot;
                e->chk[nchk].val = e->bpv[i];
                nchk++;
            }
            live = 0;
            first_slot = i;
        }
        live |= (usebp >> i) & 1;
    }
    e->live = live_mask;
    if (nskip)
        for (unsigned i = 0, k = 0; i < nlev; i++) {
            uintptr_t ra = e->lv[i].ra;
            if (ra >= 0x4000 && ra - skip_lo >= span)
                e->out[k++] = ra;
        }
    /* the outermost level that restores rbp is the first one found above,
     * always live: rbp after the last level */
    e->bp_end = nchk ? e->chk[0].val : 0;
    /* the key's rbp counts when a rule reads it before any level restores
     * it: a level up to and including the first that restores it */
    unsigned upto = first_slot < nlev ? first_slot + 1 : nlev;
    e->needs_bp = (upto >= 32 ? usebp : usebp & ((1u << upto) - 1u)) != 0;
    e->nchk = (uint8_t)nchk;
    e->nskip = (uint8_t)nskip;
    e->nout = (uint8_t)nout;
    e->ended = (uint8_t)ended;
    e->nlev = (uint16_t)nlev;
}

/* Every level of e reads as recorded: one load and compare a frame (and
 * one a live saved rbp), its address stored at once; in an entry holding
 * one of ours (the hook's, or a wrapper's mid-stack: dlopen's while a
 * library's constructors allocate), e->out copied after. ips has room for
 * max + 32, and the count is cut to max after. 0 at the first difference. */
static inline int memo_fast(const struct memo_ent *e, uintptr_t *ips, int n)
{
    const struct memo_lvl *l = e->lv;
    uintptr_t *o = ips + n;
    unsigned nl = e->nlev, nc = e->nchk;
    if (TRK_LIKELY(e->nskip == 0)) {
        for (unsigned i = 0; i < nl; i++) {
            uintptr_t ra = l[i].ra;
            if (((const uintptr_t *)l[i].cfa)[-1] != ra)
                return 0;
            o[i] = ra;
        }
    } else {
        for (unsigned i = 0; i < nl; i++)
            if (((const uintptr_t *)l[i].cfa)[-1] != l[i].ra)
                return 0;
        for (unsigned k = 0, no = e->nout; k < no; k++)
            o[k] = e->out[k];
    }
    for (unsigned c = 0; c < nc; c++)
        if (*(const uintptr_t *)e->chk[c].addr != e->chk[c].val)
            return 0;
    return 1;
}

/* rbp after old level x, and whether a later old level's rule reads it
 * (the last one's always counts: the walk may go on with it). */
static int old_bp_after(const struct memo_old *o, unsigned x, uintptr_t *bp)
{
    *bp = o->bp_in;
    for (unsigned y = 0; y <= x; y++)
        if (o->slot[y])
            *bp = o->bpv[y];
    for (unsigned y = x + 1; y < o->n; y++) {
        if ((o->usebp >> y) & 1)
            return 1;
        if (o->slot[y])
            return 0;
    }
    return 1;
}

/* Records one level at index i of e. */
static inline void rec_level(struct memo_ent *e, unsigned i, uintptr_t cfa, uintptr_t ra,
                             unsigned slot, uintptr_t bpv, int use_bp)
{
    e->lv[i].cfa = cfa;
    e->lv[i].ra = ra;
    e->slot[i] = (uint16_t)slot;
    e->bpv[i] = bpv;
    if (use_bp)
        e->usebp |= 1u << i;
}

/* Whether an entry that started at e->sp0 ends at a frame with this CFA. */
static inline int seg_end(const struct memo_ent *e, uintptr_t cfa)
{
    return ((cfa ^ e->sp0) >> MEMO_LINE_SHIFT) != 0;
}

/* After the walk's level at index *i (its state in w) matched old level
 * o->j: the old levels after it, compared, recorded and taken. Returns as
 * w_take, or 2 when the entry is full or the old levels differ or run out
 * with the walk still going (the caller goes on from w), or 4 when the
 * entry ends at *i (seg_end). */
static int splice(struct memo_ent *e, unsigned *i, struct wstate *w, struct memo_old *o)
{
    for (unsigned x = o->j + 1; x < o->n; x++) {
        if (*i + 1 == MEMO_LEVELS)
            return 2;
        const uintptr_t *c = (const uintptr_t *)o->lv[x].cfa;
        if (c[-1] != o->lv[x].ra)
            return 2;
        uintptr_t v = o->slot[x] ? c[-(intptr_t)o->slot[x]] : 0;
        if (((o->live >> x) & 1) && v != o->bpv[x])
            return 2; /* a saved rbp a later rule reads (memo_replay) */
        ++*i;
        rec_level(e, *i, o->lv[x].cfa, o->lv[x].ra, o->slot[x], v, (o->usebp >> x) & 1);
        if (o->slot[x])
            w->bp = v;
        w->sp = o->lv[x].cfa;
        int r = w_take(w, o->lv[x].ra);
        if (r <= 0)
            return r;
        if (seg_end(e, w->sp))
            return 4;
    }
    o->n = 0; /* used up */
    return o->ended ? 3 : 2;
}

/* Walks from w's state recording into e from level i (levels before stay),
 * splicing in o's levels where the walk meets them. 1: go on with the next
 * entry; 0: the walk is done; -1: libunwind's. */
__attribute__((noinline)) static int memo_record(struct trk_unwind_memo *m, struct memo_ent *e,
                                                 unsigned i, struct wstate *w, struct memo_old *o,
                                                 int first)
{
    e->usebp &= (1u << i) - 1u; /* i < 32 here */
    e->id.id = 0;               /* stacks.c's id was for the frames replaced now */
    e->nlev = 0;
    for (;; i++) {
        if (i == MEMO_LEVELS) {
            memo_finish(e, i, 0, w->skip_lo, w->span);
            return 1; /* on in the entry of this state */
        }
        uint64_t rule;
        uintptr_t ra;
        int r = w_step(w, &rule, &ra);
        if (TRK_UNLIKELY(r <= 0)) {
            if (r < 0)
                return -1; /* nlev 0: the entry stays empty */
            if (i) {
                memo_finish(e, i, 1, w->skip_lo, w->span);
                if (first)
                    m->last = e;
            }
            return 0;
        }
        uintptr_t cfa = w->sp;
        unsigned slot = (unsigned)(rule >> 19) & 0x1fff;
        rec_level(e, i, cfa, ra, slot, slot ? w->bp : 0, (rule & (1u << 18)) != 0);
        w->recorded++;
        r = w_take(w, ra);
        if (r > 0 && o->n) {
            while (o->j < o->n && o->lv[o->j].cfa < cfa)
                o->j++;
            uintptr_t obp;
            if (o->j < o->n && o->lv[o->j].cfa == cfa && o->lv[o->j].ra == ra &&
                (!old_bp_after(o, o->j, &obp) || obp == w->bp)) {
                r = splice(e, &i, w, o);
                if (r == 3) { /* the old levels ended the walk (a LAST rule) */
                    memo_finish(e, i + 1, 1, w->skip_lo, w->span);
                    if (first)
                        m->last = e;
                    return 0;
                }
                if (r == 4) {
                    memo_finish(e, i + 1, 0, w->skip_lo, w->span);
                    return 1;
                }
                r = r == 2 ? 1 : r;
                o->n = 0;
            }
        }
        if (r > 0 && seg_end(e, w->sp) && i + 1 < MEMO_LEVELS) {
            memo_finish(e, i + 1, 0, w->skip_lo, w->span);
            return 1; /* on in the entry of the state after this frame */
        }
        if (r <= 0) {
            if (r == 0) {
                memo_finish(e, i + 1, 0, w->skip_lo, w->span);
                if (first)
                    m->last = e;
            }
            return r;
        }
    }
}

/* Replays e from w's state, frame by frame, up to the first difference.
 * Returns as w_take, or 2 when all of e read as recorded (*i = nlev), or 3
 * when a frame differs (*i its level; w holds the state before it). */
__attribute__((noinline)) static int memo_replay(const struct memo_ent *e, unsigned *i,
                                                 struct wstate *w)
{
    for (*i = 0; *i < e->nlev; ++*i) {
        const struct memo_lvl *l = &e->lv[*i];
        const uintptr_t *c = (const uintptr_t *)l->cfa;
        if (c[-1] != l->ra)
            return 3;
        if (e->slot[*i]) {
            /* a saved rbp no later rule reads may differ (rbp is a general
             * register in code without frame pointers): the walk carries
             * the word as it is now */
            uintptr_t v = c[-(intptr_t)e->slot[*i]];
            if (((e->live >> *i) & 1) && v != e->bpv[*i])
                return 3;
            w->bp = v;
        }
        w->sp = l->cfa;
        int r = w_take(w, l->ra);
        if (r <= 0)
            return r;
    }
    return 2;
}

/* Whether a start state no entry holds is seen the first time in a while
 * (1) or not (0): a tag per hash, so another state may pass for it now
 * and then (it is then recorded, which is only slower). */
static inline int memo_first_seen(struct trk_unwind_memo *m, uintptr_t pc, uintptr_t sp)
{
    uint64_t h = ((uint64_t)pc ^ ((uint64_t)sp << 17)) * 0xC2B2AE3D27D4EB4FULL;
    uint16_t *slot = &m->seen[h >> (64 - 7)], tag = (uint16_t)((uint16_t)(h >> 16) | 1u);
    if (*slot == tag)
        return 0;
    *slot = tag;
    return 1;
}
_Static_assert(MEMO_SEEN == 128, "memo_first_seen takes 7 bits");

/* The frames an entry recorded from w's state would hold, walked plainly:
 * up to where memo_record would end that entry (a 2 KiB line left, or
 * MEMO_LEVELS levels), so that the walk meets the entries above at their
 * start states. Returns as memo_record: 1 go on with the next entry, 0
 * the walk is done, -1 libunwind's. */
static int walk_seg(struct wstate *w)
{
    uintptr_t sp0 = w->sp;
    for (unsigned i = 0; i < MEMO_LEVELS; i++) {
        uint64_t rule;
        uintptr_t ra;
        int r = w_step(w, &rule, &ra);
        if (r > 0) {
            w->recorded++; /* stepped with a rule, as walk_any counts */
            r = w_take(w, ra);
        }
        if (r <= 0)
            return r;
        if (((w->sp ^ sp0) >> MEMO_LINE_SHIFT) != 0 && i + 1 < MEMO_LEVELS)
            return 1;
    }
    return 1;
}

/* walk() with the memo: the same frames, the same -1 cases. */
static inline __attribute__((always_inline)) int walk_memo(struct trk_unwind_memo *m,
                                                           struct wstate *w)
{
    uint32_t gen = atomic_load_explicit(&trk_unwind_memo_gen, memory_order_acquire);
    m->last = NULL;
    struct memo_old *o = &m->old;
    /* The entry that ended where this state begins: the one it went on
     * with last time is nearly always the one again (a program's stacks
     * agree further up), so its key is compared before memo_find hashes
     * (~25 of memo_find's ~40 instructions, ~6 entries a walk on import
     * torch). Only a hint: the key decides. */
    struct memo_ent *prev = NULL;
    for (int first = 1;; first = 0) {
        int hit;
        struct memo_ent *e;
        if (prev && prev->next && memo_key_is(&m->e[prev->next - 1], w->pc, w->sp, w->bp, gen)) {
            e = &m->e[prev->next - 1];
            e->used = ++m->clock;
            hit = 1;
        } else {
            e = memo_find(m, w->pc, w->sp, w->bp, gen, &hit);
            if (prev)
                prev->next = (uint8_t)(e - m->e + 1);
        }
        prev = e;
        unsigned i = 0;
        o->n = 0;
        if (hit) {
            if (TRK_LIKELY(w->skipped + e->nskip <= 64 && memo_fast(e, w->ips, w->n))) {
                const struct memo_lvl *l = &e->lv[e->nlev - 1];
                w->n += e->nout;
                if (w->n >= w->max || e->ended || l->ra < 0x4000) {
                    if (first)
                        m->last = e;
                    return w->n >= w->max ? w->max : w->n;
                }
                w->skipped += e->nskip;
                if (e->nchk)
                    w->bp = e->bp_end;
                w->sp = l->cfa;
                w->pc = l->ra - 1;
                continue;
            }
            int r = memo_replay(e, &i, w);
            if (r <= 0)
                return r < 0 ? -1 : w->n;
            if (r == 2) {
                if (e->ended)
                    return w->n;
                continue;
            }
            /* differs at level i: keep the levels after it to splice */
            o->n = e->nlev - i;
            o->j = 0;
            o->ended = e->ended;
            o->usebp = e->usebp >> i;
            o->live = e->live >> i;
            o->bp_in = w->bp;
            memcpy(o->lv, e->lv + i, sizeof(o->lv[0]) * o->n);
            memcpy(o->bpv, e->bpv + i, sizeof(o->bpv[0]) * o->n);
            memcpy(o->slot, e->slot + i, sizeof(o->slot[0]) * o->n);
        } else {
            if (first && memo_first_seen(m, w->pc, w->sp)) {
                prev = NULL; /* e is not this segment's */
                int r = walk_seg(w);
                if (r <= 0)
                    return r < 0 ? -1 : w->n;
                continue;
            }
            e->pc0 = w->pc;
            e->sp0 = w->sp;
            e->gen = gen;
        }
        if (i == 0)
            e->bp0 = w->bp;
        int r = memo_record(m, e, i, w, o, first);
        if (r <= 0)
            return r < 0 ? -1 : w->n;
    }
}

/* The memo when this thread has one and is not already walking with it. */
static inline __attribute__((always_inline)) int walk_any(struct trk_unwind_memo *m, uintptr_t pc,
                                                          uintptr_t sp, uintptr_t bp, int n,
                                                          uintptr_t *ips, int max,
                                                          uintptr_t skip_lo, uintptr_t skip_hi)
{
    struct wstate w = {pc, sp, bp, ips, n, max, 0, skip_lo, skip_hi - skip_lo, 0};
    if (TRK_UNLIKELY(trk_unwind_stop.span)) {
        uintptr_t lo = trk_unwind_stop.lo, span = trk_unwind_stop.span;
        if (!m || m->busy)
            return trk_unwind_walk_stop(&w, lo, span);
        m->last = NULL; /* not a memo entry's walk */
        m->busy = 1;
        atomic_signal_fence(memory_order_seq_cst);
        int r = trk_unwind_walk_stopped(&m->sc, &w, lo, span);
        atomic_signal_fence(memory_order_seq_cst);
        m->busy = 0;
        return r;
    }
    if (!m)
        return walk(&w);
    if (m->busy || m->bypass) {
        m->bypass -= m->bypass && !m->busy;
        m->last = NULL; /* not this walk's */
        return walk(&w);
    }
    m->busy = 1;
    atomic_signal_fence(memory_order_seq_cst);
    int r = walk_memo(m, &w);
    /* Over 256 walks, more than 3 in 5 frames stepped with rules (a frame
     * recorded costs ~1.4 plain steps, one replayed ~0.4): the next 4,096
     * walks are plain, then a new try (the program may have moved on). */
    m->frames += (unsigned)(w.n - n) + (unsigned)w.skipped;
    m->recorded += w.recorded;
    if (++m->walks == 256) {
        if (5 * m->recorded > 3 * m->frames)
            m->bypass = 4096;
        m->walks = 0;
        m->frames = m->recorded = 0;
    }
    atomic_signal_fence(memory_order_seq_cst);
    m->busy = 0;
    return r;
}

__attribute__((noinline)) int trk_unwind_fast(struct trk_unwind_memo *m, uintptr_t *ips, int max,
                                              uintptr_t skip_lo, uintptr_t skip_hi)
{
    uintptr_t pc, sp, bp;
    /* This function's own pc, rsp and rbp at one instant: its CFI row at
     * that pc describes exactly that rsp, so the walk starts here. */
    __asm__ volatile("leaq 0(%%rip), %0\n\tmovq %%rsp, %1\n\tmovq %%rbp, %2"
                     : "=r"(pc), "=r"(sp), "=r"(bp));
    return walk_any(m, pc, sp, bp, 0, ips, max, skip_lo, skip_hi);
}

int trk_unwind_fast_fp(struct trk_unwind_memo *m, uintptr_t *ips, int max, uintptr_t skip_lo,
                       uintptr_t skip_hi, uintptr_t ra, uintptr_t fp)
{
    /* A frame-pointer frame: saved rbp at fp, return address above it, the
     * CFA above that. Trusted only if it is above us on this stack and
     * holds the return address the compiler gave the hook. */
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    const uintptr_t *f = (const uintptr_t *)fp;
    if (m) /* a walk that ends before walk_any gives no entry's id */
        m->last = NULL;
    if (TRK_UNLIKELY(fp - here - 1 >= (1u << 20) || (fp & 7) || f[1] != ra))
        return trk_unwind_fast(m, ips, max, skip_lo, skip_hi);
    int n = 0;
    if (ra < 0x4000)
        return 0;
    if (ra - skip_lo >= skip_hi - skip_lo) {
        ips[n++] = ra;
        if (n == max || ra - trk_unwind_stop.lo < trk_unwind_stop.span)
            return n;
    }
    return walk_any(m, ra - 1, fp + 16, f[0], n, ips, max, skip_lo, skip_hi);
}
