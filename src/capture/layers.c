/* SPDX-License-Identifier: MIT
 *
 * layers.c - the callbacks the layers above registered (layers.h). A fixed
 * table written once by the constructor and then only read: no locks.
 */
#include <stdatomic.h>

#include "capture/layers.h"

static const struct trk_layer_ops *layers[TRK_LAYERS_MAX];
static _Atomic int nlayers;

int trk_layer_register(const struct trk_layer_ops *ops)
{
    int n = atomic_load(&nlayers);
    if (n >= TRK_LAYERS_MAX)
        return -1;
    layers[n] = ops;
    atomic_store_explicit(&nlayers, n + 1, memory_order_release);
    return 0;
}

void trk_layers_fork_child(struct trk_thread *t)
{
    int n = atomic_load_explicit(&nlayers, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (layers[i]->fork_child)
            layers[i]->fork_child(t);
}

void trk_layers_after_dlopen(void)
{
    int n = atomic_load_explicit(&nlayers, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (layers[i]->after_dlopen)
            layers[i]->after_dlopen();
}

void trk_layers_sample(struct trk_thread *t)
{
    int n = atomic_load_explicit(&nlayers, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (layers[i]->sample)
            layers[i]->sample(t);
}
