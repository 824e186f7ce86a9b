// SPDX-License-Identifier: GPL-2.0
/*
 * The leak scan's parts on their own (docs/LEAKS.md): the supervisor's live blocks replayed from
 * a stream (livetable.c), memcheck's classes on a stopped child whose "heap" is an anonymous
 * mapping of known blocks (leakscan.c), and the leak record through the writer and the reader.
 */
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "reader/artifact_read.h"
#include "inspect/leakscan.h"
#include "inspect/livetable.h"
#include "inspect/servedfs.h"
#include "writer/artifact.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

/* ---- the live blocks --------------------------------------------------------------------- */

static struct mt_event ev(uint8_t kind, uint32_t pid, uint64_t addr, uint64_t size)
{
	return (struct mt_event){.pid = pid, .tid = pid, .kind = kind, .addr = addr, .size = size};
}

static long blocks_of(struct mt_livetable *lt, uint32_t pid, uint64_t *first)
{
	struct mt_live_block *b;
	long n = mt_livetable_blocks(lt, pid, &b);

	ck_assert_int_ge(n, 0);
	if (n && first)
		*first = b[0].addr;
	free(b);
	return n;
}

START_TEST(livetable_follows_the_stream)
{
	struct mt_livetable *lt = mt_livetable_new();
	struct mt_event e[] = {
	    ev(MT_K_MALLOC, 10, 0x1000, 16), ev(MT_K_MALLOC, 10, 0x2000, 32),
	    ev(MT_K_FREE, 10, 0x1000, 0),
	    /* realloc: released at its entry, the new block at its return */
	    ev(MT_K_REALLOC_RELEASE, 10, 0x2000, 0), ev(MT_K_REALLOC, 10, 0x3000, 64),
	    /* a fork's child has its own space and none of its parent's blocks */
	    ev(MT_K_FORK, 10, 11, 0), ev(MT_K_MALLOC, 11, 0x5000, 8),
	    /* a vfork child allocates in its parent's space until its exec */
	    ev(MT_K_FORK, 10, 12, MT_FORK_SHARED_MM), ev(MT_K_MALLOC, 12, 0x6000, 8)};
	uint64_t first = 0;

	e[4].old_addr = 0x2000;
	mt_livetable_events(lt, e, sizeof(e) / sizeof(e[0]));
	ck_assert_int_eq(blocks_of(lt, 10, &first), 2);
	ck_assert_uint_eq(first, 0x3000);
	ck_assert_int_eq(blocks_of(lt, 11, &first), 1);
	ck_assert_uint_eq(first, 0x5000);
	ck_assert(mt_livetable_shared(lt, 12));
	ck_assert_int_eq(blocks_of(lt, 12, NULL), 2);
	/* The vfork child's exec: a space of its own; the parent keeps the block. */
	e[0] = ev(MT_K_EXEC, 12, 0, 0);
	mt_livetable_events(lt, e, 1);
	ck_assert(!mt_livetable_shared(lt, 12));
	ck_assert_int_eq(blocks_of(lt, 12, NULL), 0);
	ck_assert_int_eq(blocks_of(lt, 10, NULL), 2);
	/* A failed realloc gives its block back; an exit ends the space. */
	e[0] = ev(MT_K_REALLOC_RELEASE, 10, 0x3000, 0);
	e[1] = ev(MT_K_REALLOC, 10, 0, 1 << 30);
	e[1].old_addr = 0x3000;
	e[1].flags = MT_EV_FAILED;
	mt_livetable_events(lt, e, 2);
	ck_assert_int_eq(blocks_of(lt, 10, NULL), 2);
	e[0] = ev(MT_K_EXIT, 10, 0, 0);
	mt_livetable_events(lt, e, 1);
	ck_assert_int_eq(blocks_of(lt, 10, NULL), 0);
	ck_assert_int_eq(blocks_of(lt, 11, NULL), 1);
	ck_assert(!mt_livetable_inexact(lt));
	mt_livetable_free(lt);
}
END_TEST

/* Many blocks in and out: the table grows and deletes without losing one. */
START_TEST(livetable_many_blocks)
{
	struct mt_livetable *lt = mt_livetable_new();
	struct mt_event e;

	for (uint64_t i = 1; i <= 100000; i++) {
		e = ev(MT_K_MALLOC, 7, i * 16, i);
		mt_livetable_events(lt, &e, 1);
	}
	for (uint64_t i = 1; i <= 100000; i += 2) {
		e = ev(MT_K_FREE, 7, i * 16, 0);
		mt_livetable_events(lt, &e, 1);
	}
	ck_assert_int_eq(blocks_of(lt, 7, NULL), 50000);
	mt_livetable_free(lt);
}
END_TEST

/* The heap the C library holds for this process, mapped blocks included. */
static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/*
 * --leaks' table of live blocks takes at most 36 bytes a block (docs/PERFORMANCE.md, section
 * 24): 190,000 of them, just below a doubling of the table (the worst case is twice as much).
 */
START_TEST(livetable_within_36_bytes_a_block)
{
	const uint64_t n = 190000;
	struct mt_livetable *lt = mt_livetable_new();
	struct mt_event e;
	size_t before = heap_in_use();

	for (uint64_t i = 1; i <= n; i++) {
		e = ev(MT_K_MALLOC, 7, 0x555555000000ull + i * 48, 16 + i % 32);
		mt_livetable_events(lt, &e, 1);
	}
	ck_assert(!mt_livetable_inexact(lt));
	ck_assert_uint_le(heap_in_use() - before, 36 * n);
	ck_assert_int_eq(blocks_of(lt, 7, NULL), (long)n);
	mt_livetable_free(lt);
}
END_TEST

/* Freed blocks are free memory, unless big enough to have been given back; files are noted. */
START_TEST(livetable_keeps_free_memory_and_files)
{
	struct mt_livetable *lt = mt_livetable_new();
	struct mt_event e[] = {
	    ev(MT_K_MALLOC, 20, 0x1000, 100), ev(MT_K_FREE, 20, 0x1000, 0),
	    /* a smaller block at the same address, freed: the bigger stays */
	    ev(MT_K_MALLOC, 20, 0x1000, 40), ev(MT_K_FREE, 20, 0x1000, 0),
	    /* a block the allocator maps on its own: unmapped at its free */
	    ev(MT_K_MALLOC, 20, 0x100010, 256 << 10), ev(MT_K_FREE, 20, 0x100010, 0),
	    /* as big, in a heap: free memory there */
	    ev(MT_K_MALLOC, 20, 0x200040, 256 << 10), ev(MT_K_FREE, 20, 0x200040, 0),
	    /* a realloc that moves: the old block is free memory */
	    ev(MT_K_MALLOC, 20, 0x2000, 16), ev(MT_K_REALLOC_RELEASE, 20, 0x2000, 0),
	    ev(MT_K_REALLOC, 20, 0x3000, 64)};
	struct mt_live_block *f;
	uint16_t files[MT_LIVE_FILES];

	e[2].file_id = 3;
	e[10].old_addr = 0x2000;
	mt_livetable_events(lt, e, sizeof(e) / sizeof(e[0]));
	ck_assert_int_eq(mt_livetable_freed(lt, 20, &f), 3);
	ck_assert_uint_eq(f[0].addr, 0x1000);
	ck_assert_uint_eq(f[0].size, 100);
	ck_assert_uint_eq(f[1].addr, 0x2000);
	ck_assert_uint_eq(f[1].size, 16);
	ck_assert_uint_eq(f[2].addr, 0x200040);
	free(f);
	ck_assert_int_eq(blocks_of(lt, 20, NULL), 1);
	ck_assert_int_eq(mt_livetable_files(lt, 20, files), 2);
	ck_assert_uint_eq(files[0], 0);
	ck_assert_uint_eq(files[1], 3);
	/* More allocators than kept: said so. */
	for (uint16_t i = 0; i < MT_LIVE_FILES; i++) {
		e[0] = ev(MT_K_MALLOC, 20, 0x9000 + 16 * i, 8);
		e[0].file_id = 10 + i;
		mt_livetable_events(lt, e, 1);
	}
	ck_assert_int_eq(mt_livetable_files(lt, 20, files), -E2BIG);
	/* The exit ends the free memory with the blocks. */
	e[0] = ev(MT_K_EXIT, 20, 0, 0);
	mt_livetable_events(lt, e, 1);
	ck_assert_int_eq(mt_livetable_freed(lt, 20, &f), 0);
	free(f);
	mt_livetable_free(lt);
}
END_TEST

/* ---- the scan ----------------------------------------------------------------------------- */

/* The child's roots: its data (this binary's .bss); volatile, as nothing here reads them. */
static volatile uintptr_t root_start, root_interior;

#define HEAP_BLOCKS 8
#define BLOCK	    64

/*
 * Blocks 0..7 of 64 bytes in an anonymous mapping (heap: no root there): 0 is pointed to from the
 * data (reachable) and points to 1 (reachable); 2 is pointed to 8 bytes in (possibly) and points
 * to 3 (possibly); 4 -> 5 -> 4, a cycle nothing points to (4 definitely, 5 indirectly); 6 -> 7
 * with 6 unreferenced (6 definitely, 7 indirectly).
 */
static void make_heap(uint64_t *heap)
{
	memset(heap, 0, HEAP_BLOCKS * BLOCK);
#define AT(i) ((uint64_t)(uintptr_t)((char *)heap + (i)*BLOCK))
	heap[0 * 8] = AT(1);
	heap[2 * 8 + 3] = AT(3);
	heap[4 * 8] = AT(5);
	heap[5 * 8 + 7] = AT(4);
	heap[6 * 8 + 1] = AT(7) + 16;
	root_start = AT(0);
	root_interior = AT(2) + 8;
#undef AT
}

START_TEST(scan_gives_memchecks_classes)
{
	uint64_t *heap =
	    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	static const uint8_t want[HEAP_BLOCKS] = {
	    MT_LEAK_REACHABLE, MT_LEAK_REACHABLE, MT_LEAK_POSSIBLE, MT_LEAK_POSSIBLE,
	    MT_LEAK_DEFINITE,  MT_LEAK_INDIRECT,  MT_LEAK_DEFINITE, MT_LEAK_INDIRECT};
	struct mt_live_block b[HEAP_BLOCKS];
	struct mt_leak_stats st;
	uint8_t cls[HEAP_BLOCKS];
	int status;
	pid_t pid;

	ck_assert_ptr_ne(heap, MAP_FAILED);
	make_heap(heap);
	pid = fork();
	if (!pid) {
		raise(SIGSTOP);
		_exit(0);
	}
	/* The parent's copy of the pointers is out of the way: only the child is read. */
	ck_assert_int_eq(waitpid(pid, &status, WUNTRACED), pid);
	for (int i = 0; i < HEAP_BLOCKS; i++)
		b[i] = (struct mt_live_block){.addr = (uintptr_t)heap + i * BLOCK, .size = BLOCK};
	ck_assert_int_eq(mt_leak_scan(pid, &(struct mt_leak_heap){.blocks = b, .n = HEAP_BLOCKS},
				      NULL, 0, cls, &st),
			 0);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	for (int i = 0; i < HEAP_BLOCKS; i++)
		ck_assert_msg(cls[i] == want[i], "block %d: class %d, not %d", i, cls[i], want[i]);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	/* Under ASan or TSan, their shadow: terabytes, not read (SPARSE_LIMIT). */
	ck_assert_uint_eq(st.unreadable_bytes, 0);
#endif
	ck_assert_uint_gt(st.regions, 0);
	munmap(heap, 4096);
}
END_TEST

/*
 * The same heap, with what a runtime keeps in the same mapping beside the blocks (its arena,
 * merged by the kernel): a pointer to block 4 at 1024, a root, so 4 and 5 are reachable. At 2048
 * a freed block holds a pointer to 6: free memory is no root, 6 is still definitely lost. An
 * allocator that keeps its books among its blocks (books_apart): the mapping is all its own. In
 * another mapping, a freed block (its allocator's mapping gone, the address reused) beside a
 * pointer to block 2: a root either way, free memory alone says nothing of the mapping.
 */
START_TEST(scan_reads_the_heap_mapping_less_blocks_and_free_memory)
{
	uint64_t *heap =
	    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	/* A page between two inaccessible ones: a mapping the kernel cannot merge with heap. */
	char *guarded = mmap(NULL, 3 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t *other = (uint64_t *)(guarded + 4096);
	static const uint8_t want[2][HEAP_BLOCKS] = {
	    {MT_LEAK_REACHABLE, MT_LEAK_REACHABLE, MT_LEAK_REACHABLE, MT_LEAK_REACHABLE,
	     MT_LEAK_REACHABLE, MT_LEAK_REACHABLE, MT_LEAK_DEFINITE, MT_LEAK_INDIRECT},
	    {MT_LEAK_REACHABLE, MT_LEAK_REACHABLE, MT_LEAK_REACHABLE, MT_LEAK_REACHABLE,
	     MT_LEAK_DEFINITE, MT_LEAK_INDIRECT, MT_LEAK_DEFINITE, MT_LEAK_INDIRECT}};
	struct mt_live_block b[HEAP_BLOCKS], freed[2];
	struct mt_leak_stats st;
	uint8_t cls[HEAP_BLOCKS];
	int status;
	pid_t pid;

	ck_assert_ptr_ne(heap, MAP_FAILED);
	ck_assert_ptr_ne(guarded, MAP_FAILED);
	ck_assert_int_eq(mprotect(other, 4096, PROT_READ | PROT_WRITE), 0);
	make_heap(heap);
	heap[1024 / 8] = (uintptr_t)heap + 4 * BLOCK;
	heap[2048 / 8 + 2] = (uintptr_t)heap + 6 * BLOCK;
	other[1024 / 8] = (uintptr_t)heap + 2 * BLOCK;
	pid = fork();
	if (!pid) {
		raise(SIGSTOP);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, WUNTRACED), pid);
	heap[1024 / 8] = heap[2048 / 8 + 2] = other[1024 / 8] = 0;
	for (int i = 0; i < HEAP_BLOCKS; i++)
		b[i] = (struct mt_live_block){.addr = (uintptr_t)heap + i * BLOCK, .size = BLOCK};
	freed[0] = (struct mt_live_block){.addr = (uintptr_t)heap + 2048, .size = 48};
	freed[1] = (struct mt_live_block){.addr = (uintptr_t)other, .size = 64};
	if (freed[1].addr < freed[0].addr) {
		struct mt_live_block f = freed[0];

		freed[0] = freed[1];
		freed[1] = f;
	}
	for (int apart = 0; apart < 2; apart++) {
		struct mt_leak_heap h = {b, HEAP_BLOCKS, freed, 2, apart};

		ck_assert_int_eq(mt_leak_scan(pid, &h, NULL, 0, cls, &st), 0);
		for (int i = 0; i < HEAP_BLOCKS; i++)
			ck_assert_msg(cls[i] == want[apart][i],
				      "books apart %d, block %d: %d, not %d", apart, i, cls[i],
				      want[apart][i]);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	munmap(heap, 4096);
	munmap(guarded, 3 * 4096);
}
END_TEST

START_TEST(lookup_start_interior_and_empty)
{
	struct mt_live_block b[] = {{.addr = 100, .size = 10}, {.addr = 200, .size = 0}};

	ck_assert_int_eq(mt_leak_lookup(b, 2, 100), 0);
	ck_assert_int_eq(mt_leak_lookup(b, 2, 109), 0);
	ck_assert_int_eq(mt_leak_lookup(b, 2, 110), -1);
	ck_assert_int_eq(mt_leak_lookup(b, 2, 99), -1);
	ck_assert_int_eq(mt_leak_lookup(b, 2, 200), 1);
	ck_assert_int_eq(mt_leak_lookup(b, 2, 201), -1);
}
END_TEST

/* ---- the record ----------------------------------------------------------------------------- */

static const struct mt_artifact_header header = {.watcher = "fentry"};

/* A scan of n blocks through the writer, read back: the blocks and figures the reader gives. */
static void roundtrip(uint32_t n)
{
	struct mt_artifact_leak_block *v = calloc(n, sizeof(*v));
	struct mt_artifact_leaks l = {.pid = 42,
				      .flags = MT_LEAKS_INEXACT,
				      .threads = 3,
				      .regions = 9,
				      .scanned_bytes = 12345,
				      .n = n,
				      .blocks = v};
	struct mt_artifact_footer foot = {0};
	struct mt_artifact_writer *w;
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	char *path = mt_tmpfile();
	uint32_t seen = 0, records = 0;
	int ret;

	for (uint32_t i = 0; i < n; i++)
		v[i] = (struct mt_artifact_leak_block){
		    .addr = 0x1000 + 16 * i, .size = i, .stack = i % 7, .cls = 1 + i % 4};
	ck_assert_int_eq(mt_artifact_create(&w, path, &header), 0);
	ck_assert_int_eq(mt_artifact_write_leaks(w, &l), 0);
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	ck_assert_int_eq(mt_artifact_open(&r, path, NULL, 0), 0);
	while ((ret = mt_artifact_next(r, &it)) > 0) {
		if (it.type != MT_ITEM_LEAKS)
			continue;
		ck_assert_uint_eq(it.leaks->pid, 42);
		ck_assert_uint_eq(it.leaks->chunk, records);
		ck_assert_uint_eq(it.leaks->threads, records ? 0 : 3);
		ck_assert_uint_eq(it.leaks->flags, records ? 0 : MT_LEAKS_INEXACT);
		for (uint32_t k = 0; k < it.leaks->n; k++, seen++) {
			ck_assert_uint_eq(it.leaks->blocks[k].addr, v[seen].addr);
			ck_assert_uint_eq(it.leaks->blocks[k].cls, v[seen].cls);
			ck_assert_uint_eq(it.leaks->blocks[k].stack, v[seen].stack);
		}
		records++;
	}
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(seen, n);
	ck_assert_uint_eq(records, n ? (n + MT_ARTIFACT_LEAKS_PER - 1) / MT_ARTIFACT_LEAKS_PER : 1);
	mt_artifact_close(r);
	unlink(path);
	free(path);
	free(v);
}

START_TEST(leak_record_roundtrip)
{
	roundtrip(0);
	roundtrip(5);
	/* More than one record holds. */
	roundtrip(MT_ARTIFACT_LEAKS_PER + 3);
}
END_TEST

/*
 * The filesystems whose faults the scan never waits for (a FUSE server, stopped by memtrack or
 * gone, or a network server), and the lines of /proc/PID/mountinfo that name them.
 */
START_TEST(served_filesystems_are_not_read)
{
	static const char *const waits[] = {"fuse", "fuse.sshfs", "fuseblk", "nfs", "nfs4",
					    "cifs", "smb3",	  "9p",	     "ceph"};
	static const char *const local[] = {"ext4", "xfs", "tmpfs", "btrfs", "overlay", "proc", ""};
	const char *line = "36 35 0:52 / /mnt/f rw,nosuid,nodev shared:7 - fuse.sshfs host:/ "
			   "rw,user_id=0,group_id=0\n";
	char fstype[64];
	uint64_t kdev;

	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++)
		ck_assert_msg(mt_served_fs_type(waits[i]), "%s", waits[i]);
	for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++)
		ck_assert_msg(!mt_served_fs_type(local[i]), "%s", local[i]);
	ck_assert_int_eq(mt_served_mountinfo_line(line, &kdev, fstype, sizeof(fstype)), 0);
	ck_assert_str_eq(fstype, "fuse.sshfs");
	ck_assert_uint_eq(kdev, (0ull << 20) | 52);
	line = "98 1 259:3 / / rw,relatime - ext4 /dev/nvme0n1p3 rw\n";
	ck_assert_int_eq(mt_served_mountinfo_line(line, &kdev, fstype, sizeof(fstype)), 0);
	ck_assert_str_eq(fstype, "ext4");
	ck_assert_uint_eq(kdev, (259ull << 20) | 3);
	ck_assert_int_eq(mt_served_mountinfo_line("36 35 0:52 / /x rw\n", &kdev, fstype, 64),
			 -EINVAL);
	ck_assert_int_eq(mt_served_mountinfo_line(line, &kdev, fstype, 4), -EINVAL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("leaks");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, livetable_follows_the_stream);
	tcase_add_test(tc, livetable_many_blocks);
	tcase_add_test(tc, livetable_within_36_bytes_a_block);
	tcase_add_test(tc, livetable_keeps_free_memory_and_files);
	tcase_add_test(tc, scan_gives_memchecks_classes);
	tcase_add_test(tc, scan_reads_the_heap_mapping_less_blocks_and_free_memory);
	tcase_add_test(tc, lookup_start_interior_and_empty);
	tcase_add_test(tc, leak_record_roundtrip);
	tcase_add_test(tc, served_filesystems_are_not_read);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
