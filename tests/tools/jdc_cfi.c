/* The CFI interpreter behind pi_jdc_row_at (jitdump_check.h): runs a CIE's
 * initial instructions, then an FDE's program up to a pc. It knows every
 * DW_CFA opcode but set_loc, the expression and val_* forms and vendor
 * extensions; those fail with a message rather than being guessed at. */
#include "jitdump_check.h"

#include "ehframe.h"
#include "jdc_cursor.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define NO_CFA_REG UINT32_MAX
#define STATE_STACK 4

struct cfi_vm {
    const struct pi_jdc_eh *eh;
    struct pi_jdc_row row;
    struct pi_jdc_row initial; /* after the CIE: what DW_CFA_restore returns to */
    struct pi_jdc_row stack[STATE_STACK];
    int depth;
    uint64_t loc;
    char *err;
    size_t errlen;
};

static bool vm_fail(struct cfi_vm *vm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool vm_fail(struct cfi_vm *vm, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(vm->err, vm->errlen, fmt, ap);
    va_end(ap);
    return false;
}

static bool vm_reg(struct cfi_vm *vm, uint64_t reg)
{
    if (reg >= PI_JDC_MAX_REG)
        return vm_fail(vm, "register %llu out of range", (unsigned long long)reg);
    return true;
}

/* Wrapping arithmetic: a garbage operand must give a wrong (and then
 * reported) offset, not undefined behaviour (found by fuzz_checker, for
 * register rules and for def_cfa_sf alike). */
static int64_t data_aligned(const struct cfi_vm *vm, int64_t factored)
{
    return (int64_t)((uint64_t)factored * (uint64_t)vm->eh->data_align);
}

static void set_offset(struct cfi_vm *vm, uint64_t reg, int64_t factored)
{
    vm->row.reg[reg].kind = PI_JDC_RULE_OFFSET;
    vm->row.reg[reg].off = data_aligned(vm, factored);
}

/* Runs one instruction list. In the FDE, stops (successfully) at the first
 * advance that would move past `pc`: the row then is the one at pc. */
static bool vm_run(struct cfi_vm *vm, const uint8_t *insns, size_t len, bool in_cie, uint64_t pc)
{
    struct jdc_cursor c = { insns, len, 0, false };

    while (c.off < c.len) {
        size_t at = c.off;
        uint8_t op = jdc_read_u8(&c);
        uint8_t primary = op & PI_DW_CFA_primary_mask;
        uint8_t low = op & PI_DW_CFA_operand_mask;
        uint64_t delta = 0, reg = 0;
        bool is_advance = false;

        if (primary == PI_DW_CFA_advance_loc) {
            delta = low;
            is_advance = true;
        } else if (primary == PI_DW_CFA_offset) {
            reg = low;
            int64_t f = (int64_t)jdc_read_uleb(&c);
            if (!vm_reg(vm, reg))
                return false;
            set_offset(vm, reg, f);
        } else if (primary == PI_DW_CFA_restore) {
            reg = low;
            if (!vm_reg(vm, reg))
                return false;
            vm->row.reg[reg] = vm->initial.reg[reg];
        } else {
            switch (op) {
            case PI_DW_CFA_nop:
                break;
            case PI_DW_CFA_advance_loc1:
                delta = jdc_read_u8(&c);
                is_advance = true;
                break;
            case PI_DW_CFA_advance_loc2:
                delta = jdc_read_u16(&c);
                is_advance = true;
                break;
            case PI_DW_CFA_advance_loc4:
                delta = jdc_read_u32(&c);
                is_advance = true;
                break;
            case PI_DW_CFA_def_cfa:
                vm->row.cfa_reg = (uint32_t)jdc_read_uleb(&c);
                vm->row.cfa_off = (int64_t)jdc_read_uleb(&c);
                break;
            case PI_DW_CFA_def_cfa_sf:
                vm->row.cfa_reg = (uint32_t)jdc_read_uleb(&c);
                vm->row.cfa_off = data_aligned(vm, jdc_read_sleb(&c));
                break;
            case PI_DW_CFA_def_cfa_register:
                if (vm->row.cfa_reg == NO_CFA_REG)
                    return vm_fail(vm, "def_cfa_register before any def_cfa (+%zu)", at);
                vm->row.cfa_reg = (uint32_t)jdc_read_uleb(&c);
                break;
            case PI_DW_CFA_def_cfa_offset:
                if (vm->row.cfa_reg == NO_CFA_REG)
                    return vm_fail(vm, "def_cfa_offset before any def_cfa (+%zu)", at);
                vm->row.cfa_off = (int64_t)jdc_read_uleb(&c);
                break;
            case PI_DW_CFA_def_cfa_offset_sf:
                if (vm->row.cfa_reg == NO_CFA_REG)
                    return vm_fail(vm, "def_cfa_offset_sf before any def_cfa (+%zu)", at);
                vm->row.cfa_off = data_aligned(vm, jdc_read_sleb(&c));
                break;
            case PI_DW_CFA_offset_extended:
                reg = jdc_read_uleb(&c);
                if (!vm_reg(vm, reg))
                    return false;
                set_offset(vm, reg, (int64_t)jdc_read_uleb(&c));
                break;
            case PI_DW_CFA_offset_extended_sf:
                reg = jdc_read_uleb(&c);
                if (!vm_reg(vm, reg))
                    return false;
                set_offset(vm, reg, jdc_read_sleb(&c));
                break;
            case PI_DW_CFA_restore_extended:
                reg = jdc_read_uleb(&c);
                if (!vm_reg(vm, reg))
                    return false;
                vm->row.reg[reg] = vm->initial.reg[reg];
                break;
            case PI_DW_CFA_same_value:
            case PI_DW_CFA_undefined:
                reg = jdc_read_uleb(&c);
                if (!vm_reg(vm, reg))
                    return false;
                vm->row.reg[reg].kind =
                    op == PI_DW_CFA_undefined ? PI_JDC_RULE_UNDEFINED : PI_JDC_RULE_SAME;
                vm->row.reg[reg].off = 0;
                break;
            case PI_DW_CFA_register:
                reg = jdc_read_uleb(&c);
                (void)jdc_read_uleb(&c);
                if (!vm_reg(vm, reg))
                    return false;
                vm->row.reg[reg].kind = PI_JDC_RULE_OTHER;
                break;
            case PI_DW_CFA_remember_state:
                if (vm->depth == STATE_STACK)
                    return vm_fail(vm, "remember_state nested too deep (+%zu)", at);
                vm->stack[vm->depth++] = vm->row;
                break;
            case PI_DW_CFA_restore_state:
                if (vm->depth == 0)
                    return vm_fail(vm, "restore_state without remember_state (+%zu)", at);
                vm->row = vm->stack[--vm->depth]; /* CFA too, as libgcc does */
                break;
            default:
                return vm_fail(vm, "unsupported CFA opcode 0x%02x at +%zu", op, at);
            }
        }
        if (c.bad)
            return vm_fail(vm, "operand of opcode 0x%02x at +%zu runs past the end", op, at);
        if (is_advance) {
            if (in_cie)
                return vm_fail(vm, "advance in the CIE's initial instructions");
            uint64_t next = vm->loc + delta * vm->eh->code_align;
            if (next > vm->eh->pc_range)
                return vm_fail(vm, "advance to +%llu is outside address_range %u",
                               (unsigned long long)next, vm->eh->pc_range);
            if (next > pc)
                return true;
            vm->loc = next;
        }
    }
    return true;
}

bool pi_jdc_row_at(const struct pi_jdc_eh *eh, uint64_t pc, struct pi_jdc_row *row, char *err,
                   size_t errlen)
{
    struct cfi_vm vm;

    memset(&vm, 0, sizeof vm);
    vm.eh = eh;
    vm.err = err;
    vm.errlen = errlen;
    vm.row.cfa_reg = NO_CFA_REG;
    if (pc != UINT64_MAX && pc >= eh->pc_range)
        return vm_fail(&vm, "pc +%llu outside address_range %u", (unsigned long long)pc,
                       eh->pc_range);
    if (eh->code_align == 0)
        return vm_fail(&vm, "code alignment factor 0");
    if (!vm_run(&vm, eh->cie_insns, eh->cie_insns_len, true, pc))
        return false;
    if (vm.row.cfa_reg == NO_CFA_REG)
        return vm_fail(&vm, "CIE defines no CFA");
    vm.initial = vm.row;
    if (!vm_run(&vm, eh->fde_insns, eh->fde_insns_len, false, pc))
        return false;
    *row = vm.row;
    return true;
}
