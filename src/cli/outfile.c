/* SPDX-License-Identifier: MIT
 *
 * outfile.c - report output written to a temporary file beside its name and
 * moved into place only when complete, so a failed or interrupted export
 * never leaves half a file (or destroys the previous one). Owns the rule
 * every report output shares with `tracker run`'s capture: a new name is
 * created exclusively, a symlink is never followed, and an existing name is
 * replaced only with -f and only when it is a regular file (or a symlink,
 * which is itself replaced), and a report's output is never the capture
 * it reads; '-' is standard output. Must not: print anything but the one-line
 * error of a failed step.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

/* The file is made with the mode a plain fopen would give it (0666 less the
 * umask), not mkstemp's 0600: reports are meant to be shared. */
int trk_outfile_open_tmp(struct trk_outfile *o)
{
    size_t len = strlen(o->path) + 16;
    if (!(o->tmp = malloc(len))) {
        trk_cli_error("out of memory");
        return -1;
    }
    snprintf(o->tmp, len, "%s.tmp.XXXXXX", o->path);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        trk_cli_error("cannot write '%s': %s", o->path, strerror(errno));
        free(o->tmp);
        o->tmp = NULL;
        return -1;
    }
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0 || !(o->f = fdopen(fd, "w"))) {
        trk_cli_error("cannot write '%s': %s", o->path, strerror(errno));
        close(fd);
        unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
        return -1;
    }
    return 0;
}

int trk_outfile_open(struct trk_outfile *o)
{
    struct stat st;
    if (lstat(o->path, &st) == 0) {
        /* Checked again at commit (link() fails on a name taken meanwhile;
         * rename() replaces a symlink itself): this is for a clear message
         * before the work, and to refuse what -f must not replace. */
        if (o->no_replace) {
            trk_cli_error("'%s' exists (use -f to overwrite)", o->path);
            return -1;
        }
        if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
            trk_cli_error("'%s' is not a regular file; refusing to replace it", o->path);
            return -1;
        }
    }
    return trk_outfile_open_tmp(o);
}

bool trk_outfile_is_capture(const char *path, const char *capture)
{
    struct stat a, b;
    return stat(path, &a) == 0 && stat(capture, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

int trk_outfile_open_report(struct trk_outfile *o, const char *capture, bool binary)
{
    if (strcmp(o->path, "-") == 0) {
        if (binary && isatty(STDOUT_FILENO)) {
            trk_cli_error("refusing to write binary data to a terminal (use -o FILE or a pipe)");
            return -1;
        }
        o->f = stdout;
        o->is_stdout = true;
        return 0;
    }
    /* A report must never replace what it reads. */
    if (trk_outfile_is_capture(o->path, capture)) {
        trk_cli_error("refusing to overwrite the capture '%s' with the report", capture);
        return -1;
    }
    return trk_outfile_open(o);
}

char *trk_outfile_default(const char *capture, const char *ext)
{
    size_t n = strlen(capture);
    if (n > 4 && strcmp(capture + n - 4, ".bin") == 0)
        n -= 4;
    size_t len = n + strlen(ext) + 1;
    char *s = malloc(len);
    if (s)
        snprintf(s, len, "%.*s%s", (int)n, capture, ext);
    return s;
}

void trk_outfile_abort(struct trk_outfile *o)
{
    if (o->f && !o->is_stdout)
        fclose(o->f);
    o->f = NULL;
    if (o->tmp) {
        unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
    }
}

/* With no_replace the temporary is link()ed to its name, which fails if the
 * name was taken meanwhile, so nothing is replaced that was not asked for. */
int trk_outfile_commit(struct trk_outfile *o)
{
    int err = 0;
    if (fflush(o->f) != 0 || ferror(o->f))
        err = errno ? errno : EIO;
    if (!o->is_stdout) {
        if (fclose(o->f) != 0 && !err)
            err = errno ? errno : EIO;
        o->f = NULL;
    }
    if (!err && o->tmp) {
        if (o->no_replace ? link(o->tmp, o->path) != 0 : rename(o->tmp, o->path) != 0)
            err = errno;
        else if (o->no_replace)
            unlink(o->tmp);
    }
    if (err) {
        if (err == EEXIST && o->no_replace)
            trk_cli_error("'%s' exists (use -f to overwrite)", o->path);
        else
            trk_cli_error("cannot write '%s': %s", o->is_stdout ? "standard output" : o->path,
                          strerror(err));
        trk_outfile_abort(o);
        return -1;
    }
    free(o->tmp);
    o->tmp = NULL;
    return 0;
}
