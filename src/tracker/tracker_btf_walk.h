/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the object's load needs of the kernel's BTF, found in one walk (tracker_btf_walk.c): the
 * small CO-RE target that libbpf relocates the object's CO-RE reads against, and the type ids
 * its tracing programs attach to.
 */
#ifndef MT_TRACKER_BTF_WALK_H
#define MT_TRACKER_BTF_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "tracker/tracker_kbtf.h"

/* The CO-RE target being written: its types and its strings (offset 0 is the empty name). */
struct mt_core_target {
	char *types, *strs;
	size_t n_types, cap_types, n_strs, cap_strs;
	struct btf_header h;
};

/*
 * Walk k for obj: fill o with the CO-RE target and k->found with the tracing programs' attach
 * targets and the fentry probe's. o is freed by tracker_btf_target_free() either way.
 */
int tracker_btf_walk(struct mt_kbtf *k, const struct bpf_object *obj, struct mt_core_target *o);
/* The target's header, types and strings, as its file holds them (MT_CORE_PARTS of them). */
void tracker_btf_target_parts(struct mt_core_target *o, struct iovec *part);
void tracker_btf_target_free(struct mt_core_target *o);
/* The kernel type a tracing program's section names: the typedef btf_trace_TP, the FUNC F. */
bool tracker_btf_attach_name(const char *sec, char *name, size_t size, unsigned int *kind);

#endif
