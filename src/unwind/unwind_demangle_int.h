/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Rust demangler's private state (unwind_demangle*.c): the parse of one name and what it
 * prints, shared by its files, top first: the entry and the legacy scheme (unwind_demangle.c),
 * v0's paths, types and constants (unwind_demangle_v0.c), v0's numbers and identifiers
 * (unwind_demangle_ident.c), and reading the name and writing the output under the bounds
 * (unwind_demangle_text.c).
 */
#ifndef MT_UNWIND_DEMANGLE_INT_H
#define MT_UNWIND_DEMANGLE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_DEPTH	256
#define MAX_STEPS	(1u << 20)
#define MAX_IDENT_CHARS 512 /* code points of one punycode identifier */

struct demangler {
	const char *s; /* the name past its "_R" or "_ZN" */
	size_t len, pos;
	char *out;
	size_t olen, cap;
	unsigned int skip; /* > 0: parsing without printing (impl paths, the instantiating crate) */
	unsigned int depth; /* recursion depth now */
	unsigned int steps; /* recursions so far */
	uint64_t lifetimes; /* lifetimes bound by the binders around the parse position */
	bool bad;	    /* malformed, or past a bound: the name stays mangled */
};

struct ident {
	const char *p;
	size_t len;
	bool punycode;
};

/* unwind_demangle_text.c */
char dm_peek(const struct demangler *d);
bool dm_eat(struct demangler *d, char c);
char dm_next(struct demangler *d);
void dm_put_n(struct demangler *d, const char *s, size_t n);
void dm_put(struct demangler *d, const char *s);
void dm_put_u64(struct demangler *d, uint64_t v);
bool dm_put_utf8(struct demangler *d, uint32_t c);
bool dm_enter(struct demangler *d);
void dm_leave(struct demangler *d);
bool dm_suffix_ok(const char *s, size_t len);

/* unwind_demangle_ident.c */
int dm_base62_digit(char c);
uint64_t dm_base62(struct demangler *d);
uint64_t dm_disambiguator(struct demangler *d);
size_t dm_decimal(struct demangler *d);
void dm_undisambiguated_ident(struct demangler *d, struct ident *id);
void dm_ident(struct demangler *d, struct ident *id);
void dm_put_ident(struct demangler *d, const struct ident *id);

/* unwind_demangle_v0.c */
void dm_demangle_v0(struct demangler *d);

#endif
