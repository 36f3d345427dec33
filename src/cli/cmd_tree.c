/* SPDX-License-Identifier: MIT
 *
 * cmd_tree.c - `tracker tree [options] FILE`: the call tree of a selection
 * (live at the peak by default), pruned below a share of the whole
 * (src/report/tree.c renders it). Owns the command's options, usage text
 * and exit status. Must not: compute or format figures.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "report/report.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tracker tree [options] FILE\n"
            "  the call tree of the bytes live at the peak, with each line's share\n"
            "  --threshold PCT        merge lines under PCT%% of the whole into [other]\n"
            "                         (default 1.0; 0 keeps every line)\n"
            "  --inverted             innermost frames at the root (who allocates)\n"
            "  --peak | --leaks | --temporary | --allocated\n"
            "                         what to show (default --peak)\n"
            "%s",
            trk_report_common_help);
}

int trk_cmd_tree(int argc, char **argv)
{
    struct trk_report_opts o;
    struct trk_progress prog;
    struct trk_report_set set = {0};
    struct trk_tree_report_opts t = {.select = TRK_SEL_PEAK, .threshold_pct = 1.0};
    bool no_more = false;
    const char *file = NULL, *v;
    char err[1024];
    int rc = TRK_EXIT_USAGE, r;
    trk_report_opts_init(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (no_more || a[0] != '-' || a[1] == '\0') {
            if (file) {
                trk_cli_error("tree: expected one capture file, got '%s' and '%s'", file, a);
                goto out;
            }
            file = a;
        } else if (strcmp(a, "--") == 0) {
            no_more = true;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            rc = TRK_EXIT_OK;
            goto out;
        } else if ((r = trk_report_parse_common(&o, argc, argv, &i, err, sizeof(err))) != 0) {
            if (r < 0) {
                trk_cli_error("tree: %s", err);
                goto out;
            }
        } else if (strcmp(a, "--inverted") == 0) {
            t.inverted = true;
        } else if (strcmp(a, "--peak") == 0) {
            t.select = TRK_SEL_PEAK;
        } else if (strcmp(a, "--leaks") == 0) {
            t.select = TRK_SEL_LEAKS;
        } else if (strcmp(a, "--temporary") == 0) {
            t.select = TRK_SEL_TEMPORARY;
        } else if (strcmp(a, "--allocated") == 0) {
            t.select = TRK_SEL_ALLOCATED;
        } else if ((r = trk_report_opt_value(argc, argv, &i, "--threshold", &v, err,
                                             sizeof(err))) != 0) {
            char *end = NULL;
            errno = 0;
            double pct = r > 0 ? strtod(v, &end) : NAN;
            if (r < 0 || errno || end == v || *end || !(pct >= 0 && pct <= 100)) {
                trk_cli_error("tree: --threshold needs a percentage from 0 to 100");
                goto out;
            }
            t.threshold_pct = pct;
        } else {
            rc = trk_cli_bad_option(a);
            goto out;
        }
    }
    if (!file) {
        trk_cli_error("tree: missing capture file (see 'tracker tree --help')");
        goto out;
    }

    trk_progress_init(&prog, !o.no_progress);
    o.progress = trk_progress_update;
    o.progress_ctx = &prog;
    o.warn = trk_progress_warn;
    o.warn_ctx = &prog;
    rc = TRK_EXIT_FAIL;
    int lr = trk_report_set_load(&set, file, &o, err, sizeof(err));
    trk_progress_clear(&prog);
    if (lr < 0)
        trk_cli_error("%s", err);
    else if (trk_report_tree(&set, &o, &t, stdout, err, sizeof(err)) < 0)
        trk_cli_error("%s", err);
    else if (fflush(stdout) != 0 || ferror(stdout))
        trk_cli_error("tree: cannot write output");
    else
        rc = TRK_EXIT_OK;
    trk_report_set_free(&set);
    trk_progress_free(&prog);
out:
    trk_report_opts_free(&o);
    return rc;
}
