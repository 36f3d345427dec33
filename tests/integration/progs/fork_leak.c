/* SPDX-License-Identifier: MIT
 *
 * fork_leak.c - the parent frees everything it allocates; its forked child
 * leaks N blocks of S bytes and exits through exit(). A leak gate must see
 * the child's leak though the parent is clean. With N = 0 neither leaks.
 * Exits 0 when the child did.
 *
 * usage: fork_leak N S
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv)
{
    unsigned long long n = arg_u64(argc, argv, 1, 0);
    unsigned long long s = arg_u64(argc, argv, 2, 1);
    char *mine = malloc(100);
    if (!mine)
        die("malloc");
    mine[0] = 1;
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        for (unsigned long long i = 0; i < n; i++) {
            char *p = malloc(s);
            if (!p)
                die("malloc");
            p[0] = 1;
            sink(p);
        }
        free(mine);
        exit(0);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid)
        die("waitpid");
    free(mine);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
