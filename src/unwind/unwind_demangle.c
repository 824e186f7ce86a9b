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
#include "unwind/unwind_demangle_int.h"

#define LEGACY_HASH_LEN 17 /* "h" and 16 hex digits */
#define LLVM_SUFFIX	".llvm."

/* ---- the legacy scheme, and the entry ------------------------------------------------------- */

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
		int x = dm_base62_digit(e[i]);

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

			dm_put(d, two ? "::" : ".");
			i += two ? 2 : 1;
		} else if (e[i] == '$') {
			const char *end = memchr(e + i + 1, '$', len - i - 1);
			uint32_t c = end ? legacy_escape(e + i + 1, (size_t)(end - e - i - 1)) : 0;

			if (!c) {
				dm_put_n(d, e + i, len - i);
				return;
			}
			/* A control character is no name's: the name is no Rust one. */
			if (c < 0x20 || (c >= 0x7f && c < 0xa0) || !dm_put_utf8(d, c))
				d->bad = true;
			i = (size_t)(end - e) + 1;
		} else {
			size_t run = strcspn(e + i, "$.");

			run = run < len - i ? run : len - i;
			dm_put_n(d, e + i, run);
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

	while (!d->bad && !dm_eat(d, 'E')) {
		size_t len = dm_decimal(d);

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
	    !dm_suffix_ok(d->s + d->pos, d->len - d->pos))
		return false;
	for (size_t e = start, i = 0; i < n - 1 && !d->bad; i++) {
		size_t len;

		d->pos = e;
		len = dm_decimal(d);
		if (i)
			dm_put(d, "::");
		legacy_element(d, d->s + d->pos, len);
		e = d->pos + len;
	}
	d->pos = last + last_len + 1;
	dm_put_n(d, d->s + d->pos, d->len - d->pos);
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
		dm_demangle_v0(&d);
		ok = !d.bad;
	} else {
		ok = demangle_legacy(&d);
	}
	if (ok && d.olen)
		res = strdup(d.out);
	free(d.out);
	return res;
}
