/* SPDX-License-Identifier: MIT
 *
 * export_speedscope.c - speedscope's file format
 * (https://www.speedscope.app/file-format-schema.json): one "sampled"
 * profile whose samples are the call tree's stacks (outermost frame first)
 * weighted by the bytes of the selection, frames shared by index. Also owns
 * the JSON string escaping every JSON export uses. Must not: compute values
 * (the call tree does) or emit anything the schema does not describe.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "report/export.h"

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

/* The node after n in depth-first pre-order (children in the tree's order,
 * largest first), or 0 after the last. */
static uint32_t next_preorder(const struct trk_ctree *t, uint32_t n)
{
    if (t->nodes[n].first_child)
        return t->nodes[n].first_child;
    while (n != 0) {
        if (t->nodes[n].next_sibling)
            return t->nodes[n].next_sibling;
        n = t->nodes[n].parent;
    }
    return 0;
}

struct fkey {
    char *name;
    const char *file; /* NULL unless a real frame's */
    uint32_t line;
    uint32_t pos; /* first-use position */
};

static int by_content(const void *a, const void *b)
{
    const struct fkey *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c == 0)
        c = strcmp(x->file ? x->file : "", y->file ? y->file : "");
    if (c == 0 && x->line != y->line)
        c = x->line < y->line ? -1 : 1;
    if (c == 0 && x->pos != y->pos)
        c = x->pos < y->pos ? -1 : 1;
    return c;
}

static const char *frame_file(const struct trk_location *l)
{
    return l->kind == TRK_LOC_FRAME && l->file && *l->file ? l->file : NULL;
}

/* Writes the frames the samples use, in first-use order, and sets
 * frame_of[loc] for each location used. Locations that would show alike
 * (same name, file and line, e.g. one function's lines merged late) share
 * one frame: speedscope merges stacks by frame index, so duplicates would
 * split a function into several boxes. Returns 0 or -1 (out of memory). */
static int write_frames(FILE *f, const struct trk_ctree *t, uint32_t *frame_of)
{
    uint32_t *order = malloc((t->nlocs ? t->nlocs : 1) * sizeof(*order));
    struct fkey *keys = calloc(t->nlocs ? t->nlocs : 1, sizeof(*keys));
    uint32_t *canon = malloc((t->nlocs ? t->nlocs : 1) * sizeof(*canon));
    int rc = -1;
    size_t n = 0;
    if (!order || !keys || !canon)
        goto out;
    for (uint32_t i = t->nnodes ? next_preorder(t, 0) : 0; i != 0; i = next_preorder(t, i)) {
        uint32_t loc = t->nodes[i].loc;
        if (frame_of[loc] != UINT32_MAX)
            continue;
        frame_of[loc] = (uint32_t)n;
        order[n] = loc;
        const struct trk_location *l = &t->locs[loc];
        char name[512];
        keys[n].name = strdup(trk_location_name(l, name, sizeof(name)));
        if (!keys[n].name)
            goto out;
        keys[n].file = frame_file(l);
        keys[n].line = keys[n].file ? l->line : 0;
        keys[n].pos = (uint32_t)n;
        n++;
    }
    if (n)
        qsort(keys, n, sizeof(*keys), by_content);
    for (size_t i = 0, g = 0; i < n; i++) {
        if (i == 0 || strcmp(keys[i].name, keys[g].name) != 0 ||
            (keys[i].file == NULL) != (keys[g].file == NULL) ||
            (keys[i].file && strcmp(keys[i].file, keys[g].file) != 0) ||
            keys[i].line != keys[g].line)
            g = i; /* a new group; sorted by pos within, so g has the first use */
        canon[keys[i].pos] = keys[g].pos;
    }
    uint32_t next = 0;
    fputs("\"shared\":{\"frames\":[", f);
    for (size_t pos = 0; pos < n; pos++) {
        if (canon[pos] != pos) {
            frame_of[order[pos]] = frame_of[order[canon[pos]]];
            continue;
        }
        frame_of[order[pos]] = next;
        const struct trk_location *l = &t->locs[order[pos]];
        const char *file = frame_file(l);
        char name[512];
        fputs(next ? ",\n{\"name\":" : "\n{\"name\":", f);
        trk_export_json_string(f, trk_location_name(l, name, sizeof(name)));
        if (file) {
            fputs(",\"file\":", f);
            trk_export_json_string(f, file);
            if (l->line)
                fprintf(f, ",\"line\":%" PRIu32, l->line);
        }
        putc('}', f);
        next++;
    }
    fputs("]},\n", f);
    rc = 0;
out:
    for (size_t i = 0; keys && i < n; i++)
        free(keys[i].name);
    free(keys);
    free(order);
    free(canon);
    return rc;
}

int trk_export_speedscope(FILE *f, const struct trk_export *x, char *err, size_t errlen)
{
    const struct trk_ctree *t = x->tree;
    if (!t) {
        snprintf(err, errlen, "speedscope export needs a call tree");
        return -1;
    }
    uint32_t *frame_of = malloc((t->nlocs ? t->nlocs : 1) * sizeof(*frame_of));
    uint32_t *path = malloc((t->nnodes ? t->nnodes : 1) * sizeof(*path));
    if (!frame_of || !path) {
        free(frame_of);
        free(path);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < t->nlocs; i++)
        frame_of[i] = UINT32_MAX;

    fputs("{\"$schema\":\"" SPEEDSCOPE_SCHEMA "\",\n", f);
    if (write_frames(f, t, frame_of) < 0) {
        free(frame_of);
        free(path);
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    uint64_t total = 0;
    for (size_t i = 1; i < t->nnodes; i++)
        total += t->nodes[i].self_bytes;
    char pname[256];
    uint64_t sampled = trk_export_sample_bytes(x);
    char rate[64] = "";
    if (sampled) /* the viewer shows the name: the values are estimates */
        snprintf(rate, sizeof(rate), ", sampled at %" PRIu64 " bytes", sampled);
    snprintf(pname, sizeof(pname), "%s (%s%s)", x->name ? x->name : "tracker",
             trk_select_name(x->select), rate);
    fputs("\"profiles\":[{\"type\":\"sampled\",\"name\":", f);
    trk_export_json_string(f, pname);
    fprintf(f, ",\"unit\":\"bytes\",\"startValue\":0,\"endValue\":%" PRIu64 ",\n\"samples\":[",
            total);
    /* Samples in depth-first order, children largest first, so that
     * speedscope's time-ordered view already reads like a flame graph. */
    bool first = true;
    for (uint32_t i = t->nnodes ? next_preorder(t, 0) : 0; i != 0; i = next_preorder(t, i)) {
        if (t->nodes[i].self_bytes == 0)
            continue;
        size_t depth = 0;
        for (uint32_t n = i; n != 0 && depth < t->nnodes; n = t->nodes[n].parent)
            path[depth++] = n;
        fputs(first ? "\n[" : ",\n[", f);
        first = false;
        for (size_t k = depth; k-- > 0;)
            fprintf(f, "%s%" PRIu32, k + 1 == depth ? "" : ",", frame_of[t->nodes[path[k]].loc]);
        putc(']', f);
    }
    fputs("],\n\"weights\":[", f);
    first = true;
    for (uint32_t i = t->nnodes ? next_preorder(t, 0) : 0; i != 0; i = next_preorder(t, i)) {
        if (t->nodes[i].self_bytes == 0)
            continue;
        fprintf(f, "%s%" PRIu64, first ? "" : ",", t->nodes[i].self_bytes);
        first = false;
    }
    fputs("]}],\n\"name\":", f);
    trk_export_json_string(f, pname);
    fputs(",\"activeProfileIndex\":0,\"exporter\":", f);
    trk_export_json_string(f, x->exporter ? x->exporter : "tracker");
    fputs("}\n", f);
    free(frame_of);
    free(path);
    return 0;
}
