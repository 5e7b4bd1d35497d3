/* The trampoline template for aarch64; see tramp_x86_64.S for the contract.
 * tramp(a0, a1, a2, evaluator): x0-x2 pass through, x3 is the evaluator.
 * A frame record (x29, x30) keeps frame-pointer unwinders working; no PAC
 * signing inside (the hand-built CFI does not describe it), a BTI landing pad
 * when the build uses branch protection. */
#if defined(__aarch64__)
        .section .rodata.pyperfinject_tramp, "a"
        .p2align 4
        .globl pi_tramp_start, pi_tramp_after_push, pi_tramp_after_setfp
        .globl pi_tramp_after_pop, pi_tramp_tag, pi_tramp_end
        .hidden pi_tramp_start, pi_tramp_after_push, pi_tramp_after_setfp
        .hidden pi_tramp_after_pop, pi_tramp_tag, pi_tramp_end
pi_tramp_start:
#if defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
        hint    34              /* bti c */
#endif
        stp     x29, x30, [sp, -16]!
pi_tramp_after_push:
        mov     x29, sp
pi_tramp_after_setfp:
        blr     x3
        ldp     x29, x30, [sp], 16
pi_tramp_after_pop:
        ret
        .p2align 3
pi_tramp_tag:
        .quad   0
pi_tramp_end:
#endif
        .section .note.GNU-stack, "", @progbits
#if defined(__aarch64__) && (defined(__ARM_FEATURE_BTI_DEFAULT) || defined(__ARM_FEATURE_PAC_DEFAULT))
#if defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
#define PI_PROP_BTI 1
#else
#define PI_PROP_BTI 0
#endif
#if defined(__ARM_FEATURE_PAC_DEFAULT) && __ARM_FEATURE_PAC_DEFAULT
#define PI_PROP_PAC 2
#else
#define PI_PROP_PAC 0
#endif
        .pushsection .note.gnu.property, "a"
        .p2align 3
        .word   4                       /* name size */
        .word   16                      /* descriptor size */
        .word   5                       /* NT_GNU_PROPERTY_TYPE_0 */
        .asciz  "GNU"
        .word   0xc0000000              /* GNU_PROPERTY_AARCH64_FEATURE_1_AND */
        .word   4
        .word   PI_PROP_BTI | PI_PROP_PAC
        .word   0
        .popsection
#endif
