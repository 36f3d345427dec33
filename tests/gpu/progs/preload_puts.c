/* SPDX-License-Identifier: MIT
 *
 * preload_puts.c - libpreload_puts.so: another preloaded tool that wraps
 * puts with the standard dlsym(RTLD_NEXT, "puts"). If our dlsym interposer
 * forwarded RTLD_NEXT from its own frame, this lookup would return this
 * very puts (the next object after libtracker.so) and recurse (docs/GPU_INTERNALS.md §2
 * item 5): it says so and exits 3 instead.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int puts(const char *s)
{
    static int (*next)(const char *);
    if (!next)
        next = (int (*)(const char *))dlsym(RTLD_NEXT, "puts");
    if (!next || next == puts) {
        static const char msg[] = "preload_puts: dlsym(RTLD_NEXT) returned our own puts\n";
        write(2, msg, sizeof(msg) - 1);
        _exit(3);
    }
    fputs("[wrapped] ", stdout);
    return next(s);
}
