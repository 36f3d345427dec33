/* SPDX-License-Identifier: MIT
 *
 * cli.h - declarations shared by the files of the `tracker` command: the
 * subcommands and small helpers. Must not be used outside src/cli.
 */
#ifndef TRK_CLI_H
#define TRK_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes shared by every subcommand. */
#define TRK_EXIT_OK       0
#define TRK_EXIT_FAIL     1   /* the command ran but failed (bad capture, ...) */
#define TRK_EXIT_USAGE    2   /* bad option, value or output file */
#define TRK_EXIT_NOTFOUND 127 /* the program to run cannot be executed */

/* Subcommands: argv[0] is the subcommand name. Each returns the exit code. */
int trk_cmd_run(int argc, char **argv);
int trk_cmd_stats(int argc, char **argv);
int trk_cmd_summary(int argc, char **argv);
int trk_cmd_tree(int argc, char **argv);
int trk_cmd_leaks(int argc, char **argv);
int trk_cmd_export(int argc, char **argv);
int trk_cmd_flamegraph(int argc, char **argv);
int trk_cmd_diff(int argc, char **argv);
int trk_cmd_imports(int argc, char **argv);

/* ---- Option tables (opts.c) ---------------------------------------------------
 * Every command describes its options as tables of struct trk_cli_opt; one
 * parser reads argv against them and the help text (the command's --help
 * and the global usage) is generated from the same tables, so an option's
 * spelling, checks and help cannot drift apart. Spelling rules, the same for
 * every command: "--name VALUE" or "--name=VALUE"; "-x VALUE", "-xVALUE" or
 * "-x=VALUE"; flags cluster ("-fq"); "--" ends the options; "-" is an
 * operand (standard input or output). */

enum trk_cli_arg {
    TRK_CLI_FLAG,   /* bool at off := true */
    TRK_CLI_SET,    /* int at off := val: one of several flags choosing a value */
    TRK_CLI_UINT,   /* uint64_t at off, a whole number from min to max (counts, sizes) */
    TRK_CLI_DOUBLE, /* double at off, from dmin to dmax */
    TRK_CLI_STRING, /* const char * at off; never empty */
    TRK_CLI_ENUM,   /* int at off := index of the value in names[] */
    TRK_CLI_FN,     /* fn(base, value) checks and stores (value NULL: a flag) */
    TRK_CLI_STOP,   /* int at off := argv index; the rest of argv is not ours */
    TRK_CLI_REFUSE, /* accepted spelling, refused with what (hides a shared option) */
};

/* A value of the option may be given only attached with '=' (the option is
 * also a flag: --fail-on-leak[=BYTES]). */
#define TRK_CLI_EQ_ONLY 1u
/* With TRK_CLI_EQ_ONLY: the next word is taken as the value too, when it
 * parses as a size (trk_cli_parse_size) and is not an existing file (then
 * it is an operand): --fail-on-leak 1000 FILE, --fail-on-leak FILE. */
#define TRK_CLI_SIZE_NEXT 2u

struct trk_cli_opt {
    const char *name; /* "--depth", or NULL with a short name only */
    char short_name;  /* 'o', or 0 */
    enum trk_cli_arg arg;
    size_t off;               /* offsetof the field in the section's base */
    const char *meta;         /* the value in help ("N", "FILE"); NULL: a flag */
    const char *help;         /* help text ('\n' breaks lines); NULL: accepted, not shown */
    const char *what;         /* what a bad value is told it needs; NULL: from the range */
    uint64_t min, max;        /* TRK_CLI_UINT */
    double dmin, dmax;        /* TRK_CLI_DOUBLE */
    int val;                  /* TRK_CLI_SET */
    const char *const *names; /* TRK_CLI_ENUM, NULL-terminated */
    /* TRK_CLI_FN: returns 0, or -1 with a message in err. */
    int (*fn)(void *base, const char *value, char *err, size_t errlen);
    unsigned flags;
};

/* The operands of a command that reads one capture, or several captures of
 * one run (the shell's `<stem>.*.bin`): those stand for the run's root
 * capture read as with --all (struct trk_cli_args, set). */
#define TRK_CLI_ONE_CAPTURE                                                                        \
    .what = "one capture file", .min_operands = 1, .max_operands = 1, .capture_set = true

/* A table ends with an entry whose name and short_name are both empty. A
 * command has up to TRK_CLI_TABLES tables, each with its own base struct
 * at parse time; where two define one spelling, the first one wins (in
 * parsing and in help). */
#define TRK_CLI_TABLES 4

struct trk_cli_cmd {
    const char *name;     /* "summary" */
    const char *operands; /* "[options] FILE", after the name in usage lines */
    const char *brief;    /* one line for the global usage */
    const char *about;    /* --help: after the usage line, before the options */
    const char *epilog;   /* --help: after the options; may be NULL */
    const char *what;     /* the operands, for errors: "one capture file" */
    int min_operands, max_operands;
    bool stop_at_operand; /* options end at the first operand (run: the program) */
    bool show_in_usage;   /* the global usage lists its options in full */
    bool capture_set;     /* several operands: captures of one run (TRK_CLI_ONE_CAPTURE) */
    const struct trk_cli_opt *tables[TRK_CLI_TABLES];
};

/* What trk_cli_parse found besides the options. */
struct trk_cli_args {
    const char *operands[2];
    int noperands;
    int rest; /* with stop_at_operand: argv index of the first operand, else argc */
    /* capture_set and several operands: operands[0] is their run's root
     * capture, to be read as with --all (every capture of the run). */
    bool set;
};

/* Parses argv (argv[0] is the command name) against c's tables, storing
 * into bases[k] for c->tables[k]. Returns -1 to go on, or the exit code:
 * TRK_EXIT_OK after printing --help, TRK_EXIT_USAGE after a one-line error. */
int trk_cli_parse(const struct trk_cli_cmd *c, void *const *bases, int argc, char **argv,
                  struct trk_cli_args *out);
/* c's --help text. */
void trk_cli_help(const struct trk_cli_cmd *c, FILE *f);
/* The usage of `tracker` itself, from every command's table (main.c), and
 * one command's entry in it. */
void trk_cli_usage(FILE *f);
void trk_cli_usage_entry(const struct trk_cli_cmd *c, FILE *f);

/* The command specs, for main.c's usage. */
extern const struct trk_cli_cmd trk_run_cmd, trk_stats_cmd, trk_summary_cmd, trk_tree_cmd,
    trk_leaks_cmd, trk_export_cmd, trk_flamegraph_cmd, trk_diff_cmd, trk_imports_cmd;

/* Tables every report command shares, for struct trk_report_opts (opts.c):
 * --json; the rest (--all, --debug-dir, --mmap, --gpu, ...). */
extern const struct trk_cli_opt trk_cli_json_opts[];
extern const struct trk_cli_opt trk_cli_report_opts[];
/* --peak, --leaks, --temporary, --allocated for an enum trk_select. */
extern const struct trk_cli_opt trk_cli_select_opts[];

/* A report's output: standard output, or a temporary file beside path that
 * trk_outfile_commit moves onto it (outfile.c). */
struct trk_outfile {
    const char *path;
    FILE *f;
    char *tmp; /* temporary beside path while writing, else NULL */
    bool is_stdout;
    bool no_replace; /* commit fails rather than replace an existing path */
};

/* Creates o->tmp beside o->path and opens it as o->f. Returns 0, or -1
 * after printing why. */
int trk_outfile_open_tmp(struct trk_outfile *o);
/* The output rule of every command that writes a file (the same as `run`'s):
 * refuses an existing o->path when no_replace (no -f), and one that is not a
 * regular file or a symlink even with -f; then trk_outfile_open_tmp. */
int trk_outfile_open(struct trk_outfile *o);
/* Flushes, closes and moves the output into place. Returns 0, or -1 after
 * printing why (the temporary is removed). */
int trk_outfile_commit(struct trk_outfile *o);
/* Discards a failed output. */
void trk_outfile_abort(struct trk_outfile *o);
/* The output of a report: '-' is standard output (refused on a terminal
 * when binary), anything else goes through trk_outfile_open, and never over
 * the capture it reads. Returns 0, or -1 after printing why. */
int trk_outfile_open_report(struct trk_outfile *o, const char *capture, bool binary);
/* Whether path names the same file as capture. */
bool trk_outfile_is_capture(const char *path, const char *capture);
/* The default output beside a capture: its name with ".bin" replaced by ext
 * (malloc'd; NULL when memory ran out). */
char *trk_outfile_default(const char *capture, const char *ext);

/* ---- The report driver (report_driver.c) ---------------------------------------
 * The tail every report command shares: progress bar and warnings, the
 * capture set(s) loaded, the report written, the output flushed or moved
 * into place, everything freed. */
struct trk_report_set;
struct trk_report_opts;
struct trk_report_job {
    const char *cmd;            /* for "CMD: cannot write output" */
    struct trk_report_opts *ro; /* its progress and warn hooks are set here */
    const char *files[2];       /* a capture set is loaded for each */
    size_t nfiles;              /* 0: write loads on its own (with ro's hooks) */
    struct trk_outfile *out;    /* NULL: standard output */
    const char *out_ext;        /* out->path NULL: the default name's ending */
    bool binary;                /* out is binary: not to a terminal */
    char *derived;              /* set: the default output name; the caller frees it */
    /* Writes the report of sets (nfiles of them) to f. Returns 0; -1 with a
     * message in err; or an exit code after printing why. */
    int (*write)(void *ctx, struct trk_report_set *sets, FILE *f, char *err, size_t errlen);
    void *ctx;
};
/* Runs job; returns the command's exit code. */
int trk_cli_report(struct trk_report_job *job);
/* A whole report command whose operands are its capture files: initializes
 * job->ro, parses argv against c (bases as for trk_cli_parse), runs job on
 * the operands and frees job->ro. Returns the exit code. */
int trk_cli_report_main(const struct trk_cli_cmd *c, void *const *bases, int argc, char **argv,
                        struct trk_report_job *job);

/* Prints "tracker: <message>\n" to stderr. */
void trk_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parses a whole decimal number within [min, max]; returns 0 or -1. */
int trk_cli_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* Parses a size in bytes: a whole decimal number, optionally followed by
 * K, M, G or T (either case, binary: 1K = 1024), alone or with "B" or
 * "iB" after it. Returns 0, or -1 when s is not such a size or overflows. */
int trk_cli_parse_size(const char *s, uint64_t *out);

/* Parses option opt's list of leak kinds (trk_leak_kinds_parse) into *out;
 * -1 with the one message every command gives when it is not one. */
int trk_cli_leak_kinds(const char *opt, const char *v, unsigned *out, char *err, size_t errlen);

/* Finds libtracker.so (see find_lib.c for the order). Returns 0 with an
 * absolute path in buf, or -1 with a message in buf. */
int trk_find_lib(char *buf, size_t len);

/* Lists the captures of a run (see captures.c). root is the root capture's
 * path as shown to the user. */
void trk_list_captures(const char *root, uint64_t session, FILE *f);

/* The capture a report on path reads (capture_chain.c), malloc'd (NULL:
 * out of memory): the run's file follows its pid's exec chain to the last
 * image; any other file, or any with all, is read as named. Writes to notes
 * (when not NULL) one line when it followed, and one naming the rest of
 * the capture set and which captures hold a Python interpreter. */
char *trk_cli_follow_capture(const char *path, bool all, FILE *notes);
/* The root capture (malloc'd) of the run that files (n >= 1, as the shell
 * expanded `<stem>.*.bin`, in any order, with or without the root) belong
 * to (capture_chain.c); files that cannot be read are left to the report.
 * NULL with a one-line message in err when two are of different runs (or
 * memory ran out). */
char *trk_cli_set_root_of(const char *const *files, int n, char *err, size_t errlen);
/* python, python3, python3.11: a file name (any directory) that names a
 * Python interpreter (capture_chain.c; run and the reports both ask). */
bool trk_cli_python_name(const char *path);

/* Progress bar of long reads and once-only warnings, on stderr (progress.c).
 * The bar shows only when stderr is a terminal. */
struct trk_progress {
    bool on, drawn;
    uint64_t start_ns, last_ns;
    char **warned;
    size_t nwarned;
};
void trk_progress_init(struct trk_progress *p, bool wanted);
/* Callbacks for struct trk_report_opts: ctx is the struct trk_progress. */
void trk_progress_update(void *ctx, const char *path, uint64_t done, uint64_t total);
void trk_progress_warn(void *ctx, const char *msg);
void trk_progress_clear(struct trk_progress *p);
void trk_progress_free(struct trk_progress *p);

#endif /* TRK_CLI_H */
