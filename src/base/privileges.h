/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Privileges: what memtrack needs (root, or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and
 * CAP_CHECKPOINT_RESTORE) and what the traced command must never get (any of them: under sudo it
 * runs as the invoking user).
 */
#ifndef MT_PRIVILEGES_H
#define MT_PRIVILEGES_H

#include <stdbool.h>
#include <sys/types.h>

/* Who the traced command runs as. */
struct mt_identity {
	bool drop_privileges; /* run the command as uid/gid below, without capabilities */
	uid_t uid;
	gid_t gid;
	/* That user's passwd entry ("" when it has none): its groups and environment, as sudo -u */
	char user[64];
	char home[256];
	char shell[256];
};

/*
 * The identity the command runs as: user (a name) when given, else under sudo the invoking user
 * (SUDO_UID/SUDO_GID), else memtrack's own. Returns 0, or -ENOENT after one sentence when user
 * does not exist.
 */
int mt_choose_user(struct mt_identity *id, const char *user);

/*
 * In the command's process, before its exec: become the user chosen above, with its groups
 * (initgroups) and, as sudo -u does, its USER, LOGNAME, HOME and SHELL. 0 or a negative errno.
 */
int mt_become_user(const struct mt_identity *id);

/*
 * Check that memtrack holds what it needs (bpf: what allocation tracking needs too). Returns 0, or
 * -EPERM after one sentence naming what is missing and how to grant it.
 */
int mt_check_capabilities(bool bpf);

#endif
