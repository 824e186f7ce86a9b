/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a function returns, for functions that may throw (operator new): a uretprobe replaces
 * the return address, which the C++ unwinder needs to find the caller's frame, so an exception
 * through such a probe kills the program. These functions are probed on their ret instructions
 * instead, found by following the code from the entry (docs/PLACEMENT.md).
 */
#ifndef MT_RETURNS_H
#define MT_RETURNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gelf.h>

/* Bounds of the walk: beyond them the function's returns are not known, and it keeps a uretprobe.
 */
#define MT_RET_MAX_SITES   32
#define MT_RET_MAX_INSNS   2048
#define MT_RET_MAX_SEGMENT (64u << 20) /* largest executable segment read */

struct mt_ret_site {
	uint64_t offset; /* file offset of the instruction */
	bool tail;	 /* a jmp into another probed entry (else a ret) */
};

/* What the walk knows of the calls and jumps of a file, in file offsets. */
struct mt_code_targets {
	uint64_t *noreturn; /* functions that never return, and the PLT stubs of imported ones */
	size_t n_noreturn;
	uint64_t *stub, *def; /* PLT stub i jumps to def[i], a function this file defines */
	size_t n_stubs;
};

/*
 * Fill t from e: the functions that never return (abort, __cxa_throw, _Unwind_Resume,
 * std::__throw_*, ...), and the PLT stubs of functions e defines itself (tcmalloc's operator
 * new reaches its slow path through one). Returns 0 or -ENOMEM; free with mt_code_targets_free.
 */
int mt_code_targets(Elf *e, struct mt_code_targets *t);
void mt_code_targets_free(struct mt_code_targets *t);

/*
 * Follow the code of the function at file offset entry, inside the executable segment
 * [seg_start, seg_end) of fd: every path, through its branches and its jumps to code outside it
 * (tail calls, also through a PLT stub to a function of the file), ends at a ret, at a jmp into
 * one of the n_entries probed entries, or at an instruction that does not return (ud2, hlt,
 * int3, a call to a function that never returns). Other calls are taken to return. Fills sites,
 * returns their number, or -ENOTSUP where a path cannot be followed (an indirect jump, code out
 * of the segment, an instruction capstone cannot decode), -E2BIG beyond the bounds, -ENOMEM,
 * -EIO.
 */
int mt_find_returns(int fd, uint64_t entry, uint64_t seg_start, uint64_t seg_end,
		    const uint64_t *entries, size_t n_entries, const struct mt_code_targets *t,
		    struct mt_ret_site *sites);

#endif
