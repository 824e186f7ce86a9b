/*
 * liveblocks LIVE EVENTS: LIVE blocks of 16 to 64 bytes allocated and kept to the end, then
 * malloc/free pairs until the run has made EVENTS allocator events in all (each malloc and each
 * free one), for the memory that tracking and reporting many live blocks costs (tools/bench
 * BUILD live, docs/PERFORMANCE.md). The blocks come from four call sites, so that a report
 * aggregates few stacks and the live blocks dominate; the same arguments make the same calls.
 */
#include <stdio.h>
#include <stdlib.h>

static void **kept;

__attribute__((noipa)) static void *site_a(size_t n)
{
	return malloc(n);
}
__attribute__((noipa)) static void *site_b(size_t n)
{
	return malloc(n);
}
__attribute__((noipa)) static void *site_c(size_t n)
{
	return malloc(n);
}
__attribute__((noipa)) static void *site_d(size_t n)
{
	return malloc(n);
}

static void *(*const sites[4])(size_t) = {site_a, site_b, site_c, site_d};

int main(int argc, char **argv)
{
	unsigned long live, events, made = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: liveblocks LIVE EVENTS\n");
		return 2;
	}
	live = strtoul(argv[1], NULL, 10);
	events = strtoul(argv[2], NULL, 10);
	kept = calloc(live ? live : 1, sizeof(*kept));
	if (!kept)
		return 1;
	for (unsigned long i = 0; i < live; i++, made++) {
		kept[i] = sites[i & 3](16 + (i % 4) * 16);
		if (!kept[i])
			return 1;
	}
	for (unsigned long i = 0; made + 2 <= events; i++, made += 2) {
		void *p = sites[i & 3](16 + (i % 7) * 8);

		if (!p)
			return 1;
		free(p);
	}
	printf("%lu live blocks, %lu events\n", live, made);
	return 0;
}
