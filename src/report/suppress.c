/* SPDX-License-Identifier: MIT
 *
 * suppress.c - LeakSanitizer-style suppression files for `tracker leaks`:
 * "leak:PATTERN" lines, '#' comments and blank lines; PATTERN is found as a
 * substring where '*' matches any run of characters, '^' anchors the start
 * and '$' the end (LSan's template syntax); and which suppression hides a
 * leak's stack, for a file's lines and the default set's narrower scopes
 * (suppress_defaults.c). Must not: accept other suppression types silently
 * (a typo would hide nothing and look fine).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

/* Glob match of the whole text against p[0..plen) where only '*' is
 * special. Iterative with one backtrack point: linear-ish, no recursion. */
static bool glob(const char *p, size_t plen, const char *t)
{
    size_t pi = 0, star = SIZE_MAX;
    const char *mark = NULL;
    while (*t) {
        if (pi < plen && p[pi] == '*') {
            star = pi++;
            mark = t;
        } else if (pi < plen && p[pi] == *t) {
            pi++;
            t++;
        } else if (star != SIZE_MAX) {
            pi = star + 1;
            t = ++mark;
        } else {
            return false;
        }
    }
    while (pi < plen && p[pi] == '*')
        pi++;
    return pi == plen;
}

bool trk_suppression_match(const char *pattern, const char *text)
{
    if (!text || !*text || !pattern)
        return false;
    /* Unanchored ends become '*': "foo" is "*foo*", "^foo" is "foo*". */
    size_t n = strlen(pattern);
    bool start = pattern[0] == '^';
    bool end = n > (size_t)start && pattern[n - 1] == '$';
    const char *body = pattern + start;
    size_t blen = n - start - end;
    char stackbuf[256];
    char *buf = blen + 3 <= sizeof(stackbuf) ? stackbuf : malloc(blen + 3);
    if (!buf)
        return false;
    size_t k = 0;
    if (!start)
        buf[k++] = '*';
    memcpy(buf + k, body, blen);
    k += blen;
    if (!end)
        buf[k++] = '*';
    bool m = glob(buf, k, text);
    if (buf != stackbuf)
        free(buf);
    return m;
}

void trk_suppressions_free(struct trk_suppressions *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].pattern);
    free(s->v);
    memset(s, 0, sizeof(*s));
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

int trk_suppressions_load(struct trk_suppressions *s, const char *path, char *err, size_t errlen)
{
    memset(s, 0, sizeof(*s));
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    unsigned long lineno = 0;
    int rc = 0;
    ssize_t len;
    errno = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (strlen(line) != (size_t)len) {
            snprintf(err, errlen, "%s:%lu: NUL byte in the line", path, lineno);
            rc = -1;
            break;
        }
        char *l = trim(line);
        if (!*l || *l == '#')
            continue;
        if (strncmp(l, "leak:", 5) != 0) {
            snprintf(err, errlen, "%s:%lu: expected 'leak:PATTERN', got '%.60s'", path, lineno, l);
            rc = -1;
            break;
        }
        char *pat = trim(l + 5);
        if (!*pat) {
            snprintf(err, errlen, "%s:%lu: empty pattern after 'leak:'", path, lineno);
            rc = -1;
            break;
        }
        struct trk_suppression *v = realloc(s->v, (s->n + 1) * sizeof(*v));
        char *copy = v ? strdup(pat) : NULL;
        if (!copy) {
            if (v)
                s->v = v;
            snprintf(err, errlen, "%s: out of memory", path);
            rc = -1;
            break;
        }
        s->v = v;
        s->v[s->n++] = (struct trk_suppression){.pattern = copy};
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "%s: %s", path, errno ? strerror(errno) : "read error");
        rc = -1;
    }
    free(line);
    fclose(f);
    return rc;
}

static bool frame_hit(const char *pat, const struct trk_sup_frame *f)
{
    const char *base = f->module ? strrchr(f->module, '/') : NULL;
    return trk_suppression_match(pat, f->function) || trk_suppression_match(pat, f->file) ||
           trk_suppression_match(pat, f->module) || (base && trk_suppression_match(pat, base + 1));
}

static const char *module_base(const struct trk_sup_frame *f)
{
    const char *slash = f->module ? strrchr(f->module, '/') : NULL;
    return slash ? slash + 1 : f->module;
}

/* The dynamic loader running constructors (elf/dl-init.c). */
static bool in_loader_init(const struct trk_sup_frame *f)
{
    const char *m = module_base(f);
    return (m && strncmp(m, "ld-", 3) == 0 && strstr(m, ".so")) ||
           (f->function &&
            (strcmp(f->function, "call_init") == 0 || strcmp(f->function, "_dl_init") == 0));
}

static bool stack_hit(const struct trk_suppression *x, const struct trk_sup_frame *f, size_t n)
{
    switch (x->scope) {
    case TRK_SUP_TOP:
        return n > 0 && frame_hit(x->pattern, &f[0]);
    case TRK_SUP_CTOR: {
        size_t k = 0;
        while (k < n && trk_suppression_match(x->pattern, module_base(&f[k])))
            k++;
        return k > 0 && k < n && in_loader_init(&f[k]);
    }
    case TRK_SUP_ANY:
        break;
    }
    for (size_t k = 0; k < n; k++)
        if (frame_hit(x->pattern, &f[k]))
            return true;
    return false;
}

int32_t trk_suppressions_find(const struct trk_suppressions *s, const struct trk_sup_frame *f,
                              size_t n)
{
    for (size_t p = 0; s && p < s->n; p++)
        if (stack_hit(&s->v[p], f, n))
            return (int32_t)p;
    return -1;
}
