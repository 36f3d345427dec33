/* SPDX-License-Identifier: MIT
 *
 * killself.c - dies by SIGKILL in the middle of a run, so that nothing in the
 * process gets a chance to finish its capture.
 *   mode 0: makes N allocations (half of them freed), sleeps MS
 *           milliseconds, then sends itself SIGKILL.
 *   mode 1: prints its pid, then allocates steadily until killed from
 *           outside.
 *
 * usage: killself MODE N MS
 */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv)
{
    unsigned long long mode = arg_u64(argc, argv, 1, 0);
    unsigned long long n = arg_u64(argc, argv, 2, 10000);
    unsigned long long ms = arg_u64(argc, argv, 3, 100);

    if (mode == 0) {
        for (unsigned long long i = 0; i < n; i++) {
            char *p = malloc(64 + i % 64);
            if (!p)
                die("malloc");
            p[0] = 1;
            if (i & 1)
                free(p);
            else
                sink(p);
        }
        sleep_ms(ms);
        kill(getpid(), SIGKILL);
        for (;;)
            pause();
    }
    put_kv("pid", (unsigned long long)getpid());
    for (unsigned long long i = 0;; i++) {
        char *p = malloc(32 + i % 200);
        if (!p)
            die("malloc");
        p[0] = 1;
        if (i % 3)
            free(p);
        else
            sink(p);
        if (i % 1000 == 0)
            sleep_ms(1);
    }
}
