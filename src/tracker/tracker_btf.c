// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's BTF, parsed once a run, and the small copy of it that libbpf relocates the
 * object's CO-RE reads against.
 *
 * libbpf 1.1 finds the candidates of each type a program reads by walking all the kernel's types
 * (126,623 on 6.18) and comparing names: 1.3 to 1.5 ms a type, 16 types, most of a short run's
 * start-up. Given a target of its own (bpf_object_open_opts.btf_custom_path), libbpf searches
 * that instead. tracker_btf_target() makes it in one walk: every kernel type of the kind and
 * the name (without its ___flavour) of a named type of the object's own BTF, with every type
 * their fields are made of. A pointer's target is not copied (it points to void there): the
 * object's relocations are all field relocations (byte offsets and field existence), and their
 * matching never looks through a pointer, so each one resolves as against the whole kernel.
 * A type relocation (bpf_core_type_exists() and its kin) would look through pointers: the day
 * one is added, this file must copy what pointers point to.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "tracker/tracker_int.h"

static const char vmlinux_path[] = "/sys/kernel/btf/vmlinux";

/* A parsed kernel BTF lent to libbpf's next btf__load_vmlinux_btf() call (which frees it). */
static struct btf *lent;

/*
 * Kernels that let the file be mapped (6.16 and later) give it in one populated mmap; sysfs'
 * read(2) serves it a page at a time (1,350 reads of 5.5 MB). NULL where neither works.
 */
static struct btf *parse_vmlinux(void)
{
	struct btf *btf = NULL;
	struct stat st;
	void *data;
	int fd;

	fd = open(vmlinux_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (!fstat(fd, &st) && st.st_size > 0) {
		/* Populated: a fault a page costs 5 us in a VM, 7 ms for the file. */
		data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
		if (data != MAP_FAILED) {
			btf = btf__new(data, (__u32)st.st_size); /* copies: the mapping can go */
			munmap(data, (size_t)st.st_size);
		}
	}
	close(fd);
	if (!btf || libbpf_get_error(btf))
		btf = btf__parse(vmlinux_path, NULL);
	return libbpf_get_error(btf) ? NULL : btf;
}

/*
 * libbpf parses the kernel's BTF for each object that has tracing programs. This function takes
 * the place of libbpf's own of the same name (libbpf calls it through its PLT): it gives the
 * parse the tracker already made, once, and parses the kernel's BTF itself otherwise.
 */
struct btf *btf__load_vmlinux_btf(void)
{
	struct btf *btf = lent;

	lent = NULL;
	if (!btf)
		btf = parse_vmlinux();
	if (!btf)
		errno = ENOENT;
	return btf;
}

int tracker_btf_open(struct mt_tracker *t)
{
	t->kbtf = parse_vmlinux();
	return t->kbtf ? 0 : -ENOENT;
}

void tracker_btf_lend(struct mt_tracker *t)
{
	if (!lent) {
		lent = t->kbtf;
		t->kbtf = NULL;
	}
}

/* Once the run's programs are loaded: what libbpf did not take is freed. */
void tracker_btf_release(struct mt_tracker *t)
{
	if (lent && !t->kbtf)
		t->kbtf = lent;
	lent = NULL;
	btf__free(t->kbtf);
	t->kbtf = NULL;
}

void tracker_btf_close(struct mt_tracker *t)
{
	tracker_btf_release(t);
	if (t->core_fd >= 0)
		close(t->core_fd);
	t->core_fd = -1;
}

int tracker_btf_func_id(const struct mt_tracker *t, const char *name)
{
	if (!t->kbtf)
		return -ENOENT;
	return btf__find_by_name_kind(t->kbtf, name, BTF_KIND_FUNC);
}

/* The kinds of type a relocation's candidates are looked up by: libbpf matches kind and name. */
static bool is_root_kind(const struct btf_type *t)
{
	return btf_is_composite(t) || btf_is_enum(t) || btf_is_enum64(t) || btf_is_typedef(t);
}

/* The length of name without a ___flavour suffix, as libbpf counts it. */
static size_t essential_len(const char *name)
{
	size_t n = strlen(name);

	if (n < 5)
		return n;
	for (size_t i = n - 4; i-- > 0;)
		if (name[i] != '_' && !strncmp(name + i + 1, "___", 3) && name[i + 4] != '_')
			return i + 1;
	return n;
}

/* libbpf takes an enum and a 64-bit enum of the same name for candidates of each other. */
static unsigned int root_kind(const struct btf_type *t)
{
	return btf_is_enum64(t) ? BTF_KIND_ENUM : btf_kind(t);
}

/* The object's root names, by kind and essential name, in an open-addressed table. */
#define ROOT_SLOTS 1024

struct root {
	const char *name;
	size_t len;
	unsigned int kind;
};

struct roots {
	struct root slot[ROOT_SLOTS];
	size_t n;
};

static size_t name_hash(const char *s, size_t len, unsigned int kind)
{
	size_t h = 2166136261u ^ kind;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static struct root *root_slot(struct roots *r, const char *name, size_t len, unsigned int kind)
{
	size_t i = name_hash(name, len, kind) % ROOT_SLOTS;

	while (r->slot[i].name && (r->slot[i].kind != kind || r->slot[i].len != len ||
				   strncmp(r->slot[i].name, name, len)))
		i = (i + 1) % ROOT_SLOTS;
	return &r->slot[i];
}

static int collect_roots(const struct btf *local, struct roots *r)
{
	unsigned int n = btf__type_cnt(local);

	for (unsigned int id = 1; id < n; id++) {
		const struct btf_type *t = btf__type_by_id(local, id);
		const char *name = btf__name_by_offset(local, t->name_off);
		struct root *s;

		if (!is_root_kind(t) || !name || !*name)
			continue;
		s = root_slot(r, name, essential_len(name), root_kind(t));
		if (s->name)
			continue;
		if (r->n + 1 >= ROOT_SLOTS / 2)
			return -E2BIG;
		*s = (struct root){name, essential_len(name), root_kind(t)};
		r->n++;
	}
	return 0;
}

/* The kernel types to copy, in the order they are added; map[kernel id] is the copy's id. */
struct closure {
	__u32 *map;
	__u32 *list;
	size_t n, cap;
};

static int keep(struct closure *c, __u32 id)
{
	if (!id || c->map[id])
		return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 256;
		__u32 *l = realloc(c->list, cap * sizeof(*l));

		if (!l)
			return -ENOMEM;
		c->list = l;
		c->cap = cap;
	}
	c->list[c->n++] = id;
	c->map[id] = (__u32)c->n;
	return 0;
}

/* Keep the types a kept type is made of; what a pointer points to is not one of them. */
static int keep_parts(struct closure *c, const struct btf_type *t)
{
	int err = 0;

	if (btf_is_ptr(t))
		return 0;
	if (btf_is_composite(t)) {
		const struct btf_member *m = btf_members(t);

		for (unsigned int i = 0; !err && i < btf_vlen(t); i++)
			err = keep(c, m[i].type);
		return err;
	}
	if (btf_is_array(t))
		return keep(c, btf_array(t)->type) ?: keep(c, btf_array(t)->index_type);
	if (btf_is_func_proto(t)) {
		const struct btf_param *p = btf_params(t);

		for (unsigned int i = 0; !err && i < btf_vlen(t); i++)
			err = keep(c, p[i].type);
		return err ?: keep(c, t->type);
	}
	if (btf_is_mod(t) || btf_is_typedef(t))
		return keep(c, t->type);
	return 0;
}

/* Every kernel type that is a candidate for one of the object's roots, and their parts. */
static int close_over(const struct btf *kernel, struct roots *r, struct closure *c)
{
	unsigned int n = btf__type_cnt(kernel);
	int err = 0;

	for (unsigned int id = 1; !err && id < n; id++) {
		const struct btf_type *t = btf__type_by_id(kernel, id);
		const char *name;

		if (!is_root_kind(t) || !t->name_off)
			continue;
		name = btf__name_by_offset(kernel, t->name_off);
		if (root_slot(r, name, essential_len(name), root_kind(t))->name)
			err = keep(c, id);
	}
	for (size_t i = 0; !err && i < c->n; i++)
		err = keep_parts(c, btf__type_by_id(kernel, c->list[i]));
	return err;
}

/* The copy's type ids for the kernel's, in the copy's own type t. */
static void renumber(struct btf_type *t, const __u32 *map)
{
	if (btf_is_ptr(t)) {
		t->type = 0;
	} else if (btf_is_composite(t)) {
		struct btf_member *m = btf_members(t);

		for (unsigned int i = 0; i < btf_vlen(t); i++)
			m[i].type = map[m[i].type];
	} else if (btf_is_array(t)) {
		btf_array(t)->type = map[btf_array(t)->type];
		btf_array(t)->index_type = map[btf_array(t)->index_type];
	} else if (btf_is_func_proto(t)) {
		struct btf_param *p = btf_params(t);

		for (unsigned int i = 0; i < btf_vlen(t); i++)
			p[i].type = map[p[i].type];
		t->type = map[t->type];
	} else if (btf_is_mod(t) || btf_is_typedef(t)) {
		t->type = map[t->type];
	}
}

static struct btf *copy_closure(const struct btf *kernel, const struct closure *c)
{
	struct btf *out = btf__new_empty();

	if (libbpf_get_error(out))
		return NULL;
	for (size_t i = 0; i < c->n; i++) {
		int id = btf__add_type(out, kernel, btf__type_by_id(kernel, c->list[i]));

		if (id < 0) {
			btf__free(out);
			return NULL;
		}
		/* btf__add_type() keeps the kernel's type ids: the copy's own are c->map's. */
		renumber((struct btf_type *)btf__type_by_id(out, id), c->map);
	}
	return out;
}

static int write_target(int fd, const struct btf *btf)
{
	__u32 size;
	const char *data = btf__raw_data(btf, &size);

	if (!data)
		return -ENOMEM;
	for (__u32 done = 0; done < size;) {
		ssize_t n = write(fd, data + done, size - done);

		if (n < 0)
			return -errno;
		done += (__u32)n;
	}
	return 0;
}

/*
 * The path of the CO-RE target (for btf_custom_path), a memory file written by
 * tracker_btf_write_target() before the first load: the same target serves every instance of
 * the object.
 */
int tracker_btf_target_path(struct mt_tracker *t, char *path, size_t size)
{
	if (t->core_fd < 0 && t->kbtf)
		t->core_fd = memfd_create("memtrack-core-btf", MFD_CLOEXEC);
	if (t->core_fd < 0)
		return -ENOENT;
	snprintf(path, size, "/proc/self/fd/%d", t->core_fd);
	return 0;
}

/* Write the target for an object whose own BTF is local, unless it is written already. */
int tracker_btf_write_target(struct mt_tracker *t, const struct btf *local)
{
	struct roots *r = NULL;
	struct closure c = {0};
	struct btf *target = NULL;
	int err;

	if (t->core_written)
		return 0;
	if (!t->kbtf || t->core_fd < 0 || !local)
		return -ENOENT;
	r = calloc(1, sizeof(*r));
	c.map = calloc(btf__type_cnt(t->kbtf), sizeof(*c.map));
	err = r && c.map ? collect_roots(local, r) : -ENOMEM;
	err = err ?: close_over(t->kbtf, r, &c);
	if (!err) {
		target = copy_closure(t->kbtf, &c);
		err = target ? write_target(t->core_fd, target) : -ENOMEM;
	}
	t->core_written = !err;
	btf__free(target);
	free(c.map);
	free(c.list);
	free(r);
	return err;
}
