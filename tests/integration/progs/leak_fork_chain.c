/* SPDX-License-Identifier: MIT
 *
 * leak_fork_chain.c - a fork child links a block of its own to a list the
 * parent built before the fork, for test_leak_scan_signals.py (the
 * exit-time leak scan in a fork child). The child's capture records only
 * the child's allocations; the parent's list node, inherited and still
 * reachable from a global, holds the only pointer to the child's block,
 * which is therefore still reachable, not lost. The child also loses one
 * block of its own (definitely lost).
 *
 * usage: leak_fork_chain
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

struct node {
    struct node *next;
    char pad[120];
};

static struct node *head;

__attribute__((noinline)) static struct node *parent_node(void)
{
    return calloc(1, sizeof(struct node)); /* @parent */
}

__attribute__((noinline)) static struct node *child_node(void)
{
    return calloc(1, 3333); /* @child */
}

__attribute__((noinline)) static void *child_lost(void)
{
    return malloc(4444); /* @lost */
}

int main(void)
{
    head = parent_node();
    if (!head)
        die("calloc");
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        head->next = child_node();
        void *volatile p = child_lost();
        sink(p);
        p = NULL;
        exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    put_kv("child_status", (unsigned long long)st);
    return 0;
}
