/* SPDX-License-Identifier: MIT
 *
 * cmd_export.c - `tracker export`: writes a selection of a capture (or of
 * its whole capture set) as pprof, speedscope, Chrome trace or folded
 * stacks. Owns its option table; the output file (moved into place
 * complete, never over a capture it reads, through a symlink or over an
 * existing file without -f) is the report driver's and outfile.c's. Must
 * not: render a format (src/report export_*.c does), find or load captures
 * (src/report/capture_set.c does) or compute figures (src/analysis does).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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

/* formats' names, in order, for --format. */
static const char *const format_names[] = {"pprof", "speedscope", "chrome-trace", "folded", NULL};
_Static_assert(sizeof(formats) / sizeof(formats[0]) + 1 ==
                   sizeof(format_names) / sizeof(format_names[0]),
               "a name per format");

struct opts {
    int fmt; /* index into formats, -1 = not given */
    enum trk_select select;
    bool inverted;
    const char *out;
    bool force;
    struct trk_outfile *outfile;
    struct trk_report_opts ro;
};

static const struct trk_cli_opt opts[] = {
    {"--format", 0, TRK_CLI_ENUM, offsetof(struct opts, fmt), "FORMAT",
     "pprof, speedscope, chrome-trace or folded (above)", .names = format_names},
    {"--output", 'o', TRK_CLI_STRING, offsetof(struct opts, out), "OUT",
     "output file, '-' for standard output (default: FILE\n"
     "with .bin replaced by .pb.gz, .speedscope.json,\n"
     ".trace.json or .folded)",
     "a file name ('-' for standard output)"},
    {"--force", 'f', TRK_CLI_FLAG, offsetof(struct opts, force),
     .help = "replace OUT if it exists (a regular file; a symlink is\n"
             "replaced itself, never followed)"},
    {"--inverted", 0, TRK_CLI_FLAG, offsetof(struct opts, inverted),
     .help = "folded, speedscope: innermost frame first (bottom-up)"},
    /* Each format here is its own machine-readable output. */
    {"--json", 0, TRK_CLI_REFUSE, .what = "does not apply (use --format)"},
    {0},
};

const struct trk_cli_cmd trk_export_cmd = {
    .name = "export",
    .operands = "--format FORMAT [options] FILE",
    .brief = "pprof, speedscope, chrome-trace or folded stacks\n"
             "(-o OUT|-, --peak|--leaks|--temporary|--allocated)",
    .about = "\n"
             "Writes a selection of what the capture FILE recorded in a format other\n"
             "tools load.\n"
             "\n"
             "formats:\n"
             "  pprof          gzipped profile.proto (go tool pprof, pprof UIs)\n"
             "  speedscope     speedscope JSON (https://www.speedscope.app)\n"
             "  chrome-trace   Trace Event JSON: memory over time (Perfetto, chrome://tracing)\n"
             "  folded         folded stacks, one 'a;b;c BYTES' line per stack (flamegraph.pl)\n"
             "\n"
             "options:\n",
    TRK_CLI_ONE_CAPTURE,
    .tables = {opts, trk_cli_select_opts, trk_cli_report_opts},
};

/* Returns -1 to go on, else the exit code. */
static int parse(int argc, char **argv, struct opts *o, const char **file)
{
    struct trk_cli_args args;
    o->fmt = -1;
    o->select = TRK_SEL_PEAK;
    int rc = trk_cli_parse(&trk_export_cmd, (void *[]){o, &o->select, &o->ro}, argc, argv, &args);
    if (rc >= 0)
        return rc;
    *file = args.operands[0];
    o->ro.all |= args.set;
    if (o->fmt < 0) {
        trk_cli_error("export needs --format pprof|speedscope|chrome-trace|folded");
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

/* The job's write: the set as the chosen format to f. Returns 0, or an exit
 * code after printing why. */
static int render(void *ctx, struct trk_report_set *sets, FILE *f, char *err, size_t errlen)
{
    const struct opts o = *(const struct opts *)ctx;
    const struct trk_report_set set = sets[0];
    const struct trk_outfile out = *o.outfile;
    struct trk_export_capture *xc = NULL;
    char **commands = NULL;
    int rc = TRK_EXIT_FAIL;
    enum trk_export_format fmt = formats[o.fmt].fmt;

    xc = calloc(set.n, sizeof(*xc));
    commands = calloc(set.n, sizeof(*commands));
    if (!xc || !commands)
        goto oom;
    for (size_t i = 0; i < set.n; i++) {
        struct trk_report_capture *c = &set.v[i];
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

    int wr = trk_export_write(f, fmt, &x, err, errlen);
    if (wr < 0) {
        /* pprof reports a failed write as a compression error: name the
         * output's own error when there is one. */
        if (ferror(f)) {
            trk_cli_error("cannot write '%s': %s", out.is_stdout ? "standard output" : out.path,
                          strerror(errno ? errno : EIO));
            rc = TRK_EXIT_USAGE;
        } else {
            trk_cli_error("export failed: %s", err);
        }
        goto done;
    }
    rc = TRK_EXIT_OK;
    goto done;
oom:
    trk_cli_error("out of memory");
done:
    for (size_t i = 0; commands && i < set.n; i++)
        free(commands[i]);
    free(commands);
    free(xc);
    return rc;
}

int trk_cmd_export(int argc, char **argv)
{
    struct opts o = {0};
    const char *file = NULL;
    trk_report_opts_init(&o.ro);
    int rc = parse(argc, argv, &o, &file);
    if (rc < 0) {
        struct trk_outfile out = {.path = o.out, .no_replace = !o.force};
        struct trk_report_job job = {.cmd = "export",
                                     .ro = &o.ro,
                                     .files = {file},
                                     .nfiles = 1,
                                     .out = &out,
                                     .out_ext = formats[o.fmt].ext,
                                     .binary = formats[o.fmt].fmt == TRK_EXPORT_PPROF,
                                     .write = render,
                                     .ctx = &o};
        o.outfile = &out;
        rc = trk_cli_report(&job);
        if (rc == TRK_EXIT_OK && job.derived)
            fprintf(stderr, "tracker: wrote %s\n", job.derived);
        free(job.derived);
    }
    trk_report_opts_free(&o.ro);
    return rc;
}
