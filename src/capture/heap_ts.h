/* SPDX-License-Identifier: MIT
 *
 * heap_ts.h - the time a heap record (ALLOC, FREE, REALLOC) carries. Owns
 * the writer's time quantum for heap events; must not change what any other
 * record carries (imports, RSS, threads and mappings keep exact times).
 *
 * Why a quantum: a program's allocation loop writes the same records again
 * and again (same size, same stack, same address delta), and LZ4 turns such
 * runs into almost nothing, unless every few records one differs. A time
 * step in the tag is such a difference: with 1024 ns steps an allocation
 * every few hundred ns changes the tag every few records. So the stream's
 * time moves only once the clock has gone a whole quantum past it; until
 * then a heap record says "no time passed". The error stays bounded and
 * never accumulates (the next step takes the stream to the clock's reading
 * again): a heap event is recorded at most one quantum (plus the compact
 * records' 1024 ns rounding) before the call, never after it. Halves the
 * captures of Python loops (docs/FORMAT.md §4.2 states the bound).
 */
#ifndef TRK_CAPTURE_HEAP_TS_H
#define TRK_CAPTURE_HEAP_TS_H

#include "capture/events.h"

/* 1024 of the compact records' 1024 ns steps: 1.05 ms, the order of the
 * clock's own bound (docs/FORMAT.md §4.2). 16.4 us still left a step every
 * few records of a Python loop that allocates every few us: 1.05 ms took
 * json_roundtrip.py's capture from 142 to 83 KB and regex_text.py's from
 * 679 to 226 KB; no report's time axis is finer than that. */
#define TRK_HEAP_TS_QUANTUM_NS (1024u << TRK_COMPACT_TS_SHIFT)

/* The timestamp to encode for a heap event of t's stream now: the stream's
 * own (no time passed) until the clock is a quantum past it. A clock
 * reading behind the stream wraps to a large difference and is returned
 * as read: the encoder already writes that as no time passing. */
static inline uint64_t trk_heap_ts_at(const struct trk_thread *t, uint64_t now)
{
    return now - t->enc.ts < TRK_HEAP_TS_QUANTUM_NS ? t->enc.ts : now;
}

/* The same, reading the clock (the fast paths read theirs themselves,
 * ev_inline.h). */
static inline uint64_t trk_heap_ts(const struct trk_thread *t)
{
    return trk_heap_ts_at(t, trk_now_ns());
}

#endif /* TRK_CAPTURE_HEAP_TS_H */
