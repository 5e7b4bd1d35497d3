/* jitdump checker: parses a whole /tmp/jit-PID.dump image and reports every
 * broken invariant, for unit tests (on encoder output) and, through
 * jitdump_check_main.c, for shell tests on dumps written by a real process.
 *
 * What it verifies, beyond "perf can read it":
 *   - header: magic (a swapped magic is reported, not followed), version 1,
 *     total_size 40, elf_mach 62 or 183, pad1 0, pid (== expect_pid if set),
 *     no unknown flags;
 *   - records: known ids, sizes consistent with their contents, timestamps
 *     non-decreasing, code_index strictly increasing, nothing after CLOSE;
 *   - grouping: DEBUG_INFO and UNWINDING_INFO attach to the next CODE_LOAD;
 *     an UNWINDING_INFO is immediately followed by its CODE_LOAD, and every
 *     CODE_LOAD has one;
 *   - code: the bytes are a known trampoline template for elf_mach (this is
 *     how instruction boundaries are found), no two loads have identical
 *     bytes (perf would give them the same build-id);
 *   - unwind data, decoded independently of the builder: CIE and FDE fields,
 *     the FDE's pc-relative start pointing exactly at the code under the slot
 *     layout (code, then .eh_frame at round8(code_size), then .eh_frame_hdr),
 *     address_range == code_size, the hdr's pointers and table, and the CFA
 *     and saved-register rules at every instruction boundary of the template
 *     (a small CFI interpreter);
 *   - layout: the ranges perf inject maps, [addr, addr + round8(size) +
 *     mapped_size), never overlap;
 *   - expected names (fnmatch patterns) each match some CODE_LOAD name.
 * A file that ends inside a record, or after a DEBUG/UNWINDING record whose
 * CODE_LOAD never came, is reported as PI_JDC_TRUNCATED; with
 * allow_truncated that alone does not make the file invalid (a process
 * killed mid-write).
 *
 * A record prefix of size 0 ends the records: the library's zeros after
 * them (mmaplog.h), not yet cut off because the process runs, was killed or
 * left with _exit. What follows may hold one group whose head was never
 * stored (killed mid-group), then zeros; anything further is
 * PI_JDC_AFTER_END. `untrimmed` counts those bytes; with require_trimmed
 * they are PI_JDC_UNTRIMMED (a process that exited normally).
 */
#ifndef PI_JITDUMP_CHECK_H
#define PI_JITDUMP_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pi_jdc_issue {
    PI_JDC_TRUNCATED,          /* file ends mid-record or mid-group */
    PI_JDC_BAD_MAGIC,
    PI_JDC_BAD_VERSION,
    PI_JDC_BAD_HEADER_SIZE,
    PI_JDC_BAD_ELF_MACH,
    PI_JDC_BAD_HEADER,         /* pad1, flags */
    PI_JDC_BAD_PID,            /* header pid 0 / unexpected, or a load's pid differs */
    PI_JDC_BAD_RECORD_SIZE,    /* total_size impossible for the record */
    PI_JDC_UNKNOWN_RECORD,     /* id >= JIT_CODE_MAX */
    PI_JDC_UNSUPPORTED_RECORD, /* CODE_MOVE: this project never moves code */
    PI_JDC_AFTER_CLOSE,
    PI_JDC_TIMESTAMP_ORDER,
    PI_JDC_CODE_INDEX_ORDER,
    PI_JDC_BAD_LOAD,           /* vma != code_addr, tid 0, size 0, no NUL */
    PI_JDC_UNKNOWN_TEMPLATE,   /* code bytes are not a trampoline */
    PI_JDC_DUPLICATE_CODE,
    PI_JDC_OVERLAP,
    PI_JDC_LOAD_WITHOUT_UNWIND,
    PI_JDC_UNWIND_NOT_BEFORE_LOAD, /* next record is not a CODE_LOAD */
    PI_JDC_BAD_UNWIND_RECORD,  /* sizes, hdr_size, mapped_size */
    PI_JDC_UNWIND_PADDING,     /* not 8-aligned or non-zero pad bytes */
    PI_JDC_BAD_EH_FRAME,       /* entry structure: lengths, terminator, count */
    PI_JDC_BAD_CIE,
    PI_JDC_BAD_FDE,
    PI_JDC_FDE_LOCATION,       /* initial_location does not reach the code */
    PI_JDC_FDE_RANGE,          /* address_range != code_size */
    PI_JDC_BAD_EH_HDR,         /* version, encodings, eh_frame_ptr, count */
    PI_JDC_EH_HDR_TABLE,       /* table entry does not name code/FDE */
    PI_JDC_CFI_DECODE,         /* program cannot be interpreted */
    PI_JDC_CFA_RULE,           /* wrong rule at an instruction boundary */
    PI_JDC_BAD_DEBUG_INFO,
    PI_JDC_DEBUG_ADDR,         /* code_addr / entry addr not the next load's */
    PI_JDC_EXPECTED_MISSING,
    PI_JDC_UNTRIMMED,          /* zeros after the records, with require_trimmed */
    PI_JDC_AFTER_END,          /* data beyond the records' end and one unfinished group */
    PI_JDC_ISSUE_COUNT,
};

struct pi_jdc_options {
    bool allow_truncated;
    uint32_t expect_pid;           /* 0: any */
    const char *const *expect;     /* fnmatch patterns for load names */
    size_t n_expect;
    bool require_trimmed;
};

struct pi_jdc_violation {
    enum pi_jdc_issue issue;
    size_t record; /* 1-based record number, 0 for the header / whole file */
    size_t offset; /* file offset of that record */
    char msg[200];
};

/* Records from this code_index on describe CPython's JIT code
 * (libpyperfinject/cpython_jit.c), not trampolines: their code is
 * CPython's, their CFI CPython's own rules in the same layout, and their
 * addresses may be reused once CPython frees them. */
#define PI_JDC_FOREIGN_INDEX (UINT64_C(1) << 40)

struct pi_jdc_load {
    uint64_t addr;
    uint64_t code_size;
    uint64_t code_index;
    uint64_t span; /* bytes perf inject maps: round8(size) + mapped_size */
    char *name;    /* owned by the report */
};

struct pi_jdc_report {
    bool valid;          /* no violation, or only allowed truncation */
    bool truncated;
    size_t untrimmed;    /* bytes from the size-0 prefix that ends the records */
    bool unfinished;     /* ... among them a group whose head was never stored */
    uint32_t elf_mach;
    uint32_t pid;
    size_t records;      /* complete records after the header */
    size_t unwinds, debug_infos, closes;
    struct pi_jdc_load *loads;
    size_t n_loads;
    struct pi_jdc_violation *violations; /* the first PI_JDC_MAX_KEPT */
    size_t n_violations;                 /* kept */
    size_t n_dropped;                    /* beyond the cap */
    size_t count[PI_JDC_ISSUE_COUNT];    /* all, kept or not */
};

#define PI_JDC_MAX_KEPT 1000

/* Checks the dump in buf[0, len). Fills *report (free it with
 * pi_jdc_report_free, also on failure) and returns report->valid.
 * opts may be NULL. */
bool pi_jdc_check(const uint8_t *buf, size_t len, const struct pi_jdc_options *opts,
                  struct pi_jdc_report *report);

/* Reads `path` and checks it. Returns false with *err set (static string)
 * if the file cannot be read; otherwise as pi_jdc_check with err = NULL. */
bool pi_jdc_check_file(const char *path, const struct pi_jdc_options *opts,
                       struct pi_jdc_report *report, const char **err);

void pi_jdc_report_free(struct pi_jdc_report *report);

/* Violations of one kind, counting those beyond the cap. */
size_t pi_jdc_count(const struct pi_jdc_report *report, enum pi_jdc_issue issue);

const char *pi_jdc_issue_name(enum pi_jdc_issue issue);

/* ---- The unwind-data decoder, also usable on pi_ehframe_build output. ---- */

/* A parsed .eh_frame holding one CIE and one FDE (+ optional terminator). */
struct pi_jdc_eh {
    uint32_t cie_size;       /* whole entry, length word included */
    uint32_t cie_id;
    uint8_t version;
    char augmentation[8];
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_column;
    uint8_t fde_encoding;
    const uint8_t *cie_insns;
    size_t cie_insns_len;

    uint32_t fde_offset;     /* from the .eh_frame start */
    uint32_t fde_size;
    uint32_t cie_pointer;
    int32_t pc_begin;        /* raw pcrel value */
    uint32_t pc_range;
    uint64_t fde_aug_len;
    const uint8_t *fde_insns;
    size_t fde_insns_len;

    bool terminated;         /* a zero length word ends the section */
    size_t trailing;         /* bytes after the FDE and terminator */
};

struct pi_jdc_eh_hdr {
    uint8_t version;
    uint8_t eh_frame_ptr_enc;
    uint8_t fde_count_enc;
    uint8_t table_enc;
    int32_t eh_frame_ptr;
    uint32_t fde_count;
    int32_t table_from;
    int32_t table_to;
};

/* Structural parse; returns PI_JDC_ISSUE_COUNT on success, else the issue
 * (PI_JDC_BAD_EH_FRAME / BAD_CIE / BAD_FDE) with a message in err. */
enum pi_jdc_issue pi_jdc_parse_eh_frame(const uint8_t *eh, size_t len, struct pi_jdc_eh *out,
                                        char *err, size_t errlen);
#define PI_JDC_EH_HDR_SIZE 20u /* version, three encodings, four 4-byte fields */
/* Needs len >= PI_JDC_EH_HDR_SIZE; returns false otherwise. */
bool pi_jdc_parse_eh_hdr(const uint8_t *hdr, size_t len, struct pi_jdc_eh_hdr *out);

#define PI_JDC_MAX_REG 33 /* DWARF columns 0..32: covers x86-64 rip, a64 sp */

enum pi_jdc_rule_kind {
    PI_JDC_RULE_SAME,      /* CIE default or DW_CFA_same_value: unchanged */
    PI_JDC_RULE_UNDEFINED,
    PI_JDC_RULE_OFFSET,    /* saved at CFA + off */
    PI_JDC_RULE_OTHER,     /* register / expression: never used here */
};

struct pi_jdc_row {
    uint32_t cfa_reg;
    int64_t cfa_off;
    struct {
        enum pi_jdc_rule_kind kind;
        int64_t off;
    } reg[PI_JDC_MAX_REG];
};

/* The unwind row in effect at byte offset `pc` from the code start (runs
 * the CIE's initial instructions, then the FDE's up to pc). pc must be below
 * pc_range. Returns false with a message if the program cannot be decoded.
 * Pass pc = UINT64_MAX to decode the whole program (validation only). */
bool pi_jdc_row_at(const struct pi_jdc_eh *eh, uint64_t pc, struct pi_jdc_row *row, char *err,
                   size_t errlen);

/* Checks one trampoline's unwind blob (.eh_frame + hdr, as in an
 * UNWINDING_INFO payload) against its code, as the full check does for each
 * load; violations go to *report (record/offset 0). Does not reset it. */
void pi_jdc_check_unwind(uint32_t elf_mach, const uint8_t *code, uint64_t code_size,
                         const uint8_t *unwind, uint64_t unwinding_size, uint64_t hdr_size,
                         struct pi_jdc_report *report);

#endif
