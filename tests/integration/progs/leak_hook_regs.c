/* SPDX-License-Identifier: MIT
 *
 * leak_hook_regs.c - a block lost right after malloc returned, on a thread
 * that then blocks: the thread's registers at the leak scan are whatever
 * the allocator's return left in them. The program keeps the pointer only
 * encoded (XOR), so the block is definitely lost - unless the tracker's own
 * malloc hook left the pointer in a call-clobbered register, which the scan
 * then takes for a root (test_leak_own.py).
 * No stdio: its buffer would be one more block.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define KEY 0x5a5a5a5a5a5a5a5aull

static volatile uintptr_t enc;
static volatile int ready;

__attribute__((noinline)) void *d_hook_register(void);
__attribute__((noinline)) void *d_hook_register(void)
{
    return malloc(1111);
}

static void *lose(void *arg)
{
    (void)arg;
    enc = (uintptr_t)d_hook_register() ^ KEY;
    ready = 1;
    for (;;)
        pause();
    return NULL;
}

int main(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, lose, NULL))
        return 2;
    while (!ready)
        usleep(1000);
    exit(0);
}
