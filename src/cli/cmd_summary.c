/* SPDX-License-Identifier: MIT
 *
 * cmd_summary.c - `tracker summary [options] FILE`: the top source
 * locations by bytes live at the peak (src/report/summary.c renders them).
 * Owns the command's option table. Must not: compute or format figures.
 */
#include <stddef.h>

#include "cli/cli.h"
#include "report/report.h"

#define ROWS_UNSET UINT64_MAX /* -n not given: 20, in the table and in JSON */

struct summary {
    uint64_t rows;
    struct trk_report_opts ro;
};

static const struct trk_cli_opt opts[] = {
    {NULL, 'n', TRK_CLI_UINT, offsetof(struct summary, rows), "N",
     "rows to show (default 20, 0 = all); one line\n(--json: \"omitted\") sums the rest",
     "a number of rows (0 = all)", .max = UINT32_MAX},
    {0},
};

const struct trk_cli_cmd trk_summary_cmd = {
    .name = "summary",
    .operands = "[options] FILE",
    .brief = "top locations by bytes live at the peak",
    .about = "  the top locations by bytes live at the peak: own (innermost frame), total\n"
             "  (anywhere in the stack) and allocations made there\n",
    TRK_CLI_ONE_CAPTURE,
    .tables = {opts, trk_cli_json_opts, trk_cli_report_opts},
};

static int render(void *ctx, struct trk_report_set *sets, FILE *f, char *err, size_t errlen)
{
    struct summary *s = ctx;
    bool given = s->rows != ROWS_UNSET;
    return trk_report_summary(&sets[0], &s->ro, given ? s->rows : 20, given, f, err, errlen);
}

int trk_cmd_summary(int argc, char **argv)
{
    struct summary s = {.rows = ROWS_UNSET};
    struct trk_report_job job = {.ro = &s.ro, .write = render, .ctx = &s};
    return trk_cli_report_main(&trk_summary_cmd, (void *[]){&s, &s.ro, &s.ro}, argc, argv, &job);
}
