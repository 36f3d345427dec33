/* SPDX-License-Identifier: MIT
 *
 * cmd_imports.c - `tracker imports [options] FILE`: memory by Python import,
 * a tree like `python -X importtime` (src/report/imports.c renders it).
 * Owns the command's option table. Must not: compute or format figures.
 */
#include <stddef.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "report/imports.h"
#include "report/report.h"

struct imports {
    const char *file;
    struct trk_imports_report_opts io;
    struct trk_report_opts ro; /* --no-progress, and the progress hooks */
};

#define IO(field) offsetof(struct imports, io.field)

/* In enum trk_imports_sort's order. */
static const char *const sort_names[] = {
    "order", "self-alloc", "alloc", "self-live", "live", "self-time", "time", NULL,
};

static const struct trk_cli_opt opts[] = {
    {"--json", 0, TRK_CLI_FLAG, IO(json),
     .help = "machine-readable output: {\"imports\": [node...]}, each\n"
             "node {\"module\", \"allocated_bytes\", \"live_bytes\",\n"
             "\"cumulative_allocated_bytes\", \"cumulative_live_bytes\",\n"
             "\"children\": [...], ...}"},
    {"--all", 0, TRK_CLI_FLAG, IO(all), .help = "every capture of the run, a tree per process"},
    {"--min-bytes", 0, TRK_CLI_UINT, IO(min_bytes), "N",
     "leave out imports (with their nested ones) that\n"
     "allocated less than N bytes cumulatively (default 0)",
     "a whole number of bytes", .max = UINT64_MAX},
    {"--sort", 0, TRK_CLI_ENUM, IO(sort), "COLUMN",
     "order each import's nested ones (and the top level) by\n"
     "self-alloc, alloc, self-live, live, self-time or time,\n"
     "largest first (default: order, as imported)",
     "order, self-alloc, alloc, self-live, live, self-time or time", .names = sort_names},
    {"--no-progress", 0, TRK_CLI_FLAG, offsetof(struct imports, ro.no_progress),
     .help = "no progress bar on stderr"},
    {0},
};

const struct trk_cli_cmd trk_imports_cmd = {
    .name = "imports",
    .operands = "[options] FILE",
    .brief = "memory by Python import (python -X importtime-like)",
    .about = "  memory by Python import, in import order, nested as the modules imported\n"
             "  each other: what each import allocated itself (self) and with the imports\n"
             "  it made (cumulative), and how much of that was still live when it finished\n",
    .epilog = "Heap blocks count their requested bytes, anonymous mappings (pymalloc's\n"
              "arenas) whole pages; an import never finished is closed at the end.\n",
    TRK_CLI_ONE_CAPTURE,
    .tables = {opts},
};

/* The report reads its captures itself (its job has no files): it gets the
 * driver's progress hooks. */
static int render(void *ctx, struct trk_report_set *sets, FILE *f, char *err, size_t errlen)
{
    struct imports *m = ctx;
    (void)sets;
    m->io.progress = m->ro.progress;
    m->io.progress_ctx = m->ro.progress_ctx;
    m->io.warn = m->ro.warn;
    m->io.warn_ctx = m->ro.warn_ctx;
    return trk_report_imports(m->file, &m->io, f, err, errlen) != 0 ? -1 : 0;
}

int trk_cmd_imports(int argc, char **argv)
{
    struct imports m = {0};
    struct trk_cli_args args;
    trk_report_opts_init(&m.ro);
    int rc = trk_cli_parse(&trk_imports_cmd, (void *[]){&m}, argc, argv, &args);
    if (rc < 0) {
        m.io.all |= args.set;
        /* As every report: the run's file stands for its last exec'd image. */
        char *file = trk_cli_follow_capture(args.operands[0], m.io.all, stderr);
        m.file = file ? file : args.operands[0];
        struct trk_report_job job = {.cmd = "imports", .ro = &m.ro, .write = render, .ctx = &m};
        rc = trk_cli_report(&job);
        free(file);
    }
    trk_report_opts_free(&m.ro);
    return rc;
}
