/* SPDX-License-Identifier: MIT
 *
 * interval_map.c - a treap keyed by range start, with split and merge, over
 * a node pool indexed by uint32_t (no per-operation malloc, compact nodes).
 * Random priorities keep the depth logarithmic whatever order the program
 * mapped in. Must not: let ranges overlap; every insert removes first.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "analysis/interval_map.h"

struct trk_imap_node {
    uint64_t start, end;
    uint64_t tag;
    uint32_t left, right;
    uint32_t prio;
    uint32_t attr;
};

#define NIL 0u

void trk_imap_init(struct trk_imap *m)
{
    m->nodes = NULL;
    m->cap = 0;
    m->used = 0;
    m->free_list = NIL;
    m->root = NIL;
    m->count = 0;
    m->rng = UINT64_C(0x2545F4914F6CDD1D);
    m->sink = (struct trk_imap_sink){0};
}

void trk_imap_set_sink(struct trk_imap *m, const struct trk_imap_sink *sink)
{
    m->sink = *sink;
}

/* Every byte removed goes through here, so that removed[] and the sink
 * always agree. */
static void take(struct trk_imap *m, uint64_t removed[], const struct trk_imap_node *n,
                 uint64_t bytes, int whole)
{
    removed[n->attr] += bytes;
    if (m->sink.take)
        m->sink.take(m->sink.ctx, n->attr, n->tag, bytes, whole);
}

void trk_imap_free(struct trk_imap *m)
{
    struct trk_imap_sink sink = m->sink;
    free(m->nodes);
    trk_imap_init(m);
    m->sink = sink;
}

static uint32_t next_prio(struct trk_imap *m)
{
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 7;
    m->rng ^= m->rng << 17;
    return (uint32_t)(m->rng >> 16);
}

static uint32_t node_new(struct trk_imap *m, uint64_t start, uint64_t end, unsigned attr,
                         uint64_t tag)
{
    uint32_t i = m->free_list;
    if (i != NIL) {
        m->free_list = m->nodes[i].left;
    } else {
        if (m->used + 1 >= m->cap) {
            uint32_t cap = m->cap ? m->cap * 2 : 64;
            if (cap < m->cap)
                return NIL;
            struct trk_imap_node *n = realloc(m->nodes, (size_t)cap * sizeof(*n));
            if (!n)
                return NIL;
            m->nodes = n;
            m->cap = cap;
        }
        i = ++m->used;
    }
    m->count++;
    struct trk_imap_node *n = &m->nodes[i];
    n->start = start;
    n->end = end;
    n->left = n->right = NIL;
    n->prio = next_prio(m);
    n->attr = attr;
    n->tag = tag;
    return i;
}

static void node_release(struct trk_imap *m, uint32_t i)
{
    m->nodes[i].left = m->free_list;
    m->free_list = i;
}

/* Splits t into ranges starting before key (*l) and the rest (*r). */
static void split(struct trk_imap_node *n, uint32_t t, uint64_t key, uint32_t *l, uint32_t *r)
{
    if (t == NIL) {
        *l = *r = NIL;
        return;
    }
    if (n[t].start < key) {
        split(n, n[t].right, key, &n[t].right, r);
        *l = t;
    } else {
        split(n, n[t].left, key, l, &n[t].left);
        *r = t;
    }
}

/* Every start in a precedes every start in b. */
static uint32_t merge(struct trk_imap_node *n, uint32_t a, uint32_t b)
{
    if (a == NIL)
        return b;
    if (b == NIL)
        return a;
    if (n[a].prio > n[b].prio) {
        n[a].right = merge(n, n[a].right, b);
        return a;
    }
    n[b].left = merge(n, a, n[b].left);
    return b;
}

/* Frees the subtree t of ranges starting in [.., end) counting their bytes
 * below end; the one range reaching past end is kept as *tail. */
static void drain(struct trk_imap *m, uint32_t t, uint64_t end, uint64_t removed[], uint32_t *tail)
{
    if (t == NIL)
        return;
    struct trk_imap_node *n = &m->nodes[t];
    uint32_t l = n->left, r = n->right;
    drain(m, l, end, removed, tail);
    n = &m->nodes[t];
    if (n->end > end) {
        take(m, removed, n, end - n->start, 0);
        n = &m->nodes[t];
        n->start = end;
        n->left = n->right = NIL;
        *tail = t;
    } else {
        take(m, removed, n, n->end - n->start, 1);
        node_release(m, t);
        m->count--;
    }
    drain(m, r, end, removed, tail);
}

int trk_imap_remove(struct trk_imap *m, uint64_t start, uint64_t end,
                    uint64_t removed[TRK_ATTR_COUNT])
{
    if (start >= end || m->root == NIL)
        return 0;
    uint32_t l, mid, r;
    split(m->nodes, m->root, start, &l, &r);
    uint32_t extra = NIL;
    /* The last range starting before start may reach into [start, end). */
    if (l != NIL) {
        uint32_t p = l;
        while (m->nodes[p].right != NIL)
            p = m->nodes[p].right;
        struct trk_imap_node *pn = &m->nodes[p];
        if (pn->end > start) {
            if (pn->end > end) {
                /* A hole in the middle: keep the part after end as a new range. */
                uint64_t pend = pn->end;
                extra = node_new(m, end, pend, pn->attr, pn->tag);
                if (extra == NIL) {
                    m->root = merge(m->nodes, l, r);
                    return -1;
                }
                pn = &m->nodes[p];
                if (m->sink.split)
                    m->sink.split(m->sink.ctx, pn->attr, pn->tag);
                take(m, removed, pn, end - start, 0);
            } else {
                take(m, removed, pn, pn->end - start, 0);
            }
            pn = &m->nodes[p];
            pn->end = start;
        }
    }
    split(m->nodes, r, end, &mid, &r);
    uint32_t tail = NIL;
    drain(m, mid, end, removed, &tail);
    if (tail != NIL)
        r = merge(m->nodes, tail, r);
    if (extra != NIL)
        r = merge(m->nodes, extra, r);
    m->root = merge(m->nodes, l, r);
    return 0;
}

int trk_imap_insert(struct trk_imap *m, uint64_t start, uint64_t end, unsigned attr,
                    uint64_t removed[TRK_ATTR_COUNT])
{
    return trk_imap_insert_tagged(m, start, end, attr, 0, removed);
}

int trk_imap_insert_tagged(struct trk_imap *m, uint64_t start, uint64_t end, unsigned attr,
                           uint64_t tag, uint64_t removed[TRK_ATTR_COUNT])
{
    if (start >= end)
        return 0;
    if (trk_imap_remove(m, start, end, removed) < 0)
        return -1;
    uint32_t x = node_new(m, start, end, attr, tag);
    if (x == NIL)
        return -1;
    uint32_t l, r;
    split(m->nodes, m->root, start, &l, &r);
    m->root = merge(m->nodes, merge(m->nodes, l, x), r);
    return 0;
}

static void overlap(const struct trk_imap_node *n, uint32_t t, uint64_t start, uint64_t end,
                    uint64_t bytes[])
{
    while (t != NIL) {
        const struct trk_imap_node *x = &n[t];
        if (x->start >= end) {
            t = x->left;
            continue;
        }
        if (x->end <= start) {
            t = x->right;
            continue;
        }
        uint64_t a = x->start > start ? x->start : start;
        uint64_t b = x->end < end ? x->end : end;
        bytes[x->attr] += b - a;
        overlap(n, x->left, start, end, bytes);
        t = x->right;
    }
}

void trk_imap_overlap(const struct trk_imap *m, uint64_t start, uint64_t end,
                      uint64_t bytes[TRK_ATTR_COUNT])
{
    if (start < end)
        overlap(m->nodes, m->root, start, end, bytes);
}
