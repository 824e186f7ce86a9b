// SPDX-License-Identifier: GPL-2.0
/* v0's paths, types and constants, and a whole v0 name (unwind_demangle_int.h). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/unwind_demangle_int.h"

/* ---- v0: paths, types, constants ------------------------------------------------------------ */

typedef void (*print_fn)(struct demangler *d, bool in_value);

static void print_path(struct demangler *d, bool in_value);
static void print_type(struct demangler *d, bool unused);
static void print_const(struct demangler *d, bool in_value);

/*
 * "B" <base62> (its "B" read): print again what starts at that offset past "_R", which must lie
 * before the backreference (so that none can loop). Not followed while nothing is printed.
 */
static void backref(struct demangler *d, print_fn print, bool in_value)
{
	size_t at = d->pos - 1, saved;
	uint64_t target = dm_base62(d);

	if (d->bad || target >= at) {
		d->bad = true;
		return;
	}
	if (d->skip)
		return;
	saved = d->pos;
	d->pos = (size_t)target;
	print(d, in_value);
	d->pos = saved;
}

/* Lifetime index i: 0 is erased ("'_"); else the i-th innermost bound one: 'a the outermost. */
static void put_lifetime(struct demangler *d, uint64_t i)
{
	uint64_t depth;
	char name[4] = "'a";

	if (!i) {
		dm_put(d, "'_");
		return;
	}
	if (i > d->lifetimes) {
		d->bad = true;
		return;
	}
	depth = d->lifetimes - i;
	if (depth < 26) {
		name[1] = (char)('a' + depth);
		dm_put(d, name);
		return;
	}
	dm_put(d, "'_");
	dm_put_u64(d, depth);
}

/* print's items up to "E", separated by sep; how many. */
static size_t print_list(struct demangler *d, print_fn print, bool in_value, const char *sep)
{
	size_t n = 0;

	while (!d->bad && !dm_eat(d, 'E')) {
		if (n++)
			dm_put(d, sep);
		print(d, in_value);
	}
	return n;
}

static void print_generic_arg(struct demangler *d, bool unused)
{
	(void)unused;
	if (dm_eat(d, 'L'))
		put_lifetime(d, dm_base62(d));
	else if (dm_eat(d, 'K'))
		print_const(d, false);
	else
		print_type(d, false);
}

/* The impl path of "M" and "X": [<disambiguator>] <path>, which the readable name omits. */
static void skip_impl_path(struct demangler *d)
{
	d->skip++;
	dm_disambiguator(d);
	print_path(d, false);
	d->skip--;
}

/* "N" <namespace> <path> <identifier> (its "N" read). */
static void print_nested(struct demangler *d, bool in_value)
{
	char ns = dm_next(d);
	struct ident id = {0};
	uint64_t dis;

	print_path(d, in_value);
	dis = dm_disambiguator(d);
	dm_undisambiguated_ident(d, &id);
	if (d->bad)
		return;
	if (ns >= 'A' && ns <= 'Z') {
		/* Closures and shims: "{closure#0}", "{shim:vtable#0}". */
		dm_put(d, "::{");
		dm_put(d, ns == 'C' ? "closure" : ns == 'S' ? "shim" : (char[]){ns, '\0'});
		if (id.len) {
			dm_put(d, ":");
			dm_put_ident(d, &id);
		}
		dm_put(d, "#");
		dm_put_u64(d, dis);
		dm_put(d, "}");
	} else if (ns >= 'a' && ns <= 'z') {
		if (id.len) {
			dm_put(d, "::");
			dm_put_ident(d, &id);
		}
	} else {
		d->bad = true;
	}
}

static void print_path(struct demangler *d, bool in_value)
{
	struct ident id = {0};

	if (!dm_enter(d))
		return;
	switch (dm_next(d)) {
	case 'C':
		dm_ident(d, &id);
		dm_put_ident(d, &id);
		break;
	case 'M':
		skip_impl_path(d);
		dm_put(d, "<");
		print_type(d, false);
		dm_put(d, ">");
		break;
	case 'X':
		skip_impl_path(d);
		/* fall through */
	case 'Y':
		dm_put(d, "<");
		print_type(d, false);
		dm_put(d, " as ");
		print_path(d, false);
		dm_put(d, ">");
		break;
	case 'N':
		print_nested(d, in_value);
		break;
	case 'I':
		print_path(d, in_value);
		dm_put(d, in_value ? "::<" : "<");
		print_list(d, print_generic_arg, false, ", ");
		dm_put(d, ">");
		break;
	case 'B':
		backref(d, print_path, in_value);
		break;
	default:
		d->bad = true;
	}
	dm_leave(d);
}

static const char *basic_type(char tag)
{
	switch (tag) {
	case 'a':
		return "i8";
	case 'b':
		return "bool";
	case 'c':
		return "char";
	case 'd':
		return "f64";
	case 'e':
		return "str";
	case 'f':
		return "f32";
	case 'h':
		return "u8";
	case 'i':
		return "isize";
	case 'j':
		return "usize";
	case 'l':
		return "i32";
	case 'm':
		return "u32";
	case 'n':
		return "i128";
	case 'o':
		return "u128";
	case 's':
		return "i16";
	case 't':
		return "u16";
	case 'u':
		return "()";
	case 'v':
		return "...";
	case 'x':
		return "i64";
	case 'y':
		return "u64";
	case 'z':
		return "!";
	case 'p':
		return "_";
	default:
		return NULL;
	}
}

/* ["G" <base62>]: "for<'a, 'b> " and the lifetimes bound; how many. */
static uint64_t open_binder(struct demangler *d)
{
	uint64_t n;

	if (!dm_eat(d, 'G'))
		return 0;
	n = dm_base62(d) + 1;
	if (d->bad || n > MAX_STEPS) {
		d->bad = true;
		return 0;
	}
	dm_put(d, "for<");
	for (uint64_t i = 0; i < n && !d->bad; i++) {
		if (i)
			dm_put(d, ", ");
		d->lifetimes++;
		put_lifetime(d, 1);
	}
	dm_put(d, "> ");
	return n;
}

/* "F" <fn-sig> (its "F" read): [<binder>] ["U"] ["K" <abi>] {<type>} "E" <type>. */
static void print_fn_sig(struct demangler *d)
{
	uint64_t bound = open_binder(d);
	struct ident abi = {0};

	if (dm_eat(d, 'U'))
		dm_put(d, "unsafe ");
	if (dm_eat(d, 'K')) {
		dm_put(d, "extern \"");
		if (dm_eat(d, 'C')) {
			dm_put(d, "C");
		} else {
			dm_undisambiguated_ident(d, &abi);
			if (abi.punycode)
				d->bad = true;
			/* "C_unwind" is "C-unwind". */
			for (size_t i = 0; i < abi.len; i++)
				dm_put_n(d, abi.p[i] == '_' ? "-" : &abi.p[i], 1);
		}
		dm_put(d, "\" ");
	}
	dm_put(d, "fn(");
	print_list(d, print_type, false, ", ");
	dm_put(d, ")");
	if (!dm_eat(d, 'u')) {
		dm_put(d, " -> ");
		print_type(d, false);
	}
	d->lifetimes -= bound;
}

static bool print_path_open_generics(struct demangler *d);

/* A backreference in a dyn trait's place, whose generics are left open like its target's. */
static bool backref_open_generics(struct demangler *d)
{
	size_t at = d->pos - 1, saved;
	uint64_t target = dm_base62(d);
	bool open;

	if (d->bad || target >= at) {
		d->bad = true;
		return false;
	}
	if (d->skip)
		return false;
	saved = d->pos;
	d->pos = (size_t)target;
	open = print_path_open_generics(d);
	d->pos = saved;
	return open;
}

/* A dyn trait's path, whose "<...>" stays open for its associated types: whether it is. */
static bool print_path_open_generics(struct demangler *d)
{
	bool open = false;

	if (!dm_enter(d))
		return false;
	if (dm_eat(d, 'B')) {
		open = backref_open_generics(d);
	} else if (dm_eat(d, 'I')) {
		print_path(d, false);
		dm_put(d, "<");
		print_list(d, print_generic_arg, false, ", ");
		open = true;
	} else {
		print_path(d, false);
	}
	dm_leave(d);
	return open;
}

/* <path> {"p" <undisambiguated-identifier> <type>}: "Fn<(u8,), Output = ()>". */
static void print_dyn_trait(struct demangler *d, bool unused)
{
	bool open = print_path_open_generics(d);
	struct ident name = {0};

	(void)unused;
	while (dm_eat(d, 'p')) {
		dm_put(d, open ? ", " : "<");
		open = true;
		dm_undisambiguated_ident(d, &name);
		dm_put_ident(d, &name);
		dm_put(d, " = ");
		print_type(d, false);
	}
	if (open)
		dm_put(d, ">");
}

/* "D" <dyn-bounds> <lifetime> (its "D" read). */
static void print_dyn(struct demangler *d)
{
	uint64_t bound;

	dm_put(d, "dyn ");
	bound = open_binder(d);
	print_list(d, print_dyn_trait, false, " + ");
	d->lifetimes -= bound;
	if (dm_next(d) != 'L') {
		d->bad = true;
		return;
	}
	bound = dm_base62(d);
	if (bound) {
		dm_put(d, " + ");
		put_lifetime(d, bound);
	}
}

static void print_type(struct demangler *d, bool unused)
{
	char tag = dm_next(d);
	const char *basic = basic_type(tag);

	(void)unused;
	if (d->bad || !dm_enter(d))
		return;
	if (basic) {
		dm_put(d, basic);
		dm_leave(d);
		return;
	}
	switch (tag) {
	case 'R':
	case 'Q':
		dm_put(d, "&");
		if (dm_eat(d, 'L')) {
			uint64_t lt = dm_base62(d);

			if (lt) {
				put_lifetime(d, lt);
				dm_put(d, " ");
			}
		}
		if (tag == 'Q')
			dm_put(d, "mut ");
		print_type(d, false);
		break;
	case 'P':
	case 'O':
		dm_put(d, tag == 'P' ? "*const " : "*mut ");
		print_type(d, false);
		break;
	case 'A':
	case 'S':
		dm_put(d, "[");
		print_type(d, false);
		if (tag == 'A') {
			dm_put(d, "; ");
			print_const(d, true);
		}
		dm_put(d, "]");
		break;
	case 'T':
		dm_put(d, "(");
		if (print_list(d, print_type, false, ", ") == 1)
			dm_put(d, ",");
		dm_put(d, ")");
		break;
	case 'F':
		print_fn_sig(d);
		break;
	case 'D':
		print_dyn(d);
		break;
	case 'B':
		backref(d, print_type, false);
		break;
	case 'C':
	case 'M':
	case 'X':
	case 'Y':
	case 'N':
	case 'I':
		d->pos--;
		print_path(d, false);
		break;
	default:
		d->bad = true;
	}
	dm_leave(d);
}

/* <hex digits> "_": as a number, or as "0x..." when past 64 bits; the digits' value in *v. */
static void const_hex(struct demangler *d, bool print, uint64_t *v)
{
	size_t start = d->pos, digits;
	bool fits = true;

	*v = 0;
	while (!d->bad && !dm_eat(d, '_')) {
		char c = dm_next(d);
		int x = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

		if (x < 0) {
			d->bad = true;
			return;
		}
		if (*v >> 60)
			fits = false;
		*v = *v << 4 | (uint64_t)x;
	}
	if (!print || d->bad)
		return;
	if (fits) {
		dm_put_u64(d, *v);
		return;
	}
	digits = d->pos - 1 - start;
	dm_put(d, "0x");
	dm_put_n(d, d->s + start, digits);
}

/* A char constant, quoted and escaped as Rust's Debug does for the ASCII ones. */
static void put_char_literal(struct demangler *d, uint64_t c)
{
	char esc[16];

	dm_put(d, "'");
	switch (c) {
	case '\t':
		dm_put(d, "\\t");
		break;
	case '\r':
		dm_put(d, "\\r");
		break;
	case '\n':
		dm_put(d, "\\n");
		break;
	case '\\':
	case '\'':
		esc[0] = '\\';
		esc[1] = (char)c;
		dm_put_n(d, esc, 2);
		break;
	default:
		if (c < 0x20 || c == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u{%x}", (unsigned int)c);
			dm_put(d, esc);
		} else if (c > UINT32_MAX || !dm_put_utf8(d, (uint32_t)c)) {
			d->bad = true;
		}
	}
	dm_put(d, "'");
}

/* "V" <path> ("U" | "T" {<const>} "E" | "S" {<identifier> <const>} "E") (its "V" read). */
static void print_const_adt(struct demangler *d)
{
	struct ident field = {0};
	size_t n = 0;

	print_path(d, true);
	switch (dm_next(d)) {
	case 'U':
		break;
	case 'T':
		dm_put(d, "(");
		print_list(d, print_const, true, ", ");
		dm_put(d, ")");
		break;
	case 'S':
		dm_put(d, " { ");
		while (!d->bad && !dm_eat(d, 'E')) {
			if (n++)
				dm_put(d, ", ");
			dm_ident(d, &field);
			dm_put_ident(d, &field);
			dm_put(d, ": ");
			print_const(d, true);
		}
		dm_put(d, " }");
		break;
	default:
		d->bad = true;
	}
}

/* A constant; one that is no literal is braced unless inside another ("{[1, 2]}"). */
static void print_const(struct demangler *d, bool in_value)
{
	char tag = dm_next(d);
	uint64_t v;

	if (d->bad || !dm_enter(d))
		return;
	if (!in_value && strchr("ATV", tag))
		dm_put(d, "{");
	switch (tag) {
	case 'p':
		dm_put(d, "_");
		break;
	case 'a':
	case 's':
	case 'l':
	case 'x':
	case 'n':
	case 'i':
		if (dm_eat(d, 'n'))
			dm_put(d, "-");
		/* fall through */
	case 'h':
	case 't':
	case 'm':
	case 'y':
	case 'o':
	case 'j':
		const_hex(d, true, &v);
		break;
	case 'b':
		const_hex(d, false, &v);
		if (v > 1)
			d->bad = true;
		dm_put(d, v ? "true" : "false");
		break;
	case 'c':
		const_hex(d, false, &v);
		put_char_literal(d, v);
		break;
	case 'A':
		dm_put(d, "[");
		print_list(d, print_const, true, ", ");
		dm_put(d, "]");
		break;
	case 'T':
		dm_put(d, "(");
		if (print_list(d, print_const, true, ", ") == 1)
			dm_put(d, ",");
		dm_put(d, ")");
		break;
	case 'V':
		print_const_adt(d);
		break;
	case 'B':
		backref(d, print_const, in_value);
		break;
	default:
		d->bad = true;
	}
	if (!in_value && strchr("ATV", tag))
		dm_put(d, "}");
	dm_leave(d);
}

/* _R [<decimal>] <path> [<instantiating-crate>] [<suffix>]; no version number is known. */
void dm_demangle_v0(struct demangler *d)
{
	if (dm_peek(d) >= '0' && dm_peek(d) <= '9') {
		d->bad = true;
		return;
	}
	print_path(d, true);
	if (!d->bad && d->pos < d->len && d->s[d->pos] >= 'A' && d->s[d->pos] <= 'Z') {
		d->skip++;
		print_path(d, false);
		d->skip--;
	}
	if (d->bad || !dm_suffix_ok(d->s + d->pos, d->len - d->pos)) {
		d->bad = true;
		return;
	}
	dm_put_n(d, d->s + d->pos, d->len - d->pos);
}
