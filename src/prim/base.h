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

#endif /* TRK_PRIM_BASE_H */
