/* SPDX-License-Identifier: MIT
 *
 * cmd_stats.c - `tracker stats [--json] FILE`: runs the stats analysis and
 * prints it (src/report/stats_render.c renders the table and the JSON).
 * Owns the options and the exit status. Must not: compute or format
 * figures, or exit non-zero for a merely truncated capture.
 */
#include <string.h>

#include "analysis/stats.h"
#include "cli/cli.h"
#include "report/report.h"

int trk_cmd_stats(int argc, char **argv)
{
    struct trk_stats_report_opts so = {.device = -1};
    bool no_more_options = false;
    const char *file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!no_more_options && strcmp(a, "--") == 0) {
            no_more_options = true;
        } else if (!no_more_options && strcmp(a, "--json") == 0) {
            so.json = true;
        } else if (!no_more_options && strcmp(a, "--no-progress") == 0) {
            /* Accepted as every report accepts it: stats draws no bar. */
        } else if (!no_more_options && strcmp(a, "--gpu") == 0) {
            so.gpu_only = true;
        } else if (!no_more_options && strcmp(a, "--device") == 0) {
            uint64_t n;
            if (i + 1 >= argc || trk_cli_parse_uint(argv[i + 1], 0, 1u << 20, &n) < 0) {
                trk_cli_error("stats: --device needs a device ordinal (0, 1, ...)");
                return TRK_EXIT_USAGE;
            }
            so.device = (int64_t)n;
            so.gpu_only = true;
            i++;
        } else if (!no_more_options && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
            trk_cli_usage(stdout);
            return TRK_EXIT_OK;
        } else if (!no_more_options && a[0] == '-' && a[1] != '\0') {
            return trk_cli_bad_option(a);
        } else if (file) {
            trk_cli_error("stats: expected one capture file, got '%s' and '%s'", file, a);
            return TRK_EXIT_USAGE;
        } else {
            file = a;
        }
    }
    if (!file) {
        trk_cli_error("stats: missing capture file (see 'tracker help')");
        return TRK_EXIT_USAGE;
    }

    struct trk_reader *r;
    char err[600];
    if (trk_reader_open(file, &r, err, sizeof(err)) < 0) {
        trk_cli_error("%s", err);
        return TRK_EXIT_FAIL;
    }
    struct trk_stats s;
    int rc = trk_stats_compute(r, &s);
    if (rc == -1)
        trk_cli_error("%s", trk_reader_error(r));
    else if (rc < 0)
        trk_cli_error("%s: out of memory", file);
    if (rc == 0)
        trk_report_stats(stdout, file, &s, &so);
    trk_stats_free(&s);
    trk_reader_close(r);
    if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
        trk_cli_error("stats: cannot write output");
        return TRK_EXIT_FAIL;
    }
    return rc == 0 ? TRK_EXIT_OK : TRK_EXIT_FAIL;
}
