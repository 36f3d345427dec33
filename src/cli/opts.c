/* SPDX-License-Identifier: MIT
 *
 * opts.c - the one option parser of the `tracker` commands and the help
 * text generated from the same tables (cli.h, struct trk_cli_opt), plus the
 * tables every report command shares. Owns the spelling rules (--name
 * VALUE, --name=VALUE, -xVALUE, clustered flags, "--") and the wording of
 * usage errors, so that every command spells and checks alike. Must not:
 * know a command's meaning (its table and its cmd_*.c file do).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "report/report.h"

int trk_cli_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int trk_cli_leak_kinds(const char *opt, const char *v, unsigned *out, char *err, size_t errlen)
{
    if (trk_leak_kinds_parse(v, out) == 0)
        return 0;
    snprintf(err, errlen,
             "%s needs a list of definite, indirect, possible, reachable,\n"
             "unclassified, all, none; not '%s'",
             opt, v);
    return -1;
}

int trk_cli_parse_size(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    unsigned shift = 0;
    if (*end) {
        const char *u = strchr("KMGT", end[0] & ~0x20); /* either case */
        if (!u || !end[0])
            return -1;
        shift = 10u * (unsigned)(u - "KMGT" + 1);
        end++;
        /* 1K, 1KB, 1KiB: all binary, as sizes of memory are. */
        if (strcmp(end, "") != 0 && strcmp(end, "B") != 0 && strcmp(end, "b") != 0 &&
            strcmp(end, "iB") != 0)
            return -1;
    }
    if (shift && v > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

/* ---- Parsing ------------------------------------------------------------------ */

static bool opt_end(const struct trk_cli_opt *o)
{
    return !o->name && !o->short_name;
}

/* Whether o takes a value (when given with '=' only, for TRK_CLI_EQ_ONLY). */
static bool takes_value(const struct trk_cli_opt *o)
{
    return o->meta && o->arg != TRK_CLI_FLAG && o->arg != TRK_CLI_SET && o->arg != TRK_CLI_STOP &&
           o->arg != TRK_CLI_REFUSE;
}

/* The first definition of a long name (len bytes) or of a short one. */
static const struct trk_cli_opt *find(const struct trk_cli_cmd *c, const char *name, size_t len,
                                      char sh, int *table)
{
    for (int k = 0; k < TRK_CLI_TABLES && c->tables[k]; k++)
        for (const struct trk_cli_opt *o = c->tables[k]; !opt_end(o); o++)
            if (name ? o->name && strlen(o->name) == len && strncmp(o->name, name, len) == 0
                     : o->short_name && o->short_name == sh) {
                *table = k;
                return o;
            }
    return NULL;
}

/* Whether an earlier entry defines o's spelling (then o is neither parsed
 * nor shown). */
static bool shadowed(const struct trk_cli_cmd *c, const struct trk_cli_opt *o)
{
    int k;
    const struct trk_cli_opt *first =
        o->name ? find(c, o->name, strlen(o->name), 0, &k) : find(c, NULL, 0, o->short_name, &k);
    return first != o;
}

static void spelling(const struct trk_cli_opt *o, char *buf, size_t len)
{
    if (o->name)
        snprintf(buf, len, "%s", o->name);
    else
        snprintf(buf, len, "-%c", o->short_name);
}

/* What a value of o must be, for errors. */
static void wanted(const struct trk_cli_opt *o, char *buf, size_t len)
{
    if (o->what) {
        snprintf(buf, len, "%s", o->what);
    } else if (o->arg == TRK_CLI_UINT) {
        if (o->max == UINT64_MAX)
            snprintf(buf, len, "a whole number >= %" PRIu64, o->min);
        else
            snprintf(buf, len, "a whole number from %" PRIu64 " to %" PRIu64, o->min, o->max);
    } else if (o->arg == TRK_CLI_DOUBLE) {
        snprintf(buf, len, "a number from %g to %g", o->dmin, o->dmax);
    } else if (o->arg == TRK_CLI_ENUM) {
        size_t n = (size_t)snprintf(buf, len, "one of");
        for (size_t i = 0; o->names[i] && n < len; i++)
            n += (size_t)snprintf(buf + n, len - n, "%s %s", i ? "," : "", o->names[i]);
    } else {
        snprintf(buf, len, "a value");
    }
}

static int bad_value(const struct trk_cli_cmd *c, const struct trk_cli_opt *o, const char *v)
{
    char sp[64], w[200];
    spelling(o, sp, sizeof(sp));
    wanted(o, w, sizeof(w));
    if (v)
        trk_cli_error("%s: %s needs %s, not '%s'", c->name, sp, w, v);
    else
        trk_cli_error("%s: %s needs %s", c->name, sp, w);
    return TRK_EXIT_USAGE;
}

static int bad_option(const struct trk_cli_cmd *c, const char *opt)
{
    trk_cli_error("%s: unknown option '%s' (see 'tracker %s --help')", c->name, opt, c->name);
    return TRK_EXIT_USAGE;
}

/* Stores value v (NULL for a flag) of o into base. Returns -1, or an exit
 * code after printing why. */
static int apply(const struct trk_cli_cmd *c, const struct trk_cli_opt *o, void *base,
                 const char *v)
{
    char *field = (char *)base + o->off;
    char err[300];
    switch (o->arg) {
    case TRK_CLI_FLAG:
        *(bool *)field = true;
        return -1;
    case TRK_CLI_SET:
    case TRK_CLI_STOP:
        *(int *)field = o->val;
        return -1;
    case TRK_CLI_UINT:
        if (trk_cli_parse_uint(v, o->min, o->max, (uint64_t *)field) < 0)
            return bad_value(c, o, v);
        return -1;
    case TRK_CLI_DOUBLE: {
        char *end;
        errno = 0;
        double d = strtod(v, &end);
        if (errno || end == v || *end || !isfinite(d) || !(d >= o->dmin && d <= o->dmax))
            return bad_value(c, o, v);
        *(double *)field = d;
        return -1;
    }
    case TRK_CLI_STRING:
        if (!*v)
            return bad_value(c, o, NULL);
        *(const char **)field = v;
        return -1;
    case TRK_CLI_ENUM:
        for (int i = 0; o->names[i]; i++)
            if (strcmp(v, o->names[i]) == 0) {
                *(int *)field = i;
                return -1;
            }
        return bad_value(c, o, v);
    case TRK_CLI_FN:
        if (o->fn(base, v, err, sizeof(err)) < 0) {
            trk_cli_error("%s: %s", c->name, err);
            return TRK_EXIT_USAGE;
        }
        return -1;
    case TRK_CLI_REFUSE:
        spelling(o, err, sizeof(err));
        trk_cli_error("%s: %s %s", c->name, err, o->what);
        return TRK_EXIT_USAGE;
    }
    return -1;
}

/* "--name", "--name=VALUE" or "--name VALUE" at argv[*i]. */
static int parse_long(const struct trk_cli_cmd *c, void *const *bases, int argc, char **argv,
                      int *i)
{
    const char *a = argv[*i], *eq = strchr(a, '=');
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
    int k;
    const struct trk_cli_opt *o = find(c, a, len, 0, &k);
    if (!o)
        return bad_option(c, a);
    const char *v = eq ? eq + 1 : NULL;
    if (!takes_value(o)) {
        if (v) {
            trk_cli_error("%s: option '%.*s' takes no value", c->name, (int)len, a);
            return TRK_EXIT_USAGE;
        }
    } else if (!v && !(o->flags & TRK_CLI_EQ_ONLY)) {
        if (*i + 1 >= argc)
            return bad_value(c, o, NULL);
        v = argv[++*i];
    } else if (!v && (o->flags & TRK_CLI_SIZE_NEXT) && *i + 1 < argc) {
        /* "--fail-on-leak 1000 FILE": the next word is the value when it
         * reads as a size and names no file; otherwise it is an operand
         * (a capture called "4096" stays a capture). */
        uint64_t size;
        const char *next = argv[*i + 1];
        if (trk_cli_parse_size(next, &size) == 0 && access(next, F_OK) != 0)
            v = argv[++*i];
    }
    return apply(c, o, bases[k], v);
}

/* "-x", "-xy" (flags), "-xVALUE", "-x=VALUE" or "-x VALUE" at argv[*i].
 * Sets *stop when an option ended the command's options. */
static int parse_short(const struct trk_cli_cmd *c, void *const *bases, int argc, char **argv,
                       int *i, bool *stop)
{
    for (const char *p = argv[*i] + 1; *p; p++) {
        int k;
        const struct trk_cli_opt *o = find(c, NULL, 0, *p, &k);
        if (!o) {
            if (*p == 'h') {
                trk_cli_help(c, stdout);
                return TRK_EXIT_OK;
            }
            char bad[3] = {'-', *p, '\0'};
            return bad_option(c, bad);
        }
        if (!takes_value(o)) {
            int rc = apply(c, o, bases[k], NULL);
            if (rc >= 0)
                return rc;
            if (o->arg == TRK_CLI_STOP) {
                *stop = true;
                return -1;
            }
            continue;
        }
        const char *v = p[1] == '=' ? p + 2 : p[1] ? p + 1 : NULL;
        if (!v) {
            if (*i + 1 >= argc)
                return bad_value(c, o, NULL);
            v = argv[++*i];
        }
        return apply(c, o, bases[k], v);
    }
    return -1;
}

/* Several captures of one run (`tracker summary out.*.bin`): they stand for
 * the run's root read as with --all. The root lives until exit (a report
 * runs once per process). Returns -1 to go on, else the exit code. */
static int capture_set(const struct trk_cli_cmd *c, char **argv, struct trk_cli_args *out)
{
    static char *root;
    char err[2200];
    free(root);
    root = trk_cli_set_root_of((const char *const *)argv + 1, out->noperands, err, sizeof(err));
    if (!root) {
        trk_cli_error("%s: %s", c->name, err);
        return TRK_EXIT_USAGE;
    }
    out->operands[0] = root;
    out->operands[1] = NULL;
    out->noperands = 1;
    out->set = true;
    return -1;
}

int trk_cli_parse(const struct trk_cli_cmd *c, void *const *bases, int argc, char **argv,
                  struct trk_cli_args *out)
{
    bool no_more = false;
    memset(out, 0, sizeof(*out));
    out->rest = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (no_more || a[0] != '-' || a[1] == '\0') {
            if (c->stop_at_operand) {
                out->rest = i;
                break;
            }
            if (out->noperands == c->max_operands && !c->capture_set) {
                trk_cli_error("%s: expected %s; '%s' is one too many", c->name, c->what, a);
                return TRK_EXIT_USAGE;
            }
            /* Every operand is also gathered at argv[1..], over slots
             * already read (an operand's slot is at or after its index). */
            if (out->noperands < 2)
                out->operands[out->noperands] = a;
            argv[1 + out->noperands++] = (char *)a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            no_more = true;
            continue;
        }
        if (strcmp(a, "--help") == 0) {
            trk_cli_help(c, stdout);
            return TRK_EXIT_OK;
        }
        bool stop = false;
        int rc = a[1] == '-' ? parse_long(c, bases, argc, argv, &i)
                             : parse_short(c, bases, argc, argv, &i, &stop);
        if (rc >= 0)
            return rc;
        if (stop) {
            out->rest = i + 1;
            return -1;
        }
    }
    bool missing = c->stop_at_operand ? c->min_operands > 0 && out->rest >= argc
                                      : out->noperands < c->min_operands;
    if (missing) {
        trk_cli_error("%s: expected %s (see 'tracker %s --help')", c->name, c->what, c->name);
        return TRK_EXIT_USAGE;
    }
    if (c->capture_set && out->noperands > 1)
        return capture_set(c, argv, out);
    return -1;
}

/* ---- Help --------------------------------------------------------------------- */

/* text at column col, its later lines ('\n') indented as much; the first
 * line starts after prefix (printed at indent), or on a line of its own
 * when prefix reaches the column. */
static void help_row(FILE *f, int indent, int col, const char *prefix, const char *text)
{
    int w = fprintf(f, "%*s%s", indent, "", prefix);
    if (w + 1 > col) {
        fputc('\n', f);
        w = 0;
    }
    for (const char *t = text;;) {
        const char *nl = strchr(t, '\n');
        size_t n = nl ? (size_t)(nl - t) : strlen(t);
        fprintf(f, "%*s%.*s\n", col - w, "", (int)n, t);
        w = 0;
        if (!nl || !nl[1])
            break;
        t = nl + 1;
    }
}

static void print_opts(const struct trk_cli_cmd *c, FILE *f, int indent, int col)
{
    for (int k = 0; k < TRK_CLI_TABLES && c->tables[k]; k++)
        for (const struct trk_cli_opt *o = c->tables[k]; !opt_end(o); o++) {
            if (!o->help || shadowed(c, o))
                continue;
            char label[96];
            size_t n = 0;
            if (o->short_name)
                n += (size_t)snprintf(label, sizeof(label), "-%c%s", o->short_name,
                                      o->name ? ", " : "");
            if (o->name)
                n += (size_t)snprintf(label + n, sizeof(label) - n, "%s", o->name);
            if (o->meta && n < sizeof(label))
                snprintf(label + n, sizeof(label) - n,
                         o->flags & TRK_CLI_SIZE_NEXT ? " [%s]"
                         : o->flags & TRK_CLI_EQ_ONLY ? "[=%s]"
                                                      : " %s",
                         o->meta);
            help_row(f, indent, col, label, o->help);
        }
}

/* The operands as usage lines show them: a command that reads several
 * captures of one run (capture_set) takes "FILE..." where its table says
 * FILE, so the usage cannot drift from what the parser accepts. */
static const char *operands_text(const struct trk_cli_cmd *c, char *buf, size_t len)
{
    size_t n = strlen(c->operands);
    if (!c->capture_set || n < 4 || strcmp(c->operands + n - 4, "FILE") != 0)
        return c->operands;
    snprintf(buf, len, "%s...", c->operands);
    return buf;
}

void trk_cli_help(const struct trk_cli_cmd *c, FILE *f)
{
    char ops[160];
    fprintf(f, "usage: tracker %s %s\n", c->name, operands_text(c, ops, sizeof(ops)));
    if (c->about)
        fputs(c->about, f);
    print_opts(c, f, 2, 25);
    if (c->epilog)
        fputs(c->epilog, f);
}

/* One command in the global usage: "  name operands", its brief, and with
 * show_in_usage its options. */
void trk_cli_usage_entry(const struct trk_cli_cmd *c, FILE *f)
{
    char head[160], ops[160];
    snprintf(head, sizeof(head), "%s %s", c->name, operands_text(c, ops, sizeof(ops)));
    help_row(f, 2, 25, head, c->brief);
    if (c->show_in_usage)
        print_opts(c, f, 6, 26);
}

/* ---- The options every report command shares ------------------------------------ */

#define RO(field) offsetof(struct trk_report_opts, field)

static int debug_dir(void *base, const char *v, char *err, size_t errlen)
{
    struct trk_report_opts *o = base;
    if (!*v) {
        snprintf(err, errlen, "--debug-dir needs a directory");
        return -1;
    }
    const char **d = realloc(o->debug_dirs, (o->ndebug_dirs + 1) * sizeof(*d));
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    d[o->ndebug_dirs++] = v;
    o->debug_dirs = d;
    return 0;
}

static int device(void *base, const char *v, char *err, size_t errlen)
{
    struct trk_report_opts *o = base;
    uint64_t d;
    if (trk_cli_parse_uint(v, 0, TRK_GPU_DEVICES_MAX - 1, &d) < 0) {
        snprintf(err, errlen, "--device: '%s' is not a device ordinal (0 to %d)", v,
                 TRK_GPU_DEVICES_MAX - 1);
        return -1;
    }
    o->gpu = true;
    o->device = (int32_t)d;
    return 0;
}

static int temp_ms(void *base, const char *v, char *err, size_t errlen)
{
    struct trk_report_opts *o = base;
    char *end;
    errno = 0;
    double ms = strtod(v, &end);
    /* A day is far beyond any sensible "temporary"; it also keeps the
     * nanosecond product well inside 64 bits. */
    if (errno || end == v || *end || !isfinite(ms) || ms <= 0 || ms > 86400e3) {
        snprintf(err, errlen, "--temp-ms: '%s' is not a positive number of milliseconds", v);
        return -1;
    }
    o->temp_ns = (uint64_t)(ms * 1e6);
    if (o->temp_ns == 0)
        o->temp_ns = 1;
    return 0;
}

const struct trk_cli_opt trk_cli_json_opts[] = {
    {"--json", 0, TRK_CLI_FLAG, RO(json), .help = "machine-readable output"},
    {0},
};

const struct trk_cli_opt trk_cli_report_opts[] = {
    {"--all", 0, TRK_CLI_FLAG, RO(all),
     .help = "every capture of the run (FILE's <stem>.<pid>.bin siblings)"},
    {"--debug-dir", 0, TRK_CLI_FN, 0, "DIR", "also look for debug info under DIR (repeatable)",
     "a directory", .fn = debug_dir},
    {"--mmap", 0, TRK_CLI_FLAG, RO(mmap), .help = "count anonymous mappings beside the heap"},
    {"--gpu", 0, TRK_CLI_FLAG, RO(gpu),
     .help = "GPU memory of every device instead of host memory"},
    {"--device", 0, TRK_CLI_FN, 0, "N", "GPU memory of device N only", "a device ordinal",
     .fn = device},
    {"--no-driver-host", 0, TRK_CLI_FLAG, RO(no_driver_host),
     .help = "leave out host memory the GPU driver allocated itself"},
    {"--keep-allocator-frames", 0, TRK_CLI_FLAG, RO(keep_allocator_frames),
     .help = "keep the allocators' frames (malloc, operator new, jemalloc,\n"
             "the CUDA/HIP runtimes and drivers, PyTorch's allocators)\n"
             "and the tracker's"},
    {"--native", 0, TRK_CLI_FLAG, RO(native),
     .help = "hybrid Python stacks: the native frames under and between\n"
             "Python frames too (by default a stack with Python frames\n"
             "shows only those: the Python line owns the bytes)"},
    {"--python-internals", 0, TRK_CLI_FLAG, RO(python_internals),
     .help = "keep the interpreter's own frames in Python stacks\n"
             "(implies --native)"},
    {"--hide-imports", 0, TRK_CLI_FLAG, RO(hide_imports),
     .help = "hide importlib's frames in Python stacks"},
    {"--temp-allocs", 0, TRK_CLI_UINT, RO(temp_allocs), "N",
     "temporary = freed before N more allocations on its thread\n(default 1)", .min = 1,
     .max = UINT32_MAX},
    {"--temp-ms", 0, TRK_CLI_FN, 0, "T", "temporary = freed within T milliseconds",
     "a positive number of milliseconds", .fn = temp_ms},
    {"--no-progress", 0, TRK_CLI_FLAG, RO(no_progress), .help = "no progress bar on stderr"},
    {0},
};

/* The selection is an enum trk_select stored through an int. */
_Static_assert(sizeof(enum trk_select) == sizeof(int), "--peak and friends store an int");

const struct trk_cli_opt trk_cli_select_opts[] = {
    {"--peak", 0, TRK_CLI_SET, 0, .val = TRK_SEL_PEAK,
     .help = "memory live at the heap peak (default)"},
    {"--leaks", 0, TRK_CLI_SET, 0, .val = TRK_SEL_LEAKS, .help = "memory still allocated at exit"},
    {"--temporary", 0, TRK_CLI_SET, 0, .val = TRK_SEL_TEMPORARY,
     .help = "temporary allocations (freed right after being made)"},
    {"--allocated", 0, TRK_CLI_SET, 0, .val = TRK_SEL_ALLOCATED, .help = "everything allocated"},
    {0},
};
