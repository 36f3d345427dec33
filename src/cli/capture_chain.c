/* SPDX-License-Identifier: MIT
 *
 * capture_chain.c - which capture a report given FILE reads, and the one
 * line that tells where the rest of FILE's capture set is. The file
 * `tracker run -o` names is written by the program's first image; when
 * that pid exec'd (a wrapper script, a shim, `env`), each later image wrote
 * <stem>.<pid>[.<n>].bin (docs/FORMAT.md §6). The run's file stands for the
 * program the user ran: a report on it follows the root pid's exec chain to
 * its last image. Any other capture is read as named. Must not: read past
 * headers, or take in a file of another session.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "report/report.h"
#include "tracker/reader.h"

struct hdr {
    const char *path;
    uint32_t pid;
    uint64_t session, clock_base;
    bool forked; /* a FORK TLV: a forked child, not an exec'd image */
    bool python; /* the executable is a Python interpreter (by name) */
    char cmd[160];
};

bool trk_cli_python_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, "python", 6) != 0)
        return false;
    for (const char *s = base + 6; *s; s++)
        if ((*s < '0' || *s > '9') && *s != '.')
            return false;
    return true;
}

static bool read_hdr(const char *path, struct hdr *h)
{
    struct trk_reader *r;
    if (trk_reader_open(path, &r, NULL, 0) < 0)
        return false;
    const struct trk_reader_info *in = trk_reader_info(r);
    *h = (struct hdr){
        .path = path,
        .pid = in->pid,
        .session = in->session,
        .clock_base = in->clock_base,
        .forked = in->fork_parent[0] != '\0',
        .python = trk_cli_python_name(in->exe[0] ? in->exe
                                      : in->argc ? in->argv[0]
                                                 : ""),
    };
    size_t len = 0;
    for (int i = 0; i < in->argc && len + 4 < sizeof(h->cmd); i++) {
        int w = snprintf(h->cmd + len, sizeof(h->cmd) - len, "%s%s", i ? " " : "", in->argv[i]);
        len = w < 0 ? len : len + (size_t)w;
    }
    if (len >= sizeof(h->cmd) - 1)
        strcpy(h->cmd + sizeof(h->cmd) - 4, "...");
    for (char *s = h->cmd; *s; s++)
        if ((unsigned char)*s < 0x20)
            *s = ' ';
    trk_reader_close(r);
    return true;
}

/* Strips a trailing ".<digits>" from s (length *n); false when there is none. */
static bool strip_number(const char *s, size_t *n)
{
    size_t k = *n;
    while (k > 0 && s[k - 1] >= '0' && s[k - 1] <= '9')
        k--;
    if (k == *n || k == 0 || s[k - 1] != '.')
        return false;
    *n = k - 1;
    return true;
}

/* The root capture of the set path belongs to (malloc'd): <stem>.bin when
 * path is <stem>.<pid>.bin or <stem>.<pid>.<n>.bin and <stem>.bin is a
 * capture of the same session, else path itself. The shorter stem is
 * tried first: out.12.1.bin is out.bin's pid 12, image 1, when out.bin is
 * of the session. */
static char *set_root(const char *path, uint64_t session)
{
    size_t n = strlen(path);
    if (n > 4 && strcmp(path + n - 4, ".bin") == 0) {
        size_t one = n - 4, two;
        const char *slash = strrchr(path, '/');
        size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
        if (strip_number(path, &one) && one > dir) {
            two = one;
            size_t cands[2] = {0, one};
            if (strip_number(path, &two) && two > dir)
                cands[0] = two;
            /* The root's name: <stem>.bin, or <stem> when -o named no .bin. */
            for (int i = 0; i < 4; i++) {
                size_t c = cands[i / 2];
                if (!c)
                    continue;
                char *root = malloc(c + 5);
                if (!root)
                    return NULL;
                memcpy(root, path, c);
                strcpy(root + c, i % 2 ? "" : ".bin");
                struct hdr h;
                if (strcmp(root, path) != 0 && read_hdr(root, &h) && h.session == session)
                    return root;
                free(root);
            }
        }
    }
    return strdup(path);
}

char *trk_cli_follow_capture(const char *path, bool all, FILE *notes)
{
    struct hdr self;
    if (all || !read_hdr(path, &self))
        return strdup(path); /* the report says why it cannot read it */
    char *root = set_root(path, self.session);
    if (!root)
        return NULL;
    struct trk_capture_sibling *sib = NULL;
    size_t nsib = 0;
    trk_capture_siblings(root, &sib, &nsib);
    struct hdr *v = calloc(nsib + 1, sizeof(*v));
    size_t n = 0;
    for (size_t i = 0; v && i < nsib; i++)
        if (read_hdr(sib[i].path, &v[n]) && v[n].session == self.session)
            n++;

    /* From the run's file: the root pid's images, in start order; a forked
     * child that reused the pid (it carries FORK) ends the chain. */
    const struct hdr *cur = &self;
    bool is_root = strcmp(root, path) == 0;
    for (;;) {
        const struct hdr *next = NULL;
        for (size_t i = 0; is_root && i < n; i++)
            if (v[i].pid == self.pid && v[i].clock_base > cur->clock_base &&
                (!next || v[i].clock_base < next->clock_base))
                next = &v[i];
        if (!next || next->forked)
            break;
        cur = next;
    }
    char *chosen = strdup(cur->path);
    if (notes && chosen && cur != &self)
        fprintf(notes,
                "tracker: %s is pid %u's first image (%s), which exec'd; reporting its last "
                "image, %s (%s)\n",
                path, self.pid, self.cmd, cur->path, cur->cmd);

    /* One line: how many captures the set has, and which hold Python. */
    if (notes && chosen && n > 0) {
        struct hdr rooth;
        bool root_ok = is_root ? (rooth = self, true) : read_hdr(root, &rooth);
        size_t total = n + (root_ok ? 1 : 0), npy = 0;
        char py[600] = "";
        size_t len = 0;
        for (size_t i = 0; i <= n; i++) {
            const struct hdr *h = i < n ? &v[i] : root_ok ? &rooth : NULL;
            if (!h || !h->python || strcmp(h->path, chosen) == 0)
                continue;
            if (npy++ < 3 && len < sizeof(py) - 1) {
                int w = snprintf(py + len, sizeof(py) - len, "%s%s", len ? ", " : "", h->path);
                len = w < 0 ? len : len + (size_t)w;
            }
        }
        if (len >= sizeof(py) - 1)
            strcpy(py + sizeof(py) - 4, "...");
        const struct hdr *me = cur;
        size_t stem = strlen(root);
        if (stem > 4 && strcmp(root + stem - 4, ".bin") == 0)
            stem -= 4;
        fprintf(notes,
                "tracker: %s is 1 of %zu captures of this run (%.*s.*.bin; --all reads them all)",
                chosen, total, (int)stem, root);
        if (npy)
            fprintf(notes, "; %s Python interpreter%s: %s%s", me->python ? "other" : "the",
                    npy == 1 ? " is in" : "s are in", py, npy > 3 ? " and more" : "");
        fputc('\n', notes);
    }
    free(v);
    trk_capture_siblings_free(sib, nsib);
    free(root);
    return chosen;
}

char *trk_cli_set_root_of(const char *const *files, int n, char *err, size_t errlen)
{
    struct hdr first, h;
    int k = 0;
    while (k < n && !read_hdr(files[k], &first))
        k++;
    /* None readable: the report on the first says why. */
    if (k == n)
        return strdup(files[0]);
    for (int i = k + 1; i < n; i++)
        if (read_hdr(files[i], &h) && h.session != first.session) {
            snprintf(err, errlen, "'%s' and '%s' are captures of different runs", files[k],
                     files[i]);
            return NULL;
        }
    char *root = set_root(files[k], first.session);
    if (!root)
        snprintf(err, errlen, "out of memory");
    return root;
}
