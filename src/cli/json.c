/* SPDX-License-Identifier: MIT
 *
 * json.c - the streaming JSON writer. Strings from captures (command lines,
 * paths) are arbitrary bytes, so escaping validates UTF-8 rather than
 * trusting it. Must not: emit NaN or infinities (not JSON).
 */
#include <math.h>
#include <string.h>

#include "cli/json.h"

void trk_json_init(struct trk_json *j, FILE *f)
{
    j->f = f;
    j->depth = 0;
    j->first[0] = true;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
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

void trk_json_write_string(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', f);
    while (*s) {
        unsigned char c = *s;
        switch (c) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        default:
            if (c < 0x20 || c == 0x7F) {
                fprintf(f, "\\u%04x", c);
            } else {
                /* The NUL terminator stops utf8_len's continuation checks. */
                int n = utf8_len(s);
                if (n == 0) {
                    fputs("\\ufffd", f);
                } else {
                    fwrite(s, 1, (size_t)n, f);
                    s += n;
                    continue;
                }
            }
        }
        s++;
    }
    fputc('"', f);
}

static void member(struct trk_json *j, const char *key)
{
    if (j->depth > 0) {
        fputs(j->first[j->depth] ? "\n" : ",\n", j->f);
        for (int i = 0; i < j->depth; i++)
            fputs("  ", j->f);
    }
    j->first[j->depth] = false;
    if (key) {
        trk_json_write_string(j->f, key);
        fputs(": ", j->f);
    }
}

void trk_json_begin_object(struct trk_json *j, const char *key)
{
    member(j, key);
    fputc('{', j->f);
    if (j->depth + 1 < TRK_JSON_DEPTH_MAX)
        j->depth++;
    j->first[j->depth] = true;
}

void trk_json_end_object(struct trk_json *j)
{
    bool empty = j->first[j->depth];
    if (j->depth > 0)
        j->depth--;
    if (!empty) {
        fputc('\n', j->f);
        for (int i = 0; i < j->depth; i++)
            fputs("  ", j->f);
    }
    fputc('}', j->f);
}

void trk_json_u64(struct trk_json *j, const char *key, uint64_t v)
{
    member(j, key);
    fprintf(j->f, "%llu", (unsigned long long)v);
}

void trk_json_double(struct trk_json *j, const char *key, double v)
{
    member(j, key);
    if (!isfinite(v))
        v = 0;
    fprintf(j->f, "%.9g", v);
}

void trk_json_bool(struct trk_json *j, const char *key, bool v)
{
    member(j, key);
    fputs(v ? "true" : "false", j->f);
}

void trk_json_string(struct trk_json *j, const char *key, const char *s)
{
    member(j, key);
    trk_json_write_string(j->f, s);
}

void trk_json_finish(struct trk_json *j)
{
    fputc('\n', j->f);
}
