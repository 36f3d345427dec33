/* SPDX-License-Identifier: MIT
 *
 * real.h - the next definitions (dlsym RTLD_NEXT) of every function the
 * preload interposes, and the bootstrap arena that serves allocations made
 * while those are still being looked up (dlsym itself calls calloc).
 *
 * The bottom of the injected library (as mimalloc keeps prim.h under
 * everything): any layer may reach the real functions here without going
 * through, or knowing about, the preload's hooks.
 */
#ifndef TRK_PRIM_REAL_H
#define TRK_PRIM_REAL_H

#include <pthread.h>
#include <spawn.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "prim/base.h"

struct trk_real_fns {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void (*free)(void *);
    void *(*reallocarray)(void *, size_t, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    void (*free_sized)(void *, size_t);
    void (*free_aligned_sized)(void *, size_t, size_t);
    void *(*mallocx)(size_t, int);
    void *(*rallocx)(void *, size_t, int);
    size_t (*xallocx)(void *, size_t, size_t, int);
    void (*dallocx)(void *, int);
    void (*sdallocx)(void *, size_t, int);
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    void *(*mmap64)(void *, size_t, int, int, int, off_t);
    int (*munmap)(void *, size_t);
    void *(*mremap)(void *, size_t, size_t, int, ...);
    void *(*dlopen)(const char *, int);
    int (*dlclose)(void *);
    int (*execve)(const char *, char *const[], char *const[]);
    int (*execv)(const char *, char *const[]);
    int (*execvp)(const char *, char *const[]);
    int (*execvpe)(const char *, char *const[], char *const[]);
    int (*fexecve)(int, char *const[], char *const[]);
    int (*posix_spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                       const posix_spawnattr_t *, char *const[], char *const[]);
    int (*posix_spawnp)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);
    int (*clone)(int (*)(void *), void *, int, void *, ...);
    void (*exit_now)(int);  /* _exit */
    void (*exit_now2)(int); /* _Exit */
    int (*pthread_setname_np)(pthread_t, const char *);
    int (*prctl)(int, unsigned long, unsigned long, unsigned long, unsigned long);
    /* descriptors (hooks_fd.c) */
    int (*close)(int);
    int (*close_range)(unsigned int, unsigned int, int);
    void (*closefrom)(int);
    int (*dup2)(int, int);
    int (*dup3)(int, int, int);
    int (*pipe2)(int[2], int);
    int (*dup)(int);
    int (*fcntl)(int, int, ...);
    int (*fcntl64)(int, int, ...);
    int (*fstat)(int, struct stat *);
    int (*fstat64)(int, struct stat64 *);
};

extern struct trk_real_fns trk_real TRK_HIDDEN;

/* Looks up every trk_real entry once; safe to call from any hook. */
void trk_resolve(void) TRK_HIDDEN;
/* Looks up one optional symbol again (jemalloc's API may appear later). */
void *trk_resolve_one(const char *name) TRK_HIDDEN;

void *trk_boot_alloc(size_t size, size_t align) TRK_HIDDEN;
size_t trk_boot_size(const void *p) TRK_HIDDEN;
extern char trk_boot_arena[] TRK_HIDDEN;
#define TRK_BOOT_ARENA_SIZE (256u << 10)

static inline int trk_boot_owns(const void *p)
{
    return (const char *)p >= trk_boot_arena &&
           (const char *)p < trk_boot_arena + TRK_BOOT_ARENA_SIZE;
}

#endif /* TRK_PRIM_REAL_H */
