/* SPDX-License-Identifier: MIT
 *
 * export_folded.c - Brendan Gregg's folded stacks ("a;b;c 123"), the input
 * of flamegraph.pl, inferno and most flame graph tools: one line per
 * distinct stack, outermost frame first, value = bytes of the selection.
 * Owns the line syntax (frame text sanitized so that ';' and line breaks
 * cannot split a frame). Must not: compute values (the call tree does).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/export.h"

struct line {
    char *text; /* "a;b;c" */
    uint64_t bytes;
};

struct strbuf {
    char *p;
    size_t len, cap;
};

static int sb_add(struct strbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

/* Appends one frame; ';' would start a new frame and a line break a new
 * stack, and a trailing " digits" is only ever read at the end of the line,
 * so those are the only bytes that need replacing. Other control bytes go
 * too: they break terminals and some tools' parsers. */
static int sb_frame(struct strbuf *b, const char *name)
{
    size_t start = b->len;
    if (!name || !*name)
        name = "[unknown]";
    if (sb_add(b, name, strlen(name)) < 0)
        return -1;
    for (size_t i = start; i < b->len; i++) {
        unsigned char c = (unsigned char)b->p[i];
        if (c == ';')
            b->p[i] = ',';
        else if (c < 0x20 || c == 0x7f)
            b->p[i] = ' ';
    }
    return 0;
}

static int by_text(const void *a, const void *b)
{
    return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

/* Builds the "outer;...;inner" text of node n into b. */
static int node_text(const struct trk_ctree *t, uint32_t n, struct strbuf *b, uint32_t *path,
                     size_t maxdepth)
{
    size_t depth = 0;
    for (uint32_t i = n; i != 0 && depth < maxdepth; i = t->nodes[i].parent)
        path[depth++] = i;
    b->len = 0;
    if (sb_add(b, "", 0) < 0)
        return -1;
    char name[512];
    while (depth > 0) {
        const struct trk_ctree_node *nd = &t->nodes[path[--depth]];
        const struct trk_location *l = &t->locs[nd->loc];
        const char *s = trk_location_name(l, name, sizeof(name));
        /* Python frames carry their line, "main (train.py:52)": a Python
         * function name alone rarely says where (<module>, __init__). */
        char withline[1024];
        if (l->python && l->kind == TRK_LOC_FRAME && l->file) {
            if (l->line)
                snprintf(withline, sizeof(withline), "%s (%s:%" PRIu32 ")", s,
                         trk_display_path(l->file), l->line);
            else
                snprintf(withline, sizeof(withline), "%s (%s)", s, trk_display_path(l->file));
            s = withline;
        }
        if (b->len && sb_add(b, ";", 1) < 0)
            return -1;
        if (sb_frame(b, s) < 0)
            return -1;
    }
    return 0;
}

int trk_export_folded(FILE *f, const struct trk_export *x, char *err, size_t errlen)
{
    const struct trk_ctree *t = x->tree;
    if (!t) {
        snprintf(err, errlen, "folded export needs a call tree");
        return -1;
    }
    int rc = -1;
    struct line *lines = NULL;
    size_t nlines = 0;
    struct strbuf b = {0};
    /* A path is never longer than the tree has nodes. */
    uint32_t *path = malloc((t->nnodes ? t->nnodes : 1) * sizeof(*path));
    if (!path)
        goto oom;
    lines = calloc(t->nnodes ? t->nnodes : 1, sizeof(*lines));
    if (!lines)
        goto oom;
    for (size_t i = 1; i < t->nnodes; i++) {
        if (t->nodes[i].self_bytes == 0)
            continue;
        if (node_text(t, (uint32_t)i, &b, path, t->nnodes) < 0)
            goto oom;
        lines[nlines].text = strdup(b.p);
        if (!lines[nlines].text)
            goto oom;
        lines[nlines++].bytes = t->nodes[i].self_bytes;
    }
    /* Sorted and merged: distinct locations can share a name (one function
     * name in two modules, line-level locations of one function), and sorted
     * output diffs well and is what stackcollapse scripts produce. */
    if (nlines)
        qsort(lines, nlines, sizeof(*lines), by_text);
    for (size_t i = 0; i < nlines;) {
        uint64_t sum = 0;
        size_t j = i;
        while (j < nlines && strcmp(lines[j].text, lines[i].text) == 0)
            sum += lines[j++].bytes;
        fprintf(f, "%s %" PRIu64 "\n", lines[i].text, sum);
        i = j;
    }
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
out:
    for (size_t i = 0; i < nlines; i++)
        free(lines[i].text);
    free(lines);
    free(path);
    free(b.p);
    return rc;
}
