// SPDX-License-Identifier: GPL-2.0
/*
 * Breakpoint conditions and commands evaluated by the stub (gdb manual, "Packets": Z0's
 * cond_list and cmd_list; "General Query Packets": ConditionalBreakpoints, BreakpointCommands).
 * gdb compiles `break X if COND` into an agent expression and sends it with the breakpoint; a
 * dprintf with `set dprintf-style agent` becomes a printf command. At a hit the target asks
 * mt_gdb_break_reported() whether gdb is to hear of it: a condition that does not hold is
 * decided here, without the round trips of gdb reading registers and memory, removing the
 * breakpoint, stepping and inserting it again (gdbserver's default, "target" condition
 * evaluation). The expressions run in gdbremote_agent.c.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gdbremote/gdbremote_agent.h"
#include "gdbremote/gdbremote_int.h"

/* One expression of a point: its bytecode. */
struct agent_expr {
	uint8_t *code;
	size_t len;
};

struct mt_gdb_point {
	uint64_t addr;
	uint64_t type; /* Z's: 0 software, 1 hardware */
	struct agent_expr *conds, *cmds;
	size_t n_conds, n_cmds;
};

static void free_exprs(struct agent_expr *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(e[i].code);
	free(e);
}

static void point_clear(struct mt_gdb_point *p)
{
	free_exprs(p->conds, p->n_conds);
	free_exprs(p->cmds, p->n_cmds);
	p->conds = p->cmds = NULL;
	p->n_conds = p->n_cmds = 0;
}

void mt_gdb_points_free(struct mt_gdb *g)
{
	for (size_t i = 0; i < g->n_points; i++)
		point_clear(&g->points[i]);
	free(g->points);
	g->points = NULL;
	g->n_points = 0;
}

static struct mt_gdb_point *find_point(struct mt_gdb *g, uint64_t type, uint64_t addr)
{
	for (size_t i = 0; i < g->n_points; i++)
		if (g->points[i].addr == addr && g->points[i].type == type)
			return &g->points[i];
	return NULL;
}

/* Xlen,HEX at *p: one expression, checked, appended to *list. */
static int parse_expr(const char **p, struct agent_expr **list, size_t *n, const char **why)
{
	uint64_t len;
	const char *hex;
	struct agent_expr *grown;
	uint8_t *code;
	int err;

	if (*(*p)++ != 'X' || !mt_gdb_parse_hex(p, &len) || *(*p)++ != ',' || !len ||
	    len > MT_AGENT_MAX_LEN || strnlen(*p, 2 * len) < 2 * len) {
		*why = "a malformed agent expression (Xlen,bytes)";
		return -EINVAL;
	}
	hex = *p;
	*p += 2 * len;
	code = malloc(len);
	if (!code)
		return -ENOMEM;
	err = mt_gdb_decode_hex(hex, 2 * len, code, len) ? mt_agent_check(code, len, why) : -EINVAL;
	grown = err ? NULL : realloc(*list, (*n + 1) * sizeof(**list));
	if (!grown) {
		free(code);
		return err ? err : -ENOMEM;
	}
	*list = grown;
	(*list)[(*n)++] = (struct agent_expr){code, len};
	return 0;
}

/*
 * What follows Z's ADDR,KIND: [;X...[X...]][;cmds:PERSIST,X...[X...]] into p (emptied first).
 * Separators between expressions are optional, as gdb sends them and as gdbserver reads them.
 */
static int parse_options(const char *s, struct mt_gdb_point *p, const char **why)
{
	int err = 0;
	bool cmds = false;

	while (*s && !err) {
		if (*s == ';') {
			s++;
		} else if (mt_gdb_starts(s, "cmds:", &s)) {
			/* persist (0 or 1): the commands outlive gdb's connection; this ends with
			 * it */
			if ((*s != '0' && *s != '1') || s[1] != ',') {
				*why = "a malformed cmds: list";
				return -EINVAL;
			}
			s += 2;
			cmds = true;
		} else if (*s == 'X') {
			err = cmds ? parse_expr(&s, &p->cmds, &p->n_cmds, why)
				   : parse_expr(&s, &p->conds, &p->n_conds, why);
		} else {
			*why = "an unknown breakpoint option";
			return -EINVAL;
		}
	}
	return err;
}

/*
 * Z0/Z1's conditions and commands (opts: what follows ADDR,KIND), checked before the target
 * inserts anything: kept, replacing the point's earlier ones (gdb sends Z again when they
 * change), once the target inserted it (mt_gdb_point_keep()). 0, or a negative errno with why.
 */
int mt_gdb_point_parse(const char *opts, struct mt_gdb_point **out, const char **why)
{
	struct mt_gdb_point *p = calloc(1, sizeof(*p));
	int err;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	err = parse_options(opts, p, why);
	if (err) {
		point_clear(p);
		free(p);
		return err;
	}
	*out = p;
	return 0;
}

/* The point parsed for the breakpoint inserted at addr: kept (consumed), or dropped if empty. */
int mt_gdb_point_keep(struct mt_gdb *g, uint64_t type, uint64_t addr, struct mt_gdb_point *p)
{
	struct mt_gdb_point *old = find_point(g, type, addr), *grown;

	p->type = type;
	p->addr = addr;
	if (old) {
		point_clear(old);
		*old = *p;
	} else if (p->n_conds || p->n_cmds) {
		grown = realloc(g->points, (g->n_points + 1) * sizeof(*grown));
		if (!grown) {
			point_clear(p);
			free(p);
			return -ENOMEM;
		}
		g->points = grown;
		g->points[g->n_points++] = *p;
	}
	free(p);
	return 0;
}

void mt_gdb_point_drop(struct mt_gdb *g, uint64_t type, uint64_t addr)
{
	struct mt_gdb_point *p = find_point(g, type, addr);

	if (!p)
		return;
	point_clear(p);
	*p = g->points[--g->n_points];
}

void mt_gdb_point_discard(struct mt_gdb_point *p)
{
	if (!p)
		return;
	point_clear(p);
	free(p);
}

/* ---- at a hit ---------------------------------------------------------------------------- */

/* A run's view of the stopped thread: its register block, read at the first register asked. */
struct hit {
	struct mt_gdb *g;
	pid_t tid;
	bool have_regs;
};

static int hit_reg(void *ctx, unsigned int regno, uint64_t *value)
{
	struct hit *h = ctx;
	size_t len;
	long off = mt_gdb_reg_offset(h->g->arch, regno, &len);
	int err;

	if (off < 0)
		return -EINVAL;
	if (!h->have_regs) {
		err = h->g->ops->read_regs(h->g->ctx, h->tid, h->g->scratch);
		if (err)
			return err;
		h->have_regs = true;
	}
	*value = 0;
	memcpy(value, h->g->scratch + off, len < sizeof(*value) ? len : sizeof(*value));
	return 0;
}

static int hit_mem(void *ctx, uint64_t addr, uint8_t *buf, size_t len)
{
	struct hit *h = ctx;
	ssize_t n = h->g->ops->read_mem(h->g->ctx, addr, buf, len);

	return n < 0 ? (int)n : (size_t)n == len ? 0 : -EFAULT;
}

/* printf's text to gdb's console, as an O packet while the target runs. */
static int hit_print(void *ctx, const char *text, size_t len)
{
	struct hit *h = ctx;

	if (!len)
		return 0;
	mt_gdb_reply_reset(h->g);
	mt_gdb_reply_str(h->g, "O");
	mt_gdb_reply_hex(h->g, (const uint8_t *)text, len);
	return mt_gdb_send_reply(h->g);
}

static const struct mt_agent_ops hit_ops = {
    .reg = hit_reg,
    .mem = hit_mem,
    .print = hit_print,
};

/* Whether one of the point's conditions holds (true without any); true when one fails to run. */
static bool conditions_hold(struct hit *h, const struct mt_gdb_point *p)
{
	uint64_t v;

	if (!p->n_conds)
		return true;
	for (size_t i = 0; i < p->n_conds; i++)
		if (mt_agent_eval(p->conds[i].code, p->conds[i].len, &hit_ops, h, &v) || v)
			return true;
	return false;
}

bool mt_gdb_break_reported(struct mt_gdb *g, pid_t tid, uint64_t addr, bool hardware)
{
	struct mt_gdb_point *p = find_point(g, hardware ? 1 : 0, addr);
	struct hit h = {g, tid, false};
	uint64_t v;

	if (!p || !g->running)
		return true;
	if (!conditions_hold(&h, p))
		return false;
	if (!p->n_cmds)
		return true;
	/* A dprintf: its commands say what it has to, and gdb hears of nothing. */
	for (size_t i = 0; i < p->n_cmds; i++)
		if (mt_agent_eval(p->cmds[i].code, p->cmds[i].len, &hit_ops, &h, &v))
			break;
	return false;
}
