// SPDX-License-Identifier: GPL-2.0
/*
 * The walk of the kernel's BTF for what the object's load needs (tracker_btf_walk.h).
 *
 * libbpf 1.1 would search the kernel's BTF by name for each tracing program's target, then find
 * the candidates of each type a program reads by walking all its types (126,623 on 6.18) and
 * comparing names: 1.3 to 1.5 ms a type, 16 types, most of a short run's start-up. Here one walk
 * finds, by name, the types of the CO-RE target and the attach targets. The target holds every
 * kernel type of the kind and the name (without its ___flavour) of a named type of the object's
 * own BTF, with every type their fields are made of. A pointer's target is not copied (it points
 * to void there): the object's relocations are all field relocations (byte offsets and field
 * existence), and their matching never looks through a pointer, so each resolves as against the
 * whole kernel. A type relocation (bpf_core_type_exists() and its kin) would look through
 * pointers: the day one is added, this file must copy what pointers point to.
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/hashtab.h"
#include "tracker/tracker_btf_walk.h"

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
struct wanted {
	const char *name; /* NULL: an empty slot */
	size_t len;
	unsigned int kind;
	int attach; /* an index in attach[] plus 1; 0: a CO-RE root */
};

struct names {
	struct mt_hashtab slots; /* struct wanted */
	/* bit len % 64 of first[c]: a wanted name of that length starts with c (most names not) */
	uint64_t first[256];
};

static uint64_t name_hash(const char *s, size_t len, unsigned int kind)
{
	return mt_hash_bytes(s, len) ^ kind;
}

static bool wanted_empty(const void *e)
{
	return !((const struct wanted *)e)->name;
}

static uint64_t wanted_hash(const void *ctx, const void *e)
{
	const struct wanted *w = e;

	(void)ctx;
	return name_hash(w->name, w->len, w->kind);
}

static bool wanted_is(const void *ctx, const void *e, const void *key)
{
	const struct wanted *w = e, *k = key;

	(void)ctx;
	return w->kind == k->kind && w->len == k->len && !strncmp(w->name, k->name, k->len);
}

static const struct mt_hashtab_ops wanted_ops = {
    .entry = sizeof(struct wanted),
    .max_load_pct = 50,
    .min_slots = 1024,
    .hash = wanted_hash,
    .empty = wanted_empty,
};

/* The slot of (name, len, kind), or the empty one where it would go; the table has slots. */
static struct wanted *slot_of(struct names *r, const char *name, size_t len, unsigned int kind)
{
	struct wanted k = {.name = name, .len = len, .kind = kind};

	return mt_hashtab_find(&r->slots, &wanted_ops, name_hash(name, len, kind), wanted_is, NULL,
			       &k);
}

static int want(struct names *r, const char *name, size_t len, unsigned int kind, int attach)
{
	struct wanted *s;

	if (mt_hashtab_reserve(&r->slots, &wanted_ops, NULL, r->slots.used + 1))
		return -ENOMEM;
	s = slot_of(r, name, len, kind);
	if (s->name)
		return 0;
	*s = (struct wanted){name, len, kind, attach};
	mt_hashtab_added(&r->slots);
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

bool tracker_btf_attach_name(const char *sec, char *name, size_t size, unsigned int *kind)
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

		if (!tracker_btf_attach_name(sec, a->name, sizeof(a->name), &kind))
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
		const struct btf_type *t = tracker_kbtf_type(k, id);
		const char *name;
		struct wanted *w;
		size_t len;

		if (!t->name_off || !(is_root_kind(t) || btf_is_func(t)))
			continue;
		name = tracker_kbtf_name(k, t->name_off);
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
		err = keep_parts(c, tracker_kbtf_type(k, c->list[i]));
	return err;
}

static int out_str(struct mt_core_target *o, const char *s, __u32 *off)
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
static int rename_parts(struct mt_core_target *o, const struct mt_kbtf *k, size_t at)
{
	struct btf_type *t = (struct btf_type *)(o->types + at);
	int err = out_str(o, tracker_kbtf_name(k, t->name_off), &t->name_off);
	unsigned int v = btf_vlen(t);

	for (unsigned int i = 0; !err && i < v; i++) {
		t = (struct btf_type *)(o->types + at);
		if (btf_is_composite(t))
			err = out_str(o, tracker_kbtf_name(k, btf_members(t)[i].name_off),
				      &btf_members(t)[i].name_off);
		else if (btf_is_enum(t))
			err = out_str(o, tracker_kbtf_name(k, btf_enum(t)[i].name_off),
				      &btf_enum(t)[i].name_off);
		else if (btf_is_enum64(t))
			err = out_str(o, tracker_kbtf_name(k, btf_enum64(t)[i].name_off),
				      &btf_enum64(t)[i].name_off);
		else if (btf_is_func_proto(t))
			err = out_str(o, tracker_kbtf_name(k, btf_params(t)[i].name_off),
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

static int copy_closure(const struct mt_kbtf *k, const struct closure *c, struct mt_core_target *o)
{
	int err = MT_GROW(o->strs, o->cap_strs, 1, 1u << 14);

	if (err)
		return err;
	o->strs[o->n_strs++] = '\0';
	for (size_t i = 0; !err && i < c->n; i++) {
		const struct btf_type *src = tracker_kbtf_type(k, c->list[i]);
		__u32 size = tracker_kbtf_record_size(src);
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

void tracker_btf_target_parts(struct mt_core_target *o, struct iovec *part)
{
	o->h = (struct btf_header){
	    .magic = BTF_MAGIC,
	    .version = BTF_VERSION,
	    .hdr_len = sizeof(o->h),
	    .type_off = 0,
	    .type_len = (__u32)o->n_types,
	    .str_off = (__u32)o->n_types,
	    .str_len = (__u32)o->n_strs,
	};
	part[0] = (struct iovec){&o->h, sizeof(o->h)};
	part[1] = (struct iovec){o->types, o->n_types};
	part[2] = (struct iovec){o->strs, o->n_strs};
}

int tracker_btf_walk(struct mt_kbtf *k, const struct bpf_object *obj, struct mt_core_target *o)
{
	struct names *r = calloc(1, sizeof(*r));
	struct closure c = {.map = calloc(k->n, sizeof(*c.map))};
	int err = r && c.map ? mt_hashtab_reserve(&r->slots, &wanted_ops, NULL, 1) : -ENOMEM;

	k->found.n_attach = 0;
	err = err ?: want_roots(bpf_object__btf(obj), r);
	err = err ?: want_attach(k, obj, r);
	err = err ?: walk_wanted(k, r, &c);
	err = err ?: copy_closure(k, &c, o);
	free(c.map);
	free(c.list);
	if (r)
		mt_hashtab_free(&r->slots);
	free(r);
	return err;
}

void tracker_btf_target_free(struct mt_core_target *o)
{
	free(o->types);
	free(o->strs);
}
