/* SPDX-License-Identifier: MIT
 *
 * tree.c - `tracker tree`: the call tree of one selection (live at the
 * peak by default) as indented lines with bytes and their share of the
 * whole, or as nested JSON nodes. Building, sorting and pruning the tree is
 * calltree.h's; this file only walks and prints it, without recursion
 * (trees are as deep as the deepest stack, 1024 frames and more). Must not:
 * read events or symbolize by itself.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/leak_select.h"
#include "report/report_internal.h"
#include "report/python_note.h"
#include "report/summary_procs.h"
#include "report/sampling.h"

/* Past this depth lines stop moving right and say their depth instead. */
#define INDENT_CAP 48

static const char *sel_title(enum trk_select sel)
{
    switch (sel) {
    case TRK_SEL_PEAK:
        return "live at the peak";
    case TRK_SEL_LEAKS:
        return "leaked (live at the end)";
    case TRK_SEL_TEMPORARY:
        return "temporary allocations";
    case TRK_SEL_ALLOCATED:
        return "all allocations";
    case TRK_SEL_FAILED:
        return "GPU allocations the driver refused";
    }
    return "selected";
}

static const char *node_name(const struct trk_location *l, char *buf, size_t len)
{
    if (l->kind == TRK_LOC_OTHER)
        return "[other]";
    if ((l->kind == TRK_LOC_PROCESS || l->kind == TRK_LOC_THREAD) && l->function)
        return l->function;
    return trk_location_name(l, buf, len);
}

static const char *kind_name(uint32_t kind)
{
    switch (kind) {
    case TRK_LOC_PROCESS:
        return "process";
    case TRK_LOC_THREAD:
        return "thread";
    case TRK_LOC_OTHER:
        return "other";
    default:
        return "frame";
    }
}

/* The next node of a pre-order walk below the root, tracking the depth;
 * 0 at the end. */
/* What a node's child limit left out below it. */
struct omitted {
    uint64_t nodes, bytes, count;
};

static void print_omitted(FILE *out, const struct omitted *m, unsigned depth);

static uint32_t next_node(const struct trk_ctree *t, const struct omitted *om, FILE *out,
                          uint32_t n, unsigned *depth)
{
    if (t->nodes[n].first_child) {
        ++*depth;
        return t->nodes[n].first_child;
    }
    while (n && !t->nodes[n].next_sibling) {
        /* Leaving the last shown child of a parent: what the limit left
         * out of that parent goes here, at the children's depth. */
        n = t->nodes[n].parent;
        if (om[n].nodes)
            print_omitted(out, &om[n], *depth);
        --*depth;
    }
    return n ? t->nodes[n].next_sibling : 0;
}

/* Whether a capture of s took its leaks at the Python script's end. */
static bool at_script_end(const struct trk_report_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].prof.totals.leaks_at_script_end)
            return true;
    return false;
}

/* Keeps the first limit children of every node (they are sorted largest
 * first) and records what the rest held in om[parent]: a long run has
 * thousands of call sites under one frame, and the output must not grow
 * with the capture. Returns the omitted figures per node, or NULL when
 * memory ran out; limit 0 keeps every child (calloc'd all the same). */
static struct omitted *limit_children(struct trk_ctree *t, size_t limit)
{
    struct omitted *om = calloc(t->nnodes ? t->nnodes : 1, sizeof(*om));
    if (!om || !limit)
        return om;
    for (size_t p = 0; p < t->nnodes; p++) {
        size_t k = 0;
        uint32_t last = 0;
        for (uint32_t c = t->nodes[p].first_child; c; c = t->nodes[c].next_sibling, k++) {
            if (k < limit) {
                last = c;
                continue;
            }
            om[p].nodes++;
            om[p].bytes += t->nodes[c].total_bytes;
            om[p].count += t->nodes[c].total_count;
        }
        if (om[p].nodes)
            t->nodes[last].next_sibling = 0;
    }
    return om;
}

static void print_omitted(FILE *out, const struct omitted *m, unsigned depth)
{
    char a[32], b[32];
    fprintf(out, "%10s %7s %10s %12s  ", "", "", "", "");
    unsigned ind = depth < INDENT_CAP ? depth : INDENT_CAP;
    for (unsigned i = 0; i < ind; i++)
        fputs("  ", out);
    fprintf(out,
            "... %" PRIu64 " more line%s, %s bytes in %s allocation%s not shown "
            "(-n N shows more, -n 0 all)\n",
            m->nodes, m->nodes == 1 ? "" : "s", trk_rfmt_grouped(m->bytes, a, sizeof(a)),
            trk_rfmt_grouped(m->count, b, sizeof(b)), m->count == 1 ? "" : "s");
}

static void print_text(FILE *out, const struct trk_ctree *t, const struct omitted *om,
                       enum trk_select sel, double threshold, bool script_end,
                       const char *peak_phrase, const char *leak_title)
{
    char a[32], b[32], c[32], name[300], title[80];
    const struct trk_ctree_node *root = &t->nodes[0];
    /* Over several processes or devices the figure adds peaks of different
     * instants: the title says so instead of calling it one peak. */
    snprintf(title, sizeof(title), "live at %s", peak_phrase);
    fprintf(out, "\n%s: %s in %s allocations",
            sel == TRK_SEL_LEAKS && script_end ? "leaked (live at the script's end)"
            : sel == TRK_SEL_PEAK              ? title
            : sel == TRK_SEL_LEAKS             ? leak_title
                                               : sel_title(sel),
            trk_rfmt_bytes(root->total_bytes, a, sizeof(a)),
            trk_rfmt_grouped(root->total_count, b, sizeof(b)));
    if (threshold > 0)
        fprintf(out, " (lines under %.2f%% merged into [other])", threshold);
    fputs("\n\n", out);
    if (!root->first_child) {
        fprintf(out, "nothing to show\n");
        return;
    }
    fprintf(out, "%10s %7s %10s %12s  %s\n", "total", "%", "self", "allocations", "location");
    double whole = root->total_bytes ? (double)root->total_bytes : 1;
    unsigned depth = 0;
    for (uint32_t n = root->first_child; n; n = next_node(t, om, out, n, &depth)) {
        const struct trk_ctree_node *x = &t->nodes[n];
        const struct trk_location *l = &t->locs[x->loc];
        /* Pruning can merge nothing-at-all (an empty process) into [other]:
         * a line of zeros says nothing. */
        if (l->kind == TRK_LOC_OTHER && !x->total_bytes && !x->total_count)
            continue;
        fprintf(out, "%10s %6.2f%% %10s %12s  ", trk_rfmt_bytes(x->total_bytes, a, sizeof(a)),
                100.0 * (double)x->total_bytes / whole, trk_rfmt_bytes(x->self_bytes, b, sizeof(b)),
                trk_rfmt_grouped(x->total_count, c, sizeof(c)));
        unsigned ind = depth < INDENT_CAP ? depth : INDENT_CAP;
        for (unsigned i = 0; i < ind; i++)
            fputs("  ", out);
        if (depth > INDENT_CAP)
            fprintf(out, "[depth %u] ", depth);
        fputs(node_name(l, name, sizeof(name)), out);
        if (l->kind == TRK_LOC_FRAME) {
            if (l->file && l->line)
                fprintf(out, " (%s:%" PRIu32 ")", trk_display_path(l->file), l->line);
            if (l->module && *l->module)
                fprintf(out, " [%s]", trk_rbasename(l->module));
        }
        fputc('\n', out);
    }
}

static void json_node_fields(struct trk_rjson *j, const struct trk_ctree *t, uint32_t n)
{
    char name[300];
    const struct trk_ctree_node *x = &t->nodes[n];
    const struct trk_location *l = &t->locs[x->loc];
    trk_rjson_string(j, "function", node_name(l, name, sizeof(name)));
    trk_rjson_string(j, "file", l->kind == TRK_LOC_FRAME ? l->file : NULL);
    trk_rjson_u64(j, "line", l->kind == TRK_LOC_FRAME ? l->line : 0);
    trk_rjson_string(j, "module", l->kind == TRK_LOC_FRAME ? l->module : NULL);
    if (l->kind != TRK_LOC_FRAME)
        trk_rjson_string(j, "kind", kind_name(l->kind));
    if (l->python)
        trk_rjson_bool(j, "python", true);
    trk_rjson_u64(j, "self_bytes", x->self_bytes);
    trk_rjson_u64(j, "total_bytes", x->total_bytes);
    trk_rjson_u64(j, "self_count", x->self_count);
    trk_rjson_u64(j, "total_count", x->total_count);
}

static void json_omitted(struct trk_rjson *j, const struct omitted *m)
{
    if (!m->nodes)
        return;
    trk_rjson_begin_object(j, "omitted");
    trk_rjson_u64(j, "nodes", m->nodes);
    trk_rjson_u64(j, "total_bytes", m->bytes);
    trk_rjson_u64(j, "total_count", m->count);
    trk_rjson_end_object(j);
}

static void print_json(FILE *out, const struct trk_ctree *t, const struct omitted *om,
                       enum trk_select sel, bool inverted, bool script_end, uint64_t sample_bytes,
                       const char *leak_kinds)
{
    struct trk_rjson j;
    const struct trk_ctree_node *root = &t->nodes[0];
    trk_rjson_init(&j, out);
    trk_rjson_begin_object(&j, NULL);
    trk_rjson_string(&j, "selection", trk_select_name(sel));
    trk_rjson_bool(&j, "inverted", inverted);
    trk_rsample_json(&j, sample_bytes);
    if (sel == TRK_SEL_LEAKS)
        trk_rjson_string(&j, "leaks_at", script_end ? "script_end" : "exit");
    if (sel == TRK_SEL_LEAKS && leak_kinds) /* classified captures: these kinds */
        trk_rjson_string(&j, "leak_kinds", leak_kinds);
    trk_rjson_u64(&j, "total_bytes", root->total_bytes);
    trk_rjson_u64(&j, "total_count", root->total_count);
    trk_rjson_begin_array(&j, "children");
    /* Iterative pre-order: open a node, and close as many as the walk climbs. */
    uint32_t n = root->first_child;
    while (n) {
        trk_rjson_begin_object(&j, NULL);
        json_node_fields(&j, t, n);
        trk_rjson_begin_array(&j, "children");
        if (t->nodes[n].first_child) {
            n = t->nodes[n].first_child;
            continue;
        }
        while (n) {
            trk_rjson_end_array(&j);
            json_omitted(&j, &om[n]);
            trk_rjson_end_object(&j);
            if (t->nodes[n].next_sibling) {
                n = t->nodes[n].next_sibling;
                break;
            }
            n = t->nodes[n].parent;
        }
    }
    trk_rjson_end_array(&j);
    json_omitted(&j, &om[0]);
    trk_rjson_end_object(&j);
    trk_rjson_finish(&j);
}

int trk_report_tree(const struct trk_report_set *s, const struct trk_report_opts *o,
                    const struct trk_tree_report_opts *to, FILE *out, char *err, size_t errlen)
{
    struct trk_ctree_options co = {
        .select = to->select,
        .spaces = trk_report_spaces(o),
        .inverted = to->inverted,
        .thread = -1,
        .frames = trk_report_frames(o),
        .leak_kinds = to->leak_kinds,
    };
    struct trk_ctree t;
    if (trk_ctree_init(&t, &co) < 0) {
        snprintf(err, errlen, "tree: out of memory");
        return -1;
    }
    for (size_t i = 0; i < s->n; i++) {
        const struct trk_report_capture *c = &s->v[i];
        /* With --all each process gets a root of its own, even when the set
         * turned out to hold one capture: the shape follows the option. */
        if (trk_ctree_add(&t, &c->prof, c->r, c->sym, o->all ? c->label : NULL) < 0) {
            trk_ctree_free(&t);
            snprintf(err, errlen, "tree: out of memory");
            return -1;
        }
    }
    trk_ctree_finish(&t);
    if (to->threshold_pct > 0)
        trk_ctree_prune(&t, to->threshold_pct / 100.0);
    struct omitted *om = limit_children(&t, to->max_children);
    if (!om) {
        trk_ctree_free(&t);
        snprintf(err, errlen, "tree: out of memory");
        return -1;
    }
    char kinds[96], leak_title[128];
    bool by_class = to->leak_kinds && trk_report_leaks_by_class(s);
    trk_leak_kinds_text(to->leak_kinds, kinds, sizeof(kinds));
    trk_leak_view_title(s, to->leak_kinds, leak_title, sizeof(leak_title));
    if (o->json) {
        print_json(out, &t, om, to->select, to->inverted, at_script_end(s),
                   trk_report_set_sample_bytes(s), by_class ? kinds : NULL);
    } else {
        trk_rprint_headers(out, s, o);
        trk_rprint_torch_note(out, &s, 1);
        if (to->select == TRK_SEL_PEAK)
            trk_rprint_arenas_note(out, s, o);
        if (to->select == TRK_SEL_LEAKS)
            trk_rprint_leaks_note(out, &s, 1);
        if (to->select == TRK_SEL_LEAKS && by_class)
            fprintf(out,
                    "note: leak kinds %s at exit, as `tracker leaks` lists them (before its "
                    "suppressions); --kinds all counts every block still allocated\n",
                    kinds);
        else if (to->select == TRK_SEL_LEAKS && !at_script_end(s))
            fputs("note: every block still allocated at the end, still reachable ones "
                  "included (no leak classes in the capture); `tracker leaks` says more\n",
                  out);
        print_text(out, &t, om, to->select, to->threshold_pct, at_script_end(s),
                   trk_peak_phrase(s, o), leak_title);
    }
    free(om);
    trk_ctree_free(&t);
    return 0;
}
