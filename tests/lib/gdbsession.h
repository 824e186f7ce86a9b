/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gdb and lldb sessions on a command under memtrack (tests/it_gdb*.c): the real debugger in batch
 * mode, over gdb's pipe (`target remote | memtrack run --gdb=- -- CMD`) or lldb over memtrack's
 * default Unix socket, what it said, memtrack's exit status and the artifact's report.
 */
#ifndef MT_TEST_GDBSESSION_H
#define MT_TEST_GDBSESSION_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "lib/mtrun.h"

struct session {
	char dir[64], art[128], status[128], target[1024];
	struct mt_out o;	    /* gdb's: what it showed (out), the program's output (err) */
	int rc;			    /* memtrack's exit status */
	struct json_object *report; /* report --json of the artifact */
	bool summary;		    /* memtrack prints its summary (no -q) */
};

/* The target command: memtrack on cmd over gdb's pipe, its exit status kept in a file. */
void gdb_make_target(struct session *s, const char *opts, const char *const *cmd);
/* memtrack's exit status and the artifact's report, once the session ended. */
void gdb_read_results(struct session *s);
/* gdb -batch on cmd under memtrack (opts: more run options), running the gdb commands cmds. */
void gdb_session(struct session *s, const char *opts, const char *const *cmd,
		 const char *const *cmds);
/*
 * lldb-14 in batch mode on cmd under memtrack's default endpoint, a Unix socket, reached with
 * the path memtrack prints (`process connect -p gdb-remote unix-connect://PATH`), running cmds.
 */
void lldb_session(struct session *s, const char *const *cmd, const char *const *cmds);
void gdb_session_free(struct session *s);
/* The same gdb commands on cmd under gdbserver (`target remote | gdbserver - CMD`), no memtrack. */
void gdbserver_session(struct mt_out *o, const char *const *cmd, const char *const *cmds);
/* The function of every backtrace frame gdb printed ("#N  ..."), in order, one a line. */
char *gdb_frame_functions(const char *out);
/* The report's totals, nothing dropped. */
struct json_object *gdb_totals(struct session *s);
void gdb_assert_counts(struct json_object *t, const char *what, int64_t allocations, int64_t frees,
		       int64_t bytes);
/* The file record whose path contains needle. */
struct json_object *gdb_file_named(struct session *s, const char *needle);

#define SAID(s, text)                                                                              \
	ck_assert_msg(strstr((s)->o.out, text), "gdb did not say '%s':\n%s\n%s", text, (s)->o.out, \
		      (s)->o.err)

#endif
