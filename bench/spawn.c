// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spawn.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

int bench_spawn(const char *prog, char **argv, uint64_t *wall_ns)
{
	int pipefd[2], status, child_errno = 0;
	uint64_t t0;
	pid_t pid;

	/* A close-on-exec pipe tells an exec failure apart from a command that exits 127. */
	if (pipe2(pipefd, O_CLOEXEC)) {
		fprintf(stderr, "%s: pipe: %s\n", prog, strerror(errno));
		return -1;
	}
	t0 = now_ns();
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s: fork: %s\n", prog, strerror(errno));
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		execvp(argv[0], argv);
		child_errno = errno;
		/* If the parent cannot be told, it still sees exit status 127. */
		if (write(pipefd[1], &child_errno, sizeof(child_errno)) != sizeof(child_errno))
			_exit(127);
		_exit(127);
	}
	close(pipefd[1]);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "%s: waitpid: %s\n", prog, strerror(errno));
			close(pipefd[0]);
			return -1;
		}
	}
	*wall_ns = now_ns() - t0;
	if (read(pipefd[0], &child_errno, sizeof(child_errno)) == sizeof(child_errno)) {
		fprintf(stderr, "%s: cannot run '%s': %s\n", prog, argv[0], strerror(child_errno));
		close(pipefd[0]);
		return -1;
	}
	close(pipefd[0]);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "%s: '%s' failed (%s %d)\n", prog, argv[0],
			WIFEXITED(status) ? "exit status" : "signal",
			WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		return -1;
	}
	return 0;
}
