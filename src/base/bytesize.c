// SPDX-License-Identifier: GPL-2.0
/* Byte counts for people (bytesize.h). */
#include <inttypes.h>
#include <stdio.h>

#include "base/bytesize.h"

static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};

const char *mt_bytesize_human(char *buf, size_t n, uint64_t v)
{
	double d = (double)v;
	unsigned int u = 0;

	if (v < 1024) {
		snprintf(buf, n, "%" PRIu64 " B", v);
		return buf;
	}
	while (d >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		d /= 1024;
		u++;
	}
	snprintf(buf, n, "%.1f %s", d, units[u]);
	return buf;
}

const char *mt_bytesize_pow2(char *buf, size_t n, unsigned int k)
{
	snprintf(buf, n, "%u %s", 1u << (k % 10), units[k / 10]);
	return buf;
}
