// SPDX-License-Identifier: GPL-2.0
/*
 * The registers of the served process's parked threads, in gdb's amd64 layout (--gdb,
 * docs/GDB.md).
 */

#include <errno.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include "gdbtarget/gdbtarget_int.h"

/* Both register sets of a parked thread of the served process; -ESRCH when tid is not one. */
static int get_regs(struct mt_gdbt *g, pid_t tid, struct mt_gdbt_thread **t,
		    struct user_regs_struct *r, struct user_fpregs_struct *fp)
{
	*t = gdbt_parked(g, tid);
	if (!*t)
		return -ESRCH;
	if (ptrace(PTRACE_GETREGS, (*t)->tid, 0, r) < 0 ||
	    ptrace(PTRACE_GETFPREGS, (*t)->tid, 0, fp) < 0)
		return -errno;
	return 0;
}

int gdbt_op_read_regs(void *ctx, pid_t tid, uint8_t *buf)
{
	struct user_regs_struct r;
	struct user_fpregs_struct fp;
	struct mt_gdbt_thread *t;
	int err = get_regs(ctx, tid, &t, &r, &fp);

	if (err)
		return err;
	mt_gdb_amd64_from_user(&r, &fp, buf);
	return 0;
}

int gdbt_op_write_regs(void *ctx, pid_t tid, const uint8_t *buf)
{
	struct user_regs_struct r;
	struct user_fpregs_struct fp;
	struct mt_gdbt_thread *t;
	int err = get_regs(ctx, tid, &t, &r, &fp);

	if (err)
		return err;
	mt_gdb_amd64_to_user(buf, &r, &fp);
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) < 0 ||
	    ptrace(PTRACE_SETFPREGS, t->tid, 0, &fp) < 0)
		return -errno;
	return 0;
}
