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
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "base/regfile.h"
#include "writer/artifact.h"
#include "inspect/backtrace.h"
#include "base/clock.h"
#include "writer/events.h"
#include "base/privileges.h"
#include "inspect/stoplog.h"
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

	while (read(go_fd, &go, 1) < 0 && errno == EINTR)
		;
	close(go_fd);
	pthread_sigmask(SIG_SETMASK, &sup_caller_mask, NULL);
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
	/*
	 * Under gdb, the program's addresses are the same from run to run, as gdbserver starts it
	 * (gdb's disable-randomization, on by default, never reaches a `target remote` stub).
	 */
	if (cfg->gdb)
		personality((unsigned long)personality(0xffffffff) | ADDR_NO_RANDOMIZE);
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
	int fd = mt_regfile_open(path, MT_REGFILE_ONLY, NULL, 0);

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

/*
 * The command's process without a copy of memtrack's memory. A fork copies the page tables of
 * every written page of memtrack's (its heap, the relocated data of its 17 libraries) and the
 * command's exec tears them down again: about 1.5 ms a spawn here, once per benchmark in
 * exec-harness. A vfork shares the memory instead, but suspends its caller until the exec, and the
 * child must wait for memtrack's PTRACE_SEIZE before it: so a thread of its own vforks, the child
 * sends its pid, and this thread (the tracer, as every ptrace call must come from it) seizes it.
 * The child then makes system calls only (child_exec), which is all a vfork child may do: not
 * with --user, whose switch reads the user database and sets the environment (a fork then).
 */
struct vfork_spawn {
	struct sup *s;
	bool done;	 /* the vfork returned in the vforker: past the child's exec or end */
	int pipes[3][2]; /* err, go, pid: each child's end is in [0][1], [1][0], [2][1] */
};

/*
 * The thread that vforks, one for the process's life, idle between spawns: a thread made and
 * joined for each spawn cost a clone, once per benchmark in exec-harness. pid: the process that
 * made it (a fork's child has no such thread, and makes its own).
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pid_t pid;
	struct vfork_spawn *req; /* the spawn asked for, until its vfork returned */
} vforker = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void vfork_child(struct vfork_spawn *v)
{
	pid_t pid = vfork();

	if (pid == 0) {
		pid_t self = getpid();

		/* Its own table of fds: memtrack's ends closed, or the go would never come. */
		close(v->pipes[0][0]);
		close(v->pipes[1][1]);
		close(v->pipes[2][0]);
		if (write(v->pipes[2][1], &self, sizeof(self)) != sizeof(self))
			_exit(127);
		close(v->pipes[2][1]);
		child_exec(v->s->cfg, v->pipes[0][1], v->pipes[1][0]);
	}
	/* Past the child's exec or exit: a child gone before it sent its pid ends the read. */
	close(v->pipes[2][1]);
}

static void *vforker_main(void *arg)
{
	struct vfork_spawn *v;

	(void)arg;
	pthread_mutex_lock(&vforker.lock);
	for (;;) {
		while (!vforker.req)
			pthread_cond_wait(&vforker.cond, &vforker.lock);
		v = vforker.req;
		pthread_mutex_unlock(&vforker.lock);
		vfork_child(v);
		pthread_mutex_lock(&vforker.lock);
		v->done = true;
		vforker.req = NULL;
		pthread_cond_broadcast(&vforker.cond);
	}
	return NULL;
}

/* Hand v to the vforker, made first if this process has none; 0 or a negative errno. */
static int vforker_spawn(struct vfork_spawn *v)
{
	pthread_t thread;
	sigset_t all, old;
	int err = 0;

	pthread_mutex_lock(&vforker.lock);
	if (vforker.pid != getpid()) {
		/* Every signal blocked: they are the main thread's, and the child starts so too. */
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		err = -pthread_create(&thread, NULL, vforker_main, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (!err)
			pthread_detach(thread);
		vforker.pid = err ? 0 : getpid();
	}
	if (!err) {
		v->done = false;
		vforker.req = v;
		pthread_cond_broadcast(&vforker.cond);
	}
	pthread_mutex_unlock(&vforker.lock);
	return err;
}

/* Until v's vfork returned: the child has exec'd or ended, and shares nothing any more. */
static void vforker_wait(struct vfork_spawn *v)
{
	pthread_mutex_lock(&vforker.lock);
	while (!v->done)
		pthread_cond_wait(&vforker.cond, &vforker.lock);
	pthread_mutex_unlock(&vforker.lock);
}

static void close_pipes(int p[][2], int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < 2; j++)
			if (p[i][j] >= 0)
				close(p[i][j]);
}

/* The child waiting for its go, by vfork from a thread; its pid, or a negative errno. */
static pid_t start_vforked(struct sup *s, int *err_rd, int *go_wr, struct vfork_spawn *v)
{
	pid_t pid = 0;
	ssize_t n;
	int err;

	memset(v->pipes, -1, sizeof(v->pipes));
	v->s = s;
	for (int i = 0; i < 3; i++)
		if (pipe2(v->pipes[i], O_CLOEXEC) < 0) {
			err = -errno;
			close_pipes(v->pipes, 3);
			return err;
		}
	/* The child starts with every signal blocked, until child_exec sets the caller's mask. */
	err = vforker_spawn(v);
	if (err) {
		close_pipes(v->pipes, 3);
		return err;
	}
	do
		n = read(v->pipes[2][0], &pid, sizeof(pid));
	while (n < 0 && errno == EINTR);
	/* The child has its own copies now (or is gone): memtrack keeps the other ends. */
	close(v->pipes[2][0]);
	close(v->pipes[0][1]);
	close(v->pipes[1][0]);
	*err_rd = v->pipes[0][0];
	*go_wr = v->pipes[1][1];
	if (n == sizeof(pid) && pid > 0)
		return pid;
	vforker_wait(v);
	close(*err_rd);
	close(*go_wr);
	fprintf(stderr, "memtrack: cannot run '%s': its process ended before its exec\n",
		s->cfg->argv[0]);
	return -ECHILD;
}

/* The child waiting for its go, by fork: with --user, or where no thread can be made. */
static pid_t start_forked(struct sup *s, int *err_rd, int *go_wr)
{
	int pipefd[2], gofd[2], err;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(gofd, O_CLOEXEC) < 0) {
		err = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return err;
	}
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
	*err_rd = pipefd[0];
	*go_wr = gofd[1];
	return pid;
}

/*
 * A child that will not run the command: killed and waited for to its end. A SIGKILL does not end
 * its exit stop (where an exec failed): resumed from every stop, or a vfork's thread would wait.
 */
static void kill_and_reap(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	ptrace(PTRACE_CONT, pid, 0, 0);
	for (;;) {
		pid_t r = waitpid(pid, &status, __WALL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r != pid || WIFEXITED(status) || WIFSIGNALED(status))
			break;
		ptrace(PTRACE_CONT, pid, 0, 0);
	}
}

/* Spawn the command; on success it is stopped at its exec with the trace options set. */
int sup_spawn(struct sup *s)
{
	int err_rd = -1, go_wr = -1, status, child_errno = 0, err;
	struct vfork_spawn v = {.done = false};
	bool vforked = !s->cfg->identity.drop_privileges;
	ssize_t n;
	pid_t pid;

	fflush(NULL);
	pid = vforked ? start_vforked(s, &err_rd, &go_wr, &v) : -EAGAIN;
	if (pid == -EAGAIN) {
		vforked = false;
		pid = start_forked(s, &err_rd, &go_wr);
	}
	if (pid < 0)
		return pid;
	err = ptrace(PTRACE_SEIZE, pid, 0, (void *)(long)PTRACE_OPTIONS) < 0 ? -errno : 0;
	if (err) {
		say_seize_failure(s->cfg->argv[0], pid, err);
		kill_and_reap(pid); /* before its go: it must not go on untraced */
		close(go_wr);
		close(err_rd);
		if (vforked)
			vforker_wait(&v);
		return err;
	}
	close(go_wr);
	do
		n = read(err_rd, &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(err_rd);
	while (waitpid(pid, &status, __WALL) < 0 && errno == EINTR)
		;
	if (n == sizeof(child_errno)) {
		say_exec_failure(s->cfg->argv[0], child_errno);
		s->res->exec_errno = child_errno;
		err = -child_errno;
	} else if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGTRAP) {
		fprintf(stderr, "memtrack: '%s' did not stop at its exec\n", s->cfg->argv[0]);
		err = -ECHILD;
	} else if (ptrace(PTRACE_SETOPTIONS, pid, 0, (void *)(long)PTRACE_OPTIONS) < 0) {
		err = -errno;
	}
	if (err)
		kill_and_reap(pid);
	/* Past the exec (its vfork done before the exec stop) or the child's end. */
	if (vforked)
		vforker_wait(&v);
	if (!err)
		s->root = pid;
	return err;
}
