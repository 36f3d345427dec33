/* SPDX-License-Identifier: MIT
 *
 * leaks.c - `tracker leaks`: what was still allocated when the program
 * ended (a Python program: when its script's code finished), grouped by
 * symbolized stack and memory (space, and GPU kind: so threads and captures
 * of one code path add up), largest first, valgrind-style, minus what the
 * suppressions hide. Must not: decide the
 * exit status (the command judges the totals it gets back) or read events.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/leak_classes.h"
#include "report/leak_follow.h"
#include "report/report_internal.h"
#include "report/sampling.h"

struct group {
    uint64_t bytes, count;
    uint32_t stack; /* trk_stacktab id */
    uint32_t space;
    uint32_t kind;      /* GPU kind in GPU spaces, else 0 */
    uint8_t cls;        /* TRK_LEAK_* of a classified heap leak; 0: not classified */
    uint8_t origin;     /* ORIGIN_*: what --fail-on-leak makes of it */
    uint64_t led_bytes; /* definitely lost: the indirectly lost bytes its blocks lead */
    bool cut;           /* the captured stack hit the depth cap */
    int32_t suppressed; /* index of the suppression that hides it, or -1 */
    int32_t forced;     /* indirectly lost blocks hidden with their leader: the
                         * suppression that hides the leader, else -1 */
};

/* One entry per leaking site first; sorting by (stack, space, kind) then
 * merges the entries of a group. A table indexed by the key would be
 * stack ids x spaces, and GPU devices made spaces many. */
struct groups {
    struct group *v;
    size_t n, cap;
};

/* Where a group's blocks come from, for the gate: a capture listed by
 * class, one without a leak scan, or one listed at a Python script's end
 * whose gate is its classes at exit (counted apart). */
enum { ORIGIN_CLASSES, ORIGIN_UNSCANNED, ORIGIN_LISTED };

static struct group *group_add(struct groups *g, uint32_t stack, uint32_t space, uint32_t kind,
                               uint8_t cls, uint8_t origin)
{
    if (g->n == g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 256;
        struct group *p = realloc(g->v, nc * sizeof(*p));
        if (!p)
            return NULL;
        g->v = p;
        g->cap = nc;
    }
    struct group *x = &g->v[g->n++];
    memset(x, 0, sizeof(*x));
    x->stack = stack;
    x->space = space;
    x->kind = kind;
    x->cls = cls;
    x->origin = origin;
    x->suppressed = -1;
    x->forced = -1;
    return x;
}

static int cmp_keys(const void *pa, const void *pb)
{
    const struct group *x = pa, *y = pb;
    if (x->stack != y->stack)
        return x->stack < y->stack ? -1 : 1;
    if (x->space != y->space)
        return x->space < y->space ? -1 : 1;
    if (x->cls != y->cls)
        return x->cls < y->cls ? -1 : 1;
    if (x->origin != y->origin)
        return x->origin < y->origin ? -1 : 1;
    if (x->forced != y->forced)
        return x->forced < y->forced ? -1 : 1;
    return x->kind < y->kind ? -1 : x->kind > y->kind;
}

static void group_merge(struct groups *g)
{
    if (g->n == 0)
        return;
    qsort(g->v, g->n, sizeof(*g->v), cmp_keys);
    size_t n = 0;
    for (size_t i = 0; i < g->n; i++) {
        struct group *x = &g->v[i];
        if (n && cmp_keys(&g->v[n - 1], x) == 0) {
            g->v[n - 1].bytes += x->bytes;
            g->v[n - 1].count += x->count;
            g->v[n - 1].led_bytes += x->led_bytes;
            g->v[n - 1].cut |= x->cut;
        } else {
            g->v[n++] = *x;
        }
    }
    g->n = n;
}

static int cmp_groups(const void *pa, const void *pb)
{
    const struct group *x = *(const struct group *const *)pa, *y = *(const struct group *const *)pb;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    if (x->space != y->space)
        return x->space < y->space ? -1 : 1;
    if (x->stack != y->stack)
        return x->stack < y->stack ? -1 : 1;
    return x->kind < y->kind ? -1 : x->kind > y->kind;
}

/* The first suppression hiding the stack (suppress.c), or -1. */
static int32_t suppressed_by(const struct trk_suppressions *sup, const struct trk_loctab *lt,
                             const uint32_t *ids, uint32_t n)
{
    if (!sup || !sup->n)
        return -1;
    struct trk_sup_frame *f = malloc((n ? n : 1) * sizeof(*f));
    if (!f)
        return -1;
    for (uint32_t k = 0; k < n; k++) {
        const struct trk_rloc *l = &lt->v[ids[k]];
        f[k] = (struct trk_sup_frame){l->function, l->file, l->module};
    }
    int32_t p = trk_suppressions_find(sup, f, n);
    free(f);
    return p;
}

/* Whether a captured stack reached the capture's depth cap (then its
 * outermost frames are missing). */
static bool stack_cut(const struct trk_report_capture *c, uint64_t stack, uint64_t *ips, int max)
{
    uint32_t depth = trk_reader_info(c->r)->max_depth;
    return depth && (int)depth <= max && trk_reader_stack(c->r, stack, ips, max) >= (int)depth;
}

static void print_total(FILE *out, const char *what, uint64_t bytes, uint64_t count,
                        uint64_t stacks)
{
    char a[32], b[32];
    fprintf(out, "    %s %s bytes in %s block%s from %" PRIu64 " stack%s\n", what,
            trk_rfmt_grouped(bytes, a, sizeof(a)), trk_rfmt_grouped(count, b, sizeof(b)),
            count == 1 ? "" : "s", stacks, stacks == 1 ? "" : "s");
}

/* What the limit left out of the list. */
struct omitted {
    uint64_t stacks, bytes, count;
};

static struct omitted count_omitted(struct group *const *v, size_t n, size_t shown)
{
    struct omitted m = {0};
    for (size_t i = shown; i < n; i++) {
        m.stacks++;
        m.bytes += v[i]->bytes;
        m.count += v[i]->count;
    }
    return m;
}

/* Whether the capture's image ended by exec: the kernel released all its
 * memory then, so nothing it held is lost (valgrind checks no leaks at an
 * exec either), and it has no leak scan (docs/FORMAT.md §4a). */
static bool ended_by_exec(const struct trk_stats *t)
{
    return t->end_seen && t->end_reason == TRK_END_EXEC;
}

/* Whether an image of s that ended by exec held blocks then. */
static bool exec_held(const struct trk_report_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (ended_by_exec(&s->v[i].prof.totals) && s->v[i].prof.totals.leaked_allocations)
            return true;
    return false;
}

/* What a leak scan could not do, once per capture that says so; and that
 * a capture without one lists every block live at its end. */
static void leak_scan_notes(FILE *out, const struct trk_report_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        const struct trk_stats *t = &s->v[i].prof.totals;
        if (ended_by_exec(t)) {
            if (t->leaked_allocations)
                fprintf(out,
                        "note: pid %u: its image ended by exec, which released what it "
                        "held: not leaks, not listed\n",
                        t->pid);
            continue;
        }
        if (!t->leaks_classified) {
            if (!t->leaks_at_script_end && t->leaked_allocations)
                fprintf(out,
                        "note: pid %u: leaks not classified (no leak scan in the capture: "
                        "an older tracker, or TRACKER_LEAK_SCAN=0): every block live at "
                        "the end is listed\n",
                        t->pid);
            continue;
        }
        if (t->leak_scan_flags & TRK_LEAKF_INCOMPLETE)
            fprintf(out,
                    "note: pid %u: the leak scan at exit could not run (the capture could "
                    "not be read back): blocks are not classified\n",
                    t->pid);
        if (t->leak_scan_flags & TRK_LEAKF_UNSTOPPED)
            fprintf(out,
                    "note: pid %u: a thread did not stop for the leak scan: its whole stack "
                    "counted as roots, its registers did not\n",
                    t->pid);
        if (t->leak_scan_flags & TRK_LEAKF_INHERITED)
            fprintf(out,
                    "note: pid %u: a fork child: the heap it inherited was scanned as roots "
                    "(with the free memory between its own blocks: a leak may hide there)\n",
                    t->pid);
        if (t->leak_scan_flags & TRK_LEAKF_FOREIGN)
            fprintf(out,
                    "note: pid %u: blocks not from glibc's malloc: the mappings holding "
                    "them were not scanned as roots\n",
                    t->pid);
    }
}

static void print_text(FILE *out, const struct trk_report_set *s, const struct trk_report_opts *o,
                       const struct trk_loctab *lt, const struct trk_stacktab *st,
                       struct group *const *shown, size_t nshown, const struct omitted *om,
                       const struct trk_suppressions *sup, const struct trk_leak_totals *tot,
                       unsigned show)
{
    char a[32], b[32], c[32], d[32], name[16];
    trk_rprint_headers(out, s, o);
    trk_rprint_torch_note(out, &s, 1);
    trk_rprint_leaks_note(out, &s, 1);
    leak_scan_notes(out, s);
    for (size_t i = 0; i < nshown; i++) {
        const struct group *g = shown[i];
        bool mapped = g->space == TRK_SPACE_MMAP;
        if (trk_space_is_gpu(g->space))
            fprintf(out, "\n%s bytes in %s allocation%s of %s on %s, allocated at\n",
                    trk_rfmt_grouped(g->bytes, a, sizeof(a)),
                    trk_rfmt_grouped(g->count, b, sizeof(b)), g->count == 1 ? "" : "s",
                    trk_rgpu_kind_text(g->kind), trk_rgpu_name(g->space, name, sizeof(name)));
        else if (tot->classified && !mapped && g->led_bytes) /* valgrind's form */
            fprintf(out, "\n%s (%s direct, %s indirect) bytes in %s block%s %s, allocated at\n",
                    trk_rfmt_grouped(g->bytes + g->led_bytes, c, sizeof(c)),
                    trk_rfmt_grouped(g->bytes, a, sizeof(a)),
                    trk_rfmt_grouped(g->led_bytes, d, sizeof(d)),
                    trk_rfmt_grouped(g->count, b, sizeof(b)), g->count == 1 ? "" : "s",
                    trk_leak_class_phrase(g->cls));
        else if (tot->classified && !mapped)
            fprintf(out, "\n%s bytes in %s block%s %s, allocated at\n",
                    trk_rfmt_grouped(g->bytes, a, sizeof(a)),
                    trk_rfmt_grouped(g->count, b, sizeof(b)), g->count == 1 ? "" : "s",
                    trk_leak_class_phrase(g->cls));
        else
            fprintf(out, "\n%s bytes in %s %s%s %s at\n", trk_rfmt_grouped(g->bytes, a, sizeof(a)),
                    trk_rfmt_grouped(g->count, b, sizeof(b)), mapped ? "mapping" : "block",
                    g->count == 1 ? "" : "s", mapped ? "mapped" : "allocated");
        trk_rprint_stack(out, lt, st, g->stack);
        if (g->cut)
            fputs("    ... (the stack reached the capture's depth limit: outer frames may be "
                  "missing; see tracker run --depth)\n",
                  out);
    }
    if (om->stacks)
        fprintf(out,
                "\n... %" PRIu64 " more stack%s, %s bytes in %s block%s not shown "
                "(-n N shows more, -n 0 all)\n",
                om->stacks, om->stacks == 1 ? "" : "s", trk_rfmt_grouped(om->bytes, a, sizeof(a)),
                trk_rfmt_grouped(om->count, b, sizeof(b)), om->count == 1 ? "" : "s");
    fputs("\nLEAK SUMMARY:\n", out);
    if (!tot->leaked_count && !tot->suppressed_count && trk_report_heap_unseen(s))
        fputs("    unknown: the program's own malloc was not seen\n", out);
    if (tot->classified)
        trk_leak_print_summary(out, tot, show);
    else if (!tot->leaked_count && !tot->suppressed_count && exec_held(s))
        fputs("    no leaks: what was live at the exec was released by it\n", out);
    else if (!tot->leaked_count && !tot->suppressed_count)
        fputs("    no leaks: everything allocated was freed\n", out);
    else
        print_total(out, "leaked:    ", tot->leaked_bytes, tot->leaked_count, tot->stacks);
    if (sup && sup->n)
        print_total(out, "suppressed:", tot->suppressed_bytes, tot->suppressed_count,
                    tot->suppressed_stacks);
    if (tot->followed_count) /* LeakSanitizer's rule: suppress_follow.c */
        fprintf(out,
                "      (%s bytes in %s block%s of it indirectly lost only through a "
                "suppressed block)\n",
                trk_rfmt_grouped(tot->followed_bytes, a, sizeof(a)),
                trk_rfmt_grouped(tot->followed_count, b, sizeof(b)),
                tot->followed_count == 1 ? "" : "s");
    if (!o->gpu && trk_report_set_sample_bytes(s)) {
        /* Sampled stacks: the lines above are estimates, possibly none at
         * all for a small leak; the heap's leak itself is known exactly. */
        uint64_t bytes = 0, blocks = 0;
        for (size_t i = 0; i < s->n; i++) {
            bytes += s->v[i].prof.totals.leaked_bytes;
            blocks += s->v[i].prof.totals.leaked_allocations;
        }
        fprintf(out,
                "    exact:      %s bytes in %s heap block%s (the stacks' figures are "
                "sampling estimates)\n",
                trk_rfmt_grouped(bytes, a, sizeof(a)), trk_rfmt_grouped(blocks, b, sizeof(b)),
                blocks == 1 ? "" : "s");
    }
    if (tot->exit_classes_apart && !tot->classified) {
        fprintf(out,
                "    at the process's exit: %s bytes definitely, %s indirectly lost "
                "(--at-exit lists them; --fail-on-leak judges these)\n",
                trk_rfmt_grouped(tot->gate_bytes[TRK_LEAK_DEFINITE], c, sizeof(c)),
                trk_rfmt_grouped(tot->gate_bytes[TRK_LEAK_INDIRECT], d, sizeof(d)));
    }
    if (!o->gpu)
        trk_rprint_pymalloc_hint(out, s);
    bool used = false;
    for (size_t p = 0; sup && p < sup->n; p++) {
        const struct trk_suppression *x = &sup->v[p];
        if (!x->hit_stacks)
            continue;
        if (!used)
            fprintf(out, "\nSuppressions used:\n  %8s %14s  %s\n", "stacks", "bytes", "pattern");
        used = true;
        fprintf(out, "  %8" PRIu64 " %14s  leak:%s", x->hit_stacks,
                trk_rfmt_grouped(x->hit_bytes, a, sizeof(a)), x->pattern);
        if (x->builtin)
            fprintf(out, "  (default: %s)", x->about);
        fputc('\n', out);
    }
}

/* Whether a capture of s took its leaks at the Python script's end. */
static bool at_script_end(const struct trk_report_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].prof.totals.leaks_at_script_end)
            return true;
    return false;
}

/* The four totals (and what was not classified), as a last entry of no
 * bytes, so that the entries' bytes still add up to what was listed. */
static void json_summary(struct trk_rjson *j, const struct trk_leak_totals *tot, uint64_t sampled)
{
    trk_rjson_begin_object(j, NULL);
    trk_rjson_u64(j, "bytes", 0);
    trk_rjson_u64(j, "count", 0);
    if (sampled) /* every entry says it (the document is an array) */
        trk_rjson_u64(j, "sample_bytes", sampled);
    trk_rjson_begin_array(j, "stack");
    trk_rjson_end_array(j);
    trk_rjson_begin_object(j, "leak_summary");
    for (unsigned k = 0; k <= TRK_LEAK_CLASS_MAX; k++) {
        trk_rjson_begin_object(j, trk_leak_class_name(k));
        trk_rjson_u64(j, "bytes", tot->cls_bytes[k]);
        trk_rjson_u64(j, "count", tot->cls_count[k]);
        trk_rjson_u64(j, "stacks", tot->cls_stacks[k]);
        trk_rjson_end_object(j);
    }
    /* What the suppressions hid, and how much of it only with a
     * suppressed leader (not in the classes above). */
    trk_rjson_begin_object(j, "suppressed");
    trk_rjson_u64(j, "bytes", tot->suppressed_bytes);
    trk_rjson_u64(j, "count", tot->suppressed_count);
    trk_rjson_u64(j, "stacks", tot->suppressed_stacks);
    trk_rjson_u64(j, "through_leader_bytes", tot->followed_bytes);
    trk_rjson_u64(j, "through_leader_count", tot->followed_count);
    trk_rjson_end_object(j);
    trk_rjson_end_object(j);
    trk_rjson_end_object(j);
}

static void print_json(FILE *out, const struct trk_report_set *s, const struct trk_report_opts *o,
                       const struct trk_loctab *lt, const struct trk_stacktab *st,
                       struct group *const *shown, size_t nshown, const struct omitted *om,
                       const struct trk_leak_totals *tot)
{
    bool script_end = at_script_end(s);
    uint64_t sampled = trk_report_set_sample_bytes(s);
    struct trk_rjson j;
    trk_rjson_init(&j, out);
    trk_rjson_begin_array(&j, NULL);
    for (size_t i = 0; i < nshown; i++) {
        const struct group *g = shown[i];
        trk_rjson_begin_object(&j, NULL);
        trk_rjson_u64(&j, "bytes", g->bytes);
        trk_rjson_u64(&j, "count", g->count);
        /* The document is an array (scripts rely on it): each group says
         * when its leak was taken. */
        if (script_end && !tot->classified)
            trk_rjson_string(&j, "leaks_at", "script_end");
        /* Likewise whether bytes and count are sampling estimates. */
        if (sampled)
            trk_rjson_u64(&j, "sample_bytes", sampled);
        if (tot->classified && g->space == TRK_SPACE_HEAP)
            trk_rjson_string(&j, "class", trk_leak_class_name(g->cls));
        if (g->led_bytes) /* indirectly lost bytes this stack's blocks lead */
            trk_rjson_u64(&j, "indirect_bytes", g->led_bytes);
        if (g->space == TRK_SPACE_MMAP) {
            trk_rjson_string(&j, "space", "mmap");
        } else if (trk_space_is_gpu(g->space)) {
            trk_rjson_string(&j, "space", "gpu");
            trk_rjson_i64(&j, "device", trk_space_device(g->space));
            trk_rjson_string(&j, "kind", trk_gpu_kind_name(g->kind));
        }
        trk_rjson_stack(&j, lt, st, g->stack);
        trk_rjson_end_object(&j);
    }
    /* The document stays an array of groups (scripts rely on it): what
     * the limit left out is a last group with an empty stack and
     * "omitted": the number of stacks in it, so that the bytes of the
     * entries still add up to everything leaked. */
    if (om->stacks) {
        trk_rjson_begin_object(&j, NULL);
        trk_rjson_u64(&j, "bytes", om->bytes);
        trk_rjson_u64(&j, "count", om->count);
        trk_rjson_u64(&j, "omitted", om->stacks);
        if (sampled)
            trk_rjson_u64(&j, "sample_bytes", sampled);
        trk_rjson_begin_array(&j, "stack");
        trk_rjson_end_array(&j);
        trk_rjson_end_object(&j);
    }
    if (tot->classified && trk_report_space_on(o, TRK_SPACE_HEAP))
        json_summary(&j, tot, sampled); /* heap classes: not in a --gpu report */
    trk_rjson_end_array(&j);
    trk_rjson_finish(&j);
}

/* Whether capture c's leaks are the classified ones: it has a leak scan,
 * and it is not a Python process (whose leaks are what was live at its
 * script's end, or at the end of a worker or an embedding program: what
 * its objects hold is live, not lost) unless sel asks for the exit. */
static bool use_classes(const struct trk_report_capture *c, const struct trk_leak_select *sel)
{
    const struct trk_stats *t = &c->prof.totals;
    return t->leaks_classified && ((!t->leaks_at_script_end && !t->python) || sel->at_exit);
}

/* Where a capture's sites are interned, and each interned stack's own
 * suppression, looked up once (-2: not yet). */
struct site_env {
    struct trk_site_walker *w;
    struct trk_loctab *lt;
    struct trk_stacktab *st;
    int32_t *sup_of;
    size_t nsup_of;
};

static int stack_sup(struct site_env *e, const struct trk_suppressions *sup, uint32_t sid,
                     int32_t *out)
{
    if (sid >= e->nsup_of) {
        size_t nc = e->nsup_of * 2 > (size_t)sid + 1 ? e->nsup_of * 2 : (size_t)sid + 1;
        int32_t *p = realloc(e->sup_of, nc * sizeof(*p));
        if (!p)
            return -1;
        for (size_t i = e->nsup_of; i < nc; i++)
            p[i] = -2;
        e->sup_of = p;
        e->nsup_of = nc;
    }
    if (e->sup_of[sid] == -2) {
        uint32_t n;
        const uint32_t *ids = trk_stacktab_get(e->st, sid, &n);
        e->sup_of[sid] = suppressed_by(sup, e->lt, ids, n);
    }
    *out = e->sup_of[sid];
    return 0;
}

/* Suppressions follow capture c's leak graph (leak_follow.c): the groups
 * of its indirectly lost blocks hidden with their leader, and in f what
 * each site gives up for them. Needs each graph site's own suppression. */
static int follow_capture(const struct trk_report_capture *c, const struct trk_report_opts *o,
                          const struct trk_suppressions *sup, struct site_env *e, struct groups *g,
                          struct trk_leak_follow *f)
{
    const struct trk_profile *p = &c->prof;
    size_t ns = p->nsites ? p->nsites : 1;
    int32_t *own = malloc(ns * sizeof(*own));
    uint32_t *sid = malloc(ns * sizeof(*sid));
    int rc = -1;
    if (!own || !sid)
        goto out;
    for (size_t i = 0; i < p->nsites; i++) {
        own[i] = -1;
        sid[i] = TRK_NO_ID;
    }
    for (size_t k = 0; k < p->nled; k++) {
        uint32_t ends[2] = {p->led[k].leader, p->led[k].member};
        for (int j = 0; j < 2; j++) {
            uint32_t i = ends[j];
            if (i >= p->nsites || sid[i] != TRK_NO_ID)
                continue;
            sid[i] = trk_site_stack(e->w, c, o, p->sites[i].stack, e->lt, e->st);
            if (sid[i] == TRK_NO_ID || stack_sup(e, sup, sid[i], &own[i]) < 0)
                goto out;
        }
    }
    if (trk_leak_follow_compute(p, own, f) < 0)
        goto out;
    for (size_t k = 0; k < f->n; k++) {
        const struct trk_leak_hidden *h = &f->v[k];
        const struct trk_site *site = &p->sites[h->member];
        struct group *x = group_add(g, sid[h->member], site->space, site->kind, TRK_LEAK_INDIRECT,
                                    ORIGIN_CLASSES);
        if (!x)
            goto out;
        x->bytes = h->bytes;
        x->count = h->count;
        x->forced = h->sup;
    }
    rc = 0;
out:
    free(own);
    free(sid);
    return rc;
}

/* The groups of one site: one per class of a classified heap site, less
 * what f hides with a suppressed leader (f NULL: nothing). */
static int add_site(struct groups *g, const struct trk_site *site, uint32_t sid, bool classes,
                    uint8_t origin, bool *cut, const struct trk_leak_follow *f, size_t si)
{
    if (!classes || site->space != TRK_SPACE_HEAP) {
        struct group *x = group_add(g, sid, site->space, site->kind, 0, origin);
        if (!x)
            return -1;
        x->bytes += site->s.leak_bytes;
        x->count += site->s.leak_count;
        x->cut = *cut;
        return 0;
    }
    bool fol = f && f->hid_count;
    for (unsigned k = 0; k <= TRK_LEAK_CLASS_MAX; k++) {
        uint64_t count = site->s.cls_count[k], bytes = site->s.cls_bytes[k];
        if (fol && k == TRK_LEAK_INDIRECT) {
            count = f->hid_count[si] < count ? count - f->hid_count[si] : 0;
            bytes = f->hid_bytes[si] < bytes ? bytes - f->hid_bytes[si] : 0;
        }
        if (!count)
            continue;
        struct group *x = group_add(g, sid, site->space, site->kind, (uint8_t)k, origin);
        if (!x)
            return -1;
        x->bytes += bytes;
        x->count += count;
        if (k == TRK_LEAK_DEFINITE) {
            uint64_t hid = fol ? f->led_hidden[si] : 0;
            x->led_bytes += site->s.led_bytes > hid ? site->s.led_bytes - hid : 0;
        }
        x->cut = *cut;
    }
    return 0;
}

int trk_report_leaks(const struct trk_report_set *s, const struct trk_report_opts *o,
                     struct trk_suppressions *sup, size_t limit, FILE *out,
                     struct trk_leak_totals *tot, char *err, size_t errlen)
{
    return trk_report_leaks_sel(s, o, NULL, sup, limit, out, tot, err, errlen);
}

int trk_report_leaks_sel(const struct trk_report_set *s, const struct trk_report_opts *o,
                         const struct trk_leak_select *sel, struct trk_suppressions *sup,
                         size_t limit, FILE *out, struct trk_leak_totals *tot, char *err,
                         size_t errlen)
{
    static const struct trk_leak_select dflt = {.show = TRK_LEAK_SHOW_DEFAULT};
    if (!sel)
        sel = &dflt;
    unsigned show = sel->show;
    struct trk_loctab lt;
    struct trk_stacktab st;
    struct trk_site_walker w = {0};
    struct groups g = {0};
    struct group **shown = NULL;
    uint64_t *ips = NULL;
    struct site_env env = {.w = &w, .lt = &lt, .st = &st};
    struct trk_leak_follow fol = {0};
    int rc = -1;
    trk_loctab_init(&lt, false);
    trk_stacktab_init(&st);
    memset(tot, 0, sizeof(*tot));

    for (size_t ci = 0; ci < s->n; ci++) {
        const struct trk_report_capture *c = &s->v[ci];
        if (ended_by_exec(&c->prof.totals))
            continue;
        /* Enough room to see whether a stack reached the cap; a damaged
         * header's absurd cap just disables the check. */
        int max = (int)trk_reader_info(c->r)->max_depth;
        max = max > 0 && max <= 65536 ? max : 0;
        free(ips);
        ips = malloc(((size_t)max + 1) * sizeof(*ips));
        if (!ips)
            goto oom;
        bool classes = use_classes(c, sel);
        const struct trk_stats *ct = &c->prof.totals;
        uint8_t origin = classes                ? ORIGIN_CLASSES
                         : ct->leaks_classified ? ORIGIN_LISTED
                                                : ORIGIN_UNSCANNED;
        tot->classified |= classes && trk_report_space_on(o, TRK_SPACE_HEAP);
        tot->exit_classes_apart |= origin == ORIGIN_LISTED;
        for (unsigned k = 0; origin == ORIGIN_LISTED && k <= TRK_LEAK_CLASS_MAX; k++) {
            tot->gate_bytes[k] += ct->leak_class_bytes[k];
            tot->gate_count[k] += ct->leak_class_count[k];
        }
        /* Suppressions follow the leak graph: what a suppressed leader
         * leads goes with it. */
        trk_leak_follow_free(&fol);
        if (classes && trk_report_space_on(o, TRK_SPACE_HEAP) && sup && sup->n && c->prof.nled &&
            follow_capture(c, o, sup, &env, &g, &fol) < 0)
            goto oom;
        for (size_t si = 0; si < c->prof.nsites; si++) {
            const struct trk_site *site = &c->prof.sites[si];
            bool by_class = classes && site->space == TRK_SPACE_HEAP, none = true;
            for (unsigned k = 0; k <= TRK_LEAK_CLASS_MAX; k++)
                none &= !site->s.cls_count[k];
            if (!trk_report_space_on(o, site->space) || (by_class ? none : !site->s.leak_count))
                continue;
            uint32_t sid = trk_site_stack(&w, c, o, site->stack, &lt, &st);
            if (sid == TRK_NO_ID)
                goto oom;
            bool cut = max && site->stack && stack_cut(c, site->stack, ips, max + 1);
            if (add_site(&g, site, sid, classes, origin, &cut, &fol, si))
                goto oom;
        }
    }

    size_t nshown = 0;
    group_merge(&g);
    shown = malloc((g.n ? g.n : 1) * sizeof(*shown));
    if (!shown)
        goto oom;
    for (size_t i = 0; i < g.n; i++) {
        struct group *x = &g.v[i];
        if (!x->count)
            continue;
        uint32_t n;
        const uint32_t *ids = trk_stacktab_get(&st, x->stack, &n);
        x->suppressed = x->forced >= 0 ? x->forced : suppressed_by(sup, &lt, ids, n);
        if (x->suppressed >= 0) {
            struct trk_suppression *p = &sup->v[x->suppressed];
            p->hit_bytes += x->bytes;
            p->hit_count += x->count;
            p->hit_stacks++;
            tot->suppressed_bytes += x->bytes;
            tot->suppressed_count += x->count;
            tot->suppressed_stacks++;
            if (x->forced >= 0) {
                tot->followed_bytes += x->bytes;
                tot->followed_count += x->count;
            }
            continue;
        }
        unsigned gi = x->origin == ORIGIN_UNSCANNED ? TRK_LEAK_UNSCANNED : x->cls;
        if (x->origin != ORIGIN_LISTED) {
            tot->gate_bytes[gi] += x->bytes;
            tot->gate_count[gi] += x->count;
        }
        tot->cls_bytes[x->cls] += x->bytes;
        tot->cls_count[x->cls] += x->count;
        tot->cls_stacks[x->cls]++;
        if (!(show & (1u << x->cls)))
            continue;
        tot->leaked_bytes += x->bytes;
        tot->leaked_count += x->count;
        tot->stacks++;
        shown[nshown++] = x;
    }
    qsort(shown, nshown, sizeof(*shown), cmp_groups);
    /* A long run leaks from many stacks; the largest few are the answer,
     * and the output must not grow with the capture. */
    size_t nlist = limit && limit < nshown ? limit : nshown;
    struct omitted om = count_omitted(shown, nshown, nlist);
    if (o->json)
        print_json(out, s, o, &lt, &st, shown, nlist, &om, tot);
    else
        print_text(out, s, o, &lt, &st, shown, nlist, &om, sup, tot, show);
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "leaks: out of memory");
done:
    trk_leak_follow_free(&fol);
    free(env.sup_of);
    free(ips);
    free(shown);
    free(g.v);
    trk_site_walker_free(&w);
    trk_stacktab_free(&st);
    trk_loctab_free(&lt);
    return rc;
}
