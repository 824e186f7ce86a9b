/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Allocation sites: the events of an artifact counted per distinct call stack (--stacks, artifact
 * version 4), and the stacks symbolised after the run (src/unwind/unwind_symbols.h). A site is one
 * stack record: the allocations and reallocs made from it, their bytes, its blocks never
 * freed by the program (live at its exit, exec or the end of the artifact: leaks), and its blocks
 * live at the tree's peak: when the live bytes of the whole tree (mt_images_peak, the report's
 * peak) first reached their largest value. The tree's peak, not each process image's: the sites'
 * bytes at the peak then add up to the report's peak (every block allocated with a stack).
 */
#ifndef MT_SITES_H
#define MT_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "writer/artifact.h"
#include "unwind/unwind_symbols.h"

struct mt_site {
	uint32_t stack_id;
	uint32_t stop;		   /* enum mt_unwind_stop; MT_UNWIND_LOST too when no record came */
	uint32_t n_frames;	   /* 0: the artifact has no record of the stack */
	uint64_t *frames;	   /* innermost first: the allocator, then return addresses */
	struct mt_frame_info *sym; /* per frame, after mt_sites_symbolize */
	uint64_t allocations;	   /* allocations and reallocs made from here */
	uint64_t bytes;		   /* their requested bytes */
	uint64_t temporary;	   /* of its blocks, released right after (images.h) */
	uint64_t live_blocks;	   /* never freed by the program */
	uint64_t live_bytes;
	uint64_t peak_blocks; /* live at the tree's peak, after mt_sites_end */
	uint64_t peak_bytes;
};

struct mt_sites;

struct mt_sites *mt_sites_new(void);
void mt_sites_free(struct mt_sites *s);

/* Records of the artifact. Return 0 or -ENOMEM. */
int mt_sites_add_stack(struct mt_sites *s, const struct mt_artifact_stack *st);
int mt_sites_add_file(struct mt_sites *s, const struct mt_artifact_file *f);
/* An allocation or realloc made from stack_id (not 0): size bytes, a block when live. */
int mt_sites_alloc(struct mt_sites *s, uint32_t stack_id, uint64_t size, bool live);
/* A block of stack_id freed (sign -1) or given back by a failed realloc (+1). */
void mt_sites_release(struct mt_sites *s, uint32_t stack_id, uint64_t size, int sign);
/* A block of stack_id was a temporary allocation (images.h). */
void mt_sites_temporary(struct mt_sites *s, uint32_t stack_id);

/*
 * blocks of stack_id, of size bytes each, became live (add) or stopped being live, however
 * (images.h's live hook); new_peak: the tree's live bytes are at a new peak after them. 0 or
 * -ENOMEM.
 */
int mt_sites_live(struct mt_sites *s, uint32_t stack_id, uint64_t size, uint64_t blocks, bool add,
		  bool new_peak);
/* The stream ended: the sites' peak_blocks and peak_bytes hold. */
void mt_sites_end(struct mt_sites *s);

/*
 * Resolve every frame's function. The functions inlined at a return address become frames of
 * their own (sym[k].inlined; frames[k] repeats the return address for each), so n_frames grows
 * by them. debug_root as for mt_symbols_new. 0 or -ENOMEM.
 */
int mt_sites_symbolize(struct mt_sites *s, const char *debug_root);

/* The site of a stack id, NULL when none. */
const struct mt_site *mt_sites_of(const struct mt_sites *s, uint32_t stack_id);

/* The index (for mt_sites_get) of the site of a stack id; SIZE_MAX when none. */
size_t mt_sites_index(const struct mt_sites *s, uint32_t stack_id);

/* The sites, in order of first appearance. */
size_t mt_sites_count(const struct mt_sites *s);
const struct mt_site *mt_sites_get(const struct mt_sites *s, size_t i);

#endif
