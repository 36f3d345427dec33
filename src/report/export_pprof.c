/* SPDX-License-Identifier: MIT
 *
 * export_pprof.c - pprof's profile.proto (github.com/google/pprof,
 * proto/profile.proto), gzipped, as `go tool pprof` and pprof-based UIs
 * load it: one sample per allocation site with [objects, bytes] of the
 * selection (named like Go's heap profiles: inuse_* for peak and leaks,
 * alloc_* for everything allocated, temp_* for temporary allocations), one
 * Location per captured address with its inlined frames as Lines (innermost
 * first), one Mapping per loaded module, and Functions by (name, file).
 *
 * Samples are streamed through gzip as they are made; locations, functions,
 * mappings and strings stay in memory (bounded by distinct addresses and
 * symbols, not by the capture's length) and follow them: the top-level
 * message carries no length, so field order is free. Must not: compute
 * values (profile.h does) or symbolize on its own (symbolize.h does).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "report/export.h"
#include "report/pb.h"

/* profile.proto field numbers. */
enum {
    PROFILE_SAMPLE_TYPE = 1,
    PROFILE_SAMPLE = 2,
    PROFILE_MAPPING = 3,
    PROFILE_LOCATION = 4,
    PROFILE_FUNCTION = 5,
    PROFILE_STRING_TABLE = 6,
    PROFILE_TIME_NANOS = 9,
    PROFILE_DURATION_NANOS = 10,
    PROFILE_PERIOD_TYPE = 11,
    PROFILE_PERIOD = 12,
    PROFILE_COMMENT = 13,
    PROFILE_DEFAULT_SAMPLE_TYPE = 14,
    VALUETYPE_TYPE = 1,
    VALUETYPE_UNIT = 2,
    SAMPLE_LOCATION_ID = 1,
    SAMPLE_VALUE = 2,
    SAMPLE_LABEL = 3,
    LABEL_KEY = 1,
    LABEL_STR = 2,
    LABEL_NUM = 3,
    MAPPING_ID = 1,
    MAPPING_START = 2,
    MAPPING_LIMIT = 3,
    MAPPING_OFFSET = 4,
    MAPPING_FILENAME = 5,
    MAPPING_BUILD_ID = 6,
    MAPPING_HAS_FUNCTIONS = 7,
    MAPPING_HAS_FILENAMES = 8,
    MAPPING_HAS_LINE_NUMBERS = 9,
    MAPPING_HAS_INLINE_FRAMES = 10,
    LOCATION_ID = 1,
    LOCATION_MAPPING_ID = 2,
    LOCATION_ADDRESS = 3,
    LOCATION_LINE = 4,
    LINE_FUNCTION_ID = 1,
    LINE_LINE = 2,
    FUNCTION_ID = 1,
    FUNCTION_NAME = 2,
    FUNCTION_SYSTEM_NAME = 3,
    FUNCTION_FILENAME = 4,
};

/* ---- byte-string keyed hash map ------------------------------------------ */

struct entry {
    char *key; /* owned, NUL-terminated; NULL = empty slot */
    size_t klen;
    uint64_t val;
};

struct map {
    struct entry *e;
    size_t cap, n; /* cap is a power of two */
};

static uint64_t hash(const void *k, size_t n)
{
    const unsigned char *p = k;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static struct entry *slot(const struct map *m, const void *k, size_t n)
{
    size_t i = hash(k, n) & (m->cap - 1);
    while (m->e[i].key && (m->e[i].klen != n || memcmp(m->e[i].key, k, n) != 0))
        i = (i + 1) & (m->cap - 1);
    return &m->e[i];
}

/* Finds key k; on a miss inserts it with value `fresh` and sets *added.
 * Returns NULL only when memory runs out. */
static struct entry *map_get(struct map *m, const void *k, size_t n, uint64_t fresh, bool *added)
{
    *added = false;
    if ((m->n + 1) * 2 > m->cap) {
        struct map g = {.cap = m->cap ? m->cap * 2 : 1024};
        g.e = calloc(g.cap, sizeof(*g.e));
        if (!g.e)
            return NULL;
        for (size_t i = 0; i < m->cap; i++)
            if (m->e[i].key)
                *slot(&g, m->e[i].key, m->e[i].klen) = m->e[i];
        g.n = m->n;
        free(m->e);
        *m = g;
    }
    struct entry *e = slot(m, k, n);
    if (e->key)
        return e;
    /* NUL-terminated so that string keys double as C strings. */
    e->key = malloc(n + 1);
    if (!e->key)
        return NULL;
    memcpy(e->key, k, n);
    e->key[n] = '\0';
    e->klen = n;
    e->val = fresh;
    m->n++;
    *added = true;
    return e;
}

static void map_free(struct map *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->e[i].key);
    free(m->e);
    memset(m, 0, sizeof(*m));
}

/* ---- profile tables ------------------------------------------------------- */

struct line {
    uint64_t function_id;
    int64_t line;
};

struct location {
    uint64_t mapping_id, address;
    size_t first_line, nlines; /* into pp.lines */
};

struct function {
    int64_t name, filename;
};

struct mapping {
    uint64_t start, limit;
    int64_t filename, build_id;
    bool main_exe;
};

struct pp {
    bool oom;
    struct map strings, functions, locations, mappings;
    char **strtab;
    size_t nstr, capstr;
    struct function *funcs;
    size_t nfuncs, capfuncs;
    struct location *locs;
    size_t nlocs, caplocs;
    struct line *lines;
    size_t nlines, caplines;
    struct mapping *maps;
    size_t nmaps, capmaps;
};

/* Grows *v (of *cap elements of size sz) to hold n + 1; a failure sticks
 * in pp->oom, so a run of additions checks once. */
static bool grow(struct pp *pp, void **v, size_t *cap, size_t n, size_t sz)
{
    if (pp->oom)
        return false;
    if (trk_grow(v, cap, n + 1, sz) < 0)
        pp->oom = true;
    return !pp->oom;
}

#define GROW(pp, arr, n, cap) grow(pp, (void **)&(arr), &(cap), n, sizeof(*(arr)))

/* Index of s in the string table (index 0 is always ""). */
static int64_t str_id(struct pp *pp, const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s);
    bool added;
    struct entry *e = map_get(&pp->strings, s, n, pp->nstr, &added);
    if (!e || !GROW(pp, pp->strtab, pp->nstr, pp->capstr)) {
        pp->oom = true;
        return 0;
    }
    if (added) {
        pp->strtab[pp->nstr] = e->key; /* the map owns the bytes */
        pp->nstr++;
    }
    return (int64_t)e->val;
}

static uint64_t function_id(struct pp *pp, const char *name, const char *file)
{
    struct function fn = {str_id(pp, name), str_id(pp, file)};
    bool added;
    struct entry *e = map_get(&pp->functions, &fn, sizeof(fn), pp->nfuncs + 1, &added);
    if (!e || !GROW(pp, pp->funcs, pp->nfuncs, pp->capfuncs)) {
        pp->oom = true;
        return 0;
    }
    if (added)
        pp->funcs[pp->nfuncs++] = fn;
    return e->val;
}

/* The reader's module loaded at base (any generation), or NULL. */
/* The traced executable's module: the writer names it by its resolved path,
 * the header's exe (src/capture/modules.c); older captures left it unnamed.
 * (Checking the empty name alone missed every current capture: a C++ run
 * whose first stack ends in libstdc++ got "File: libstdc++.so.6".) */
static bool is_main_module(const struct trk_module *m, const struct trk_reader *r)
{
    const char *exe = trk_reader_info(r)->exe;
    return m->path[0] == '\0' || (exe[0] == '/' && strcmp(m->path, exe) == 0);
}

static const struct trk_module *module_at(const struct trk_reader *r, uint64_t base)
{
    const struct trk_module *mods;
    size_t n = trk_reader_modules(r, &mods);
    for (size_t i = n; i-- > 0;)
        if (mods[i].base == base)
            return &mods[i];
    return NULL;
}

/* Mapping of the module that holds frame fr of capture ci; 0 when the
 * address belongs to no known module. */
static uint64_t mapping_id(struct pp *pp, size_t ci, const struct trk_reader *r,
                           const struct trk_frame *fr)
{
    if (!fr->module)
        return 0;
    uint64_t base = fr->ip - fr->offset;
    struct {
        uint64_t ci, base;
        int64_t file;
    } key = {ci, base, str_id(pp, fr->module)};
    bool added;
    struct entry *e = map_get(&pp->mappings, &key, sizeof(key), pp->nmaps + 1, &added);
    if (!e || !GROW(pp, pp->maps, pp->nmaps, pp->capmaps)) {
        pp->oom = true;
        return 0;
    }
    struct mapping *m = &pp->maps[e->val - 1];
    if (added) {
        *m = (struct mapping){.start = base, .limit = fr->ip + 1, .filename = key.file};
        const struct trk_module *mod = module_at(r, base);
        if (mod) {
            char hex[2 * sizeof(mod->buildid) + 1];
            uint32_t n = mod->buildid_len < sizeof(mod->buildid) ? mod->buildid_len
                                                                 : (uint32_t)sizeof(mod->buildid);
            for (uint32_t i = 0; i < n; i++)
                snprintf(hex + 2 * i, 3, "%02x", mod->buildid[i]);
            hex[2 * n] = '\0';
            m->build_id = str_id(pp, hex);
            m->main_exe = is_main_module(mod, r);
            /* The extent of the module's segments; file_offset stays 0 as
             * the locations carry their symbols already. */
            uint64_t lo = UINT64_MAX, hi = 0;
            for (uint32_t s = 0; s < mod->nseg && s < 16; s++) {
                if (mod->seg[s].vaddr < lo)
                    lo = mod->seg[s].vaddr;
                if (mod->seg[s].vaddr + mod->seg[s].memsz > hi)
                    hi = mod->seg[s].vaddr + mod->seg[s].memsz;
            }
            if (lo < hi) {
                m->start = base + lo;
                m->limit = base + hi;
            }
        }
        pp->nmaps++;
    }
    /* Keep every address inside its mapping even when segments are unknown
     * or the address is past them (a return address after a tail call). */
    if (fr->ip < m->start)
        m->start = fr->ip;
    if (fr->ip >= m->limit)
        m->limit = fr->ip + 1;
    return e->val;
}

/* A frame's function name as pprof shows it. pprof takes a name with '<'
 * or '[' for demangled C++ and strips the brackets (CPython's <module>,
 * <listcomp>, <lambda> became "<unknown>"); as Java's Class.<init>, the
 * file's stem before it keeps it: "train.<module>". */
static const char *pprof_name(const struct trk_frame *f, char *buf, size_t len)
{
    const char *n = trk_frame_name(f, buf, len);
    if (!f->python || !f->file || !strpbrk(n, "<>[]"))
        return n;
    const char *b = strrchr(f->file, '/');
    b = b ? b + 1 : f->file;
    size_t stem = strcspn(b, ".");
    char tmp[512];
    snprintf(tmp, sizeof(tmp), "%.*s.%s", (int)stem, b, n);
    snprintf(buf, len, "%s", tmp);
    return buf;
}

/* Location of frames fr[0..n) (one address, innermost inlined frame first)
 * of capture ci. */
static uint64_t location_id(struct pp *pp, size_t ci, const struct trk_reader *r,
                            const struct trk_frame *fr, size_t n)
{
    /* Keyed by address and its line list: the same address can be cut
     * differently where allocator frames were dropped from a stack's end. */
    size_t klen = 2 * sizeof(uint64_t) + n * sizeof(struct line);
    uint64_t stackkey[2 + 2 * 16];
    uint64_t *key = klen <= sizeof(stackkey) ? stackkey : malloc(klen);
    if (!key) {
        pp->oom = true;
        return 0;
    }
    key[0] = ci;
    key[1] = fr[0].ip;
    struct line *ln = (struct line *)(key + 2);
    char name[512];
    for (size_t i = 0; i < n; i++) {
        ln[i].function_id = function_id(pp, pprof_name(&fr[i], name, sizeof(name)), fr[i].file);
        ln[i].line = fr[i].line;
    }
    bool added;
    struct entry *e = map_get(&pp->locations, key, klen, pp->nlocs + 1, &added);
    if (e && added) {
        if (GROW(pp, pp->locs, pp->nlocs, pp->caplocs)) {
            struct location *lo = &pp->locs[pp->nlocs];
            lo->mapping_id = mapping_id(pp, ci, r, &fr[n - 1]);
            lo->address = fr[0].ip;
            lo->first_line = pp->nlines;
            lo->nlines = n;
            for (size_t i = 0; i < n; i++)
                if (GROW(pp, pp->lines, pp->nlines, pp->caplines))
                    pp->lines[pp->nlines++] = ln[i];
            pp->nlocs++;
        }
    }
    if (key != stackkey)
        free(key);
    if (!e)
        pp->oom = true;
    return e && !pp->oom ? e->val : 0;
}

/* A synthetic location standing for a whole process (--all): the outermost
 * frame of its samples, so that pprof shows processes as roots. */
static uint64_t process_location(struct pp *pp, const char *label)
{
    uint64_t fid = function_id(pp, label, NULL);
    uint64_t key[2] = {UINT64_MAX, fid};
    bool added;
    struct entry *e = map_get(&pp->locations, key, sizeof(key), pp->nlocs + 1, &added);
    if (!e || !GROW(pp, pp->locs, pp->nlocs, pp->caplocs) ||
        !GROW(pp, pp->lines, pp->nlines, pp->caplines)) {
        pp->oom = true;
        return 0;
    }
    if (added) {
        pp->locs[pp->nlocs++] = (struct location){.first_line = pp->nlines, .nlines = 1};
        pp->lines[pp->nlines++] = (struct line){.function_id = fid};
    }
    return e->val;
}

static void pp_free(struct pp *pp)
{
    map_free(&pp->strings);
    map_free(&pp->functions);
    map_free(&pp->locations);
    map_free(&pp->mappings);
    free(pp->strtab);
    free(pp->funcs);
    free(pp->locs);
    free(pp->lines);
    free(pp->maps);
}

/* ---- writing -------------------------------------------------------------- */

static int emit(struct trk_gz *z, uint32_t field, struct trk_pb *msg, struct trk_pb *out)
{
    trk_pb_reset(out);
    trk_pb_message(out, field, msg);
    if (out->oom)
        return -1;
    return trk_gz_write(z, out->p, out->len);
}

static void value_type(struct trk_pb *b, int64_t type, int64_t unit)
{
    trk_pb_reset(b);
    trk_pb_int(b, VALUETYPE_TYPE, type);
    trk_pb_int(b, VALUETYPE_UNIT, unit);
}

static void label(struct trk_pb *b, struct trk_pb *tmp, int64_t key, int64_t str, int64_t num)
{
    trk_pb_reset(tmp);
    trk_pb_int(tmp, LABEL_KEY, key);
    if (str)
        trk_pb_int(tmp, LABEL_STR, str);
    else
        trk_pb_int(tmp, LABEL_NUM, num);
    trk_pb_message(b, SAMPLE_LABEL, tmp);
}

/* Streams the samples of capture ci. Returns 0, or -1 on a memory or
 * compression error. */
static int write_samples(struct pp *pp, struct trk_gz *z, const struct trk_export *x, size_t ci,
                         struct trk_pb *msg, struct trk_pb *tmp, struct trk_pb *out)
{
    const struct trk_export_capture *c = &x->caps[ci];
    const struct trk_profile *p = c->profile;
    uint32_t spaces = x->spaces ? x->spaces : 1u << TRK_SPACE_HEAP;
    char space_name[32];
    struct trk_frame_buf fb = {0};
    uint64_t *ids = NULL;
    size_t capids = 0;
    int rc = 0;
    int64_t k_tid = str_id(pp, "tid"), k_thread = str_id(pp, "thread");
    int64_t k_pid = str_id(pp, "pid"), k_space = str_id(pp, "space");
    int64_t v_mmap = str_id(pp, "anon mmap"), v_heap = str_id(pp, "heap");
    /* pprof names mapping[0] the main binary: the traced executable's
     * mapping is there even when no kept frame is in it (Python-first
     * stacks hold Python frames only), or a library would take its place. */
    const char *exe = trk_reader_info(c->reader)->exe;
    const struct trk_module *mods;
    size_t nmods = trk_reader_modules(c->reader, &mods);
    for (size_t i = 0; exe[0] == '/' && i < nmods; i++)
        if (is_main_module(&mods[i], c->reader)) {
            struct trk_frame main_fr = {.module = exe, .ip = mods[i].base};
            mapping_id(pp, ci, c->reader, &main_fr);
            break;
        }
    for (size_t si = 0; si < p->nsites && rc == 0; si++) {
        const struct trk_site *s = &p->sites[si];
        if (!trk_spaces_has(spaces, s->space))
            continue;
        uint64_t bytes, count;
        trk_site_value(s, x->select, spaces, &bytes, &count);
        if (bytes == 0 && count == 0)
            continue;
        const struct trk_frame *fr;
        int nf = trk_stack_frames(c->reader, c->sym, s->stack, &x->frames, &fb, &fr);
        if (nf < 0)
            nf = 0;
        if ((size_t)nf + 1 > capids) {
            free(ids);
            capids = (size_t)nf + 16;
            ids = malloc(capids * sizeof(*ids));
            if (!ids) {
                rc = -1;
                break;
            }
        }
        size_t nids = 0;
        for (int i = 0; i < nf;) {
            int j = i + 1;
            while (j < nf && fr[j].ip == fr[i].ip && fr[j - 1].inlined)
                j++;
            ids[nids++] = location_id(pp, ci, c->reader, fr + i, (size_t)(j - i));
            i = j;
        }
        if (c->label)
            ids[nids++] = process_location(pp, c->label);
        if (pp->oom) {
            rc = -1;
            break;
        }
        trk_pb_reset(msg);
        trk_pb_packed(msg, SAMPLE_LOCATION_ID, ids, nids);
        uint64_t vals[2] = {count, bytes};
        trk_pb_packed(msg, SAMPLE_VALUE, vals, 2);
        if (s->thread < p->nthreads) {
            const struct trk_thread_info *th = &p->threads[s->thread];
            label(msg, tmp, k_tid, 0, th->tid);
            if (th->name && *th->name)
                label(msg, tmp, k_thread, str_id(pp, th->name), 0);
        }
        if (x->ncaps > 1)
            label(msg, tmp, k_pid, 0, c->pid);
        if (trk_space_is_gpu(s->space))
            label(msg, tmp, k_space,
                  str_id(pp, trk_space_label(s->space, s->kind, space_name, sizeof(space_name))),
                  0);
        else if (spaces != 1u << TRK_SPACE_HEAP)
            label(msg, tmp, k_space, s->space == TRK_SPACE_MMAP ? v_mmap : v_heap, 0);
        if (pp->oom || emit(z, PROFILE_SAMPLE, msg, out) < 0)
            rc = -1;
    }
    free(ids);
    trk_frame_buf_free(&fb);
    return rc;
}

static int write_tables(struct pp *pp, struct trk_gz *z, struct trk_pb *msg, struct trk_pb *tmp,
                        struct trk_pb *out)
{
    /* pprof takes mapping[0] for the main binary. */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < pp->nmaps; i++) {
            const struct mapping *m = &pp->maps[i];
            if (m->main_exe != (pass == 0))
                continue;
            trk_pb_reset(msg);
            trk_pb_uint(msg, MAPPING_ID, i + 1);
            trk_pb_uint(msg, MAPPING_START, m->start);
            trk_pb_uint(msg, MAPPING_LIMIT, m->limit);
            trk_pb_uint(msg, MAPPING_OFFSET, 0);
            trk_pb_int(msg, MAPPING_FILENAME, m->filename);
            trk_pb_int(msg, MAPPING_BUILD_ID, m->build_id);
            /* Symbolized already: pprof must not try again with file
             * offsets it does not have. */
            trk_pb_uint(msg, MAPPING_HAS_FUNCTIONS, 1);
            trk_pb_uint(msg, MAPPING_HAS_FILENAMES, 1);
            trk_pb_uint(msg, MAPPING_HAS_LINE_NUMBERS, 1);
            trk_pb_uint(msg, MAPPING_HAS_INLINE_FRAMES, 1);
            if (emit(z, PROFILE_MAPPING, msg, out) < 0)
                return -1;
        }
    for (size_t i = 0; i < pp->nlocs; i++) {
        const struct location *l = &pp->locs[i];
        trk_pb_reset(msg);
        trk_pb_uint(msg, LOCATION_ID, i + 1);
        if (l->mapping_id)
            trk_pb_uint(msg, LOCATION_MAPPING_ID, l->mapping_id);
        trk_pb_uint(msg, LOCATION_ADDRESS, l->address);
        for (size_t k = 0; k < l->nlines; k++) {
            const struct line *ln = &pp->lines[l->first_line + k];
            trk_pb_reset(tmp);
            trk_pb_uint(tmp, LINE_FUNCTION_ID, ln->function_id);
            trk_pb_int(tmp, LINE_LINE, ln->line);
            trk_pb_message(msg, LOCATION_LINE, tmp);
        }
        if (emit(z, PROFILE_LOCATION, msg, out) < 0)
            return -1;
    }
    for (size_t i = 0; i < pp->nfuncs; i++) {
        trk_pb_reset(msg);
        trk_pb_uint(msg, FUNCTION_ID, i + 1);
        trk_pb_int(msg, FUNCTION_NAME, pp->funcs[i].name);
        trk_pb_int(msg, FUNCTION_SYSTEM_NAME, pp->funcs[i].name);
        trk_pb_int(msg, FUNCTION_FILENAME, pp->funcs[i].filename);
        if (emit(z, PROFILE_FUNCTION, msg, out) < 0)
            return -1;
    }
    for (size_t i = 0; i < pp->nstr; i++) {
        trk_pb_reset(out);
        trk_pb_string(out, PROFILE_STRING_TABLE, pp->strtab[i]);
        if (out->oom || trk_gz_write(z, out->p, out->len) < 0)
            return -1;
    }
    return 0;
}

int trk_export_pprof(FILE *f, const struct trk_export *x, char *err, size_t errlen)
{
    struct pp pp = {0};
    struct trk_pb msg = {0}, tmp = {0}, out = {0};
    int rc = -1;
    struct trk_gz *z = trk_gz_open(f);
    if (!z)
        goto oom;
    str_id(&pp, ""); /* string_table[0] must be "" */
    bool inuse = x->select == TRK_SEL_PEAK || x->select == TRK_SEL_LEAKS;
    const char *objs = inuse                            ? "inuse_objects"
                       : x->select == TRK_SEL_TEMPORARY ? "temp_objects"
                                                        : "alloc_objects";
    const char *space = inuse                            ? "inuse_space"
                        : x->select == TRK_SEL_TEMPORARY ? "temp_space"
                                                         : "alloc_space";
    int64_t s_space = str_id(&pp, space), s_bytes = str_id(&pp, "bytes");
    value_type(&msg, str_id(&pp, objs), str_id(&pp, "count"));
    if (emit(z, PROFILE_SAMPLE_TYPE, &msg, &out) < 0)
        goto fail;
    value_type(&msg, s_space, s_bytes);
    if (emit(z, PROFILE_SAMPLE_TYPE, &msg, &out) < 0)
        goto fail;

    uint64_t start = UINT64_MAX, end = 0;
    for (size_t i = 0; i < x->ncaps; i++) {
        if (write_samples(&pp, z, x, i, &msg, &tmp, &out) < 0)
            goto fail;
        const struct trk_reader_info *in = trk_reader_info(x->caps[i].reader);
        if (in->start_realtime < start)
            start = in->start_realtime;
        if (in->start_realtime + x->caps[i].profile->end_t_ns > end)
            end = in->start_realtime + x->caps[i].profile->end_t_ns;
    }
    if (start == UINT64_MAX)
        start = end = 0;

    trk_pb_reset(&out);
    value_type(&msg, s_space, s_bytes);
    trk_pb_message(&out, PROFILE_PERIOD_TYPE, &msg);
    /* 1: every allocation has its stack; else the sampling rate (values
     * are already scaled estimates, as in Go's heap profiles). */
    uint64_t sampled = trk_export_sample_bytes(x);
    trk_pb_int(&out, PROFILE_PERIOD, sampled ? (int64_t)sampled : 1);
    trk_pb_int(&out, PROFILE_TIME_NANOS, (int64_t)start);
    trk_pb_int(&out, PROFILE_DURATION_NANOS, (int64_t)(end - start));
    trk_pb_int(&out, PROFILE_DEFAULT_SAMPLE_TYPE, s_space);
    char comment[512];
    snprintf(comment, sizeof(comment), "%s: %s of %s", x->exporter ? x->exporter : "tracker",
             trk_select_name(x->select), x->name ? x->name : "");
    trk_pb_int(&out, PROFILE_COMMENT, str_id(&pp, comment));
    if (sampled) {
        snprintf(comment, sizeof(comment),
                 "sampled at %" PRIu64 " bytes: values are estimates scaled from a Poisson "
                 "sample of the allocations",
                 sampled);
        trk_pb_int(&out, PROFILE_COMMENT, str_id(&pp, comment));
    }
    if (pp.oom || out.oom || trk_gz_write(z, out.p, out.len) < 0)
        goto fail;
    if (write_tables(&pp, z, &msg, &tmp, &out) < 0)
        goto fail;
    rc = trk_gz_close(z);
    z = NULL;
    if (rc < 0)
        goto fail;
    goto done;
oom:
    snprintf(err, errlen, "out of memory");
    goto done;
fail:
    rc = -1;
    snprintf(err, errlen,
             pp.oom || msg.oom || out.oom ? "out of memory" : "compression or write failed");
done:
    if (z)
        trk_gz_close(z);
    trk_pb_free(&msg);
    trk_pb_free(&tmp);
    trk_pb_free(&out);
    pp_free(&pp);
    return rc;
}
