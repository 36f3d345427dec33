/* SPDX-License-Identifier: MIT
 *
 * captures.c - after `tracker run`, finds the captures the run wrote: the
 * root file plus every <stem>.<pid>.bin and <stem>.<pid>.<n>.bin beside it
 * whose header carries this run's session (docs/FORMAT.md §5). Must not:
 * read past headers, or list a file of another run that merely matches the
 * name pattern.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "report/report.h"
#include "tracker/reader.h"

#define CMD_SHOWN 120

struct capture {
    char *path;
    char desc[CMD_SHOWN + 320];
};

/* Fills c->desc; returns false when the file is not of this session. */
static bool describe(struct capture *c, uint64_t session, bool root)
{
    struct stat st;
    if (stat(c->path, &st) == 0 && st.st_size == 0) {
        snprintf(c->desc, sizeof(c->desc), "empty");
        return root;
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
    describe(&rootc, session, true);
    bool root_empty = strcmp(rootc.desc, "empty") == 0;

    struct trk_capture_sibling *sib = NULL;
    size_t nsib = 0;
    trk_capture_siblings(root, &sib, &nsib);
    struct capture *more = calloc(nsib ? nsib : 1, sizeof(*more));
    size_t nmore = 0;
    for (size_t i = 0; more && i < nsib; i++) {
        more[nmore].path = sib[i].path;
        if (describe(&more[nmore], session, false))
            nmore++;
    }

    size_t total = nmore + 1;
    fprintf(f, "tracker: wrote %zu capture%s:\n", total, total == 1 ? "" : "s");
    fprintf(f, "  %s (%s)\n", root, rootc.desc);
    for (size_t i = 0; i < nmore; i++)
        fprintf(f, "  %s (%s)\n", more[i].path, more[i].desc);
    free(more);
    trk_capture_siblings_free(sib, nsib);
    if (root_empty)
        fprintf(f,
                "tracker: '%s' is empty: the program never loaded libtracker.so "
                "(statically linked, setuid, or it cleared LD_PRELOAD)\n",
                root);
}
