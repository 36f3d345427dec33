/* SPDX-License-Identifier: MIT
 *
 * report_driver.c - the tail every report command shares (cli.h, struct
 * trk_report_job): the progress bar and once-only warnings, the capture
 * set loaded for each input, the output opened before the (long) work and
 * never over a capture it reads, the report written, the output flushed or
 * moved into place, and everything freed, with one exit-code rule. Must
 * not: know what a report computes (the job's write does).
 */
#include <stdlib.h>

#include "cli/cli.h"
#include "report/report.h"
#include "tracker/reader.h"

/* The file output: the capture is probed first, so one that cannot be
 * opened fails before any output exists; then an unwritable output fails
 * before the analysis. Returns -1 to go on, else the exit code. */
static int open_output(struct trk_report_job *j)
{
    char err[1024];
    struct trk_reader *probe;
    if (trk_reader_open(j->files[0], &probe, err, sizeof(err)) < 0) {
        trk_cli_error("%s", err);
        return TRK_EXIT_FAIL;
    }
    trk_reader_close(probe);
    if (!j->out->path &&
        !(j->out->path = j->derived = trk_outfile_default(j->files[0], j->out_ext))) {
        trk_cli_error("out of memory");
        return TRK_EXIT_FAIL;
    }
    if (trk_outfile_open_report(j->out, j->files[0], j->binary) < 0)
        return TRK_EXIT_USAGE;
    return -1;
}

/* With --all the set holds more captures than FILE: none may be the output. */
static bool overwrites_capture(const struct trk_report_job *j, const struct trk_report_set *s)
{
    if (!j->out || j->out->is_stdout)
        return false;
    for (size_t i = 0; i < s->n; i++)
        if (trk_outfile_is_capture(j->out->path, s->v[i].path)) {
            trk_cli_error("refusing to overwrite the capture '%s' with the %s", s->v[i].path,
                          j->cmd);
            return true;
        }
    return false;
}

int trk_cli_report(struct trk_report_job *j)
{
    struct trk_progress prog;
    struct trk_report_set sets[2] = {{0}};
    char err[1024];
    int rc = TRK_EXIT_FAIL, r = 0;
    trk_progress_init(&prog, !j->ro->no_progress);
    j->ro->progress = trk_progress_update;
    j->ro->progress_ctx = &prog;
    j->ro->warn = trk_progress_warn;
    j->ro->warn_ctx = &prog;
    if (j->out && (rc = open_output(j)) >= 0)
        goto done;
    rc = TRK_EXIT_FAIL;
    for (size_t i = 0; i < j->nfiles && r == 0; i++) {
        /* The run's file stands for the program's last image (a wrapper
         * that exec'd); the output keeps the name the user gave. */
        char *path = trk_cli_follow_capture(j->files[i], j->ro->all, stderr);
        if (!path) {
            snprintf(err, sizeof(err), "out of memory");
            r = -1;
            break;
        }
        r = trk_report_set_load(&sets[i], path, j->ro, err, sizeof(err));
        free(path);
    }
    trk_progress_clear(&prog);
    if (r < 0) {
        trk_cli_error("%s", err);
        goto fail;
    }
    for (size_t i = 0; i < j->nfiles; i++)
        if (overwrites_capture(j, &sets[i])) {
            rc = TRK_EXIT_USAGE;
            goto fail;
        }
    r = j->write(j->ctx, sets, j->out ? j->out->f : stdout, err, sizeof(err));
    trk_progress_clear(&prog);
    if (r != 0) {
        if (r < 0)
            trk_cli_error("%s", err);
        else
            rc = r;
        goto fail;
    }
    if (j->out) {
        rc = trk_outfile_commit(j->out) < 0 ? TRK_EXIT_USAGE : TRK_EXIT_OK;
        goto done;
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        trk_cli_error("%s: cannot write output", j->cmd);
        goto done;
    }
    rc = TRK_EXIT_OK;
    goto done;
fail:
    if (j->out)
        trk_outfile_abort(j->out);
done:
    for (size_t i = 0; i < j->nfiles; i++)
        trk_report_set_free(&sets[i]);
    trk_progress_free(&prog);
    return rc;
}

int trk_cli_report_main(const struct trk_cli_cmd *c, void *const *bases, int argc, char **argv,
                        struct trk_report_job *job)
{
    struct trk_cli_args args;
    trk_report_opts_init(job->ro);
    int rc = trk_cli_parse(c, bases, argc, argv, &args);
    if (rc < 0) {
        job->cmd = c->name;
        for (int i = 0; i < args.noperands; i++)
            job->files[i] = args.operands[i];
        job->nfiles = (size_t)args.noperands;
        job->ro->all |= args.set;
        rc = trk_cli_report(job);
    }
    trk_report_opts_free(job->ro);
    return rc;
}
