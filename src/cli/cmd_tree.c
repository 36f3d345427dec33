/* SPDX-License-Identifier: MIT
 *
 * cmd_tree.c - `tracker tree [options] FILE`: the call tree of a selection
 * (live at the peak by default), pruned below a share of the whole
 * (src/report/tree.c renders it). Owns the command's option table. Must
 * not: compute or format figures.
 */
#include <stddef.h>
#include <stdio.h>

#include "cli/cli.h"
#include "report/report.h"

struct tree {
    struct trk_tree_report_opts t;
    struct trk_report_opts ro;
};

static int kinds(void *base, const char *v, char *err, size_t errlen)
{
    struct tree *t = base;
    return trk_cli_leak_kinds("--kinds", v, &t->t.leak_kinds, err, errlen);
}

static const struct trk_cli_opt opts[] = {
    {"--threshold", 0, TRK_CLI_DOUBLE, offsetof(struct tree, t.threshold_pct), "PCT",
     "merge lines under PCT% of the whole into [other]\n(default 1.0; 0 keeps every line)",
     "a percentage from 0 to 100", .dmax = 100},
    {NULL, 'n', TRK_CLI_UINT, offsetof(struct tree, t.max_children), "N",
     "largest children shown under each line (default 20,\n"
     "0 = all); one line counts the rest",
     "a number of lines (0 = all)", .max = UINT32_MAX},
    {"--inverted", 0, TRK_CLI_FLAG, offsetof(struct tree, t.inverted),
     .help = "innermost frames at the root (who allocates)"},
    {"--kinds", 0, TRK_CLI_FN, 0, "LIST",
     "with --leaks: the leak kinds counted, as tracker leaks\n"
     "--kinds (default definite,indirect; all: every block\n"
     "still allocated at exit)",
     .fn = kinds},
    {0},
};

const struct trk_cli_cmd trk_tree_cmd = {
    .name = "tree",
    .operands = "[options] FILE",
    .brief = "call tree at the peak (or of --leaks, --temporary,\n--allocated)",
    .about = "  the call tree of the bytes live at the peak, with each line's share\n",
    TRK_CLI_ONE_CAPTURE,
    .tables = {opts, trk_cli_select_opts, trk_cli_json_opts, trk_cli_report_opts},
};

static int render(void *ctx, struct trk_report_set *sets, FILE *f, char *err, size_t errlen)
{
    struct tree *t = ctx;
    return trk_report_tree(&sets[0], &t->ro, &t->t, f, err, errlen);
}

int trk_cmd_tree(int argc, char **argv)
{
    struct tree t = {.t = {.select = TRK_SEL_PEAK,
                           .threshold_pct = 1.0,
                           .max_children = 20,
                           .leak_kinds = TRK_LEAK_SHOW_DEFAULT}};
    struct trk_report_job job = {.ro = &t.ro, .write = render, .ctx = &t};
    return trk_cli_report_main(&trk_tree_cmd, (void *[]){&t, &t.t.select, &t.ro, &t.ro}, argc, argv,
                               &job);
}
