/* SPDX-License-Identifier: MIT
 *
 * interval_map.h - a set of disjoint address ranges, each with an attribute
 * (anonymous, file-backed, unknown, hidden), for the mmap family. Owns: splitting
 * ranges when part of one is unmapped (front, back or a hole) and reporting
 * exactly how many bytes of each attribute a change removed. Each range also
 * carries an opaque 64-bit tag (the profile stores its site and mapping id
 * there) and, when asked, the map reports every piece it takes away or splits
 * so that callers can attribute bytes exactly. Must not: know about events,
 * sites or page rounding (callers round).
 */
#ifndef TRK_INTERVAL_MAP_H
#define TRK_INTERVAL_MAP_H

#include <stddef.h>
#include <stdint.h>

enum trk_map_attr {
    TRK_ATTR_ANON = 0,
    TRK_ATTR_FILE = 1,
    TRK_ATTR_UNKNOWN = 2, /* moved by mremap from a range never seen mapped */
    TRK_ATTR_HIDDEN = 3,  /* anonymous, but left out of the figures (the GPU
                           * driver's own mappings, when the profile hides them) */
    TRK_ATTR_COUNT = 4,
};

struct trk_imap_node;

/* Notifications, called during remove/insert: `take` for every piece of a
 * range removed (bytes of it; whole = the range is gone, else it survives
 * shortened); `split` when a hole cut a range in two (the new second part
 * keeps attr and tag). Either may be NULL. */
struct trk_imap_sink {
    void (*take)(void *ctx, unsigned attr, uint64_t tag, uint64_t bytes, int whole);
    void (*split)(void *ctx, unsigned attr, uint64_t tag);
    void *ctx;
};

struct trk_imap {
    struct trk_imap_node *nodes; /* pool; index 0 is the null node */
    uint32_t cap;
    uint32_t used; /* pool slots handed out so far */
    uint32_t free_list;
    uint32_t root;
    uint32_t count; /* ranges in the set */
    uint64_t rng;
    struct trk_imap_sink sink;
};

void trk_imap_init(struct trk_imap *m);
void trk_imap_free(struct trk_imap *m);

/* Installs notifications (copied); a zeroed sink turns them off. */
void trk_imap_set_sink(struct trk_imap *m, const struct trk_imap_sink *sink);

/* Removes [start, end) from the set, adding the bytes removed per attribute
 * to removed[]. Returns 0, or -1 when out of memory (the set is then
 * unchanged where the split needed a node). */
int trk_imap_remove(struct trk_imap *m, uint64_t start, uint64_t end,
                    uint64_t removed[TRK_ATTR_COUNT]);

/* Replaces whatever overlaps [start, end) with one range of attr, adding the
 * bytes displaced per attribute to removed[]. Returns 0 or -1 (out of
 * memory). An empty range does nothing. */
int trk_imap_insert(struct trk_imap *m, uint64_t start, uint64_t end, unsigned attr,
                    uint64_t removed[TRK_ATTR_COUNT]);

/* trk_imap_insert with a tag for the new range (trk_imap_insert uses 0). */
int trk_imap_insert_tagged(struct trk_imap *m, uint64_t start, uint64_t end, unsigned attr,
                           uint64_t tag, uint64_t removed[TRK_ATTR_COUNT]);

/* Adds the bytes of [start, end) present in the set, per attribute, to
 * bytes[], changing nothing. */
void trk_imap_overlap(const struct trk_imap *m, uint64_t start, uint64_t end,
                      uint64_t bytes[TRK_ATTR_COUNT]);

#endif /* TRK_INTERVAL_MAP_H */
