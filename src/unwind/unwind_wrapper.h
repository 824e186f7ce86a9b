/* SPDX-License-Identifier: GPL-2.0 */
/*
 * operator new as the allocator's wrapper, for the stacks a plain run records (the allocator's
 * caller only). A stack goes through operator new, which calls malloc, to the code that called
 * it. In a C++ runtime library (libstdc++.so, libc++.so) it goes on through the whole library, so
 * that the caller is the program's code, not the runtime's template machinery. In a program that
 * links operator new in (gcc's cc1: libstdc++ static, symbols exported for plugins), every frame
 * outside operator new's own functions is the program's code, the caller: its table keeps only
 * operator new's rows, the rest of the file a row that ends the stack (MT_CFA_CALLER).
 */
#ifndef MT_UNWIND_WRAPPER_H
#define MT_UNWIND_WRAPPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/unwind_table.h"

#define MT_UNWIND_WRAPPER_RANGES 16

/* operator new's functions in one file, as link-time addresses [lo, hi). */
struct mt_unwind_wrapper {
	size_t n;     /* 0: the file defines no operator new */
	bool program; /* an executable (ET_EXEC, or with an interpreter), not a library */
	uint64_t lo[MT_UNWIND_WRAPPER_RANGES], hi[MT_UNWIND_WRAPPER_RANGES];
};

/* What the ELF file open at fd defines of operator new in its dynamic symbols, into *w. */
void mt_unwind_wrapper_find(int fd, struct mt_unwind_wrapper *w);

/*
 * t's rows for w's ranges only, every other address a MT_CFA_CALLER row, into *out (its rows
 * allocated: mt_unwind_table_free). Returns 0 or -ENOMEM.
 */
int mt_unwind_wrapper_table(const struct mt_unwind_table *t, const struct mt_unwind_wrapper *w,
			    struct mt_unwind_table *out);

#endif
