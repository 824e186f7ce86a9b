// SPDX-License-Identifier: GPL-2.0
/* The call stack of a stopped tracee, with libunwind-ptrace. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <libunwind-ptrace.h>

#include "backtrace.h"

struct json_object *mt_backtrace(pid_t tid, unsigned int max)
{
	struct json_object *frames = NULL;
	unw_addr_space_t as;
	unw_cursor_t cursor;
	void *upt;

	as = unw_create_addr_space(&_UPT_accessors, 0);
	if (!as)
		return NULL;
	upt = _UPT_create(tid);
	if (!upt)
		goto out_as;
	if (unw_init_remote(&cursor, as, upt) < 0)
		goto out_upt;
	frames = json_object_new_array();
	for (unsigned int i = 0; i < max; i++) {
		char name[256], frame[300];
		unw_word_t off = 0;

		if (unw_get_proc_name(&cursor, name, sizeof(name), &off) == 0)
			snprintf(frame, sizeof(frame), "%s+%#" PRIx64, name, (uint64_t)off);
		else
			snprintf(frame, sizeof(frame), "?");
		json_object_array_add(frames, json_object_new_string(frame));
		if (unw_step(&cursor) <= 0)
			break;
	}
out_upt:
	_UPT_destroy(upt);
out_as:
	unw_destroy_addr_space(as);
	return frames;
}

/* One of the SigCgt/SigIgn masks of /proc/PID/status. */
static unsigned long long signal_mask(pid_t pid, const char *field)
{
	unsigned long long mask = 0;
	char path[64], line[128];
	size_t n = strlen(field);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, n) == 0 && sscanf(line + n, "%llx", &mask) == 1)
			break;
	fclose(f);
	return mask;
}

bool mt_signal_is_fatal(pid_t pid, int sig)
{
	unsigned long long bit = 1ULL << (sig - 1);

	switch (sig) {
	case SIGCHLD:
	case SIGCONT:
	case SIGURG:
	case SIGWINCH:
	case SIGSTOP:
	case SIGTSTP:
	case SIGTTIN:
	case SIGTTOU:
		return false;
	}
	if (sig < 1 || sig > 64)
		return false;
	return !(signal_mask(pid, "SigCgt:") & bit) && !(signal_mask(pid, "SigIgn:") & bit);
}
