/* SPDX-License-Identifier: MIT
 *
 * report_json.h - the one streaming JSON writer (tracker stats and every
 * report): objects, arrays, signed and unsigned integers, null, and strings
 * escaped as valid UTF-8 whatever bytes come in (capture strings are not
 * trusted). Nesting depth is unbounded, since call trees can be 1000+ levels
 * deep; indentation stops growing past a cap so such trees stay linear in
 * size. Must not: buffer documents or know any schema.
 */
#ifndef TRK_REPORT_JSON_H
#define TRK_REPORT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Writes str as one JSON string: invalid UTF-8 becomes U+FFFD, controls are
 * escaped, and past max bytes the rest is replaced by an ellipsis. With
 * html_safe, '<' '>' '&' and U+2028/2029 are escaped too, so the string can
 * sit inside an HTML <script> block. NULL writes "". */
void trk_json_quote(FILE *f, const char *str, size_t max, bool html_safe);

struct trk_rjson {
    FILE *f;
    unsigned depth;
    bool first; /* nothing written yet in the innermost open container */
};

void trk_rjson_init(struct trk_rjson *j, FILE *f);
/* key is NULL for top-level values and array elements. */
void trk_rjson_begin_object(struct trk_rjson *j, const char *key);
void trk_rjson_end_object(struct trk_rjson *j);
void trk_rjson_begin_array(struct trk_rjson *j, const char *key);
void trk_rjson_end_array(struct trk_rjson *j);
void trk_rjson_u64(struct trk_rjson *j, const char *key, uint64_t v);
void trk_rjson_i64(struct trk_rjson *j, const char *key, int64_t v);
void trk_rjson_double(struct trk_rjson *j, const char *key, double v);
void trk_rjson_bool(struct trk_rjson *j, const char *key, bool v);
/* s NULL writes null. */
void trk_rjson_string(struct trk_rjson *j, const char *key, const char *s);
/* Ends the document with a newline. */
void trk_rjson_finish(struct trk_rjson *j);

#endif /* TRK_REPORT_JSON_H */
