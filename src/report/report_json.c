/* SPDX-License-Identifier: MIT
 *
 * report_json.c - the reports' JSON writer. Escaping validates UTF-8 rather
 * than trusting it (symbol names and paths come from arbitrary files).
 * Must not: emit NaN or infinities (not JSON).
 */
#include <inttypes.h>
#include <math.h>

#include "report/report_json.h"

/* Indentation stops here: a 1000-deep tree must not cost a megabyte of
 * spaces per line. */
#define INDENT_CAP 32

void trk_rjson_init(struct trk_rjson *j, FILE *f)
{
    j->f = f;
    j->depth = 0;
    j->first = true;
}

/* Length of the UTF-8 sequence at s (1..4), or 0 when it is not valid. The
 * NUL terminator fails every continuation test, so reads stay in bounds. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n = c < 0x80                 ? 1
               : c >= 0xC2 && c <= 0xDF ? 2
               : c >= 0xE0 && c <= 0xEF ? 3
               : c >= 0xF0 && c <= 0xF4 ? 4
                                        : 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if (n == 3 && ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0)))
        return 0; /* overlong, or a UTF-16 surrogate */
    if (n == 4 && ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90)))
        return 0;
    return n;
}

void trk_json_quote(FILE *f, const char *str, size_t max, bool html_safe)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    size_t used = 0;
    putc('"', f);
    while (*s) {
        size_t n = utf8_len(s);
        if (used + (n ? n : 1) > max) {
            fputs("\\u2026", f); /* cut: an ellipsis says so */
            break;
        }
        used += n ? n : 1;
        if (n == 0) {
            fputs("\\ufffd", f);
            s++;
        } else if (n == 1) {
            unsigned c = *s++;
            /* In a page, '<' '>' '&' escaped: no "</script>" or "<!--" can form. */
            if (c < 0x20 || c == 0x7f || (html_safe && (c == '<' || c == '>' || c == '&')))
                fprintf(f, "\\u%04x", c);
            else if (c == '"' || c == '\\')
                fprintf(f, "\\%c", c);
            else
                putc((int)c, f);
        } else if (html_safe && n == 3 && s[0] == 0xE2 && s[1] == 0x80 &&
                   (s[2] == 0xA8 || s[2] == 0xA9)) {
            fprintf(f, "\\u%04x", s[2] == 0xA8 ? 0x2028 : 0x2029); /* JS line ends */
            s += 3;
        } else {
            fwrite(s, 1, n, f);
            s += n;
        }
    }
    putc('"', f);
}

static void indent(struct trk_rjson *j)
{
    unsigned n = j->depth < INDENT_CAP ? j->depth : INDENT_CAP;
    for (unsigned i = 0; i < n; i++)
        fputs("  ", j->f);
}

static void member(struct trk_rjson *j, const char *key)
{
    if (j->depth > 0) {
        fputs(j->first ? "\n" : ",\n", j->f);
        indent(j);
    }
    j->first = false;
    if (key) {
        trk_json_quote(j->f, key, SIZE_MAX, false);
        fputs(": ", j->f);
    }
}

static void open_container(struct trk_rjson *j, const char *key, char c)
{
    member(j, key);
    fputc(c, j->f);
    j->depth++;
    j->first = true;
}

static void close_container(struct trk_rjson *j, char c)
{
    bool empty = j->first;
    if (j->depth > 0)
        j->depth--;
    if (!empty) {
        fputc('\n', j->f);
        indent(j);
    }
    fputc(c, j->f);
    /* The container was a member of its parent: the parent is not empty. */
    j->first = false;
}

void trk_rjson_begin_object(struct trk_rjson *j, const char *key)
{
    open_container(j, key, '{');
}

void trk_rjson_end_object(struct trk_rjson *j)
{
    close_container(j, '}');
}

void trk_rjson_begin_array(struct trk_rjson *j, const char *key)
{
    open_container(j, key, '[');
}

void trk_rjson_end_array(struct trk_rjson *j)
{
    close_container(j, ']');
}

void trk_rjson_u64(struct trk_rjson *j, const char *key, uint64_t v)
{
    member(j, key);
    fprintf(j->f, "%" PRIu64, v);
}

void trk_rjson_i64(struct trk_rjson *j, const char *key, int64_t v)
{
    member(j, key);
    fprintf(j->f, "%" PRId64, v);
}

void trk_rjson_double(struct trk_rjson *j, const char *key, double v)
{
    member(j, key);
    if (!isfinite(v))
        v = 0;
    fprintf(j->f, "%.9g", v);
}

void trk_rjson_bool(struct trk_rjson *j, const char *key, bool v)
{
    member(j, key);
    fputs(v ? "true" : "false", j->f);
}

void trk_rjson_string(struct trk_rjson *j, const char *key, const char *s)
{
    member(j, key);
    if (s)
        trk_json_quote(j->f, s, SIZE_MAX, false);
    else
        fputs("null", j->f);
}

void trk_rjson_finish(struct trk_rjson *j)
{
    fputc('\n', j->f);
}
