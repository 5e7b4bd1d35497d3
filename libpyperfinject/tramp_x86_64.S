/* The trampoline template: one copy per Python code object.
 *
 * Called as tramp(a0, a1, a2, evaluator): the first three argument registers
 * pass through untouched to the real evaluator, so one template serves the
 * 2-argument (3.6-3.8) and 3-argument (3.9+) eval-frame signatures.
 *
 * It keeps a frame record (push/mov %rbp) so frame-pointer unwinders (perf -g,
 * samply) walk through it; DWARF unwinders get eh_frame built from the labels
 * below (ehframe.c), so the CFI always matches these exact bytes.
 *
 * After `ret`: int3 padding to 8 bytes, then an 8-byte tag the arena fills
 * with a per-slot unique value. It is never executed; it makes the bytes of
 * every copy differ, so perf's build-ids (a hash of the code) differ too.
 */
#if defined(__x86_64__)
        .section .rodata.pyperfinject_tramp, "a"
        .p2align 4
        .globl pi_tramp_start, pi_tramp_after_push, pi_tramp_after_setfp
        .globl pi_tramp_after_pop, pi_tramp_tag, pi_tramp_end
        .hidden pi_tramp_start, pi_tramp_after_push, pi_tramp_after_setfp
        .hidden pi_tramp_after_pop, pi_tramp_tag, pi_tramp_end
pi_tramp_start:
#if defined(__CET__)
        endbr64
#endif
        push    %rbp
pi_tramp_after_push:
        mov     %rsp, %rbp
pi_tramp_after_setfp:
        call    *%rcx
        pop     %rbp
pi_tramp_after_pop:
        ret
        .p2align 3, 0xcc
pi_tramp_tag:
        .quad   0
pi_tramp_end:
#endif
        .section .note.GNU-stack, "", @progbits
