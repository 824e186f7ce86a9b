/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Probe placement: where inside an allocator function the uprobe goes. The kernel single-steps
 * most probed instructions out of line (a trap and a second kernel entry, ~17 us in a VM) but
 * emulates a few (jmp, call, jcc, nops, push): moving the probe forward to the first emulated
 * instruction, when nothing skipped changes what the BPF side reads, makes every hit cheaper.
 * The rules are in docs/PLACEMENT.md.
 */
#ifndef MT_PLACEMENT_H
#define MT_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/memtrack.h"

enum mt_placement_mode {
	MT_PLACE_SMART = 0, /* first instruction the kernel emulates, when it is safe (default) */
	MT_PLACE_ENTRY,	    /* the function's first instruction */
};

/* A function the classifier matched (classify.h), and where placement put its probe. */
struct mt_probe_point {
	char symbol[64];       /* the name the table matched (first alias when several) */
	uint64_t func_offset;  /* file offset of the function's entry (what uprobes attach to) */
	uint64_t probe_offset; /* file offset chosen by placement (== func_offset for entry) */
	enum mt_kind kind;     /* what its events record */
	bool ret;	       /* needs a return probe (the result matters) */
	uint8_t role;	 /* enum mt_role: an entry, or a return site of a function that may throw */
	uint8_t layout;	 /* enum mt_call_layout when its arguments are not its kind's, else 0 */
	bool heap_first; /* takes a heap before its kind's arguments (MT_COOKIE_HEAP_FIRST) */
	bool zeroes;	 /* hands out zeroed memory (MT_COOKIE_ZEROES) */
	/* enum mt_unrecorded: each call counted at the entry, nothing recorded (kind MT_K_NONE) */
	uint8_t unrecorded;
	char reason[96]; /* why probe_offset was chosen, e.g. "+3 jcc (emulated) after test" */
};

/* Look at most this many instructions and bytes from the entry for an emulated instruction. */
#define MT_PLACE_MAX_INSNS 16
#define MT_PLACE_MAX_BYTES 64
/* Largest function body scanned for branches back into the skipped prologue. */
#define MT_PLACE_MAX_BODY  (64 * 1024)

/* What the kernel's x86-64 uprobes emulate beyond relative branches and nops, by version. */
struct mt_uprobe_caps {
	bool push; /* push %reg: Linux 4.17 and later */
};

/* Capabilities of the running kernel (from uname). */
void mt_uprobe_caps_detect(struct mt_uprobe_caps *caps);

struct mt_placement {
	uint32_t offset; /* bytes from the function entry */
	char reason[96];
};

/*
 * Decide where to probe a function from its code; args: the argument registers its probe reads
 * (skipped instructions must leave them alone): code[0..len) starts at the
 * entry and should be the whole body (st_size) so branches back into a skipped prologue are
 * seen; with less, only the bytes given are scanned for them. Returns 0, or -ENOMEM when the
 * disassembler cannot be set up (out->offset is then 0).
 */
int mt_place_code(const uint8_t *code, size_t len, bool ret, unsigned int args,
		  const struct mt_uprobe_caps *caps, struct mt_placement *out);

/*
 * Whether decoding code[0..len) instruction by instruction from its start reaches an instruction
 * that starts exactly at target and decodes. false when target falls inside an instruction, or
 * when bytes before it (or at it) do not decode: a boundary must be proven, not assumed.
 */
bool mt_insn_boundary(const uint8_t *code, size_t len, uint64_t target);

/*
 * Whether code[0..len), decoded from its start, runs straight (no branch, call, return or trap,
 * at most MT_PLACE_MAX_INSNS instructions) into a direct jmp: a wrapper that every call leaves
 * through that jmp. *target: the jmp's destination, as an offset from code's start.
 */
bool mt_tail_jump(const uint8_t *code, size_t len, int64_t *target);

/*
 * The reason mt_place_point gives Go's mallocgc when its entry is not Go's stack check: the
 * classifier refuses the point (no offset can count each call once).
 */
#define MT_PLACE_GO_REFUSED "no Go stack check (cmp 0x10(%r14); jbe) at its entry"

/* Argument registers a probe reads, as a mask for mt_place_code's args. */
#define MT_ARG_RDI  0x1
#define MT_ARG_RSI  0x2
#define MT_ARG_RDX  0x4
#define MT_ARG_RCX  0x8
#define MT_ARG_R8   0x10 /* the fourth argument of a function that takes a heap first */
#define MT_ARGS_ALL 0xf

/* The argument registers the BPF side reads for a function of this kind (bpf/memtrack.bpf.c). */
unsigned int mt_kind_args(enum mt_kind kind);
/* The argument registers the BPF side reads for pt: its kind's or layout's, after any heap. */
unsigned int mt_point_args(const struct mt_probe_point *pt);
/*
 * The part of pt's probe cookie that is pt's own (MT_COOKIE's kind byte and the
 * MT_COOKIE_HEAP_FIRST, MT_COOKIE_ZEROES and MT_COOKIE_UNRECORDED bits): what the BPF side decodes
 * its calls by. The linker adds the file.
 */
uint64_t mt_point_cookie(const struct mt_probe_point *pt);

/*
 * Fill pt->probe_offset and pt->reason for a point whose func_offset, kind and ret are set,
 * reading the code from fd. size: the function's st_size (0: unknown), avail: bytes of the
 * executable segment from the entry on. An unreadable body falls back to the entry, with the
 * reason saying so; the return value is 0 or -ENOMEM.
 */
int mt_place_point(int fd, struct mt_probe_point *pt, uint64_t size, uint64_t avail,
		   enum mt_placement_mode mode, const struct mt_uprobe_caps *caps);

#endif
