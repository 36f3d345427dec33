/* SPDX-License-Identifier: MIT
 *
 * cmd_stats.c - `tracker stats [--json] FILE`: runs the stats analysis and
 * prints it (src/report/stats_render.c renders the table and the JSON).
 * Owns the command's option table and exit status. Must not: compute or
 * format figures, or exit non-zero for a merely truncated capture.
 */
#include <stdlib.h>
#include <stddef.h>

#include "analysis/stats.h"
#include "cli/cli.h"
#include "report/report.h"

struct stats {
    struct trk_stats_report_opts so;
    bool no_progress;
    uint64_t device;
};

#define DEVICE_UNSET UINT64_MAX

static const struct trk_cli_opt opts[] = {
    {"--json", 0, TRK_CLI_FLAG, offsetof(struct stats, so.json), .help = "one JSON object"},
    {"--gpu", 0, TRK_CLI_FLAG, offsetof(struct stats, so.gpu_only),
     .help = "the GPU figures only (of every device)"},
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

static int stats(const struct stats *st, const char *file)
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
    else
        trk_report_stats(stdout, file, &s, &st->so);
    trk_stats_free(&s);
    trk_reader_close(r);
    if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
        trk_cli_error("stats: cannot write output");
        return TRK_EXIT_FAIL;
    }
    return rc == 0 ? TRK_EXIT_OK : TRK_EXIT_FAIL;
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
    char *file = trk_cli_follow_capture(args.operands[0], false, stderr);
    if (!file) {
        trk_cli_error("out of memory");
        return TRK_EXIT_FAIL;
    }
    rc = stats(&st, file);
    free(file);
    return rc;
}
