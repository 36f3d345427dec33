/* SPDX-License-Identifier: MIT
 *
 * inherit.c - the heap a forked child inherited (docs/FORMAT.md §6). A fork
 * child's capture names its parent's capture and the seq counter at the fork
 * (FORK TLV). Before the file's own events, the reader replays the parent's
 * capture up to that seq, keeping only which heap blocks were live, and
 * hands those out as TRK_EVF_INHERITED allocations: every analysis then sees
 * the child's frees of them matched, and counts them as live memory in its
 * peaks and leaks. A parent that is itself a fork child is read the same
 * way, so a chain of forks resolves. The writer pays nothing for this.
 *
 * Owns: finding and reading the parent capture, the replayed live set.
 * Must not: interpret more than heap liveness (sites, stacks and mappings of
 * the parent are not carried over), or fail the child's reading: a missing
 * or unreadable parent only makes the inheritance unknown (status).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/reader_internal.h"

/* The parent's live set: open addressing on the block address. */
struct inh_map {
    struct trk_event *slots; /* addr 0 = empty */
    size_t cap, count;
};

static size_t home(const struct inh_map *m, uint64_t addr)
{
    return (size_t)((addr * UINT64_C(0x9E3779B97F4A7C15)) >> 17) & (m->cap - 1);
}

static int map_grow(struct inh_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    struct trk_event *n = calloc(cap, sizeof(*n));
    if (!n)
        return -1;
    struct inh_map g = {n, cap, 0};
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].addr)
            continue;
        size_t j = home(&g, m->slots[i].addr);
        while (g.slots[j].addr)
            j = (j + 1) & (cap - 1);
        g.slots[j] = m->slots[i];
        g.count++;
    }
    free(m->slots);
    *m = g;
    return 0;
}

static int map_put(struct inh_map *m, const struct trk_event *e)
{
    if ((m->count + 1) * 4 > m->cap * 3 && map_grow(m) < 0)
        return -1;
    size_t j = home(m, e->addr);
    while (m->slots[j].addr && m->slots[j].addr != e->addr)
        j = (j + 1) & (m->cap - 1);
    if (!m->slots[j].addr)
        m->count++;
    m->slots[j] = *e; /* a block handed out twice: its free was lost */
    return 0;
}

static void map_remove(struct inh_map *m, uint64_t addr)
{
    if (!m->cap)
        return;
    size_t j = home(m, addr);
    while (m->slots[j].addr && m->slots[j].addr != addr)
        j = (j + 1) & (m->cap - 1);
    if (!m->slots[j].addr)
        return;
    /* Backward-shift deletion keeps every probe chain intact. */
    size_t hole = j;
    for (;;) {
        j = (j + 1) & (m->cap - 1);
        if (!m->slots[j].addr)
            break;
        size_t h = home(m, m->slots[j].addr);
        if (((j - h) & (m->cap - 1)) >= ((j - hole) & (m->cap - 1))) {
            m->slots[hole] = m->slots[j];
            hole = j;
        }
    }
    m->slots[hole].addr = 0;
    m->count--;
}

static int by_seq(const void *a, const void *b)
{
    uint64_t x = ((const struct trk_event *)a)->seq, y = ((const struct trk_event *)b)->seq;
    return x < y ? -1 : x > y;
}

/* Records why the inheritance is unknown: "inherited heap unknown: <why>". */
static void unknown(struct trk_reader *r, const char *why, const char *arg)
{
    r->status.inherited_missing = true;
    snprintf(r->inherit_err, sizeof(r->inherit_err), "inherited heap unknown: %.200s%.280s", why,
             arg);
}

/* Reads the parent's capture up to the fork and fills r->inh. */
static void load(struct trk_reader *r)
{
    const struct trk_reader_info *in = &r->info;
    if (r->inherit_depth >= TRK_INHERIT_DEPTH_MAX) {
        unknown(r, "more than 64 fork parents before ", in->fork_parent);
        return;
    }
    /* The parent's capture sits beside this one (docs/FORMAT.md §6). */
    const char *slash = strrchr(r->name, '/');
    size_t dir = slash ? (size_t)(slash - r->name) + 1 : 0;
    size_t len = dir + strlen(in->fork_parent) + 1;
    char *path = malloc(len);
    if (!path) {
        unknown(r, "out of memory", "");
        return;
    }
    memcpy(path, r->name, dir);
    memcpy(path + dir, in->fork_parent, len - dir);
    struct trk_reader *p = NULL;
    char err[512];
    if (trk_reader_open(path, &p, err, sizeof(err)) < 0) {
        unknown(r, "", err);
        free(path);
        return;
    }
    const struct trk_reader_info *pin = trk_reader_info(p);
    if (pin->session != in->session || pin->pid != in->fork_parent_pid) {
        unknown(r, "not this process's parent: ", path);
        trk_reader_close(p);
        free(path);
        return;
    }
    free(path);
    p->inherit_depth = r->inherit_depth + 1;
    struct inh_map m = {0};
    struct trk_event evs[256];
    int n, oom = 0;
    bool done = false;
    while (!done && !oom && (n = trk_reader_next_batch(p, evs, 256)) > 0) {
        for (int i = 0; i < n; i++) {
            const struct trk_event *e = &evs[i];
            if (e->seq >= in->fork_seq) {
                done = true;
                break;
            }
            if (e->type == TRK_EV_ALLOC && e->addr) {
                if (map_put(&m, e) < 0) {
                    oom = 1;
                    break;
                }
            } else if (e->type == TRK_EV_FREE && e->addr) {
                map_remove(&m, e->addr);
            }
        }
    }
    if (oom)
        unknown(r, "out of memory", "");
    else if (!done && n < 0)
        unknown(r, "", trk_reader_error(p));
    else if (p->status.inherited_missing) /* a grandparent's blocks are missing */
        unknown(r, "", p->inherit_err + strlen("inherited heap unknown: "));
    trk_reader_close(p);
    if (oom || !m.count) {
        free(m.slots);
        return;
    }
    /* Compact in place and order by the parent's seq. */
    size_t k = 0;
    for (size_t i = 0; i < m.cap; i++) {
        if (!m.slots[i].addr)
            continue;
        struct trk_event *e = &m.slots[k++];
        *e = m.slots[i];
        e->flags = (uint8_t)((e->flags & TRK_EVF_GPU_DRIVER) | TRK_EVF_INHERITED);
        e->stack = 0; /* the parent's stack ids mean nothing in this file */
        e->ts = in->clock_base;
        e->tid = in->pid; /* a fork child's only thread: the one that forked */
        memset(&e->u, 0, sizeof(e->u));
        r->status.inherited_bytes += e->size;
    }
    qsort(m.slots, k, sizeof(*m.slots), by_seq);
    r->inh = m.slots;
    r->inh_len = k;
    r->status.inherited_blocks = k;
}

int trk_inherit_next(struct trk_reader *r, struct trk_event *evs, int max)
{
    if (r->inherit_state == INHERIT_PENDING) {
        r->inherit_state = INHERIT_EMITTING;
        load(r);
    }
    size_t left = r->inh_len - r->inh_pos;
    if (left == 0) {
        r->inherit_state = INHERIT_DONE;
        trk_inherit_free(r);
        return 0;
    }
    int n = left < (size_t)max ? (int)left : max;
    memcpy(evs, r->inh + r->inh_pos, (size_t)n * sizeof(*evs));
    r->inh_pos += (size_t)n;
    return n;
}

void trk_inherit_free(struct trk_reader *r)
{
    free(r->inh);
    r->inh = NULL;
    r->inh_len = r->inh_pos = 0;
}

const char *trk_reader_inherit_error(const struct trk_reader *r)
{
    return r->inherit_err;
}

void trk_reader_set_inherit(struct trk_reader *r, bool on)
{
    /* Turning it on again is only possible before anything was read. */
    if (r->inherit_state == INHERIT_PENDING && !on)
        r->inherit_state = INHERIT_DONE;
    else if (on && r->info.fork_seq && r->inherit_state == INHERIT_DONE && !r->status.chunks &&
             !r->inh)
        r->inherit_state = INHERIT_PENDING;
}
