// SPDX-License-Identifier: GPL-2.0
/* v0's numbers and identifiers, punycode included (unwind_demangle_int.h). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/unwind_demangle_int.h"

/* ---- v0's numbers and identifiers ------------------------------------------------------------ */

int dm_base62_digit(char c)
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
uint64_t dm_base62(struct demangler *d)
{
	uint64_t v = 0;
	int digit;

	if (dm_eat(d, '_'))
		return 0;
	while (!dm_eat(d, '_')) {
		digit = dm_base62_digit(dm_next(d));
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
uint64_t dm_disambiguator(struct demangler *d)
{
	uint64_t v;

	if (!dm_eat(d, 's'))
		return 0;
	v = dm_base62(d);
	if (v == UINT64_MAX)
		d->bad = true;
	return v + 1;
}

/* A decimal number with no leading zero, at most the name's length. */
size_t dm_decimal(struct demangler *d)
{
	size_t v = 0;

	if (dm_peek(d) < '0' || dm_peek(d) > '9') {
		d->bad = true;
		return 0;
	}
	if (dm_eat(d, '0'))
		return 0;
	while (dm_peek(d) >= '0' && dm_peek(d) <= '9') {
		v = v * 10 + (size_t)(dm_next(d) - '0');
		if (v > d->len) {
			d->bad = true;
			return 0;
		}
	}
	return v;
}

/* ["u"] <decimal> ["_"] <bytes>: the "_" keeps bytes that start with a digit or "_" apart. */
void dm_undisambiguated_ident(struct demangler *d, struct ident *id)
{
	id->punycode = dm_eat(d, 'u');
	id->len = dm_decimal(d);
	dm_eat(d, '_');
	id->p = d->s + d->pos;
	if (d->bad || id->len > d->len - d->pos) {
		d->bad = true;
		id->len = 0;
		return;
	}
	d->pos += id->len;
}

void dm_ident(struct demangler *d, struct ident *id)
{
	dm_disambiguator(d);
	dm_undisambiguated_ident(d, id);
}

static int dm_punycode_digit(char c)
{
	if (c >= 'a' && c <= 'z')
		return c - 'a';
	if (c >= '0' && c <= '9')
		return c - '0' + 26;
	return -1;
}

/* RFC 3492's bias adaptation, with its parameters for punycode (base 36). */
static uint32_t dm_punycode_adapt(uint32_t delta, uint32_t points, bool first)
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
static bool dm_punycode_decode(const char *enc, size_t len, uint32_t *cps, size_t *n)
{
	uint32_t code = 128, i = 0, bias = 72;
	size_t pos = 0;

	while (pos < len) {
		uint32_t old_i = i, w = 1, t;

		for (uint32_t k = 36;; k += 36) {
			int digit = pos < len ? dm_punycode_digit(enc[pos++]) : -1;

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
		bias = dm_punycode_adapt(i - old_i, (uint32_t)*n + 1, old_i == 0);
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
static void dm_put_punycode(struct demangler *d, const struct ident *id)
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
	if (!dm_punycode_decode(id->p + enc, id->len - enc, cps, &n)) {
		d->bad = true;
		return;
	}
	for (size_t i = 0; i < n && !d->bad; i++)
		if (!dm_put_utf8(d, cps[i]))
			d->bad = true;
}

void dm_put_ident(struct demangler *d, const struct ident *id)
{
	if (id->punycode)
		dm_put_punycode(d, id);
	else
		dm_put_n(d, id->p, id->len);
}
