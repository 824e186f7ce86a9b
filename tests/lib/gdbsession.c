// SPDX-License-Identifier: GPL-2.0
/* gdb and lldb sessions on a command under memtrack: see gdbsession.h. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/gdbsession.h"
#include "lib/mtjson.h"

void gdb_make_target(struct session *s, const char *opts, const char *const *cmd)
{
	size_t n;

	mt_tmpdir(s->dir);
	snprintf(s->art, sizeof(s->art), "%s/a.mtk", s->dir);
	snprintf(s->status, sizeof(s->status), "%s/status", s->dir);
	n = (size_t)snprintf(s->target, sizeof(s->target),
			     "target remote | sh -c '%s run%s -o %s --gdb=- %s --", MEMTRACK,
			     s->summary ? "" : " -q", s->art, opts ? opts : "");
	for (size_t i = 0; cmd[i]; i++)
		n += (size_t)snprintf(s->target + n, sizeof(s->target) - n, " %s", cmd[i]);
	snprintf(s->target + n, sizeof(s->target) - n, "; echo $? > %s'", s->status);
}

void gdb_read_results(struct session *s)
{
	const char *rep[] = {MEMTRACK, "report", "--json", s->art, NULL};
	struct mt_out r;
	char *status = mt_slurp(s->status);

	/* After a detach memtrack runs on, gdb gone: its end is waited for, 60 s at most. */
	for (int i = 0; i < 6000 && (!status || !strchr(status, '\n')); i++) {
		free(status);
		usleep(10 * 1000);
		status = mt_slurp(s->status);
	}
	ck_assert_msg(status, "memtrack did not end: gdb said %s\n%s", s->o.out, s->o.err);
	s->rc = atoi(status);
	free(status);
	ck_assert_int_eq(mt_run(rep, NULL, NULL, 60, &r), 0);
	ck_assert_msg(r.code == 0, "report: %s", r.err);
	s->report = json_tokener_parse(r.out);
	ck_assert_ptr_nonnull(s->report);
	mt_out_free(&r);
}

/*
 * gdb -batch on cmd under memtrack (opts: more run options), running the gdb commands cmds. gdb
 * waits 2 s for a reply by default; memtrack answers qSupported only once the command is stopped
 * at its exec with the BPF side loaded, which under ASan on a loaded machine took longer (gdb then
 * took the late reply for the next packet's).
 */
void gdb_session(struct session *s, const char *opts, const char *const *cmd,
		 const char *const *cmds)
{
	const char *argv[256] = {"gdb",	   "-nx",
				 "-batch", cmd[0],
				 "-ex",	   "set confirm off",
				 "-ex",	   "set breakpoint pending on",
				 "-ex",	   "set remotetimeout 60",
				 "-ex",	   s->target};
	size_t n = 12;

	gdb_make_target(s, opts, cmd);
	for (size_t i = 0; cmds[i] && n < 254; i++) {
		argv[n++] = "-ex";
		argv[n++] = cmds[i];
	}
	argv[n] = NULL;
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 120, &s->o), 0);
	gdb_read_results(s);
}

void gdbserver_session(struct mt_out *o, const char *const *cmd, const char *const *cmds)
{
	static char target[1024];
	const char *argv[256] = {"gdb",	   "-nx",
				 "-batch", cmd[0],
				 "-ex",	   "set confirm off",
				 "-ex",	   "set breakpoint pending on",
				 "-ex",	   "set remotetimeout 60",
				 "-ex",	   target};
	size_t n = 12, len;

	len = (size_t)snprintf(target, sizeof(target), "target remote | gdbserver -");
	for (size_t i = 0; cmd[i]; i++)
		len += (size_t)snprintf(target + len, sizeof(target) - len, " %s", cmd[i]);
	ck_assert_uint_lt(len, sizeof(target));
	for (size_t i = 0; cmds[i] && n < 254; i++) {
		argv[n++] = "-ex";
		argv[n++] = cmds[i];
	}
	argv[n] = NULL;
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 120, o), 0);
}

char *gdb_frame_functions(const char *out)
{
	size_t cap = strlen(out) + 1, n = 0;
	char *names = calloc(1, cap);

	ck_assert_ptr_nonnull(names);
	for (const char *line = out; line; line = strchr(line, '\n')) {
		const char *f, *in;
		size_t len;

		line += *line == '\n';
		if (line[0] != '#' || line[1] < '0' || line[1] > '9')
			continue;
		f = line + 1 + strspn(line + 1, "0123456789");
		f += strspn(f, " ");
		in = strstr(f, " in ");
		if (!strncmp(f, "0x", 2) && in && in < strchr(f, '\n'))
			f = in + 4;
		len = strcspn(f, " \n");
		memcpy(names + n, f, len);
		n += len;
		names[n++] = '\n';
	}
	return names;
}

void gdb_session_free(struct session *s)
{
	char cmd[160];

	json_object_put(s->report);
	mt_out_free(&s->o);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", s->dir);
	ck_assert_int_eq(system(cmd), 0);
}

struct json_object *gdb_totals(struct session *s)
{
	struct json_object *t = mt_json_get(s->report, "totals");

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(mt_json_i64(t, "dropped"), 0);
	return t;
}

void gdb_assert_counts(struct json_object *t, const char *what, int64_t allocations, int64_t frees,
		       int64_t bytes)
{
	ck_assert_msg(mt_json_i64(t, "allocations") == allocations, "%s: allocations %lld != %lld",
		      what, (long long)mt_json_i64(t, "allocations"), (long long)allocations);
	ck_assert_msg(mt_json_i64(t, "frees") == frees, "%s: frees %lld != %lld", what,
		      (long long)mt_json_i64(t, "frees"), (long long)frees);
	ck_assert_msg(mt_json_i64(t, "bytes_allocated") == bytes, "%s: bytes %lld != %lld", what,
		      (long long)mt_json_i64(t, "bytes_allocated"), (long long)bytes);
}

struct json_object *gdb_file_named(struct session *s, const char *needle)
{
	struct json_object *files = mt_json_get(s->report, "files");

	ck_assert_ptr_nonnull(files);
	for (size_t i = 0; i < json_object_array_length(files); i++) {
		struct json_object *f = json_object_array_get_idx(files, i), *path;

		if (json_object_object_get_ex(f, "path", &path) &&
		    strstr(json_object_get_string(path), needle))
			return f;
	}
	return NULL;
}

void lldb_session(struct session *s, const char *const *cmd, const char *const *cmds)
{
	static char script[4096];
	const char *argv[] = {"sh", "-c", script, NULL};
	size_t n;

	mt_tmpdir(s->dir);
	snprintf(s->art, sizeof(s->art), "%s/a.mtk", s->dir);
	snprintf(s->status, sizeof(s->status), "%s/status", s->dir);
	n = (size_t)snprintf(script, sizeof(script), "{ %s run -q -o %s --gdb --", MEMTRACK,
			     s->art);
	for (size_t i = 0; cmd[i]; i++)
		n += (size_t)snprintf(script + n, sizeof(script) - n, " %s", cmd[i]);
	n += (size_t)snprintf(
	    script + n, sizeof(script) - n,
	    " 2>%s/err; echo $? > %s; } & pid=$!\n"
	    "until grep -q 'Connect with' %s/err || ! kill -0 $pid 2>/dev/null; do sleep 0.05; "
	    "done\n"
	    "addr=$(sed -n \"s/.*Connect with: gdb -ex 'target remote \\([^']*\\)'.*/\\1/p\" "
	    "%s/err)\n"
	    "lldb-14 -x -b -o \"process connect -p gdb-remote unix-connect://$addr\"",
	    s->dir, s->status, s->dir, s->dir);
	for (size_t i = 0; cmds[i]; i++)
		n += (size_t)snprintf(script + n, sizeof(script) - n, " -o '%s'", cmds[i]);
	snprintf(script + n, sizeof(script) - n, " %s\nwait $pid\ncat %s/err >&2\n", cmd[0],
		 s->dir);
	ck_assert_uint_lt(n, sizeof(script) - 256);
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 120, &s->o), 0);
	gdb_read_results(s);
}
