/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's BTF as sysfs gives it, read without libbpf parsing it: one walk of the kernel's
 * own mapping indexes where each type starts (tracker_kbtf.c). tracker_btf_walk.c finds in it
 * what the object's load needs; tracker_btf.c holds it for the tracker's first load.
 */
#ifndef MT_TRACKER_KBTF_H
#define MT_TRACKER_KBTF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bpf/btf.h>

#include "tracker/tracker_int.h"

#define MT_VMLINUX_BTF "/sys/kernel/btf/vmlinux"

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

/* Read the kernel's BTF into k and index its types; -EINVAL for a BTF this cannot walk. */
int tracker_kbtf_read(struct mt_kbtf *k);
__u32 tracker_kbtf_record_size(const struct btf_type *t);
void tracker_kbtf_drop_types(struct mt_kbtf *k);
void tracker_kbtf_free(struct mt_kbtf *k);

/* Inline: the walk calls them for each of the kernel's 126,623 types. */
static inline const struct btf_type *tracker_kbtf_type(const struct mt_kbtf *k, __u32 id)
{
	return (const struct btf_type *)(k->types + k->off[id]);
}

static inline const char *tracker_kbtf_name(const struct mt_kbtf *k, __u32 off)
{
	return off < k->strs_len ? k->strs + off : "";
}

#endif
