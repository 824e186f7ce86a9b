// SPDX-License-Identifier: GPL-2.0
/* A GNU build id as text (see build_id.h). */
#include "base/build_id.h"

void mt_build_id_hex(const uint8_t *id, size_t n, char *out, size_t size)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	if (!size)
		return;
	for (i = 0; i < n && 2 * i + 2 < size; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 0xf];
	}
	out[2 * i] = '\0';
}
