// SPDX-License-Identifier: GPL-2.0
/* UTF-8 decoding (see utf8.h). */
#include <string.h>

#include "base/utf8.h"

size_t mt_utf8_seq(const unsigned char *s, size_t left, uint32_t *cp)
{
	size_t n, i;
	uint32_t c;

	if (!left)
		return 0;
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, c = s[0] & 0x07;
	else
		return 0;
	if (left < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* a NUL stops a sequence here too */
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and code points past U+10FFFF are not UTF-8. */
	if ((n == 3 && c < 0x800) || (n == 4 && c < 0x10000) || c > 0x10ffff ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

bool mt_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;
	uint32_t cp;

	while (i < len) {
		n = mt_utf8_seq(p + i, len - i, &cp);
		if (!n)
			return false;
		i += n;
	}
	return true;
}

size_t mt_utf8_prefix(const char *s, size_t max)
{
	size_t len = strlen(s);

	if (len <= max)
		return len;
	/* Back off continuation bytes: the cut must not split a character. */
	while (max && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}
