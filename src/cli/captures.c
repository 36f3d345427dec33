/* SPDX-License-Identifier: MIT
 *
 * captures.c - after `tracker run`, finds the captures the run wrote: the
 * root file plus every <stem>.<pid>.bin and <stem>.<pid>.<n>.bin beside it
 * whose header carries this run's session (docs/FORMAT.md §5), and the empty
 * ones made since the run started (a process that could not write even its
 * header: a full disk). Must not: read past headers, or list a file of
 * another run that merely matches the name pattern.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "cli/cli.h"
#include "report/report.h"
#include "tracker/reader.h"

#define CMD_SHOWN 120

struct capture {
    char *path;
    char desc[CMD_SHOWN + 320];
};

/* Whether the file system holding path has no space left for its owner. */
static bool disk_full(const char *path)
{
    struct statvfs v;
    return statvfs(path, &v) == 0 && v.f_bavail == 0;
}

static int64_t mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* When the run began: the root capture's start, or, when the root is empty
 * (never written since its creation), its modification time. */
static int64_t run_start_ns(const char *root)
{
    struct trk_reader *r;
    if (trk_reader_open(root, &r, NULL, 0) == 0) {
        int64_t t = (int64_t)trk_reader_info(r)->start_realtime;
        trk_reader_close(r);
        return t;
    }
    struct stat st;
    return stat(root, &st) == 0 ? mtime_ns(&st) : 0;
}

/* Fills c->desc; returns false when the file is not of this session. An
 * empty file carries no session: one made since the run started (start_ns,
 * a second's slack for coarse file times) is taken as the run's. */
static bool describe(struct capture *c, uint64_t session, bool root, int64_t start_ns, bool *empty)
{
    struct stat st;
    *empty = false;
    if (stat(c->path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) {
        *empty = true;
        snprintf(c->desc, sizeof(c->desc), "empty: nothing was written%s",
                 disk_full(c->path) ? ", the disk is full" : "");
        return root || mtime_ns(&st) >= start_ns - 1000000000;
    }
    struct trk_reader *r;
    char err[256];
    if (trk_reader_open(c->path, &r, err, sizeof(err)) < 0) {
        snprintf(c->desc, sizeof(c->desc), "unreadable: %s", err);
        return root;
    }
    const struct trk_reader_info *in = trk_reader_info(r);
    bool ours = in->session == session;
    char cmd[CMD_SHOWN + 4];
    size_t len = 0;
    cmd[0] = '\0';
    for (int i = 0; i < in->argc && len < CMD_SHOWN; i++) {
        int w = snprintf(cmd + len, CMD_SHOWN - len, "%s%s", i ? " " : "", in->argv[i]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
    if (len >= CMD_SHOWN)
        strcpy(cmd + CMD_SHOWN - 1, "...");
    snprintf(c->desc, sizeof(c->desc), "pid %u: %s", in->pid, cmd);
    trk_reader_close(r);
    return ours || root;
}

void trk_list_captures(const char *root, uint64_t session, FILE *f)
{
    struct capture rootc = {.path = (char *)root};
    int64_t start = run_start_ns(root);
    bool root_empty, empty;
    describe(&rootc, session, true, start, &root_empty);

    struct trk_capture_sibling *sib = NULL;
    size_t nsib = 0;
    trk_capture_siblings(root, &sib, &nsib);
    struct capture *more = calloc(nsib ? nsib : 1, sizeof(*more));
    size_t nmore = 0;
    for (size_t i = 0; more && i < nsib; i++) {
        more[nmore].path = sib[i].path;
        if (describe(&more[nmore], session, false, start, &empty))
            nmore++;
    }

    size_t total = nmore + 1;
    fprintf(f, "tracker: wrote %zu capture%s:\n", total, total == 1 ? "" : "s");
    fprintf(f, "  %s (%s)\n", root, rootc.desc);
    for (size_t i = 0; i < nmore; i++)
        fprintf(f, "  %s (%s)\n", more[i].path, more[i].desc);
    free(more);
    trk_capture_siblings_free(sib, nsib);
    if (root_empty && disk_full(root))
        fprintf(f, "tracker: '%s' is empty: the disk is full\n", root);
    else if (root_empty)
        fprintf(f,
                "tracker: '%s' is empty: the program never loaded libtracker.so "
                "(statically linked, setuid, or it cleared LD_PRELOAD)\n",
                root);
}
