/* SPDX-License-Identifier: MIT
 *
 * tsan_unwind.c - a stand-in for libunwind's unw_backtrace, linked into the
 * ThreadSanitizer build of test_writer only (the executable's definition
 * wins over the shared library's). libunwind frees its per-thread trace
 * cache from a thread-specific-data destructor that defers itself to the
 * last destructor round, where ThreadSanitizer has already torn the thread
 * down: the cache's mutex then crashes inside TSan's interceptor as each
 * producer thread exits. What TSan is here to check is our own code (rings,
 * writer, stack tables), so the stand-in returns short made-up stacks that
 * differ between threads and calls, keeping concurrent stack inserts.
 */
#include <pthread.h>
#include <stdint.h>

int unw_backtrace(void **buffer, int size);

int unw_backtrace(void **buffer, int size)
{
    static _Thread_local unsigned calls;
    uintptr_t self = (uintptr_t)pthread_self();
    uintptr_t fake[3] = {0x401000 + 16 * (calls++ % 8), 0x402000 + ((self >> 12) & 0xff0),
                         0x403000};
    int n = size < 3 ? size : 3;
    for (int i = 0; i < n; i++)
        buffer[i] = (void *)fake[i];
    return n;
}
