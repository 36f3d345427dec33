/* SPDX-License-Identifier: MIT
 *
 * py_stack.c - the per-allocation path of Python support: read the calling
 * thread's Python frames, turn each into a STACK value (code object id +
 * line), and merge them into the native stack where the evaluation loop ran
 * them (docs/FORMAT.md §5).
 *
 * Why read frames instead of keeping a shadow stack as memray does: a
 * profile hook costs every Python call (memray: ~110 ns per call), while an
 * allocation is far rarer than a call. Reading is safe without the GIL
 * because a thread's frame chain is only ever changed by that thread, and we
 * are that thread, stopped inside malloc. Only the frames are read, never a
 * refcount written. Never allocates; never calls into Python except
 * PyCode_Addr2Line, which only reads the code object's line table.
 */
#include <sched.h>
#include <string.h>

#include "capture/intern.h"
#include "capture/own_mem.h"
#include "capture/unwind.h"
#include "python/py_capi.h"

/* ---- Layouts --------------------------------------------------------------- */

/* The frame walk's offsets: copied into locals by the walk (its uint8_t
 * stores may alias anything, so fields read through a pointer would be
 * read again at every level: most of the walk's cost on import torch).
 * 3.11 and 3.12+ have one set each, given here once for trk_py_layout_for
 * and the walk: with them as constants the loop keeps its state in
 * registers (trk_py_walk: import_many, 20 levels an object, 433 -> 388 M
 * instructions; json_roundtrip 309 -> 296 M; comparing the layout with
 * them at every walk instead cost a memcmp call, -fno-builtin). */
struct walk_offs {
    int back, code, at, lt, owner, entry, cstack;
};
static const struct walk_offs W311 = {48, 32, 56, 136, 69, 68, -1};
static const struct walk_offs W312 = {8, 0, 56, 136, 70, -1, 3};

int trk_py_layout_for(int minor, struct trk_py_layout *o)
{
    memset(o, 0, sizeof(*o));
    o->minor = minor;
    o->f_owner = o->f_is_entry = o->owner_cstack = o->co_qualname = -1;
    o->co_filename = minor >= 11 ? 112 : 104;
    o->co_name = minor >= 11 ? 120 : 112;
    switch (minor) {
    case 8:
    case 9:
    case 10:
        o->style = TRK_PYS_FRAMEOBJ;
        o->ts_frame = 24;
        o->f_back = 24;
        o->f_code = 32;
        o->f_lasti = minor == 10 ? 96 : 104;
        o->lasti_units = minor == 10;
        o->co_firstlineno = 40;
        o->co_linetable = 120; /* co_lnotab before 3.10 */
        o->uni_ascii = 48;
        o->uni_compact = 72;
        return 1;
    case 11:
        o->style = TRK_PYS_311;
        o->ts_frame = 56;
        o->cf_current = 8;
        o->f_code = W311.code;
        o->f_back = W311.back;
        o->f_lasti = W311.at;
        o->f_is_entry = W311.entry;
        o->f_owner = W311.owner;
        o->co_firstlineno = 72;
        o->co_qualname = 128;
        o->co_linetable = W311.lt;
        o->co_code = 184;
        o->uni_ascii = 48;
        o->uni_compact = 72;
        return 1;
    case 12:
    case 13:
        o->style = minor == 12 ? TRK_PYS_312 : TRK_PYS_313;
        o->ts_frame = minor == 12 ? 56 : 72;
        o->cf_current = 0;
        o->f_code = W312.code;
        o->f_back = W312.back;
        o->f_lasti = W312.at;
        o->f_owner = W312.owner;
        o->owner_cstack = W312.cstack;
        o->co_firstlineno = 68;
        o->co_qualname = 128;
        o->co_linetable = W312.lt;
        o->co_code = minor == 12 ? 192 : 200;
        o->uni_ascii = 40;
        o->uni_compact = 56;
        return 1;
    default:
        return 0;
    }
}

#define LOAD_PTR(base, off) (*(const void *const *)((const char *)(base) + (off)))
#define LOAD_I32(base, off) (*(const int32_t *)((const char *)(base) + (off)))
#define LOAD_U8(base, off)  (*(const uint8_t *)((const char *)(base) + (off)))
#define OB_TYPE(o)          LOAD_PTR(o, 8)

/* ---- Strings ----------------------------------------------------------------- */

static size_t put_utf8(char *out, size_t n, size_t cap, uint32_t c)
{
    char b[4];
    size_t k;
    if (c < 0x80) {
        b[0] = (char)c;
        k = 1;
    } else if (c < 0x800) {
        b[0] = (char)(0xC0 | (c >> 6));
        b[1] = (char)(0x80 | (c & 0x3F));
        k = 2;
    } else if (c < 0x10000) {
        b[0] = (char)(0xE0 | (c >> 12));
        b[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        b[2] = (char)(0x80 | (c & 0x3F));
        k = 3;
    } else {
        b[0] = (char)(0xF0 | (c >> 18));
        b[1] = (char)(0x80 | ((c >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((c >> 6) & 0x3F));
        b[3] = (char)(0x80 | (c & 0x3F));
        k = 4;
    }
    if (n + k > cap)
        return n;
    memcpy(out + n, b, k);
    return n + k;
}

/* PyASCIIObject: refcnt, type, length (16), hash, state (32). The state bits
 * are interned:2 kind:3 compact:1 ascii:1 on every supported version. */
size_t trk_py_str(const PyObject *s, char *out, size_t cap)
{
    if (!s)
        return 0;
    int64_t len = *(const int64_t *)((const char *)s + 16);
    uint32_t state = *(const uint32_t *)((const char *)s + 32);
    unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
    if (!compact || len < 0)
        return 0;
    if (ascii) {
        size_t n = (size_t)len < cap ? (size_t)len : cap;
        memcpy(out, (const char *)s + trk_pylay.uni_ascii, n);
        return n;
    }
    const uint8_t *d = (const uint8_t *)s + trk_pylay.uni_compact;
    size_t n = 0;
    for (int64_t i = 0; i < len && n < cap; i++) {
        uint32_t c = kind == 1   ? d[i]
                     : kind == 2 ? ((const uint16_t *)d)[i]
                     : kind == 4 ? ((const uint32_t *)d)[i]
                                 : '?';
        n = put_utf8(out, n, cap, c);
    }
    return n;
}

/* ---- Code objects -> ids -------------------------------------------------------
 *
 * The intern table of capture/intern.c, like the stack trie: a code object gets an id the first
 * time one of its frames encloses an allocation, and its PY_CODE record is committed before the id
 * becomes visible (the trie's rule). The key is the object's address plus its line table's and
 * name's: a code object freed and another allocated at the same address is then a different key, so
 * a stale entry can never lend its name to a new function. Tables are never unmapped (readers may
 * still probe an old one) and are bounded like the trie's (intern.h).
 */
#define CODE_WORDS 3
static struct trk_intern codes;
static _Atomic uint32_t py_epoch = 1;

/* pre: the table's lock held (emit runs under it), which also guards the
 * static buffers (a hook's stack is the program's, so 4 KiB of it is better
 * not taken). */
struct code_ctx {
    struct trk_thread *t;
    const PyObject *code;
};

static int emit_code(void *ctx, uint32_t id)
{
    static char name[TRK_PY_STR_MAX], file[TRK_PY_STR_MAX];
    static uint8_t rec[TRK_REC_PY_MAX];
    struct code_ctx *c = ctx;
    const PyObject *code = c->code;
    const PyObject *qn = trk_pylay.co_qualname >= 0 ? LOAD_PTR(code, trk_pylay.co_qualname)
                                                    : LOAD_PTR(code, trk_pylay.co_name);
    size_t nl = trk_py_str(qn, name, sizeof(name));
    size_t fl = trk_py_str(LOAD_PTR(code, trk_pylay.co_filename), file, sizeof(file));
    int first = LOAD_I32(code, trk_pylay.co_firstlineno);
    uint8_t *e = trk_enc_py_code(rec, id, first > 0 ? (uint64_t)first : 0, name, nl, file, fl);
    if (trk_ring_put(c->t, rec, (size_t)(e - rec)))
        return -1;
    trk_commit(c->t);
    return 0;
}

static uint32_t code_id(struct trk_thread *t, const PyObject *code)
{
    const uint64_t k[CODE_WORDS] = {
        (uint64_t)(uintptr_t)code,
        (uint64_t)(uintptr_t)LOAD_PTR(code, trk_pylay.co_linetable),
        (uint64_t)(uintptr_t)LOAD_PTR(code, trk_pylay.co_name),
    };
    struct code_ctx c = {t, code};
    return trk_intern_get(&codes, CODE_WORDS, 0, k, emit_code, &c);
}

void trk_py_codes_reset(void)
{
    trk_intern_reset(&codes, CODE_WORDS, 1u << 12);
    atomic_fetch_add(&py_epoch, 1);
}

/* ---- Frames --------------------------------------------------------------------- */

const void *trk_py_top_frame(const void *ts)
{
    if (!ts)
        return NULL;
    const void *f = LOAD_PTR(ts, trk_pylay.ts_frame);
    if (f && (trk_pylay.style == TRK_PYS_311 || trk_pylay.style == TRK_PYS_312))
        f = LOAD_PTR(f, trk_pylay.cf_current);
    return f;
}

/* The STACK value of one frame: its code's id and the line it is at, cached
 * per thread by (code, instruction offset) because finding a line means
 * stepping through the code's line table. Out of line: the walk's loop
 * stays small, and a level that matches the previous walk never comes here. */
__attribute__((noinline)) static uint64_t frame_value(struct trk_thread *t, struct trk_py_thread *b,
                                                      const PyObject *code, int64_t lasti)
{
    const void *lt = LOAD_PTR(code, trk_pylay.co_linetable);
    uint64_t h = ((uint64_t)(uintptr_t)code >> 4) ^ ((uint64_t)lasti * 0x9E3779B1u);
    struct trk_py_cache_ent *c = &b->cache[(h ^ (h >> 11)) & (TRK_PY_CACHE - 1)];
    if (c->code == code && c->lasti == lasti && c->linetable == lt)
        return c->value;
    uint32_t id = code_id(t, code);
    if (!id)
        return 0;
    int line =
        lasti < 0 ? LOAD_I32(code, trk_pylay.co_firstlineno) : trk_py_line(b, code, (int)lasti);
    if (line < 0)
        line = 0;
    if (line > (int)TRK_PYFRAME_LINE_MAX)
        line = TRK_PYFRAME_LINE_MAX;
    uint64_t v = TRK_PYFRAME_BIT | ((uint64_t)id << TRK_PYFRAME_LINE_BITS) | (uint64_t)line;
    c->code = code;
    c->linetable = lt;
    c->lasti = lasti;
    c->value = v;
    return v;
}

/* The instruction a frame is at, as read (an instruction pointer from 3.11,
 * an offset before): the key of the per-level reuse, converted to an offset
 * only when the level changed. */
static inline int64_t frame_lasti(uintptr_t at, const PyObject *code, const struct trk_py_layout *L)
{
    if (L->style == TRK_PYS_FRAMEOBJ) {
        int64_t lasti = (int32_t)(uint32_t)at;
        return L->lasti_units && lasti >= 0 ? lasti * 2 : lasti;
    }
    return (int64_t)(at - (uintptr_t)((const char *)code + L->co_code));
}

/* One walk for one frame style: `style` is a constant at each call, so the
 * tests that do not apply to it fold away. */
static inline __attribute__((always_inline)) int walk_style(struct trk_thread *t,
                                                            struct trk_py_thread *b, const void *f,
                                                            int max, int style, struct walk_offs o)
{
    const void *code_type = trk_pyapi.Code_Type;
    struct trk_py_level *lv = b->levels, *lv_old = b->levels + b->last_n;
    uint64_t *pyv = b->pyv;
    uint8_t *pyentry = b->pyentry;
    int n = 0, same = 1, skipped = 0, hi = -1;
    /* Bounded: n grows with every frame taken and skipped frames are
     * counted, so a corrupt chain cannot keep us here. */
    while (f && n < max) {
        const void *prev = LOAD_PTR(f, o.back);
        const PyObject *code = LOAD_PTR(f, o.code);
        if ((style >= TRK_PYS_312 && LOAD_U8(f, o.owner) == o.cstack) || !code ||
            OB_TYPE(code) != code_type) {
            /* A C-stack shim (3.12+: marks the entry frame before it), or
             * no code object. */
            if (++skipped > 3 * TRK_DEPTH_MAX)
                break;
            f = prev;
            continue;
        }
        uintptr_t at = style == TRK_PYS_FRAMEOBJ ? (uintptr_t)(uint32_t)LOAD_I32(f, o.at)
                                                 : (uintptr_t)LOAD_PTR(f, o.at);
        const void *lt = LOAD_PTR(code, o.lt);
        if (!(lv < lv_old && lv->frame == f && lv->at == at && lv->code == code &&
              lv->linetable == lt)) {
            uint64_t v = frame_value(t, b, code, frame_lasti(at, code, &trk_pylay));
            if (!v)
                break;
            pyv[n] = v;
            lv->frame = f;
            lv->at = at;
            lv->code = code;
            lv->linetable = lt;
            same = 0;
            hi = n;
        }
        uint8_t entry = 1;
        if (style == TRK_PYS_311)
            entry = LOAD_U8(f, o.entry);
        else if (style >= TRK_PYS_312)
            entry = !prev || LOAD_U8(prev, o.owner) == o.cstack;
        /* A level that changed at index n makes the suffix hashes of
         * levels 0..n stale (py_suffix_hash). Past last_n every level
         * misses above, so pyentry[n] is only compared where it is valid. */
        hi = pyentry[n] != entry ? n : hi;
        pyentry[n] = entry;
        n++;
        lv++;
        f = prev;
    }
    b->last_same = same && b->levels + n == lv_old && n > 0;
    /* Accumulated until py_suffix_hash catches up (a walk it did not
     * follow leaves its own changes stale too). */
    hi = b->levels + n == lv_old ? hi : n - 1;
    b->last_hi = hi > b->last_hi ? hi : b->last_hi;
    b->last_n = n;
    return n;
}

/* Each level's hash of itself and every level outside it (pyv and pyentry,
 * outermost first), kept with the level: consecutive walks share their
 * outer levels (an import is 20 Python frames deep, of which the innermost
 * one or two moved), so only the levels from the outermost one that
 * changed inwards are hashed again, not all of them per object (hybrid_id's
 * memo key). */
#define MEMO_K1 0x9E3779B97F4A7C15ULL
#define MEMO_K2 0xC2B2AE3D27D4EB4FULL

static uint64_t py_suffix_hash(struct trk_py_thread *b, int n)
{
    if (n <= 0)
        return MEMO_K2;
    int top = b->last_hi < n ? b->last_hi : n - 1;
    uint64_t a = top + 1 < n ? b->levels[top + 1].sh : MEMO_K1 ^ (uint64_t)n;
    for (int i = top; i >= 0; i--) {
        a = ((a + b->pyv[i]) * MEMO_K1) ^ b->pyentry[i];
        a = a << 31 | a >> 33;
        b->levels[i].sh = a;
    }
    b->last_hi = -1;
    return a;
}

/* Why the per-level reuse: an allocation-heavy loop allocates again and
 * again from the same frames at the same instructions (a comprehension, a
 * join), so most levels of a walk are exactly the previous walk's. A level
 * is reused only when its frame, code object, line table and instruction
 * are all the ones read last time, the same key the (code, offset) cache
 * trusts; the callers of a running frame are suspended at their call, so
 * a changed caller shows as a changed frame or instruction at its level. */
int trk_py_walk(struct trk_thread *t, struct trk_py_thread *b, int max)
{
    b->last_same = 0;
    const void *ts = trk_pyapi.GILState_GetThisThreadState();
    const void *f = trk_py_top_frame(ts);
    if (!f)
        return 0;
    uint32_t epoch = atomic_load_explicit(&py_epoch, memory_order_relaxed);
    if (TRK_UNLIKELY(b->epoch != epoch)) {
        memset(b->cache, 0, sizeof(b->cache));
        memset(b->memo, 0, sizeof(b->memo));
        b->epoch = epoch;
        b->last_n = 0;
    }
    const struct trk_py_layout *L = &trk_pylay;
    switch (L->style) {
    case TRK_PYS_FRAMEOBJ: {
        struct walk_offs o = {L->f_back,  L->f_code,     L->f_lasti,     L->co_linetable,
                              L->f_owner, L->f_is_entry, L->owner_cstack};
        return walk_style(t, b, f, max, TRK_PYS_FRAMEOBJ, o);
    }
    case TRK_PYS_311:
        return walk_style(t, b, f, max, TRK_PYS_311, W311); /* trk_pylay's, as constants */
    default:
        return walk_style(t, b, f, max, TRK_PYS_312, W312);
    }
}

/* ---- Hybrid stacks ----------------------------------------------------------------- */

/* Native frames innermost first; each frame of the evaluation loop gives way
 * to the Python frames it ran: the innermost Python frame up to and
 * including the next entry frame (3.11+ runs several Python frames in one
 * loop invocation; before that each frame had its own). Python frames left
 * over (the native unwind was cut at its depth, or an eval frame sat in a
 * .cold part we do not know) go at the outer end, in order. */
static int merge(struct trk_thread *t, struct trk_py_thread *b, int nn, int np)
{
    /* ip in (lo, hi]: one unsigned compare. */
    const uintptr_t lo = (uintptr_t)trk_pyapi.eval_lo + 1;
    const uintptr_t span = (uintptr_t)trk_pyapi.eval_hi - (uintptr_t)trk_pyapi.eval_lo;
    const uintptr_t *ip = t->ips, *ip_end = t->ips + nn;
    const uint64_t *pv = b->pyv, *pv_end = b->pyv + np;
    const uint8_t *pe = b->pyentry;
    uintptr_t *out = b->merged;
    /* Each native frame gives itself or at least one Python frame, so
     * the output holds at most nn + np <= 2 * TRK_DEPTH_MAX: it never fills. */
    _Static_assert(sizeof(b->merged) / sizeof(b->merged[0]) >= 2 * TRK_DEPTH_MAX, "merge fits");
    for (; ip < ip_end; ip++) {
        uintptr_t x = *ip;
        if (TRK_UNLIKELY(x - lo < span) && pv < pv_end) {
            uint8_t entry;
            do {
                *out++ = (uintptr_t)*pv++;
                entry = *pe++;
            } while (!entry && pv < pv_end);
            continue;
        }
        *out++ = x;
    }
    while (pv < pv_end)
        *out++ = (uintptr_t)*pv++;
    int k = (int)(out - b->merged);
    return k > TRK_DEPTH_MAX ? TRK_DEPTH_MAX : k;
}

/* The merged stack is a function of the native frames, the Python frames
 * and their entry flags alone (the eval loop's range is fixed), so those
 * are what the memo hashes: one multiply per frame, no merge and no second
 * hash in trk_stack_intern for a stack seen before (the merge and the
 * intern were about a third of a hybrid stack's cost on the Python side;
 * with --python-allocators that is paid once per object). */
static uint64_t memo_hash(const struct trk_thread *t, struct trk_py_thread *b, int nn, int np)
{
    const uintptr_t *ips = t->ips;
    uint64_t a = MEMO_K2 ^ ((uint64_t)nn << 32 | (uint32_t)np), c = MEMO_K1;
    /* Two lanes: half the loop's own instructions on deep native stacks. */
    int i = 0;
    for (; i + 1 < nn; i += 2) {
        a = (a + ips[i]) * MEMO_K1;
        c = (c + ips[i + 1]) * MEMO_K2;
        a = a << 31 | a >> 33;
        c = c << 29 | c >> 35;
    }
    if (i < nn) {
        a = (a + ips[i]) * MEMO_K1;
        a = a << 31 | a >> 33;
    }
    a ^= c * MEMO_K2;
    a = (a + py_suffix_hash(b, np)) * MEMO_K1;
    return trk_mix64(a) | 1; /* never 0: a zeroed entry never matches */
}

/* The hybrid stack's id: from the per-thread memo when the same frames
 * were interned before (trie ids hold while the capture's stack cache
 * epoch has not moved), else merged and interned. The 64-bit hash is
 * trusted as trk_stack_intern's own cache trusts its hash. */
static uint32_t hybrid_id(struct trk_thread *t, struct trk_py_thread *b, int nn, int np)
{
    uint64_t h = memo_hash(t, b, nn, np);
    struct trk_py_memo_ent *m = &b->memo[(h ^ (h >> 23)) & (TRK_PY_MEMO - 1)];
    if (m->hash == h && m->cache_epoch == t->cache_epoch)
        return m->id;
    uint32_t id = trk_stack_intern(t, b->merged, merge(t, b, nn, np));
    if (id) {
        m->hash = h;
        m->cache_epoch = t->cache_epoch;
        m->id = id;
    }
    return id;
}

/* The calling thread's block: behind Python's own TLS pointer, and
 * otherwise the one its capture state already holds (a recycled state's:
 * its old thread is gone), else a fresh mapping (~105 KiB). NULL when none
 * can be had: the caller takes a plain native stack. */
static __thread struct trk_py_thread *py_tl TRK_TLS;

static struct trk_py_thread *py_block(struct trk_thread *t)
{
    struct trk_py_thread *b = py_tl;
    if (TRK_LIKELY(b != NULL))
        return b;
    b = t->provider_block;
    if (!b) {
        b = trk_own_map(TRK_OWN_PYTHON, sizeof(*b));
        if (!b)
            return NULL;
        trk_own_add(TRK_OWN_PYTHON, 0, 1);
        t->provider_block = b;
    }
    py_tl = b;
    return b;
}

int trk_py_stack(struct trk_thread *t, uint32_t *id)
{
    struct trk_py_thread *b = py_block(t);
    if (TRK_UNLIKELY(!b))
        return 0;
    int np = trk_py_walk(t, b, TRK_DEPTH_MAX);
    if (np == 0)
        return 0;
    if (trk_py_cfg.mode == TRK_PY_ONLY) {
        /* Same frames at the same instructions as last time: same stack
         * (while the stack cache's epoch says its ids still hold). */
        if (b->last_same && b->last_id && b->last_cache_epoch == t->cache_epoch) {
            *id = b->last_id;
            return 1;
        }
        *id = trk_stack_intern(t, (const uintptr_t *)b->pyv, np);
        b->last_id = *id;
        b->last_cache_epoch = t->cache_epoch;
        return 1;
    }
    int nn;
    if (trk_py_obj_event) {
        /* A block from Python's allocators (--python-allocators): the
         * native frames down to the innermost evaluation loop only, the
         * Python frames for all below. What a full walk would add there
         * (the interpreter's frames between and under Python frames:
         * Py_RunMain, main, a C function calling back into Python) cost a
         * step each and their share of the hash and intern, per object
         * (py_alloc_churn: the stack 963 -> 738 Ir an object, with the
         * unwinder's cache of stopped walks; bench/results_pyalloc.md).
         * Reports show Python frames there anyway; README ("Python") says
         * what --native shows. A C extension's frames above it stay. */
        trk_unwind_stop.lo = (uintptr_t)trk_pyapi.eval_lo + 1;
        trk_unwind_stop.span = (uintptr_t)trk_pyapi.eval_hi - (uintptr_t)trk_pyapi.eval_lo;
        nn = trk_stack_unwind(t, trk_cfg.depth);
        trk_unwind_stop.span = 0;
    } else {
        nn = trk_stack_unwind(t, trk_cfg.depth);
    }
    *id = hybrid_id(t, b, nn, np);
    return 1;
}
