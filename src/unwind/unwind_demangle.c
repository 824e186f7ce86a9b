// SPDX-License-Identifier: GPL-2.0
/*
 * Rust's symbol names demangled (src/unwind/unwind_demangle.h), written from the v0 grammar of RFC
 * 2603 (and its later const-generic extension) and the legacy scheme's escapes. One parser over
 * the name, printing as it goes; every read is bounded by the name's length, every recursion by
 * MAX_DEPTH, every step counted against MAX_STEPS (a backreference is followed again each time
 * it is met, so a small name could otherwise ask for much work), and the output by
 * MT_DEMANGLE_MAX: past any of them the name is left mangled.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/unwind_demangle.h"

#define MAX_DEPTH	256
#define MAX_STEPS	(1u << 20)
#define MAX_IDENT_CHARS 512 /* code points of one punycode identifier */
#define LEGACY_HASH_LEN 17  /* "h" and 16 hex digits */
#define LLVM_SUFFIX	".llvm."

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

/* ---- reading and writing -------------------------------------------------------------------- */

static char peek(const struct demangler *d)
{
	return d->pos < d->len ? d->s[d->pos] : '\0';
}

static bool eat(struct demangler *d, char c)
{
	if (d->bad || peek(d) != c)
		return false;
	d->pos++;
	return true;
}

static char next(struct demangler *d)
{
	if (d->bad || d->pos >= d->len) {
		d->bad = true;
		return '\0';
	}
	return d->s[d->pos++];
}

static void put_n(struct demangler *d, const char *s, size_t n)
{
	if (d->bad || d->skip)
		return;
	if (n >= d->cap - d->olen) {
		d->bad = true;
		return;
	}
	memcpy(d->out + d->olen, s, n);
	d->olen += n;
	d->out[d->olen] = '\0';
}

static void put(struct demangler *d, const char *s)
{
	put_n(d, s, strlen(s));
}

static void put_u64(struct demangler *d, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	put(d, buf);
}

/* A code point as UTF-8; false when it is none (a surrogate, past U+10FFFF). */
static bool put_utf8(struct demangler *d, uint32_t c)
{
	char b[4];
	size_t n;

	if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return false;
	if (c < 0x80) {
		b[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		b[0] = (char)(0xc0 | c >> 6);
		b[1] = (char)(0x80 | (c & 0x3f));
		n = 2;
	} else if (c < 0x10000) {
		b[0] = (char)(0xe0 | c >> 12);
		b[1] = (char)(0x80 | (c >> 6 & 0x3f));
		b[2] = (char)(0x80 | (c & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | c >> 18);
		b[1] = (char)(0x80 | (c >> 12 & 0x3f));
		b[2] = (char)(0x80 | (c >> 6 & 0x3f));
		b[3] = (char)(0x80 | (c & 0x3f));
		n = 4;
	}
	put_n(d, b, n);
	return true;
}

/* One more level of recursion; false (and the name bad) past the bounds. */
static bool enter(struct demangler *d)
{
	if (d->bad || d->depth >= MAX_DEPTH || d->steps >= MAX_STEPS) {
		d->bad = true;
		return false;
	}
	d->depth++;
	d->steps++;
	return true;
}

static void leave(struct demangler *d)
{
	d->depth--;
}

/* ---- v0's numbers and identifiers ------------------------------------------------------------ */

static int base62_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 36;
	return -1;
}

/* "_" is 0, "0_" 1, "z_" 36: the digits' value plus one. */
static uint64_t base62(struct demangler *d)
{
	uint64_t v = 0;
	int digit;

	if (eat(d, '_'))
		return 0;
	while (!eat(d, '_')) {
		digit = base62_digit(next(d));
		if (d->bad || digit < 0 || v > (UINT64_MAX - (uint64_t)digit) / 62) {
			d->bad = true;
			return 0;
		}
		v = v * 62 + (uint64_t)digit;
	}
	if (v == UINT64_MAX)
		d->bad = true;
	return v + 1;
}

/* An optional "s" <base62>: absent is 0, "s_" 1. */
static uint64_t disambiguator(struct demangler *d)
{
	uint64_t v;

	if (!eat(d, 's'))
		return 0;
	v = base62(d);
	if (v == UINT64_MAX)
		d->bad = true;
	return v + 1;
}

/* A decimal number with no leading zero, at most the name's length. */
static size_t decimal(struct demangler *d)
{
	size_t v = 0;

	if (peek(d) < '0' || peek(d) > '9') {
		d->bad = true;
		return 0;
	}
	if (eat(d, '0'))
		return 0;
	while (peek(d) >= '0' && peek(d) <= '9') {
		v = v * 10 + (size_t)(next(d) - '0');
		if (v > d->len) {
			d->bad = true;
			return 0;
		}
	}
	return v;
}

/* ["u"] <decimal> ["_"] <bytes>: the "_" keeps bytes that start with a digit or "_" apart. */
static void undisambiguated_ident(struct demangler *d, struct ident *id)
{
	id->punycode = eat(d, 'u');
	id->len = decimal(d);
	eat(d, '_');
	id->p = d->s + d->pos;
	if (d->bad || id->len > d->len - d->pos) {
		d->bad = true;
		id->len = 0;
		return;
	}
	d->pos += id->len;
}

static void ident(struct demangler *d, struct ident *id)
{
	disambiguator(d);
	undisambiguated_ident(d, id);
}

static int punycode_digit(char c)
{
	if (c >= 'a' && c <= 'z')
		return c - 'a';
	if (c >= '0' && c <= '9')
		return c - '0' + 26;
	return -1;
}

/* RFC 3492's bias adaptation, with its parameters for punycode (base 36). */
static uint32_t punycode_adapt(uint32_t delta, uint32_t points, bool first)
{
	uint32_t k = 0;

	delta = first ? delta / 700 : delta / 2;
	delta += delta / points;
	while (delta > 35 * 26 / 2) {
		delta /= 35;
		k += 36;
	}
	return k + 36 * delta / (delta + 38);
}

/*
 * Punycode's deltas decoded into cps (whose first *n are the basic code points); false when
 * they are malformed or would make more than MAX_IDENT_CHARS.
 */
static bool punycode_decode(const char *enc, size_t len, uint32_t *cps, size_t *n)
{
	uint32_t code = 128, i = 0, bias = 72;
	size_t pos = 0;

	while (pos < len) {
		uint32_t old_i = i, w = 1, t;

		for (uint32_t k = 36;; k += 36) {
			int digit = pos < len ? punycode_digit(enc[pos++]) : -1;

			if (digit < 0 || (uint32_t)digit > (UINT32_MAX - i) / w)
				return false;
			i += (uint32_t)digit * w;
			t = k <= bias ? 1 : k >= bias + 26 ? 26 : k - bias;
			if ((uint32_t)digit < t)
				break;
			if (w > UINT32_MAX / (36 - t))
				return false;
			w *= 36 - t;
		}
		if (*n >= MAX_IDENT_CHARS)
			return false;
		bias = punycode_adapt(i - old_i, (uint32_t)*n + 1, old_i == 0);
		if (i / (*n + 1) > UINT32_MAX - code)
			return false;
		code += i / (uint32_t)(*n + 1);
		i %= (uint32_t)(*n + 1);
		memmove(&cps[i + 1], &cps[i], (*n - i) * sizeof(*cps));
		cps[i++] = code;
		(*n)++;
	}
	return true;
}

/* A punycode identifier: its ASCII part, "_", its deltas ("_" stands for RFC 3492's "-"). */
static void put_punycode(struct demangler *d, const struct ident *id)
{
	uint32_t cps[MAX_IDENT_CHARS];
	size_t n = 0, basic = 0, enc = 0;

	for (size_t i = 0; i < id->len; i++)
		if (id->p[i] == '_') {
			basic = i;
			enc = i + 1;
		}
	if (basic > MAX_IDENT_CHARS) {
		d->bad = true;
		return;
	}
	for (; n < basic; n++)
		cps[n] = (unsigned char)id->p[n];
	if (!punycode_decode(id->p + enc, id->len - enc, cps, &n)) {
		d->bad = true;
		return;
	}
	for (size_t i = 0; i < n && !d->bad; i++)
		if (!put_utf8(d, cps[i]))
			d->bad = true;
}

static void put_ident(struct demangler *d, const struct ident *id)
{
	if (id->punycode)
		put_punycode(d, id);
	else
		put_n(d, id->p, id->len);
}

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
	uint64_t target = base62(d);

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
		put(d, "'_");
		return;
	}
	if (i > d->lifetimes) {
		d->bad = true;
		return;
	}
	depth = d->lifetimes - i;
	if (depth < 26) {
		name[1] = (char)('a' + depth);
		put(d, name);
		return;
	}
	put(d, "'_");
	put_u64(d, depth);
}

/* print's items up to "E", separated by sep; how many. */
static size_t print_list(struct demangler *d, print_fn print, bool in_value, const char *sep)
{
	size_t n = 0;

	while (!d->bad && !eat(d, 'E')) {
		if (n++)
			put(d, sep);
		print(d, in_value);
	}
	return n;
}

static void print_generic_arg(struct demangler *d, bool unused)
{
	(void)unused;
	if (eat(d, 'L'))
		put_lifetime(d, base62(d));
	else if (eat(d, 'K'))
		print_const(d, false);
	else
		print_type(d, false);
}

/* The impl path of "M" and "X": [<disambiguator>] <path>, which the readable name omits. */
static void skip_impl_path(struct demangler *d)
{
	d->skip++;
	disambiguator(d);
	print_path(d, false);
	d->skip--;
}

/* "N" <namespace> <path> <identifier> (its "N" read). */
static void print_nested(struct demangler *d, bool in_value)
{
	char ns = next(d);
	struct ident id = {0};
	uint64_t dis;

	print_path(d, in_value);
	dis = disambiguator(d);
	undisambiguated_ident(d, &id);
	if (d->bad)
		return;
	if (ns >= 'A' && ns <= 'Z') {
		/* Closures and shims: "{closure#0}", "{shim:vtable#0}". */
		put(d, "::{");
		put(d, ns == 'C' ? "closure" : ns == 'S' ? "shim" : (char[]){ns, '\0'});
		if (id.len) {
			put(d, ":");
			put_ident(d, &id);
		}
		put(d, "#");
		put_u64(d, dis);
		put(d, "}");
	} else if (ns >= 'a' && ns <= 'z') {
		if (id.len) {
			put(d, "::");
			put_ident(d, &id);
		}
	} else {
		d->bad = true;
	}
}

static void print_path(struct demangler *d, bool in_value)
{
	struct ident id = {0};

	if (!enter(d))
		return;
	switch (next(d)) {
	case 'C':
		ident(d, &id);
		put_ident(d, &id);
		break;
	case 'M':
		skip_impl_path(d);
		put(d, "<");
		print_type(d, false);
		put(d, ">");
		break;
	case 'X':
		skip_impl_path(d);
		/* fall through */
	case 'Y':
		put(d, "<");
		print_type(d, false);
		put(d, " as ");
		print_path(d, false);
		put(d, ">");
		break;
	case 'N':
		print_nested(d, in_value);
		break;
	case 'I':
		print_path(d, in_value);
		put(d, in_value ? "::<" : "<");
		print_list(d, print_generic_arg, false, ", ");
		put(d, ">");
		break;
	case 'B':
		backref(d, print_path, in_value);
		break;
	default:
		d->bad = true;
	}
	leave(d);
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

	if (!eat(d, 'G'))
		return 0;
	n = base62(d) + 1;
	if (d->bad || n > MAX_STEPS) {
		d->bad = true;
		return 0;
	}
	put(d, "for<");
	for (uint64_t i = 0; i < n && !d->bad; i++) {
		if (i)
			put(d, ", ");
		d->lifetimes++;
		put_lifetime(d, 1);
	}
	put(d, "> ");
	return n;
}

/* "F" <fn-sig> (its "F" read): [<binder>] ["U"] ["K" <abi>] {<type>} "E" <type>. */
static void print_fn_sig(struct demangler *d)
{
	uint64_t bound = open_binder(d);
	struct ident abi = {0};

	if (eat(d, 'U'))
		put(d, "unsafe ");
	if (eat(d, 'K')) {
		put(d, "extern \"");
		if (eat(d, 'C')) {
			put(d, "C");
		} else {
			undisambiguated_ident(d, &abi);
			if (abi.punycode)
				d->bad = true;
			/* "C_unwind" is "C-unwind". */
			for (size_t i = 0; i < abi.len; i++)
				put_n(d, abi.p[i] == '_' ? "-" : &abi.p[i], 1);
		}
		put(d, "\" ");
	}
	put(d, "fn(");
	print_list(d, print_type, false, ", ");
	put(d, ")");
	if (!eat(d, 'u')) {
		put(d, " -> ");
		print_type(d, false);
	}
	d->lifetimes -= bound;
}

static bool print_path_open_generics(struct demangler *d);

/* A backreference in a dyn trait's place, whose generics are left open like its target's. */
static bool backref_open_generics(struct demangler *d)
{
	size_t at = d->pos - 1, saved;
	uint64_t target = base62(d);
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

	if (!enter(d))
		return false;
	if (eat(d, 'B')) {
		open = backref_open_generics(d);
	} else if (eat(d, 'I')) {
		print_path(d, false);
		put(d, "<");
		print_list(d, print_generic_arg, false, ", ");
		open = true;
	} else {
		print_path(d, false);
	}
	leave(d);
	return open;
}

/* <path> {"p" <undisambiguated-identifier> <type>}: "Fn<(u8,), Output = ()>". */
static void print_dyn_trait(struct demangler *d, bool unused)
{
	bool open = print_path_open_generics(d);
	struct ident name = {0};

	(void)unused;
	while (eat(d, 'p')) {
		put(d, open ? ", " : "<");
		open = true;
		undisambiguated_ident(d, &name);
		put_ident(d, &name);
		put(d, " = ");
		print_type(d, false);
	}
	if (open)
		put(d, ">");
}

/* "D" <dyn-bounds> <lifetime> (its "D" read). */
static void print_dyn(struct demangler *d)
{
	uint64_t bound;

	put(d, "dyn ");
	bound = open_binder(d);
	print_list(d, print_dyn_trait, false, " + ");
	d->lifetimes -= bound;
	if (next(d) != 'L') {
		d->bad = true;
		return;
	}
	bound = base62(d);
	if (bound) {
		put(d, " + ");
		put_lifetime(d, bound);
	}
}

static void print_type(struct demangler *d, bool unused)
{
	char tag = next(d);
	const char *basic = basic_type(tag);

	(void)unused;
	if (d->bad || !enter(d))
		return;
	if (basic) {
		put(d, basic);
		leave(d);
		return;
	}
	switch (tag) {
	case 'R':
	case 'Q':
		put(d, "&");
		if (eat(d, 'L')) {
			uint64_t lt = base62(d);

			if (lt) {
				put_lifetime(d, lt);
				put(d, " ");
			}
		}
		if (tag == 'Q')
			put(d, "mut ");
		print_type(d, false);
		break;
	case 'P':
	case 'O':
		put(d, tag == 'P' ? "*const " : "*mut ");
		print_type(d, false);
		break;
	case 'A':
	case 'S':
		put(d, "[");
		print_type(d, false);
		if (tag == 'A') {
			put(d, "; ");
			print_const(d, true);
		}
		put(d, "]");
		break;
	case 'T':
		put(d, "(");
		if (print_list(d, print_type, false, ", ") == 1)
			put(d, ",");
		put(d, ")");
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
	leave(d);
}

/* <hex digits> "_": as a number, or as "0x..." when past 64 bits; the digits' value in *v. */
static void const_hex(struct demangler *d, bool print, uint64_t *v)
{
	size_t start = d->pos, digits;
	bool fits = true;

	*v = 0;
	while (!d->bad && !eat(d, '_')) {
		char c = next(d);
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
		put_u64(d, *v);
		return;
	}
	digits = d->pos - 1 - start;
	put(d, "0x");
	put_n(d, d->s + start, digits);
}

/* A char constant, quoted and escaped as Rust's Debug does for the ASCII ones. */
static void put_char_literal(struct demangler *d, uint64_t c)
{
	char esc[16];

	put(d, "'");
	switch (c) {
	case '\t':
		put(d, "\\t");
		break;
	case '\r':
		put(d, "\\r");
		break;
	case '\n':
		put(d, "\\n");
		break;
	case '\\':
	case '\'':
		esc[0] = '\\';
		esc[1] = (char)c;
		put_n(d, esc, 2);
		break;
	default:
		if (c < 0x20 || c == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u{%x}", (unsigned int)c);
			put(d, esc);
		} else if (c > UINT32_MAX || !put_utf8(d, (uint32_t)c)) {
			d->bad = true;
		}
	}
	put(d, "'");
}

/* "V" <path> ("U" | "T" {<const>} "E" | "S" {<identifier> <const>} "E") (its "V" read). */
static void print_const_adt(struct demangler *d)
{
	struct ident field = {0};
	size_t n = 0;

	print_path(d, true);
	switch (next(d)) {
	case 'U':
		break;
	case 'T':
		put(d, "(");
		print_list(d, print_const, true, ", ");
		put(d, ")");
		break;
	case 'S':
		put(d, " { ");
		while (!d->bad && !eat(d, 'E')) {
			if (n++)
				put(d, ", ");
			ident(d, &field);
			put_ident(d, &field);
			put(d, ": ");
			print_const(d, true);
		}
		put(d, " }");
		break;
	default:
		d->bad = true;
	}
}

/* A constant; one that is no literal is braced unless inside another ("{[1, 2]}"). */
static void print_const(struct demangler *d, bool in_value)
{
	char tag = next(d);
	uint64_t v;

	if (d->bad || !enter(d))
		return;
	if (!in_value && strchr("ATV", tag))
		put(d, "{");
	switch (tag) {
	case 'p':
		put(d, "_");
		break;
	case 'a':
	case 's':
	case 'l':
	case 'x':
	case 'n':
	case 'i':
		if (eat(d, 'n'))
			put(d, "-");
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
		put(d, v ? "true" : "false");
		break;
	case 'c':
		const_hex(d, false, &v);
		put_char_literal(d, v);
		break;
	case 'A':
		put(d, "[");
		print_list(d, print_const, true, ", ");
		put(d, "]");
		break;
	case 'T':
		put(d, "(");
		if (print_list(d, print_const, true, ", ") == 1)
			put(d, ",");
		put(d, ")");
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
		put(d, "}");
	leave(d);
}

/* ---- the two schemes ------------------------------------------------------------------------ */

/* A suffix after the mangling (".cold", ".llvm.123"): "." and printable ASCII, kept as it is. */
static bool suffix_ok(const char *s, size_t len)
{
	if (!len)
		return true;
	if (s[0] != '.')
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return false;
	return true;
}

/* _R [<decimal>] <path> [<instantiating-crate>] [<suffix>]; no version number is known. */
static void demangle_v0(struct demangler *d)
{
	if (peek(d) >= '0' && peek(d) <= '9') {
		d->bad = true;
		return;
	}
	print_path(d, true);
	if (!d->bad && d->pos < d->len && d->s[d->pos] >= 'A' && d->s[d->pos] <= 'Z') {
		d->skip++;
		print_path(d, false);
		d->skip--;
	}
	if (d->bad || !suffix_ok(d->s + d->pos, d->len - d->pos)) {
		d->bad = true;
		return;
	}
	put_n(d, d->s + d->pos, d->len - d->pos);
}

static bool is_legacy_hash(const char *s, size_t len)
{
	if (len != LEGACY_HASH_LEN || s[0] != 'h')
		return false;
	for (size_t i = 1; i < len; i++)
		if (!strchr("0123456789abcdefABCDEF", s[i]))
			return false;
	return true;
}

/* A "$...$" escape's character: "$LT$" '<', "$u20$" ' '; 0 when it is none. */
static uint32_t legacy_escape(const char *e, size_t len)
{
	static const struct {
		const char *name;
		char c;
	} named[] = {{"SP", '@'}, {"BP", '*'}, {"RF", '&'}, {"LT", '<'},
		     {"GT", '>'}, {"LP", '('}, {"RP", ')'}, {"C", ','}};
	uint32_t c = 0;

	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		if (strlen(named[i].name) == len && !memcmp(e, named[i].name, len))
			return (uint32_t)named[i].c;
	if (len < 2 || len > 7 || e[0] != 'u')
		return 0;
	for (size_t i = 1; i < len; i++) {
		int x = base62_digit(e[i]);

		if (x < 0 || x > 15 || (e[i] >= 'A' && e[i] <= 'Z'))
			return 0;
		c = c << 4 | (uint32_t)x;
	}
	return c;
}

/* One element: "$LT$" and friends, ".." for "::"; an unknown escape ends it as it is. */
static void legacy_element(struct demangler *d, const char *e, size_t len)
{
	size_t i = 0;

	if (len >= 2 && e[0] == '_' && e[1] == '$')
		i = 1;
	while (i < len && !d->bad) {
		if (e[i] == '.') {
			bool two = i + 1 < len && e[i + 1] == '.';

			put(d, two ? "::" : ".");
			i += two ? 2 : 1;
		} else if (e[i] == '$') {
			const char *end = memchr(e + i + 1, '$', len - i - 1);
			uint32_t c = end ? legacy_escape(e + i + 1, (size_t)(end - e - i - 1)) : 0;

			if (!c) {
				put_n(d, e + i, len - i);
				return;
			}
			/* A control character is no name's: the name is no Rust one. */
			if (c < 0x20 || (c >= 0x7f && c < 0xa0) || !put_utf8(d, c))
				d->bad = true;
			i = (size_t)(end - e) + 1;
		} else {
			size_t run = strcspn(e + i, "$.");

			run = run < len - i ? run : len - i;
			put_n(d, e + i, run);
			i += run;
		}
	}
}

/*
 * _ZN {<decimal> <bytes>} E [<suffix>], whose last element is the hash: then it is Rust's (a
 * C++ function's name goes on with its parameters after the E, and has no such element), and
 * the hash is left out. Returns false when the name is not such a one.
 */
static bool demangle_legacy(struct demangler *d)
{
	size_t start = d->pos, n = 0, last = 0, last_len = 0;

	while (!d->bad && !eat(d, 'E')) {
		size_t len = decimal(d);

		if (d->bad || !len || len > d->len - d->pos)
			return false;
		for (size_t i = 0; i < len; i++)
			if (d->s[d->pos + i] <= ' ' || d->s[d->pos + i] > '~')
				return false;
		last = d->pos;
		last_len = len;
		d->pos += len;
		n++;
	}
	if (d->bad || n < 2 || !is_legacy_hash(d->s + last, last_len) ||
	    !suffix_ok(d->s + d->pos, d->len - d->pos))
		return false;
	for (size_t e = start, i = 0; i < n - 1 && !d->bad; i++) {
		size_t len;

		d->pos = e;
		len = decimal(d);
		if (i)
			put(d, "::");
		legacy_element(d, d->s + d->pos, len);
		e = d->pos + len;
	}
	d->pos = last + last_len + 1;
	put_n(d, d->s + d->pos, d->len - d->pos);
	return !d->bad;
}

/* The name's length without a ".llvm.<hex>" suffix, which says only which LLVM module it is. */
static size_t without_llvm_suffix(const char *name)
{
	const char *s = strstr(name, LLVM_SUFFIX);

	if (s && !s[strspn(s + strlen(LLVM_SUFFIX), "0123456789ABCDEF@") + strlen(LLVM_SUFFIX)])
		return (size_t)(s - name);
	return strlen(name);
}

char *mt_rust_demangle(const char *name)
{
	bool v0 = !strncmp(name, "_R", 2), ok;
	struct demangler d = {0};
	char *res = NULL;
	size_t len;

	/* Most frames are C's: no more work for them than this. */
	if (!v0 && strncmp(name, "_ZN", 3))
		return NULL;
	len = without_llvm_suffix(name);
	if (len <= (v0 ? 2u : 3u))
		return NULL;
	d.out = malloc(MT_DEMANGLE_MAX);
	if (!d.out)
		return NULL;
	d.cap = MT_DEMANGLE_MAX;
	d.out[0] = '\0';
	d.s = name + (v0 ? 2 : 3);
	d.len = len - (v0 ? 2 : 3);
	if (v0) {
		demangle_v0(&d);
		ok = !d.bad;
	} else {
		ok = demangle_legacy(&d);
	}
	if (ok && d.olen)
		res = strdup(d.out);
	free(d.out);
	return res;
}
