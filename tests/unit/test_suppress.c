/* SPDX-License-Identifier: MIT
 *
 * test_suppress.c - LSan-style suppression patterns (src/report/suppress.c):
 * trk_suppression_match against a naive recursive model on every pattern
 * and text over a small alphabet (substring, '*' any run, '^' and '$'
 * anchors), the named cases, and the file loader: comments, blank lines,
 * CRLF, trimmed patterns, and an error naming FILE:LINE for a wrong type,
 * an empty pattern or a NUL byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "report/report.h"

/* ---- The model: whole-text glob, then LSan's anchoring by brute force ---- */

static bool glob_all(const char *p, size_t plen, const char *t, size_t tlen)
{
    if (plen == 0)
        return tlen == 0;
    if (p[0] == '*')
        return glob_all(p + 1, plen - 1, t, tlen) ||
               (tlen > 0 && glob_all(p, plen, t + 1, tlen - 1));
    return tlen > 0 && p[0] == t[0] && glob_all(p + 1, plen - 1, t + 1, tlen - 1);
}

/* Some substring t[i, j) matches the body; '^' forces i = 0, '$' j = len.
 * An empty text is never matched (a frame without a name hides nothing). */
static bool model(const char *pattern, const char *text)
{
    size_t n = strlen(pattern), tl = strlen(text);
    if (tl == 0)
        return false;
    bool start = n > 0 && pattern[0] == '^';
    bool end = n > (size_t)start && pattern[n - 1] == '$';
    const char *body = pattern + start;
    size_t blen = n - start - end;
    for (size_t i = 0; i <= tl; i++) {
        if (start && i > 0)
            break;
        for (size_t j = i; j <= tl; j++) {
            if (end && j != tl)
                continue;
            if (glob_all(body, blen, text + i, j - i))
                return true;
        }
    }
    return false;
}

/* Every string of length <= max over alphabet, in turn. */
static bool next_string(char *s, size_t max, const char *alphabet)
{
    size_t n = strlen(s);
    for (size_t i = n; i-- > 0;) {
        const char *c = strchr(alphabet, s[i]);
        if (c[1]) {
            s[i] = c[1];
            return true;
        }
        s[i] = alphabet[0];
    }
    if (n == max)
        return false;
    memset(s, alphabet[0], n + 1);
    s[n + 1] = '\0';
    return true;
}

static void test_match_against_model(void **state)
{
    (void)state;
    /* Bodies over {a, b, *} up to 4 long, each anchored four ways; texts
     * over {a, b} up to 5 long. */
    char body[8] = "";
    unsigned checked = 0;
    do {
        for (int anchor = 0; anchor < 4; anchor++) {
            char pat[16];
            snprintf(pat, sizeof(pat), "%s%s%s", anchor & 1 ? "^" : "", body,
                     anchor & 2 ? "$" : "");
            if (!*pat)
                continue;
            char text[8] = "";
            while (next_string(text, 5, "ab")) {
                bool want = model(pat, text);
                if (trk_suppression_match(pat, text) != want)
                    fail_msg("pattern '%s' text '%s': want %d", pat, text, want);
                checked++;
            }
        }
    } while (next_string(body, 4, "ab*"));
    assert_true(checked > 10000);
}

static void test_match_cases(void **state)
{
    (void)state;
    assert_true(trk_suppression_match("leaky", "my_leaky_fn"));
    assert_false(trk_suppression_match("^leaky", "my_leaky_fn"));
    assert_true(trk_suppression_match("^my_", "my_leaky_fn"));
    assert_true(trk_suppression_match("_fn$", "my_leaky_fn"));
    assert_false(trk_suppression_match("leaky$", "my_leaky_fn"));
    assert_true(trk_suppression_match("^my*fn$", "my_leaky_fn"));
    assert_true(trk_suppression_match("lib*.so", "/usr/lib/libfoo.so.1"));
    assert_true(
        trk_suppression_match("^std::vector<*>::push_back$", "std::vector<int>::push_back"));
    assert_false(trk_suppression_match("x", ""));
    assert_false(trk_suppression_match("x", NULL));
    assert_false(trk_suppression_match(NULL, "x"));
    /* Patterns longer than the matcher's stack buffer. */
    char big[600];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_true(trk_suppression_match(big, big));
    assert_false(trk_suppression_match(big, big + 1));
}

/* ---- The loader ------------------------------------------------------------- */

static char *write_file(const char *text, size_t len)
{
    char *path = strdup("/tmp/trk_suppress_XXXXXX");
    assert_non_null(path);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
    return path;
}

static int load(const char *text, size_t len, struct trk_suppressions *s, char *err)
{
    char *path = write_file(text, len);
    int rc = trk_suppressions_load(s, path, err, 256);
    unlink(path);
    free(path);
    return rc;
}

static void test_load(void **state)
{
    (void)state;
    static const char text[] = "# a comment\n"
                               "\n"
                               "leak:first\r\n"
                               "   leak:  spaced out  \t\n"
                               "\t# indented comment\n"
                               "leak:^anchored*$";
    struct trk_suppressions s;
    char err[256] = "";
    assert_int_equal(load(text, sizeof(text) - 1, &s, err), 0);
    assert_int_equal(s.n, 3);
    assert_string_equal(s.v[0].pattern, "first");
    assert_string_equal(s.v[1].pattern, "spaced out");
    assert_string_equal(s.v[2].pattern, "^anchored*$");
    assert_int_equal(s.v[0].hit_bytes, 0);
    trk_suppressions_free(&s);
    assert_int_equal(s.n, 0);
}

static void test_load_errors(void **state)
{
    (void)state;
    struct trk_suppressions s;
    char err[256];
    static const char wrong_type[] = "leak:ok\nrace:foo\n";
    assert_int_equal(load(wrong_type, sizeof(wrong_type) - 1, &s, err), -1);
    assert_non_null(strstr(err, ":2: expected 'leak:PATTERN', got 'race:foo'"));
    trk_suppressions_free(&s);
    static const char empty[] = "\n\nleak:   \n";
    assert_int_equal(load(empty, sizeof(empty) - 1, &s, err), -1);
    assert_non_null(strstr(err, ":3: empty pattern after 'leak:'"));
    trk_suppressions_free(&s);
    static const char nul[] = "leak:a\0b\n";
    assert_int_equal(load(nul, sizeof(nul) - 1, &s, err), -1);
    assert_non_null(strstr(err, ":1: NUL byte in the line"));
    trk_suppressions_free(&s);
    assert_int_equal(trk_suppressions_load(&s, "/nonexistent/supp.txt", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "/nonexistent/supp.txt: No such file"));
    trk_suppressions_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match_against_model),
        cmocka_unit_test(test_match_cases),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_load_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
