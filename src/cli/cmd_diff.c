/* SPDX-License-Identifier: MIT
 *
 * cmd_diff.c - `tracker diff [options] BEFORE AFTER`: per stack, how the
 * bytes live at the peak and the bytes leaked changed between two captures
 * (src/report/diff.c computes and renders it). Owns the command's option
 * table. Must not: compute or format figures.
 */
#include <stddef.h>

#include "cli/cli.h"
#include "report/report.h"

struct diff {
    uint64_t rows;
    struct trk_report_opts ro;
};

static const struct trk_cli_opt opts[] = {
    {NULL, 'n', TRK_CLI_UINT, offsetof(struct diff, rows), "N",
     "stacks to show, largest change first (default 20,\n"
     "0 = all); one line (--json: a last row with\n\"omitted\": N) sums the rest",
     "a number of stacks (0 = all)", .max = UINT32_MAX},
    {0},
};

const struct trk_cli_cmd trk_diff_cmd = {
    .name = "diff",
    .operands = "[options] BEFORE AFTER",
    .brief = "per-stack change of peak and leaked bytes",
    .about = "  per stack (matched by function, file, line and module, not by address),\n"
             "  the change of bytes live at the peak and of bytes leaked\n",
    .what = "two capture files, BEFORE and AFTER",
    .min_operands = 2,
    .max_operands = 2,
    .tables = {opts, trk_cli_json_opts, trk_cli_report_opts},
};

static int render(void *ctx, struct trk_report_set *sets, FILE *f, char *err, size_t errlen)
{
    struct diff *d = ctx;
    return trk_report_diff(&sets[0], &sets[1], &d->ro, d->rows, f, err, errlen);
}

int trk_cmd_diff(int argc, char **argv)
{
    struct diff d = {.rows = 20};
    struct trk_report_job job = {.ro = &d.ro, .write = render, .ctx = &d};
    return trk_cli_report_main(&trk_diff_cmd, (void *[]){&d, &d.ro, &d.ro}, argc, argv, &job);
}
