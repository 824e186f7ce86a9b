// SPDX-License-Identifier: GPL-2.0
/*
 * noalloc: a static program without a C library, which exits 0 at once. memtrack classifies it
 * at its exec stop and finds no allocator: nothing is attached and nothing detached, so a tracked
 * run of it costs memtrack's fixed start-up and teardown alone, and `true` minus it is what one
 * allocator file (the C library) adds.
 */
void _start(void)
{
	/* exit_group(0): there is no libc to return to. */
	__asm__ volatile("mov $231, %eax\n\txor %edi, %edi\n\tsyscall");
	__builtin_unreachable();
}
