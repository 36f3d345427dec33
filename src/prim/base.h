/* SPDX-License-Identifier: MIT
 *
 * base.h - the attribute macros every in-process layer uses (src/prim,
 * src/capture, src/python, src/gpu, src/preload). No declarations.
 */
#ifndef TRK_PRIM_BASE_H
#define TRK_PRIM_BASE_H

#define TRK_HIDDEN      __attribute__((visibility("hidden")))
#define TRK_LIKELY(x)   __builtin_expect(!!(x), 1)
#define TRK_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TRK_TLS         __attribute__((tls_model("initial-exec")))
/* For a hook's shared body: trk_enter must end up inside the exported
 * hook itself (see trk_nested_is_ours). */
#define TRK_HOOK_INLINE __attribute__((always_inline)) static inline

/* An exported hook returns with the call-clobbered registers zeroed (its
 * result aside): whatever our bookkeeping left in them - the block just
 * allocated, in r9 - is not the program's, and the exit-time leak scan
 * takes a stopped thread's registers for roots (capture/leakscan.h; a
 * block the program lost right after malloc returned would read as still
 * reachable). A few xors per call. */
#if defined(__has_attribute)
#if __has_attribute(zero_call_used_regs)
#define TRK_ZERO_REGS __attribute__((zero_call_used_regs("all-gpr")))
#endif
#endif
#ifndef TRK_ZERO_REGS
#define TRK_ZERO_REGS
#endif
#define TRK_EXPORT __attribute__((visibility("default"))) TRK_ZERO_REGS

#endif /* TRK_PRIM_BASE_H */
