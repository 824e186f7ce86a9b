/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Who calls a function, and what it calls, over the allocation sites (memtrack report --callers
 * FUNC, --callees FUNC): every site whose stack passes through FUNC (a frame named FUNC, as
 * mt_frame_name names frames) adds its counts to FUNC's caller there (the frame outer to its
 * outermost occurrence; "[root]" when FUNC is the outermost frame) or to its callee (the frame
 * inner to it; "[self]" when FUNC is the allocator itself). A recursive function counts each
 * site once, at its outermost occurrence. The sites must be symbolised.
 */
#ifndef MT_CALLERS_H
#define MT_CALLERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate/report.h"

struct mt_call_row {
	char *name; /* the caller or callee */
	uint64_t sites;
	uint64_t allocations; /* as the sites count them (sites.h) */
	uint64_t bytes;
	uint64_t live_bytes;
	uint64_t peak_bytes;
	uint64_t temporary;
};

struct mt_calls {
	bool callers;		  /* callers of the function, else its callees */
	struct mt_call_row total; /* every site through the function; name: the function */
	size_t n;
	struct mt_call_row *rows; /* by name */
};

/*
 * The callers (callers true) or callees of function. function NULL: of each site's allocator
 * (its innermost frame), so that the callers are the functions that allocate, the first level of
 * a bottom-up view. 0 and *out, or -ENOMEM.
 */
int mt_calls_build(const struct mt_report *rep, const char *function, bool callers,
		   struct mt_calls **out);
void mt_calls_free(struct mt_calls *c);

#endif
