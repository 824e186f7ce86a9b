// SPDX-License-Identifier: GPL-2.0
#include <stddef.h>

#include "bpf/memtrack.h"

#include "base/kind.h"

enum mt_kind_effect mt_kind_effect(uint8_t kind)
{
	switch (kind) {
	case MT_K_MALLOC:
	case MT_K_CALLOC:
	case MT_K_ALIGNED_ALLOC:
	case MT_K_MEMALIGN:
	case MT_K_POSIX_MEMALIGN:
	case MT_K_VALLOC:
	case MT_K_PVALLOC:
	case MT_K_MALLOCX:
	case MT_K_NEW:
	case MT_K_NEW_ALIGNED:
	case MT_K_MALLOC_ALIGNED:
	case MT_K_CALLOC_ALIGNED:
		return MT_KIND_ALLOC;
	case MT_K_REALLOC:
	case MT_K_REALLOCARRAY:
	case MT_K_RALLOCX:
	case MT_K_REALLOC_ALIGNED:
	case MT_K_RUST_REALLOC:
	case MT_K_XALLOCX:
		return MT_KIND_REALLOC;
	case MT_K_FREE:
	case MT_K_FREE_SIZED:
	case MT_K_FREE_ALIGNED_SIZED:
	case MT_K_SDALLOCX:
	case MT_K_DALLOCX:
	case MT_K_DELETE:
	case MT_K_RUST_DEALLOC:
		return MT_KIND_FREE;
	case MT_K_GO_MALLOC:
		return MT_KIND_COLLECTED;
	default:
		return MT_KIND_NONE;
	}
}

const char *mt_unrecorded_name(uint64_t fn)
{
	static const char *const names[MT_U_MAX] = {
	    [MT_U_MI_REALPATH] = "mi_realpath",
	    [MT_U_MI_WCSDUP] = "mi_wcsdup",
	    [MT_U_MI_REALLOCARR] = "mi_reallocarr",
	    [MT_U_SN_REALLOCARR] = "sn_reallocarr",
	    [MT_U_MI_DUPENV_S] = "mi_dupenv_s",
	    [MT_U_MI_HEAP_DESTROY] = "mi_heap_destroy",
	    [MT_U_RPMALLOC_HEAP_FREE_ALL] = "rpmalloc_heap_free_all",
	    [MT_U_MI_HEAP_REALPATH] = "mi_heap_realpath",
	};

	return fn < MT_U_MAX ? names[fn] : NULL;
}

bool mt_unrecorded_frees_heap(uint64_t fn)
{
	return fn == MT_U_MI_HEAP_DESTROY || fn == MT_U_RPMALLOC_HEAP_FREE_ALL;
}
