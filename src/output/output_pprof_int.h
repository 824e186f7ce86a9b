/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The pprof profile being built (output_pprof.c), shared with its tables of strings, functions,
 * mappings and locations (output_pprof_tables.c), its samples (output_pprof_samples.c) and its
 * encoding (output_pprof_encode.c). Included by the outputs part only.
 */
#ifndef MT_OUTPUT_PPROF_INT_H
#define MT_OUTPUT_PPROF_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/hashtab.h"
#include "output/output.h"
#include "output/output_strtab.h"
#include "proto/profile.pb-c.h"

/* u64 key -> index + 1 (output_pprof_tables.c). */
struct idmap {
	struct mt_hashtab t;
};

/* ---- the profile being built ----------------------------------------------------------------- */

/* A location and what it points to, fixed up when every one is known (the arrays move). */
struct loc {
	MtPprof__Location m;
	MtPprof__Line line;
	MtPprof__Line *lines[1];
	/* Functions inlined at it, innermost first, before line (pprof's order); all: m.line. */
	MtPprof__Line *inlined, **all;
	size_t n_inlined;
	uint32_t mapping; /* index + 1 of the mapping, 0: none */
	uint64_t offset;  /* in the mapping's file, or the address when in no mapping */
};

/* The sample types: four, and four more of the two lost classes for a run with --leaks. */
#define TYPES	    4
#define TYPES_LEAKS 8

/* A sample's labels: its allocator, and the pid and program of its process image. */
#define LABELS 3

struct sample {
	MtPprof__Sample m;
	int64_t values[TYPES_LEAKS];
	MtPprof__Label label[LABELS];
	MtPprof__Label *labels[LABELS];
};

struct mapping {
	MtPprof__Mapping m;
	uint64_t lo, end; /* the lowest offset a location has in it, and past the highest */
};

/* The pseudo-frames of folded stacks, where a stack has no frame or ends early. */
enum pseudo { PSEUDO_TRUNCATED, PSEUDO_CUT, PSEUDO_UNKNOWN, PSEUDO_MAX };

struct builder {
	const struct mt_report *rep;
	struct mt_strtab st; /* each string once, as valid UTF-8 (proto3 strings must be) */
	struct loc *locs;
	size_t n_locs, cap_locs;
	struct idmap loc_of_frame;
	uint32_t pseudo_loc[PSEUDO_MAX]; /* index + 1 of locs */
	MtPprof__Function *funcs;
	size_t n_funcs, cap_funcs;
	struct idmap func_of_name; /* string index -> funcs */
	struct mapping *maps;
	size_t n_maps, cap_maps;
	uint32_t *map_of_file; /* [65536]: file_id -> index + 1 of maps */
	uint32_t *file_of_id;  /* [65536]: file_id -> index + 1 of rep->files */
	struct sample *samples;
	size_t n_samples, cap_samples;
	int64_t *comments;
	size_t n_comments, cap_comments;
	int64_t allocator_key, pid_key, program_key;
};

/* ---- the tables (output_pprof_tables.c) ------------------------------------------------------ */

/* The index of s (any bytes, stored as UTF-8) in the string table, added when new. 0 or -ENOMEM. */
int pprof_intern(struct mt_strtab *st, const char *s, int64_t *idx);
/* The mapping of a recorded file: index + 1, or 0 when no record names the file. 0 or -ENOMEM. */
int pprof_mapping_of(struct builder *b, uint16_t file_id, uint32_t *out);
/* The location of a pseudo-frame: its id. 0 or -ENOMEM. */
int pprof_pseudo_location(struct builder *b, enum pseudo p, uint64_t *id);
/*
 * The location of a caller's frame (a return address), its id: sym[0 .. n - 2] are the functions
 * inlined there, sym[n - 1] its own. 0 or -ENOMEM.
 */
int pprof_frame_location(struct builder *b, uint64_t frame, const struct mt_frame_info *sym,
			 size_t n, uint64_t *id);
/* Everything the builder holds freed. */
void pprof_builder_free(struct builder *b);

/* ---- the samples (output_pprof_samples.c) ---------------------------------------------------- */

/* The sample of a site, in every image; none for a stack no allocation came from. 0 or -ENOMEM. */
int pprof_add_site(struct builder *b, const struct mt_site *s);
/* One sample per site and process image (the report's cells), and per loss record without one. */
int pprof_add_cells(struct builder *b);

/* ---- the encoding (output_pprof_encode.c) ---------------------------------------------------- */

/* The profile, placed, encoded and gzip'd onto out. 0, -ENOMEM or -EIO (or fwrite's errno). */
int pprof_encode(struct builder *b, FILE *out);

#endif
