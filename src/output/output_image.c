// SPDX-License-Identifier: GPL-2.0
/* How the text outputs (output.h) name a process image: its position in the tree. */
#include <inttypes.h>
#include <stdio.h>

#include "base/printable.h"
#include "output/output.h"

const char *mt_output_image_pos(char *buf, size_t n, const struct mt_image *g)
{
	char p[MT_PRINTABLE_MAX];
	int k;

	mt_printable(p, sizeof(p), g->position[0] ? g->position : "?");
	k = snprintf(buf, n, "%.*s", (int)n - 1, p);
	if (g->exec_seq && k >= 0 && (size_t)k < n)
		snprintf(buf + k, n - (size_t)k, "+%" PRIu32, g->exec_seq);
	return buf;
}
