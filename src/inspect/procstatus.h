/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading /proc/PID/status: the state, thread group, tracer, signal masks and credentials of a
 * task, which the supervisor consults at stops and the tracker when it picks a thread. One reader,
 * so that every caller parses the file alike.
 */
#ifndef MT_PROCSTATUS_H
#define MT_PROCSTATUS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct mt_proc_status {
	char state;	  /* 'R', 'S', 'T', 't', 'Z', 'X', ...; '?' when the line is absent */
	pid_t tgid;	  /* 0 when absent */
	pid_t tracer;	  /* TracerPid: 0 when not traced */
	uint64_t sig_pnd; /* signals pending for the thread */
	uint64_t shd_pnd; /* signals pending for the whole process */
	uint64_t sig_ign; /* ignored */
	uint64_t sig_cgt; /* caught by a handler */
	/* Its credentials: real, effective, saved and filesystem ids; permitted, effective caps */
	bool has_ids; /* the Uid: and Gid: lines were read */
	unsigned uid[4], gid[4];
	uint64_t cap_prm, cap_eff;
};

/* A signal's bit in the masks above. */
#define MT_SIG_BIT(sig) (1ULL << ((sig)-1))

/*
 * Read the status of pid, or of its thread tid when tid > 0 (/proc/PID/task/TID/status).
 * Returns 0, or -errno when the file cannot be read (the task is gone); *st is then all unknown.
 */
int mt_proc_status_read(pid_t pid, pid_t tid, struct mt_proc_status *st);

/* Whether signal sig is pending for task pid (its own or its group's); false when unreadable. */
bool mt_proc_sig_pending(pid_t pid, int sig);

/* A process's resident memory as /proc/PID/status counts it, in bytes. */
struct mt_proc_rss {
	uint64_t anon;	/* RssAnon */
	uint64_t file;	/* RssFile */
	uint64_t shmem; /* RssShmem */
	uint64_t hwm;	/* VmHWM: the kernel's high-water mark of their sum */
};

/*
 * Read pid's resident memory: one open and read of /proc/PID/status (about 6 us; no lock the
 * process's own faults take). 0, -errno when the file cannot be read, -ESRCH when it has no
 * RssAnon line (a zombie, or a kernel thread: no memory to count).
 */
int mt_proc_rss_read(pid_t pid, struct mt_proc_rss *rss);

/*
 * Field n of /proc/PID/stat as proc(5) numbers them (a number: from 4, the parent; 52 the exit
 * code), read past the command's name (which may hold spaces and parentheses). 0 with *v, or
 * -errno when the file cannot be read, -EINVAL when it has no such field.
 */
int mt_proc_stat_field(pid_t pid, int n, long long *v);

/*
 * Whether thread tid of pid is on its way out (from /proc/PID/task/TID/stat, one read): a
 * zombie, SIGKILL pending (a group exit queues it to every thread), at its ptrace exit stop
 * until its tracer has waited for that stop (exit_code, which the wait clears: the tracer knows
 * from then on), past it (PF_EXITING), or gone.
 */
bool mt_proc_task_exiting(pid_t pid, pid_t tid);

#endif
