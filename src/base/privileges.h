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
	/*
	 * memtrack holds more privilege than uid, its invoker (file capabilities, set-user-ID): the
	 * command runs as uid with no_new_privs (its execs gain nothing), files are opened with
	 * uid's rights, and only processes with uid's credentials are handed to a debugger.
	 */
	bool elevated;
	bool secure_path; /* --user: PATH as sudo -u sets it (MT_SECURE_PATH) */
	uid_t uid;
	gid_t gid;
	/* That user's passwd entry ("" when it has none): its groups and environment, as sudo -u */
	char user[64];
	char home[256];
	char shell[256];
};

/* The PATH of a command run as --user, sudo's customary secure_path. */
#define MT_SECURE_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/*
 * Where memtrack is privileged beyond its invoker, become the invoker for good (ids and no
 * capability): what reads files the user names after the run, or instead of one (memtrack
 * report), reads them with the user's rights. 0, or a negative errno after one sentence.
 */
int mt_drop_elevation(void);

/*
 * The identity the command runs as: user (a name) when given, else under sudo the invoking user
 * (SUDO_UID/SUDO_GID), else memtrack's own; where memtrack is privileged beyond its invoker,
 * always the invoker (elevated). Returns 0, -ENOENT when user does not exist, or -EPERM when
 * memtrack is privileged beyond its invoker and user is someone else; says nothing (the caller
 * knows which option named the user).
 */
int mt_choose_user(struct mt_identity *id, const char *user);

/*
 * In the command's process, before its exec: become the user chosen above, with its groups
 * (initgroups) and, as sudo -u does, its USER, LOGNAME, HOME, SHELL and (--user) PATH; elevated:
 * drop every id to the invoker's and set no_new_privs, so that no exec of the tree gains privilege
 * (set-user-ID bits and file capabilities are ignored). 0 or a negative errno.
 */
int mt_become_user(const struct mt_identity *id);

/*
 * Check that memtrack holds what it needs (bpf: what allocation tracking needs too). Returns 0, or
 * -EPERM after one sentence naming what is missing and how to grant it.
 */
int mt_check_capabilities(bool bpf);

#endif
