/* SPDX-License-Identifier: MIT
 *
 * fork_inherit.c - a forked child that works on the heap it inherited:
 *   parent  allocates N blocks of 1000+i bytes (i = 0..N-1), then forks
 *   child   allocates one block of BIG bytes, frees the N inherited blocks,
 *           allocates 10 blocks of 333 bytes, frees 7 of them and the big
 *           one, and exits leaking 3
 *   parent  waits, frees its N blocks, prints child=<pid>
 * The child allocates nothing before BIG, so its heap peak is exactly what
 * it inherited plus BIG, or BIG plus its own 10 blocks plus whatever else it
 * inherited, whichever is higher.
 *
 * usage: fork_inherit N
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define MAXN 1000
#define BIG  100000

static void *blocks[MAXN];

int main(int argc, char **argv)
{
    unsigned long long n = arg_u64(argc, argv, 1, 100);
    if (n > MAXN)
        die("N too large");
    for (unsigned long long i = 0; i < n; i++) {
        blocks[i] = malloc(1000 + i);
        if (!blocks[i])
            die("malloc");
    }
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        char *big = malloc(BIG);
        if (!big)
            die("malloc");
        sink(big);
        for (unsigned long long i = 0; i < n; i++)
            free(blocks[i]);
        void *own[10];
        for (int i = 0; i < 10; i++) {
            own[i] = malloc(333);
            if (!own[i])
                die("malloc");
            sink(own[i]);
        }
        for (int i = 0; i < 7; i++)
            free(own[i]);
        free(big);
        exit(0); /* own[7..9] leak */
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die("child failed");
    for (unsigned long long i = 0; i < n; i++)
        free(blocks[i]);
    put_kv("child", (unsigned long long)pid);
    return 0;
}
