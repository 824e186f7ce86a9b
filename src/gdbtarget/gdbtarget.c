// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack as gdb's remote target (--gdb, docs/GDB.md): the session and its endpoint. One
 * process of the tree (the command at its exec, or the one a stop point selects) is served to
 * gdb over the remote protocol (src/gdbremote/), from the supervisor's own ptrace loop, which
 * calls in here (gdbtarget.h): memtrack stays the tracer of every thread, so its own stops
 * (watcher, back-pressure, forks, execs) are handled as in any run and never shown to gdb, and
 * every allocation is recorded while gdb has the process. Run control is gdbtarget_forks.c,
 * gdbtarget_detach.c, gdbtarget_syscalls.c, gdbtarget_stops.c and gdbtarget_resume.c; files
 * gdbtarget_files.c; the library list gdbtarget_libs.c; breakpoints gdbtarget_breaks.c;
 * memory gdbtarget_mem.c; hardware breakpoints and watchpoints gdbtarget_hw.c; registers
 * gdbtarget_regs.c; the processes served gdbtarget_procs.c.
 *
 * The endpoint admits only memtrack's user: by default a Unix socket in a directory of its own,
 * mode 0700, the socket 0600, and the peer's credentials checked at accept; or gdb's pipe
 * (stdin/stdout); TCP only when asked for, with a warning, since anyone on the machine may
 * connect to it.
 */

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/fdready.h"
#include "base/printable.h"
#include "gdbtarget/gdbtarget_int.h"
#include "tracker/tracker_returns.h"

/* How often a send that gdb does not read looks for a termination request. */
#define SEND_LOOK_MS 100

/* ---- which threads ----------------------------------------------------------------------- */

static ssize_t op_libraries(void *ctx, char *buf, size_t len)
{
	struct mt_gdbt *g = ctx;

	struct gdbt_proc *p = gdbt_cur(g);

	return mt_gdbt_libraries(p ? p->pid : g->pid, buf, len);
}

static int op_shlib_info_addr(void *ctx, uint64_t *addr)
{
	struct mt_gdbt *g = ctx;

	struct gdbt_proc *p = gdbt_cur(g);

	return mt_gdbt_debug_slot(p ? p->pid : g->pid, addr);
}

static int op_send(void *ctx, const void *buf, size_t len)
{
	struct mt_gdbt *g = ctx;
	const char *p = buf;

	while (len) {
		ssize_t n = write(g->out_fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			struct pollfd pfd = {.fd = g->out_fd, .events = POLLOUT};

			/* A gdb that reads no more (stopped, ^Z) holds memtrack until a request. */
			if (poll(&pfd, 1, SEND_LOOK_MS) == 0 &&
			    g->host.request_pending(g->host.ctx))
				return -EPIPE;
			continue;
		}
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

bool mt_gdbt_serves(const struct mt_gdbt *g, pid_t pid)
{
	if (!g || !g->pid || g->over)
		return false;
	for (size_t i = 0; i < g->n_procs; i++)
		if (g->procs[i]->pid == pid)
			return true;
	return false;
}

bool mt_gdbt_reached(const struct mt_gdbt *g)
{
	return g && g->pid;
}

int mt_gdbt_fd(const struct mt_gdbt *g)
{
	if (!g || !g->pid || g->over)
		return -1;
	return g->listen_fd >= 0 ? g->listen_fd : g->in_fd;
}

/* ---- several processes: the multiprocess extensions, fork events -------------------------- */

static pid_t op_process_of(void *ctx, pid_t tid)
{
	struct mt_gdbt_thread *t = gdbt_find_thread(ctx, tid);

	return t ? t->pid : -ESRCH;
}

static void op_select_thread(void *ctx, pid_t tid)
{
	struct mt_gdbt *g = ctx;
	struct mt_gdbt_thread *t = tid > 0 ? gdbt_find_thread(g, tid) : NULL;

	g->cur = t ? t->pid : tid > 0 && gdbt_proc_of(g, tid) ? tid : 0;
}

/*
 * gdb follows forks, vforks, execs: reported as stops from now on. A vfork's end is a stop of
 * its parent only with PTRACE_O_TRACEVFORKDONE, set on every thread of the process now (those
 * it creates later inherit it).
 */
static int op_follow_forks(void *ctx, bool fork, bool vfork, bool exec)
{
	struct mt_gdbt *g = ctx;

	g->fork_events = fork;
	g->vfork_events = vfork;
	g->exec_events = exec;
	return gdbt_set_options(g);
}

static const struct mt_gdb_ops stub_ops = {
    .send = op_send,
    .read_regs = gdbt_op_read_regs,
    .write_regs = gdbt_op_write_regs,
    .read_mem = gdbt_op_read_mem,
    .write_mem = gdbt_op_write_mem,
    .insert_breakpoint = gdbt_op_insert_breakpoint,
    .remove_breakpoint = gdbt_op_remove_breakpoint,
    .resume = gdbt_op_resume,
    .interrupt = gdbt_op_interrupt,
    .threads = gdbt_op_threads,
    .kill = gdbt_op_kill,
    .detach = gdbt_op_detach,
    .exec_file = gdbt_op_exec_file,
    .auxv = gdbt_op_auxv,
    .libraries_svr4 = op_libraries,
    .shlib_info_addr = op_shlib_info_addr,
    .insert_hw_point = gdbt_op_insert_hw,
    .remove_hw_point = gdbt_op_remove_hw,
    .file_open = gdbt_op_file_open,
    .file_pread = gdbt_op_file_pread,
    .file_close = gdbt_op_file_close,
    .file_fstat = gdbt_op_file_fstat,
    .file_readlink = gdbt_op_file_readlink,
    .catch_syscalls = gdbt_op_catch_syscalls,
    .thread_name = gdbt_op_thread_name,
    .process_of = op_process_of,
    .select_thread = op_select_thread,
    .follow_forks = op_follow_forks,
    .detach_process = gdbt_op_detach_process,
    .kill_process = gdbt_op_kill_process,
    .target_conditions = true, /* mt_gdbt_signal() asks at each hit */
};

/* ---- the connection ---------------------------------------------------------------------- */

/* HOST:PORT into a listening socket; the address as it is reachable in g->addr. */
static int listen_on(struct mt_gdbt *g, const char *spec)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *res = NULL;
	char host[128], port[16], shown[NI_MAXHOST];
	struct sockaddr_storage sa;
	socklen_t sa_len = sizeof(sa);
	const char *colon = strrchr(spec, ':');
	int fd = -1, one = 1, rc;

	if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(host) ||
	    strlen(colon + 1) >= sizeof(port))
		return -EINVAL;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
	snprintf(port, sizeof(port), "%s", colon + 1);
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc)
		return rc == EAI_SYSTEM ? -errno : -EADDRNOTAVAIL;
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 1) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sa_len) < 0 ||
	    getnameinfo((struct sockaddr *)&sa, sa_len, shown, sizeof(shown), port, sizeof(port),
			NI_NUMERICHOST | NI_NUMERICSERV)) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return rc ? rc : -EINVAL;
	}
	freeaddrinfo(res);
	snprintf(g->addr, sizeof(g->addr), strchr(shown, ':') ? "[%s]:%s" : "%s:%s", shown, port);
	g->listen_fd = fd;
	return 0;
}

/*
 * The default endpoint: a Unix socket only memtrack's user can open, in a directory of its own
 * (mkdtemp: mode 0700) under $TMPDIR or /tmp, the socket itself 0600. gdb connects with `target
 * remote PATH`, lldb with `gdb-remote unix-connect://PATH`... (docs/GDB.md).
 */
static int listen_unix(struct mt_gdbt *g)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *tmp = getenv("TMPDIR");
	mode_t old;
	int fd, err = 0;

	if (!tmp || tmp[0] != '/' || strlen(tmp) > 60)
		tmp = "/tmp";
	snprintf(g->sock_dir, sizeof(g->sock_dir), "%s/memtrack-gdb-XXXXXX", tmp);
	if (!mkdtemp(g->sock_dir)) {
		err = -errno;
		g->sock_dir[0] = '\0';
		return err;
	}
	snprintf(g->addr, sizeof(g->addr), "%s/gdb.sock", g->sock_dir);
	if (strlen(g->addr) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, g->addr, strlen(g->addr) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	old = umask(077);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(g->addr, 0600) < 0 ||
	    listen(fd, 1) < 0)
		err = -errno;
	umask(old);
	if (err) {
		close(fd);
		return err;
	}
	g->listen_fd = fd;
	return 0;
}

/* The socket and its directory, gone with the session. */
static void remove_socket(struct mt_gdbt *g)
{
	if (!g->sock_dir[0])
		return;
	unlink(g->addr);
	rmdir(g->sock_dir);
	g->sock_dir[0] = '\0';
}

int mt_gdbt_open(struct mt_gdbt **out, const struct mt_gdbt_config *cfg,
		 const struct mt_gdbt_host *host)
{
	const char *spec = cfg->spec;
	char text[MT_PRINTABLE_MAX];
	struct mt_gdbt *g;
	int err;

	*out = NULL;
	if (!spec)
		return 0;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	*out = g;
	g->cfg = *cfg;
	g->host = *host;
	g->listen_fd = g->in_fd = g->out_fd = -1;
	for (size_t i = 0; i < sizeof(g->files) / sizeof(g->files[0]); i++)
		g->files[i] = -1;
	if (strcmp(spec, "-") == 0) {
		g->stdio = true;
		return 0;
	}
	if (!spec[0]) {
		err = listen_unix(g);
		spec = "a Unix socket";
	} else {
		g->tcp = true;
		err = listen_on(g, spec);
	}
	if (err)
		fprintf(stderr, "memtrack: cannot serve gdb on %s: %s\n",
			mt_printable(text, sizeof(text), spec), strerror(-err));
	return err;
}

/*
 * Whether the peer of a Unix socket is memtrack's user (or root): the directory's mode keeps
 * others out already; this holds should the socket be reached some other way.
 */
static bool peer_admitted(const struct mt_gdbt *g, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (g->tcp)
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return false;
	return cred.uid == geteuid() || cred.uid == 0;
}

static int connect_gdb(struct mt_gdbt *g, int in_fd, int out_fd)
{
	g->in_fd = in_fd;
	g->out_fd = out_fd;
	g->conn = mt_gdb_new(&stub_ops, g, &mt_gdb_amd64, &g->stop);
	if (!g->conn)
		return -ENOMEM;
	g->state = GDB_STOPPED;
	g->stops = 1; /* the stop gdb asks about first ('?') */
	return 0;
}

/* The process reached the stop point (the command's exec, or --stop-at's): it is gdb's now. */
int mt_gdbt_start(struct mt_gdbt *g, struct mt_gdbt_thread *t, pid_t pid, const char *pos,
		  const char *where)
{
	int err;

	if (!gdbt_add_proc(g, pid))
		return -ENOMEM;
	g->pid = pid;
	t->parked = true;
	t->at_signal = false;
	g->stop = (struct mt_gdb_stop){.kind = MT_GDB_STOP_SIGNAL, .value = SIGTRAP, .tid = t->tid};
	g->state = GDB_WAITING;
	gdbt_op_exec_file(g, g->exe, sizeof(g->exe));
	if (g->stdio) {
		fprintf(stderr,
			"memtrack: process %d (%s) is stopped %s; gdb drives it over stdin\n", pid,
			pos, where);
		err = connect_gdb(g, STDIN_FILENO, STDOUT_FILENO);
	} else {
		fprintf(stderr,
			"memtrack: process %d (%s) is stopped %s; memtrack waits for gdb on %s. "
			"Connect with: gdb -ex 'target remote %s' %s\n",
			pid, pos, where, g->addr, g->addr, g->exe);
		if (g->tcp)
			fprintf(stderr,
				"memtrack: warning: anyone on this machine can connect to %s "
				"and control process %d; without an address, --gdb serves a "
				"Unix socket only you can open\n",
				g->addr, pid);
		err = 0;
	}
	/* The other threads of a process stopped at a map: parked as they report. */
	if (!err)
		err = gdbt_collect(g);
	return err ? err : MT_GDBT_LEAVE;
}

static void end_session(struct mt_gdbt *g)
{
	if (!g->over) {
		if (g->end == GDB_END_NONE)
			g->end = GDB_END_GONE;
		gdbt_let_run(g);
	}
	gdbt_close_files(g);
	if (g->conn) {
		mt_gdb_free(g->conn);
		g->conn = NULL;
		if (!g->stdio)
			close(g->in_fd);
		else if (!g->cfg.final_reply[0])
			close(STDOUT_FILENO); /* gdb's end of the pipe sees EOF */
	}
	g->in_fd = g->out_fd = -1;
}

/* gdb's bytes that came, handled; its end (EOF, an error) ends the session as a detach does. */
static int read_gdb(struct mt_gdbt *g)
{
	char buf[4096];
	ssize_t n;
	int err;

	while (g->conn && !g->over && mt_fd_readable(g->in_fd)) {
		n = read(g->in_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (g->cfg.verbose)
				fprintf(stderr, "memtrack: gdb went away: process %d runs on\n",
					g->pid);
			end_session(g);
			return 0;
		}
		err = mt_gdb_input(g->conn, buf, (size_t)n);
		if (err == -EPIPE || err == -ECONNRESET) {
			end_session(g);
			return 0;
		}
		if (err)
			return err;
	}
	return 0;
}

/*
 * A termination request to memtrack (docs/STOPS.md) ends gdb's session first, as gdb's detach
 * does: gdb's breakpoints out, every parked thread resumed, the connection (or the socket no one
 * connected to yet) closed. The request is then handled as in any run: without this, the
 * process, parked for gdb, would never get the signal, and memtrack would wait for it for ever.
 */
void mt_gdbt_end_request(struct mt_gdbt *g)
{
	if (!g->pid || g->over)
		return;
	if (g->end == GDB_END_NONE)
		g->end = GDB_END_REQUEST;
	if (g->listen_fd >= 0) {
		close(g->listen_fd);
		g->listen_fd = -1;
	}
	end_session(g);
	remove_socket(g);
}

int mt_gdbt_tick(struct mt_gdbt *g)
{
	int fd, err;

	if (!g->pid)
		return 0;
	if (g->over) {
		if (g->conn)
			end_session(g);
		return 0;
	}
	if (g->listen_fd >= 0 && mt_fd_readable(g->listen_fd)) {
		fd = accept4(g->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0 && !peer_admitted(g, fd)) {
			fprintf(stderr, "memtrack: refused a connection to %s from another user\n",
				g->addr);
			close(fd);
		} else if (fd >= 0) {
			close(g->listen_fd);
			g->listen_fd = -1;
			err = connect_gdb(g, fd, fd);
			if (err)
				return err;
		}
	}
	err = read_gdb(g);
	if (!err && !g->over && g->state != GDB_RUNNING)
		err = gdbt_collect(g);
	if (!err && g->conn && mt_gdb_finished(g->conn))
		end_session(g);
	return err;
}

void mt_gdbt_report(struct mt_gdbt *g, char *out, size_t len)
{
	static const char *const ends[] = {
	    [GDB_END_NONE] = "",
	    [GDB_END_DETACH] = ", then gdb detached and it ran on",
	    [GDB_END_KILL] = ", then gdb killed it",
	    [GDB_END_GONE] = ", then gdb went away and it ran on",
	    [GDB_END_EXIT] = " until it ended",
	    [GDB_END_REQUEST] = ", until memtrack was asked to end",
	};
	if (!g->pid)
		snprintf(out, len, "no process reached the point to serve to gdb");
	else if (!g->stops)
		snprintf(out, len, "gdb never connected to %.160s", g->stdio ? "stdin" : g->addr);
	else if (g->forks_followed)
		snprintf(out, len,
			 "process %d and %u of its tree were debugged with gdb (%u stop%s)%s, "
			 "their allocations recorded throughout",
			 g->pid, g->forks_followed, g->stops, g->stops == 1 ? "" : "s",
			 ends[g->end]);
	else
		snprintf(out, len,
			 "process %d was debugged with gdb (%u stop%s)%s, its allocations "
			 "recorded throughout",
			 g->pid, g->stops, g->stops == 1 ? "" : "s", ends[g->end]);
	if (g->pid && !g->stops)
		fprintf(stderr, "memtrack: gdb never connected to %s\n", g->addr);
}

void mt_gdbt_free(struct mt_gdbt *g)
{
	if (!g)
		return;
	if (g->conn)
		mt_gdb_free(g->conn);
	if (g->listen_fd >= 0)
		close(g->listen_fd);
	if (g->in_fd >= 0 && !g->stdio)
		close(g->in_fd);
	gdbt_close_files(g);
	remove_socket(g);
	free(g->held);
	mt_hidden_returns_close(g->hidden);
	while (g->n_procs)
		gdbt_drop_proc(g, g->procs[0]);
	free(g->procs);
	free(g->file_bytes);
	gdbt_forget_mem(0);
	free(g);
}
