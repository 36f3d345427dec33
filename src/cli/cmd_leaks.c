/* SPDX-License-Identifier: MIT
 *
 * cmd_leaks.c - `tracker leaks [options] FILE`: what was never freed,
 * grouped by stack, valgrind-style (src/report/leaks.c renders it). Owns
 * the option table, the suppressions file and the exit status, including
 * --fail-on-leak for CI. Must not: compute or format figures.
 */
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "cli/cli.h"
#include "report/report.h"

struct leaks {
    bool fail_on_leak;
    bool no_default_sup, print_sup;
    bool show_reachable;
    bool kinds_set, fail_kinds_set;
    unsigned kinds, fail_kinds; /* bit 1 << TRK_LEAK_*; bit 0: not classified */
    struct trk_leak_select sel;
    uint64_t limit;
    uint64_t rows; /* -n: groups shown, 0 = all */
    const char *sup_path;
    struct trk_suppressions sup;
    struct trk_leak_totals tot;
    struct trk_report_opts ro;
    bool unusable; /* a capture of the run cannot vouch for its leaks */
    char unusable_why[600];
};

/* The value attaches with '=', or is the next word when that reads as a
 * size and is not an existing file (TRK_CLI_SIZE_NEXT): otherwise the next
 * word is FILE. */
static int fail_on_leak(void *base, const char *v, char *err, size_t errlen)
{
    struct leaks *l = base;
    l->fail_on_leak = true;
    l->limit = 0;
    if (v && trk_cli_parse_size(v, &l->limit) < 0) {
        snprintf(err, errlen,
                 "--fail-on-leak needs a number of bytes (1000, 512K, 1M, 2G), not '%s'", v);
        return -1;
    }
    return 0;
}

static int kinds(void *base, const char *v, char *err, size_t errlen)
{
    struct leaks *l = base;
    l->kinds_set = true;
    return trk_cli_leak_kinds("--kinds", v, &l->kinds, err, errlen);
}

static int fail_kinds(void *base, const char *v, char *err, size_t errlen)
{
    struct leaks *l = base;
    l->fail_kinds_set = true;
    return trk_cli_leak_kinds("--fail-on-kinds", v, &l->fail_kinds, err, errlen);
}

static const struct trk_cli_opt opts[] = {
    {NULL, 'n', TRK_CLI_UINT, offsetof(struct leaks, rows), "N",
     "stacks to show, largest first (default 20, 0 = all);\n"
     "one line (--json: a last entry with \"omitted\": N)\nsums the rest",
     "a number of stacks (0 = all)", .max = UINT32_MAX},
    {"--fail-on-leak", 0, TRK_CLI_FN, 0, "BYTES",
     "exit 1 when more than BYTES leaked (default 0: any\n"
     "leak) in any capture of the run (forked and exec'd\n"
     "children too), or when a capture is truncated, damaged\n"
     "or empty; BYTES may end in K, M, G (1K = 1024); a\n"
     "separate word is BYTES only if it is a size and not a file",
     .fn = fail_on_leak, .flags = TRK_CLI_EQ_ONLY | TRK_CLI_SIZE_NEXT},
    {"--kinds", 0, TRK_CLI_FN, 0, "LIST",
     "leak kinds to list (valgrind's): definite, indirect,\n"
     "possible, reachable, unclassified, all (default:\n"
     "definite,indirect; blocks of a capture without a\n"
     "leak scan are 'unclassified' and listed by default)",
     .fn = kinds},
    {"--show-reachable", 0, TRK_CLI_FLAG, offsetof(struct leaks, show_reachable),
     .help = "list every kind (--kinds all)"},
    {"--fail-on-kinds", 0, TRK_CLI_FN, 0, "LIST",
     "kinds --fail-on-leak counts at the process's exit\n"
     "(default: definite,indirect; every block of a capture\n"
     "without a leak scan)",
     .fn = fail_kinds},
    {"--at-exit", 0, TRK_CLI_FLAG, offsetof(struct leaks, sel.at_exit),
     .help = "Python: leaks at the process's exit, classified,\n"
             "not what was live at the script's end"},
    {"--suppressions", 0, TRK_CLI_STRING, offsetof(struct leaks, sup_path), "FILE",
     "hide leaks whose stack matches a 'leak:PATTERN' line\n"
     "(LeakSanitizer syntax: '*' wildcards, '^'/'$' anchors;\n"
     "matched against function, source file and module)",
     "a file name"},
    {"--no-default-suppressions", 0, TRK_CLI_FLAG, offsetof(struct leaks, no_default_sup), NULL,
     "report libc's, the loader's and libstdc++'s one-time\n"
     "state too (stdio buffers, locale data, ...)"},
    {"--print-suppressions", 0, TRK_CLI_FLAG, offsetof(struct leaks, print_sup), NULL,
     "print the default suppressions and exit (no FILE)"},
    {0},
};

const struct trk_cli_cmd trk_leaks_cmd = {
    .name = "leaks",
    .operands = "[options] FILE",
    .brief = "unfreed blocks by stack (--fail-on-leak for CI)",
    .about = "  what was still allocated at the end, grouped by stack, largest first\n",
    TRK_CLI_ONE_CAPTURE,
    .tables = {opts, trk_cli_json_opts, trk_cli_report_opts},
};

static int render(void *ctx, struct trk_report_set *sets, FILE *f, char *err, size_t errlen)
{
    struct leaks *l = ctx;
    if (l->fail_on_leak)
        l->unusable = !trk_leak_gate_usable(&sets[0], l->unusable_why, sizeof(l->unusable_why));
    return trk_report_leaks_sel(&sets[0], &l->ro, &l->sel, &l->sup, l->rows, f, &l->tot, err,
                                errlen);
}

static int leaks(struct leaks *l, const char *file)
{
    char err[1024];
    /* A bad suppressions file is a bad option value: refuse it before the
     * (possibly long) read of the capture. */
    if (l->sup_path && trk_suppressions_load(&l->sup, l->sup_path, err, sizeof(err)) < 0) {
        trk_cli_error("leaks: %s", err);
        return TRK_EXIT_USAGE;
    }
    /* After the file's lines: a user's own pattern gets the credit when
     * both would hide a stack. */
    if (!l->no_default_sup && trk_suppressions_add_defaults(&l->sup) < 0) {
        trk_cli_error("leaks: out of memory");
        return TRK_EXIT_FAIL;
    }
    struct trk_report_job job = {
        .cmd = "leaks", .ro = &l->ro, .files = {file}, .nfiles = 1, .write = render, .ctx = l};
    l->sel.show = l->show_reachable ? TRK_LEAK_SHOW_ALL
                  : l->kinds_set    ? l->kinds
                                    : TRK_LEAK_SHOW_DEFAULT;
    int rc = trk_cli_report(&job);
    if (rc == TRK_EXIT_OK && l->fail_on_leak && l->unusable) {
        trk_cli_error("leaks: --fail-on-leak cannot pass: %s", l->unusable_why);
        return TRK_EXIT_FAIL;
    }
    /* The gate counts definitely and indirectly lost by default, like
     * valgrind's --errors-for-leak-kinds, and every block of a capture
     * that has no leak scan (an old one: what it always counted); a block
     * live at exit but not classified (inherited at fork: its parent's
     * capture judges it) only when asked. */
    unsigned fk = TRK_LEAK_FAIL_DEFAULT;
    if (l->fail_kinds_set) /* 'unclassified' is both kinds of it */
        fk = l->fail_kinds | (l->fail_kinds & 1u ? 1u << TRK_LEAK_UNSCANNED : 0);
    uint64_t bytes = 0, count = 0;
    for (unsigned k = 0; k <= TRK_LEAK_UNSCANNED; k++) {
        if (!(fk & (1u << k)))
            continue;
        bytes += l->tot.gate_bytes[k];
        count += l->tot.gate_count[k];
    }
    if (rc == TRK_EXIT_OK && l->fail_on_leak &&
        (bytes > l->limit || (l->limit == 0 && count > 0))) {
        trk_cli_error("leaks: %" PRIu64 " bytes leaked in %" PRIu64
                      " blocks, over the --fail-on-leak limit of %" PRIu64 " bytes",
                      bytes, count, l->limit);
        rc = TRK_EXIT_FAIL;
    }
    return rc;
}

int trk_cmd_leaks(int argc, char **argv)
{
    struct leaks l = {.rows = 20};
    struct trk_cli_args args;
    /* --print-suppressions needs no FILE: answered before the parser,
     * which would ask for one. */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--print-suppressions") == 0) {
            trk_suppressions_print_defaults(stdout);
            return fflush(stdout) == 0 ? TRK_EXIT_OK : TRK_EXIT_FAIL;
        }
    trk_report_opts_init(&l.ro);
    int rc = trk_cli_parse(&trk_leaks_cmd, (void *[]){&l, &l.ro, &l.ro}, argc, argv, &args);
    if (rc < 0) {
        /* A gate judges the whole run: a forked or exec'd child's leak
         * fails it as the first process's does. */
        l.ro.all |= args.set || l.fail_on_leak;
        rc = leaks(&l, args.operands[0]);
    }
    trk_suppressions_free(&l.sup);
    trk_report_opts_free(&l.ro);
    return rc;
}
