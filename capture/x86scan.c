// SPDX-License-Identifier: BSD-2-Clause
/*
 * x86-64 walks (contract in x86scan.h). capstone decodes; this file only
 * picks instructions. Why capstone and not a length decoder of our own:
 * x86 instruction lengths depend on prefixes, ModRM/SIB, VEX/EVEX and
 * immediates; one wrong length turns every later boundary into garbage, and
 * a uprobe placed inside an instruction corrupts the traced process.
 */
#include <capstone.h>
#include <errno.h>

#include "x86scan.h"

static int open_cs(csh *h, int detail)
{
	if (cs_open(CS_ARCH_X86, CS_MODE_64, h) != CS_ERR_OK)
		return -ENOMEM;
	if (detail)
		cs_option(*h, CS_OPT_DETAIL, CS_OPT_ON);
	return 0;
}

int x86_rets(const uint8_t *code, size_t len, uint64_t addr, uint64_t *rets, int max)
{
	const uint8_t *p = code;
	uint64_t a = addr;
	size_t left = len;
	cs_insn *insn;
	int n = 0, err = 0;
	csh h;

	if (open_cs(&h, 0))
		return -ENOMEM;
	insn = cs_malloc(h);
	if (!insn) {
		cs_close(&h);
		return -ENOMEM;
	}
	while (left) {
		if (!cs_disasm_iter(h, &p, &left, &a, insn)) {
			err = -EBADMSG;
			break;
		}
		if (insn->id != X86_INS_RET)
			continue;
		if (n == max) {
			err = -E2BIG;
			break;
		}
		rets[n++] = insn->address;
	}
	cs_free(insn, 1);
	cs_close(&h);
	return err ? err : n;
}

int x86_lea_targets(const uint8_t *code, size_t len, uint64_t addr, uint64_t *targets, int max)
{
	const uint8_t *p = code;
	uint64_t a = addr;
	size_t left = len;
	cs_insn *insn;
	int n = 0;
	csh h;

	if (open_cs(&h, 1))
		return -ENOMEM;
	insn = cs_malloc(h);
	if (!insn) {
		cs_close(&h);
		return -ENOMEM;
	}
	while (left && n < max && cs_disasm_iter(h, &p, &left, &a, insn)) {
		const cs_x86 *x = &insn->detail->x86;

		if (insn->id != X86_INS_LEA || x->op_count != 2 ||
		    x->operands[1].type != X86_OP_MEM || x->operands[1].mem.base != X86_REG_RIP ||
		    x->operands[1].mem.index != X86_REG_INVALID)
			continue;
		/* RIP-relative: from the address of the next instruction */
		targets[n++] = insn->address + insn->size + (int64_t)x->operands[1].mem.disp;
	}
	cs_free(insn, 1);
	cs_close(&h);
	return n;
}
