/* SPDX-License-Identifier: MIT
 *
 * test_node.c - version 5's node records (docs/FORMAT.md §4.3): the STACK
 * definitions in fewer bytes, tags 0x18..0x1C.
 *
 * Expected bytes are worked out by hand from the spec; every stream goes
 * through trk_enc_stack and trk_rec_decode and must come back with the
 * exact id, parent and frame, the delta state carried alike on both sides,
 * including the long STACK form (0x04) the encoder falls back to and that
 * may sit between node records. Malformed and cut records are refused with
 * the input pointer and the state untouched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/varint.h"
#include "format/format.h"
#include "format/record.h"
#include "rec_reject.h"

#define PY(code, line) (TRK_PYFRAME_BIT | (uint64_t)(code) << TRK_PYFRAME_LINE_BITS | (line))

struct node {
    uint64_t id, parent, ip;
};

/* Decodes [buf, buf+len) as n STACK definitions equal to want[]. */
static void decode_all(const uint8_t *buf, size_t len, const struct node *want, size_t n,
                       struct trk_rec_state *st)
{
    const uint8_t *p = buf, *end = buf + len;
    for (size_t i = 0; i < n; i++) {
        struct trk_rec r;
        assert_int_equal(trk_rec_decode(&p, end, st, &r), 0);
        assert_int_equal(r.rclass, TRK_RC_STACK);
        assert_int_equal(r.seq, 0);
        assert_int_equal(r.id, want[i].id);
        assert_int_equal(r.parent, want[i].parent);
        assert_int_equal(r.ip, want[i].ip);
    }
    assert_ptr_equal(p, end);
}

static void test_golden_bytes(void **unused)
{
    (void)unused;
    static const struct node in[] = {
        {1, 0, 0x401000},  /* chain (parent = sid 0), next id, native */
        {2, 1, PY(3, 10)}, /* chain, Python */
        {3, 1, 0x401010},  /* parent 1 is not sid 2: pd = 2 */
        {7, 3, PY(2, 12)}, /* an id jump: tag 0x1C, h = 3 << 2 | C | P */
        {5, 0, 0x401000},  /* id below sid: the long form 0x04 */
        {6, 5, 0x401008},  /* after it: chain on the long form's id and ip */
        {8, 8, 0x401000},  /* parent not below id: long form */
    };
    static const uint8_t want[] = {
        0x1A, 0x80, 0xC0, 0x80, 0x04, /* zigzag(0x401000) = 0x802000 */
        0x1B, 0x06, 0x14,             /* code +3, line +10 */
        0x18, 0x02, 0x20,             /* pd 2, ip +0x10 */
        0x1C, 0x0F, 0x01, 0x04,       /* h 15; code -1, line +2 */
        0x04, 0x05, 0x00, 0x1F,       /* id 5 parent 0, ip -16 (from 0x401010) */
        0x1A, 0x10,                   /* ip +8 */
        0x04, 0x08, 0x08, 0x0F,       /* id 8 parent 8, ip -8 */
    };
    uint8_t buf[256], *p = buf;
    struct trk_rec_state es = {0}, ds = {0};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        p = trk_enc_stack(p, &es, in[i].id, in[i].parent, in[i].ip);
    assert_int_equal(p - buf, sizeof want);
    assert_memory_equal(buf, want, sizeof want);
    decode_all(want, sizeof want, in, sizeof in / sizeof in[0], &ds);
    assert_memory_equal(&es, &ds, sizeof es);
    assert_int_equal(ds.sid, 8);
    assert_int_equal(ds.pcode, 2);
    assert_int_equal(ds.pline, 12);
    assert_int_equal(ds.ip, 0x401000);
}

/* Every cut of a node record is refused, state and pointer untouched. */
static void test_truncation(void **unused)
{
    (void)unused;
    static const uint8_t recs[][6] = {
        {0x1A, 0x80, 0xC0, 0x80, 0x04},
        {0x1B, 0x06, 0x14},
        {0x18, 0x02, 0x20},
        {0x1C, 0x0F, 0x01, 0x04},
        {0x19, 0x01, 0x86, 0x01, 0x02},
    };
    static const size_t lens[] = {5, 3, 3, 4, 5};
    struct trk_rec_state st0 = {.sid = 1, .pcode = 5, .pline = 5, .ip = 0x1000};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        struct trk_rec_state st = st0;
        struct trk_rec r;
        const uint8_t *p = recs[i];
        assert_int_equal(trk_rec_decode(&p, recs[i] + lens[i], &st, &r), 0);
        assert_ptr_equal(p, recs[i] + lens[i]);
        for (size_t k = 0; k < lens[i]; k++)
            expect_reject(recs[i], k, &st0);
    }
}

static void test_malformed(void **unused)
{
    (void)unused;
    struct trk_rec_state st0 = {.sid = 4, .pcode = 9, .pline = 100, .ip = 0x5000};
    static const uint8_t pd0[] = {0x18, 0x00, 0x02};      /* pd 0: the node its own parent */
    static const uint8_t pdbig[] = {0x18, 0x06, 0x02};    /* id 5, pd 6: parent below 0 */
    static const uint8_t code_neg[] = {0x1B, 0x13, 0x00}; /* code 9 - 10 wraps */
    static const uint8_t line_big[] = {0x1B, 0x00, 0xFE, 0xFF, 0xFF, 0x0F};
    expect_reject(pd0, sizeof pd0, &st0);
    expect_reject(pdbig, sizeof pdbig, &st0);
    expect_reject(code_neg, sizeof code_neg, &st0);
    /* line 100 + 0x1FFFFFF... : past 2^24 - 1 */
    expect_reject(line_big, sizeof line_big, &st0);
    /* A native frame with bit 63 set: the kinds have one form each. */
    static const uint8_t nat63[] = {0x1A, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                    0xFF, 0xFF, 0xFF, 0xFF, 0x01}; /* zigzag: -2^63 */
    expect_reject(nat63, sizeof nat63, &st0);
    /* A code id of 2^39 does not fit bits 24..62. */
    uint8_t b[32], *p = b;
    *p++ = 0x1B;
    p = trk_put_svarint(p, (int64_t)((1ull << 39) - 9));
    *p++ = 0x00;
    expect_reject(b, (size_t)(p - b), &st0);
    /* ... and 2^39 - 1 does, with the largest line. */
    p = b + 1;
    p = trk_put_svarint(p, (int64_t)((1ull << 39) - 1 - 9));
    p = trk_put_svarint(p, TRK_PYFRAME_LINE_MAX - 100);
    struct trk_rec_state st = st0;
    struct node want = {5, 4, PY((1ull << 39) - 1, TRK_PYFRAME_LINE_MAX)};
    assert_int_equal(want.ip, UINT64_MAX);
    decode_all(b, (size_t)(p - b), &want, 1, &st);
    /* An id that wraps past 2^64 - 1, by the next id or by h. */
    struct trk_rec_state top = {.sid = UINT64_MAX};
    static const uint8_t next[] = {0x1A, 0x00};
    expect_reject(next, sizeof next, &top);
    top.sid = UINT64_MAX - 2;
    static const uint8_t jump[] = {0x1C, 0x0A, 0x00}; /* h 10: id = sid + 3 */
    expect_reject(jump, sizeof jump, &top);
    static const uint8_t fits[] = {0x1C, 0x06, 0x00}; /* h 6: id = sid + 2 */
    const uint8_t *q = fits;
    struct trk_rec r;
    assert_int_equal(trk_rec_decode(&q, fits + sizeof fits, &top, &r), 0);
    assert_int_equal(r.id, UINT64_MAX);
    assert_int_equal(r.parent, UINT64_MAX - 2);
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Random streams in the shapes a writer makes (chains, jumps of other
 * threads' ids, reused older ids, both frame kinds, call-site nodes, far
 * addresses): decoded exactly, states equal at the end. */
static void test_round_trip(void **unused)
{
    (void)unused;
    enum { N = 4000 };
    static struct node in[N];
    static uint8_t buf[N * 32];
    uint64_t s = 0x9E3779B97F4A7C15ull, id = 0, last = 0;
    for (int rep = 0; rep < 20; rep++) {
        uint8_t *p = buf;
        struct trk_rec_state es = {0}, ds = {0};
        for (int i = 0; i < N; i++) {
            uint64_t r = rnd(&s), ip;
            uint64_t nid = (r & 7) == 0    ? id + 1 + (r >> 8) % 1000
                           : (r & 63) == 1 ? id / 2 + 1
                                           : id + 1;
            uint64_t parent = (r & 0x30) ? last : (r >> 20) % (nid ? nid : 1);
            switch ((r >> 40) & 3) {
            case 0:
                ip = PY((r >> 10) % 5000 + 1, (r >> 30) % 3000);
                break;
            case 1:
                ip = 0x7f0000000000ull + ((r >> 8) & 0xFFFFFFF);
                break;
            case 2:
                ip = TRK_IP_CALLSITE | (0x400000 + ((r >> 12) & 0xFFFF));
                break;
            default:
                ip = (r & 1) ? PY((1ull << 39) - 1, TRK_PYFRAME_LINE_MAX) : rnd(&s) >> 1;
            }
            in[i] = (struct node){nid, parent, ip};
            p = trk_enc_stack(p, &es, nid, parent, ip);
            if (nid > id)
                id = nid;
            last = nid;
        }
        decode_all(buf, (size_t)(p - buf), in, N, &ds);
        assert_memory_equal(&es, &ds, sizeof es);
    }
}

/* Hand-made long STACK records between node records: the long form sets
 * ip (whatever the frame's kind) and sid; node records go on from them. */
static void test_long_form_between(void **unused)
{
    (void)unused;
    uint8_t buf[64], *p = buf;
    struct trk_rec_state es = {0};
    p = trk_enc_stack_long(p, &es, 10, 0, PY(4, 7));
    p = trk_enc_stack(p, &es, 11, 10, PY(5, 9));
    p = trk_enc_stack(p, &es, 12, 11, PY(4, 10));
    uint8_t *native = p;
    p = trk_enc_stack(p, &es, 13, 12, 0x1000);
    static const struct node want[] = {
        {10, 0, PY(4, 7)}, {11, 10, PY(5, 9)}, {12, 11, PY(4, 10)}, {13, 12, 0x1000}};
    /* Python frames from pcode/pline (0 after the long form), not from its
     * ip: code +5 line +9, then code -1 line +1 */
    static const uint8_t bytes[] = {0x1B, 0x0A, 0x12, 0x1B, 0x01, 0x02};
    assert_memory_equal(native - sizeof bytes, bytes, sizeof bytes);
    /* the native frame is a delta from the long form's ip, a Python
     * frame: the ten bytes of a kind change in a version-4 stream */
    assert_int_equal(p - native, 1 + 10);
    struct trk_rec_state ds = {0};
    decode_all(buf, (size_t)(p - buf), want, 4, &ds);
    assert_memory_equal(&es, &ds, sizeof es);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_bytes),      cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_malformed),         cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_long_form_between),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
