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
#include "base/utf8.h"

static bool is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

const char *mt_printable(char *buf, size_t n, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t out = 0, left = strlen((const char *)p);

	if (!n)
		return buf;
	while (*p) {
		uint32_t cp;
		size_t len = mt_utf8_seq(p, left, &cp);

		if (!len || is_control(cp)) {
			if (out + 1 >= n)
				break;
			buf[out++] = '?';
			p += len ? len : 1;
			left -= len ? len : 1;
			continue;
		}
		if (out + len >= n)
			break;
		memcpy(buf + out, p, len);
		out += len;
		p += len;
		left -= len;
	}
	buf[out] = '\0';
	return buf;
}

char *mt_utf8_dup(const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t left = strlen((const char *)p);
	char *buf = malloc(3 * left + 1), *o = buf;

	if (!buf)
		return NULL;
	while (*p) {
		uint32_t cp;
		size_t len = mt_utf8_seq(p, left, &cp);

		if (len) {
			memcpy(o, p, len);
			o += len;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3); /* U+FFFD REPLACEMENT CHARACTER */
			o += 3;
			len = 1;
		}
		p += len;
		left -= len;
	}
	*o = '\0';
	return buf;
}
