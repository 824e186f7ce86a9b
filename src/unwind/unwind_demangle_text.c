// SPDX-License-Identifier: GPL-2.0
/* The Rust demangler's reading of a name and writing of its output, within the bounds of
 * unwind_demangle_int.h. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/unwind_demangle_int.h"

/* ---- reading and writing -------------------------------------------------------------------- */

char dm_peek(const struct demangler *d)
{
	return d->pos < d->len ? d->s[d->pos] : '\0';
}

bool dm_eat(struct demangler *d, char c)
{
	if (d->bad || dm_peek(d) != c)
		return false;
	d->pos++;
	return true;
}

char dm_next(struct demangler *d)
{
	if (d->bad || d->pos >= d->len) {
		d->bad = true;
		return '\0';
	}
	return d->s[d->pos++];
}

void dm_put_n(struct demangler *d, const char *s, size_t n)
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

void dm_put(struct demangler *d, const char *s)
{
	dm_put_n(d, s, strlen(s));
}

void dm_put_u64(struct demangler *d, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	dm_put(d, buf);
}

/* A code point as UTF-8; false when it is none (a surrogate, past U+10FFFF). */
bool dm_put_utf8(struct demangler *d, uint32_t c)
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
	dm_put_n(d, b, n);
	return true;
}

/* One more level of recursion; false (and the name bad) past the bounds. */
bool dm_enter(struct demangler *d)
{
	if (d->bad || d->depth >= MAX_DEPTH || d->steps >= MAX_STEPS) {
		d->bad = true;
		return false;
	}
	d->depth++;
	d->steps++;
	return true;
}

void dm_leave(struct demangler *d)
{
	d->depth--;
}

/* A suffix after the mangling (".cold", ".llvm.123"): "." and printable ASCII, kept as it is. */
bool dm_suffix_ok(const char *s, size_t len)
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
