/* SPDX-License-Identifier: MIT
 *
 * captures.c - after `tracker run`, finds the captures the run wrote: the
 * root file plus every <stem>.<pid>.bin and <stem>.<pid>.<n>.bin beside it
 * whose header carries this run's session (docs/FORMAT.md §5). Must not:
 * read past headers, or list a file of another run that merely matches the
 * name pattern.
 */
#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "tracker/reader.h"

#define CMD_SHOWN 120

struct capture {
    char *path;
    unsigned long pid, n; /* from the name, for ordering */
    char desc[CMD_SHOWN + 320];
};

/* Parses "<digits>.bin" or "<digits>.<digits>.bin". */
static bool parse_suffix(const char *s, unsigned long *pid, unsigned long *n)
{
    char *end;
    if (*s < '0' || *s > '9')
        return false;
    *pid = strtoul(s, &end, 10);
    *n = 0;
    if (strcmp(end, ".bin") == 0)
        return true;
    if (end[0] != '.' || end[1] < '0' || end[1] > '9')
        return false;
    *n = strtoul(end + 1, &end, 10);
    return strcmp(end, ".bin") == 0;
}

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

static int by_pid(const void *a, const void *b)
{
    const struct capture *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->n < y->n ? -1 : x->n > y->n;
}

void trk_list_captures(const char *root, uint64_t session, FILE *f)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(root, '/');
    const char *base = slash ? slash + 1 : root;
    if (slash)
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - root) + 1, root);
    else
        dir[0] = '\0';
    size_t stem_len = strlen(base);
    if (stem_len > 4 && strcmp(base + stem_len - 4, ".bin") == 0)
        stem_len -= 4;

    struct capture rootc = {.path = (char *)root};
    describe(&rootc, session, true);
    bool root_empty = strcmp(rootc.desc, "empty") == 0;

    struct capture *more = NULL;
    size_t nmore = 0, cap = 0;
    DIR *d = opendir(dir[0] ? dir : ".");
    struct dirent *de;
    while (d && (de = readdir(d))) {
        const char *name = de->d_name;
        unsigned long pid, n;
        if (strncmp(name, base, stem_len) != 0 || name[stem_len] != '.' ||
            !parse_suffix(name + stem_len + 1, &pid, &n) || strcmp(name, base) == 0)
            continue;
        if (nmore == cap) {
            cap = cap ? cap * 2 : 8;
            struct capture *m = realloc(more, cap * sizeof(*m));
            if (!m)
                break;
            more = m;
        }
        struct capture *c = &more[nmore];
        size_t plen = strlen(dir) + strlen(name) + 1;
        c->path = malloc(plen);
        if (!c->path)
            break;
        snprintf(c->path, plen, "%s%s", dir, name);
        c->pid = pid;
        c->n = n;
        if (describe(c, session, false))
            nmore++;
        else
            free(c->path);
    }
    if (d)
        closedir(d);
    if (nmore)
        qsort(more, nmore, sizeof(*more), by_pid);

    size_t total = nmore + 1;
    fprintf(f, "tracker: wrote %zu capture%s:\n", total, total == 1 ? "" : "s");
    fprintf(f, "  %s (%s)\n", root, rootc.desc);
    for (size_t i = 0; i < nmore; i++) {
        fprintf(f, "  %s (%s)\n", more[i].path, more[i].desc);
        free(more[i].path);
    }
    free(more);
    if (root_empty)
        fprintf(f,
                "tracker: '%s' is empty: the program never loaded libtracker.so "
                "(statically linked, setuid, or it cleared LD_PRELOAD)\n",
                root);
}
