// SPDX-License-Identifier: GPL-2.0
/*
 * The call stack of a stopped tracee (src/inspect/backtrace.h): its pcs unwound with
 * libunwind-ptrace, each turned into a file and an offset through /proc/TID/maps, the way the BPF
 * unwinder records frames (MT_FRAME), and named by the symbolisation of recorded stacks.
 * libunwind's own names would do without the last step, but it looks up the closest symbol below a
 * pc whatever its size and reads no debug file: a static function of a stripped library (glibc's)
 * would take the name of the exported one before it.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libunwind-ptrace.h>

#include "base/grow.h"
#include "bpf/unwind_row.h"
#include "inspect/backtrace.h"
#include "inspect/procmaps.h"
#include "inspect/procstatus.h"
#include "unwind/unwind_symbols.h"

/* A file the backtraces met: its index is its id for the symbols (MT_FRAME). */
struct bt_file {
	char *path;
	struct mt_inode_key key; /* device and inode: a path can name another file later */
};

/* MT_FRAME keeps file_id + 1 in 16 bits. */
#define BT_MAX_FILES 65535

struct mt_backtracer {
	struct mt_symbols *symbols;
	struct bt_file *files;
	size_t n_files, cap_files;
};

/* An executable mapping of the thread's process, and the file it maps. */
struct bt_map {
	uint64_t start, end, offset;
	int file; /* index in files, -1: none (too many files) */
};

struct bt_maps {
	struct mt_backtracer *b;
	struct bt_map *v;
	size_t n, cap;
};

/* One unwound frame. */
struct bt_pc {
	uint64_t pc;
	bool exact; /* the first pc, or one a signal frame restored: no return address */
};

struct mt_backtracer *mt_backtracer_new(void)
{
	struct mt_backtracer *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->symbols = mt_symbols_new(NULL);
	if (!b->symbols) {
		free(b);
		return NULL;
	}
	return b;
}

void mt_backtracer_free(struct mt_backtracer *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n_files; i++)
		free(b->files[i].path);
	free(b->files);
	mt_symbols_free(b->symbols);
	free(b);
}

/* The id of e's file, added when it is new: -1 when there is no room, -ENOMEM. */
static int file_id(struct mt_backtracer *b, const struct mt_map_entry *e)
{
	struct bt_file *f;
	int err;

	for (size_t i = 0; i < b->n_files; i++)
		if (mt_inode_same_number(&b->files[i].key, &e->key) &&
		    !strcmp(b->files[i].path, e->path))
			return (int)i;
	if (b->n_files == BT_MAX_FILES)
		return -1;
	if (MT_GROW(b->files, b->cap_files, b->n_files + 1, 32))
		return -ENOMEM;
	f = &b->files[b->n_files];
	f->path = strdup(e->path);
	if (!f->path)
		return -ENOMEM;
	f->key = e->key;
	/* No build id known: the file's own names its debug file. */
	err = mt_symbols_add_file(b->symbols, (uint16_t)b->n_files, f->path, "");
	if (err) {
		free(f->path);
		return err;
	}
	return (int)b->n_files++;
}

static int add_map(const struct mt_map_entry *e, void *arg)
{
	struct bt_maps *m = arg;
	int id = file_id(m->b, e);

	if (id < -1)
		return id;
	if (MT_GROW(m->v, m->cap, m->n + 1, 64))
		return -ENOMEM;
	m->v[m->n++] = (struct bt_map){e->start, e->end, e->offset, id};
	return 0;
}

/* The frames of tid, at most max; *end says how the stack ended: 0, 1 (more), -1 (cut). */
static int unwind(pid_t tid, struct bt_pc *pcs, unsigned int max, int *end)
{
	unw_addr_space_t as;
	unw_cursor_t cursor;
	unsigned int n = 0;
	bool exact = true;
	void *upt;
	int step;

	as = unw_create_addr_space(&_UPT_accessors, 0);
	if (!as)
		return -ENOMEM;
	upt = _UPT_create(tid);
	if (!upt) {
		unw_destroy_addr_space(as);
		return -ENOMEM;
	}
	*end = 0;
	if (unw_init_remote(&cursor, as, upt) < 0)
		goto out; /* no frame */
	do {
		unw_word_t ip = 0;

		if (n == max) {
			*end = 1;
			break;
		}
		unw_get_reg(&cursor, UNW_REG_IP, &ip);
		pcs[n++] = (struct bt_pc){ip, exact};
		exact = unw_is_signal_frame(&cursor) > 0;
		step = unw_step(&cursor);
		if (step < 0)
			*end = -1;
	} while (step > 0);
out:
	_UPT_destroy(upt);
	unw_destroy_addr_space(as);
	return (int)n;
}

static const struct bt_map *map_of(const struct bt_maps *m, uint64_t pc)
{
	for (size_t i = 0; i < m->n; i++)
		if (pc >= m->v[i].start && pc < m->v[i].end)
			return &m->v[i];
	return NULL;
}

/* A frame's name: its function, else its file's base name, else "?". */
static const char *name_of(struct mt_backtracer *b, const struct bt_maps *m, const struct bt_pc *p)
{
	const struct bt_map *map = map_of(m, p->pc);
	struct mt_frame_info fi;
	const char *slash;

	if (!map || map->file < 0)
		return "?";
	mt_symbols_resolve(b->symbols, MT_FRAME(map->file, p->pc - map->start + map->offset),
			   !p->exact, &fi);
	if (fi.function)
		return fi.function;
	slash = strrchr(b->files[map->file].path, '/');
	return slash ? slash + 1 : b->files[map->file].path;
}

struct json_object *mt_backtrace(struct mt_backtracer *b, pid_t tid, unsigned int max)
{
	struct bt_maps maps = {.b = b};
	struct json_object *frames = NULL;
	struct bt_pc *pcs = calloc(max ? max : 1, sizeof(*pcs));
	int n, end = 0;

	if (!pcs)
		return NULL;
	n = unwind(tid, pcs, max, &end);
	if (n <= 0 || mt_procmaps_for_each_exec(tid, add_map, &maps) < 0)
		goto out;
	frames = json_object_new_array();
	for (int i = 0; frames && i < n; i++)
		json_object_array_add(frames, json_object_new_string(name_of(b, &maps, &pcs[i])));
	if (frames && end)
		json_object_array_add(frames,
				      json_object_new_string(end > 0 ? "[truncated]" : "[cut]"));
out:
	free(maps.v);
	free(pcs);
	return frames;
}

bool mt_signal_is_fatal(pid_t pid, int sig)
{
	struct mt_proc_status st;

	switch (sig) {
	case SIGCHLD:
	case SIGCONT:
	case SIGURG:
	case SIGWINCH:
	case SIGSTOP:
	case SIGTSTP:
	case SIGTTIN:
	case SIGTTOU:
		return false;
	}
	if (sig < 1 || sig > 64 || mt_proc_status_read(pid, 0, &st))
		return false;
	return !((st.sig_cgt | st.sig_ign) & MT_SIG_BIT(sig));
}
