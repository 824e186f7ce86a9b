/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Allocator families: what classification finds a file to be, what the artifact records (as a
 * number) and what the reports name. Below classification so that reading an artifact does not
 * depend on libelf and capstone.
 */
#ifndef MT_FAMILY_H
#define MT_FAMILY_H

enum mt_family {
	MT_FAM_NONE = 0, /* no allocator defined: marked DONE, nothing attached */
	MT_FAM_GLIBC,
	MT_FAM_MUSL,
	MT_FAM_LIBC, /* a malloc family that is neither recognisably glibc nor musl */
	MT_FAM_JEMALLOC,
	MT_FAM_MIMALLOC,
	MT_FAM_TCMALLOC,
	MT_FAM_CXX,  /* only operator new/delete implemented in the file itself */
	MT_FAM_RUST, /* only Rust's allocator shims, into a #[global_allocator] of the file's own */
	MT_FAM_GO,   /* Go's runtime: its collected heap (runtime.mallocgc), frees not seen */
	MT_FAM_SNMALLOC, /* snmalloc: its Rust crate's entries (sn_rust_alloc ...) and sn_ names */
	MT_FAM_RPMALLOC, /* rpmalloc: rpmalloc, rpaligned_alloc, rpfree, rpmalloc_heap_ ... */
	MT_FAM_MAX,
};

/* The family's name; "?" when f is out of range. */
const char *mt_family_name(enum mt_family f);

#endif
