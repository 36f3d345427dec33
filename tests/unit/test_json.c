/* SPDX-License-Identifier: MIT
 *
 * test_json.c - the reports' JSON writer (src/report/report_json.c): string
 * escaping byte for byte on named cases (controls, quotes, the HTML-safe
 * set, U+2028/2029, every kind of invalid UTF-8, the length cut), then
 * random byte strings through a small strict JSON string decoder: the
 * output is always one valid JSON string of valid UTF-8 with no raw
 * control character, and valid input decodes back to itself. Plus the
 * document layout (nesting, empty containers, null, non-finite numbers).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report/report_json.h"

/* trk_json_quote into a string (caller frees). */
static char *quote(const char *s, size_t max, bool html)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    trk_json_quote(f, s, max, html);
    fclose(f);
    return buf;
}

static void expect(const char *in, size_t max, bool html, const char *want)
{
    char *got = quote(in, max, html);
    if (strcmp(got, want) != 0)
        fail_msg("quote(\"%s\"): got %s, want %s", in ? in : "(null)", got, want);
    free(got);
}

static void test_escapes(void **state)
{
    (void)state;
    expect("plain", SIZE_MAX, false, "\"plain\"");
    expect(NULL, SIZE_MAX, false, "\"\"");
    expect("", SIZE_MAX, false, "\"\"");
    expect("a\"b\\c", SIZE_MAX, false, "\"a\\\"b\\\\c\"");
    expect("\n\t\x01\x1f\x7f", SIZE_MAX, false, "\"\\u000a\\u0009\\u0001\\u001f\\u007f\"");
    expect("</script><!--&", SIZE_MAX, false, "\"</script><!--&\"");
    expect("</script><!--&", SIZE_MAX, true, "\"\\u003c/script\\u003e\\u003c!--\\u0026\"");
    /* U+2028 and U+2029 end a line in JavaScript: escaped inside a page. */
    expect("a\xE2\x80\xA8"
           "b\xE2\x80\xA9",
           SIZE_MAX, false,
           "\"a\xE2\x80\xA8"
           "b\xE2\x80\xA9\"");
    expect("a\xE2\x80\xA8"
           "b\xE2\x80\xA9",
           SIZE_MAX, true, "\"a\\u2028b\\u2029\"");
    /* Valid sequences of every length pass through. */
    expect("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", SIZE_MAX, false,
           "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"");
    expect("\xED\x9F\xBF\xEE\x80\x80\xF4\x8F\xBF\xBF", SIZE_MAX, false,
           "\"\xED\x9F\xBF\xEE\x80\x80\xF4\x8F\xBF\xBF\"");
    /* Invalid: each bad byte becomes U+FFFD and decoding resumes after it. */
    expect("\x80", SIZE_MAX, false, "\"\\ufffd\"");
    expect("\xC0\x80", SIZE_MAX, false, "\"\\ufffd\\ufffd\"");            /* overlong NUL */
    expect("\xC1\xBF", SIZE_MAX, false, "\"\\ufffd\\ufffd\"");            /* overlong */
    expect("\xE0\x80\x80", SIZE_MAX, false, "\"\\ufffd\\ufffd\\ufffd\""); /* overlong */
    expect("\xED\xA0\x80", SIZE_MAX, false, "\"\\ufffd\\ufffd\\ufffd\""); /* surrogate */
    expect("\xF0\x80\x80\x80", SIZE_MAX, false, "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
    expect("\xF4\x90\x80\x80", SIZE_MAX, false, "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* > 10FFFF */
    expect("\xF5\x80", SIZE_MAX, false, "\"\\ufffd\\ufffd\"");
    expect("\xFF", SIZE_MAX, false, "\"\\ufffd\"");
    expect("a\xE2\x82", SIZE_MAX, false, "\"a\\ufffd\\ufffd\""); /* cut short by the end */
    expect("\xE2\x82"
           "b",
           SIZE_MAX, false, "\"\\ufffd\\ufffdb\"");
    /* The cut: at most max input bytes, never inside a sequence. */
    expect("abcdef", 3, false, "\"abc\\u2026\"");
    expect("abc", 3, false, "\"abc\"");
    expect("ab\xE2\x82\xAC", 4, false, "\"ab\\u2026\"");
    expect("ab\xE2\x82\xAC", 5, false, "\"ab\xE2\x82\xAC\"");
    expect("abc", 0, false, "\"\\u2026\"");
}

/* ---- A strict decoder of one JSON string ---------------------------------- */

static size_t utf8_valid_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t k = c < 0x80                 ? 1
               : c >= 0xC2 && c <= 0xDF ? 2
               : c >= 0xE0 && c <= 0xEF ? 3
               : c >= 0xF0 && c <= 0xF4 ? 4
                                        : 0;
    if (k == 0 || k > n)
        return 0;
    uint32_t cp = k == 1 ? c : c & (0x7F >> k);
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return k;
}

static size_t put_utf8(unsigned char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | cp >> 6);
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    o[0] = (unsigned char)(0xE0 | cp >> 12);
    o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
}

/* Decodes the whole of j as one JSON string (RFC 8259) into out; returns
 * the decoded length, or fails the test. */
static size_t decode(const char *j, unsigned char *out)
{
    const unsigned char *s = (const unsigned char *)j;
    size_t n = strlen(j), o = 0, i = 1;
    assert_true(n >= 2 && s[0] == '"' && s[n - 1] == '"');
    while (i < n - 1) {
        if (s[i] == '\\') {
            unsigned char e = s[++i];
            if (e == 'u') {
                unsigned cp;
                assert_int_equal(sscanf((const char *)s + i + 1, "%4x", &cp), 1);
                assert_true(cp < 0xD800 || cp > 0xDFFF); /* no surrogate pairs needed */
                o += put_utf8(out + o, cp);
                i += 5;
            } else {
                assert_non_null(strchr("\"\\/bfnrt", e));
                out[o++] = e == 'n'   ? '\n'
                           : e == 't' ? '\t'
                           : e == 'r' ? '\r'
                           : e == 'b' ? '\b'
                           : e == 'f' ? '\f'
                                      : e;
                i++;
            }
            continue;
        }
        assert_true(s[i] >= 0x20 && s[i] != '"'); /* raw controls are not JSON */
        size_t k = utf8_valid_len(s + i, n - 1 - i);
        if (k == 0)
            fail_msg("invalid UTF-8 at byte %zu of %s", i, j);
        memcpy(out + o, s + i, k);
        o += k;
        i += k;
    }
    return o;
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static bool valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t k = utf8_valid_len(s + i, n - i);
        if (k == 0)
            return false;
        i += k;
    }
    return true;
}

static void test_random_bytes(void **state)
{
    (void)state;
    uint64_t seed = 12345;
    unsigned valid = 0;
    /* Pieces that make valid text likely, mixed with arbitrary bytes. */
    static const char *pieces[] = {"a",
                                   "\"",
                                   "\\",
                                   "\n",
                                   "<",
                                   "&",
                                   "\xC3\xA9",
                                   "\xE2\x82\xAC",
                                   "\xF0\x9F\x98\x80",
                                   "\xE2\x80\xA8",
                                   "\x7f",
                                   "\x01"};
    for (int run = 0; run < 20000; run++) {
        unsigned char in[64];
        size_t n = 0;
        size_t len = (size_t)(rnd(&seed) % 16);
        for (size_t k = 0; k < len; k++) {
            if (rnd(&seed) % 4 == 0) {
                unsigned char b = (unsigned char)rnd(&seed);
                in[n++] = b ? b : 'z';
            } else {
                const char *p = pieces[rnd(&seed) % (sizeof(pieces) / sizeof(pieces[0]))];
                memcpy(in + n, p, strlen(p));
                n += strlen(p);
            }
        }
        in[n] = '\0';
        bool html = run % 2;
        char *j = quote((const char *)in, SIZE_MAX, html);
        unsigned char out[64 * 6];
        size_t o = decode(j, out);
        if (html) {
            assert_null(strchr(j, '<'));
            assert_null(strchr(j, '>'));
            assert_null(strchr(j, '&'));
            assert_null(strstr(j, "\xE2\x80\xA8"));
            assert_null(strstr(j, "\xE2\x80\xA9"));
        }
        if (valid_utf8(in, n)) {
            valid++;
            assert_int_equal(o, n);
            assert_memory_equal(out, in, n);
        }
        free(j);
    }
    assert_true(valid > 1000);
}

/* ---- The document writer ------------------------------------------------- */

static void test_document(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct trk_rjson j;
    trk_rjson_init(&j, f);
    trk_rjson_begin_object(&j, NULL);
    trk_rjson_u64(&j, "u", UINT64_MAX);
    trk_rjson_i64(&j, "i", INT64_MIN);
    trk_rjson_double(&j, "d", 0.5);
    trk_rjson_double(&j, "nan", NAN);
    trk_rjson_bool(&j, "b", true);
    trk_rjson_string(&j, "s", "x\"y");
    trk_rjson_string(&j, "n", NULL);
    trk_rjson_begin_array(&j, "empty");
    trk_rjson_end_array(&j);
    trk_rjson_begin_object(&j, "o");
    trk_rjson_end_object(&j);
    trk_rjson_begin_array(&j, "a");
    trk_rjson_u64(&j, NULL, 1);
    trk_rjson_begin_object(&j, NULL);
    trk_rjson_u64(&j, "k", 2);
    trk_rjson_end_object(&j);
    trk_rjson_end_array(&j);
    trk_rjson_end_object(&j);
    trk_rjson_finish(&j);
    fclose(f);
    assert_string_equal(buf, "{\n"
                             "  \"u\": 18446744073709551615,\n"
                             "  \"i\": -9223372036854775808,\n"
                             "  \"d\": 0.5,\n"
                             "  \"nan\": 0,\n"
                             "  \"b\": true,\n"
                             "  \"s\": \"x\\\"y\",\n"
                             "  \"n\": null,\n"
                             "  \"empty\": [],\n"
                             "  \"o\": {},\n"
                             "  \"a\": [\n"
                             "    1,\n"
                             "    {\n"
                             "      \"k\": 2\n"
                             "    }\n"
                             "  ]\n"
                             "}\n");
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_document),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
