/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * x86-64 instruction walks with capstone: the RET instructions of a function
 * (uprobes go there instead of uretprobes for Go, whose goroutine stacks
 * move) and the RIP-relative LEA targets of a short function (how a version
 * string is found from the function that returns it).
 *
 * A linear sweep from the function's entry to its end: right for code with
 * no data inside it (Go's and gcc's x86-64 output). An instruction capstone
 * cannot decode stops the walk. Nothing prints.
 */
#ifndef REEL_X86SCAN_H
#define REEL_X86SCAN_H

#include <stddef.h>
#include <stdint.h>

/* Disassembles code[0..len), loaded at address addr, and stores the address
 * of each RET (near, with or without an immediate) in rets[0..max). Returns
 * the number of RETs found (at most max), -E2BIG when there are more than
 * max, -EBADMSG when an undecodable instruction stops the walk before len,
 * -ENOMEM when capstone cannot start. */
int x86_rets(const uint8_t *code, size_t len, uint64_t addr, uint64_t *rets, int max);

/* The targets of RIP-relative LEA instructions in code[0..len) at addr, in
 * order, at most max. Returns how many (the walk stops quietly at an
 * undecodable instruction), or -ENOMEM. */
int x86_lea_targets(const uint8_t *code, size_t len, uint64_t addr, uint64_t *targets, int max);

#endif /* REEL_X86SCAN_H */
