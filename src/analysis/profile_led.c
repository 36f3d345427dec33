/* SPDX-License-Identifier: MIT
 *
 * profile_led.c - the leak graph by site, for suppressions that follow it
 * (report/suppress_follow.c): for each pair (site of a definitely lost
 * leader, site of an indirectly lost block it leads), the blocks and bytes,
 * from the capture's LEAK records. A suppression hiding the leader's stack
 * hides these blocks with it, as LeakSanitizer's do. Must not: grow with
 * the number of lost blocks (a leaked list of a million nodes from one
 * site is one pair: pairs are merged whenever the table fills), or change
 * any other figure of the profile.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/profile_internal.h"

static int cmp_edge(const void *pa, const void *pb)
{
    const struct trk_led_edge *x = pa, *y = pb;
    if (x->leader != y->leader)
        return x->leader < y->leader ? -1 : 1;
    return x->member < y->member ? -1 : x->member > y->member;
}

/* Sorts the table and merges equal pairs in place. */
static void merge(struct trk_prof_ctx *c)
{
    if (c->nled < 2)
        return;
    qsort(c->led, c->nled, sizeof(*c->led), cmp_edge);
    size_t n = 1;
    for (size_t i = 1; i < c->nled; i++) {
        struct trk_led_edge *last = &c->led[n - 1], *x = &c->led[i];
        if (cmp_edge(last, x) == 0) {
            last->count += x->count;
            last->bytes += x->bytes;
        } else {
            c->led[n++] = *x;
        }
    }
    c->nled = n;
}

void trk_prof_led_add(struct trk_prof_ctx *c, uint32_t leader, uint32_t member, uint64_t bytes)
{
    /* LEAK records of one structure come together: the last pair is the
     * likely one. */
    if (c->nled) {
        struct trk_led_edge *last = &c->led[c->nled - 1];
        if (last->leader == leader && last->member == member) {
            last->count++;
            last->bytes += bytes;
            return;
        }
    }
    if (c->nled == c->led_cap) {
        merge(c);
        if (c->nled > c->led_cap / 2 || !c->led_cap) {
            size_t nc = c->led_cap ? c->led_cap * 2 : 64;
            struct trk_led_edge *p = realloc(c->led, nc * sizeof(*p));
            if (!p) {
                c->oom = true;
                return;
            }
            c->led = p;
            c->led_cap = nc;
        }
    }
    c->led[c->nled++] = (struct trk_led_edge){leader, member, 1, bytes};
}

void trk_prof_led_export(struct trk_prof_ctx *c)
{
    merge(c);
    c->p->led = c->led;
    c->p->nled = c->nled;
    c->led = NULL;
    c->nled = c->led_cap = 0;
}

void trk_prof_led_free(struct trk_prof_ctx *c)
{
    free(c->led);
    c->led = NULL;
    c->nled = c->led_cap = 0;
}
