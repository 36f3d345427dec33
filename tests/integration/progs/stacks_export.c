/* SPDX-License-Identifier: MIT
 *
 * stacks_export.c - allocations under known call stacks, for the export
 * formats (test_export.py). In order:
 *
 *   main -> delta            5 x malloc(333), each freed at once (temporary)
 *   main -> alpha -> beta    7 x malloc(1000), live at the peak, freed later
 *   main -> gamma            1 x malloc(4321), leaked
 *   main -> epsilon          16 anonymous pages mapped, never unmapped
 *   main (free the 7 blocks)
 *   with "fork": a child runs main -> zeta: 1 x malloc(2222), leaked
 *
 * So: peak = beta 7000 + gamma 4321; leaks = gamma 4321 (and epsilon's pages
 * with --mmap); allocated = beta 7000 + gamma 4321 + delta 1665; temporary =
 * delta 1665. Prints page_size=... and pid=... (child_pid=... with fork).
 *
 * usage: stacks_export [fork]
 */
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define NOINLINE __attribute__((noinline))

static void *blocks[7];

static NOINLINE void beta(void)
{
    for (int i = 0; i < 7; i++) {
        blocks[i] = malloc(1000);
        if (!blocks[i])
            die("malloc");
        sink(blocks[i]);
    }
}

static NOINLINE void alpha(void)
{
    beta();
}

static NOINLINE void gamma(void)
{
    void *p = malloc(4321);
    if (!p)
        die("malloc");
    sink(p);
}

static NOINLINE void delta(void)
{
    for (int i = 0; i < 5; i++) {
        void *p = malloc(333);
        if (!p)
            die("malloc");
        sink(p);
        free(p);
    }
}

static NOINLINE void epsilon(long page)
{
    void *p =
        mmap(NULL, (size_t)(16 * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        die("mmap");
    sink(p);
}

static NOINLINE void zeta(void)
{
    void *p = malloc(2222);
    if (!p)
        die("malloc");
    sink(p);
}

int main(int argc, char **argv)
{
    long page = sysconf(_SC_PAGESIZE);
    put_kv("page_size", (unsigned long long)page);
    put_kv("pid", (unsigned long long)getpid());
    delta();
    alpha();
    gamma();
    epsilon(page);
    for (int i = 0; i < 7; i++)
        free(blocks[i]);
    if (argc > 1 && strcmp(argv[1], "fork") == 0) {
        pid_t pid = fork();
        if (pid < 0)
            die("fork");
        if (pid == 0) {
            zeta();
            _exit(0);
        }
        int st;
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            die("child");
        put_kv("child_pid", (unsigned long long)pid);
    }
    return 0;
}
