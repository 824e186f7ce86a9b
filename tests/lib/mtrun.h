/* SPDX-License-Identifier: GPL-2.0 */
/* Integration-test helpers: run the built memtrack (or any program) and capture what it did. */
#ifndef MT_TEST_RUN_H
#define MT_TEST_RUN_H

#include <stdbool.h>
#include <sys/types.h>

#define MEMTRACK	MT_BUILD_DIR "/memtrack"
/* The test build of memtrack: fault injection, and hooks no release binary has (Makefile). */
#define MEMTRACK_FAULTS MT_BUILD_DIR "/tests/memtrack-faults"
#define FIXTURE(name)	MT_BUILD_DIR "/fixtures/" name

struct mt_out {
	pid_t pid;  /* the process run */
	int status; /* raw wait status */
	int code;   /* exit code, or 128 + signal */
	char *out;  /* stdout, NUL-terminated */
	char *err;  /* stderr, NUL-terminated */
};

/*
 * Run argv (NULL-terminated) with env_extra ("K=V" strings, NULL-terminated, may be NULL) added
 * to the environment ("K" alone removes K), in directory cwd (NULL: unchanged). Killed after
 * timeout_s seconds. stdin is the test's. Returns 0, or -1 when it could not be started.
 */
int mt_run(const char *const *argv, const char *const *env_extra, const char *cwd, int timeout_s,
	   struct mt_out *o);
/* The same with input (NULL: the test's stdin) as the program's stdin. */
int mt_run_input(const char *const *argv, const char *const *env_extra, const char *cwd,
		 const char *input, int timeout_s, struct mt_out *o);
void mt_out_free(struct mt_out *o);

/* Start argv with stdout on a pipe; returns its pid and sets *out_fd. */
pid_t mt_spawn_piped(const char *const *argv, int *out_fd);

/*
 * A --trace-stops log without its first record, the format's version (checked: version 1), so
 * that tests compare the stops and files themselves. NULL when the file cannot be read.
 */
char *mt_slurp_trace(const char *path);
/* The whole file, NUL-terminated (NULL on error). */
char *mt_slurp(const char *path);
/* A fresh empty file under /tmp; the path is to free. */
char *mt_tmpfile(void);
/*
 * `make install DESTDIR=destdir PREFIX=/usr` of this build, the binary taken as it is (make -o:
 * nothing rebuilt). Fills *o; returns as mt_run does.
 */
int mt_make_install(const char *destdir, struct mt_out *o);
/* A fresh directory under /tmp; path must hold 64 bytes. */
void mt_tmpdir(char *path);
/*
 * For a script that mounts a /tmp of its own (the runner's fixed FIFO paths): a build or source
 * tree under /tmp (a checkout in /tmp/ci) would vanish under it. *before (run first) mounts the
 * old /tmp at /mnt, *after (run once the new /tmp is mounted) binds each tree's top folder back
 * at its path; both "" when neither tree is under /tmp.
 */
void mt_tmp_keep_trees(char *before, size_t nb, char *after, size_t na);
/* Number of lines of s that contain needle. */
int mt_count_lines(const char *s, const char *needle);
/* true when pid exists (as any state but a reaped one). */
bool mt_pid_alive(pid_t pid);
/*
 * For a test that is a child subreaper: wait (up to 10 s) for memtrack's closer processes that
 * came to it (src/tracker/tracker_closer.c: they detach links after memtrack exits) and reap
 * them, so that any other child left is the tree's. Returns how many were reaped.
 */
int mt_reap_closers(void);
/*
 * Attach gdb -batch to pid and read a register, as a user would at a stop point. Returns true
 * when gdb could; *said (to free) holds what gdb printed.
 */
bool mt_gdb_attaches(pid_t pid, char **said);

/*
 * [wrap...] memtrack run -q [opts...] -o DIR/a.mtk -- cmd..., DIR a fresh directory, memtrack the
 * binary to run (MEMTRACK, or a test build). wrap and opts are NULL-terminated or NULL (wrap runs
 * memtrack, as `unshare --pid --fork` would). Fills *o and returns the artifact's path (to free),
 * or NULL when memtrack could not be started. The caller judges o->code.
 */
char *mt_record(const char *memtrack, const char *const *wrap, const char *const *opts,
		const char *const *cmd, int timeout_s, struct mt_out *o);

/* Remove an artifact mt_record() returned and its directory, and free the path. */
void mt_record_remove(char *art);

/*
 * memtrack run -q -o ARTIFACT [opts...] -- cmd..., then memtrack report --json ARTIFACT.
 * opts and cmd are NULL-terminated (opts may be NULL). Fills *o with the run's output and returns
 * the report (a json_object *, to put), or NULL when the run left no readable artifact.
 */
struct json_object *mt_run_report(const char *const *opts, const char *const *cmd, int timeout_s,
				  struct mt_out *o);

/* The same with another memtrack binary for the run (build/tests/memtrack-faults). */
struct json_object *mt_run_report_with(const char *memtrack, const char *const *opts,
				       const char *const *cmd, int timeout_s, struct mt_out *o);

/*
 * The memtrack a loop test's iteration i runs: 0 links as this kernel allows (uprobe_multi where
 * it has it), 1 the way of kernels without uprobe_multi (6.1): one perf link per probe and process
 * (MT_NO_UPROBE_MULTI in the environment, honoured by the test build only).
 */
const char *mt_memtrack_link_path(int i);

/* The value of "key": N in a JSON line or text, first occurrence after `after` (NULL: start). */
long long mt_json_int(const char *s, const char *key);

/*
 * argv started as a user starts a job: in a session (and process group) of its own whose leader
 * it is, with default signal dispositions and mask, stdin /dev/null, stdout and stderr into
 * out_path. Returns its pid (its group's id), to wait for.
 */
pid_t mt_spawn_session(const char *const *argv, const char *out_path);
/* The text of path once it holds needle, polled for bound_ms at most (to free; NULL: never). */
char *mt_wait_for_text(const char *path, const char *needle, int bound_ms);
/*
 * Wait for pid up to bound_ms (both bounds stretched by CK_TIMEOUT_MULTIPLIER): the ms it took,
 * or -1 when it did not end, then it is killed (SIGKILL) and reaped.
 */
long mt_wait_ms(pid_t pid, int bound_ms, int *status);
/*
 * argv (a debugger, say) with its stdin a pipe whose end is *in (closing it ends its input), its
 * stdout and stderr into out_path. Returns its pid, or -1.
 */
pid_t mt_spawn_fed(const char *const *argv, const char *out_path, int *in);

#endif
