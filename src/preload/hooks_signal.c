/* SPDX-License-Identifier: MIT
 *
 * hooks_signal.c - sigprocmask, for libunwind's sake only: the calls it
 * makes during the tracker's own unwinds go to trk_unw_sigprocmask
 * (stacks.c), which blocks signals once per unwind instead of twice per
 * frame. Everyone else's calls, the program's included, are glibc's
 * sigprocmask exactly (pthread_sigmask with errno).
 */
#include <errno.h>
#include <signal.h>

#include "preload/preload.h"

TRK_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    if (TRK_UNLIKELY(trk_tl_unw) && trk_unw_calls((uintptr_t)__builtin_return_address(0)))
        return trk_unw_sigprocmask(how, set, old);
    int rc = pthread_sigmask(how, set, old);
    if (rc == 0)
        return 0;
    errno = rc;
    return -1;
}
