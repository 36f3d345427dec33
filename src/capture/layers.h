/* SPDX-License-Identifier: MIT
 *
 * layers.h - how the layers above the capture engine (src/python, src/gpu)
 * hear of what it sees, without the engine naming them: each registers one
 * table of callbacks (as heaptrack's core takes callbacks). Stacks have
 * their own hook (trk_stack_provider, stacks.h). src/preload/init.c does
 * every registration, in its constructor, before any hook can run them.
 */
#ifndef TRK_CAPTURE_LAYERS_H
#define TRK_CAPTURE_LAYERS_H

#include "capture/thread.h"
#include "prim/base.h"

struct trk_layer_ops {
    /* A fork child with a capture of its own; t is the forking thread's
     * state (may be NULL). Called with the internal guard set. */
    void (*fork_child)(struct trk_thread *t);
    /* After a dlopen of the program's succeeded (on its thread, guard
     * clear), whether or not tracking is on. */
    void (*after_dlopen)(void);
    /* Every tick of the sampler thread (writer.c), with the sampler's own
     * state and the internal guard set. */
    void (*sample)(struct trk_thread *t);
};

#define TRK_LAYERS_MAX 4

/* Called in registration order. Returns 0, or -1 when the table is full.
 * Not thread-safe: only the constructor registers. */
int trk_layer_register(const struct trk_layer_ops *ops) TRK_HIDDEN;

void trk_layers_fork_child(struct trk_thread *t) TRK_HIDDEN;
void trk_layers_after_dlopen(void) TRK_HIDDEN;
void trk_layers_sample(struct trk_thread *t) TRK_HIDDEN;

#endif /* TRK_CAPTURE_LAYERS_H */
