// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's BTF, read without libbpf parsing it, and what the object's load needs of it: the
 * small copy that libbpf relocates the object's CO-RE reads against, and the type ids its
 * tracing programs attach to. Read and walked by the boot's first run only, where
 * tracker_btf_cache.c may keep the result; the later ones take it from there.
 *
 * libbpf 1.1 would copy the kernel's 5.5 MB of BTF (a page fault costs about 5 us in a VM: 7 ms
 * for the copy), index it, search it by name for each tracing program's target, then find the
 * candidates of each type a program reads by walking all its types (126,623 on 6.18) and
 * comparing names: 1.3 to 1.5 ms a type, 16 types, most of a short run's start-up. Here one walk
 * of the kernel's own mapping indexes the types; a second one finds, by name, the types of the
 * CO-RE target and the attach targets. The target holds every kernel type of the kind and the
 * name (without its ___flavour) of a named type of the object's own BTF, with every type their
 * fields are made of. A pointer's target is not copied (it points to void there): the object's
 * relocations are all field relocations (byte offsets and field existence), and their matching
 * never looks through a pointer, so each resolves as against the whole kernel. A type
 * relocation (bpf_core_type_exists() and its kin) would look through pointers: the day one is
 * added, this file must copy what pointers point to.
 *
 * The tracing programs' own section types, which take their targets from here, are
 * tracker_btf_sections.c's.
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
#include <sys/uio.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "base/clock.h"
#include "base/grow.h"
#include "tracker/tracker_int.h"

static const char vmlinux_path[] = "/sys/kernel/btf/vmlinux";

/*
 * The kernel's BTF as sysfs gives it, with an index of where each type starts (none when the
 * boot's earlier run kept what its walk found: tracker_btf_cache.c), and what the walk found.
 */
struct mt_kbtf {
	char *data;
	size_t size;
	bool mapped;
	const char *types, *strs;
	__u32 types_len, strs_len;
	__u32 *off; /* off[id]: where type id starts in types (1 <= id < n) */
	size_t n, cap;
	struct mt_core_found found; /* the attach targets of the object's tracing programs */
	uint64_t walk_ns;	    /* what reading and walking the kernel's BTF took (-v) */
};

static const struct btf_type *type_at(const struct mt_kbtf *k, __u32 id)
{
	return (const struct btf_type *)(k->types + k->off[id]);
}

static const char *name_at(const struct mt_kbtf *k, __u32 off)
{
	return off < k->strs_len ? k->strs + off : "";
}

/* The bytes of a type's record; 0 for a kind this file does not know. */
static __u32 record_size(const struct btf_type *t)
{
	__u32 v = btf_vlen(t), base = sizeof(*t);

	switch (btf_kind(t)) {
	case BTF_KIND_INT:
	case BTF_KIND_VAR:
	case BTF_KIND_DECL_TAG:
		return base + 4;
	case BTF_KIND_ARRAY:
		return base + sizeof(struct btf_array);
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		return base + v * sizeof(struct btf_member);
	case BTF_KIND_ENUM:
		return base + v * sizeof(struct btf_enum);
	case BTF_KIND_ENUM64:
		return base + v * sizeof(struct btf_enum64);
	case BTF_KIND_FUNC_PROTO:
		return base + v * sizeof(struct btf_param);
	case BTF_KIND_DATASEC:
		return base + v * sizeof(struct btf_var_secinfo);
	case BTF_KIND_PTR:
	case BTF_KIND_FWD:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_FUNC:
	case BTF_KIND_FLOAT:
	case BTF_KIND_TYPE_TAG:
		return base;
	default:
		return 0;
	}
}

/* Index the types; -EINVAL for a BTF this file cannot walk (libbpf's own way is taken then). */
static int index_types(struct mt_kbtf *k)
{
	const struct btf_header *h = (const struct btf_header *)k->data;
	__u32 at = 0;

	if (k->size < sizeof(*h) || h->magic != BTF_MAGIC || h->version != BTF_VERSION ||
	    h->hdr_len > k->size || h->type_off + h->type_len > k->size - h->hdr_len ||
	    h->str_off + h->str_len > k->size - h->hdr_len || !h->str_len)
		return -EINVAL;
	k->types = k->data + h->hdr_len + h->type_off;
	k->types_len = h->type_len;
	k->strs = k->data + h->hdr_len + h->str_off;
	k->strs_len = h->str_len;
	if (MT_GROW(k->off, k->cap, 1, 1u << 17))
		return -ENOMEM;
	k->off[0] = 0; /* void */
	k->n = 1;
	while (at < k->types_len) {
		__u32 size;

		if (k->types_len - at < sizeof(struct btf_type))
			return -EINVAL;
		size = record_size((const struct btf_type *)(k->types + at));
		if (!size || size > k->types_len - at)
			return -EINVAL;
		if (MT_GROW(k->off, k->cap, k->n + 1, 1u << 17))
			return -ENOMEM;
		k->off[k->n++] = at;
		at += size;
	}
	return 0;
}

/* The file in one mapping (6.16 and later), else read (sysfs serves it a page at a time). */
static int read_vmlinux(struct mt_kbtf *k)
{
	struct stat st;
	int fd = open(vmlinux_path, O_RDONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_size <= 0) {
		err = -EINVAL;
		goto out;
	}
	k->size = (size_t)st.st_size;
	k->data = mmap(NULL, k->size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	k->mapped = k->data != MAP_FAILED;
	if (k->mapped)
		goto out;
	k->data = malloc(k->size);
	if (!k->data) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t done = 0; done < k->size;) {
		ssize_t n = read(fd, k->data + done, k->size - done);

		if (n <= 0) {
			err = n ? -errno : -EIO;
			goto out;
		}
		done += (size_t)n;
	}
out:
	close(fd);
	return err;
}

/* The types and their index go; what was found in them (the attach targets) stays. */
static void kbtf_drop_types(struct mt_kbtf *k)
{
	if (k->mapped)
		munmap(k->data, k->size);
	else
		free(k->data);
	free(k->off);
	k->data = NULL;
	k->off = NULL;
	k->types = k->strs = NULL;
	k->types_len = k->strs_len = 0;
	k->n = k->cap = 0;
}

static void kbtf_free(struct mt_kbtf *k)
{
	if (!k)
		return;
	kbtf_drop_types(k);
	free(k);
}

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
	err = read_vmlinux(k) ?: index_types(k);
	if (err) {
		kbtf_free(k);
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
		kbtf_drop_types(t->kbtf);
}

void tracker_btf_close(struct mt_tracker *t)
{
	kbtf_free(t->kbtf);
	t->kbtf = NULL;
	if (t->core_fd >= 0)
		close(t->core_fd);
	t->core_fd = -1;
}

int tracker_btf_probe_id(const struct mt_tracker *t)
{
	return t->kbtf ? t->kbtf->found.probe_id : -ENOENT;
}

/* The kinds of type a relocation's candidates are looked up by: libbpf matches kind and name. */
static bool is_root_kind(const struct btf_type *t)
{
	return btf_is_composite(t) || btf_is_enum(t) || btf_is_enum64(t) || btf_is_typedef(t);
}

/* libbpf takes an enum and a 64-bit enum of the same name for candidates of each other. */
static unsigned int root_kind(const struct btf_type *t)
{
	return btf_is_enum64(t) ? BTF_KIND_ENUM : btf_kind(t);
}

/* The length of name without a ___flavour suffix, as libbpf counts it. */
static size_t essential_len(const char *name)
{
	size_t n = strlen(name);

	if (n < 5 || !strstr(name, "___")) /* most names: strstr is faster than the scan */
		return n;
	for (size_t i = n - 4; i-- > 0;)
		if (name[i] != '_' && !strncmp(name + i + 1, "___", 3) && name[i + 4] != '_')
			return i + 1;
	return n;
}

/* Names looked up in the kernel's types, by kind: the object's roots and attach targets. */
#define NAME_SLOTS 1024

struct wanted {
	const char *name;
	size_t len;
	unsigned int kind;
	int attach; /* an index in attach[] plus 1; 0: a CO-RE root */
};

struct names {
	struct wanted slot[NAME_SLOTS];
	size_t n;
	/* bit len % 64 of first[c]: a wanted name of that length starts with c (most names not) */
	uint64_t first[256];
};

static size_t name_hash(const char *s, size_t len, unsigned int kind)
{
	size_t h = 2166136261u ^ kind;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static struct wanted *slot_of(struct names *r, const char *name, size_t len, unsigned int kind)
{
	size_t i = name_hash(name, len, kind) % NAME_SLOTS;

	while (r->slot[i].name && (r->slot[i].kind != kind || r->slot[i].len != len ||
				   strncmp(r->slot[i].name, name, len)))
		i = (i + 1) % NAME_SLOTS;
	return &r->slot[i];
}

static int want(struct names *r, const char *name, size_t len, unsigned int kind, int attach)
{
	struct wanted *s = slot_of(r, name, len, kind);

	if (s->name)
		return 0;
	if (r->n + 1 >= NAME_SLOTS / 2)
		return -E2BIG;
	*s = (struct wanted){name, len, kind, attach};
	r->n++;
	r->first[(unsigned char)name[0]] |= 1ull << (len % 64);
	return 0;
}

static int want_roots(const struct btf *local, struct names *r)
{
	unsigned int n = btf__type_cnt(local);
	int err = 0;

	for (unsigned int id = 1; !err && id < n; id++) {
		const struct btf_type *t = btf__type_by_id(local, id);
		const char *name = btf__name_by_offset(local, t->name_off);

		if (is_root_kind(t) && name && *name)
			err = want(r, name, essential_len(name), root_kind(t), 0);
	}
	return err;
}

/* The kernel type a tracing program's section names: the typedef btf_trace_TP, the FUNC F. */
static bool attach_name(const char *sec, char *name, size_t size, unsigned int *kind)
{
	bool tp = !strncmp(sec, MT_TP_BTF, strlen(MT_TP_BTF));

	if (!tp && strncmp(sec, MT_FENTRY, strlen(MT_FENTRY)))
		return false;
	*kind = tp ? BTF_KIND_TYPEDEF : BTF_KIND_FUNC;
	return (size_t)snprintf(name, size, "%s%s", tp ? "btf_trace_" : "",
				sec + strlen(tp ? MT_TP_BTF : MT_FENTRY)) < size;
}

/* The kernel type each tracing program of obj attaches to, by its section's name. */
static int want_attach(struct mt_kbtf *k, const struct bpf_object *obj, struct names *r)
{
	struct bpf_program *p;
	unsigned int kind;
	int err;

	bpf_object__for_each_program(p, obj)
	{
		const char *sec = bpf_program__section_name(p);
		struct mt_attach_target *a = &k->found.attach[k->found.n_attach];

		if (!attach_name(sec, a->name, sizeof(a->name), &kind))
			continue;
		if (k->found.n_attach == MT_MAX_ATTACH || strlen(sec) >= sizeof(a->sec))
			return -E2BIG;
		snprintf(a->sec, sizeof(a->sec), "%s", sec);
		a->id = -ESRCH;
		err = want(r, a->name, strlen(a->name), kind, ++k->found.n_attach);
		if (err)
			return err;
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
	if (MT_GROW(c->list, c->cap, c->n + 1, 256))
		return -ENOMEM;
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

/* A type id the walk found for one of the names wanted; the walk's first wins, as libbpf's. */
static int found(struct mt_kbtf *k, const struct wanted *w, __u32 id, struct closure *c)
{
	if (!w->attach)
		return keep(c, id);
	if (k->found.attach[w->attach - 1].id < 0)
		k->found.attach[w->attach - 1].id = (int)id;
	return 0;
}

/* One walk: the candidates of the roots with what they are made of, and the attach targets. */
static int walk_wanted(struct mt_kbtf *k, struct names *r, struct closure *c)
{
	int err = 0;

	for (__u32 id = 1; !err && id < k->n; id++) {
		const struct btf_type *t = type_at(k, id);
		const char *name;
		struct wanted *w;
		size_t len;

		if (!t->name_off || !(is_root_kind(t) || btf_is_func(t)))
			continue;
		name = name_at(k, t->name_off);
		len = btf_is_func(t) ? strlen(name) : essential_len(name);
		if (btf_is_func(t) && k->found.probe_id < 0 && !strcmp(name, "security_mmap_file"))
			k->found.probe_id = (int)id;
		if (!(r->first[(unsigned char)name[0]] >> (len % 64) & 1))
			continue;
		w = slot_of(r, name, len, root_kind(t));
		if (w->name)
			err = found(k, w, id, c);
	}
	for (size_t i = 0; !err && i < c->n; i++)
		err = keep_parts(c, type_at(k, c->list[i]));
	return err;
}

/* The copy being written: its types and its strings (offset 0 is the empty name). */
struct out {
	char *types, *strs;
	size_t n_types, cap_types, n_strs, cap_strs;
};

static int out_str(struct out *o, const char *s, __u32 *off)
{
	size_t len = strlen(s) + 1;

	if (len == 1) {
		*off = 0;
		return 0;
	}
	if (MT_GROW(o->strs, o->cap_strs, o->n_strs + len, 1u << 14))
		return -ENOMEM;
	memcpy(o->strs + o->n_strs, s, len);
	*off = (__u32)o->n_strs;
	o->n_strs += len;
	return 0;
}

/* The names in a copied type t, from the kernel's strings to the copy's. */
static int rename_parts(struct out *o, const struct mt_kbtf *k, size_t at)
{
	struct btf_type *t = (struct btf_type *)(o->types + at);
	int err = out_str(o, name_at(k, t->name_off), &t->name_off);
	unsigned int v = btf_vlen(t);

	for (unsigned int i = 0; !err && i < v; i++) {
		t = (struct btf_type *)(o->types + at);
		if (btf_is_composite(t))
			err = out_str(o, name_at(k, btf_members(t)[i].name_off),
				      &btf_members(t)[i].name_off);
		else if (btf_is_enum(t))
			err = out_str(o, name_at(k, btf_enum(t)[i].name_off),
				      &btf_enum(t)[i].name_off);
		else if (btf_is_enum64(t))
			err = out_str(o, name_at(k, btf_enum64(t)[i].name_off),
				      &btf_enum64(t)[i].name_off);
		else if (btf_is_func_proto(t))
			err = out_str(o, name_at(k, btf_params(t)[i].name_off),
				      &btf_params(t)[i].name_off);
	}
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

static int copy_closure(const struct mt_kbtf *k, const struct closure *c, struct out *o)
{
	int err = MT_GROW(o->strs, o->cap_strs, 1, 1u << 14);

	if (err)
		return err;
	o->strs[o->n_strs++] = '\0';
	for (size_t i = 0; !err && i < c->n; i++) {
		const struct btf_type *src = type_at(k, c->list[i]);
		__u32 size = record_size(src);
		size_t at = o->n_types;

		if (MT_GROW(o->types, o->cap_types, at + size, 1u << 16))
			return -ENOMEM;
		memcpy(o->types + at, src, size);
		o->n_types += size;
		renumber((struct btf_type *)(o->types + at), c->map);
		err = rename_parts(o, k, at);
	}
	return err;
}

/* The target's header, types and strings, as its file holds them. */
static void target_parts(const struct out *o, struct btf_header *h, struct iovec *part)
{
	*h = (struct btf_header){
	    .magic = BTF_MAGIC,
	    .version = BTF_VERSION,
	    .hdr_len = sizeof(*h),
	    .type_off = 0,
	    .type_len = (__u32)o->n_types,
	    .str_off = (__u32)o->n_types,
	    .str_len = (__u32)o->n_strs,
	};
	part[0] = (struct iovec){h, sizeof(*h)};
	part[1] = (struct iovec){o->types, o->n_types};
	part[2] = (struct iovec){o->strs, o->n_strs};
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
	struct names *r = NULL;
	struct closure c = {0};
	struct out o = {0};
	struct iovec part[MT_CORE_PARTS];
	struct btf_header h;
	uint64_t start = mt_clock_now_ns();
	int err;

	if (t->core_written)
		return 0; /* every instance of the object has the same types and programs */
	if (!k || !k->data || t->core_fd < 0)
		return -ENOENT;
	k->found.n_attach = 0;
	r = calloc(1, sizeof(*r));
	c.map = calloc(k->n, sizeof(*c.map));
	err = r && c.map ? want_roots(bpf_object__btf(obj), r) : -ENOMEM;
	err = err ?: want_attach(k, obj, r);
	err = err ?: walk_wanted(k, r, &c);
	err = err ?: copy_closure(k, &c, &o);
	if (!err) {
		target_parts(&o, &h, part);
		err = write_target(t->core_fd, part);
	}
	t->core_written = !err;
	if (!err)
		keep_for_boot(t, start, part);
	free(o.types);
	free(o.strs);
	free(c.map);
	free(c.list);
	free(r);
	return err;
}

/* Without the walk (a kernel BTF this file cannot read): libbpf's parse, searched by name. */
static int attach_id_parsed(const char *sec)
{
	char name[64];
	unsigned int kind;
	struct btf *btf;
	int id;

	if (!attach_name(sec, name, sizeof(name), &kind))
		return -ESRCH;
	btf = btf__parse(vmlinux_path, NULL);
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
	return btf__parse(vmlinux_path, NULL);
}
