// SPDX-License-Identifier: GPL-2.0
/*
 * The leak scan (leakscan.h), memcheck's algorithm (docs/LEAKS.md):
 *
 * 1. Every word of the roots that points at a block's first byte makes the block reachable; one
 *    that points into it, possibly lost. Each block so marked is scanned in turn: from a
 *    reachable block, a pointer to a block's start makes that block reachable too, any other
 *    pointer (or any pointer from a possibly lost block) possibly lost, unless it is better off.
 * 2. The blocks still unreached are lost. In address order, each one not yet found from another
 *    lost block leads a clique: every unreached block found from it (start or interior) is
 *    indirectly lost, and so is an earlier leader found from it. The leaders left are definitely
 *    lost.
 *
 * One heuristic of memtrack's own: glibc's allocator keeps pointers to its chunks' headers (the
 * top chunk, the bins: in libc's data, a root), and a chunk's header overlaps the last 8 bytes
 * of the block before it. A pointer to exactly the header after block b is therefore not taken
 * as a pointer into b (next_chunk()). memcheck does not need it: it replaces the allocator.
 *
 * The roots are the registers, the stacks, and every writable private mapping less what the
 * allocator holds there (its blocks, its free memory): what memory is, not which mapping holds
 * it, since the kernel merges adjacent mappings (a runtime's arena with a malloc'd block's own).
 *
 * Words are 8 bytes, read at 8-byte aligned addresses, as memcheck reads them on amd64. Memory is
 * read in ranges of up to CHUNK bytes; a page that cannot be read is skipped and counted.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/grow.h"
#include "writer/artifact.h"
#include "inspect/procmaps.h"
#include "inspect/leakscan.h"
#include "inspect/servedfs.h"

#define CHUNK	     (1u << 20)
#define PAGE	     4096u
#define BATCH	     64u   /* blocks read at once */
#define GAPS	     1024u /* root ranges read at once (IOV_MAX) */
#define HEADER	     16u   /* glibc's chunk header (prev_size, size); musl's is smaller */
#define RED_ZONE     128u  /* below the stack pointer, the amd64 ABI lets a leaf function write */
#define UNREACHED    0
#define NOT_A_CLIQUE ((size_t)-1)

struct span {
	uint64_t start, end;
	bool live; /* holds a live block (not only free memory) */
};

struct scan {
	pid_t pid;
	const struct mt_live_block *b;
	size_t n;
	struct span *skip; /* what no root is: the blocks and the free memory, merged, by address */
	size_t n_skip;
	bool books_apart; /* mt_leak_heap's */
	uint8_t *cls;
	size_t *stack, n_stack;
	uint64_t lo, hi; /* the blocks' span: a word outside it is no pointer to one */
	size_t clique;	 /* the leader whose clique is being found, or NOT_A_CLIQUE */
	uint64_t *buf;	 /* CHUNK bytes */
	struct gaps *gaps;
	/* Mappings whose faults wait for another party (faults_wait): never read. */
	struct span *faulting;
	size_t n_faulting;
	uint64_t
	    *waiting_devs; /* the devices of the filesystems whose faults may wait (kernel dev) */
	size_t n_waiting_devs;
	struct mt_leak_stats *st;
};

long mt_leak_lookup(const struct mt_live_block *b, size_t n, uint64_t ptr)
{
	size_t lo = 0, hi = n;

	/* The last block that starts at or below ptr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b[mid].addr <= ptr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	lo--;
	return ptr == b[lo].addr || ptr - b[lo].addr < b[lo].size ? (long)lo : -1;
}

/* Where glibc's chunk after a block of size bytes at addr starts (its header). */
static uint64_t next_chunk(uint64_t addr, uint64_t size)
{
	uint64_t chunk = (size + 8 + 15) & ~15ull;

	return addr - 16 + (chunk < 32 ? 32 : chunk);
}

static void push(struct scan *sc, size_t i)
{
	sc->stack[sc->n_stack++] = i;
}

/* A word found in a root (prior_definite) or in block memory. */
static void found(struct scan *sc, uint64_t word, bool prior_definite)
{
	long i = mt_leak_lookup(sc->b, sc->n, word);
	uint8_t *c;

	if (i < 0 || (word != sc->b[i].addr && word == next_chunk(sc->b[i].addr, sc->b[i].size)))
		return;
	c = &sc->cls[i];
	if (sc->clique != NOT_A_CLIQUE) {
		/* An unreached block joins the clique; an earlier leader does, its own with it. */
		if (*c == UNREACHED)
			push(sc, (size_t)i);
		if ((size_t)i != sc->clique && (*c == UNREACHED || *c == MT_LEAK_DEFINITE))
			*c = MT_LEAK_INDIRECT;
		return;
	}
	if (*c == MT_LEAK_REACHABLE)
		return;
	if (word == sc->b[i].addr && prior_definite) {
		*c = MT_LEAK_REACHABLE;
		push(sc, (size_t)i);
	} else if (*c == UNREACHED) {
		*c = MT_LEAK_POSSIBLE;
		push(sc, (size_t)i);
	}
}

static void found_words(struct scan *sc, const uint64_t *w, size_t n, bool prior_definite)
{
	for (size_t k = 0; k < n; k++)
		if (w[k] >= sc->lo && w[k] < sc->hi)
			found(sc, w[k], prior_definite);
}

/* Bytes of [addr, addr + len) read into sc->buf, up to the first that cannot be. */
static size_t read_remote(struct scan *sc, uint64_t addr, size_t len)
{
	struct iovec local = {sc->buf, len}, remote = {(void *)(uintptr_t)addr, len};
	ssize_t got = process_vm_readv(sc->pid, &local, 1, &remote, 1, 0);

	return got > 0 ? (size_t)got : 0;
}

/* Scan the words of [lo, hi) (8-byte aligned); false when some of it could not be read. */
static bool scan_range(struct scan *sc, uint64_t lo, uint64_t hi, bool prior_definite)
{
	bool whole = true;

	lo = (lo + 7) & ~7ull;
	while (lo + 8 <= hi) {
		size_t want = hi - lo < CHUNK ? (size_t)(hi - lo) & ~(size_t)7 : CHUNK;
		size_t got = read_remote(sc, lo, want);

		sc->st->scanned_bytes += got;
		found_words(sc, sc->buf, got / 8, prior_definite);
		if (got < want) {
			/* The page that failed: skipped, counted. */
			uint64_t bad = (lo + got) & ~(uint64_t)(PAGE - 1);
			uint64_t next = bad + PAGE < hi ? bad + PAGE : hi;

			sc->st->unreadable_bytes += next - (lo + got);
			whole = false;
			lo = next;
		} else {
			lo += got;
		}
	}
	return whole;
}

/* The first span of skip that ends after addr. */
static size_t first_after(const struct scan *sc, uint64_t addr)
{
	size_t lo = 0, hi = sc->n_skip;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sc->skip[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Root ranges (8-byte aligned) gathered to be read with one call, as scan_batch() reads blocks. */
struct gaps {
	struct iovec remote[GAPS];
	size_t n, bytes;
	bool whole;
};

/* Scan the gathered ranges: one read for all, or each on its own when that one came short. */
static void flush_gaps(struct scan *sc, struct gaps *g)
{
	struct iovec local = {sc->buf, g->bytes};
	ssize_t got = g->n > 1 ? process_vm_readv(sc->pid, &local, 1, g->remote, g->n, 0) : -1;
	size_t off = 0;

	for (size_t k = 0; k < g->n; k++) {
		uint64_t lo = (uintptr_t)g->remote[k].iov_base;

		if (got != (ssize_t)g->bytes) {
			g->whole &= scan_range(sc, lo, lo + g->remote[k].iov_len, true);
			continue;
		}
		found_words(sc, (const uint64_t *)((const char *)sc->buf + off),
			    g->remote[k].iov_len / 8, true);
		off += g->remote[k].iov_len;
	}
	if (got == (ssize_t)g->bytes)
		sc->st->scanned_bytes += g->bytes;
	g->n = g->bytes = 0;
}

/*
 * The root range [lo, hi): gathered with others when small (the headers between a heap's
 * blocks are 8 or 16 bytes each: a call apiece would cost more than the reading), else scanned.
 */
static void add_gap(struct scan *sc, struct gaps *g, uint64_t lo, uint64_t hi)
{
	size_t len;

	lo = (lo + 7) & ~7ull;
	if (lo + 8 > hi)
		return;
	len = (size_t)(hi - lo) & ~(size_t)7;
	if (g->n == GAPS || g->bytes + len > CHUNK)
		flush_gaps(sc, g);
	if (len > CHUNK / 2) {
		g->whole &= scan_range(sc, lo, hi, true);
		return;
	}
	g->remote[g->n++] = (struct iovec){(void *)(uintptr_t)lo, len};
	g->bytes += len;
}

/*
 * Part [lo, hi) of a root region, less the blocks and the free memory in it; false when some of
 * it could not be read.
 */
static bool scan_root_part(struct scan *sc, uint64_t lo, uint64_t hi)
{
	struct gaps *g = sc->gaps;
	size_t i = first_after(sc, lo);
	bool after_skip = false;

	g->whole = true;
	while (lo < hi) {
		uint64_t end = i < sc->n_skip && sc->skip[i].start < hi ? sc->skip[i].start : hi;

		/* Between two blocks, 16 bytes or less are the allocator's header: no pointer. */
		if (end > lo && !(after_skip && end < hi && end - lo <= HEADER))
			add_gap(sc, g, lo, end);
		if (end == hi)
			break;
		lo = sc->skip[i].end > lo ? sc->skip[i].end : lo;
		after_skip = true;
		i++;
	}
	flush_gaps(sc, g);
	return g->whole;
}

/* A root region [lo, hi), less the blocks and the free memory in it. */
static void scan_root(struct scan *sc, uint64_t lo, uint64_t hi)
{
	sc->st->regions++;
	sc->st->unreadable_regions += !scan_root_part(sc, lo, hi);
}

/*
 * A root mapping of a file that a server serves (mt_served_file()): only the process's own pages
 * are read. The others are the file's bytes, which hold no pointer to a block of this run, and
 * reading one not in memory would wait for the server (or one in memory, were it dropped first):
 * they are counted unreadable. Own pages are never read from the file: no wait.
 */
static void scan_own_pages(struct scan *sc, int pagemap, uint64_t lo, uint64_t hi)
{
	uint64_t run = 0, unread = 0;
	bool own[MT_SERVED_PAGES], whole = true;

	sc->st->regions++;
	for (uint64_t at = lo; at < hi;) {
		size_t want = (hi - at) / PAGE < MT_SERVED_PAGES ? (size_t)((hi - at) / PAGE)
								 : MT_SERVED_PAGES;
		size_t n = mt_served_own_pages(pagemap, at, want, own);

		for (size_t k = 0; k < want; k++, at += PAGE) {
			if (k < n && own[k]) {
				run = run ? run : at;
				continue;
			}
			unread += PAGE;
			if (run)
				whole &= scan_root_part(sc, run, at);
			run = 0;
		}
	}
	if (run)
		whole &= scan_root_part(sc, run, hi);
	sc->st->unreadable_bytes += unread;
	sc->st->unreadable_regions += unread || !whole;
}

/* The next of two sorted lists of extents, taken in address order. */
static const struct mt_live_block *next_extent(const struct mt_leak_heap *h, size_t *i, size_t *j)
{
	if (*i < h->n && (*j >= h->n_freed || h->blocks[*i].addr <= h->freed[*j].addr))
		return &h->blocks[(*i)++];
	return *j < h->n_freed ? &h->freed[(*j)++] : NULL;
}

/* The blocks and the free memory, merged into disjoint spans by address: no root is there. */
static int make_skip(struct scan *sc, const struct mt_leak_heap *h)
{
	const struct mt_live_block *e;
	size_t i = 0, j = 0;

	sc->skip = malloc((h->n + h->n_freed + 1) * sizeof(*sc->skip));
	if (!sc->skip)
		return -ENOMEM;
	while ((e = next_extent(h, &i, &j))) {
		struct span *last = sc->n_skip ? &sc->skip[sc->n_skip - 1] : NULL;
		bool live = e < h->blocks + h->n && e >= h->blocks;

		if (last && e->addr <= last->end) {
			if (e->addr + e->size > last->end)
				last->end = e->addr + e->size;
			last->live |= live;
		} else {
			sc->skip[sc->n_skip++] = (struct span){e->addr, e->addr + e->size, live};
		}
	}
	return 0;
}

/* Whether block i is scanned as reachable (its pointers to block starts make them reachable). */
static bool definite(const struct scan *sc, size_t i)
{
	return sc->clique == NOT_A_CLIQUE && sc->cls[i] == MT_LEAK_REACHABLE;
}

/* Whether [lo, hi) overlaps a mapping whose faults may wait for ever (unread_root()). */
static bool may_wait(const struct scan *sc, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < sc->n_faulting; i++)
		if (lo < sc->faulting[i].end && sc->faulting[i].start < hi)
			return true;
	return false;
}

/*
 * Up to BATCH small blocks off the mark stack read with one process_vm_readv (what a call costs
 * is mostly its own: the pages are pinned alike), then scanned in turn. 0 when the block on top
 * is too big to share a read, or the read came short: the caller scans it on its own.
 */
static size_t scan_batch(struct scan *sc)
{
	struct iovec local = {sc->buf, 0}, remote[BATCH];
	size_t idx[BATCH], n = 0, off = 0;
	ssize_t got;

	while (n < BATCH && n < sc->n_stack) {
		const struct mt_live_block *b = &sc->b[sc->stack[sc->n_stack - 1 - n]];
		size_t len = (size_t)b->size & ~(size_t)7;

		if (local.iov_len + len > CHUNK || may_wait(sc, b->addr, b->addr + b->size))
			break;
		idx[n] = sc->stack[sc->n_stack - 1 - n];
		remote[n++] = (struct iovec){(void *)(uintptr_t)b->addr, len};
		local.iov_len += len;
	}
	if (n < 2)
		return 0;
	got = process_vm_readv(sc->pid, &local, 1, remote, n, 0);
	if (got != (ssize_t)local.iov_len)
		return 0;
	sc->n_stack -= n;
	sc->st->scanned_bytes += local.iov_len;
	/* What scanning one pushes goes above the batch, which is off the stack already. */
	for (size_t k = 0; k < n; k++) {
		size_t words = remote[k].iov_len / 8;

		found_words(sc, (const uint64_t *)((const char *)sc->buf + off), words,
			    definite(sc, idx[k]));
		off += remote[k].iov_len;
	}
	return n;
}

/* Scan what the mark stack holds, and what scanning it pushes, until it is empty. */
static void drain(struct scan *sc)
{
	while (sc->n_stack) {
		size_t i;

		if (scan_batch(sc))
			continue;
		i = sc->stack[--sc->n_stack];
		/* A block in memory whose faults may wait is not read either: counted. */
		if (may_wait(sc, sc->b[i].addr, sc->b[i].addr + sc->b[i].size))
			sc->st->unreadable_bytes += sc->b[i].size;
		else
			scan_range(sc, sc->b[i].addr, sc->b[i].addr + sc->b[i].size,
				   definite(sc, i));
	}
}

struct region {
	uint64_t start, end;
	uint64_t stack_from; /* a thread's stack: scanned from here (0: not one) */
	uint64_t in_memory;  /* kB resident or swapped out (smaps' Rss + Swap) */
	bool root;	     /* writable, private, not [stack]; or a file's RELRO */
	bool faults_wait; /* registered with a userfaultfd: a missing page waits for its handler */
	/* A file's on a filesystem a server serves: a page not in memory waits for the server. */
	bool served;
};

/*
 * A file's RELRO (PT_GNU_RELRO: .data.rel.ro, the GOT), made read-only once relocated: the
 * read-only private mapping of the file just before its writable one. A static glibc program's
 * own start-up keeps blocks there (_dl_init_paths' search paths, _dl_find_object_init's table),
 * which malloc handed out before the protection; a dynamic loader fills RELRO with addresses of
 * code and data only. memcheck never sees those blocks: it cannot replace a static malloc.
 */
struct relro_candidate {
	struct mt_inode_key key;
	uint64_t end;
	bool valid;
};

static bool is_relro(const struct relro_candidate *c, const struct mt_map_entry *e)
{
	return c->valid && e->write && !e->shared && *e->path && c->end == e->start &&
	       mt_inode_key_eq(&c->key, &e->key);
}

/* Whether a mapping is anonymous memory: no file, or a name given with PR_SET_VMA. */
static bool anonymous(const char *path)
{
	return !*path || strncmp(path, "[anon:", 6) == 0;
}

/*
 * Whether a live block lies in [start, end): free memory alone is no sign of the allocator, whose
 * mapping it was may be gone, the address now another mapping's.
 */
static bool holds_block(const struct scan *sc, uint64_t start, uint64_t end)
{
	for (size_t i = first_after(sc, start); i < sc->n_skip && sc->skip[i].start < end; i++)
		if (sc->skip[i].live)
			return true;
	return false;
}

/* Whether a writable private mapping is all the allocator's, when it keeps its books there. */
static bool books(const struct scan *sc, const struct mt_map_entry *e)
{
	return sc->books_apart && (!strcmp(e->path, "[heap]") ||
				   (anonymous(e->path) && holds_block(sc, e->start, e->end)));
}

/*
 * A root region bigger than this that is not all untouched (a sanitizer's shadow, a runtime's
 * reservation of terabytes) is not read: counted as unreadable, said in the report. So is one
 * registered with a userfaultfd: reading a page it lacks would wait for the handler, a thread of
 * the process, which is stopped at its exit (or gone) and never answers; and so is a file's on a
 * filesystem served by a process or over a network (FUSE, NFS): reading a page not in memory
 * waits for its server, which may be this stopped process, or stopped or gone.
 */
#define SPARSE_LIMIT (64ull << 30)

/* Whether an smaps VmFlags line has flag (two letters). */
static bool has_vm_flag(const char *line, const char *flag)
{
	for (const char *p = line; (p = strstr(p + 1, flag));)
		if (p[-1] == ' ' && (p[2] == ' ' || p[2] == '\n' || !p[2]))
			return true;
	return false;
}

/*
 * A line of /proc/PID/smaps after a mapping's: its Rss and Swap count what is in memory; its
 * VmFlags say whether a userfaultfd handles its missing or minor faults (um, ui).
 */
static void add_attribute(struct region *r, const char *line)
{
	unsigned long long kb;

	if (sscanf(line, "Rss: %llu kB", &kb) == 1 || sscanf(line, "Swap: %llu kB", &kb) == 1)
		r->in_memory += kb;
	else if (!strncmp(line, "VmFlags:", 8))
		r->faults_wait |= has_vm_flag(line, "um") || has_vm_flag(line, "ui");
}

/*
 * The process's mappings (/proc/PID/smaps), each marked a root or not (a stack is marked by its
 * thread). A mapping never touched (nothing resident nor swapped) is all zeros: no root to read.
 */
static int read_regions(struct scan *sc, struct region **out, size_t *n)
{
	char path[64], *line = NULL;
	size_t len = 0, cap = 0;
	struct relro_candidate relro = {0};
	struct mt_map_entry e;
	int err = 0;
	FILE *f;

	*out = NULL;
	*n = 0;
	snprintf(path, sizeof(path), "/proc/%d/smaps", sc->pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (!err && getline(&line, &len, f) > 0) {
		struct region r = {0};

		if (mt_procmaps_parse_line(line, &e)) {
			if (*n)
				add_attribute(&(*out)[*n - 1], line);
			continue;
		}
		r.start = e.start;
		r.end = e.end;
		/*
		 * What memory is, not what mapping holds it: the kernel merges a runtime's arena
		 * with an allocator's mapping when they touch. The blocks and the free memory in
		 * it are left out by scan_root(), not the whole mapping (unless the allocator keeps
		 * its books there).
		 */
		r.root =
		    e.read && e.write && !e.shared && strcmp(e.path, "[stack]") && !books(sc, &e);
		r.served = mt_served_file(sc->waiting_devs, sc->n_waiting_devs, &e);
		if (*n && is_relro(&relro, &e))
			(*out)[*n - 1].root = true;
		relro =
		    (struct relro_candidate){.key = e.key,
					     .end = e.end,
					     .valid = e.read && !e.write && !e.exec && !e.shared &&
						      *e.path && !anonymous(e.path)};
		err = MT_GROW(*out, cap, *n + 1, 64);
		if (!err)
			(*out)[(*n)++] = r;
	}
	free(line);
	fclose(f);
	return err;
}

/* Each thread's stack: from its stack pointer (less the red zone) to its mapping's end. */
static void mark_stacks(struct region *r, size_t n, const struct user_regs_struct *regs,
			size_t n_regs)
{
	for (size_t t = 0; t < n_regs; t++) {
		uint64_t sp = regs[t].rsp;

		for (size_t k = 0; k < n; k++) {
			uint64_t from = sp - RED_ZONE > r[k].start ? sp - RED_ZONE : r[k].start;

			if (sp < r[k].start || sp >= r[k].end)
				continue;
			if (!r[k].stack_from || from < r[k].stack_from)
				r[k].stack_from = from;
			break;
		}
	}
}

/* The mappings of r (n of them) whose faults may wait, kept in sc. */
static int note_faulting(struct scan *sc, const struct region *r, size_t n)
{
	size_t cap = 0;

	for (size_t k = 0; k < n; k++) {
		if (!r[k].faults_wait && !r[k].served)
			continue;
		if (MT_GROW(sc->faulting, cap, sc->n_faulting + 1, 4))
			return -ENOMEM;
		sc->faulting[sc->n_faulting++] = (struct span){r[k].start, r[k].end, false};
	}
	return 0;
}

/* Whether region r is a root not read, counted as unreadable (SPARSE_LIMIT says why). */
static bool unread_root(const struct region *r)
{
	if (r->stack_from)
		return r->faults_wait;
	return r->root && r->in_memory && (r->faults_wait || r->end - r->start > SPARSE_LIMIT);
}

static int scan_roots(struct scan *sc, const struct user_regs_struct *regs, size_t n_regs)
{
	struct region *r = NULL;
	size_t n;
	int pagemap = -1, err = mt_served_devs(sc->pid, &sc->waiting_devs, &sc->n_waiting_devs);

	if (!err)
		err = read_regions(sc, &r, &n);
	if (!err)
		err = note_faulting(sc, r, n);
	if (err) {
		free(r);
		return err;
	}
	mark_stacks(r, n, regs, n_regs);
	for (size_t t = 0; t < n_regs; t++)
		found_words(sc, (const uint64_t *)&regs[t], sizeof(regs[t]) / 8, true);
	sc->st->threads = (uint32_t)n_regs;
	drain(sc);
	for (size_t k = 0; k < n; k++) {
		if (unread_root(&r[k])) {
			sc->st->regions++;
			sc->st->unreadable_regions++;
			sc->st->unreadable_bytes += r[k].end - r[k].start;
		} else if (r[k].served) {
			if (r[k].root && r[k].in_memory)
				scan_own_pages(sc, mt_served_pagemap(sc->pid, &pagemap), r[k].start,
					       r[k].end);
		} else if (r[k].stack_from) {
			scan_root(sc, r[k].stack_from, r[k].end);
		} else if (r[k].root && r[k].in_memory) {
			scan_root(sc, r[k].start, r[k].end);
		}
		drain(sc);
	}
	if (pagemap >= 0)
		close(pagemap);
	free(r);
	return 0;
}

/* Phase 2: the cliques of the lost blocks, then their leaders are definitely lost. */
static void find_cliques(struct scan *sc)
{
	for (size_t i = 0; i < sc->n; i++) {
		if (sc->cls[i] != UNREACHED)
			continue;
		sc->clique = i;
		sc->cls[i] = MT_LEAK_DEFINITE;
		push(sc, i);
		drain(sc);
	}
	sc->clique = NOT_A_CLIQUE;
}

int mt_leak_scan(pid_t pid, const struct mt_leak_heap *h, const struct user_regs_struct *regs,
		 size_t n_regs, uint8_t *cls, struct mt_leak_stats *st)
{
	const struct mt_live_block *b = h->blocks;
	size_t n = h->n;
	struct scan sc = {.pid = pid,
			  .b = b,
			  .n = n,
			  .books_apart = h->books_apart,
			  .cls = cls,
			  .clique = NOT_A_CLIQUE,
			  .st = st};
	int err = -ENOMEM;

	memset(st, 0, sizeof(*st));
	memset(cls, UNREACHED, n);
	if (n) {
		sc.lo = b[0].addr;
		/* The last block may not end last: a size-0 block has its start as its one pointer.
		 */
		for (size_t i = 0; i < n; i++)
			if (b[i].addr + (b[i].size ? b[i].size : 1) > sc.hi)
				sc.hi = b[i].addr + (b[i].size ? b[i].size : 1);
	}
	/* Each block is pushed at most twice: reached possibly, then reachably (or in a clique). */
	sc.stack = malloc((2 * n + 1) * sizeof(*sc.stack));
	sc.buf = malloc(CHUNK);
	sc.gaps = calloc(1, sizeof(*sc.gaps));
	if (!sc.stack || !sc.buf || !sc.gaps || make_skip(&sc, h))
		goto out;
	err = scan_roots(&sc, regs, n_regs);
	if (!err)
		find_cliques(&sc);
out:
	free(sc.skip);
	free(sc.gaps);
	free(sc.faulting);
	free(sc.waiting_devs);
	free(sc.stack);
	free(sc.buf);
	return err;
}
