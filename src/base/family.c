// SPDX-License-Identifier: GPL-2.0
/* Allocator family names (family.h). */
#include "base/family.h"

const char *mt_family_name(enum mt_family f)
{
	static const char *const names[MT_FAM_MAX] = {
	    [MT_FAM_NONE] = "none",	    [MT_FAM_GLIBC] = "glibc",
	    [MT_FAM_MUSL] = "musl",	    [MT_FAM_LIBC] = "libc",
	    [MT_FAM_JEMALLOC] = "jemalloc", [MT_FAM_MIMALLOC] = "mimalloc",
	    [MT_FAM_TCMALLOC] = "tcmalloc", [MT_FAM_CXX] = "c++",
	    [MT_FAM_RUST] = "rust",	    [MT_FAM_GO] = "go",
	    [MT_FAM_SNMALLOC] = "snmalloc", [MT_FAM_RPMALLOC] = "rpmalloc",
	};

	return (unsigned int)f < MT_FAM_MAX ? names[f] : "?";
}
