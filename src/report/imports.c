/* SPDX-License-Identifier: MIT
 *
 * imports.c - `tracker imports` (imports.h): reads each capture's import
 * tree (analysis/imports.h, a pass of its own: no profile or symbolizer is
 * needed) and prints it like `python -X importtime`, self and cumulative
 * bytes allocated, and self and cumulative bytes still live when the import
 * finished, the module indented by depth, in import order; or as JSON
 * nodes nested by "children". Walks are by links, never recursive (imports
 * nest as deep as a program makes them). Must not: read events itself,
 * exit, or print errors (they come back in err).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/imports.h"
#include "report/imports.h"
#include "report/report_internal.h"

#define NONE       TRK_IMPORT_NONE
#define INDENT_CAP 40 /* past this depth lines stop moving right */

struct icapture {
    char *path;
    uint32_t pid;
    char label[200]; /* "pid N: command" */
    bool truncated;  /* no END: open imports were closed at the last event */
    struct trk_imports im;
};

struct iset {
    struct icapture *v;
    size_t n;
};

/* ---- Loading --------------------------------------------------------------------- */

struct progress_ctx {
    const struct trk_imports_report_opts *o;
    const char *path;
};

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
    struct progress_ctx *p = ctx;
    p->o->progress(p->o->progress_ctx, p->path, done, total);
}

/* Reads the import tree of the capture r (opened on path) into a new entry
 * of s. Returns 0, -1 with err set. */
static int load_one(struct iset *s, struct trk_reader *r, const char *path,
                    const struct trk_imports_report_opts *o, char *err, size_t errlen)
{
    struct icapture *v = realloc(s->v, (s->n + 1) * sizeof(*v));
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->v = v;
    struct icapture *c = &v[s->n++];
    memset(c, 0, sizeof(*c));
    c->im.first_top = NONE;
    c->path = strdup(path);
    c->pid = trk_reader_info(r)->pid;
    trk_report_label(c->label, sizeof(c->label), trk_reader_info(r));
    struct progress_ctx pc = {.o = o, .path = path};
    int rc = trk_imports_compute(r, o->progress ? on_progress : NULL, &pc, &c->im);
    if (rc == -1) {
        snprintf(err, errlen, "%s", trk_reader_error(r));
        if (!*err)
            snprintf(err, errlen, "%s: cannot read the capture", path);
        return -1;
    }
    if (rc < 0 || !c->path) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    c->truncated = trk_reader_status(r)->truncated;
    return 0;
}

static void iset_free(struct iset *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].path);
        trk_imports_free(&s->v[i].im);
    }
    free(s->v);
    memset(s, 0, sizeof(*s));
}

/* path, and with o->all the other captures of its run (capture_set.c). */
static int load(struct iset *s, const char *path, const struct trk_imports_report_opts *o,
                char *err, size_t errlen)
{
    char **paths;
    size_t n;
    int rc = trk_capture_set_paths(path, o->all, o->warn, o->warn_ctx, &paths, &n, err, errlen);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        struct trk_reader *r;
        if (trk_reader_open(paths[i], &r, err, errlen) < 0) {
            rc = -1;
            break;
        }
        rc = load_one(s, r, paths[i], o, err, errlen);
        trk_reader_close(r);
    }
    trk_capture_set_paths_free(paths, n);
    return rc;
}

/* ---- Walking ------------------------------------------------------------------------ */

static bool shown(const struct trk_imports *im, uint32_t i, uint64_t min)
{
    return im->v[i].cumulative_allocated_bytes >= min;
}

/* i, or the first shown sibling after it; NONE when none. */
static uint32_t shown_from(const struct trk_imports *im, uint32_t i, uint64_t min)
{
    while (i != NONE && !shown(im, i, min))
        i = im->v[i].next_sibling;
    return i;
}

/* ---- Time and order ------------------------------------------------------------------- */

static uint64_t duration(const struct trk_import *x)
{
    return x->end_ns > x->start_ns ? x->end_ns - x->start_ns : 0;
}

/* Like -X importtime's "self": the import's time less its nested imports'. */
static uint64_t self_time(const struct trk_imports *im, uint32_t i)
{
    uint64_t d = duration(&im->v[i]), kids = 0;
    for (uint32_t c = im->v[i].first_child; c != NONE; c = im->v[c].next_sibling)
        kids += duration(&im->v[c]);
    return d > kids ? d - kids : 0;
}

static uint64_t sort_key(const struct trk_imports *im, uint32_t i, int sort)
{
    const struct trk_import *x = &im->v[i];
    switch (sort) {
    case TRK_IMPORTS_SORT_SELF_ALLOC:
        return x->allocated_bytes;
    case TRK_IMPORTS_SORT_ALLOC:
        return x->cumulative_allocated_bytes;
    case TRK_IMPORTS_SORT_SELF_LIVE:
        return x->live_bytes;
    case TRK_IMPORTS_SORT_LIVE:
        return x->cumulative_live_bytes;
    case TRK_IMPORTS_SORT_SELF_TIME:
        return self_time(im, i);
    default:
        return duration(x);
    }
}

struct keyed {
    uint64_t key;
    uint32_t i; /* import order breaks ties */
};

static int by_key_desc(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Relinks one sibling list (head at *first) by the key, largest first. */
static int sort_siblings(struct trk_imports *im, uint32_t *first, int sort, struct keyed *tmp)
{
    size_t n = 0;
    for (uint32_t c = *first; c != NONE; c = im->v[c].next_sibling)
        tmp[n++] = (struct keyed){sort_key(im, c, sort), c};
    if (n < 2)
        return 0;
    qsort(tmp, n, sizeof(*tmp), by_key_desc);
    *first = tmp[0].i;
    for (size_t k = 0; k < n; k++)
        im->v[tmp[k].i].next_sibling = k + 1 < n ? tmp[k + 1].i : NONE;
    return 0;
}

/* Keys are computed before any relinking of the same list, and a node's
 * self time reads only its own children's durations: lists can be sorted
 * in any order. */
static int sort_tree(struct trk_imports *im, int sort)
{
    if (sort == TRK_IMPORTS_SORT_ORDER || im->n == 0)
        return 0;
    struct keyed *tmp = malloc(im->n * sizeof(*tmp));
    if (!tmp)
        return -1;
    sort_siblings(im, &im->first_top, sort, tmp);
    for (size_t i = 0; i < im->n; i++)
        sort_siblings(im, &im->v[i].first_child, sort, tmp);
    free(tmp);
    return 0;
}

/* "850 us", "12.3 ms", "1.20 s". */
static const char *fmt_time(uint64_t ns, char *buf, size_t len)
{
    if (ns < 1000000)
        snprintf(buf, len, "%" PRIu64 " us", ns / 1000);
    else if (ns < 1000000000)
        snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
    else
        snprintf(buf, len, "%.2f s", (double)ns / 1e9);
    return buf;
}

/* ---- Text ----------------------------------------------------------------------------- */

static void text_capture(FILE *out, const struct icapture *c, uint64_t min, bool several)
{
    char a[32], b[32], d[32], e[32], v[32], t1[32], t2[32];
    const struct trk_imports *im = &c->im;
    uint64_t alloc = 0, live = 0;
    size_t hidden = 0;
    for (uint32_t t = im->first_top; t != NONE; t = im->v[t].next_sibling) {
        alloc += im->v[t].cumulative_allocated_bytes;
        live += im->v[t].cumulative_live_bytes;
    }
    for (size_t i = 0; i < im->n; i++)
        hidden += !shown(im, (uint32_t)i, min);
    fprintf(out, "%s", several ? "\n" : "");
    if (c->truncated)
        fprintf(out,
                "warning: %s has no end record: %s; imports still open there count as "
                "unfinished\n",
                c->path, TRK_REPORT_NO_END);
    fprintf(out, "%s - ", c->label);
    if (im->python)
        fprintf(out, "Python %s, ", trk_python_version(im->python_version, v, sizeof(v)));
    if (!im->n) {
        fprintf(out, "no imports recorded\n");
        return;
    }
    fprintf(out, "%zu import%s: %s allocated while importing, %s of it live when they ended\n",
            im->n, im->n == 1 ? "" : "s", trk_rfmt_bytes(alloc, a, sizeof(a)),
            trk_rfmt_bytes(live, b, sizeof(b)));
    fprintf(out, "\n%10s %11s %10s %11s %10s %11s  %s\n", "self alloc", "cumulative", "self live",
            "cumul. live", "self time", "cumul. time", "imported module");
    /* The thread of the first import is the main one; others are named. */
    uint32_t main_tid = im->first_top != NONE ? im->v[im->first_top].tid : 0;
    uint32_t n = shown_from(im, im->first_top, min);
    while (n != NONE) {
        const struct trk_import *x = &im->v[n];
        fprintf(out, "%10s %11s %10s %11s %10s %11s  ",
                trk_rfmt_bytes(x->allocated_bytes, a, sizeof(a)),
                trk_rfmt_bytes(x->cumulative_allocated_bytes, b, sizeof(b)),
                trk_rfmt_bytes(x->live_bytes, d, sizeof(d)),
                trk_rfmt_bytes(x->cumulative_live_bytes, e, sizeof(e)),
                fmt_time(self_time(im, n), t1, sizeof(t1)), fmt_time(duration(x), t2, sizeof(t2)));
        unsigned ind = x->depth < INDENT_CAP ? x->depth : INDENT_CAP;
        for (unsigned i = 0; i < ind; i++)
            fputs("  ", out);
        if (x->depth > INDENT_CAP)
            fprintf(out, "[depth %u] ", x->depth);
        fputs(x->module, out);
        if (x->parent == NONE && x->tid != main_tid)
            fprintf(out, " [thread %u]", x->tid);
        if (x->unfinished)
            fputs(" (unfinished)", out);
        fputc('\n', out);
        /* Pre-order: the first shown child, else the next shown sibling of
         * the node or of its nearest ancestor that has one. */
        uint32_t next = shown_from(im, x->first_child, min);
        for (uint32_t up = n; next == NONE && up != NONE; up = im->v[up].parent)
            next = shown_from(im, im->v[up].next_sibling, min);
        n = next;
    }
    if (hidden)
        fprintf(out,
                "... %zu import%s under %s bytes cumulatively (or nested in one) left out "
                "(--min-bytes)\n",
                hidden, hidden == 1 ? "" : "s", trk_rfmt_grouped(min, a, sizeof(a)));
}

/* ---- JSON ------------------------------------------------------------------------------- */

static void json_node(struct trk_rjson *j, const struct icapture *c, uint32_t i, bool all)
{
    const struct trk_import *x = &c->im.v[i];
    trk_rjson_begin_object(j, NULL);
    trk_rjson_string(j, "module", x->module);
    trk_rjson_u64(j, "allocated_bytes", x->allocated_bytes);
    trk_rjson_u64(j, "live_bytes", x->live_bytes);
    trk_rjson_u64(j, "cumulative_allocated_bytes", x->cumulative_allocated_bytes);
    trk_rjson_u64(j, "cumulative_live_bytes", x->cumulative_live_bytes);
    trk_rjson_u64(j, "allocations", x->allocations);
    if (all)
        trk_rjson_u64(j, "pid", c->pid);
    trk_rjson_u64(j, "thread", x->tid);
    trk_rjson_double(j, "start_s", (double)x->start_ns / 1e9);
    trk_rjson_double(j, "duration_s", (double)duration(x) / 1e9);
    trk_rjson_double(j, "self_duration_s", (double)self_time(&c->im, i) / 1e9);
    if (x->unfinished)
        trk_rjson_bool(j, "unfinished", true);
    trk_rjson_begin_array(j, "children");
}

/* The shown top-level imports of c as nodes, children nested. */
static void json_tree(struct trk_rjson *j, const struct icapture *c, uint64_t min, bool all)
{
    const struct trk_imports *im = &c->im;
    uint32_t n = shown_from(im, im->first_top, min);
    while (n != NONE) {
        json_node(j, c, n, all);
        uint32_t child = shown_from(im, im->v[n].first_child, min);
        if (child != NONE) {
            n = child;
            continue;
        }
        /* Close n and every ancestor without a shown sibling left. */
        for (;;) {
            trk_rjson_end_array(j);
            trk_rjson_end_object(j);
            uint32_t next = shown_from(im, im->v[n].next_sibling, min);
            if (next != NONE) {
                n = next;
                break;
            }
            n = im->v[n].parent;
            if (n == NONE)
                break;
        }
    }
}

static void print_json(FILE *out, const struct iset *s, const struct trk_imports_report_opts *o)
{
    struct trk_rjson j;
    char v[32];
    trk_rjson_init(&j, out);
    trk_rjson_begin_object(&j, NULL);
    if (!o->all) {
        const struct icapture *c = &s->v[0];
        trk_rjson_u64(&j, "pid", c->pid);
        trk_rjson_string(&j, "python_version",
                         c->im.python ? trk_python_version(c->im.python_version, v, sizeof(v))
                                      : NULL);
        trk_rjson_bool(&j, "truncated", c->truncated);
    } else {
        trk_rjson_begin_array(&j, "processes");
        for (size_t i = 0; i < s->n; i++) {
            const struct icapture *c = &s->v[i];
            trk_rjson_begin_object(&j, NULL);
            trk_rjson_u64(&j, "pid", c->pid);
            trk_rjson_string(&j, "label", c->label);
            trk_rjson_string(&j, "python_version",
                             c->im.python ? trk_python_version(c->im.python_version, v, sizeof(v))
                                          : NULL);
            trk_rjson_u64(&j, "imports", c->im.n);
            trk_rjson_bool(&j, "truncated", c->truncated);
            trk_rjson_end_object(&j);
        }
        trk_rjson_end_array(&j);
    }
    trk_rjson_u64(&j, "min_bytes", o->min_bytes);
    /* Every process's trees in one list (each node names its pid with
     * --all), so that one reader serves both forms. */
    trk_rjson_begin_array(&j, "imports");
    for (size_t i = 0; i < s->n; i++)
        json_tree(&j, &s->v[i], o->min_bytes, o->all);
    trk_rjson_end_array(&j);
    trk_rjson_end_object(&j);
    trk_rjson_finish(&j);
}

int trk_report_imports(const char *path, const struct trk_imports_report_opts *o, FILE *out,
                       char *err, size_t errlen)
{
    struct iset s = {0};
    if (load(&s, path, o, err, errlen) < 0) {
        iset_free(&s);
        return -1;
    }
    bool python = false;
    for (size_t i = 0; i < s.n; i++)
        python |= s.v[i].im.python || s.v[i].im.n > 0;
    if (!python) {
        snprintf(err, errlen, "%s: no Python imports recorded (no Python interpreter in %s)", path,
                 o->all && s.n > 1 ? "these captures" : "this capture");
        iset_free(&s);
        return 1;
    }
    for (size_t i = 0; i < s.n; i++)
        if (sort_tree(&s.v[i].im, o->sort) < 0) {
            snprintf(err, errlen, "out of memory");
            iset_free(&s);
            return -1;
        }
    if (o->json) {
        print_json(out, &s, o);
    } else {
        for (size_t i = 0; i < s.n; i++)
            text_capture(out, &s.v[i], o->min_bytes, i > 0);
        fputs("\n(self: the import itself; cumulative: with the imports it made; live: still "
              "allocated when the import finished; time: from its start to its end, as\n"
              "-X importtime: self less its nested imports)\n",
              out);
    }
    iset_free(&s);
    return 0;
}
