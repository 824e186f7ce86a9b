/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Rust's symbol names as the language writes them (docs/STACKS.md, "Function names"): the v0
 * mangling (RFC 2603, "_R...") and the legacy one (Itanium-like "_ZN...17h<hash>E"), written as
 * rustc-demangle's alternate form ("{:#}") writes them: no crate disambiguators, no hash, no
 * const generics' types ("std::rt::lang_start_internal", "<alloc::vec::Vec<u8>>::push",
 * "main::{closure#0}").
 */
#ifndef MT_UNWIND_DEMANGLE_H
#define MT_UNWIND_DEMANGLE_H

/* The longest demangled name made, with its NUL: a longer one is left mangled. */
#define MT_DEMANGLE_MAX 16384

/*
 * name demangled: a new string (to free), or NULL when name is no Rust mangling (C's, C++'s: a
 * legacy name must end in its hash element, which no C++ name has), is malformed or truncated,
 * nests deeper than the demangler follows, or would be longer than MT_DEMANGLE_MAX; or when
 * memory ran out. The caller then shows name as it is.
 */
char *mt_rust_demangle(const char *name);

#endif
