/* SPDX-License-Identifier: MIT
 *
 * own_mem.c - counters of the tracker's own mappings in the traced process
 * (own_mem.h). Relaxed atomics: the figures are statistics read once at the
 * trailer, never used to decide anything; only the peak needs a CAS loop.
 * Also the registry of every range the tracker mapped for itself, which the
 * exit-time leak scan leaves out (leak_roots.c): append-only chunks, a
 * slot claimed by an atomic add, a new chunk mapped and linked by CAS.
 */
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/own_mem.h"
#include "prim/sys.h"

static _Atomic int64_t bytes[TRK_OWN_NCAT], objects[TRK_OWN_NCAT], total;
static _Atomic int64_t peak_total, peak_cat[TRK_OWN_NCAT];
static _Atomic uint64_t rotations;

static void raise_to(_Atomic int64_t *peak, int64_t v)
{
    int64_t cur = atomic_load_explicit(peak, memory_order_relaxed);
    while (v > cur && !atomic_compare_exchange_weak_explicit(peak, &cur, v, memory_order_relaxed,
                                                             memory_order_relaxed))
        ;
}

void trk_own_add(enum trk_own_cat c, int64_t len, int64_t objs)
{
    int64_t cat = atomic_fetch_add_explicit(&bytes[c], len, memory_order_relaxed) + len;
    atomic_fetch_add_explicit(&objects[c], objs, memory_order_relaxed);
    int64_t all = atomic_fetch_add_explicit(&total, len, memory_order_relaxed) + len;
    if (len <= 0)
        return;
    raise_to(&peak_total, all);
    raise_to(&peak_cat[c], cat);
}

void trk_own_rotation(void)
{
    atomic_fetch_add_explicit(&rotations, 1, memory_order_relaxed);
}

#define RANGES_PER_CHUNK 255

struct own_chunk {
    struct own_chunk *_Atomic next;
    _Atomic uint32_t used;
    struct {
        _Atomic uint64_t lo, hi; /* hi 0: not written yet, or forgotten */
    } r[RANGES_PER_CHUNK];
};

static struct own_chunk first_chunk;
static _Atomic uint64_t unregistered; /* ranges a full registry could not take */

void trk_own_note(const void *p, size_t len)
{
    if (!p || !len)
        return;
    uint64_t lo = (uint64_t)(uintptr_t)p & ~(uint64_t)4095;
    uint64_t hi = ((uint64_t)(uintptr_t)p + len + 4095) & ~(uint64_t)4095;
    for (struct own_chunk *c = &first_chunk; c;) {
        uint32_t i = atomic_fetch_add_explicit(&c->used, 1, memory_order_relaxed);
        if (i < RANGES_PER_CHUNK) {
            atomic_store_explicit(&c->r[i].lo, lo, memory_order_relaxed);
            atomic_store_explicit(&c->r[i].hi, hi, memory_order_release);
            return;
        }
        struct own_chunk *next = atomic_load_explicit(&c->next, memory_order_acquire);
        if (!next) {
            struct own_chunk *fresh = trk_sys_mmap(sizeof(*fresh));
            if (!fresh)
                break;
            if (atomic_compare_exchange_strong(&c->next, &next, fresh))
                next = fresh;
            else
                trk_sys_munmap(fresh, sizeof(*fresh)); /* another thread linked one */
        }
        c = next;
    }
    atomic_fetch_add_explicit(&unregistered, 1, memory_order_relaxed);
}

void trk_own_forget(const void *p)
{
    uint64_t lo = (uint64_t)(uintptr_t)p & ~(uint64_t)4095;
    for (struct own_chunk *c = &first_chunk; c;
         c = atomic_load_explicit(&c->next, memory_order_acquire)) {
        uint32_t n = atomic_load_explicit(&c->used, memory_order_relaxed);
        for (uint32_t i = 0; i < n && i < RANGES_PER_CHUNK; i++)
            if (atomic_load_explicit(&c->r[i].hi, memory_order_acquire) &&
                atomic_load_explicit(&c->r[i].lo, memory_order_relaxed) == lo) {
                atomic_store_explicit(&c->r[i].hi, 0, memory_order_relaxed);
                return;
            }
    }
}

uint64_t trk_own_ranges(void (*fn)(void *ctx, uint64_t lo, uint64_t hi), void *ctx)
{
    for (struct own_chunk *c = &first_chunk; c;
         c = atomic_load_explicit(&c->next, memory_order_acquire)) {
        fn(ctx, (uint64_t)(uintptr_t)c, (uint64_t)(uintptr_t)(c + 1));
        uint32_t n = atomic_load_explicit(&c->used, memory_order_relaxed);
        for (uint32_t i = 0; i < n && i < RANGES_PER_CHUNK; i++) {
            uint64_t hi = atomic_load_explicit(&c->r[i].hi, memory_order_acquire);
            if (hi)
                fn(ctx, atomic_load_explicit(&c->r[i].lo, memory_order_relaxed), hi);
        }
    }
    return atomic_load_explicit(&unregistered, memory_order_relaxed);
}

void *trk_own_map(enum trk_own_cat c, size_t len)
{
    void *p = trk_sys_mmap(len);
    if (p) {
        trk_own_add(c, (int64_t)trk_own_pages(len), 0);
        trk_own_note(p, len); /* the leak scan leaves our ranges out */
    }
    return p;
}

void trk_own_unmap_rest(enum trk_own_cat c, void *p, size_t len, size_t released)
{
    if (!p)
        return;
    trk_own_forget(p);
    trk_sys_munmap(p, len);
    trk_own_add(c, -(int64_t)(trk_own_pages(len) - released), 0);
}

void trk_own_unmap(enum trk_own_cat c, void *p, size_t len)
{
    trk_own_unmap_rest(c, p, len, 0);
}

void trk_own_release(enum trk_own_cat c, void *p, size_t len)
{
    /* The whole mapping, header included: a table whose mask reads as 0
     * is still a table, of one empty slot (intern.c, 1). */
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)4095;
    uintptr_t hi = ((uintptr_t)p + len + 4095) & ~(uintptr_t)4095;
    if (hi <= lo)
        return;
    syscall(SYS_madvise, (void *)lo, hi - lo, MADV_DONTNEED);
    trk_own_add(c, -(int64_t)(hi - lo), 0);
}

static uint64_t get(_Atomic int64_t *v)
{
    int64_t x = atomic_load_explicit(v, memory_order_relaxed);
    return x > 0 ? (uint64_t)x : 0;
}

void trk_own_snapshot(uint64_t out[TRK_OWN_FIELDS])
{
    out[0] = get(&peak_total);
    out[1] = get(&bytes[TRK_OWN_TABLES]);
    out[2] = get(&peak_cat[TRK_OWN_TABLES]);
    out[3] = get(&bytes[TRK_OWN_THREADS]);
    out[4] = get(&objects[TRK_OWN_THREADS]);
    out[5] = get(&bytes[TRK_OWN_PYTHON]);
    out[6] = get(&objects[TRK_OWN_PYTHON]);
    out[7] = get(&bytes[TRK_OWN_WRITER]);
    out[8] = atomic_load_explicit(&rotations, memory_order_relaxed);
    out[9] = get(&total);
    out[10] = get(&bytes[TRK_OWN_UNWIND]);
    out[11] = get(&peak_cat[TRK_OWN_UNWIND]);
    out[12] = get(&bytes[TRK_OWN_LEAKSCAN]);
    out[13] = get(&peak_cat[TRK_OWN_LEAKSCAN]);
    out[14] = get(&bytes[TRK_OWN_PREINIT]);
    out[15] = get(&peak_cat[TRK_OWN_PREINIT]);
    out[16] = get(&bytes[TRK_OWN_SAMPLE]);
    out[17] = get(&objects[TRK_OWN_SAMPLE]);
}
