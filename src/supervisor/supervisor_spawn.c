// SPDX-License-Identifier: GPL-2.0
/* Spawning the command: found on PATH, seized before its first instruction, exec failures told. */

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <grp.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "writer/artifact.h"
#include "supervisor/backtrace.h"
#include "base/clock.h"
#include "writer/events.h"
#include "base/privileges.h"
#include "supervisor/stoplog.h"
#include "supervisor/supervisor.h"
#include "tracker/tracker.h"

#include "supervisor/supervisor_int.h"

int mt_exec_failure_code(int neg_errno)
{
	return neg_errno == -ENOENT || neg_errno == -ENOTDIR ? 127 : 126;
}

/* ---- spawning ------------------------------------------------------------------------ */

/*
 * The child waits until the parent has seized it (go_fd gives EOF), so that its execve stops it
 * before its first instruction. PTRACE_SEIZE, not PTRACE_TRACEME: only a seized tracee can be
 * left in a group-stop (PTRACE_LISTEN), and its auto-attached descendants are seized too.
 */
static void child_exec(const struct mt_run_config *cfg, int err_fd, int go_fd)
{
	char go;
	int e;

	pthread_sigmask(SIG_SETMASK, &sup_caller_mask, NULL);
	while (read(go_fd, &go, 1) < 0 && errno == EINTR)
		;
	close(go_fd);
	if (cfg->identity.drop_privileges && (e = -mt_become_user(&cfg->identity)) != 0) {
		errno = e;
		goto fail;
	}
	signal(SIGPIPE, SIG_DFL); /* memtrack ignores it; an ignored signal survives exec */
	/* --gdb=-: memtrack's stdin and stdout are gdb's; the command's output goes to stderr. */
	if (cfg->gdb && strcmp(cfg->gdb, "-") == 0) {
		int null = open("/dev/null", O_RDONLY);

		if (null < 0 || dup2(null, STDIN_FILENO) < 0 ||
		    dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
			goto fail;
		if (null != STDIN_FILENO)
			close(null);
	}
	execvp(cfg->argv[0], cfg->argv);
fail:
	e = errno;
	if (write(err_fd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/* The file execvp runs for cmd: cmd itself when it has a '/', else the first one in PATH. */
static bool find_command(const char *cmd, char *path, size_t len)
{
	const char *dirs = getenv("PATH") ?: "/bin:/usr/bin";

	if (strchr(cmd, '/')) {
		snprintf(path, len, "%s", cmd);
		return true;
	}
	while (*dirs) {
		size_t n = strcspn(dirs, ":");

		snprintf(path, len, "%.*s%s%s", (int)n, dirs, n ? "/" : "", cmd);
		if (access(path, F_OK) == 0)
			return true;
		dirs += n + (dirs[n] == ':');
	}
	return false;
}

/* The interpreter a "#!" line of path names, printable; false when it has none. */
static bool read_interpreter(const char *path, char *interp, size_t len)
{
	char line[256];
	ssize_t n = -1;
	size_t start, end;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		n = read(fd, line, sizeof(line) - 1);
		close(fd);
	}
	if (n < 3 || line[0] != '#' || line[1] != '!')
		return false;
	line[n] = '\0';
	start = 2 + strspn(line + 2, " \t");
	end = start + strcspn(line + start, " \t\n");
	if (end == start)
		return false;
	line[end] = '\0';
	snprintf(interp, len, "%s", line + start);
	for (char *c = interp; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return true;
}

/*
 * Say why cmd could not be executed. execve reports a script whose "#!" interpreter is missing as
 * ENOENT, as if the script were: name the interpreter then.
 */
static void say_exec_failure(const char *cmd, int err)
{
	char path[4096], interp[256];

	if (err == ENOENT && find_command(cmd, path, sizeof(path)) &&
	    read_interpreter(path, interp, sizeof(interp)) && access(interp, X_OK) < 0) {
		fprintf(stderr, "memtrack: cannot run '%s': its interpreter %s: %s\n", cmd, interp,
			strerror(errno));
		return;
	}
	fprintf(stderr, "memtrack: cannot run '%s': %s\n", cmd, strerror(err));
}

/*
 * Say why the command's process could not be seized. Under a tracer that follows forks (strace
 * -f, gdb, memtrack running memtrack), that tracer took the child at its fork: name it.
 */
static void say_seize_failure(const char *cmd, pid_t pid, int err)
{
	pid_t tracer = sup_tracer_of(pid);

	if (err == -EPERM && tracer > 0 && tracer != getpid()) {
		fprintf(stderr,
			"memtrack: cannot trace '%s': process %d traces it already (memtrack runs "
			"under a tracer that follows its children)\n",
			cmd, tracer);
		return;
	}
	fprintf(stderr, "memtrack: cannot trace '%s': %s\n", cmd, strerror(-err));
}

/* Fork the command; on success it is stopped at its exec with the trace options set. */
int sup_spawn(struct sup *s)
{
	int pipefd[2], gofd[2], status, child_errno = 0, err;
	ssize_t n;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(gofd, O_CLOEXEC) < 0) {
		err = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return err;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		close(gofd[0]);
		close(gofd[1]);
		return err;
	}
	if (pid == 0) {
		close(pipefd[0]);
		close(gofd[1]);
		child_exec(s->cfg, pipefd[1], gofd[0]);
	}
	close(pipefd[1]);
	close(gofd[0]);
	err = ptrace(PTRACE_SEIZE, pid, 0, (void *)(long)PTRACE_OPTIONS) < 0 ? -errno : 0;
	if (err) {
		say_seize_failure(s->cfg->argv[0], pid, err);
		kill(pid, SIGKILL); /* before it may go on untraced */
		close(gofd[1]);
		close(pipefd[0]);
		waitpid(pid, &status, __WALL);
		return err;
	}
	close(gofd[1]);
	do
		n = read(pipefd[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	while (waitpid(pid, &status, __WALL) < 0)
		if (errno != EINTR)
			return -errno;
	if (n == sizeof(child_errno)) {
		say_exec_failure(s->cfg->argv[0], child_errno);
		s->res->exec_errno = child_errno;
		return -child_errno;
	}
	if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGTRAP) {
		fprintf(stderr, "memtrack: '%s' did not stop at its exec\n", s->cfg->argv[0]);
		kill(pid, SIGKILL);
		waitpid(pid, &status, __WALL);
		return -ECHILD;
	}
	if (ptrace(PTRACE_SETOPTIONS, pid, 0, (void *)(long)PTRACE_OPTIONS) < 0) {
		int err = -errno;

		kill(pid, SIGKILL);
		waitpid(pid, &status, __WALL);
		return err;
	}
	s->root = pid;
	return 0;
}
