/* SPDX-License-Identifier: MIT
 *
 * cmd_diff.c - `tracker diff [options] BEFORE AFTER`: per stack, how the
 * bytes live at the peak and the bytes leaked changed between two captures
 * (src/report/diff.c computes and renders it). Owns the options, usage text
 * and exit status. Must not: compute or format figures.
 */
#include <string.h>

#include "cli/cli.h"
#include "report/report.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tracker diff [options] BEFORE AFTER\n"
            "  per stack (matched by function, file, line and module, not by address),\n"
            "  the change of bytes live at the peak and of bytes leaked\n"
            "  -n N                   changed stacks to show (default 20, 0 = all;\n"
            "                         --json lists every stack)\n"
            "%s",
            trk_report_common_help);
}

int trk_cmd_diff(int argc, char **argv)
{
    struct trk_report_opts o;
    struct trk_progress prog;
    struct trk_report_set before = {0}, after = {0};
    uint64_t rows = 20;
    bool no_more = false;
    const char *files[2] = {NULL, NULL}, *v;
    int nfiles = 0;
    char err[1024];
    int rc = TRK_EXIT_USAGE, r;
    trk_report_opts_init(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (no_more || a[0] != '-' || a[1] == '\0') {
            if (nfiles == 2) {
                trk_cli_error("diff: expected two capture files, got a third: '%s'", a);
                goto out;
            }
            files[nfiles++] = a;
        } else if (strcmp(a, "--") == 0) {
            no_more = true;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            rc = TRK_EXIT_OK;
            goto out;
        } else if ((r = trk_report_parse_common(&o, argc, argv, &i, err, sizeof(err))) != 0) {
            if (r < 0) {
                trk_cli_error("diff: %s", err);
                goto out;
            }
        } else if ((r = trk_report_opt_value(argc, argv, &i, "-n", &v, err, sizeof(err))) != 0) {
            if (r < 0 || trk_cli_parse_uint(v, 0, UINT32_MAX, &rows) < 0) {
                trk_cli_error("diff: -n needs a number of stacks (0 = all)");
                goto out;
            }
        } else {
            rc = trk_cli_bad_option(a);
            goto out;
        }
    }
    if (nfiles != 2) {
        trk_cli_error("diff: expected two capture files, BEFORE and AFTER (see 'tracker diff "
                      "--help')");
        goto out;
    }

    trk_progress_init(&prog, !o.no_progress);
    o.progress = trk_progress_update;
    o.progress_ctx = &prog;
    o.warn = trk_progress_warn;
    o.warn_ctx = &prog;
    rc = TRK_EXIT_FAIL;
    int lr = trk_report_set_load(&before, files[0], &o, err, sizeof(err));
    if (lr == 0)
        lr = trk_report_set_load(&after, files[1], &o, err, sizeof(err));
    trk_progress_clear(&prog);
    if (lr < 0)
        trk_cli_error("%s", err);
    else if (trk_report_diff(&before, &after, &o, rows, stdout, err, sizeof(err)) < 0)
        trk_cli_error("%s", err);
    else if (fflush(stdout) != 0 || ferror(stdout))
        trk_cli_error("diff: cannot write output");
    else
        rc = TRK_EXIT_OK;
    trk_report_set_free(&before);
    trk_report_set_free(&after);
    trk_progress_free(&prog);
out:
    trk_report_opts_free(&o);
    return rc;
}
