/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The replay of the ordered stream (bpf/memtrack.h: allocator events and the lifecycle records of
 * enum mt_stream_kind, with the supervisor's process records in their place) over process images
 * and address spaces. An image is a process between two execs (or its start and an exec, an exec
 * and its exit); it has a parent image and an address space, its own or, for a vfork child until
 * its exec, its parent's. A block belongs to the address space it was allocated in: a vfork
 * child's malloc is freed by its parent. An exec or an exit releases every block of the image's
 * own address space: the image's "live at exec" or "live at exit".
 *
 * Counting rules (exact, tested; README.md "Counting rules" relates them to Valgrind):
 * - allocations: successful calls of the kinds that return a new block (malloc, calloc,
 *   aligned_alloc, memalign, posix_memalign, valloc, pvalloc, mallocx, operator new, the *_aligned
 *   ones); a realloc-kind call (realloc, reallocarray, rallocx, xallocx, realloc_aligned) counts
 *   in reallocs only, realloc(NULL, n) included. Of the reallocs, realloc_null counts those of a
 *   NULL block (realloc(NULL, n): a new block, as malloc) and realloc_zero those of a block to 0
 *   bytes (realloc(p, 0), p not NULL: glibc frees p), the two that Valgrind counts as an alloc
 *   only and a free only (docs/VALGRIND.md).
 * - frees: release-kind calls (free, free_sized, free_aligned_sized, sdallocx, dallocx, operator
 *   delete) of a block live in the caller's address space.
 * - unmatched_frees: release-kind calls of a non-NULL block that is not live there (freed
 *   before: glibc's tcache shutdown at a thread's exit; allocated before memtrack saw it, or in
 *   the address space a fork copied), and realloc-kind calls of such a block. They change nothing.
 * - failed: allocation and realloc calls flagged MT_EV_FAILED; they count nowhere else; a failed
 *   realloc leaves its block live.
 * - bytes_allocated: requested sizes of the allocations plus the new sizes of the reallocs.
 * - live: a realloc releases its old block (at its entry, MT_K_REALLOC_RELEASE, in artifacts
 *   that have it) and adds its new one; realloc(p, 0) returning NULL frees p.
 * - an image's live and peak count the blocks it allocated, wherever they are released.
 * - temporary: heaptrack's "temporary allocations": releases (a free, or a realloc's release of
 *   its old block) of the block the same image allocated last, with no other allocation or
 *   release of the image between the two. A realloc counts as the release of its old block
 *   followed by the allocation of its new one, as heaptrack records it; a failed call or an
 *   unmatched release neither counts nor separates.
 */
#ifndef MT_IMAGES_H
#define MT_IMAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/memtrack.h"
#include "writer/artifact.h"

struct mt_heap_counts {
	uint64_t allocations;
	uint64_t frees;
	uint64_t reallocs;
	uint64_t realloc_null; /* of the reallocs: realloc(NULL, n) */
	uint64_t realloc_zero; /* of the reallocs: realloc(p, 0), p not NULL */
	uint64_t unmatched_frees;
	uint64_t failed;
	uint64_t bytes_allocated;
	uint64_t temporary;   /* releases that followed their allocation directly (see above) */
	uint64_t peak_bytes;  /* of the blocks the image allocated that were live at once */
	uint64_t live_blocks; /* allocated by the image, live now (at the end of the stream) */
	uint64_t live_bytes;
};

/* Blocks an exec or exit released with the image's address space. */
struct mt_released {
	uint64_t blocks;
	uint64_t bytes;
};

enum mt_image_end {
	MT_IMAGE_RUNNING = 0, /* no exec or exit seen (the artifact ends first, or is older) */
	MT_IMAGE_EXEC,	      /* replaced by an exec: live_at_exec holds */
	MT_IMAGE_EXIT,	      /* its process exited: live_at_exit holds */
};

/* A process image handed to a debugger (--stop-at): what its handoff records say. */
struct mt_image_handoff {
	char *at;		      /* where it was stopped, a phrase; never NULL */
	uint64_t event;		      /* events of the stream before its handoff */
	struct mt_heap_counts before; /* its counts at the handoff; after it: c minus these */
	size_t n_late;
	char **late; /* files with allocators mapped after it: calls into them may be missing */
	bool
	    to_tracer; /* handed to a tracer of the tree (strace, gdb in the tree), not --stop-at */
};

struct mt_image {
	uint32_t pid;
	uint32_t exec_seq;   /* execs of the process seen before this image: 0 for its first */
	int64_t parent;	     /* index of the parent process's image, -1 when not known */
	size_t first;	     /* index of its process's first image (itself, if exec_seq is 0) */
	bool shared_memory;  /* runs in its parent's address space (vfork), from its start */
	bool recorded;	     /* a process record describes it */
	bool exited;	     /* the exit status is known */
	int32_t exit_status; /* raw wait status, when exited */
	enum mt_image_end end;
	char *exe;	/* never NULL */
	char *position; /* as --trace-stops names the process ("0.1"); "" when not recorded */
	struct mt_heap_counts c;
	struct mt_released released;	  /* live at exec or at exit, after end */
	struct mt_image_handoff *handoff; /* NULL: never handed to a debugger */
	/*
	 * Created by a process after its handoff to a debugger (or by such a process): memtrack is
	 * not its tracer, and did not record its allocations (its counts are 0, not its truth).
	 */
	bool unrecorded;
	bool forks_unrecorded; /* the processes it creates are not recorded */
};

/* What one event counted as, for the counts kept by file and family. */
enum mt_effect {
	MT_EFF_NONE = 0,  /* free(NULL), or nothing to count */
	MT_EFF_ALLOC,	  /* an allocation of e->size bytes */
	MT_EFF_REALLOC,	  /* a realloc to e->size bytes */
	MT_EFF_FREE,	  /* a matched free */
	MT_EFF_UNMATCHED, /* a release of a block not live */
	MT_EFF_FAILED,
	MT_EFF_STREAM,	/* a lifecycle or realloc-entry record */
	MT_EFF_UNKNOWN, /* a kind this version does not know: passed over */
};

/* Whether a successful realloc-kind event counts in realloc_null, in realloc_zero. */
static inline bool mt_realloc_of_null(const struct mt_event *e)
{
	return !e->old_addr;
}

static inline bool mt_realloc_to_zero(const struct mt_event *e)
{
	return e->old_addr && !e->size;
}

struct mt_images;

struct mt_images *mt_images_new(void);
void mt_images_free(struct mt_images *im);

/* Replay one event. Returns 0 with *eff set, or -ENOMEM. */
int mt_images_event(struct mt_images *im, const struct mt_event *e, enum mt_effect *eff);
/*
 * A hint that e is replayed soon: the slot its block's address has in the block table is fetched
 * into the cache meanwhile (with a large heap each lookup there misses it). Changes nothing.
 */
void mt_images_prefetch(const struct mt_images *im, const struct mt_event *e);
/* A process record: describes the latest image of its pid (creating one when none is known). */
int mt_images_process(struct mt_images *im, const struct mt_artifact_process *p);
/* The image pid runs now (a new one when none is known): its index, or -ENOMEM. */
int64_t mt_images_running(struct mt_images *im, uint32_t pid);

/*
 * Called when the program frees a block that an event with a stack id allocated (sign -1), and
 * when a failed realloc gives its block back (+1): what allocation sites count as live. Blocks
 * an exec or exit releases are not freed by the program: no call.
 */
typedef void (*mt_images_release_fn)(void *arg, uint32_t stack_id, uint32_t image, uint64_t size,
				     int sign);
void mt_images_on_release(struct mt_images *im, mt_images_release_fn fn, void *arg);
/* Called for each temporary allocation (see above) with the stack id and image that made it. */
typedef void (*mt_images_temporary_fn)(void *arg, uint32_t stack_id, uint32_t image);
void mt_images_on_temporary(struct mt_images *im, mt_images_temporary_fn fn, void *arg);

/*
 * Every change of what the tree holds live, whoever releases the block (the program, a realloc's
 * entry, an exec or an exit): what the heap over time (timeline.h) and the sites' bytes at the
 * peak follow, from this one replay.
 */
struct mt_live_change {
	uint32_t image;	   /* the image that allocated the block (mt_images_get) */
	uint32_t stack_id; /* of the block's allocation, 0: none */
	uint64_t addr;	   /* of the block */
	uint64_t size;
	bool add;	     /* the block became live; else it stopped being live */
	bool ended;	     /* it stopped with its address space (exec, exit): never freed */
	uint64_t image_live; /* the image's live bytes after the change */
	uint64_t tree_live;  /* the tree's */
	bool new_peak;	     /* tree_live is larger than any before: the new mt_images_peak */
	/*
	 * An ending releases each class of blocks (same image, stack and size) in one change:
	 * summed, for `blocks` blocks of `size` bytes each (addr 0); each of those blocks is also
	 * told alone, counted_apart: what it is, its counts being in its class's change.
	 * Every other change is for one block (blocks 1), neither summed nor counted apart.
	 */
	uint64_t blocks;
	bool summed;
	bool counted_apart;
};
typedef void (*mt_images_live_fn)(void *arg, const struct mt_live_change *c);
void mt_images_on_live(struct mt_images *im, mt_images_live_fn fn, void *arg);

/* Call fn for every block live now (at the end of the stream: never freed either). */
void mt_images_live_blocks(const struct mt_images *im, mt_images_live_fn fn, void *arg);

/*
 * A handoff record: the latest image of its pid was handed to a debugger after events events of
 * the stream, or mapped a file after that. Returns 0 or -ENOMEM.
 */
int mt_images_handoff(struct mt_images *im, const struct mt_artifact_handoff *h, uint64_t events);

/* The latest image of pid: after an allocator call, the one it counted in. -1: none; -ENOMEM. */
int64_t mt_images_latest(struct mt_images *im, uint32_t pid);

/* The images, in order of appearance; valid until the next call that changes im. */
size_t mt_images_count(const struct mt_images *im);
const struct mt_image *mt_images_get(const struct mt_images *im, size_t i);
/* The largest live byte count reached by the whole tree, in stream order. */
uint64_t mt_images_peak(const struct mt_images *im);

#endif
