/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gdb's agent expressions (gdb manual, "Agent Expressions" appendix): the bytecode gdb compiles a
 * breakpoint's condition (`break X if COND`) and a dprintf's printf into, sent with Z0 and Z1
 * when the stub offers ConditionalBreakpoints and BreakpointCommands, so that the stub decides at
 * the stop, without a round trip to gdb, whether gdb hears of it.
 *
 * Pure: the thread's registers and memory are read through callbacks, printf's text goes to one.
 * An expression is checked whole before it is kept (every opcode known, every operand and jump
 * inside it, printf's format matching its arguments); a run is bounded in steps and stack depth,
 * and any failure (a stack underflow, a division by zero, an unreadable address) ends it with a
 * negative errno, never a crash.
 */
#ifndef MT_GDBREMOTE_AGENT_H
#define MT_GDBREMOTE_AGENT_H

#include <stddef.h>
#include <stdint.h>

/* The longest expression kept: gdb's packets are shorter still (two hex digits a byte). */
#define MT_AGENT_MAX_LEN   8192
/* The deepest stack a run may use, and the most bytecodes it may execute (jumps may loop). */
#define MT_AGENT_MAX_STACK 256
#define MT_AGENT_MAX_STEPS 100000

/* What a run reads and says, ctx the caller's. */
struct mt_agent_ops {
	/* The low 64 bits of register regno (gdb's numbering): 0 or a negative errno. */
	int (*reg)(void *ctx, unsigned int regno, uint64_t *value);
	/* len bytes at addr, whole: 0 or a negative errno. */
	int (*mem)(void *ctx, uint64_t addr, uint8_t *buf, size_t len);
	/* printf's text, len bytes (not NUL-ended): 0 or a negative errno. */
	int (*print)(void *ctx, const char *text, size_t len);
};

/*
 * Whether code (len bytes) is an expression this evaluator runs: 0, or -EINVAL (malformed: an
 * unknown opcode, an operand or jump past the end or into an operand, a bad printf format) or
 * -EOPNOTSUPP (valid, but floating point, tracing or trace state variables). why, when not
 * NULL, gets a sentence.
 */
int mt_agent_check(const uint8_t *code, size_t len, const char **why);

/*
 * Run a checked expression until its end: *result is the value on top of the stack then (0 when
 * it is empty). 0, or a negative errno: -EINVAL (stack underflow or overflow, division by zero,
 * too many steps), or what a callback returned.
 */
int mt_agent_eval(const uint8_t *code, size_t len, const struct mt_agent_ops *ops, void *ctx,
		  uint64_t *result);

#endif
