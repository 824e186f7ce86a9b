// SPDX-License-Identifier: GPL-2.0
/*
 * The tracker's tables, below attaching and linking: the tracked files (their marks in the
 * watcher's known_inodes map, the files not probed), the per-process arms, the BPF side's
 * counters, and the keys user space adds to and removes from the maps whose keys are counted.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "memtrack.skel.h"

#include "base/grow.h"
#include "writer/artifact.h"
#include "base/printable.h"
#include "inspect/procmaps.h"
#include "tracker/tracker.h"

#include "tracker/tracker_int.h"

size_t mt_tracker_file_count(const struct mt_tracker *t)
{
	return t->n_files;
}

const struct mt_tracked_file *mt_tracker_file(const struct mt_tracker *t, size_t i)
{
	return i < t->n_files ? &t->files[i] : NULL;
}

/*
 * The file key names. A key can differ from a known file's by its ctime alone: either a new file
 * took over a deleted one's inode number (a new file), or the file's metadata changed (chmod,
 * touch, a link: the same file). A file with probes attached is the second: the probes hold its
 * inode, so no other file can have its number while memtrack runs. A file without probes holds
 * nothing, and is classified again: at worst a second record of a file with no allocator.
 */
const struct mt_tracked_file *mt_tracker_find(const struct mt_tracker *t,
					      const struct mt_inode_key *key)
{
	const struct mt_tracked_file *same_number = NULL;

	for (size_t i = 0; i < t->n_files; i++) {
		if (mt_inode_key_eq(&t->files[i].key, key))
			return &t->files[i];
		if (t->files[i].probes && mt_inode_same_number(&t->files[i].key, key))
			same_number = &t->files[i];
	}
	return same_number;
}

/*
 * A full known_inodes map (E2BIG; JITs that map thousands of memfds fill it) costs speed, not
 * coverage: a file that cannot be marked DONE makes each of its mappings stop its thread again,
 * and the stop finds it handled already. Any other failure is memtrack's own, and fatal.
 */
int tracker_mark_known(struct mt_tracker *t, const struct mt_inode_key *key, __u32 state)
{
	if (!bpf_map_update_elem(bpf_map__fd(t->skel->maps.known_inodes), key, &state, BPF_ANY))
		return 0;
	if (errno != E2BIG)
		return -errno;
	if (!t->inodes_full)
		fprintf(
		    stderr,
		    "memtrack: more than %u distinct executable files: from now on each mapping "
		    "of a new one stops its thread (slower, nothing is lost)\n",
		    bpf_map__max_entries(t->skel->maps.known_inodes));
	t->inodes_full = true;
	return 0;
}

int tracker_mark_done(struct mt_tracker *t, const struct mt_inode_key *key)
{
	return tracker_mark_known(t, key, MT_INODE_DONE);
}

/* What the watcher does with a handled file: nothing, or make sure the process has its links. */
__u32 tracker_file_state(const struct mt_tracker *t, const struct mt_tracked_file *f)
{
	return !t->cfg.system_scope && f->n_points ? MT_INODE_PROBED : MT_INODE_DONE;
}

/*
 * The known file key names, or NULL. When it is known under an older ctime, the BPF side learns
 * the new key too, or every later mapping of the file would stop its thread again.
 */
const struct mt_tracked_file *tracker_known_file(struct mt_tracker *t,
						 const struct mt_inode_key *key, int *err)
{
	const struct mt_tracked_file *f = mt_tracker_find(t, key);

	*err = 0;
	if (f && !mt_inode_key_eq(&f->key, key))
		*err = tracker_mark_known(t, key, tracker_file_state(t, f));
	return f;
}

/*
 * Record a file, or one function of it (function non-NULL), as not probed: in the artifact, and
 * on stderr at once where the artifact will not carry it to the summary (none, a pipe, a write
 * error). The run goes on.
 */
__attribute__((format(printf, 5, 6))) void tracker_not_probed(struct mt_tracker *t,
							      const char *path,
							      const char *function, int err,
							      const char *fmt, ...)
{
	static struct mt_artifact_unprobed u; /* 4.6 KB: not on the stack of every stop */
	char p[MT_PRINTABLE_MAX], fn[sizeof(u.function)], r[sizeof(u.reason)];
	va_list ap;

	memset(&u, 0, sizeof(u));
	u.error = err < 0 ? -err : err;
	snprintf(u.path, sizeof(u.path), "%s", path);
	snprintf(u.function, sizeof(u.function), "%s", function ? function : "");
	va_start(ap, fmt);
	vsnprintf(u.reason, sizeof(u.reason), fmt, ap);
	va_end(ap);
	t->n_unprobed++;
	/* A write error is the writer's to report: the recording stops, the run does not. */
	if (t->artifact)
		mt_artifact_write_unprobed(t->artifact, &u);
	if (!t->artifact || t->cfg.verbose || !mt_artifact_readable_later(t->artifact))
		fprintf(stderr, "memtrack: not probed: %s: %s%s%s\n",
			mt_printable(p, sizeof(p), path), mt_printable(fn, sizeof(fn), u.function),
			function ? ": " : "", mt_printable(r, sizeof(r), u.reason));
}

size_t mt_tracker_unprobed_count(const struct mt_tracker *t)
{
	return t->n_unprobed;
}

struct mt_arm *tracker_find_arm(struct mt_tracker *t, pid_t pid, uint16_t file_id)
{
	for (size_t i = 0; i < t->n_arms; i++)
		if (t->arms[i].pid == pid && t->arms[i].file_id == file_id)
			return &t->arms[i];
	return NULL;
}

bool mt_tracker_linked(struct mt_tracker *t, pid_t pid, uint16_t file_id)
{
	return tracker_find_arm(t, pid, file_id) != NULL;
}

struct mt_arm_key tracker_arm_key(pid_t pid, const struct mt_tracked_file *f)
{
	return (struct mt_arm_key){.tgid = pid, .dev = f->key.dev, .ino = f->key.ino};
}

/*
 * Keep l as pid's links to f (taking them over) and tell the watcher, so that pid's mappings of
 * f stop nobody. A full armed map costs stops, not coverage.
 */
int tracker_store_arm(struct mt_tracker *t, pid_t pid, const struct mt_tracked_file *f,
		      struct mt_links *l)
{
	struct mt_arm_key k = tracker_arm_key(pid, f);
	__u8 one = 1;
	int err;

	if (MT_GROW(t->arms, t->cap_arms, t->n_arms + 1, 64))
		return -ENOMEM;
	err = tracker_key_store(t, MT_KEYS_ARMED, t->skel->maps.armed, &k, &one);
	if (err && err != -E2BIG)
		return err;
	t->arms[t->n_arms++] = (struct mt_arm){.pid = pid, .file_id = f->file_id, .l = *l};
	return 0;
}

static void count_keys(struct mt_tracker *t, enum mt_keyed_map m, int delta)
{
	__atomic_fetch_add(&t->skel->bss->map_keys[m], (__u32)delta, __ATOMIC_RELAXED);
}

/* Insert or update key in m's map; a key the insert created is counted (memtrack.h). */
int tracker_key_store(struct mt_tracker *t, enum mt_keyed_map m, const struct bpf_map *map,
		      const void *key, const void *value)
{
	int fd = bpf_map__fd(map);

	if (!bpf_map_update_elem(fd, key, value, BPF_NOEXIST)) {
		count_keys(t, m, 1);
		return 0;
	}
	if (errno != EEXIST)
		return -errno;
	return bpf_map_update_elem(fd, key, value, BPF_EXIST) ? -errno : 0;
}

/* Delete key from m's map, and take its value when value is not NULL: -ENOENT if absent. */
int tracker_key_remove(struct mt_tracker *t, enum mt_keyed_map m, const struct bpf_map *map,
		       const void *key, void *value)
{
	int fd = bpf_map__fd(map);

	if (value ? bpf_map_lookup_and_delete_elem(fd, key, value) : bpf_map_delete_elem(fd, key))
		return -errno;
	count_keys(t, m, -1);
	return 0;
}

/* Whether m's map may hold keys; a count that went wrong errs on the side of a walk. */
bool tracker_keys_left(const struct mt_tracker *t, enum mt_keyed_map m)
{
	return __atomic_load_n(&t->skel->bss->map_keys[m], __ATOMIC_RELAXED) != 0;
}

/* Once m's map is emptied, with no program running for the run: its count starts again. */
void tracker_keys_none(struct mt_tracker *t, enum mt_keyed_map m)
{
	__atomic_store_n(&t->skel->bss->map_keys[m], 0, __ATOMIC_RELAXED);
}

/* A per-CPU counter summed over the CPUs, read into the tracker's per-CPU buffer. */
int tracker_read_counter(const struct mt_tracker *t, __u32 idx, uint64_t *sum)
{
	if (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.counters), &idx, t->percpu))
		return -errno;
	*sum = 0;
	for (int cpu = 0; cpu < t->ncpus; cpu++)
		*sum += t->percpu[cpu];
	return 0;
}

int mt_tracker_counters(const struct mt_tracker *t, struct mt_drop_counts *c)
{
	int err = tracker_read_counter(t, MT_CNT_REQ_DROPPED, &c->requests_dropped);

	if (!err)
		err = tracker_read_counter(t, MT_CNT_EV_DROPPED, &c->events_dropped);
	if (!err)
		err = tracker_read_counter(t, MT_CNT_ARGS_LOST, &c->args_lost);
	if (!err)
		err = tracker_read_counter(t, MT_CNT_WATCHER_STOPS, &c->watcher_stops);
	if (!err)
		err = tracker_read_counter(t, MT_CNT_PRESSURE_STOPS, &c->pressure_stops);
	if (!err)
		err = tracker_read_counter(t, MT_CNT_STACKS_LOST, &c->stacks_lost);
	if (!err)
		err = tracker_read_counter(t, MT_CNT_STACK_COLLISIONS, &c->stack_collisions);
	if (!err)
		err = tracker_read_counter(t, MT_CNT_UNRECORDED, &c->unrecorded_calls);
	return err;
}
