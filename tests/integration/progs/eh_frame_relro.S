/* SPDX-License-Identifier: MIT
 *
 * eh_frame_relro.S - linked into eh_pages_w (test_eh_pages.py): a .eh_frame
 * input section that is writable ("aw"), as libnvrtc and libnvJitLink of
 * CUDA 13 have theirs, so that the linker puts the program's whole
 * .eh_frame into the writable segment, under PT_GNU_RELRO, away from
 * .eh_frame_hdr. Its hand-written CIE holds an absolute address (the
 * personality pointer, DW_EH_PE_absptr, of `malloc`: an undefined symbol,
 * so the linker cannot turn it into a relative one), which the loader
 * relocates into an anonymous copy of that page: the page the tracker must
 * never give back. relro_abs_fn allocates under that CIE's FDE (relro_fde);
 * 400 small functions after it keep that page inside the tables' range.
 */
    .text
    .globl relro_abs_fn
    .hidden relro_abs_fn
    .type relro_abs_fn, @function
relro_abs_fn:
.Lf0:
    sub $8, %rsp
.Lf1:
    mov $16, %edi
    call malloc@PLT
    mov %rax, %rdi
    call free@PLT
    add $8, %rsp
.Lf2:
    ret
.Lf3:
    .size relro_abs_fn, .-relro_abs_fn

    .section .eh_frame,"aw",@progbits
.Lcie:
    .long .Lcie_end - .Lcie_id
.Lcie_id:
    .long 0                 /* a CIE */
    .byte 1                 /* version */
    .asciz "zPR"
    .uleb128 1              /* code alignment */
    .sleb128 -8             /* data alignment */
    .uleb128 16             /* return address: r16 */
    .uleb128 10             /* augmentation data: P's encoding and pointer, R's encoding */
    .byte 0x00              /* DW_EH_PE_absptr */
    .quad malloc            /* at the CIE's byte 18: eh_pages.c reads it */
    .byte 0x1b              /* FDEs: pcrel sdata4 */
    .byte 0x0c, 7, 8        /* DW_CFA_def_cfa rsp+8 */
    .byte 0x90, 1           /* DW_CFA_offset r16 at cfa-8 */
    .balign 8, 0
.Lcie_end:
    .long .Lfde_end - .Lfde_cie
.Lfde_cie:
    .long .Lfde_cie - .Lcie
    .long relro_abs_fn - .
    .long .Lf3 - .Lf0
    .uleb128 0
    .byte 0x02, .Lf1 - .Lf0 /* DW_CFA_advance_loc1 */
    .byte 0x0e, 16          /* DW_CFA_def_cfa_offset */
    .byte 0x02, .Lf2 - .Lf1
    .byte 0x0e, 8
    .balign 8, 0
.Lfde_end:

    .text
    .rept 400
    .cfi_startproc
    nop
    ret
    .cfi_endproc
    .endr
    .section .note.GNU-stack,"",@progbits
