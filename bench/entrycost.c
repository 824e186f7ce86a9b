// SPDX-License-Identifier: GPL-2.0
/*
 * entrycost MODE N: what one kernel entry costs on this host, per call, in nanoseconds on stdout.
 * MODE call and push call f_push, call nop5 calls f_nop5 (tools/bench puts a uprobe or a
 * uretprobe on one of them, or none), syscall makes getppid(2) N times.
 *
 * Every allocator probe is a kernel entry: a uprobe on an ordinary instruction is an int3 trap;
 * on a 5-byte nop, Linux 6.18 turns it into a call to a trampoline that makes the uprobe syscall;
 * a uretprobe adds a return through a trampoline (a syscall since 6.11). What those cost is a
 * property of the host (a hypervisor may make every trap a world switch), and sets the floor of
 * any uprobe-based tool against one that stays in user space (docs/PERFORMANCE.md, section 13).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

/* Written in assembly so that the probed instruction is known: a push, and a 5-byte nop. */
__asm__(".text\n"
	".globl f_push\n.type f_push,@function\n.p2align 4\n"
	"f_push:\n\tpush %rbx\n\tpop %rbx\n\tret\n.size f_push,.-f_push\n"
	".globl f_nop5\n.type f_nop5,@function\n.p2align 4\n"
	"f_nop5:\n\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n\tret\n.size f_nop5,.-f_nop5\n");
void f_push(void);
void f_nop5(void);

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
	void (*fn)(void) = f_push;
	long n = argc == 3 ? atol(argv[2]) : 0;
	bool sys = false;
	double t0;

	if (n <= 0 || (strcmp(argv[1], "call") && strcmp(argv[1], "push") &&
		       strcmp(argv[1], "nop5") && strcmp(argv[1], "syscall"))) {
		fprintf(stderr, "usage: entrycost call|push|nop5|syscall N\n");
		return 2;
	}
	if (!strcmp(argv[1], "nop5"))
		fn = f_nop5;
	sys = !strcmp(argv[1], "syscall");
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		if (sys)
			syscall(SYS_getppid);
		else
			fn();
	}
	printf("%.1f\n", (now_ns() - t0) / n);
	return 0;
}
