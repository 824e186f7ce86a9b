// SPDX-License-Identifier: GPL-2.0
/* Reading /proc/PID/status and /proc/PID/task/TID/stat (src/inspect/procstatus.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "inspect/procstatus.h"

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

/* The "NAME:   N kB" line's value in bytes, 0 when absent; *seen set when present. */
static uint64_t kb_field(const char *buf, const char *name, bool *seen)
{
	const char *p = strstr(buf, name);

	if (!p)
		return 0;
	*seen = true;
	return strtoull(p + strlen(name), NULL, 10) * 1024;
}

int mt_proc_rss_read(pid_t pid, struct mt_proc_rss *rss)
{
	char path[64], buf[4096];
	bool seen = false;
	ssize_t n;
	int fd;

	memset(rss, 0, sizeof(*rss));
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* The file is some 1.5 KiB: one read takes it whole (a seq_file fills what it is given). */
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	rss->anon = kb_field(buf, "\nRssAnon:", &seen);
	if (!seen)
		return -ESRCH;
	rss->file = kb_field(buf, "\nRssFile:", &seen);
	rss->shmem = kb_field(buf, "\nRssShmem:", &seen);
	rss->hwm = kb_field(buf, "\nVmHWM:", &seen);
	return 0;
}

int mt_proc_stat_field(pid_t pid, int n, long long *v)
{
	char path[64], buf[1024], *p;
	int fd, field = 2;
	ssize_t k;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	k = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (k <= 0)
		return k < 0 ? -errno : -EINVAL;
	buf[k] = '\0';
	p = strrchr(buf, ')'); /* field 2, the name, ends at the last one */
	while (p && (p = strchr(p + 1, ' ')))
		if (++field == n)
			return sscanf(p + 1, "%lld", v) == 1 ? 0 : -EINVAL;
	return -EINVAL;
}

/* The kernel's PF_EXITING, and the code of a ptrace stop at PTRACE_EVENT_EXIT (SIGTRAP | 6 << 8).
 */
#define MT_PF_EXITING	  0x4u
#define MT_EXIT_STOP_CODE (5 | 6 << 8)
bool mt_proc_sig_pending(pid_t pid, int sig)
{
	struct mt_proc_status st;

	return !mt_proc_status_read(pid, 0, &st) && ((st.sig_pnd | st.shd_pnd) & MT_SIG_BIT(sig));
}

/* Fields of /proc/PID/task/TID/stat, counted from 0 after the command's ")": field N is N - 3. */
#define MT_STAT_FLAGS	  6  /* flags, field 9 */
#define MT_STAT_SIGNAL	  28 /* the thread's pending signals, field 31 */
#define MT_STAT_EXIT_CODE 49 /* exit_code, field 52 */

bool mt_proc_task_exiting(pid_t pid, pid_t tid)
{
	unsigned long long v, flags = 0, pending = 0, code = 0;
	char path[64], buf[1024], *p, state;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return true; /* gone */
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || !p[1] || !p[2])
		return true;
	state = p[2];
	for (int i = 1; i <= MT_STAT_EXIT_CODE + 1 && (p = strchr(p + 1, ' ')); i++) {
		v = strtoull(p + 1, NULL, 10);
		if (i == MT_STAT_FLAGS + 1)
			flags = v;
		else if (i == MT_STAT_SIGNAL + 1)
			pending = v;
		else if (i == MT_STAT_EXIT_CODE + 1)
			code = v;
	}
	return state == 'Z' || state == 'X' || (pending & MT_SIG_BIT(9 /* SIGKILL */)) ||
	       (flags & MT_PF_EXITING) || code == MT_EXIT_STOP_CODE;
}
