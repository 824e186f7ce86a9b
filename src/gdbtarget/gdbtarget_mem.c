// SPDX-License-Identifier: GPL-2.0
/*
 * gdb's view of the served process's memory (--gdb, docs/GDB.md). Reads show the original bytes
 * under gdb's breakpoints and under memtrack's own uprobes (the kernel writes an int3 there too),
 * and the callers' return addresses where the kernel's uretprobe trampoline replaced them on the
 * stacks, so that gdb disassembles and unwinds what the program really holds; writes leave the
 * int3s and the trampoline's addresses in place. Where memtrack's uprobes are in a process, and
 * the bytes under them, are known here.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <unistd.h>

#include "base/regfile.h"
#include "inspect/procmaps.h"
#include "tracker/tracker.h"
#include "tracker/tracker_returns.h"
#include "gdbtarget/gdbtarget_int.h"

/* ---- where memtrack's uprobes are -------------------------------------------------------- */

struct probe_scan {
	struct mt_gdbt *g;
	struct gdbt_proc *p;
	int err;
};

static int add_probe_byte(struct gdbt_proc *p, uint64_t addr, uint8_t orig)
{
	struct probe_byte *grown = realloc(p->probes, (p->n_probes + 1) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	p->probes = grown;
	p->probes[p->n_probes++] = (struct probe_byte){addr, orig};
	return 0;
}

/*
 * The byte at off of file f, as read once from the file: a file's bytes under memtrack's probes
 * do not change, and the probes are looked up again at each stop of the process (a file may have
 * been mapped while it ran); the reads are kept. *fd: the file, opened at the first miss.
 */
static int file_byte(struct mt_gdbt *g, const struct mt_tracked_file *f, uint64_t off, int *fd,
		     uint8_t *byte)
{
	struct file_byte *grown;

	for (size_t i = 0; i < g->n_file_bytes; i++) {
		if (g->file_bytes[i].off == off &&
		    mt_inode_same_number(&g->file_bytes[i].key, &f->key)) {
			*byte = g->file_bytes[i].byte;
			return 0;
		}
	}
	/* By name, what is there now may be a FIFO: never a wait for its writer. */
	if (*fd < 0)
		*fd = f->fd > 0 ? f->fd : mt_regfile_open(f->path, MT_REGFILE_ONLY, NULL, 0);
	if (*fd < 0 || pread(*fd, byte, 1, (off_t)off) != 1)
		return -EIO;
	grown = realloc(g->file_bytes, (g->n_file_bytes + 1) * sizeof(*grown));
	if (grown) {
		g->file_bytes = grown;
		g->file_bytes[g->n_file_bytes++] = (struct file_byte){f->key, off, *byte};
	}
	return 0;
}

/* The probes of the file mapped at e that fall in it: their addresses and original bytes. */
static int scan_mapping(const struct mt_map_entry *e, void *arg)
{
	struct probe_scan *ps = arg;
	size_t n = mt_tracker_file_count(ps->g->cfg.tracker);

	for (size_t i = 0; i < n; i++) {
		const struct mt_tracked_file *f = mt_tracker_file(ps->g->cfg.tracker, i);
		int fd = -1;

		if (!f->n_points || !mt_inode_same_number(&f->key, &e->key))
			continue;
		for (size_t k = 0; k < f->n_points; k++) {
			uint64_t off = f->points[k].probe_offset;
			uint8_t orig;

			if (off < e->offset || off - e->offset >= e->end - e->start)
				continue;
			if (file_byte(ps->g, f, off, &fd, &orig))
				continue;
			ps->err = add_probe_byte(ps->p, e->start + off - e->offset, orig);
			if (ps->err)
				break;
		}
		if (fd >= 0 && fd != f->fd)
			close(fd);
	}
	return ps->err ? 1 : 0;
}

/* Where memtrack's uprobes are in the process, looked up again when the tracker knows more. */
void gdbt_know_probes(struct mt_gdbt *g, struct gdbt_proc *p)
{
	struct probe_scan ps = {g, p, 0};
	size_t files = g->cfg.tracker ? mt_tracker_file_count(g->cfg.tracker) : 0;

	if (p->probes_known && files == p->probes_files)
		return;
	p->n_probes = 0;
	p->probes_files = files;
	p->probes_known = true;
	if (files)
		mt_procmaps_for_each_exec(p->pid, scan_mapping, &ps);
}

const struct probe_byte *gdbt_find_probe(struct gdbt_proc *p, uint64_t addr)
{
	for (size_t i = 0; i < p->n_probes; i++)
		if (p->probes[i].addr == addr)
			return &p->probes[i];
	return NULL;
}

/* ---- memory ------------------------------------------------------------------------------ */

/*
 * The memory of the process gdb last asked about, kept open: an open and a close fewer at each
 * of gdb's reads and writes and at each breakpoint hit. Forgotten at that process's exec (the
 * descriptor would still read the old memory) and at the session's end (gdbt_forget_mem()).
 */
static struct {
	pid_t pid;
	int fd;
} kept_mem = {0, -1};

void gdbt_forget_mem(pid_t pid)
{
	if (pid && pid != kept_mem.pid)
		return;
	if (kept_mem.fd >= 0)
		close(kept_mem.fd);
	kept_mem.fd = -1;
	kept_mem.pid = 0;
}

/* pid's memory, read and write: kept when keep, else a descriptor for this access. */
static int open_mem(pid_t pid, bool keep)
{
	char path[64];
	int fd;

	if (pid == kept_mem.pid && kept_mem.fd >= 0)
		return kept_mem.fd;
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd >= 0 && keep) {
		gdbt_forget_mem(0);
		kept_mem.pid = pid;
		kept_mem.fd = fd;
	}
	return fd;
}

static void close_mem(int fd)
{
	if (fd != kept_mem.fd)
		close(fd);
}

/* The process's bytes as they are, int3s and all; how many could be read. */
ssize_t gdbt_read_raw(pid_t pid, uint64_t addr, uint8_t *buf, size_t len)
{
	int fd = open_mem(pid, true);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = pread(fd, buf, len, (off_t)addr);
	if (n < 0)
		n = errno == EIO || errno == EFAULT ? 0 : -errno;
	close_mem(fd);
	return n;
}

int gdbt_write_raw(pid_t pid, uint64_t addr, const uint8_t *buf, size_t len)
{
	int fd = open_mem(pid, false); /* kept by a read: a fork's child is written once */
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = pwrite(fd, buf, len, (off_t)addr);
	close_mem(fd);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* ---- return addresses under the uretprobe trampoline ------------------------------------- */

/*
 * The kernel's [uprobes] area of the process, once it exists (the first uprobe hit maps it).
 * Until then, looked for once per stop of the process and once per resume (xol_looked): a
 * memory read asks for every word it holds, and each look is a read of /proc/PID/maps.
 */
static void know_xol(struct gdbt_proc *p)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	FILE *f;

	if (p->xol_end || p->xol_looked)
		return;
	p->xol_looked = true;
	snprintf(path, sizeof(path), "/proc/%d/maps", p->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		struct mt_map_entry e;

		if (mt_procmaps_parse_line(line, &e) == 0 && !strcmp(e.path, "[uprobes]")) {
			p->xol_start = e.start;
			p->xol_end = e.end;
			break;
		}
	}
	free(line);
	fclose(f);
}

bool gdbt_at_trampoline(struct gdbt_proc *p, uint64_t addr)
{
	know_xol(p);
	return addr >= p->xol_start && addr < p->xol_end;
}

static void drop_return(struct gdbt_proc *p, size_t i)
{
	p->rets[i] = p->rets[--p->n_rets];
}

/*
 * A thread about to run the first instruction of a probed function: the return address on top
 * of its stack is the caller's, which the uprobe's handler replaces with the trampoline's when
 * the function has a return probe. Kept, so that gdb unwinds through the call as without
 * memtrack. A return address there already hidden (a ret instruction's probe) is not one.
 */
int gdbt_keep_return(struct mt_gdbt *g, struct mt_gdbt_thread *t)
{
	struct gdbt_proc *p = gdbt_proc_of_thread(g, t);
	struct user_regs_struct r;
	struct hijacked_return *grown;
	uint64_t ra;

	if (!p)
		return 0;
	gdbt_know_probes(g, p);
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0 || !gdbt_find_probe(p, r.rip))
		return 0;
	if (gdbt_read_raw(p->pid, r.rsp, (uint8_t *)&ra, sizeof(ra)) != sizeof(ra) ||
	    gdbt_at_trampoline(p, ra))
		return 0;
	/* Its calls at or below this slot returned: the slot is this call's now. */
	for (size_t i = 0; i < p->n_rets; i++)
		if (p->rets[i].tid == t->tid && p->rets[i].slot <= r.rsp)
			drop_return(p, i--);
	grown = realloc(p->rets, (p->n_rets + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	p->rets = grown;
	p->rets[p->n_rets++] = (struct hijacked_return){t->tid, r.rsp, ra};
	return 0;
}

static void forget_returns_of(struct gdbt_proc *p)
{
	for (size_t i = 0; i < p->n_rets; i++) {
		struct user_regs_struct r;
		uint64_t now;

		/* Popped (the stack pointer above it), or returned through the trampoline. */
		if (ptrace(PTRACE_GETREGS, p->rets[i].tid, 0, &r) < 0 || r.rsp > p->rets[i].slot ||
		    gdbt_read_raw(p->pid, p->rets[i].slot, (uint8_t *)&now, sizeof(now)) !=
			sizeof(now) ||
		    !gdbt_at_trampoline(p, now))
			drop_return(p, i--);
	}
}

void gdbt_forget_returns(struct mt_gdbt *g)
{
	for (size_t i = 0; i < g->n_procs; i++)
		forget_returns_of(g->procs[i]);
}

static struct hijacked_return *find_return(struct gdbt_proc *p, uint64_t slot)
{
	for (size_t i = 0; i < p->n_rets; i++)
		if (p->rets[i].slot == slot)
			return &p->rets[i];
	return NULL;
}

/* Whether buf holds the trampoline's address in a stack slot no return known covers. */
static bool unknown_return(struct gdbt_proc *p, uint64_t addr, const uint8_t *buf, size_t len)
{
	for (uint64_t off = (8 - addr % 8) % 8; off + 8 <= len; off += 8) {
		uint64_t word;

		memcpy(&word, buf + off, sizeof(word));
		if (gdbt_at_trampoline(p, word) && !find_return(p, addr + off))
			return true;
	}
	return false;
}

/*
 * The returns the kernel hid in p's stacks, as it keeps them (tracker_returns.h): for a thread
 * that entered a probed function while it ran (a breakpoint inside malloc reached by continue),
 * which the stub never saw at the entry. Once per stop of the process.
 */
static void know_kernel_returns(struct mt_gdbt *g, struct gdbt_proc *p)
{
	struct mt_hidden_return v[64];
	struct hijacked_return *grown;
	int n;

	if (p->kernel_rets_known || g->hidden_err)
		return;
	p->kernel_rets_known = true;
	if (!g->hidden)
		g->hidden_err = mt_hidden_returns_open(&g->hidden);
	if (g->hidden_err) {
		if (g->cfg.verbose)
			fprintf(
			    stderr,
			    "memtrack: gdb: the kernel's hidden return addresses cannot be read "
			    "(%s): a stack inside an allocator may end at the uretprobe "
			    "trampoline\n",
			    strerror(-g->hidden_err));
		return;
	}
	n = mt_hidden_returns_read(g->hidden, p->pid, v, sizeof(v) / sizeof(v[0]));
	for (int i = 0; i < n; i++) {
		if (find_return(p, v[i].slot))
			continue;
		grown = realloc(p->rets, (p->n_rets + 1) * sizeof(*grown));
		if (!grown)
			return;
		p->rets = grown;
		p->rets[p->n_rets++] = (struct hijacked_return){v[i].tid, v[i].slot, v[i].ra};
	}
}

/* In what gdb reads, the caller's return address wherever the trampoline's stands for it. */
static void unhide_returns(struct mt_gdbt *g, struct gdbt_proc *p, uint64_t addr, uint8_t *buf,
			   size_t len)
{
	if (unknown_return(p, addr, buf, len))
		know_kernel_returns(g, p);
	for (size_t i = 0; i < p->n_rets; i++) {
		uint64_t off = p->rets[i].slot - addr, now;

		if (off >= len || len - off < sizeof(now))
			continue;
		memcpy(&now, buf + off, sizeof(now));
		if (gdbt_at_trampoline(p, now))
			memcpy(buf + off, &p->rets[i].ra, sizeof(now));
	}
}

/* In what gdb writes, the caller's return address stays the trampoline's: the return works. */
static void keep_hidden_returns(struct gdbt_proc *p, uint64_t addr, uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < p->n_rets; i++) {
		uint64_t off = p->rets[i].slot - addr, want, now;

		if (off >= len || len - off < sizeof(want))
			continue;
		memcpy(&want, buf + off, sizeof(want));
		if (want == p->rets[i].ra &&
		    gdbt_read_raw(p->pid, p->rets[i].slot, (uint8_t *)&now, sizeof(now)) ==
			sizeof(now) &&
		    gdbt_at_trampoline(p, now))
			memcpy(buf + off, &now, sizeof(now));
	}
}

/* ---- gdb's reads and writes -------------------------------------------------------------- */

/* The bytes the program holds: the original ones under gdb's breakpoints and memtrack's probes. */
static void unmask(struct mt_gdbt *g, struct gdbt_proc *p, uint64_t addr, uint8_t *buf, size_t len)
{
	gdbt_know_probes(g, p);
	for (size_t i = 0; i < p->n_breaks; i++)
		if (p->breaks[i].addr - addr < len)
			buf[p->breaks[i].addr - addr] = p->breaks[i].orig;
	for (size_t i = 0; i < p->n_probes; i++)
		if (p->probes[i].addr - addr < len)
			buf[p->probes[i].addr - addr] = p->probes[i].orig;
	unhide_returns(g, p, addr, buf, len);
}

ssize_t gdbt_op_read_mem(void *ctx, uint64_t addr, uint8_t *buf, size_t len)
{
	struct mt_gdbt *g = ctx;
	struct gdbt_proc *p = gdbt_cur(g);
	ssize_t n = p ? gdbt_read_raw(p->pid, addr, buf, len) : -ESRCH;

	if (n > 0)
		unmask(g, p, addr, buf, (size_t)n);
	return n;
}

/*
 * gdb writes the program's bytes: under a breakpoint the write becomes the byte restored at its
 * removal, and the int3 stays; under a probe of memtrack's the kernel's int3 stays.
 */
int gdbt_op_write_mem(void *ctx, uint64_t addr, const uint8_t *buf, size_t len)
{
	struct mt_gdbt *g = ctx;
	struct gdbt_proc *p = gdbt_cur(g);
	uint8_t *copy;
	int err;

	if (!p)
		return -ESRCH;
	copy = malloc(len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, buf, len);
	gdbt_know_probes(g, p);
	for (size_t i = 0; i < p->n_breaks; i++) {
		struct gdb_break *b = &p->breaks[i];

		if (b->addr - addr >= len)
			continue;
		if (!b->at_probe)
			b->orig = copy[b->addr - addr];
		copy[b->addr - addr] = b->at_probe ? GDB_INT1 : GDB_INT3;
	}
	for (size_t i = 0; i < p->n_probes; i++)
		if (p->probes[i].addr - addr < len)
			copy[p->probes[i].addr - addr] = GDB_INT3;
	keep_hidden_returns(p, addr, copy, len);
	err = gdbt_write_raw(p->pid, addr, copy, len);
	free(copy);
	return err;
}
