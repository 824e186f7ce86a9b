// SPDX-License-Identifier: GPL-2.0
/*
 * deepchurn DEPTH N: churn's N malloc/free pairs (sizes 16..4096), made DEPTH calls deep, for the
 * cost of allocation stacks on a deep stack (docs/STACKS.md). Every pair comes from one call
 * site: one distinct stack.
 */
#include <stdlib.h>

__attribute__((noipa)) static int churn_at(long depth, long n)
{
	int r = 0;

	if (depth > 0) {
		r = churn_at(depth - 1, n);
		/* Work after the call: no tail call, the frames stay. */
		__asm__ volatile("" : : "r"(r) : "memory");
		return r;
	}
	for (long i = 0; i < n; i++) {
		char *p = malloc(16 * (1 + i % 256));

		if (!p)
			return 1;
		*(volatile char *)p = (char)i;
		free(p);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long depth = argc > 1 ? atol(argv[1]) : 50, n = argc > 2 ? atol(argv[2]) : 1000;

	return churn_at(depth, n);
}
