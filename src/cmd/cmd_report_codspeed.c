// SPDX-License-Identifier: GPL-2.0
/* memtrack report of CodSpeed's memory artifact: its events counted, in text or JSON. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "codspeed/codspeed_read.h"
#include "base/printable.h"

static void print_codspeed(const struct mt_codspeed_summary *s, bool json, FILE *out)
{
	int t;

	fprintf(out,
		json ? "{\"format\": \"codspeed-memtrack\", \"events\": %llu, \"by_type\": {"
		     : "CodSpeed memory artifact: %llu events\n",
		(unsigned long long)s->events);
	for (t = 0; t < MT_CS_TYPES; t++)
		fprintf(out, json ? "%s\"%s\": %llu" : "%s  %-13s %llu\n", json && t ? ", " : "",
			mt_codspeed_type_name(t), (unsigned long long)s->by_type[t]);
	fprintf(out,
		json ? "}, \"processes\": %llu, \"bytes_allocated\": %llu, \"peak_bytes\": %llu, "
		       "\"live_blocks\": %llu, \"live_bytes\": %llu, \"duration_ns\": %llu}\n"
		     : "processes %llu, allocated %llu bytes, peak %llu bytes, %llu blocks "
		       "(%llu bytes) live at the end, over %llu ns\n",
		(unsigned long long)s->processes, (unsigned long long)s->bytes_allocated,
		(unsigned long long)s->peak_bytes, (unsigned long long)s->live_blocks,
		(unsigned long long)s->live_bytes, (unsigned long long)(s->last_ns - s->first_ns));
}

/* CodSpeed's artifact: what a CodSpeed run uploads, summarized (codspeed_read.h). */
int mt_cmd_report_codspeed(const char *path, bool json)
{
	struct mt_codspeed_summary s;
	char err[320], p[MT_PRINTABLE_MAX];
	int ret = mt_codspeed_summarize(path, &s, err, sizeof(err));

	if (ret) {
		fprintf(stderr, "memtrack: %s: %s\n", mt_printable(p, sizeof(p), path),
			ret == -ENOMEM ? "out of memory" : err);
		return 1;
	}
	print_codspeed(&s, json, stdout);
	if (fflush(stdout)) {
		fprintf(stderr, "memtrack: cannot write the report: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}
