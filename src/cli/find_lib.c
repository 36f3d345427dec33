/* SPDX-License-Identifier: MIT
 *
 * find_lib.c - locates libtracker.so for `tracker run`, so that a build tree
 * and an installed tree both work without configuration. Order: $TRACKER_LIB;
 * beside the executable (the build tree); ../lib/<multiarch>, ../lib,
 * ../lib64 relative to it; the configured install libdir. Must not: fall back
 * to the loader's search path (a relative LD_PRELOAD name would resolve
 * differently in the child).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/env_options.h"
#include "trk_config.h"

#define LIB_NAME "libtracker.so"

/* Debian-style multiarch directory of this build's architecture. */
#if defined(__x86_64__)
#define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#elif defined(__i386__)
#define MULTIARCH "i386-linux-gnu"
#else
#define MULTIARCH "unknown"
#endif

static bool is_file(const char *p)
{
    return access(p, R_OK) == 0;
}

/* Stores the absolute form of p in buf. */
static int absolute(const char *p, char *buf, size_t len)
{
    char *rp = realpath(p, NULL);
    if (!rp)
        return -1;
    int n = snprintf(buf, len, "%s", rp);
    free(rp);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int trk_find_lib(char *buf, size_t len)
{
    const char *env = getenv(TRK_ENV_NAME(LIB));
    if (env && *env) {
        if (is_file(env) && absolute(env, buf, len) == 0)
            return 0;
        snprintf(buf, len, TRK_ENV_NAME(LIB) "=%s: %s", env, strerror(errno ? errno : ENOENT));
        return -1;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            static const char *const rel[] = {
                "/" LIB_NAME,
                "/../lib/" MULTIARCH "/" LIB_NAME,
                "/../lib/" LIB_NAME,
                "/../lib64/" LIB_NAME,
            };
            for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
                char cand[PATH_MAX + 64];
                snprintf(cand, sizeof(cand), "%s%s", exe, rel[i]);
                if (is_file(cand) && absolute(cand, buf, len) == 0)
                    return 0;
            }
        }
    }
    const char *installed = TRK_INSTALL_LIBDIR "/" LIB_NAME;
    if (is_file(installed) && absolute(installed, buf, len) == 0)
        return 0;
    snprintf(buf, len,
             "cannot find %s (looked beside the tracker executable and in %s; "
             "set " TRK_ENV_NAME(LIB) ")",
             LIB_NAME, TRK_INSTALL_LIBDIR);
    return -1;
}
