// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack's own section types of tracing programs (mt_tp_btf/, mt_fentry/, handled as libbpf
 * handles tp_btf/ and fentry/), whose attach targets come from the walk of tracker_btf.c, and the
 * kernel BTF libbpf gets while memtrack's object loads: an empty one, since libbpf then needs it
 * for nothing (the CO-RE target is tracker_btf.c's copy).
 */

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "tracker/tracker_int.h"

/*
 * What libbpf's next btf__load_vmlinux_btf() call on this thread gets instead of a parse: set
 * while an object whose tracing programs take their targets from here is loaded, or an instance
 * of maps alone. Per thread: instances load on three threads at once (tracker_instances.c); the
 * uprobe_multi programs' has no tracing program and its CO-RE target is the copy's file, so
 * libbpf never asks it for the kernel's BTF.
 */
static __thread bool vmlinux_unneeded;
static __thread const struct mt_kbtf *attach_from;

/*
 * This function takes the place of libbpf's own of the same name (libbpf calls it through its
 * PLT): while memtrack's object is loaded, libbpf needs the kernel's BTF for nothing (the CO-RE
 * target is the copy, the attach targets come from here) and gets an empty one; otherwise it
 * gets the kernel's.
 */
struct btf *btf__load_vmlinux_btf(void)
{
	struct btf *btf;

	if (vmlinux_unneeded)
		btf = btf__new_empty();
	else
		btf = tracker_btf_parse_vmlinux();
	if (libbpf_get_error(btf)) {
		errno = ENOENT;
		return NULL;
	}
	return btf;
}

/* libbpf asks for a tracing program's target: the one tracker_btf_prepare() found for it. */
static int prepare_load(struct bpf_program *prog, struct bpf_prog_load_opts *opts, long cookie)
{
	int id = tracker_btf_attach_id(attach_from, bpf_program__section_name(prog));

	(void)cookie;
	if (id < 0)
		return id;
	opts->attach_btf_id = (__u32)id;
	return 0;
}

static int attach_traced(const struct bpf_program *prog, long cookie, struct bpf_link **link)
{
	(void)cookie;
	*link = bpf_program__attach_trace(prog);
	return *link ? 0 : -errno;
}

static void register_sections(void)
{
	LIBBPF_OPTS(libbpf_prog_handler_opts, o, .prog_prepare_load_fn = prepare_load,
		    .prog_attach_fn = attach_traced);

	libbpf_register_prog_handler(MT_TP_BTF, BPF_PROG_TYPE_TRACING, BPF_TRACE_RAW_TP, &o);
	libbpf_register_prog_handler(MT_FENTRY, BPF_PROG_TYPE_TRACING, BPF_TRACE_FENTRY, &o);
}

/* Before the object is opened: its tracing programs' sections are known to libbpf. */
void tracker_btf_sections(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, register_sections);
}

/* Around a load of the object: its attach targets from t, no kernel BTF for libbpf. */
void tracker_btf_loading(const struct mt_tracker *t, bool on)
{
	vmlinux_unneeded = on && t->kbtf && t->core_written;
	attach_from = on ? t->kbtf : NULL;
}

/*
 * Around a load of an instance without programs (its maps alone): no CO-RE relocation is applied
 * to a program that is not loaded, so libbpf needs the kernel's BTF for nothing.
 */
void tracker_btf_maps_only(bool on)
{
	vmlinux_unneeded = on;
}
