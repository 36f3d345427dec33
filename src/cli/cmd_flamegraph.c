/* SPDX-License-Identifier: MIT
 *
 * cmd_flamegraph.c - `tracker flamegraph [options] FILE`: one self-contained
 * HTML page with the flamegraph and the memory timeline of a capture (or of
 * its whole capture set). Owns the option table and the summary line; the
 * output file (never replaced without -f, never anything but a regular
 * file, moved into place complete) is the report driver's. Must not:
 * compute figures or render the page (src/report/flamegraph.c does).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "report/flamegraph.h"
#include "report/report.h"

struct opts {
    const char *out;
    bool force;
    struct trk_flamegraph_opts fo;
    struct trk_report_opts ro;
    struct trk_flamegraph_result res;
};

#define FO(field) offsetof(struct opts, fo.field)

static int max_mb(void *base, const char *v, char *err, size_t errlen)
{
    struct opts *o = base;
    char *end = NULL;
    errno = 0;
    double mb = strtod(v, &end);
    if (errno || end == v || *end || !(mb >= 0.05 && mb <= 1e6)) {
        snprintf(err, errlen, "--max-mb needs a size in megabytes, at least 0.05");
        return -1;
    }
    o->fo.max_bytes = (size_t)(mb * 1e6);
    return 0;
}

static int kinds(void *base, const char *v, char *err, size_t errlen)
{
    struct opts *o = base;
    return trk_cli_leak_kinds("--kinds", v, &o->fo.leak_kinds, err, errlen);
}

static const struct trk_cli_opt opts[] = {
    {"--output", 'o', TRK_CLI_STRING, offsetof(struct opts, out), "OUT",
     "the page (default: FILE with .bin replaced by .html;\n'-' for standard output)",
     "a file name ('-' for standard output)"},
    {"--force", 'f', TRK_CLI_FLAG, offsetof(struct opts, force),
     .help = "replace OUT if it exists"},
    {"--inverted", 0, TRK_CLI_FLAG, FO(inverted),
     .help = "allocating frames at the root (who allocates)"},
    {"--threads", 0, TRK_CLI_FLAG, FO(threads),
     .help = "per-thread values and a thread filter in the page"},
    {"--by-import", 0, TRK_CLI_FLAG, FO(by_import),
     .help = "Python: each allocation under the imports open on its\n"
             "thread when it was made, as synthetic root frames\n"
             "(\"import torch\" > \"import torch.nn\" > its frames);\n"
             "allocations outside imports keep their plain stacks.\n"
             "The profile splits sites by import chain; not with\n"
             "--temporal"},
    {"--temporal", 0, TRK_CLI_FLAG, FO(temporal),
     .help = "pick a time range on the chart: what was live at its\n"
             "highest point, or allocated in it and not freed by its\n"
             "end (heap only; one capture; a second pass over FILE)"},
    {"--threshold", 0, TRK_CLI_DOUBLE, FO(threshold_pct), "PCT",
     "merge frames under PCT% of the whole into one \"other\"\n"
     "box per caller (default 0.01; raised if the page would\n"
     "pass the size budget)",
     "a percentage from 0 to 100", .dmax = 100},
    {"--max-mb", 0, TRK_CLI_FN, 0, "MB", "size budget of the page (default 10)", .fn = max_mb},
    {"--kinds", 0, TRK_CLI_FN, 0, "LIST",
     "with --leaks: the leak kinds counted, as tracker leaks\n"
     "--kinds (default definite,indirect; all: every block\n"
     "still allocated at exit)",
     .fn = kinds},
    /* The page embeds its data. */
    {"--json", 0, TRK_CLI_REFUSE, .what = "does not apply (the page embeds its data)"},
    {0},
};

const struct trk_cli_cmd trk_flamegraph_cmd = {
    .name = "flamegraph",
    .operands = "[options] FILE",
    .brief = "HTML page: flamegraph and memory timeline (-o OUT)",
    .about = "\n"
             "Writes one HTML page (no network needed to view it) with the flamegraph of\n"
             "what the capture FILE recorded and its memory over time.\n"
             "\n"
             "options:\n",
    TRK_CLI_ONE_CAPTURE,
    .tables = {opts, trk_cli_select_opts, trk_cli_report_opts},
};

/* Returns -1 to go on, else the exit code. */
static int parse(int argc, char **argv, struct opts *o, const char **file)
{
    struct trk_cli_args args;
    int rc =
        trk_cli_parse(&trk_flamegraph_cmd, (void *[]){o, &o->fo.select, &o->ro}, argc, argv, &args);
    if (rc >= 0)
        return rc;
    *file = args.operands[0];
    o->ro.all |= args.set;
    o->ro.by_import = o->fo.by_import;
    if (o->fo.temporal) {
        /* --by-import splits sites by import chain; the temporal pass finds
         * a block's site by (stack, thread) alone. */
        const char *why = o->fo.select == TRK_SEL_TEMPORARY ? "--temporary"
                          : o->ro.all                       ? "--all"
                          : o->ro.mmap                      ? "--mmap"
                          : o->ro.gpu                       ? "--gpu or --device"
                          : o->fo.by_import                 ? "--by-import"
                                                            : NULL;
        if (why) {
            trk_cli_error("--temporal covers the heap of one capture; it does not go with %s", why);
            return TRK_EXIT_USAGE;
        }
    }
    return -1;
}

static int render(void *ctx, struct trk_report_set *sets, FILE *f, char *err, size_t errlen)
{
    struct opts *o = ctx;
    char msg[1024];
    if (trk_flamegraph_write(f, &sets[0], &o->ro, &o->fo, &o->res, msg, sizeof(msg)) < 0) {
        snprintf(err, errlen, "flamegraph: %s", msg);
        return -1;
    }
    return 0;
}

int trk_cmd_flamegraph(int argc, char **argv)
{
    struct opts o = {
        .fo = {.select = TRK_SEL_PEAK, .threshold_pct = 0.01, .leak_kinds = TRK_LEAK_SHOW_DEFAULT}};
    const char *file = NULL;
    trk_report_opts_init(&o.ro);
    int rc = parse(argc, argv, &o, &file);
    if (rc >= 0) {
        trk_report_opts_free(&o.ro);
        return rc;
    }
    struct trk_outfile out = {.path = o.out, .no_replace = !o.force};
    struct trk_report_job job = {.cmd = "flamegraph",
                                 .ro = &o.ro,
                                 .files = {file},
                                 .nfiles = 1,
                                 .out = &out,
                                 .out_ext = ".html",
                                 .write = render,
                                 .ctx = &o};
    rc = trk_cli_report(&job);
    const struct trk_flamegraph_result *res = &o.res;
    if (rc == TRK_EXIT_OK && !out.is_stdout) {
        fprintf(stderr, "tracker: wrote %s (%.1f MB, %zu frame%s", out.path,
                (double)res->bytes / 1e6, res->nodes, res->nodes == 1 ? "" : "s");
        if (res->merged_frames)
            fprintf(stderr, "; %zu under %.3g%% merged into \"other\"", res->merged_frames,
                    res->threshold_pct);
        fputs(")\n", stderr);
    }
    free(job.derived);
    trk_report_opts_free(&o.ro);
    return rc;
}
