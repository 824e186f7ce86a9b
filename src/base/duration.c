// SPDX-License-Identifier: GPL-2.0
/* Duration formatting (see duration.h). */
#include <stdio.h>

#include "base/duration.h"

char *mt_format_duration(double ns, char *buf, size_t len)
{
	static const char *const names[] = {"ns", "us", "ms", "s"};
	unsigned int i = 0;
	double v = ns;

	while (i < 3 && v >= 1000.0) {
		v /= 1000.0;
		i++;
	}
	/* Three significant digits: enough to compare rounds, short enough for a table. */
	if (i == 0 || v >= 100.0)
		snprintf(buf, len, "%.0f %s", v, names[i]);
	else if (v >= 10.0)
		snprintf(buf, len, "%.1f %s", v, names[i]);
	else
		snprintf(buf, len, "%.2f %s", v, names[i]);
	return buf;
}
