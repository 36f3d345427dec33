/* SPDX-License-Identifier: MIT
 *
 * cmd_leaks.c - `tracker leaks [options] FILE`: what was never freed,
 * grouped by stack, valgrind-style (src/report/leaks.c renders it). Owns the
 * options, the suppressions file, usage text and the exit status, including
 * --fail-on-leak for CI. Must not: compute or format figures.
 */
#include <inttypes.h>
#include <string.h>

#include "cli/cli.h"
#include "report/report.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tracker leaks [options] FILE\n"
            "  what was still allocated at the end, grouped by stack, largest first\n"
            "  --fail-on-leak[=BYTES] exit 1 when more than BYTES leaked (default 0: any leak)\n"
            "  --suppressions FILE    hide leaks whose stack matches a 'leak:PATTERN' line\n"
            "                         (LeakSanitizer syntax: '*' wildcards, '^'/'$' anchors;\n"
            "                         matched against function, source file and module)\n"
            "%s",
            trk_report_common_help);
}

int trk_cmd_leaks(int argc, char **argv)
{
    struct trk_report_opts o;
    struct trk_progress prog;
    struct trk_report_set set = {0};
    struct trk_suppressions sup = {0};
    struct trk_leak_totals tot;
    bool no_more = false, fail_on_leak = false;
    uint64_t limit = 0;
    const char *file = NULL, *sup_path = NULL, *v;
    char err[1024];
    int rc = TRK_EXIT_USAGE, r;
    trk_report_opts_init(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (no_more || a[0] != '-' || a[1] == '\0') {
            if (file) {
                trk_cli_error("leaks: expected one capture file, got '%s' and '%s'", file, a);
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
                trk_cli_error("leaks: %s", err);
                goto out;
            }
        } else if (strcmp(a, "--fail-on-leak") == 0) {
            /* The value only attaches with '=': a separate word is FILE. */
            fail_on_leak = true;
            limit = 0;
        } else if (strncmp(a, "--fail-on-leak=", 15) == 0) {
            fail_on_leak = true;
            if (trk_cli_parse_uint(a + 15, 0, UINT64_MAX, &limit) < 0) {
                trk_cli_error("leaks: --fail-on-leak=BYTES needs a whole number of bytes");
                goto out;
            }
        } else if ((r = trk_report_opt_value(argc, argv, &i, "--suppressions", &v, err,
                                             sizeof(err))) != 0) {
            if (r < 0) {
                trk_cli_error("leaks: %s", err);
                goto out;
            }
            sup_path = v;
        } else {
            rc = trk_cli_bad_option(a);
            goto out;
        }
    }
    if (!file) {
        trk_cli_error("leaks: missing capture file (see 'tracker leaks --help')");
        goto out;
    }
    /* A bad suppressions file is a bad option value: refuse it before the
     * (possibly long) read of the capture. */
    if (sup_path && trk_suppressions_load(&sup, sup_path, err, sizeof(err)) < 0) {
        trk_cli_error("leaks: %s", err);
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
    if (lr < 0) {
        trk_cli_error("%s", err);
    } else if (trk_report_leaks(&set, &o, sup_path ? &sup : NULL, stdout, &tot, err, sizeof(err)) <
               0) {
        trk_cli_error("%s", err);
    } else if (fflush(stdout) != 0 || ferror(stdout)) {
        trk_cli_error("leaks: cannot write output");
    } else if (fail_on_leak && (tot.leaked_bytes > limit || (limit == 0 && tot.leaked_count > 0))) {
        trk_cli_error("leaks: %" PRIu64 " bytes leaked in %" PRIu64
                      " blocks, over the --fail-on-leak limit of %" PRIu64 " bytes",
                      tot.leaked_bytes, tot.leaked_count, limit);
    } else {
        rc = TRK_EXIT_OK;
    }
    trk_report_set_free(&set);
    trk_progress_free(&prog);
out:
    trk_suppressions_free(&sup);
    trk_report_opts_free(&o);
    return rc;
}
