/* SPDX-License-Identifier: MIT
 *
 * leak_follow.h - what suppressions hide through the leak graph in one
 * capture (leak_follow.c), for the leaks report.
 */
#ifndef TRK_REPORT_LEAK_FOLLOW_H
#define TRK_REPORT_LEAK_FOLLOW_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/profile.h"

/* Indirectly lost blocks of site member hidden by suppression sup because
 * their leader is (its own stack is not). */
struct trk_leak_hidden {
    uint32_t member;
    int32_t sup;
    uint64_t count, bytes;
};

struct trk_leak_follow {
    struct trk_leak_hidden *v;
    size_t n;
    /* Per site of the profile: its indirectly lost blocks hidden through
     * their leader (the v entries summed), and the bytes of the blocks it
     * leads that a suppression hides (its own or the leader's). */
    uint64_t *hid_count, *hid_bytes, *led_hidden;
};

/* site_sup[i]: the suppression hiding site i's own stack, or -1; only the
 * sites of p->led are read. Returns 0, or -1 when memory ran out. f must
 * be freed either way. */
int trk_leak_follow_compute(const struct trk_profile *p, const int32_t *site_sup,
                            struct trk_leak_follow *f);
void trk_leak_follow_free(struct trk_leak_follow *f);

#endif /* TRK_REPORT_LEAK_FOLLOW_H */
