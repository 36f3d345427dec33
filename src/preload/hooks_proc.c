/* SPDX-License-Identifier: MIT
 *
 * hooks_proc.c - process-level events: dlopen/dlclose (module snapshots),
 * the exec family and posix_spawn (flush before the image goes, and make
 * sure the child still carries the preload), _exit/_Exit (flush, since
 * atexit will not run), and thread naming (pthread_setname_np, prctl).
 *
 * Nothing here allocates: argument and environment vectors are built on the
 * stack.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/gpu_events.h"
#include "preload/real.h"
#include "python/python.h"

extern char **environ;

/* ---- dlopen / dlclose --------------------------------------------------- */

static void snapshot_if_changed(void)
{
    struct trk_thread *t = trk_enter();
    if (!t)
        return;
    int saved = errno;
    if (trk_modules_changed(t))
        trk_modules_snapshot(t);
    errno = saved;
    trk_leave();
}

static int has_search_path(struct link_map *lm)
{
    for (const ElfW(Dyn) *d = lm->l_ld; d && d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_RUNPATH || d->d_tag == DT_RPATH)
            return 1;
    return 0;
}

/* glibc resolves a bare dlopen name with the *caller's* RUNPATH, and the
 * caller it sees is now us. When the real caller has a search path of its
 * own, look the name up along that caller's path list (dlinfo SERINFO) and
 * open the full path; otherwise the plain call searches the same places. */
static void *dlopen_for(const char *file, int mode, const void *caller)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (!file || strchr(file, '/') || !dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) ||
        !lm || !has_search_path(lm))
        return trk_real.dlopen(file, mode);

    void *self =
        trk_real.dlopen(lm->l_name && *lm->l_name ? lm->l_name : NULL, RTLD_LAZY | RTLD_NOLOAD);
    if (!self)
        return trk_real.dlopen(file, mode);
    _Alignas(Dl_serinfo) char buf[16384];
    Dl_serinfo *si = (Dl_serinfo *)buf;
    void *h = NULL;
    if (dlinfo(self, RTLD_DI_SERINFOSIZE, si) == 0 && si->dls_size <= sizeof(buf)) {
        size_t fl = strlen(file);
        si->dls_size = sizeof(buf);
        if (dlinfo(self, RTLD_DI_SERINFO, si) == 0) {
            for (unsigned i = 0; i < si->dls_cnt && !h; i++) {
                const char *dir = si->dls_serpath[i].dls_name;
                size_t dl = strlen(dir);
                char path[4096];
                if (dl + fl + 2 > sizeof(path))
                    continue;
                memcpy(path, dir, dl);
                path[dl] = '/';
                memcpy(path + dl + 1, file, fl + 1);
                if (access(path, F_OK) == 0)
                    h = trk_real.dlopen(path, mode);
            }
        }
    }
    trk_real.dlclose(self);
    return h ? h : trk_real.dlopen(file, mode);
}

TRK_EXPORT void *dlopen(const char *file, int mode)
{
    if (!trk_real.dlopen)
        trk_resolve();
    void *h = dlopen_for(file, mode, __builtin_return_address(0));
    if (h) {
        snapshot_if_changed();
        trk_py_after_dlopen();
        if (trk_gpu_nvml_start && atomic_load_explicit(&trk_active, memory_order_relaxed))
            trk_gpu_nvml_start(); /* the driver may have come in with this load */
    }
    return h;
}

TRK_EXPORT int dlclose(void *h)
{
    if (!trk_real.dlclose)
        trk_resolve();
    int rc = trk_real.dlclose(h);
    if (rc == 0)
        snapshot_if_changed();
    return rc;
}

/* ---- exec and spawn -------------------------------------------------------- */

static const char *const env_names[] = {
    "LD_PRELOAD",        "TRACKER_OUTPUT", "TRACKER_ROOT_PID",    "TRACKER_SESSION",
    "TRACKER_DEPTH",     "TRACKER_MMAP",   "TRACKER_FOLLOW_FORK", "TRACKER_BUFFER_KB",
    "TRACKER_FORCE",     "TRACKER_QUIET",  "TRACKER_RSS_MS",      "TRACKER_FLUSH_MS",
    "TRACKER_LZ4_ACCEL",
};
#define N_ENV (sizeof(env_names) / sizeof(env_names[0]))

static char env_store[16384];
static char *env_vars[N_ENV];
static char self_path[4096];

/* Remembers TRACKER_* and our own path at start: a program that execs with
 * a rebuilt environment (env -i, subprocess with env=...) must still start
 * its child under the tracker, with the same run settings. */
void trk_env_capture(void)
{
    Dl_info info;
    if (dladdr((void *)&trk_env_capture, &info) && info.dli_fname)
        strncpy(self_path, info.dli_fname, sizeof(self_path) - 1);
    size_t used = 0;
    for (size_t i = 0; i < N_ENV; i++) {
        const char *v = getenv(env_names[i]);
        if (i == 0)
            v = self_path[0] ? self_path : NULL; /* LD_PRELOAD: just us */
        if (!v)
            continue;
        size_t nl = strlen(env_names[i]), vl = strlen(v);
        if (used + nl + vl + 2 > sizeof(env_store))
            break;
        env_vars[i] = env_store + used;
        memcpy(env_store + used, env_names[i], nl);
        env_store[used + nl] = '=';
        memcpy(env_store + used + nl + 1, v, vl + 1);
        used += nl + vl + 2;
    }
}

static int env_find(char *const envp[], const char *name, size_t nl)
{
    for (int i = 0; envp && envp[i]; i++)
        if (strncmp(envp[i], name, nl) == 0 && envp[i][nl] == '=')
            return i;
    return -1;
}

#define ENV_MAX 4096

/* Fills out[] with envp plus whatever of ours it lacks. LD_PRELOAD that does
 * not name us gets us prepended (into preload_buf). Returns out, or envp
 * itself when it is too large to copy. */
static char *const *env_inject(char *const envp[], char **out, char *preload_buf, size_t pbsize)
{
    int n = 0;
    while (envp && envp[n])
        n++;
    if (n + (int)N_ENV + 1 > ENV_MAX)
        return envp;
    for (int i = 0; i < n; i++)
        out[i] = envp[i];
    for (size_t k = 0; k < N_ENV; k++) {
        if (!env_vars[k])
            continue;
        size_t nl = strlen(env_names[k]);
        int at = env_find(envp, env_names[k], nl);
        if (at < 0) {
            out[n++] = env_vars[k];
        } else if (k == 0 && !strstr(envp[at] + nl + 1, self_path)) {
            size_t sl = strlen(self_path), rl = strlen(envp[at] + nl + 1);
            if (nl + sl + rl + 3 <= pbsize) {
                memcpy(preload_buf, "LD_PRELOAD=", nl + 1);
                memcpy(preload_buf + nl + 1, self_path, sl);
                preload_buf[nl + 1 + sl] = ' ';
                memcpy(preload_buf + nl + 2 + sl, envp[at] + nl + 1, rl + 1);
                out[at] = preload_buf;
            }
        }
    }
    out[n] = NULL;
    return out;
}

#define WITH_ENV(envp, var)                                                                        \
    char *var##_vec[ENV_MAX];                                                                      \
    char var##_pre[8192];                                                                          \
    char *const *var = env_inject(envp, var##_vec, var##_pre, sizeof(var##_pre))

/* The image is about to be replaced: everything recorded so far must reach
 * the file, ending with END(exec). A vfork child shares our memory but not
 * our pid, and must not touch the parent's capture. */
static void before_exec(void)
{
    int saved = errno;
    if (atomic_load(&trk_active) && getpid() == trk_pid)
        trk_writer_finish(TRK_END_EXEC, 0);
    errno = saved;
}

TRK_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    if (!trk_real.execve)
        trk_resolve();
    WITH_ENV(envp, env);
    before_exec();
    return trk_real.execve(path, argv, env);
}

TRK_EXPORT int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

TRK_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    if (!trk_real.execvpe)
        trk_resolve();
    WITH_ENV(envp, env);
    before_exec();
    return trk_real.execvpe(file, argv, env);
}

TRK_EXPORT int execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}

TRK_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    if (!trk_real.fexecve)
        trk_resolve();
    WITH_ENV(envp, env);
    before_exec();
    return trk_real.fexecve(fd, argv, env);
}

#define COLLECT_ARGS(first, argv, extra_envp)                                                      \
    va_list ap;                                                                                    \
    size_t argc = 1;                                                                               \
    va_start(ap, first);                                                                           \
    while (va_arg(ap, char *))                                                                     \
        argc++;                                                                                    \
    va_end(ap);                                                                                    \
    char *argv[argc + 1];                                                                          \
    argv[0] = (char *)first;                                                                       \
    va_start(ap, first);                                                                           \
    for (size_t i = 1; i <= argc; i++)                                                             \
        argv[i] = va_arg(ap, char *);                                                              \
    extra_envp;                                                                                    \
    va_end(ap)

TRK_EXPORT int execl(const char *path, const char *arg, ...)
{
    COLLECT_ARGS(arg, argv, (void)0);
    return execve(path, argv, environ);
}

TRK_EXPORT int execlp(const char *file, const char *arg, ...)
{
    COLLECT_ARGS(arg, argv, (void)0);
    return execvpe(file, argv, environ);
}

TRK_EXPORT int execle(const char *path, const char *arg, ...)
{
    char *const *envp;
    COLLECT_ARGS(arg, argv, envp = va_arg(ap, char *const *));
    return execve(path, argv, envp);
}

TRK_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    if (!trk_real.posix_spawn)
        trk_resolve();
    WITH_ENV(envp, env);
    return trk_real.posix_spawn(pid, path, fa, attr, argv, env);
}

TRK_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                            const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    if (!trk_real.posix_spawnp)
        trk_resolve();
    WITH_ENV(envp, env);
    return trk_real.posix_spawnp(pid, file, fa, attr, argv, env);
}

/* ---- _exit ------------------------------------------------------------------ */

static __attribute__((noreturn)) void exit_now(void (*real)(int), int status)
{
    if (atomic_load(&trk_active) && getpid() == trk_pid)
        trk_writer_finish(TRK_END_UEXIT, 1);
    if (real)
        real(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

TRK_EXPORT void _exit(int status)
{
    if (!trk_real.exit_now)
        trk_resolve();
    exit_now(trk_real.exit_now, status);
}

TRK_EXPORT void _Exit(int status)
{
    if (!trk_real.exit_now2)
        trk_resolve();
    exit_now(trk_real.exit_now2, status);
}

/* ---- thread names --------------------------------------------------------- */

TRK_EXPORT int pthread_setname_np(pthread_t th, const char *name)
{
    if (!trk_real.pthread_setname_np)
        trk_resolve();
    int rc = trk_real.pthread_setname_np(th, name);
    if (rc == 0) {
        struct trk_thread *t = trk_enter();
        if (t) {
            pid_t tid = pthread_equal(th, pthread_self()) ? t->tid : trk_thread_tid_of(th);
            if (tid)
                trk_ev_thread_name(t, tid, name);
            trk_leave();
        }
    }
    return rc;
}

TRK_EXPORT int prctl(int option, ...)
{
    va_list ap;
    va_start(ap, option);
    unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
    unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
    va_end(ap);
    if (!trk_real.prctl)
        trk_resolve();
    int rc = trk_real.prctl ? trk_real.prctl(option, a2, a3, a4, a5)
                            : (int)syscall(SYS_prctl, option, a2, a3, a4, a5);
    if (rc == 0 && option == PR_SET_NAME) {
        int saved = errno;
        struct trk_thread *t = trk_enter();
        if (t) {
            char name[17];
            strncpy(name, (const char *)a2, 16);
            name[16] = 0;
            trk_ev_thread_name(t, t->tid, name);
            trk_leave();
        }
        errno = saved;
    }
    return rc;
}
