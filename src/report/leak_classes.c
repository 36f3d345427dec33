/* SPDX-License-Identifier: MIT
 *
 * leak_classes.c - valgrind's leak kinds in the leaks report: their names,
 * the --kinds / --fail-on-kinds word lists, and the LEAK SUMMARY lines of a
 * classified capture (docs/FORMAT.md §4a). Must not: decide which blocks
 * are listed (leaks.c) or the exit status (cmd_leaks.c).
 */
#include <inttypes.h>
#include <string.h>

#include "report/leak_classes.h"
#include "report/report_internal.h"

static const char *const names[TRK_LEAK_CLASS_MAX + 1] = {
    [0] = "unclassified",
    [TRK_LEAK_DEFINITE] = "definite",
    [TRK_LEAK_INDIRECT] = "indirect",
    [TRK_LEAK_POSSIBLE] = "possible",
    [TRK_LEAK_REACHABLE] = "reachable",
};

/* How a stack's heading says it, valgrind's words. */
static const char *const phrases[TRK_LEAK_CLASS_MAX + 1] = {
    [0] = "not classified",
    [TRK_LEAK_DEFINITE] = "definitely lost",
    [TRK_LEAK_INDIRECT] = "indirectly lost",
    [TRK_LEAK_POSSIBLE] = "possibly lost",
    [TRK_LEAK_REACHABLE] = "still reachable",
};

const char *trk_leak_class_name(unsigned cls)
{
    return cls <= TRK_LEAK_CLASS_MAX ? names[cls] : "unknown";
}

const char *trk_leak_class_phrase(unsigned cls)
{
    return cls <= TRK_LEAK_CLASS_MAX ? phrases[cls] : "unknown";
}

int trk_leak_kinds_parse(const char *list, unsigned *out)
{
    unsigned bits = 0;
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        unsigned k = 0;
        if (n == 3 && strncmp(p, "all", 3) == 0) {
            bits |= TRK_LEAK_SHOW_ALL;
            k = 1;
        } else if (n == 4 && strncmp(p, "none", 4) == 0) {
            k = 1;
        }
        for (unsigned c = 0; !k && c <= TRK_LEAK_CLASS_MAX; c++) {
            if (strlen(names[c]) == n && strncmp(p, names[c], n) == 0) {
                bits |= 1u << c;
                k = 1;
            }
        }
        if (!k)
            return -1;
        p += n;
        if (*p == ',')
            p++;
    }
    *out = bits;
    return 0;
}

/* valgrind's LEAK SUMMARY, one line per class: the listed ones, then the
 * others with how to list them. */
void trk_leak_print_summary(FILE *out, const struct trk_leak_totals *tot, unsigned show)
{
    static const unsigned order[] = {TRK_LEAK_DEFINITE, TRK_LEAK_INDIRECT, TRK_LEAK_POSSIBLE,
                                     TRK_LEAK_REACHABLE, 0};
    char a[32], b[32];
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        unsigned k = order[i];
        if (k == 0 && !tot->cls_count[0])
            continue;
        uint64_t n = tot->cls_count[k], st = tot->cls_stacks[k];
        fprintf(out, "    %15s: %s bytes in %s block%s", phrases[k],
                trk_rfmt_grouped(tot->cls_bytes[k], a, sizeof(a)),
                trk_rfmt_grouped(n, b, sizeof(b)), n == 1 ? "" : "s");
        if (n && (show & (1u << k)))
            fprintf(out, " from %" PRIu64 " stack%s", st, st == 1 ? "" : "s");
        else if (n)
            fprintf(out, " (not listed: --kinds %s%s)", names[k],
                    k >= TRK_LEAK_POSSIBLE ? " or --show-reachable" : "");
        fputc('\n', out);
    }
}
