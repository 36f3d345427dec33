/* SPDX-License-Identifier: MIT
 *
 * cmd_summary.c - `tracker summary [options] FILE`: the top source
 * locations by bytes live at the peak (src/report/summary.c renders them).
 * Owns the command's options, usage text and exit status. Must not: compute
 * or format figures.
 */
#include <string.h>

#include "cli/cli.h"
#include "report/report.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tracker summary [options] FILE\n"
            "  the top locations by bytes live at the peak: own (innermost frame), total\n"
            "  (anywhere in the stack) and allocations made there\n"
            "  -n N                   rows to show (default 20 for the table, all for --json;\n"
            "                         0 = all)\n"
            "%s",
            trk_report_common_help);
}

int trk_cmd_summary(int argc, char **argv)
{
    struct trk_report_opts o;
    struct trk_progress prog;
    struct trk_report_set set = {0};
    uint64_t rows = 20;
    bool rows_given = false, no_more = false;
    const char *file = NULL, *v;
    char err[1024];
    int rc = TRK_EXIT_USAGE, r;
    trk_report_opts_init(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (no_more || a[0] != '-' || a[1] == '\0') {
            if (file) {
                trk_cli_error("summary: expected one capture file, got '%s' and '%s'", file, a);
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
                trk_cli_error("summary: %s", err);
                goto out;
            }
        } else if ((r = trk_report_opt_value(argc, argv, &i, "-n", &v, err, sizeof(err))) != 0) {
            if (r < 0 || trk_cli_parse_uint(v, 0, UINT32_MAX, &rows) < 0) {
                trk_cli_error("summary: -n needs a number of rows (0 = all)");
                goto out;
            }
            rows_given = true;
        } else {
            rc = trk_cli_bad_option(a);
            goto out;
        }
    }
    if (!file) {
        trk_cli_error("summary: missing capture file (see 'tracker summary --help')");
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
    else if (trk_report_summary(&set, &o, rows, rows_given, stdout, err, sizeof(err)) < 0)
        trk_cli_error("%s", err);
    else if (fflush(stdout) != 0 || ferror(stdout))
        trk_cli_error("summary: cannot write output");
    else
        rc = TRK_EXIT_OK;
    trk_report_set_free(&set);
    trk_progress_free(&prog);
out:
    trk_report_opts_free(&o);
    return rc;
}
