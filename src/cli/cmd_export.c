/* SPDX-License-Identifier: MIT
 *
 * cmd_export.c - `tracker export`: writes a selection of a capture (or of
 * its whole capture set) as pprof, speedscope, Chrome trace or folded
 * stacks. Owns its options and the output file: written beside the target
 * and renamed into place, so a failed export never leaves half a file, and
 * never over a capture it reads (nor, as for every output, through a
 * symlink or over an existing file without -f: outfile.c). Must not: render a format (src/report
 * export_*.c does), find or load captures (src/report/capture_set.c does)
 * or compute figures (src/analysis does).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/calltree.h"
#include "analysis/profile.h"
#include "cli/cli.h"
#include "report/export.h"
#include "report/report.h"
#include "symbol/symbolize.h"
#include "trk_config.h"

static const struct {
    const char *name;
    enum trk_export_format fmt;
    const char *ext; /* default output: the capture's name with this instead of .bin */
} formats[] = {
    {"pprof", TRK_EXPORT_PPROF, ".pb.gz"},
    {"speedscope", TRK_EXPORT_SPEEDSCOPE, ".speedscope.json"},
    {"chrome-trace", TRK_EXPORT_CHROME, ".trace.json"},
    {"folded", TRK_EXPORT_FOLDED, ".folded"},
};

static void usage(FILE *f)
{
    fputs("usage: tracker export --format FORMAT [options] FILE\n"
          "\n"
          "Writes a selection of what the capture FILE recorded in a format other\n"
          "tools load.\n"
          "\n"
          "formats:\n"
          "  pprof          gzipped profile.proto (go tool pprof, pprof UIs)\n"
          "  speedscope     speedscope JSON (https://www.speedscope.app)\n"
          "  chrome-trace   Trace Event JSON: memory over time (Perfetto, chrome://tracing)\n"
          "  folded         folded stacks, one 'a;b;c BYTES' line per stack (flamegraph.pl)\n"
          "\n"
          "options:\n"
          "  -o, --output OUT       output file, '-' for standard output (default: FILE\n"
          "                         with .bin replaced by .pb.gz, .speedscope.json,\n"
          "                         .trace.json or .folded)\n"
          "  -f, --force            replace OUT if it exists (a regular file; a symlink is\n"
          "                         replaced itself, never followed)\n"
          "  --peak                 memory live at the heap peak (default)\n"
          "  --leaks                memory still allocated at exit\n"
          "  --temporary            temporary allocations (freed right after being made)\n"
          "  --allocated            everything allocated\n"
          "  --inverted             folded, speedscope: innermost frame first (bottom-up)\n",
          f);
    /* The options every report command shares, but --json: each format
     * here is its own machine-readable output. */
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
    int fmt; /* index into formats, -1 = not given */
    enum trk_select select;
    bool inverted;
    const char *out, *file;
    bool force;
    struct trk_report_opts ro;
};

/* Returns -1 to go on, else the exit code. */
static int parse(int argc, char **argv, struct opts *o)
{
    o->fmt = -1;
    o->select = TRK_SEL_PEAK;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        char err[256];
        int r;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return TRK_EXIT_OK;
        }
        if ((r = trk_report_opt_value(argc, argv, &i, "--format", &val, err, sizeof(err))) != 0) {
            if (r < 0) {
                trk_cli_error("--format needs a value: pprof, speedscope, chrome-trace or folded");
                return TRK_EXIT_USAGE;
            }
            o->fmt = -1;
            for (size_t k = 0; k < sizeof(formats) / sizeof(formats[0]); k++)
                if (strcmp(val, formats[k].name) == 0)
                    o->fmt = (int)k;
            if (o->fmt < 0) {
                trk_cli_error("unknown format '%s' (pprof, speedscope, chrome-trace, folded)", val);
                return TRK_EXIT_USAGE;
            }
        } else if ((r = trk_report_opt_value(argc, argv, &i, "--output", &val, err, sizeof(err))) !=
                       0 ||
                   (r = trk_report_opt_value(argc, argv, &i, "-o", &val, err, sizeof(err))) != 0) {
            if (r < 0 || !*val) {
                trk_cli_error("%s needs a file name ('-' for standard output)", a);
                return TRK_EXIT_USAGE;
            }
            o->out = val;
        } else if (strcmp(a, "--peak") == 0) {
            o->select = TRK_SEL_PEAK;
        } else if (strcmp(a, "--leaks") == 0) {
            o->select = TRK_SEL_LEAKS;
        } else if (strcmp(a, "--temporary") == 0) {
            o->select = TRK_SEL_TEMPORARY;
        } else if (strcmp(a, "--allocated") == 0) {
            o->select = TRK_SEL_ALLOCATED;
        } else if (strcmp(a, "--inverted") == 0) {
            o->inverted = true;
        } else if (strcmp(a, "-f") == 0 || strcmp(a, "--force") == 0) {
            o->force = true;
        } else if ((r = trk_report_parse_common(&o->ro, argc, argv, &i, err, sizeof(err))) != 0) {
            if (r < 0) {
                trk_cli_error("%s", err);
                return TRK_EXIT_USAGE;
            }
            if (o->ro.json) {
                trk_cli_error("--json does not apply to export (use --format)");
                return TRK_EXIT_USAGE;
            }
        } else if (strcmp(a, "--") == 0 && i + 1 < argc && !o->file) {
            o->file = argv[++i];
        } else if (a[0] == '-' && a[1] != '\0') {
            return trk_cli_bad_option(a);
        } else if (!o->file) {
            o->file = a;
        } else {
            trk_cli_error("export takes one capture file ('%s' is a second)", a);
            return TRK_EXIT_USAGE;
        }
    }
    if (o->fmt < 0) {
        trk_cli_error("export needs --format pprof|speedscope|chrome-trace|folded");
        return TRK_EXIT_USAGE;
    }
    if (!o->file) {
        trk_cli_error("export needs a capture file (see 'tracker export --help')");
        return TRK_EXIT_USAGE;
    }
    enum trk_export_format f = formats[o->fmt].fmt;
    if (o->inverted && f != TRK_EXPORT_FOLDED && f != TRK_EXPORT_SPEEDSCOPE) {
        trk_cli_error("--inverted applies to folded and speedscope only (%s viewers invert "
                      "on their own)",
                      formats[o->fmt].name);
        return TRK_EXIT_USAGE;
    }
    return -1;
}

/* ---- output ------------------------------------------------------------------- */

/* Whether path names the same file as capture (an export must never
 * replace what it reads). */
static bool is_capture(const char *path, const char *capture)
{
    struct stat a, b;
    return stat(path, &a) == 0 && stat(capture, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* Opens the output before any work, so an unwritable one fails at once.
 * Returns 0, or -1 after printing why. */
static int out_open(struct trk_outfile *o, enum trk_export_format fmt, const char *capture)
{
    if (strcmp(o->path, "-") == 0) {
        if (fmt == TRK_EXPORT_PPROF && isatty(STDOUT_FILENO)) {
            trk_cli_error("refusing to write gzipped pprof data to a terminal (use -o FILE "
                          "or a pipe)");
            return -1;
        }
        o->f = stdout;
        o->is_stdout = true;
        return 0;
    }
    if (is_capture(o->path, capture)) {
        trk_cli_error("refusing to overwrite the capture '%s' with the export", capture);
        return -1;
    }
    /* run's rule (outfile.c): never through a symlink or into a FIFO or
     * device, which a shared directory may hold under the default name. */
    return trk_outfile_open(o);
}

/* ---- the export ---------------------------------------------------------------- */

/* argv joined by spaces, as recorded: the JSON formats escape whatever it
 * holds, and viewers show it as the profile's and the process's name. */
static char *join_argv(const struct trk_reader_info *in)
{
    size_t len = 1;
    for (int i = 0; i < in->argc; i++)
        len += strlen(in->argv[i]) + 1;
    char *s = malloc(len), *p = s;
    if (!s)
        return NULL;
    *p = '\0';
    for (int i = 0; i < in->argc; i++)
        p += sprintf(p, "%s%s", i ? " " : "", in->argv[i]);
    return s;
}

static char *default_output(const char *file, const char *ext)
{
    size_t n = strlen(file);
    if (n > 4 && strcmp(file + n - 4, ".bin") == 0)
        n -= 4;
    size_t len = n + strlen(ext) + 1;
    char *s = malloc(len);
    if (s)
        snprintf(s, len, "%.*s%s", (int)n, file, ext);
    return s;
}

int trk_cmd_export(int argc, char **argv)
{
    struct opts o = {0};
    trk_report_opts_init(&o.ro);
    struct trk_report_set set = {0};
    struct trk_export_capture *xc = NULL;
    char **commands = NULL;
    char *derived = NULL;
    struct trk_outfile out = {0};
    char err[1024];

    int rc = parse(argc, argv, &o);
    if (rc >= 0) {
        trk_report_opts_free(&o.ro);
        return rc;
    }
    struct trk_progress prog;
    trk_progress_init(&prog, !o.ro.no_progress);
    rc = TRK_EXIT_FAIL;
    enum trk_export_format fmt = formats[o.fmt].fmt;

    /* A capture that cannot be opened fails before any output exists. */
    struct trk_reader *probe;
    if (trk_reader_open(o.file, &probe, err, sizeof(err)) < 0) {
        trk_cli_error("%s", err);
        goto done;
    }
    trk_reader_close(probe);

    out.path = o.out;
    out.no_replace = !o.force;
    if (!out.path) {
        derived = default_output(o.file, formats[o.fmt].ext);
        if (!derived)
            goto oom;
        out.path = derived;
    }
    /* Before the (long) analysis: an unwritable output fails at once. */
    if (out_open(&out, fmt, o.file) < 0) {
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
        goto fail;
    }
    xc = calloc(set.n, sizeof(*xc));
    commands = calloc(set.n, sizeof(*commands));
    if (!xc || !commands)
        goto oom;
    for (size_t i = 0; i < set.n; i++) {
        struct trk_report_capture *c = &set.v[i];
        if (!out.is_stdout && is_capture(out.path, c->path)) {
            trk_cli_error("refusing to overwrite the capture '%s' with the export", c->path);
            rc = TRK_EXIT_USAGE;
            goto fail;
        }
        const struct trk_reader_status *rs = trk_reader_status(c->r);
        if (rs->truncated)
            trk_cli_error("warning: %s is truncated; the export covers what was written", c->path);
        if (rs->checksum_failures || rs->bad_chunks || rs->broken_streams || rs->missing_chunks)
            trk_cli_error("warning: %s is damaged (corrupt or missing chunks); the export covers "
                          "what could be read",
                          c->path);
        const struct trk_reader_info *in = trk_reader_info(c->r);
        xc[i] = (struct trk_export_capture){.reader = c->r,
                                            .profile = &c->prof,
                                            .sym = c->sym,
                                            .pid = in->pid,
                                            .command = commands[i] = join_argv(in),
                                            .label = set.n > 1 ? c->label : NULL};
        if (!commands[i])
            goto oom;
    }

    uint32_t spaces = trk_report_spaces(&o.ro);
    char exporter[64];
    snprintf(exporter, sizeof(exporter), "tracker %s", TRK_VERSION);
    struct trk_export x = {.caps = xc,
                           .ncaps = set.n,
                           .inverted = o.inverted,
                           .select = o.select,
                           .spaces = spaces,
                           .frames = trk_report_frames(&o.ro),
                           .name = xc[0].command,
                           .exporter = exporter};

    int wr = trk_export_write(out.f, fmt, &x, err, sizeof(err));
    if (wr < 0) {
        /* pprof reports a failed write as a compression error: name the
         * output's own error when there is one. */
        if (ferror(out.f)) {
            trk_cli_error("cannot write '%s': %s", out.is_stdout ? "standard output" : out.path,
                          strerror(errno ? errno : EIO));
            rc = TRK_EXIT_USAGE;
        } else {
            trk_cli_error("export failed: %s", err);
        }
        goto fail;
    }
    if (trk_outfile_commit(&out) < 0) {
        rc = TRK_EXIT_USAGE;
        goto done;
    }
    if (derived)
        fprintf(stderr, "tracker: wrote %s\n", derived);
    rc = TRK_EXIT_OK;
    goto done;
oom:
    trk_cli_error("out of memory");
fail:
    trk_outfile_abort(&out);
done:
    for (size_t i = 0; commands && i < set.n; i++)
        free(commands[i]);
    free(commands);
    trk_report_set_free(&set);
    trk_report_opts_free(&o.ro);
    trk_progress_free(&prog);
    free(xc);
    free(derived);
    return rc;
}
