// SPDX-License-Identifier: GPL-2.0
/*
 * The tracker's attach-request drain and file resolution: a watcher stop's requests resolved to
 * files through /proc/PID/map_files/ (or the fds), classified and handed to the attach.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/regfile.h"
#include "memtrack.skel.h"

#include "base/clock.h"
#include "base/grow.h"
#include "writer/artifact.h"
#include "base/printable.h"
#include "inspect/procmaps.h"
#include "tracker/tracker.h"

#include "tracker/tracker_int.h"

static struct mt_tracked_file *new_file(struct mt_tracker *t, const struct mt_inode_key *key,
					const char *path)
{
	struct mt_tracked_file *f;

	if (t->n_files == MAX_FILES)
		return NULL;
	if (MT_GROW(t->files, t->cap_files, t->n_files + 1, 32))
		return NULL;
	f = &t->files[t->n_files];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path)
		return NULL;
	f->key = *key;
	f->file_id = t->n_files;
	t->n_files++;
	return f;
}

static void strip_deleted(char *path)
{
	size_t n = strlen(path), s = strlen(" (deleted)");

	if (n > s && strcmp(path + n - s, " (deleted)") == 0)
		path[n - s] = '\0';
}

static int record_file(struct mt_tracker *t, const struct mt_tracked_file *f)
{
	struct mt_artifact_file rec = {
	    .file_id = f->file_id,
	    .family = f->family,
	    .probes = f->probes,
	    .unwind_rows = f->unwind_rows,
	    .unwind_error = f->unwind_err,
	};

	if (!t->artifact)
		return 0;
	snprintf(rec.build_id, sizeof(rec.build_id), "%s", f->build_id);
	snprintf(rec.path, sizeof(rec.path), "%s", f->path);
	return mt_artifact_write_file(t->artifact, &rec);
}

/* Why a file could not be classified, in words (the errors of mt_classify_fd). */
static const char *classify_error(int err)
{
	switch (err) {
	case -EOPNOTSUPP:
		return "an ELF file for another machine or class: only x86-64 code is probed";
	case -EIO:
		return "a malformed ELF file: its headers or symbol tables cannot be read";
	default:
		return strerror(-err);
	}
}

/*
 * An allocator the file holds without naming its functions (classify.h): recorded as not probed,
 * in place of the static executable's "no allocator found", which it makes precise.
 */
static void unnamed_allocator(struct mt_tracker *t, const char *path,
			      const struct mt_classification *c)
{
	if (c->unnamed == MT_FAM_GO)
		tracker_not_probed(t, path, NULL, 0,
				   "a Go runtime without symbols (.symtab stripped): its heap "
				   "(runtime.mallocgc) is not recorded");
	else if (c->n_points)
		tracker_not_probed(t, path, NULL, 0,
				   "contains %s, statically linked and stripped: only the %zu "
				   "functions its .dynsym names are probed, its other calls are "
				   "not recorded",
				   mt_family_name(c->unnamed), c->n_points);
	else
		tracker_not_probed(t, path, NULL, 0,
				   "contains %s, statically linked and stripped: its calls are "
				   "not recorded",
				   mt_family_name(c->unnamed));
}

/*
 * Every 16-bit file id is taken. A file with nothing to probe needs none: it is marked DONE. One
 * with an allocator cannot be told apart in events: it is recorded as not probed.
 */
static int handle_file_without_id(struct mt_tracker *t, const struct mt_inode_key *key, int fd,
				  const char *path)
{
	struct mt_classification c = {0};
	int err = mt_classify_fd(fd, t->cfg.placement, &c);

	if (err == -ENOMEM)
		return err;
	if (!t->files_full)
		fprintf(stderr,
			"memtrack: more than %u files handled: files mapped from now on are "
			"not probed\n",
			MAX_FILES);
	t->files_full = true;
	if (!err && (c.family != MT_FAM_NONE || c.unnamed != MT_FAM_NONE))
		tracker_not_probed(t, path, NULL, 0, "no file id left (%u files handled)",
				   MAX_FILES);
	mt_classification_free(&c);
	return tracker_mark_done(t, key);
}

/*
 * --stacks: the file's unwind table into the BPF unwinder's maps, for every executable file
 * (any of them may be on an allocation's stack), before its first instruction runs. A file
 * without one is unwound by frame pointer, and says so with -v and in the artifact.
 */
static int load_unwind_table(struct mt_tracker *t, struct mt_tracked_file *f, int fd)
{
	struct mt_unwind_status st;
	char p[MT_PRINTABLE_MAX];
	uint64_t start = mt_clock_now_ns();
	int err = mt_unwind_load(t->unwind, f->key.dev, f->key.ino, fd, f->file_id, &st);

	t->unwind_ns += mt_clock_now_ns() - start;
	if (err == -ENOMEM)
		return err;
	if (err) {
		st.err = err;
		st.rows = 0;
	}
	f->unwind_rows = st.rows;
	f->unwind_err = st.err;
	if (t->cfg.verbose && st.err)
		fprintf(stderr, "memtrack: %s: %s: its frames are unwound by frame pointer\n",
			mt_printable(p, sizeof(p), f->path), mt_unwind_status_reason(st.err));
	return 0;
}

/*
 * The classifications of the files a shared tracker's earlier runs handled (exec-harness: the
 * same libc in every benchmark), by inode key, whose ctime changes when the file does: a hit is
 * the very file, classified with the tracker's placement. Errors are kept too (not ELF).
 */
/* A deep copy of src into dst: 0, or -ENOMEM with dst empty. */
static int copy_classification(struct mt_classification *dst, const struct mt_classification *src)
{
	*dst = *src;
	dst->points = malloc(src->n_points * sizeof(*src->points) + 1);
	dst->refused = malloc(src->n_refused * sizeof(*src->refused) + 1);
	if (!dst->points || !dst->refused) {
		mt_classification_free(dst);
		return -ENOMEM;
	}
	if (src->n_points)
		memcpy(dst->points, src->points, src->n_points * sizeof(*src->points));
	if (src->n_refused)
		memcpy(dst->refused, src->refused, src->n_refused * sizeof(*src->refused));
	return 0;
}

static int classify_cached(struct mt_tracker *t, const struct mt_inode_key *key, int fd,
			   struct mt_classification *c)
{
	struct mt_classified *e, *grown;
	int err;

	for (size_t i = 0; i < t->n_classified; i++) {
		e = &t->classified[i];
		if (!mt_inode_key_eq(&e->key, key))
			continue;
		return copy_classification(c, &e->c) ? -ENOMEM : e->err;
	}
	err = mt_classify_fd(fd, t->cfg.placement, c);
	if (err == -ENOMEM || !t->keep_classified)
		return err;
	grown = realloc(t->classified, (t->n_classified + 1) * sizeof(*grown));
	if (!grown)
		return err;
	t->classified = grown;
	e = &t->classified[t->n_classified++];
	e->key = *key;
	e->err = err;
	if (copy_classification(&e->c, c))
		t->n_classified--;
	return err;
}

void tracker_forget_classified(struct mt_tracker *t)
{
	for (size_t i = 0; i < t->n_classified; i++)
		mt_classification_free(&t->classified[i].c);
	free(t->classified);
	t->classified = NULL;
	t->n_classified = 0;
}

/*
 * Classify the file open at fd (the inode key) and attach its probes; then mark it DONE. What
 * cannot be classified or probed is recorded as not probed and the run goes on: only memtrack's
 * own failures (no memory, a BPF map that refuses an update) are returned.
 */
static int handle_file(struct mt_tracker *t, const struct mt_inode_key *key, int fd,
		       const char *display_path, pid_t pid)
{
	struct mt_classification c = {0};
	struct mt_tracked_file *f;
	char path[4096], p[MT_PRINTABLE_MAX];
	int err;

	snprintf(path, sizeof(path), "%s", display_path);
	strip_deleted(path);
	if (t->n_files == MAX_FILES)
		return handle_file_without_id(t, key, fd, path);
	f = new_file(t, key, path);
	if (!f)
		return -ENOMEM;
	err = classify_cached(t, key, fd, &c);
	if (err == -ENOMEM)
		goto out;
	if (err == -ENOEXEC) {
		/* Executable mappings of non-ELF files (JIT caches, ...) have nothing to probe. */
	} else if (err) {
		tracker_not_probed(t, path, NULL, err, "%s", classify_error(err));
	} else {
		f->family = c.family;
		f->no_symbols = !c.has_symbols;
		snprintf(f->build_id, sizeof(f->build_id), "%s", c.build_id);
		if (!c.has_symbols)
			fprintf(stderr,
				"memtrack: %s has no symbol table (neither .dynsym nor "
				".symtab): its allocations, if any, cannot be tracked\n",
				mt_printable(p, sizeof(p), path));
		if (c.unnamed != MT_FAM_NONE)
			unnamed_allocator(t, path, &c);
		else if (c.static_exec && c.family == MT_FAM_NONE)
			tracker_not_probed(
			    t, path, NULL, 0,
			    "a static executable in which no allocator was found: "
			    "its allocations (its own allocator, brk, mmap) cannot "
			    "be seen%s",
			    t->cfg.mappings && !t->mappings_failed
				? "; its brk and mmap calls are recorded (--mappings)"
				: "; run --mappings records its brk and mmap calls");
		for (size_t i = 0; i < c.n_refused; i++)
			tracker_not_probed(t, path, c.refused[i].symbol, 0, "%s",
					   c.refused[i].reason);
		if (c.family != MT_FAM_NONE && c.n_points)
			err = tracker_attach_file(t, f, fd, &c, pid);
		if (err)
			goto out;
	}
	if (t->unwind) {
		err = load_unwind_table(t, f, fd);
		if (err)
			goto out;
	}
	/* A write error is the writer's to report: the recording stops, the run does not. */
	record_file(t, f);
	err = tracker_mark_known(t, key, tracker_file_state(t, f));
out:
	mt_classification_free(&c);
	return err;
}

struct resolve_ctx {
	struct mt_tracker *t;
	pid_t pid;
	const struct mt_inode_key *want; /* NULL: every unknown file (scan) */
	int handled;
	int err;
	/* The exec stop's scan: each mapping seen, to the caller too (mt_tracker_exec). */
	int (*seen)(const struct mt_map_entry *e, void *arg);
	void *seen_arg;
};

static int open_map_file(pid_t pid, const struct mt_map_entry *e)
{
	char path[96];

	mt_procmaps_map_files_path(pid, e, path, sizeof(path));
	return open(path, O_RDONLY | O_CLOEXEC);
}

/*
 * The full key of a mapping. A wanted key (from the BPF side) is taken as is: the process maps
 * an inode of that number, alive and so the only one, even if its ctime changed since.
 */
static int entry_key(const struct resolve_ctx *r, const struct mt_map_entry *e,
		     struct mt_inode_key *key)
{
	int err;

	if (r->want) {
		*key = *r->want;
		return 0;
	}
	err = mt_procmaps_entry_key(r->pid, e, key);
	/* Gone meanwhile (a handed-off process is looked at while it runs): nothing to say. */
	if (err && err != -ESRCH && err != -ENOENT)
		fprintf(stderr, "memtrack: cannot stat the mapping of %s in process %d: %s\n",
			e->path, r->pid, strerror(-err));
	return err;
}

/*
 * A mapping whose file memtrack cannot open (an LSM, a map_files that refuses): remember the file
 * as handled with nothing attached, so that it stops nobody again, and record it as not probed.
 */
static int unopenable_file(struct mt_tracker *t, const struct mt_inode_key *key,
			   const char *display_path, pid_t pid, int err)
{
	struct mt_tracked_file *f;
	char path[4096];

	snprintf(path, sizeof(path), "%s", display_path);
	strip_deleted(path);
	if (t->n_files < MAX_FILES) {
		f = new_file(t, key, path);
		if (!f)
			return -ENOMEM;
		record_file(t, f);
	}
	tracker_not_probed(t, path, NULL, err, "cannot open it through /proc/%d/map_files: %s", pid,
			   strerror(err));
	return tracker_mark_done(t, key);
}

static int resolve_entry(const struct mt_map_entry *e, void *arg)
{
	struct resolve_ctx *r = arg;
	const struct mt_tracked_file *f;
	struct mt_inode_key key;
	int fd;

	if (r->want && !mt_inode_same_number(&e->key, r->want))
		return 0;
	r->err = r->seen ? r->seen(e, r->seen_arg) : 0;
	if (r->err)
		return 1;
	r->err = entry_key(r, e, &key);
	if (r->err)
		return 1;
	f = tracker_known_file(r->t, &key, &r->err);
	if (f && !r->err)
		r->err = tracker_ensure_armed(r->t, r->pid, f);
	if (f)
		return r->err || r->want ? 1 : 0;
	fd = open_map_file(r->pid, e);
	if (fd < 0 && (errno == ENOENT || errno == ESRCH))
		return 0; /* unmapped meanwhile, or the process is gone: nothing maps it here */
	if (fd < 0) {
		r->err = unopenable_file(r->t, &key, e->path, r->pid, errno);
		r->handled++;
		return r->err ? 1 : (r->want ? 1 : 0);
	}
	r->err = handle_file(r->t, &key, fd, e->path, r->pid);
	close(fd);
	r->handled++;
	return r->err ? 1 : (r->want ? 1 : 0);
}

/*
 * Classify and attach every executable file mapping of pid that is not known yet: exec stops
 * (the program and its interpreter), and the fallback after dropped requests.
 */
static int scan_seeing(struct mt_tracker *t, pid_t pid,
		       int (*seen)(const struct mt_map_entry *e, void *arg), void *arg)
{
	struct resolve_ctx r = {.t = t, .pid = pid, .seen = seen, .seen_arg = arg};
	int err = mt_procmaps_for_each_exec(pid, resolve_entry, &r);

	return err < 0 ? err : r.err;
}

int mt_tracker_scan(struct mt_tracker *t, pid_t pid)
{
	return scan_seeing(t, pid, NULL, NULL);
}

/* Resolve key through pid's mappings; 1 when found and handled, 0 when pid does not map it. */
static int resolve_in(struct mt_tracker *t, pid_t pid, const struct mt_inode_key *key)
{
	struct resolve_ctx r = {.t = t, .pid = pid, .want = key};
	int err = mt_procmaps_for_each_exec(pid, resolve_entry, &r);

	if (err < 0)
		return err == -ENOENT || err == -ESRCH ? 0 : err;
	if (r.err)
		return r.err;
	return err == 1;
}

/* Handle key through /proc/PID/fd/FD when that fd is the file; 1 when it was, 0 when not. */
static int resolve_fd_path(struct mt_tracker *t, const struct mt_inode_key *key, const char *path,
			   pid_t pid)
{
	char target[4096];
	struct stat st;
	ssize_t n;
	int fd, err;

	/* The tree may have put a FIFO at that fd since: never a wait for its writer. */
	fd = mt_regfile_open(path, MT_REGFILE_ONLY, NULL, 0);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || mt_procmaps_kdev(st.st_dev) != key->dev || st.st_ino != key->ino) {
		close(fd);
		return 0;
	}
	n = readlink(path, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = '\0';
	err = handle_file(t, key, fd, target, pid);
	close(fd);
	return err ? err : 1;
}

/* The fd of a request still in its mmap: the mapping may not exist yet, the fd does. */
static int resolve_fd(struct mt_tracker *t, const struct mt_attach_req *q)
{
	char path[64];

	if (q->fd < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/fd/%d", q->pid, q->fd);
	return resolve_fd_path(t, &q->key, path, q->pid);
}

/*
 * A stop with no request (known_inodes was full, so the watcher could not queue one) for a file
 * whose mapping does not exist yet: the stopped mmap holds the file open, so look for it among
 * the process's open files.
 */
static int resolve_open_fds(struct mt_tracker *t, pid_t pid, const struct mt_inode_key *key)
{
	char dir[64], path[64 + sizeof(((struct dirent *)0)->d_name)];
	struct dirent *d;
	int found = 0;
	DIR *fds;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	fds = opendir(dir);
	if (!fds)
		return 0;
	while (!found && (d = readdir(fds))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		found = resolve_fd_path(t, key, path, pid);
	}
	closedir(fds);
	return found;
}

static int handle_deferred(struct mt_tracker *t)
{
	size_t kept = 0;
	int err = 0;

	for (size_t i = 0; i < t->n_deferred; i++) {
		struct mt_attach_req *q = &t->deferred[i];
		int r = 0;

		if (tracker_known_file(t, &q->key, &r))
			r = r ? r : 1; /* handled already: the request is done */
		else if (!r)
			r = resolve_in(t, q->pid, &q->key);
		if (r == 0)
			r = resolve_fd(t, q);
		if (r < 0 && !err)
			err = r;
		if (r == 0)
			t->deferred[kept++] = *q;
	}
	t->n_deferred = kept;
	return err;
}

/* On the path to the resume: one map read, of the one counter that matters here. */
static int scan_after_drops(struct mt_tracker *t, pid_t pid)
{
	uint64_t dropped;
	int err = tracker_read_counter(t, MT_CNT_REQ_DROPPED, &dropped);

	if (err || dropped == t->req_drops_seen)
		return err;
	t->req_drops_seen = dropped;
	return mt_tracker_scan(t, pid);
}

static int drain_requests(struct mt_tracker *t)
{
	int n, err;

	t->consume_err = 0;
	n = ring_buffer__consume(t->requests);
	if (n < 0 || t->consume_err) {
		err = t->consume_err ? t->consume_err : n;
		fprintf(stderr, "memtrack: draining the attach requests failed: %s\n",
			strerror(-err));
		return err;
	}
	return handle_deferred(t);
}

int mt_tracker_drop_requests(struct mt_tracker *t, pid_t pid,
			     int (*fn)(const struct mt_inode_key *key, void *arg), void *arg)
{
	size_t kept = 0;
	int err = 0;

	for (size_t i = 0; i < t->n_deferred; i++) {
		if (t->deferred[i].pid != (__u32)pid) {
			t->deferred[kept++] = t->deferred[i];
			continue;
		}
		if (!err)
			err = fn(&t->deferred[i].key, arg);
	}
	t->n_deferred = kept;
	return err;
}

int mt_tracker_link_path(struct mt_tracker *t, pid_t pid, const char *path)
{
	const struct mt_tracked_file *f;
	struct mt_inode_key key;
	struct stat st;
	int fd, err;

	/* A name only: what is there now may be a FIFO, which would hold the stop. */
	fd = mt_regfile_open(path, MT_REGFILE_ONLY, NULL, 0);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st)) {
		close(fd);
		return 0;
	}
	mt_inode_key_from_stat(&st, &key);
	f = tracker_known_file(t, &key, &err);
	if (!f && !err)
		err = handle_file(t, &key, fd, path, pid);
	close(fd);
	if (err)
		return err;
	/* Known from another process, or classified without links for pid (system scope). */
	f = mt_tracker_find(t, &key);
	return f ? tracker_ensure_armed(t, pid, f) : 0;
}

int mt_tracker_catch_up(struct mt_tracker *t, pid_t pid)
{
	int err = drain_requests(t);

	if (!err)
		err = mt_tracker_scan(t, pid);
	return err == -ENOENT || err == -ESRCH ? 0 : err;
}

int mt_tracker_handle_stop(struct mt_tracker *t, pid_t pid, const struct mt_inode_key *key)
{
	const struct mt_tracked_file *f;
	int err;

	err = drain_requests(t);
	if (err)
		return err;
	if (!tracker_known_file(t, key, &err) && !err) {
		/* The stopped thread maps the file: its mappings or its open files resolve it. */
		err = resolve_in(t, pid, key);
		if (err == 0)
			err = resolve_open_fds(t, pid, key);
		if (err == 0) {
			fprintf(stderr,
				"memtrack: process %d stopped for a file it does not map "
				"(inode %" PRIu64 ")\n",
				pid, (uint64_t)key->ino);
			err = tracker_mark_done(t, key);
		}
	}
	if (err < 0)
		return err;
	/* A known file, or one handled for another process: this one needs its links too. */
	f = mt_tracker_find(t, key);
	if (f)
		err = tracker_ensure_armed(t, pid, f);
	if (err < 0)
		return err;
	return scan_after_drops(t, pid);
}

int mt_tracker_exec(struct mt_tracker *t, pid_t pid, bool new_leader,
		    int (*seen)(const struct mt_map_entry *e, void *arg), void *arg)
{
	/*
	 * Their task is gone but the kernel still runs them for its thread group: closed later,
	 * they would count the new image's calls twice meanwhile.
	 */
	if (new_leader)
		mt_tracker_release(t, pid, true);
	return scan_seeing(t, pid, seen, arg);
}
