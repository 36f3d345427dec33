/* SPDX-License-Identifier: MIT
 *
 * leak_fork_inherited.c - a fork child whose only pointer to a block of
 * its own lies in a block it inherited (test_leak_gate_programs.py): the
 * parent allocates a holder (reached from a global) and forks; the child
 * stores a new block of 3101 bytes (lfi_held) in the holder, loses one of
 * 3102 bytes (lfi_lost), and exits. Its capture does not list the holder
 * (the reader replays it from the parent's), but the leak scan must still
 * find the held block reachable: bash's subshells keep their words so.
 * No stdio: its buffer would be one more block.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINL __attribute__((noinline))

void **g_holder;

static NOINL void *lfi_holder(void) { return calloc(8, sizeof(void *)); }
static NOINL void *lfi_held(void) { return malloc(3101); }
static NOINL void *lfi_lost(void) { return malloc(3102); }

static NOINL void child(void)
{
    g_holder[3] = lfi_held();
    void *volatile p = lfi_lost();
    p = NULL;
    (void)p;
}

static NOINL void scrub(void)
{
    volatile char big[16384];
    memset((void *)big, 0, sizeof(big));
}

int main(void)
{
    g_holder = lfi_holder();
    pid_t pid = fork();
    if (pid == 0) {
        child();
        scrub();
        exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
