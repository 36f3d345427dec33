/* SPDX-License-Identifier: MIT
 *
 * export.c - the one entry of the export formats (export.h): builds what a
 * format renders from (the call tree of every capture, for folded and
 * speedscope) and hands it to the format's writer, so the CLI names a format
 * and never builds a model itself. Must not: render (export_*.c do) or
 * compute figures (calltree.c does).
 */
#include <stdio.h>

#include "report/export.h"

/* The selection as one function-level call tree of every capture: a flame
 * graph merges the call sites of a function, and line-level locations would
 * split it into same-named boxes. */
static int build_tree(struct trk_ctree *t, const struct trk_export *x)
{
    struct trk_ctree_options to = {.select = x->select,
                                   .spaces = x->spaces,
                                   .inverted = x->inverted,
                                   .thread = -1,
                                   .by_function = 1,
                                   .frames = x->frames};
    if (trk_ctree_init(t, &to) < 0)
        return -1;
    for (size_t i = 0; i < x->ncaps; i++) {
        const struct trk_export_capture *c = &x->caps[i];
        if (trk_ctree_add(t, c->profile, c->reader, c->sym, c->label) < 0)
            return -1;
    }
    trk_ctree_finish(t);
    return 0;
}

int trk_export_write(FILE *f, enum trk_export_format fmt, const struct trk_export *x, char *err,
                     size_t errlen)
{
    if (fmt == TRK_EXPORT_PPROF)
        return trk_export_pprof(f, x, err, errlen);
    if (fmt == TRK_EXPORT_CHROME)
        return trk_export_chrome(f, x, err, errlen);
    struct trk_ctree tree;
    struct trk_export xt = *x;
    int rc = -1;
    if (build_tree(&tree, x) < 0) {
        snprintf(err, errlen, "out of memory");
    } else {
        xt.tree = &tree;
        rc = fmt == TRK_EXPORT_SPEEDSCOPE ? trk_export_speedscope(f, &xt, err, errlen)
                                          : trk_export_folded(f, &xt, err, errlen);
    }
    trk_ctree_free(&tree);
    return rc;
}
