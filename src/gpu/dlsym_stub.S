/* SPDX-License-Identifier: MIT
 *
 * dlsym_stub.S - the entry of our dlsym interposer (x86-64).
 *
 * Owns only the dispatch on the handle. glibc's dlsym derives the scope of
 * RTLD_NEXT and RTLD_DEFAULT from its *return address*; a C forwarder would
 * make every such lookup look like it came from libtracker.so, so another
 * preload's dlsym(RTLD_NEXT, "puts") would get its own puts back and recurse
 * (docs/GPU_INTERNALS.md §2 item 5, §3 item 2). So those two handles tail-jump into
 * libc's dlsym with the caller's return address still on the stack; only a
 * real handle (a library's own, where the runtime looks up
 * cuGetProcAddress_v2) goes to C, which wraps what it finds. Must not: touch
 * the stack frame on the tail-jump path, or clobber the argument registers
 * before the jump. Never allocates.
 */
#if defined(__x86_64__)

    .text
    .globl  dlsym
    .type   dlsym, @function
    .hidden trk_dlsym_slow
    .hidden trk_gpu_dlsym_real
    .hidden trk_gpu_dlsym_real_get
    .p2align 4
dlsym:
    .cfi_startproc
#ifdef __CET__
    endbr64
#endif
    testq   %rdi, %rdi              /* RTLD_DEFAULT (0) */
    je      1f
    cmpq    $-1, %rdi               /* RTLD_NEXT (-1) */
    je      1f
    jmp     trk_dlsym_slow          /* a real handle: same arguments, C */
1:
    movq    trk_gpu_dlsym_real(%rip), %rax
    testq   %rax, %rax
    je      2f
    jmp     *%rax                   /* libc's dlsym sees our caller */
2:
    /* First use: find libc's dlsym, keeping the two arguments. Entry %rsp is
     * 8 mod 16; three pushes' worth makes the call 16-byte aligned. */
    pushq   %rdi
    .cfi_adjust_cfa_offset 8
    pushq   %rsi
    .cfi_adjust_cfa_offset 8
    subq    $8, %rsp
    .cfi_adjust_cfa_offset 8
    call    trk_gpu_dlsym_real_get
    addq    $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq    %rsi
    .cfi_adjust_cfa_offset -8
    popq    %rdi
    .cfi_adjust_cfa_offset -8
    testq   %rax, %rax
    je      3f
    jmp     *%rax
3:
    xorl    %eax, %eax              /* no dlsym in libc: nothing found */
    ret
    .cfi_endproc
    .size   dlsym, .-dlsym

#endif

    .section .note.GNU-stack, "", @progbits
