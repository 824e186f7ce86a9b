/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One row of an unwind table (src/unwind/unwind_table.h builds them, docs/STACKS.md describes
 * them): how to find a frame's caller from any address in [addr, next row's addr). Shared by user
 * space and the BPF unwinder, so the layout is a contract: 8 bytes, no padding, a power of two so
 * that the BPF side indexes a row with a shift and a table of N rows is 8N bytes.
 *
 * x86-64 only: the canonical frame address (CFA) is the caller's rsp, the return address is
 * always at CFA - 8 (the rows of a file where it is not are MT_CFA_UNKNOWN), and the only other
 * register an unwinder needs is rbp, which a frame-pointer caller computes its own CFA from.
 *
 * A CFA offset of 16 bits or fewer (every frame under 64 KiB) fits its row. A larger one takes
 * two rows at the same addr: the rule's row with the offset's low 16 bits, then an MT_CFA_WIDE
 * row with its high 16 bits. The search ("the last row whose addr <= pc") lands on the second,
 * which sends the unwinder one row back: only frames of 64 KiB and more pay a row and a lookup.
 */
#ifndef MT_UNWIND_ROW_H
#define MT_UNWIND_ROW_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* How to compute the CFA: the low nibble of mt_unwind_row.rules. Never renumber. */
enum mt_unwind_cfa {
	MT_CFA_NONE = 0,    /* no CFI covers these addresses: unwind by frame pointer */
	MT_CFA_RSP = 1,	    /* CFA = rsp + cfa_off */
	MT_CFA_RBP = 2,	    /* CFA = rbp + cfa_off */
	MT_CFA_PLT = 3,	    /* lazy PLT: CFA = rsp + cfa_off + ((rip & 15) >= rbp_off ? 8 : 0) */
	MT_CFA_SIGNAL = 4,  /* signal trampoline: rsp points at the kernel's ucontext */
	MT_CFA_END = 5,	    /* the outermost frame (return address undefined): stop here */
	MT_CFA_UNKNOWN = 6, /* an expression, another register or an offset of 4 GiB or more */
	MT_CFA_WIDE = 7,    /* the row before (same addr) is the rule: CFA offset bits 16-31 */
	MT_CFA_CALLER = 8,  /* a program's own code, outside its operator new: the caller, stop */
};

/* Where the caller's rbp is: the high nibble of mt_unwind_row.rules. Never renumber. */
enum mt_unwind_rbp {
	MT_RBP_SAME = 0,    /* not changed by this frame */
	MT_RBP_AT_CFA = 1,  /* saved at CFA + 8 * rbp_off */
	MT_RBP_UNKNOWN = 2, /* saved elsewhere or clobbered: the caller's rbp is lost */
};

struct mt_unwind_row {
	__u32 addr;    /* first address covered, as the file's link-time virtual address */
	__u16 cfa_off; /* bytes added to the CFA's base register; MT_CFA_WIDE: bits 16-31 */
	__u8 rules;    /* enum mt_unwind_cfa | enum mt_unwind_rbp << 4 */
	__s8 rbp_off;  /* MT_RBP_AT_CFA: in 8-byte words; MT_CFA_PLT: the rip & 15 threshold */
};

#define MT_UNW_RULES(cfa, rbp)	    ((__u8)((cfa) | (rbp) << 4))
#define MT_UNW_CFA(row)		    ((row)->rules & 0xf)
#define MT_UNW_RBP(row)		    ((row)->rules >> 4)
/* The CFA offset of a rule row and of the MT_CFA_WIDE row after it. */
#define MT_UNW_WIDE_OFF(rule, wide) ((__u32)(rule)->cfa_off | (__u32)(wide)->cfa_off << 16)

/*
 * The kernel's signal frame, as the trampoline (__restore_rt) sees it: rsp points at the
 * ucontext, whose mcontext (struct sigcontext) holds the interrupted registers at these offsets.
 */
#define MT_SIGFRAME_RBP 120
#define MT_SIGFRAME_RSP 160
#define MT_SIGFRAME_RIP 168

/* ---- the BPF unwinder's maps (bpf/unwind.bpf.h), as user space fills and reads them ---- */

#define MT_UNWIND_MAX_FRAMES 128 /* a power of two: pcs are indexed with a mask */
#define MT_UNWIND_MAX_FILES  4096

/* Why a stack ended (mt_unwind_stack.stop). Never renumber. */
enum mt_unwind_stop {
	MT_UNWIND_COMPLETE = 0,	 /* reached the outermost frame (a row MT_CFA_END) */
	MT_UNWIND_TRUNCATED = 1, /* the frame limit was reached, the stack goes on */
	MT_UNWIND_LOST = 2,	 /* an unknown rule, a pc in no known file, unreadable memory */
};

/* The key of unwind_files: the file's device (kernel encoding, MAJOR << 20 | MINOR) and inode. */
struct mt_unwind_file_key {
	__u64 dev;
	__u64 ino;
};

/* A value of unwind_files. */
struct mt_unwind_file {
	__u32 slot;		  /* the file's rows: unwind_tables[slot] */
	__u32 n_rows;		  /* 0: no table, frame pointer */
	__s64 vaddr_minus_offset; /* the table's exec_vaddr - exec_offset */
	__u32 file_id;		  /* memtrack's id of the file (MT_FRAME) */
	__u32 pad;
};

/*
 * A frame as memtrack records it (mt_unwind_work.normalise): the file the pc lies in and the pc's
 * offset in that file, so that a stack is the same bytes in every process whatever the load
 * addresses, and symbolises after the processes are gone. A pc in no file memtrack knows (JIT
 * code, a file it has no id for) stays an absolute address, whose top 16 bits are 0.
 */
#define MT_FRAME(file_id, offset)                                                                  \
	((((__u64)(file_id) + 1) << 48) | ((__u64)(offset)&MT_FRAME_OFFSET_MASK))
#define MT_FRAME_OFFSET_MASK ((1ULL << 48) - 1)
#define MT_FRAME_IN_FILE(f)  (((f) >> 48) != 0)
#define MT_FRAME_FILE(f)     ((__u32)((f) >> 48) - 1)
#define MT_FRAME_OFFSET(f)   ((f)&MT_FRAME_OFFSET_MASK)

/* A stack: the pc of the probed function, then the return addresses, innermost first. */
struct mt_unwind_stack {
	__u32 n;
	__u32 stop; /* enum mt_unwind_stop */
	__u64 pcs[MT_UNWIND_MAX_FRAMES];
};

#endif
