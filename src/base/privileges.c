// SPDX-License-Identifier: GPL-2.0
/* Privileges: the capabilities memtrack needs, the identity the command runs as. */
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/privileges.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif
#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif

static bool parse_id(const char *s, unsigned long *v)
{
	char *end;

	if (!s || !*s)
		return false;
	errno = 0;
	*v = strtoul(s, &end, 10);
	return !errno && !*end;
}

/* What the command gets of the user's passwd entry: its name for initgroups, HOME and SHELL. */
static void take_entry(struct mt_identity *id, const struct passwd *pw)
{
	snprintf(id->user, sizeof(id->user), "%s", pw ? pw->pw_name : "");
	snprintf(id->home, sizeof(id->home), "%s", pw ? pw->pw_dir : "");
	snprintf(id->shell, sizeof(id->shell), "%s", pw ? pw->pw_shell : "");
}

static bool read_caps(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};

	return syscall(SYS_capget, &hdr, d) == 0;
}

/*
 * Whether memtrack runs with more privilege than the user who started it: a real uid other than
 * root, with another effective uid or gid, or capabilities (a setcap'd or set-user-ID memtrack).
 */
static bool mt_privileged_beyond_invoker(void)
{
	struct __user_cap_data_struct d[2] = {0};

	if (getuid() == 0)
		return false;
	if (geteuid() != getuid() || getegid() != getgid())
		return true;
	/* cannot tell: assume the worst, which costs the command only its set-user-ID execs */
	if (!read_caps(d))
		return true;
	return d[0].permitted || d[1].permitted;
}

int mt_drop_elevation(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct none[2] = {0};

	if (!mt_privileged_beyond_invoker())
		return 0;
	if (setresgid(getgid(), getgid(), getgid()) < 0 ||
	    setresuid(getuid(), getuid(), getuid()) < 0 || syscall(SYS_capset, &hdr, none) < 0) {
		int err = -errno;

		fprintf(stderr, "memtrack: cannot drop its privileges: %s\n", strerror(-err));
		return err;
	}
	return 0;
}

/*
 * A setcap'd or set-user-ID memtrack serves its invoker only: the command runs as them, user may
 * name nobody else, and SUDO_UID (which any user can set) means nothing.
 */
static int choose_invoker(struct mt_identity *id, const char *user)
{
	struct passwd *pw = user ? getpwnam(user) : NULL;

	if (user && (!pw || pw->pw_uid != getuid()))
		return -EPERM;
	id->uid = getuid();
	id->gid = getgid();
	id->drop_privileges = true;
	id->elevated = true;
	return 0;
}

int mt_choose_user(struct mt_identity *id, const char *user)
{
	unsigned long uid, gid;
	struct passwd *pw;

	if (mt_privileged_beyond_invoker())
		return choose_invoker(id, user);
	if (user) {
		pw = getpwnam(user);
		if (!pw)
			return -ENOENT;
		id->uid = pw->pw_uid;
		id->gid = pw->pw_gid;
		id->drop_privileges = true;
		id->secure_path = true;
		take_entry(id, pw);
		return 0;
	}
	/* sudo from root to root changes nothing; from a user, the command runs as that user. */
	if (getuid() == 0 && geteuid() == 0 && parse_id(getenv("SUDO_UID"), &uid) &&
	    parse_id(getenv("SUDO_GID"), &gid) && uid != 0) {
		id->uid = (uid_t)uid;
		id->gid = (gid_t)gid;
		id->drop_privileges = true;
		take_entry(id, getpwuid((uid_t)uid));
	}
	return 0;
}

/* Its groups stay the invoker's own; every uid and gid becomes the real one, for good. */
static int become_invoker(const struct mt_identity *id)
{
	/* Ambient capabilities (setpriv --ambient-caps) would survive the exec: cleared first. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    setresgid(id->gid, id->gid, id->gid) < 0 || setresuid(id->uid, id->uid, id->uid) < 0)
		return -errno;
	return 0;
}

int mt_become_user(const struct mt_identity *id)
{
	int err;

	if (id->elevated)
		return become_invoker(id);
	if (id->user[0])
		err = initgroups(id->user, id->gid);
	else
		err = setgroups(1, &id->gid);
	if (err < 0 || setgid(id->gid) < 0 || setuid(id->uid) < 0)
		return -errno;
	if (!id->user[0])
		return 0;
	if (setenv("USER", id->user, 1) < 0 || setenv("LOGNAME", id->user, 1) < 0 ||
	    setenv("HOME", id->home, 1) < 0 || setenv("SHELL", id->shell, 1) < 0 ||
	    (id->secure_path && setenv("PATH", MT_SECURE_PATH, 1) < 0))
		return -errno;
	return 0;
}

static bool has_cap(const struct __user_cap_data_struct *d, int cap)
{
	return d[cap / 32].effective & (1u << (cap % 32));
}

int mt_check_capabilities(bool bpf)
{
	struct __user_cap_data_struct data[2] = {0};
	static const struct {
		int cap;
		const char *name;
		bool bpf;
	} needed[] = {
	    {CAP_SYS_PTRACE, "CAP_SYS_PTRACE", false},
	    {CAP_BPF, "CAP_BPF", true},
	    {CAP_PERFMON, "CAP_PERFMON", true},
	    /* opening /proc/PID/map_files/ entries, how attached files are resolved */
	    {CAP_CHECKPOINT_RESTORE, "CAP_CHECKPOINT_RESTORE", true},
	};
	char missing[128] = "";

	if (!read_caps(data))
		return 0; /* cannot tell: let the operations themselves fail */
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
		if ((needed[i].bpf && !bpf) || has_cap(data, needed[i].cap))
			continue;
		if (missing[0])
			strcat(missing, ", ");
		strcat(missing, needed[i].name);
	}
	if (!missing[0])
		return 0;
	fprintf(stderr,
		"memtrack: missing %s: run as root, or grant them with 'setcap "
		"cap_bpf,cap_perfmon,cap_sys_ptrace,cap_checkpoint_restore+ep memtrack'\n",
		missing);
	return -EPERM;
}
