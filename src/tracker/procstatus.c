// SPDX-License-Identifier: GPL-2.0
/* Reading /proc/PID/status (src/tracker/procstatus.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tracker/procstatus.h"

static void parse_line(const char *line, struct mt_proc_status *st)
{
	unsigned long long v;
	int id;
	char c;

	if (sscanf(line, "State: %c", &c) == 1)
		st->state = c;
	else if (sscanf(line, "Tgid: %d", &id) == 1)
		st->tgid = id;
	else if (sscanf(line, "TracerPid: %d", &id) == 1)
		st->tracer = id;
	else if (sscanf(line, "SigPnd: %llx", &v) == 1)
		st->sig_pnd = v;
	else if (sscanf(line, "ShdPnd: %llx", &v) == 1)
		st->shd_pnd = v;
	else if (sscanf(line, "SigIgn: %llx", &v) == 1)
		st->sig_ign = v;
	else if (sscanf(line, "SigCgt: %llx", &v) == 1)
		st->sig_cgt = v;
	else if (sscanf(line, "CapPrm: %llx", &v) == 1)
		st->cap_prm = v;
	else if (sscanf(line, "CapEff: %llx", &v) == 1)
		st->cap_eff = v;
	else if (sscanf(line, "Uid: %u %u %u %u", &st->uid[0], &st->uid[1], &st->uid[2],
			&st->uid[3]) == 4 ||
		 sscanf(line, "Gid: %u %u %u %u", &st->gid[0], &st->gid[1], &st->gid[2],
			&st->gid[3]) == 4)
		st->has_ids = true;
}

int mt_proc_status_read(pid_t pid, pid_t tid, struct mt_proc_status *st)
{
	char path[64], line[256];
	FILE *f;

	memset(st, 0, sizeof(*st));
	st->state = '?';
	if (tid > 0)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		parse_line(line, st);
	fclose(f);
	return 0;
}
