/* SPDX-License-Identifier: MIT
 *
 * forker.c - a traced process tree with known allocations in every member:
 *   parent   leaks PN blocks of PS bytes before forking
 *   child 1  (fork) leaks CN blocks of CS bytes and returns through exit()
 *   child 2  (fork) the same, then leaves through _exit()
 *   child 3  (fork + exec) runs LEAKER EN ES, which leaks EN blocks of ES
 * The parent waits for all three, prints their pids and exits 0 only if each
 * exited 0.
 *
 * usage: forker LEAKER PN PS CN CS EN ES
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static void leak(unsigned long long n, unsigned long long s)
{
    for (unsigned long long i = 0; i < n; i++) {
        char *p = malloc(s);
        if (!p)
            die("malloc");
        p[0] = 1;
        sink(p);
    }
}

int main(int argc, char **argv)
{
    if (argc != 8)
        die("usage: forker LEAKER PN PS CN CS EN ES");
    unsigned long long pn = arg_u64(argc, argv, 2, 0), ps = arg_u64(argc, argv, 3, 1);
    unsigned long long cn = arg_u64(argc, argv, 4, 0), cs = arg_u64(argc, argv, 5, 1);

    leak(pn, ps);

    pid_t c1 = fork();
    if (c1 < 0)
        die("fork");
    if (c1 == 0) {
        leak(cn, cs);
        exit(0);
    }
    pid_t c2 = fork();
    if (c2 < 0)
        die("fork");
    if (c2 == 0) {
        leak(cn, cs);
        _exit(0);
    }
    pid_t c3 = fork();
    if (c3 < 0)
        die("fork");
    if (c3 == 0) {
        char *args[] = {argv[1], argv[6], argv[7], NULL};
        execv(argv[1], args);
        _exit(126);
    }

    int ok = 1;
    pid_t kids[3] = {c1, c2, c3};
    for (int i = 0; i < 3; i++) {
        int st;
        if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            ok = 0;
    }
    put_kv("child_exit", (unsigned long long)c1);
    put_kv("child_uexit", (unsigned long long)c2);
    put_kv("child_exec", (unsigned long long)c3);
    return ok ? 0 : 1;
}
