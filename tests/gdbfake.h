/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fake target of the gdb remote protocol's unit tests (tests/unit_gdbremote*.c): the stub of
 * src/gdbremote/ on a table of callbacks that play one process, and gdb's side of the packets.
 */
#ifndef MT_TEST_GDBFAKE_H
#define MT_TEST_GDBFAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gdbremote/gdbremote.h"

#define MEM_BASE       0x400000u
/* rbp, rsp and rip of the fake's registers (zero), as every stop reply carries them. */
#define FAKE_EXPEDITED "06:0000000000000000;07:0000000000000000;10:0000000000000000;"
#define MEM_SIZE       4096u

/* The fake target: one process with two threads, a page of memory, what it was asked. */
struct fake {
	char out[65536]; /* everything the stub sent */
	size_t out_len;
	uint8_t regs[1024];
	pid_t regs_tid; /* the thread of the last register request */
	uint8_t mem[MEM_SIZE];
	uint64_t breaks[8];
	size_t n_breaks;
	struct mt_gdb_action actions[8];
	size_t n_actions;
	int resumes, interrupts, kills, detaches;
	int shlib_err; /* what qShlibInfoAddr's request returns */
	struct {
		enum mt_gdb_hw_kind kind;
		uint64_t addr;
		size_t len;
	} hw[4];
	size_t n_hw;
	int files_open; /* the fake's one file, "/etc/fake", opened and not closed */
	/* Several processes: the thread of gdb's Hg, the events gdb follows, D;PID and vKill;PID */
	pid_t selected;
	bool follow_fork, follow_vfork, follow_exec;
	pid_t detached_pid, killed_pid;
	int procs_left;	 /* what those two return */
	int catch_calls; /* QCatchSyscalls requests: the last one's on, nrs */
	bool catch_on;
	int catch_nrs[4];
	size_t n_catch;
	const char *name_4d3; /* thread 0x4d3's name (NULL: none, as 0x4d2's) */
};
extern struct fake fake;

/* The stub under test, new for every test (gdbfake_setup: Check's fixture). */
extern struct mt_gdb *stub;

/* The process stopped at its exec, thread 0x4d2 (1234), SIGTRAP; and the stub freed. */
void gdbfake_setup(void);
void gdbfake_teardown(void);
/* The stub made again on a target with several processes (the multiprocess ops). */
void gdbfake_use_processes(void);

/* data framed as a packet into buf: $data#checksum. */
void framed(char *buf, size_t len, const char *data);
/* gdb sends data as a packet; what the stub sent back is returned (and forgotten). */
const char *ask(const char *data);
/* gdb sends len bytes of data (binary, zero bytes included) as a packet. */
const char *ask_bytes(const char *data, size_t len);
/*
 * The acknowledgement and the reply, as gdb must see them (ack: before no-ack mode); reply NULL:
 * none (a resume is answered by the stop, later).
 */
void expect(const char *data, bool ack, const char *reply);
/* The reply's data, checksum checked and the frame taken off (no-ack mode). */
const char *reply_of(const char *data);
/* QStartNoAckMode, acknowledged. */
void no_ack(void);

#endif
