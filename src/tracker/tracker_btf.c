// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's BTF for the tracker's first load: the CO-RE target that libbpf relocates the
 * object's CO-RE reads against, and the type ids its tracing programs attach to. Read
 * (tracker_kbtf.c) and walked (tracker_btf_walk.c) by the boot's first run only, where
 * tracker_btf_cache.c may keep the result; the later ones take it from there. Either way the
 * target is a memory file that every instance of the object is opened against.
 *
 * The tracing programs' own section types, which take their targets from here, are
 * tracker_btf_sections.c's.
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "base/clock.h"
#include "tracker/tracker_btf_walk.h"
#include "tracker/tracker_int.h"
#include "tracker/tracker_kbtf.h"

static int write_all(int fd, const void *data, size_t size)
{
	for (size_t done = 0; done < size;) {
		ssize_t n = write(fd, (const char *)data + done, size - done);

		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

/* A memfd named name holding the size bytes of data, or a negative errno. */
static int memfd_holding(const char *name, const void *data, size_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = write_all(fd, data, size);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/* This boot's target, kept by an earlier run: no kernel BTF is read. */
static int open_kept(struct mt_tracker *t, struct mt_kbtf *k)
{
	uint64_t start = mt_clock_now_ns();
	char path[256];
	void *target;
	size_t len;
	int err = tracker_btf_cache_read(&k->found, &target, &len, path, sizeof(path)), fd;

	if (err)
		return err;
	fd = memfd_holding("memtrack-core-btf", target, len);
	free(target);
	if (fd < 0)
		return fd;
	t->core_fd = fd;
	t->core_written = true;
	if (t->cfg.verbose)
		fprintf(stderr, "memtrack: CO-RE target: this boot's, from %s, in %.2f ms\n", path,
			(mt_clock_now_ns() - start) / 1e6);
	return 0;
}

int tracker_btf_open(struct mt_tracker *t)
{
	struct mt_kbtf *k = calloc(1, sizeof(*k));
	uint64_t start = mt_clock_now_ns();
	int err;

	if (!k)
		return -ENOMEM;
	if (!open_kept(t, k)) {
		t->kbtf = k;
		return 0;
	}
	memset(&k->found, 0, sizeof(k->found));
	err = tracker_kbtf_read(k);
	if (err) {
		tracker_kbtf_free(k);
		return err;
	}
	k->found.probe_id = -ENOENT;
	k->walk_ns = mt_clock_now_ns() - start;
	t->kbtf = k;
	return 0;
}

/*
 * Once the run's programs are loaded, the kernel's BTF goes (megabytes): later instances need
 * only the CO-RE target's file and the attach targets found for the object's tracing programs,
 * which stay (a tracing program loaded later needs its target: without it, libbpf's parse of the
 * kernel's BTF took 20 to 160 ms).
 */
void tracker_btf_release(struct mt_tracker *t)
{
	if (t->kbtf && t->kbtf->data)
		tracker_kbtf_drop_types(t->kbtf);
}

void tracker_btf_close(struct mt_tracker *t)
{
	tracker_kbtf_free(t->kbtf);
	t->kbtf = NULL;
	if (t->core_fd >= 0)
		close(t->core_fd);
	t->core_fd = -1;
}

int tracker_btf_probe_id(const struct mt_tracker *t)
{
	return t->kbtf ? t->kbtf->found.probe_id : -ENOENT;
}

static int write_target(int fd, const struct iovec *part)
{
	int err = 0;

	for (int i = 0; !err && i < MT_CORE_PARTS; i++)
		err = write_all(fd, part[i].iov_base, part[i].iov_len);
	return err;
}

/* The walk's result, kept for the boot's later runs: a run goes on without it. */
static void keep_for_boot(const struct mt_tracker *t, uint64_t start, const struct iovec *part)
{
	char path[256] = "";
	int err = tracker_btf_cache_write(&t->kbtf->found, part, MT_CORE_PARTS, path, sizeof(path));

	if (!t->cfg.verbose)
		return;
	fprintf(stderr, "memtrack: CO-RE target: the kernel's BTF read and walked in %.2f ms; ",
		(t->kbtf->walk_ns + mt_clock_now_ns() - start) / 1e6);
	if (err)
		fprintf(stderr, "not kept for the boot (%s%s%s)\n", *path ? path : "",
			*path ? ": " : "",
			err == -ENOENT && !*path ? "no directory of root's" : strerror(-err));
	else
		fprintf(stderr, "kept in %s for the boot's later runs\n", path);
}

/*
 * The path of the CO-RE target (for btf_custom_path), a memory file written by
 * tracker_btf_prepare() before the first load: the same target serves every instance of the
 * object.
 */
int tracker_btf_target_path(struct mt_tracker *t, char *path, size_t size)
{
	if (t->core_fd < 0 && t->kbtf && t->kbtf->data)
		t->core_fd = memfd_create("memtrack-core-btf", MFD_CLOEXEC);
	if (t->core_fd < 0)
		return -ENOENT;
	snprintf(path, size, "/proc/self/fd/%d", t->core_fd);
	return 0;
}

/*
 * A CO-RE target with no type, for an instance loaded for its maps alone: libbpf relocates the
 * object's subprograms even then, and with no candidate in the kernel's BTF it would look in
 * every module's (each one's types read and indexed; refused without CAP_SYS_ADMIN, which fails
 * the load under file capabilities). A target of its own ends the search there. The fd, which
 * must stay open until the load, or a negative errno.
 */
int tracker_btf_empty_target(char *path, size_t size)
{
	struct btf *btf = btf__new_empty();
	const void *raw;
	uint32_t len;
	int fd;

	if (!btf)
		return -ENOMEM;
	raw = btf__raw_data(btf, &len);
	fd = raw ? memfd_holding("memtrack-no-btf", raw, len) : -ENOMEM;
	btf__free(btf);
	if (fd < 0)
		return fd;
	snprintf(path, size, "/proc/self/fd/%d", fd);
	return fd;
}

/*
 * For the opened object obj: write the CO-RE target (unless written already) and find its
 * tracing programs' attach targets and the fentry probe's.
 */
int tracker_btf_prepare(struct mt_tracker *t, const struct bpf_object *obj)
{
	struct mt_kbtf *k = t->kbtf;
	struct mt_core_target o = {0};
	struct iovec part[MT_CORE_PARTS];
	uint64_t start = mt_clock_now_ns();
	int err;

	if (t->core_written)
		return 0; /* every instance of the object has the same types and programs */
	if (!k || !k->data || t->core_fd < 0)
		return -ENOENT;
	err = tracker_btf_walk(k, obj, &o);
	if (!err) {
		tracker_btf_target_parts(&o, part);
		err = write_target(t->core_fd, part);
	}
	t->core_written = !err;
	if (!err)
		keep_for_boot(t, start, part);
	tracker_btf_target_free(&o);
	return err;
}

/* Without the walk (a kernel BTF this file cannot read): libbpf's parse, searched by name. */
static int attach_id_parsed(const char *sec)
{
	char name[64];
	unsigned int kind;
	struct btf *btf;
	int id;

	if (!tracker_btf_attach_name(sec, name, sizeof(name), &kind))
		return -ESRCH;
	btf = btf__parse(MT_VMLINUX_BTF, NULL);
	if (libbpf_get_error(btf))
		return -ENOENT;
	id = btf__find_by_name_kind(btf, name, kind);
	btf__free(btf);
	return id;
}

/* The type id a tracing program's section attaches to: found by tracker_btf_prepare() in k, or,
 * without k, by libbpf's parse. */
int tracker_btf_attach_id(const struct mt_kbtf *k, const char *sec)
{
	if (!k)
		return attach_id_parsed(sec);
	for (int i = 0; i < k->found.n_attach; i++)
		if (!strcmp(k->found.attach[i].sec, sec))
			return k->found.attach[i].id;
	return -ESRCH;
}

/* The kernel's BTF as libbpf parses it. */
struct btf *tracker_btf_parse_vmlinux(void)
{
	return btf__parse(MT_VMLINUX_BTF, NULL);
}
