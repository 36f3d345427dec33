/* SPDX-License-Identifier: MIT
 *
 * fds.h - the tracker's own descriptors (fds.c).
 */
#ifndef TRK_CAPTURE_FDS_H
#define TRK_CAPTURE_FDS_H

#include "prim/base.h"

/* ---- The tracker's own descriptors (fds.c) -------------------------------------
 *
 * Kept high and close-on-exec, out of the program's way; the preload's
 * close/close_range/closefrom/dup2/dup3 hooks treat them as not open. */
enum trk_fd_role {
    TRK_FD_CAPTURE,
    TRK_FD_STATM,
    TRK_FD_UNW_READ,
    TRK_FD_UNW_WRITE,
    TRK_FD_PAGEMAP, /* /proc/self/pagemap, for eh_trim.c */
    TRK_FD_ROLES
};
/* Moves fd above the floor (close-on-exec) and registers it for role; copy,
 * if given, is another holder of the number kept up to date. Returns it. */
int trk_fd_adopt(enum trk_fd_role role, int fd, int *copy) TRK_HIDDEN;
void trk_fd_release(enum trk_fd_role role) TRK_HIDDEN; /* closes and forgets */
/* Opens path read-only as role's file (adopted), or releases role where it
 * cannot be opened. On the program's thread only (issue 14 item 7). */
void trk_fd_open_proc(enum trk_fd_role role, const char *path) TRK_HIDDEN;
int trk_fd_get(enum trk_fd_role role) TRK_HIDDEN;
int trk_fd_role_of(int fd) TRK_HIDDEN; /* the role of a registered number, else -1 */
/* A user of the number: between pin and unpin it is never handed to the program. */
int trk_fd_pin(enum trk_fd_role role) TRK_HIDDEN;
void trk_fd_unpin(enum trk_fd_role role) TRK_HIDDEN;
/* Is fd still the file registered for role (same st_dev and st_ino)? */
int trk_fd_intact(enum trk_fd_role role, int fd) TRK_HIDDEN;
/* Before the program's dup2 onto fd: moves ours elsewhere. 0, or -1 if ours
 * had to be given up. */
int trk_fd_vacate(int fd) TRK_HIDDEN;
int trk_fd_raw_close(int fd) TRK_HIDDEN;

#endif /* TRK_CAPTURE_FDS_H */
