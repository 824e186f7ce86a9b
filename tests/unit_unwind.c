// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of unwind tables (src/unwind/unwind_table.c, src/unwind/unwind_cache.c): every row of
 * readelf's own evaluation of the CFI (--debug-dump=frames-interp, binutils' reader, not libdw)
 * must be what the table says at that address, on the unwind fixtures (fixtures/README.md) and on
 * libc; the fixtures' row counts and chosen rows are exact; errors and the cache behave as
 * documented.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/mtrun.h"
#include "lib/suite.h"
#include "unwind/unwind_cache.h"
#include "unwind/unwind_table.h"
#include "unwind/unwind_walk.h"
#include "unwind/unwind_wrapper.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

/* ---- helpers ---- */

static struct mt_unwind_table build(const char *path)
{
	struct mt_unwind_table t;
	int err = mt_unwind_table_build(path, &t);

	ck_assert_msg(err == 0, "build %s: %s", path, strerror(-err));
	return t;
}

/* The address of a symbol of the file's .symtab, read with nm. */
static uint64_t sym(const char *path, const char *name)
{
	char cmd[512], line[512];
	uint64_t addr = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "nm %s", path);
	f = popen(cmd, "r");
	ck_assert(f);
	while (fgets(line, sizeof(line), f)) {
		char n[256], type;
		uint64_t a;

		if (sscanf(line, "%" SCNx64 " %c %255s", &a, &type, n) == 3 && !strcmp(n, name))
			addr = a;
	}
	pclose(f);
	ck_assert_msg(addr, "%s has no symbol %s", path, name);
	return addr;
}

/* The table's rule at addr as text ("rsp+16 rbp=c-16"). */
static const char *rule_at(const struct mt_unwind_table *t, uint64_t addr)
{
	static char buf[64];
	const struct mt_unwind_row *r = mt_unwind_table_find(t, addr);

	return r ? mt_unwind_row_str(t, r, buf, sizeof(buf)) : "(none)";
}

/* Whether the table's row at loc says what readelf's row says (cfa, rbp, ra columns). */
static bool agrees(const struct mt_unwind_table *t, uint64_t loc, const char *cfa, const char *rbp,
		   const char *ra, char *why, size_t size)
{
	const struct mt_unwind_row *r = mt_unwind_table_find(t, loc);
	unsigned int off;
	int roff;
	char buf[64];
	bool ok;

	if (!r) {
		snprintf(why, size, "%#" PRIx64 ": no row", loc);
		return false;
	}
	if (!strcmp(cfa, "exp") && MT_UNW_CFA(r) == MT_CFA_SIGNAL)
		ok = true; /* the signal frame's registers are all expressions over rsp */
	else if (!strcmp(ra, "u"))
		ok = MT_UNW_CFA(r) == MT_CFA_END;
	else if (strcmp(ra, "c-8"))
		ok = MT_UNW_CFA(r) == MT_CFA_UNKNOWN;
	else if (sscanf(cfa, "rsp+%u", &off) == 1)
		ok = MT_UNW_CFA(r) == MT_CFA_RSP && mt_unwind_table_cfa_off(t, r) == off;
	else if (sscanf(cfa, "rbp+%u", &off) == 1)
		ok = MT_UNW_CFA(r) == MT_CFA_RBP && mt_unwind_table_cfa_off(t, r) == off;
	else /* exp: the PLT's, the signal frame's, or one the row cannot hold */
		ok = MT_UNW_CFA(r) == MT_CFA_PLT || MT_UNW_CFA(r) == MT_CFA_SIGNAL ||
		     MT_UNW_CFA(r) == MT_CFA_UNKNOWN;
	if (ok && (MT_UNW_CFA(r) == MT_CFA_RSP || MT_UNW_CFA(r) == MT_CFA_RBP)) {
		if (sscanf(rbp, "c%d", &roff) == 1)
			ok = MT_UNW_RBP(r) == MT_RBP_AT_CFA && r->rbp_off * 8 == roff;
		else /* u (unspecified: callee-saved, so the same), s, or no column */
			ok = MT_UNW_RBP(r) == MT_RBP_SAME;
	}
	if (!ok)
		snprintf(why, size, "%#" PRIx64 ": readelf %s rbp=%s ra=%s, table %s", loc, cfa,
			 rbp, ra, mt_unwind_row_str(t, r, buf, sizeof(buf)));
	return ok;
}

/* A row of readelf's table: its CFA, rbp and ra columns ("u" where the column is absent). */
struct readelf_row {
	char cfa[24], rbp[24], ra[24];
};

static void readelf_row_parse(char **tok, size_t n, char cols[][16], struct readelf_row *r)
{
	snprintf(r->cfa, sizeof(r->cfa), "?");
	snprintf(r->rbp, sizeof(r->rbp), "u");
	snprintf(r->ra, sizeof(r->ra), "u");
	for (size_t i = 1; i < n; i++) {
		if (!strcmp(cols[i], "CFA"))
			snprintf(r->cfa, sizeof(r->cfa), "%s", tok[i]);
		else if (!strcmp(cols[i], "rbp"))
			snprintf(r->rbp, sizeof(r->rbp), "%s", tok[i]);
		else if (!strcmp(cols[i], "ra"))
			snprintf(r->ra, sizeof(r->ra), "%s", tok[i]);
	}
}

/* What readelf is reading: which CIE or FDE, and where. */
struct readelf_state {
	bool in_fde;
	uint64_t fde_start, fde_end, cie;
	size_t fde_rows;
	char cols[16][16];
	size_t ncols;
	uint64_t cie_off[64]; /* each CIE's initial row, for the FDEs without instructions */
	struct readelf_row cie_row[64];
	size_t n_cies;
};

/* An FDE with no instructions of its own has the rule of its CIE's initial row. */
static size_t readelf_end_entry(struct readelf_state *st, const struct mt_unwind_table *t,
				const char *path)
{
	char why[256];

	if (!st->in_fde || st->fde_rows)
		return 0;
	for (size_t i = 0; i < st->n_cies; i++) {
		const struct readelf_row *r = &st->cie_row[i];

		if (st->cie_off[i] != st->cie)
			continue;
		ck_assert_msg(agrees(t, st->fde_start, r->cfa, r->rbp, r->ra, why, sizeof(why)),
			      "%s: %s", path, why);
		return 1;
	}
	ck_abort_msg("%s: FDE at %#" PRIx64 " with an unknown CIE", path, st->fde_start);
	return 0;
}

/* Take a CIE or FDE header line; false when line is neither. */
static bool readelf_entry(struct readelf_state *st, const char *line)
{
	uint64_t off, cie;

	if (strstr(line, " FDE ") &&
	    sscanf(line, "%" SCNx64 " %*x %*x FDE cie=%" SCNx64 " pc=%" SCNx64 "..%" SCNx64, &off,
		   &cie, &st->fde_start, &st->fde_end) == 4) {
		st->in_fde = true;
		st->cie = cie;
		st->fde_rows = 0;
		return true;
	}
	if (strstr(line, " CIE") && sscanf(line, "%" SCNx64, &off) == 1) {
		ck_assert_uint_lt(st->n_cies, 64);
		st->cie_off[st->n_cies] = off;
		snprintf(st->cie_row[st->n_cies].cfa, 24, "?");
		st->n_cies++;
		st->in_fde = false;
		return true;
	}
	if (strstr(line, "ZERO terminator") || strstr(line, "Contents")) {
		st->in_fde = false;
		st->n_cies = 0; /* CIE offsets are per section */
		return true;
	}
	return false;
}

/*
 * Compare every row readelf prints for the FDEs of path (both CFI sections) with the table, and
 * the CIE's initial row for each FDE that has no instructions. readelf prints a row at an FDE's
 * end address when the last advance reaches it: that row describes nothing and is skipped.
 * Returns the number of rows compared; fails on the first disagreement.
 */
static size_t check_against_readelf(const char *path, const struct mt_unwind_table *t)
{
	struct readelf_state st = {0};
	char cmd[512], line[1024];
	size_t rows = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp %s 2>/dev/null", path);
	f = popen(cmd, "r");
	ck_assert(f);
	while (fgets(line, sizeof(line), f)) {
		char *tok[16], *save, why[256];
		struct readelf_row r;
		size_t n = 0;
		uint64_t loc;

		if (strstr(line, " FDE ") || strstr(line, " CIE") ||
		    strstr(line, "ZERO terminator") || strstr(line, "Contents")) {
			rows += readelf_end_entry(&st, t, path);
			readelf_entry(&st, line);
			continue;
		}
		for (char *p = strtok_r(line, " \n", &save); p && n < 16;
		     p = strtok_r(NULL, " \n", &save))
			tok[n++] = p;
		if (n && !strcmp(tok[0], "LOC")) {
			st.ncols = n;
			for (size_t i = 0; i < n; i++)
				snprintf(st.cols[i], sizeof(st.cols[i]), "%s", tok[i]);
			continue;
		}
		if (n < 2 || n != st.ncols || sscanf(tok[0], "%" SCNx64, &loc) != 1)
			continue;
		readelf_row_parse(tok, n, st.cols, &r);
		if (!st.in_fde) {
			if (st.n_cies)
				st.cie_row[st.n_cies - 1] = r;
			continue;
		}
		st.fde_rows++;
		if (loc >= st.fde_end)
			continue;
		ck_assert_msg(agrees(t, loc, r.cfa, r.rbp, r.ra, why, sizeof(why)), "%s: %s", path,
			      why);
		rows++;
	}
	pclose(f);
	return rows;
}

static size_t count_cfa(const struct mt_unwind_table *t, enum mt_unwind_cfa kind)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n_rows; i++)
		n += MT_UNW_CFA(&t->rows[i]) == kind;
	return n;
}

/*
 * Rows are sorted, and no rule repeats the one before it (adjacent identical rules merge); a
 * wide row follows its rule row, at its address, and only an offset above 16 bits has one.
 */
static void check_shape(const struct mt_unwind_table *t)
{
	size_t wide = 0;

	ck_assert_int_ne(MT_UNW_CFA(&t->rows[0]), MT_CFA_WIDE);
	for (size_t i = 1; i < t->n_rows; i++) {
		const struct mt_unwind_row *a = &t->rows[i - 1], *b = &t->rows[i];

		if (MT_UNW_CFA(b) == MT_CFA_WIDE) {
			ck_assert_msg(a->addr == b->addr && b->cfa_off &&
					  MT_UNW_CFA(a) != MT_CFA_WIDE,
				      "row %zu: a wide row apart from its rule", i);
			wide++;
			continue;
		}
		if (MT_UNW_CFA(a) == MT_CFA_WIDE)
			a--; /* the rule before b */
		ck_assert_msg(a->addr < b->addr, "rows %zu, %zu out of order", i - 1, i);
		ck_assert_msg(a->rules != b->rules ||
				  mt_unwind_table_cfa_off(t, a) != mt_unwind_table_cfa_off(t, b) ||
				  a->rbp_off != b->rbp_off,
			      "rows %zu and %zu are the same rule", i - 1, i);
	}
	ck_assert_uint_eq(t->n_wide, wide);
	ck_assert_int_eq(MT_UNW_CFA(&t->rows[t->n_rows - 1]), MT_CFA_NONE);
}

/* ---- tests ---- */

START_TEST(row_is_eight_bytes)
{
	ck_assert_int_eq(sizeof(struct mt_unwind_row), 8);
}
END_TEST

/* The program built as Debian builds (-O2, no frame pointer): every rule is rsp-based. */
START_TEST(no_frame_pointer_fixture)
{
	const char *path = FIXTURE("unwind_deep");
	struct mt_unwind_table t = build(path);
	uint64_t alloc = sym(path, "alloc_here"), sig = sym(path, "run_signal");

	check_shape(&t);
	ck_assert_uint_eq(t.n_rows, 35);
	ck_assert_uint_eq(t.n_fdes, 9);
	ck_assert_uint_eq(t.n_unknown, 0);
	ck_assert(t.has_eh_frame && !t.has_debug_frame);
	ck_assert_uint_eq(check_against_readelf(path, &t), 27);
	ck_assert_uint_eq(count_cfa(&t, MT_CFA_RBP), 0);
	ck_assert_uint_eq(count_cfa(&t, MT_CFA_PLT), 1);
	ck_assert_uint_eq(count_cfa(&t, MT_CFA_END), 1);
	ck_assert_str_eq(rule_at(&t, sym(path, "_start")), "end");
	ck_assert_str_eq(rule_at(&t, alloc), "rsp+8 rbp=same");
	ck_assert_str_eq(rule_at(&t, alloc + 4), "rsp+16 rbp=same");
	ck_assert_str_eq(rule_at(&t, sig + 7), "rsp+176 rbp=same");
	mt_unwind_table_free(&t);
}
END_TEST

/* The same program with frame pointers: rbp-based rules, rbp saved at CFA-16. */
START_TEST(frame_pointer_fixture)
{
	const char *path = FIXTURE("unwind_deep_fp");
	struct mt_unwind_table t = build(path);
	uint64_t alloc = sym(path, "alloc_here");

	check_shape(&t);
	ck_assert_uint_eq(t.n_rows, 41);
	ck_assert_uint_eq(check_against_readelf(path, &t), 36);
	ck_assert_uint_eq(count_cfa(&t, MT_CFA_RBP), 8);
	ck_assert_str_eq(rule_at(&t, alloc), "rsp+8 rbp=same");
	ck_assert_str_eq(rule_at(&t, alloc + 1), "rsp+16 rbp=c-16");
	ck_assert_str_eq(rule_at(&t, alloc + 9), "rbp+16 rbp=c-16");
	mt_unwind_table_free(&t);
}
END_TEST

/* The program's own functions described in .debug_frame only, crt's in .eh_frame: one table. */
START_TEST(debug_frame_fills_what_eh_frame_lacks)
{
	const char *path = FIXTURE("unwind_debugframe");
	struct mt_unwind_table t = build(path), plain = build(FIXTURE("unwind_deep"));

	check_shape(&t);
	ck_assert(t.has_eh_frame && t.has_debug_frame);
	ck_assert_uint_eq(t.n_rows, plain.n_rows);
	ck_assert_mem_eq(t.rows, plain.rows, t.n_rows * sizeof(*t.rows));
	ck_assert_uint_eq(check_against_readelf(path, &t), 27);
	ck_assert_str_eq(rule_at(&t, sym(path, "alloc_here") + 4), "rsp+16 rbp=same");
	mt_unwind_table_free(&t);
	mt_unwind_table_free(&plain);
}
END_TEST

/* Without .eh_frame_hdr's search table the FDEs are found by walking .eh_frame: same table. */
START_TEST(eh_frame_without_hdr)
{
	const char *path = FIXTURE("unwind_nohdr");
	struct mt_unwind_table t = build(path), plain = build(FIXTURE("unwind_deep"));

	check_shape(&t);
	ck_assert(t.has_eh_frame && !t.has_debug_frame);
	ck_assert_uint_eq(t.n_fdes, plain.n_fdes);
	ck_assert_uint_eq(t.n_rows, plain.n_rows);
	ck_assert_mem_eq(t.rows, plain.rows, t.n_rows * sizeof(*t.rows));
	ck_assert_uint_eq(check_against_readelf(path, &t), 27);
	mt_unwind_table_free(&t);
	mt_unwind_table_free(&plain);
}
END_TEST

START_TEST(shared_libraries)
{
	struct mt_unwind_table t = build(FIXTURE("libmtdeep.so"));
	struct mt_unwind_table fp = build(FIXTURE("libmtdeep_fp.so"));

	check_shape(&t);
	check_shape(&fp);
	ck_assert_uint_eq(t.n_rows, 13);
	ck_assert_uint_eq(fp.n_rows, 15);
	ck_assert_uint_eq(check_against_readelf(FIXTURE("libmtdeep.so"), &t), 10);
	ck_assert_uint_eq(check_against_readelf(FIXTURE("libmtdeep_fp.so"), &fp), 13);
	ck_assert_uint_eq(t.exec_vaddr, 0x1000);
	ck_assert_uint_eq(t.exec_offset, 0x1000);
	ck_assert_uint_gt(t.build_id_len, 0);
	mt_unwind_table_free(&t);
	mt_unwind_table_free(&fp);
}
END_TEST

/* libc: the PLT, the signal trampoline, tens of thousands of rows, all as readelf reads them. */
START_TEST(libc_agrees_with_readelf)
{
	struct mt_unwind_table t = build(LIBC);
	size_t compared;

	check_shape(&t);
	compared = check_against_readelf(LIBC, &t);
	ck_assert_uint_gt(compared, t.n_rows / 2);
	ck_assert_uint_eq(count_cfa(&t, MT_CFA_SIGNAL), 1);
	ck_assert_uint_eq(count_cfa(&t, MT_CFA_PLT), 1);
	ck_assert_uint_eq(t.n_unknown, count_cfa(&t, MT_CFA_UNKNOWN));
	ck_assert_uint_eq(t.n_rbp_lost, 0);
	mt_unwind_table_free(&t);
}
END_TEST

START_TEST(find_is_last_row_at_or_below)
{
	struct mt_unwind_table t = build(FIXTURE("unwind_deep"));
	const struct mt_unwind_row *first = &t.rows[0], *last = &t.rows[t.n_rows - 1];

	ck_assert_ptr_null(mt_unwind_table_find(&t, first->addr - 1));
	ck_assert_ptr_eq(mt_unwind_table_find(&t, first->addr), first);
	ck_assert_ptr_eq(mt_unwind_table_find(&t, t.rows[1].addr - 1), first);
	ck_assert_ptr_eq(mt_unwind_table_find(&t, t.rows[1].addr), &t.rows[1]);
	ck_assert_ptr_eq(mt_unwind_table_find(&t, last->addr + 100000), last);
	ck_assert_ptr_null(mt_unwind_table_find(&t, (uint64_t)1 << 40));
	mt_unwind_table_free(&t);
}
END_TEST

static struct mt_unwind_row row_of(uint32_t addr, int cfa, uint16_t off)
{
	return (struct mt_unwind_row){.addr = addr, .cfa_off = off, .rules = MT_UNW_RULES(cfa, 0)};
}

static void assert_row(const struct mt_unwind_row *r, uint32_t addr, int cfa, uint16_t off)
{
	ck_assert_msg(r->addr == addr && MT_UNW_CFA(r) == cfa && r->cfa_off == off,
		      "row %#x rule %d offset %u, not %#x %d %u", r->addr, MT_UNW_CFA(r),
		      r->cfa_off, addr, cfa, off);
}

/*
 * A program's table cut down to its operator new: the rule in force where a range starts (both
 * rows of a wide one), the rows inside it, a caller row after it and before the first; ranges
 * that overlap are one run of rows.
 */
START_TEST(wrapper_table_keeps_operator_new_rows_only)
{
	struct mt_unwind_row rows[] = {
	    row_of(0x1000, MT_CFA_RSP, 8),  row_of(0x1004, MT_CFA_RSP, 16),
	    row_of(0x1010, MT_CFA_RSP, 8),  row_of(0x2000, MT_CFA_RSP, 0),
	    row_of(0x2000, MT_CFA_WIDE, 1), row_of(0x2100, MT_CFA_RSP, 8),
	};
	struct mt_unwind_table t = {.rows = rows, .n_rows = 6}, cut;
	struct mt_unwind_wrapper w = {.n = 3, .program = true};

	w.lo[0] = 0x2040, w.hi[0] = 0x2080; /* inside the wide rule */
	w.lo[1] = 0x1002, w.hi[1] = 0x1008;
	w.lo[2] = 0x1006, w.hi[2] = 0x1012; /* overlaps the second */
	ck_assert_int_eq(mt_unwind_wrapper_table(&t, &w, &cut), 0);
	ck_assert_uint_eq(cut.n_rows, 8);
	assert_row(&cut.rows[0], 0, MT_CFA_CALLER, 0);
	assert_row(&cut.rows[1], 0x1002, MT_CFA_RSP, 8);
	assert_row(&cut.rows[2], 0x1004, MT_CFA_RSP, 16);
	assert_row(&cut.rows[3], 0x1010, MT_CFA_RSP, 8);
	assert_row(&cut.rows[4], 0x1012, MT_CFA_CALLER, 0);
	assert_row(&cut.rows[5], 0x2040, MT_CFA_RSP, 0);
	assert_row(&cut.rows[6], 0x2040, MT_CFA_WIDE, 1);
	assert_row(&cut.rows[7], 0x2080, MT_CFA_CALLER, 0);
	/* What the BPF search finds: the caller row past operator new and before it. */
	ck_assert_int_eq(MT_UNW_CFA(mt_unwind_table_find(&cut, 0x1fff)), MT_CFA_CALLER);
	ck_assert_int_eq(MT_UNW_CFA(mt_unwind_table_find(&cut, 0x0500)), MT_CFA_CALLER);
	mt_unwind_table_free(&cut);
}
END_TEST

/* operator new in a program that exports it (as cc1), and in libstdc++, a library. */
START_TEST(wrapper_found_in_programs_and_libraries)
{
	struct mt_unwind_wrapper w;
	int fd = open(FIXTURE("stacks_cxx_linked"), O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	mt_unwind_wrapper_find(fd, &w);
	close(fd);
	ck_assert_uint_ge(w.n, 1);
	ck_assert(w.program);
	for (size_t i = 0; i < w.n; i++)
		ck_assert_uint_gt(w.hi[i], w.lo[i]);
	fd = open(FIXTURE("stacks"), O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	mt_unwind_wrapper_find(fd, &w);
	close(fd);
	ck_assert_uint_eq(w.n, 0);
}
END_TEST

/*
 * A 1 MiB frame (stk_bigframe): its CFA offset, rsp + 1 MiB + 16, is two rows at one address,
 * the rule with the low 16 bits and a wide row with the high ones; the search gives the rule.
 */
START_TEST(wide_offset_takes_a_second_row)
{
	const char *path = FIXTURE("stk_bigframe");
	struct mt_unwind_table t = build(path);
	uint64_t big = sym(path, "stk_big_frame");
	const struct mt_unwind_row *rule, *wide;
	size_t i = 0;

	check_shape(&t);
	ck_assert_uint_eq(t.n_wide, 1);
	ck_assert_uint_eq(t.n_unknown, 0);
	check_against_readelf(path, &t);
	while (MT_UNW_CFA(&t.rows[i]) != MT_CFA_WIDE)
		i++;
	rule = &t.rows[i - 1];
	wide = &t.rows[i];
	ck_assert_uint_eq(rule->addr, wide->addr);
	ck_assert_int_eq(MT_UNW_CFA(rule), MT_CFA_RSP);
	ck_assert_uint_eq(rule->cfa_off, ((1 << 20) + 16) & 0xffff);
	ck_assert_uint_eq(wide->cfa_off, ((1 << 20) + 16) >> 16);
	ck_assert_uint_eq(MT_UNW_WIDE_OFF(rule, wide), (1 << 20) + 16);
	ck_assert_uint_gt(rule->addr, big);
	ck_assert_ptr_eq(mt_unwind_table_find(&t, rule->addr), rule);
	ck_assert_ptr_eq(mt_unwind_table_find(&t, t.rows[i + 1].addr - 1), rule);
	ck_assert_ptr_eq(mt_unwind_table_find(&t, t.rows[i + 1].addr), &t.rows[i + 1]);
	ck_assert_uint_eq(mt_unwind_table_cfa_off(&t, rule), (1 << 20) + 16);
	ck_assert_str_eq(rule_at(&t, big), "rsp+8 rbp=same");
	ck_assert_str_eq(rule_at(&t, rule->addr), "rsp+1048592 rbp=same");
	mt_unwind_table_free(&t);
}
END_TEST

/* Memory of the walk below: 8-byte words from WALK_BASE. */
#define WALK_BASE  0x7f0000000000ULL
#define WALK_WORDS ((3 << 20) / 8)

static int read_words(void *arg, uint64_t addr, uint64_t *val)
{
	const uint64_t *mem = arg;

	if (addr < WALK_BASE || addr % 8 || (addr - WALK_BASE) / 8 >= WALK_WORDS)
		return -EFAULT;
	*val = mem[(addr - WALK_BASE) / 8];
	return 0;
}

/*
 * The reference unwinder through a wide rule, on a made-up table and stack: a frame of 2 MiB +
 * 24 bytes above rsp, whose return address leads to an outermost frame.
 */
START_TEST(walk_reads_the_wide_offset)
{
	const uint32_t off = (2 << 20) + 24;
	struct mt_unwind_row rows[] = {
	    {.addr = 0x1000,
	     .cfa_off = off & 0xffff,
	     .rules = MT_UNW_RULES(MT_CFA_RSP, MT_RBP_SAME)},
	    {.addr = 0x1000, .cfa_off = off >> 16, .rules = MT_UNW_RULES(MT_CFA_WIDE, MT_RBP_SAME)},
	    {.addr = 0x1100, .rules = MT_UNW_RULES(MT_CFA_END, MT_RBP_SAME)},
	    {.addr = 0x1200, .rules = MT_UNW_RULES(MT_CFA_NONE, MT_RBP_SAME)},
	};
	struct mt_unwind_table t = {.rows = rows, .n_rows = 4, .exec_vaddr = 0, .exec_offset = 0};
	struct mt_unwind_map map = {.start = 0x400000, .end = 0x402000, .offset = 0, .table = &t};
	struct mt_unwind_regs regs = {.rip = 0x401010, .rsp = WALK_BASE + 64, .rbp = 0};
	uint64_t *mem = calloc(WALK_WORDS, sizeof(*mem)), pcs[8];
	enum mt_unwind_stop why;
	size_t n;

	ck_assert_ptr_nonnull(mem);
	mem[(regs.rsp + off - 8 - WALK_BASE) / 8] = 0x401105; /* the caller, in the END row */
	n = mt_unwind_walk(&map, 1, &regs, read_words, mem, pcs, 8, &why);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(pcs[0], 0x401010);
	ck_assert_uint_eq(pcs[1], 0x401105);
	ck_assert_int_eq(why, MT_UNWIND_COMPLETE);
	/* The rule row alone, without its wide row, reads 24 bytes up: a 0 there ends the stack. */
	t.n_rows = 1;
	n = mt_unwind_walk(&map, 1, &regs, read_words, mem, pcs, 8, &why);
	ck_assert_uint_eq(n, 1);
	free(mem);
}
END_TEST

START_TEST(files_without_tables_say_why)
{
	struct mt_unwind_table t;
	char path[] = "/tmp/mt-unwind-XXXXXX";
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "not an ELF file\n", 16), 16);
	close(fd);
	ck_assert_int_eq(mt_unwind_table_build(FIXTURE("libnocfi.so"), &t), -ENODATA);
	ck_assert_uint_eq(t.n_rows, 0);
	ck_assert_int_eq(mt_unwind_table_build(path, &t), -ENOEXEC);
	ck_assert_int_eq(mt_unwind_table_build("/nonexistent/lib.so", &t), -ENOENT);
	unlink(path);
}
END_TEST

/* One build per build id: the same file again, or a copy elsewhere, is answered from the cache. */
START_TEST(cache_by_build_id)
{
	struct mt_unwind_cache *c = mt_unwind_cache_new();
	const struct mt_unwind_table *a, *b, *n;
	char dir[64], copy[128], cmd[512];

	mt_tmpdir(dir);
	snprintf(copy, sizeof(copy), "%s/libcopy.so", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", FIXTURE("libmtdeep.so"), copy);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(mt_unwind_cache_get(c, FIXTURE("libmtdeep.so"), &a), 0);
	ck_assert_int_eq(mt_unwind_cache_get(c, copy, &b), 0);
	ck_assert_ptr_eq(a, b);
	ck_assert_int_eq(mt_unwind_cache_get(c, FIXTURE("libmtdeep_fp.so"), &b), 0);
	ck_assert_ptr_ne(a, b);
	ck_assert_int_eq(mt_unwind_cache_get(c, FIXTURE("libnocfi.so"), &n), -ENODATA);
	ck_assert_int_eq(mt_unwind_cache_get(c, FIXTURE("libnocfi.so"), &n), -ENODATA);
	ck_assert_uint_eq(n->n_rows, 0);
	ck_assert_int_eq(mt_unwind_cache_get(c, "/nonexistent/lib.so", &n), -ENOENT);
	ck_assert_uint_eq(mt_unwind_cache_builds(c), 3);
	ck_assert_uint_eq(mt_unwind_cache_hits(c), 2);
	ck_assert_uint_eq(a->n_rows, 13); /* still valid after more entries were added */
	mt_unwind_cache_free(c);
	unlink(copy);
	rmdir(dir);
}
END_TEST

static Suite *unwind_suite(void)
{
	Suite *s = suite_create("unwind");
	TCase *tc = tcase_create("tables");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, row_is_eight_bytes);
	tcase_add_test(tc, no_frame_pointer_fixture);
	tcase_add_test(tc, frame_pointer_fixture);
	tcase_add_test(tc, debug_frame_fills_what_eh_frame_lacks);
	tcase_add_test(tc, eh_frame_without_hdr);
	tcase_add_test(tc, shared_libraries);
	tcase_add_test(tc, libc_agrees_with_readelf);
	tcase_add_test(tc, find_is_last_row_at_or_below);
	tcase_add_test(tc, wide_offset_takes_a_second_row);
	tcase_add_test(tc, wrapper_table_keeps_operator_new_rows_only);
	tcase_add_test(tc, wrapper_found_in_programs_and_libraries);
	tcase_add_test(tc, walk_reads_the_wide_offset);
	tcase_add_test(tc, files_without_tables_say_why);
	tcase_add_test(tc, cache_by_build_id);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(unwind_suite());
}
