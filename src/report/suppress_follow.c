/* SPDX-License-Identifier: MIT
 *
 * suppress_follow.c - suppressions follow the leak graph (report.h,
 * trk_suppressions_follow), as LeakSanitizer's do: what is lost only
 * because a suppressed block is lost is suppressed with it, so that one
 * suppressed one-time structure does not report the tree it owns. Works on
 * the block -> leader map of the leak classification at exit. Must not:
 * recurse (a leader chain may be as long as the heap) or loop on a cycle
 * in a damaged map.
 */
#include <stdlib.h>

#include "report/report.h"

/* Walks i's leader chain (i included) to the first block whose answer is
 * known: suppressed (hit >= 0), known not to be (done), or the chain's end
 * (a directly lost block, a block that is not lost, or a damaged link).
 * Returns that answer: a suppression index or -1. */
static int32_t chain_answer(const uint32_t *leader, const int32_t *hit, const uint8_t *done,
                            size_t n, uint32_t i)
{
    for (size_t steps = 0; steps <= n; steps++) {
        if (hit[i] >= 0)
            return hit[i];
        if (done[i])
            return -1;
        uint32_t up = leader[i];
        if (up == TRK_SUP_NO_LEADER || up == i || up >= n)
            return -1;
        i = up;
    }
    return -1; /* a cycle: the map is damaged */
}

/* Gives every block on i's chain, up to the first with a known answer,
 * that answer: each block is walked over once, so a leaked list of a
 * million nodes costs a million steps, not a million squared. */
static size_t chain_assign(const uint32_t *leader, int32_t *hit, uint8_t *done, size_t n,
                           uint32_t i, int32_t answer)
{
    size_t followed = 0;
    for (size_t steps = 0; steps <= n && hit[i] < 0 && !done[i]; steps++) {
        done[i] = 1;
        if (answer >= 0) {
            hit[i] = answer;
            followed++;
        }
        uint32_t up = leader[i];
        if (up == TRK_SUP_NO_LEADER || up == i || up >= n)
            break;
        i = up;
    }
    return followed;
}

size_t trk_suppressions_follow(const uint32_t *leader, int32_t *hit, size_t n)
{
    uint8_t *done = calloc(n ? n : 1, 1);
    if (!done)
        return SIZE_MAX;
    size_t followed = 0;
    for (size_t i = 0; i < n; i++) {
        if (hit[i] >= 0 || done[i] || leader[i] == TRK_SUP_NO_LEADER)
            continue;
        int32_t answer = chain_answer(leader, hit, done, n, (uint32_t)i);
        followed += chain_assign(leader, hit, done, n, (uint32_t)i, answer);
    }
    free(done);
    return followed;
}
