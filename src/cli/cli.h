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

void trk_cli_usage(FILE *f);

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

/* Prints "tracker: <message>\n" to stderr. */
void trk_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints the unknown-option error and returns TRK_EXIT_USAGE. */
int trk_cli_bad_option(const char *opt);

/* Parses a whole decimal number within [min, max]; returns 0 or -1. */
int trk_cli_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* Finds libtracker.so (see find_lib.c for the order). Returns 0 with an
 * absolute path in buf, or -1 with a message in buf. */
int trk_find_lib(char *buf, size_t len);

/* Lists the captures of a run (see captures.c). root is the root capture's
 * path as shown to the user. */
void trk_list_captures(const char *root, uint64_t session, FILE *f);

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
