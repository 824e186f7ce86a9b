// SPDX-License-Identifier: GPL-2.0
/*
 * The allocation sites of a run recorded with --stacks (sites.h) as a pprof profile: one gzip'd
 * profile.proto message (`memtrack report --pprof OUT.pb.gz`), which go tool pprof, Pyroscope
 * and Speedscope read. protobuf-c encodes it from proto/profile.proto; zlib compresses it.
 *
 * One sample per site and process image (per site for a report loaded without its cells), its
 * locations leaf first from the allocator's caller outward, as folded stacks name them
 * (output_sites.c); the image's "pid" and "program" are labels of the sample, so that a tree's
 * profile splits by process. The allocator is the sample's "allocator" label, not a frame, so that
 * the flat top of a profile is the code that asked for memory. A frame is a file and an offset in
 * it, not an address in one process (docs/FORMAT.md): each file becomes one mapping placed in an
 * address range of its own, where address - memory_start + file_offset is the frame's file offset,
 * as pprof's symbolisers (by path or build id) expect.
 *
 * This file builds the profile: its notes, then its samples (output_pprof_samples.c) over its
 * tables of strings, functions, mappings and locations (output_pprof_tables.c), then encodes it
 * (output_pprof_encode.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "output/output_pprof_int.h"

#ifndef MT_VERSION
#define MT_VERSION "0.0.0"
#endif

/* ---- the profile's notes --------------------------------------------------------------------- */

static int add_comment(struct builder *b, const char *text)
{
	int64_t idx;

	if (pprof_intern(&b->st, text, &idx) ||
	    MT_GROW(b->comments, b->cap_comments, b->n_comments + 1, 64))
		return -ENOMEM;
	b->comments[b->n_comments++] = idx;
	return 0;
}

static int add_comments(struct builder *b)
{
	const struct mt_report *rep = b->rep;
	char line[512];
	size_t at;
	int err;

	at = (size_t)snprintf(line, sizeof(line), "memtrack %s:", MT_VERSION);
	for (int i = 0; i < rep->argc && at < sizeof(line); i++)
		at += (size_t)snprintf(line + at, sizeof(line) - at, " %s", rep->argv[i]);
	err = add_comment(b, line);
	if (!err)
		err = add_comment(b, "every allocation is counted, none sampled; inuse_* are the "
				     "blocks never freed (live at exit)");
	if (!err && mt_leaks_any(rep->leaks))
		err = add_comment(b, "definitely_lost_* and indirectly_lost_* are the leak scans' "
				     "loss records (memtrack run --leaks; docs/LEAKS.md)");
	if (!err && rep->footer.stacks_lost) {
		snprintf(line, sizeof(line),
			 "allocations recorded without their stack, not in this profile: %" PRIu64,
			 rep->footer.stacks_lost);
		err = add_comment(b, line);
	}
	if (!err && !mt_report_complete(rep))
		err = add_comment(b, "the recording is incomplete: memtrack report says why");
	return err;
}

/* ---- building -------------------------------------------------------------------------------- */

/*
 * pprof takes the first mapping for the program the profile is of ("File:"): the command's
 * executable, when a file record names it, even if no frame lies in it.
 */
static int command_mapping_first(struct builder *b)
{
	const struct mt_report *rep = b->rep;
	uint32_t map;

	if (!rep->n_processes)
		return 0;
	for (size_t i = 0; i < rep->n_files; i++)
		if (rep->files[i].recorded && !strcmp(rep->files[i].path, rep->processes[0].exe))
			return pprof_mapping_of(b, rep->files[i].file_id, &map);
	return 0;
}

static int build(struct builder *b)
{
	const struct mt_report *rep = b->rep;
	int64_t empty;
	int err;

	b->map_of_file = calloc(65536, sizeof(*b->map_of_file));
	b->file_of_id = calloc(65536, sizeof(*b->file_of_id));
	/* The string table starts with "", as pprof requires. */
	if (!b->map_of_file || !b->file_of_id || pprof_intern(&b->st, "", &empty) ||
	    pprof_intern(&b->st, "allocator", &b->allocator_key) ||
	    pprof_intern(&b->st, "pid", &b->pid_key) ||
	    pprof_intern(&b->st, "program", &b->program_key))
		return -ENOMEM;
	for (size_t i = 0; i < rep->n_files; i++)
		if (rep->files[i].recorded)
			b->file_of_id[rep->files[i].file_id] = (uint32_t)i + 1;
	err = add_comments(b);
	if (!err)
		err = command_mapping_first(b);
	if (!err && rep->cells)
		return pprof_add_cells(b);
	for (size_t i = 0; !err && i < mt_sites_count(rep->sites); i++)
		err = pprof_add_site(b, mt_sites_get(rep->sites, i));
	return err;
}

int mt_output_pprof(const struct mt_report *rep, FILE *out)
{
	struct builder b = {.rep = rep};
	int err = build(&b);

	if (!err)
		err = pprof_encode(&b, out);
	pprof_builder_free(&b);
	return err;
}
