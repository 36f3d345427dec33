/* SPDX-License-Identifier: MIT
 *
 * unwind_cfi.c - the own unwinder's slow path: which loaded object holds a
 * pc (a table published without locks), its FDE (binary search in
 * .eh_frame_hdr), and the CFA rule at pc (the FDE's CFI program), packed.
 *
 * Runs inside the traced process, possibly in a signal handler that
 * interrupted anything, the dynamic loader included: so lookups never call
 * dl_iterate_phdr nor libgcc's _Unwind_Find_FDE (both take the loader's or
 * libgcc's lock) and never allocate. The table is rebuilt, under a seqlock,
 * only from trk_unwind_modules_refresh (ordinary context). Anything this
 * file does not understand reads as TRK_UR_FALLBACK: libunwind then walks
 * the whole stack, so the result is always libunwind's (docs/FORMAT.md
 * "Unwinder check").
 */
#include <elf.h>
#include <link.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "capture/own_mem.h"
#include "capture/unwind.h"
#include "prim/sys.h"

/* ---- Module table ---------------------------------------------------------- */

struct umod {
    uintptr_t lo, hi; /* span of the object's PT_LOAD segments */
    uintptr_t hdr;    /* its .eh_frame_hdr, 0 if none */
};

#define UMOD_MAX 8192
static struct umod *mods;      /* UMOD_MAX entries, sorted by lo (raw mmap) */
static struct umod *mods_next; /* built here, then copied under the seqlock */
static _Atomic uint32_t mods_n;
static _Atomic uint32_t mods_seq; /* odd while being rewritten */
static atomic_flag mods_busy = ATOMIC_FLAG_INIT;
static unsigned long long last_subs;
_Atomic uint32_t trk_unwind_epoch = 1;

struct build_ctx {
    unsigned n;
    unsigned long long subs;
};

static int build_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct build_ctx *c = arg;
    c->subs = info->dlpi_subs;
    uintptr_t lo = UINTPTR_MAX, hi = 0, hdr = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            uintptr_t a = info->dlpi_addr + ph->p_vaddr;
            if (a < lo)
                lo = a;
            if (a + ph->p_memsz > hi)
                hi = a + ph->p_memsz;
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            hdr = info->dlpi_addr + ph->p_vaddr;
        }
    }
    if (hi > lo && c->n < UMOD_MAX)
        mods_next[c->n++] = (struct umod){lo, hi, hdr};
    return 0;
}

static void sort_mods(struct umod *m, unsigned n)
{
    /* Shell sort: no libc qsort (it may allocate), n is small. */
    static const unsigned gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};
    for (unsigned g = 0; g < sizeof(gaps) / sizeof(gaps[0]); g++)
        for (unsigned i = gaps[g]; i < n; i++) {
            struct umod v = m[i];
            unsigned j = i;
            for (; j >= gaps[g] && m[j - gaps[g]].lo > v.lo; j -= gaps[g])
                m[j] = m[j - gaps[g]];
            m[j] = v;
        }
}

/* The objects of the old table that the new one lacks (both sorted). */
#define GONE_MAX 16
struct gone {
    unsigned n; /* > GONE_MAX: too many to list, forget every rule */
    struct umod r[GONE_MAX];
};

static void find_gone(const struct umod *old, unsigned n_old, const struct umod *cur,
                      unsigned n_cur, struct gone *g)
{
    unsigned j = 0;
    for (unsigned i = 0; i < n_old; i++) {
        while (j < n_cur && cur[j].lo < old[i].lo)
            j++;
        if (j < n_cur && cur[j].lo == old[i].lo && cur[j].hi == old[i].hi &&
            cur[j].hdr == old[i].hdr)
            continue;
        if (g->n < GONE_MAX)
            g->r[g->n] = old[i];
        g->n++;
    }
}

void trk_unwind_modules_refresh(struct trk_thread *t)
{
    /* TRACKER_UNWIND=0: no walk reads the table; it would cost 384 KiB and
     * a pass over the loader's list per snapshot for nothing. */
    if (!trk_unwind_own)
        return;
    if (!mods) {
        /* Two tables: built outside the seqlock, copied inside it, so that
         * readers spend as little time as possible seeing an odd seq. */
        struct umod *m = trk_own_map(TRK_OWN_UNWIND, 2 * UMOD_MAX * sizeof(struct umod));
        if (!m)
            return;
        mods_next = m + UMOD_MAX;
        mods = m;
    }
    /* The whole rebuild is a loader section: fork waits for it to end
     * (trk_dl_quiesce), so a child never inherits the flag held or the
     * seqlock odd. */
    trk_dl_enter(t);
    while (atomic_flag_test_and_set_explicit(&mods_busy, memory_order_acquire))
        sched_yield();
    struct build_ctx c = {0, 0};
    dl_iterate_phdr(build_cb, &c);
    sort_mods(mods_next, c.n);
    /* Before the first table no rule was ever cached: nothing to forget. */
    static int refreshed;
    int unloaded = c.subs != last_subs && refreshed;
    struct gone g = {.n = 0};
    if (unloaded)
        find_gone(mods, atomic_load_explicit(&mods_n, memory_order_relaxed), mods_next, c.n, &g);

    atomic_fetch_add_explicit(&mods_seq, 1, memory_order_acq_rel);
    atomic_thread_fence(memory_order_release);
    memcpy(mods, mods_next, c.n * sizeof(struct umod));
    atomic_store_explicit(&mods_n, c.n, memory_order_relaxed);
    atomic_fetch_add_explicit(&mods_seq, 1, memory_order_release);
    last_subs = c.subs;
    refreshed = 1;
    /* Objects went away: their addresses may come back as another's. The
     * table no longer names them, so a rule read from now on is the new
     * object's; the ones read before are dropped here. */
    if (unloaded) {
        atomic_fetch_add_explicit(&trk_unwind_epoch, 1, memory_order_acq_rel);
        unw_flush_cache(unw_local_addr_space, 0, 0); /* libunwind's DWARF caches too */
        if (g.n > GONE_MAX)
            trk_unwind_forget_range(0, UINTPTR_MAX);
        else
            for (unsigned i = 0; i < g.n; i++)
                trk_unwind_forget_range(g.r[i].lo, g.r[i].hi);
    }
    atomic_flag_clear_explicit(&mods_busy, memory_order_release);
    trk_dl_leave(t);
}

/* The .eh_frame_hdr of the object holding pc, or 0. Lock-free: a reader
 * that raced a rewrite gives up (0) rather than wait, since it may be a
 * signal handler that interrupted the rewrite on its own thread. */
static uintptr_t hdr_of(uintptr_t pc)
{
    uint32_t s0 = atomic_load_explicit(&mods_seq, memory_order_acquire);
    if ((s0 & 1) || !mods)
        return 0;
    uint32_t n = atomic_load_explicit(&mods_n, memory_order_relaxed);
    if (n > UMOD_MAX)
        return 0;
    uint32_t lo = 0, hi = n;
    while (lo < hi) { /* first entry with m.lo > pc */
        uint32_t mid = (lo + hi) / 2;
        if (((volatile struct umod *)mods)[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    uintptr_t hdr = 0;
    if (lo > 0) {
        volatile struct umod *m = &mods[lo - 1];
        if (pc >= m->lo && pc < m->hi)
            hdr = m->hdr;
    }
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&mods_seq, memory_order_relaxed) != s0)
        return 0;
    return hdr;
}

/* ---- DWARF reading --------------------------------------------------------- */

struct rd {
    const uint8_t *p, *end;
    int bad;
};

static uint64_t rd_uleb(struct rd *r)
{
    uint64_t v = 0;
    for (unsigned shift = 0; r->p < r->end && shift < 64; shift += 7) {
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    r->bad = 1;
    return 0;
}

static int64_t rd_sleb(struct rd *r)
{
    int64_t v = 0;
    unsigned shift = 0;
    while (r->p < r->end && shift < 64) {
        uint8_t b = *r->p++;
        v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
        shift += 7;
        if (!(b & 0x80)) {
            if (shift < 64 && (b & 0x40))
                v |= -((int64_t)1 << shift);
            return v;
        }
    }
    r->bad = 1;
    return 0;
}

static uint64_t rd_fixed(struct rd *r, unsigned len)
{
    if ((size_t)(r->end - r->p) < len) {
        r->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, r->p, len);
    r->p += len;
    return v;
}

/* An encoded pointer (DW_EH_PE_*): absolute or pc-relative values only;
 * anything else (datarel, textrel, indirect...) marks the reader bad. */
static uintptr_t rd_ptr(struct rd *r, uint8_t enc)
{
    uintptr_t base = (uintptr_t)r->p;
    uint64_t v;
    switch (enc & 0x0f) {
    case 0x00:
        v = rd_fixed(r, 8);
        break;
    case 0x01:
        v = rd_uleb(r);
        break;
    case 0x02:
        v = rd_fixed(r, 2);
        break;
    case 0x03:
        v = rd_fixed(r, 4);
        break;
    case 0x04:
        v = rd_fixed(r, 8);
        break;
    case 0x09:
        v = (uint64_t)rd_sleb(r);
        break;
    case 0x0a:
        v = (uint64_t)(int64_t)(int16_t)rd_fixed(r, 2);
        break;
    case 0x0b:
        v = (uint64_t)(int64_t)(int32_t)rd_fixed(r, 4);
        break;
    case 0x0c:
        v = rd_fixed(r, 8);
        break;
    default:
        r->bad = 1;
        return 0;
    }
    switch (enc & 0x70) {
    case 0x00:
        break;
    case 0x10:
        v += base;
        break;
    default:
        r->bad = 1;
        return 0;
    }
    if (enc & 0x80)
        r->bad = 1;
    return (uintptr_t)v;
}

uint64_t trk_unwind_hdr_table(uintptr_t hdr, const int32_t **tab, uintptr_t *eh_frame)
{
    const uint8_t *h = (const uint8_t *)hdr;
    /* version 1, then the FDE count (any fixed encoding) and a table of
     * datarel sdata4 pairs: what every linker writes; else libunwind. */
    if (h[0] != 1 || h[3] != 0x3b)
        return 0;
    struct rd r = {h + 4, h + 32, 0};
    uintptr_t frames = rd_ptr(&r, h[1]);
    uint64_t count = h[2] == 0xff ? 0 : rd_ptr(&r, h[2]);
    if (r.bad)
        return 0;
    *tab = (const int32_t *)r.p;
    *eh_frame = frames;
    return count;
}

/* The FDE covering pc, via the sorted table of .eh_frame_hdr. */
static const uint8_t *find_fde(uintptr_t hdr, uintptr_t pc)
{
    const int32_t *tab;
    uintptr_t eh_frame;
    uint64_t count = trk_unwind_hdr_table(hdr, &tab, &eh_frame);
    if (count == 0)
        return NULL;
    uint64_t lo = 0, hi = count;
    while (lo < hi) { /* first entry starting above pc */
        uint64_t mid = (lo + hi) / 2;
        if (hdr + (uintptr_t)(intptr_t)tab[2 * mid] <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    return (const uint8_t *)(hdr + (uintptr_t)(intptr_t)tab[2 * (lo - 1) + 1]);
}

/* ---- CIE, FDE and the CFI program ------------------------------------------ */

struct cie {
    const uint8_t *insns, *insns_end;
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc;
    int has_z, signal;
};

/* Reads the length word of a CIE or FDE; returns its end, NULL if odd. */
static const uint8_t *entry_end(const uint8_t **p)
{
    uint32_t len32;
    memcpy(&len32, *p, 4);
    *p += 4;
    if (len32 == 0 || len32 == 0xffffffffu) /* terminator, 64-bit DWARF: rare */
        return NULL;
    return *p + len32;
}

const uint8_t *trk_unwind_entry_end(const uint8_t *p)
{
    return entry_end(&p);
}

static int parse_cie(const uint8_t *p, struct cie *c)
{
    const uint8_t *end = entry_end(&p);
    if (!end)
        return -1;
    struct rd r = {p, end, 0};
    if (rd_fixed(&r, 4) != 0) /* CIE id 0 in .eh_frame */
        return -1;
    uint8_t version = (uint8_t)rd_fixed(&r, 1);
    if (version != 1 && version != 3) /* 4 adds address and segment sizes */
        return -1;
    const char *aug = (const char *)r.p;
    size_t alen = strnlen(aug, (size_t)(end - r.p));
    r.p += alen + 1;
    c->code_align = rd_uleb(&r);
    c->data_align = rd_sleb(&r);
    c->ra_reg = version == 1 ? rd_fixed(&r, 1) : rd_uleb(&r);
    c->fde_enc = 0;
    c->has_z = aug[0] == 'z';
    c->signal = 0;
    if (c->has_z) {
        uint64_t dlen = rd_uleb(&r);
        const uint8_t *dend = r.p + dlen;
        for (size_t i = 1; i < alen && !r.bad; i++) {
            if (aug[i] == 'R')
                c->fde_enc = (uint8_t)rd_fixed(&r, 1);
            else if (aug[i] == 'L')
                rd_fixed(&r, 1);
            else if (aug[i] == 'P') {
                uint8_t enc = (uint8_t)rd_fixed(&r, 1);
                struct rd q = r;
                rd_ptr(&q, enc & 0x0f); /* size only: its value is not needed */
                r.p = q.p;
                r.bad |= q.bad;
            } else if (aug[i] == 'S')
                c->signal = 1;
            else if (aug[i] != 'B')
                return -1;
        }
        r.p = dend;
    } else if (alen != 0) {
        return -1;
    }
    if (r.bad || r.p > end)
        return -1;
    c->insns = r.p;
    c->insns_end = end;
    return 0;
}

/* What the unwinder tracks of a row: the CFA, and the rules of rbp (6) and
 * of the return address. where: 0 same value, 1 at CFA + off, 2 undefined,
 * 3 anything else (register, expression, val_offset: libunwind's job). */
struct row {
    int cfa_reg; /* 6 or 7; -1 when the CFA is an expression or another register */
    int64_t cfa_off;
    uint8_t rbp_where, ra_where;
    int64_t rbp_off, ra_off;
};

#define DW_RBP      6
#define DW_RSP      7
#define STATE_STACK 8

static void set_reg(struct row *s, uint64_t reg, uint64_t ra_reg, uint8_t where, int64_t off)
{
    if (reg == DW_RBP) {
        s->rbp_where = where;
        s->rbp_off = off;
    } else if (reg == ra_reg) {
        s->ra_where = where;
        s->ra_off = off;
    } else if (reg == DW_RSP) {
        s->cfa_reg = -1; /* an explicit rsp rule: not a standard frame */
    }
}

/* Runs a CFI program up to the row covering pc. Returns -1 on anything it
 * does not know (then the frame is libunwind's). */
static int run_cfi(const struct cie *c, const uint8_t *p, const uint8_t *end, uintptr_t loc,
                   uintptr_t pc, const struct row *init, struct row *s)
{
    struct row stack[STATE_STACK];
    int depth = 0;
    struct rd r = {p, end, 0};
    while (r.p < r.end && loc <= pc && !r.bad) {
        uint8_t op = *r.p++;
        uint64_t reg;
        switch (op & 0xc0) {
        case 0x40:
            loc += (op & 0x3f) * c->code_align;
            continue;
        case 0x80:
            set_reg(s, op & 0x3f, c->ra_reg, 1, (int64_t)rd_uleb(&r) * c->data_align);
            continue;
        case 0xc0:
            reg = op & 0x3f;
            goto restore;
        }
        switch (op) {
        case 0x00:
            break;
        case 0x02:
            loc += rd_fixed(&r, 1) * c->code_align;
            break;
        case 0x03:
            loc += rd_fixed(&r, 2) * c->code_align;
            break;
        case 0x04:
            loc += rd_fixed(&r, 4) * c->code_align;
            break;
        case 0x05:
            reg = rd_uleb(&r);
            set_reg(s, reg, c->ra_reg, 1, (int64_t)rd_uleb(&r) * c->data_align);
            break;
        case 0x11:
            reg = rd_uleb(&r);
            set_reg(s, reg, c->ra_reg, 1, rd_sleb(&r) * c->data_align);
            break;
        case 0x06:
            reg = rd_uleb(&r);
        restore:
            if (!init)
                return -1;
            if (reg == DW_RBP) {
                s->rbp_where = init->rbp_where;
                s->rbp_off = init->rbp_off;
            } else if (reg == c->ra_reg) {
                s->ra_where = init->ra_where;
                s->ra_off = init->ra_off;
            }
            break;
        case 0x07:
            set_reg(s, rd_uleb(&r), c->ra_reg, 2, 0);
            break;
        case 0x08:
            set_reg(s, rd_uleb(&r), c->ra_reg, 0, 0);
            break;
        case 0x09:
            reg = rd_uleb(&r);
            rd_uleb(&r);
            set_reg(s, reg, c->ra_reg, 3, 0);
            break;
        case 0x0a:
            if (depth == STATE_STACK)
                return -1;
            stack[depth++] = *s;
            break;
        case 0x0b: /* the whole row, CFA included, as libunwind and libgcc do */
            if (depth == 0)
                return -1;
            *s = stack[--depth];
            break;
        case 0x0c:
            s->cfa_reg = (int)rd_uleb(&r);
            s->cfa_off = (int64_t)rd_uleb(&r);
            break;
        case 0x12:
            s->cfa_reg = (int)rd_uleb(&r);
            s->cfa_off = rd_sleb(&r) * c->data_align;
            break;
        case 0x0d:
            s->cfa_reg = (int)rd_uleb(&r);
            break;
        case 0x0e:
            s->cfa_off = (int64_t)rd_uleb(&r);
            break;
        case 0x13:
            s->cfa_off = rd_sleb(&r) * c->data_align;
            break;
        case 0x0f: /* def_cfa_expression */
            s->cfa_reg = -1;
            r.p += rd_uleb(&r);
            break;
        case 0x10: /* expression */
        case 0x16: /* val_expression */
            reg = rd_uleb(&r);
            r.p += rd_uleb(&r);
            set_reg(s, reg, c->ra_reg, 3, 0);
            break;
        case 0x14:
        case 0x15:
            reg = rd_uleb(&r);
            rd_uleb(&r);
            set_reg(s, reg, c->ra_reg, 3, 0);
            break;
        case 0x2e:
            rd_uleb(&r);
            break; /* GNU_args_size: no effect on unwinding */
        default:
            return -1; /* set_loc, GNU_negative_offset..., vendor ops */
        }
    }
    return r.bad || r.p > r.end ? -1 : 0;
}

/* Packs a row the way libunwind's fast trace classifies a standard frame
 * (x86_64 Gstash_frame.c), more strictly: the rest falls back. */
static uint64_t pack_row(const struct row *s)
{
    if (s->ra_where == 2)
        return trk_ur_pack(TRK_UR_LAST, 0, 0, 0);
    if (s->ra_where != 1 || s->ra_off != -8)
        return trk_ur_pack(TRK_UR_FALLBACK, 0, 0, 0);
    if ((s->cfa_reg != DW_RSP && s->cfa_reg != DW_RBP) || s->cfa_off <= 0 ||
        s->cfa_off >= (1 << 28))
        return trk_ur_pack(TRK_UR_FALLBACK, 0, 0, 0);
    unsigned slot = 0;
    if (s->rbp_where == 1) {
        if (s->rbp_off >= 0 || (-s->rbp_off & 7) || -s->rbp_off / 8 > 0x1fff)
            return trk_ur_pack(TRK_UR_FALLBACK, 0, 0, 0);
        slot = (unsigned)(-s->rbp_off / 8);
    } else if (s->rbp_where != 0) {
        return trk_ur_pack(TRK_UR_FALLBACK, 0, 0, 0);
    }
    return trk_ur_pack(TRK_UR_STD, s->cfa_reg == DW_RBP, slot, (int32_t)s->cfa_off);
}

uint64_t trk_unwind_rule_lookup(uintptr_t pc)
{
    uintptr_t hdr = hdr_of(pc);
    if (!hdr)
        return 0;
    const uint64_t fallback = trk_ur_pack(TRK_UR_FALLBACK, 0, 0, 0);
    const uint8_t *fde = find_fde(hdr, pc);
    if (!fde)
        return fallback;
    const uint8_t *p = fde;
    const uint8_t *end = entry_end(&p);
    if (!end)
        return fallback;
    int32_t cie_off;
    memcpy(&cie_off, p, 4);
    if (cie_off <= 0)
        return fallback;
    struct cie c;
    if (parse_cie(p - cie_off, &c) || c.signal)
        return fallback;
    struct rd r = {p + 4, end, 0};
    uintptr_t start = rd_ptr(&r, c.fde_enc);
    uintptr_t range = rd_ptr(&r, c.fde_enc & 0x0f);
    if (c.has_z)
        r.p += rd_uleb(&r);
    if (r.bad || r.p > end || pc < start || pc - start >= range)
        return fallback;

    struct row init = {-1, 0, 0, 0, 0, 0}, s;
    if (run_cfi(&c, c.insns, c.insns_end, 0, UINTPTR_MAX, NULL, &init))
        return fallback;
    s = init;
    if (run_cfi(&c, r.p, end, start, pc, &init, &s))
        return fallback;
    return pack_row(&s);
}
