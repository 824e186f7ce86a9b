// SPDX-License-Identifier: GPL-2.0
/*
 * Making foreign bytes safe to show. A file name is whatever bytes the program chose: ESC starts a
 * terminal escape sequence, and a lone 0x9b is CSI to a terminal in an 8-bit mode, so anything
 * that is not valid UTF-8 is replaced along with the control characters.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/printable.h"

/*
 * Length of the valid UTF-8 sequence at s (1..4) with its code point in *cp, or 0 when s does not
 * start one (stray continuation byte, overlong form, surrogate, beyond U+10FFFF, cut short).
 */
static size_t utf8_seq(const unsigned char *s, uint32_t *cp)
{
	size_t len, i;
	uint32_t min;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0)
		len = 2, min = 0x80, *cp = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		len = 3, min = 0x800, *cp = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		len = 4, min = 0x10000, *cp = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80) /* the NUL terminator stops here too */
			return 0;
		*cp = (*cp << 6) | (s[i] & 0x3f);
	}
	if (*cp < min || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return len;
}

static bool is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

const char *mt_printable(char *buf, size_t n, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t out = 0;

	if (!n)
		return buf;
	while (*p) {
		uint32_t cp;
		size_t len = utf8_seq(p, &cp);

		if (!len || is_control(cp)) {
			if (out + 1 >= n)
				break;
			buf[out++] = '?';
			p += len ? len : 1;
			continue;
		}
		if (out + len >= n)
			break;
		memcpy(buf + out, p, len);
		out += len;
		p += len;
	}
	buf[out] = '\0';
	return buf;
}

char *mt_utf8_dup(const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	char *buf = malloc(3 * strlen((const char *)p) + 1), *o = buf;

	if (!buf)
		return NULL;
	while (*p) {
		uint32_t cp;
		size_t len = utf8_seq(p, &cp);

		if (len) {
			memcpy(o, p, len);
			o += len;
			p += len;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3); /* U+FFFD REPLACEMENT CHARACTER */
			o += 3;
			p++;
		}
	}
	*o = '\0';
	return buf;
}
