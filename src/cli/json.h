/* SPDX-License-Identifier: MIT
 *
 * json.h - a minimal streaming JSON writer for the CLI's --json outputs.
 * Owns commas, nesting, indentation and string escaping (any bytes in, valid
 * UTF-8 JSON out). Must not: buffer whole documents or know any schema.
 */
#ifndef TRK_JSON_H
#define TRK_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define TRK_JSON_DEPTH_MAX 32

struct trk_json {
    FILE *f;
    int depth;
    bool first[TRK_JSON_DEPTH_MAX]; /* no member written yet at this depth */
};

void trk_json_init(struct trk_json *j, FILE *f);
/* key is NULL for the top-level value and for array elements. */
void trk_json_begin_object(struct trk_json *j, const char *key);
void trk_json_end_object(struct trk_json *j);
void trk_json_u64(struct trk_json *j, const char *key, uint64_t v);
void trk_json_double(struct trk_json *j, const char *key, double v);
void trk_json_bool(struct trk_json *j, const char *key, bool v);
void trk_json_string(struct trk_json *j, const char *key, const char *s);
/* Ends the document with a newline. */
void trk_json_finish(struct trk_json *j);

/* Writes s as a JSON string literal: control characters escaped, invalid
 * UTF-8 replaced by U+FFFD. */
void trk_json_write_string(FILE *f, const char *s);

#endif /* TRK_JSON_H */
