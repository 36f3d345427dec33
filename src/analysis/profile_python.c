/* SPDX-License-Identifier: MIT
 *
 * profile_python.c - what the profile pass (profile.h) makes of the Python
 * records: the interpreter's version and flags, the script-end mark (from
 * which on leaks are frozen: what was live when the script's code finished
 * leaked, whatever the interpreter's teardown frees later), and, with
 * split_by_import, the import chain open on each thread, folded into the
 * site key through "key threads". Must not: change the accounting of host
 * or GPU memory (profile.c and profile_gpu.c own it), or grow with the
 * number of events: chains are interned by (parent, module), key threads by
 * (thread, chain).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/profile_internal.h"
#include "common/grow.h"

#define INDEX_MAX (UINT32_MAX - 1)

static inline uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= UINT64_C(0xff51afd7ed558ccd);
    k ^= k >> 33;
    return k;
}

static uint64_t hash_chain(uint32_t parent, const char *module)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ parent;
    for (const char *p = module; p && *p; p++) /* entry 0 has none */
        h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
    return mix(h);
}

/* Rebuilds an index of entry + 1 values with twice the slots. */
static int rehash(uint32_t **index, size_t *mask, size_t n, uint64_t (*hash)(void *, uint32_t),
                  void *ctx)
{
    size_t nslots = *index ? (*mask + 1) * 2 : 64;
    while (nslots < 2 * (n + 1))
        nslots *= 2;
    uint32_t *t = calloc(nslots, sizeof(*t));
    if (!t)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        size_t h = (size_t)hash(ctx, i) & (nslots - 1);
        while (t[h])
            h = (h + 1) & (nslots - 1);
        t[h] = i + 1;
    }
    free(*index);
    *index = t;
    *mask = nslots - 1;
    return 0;
}

/* ---- Import chains ------------------------------------------------------------ */

static uint64_t chain_hash_of(void *ctx, uint32_t i)
{
    const struct trk_prof_py *py = ctx;
    return hash_chain(py->chains[i].parent, py->chains[i].module);
}

/* The chain `module` inside chain `parent`, made when new; 0 (no chain)
 * when memory ran out, so that allocations still count, unsplit. */
static uint32_t chain_get(struct trk_prof_ctx *c, uint32_t parent, const char *module)
{
    struct trk_prof_py *py = &c->py;
    if (py->nchains == 0) { /* entry 0: no import */
        if (trk_grow((void **)&py->chains, &py->chains_cap, 1, sizeof(*py->chains)) < 0)
            goto oom;
        py->chains[0] = (struct trk_import_ctx){0};
        py->nchains = 1;
    }
    if ((py->nchains + 1) * 2 > (py->chain_index ? py->chain_mask + 1 : 0) &&
        rehash(&py->chain_index, &py->chain_mask, py->nchains, chain_hash_of, py) < 0)
        goto oom;
    size_t h = (size_t)hash_chain(parent, module) & py->chain_mask;
    for (; py->chain_index[h]; h = (h + 1) & py->chain_mask) {
        const struct trk_import_ctx *x = &py->chains[py->chain_index[h] - 1];
        if (x->parent == parent && x->module && strcmp(x->module, module) == 0)
            return py->chain_index[h] - 1;
    }
    char *copy = strdup(module);
    if (!copy || py->nchains >= INDEX_MAX ||
        trk_grow((void **)&py->chains, &py->chains_cap, py->nchains + 1, sizeof(*py->chains)) < 0) {
        free(copy);
        goto oom;
    }
    uint32_t i = (uint32_t)py->nchains++;
    py->chains[i] = (struct trk_import_ctx){.parent = parent, .module = copy};
    py->chain_index[h] = i + 1;
    return i;
oom:
    c->oom = true;
    return 0;
}

/* ---- Key threads ------------------------------------------------------------------ */

static uint64_t key_hash(uint32_t thread, uint32_t import)
{
    return mix((uint64_t)thread << 32 | import);
}

static uint64_t key_hash_of(void *ctx, uint32_t i)
{
    const struct trk_prof_py *py = ctx;
    return key_hash(py->keys[i].thread, py->keys[i].import);
}

uint32_t trk_prof_key_thread(struct trk_prof_ctx *c, uint32_t ti)
{
    if (ti >= c->nthreads)
        return TRK_PROF_NONE;
    struct trk_prof_thread *t = &c->threads[ti];
    if (t->keyth)
        return t->keyth - 1;
    struct trk_prof_py *py = &c->py;
    if ((py->nkeys + 1) * 2 > (py->key_index ? py->key_mask + 1 : 0) &&
        rehash(&py->key_index, &py->key_mask, py->nkeys, key_hash_of, py) < 0)
        goto oom;
    size_t h = (size_t)key_hash(ti, t->import) & py->key_mask;
    for (; py->key_index[h]; h = (h + 1) & py->key_mask) {
        const struct trk_prof_key_thread *k = &py->keys[py->key_index[h] - 1];
        if (k->thread == ti && k->import == t->import) {
            t->keyth = py->key_index[h];
            return t->keyth - 1;
        }
    }
    if (py->nkeys >= INDEX_MAX ||
        trk_grow((void **)&py->keys, &py->keys_cap, py->nkeys + 1, sizeof(*py->keys)) < 0)
        goto oom;
    py->keys[py->nkeys] = (struct trk_prof_key_thread){.thread = ti, .import = t->import};
    py->key_index[h] = (uint32_t)++py->nkeys;
    t->keyth = (uint32_t)py->nkeys;
    return t->keyth - 1;
oom:
    c->oom = true;
    return TRK_PROF_NONE;
}

void trk_prof_key_resolve(const struct trk_prof_ctx *c, uint32_t key, uint32_t *thread,
                          uint32_t *import)
{
    if (c->split && key < c->py.nkeys) {
        *thread = c->py.keys[key].thread;
        *import = c->py.keys[key].import;
    } else {
        *thread = key;
        *import = 0;
    }
}

/* ---- Events -------------------------------------------------------------------------- */

/* Imports nest per thread; the chain of a thread moves down on IMPORT and
 * back up on IMPORT_END (an END with nothing open changes nothing). */
static void on_import(struct trk_prof_ctx *c, const struct trk_event *e, bool end)
{
    uint32_t ti = trk_prof_thread_of(c, e->tid);
    if (ti == TRK_PROF_NONE)
        return;
    struct trk_prof_thread *t = &c->threads[ti];
    uint32_t next;
    if (end)
        next = t->import < c->py.nchains ? c->py.chains[t->import].parent : 0;
    else
        next = chain_get(c, t->import, e->u.py_import.name ? e->u.py_import.name : "?");
    if (next != t->import) {
        t->import = next;
        t->keyth = 0; /* recomputed at the next allocation */
    }
}

/* The script's code finished: every site's live figures become its leaks,
 * and the totals' leak figures are taken now. Only the first mark counts. */
static void on_mark(struct trk_prof_ctx *c, const struct trk_event *e)
{
    struct trk_prof_py *py = &c->py;
    if (e->u.py_mark.what != TRK_PY_MARK_SCRIPT_END || py->marked)
        return;
    py->marked = true;
    for (size_t i = 0; i < c->nsites; i++) {
        c->sites[i].mark_count = c->sites[i].live_count;
        c->sites[i].mark_bytes = c->sites[i].live_bytes;
    }
    py->live_bytes = c->live_bytes;
    py->live_blocks = trk_prof_sub_sat(trk_live_map_count(&c->live), c->hidden_blocks);
    py->anon_bytes = c->anon_bytes;
    py->drv_live = c->drv_live;
    py->drv_mapped = c->drv_mapped;
    trk_prof_gpu_mark(c);
    c->st->leaks_at_script_end = true;
    c->st->script_end_ns = trk_prof_rel(c, e->ts);
}

void trk_prof_py_event(struct trk_prof_ctx *c, const struct trk_event *e)
{
    switch (e->type) {
    case TRK_EV_PY_INFO:
        c->st->python = true;
        c->st->python_version = e->u.py_info.version;
        c->st->python_flags = e->u.py_info.flags;
        break;
    case TRK_EV_PY_IMPORT:
        c->st->python_imports++;
        if (c->split)
            on_import(c, e, false);
        break;
    case TRK_EV_PY_IMPORT_END:
        if (c->split)
            on_import(c, e, true);
        break;
    case TRK_EV_PY_MARK:
        on_mark(c, e);
        break;
    default:
        break;
    }
}

/* ---- End of the pass ------------------------------------------------------------------- */

int trk_prof_py_export(struct trk_prof_ctx *c)
{
    struct trk_prof_py *py = &c->py;
    if (!c->split)
        return 0;
    if (py->nchains == 0) {
        /* No import at all: still entry 0, so that every site's 0 is valid. */
        py->chains = calloc(1, sizeof(*py->chains));
        if (!py->chains)
            return -1;
        py->nchains = 1;
    }
    c->p->imports = py->chains;
    c->p->nimports = py->nchains;
    py->chains = NULL;
    py->nchains = py->chains_cap = 0;
    return 0;
}

void trk_prof_py_free(struct trk_prof_ctx *c)
{
    struct trk_prof_py *py = &c->py;
    for (size_t i = 0; i < py->nchains; i++)
        free(py->chains[i].module);
    free(py->chains);
    free(py->chain_index);
    free(py->keys);
    free(py->key_index);
    memset(py, 0, sizeof(*py));
}

/* pymalloc maps its arenas one at a time, each of one size (CPython's
 * Objects/obmalloc.c ARENA_SIZE); the version is known once PY_INFO came,
 * which the tracker writes before the interpreter's first arena. */
static uint64_t arena_size(const struct trk_stats *st)
{
    return st->python_version && st->python_version < 0x030a0000 ? 256u << 10 : 1u << 20;
}

void trk_prof_py_arenas(struct trk_prof_ctx *c, uint64_t len, int sign)
{
    if (!c->st->python || len != arena_size(c->st))
        return;
    if (sign > 0) {
        c->arena_bytes += len;
        if (c->arena_bytes > c->st->py_arena_peak_bytes)
            c->st->py_arena_peak_bytes = c->arena_bytes;
    } else if (c->arena_bytes >= len) {
        c->arena_bytes -= len;
    }
}
