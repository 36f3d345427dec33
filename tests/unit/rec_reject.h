/* SPDX-License-Identifier: MIT
 *
 * rec_reject.h - what test_codec.c and test_node.c share: a record the
 * decoder must refuse. Static: a test includes it once, after cmocka.h.
 */
#ifndef TRK_TEST_REC_REJECT_H
#define TRK_TEST_REC_REJECT_H

#include "format/record.h"

/* A failing decode must return -1 and leave *pp and the state as they were. */
static void expect_reject(const uint8_t *buf, size_t len, const struct trk_rec_state *st0)
{
    struct trk_rec_state st = *st0;
    struct trk_rec r;
    const uint8_t *p = buf;
    assert_int_equal(trk_rec_decode(&p, buf + len, &st, &r), -1);
    assert_ptr_equal(p, buf);
    assert_memory_equal(&st, st0, sizeof st);
}

#endif
