// SPDX-License-Identifier: GPL-2.0
/* What this host can do, proven on it (hostcaps.h). */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hostcaps.h"

/* How long the child may take to write its variable and end: far more than it needs. */
#define PROBE_BOUND_MS 5000

/* DR7: local enable of DR0 (bit 0), break on data writes (R/W0 = 01), 4 bytes (LEN0 = 11). */
#define DR7_DR0_WRITE_4 ((1ul << 0) | (1ul << 16) | (3ul << 18))
#define DR6_B0		(1ul << 0)

static volatile uint32_t watched, untouched;

static long dr_offset(int n)
{
	return (long)(offsetof(struct user, u_debugreg) + (size_t)n * sizeof(long));
}

static void child(void)
{
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
		_exit(120);
	raise(SIGSTOP);
	watched = 7;
	_exit(0);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* waitpid for pid, bounded: 0 and *status, or -ETIMEDOUT (the child is then killed). */
static int wait_bounded(pid_t pid, int *status)
{
	uint64_t deadline = now_ms() + PROBE_BOUND_MS;
	pid_t r;

	while ((r = waitpid(pid, status, WNOHANG)) == 0) {
		if (now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, status, 0);
			return -ETIMEDOUT;
		}
		usleep(1000);
	}
	return r == pid ? 0 : -errno;
}

static const char *say(char *why, size_t len, const char *fmt, const char *detail)
{
	snprintf(why, len, fmt, detail);
	return why;
}

/* The child stopped at its SIGSTOP: arm DR0 on addr, let it run, see how it stops. */
static const char *arm_and_run(pid_t pid, const volatile uint32_t *addr, bool *reaped, char *why,
			       size_t len)
{
	int status;
	long dr6;

	if (ptrace(PTRACE_POKEUSER, pid, (void *)dr_offset(0), (void *)addr) < 0 ||
	    ptrace(PTRACE_POKEUSER, pid, (void *)dr_offset(7), (void *)DR7_DR0_WRITE_4) < 0)
		return say(why, len, "the kernel refuses the debug registers (PTRACE_POKEUSER: %s)",
			   strerror(errno));
	if (ptrace(PTRACE_CONT, pid, NULL, NULL) < 0)
		return say(why, len, "PTRACE_CONT: %s", strerror(errno));
	if (wait_bounded(pid, &status) < 0)
		return say(why, len, "%s", "the probe's child did not end within 5 s");
	*reaped = !WIFSTOPPED(status);
	if (WIFEXITED(status))
		return say(why, len, "%s",
			   "a hardware watchpoint armed with PTRACE_POKEUSER did not fire: the "
			   "child wrote the watched variable and ran to its end (this host's debug "
			   "registers, as in some virtual machines)");
	if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGTRAP)
		return say(why, len, "%s", "the probe's child stopped, but not with SIGTRAP");
	errno = 0;
	dr6 = ptrace(PTRACE_PEEKUSER, pid, (void *)dr_offset(6), NULL);
	if (errno || !(dr6 & DR6_B0))
		return say(why, len, "%s", "a SIGTRAP came, but DR6 does not say DR0 hit");
	return NULL;
}

const char *mt_hw_watchpoint_missing(bool decoy, char *why, size_t len)
{
	const char *missing;
	bool reaped = false;
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return say(why, len, "fork: %s", strerror(errno));
	if (pid == 0)
		child();
	/* Not stopped: ended (reaped), or killed at the bound (reaped too). */
	if (wait_bounded(pid, &status) < 0 || !WIFSTOPPED(status))
		return say(why, len, "%s", "the probe's child did not stop under ptrace");
	missing = arm_and_run(pid, decoy ? &untouched : &watched, &reaped, why, len);
	if (!reaped) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	return missing;
}

const char *mt_suite_hw_watchpoint_missing(char *why, size_t len)
{
	const char *env = getenv("MT_HW_WATCH");

	return mt_hw_watchpoint_missing(env && !strcmp(env, "decoy"), why, len);
}
