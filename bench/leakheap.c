/*
 * leakheap MIB: MIB MiB of live 4 KiB blocks at exit, for the leak scan's cost (tools/bench
 * leaks, docs/PERFORMANCE.md). Every block's first word points to the next block of its chain,
 * the others hold small numbers (no pointers); one chain, half the blocks, hangs from a global
 * (still reachable), the other's head is dropped (1 definitely lost, the rest indirectly): the
 * scan reads every byte and follows every pointer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 4096

void *leakheap_kept;
void *volatile leakheap_lost;

/* Zeroes below the stack pointer: no stale copy of a pointer left where the scan reads. */
__attribute__((noipa)) static void scrub(void)
{
	char buf[16384];

	memset(buf, 0, sizeof(buf));
	__asm__ volatile("" : : "r"(buf) : "memory");
}

__attribute__((noipa)) static void *chain(size_t n)
{
	uintptr_t *head = NULL;

	for (size_t i = 0; i < n; i++) {
		uintptr_t *b = malloc(BLOCK);

		if (!b)
			exit(1);
		b[0] = (uintptr_t)head;
		for (size_t k = 1; k < BLOCK / sizeof(*b); k++)
			b[k] = k;
		head = b;
	}
	return head;
}

int main(int argc, char **argv)
{
	size_t blocks = (argc > 1 ? strtoull(argv[1], NULL, 10) : 1) * (1u << 20) / BLOCK;
	leakheap_kept = chain(blocks / 2);
	leakheap_lost = chain(blocks - blocks / 2);
	leakheap_lost = NULL;
	scrub();
	return 0;
}
