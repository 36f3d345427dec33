/* SPDX-License-Identifier: MIT
 *
 * capture_set.c - loads what a report reads: FILE alone, or with --all the
 * whole capture set (FILE plus every <stem>.<pid>.bin / <stem>.<pid>.<n>.bin
 * beside it whose header carries FILE's session, docs/FORMAT.md §6), each
 * with its profile and symbolizer. Must not: print (warnings go through the
 * options' callback), or take in a file of another run that merely matches
 * the name pattern.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "report/report_internal.h"

/* Parses "<digits>.bin" or "<digits>.<digits>.bin" (docs/FORMAT.md §6). */
static bool parse_suffix(const char *s, unsigned long *pid, unsigned long *n)
{
    char *end;
    if (*s < '0' || *s > '9')
        return false;
    *pid = strtoul(s, &end, 10);
    *n = 0;
    if (strcmp(end, ".bin") == 0)
        return true;
    if (end[0] != '.' || end[1] < '0' || end[1] > '9')
        return false;
    *n = strtoul(end + 1, &end, 10);
    return strcmp(end, ".bin") == 0;
}

static int by_pid(const void *a, const void *b)
{
    const struct trk_capture_sibling *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->n < y->n ? -1 : x->n > y->n;
}

int trk_capture_siblings(const char *root, struct trk_capture_sibling **out, size_t *nout)
{
    const char *slash = strrchr(root, '/');
    const char *base = slash ? slash + 1 : root;
    size_t dirlen = slash ? (size_t)(slash - root) + 1 : 0;
    size_t stem_len = strlen(base);
    if (stem_len > 4 && strcmp(base + stem_len - 4, ".bin") == 0)
        stem_len -= 4;
    char *dir = malloc(dirlen + 2);
    if (!dir)
        return -1;
    if (dirlen)
        memcpy(dir, root, dirlen);
    else
        dir[dirlen++] = '.';
    dir[dirlen] = '\0';

    struct trk_capture_sibling *v = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        const char *name = de->d_name;
        unsigned long pid, k;
        if (strncmp(name, base, stem_len) != 0 || name[stem_len] != '.' ||
            strcmp(name, base) == 0 || !parse_suffix(name + stem_len + 1, &pid, &k))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            struct trk_capture_sibling *nv = realloc(v, cap * sizeof(*nv));
            if (!nv) {
                rc = -1;
                break;
            }
            v = nv;
        }
        size_t plen = (slash ? dirlen : 0) + strlen(name) + 1;
        char *p = malloc(plen);
        if (!p) {
            rc = -1;
            break;
        }
        snprintf(p, plen, "%.*s%s", slash ? (int)dirlen : 0, root, name);
        v[n++] = (struct trk_capture_sibling){.path = p, .pid = pid, .n = k};
    }
    if (d)
        closedir(d);
    free(dir);
    if (n)
        qsort(v, n, sizeof(*v), by_pid);
    *out = v;
    *nout = n;
    return rc;
}

struct progress_ctx {
    const struct trk_report_opts *o;
    const char *path;
};

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
    struct progress_ctx *p = ctx;
    p->o->progress(p->o->progress_ctx, p->path, done, total);
}

void trk_report_label(char *label, size_t cap, const struct trk_reader_info *in)
{
    int w = snprintf(label, cap, "pid %u:", in->pid);
    size_t len = w > 0 ? (size_t)w : 0;
    for (int i = 0; i < in->argc && len + 4 < cap; i++) {
        w = snprintf(label + len, cap - len, " %s", in->argv[i]);
        len = w < 0 ? len : len + (size_t)w;
    }
    if (len >= cap - 1)
        strcpy(label + cap - 4, "...");
    /* Command lines may hold newlines; a label is one line. */
    for (char *s = label; *s; s++)
        if ((unsigned char)*s < 0x20)
            *s = ' ';
}

/* Opens and profiles one capture into c. Returns 0, -1 with err set. */
static int load_one(struct trk_report_capture *c, const char *path, const struct trk_report_opts *o,
                    char *err, size_t errlen)
{
    c->path = strdup(path);
    if (!c->path) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    if (trk_reader_open(path, &c->r, err, errlen) < 0)
        return -1;
    trk_report_label(c->label, sizeof(c->label), trk_reader_info(c->r));
    struct progress_ctx pc = {.o = o, .path = path};
    struct trk_profile_options po = {
        .temp_allocs = o->temp_allocs,
        .temp_ns = o->temp_ns,
        .timeline_points = 2000,
        .exclude_gpu_driver_host = o->no_driver_host,
        .split_by_import = o->by_import,
        .progress = o->progress ? on_progress : NULL,
        .progress_ctx = &pc,
    };
    int rc = trk_profile_compute(c->r, &po, &c->prof);
    c->have_prof = true;
    if (rc == -1) {
        snprintf(err, errlen, "%s", trk_reader_error(c->r));
        if (!*err)
            snprintf(err, errlen, "%s: cannot read the capture", path);
        return -1;
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    struct trk_symbolizer_options so = {
        .debug_dirs = o->debug_dirs,
        .ndebug_dirs = o->ndebug_dirs,
        .warn = o->warn,
        .warn_ctx = o->warn_ctx,
    };
    c->sym = trk_symbolizer_new(c->r, &so);
    if (!c->sym) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    return 0;
}

static struct trk_report_capture *add(struct trk_report_set *s)
{
    struct trk_report_capture *v = realloc(s->v, (s->n + 1) * sizeof(*v));
    if (!v)
        return NULL;
    s->v = v;
    memset(&v[s->n], 0, sizeof(v[s->n]));
    return &v[s->n++];
}

static int push_path(char ***paths, size_t *n, const char *p)
{
    char **v = realloc(*paths, (*n + 1) * sizeof(*v));
    if (!v)
        return -1;
    *paths = v;
    if (!(v[*n] = strdup(p)))
        return -1;
    (*n)++;
    return 0;
}

int trk_capture_set_paths(const char *path, bool all, void (*warn)(void *, const char *),
                          void *warn_ctx, char ***paths, size_t *n, char *err, size_t errlen)
{
    *paths = NULL;
    *n = 0;
    if (push_path(paths, n, path) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (!all)
        return 0;
    struct trk_reader *r;
    if (trk_reader_open(path, &r, err, errlen) < 0)
        return -1;
    uint64_t session = trk_reader_info(r)->session;
    trk_reader_close(r);
    struct trk_capture_sibling *sib = NULL;
    size_t nsib = 0;
    int rc = trk_capture_siblings(path, &sib, &nsib);
    if (rc < 0)
        snprintf(err, errlen, "out of memory");
    for (size_t i = 0; rc == 0 && i < nsib; i++) {
        /* Peek at the header: a file of another run is not ours. */
        char e[600];
        if (trk_reader_open(sib[i].path, &r, e, sizeof(e)) < 0) {
            if (warn) {
                char msg[700];
                snprintf(msg, sizeof(msg), "skipping %s", e);
                warn(warn_ctx, msg);
            }
            continue;
        }
        bool ours = trk_reader_info(r)->session == session;
        trk_reader_close(r);
        if (ours && push_path(paths, n, sib[i].path) < 0) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        }
    }
    trk_capture_siblings_free(sib, nsib);
    return rc;
}

void trk_capture_set_paths_free(char **paths, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

int trk_report_set_load(struct trk_report_set *s, const char *path, const struct trk_report_opts *o,
                        char *err, size_t errlen)
{
    memset(s, 0, sizeof(*s));
    char **paths;
    size_t n;
    int rc = trk_capture_set_paths(path, o->all, o->warn, o->warn_ctx, &paths, &n, err, errlen);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        struct trk_report_capture *c = add(s);
        if (!c) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        } else if (load_one(c, paths[i], o, err, errlen) < 0) {
            rc = -1;
        }
    }
    trk_capture_set_paths_free(paths, n);
    return rc;
}

void trk_capture_siblings_free(struct trk_capture_sibling *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].path);
    free(v);
}

void trk_report_set_free(struct trk_report_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        struct trk_report_capture *c = &s->v[i];
        /* The symbolizer reads the reader's modules: it goes first. */
        if (c->sym)
            trk_symbolizer_free(c->sym);
        if (c->have_prof)
            trk_profile_free(&c->prof);
        trk_reader_close(c->r);
        free(c->path);
    }
    free(s->v);
    memset(s, 0, sizeof(*s));
}

uint32_t trk_report_spaces(const struct trk_report_opts *o)
{
    if (o->gpu)
        return o->device < 0 ? TRK_SPACES_GPU : trk_spaces_device(o->device);
    return (1u << TRK_SPACE_HEAP) | (o->mmap ? 1u << TRK_SPACE_MMAP : 0);
}

/* By file name: PyTorch's CUDA build maps one of these whenever it has
 * initialised CUDA (libc10_cuda.so holds the caching allocator). */
static bool is_torch_cuda(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    return strncmp(base, "libc10_cuda.so", 14) == 0 || strncmp(base, "libtorch_cuda.so", 16) == 0;
}

bool trk_report_set_uses_torch_cuda(const struct trk_report_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        /* Run with --cuda-no-caching: its GPU events are tensors already. */
        if (trk_reader_info(s->v[i].r)->options & TRK_OPT_CUDA_NO_CACHING)
            continue;
        const struct trk_module *m;
        size_t n = trk_reader_modules(s->v[i].r, &m);
        for (size_t k = 0; k < n; k++)
            if (is_torch_cuda(m[k].path))
                return true;
    }
    return false;
}
