/* SPDX-License-Identifier: MIT
 *
 * cmd_imports.c - `tracker imports [options] FILE`: memory by Python import,
 * a tree like `python -X importtime` (src/report/imports.c renders it).
 * Owns the options, usage text and exit status. Must not: compute or
 * format figures.
 */
#include <string.h>

#include "cli/cli.h"
#include "report/imports.h"
#include "report/report.h"

static void usage(FILE *f)
{
    fputs("usage: tracker imports [options] FILE\n"
          "  memory by Python import, in import order, nested as the modules imported\n"
          "  each other: what each import allocated itself (self) and with the imports\n"
          "  it made (cumulative), and how much of that was still live when it finished\n"
          "  --json                 machine-readable output: {\"imports\": [node...]}, each\n"
          "                         node {\"module\", \"allocated_bytes\", \"live_bytes\",\n"
          "                         \"cumulative_allocated_bytes\", \"cumulative_live_bytes\",\n"
          "                         \"children\": [...], ...}\n"
          "  --all                  every capture of the run, a tree per process\n"
          "  --min-bytes N          leave out imports (with their nested ones) that\n"
          "                         allocated less than N bytes cumulatively (default 0)\n"
          "  --no-progress          no progress bar on stderr\n"
          "Heap blocks count their requested bytes, anonymous mappings (pymalloc's\n"
          "arenas) whole pages; an import never finished is closed at the end.\n",
          f);
}

int trk_cmd_imports(int argc, char **argv)
{
    struct trk_imports_report_opts o = {0};
    struct trk_progress prog;
    bool no_more = false, no_progress = false;
    const char *file = NULL, *v;
    char err[1024];
    int r;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (no_more || a[0] != '-' || a[1] == '\0') {
            if (file) {
                trk_cli_error("imports: expected one capture file, got '%s' and '%s'", file, a);
                return TRK_EXIT_USAGE;
            }
            file = a;
        } else if (strcmp(a, "--") == 0) {
            no_more = true;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return TRK_EXIT_OK;
        } else if (strcmp(a, "--json") == 0) {
            o.json = true;
        } else if (strcmp(a, "--all") == 0) {
            o.all = true;
        } else if (strcmp(a, "--no-progress") == 0) {
            no_progress = true;
        } else if ((r = trk_report_opt_value(argc, argv, &i, "--min-bytes", &v, err,
                                             sizeof(err))) != 0) {
            if (r < 0 || trk_cli_parse_uint(v, 0, UINT64_MAX, &o.min_bytes) < 0) {
                trk_cli_error("imports: --min-bytes needs a whole number of bytes");
                return TRK_EXIT_USAGE;
            }
        } else {
            return trk_cli_bad_option(a);
        }
    }
    if (!file) {
        trk_cli_error("imports: missing capture file (see 'tracker imports --help')");
        return TRK_EXIT_USAGE;
    }
    trk_progress_init(&prog, !no_progress);
    o.progress = trk_progress_update;
    o.progress_ctx = &prog;
    o.warn = trk_progress_warn;
    o.warn_ctx = &prog;
    int rc = TRK_EXIT_FAIL;
    r = trk_report_imports(file, &o, stdout, err, sizeof(err));
    trk_progress_clear(&prog);
    if (r != 0)
        trk_cli_error("%s", err);
    else if (fflush(stdout) != 0 || ferror(stdout))
        trk_cli_error("imports: cannot write output");
    else
        rc = TRK_EXIT_OK;
    trk_progress_free(&prog);
    return rc;
}
