// SPDX-License-Identifier: GPL-2.0
/* Whether the invoker may debug a process (debug_rights.h): its credentials against theirs. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/privileges.h"
#include "inspect/debug_rights.h"
#include "inspect/procstatus.h"

/* Whether gid is the invoker's: their own or one of their supplementary groups. */
static bool invoker_has_group(const struct mt_identity *invoker, gid_t gid)
{
	gid_t groups[256];
	int n = getgroups(256, groups);

	if (gid == invoker->gid)
		return true;
	for (int i = 0; i < n; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

int mt_invoker_may_debug(const struct mt_identity *invoker, pid_t pid, char *why, size_t len)
{
	struct mt_proc_status st;
	int err;

	if (!invoker->elevated)
		return 0;
	err = mt_proc_status_read(pid, 0, &st);
	if (err) {
		snprintf(why, len, "cannot read its credentials: %s", strerror(-err));
		return err;
	}
	for (int i = 0; i < 4; i++) {
		if (!st.has_ids || st.uid[i] != invoker->uid) {
			snprintf(why, len, "it runs as uid %u, not as uid %u who started memtrack",
				 st.uid[i], (unsigned)invoker->uid);
			return -EPERM;
		}
		if (!invoker_has_group(invoker, st.gid[i])) {
			snprintf(why, len, "it runs with gid %u, which uid %u does not have",
				 st.gid[i], (unsigned)invoker->uid);
			return -EPERM;
		}
	}
	if (st.cap_prm || st.cap_eff) {
		snprintf(why, len, "it holds capabilities (%#llx) uid %u does not have",
			 (unsigned long long)st.cap_prm, (unsigned)invoker->uid);
		return -EPERM;
	}
	return 0;
}
