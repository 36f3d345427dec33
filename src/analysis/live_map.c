/* SPDX-License-Identifier: MIT
 *
 * live_map.c - linear probing with backward-shift deletion. No tombstones:
 * a heap with heavy churn would otherwise fill the table with them and
 * slow every lookup. Must not: allocate per operation (only on growth).
 */
#include <stdlib.h>
#include <sys/mman.h>

#include "analysis/live_map.h"

#define INITIAL_BITS 12
#define HUGE_SIZE    ((size_t)2 << 20)

static inline size_t home(const struct trk_live_map *m, uint64_t addr)
{
    return trk_live_map_home(m, addr);
}

/* Large tables get their own 2 MiB aligned mapping with transparent huge
 * pages requested: every lookup is a random access, and with 4 KiB pages
 * most of them would also miss the TLB. */
static struct trk_live_slot *table_new(size_t bytes)
{
    if (bytes < HUGE_SIZE)
        return calloc(1, bytes);
    size_t len = bytes + HUGE_SIZE;
    uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    uint8_t *a = (uint8_t *)(((uintptr_t)p + HUGE_SIZE - 1) & ~(uintptr_t)(HUGE_SIZE - 1));
    if (a > p)
        munmap(p, (size_t)(a - p));
    size_t tail = (size_t)((p + len) - (a + bytes));
    if (tail)
        munmap(a + bytes, tail);
    madvise(a, bytes, MADV_HUGEPAGE);
    return (struct trk_live_slot *)a;
}

static void table_delete(struct trk_live_slot *t, size_t bytes)
{
    if (bytes < HUGE_SIZE)
        free(t);
    else if (t)
        munmap(t, bytes);
}

static int alloc_table(struct trk_live_map *m, unsigned bits)
{
    size_t cap = (size_t)1 << bits;
    struct trk_live_slot *s = table_new(cap * sizeof(*s));
    if (!s)
        return -1;
    m->slots = s;
    m->mask = cap - 1;
    m->shift = 64 - bits;
    m->grow_at = cap / 10 * 7;
    return 0;
}

int trk_live_map_init(struct trk_live_map *m)
{
    m->count = 0;
    return alloc_table(m, INITIAL_BITS);
}

void trk_live_map_free(struct trk_live_map *m)
{
    if (m->slots)
        table_delete(m->slots, (m->mask + 1) * sizeof(*m->slots));
    m->slots = NULL;
    m->count = 0;
}

static int grow(struct trk_live_map *m)
{
    struct trk_live_slot *old = m->slots;
    size_t old_cap = m->mask + 1;
    if (alloc_table(m, 64 - m->shift + 1) < 0)
        return -1; /* m is untouched: still usable, just full */
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].addr)
            continue;
        size_t h = home(m, old[i].addr);
        while (m->slots[h].addr)
            h = (h + 1) & m->mask;
        m->slots[h] = old[i];
    }
    table_delete(old, old_cap * sizeof(*old));
    return 0;
}

static inline void unpack(const struct trk_live_slot *s, struct trk_live_block *b)
{
    b->size = s->meta & TRK_LIVE_SIZE_MASK;
    b->ts = s->ts;
    b->ord = (s->meta >> 56) << 32 | s->ord_lo;
    b->site = s->site;
}

static inline void pack(struct trk_live_slot *s, const struct trk_live_block *b)
{
    uint64_t size = b->size > TRK_LIVE_SIZE_MASK ? TRK_LIVE_SIZE_MASK : b->size;
    s->meta = size | ((b->ord >> 32) & 0xff) << 56;
    s->ts = b->ts;
    s->site = b->site;
    s->ord_lo = (uint32_t)b->ord;
}

int trk_live_map_put(struct trk_live_map *m, uint64_t addr, const struct trk_live_block *b,
                     struct trk_live_block *old)
{
    if (addr == 0)
        return 0; /* the empty key; callers skip it, this only keeps us safe */
    size_t h = home(m, addr);
    for (;;) {
        struct trk_live_slot *s = &m->slots[h];
        if (s->addr == addr) {
            unpack(s, old);
            pack(s, b);
            return 1;
        }
        if (!s->addr)
            break;
        h = (h + 1) & m->mask;
    }
    if (m->count + 1 > m->grow_at) {
        if (grow(m) < 0)
            return -1;
        h = home(m, addr);
        while (m->slots[h].addr)
            h = (h + 1) & m->mask;
    }
    m->slots[h].addr = addr;
    pack(&m->slots[h], b);
    m->count++;
    return 0;
}

bool trk_live_map_remove(struct trk_live_map *m, uint64_t addr, struct trk_live_block *out)
{
    if (addr == 0)
        return false;
    size_t i = home(m, addr);
    for (;;) {
        struct trk_live_slot *s = &m->slots[i];
        if (s->addr == addr)
            break;
        if (!s->addr)
            return false;
        i = (i + 1) & m->mask;
    }
    unpack(&m->slots[i], out);
    /* Pull later entries of the probe run back so no lookup stops early. */
    size_t j = i;
    for (;;) {
        j = (j + 1) & m->mask;
        if (!m->slots[j].addr)
            break;
        size_t k = home(m, m->slots[j].addr);
        bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stays)
            continue;
        m->slots[i] = m->slots[j];
        i = j;
    }
    m->slots[i].addr = 0;
    m->count--;
    return true;
}

bool trk_live_map_get(const struct trk_live_map *m, uint64_t addr, struct trk_live_block *out)
{
    if (addr == 0 || !m->slots)
        return false;
    for (size_t i = home(m, addr);; i = (i + 1) & m->mask) {
        const struct trk_live_slot *s = &m->slots[i];
        if (s->addr == addr) {
            unpack(s, out);
            return true;
        }
        if (!s->addr)
            return false;
    }
}
