/* SPDX-License-Identifier: MIT
 *
 * cmd_stats.c - `tracker stats [--json] [--all] FILE`: runs the stats
 * analysis and prints it (src/report/stats_render.c renders the table and
 * the JSON); with --all, or several captures of one run, once per capture
 * of the run.
 * Owns the command's option table and exit status. Must not: compute or
 * format figures, or exit non-zero for a merely truncated capture.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <stddef.h>

#include "analysis/stats.h"
#include "cli/cli.h"
#include "report/report.h"
#include "report/report_json.h"

struct stats {
    struct trk_stats_report_opts so;
    bool no_progress, all;
    uint64_t device;
};

#define DEVICE_UNSET UINT64_MAX

static const struct trk_cli_opt opts[] = {
    {"--json", 0, TRK_CLI_FLAG, offsetof(struct stats, so.json), .help = "one JSON object"},
    {"--gpu", 0, TRK_CLI_FLAG, offsetof(struct stats, so.gpu_only),
     .help = "the GPU figures only (of every device)"},
    {"--all", 0, TRK_CLI_FLAG, offsetof(struct stats, all),
     .help = "every capture of the run: a block per process\n"
             "(JSON: {\"processes\": [{\"path\", \"pid\", \"command\", \"stats\"}]})"},
    {"--device", 0, TRK_CLI_UINT, offsetof(struct stats, device), "N",
     "the GPU figures of device N only", "a device ordinal (0, 1, ...)", .max = 1u << 20},
    /* Accepted as every report accepts it: stats draws no bar. */
    {"--no-progress", 0, TRK_CLI_FLAG, offsetof(struct stats, no_progress)},
    {0},
};

const struct trk_cli_cmd trk_stats_cmd = {
    .name = "stats",
    .operands = "[options] FILE",
    .brief = "totals of a capture: heap, mmap, RSS, threads, GPUs",
    .about = "  totals of a capture: heap, anonymous mappings, resident memory, threads,\n"
             "  the Python interpreter and GPU memory per device\n",
    TRK_CLI_ONE_CAPTURE,
    .tables = {opts},
};

/* One capture's stats. With all, the text is headed by its pid and command
 * and the JSON object is one entry (the first is not preceded by a comma) of
 * "processes". */
static int stats(const struct stats *st, const char *file, bool all, bool first)
{
    struct trk_reader *r;
    char err[600];
    if (trk_reader_open(file, &r, err, sizeof(err)) < 0) {
        trk_cli_error("%s", err);
        return TRK_EXIT_FAIL;
    }
    struct trk_stats s;
    int rc = trk_stats_compute(r, &s);
    if (rc == -1)
        trk_cli_error("%s", trk_reader_error(r));
    else if (rc < 0)
        trk_cli_error("%s: out of memory", file);
    else if (!all)
        trk_report_stats(stdout, file, &s, &st->so);
    else if (st->so.json) {
        printf("%s{\"path\": ", first ? "" : ",\n");
        trk_json_quote(stdout, file, SIZE_MAX, false);
        printf(", \"pid\": %" PRIu32 ", \"command\": ", s.pid);
        trk_json_quote(stdout, s.command, SIZE_MAX, false);
        printf(", \"stats\": ");
        trk_report_stats(stdout, file, &s, &st->so);
        printf("}");
    } else {
        printf("%s== pid %" PRIu32 ": %s ==\n", first ? "" : "\n", s.pid, s.command);
        trk_report_stats(stdout, file, &s, &st->so);
    }
    trk_stats_free(&s);
    trk_reader_close(r);
    if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
        trk_cli_error("stats: cannot write output");
        return TRK_EXIT_FAIL;
    }
    return rc == 0 ? TRK_EXIT_OK : TRK_EXIT_FAIL;
}

static void warn(void *ctx, const char *msg)
{
    (void)ctx;
    trk_cli_error("%s", msg);
}

/* Every capture of file's run, by pid (as the other reports' --all). */
static int stats_all(const struct stats *st, const char *file)
{
    char **paths, err[700];
    size_t n;
    int rc = TRK_EXIT_OK;
    if (trk_capture_set_paths(file, true, warn, NULL, &paths, &n, err, sizeof(err)) < 0) {
        trk_cli_error("%s", err);
        rc = TRK_EXIT_FAIL;
    }
    if (rc == TRK_EXIT_OK && st->so.json)
        printf("{\"processes\": [\n");
    for (size_t i = 0; rc == TRK_EXIT_OK && i < n; i++)
        rc = stats(st, paths[i], true, i == 0);
    if (rc == TRK_EXIT_OK && st->so.json)
        printf("\n]}\n");
    trk_capture_set_paths_free(paths, n);
    if (rc == TRK_EXIT_OK && (fflush(stdout) != 0 || ferror(stdout))) {
        trk_cli_error("stats: cannot write output");
        return TRK_EXIT_FAIL;
    }
    return rc;
}

int trk_cmd_stats(int argc, char **argv)
{
    struct stats st = {.device = DEVICE_UNSET};
    struct trk_cli_args args;
    int rc = trk_cli_parse(&trk_stats_cmd, (void *[]){&st}, argc, argv, &args);
    if (rc >= 0)
        return rc;
    st.so.device = st.device == DEVICE_UNSET ? -1 : (int64_t)st.device;
    st.so.gpu_only |= st.so.device >= 0;
    /* As every report: the run's file stands for its last exec'd image. */
    char *file = trk_cli_follow_capture(args.operands[0], st.all || args.set, stderr);
    if (!file) {
        trk_cli_error("out of memory");
        return TRK_EXIT_FAIL;
    }
    if (!st.all && !args.set)
        rc = stats(&st, file, false, true);
    else
        rc = stats_all(&st, file);
    free(file);
    return rc;
}
