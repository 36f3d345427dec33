/* SPDX-License-Identifier: MIT
 *
 * cmd_flamegraph.c - `tracker flamegraph [options] FILE`: one self-contained
 * HTML page with the flamegraph and the memory timeline of a capture (or of
 * its whole capture set). Owns the options, the usage text, the exit status
 * and the output file: never replaced without -f, never anything but a
 * regular file, written beside its target and moved into place so that a
 * failed run leaves no half page. Must not: compute figures or render the
 * page (src/report/flamegraph.c does).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "report/flamegraph.h"
#include "report/report.h"

static void usage(FILE *f)
{
    fputs("usage: tracker flamegraph [options] FILE\n"
          "\n"
          "Writes one HTML page (no network needed to view it) with the flamegraph of\n"
          "what the capture FILE recorded and its memory over time.\n"
          "\n"
          "options:\n"
          "  -o, --output OUT       the page (default: FILE with .bin replaced by .html;\n"
          "                         '-' for standard output)\n"
          "  -f, --force            replace OUT if it exists\n"
          "  --peak                 memory live at the heap peak (default)\n"
          "  --leaks                memory still allocated at exit\n"
          "  --temporary            temporary allocations (freed right after being made)\n"
          "  --allocated            everything allocated (size by bytes or by count in the page)\n"
          "  --inverted             allocating frames at the root (who allocates)\n"
          "  --threads              per-thread values and a thread filter in the page\n"
          "  --by-import            Python: each allocation under the imports open on its\n"
          "                         thread when it was made, as synthetic root frames\n"
          "                         (\"import torch\" > \"import torch.nn\" > its frames);\n"
          "                         allocations outside imports keep their plain stacks.\n"
          "                         The profile splits sites by import chain; not with\n"
          "                         --temporal\n"
          "  --temporal             pick a time range on the chart: what was live at its\n"
          "                         highest point, or allocated in it and not freed by its\n"
          "                         end (heap only; one capture; a second pass over FILE)\n"
          "  --threshold PCT        merge frames under PCT% of the whole into one \"other\"\n"
          "                         box per caller (default 0.01; raised if the page would\n"
          "                         pass the size budget)\n"
          "  --max-mb MB            size budget of the page (default 10)\n",
          f);
    const char *h = trk_report_common_help;
    while (*h) {
        const char *nl = strchr(h, '\n');
        size_t n = nl ? (size_t)(nl - h) + 1 : strlen(h);
        if (strncmp(h, "  --json", 8) != 0)
            fwrite(h, 1, n, f);
        h += n;
    }
}

struct opts {
    const char *file, *out;
    bool force;
    struct trk_flamegraph_opts fo;
    struct trk_report_opts ro;
};

/* Returns -1 to go on, else the exit code. */
static int parse(int argc, char **argv, struct opts *o)
{
    bool no_more = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        char err[256];
        int r;
        if (no_more || a[0] != '-' || a[1] == '\0') {
            if (o->file) {
                trk_cli_error("flamegraph takes one capture file ('%s' is a second)", a);
                return TRK_EXIT_USAGE;
            }
            o->file = a;
        } else if (strcmp(a, "--") == 0) {
            no_more = true;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return TRK_EXIT_OK;
        } else if ((r = trk_report_opt_value(argc, argv, &i, "--output", &v, err, sizeof(err))) !=
                       0 ||
                   (r = trk_report_opt_value(argc, argv, &i, "-o", &v, err, sizeof(err))) != 0) {
            if (r < 0 || !*v) {
                trk_cli_error("%s needs a file name ('-' for standard output)", a);
                return TRK_EXIT_USAGE;
            }
            o->out = v;
        } else if (strcmp(a, "-f") == 0 || strcmp(a, "--force") == 0) {
            o->force = true;
        } else if (strcmp(a, "--peak") == 0) {
            o->fo.select = TRK_SEL_PEAK;
        } else if (strcmp(a, "--leaks") == 0) {
            o->fo.select = TRK_SEL_LEAKS;
        } else if (strcmp(a, "--temporary") == 0) {
            o->fo.select = TRK_SEL_TEMPORARY;
        } else if (strcmp(a, "--allocated") == 0) {
            o->fo.select = TRK_SEL_ALLOCATED;
        } else if (strcmp(a, "--inverted") == 0) {
            o->fo.inverted = true;
        } else if (strcmp(a, "--threads") == 0) {
            o->fo.threads = true;
        } else if (strcmp(a, "--temporal") == 0) {
            o->fo.temporal = true;
        } else if (strcmp(a, "--by-import") == 0) {
            o->fo.by_import = true;
            o->ro.by_import = true;
        } else if ((r = trk_report_opt_value(argc, argv, &i, "--threshold", &v, err,
                                             sizeof(err))) != 0) {
            char *end = NULL;
            errno = 0;
            double pct = r > 0 ? strtod(v, &end) : NAN;
            if (r < 0 || errno || end == v || *end || !(pct >= 0 && pct <= 100)) {
                trk_cli_error("--threshold needs a percentage from 0 to 100");
                return TRK_EXIT_USAGE;
            }
            o->fo.threshold_pct = pct;
        } else if ((r = trk_report_opt_value(argc, argv, &i, "--max-mb", &v, err, sizeof(err))) !=
                   0) {
            char *end = NULL;
            errno = 0;
            double mb = r > 0 ? strtod(v, &end) : NAN;
            if (r < 0 || errno || end == v || *end || !(mb >= 0.05 && mb <= 1e6)) {
                trk_cli_error("--max-mb needs a size in megabytes, at least 0.05");
                return TRK_EXIT_USAGE;
            }
            o->fo.max_bytes = (size_t)(mb * 1e6);
        } else if ((r = trk_report_parse_common(&o->ro, argc, argv, &i, err, sizeof(err))) != 0) {
            if (r < 0) {
                trk_cli_error("%s", err);
                return TRK_EXIT_USAGE;
            }
            if (o->ro.json) {
                trk_cli_error("--json does not apply to flamegraph (the page embeds its data)");
                return TRK_EXIT_USAGE;
            }
        } else {
            return trk_cli_bad_option(a);
        }
    }
    if (!o->file) {
        trk_cli_error("flamegraph needs a capture file (see 'tracker flamegraph --help')");
        return TRK_EXIT_USAGE;
    }
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

/* ---- The output file ------------------------------------------------------------- */

/* Checks and opens the output before the (long) analysis. Returns 0, or -1
 * after saying why (a usage error: exit 2). */
static int out_open(struct trk_outfile *o)
{
    if (strcmp(o->path, "-") == 0) {
        o->f = stdout;
        o->is_stdout = true;
        return 0;
    }
    return trk_outfile_open(o);
}

static char *default_output(const char *file)
{
    size_t n = strlen(file);
    if (n > 4 && strcmp(file + n - 4, ".bin") == 0)
        n -= 4;
    char *s = malloc(n + 6);
    if (s)
        snprintf(s, n + 6, "%.*s.html", (int)n, file);
    return s;
}

int trk_cmd_flamegraph(int argc, char **argv)
{
    struct opts o = {.fo = {.select = TRK_SEL_PEAK, .threshold_pct = 0.01}};
    trk_report_opts_init(&o.ro);
    int rc = parse(argc, argv, &o);
    if (rc >= 0) {
        trk_report_opts_free(&o.ro);
        return rc;
    }
    struct trk_progress prog;
    trk_progress_init(&prog, !o.ro.no_progress);
    struct trk_report_set set = {0};
    struct trk_outfile out = {.path = o.out, .no_replace = !o.force};
    char *derived = NULL;
    char err[1024];
    rc = TRK_EXIT_FAIL;

    /* A capture that cannot be opened fails before any output exists. */
    struct trk_reader *probe;
    if (trk_reader_open(o.file, &probe, err, sizeof(err)) < 0) {
        trk_cli_error("%s", err);
        goto done;
    }
    trk_reader_close(probe);
    if (!out.path && !(out.path = derived = default_output(o.file))) {
        trk_cli_error("out of memory");
        goto done;
    }
    if (out_open(&out) < 0) {
        rc = TRK_EXIT_USAGE;
        goto done;
    }

    o.ro.progress = trk_progress_update;
    o.ro.progress_ctx = &prog;
    o.ro.warn = trk_progress_warn;
    o.ro.warn_ctx = &prog;
    int loaded = trk_report_set_load(&set, o.file, &o.ro, err, sizeof(err));
    trk_progress_clear(&prog);
    if (loaded < 0) {
        trk_cli_error("%s", err);
        trk_outfile_abort(&out);
        goto done;
    }
    struct trk_flamegraph_result res;
    if (trk_flamegraph_write(out.f, &set, &o.ro, &o.fo, &res, err, sizeof(err)) < 0) {
        trk_cli_error("flamegraph: %s", err);
        trk_outfile_abort(&out);
        goto done;
    }
    if (trk_outfile_commit(&out) < 0) {
        rc = TRK_EXIT_USAGE;
        goto done;
    }
    if (!out.is_stdout) {
        fprintf(stderr, "tracker: wrote %s (%.1f MB, %zu frame%s", out.path,
                (double)res.bytes / 1e6, res.nodes, res.nodes == 1 ? "" : "s");
        if (res.merged_frames)
            fprintf(stderr, "; %zu under %.3g%% merged into \"other\"", res.merged_frames,
                    res.threshold_pct);
        fputs(")\n", stderr);
    }
    rc = TRK_EXIT_OK;
done:
    trk_report_set_free(&set);
    trk_report_opts_free(&o.ro);
    trk_progress_free(&prog);
    free(derived);
    return rc;
}
