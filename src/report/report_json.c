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

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. The NUL
 * terminator fails every continuation test, so reads stay in bounds. */
static int utf8_len(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 && (s[3] & 0xC0) == 0x80 ? 4 : 0;
    }
    return 0;
}

static void write_string(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', f);
    while (*s) {
        unsigned char c = *s;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
        } else if (c == '\n') {
            fputs("\\n", f);
        } else if (c == '\t') {
            fputs("\\t", f);
        } else if (c < 0x20 || c == 0x7F) {
            fprintf(f, "\\u%04x", c);
        } else {
            int n = utf8_len(s);
            if (n == 0) {
                fputs("\\ufffd", f);
            } else {
                fwrite(s, 1, (size_t)n, f);
                s += n;
                continue;
            }
        }
        s++;
    }
    fputc('"', f);
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
        write_string(j->f, key);
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
        write_string(j->f, s);
    else
        fputs("null", j->f);
}

void trk_rjson_finish(struct trk_rjson *j)
{
    fputc('\n', j->f);
}
