// SPDX-License-Identifier: GPL-2.0
/*
 * A suppressions file read (suppress_parse.h), memcheck's syntax line by line: blank lines and
 * lines starting with '#' are passed over and every line is trimmed, as Valgrind reads them.
 *
 *   {
 *      NAME
 *      TOOL[,TOOL...]:KIND            Memcheck:Leak is kept; others are set aside
 *      match-leak-kinds: LIST         optional: definite,indirect,possible,reachable|all|none
 *      fun:GLOB | obj:GLOB | src:GLOB[:LINE] | ...     1 to 24 frame lines
 *   }
 *
 * A suppression of another tool, or of another memcheck kind (Cond, Addr8, Param, ...), is read
 * to its "}" and not used, so that one file serves both memcheck and memtrack; a memcheck kind
 * that memcheck does not have is a mistake (a misspelt Leak would hide nothing) and refused.
 */

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aggregate/suppress_parse.h"
#include "base/errbuf.h"
#include "base/grow.h"
#include "base/printable.h"
#include "base/regfile.h"
#include "base/strv.h"
#include "writer/artifact.h"

#define ALL_KINDS                                                                                  \
	((1u << MT_LEAK_DEFINITE) | (1u << MT_LEAK_INDIRECT) | (1u << MT_LEAK_POSSIBLE) |          \
	 (1u << MT_LEAK_REACHABLE))

/* The largest suppressions file read: far more than any real one. */
#define MAX_FILE (64u << 20)

struct parser {
	struct mt_suppressions *ss;
	const char *name;
	char *p, *end; /* the text left, a copy ending in '\0' that lines are cut out of */
	unsigned int lineno;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int fail(struct parser *ps, const char *fmt, ...)
{
	char msg[1024], p[MT_PRINTABLE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return mt_errbuf(ps->err, ps->errlen, "%s:%u: %s", mt_printable(p, sizeof(p), ps->name),
			 ps->lineno, msg);
}

/* A line of the file as a sentence quotes it: printable, and cut when long. */
static const char *quote(char *buf, size_t n, const char *line)
{
	char p[MT_PRINTABLE_MAX];
	const char *s = mt_printable(p, sizeof(p), line);

	snprintf(buf, n, "%.*s%s", 120, s, strlen(s) > 120 ? "..." : "");
	return buf;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* The next line that is neither blank nor a comment, trimmed; NULL at the end of the text. */
static char *next_line(struct parser *ps)
{
	while (ps->p < ps->end) {
		char *line = ps->p, *nl = memchr(line, '\n', (size_t)(ps->end - line));

		if (nl)
			*nl = '\0';
		ps->p = nl ? nl + 1 : ps->end;
		ps->lineno++;
		line = trim(line);
		if (*line && *line != '#')
			return line;
	}
	return NULL;
}

/* The kinds memcheck's suppressions have (mc_errors.c), Leak among them. */
static bool memcheck_kind(const char *k)
{
	static const char *const kinds[] = {
	    "Param",	"User",	   "CoreMem",	   "Addr1",	    "Addr2",	  "Addr4",
	    "Addr8",	"Addr16",  "Addr32",	   "Jump",	    "Free",	  "Leak",
	    "Overlap",	"Mempool", "Cond",	   "Value0",	    "Value1",	  "Value2",
	    "Value4",	"Value8",  "Value16",	   "Value32",	    "FishyValue", "ReallocZero",
	    "BadAlign", "BadSize", "SizeMismatch", "AlignMismatch",
	};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(k, kinds[i]))
			return true;
	return false;
}

/* Whether Memcheck is one of the tools of "TOOL,TOOL:KIND" (its part before the colon). */
static bool for_memcheck(const char *tools, size_t len)
{
	while (len) {
		const char *comma = memchr(tools, ',', len);
		size_t n = comma ? (size_t)(comma - tools) : len;

		if (n == 8 && !memcmp(tools, "Memcheck", 8))
			return true;
		if (!comma)
			break;
		len -= n + 1;
		tools = comma + 1;
	}
	return false;
}

/*
 * The TOOL:KIND line: 1 for Memcheck:Leak, 0 for a suppression set aside, or the error.
 */
static int tool_kind(struct parser *ps, const char *line)
{
	const char *colon = strchr(line, ':');
	char q[160];

	if (!colon || colon == line || !colon[1])
		return fail(ps, "'%s' is not a TOOL:KIND line (Memcheck:Leak for a leak)",
			    quote(q, sizeof(q), line));
	if (!for_memcheck(line, (size_t)(colon - line)))
		return 0;
	if (!memcheck_kind(colon + 1))
		return fail(ps, "memcheck has no suppression kind '%s' (a leak's is Memcheck:Leak)",
			    quote(q, sizeof(q), colon + 1));
	return !strcmp(colon + 1, "Leak");
}

/* match-leak-kinds: definite,indirect,possible,reachable, or all, or none. */
static int leak_kinds(struct parser *ps, char *list, unsigned int *kinds)
{
	static const char *const names[] = {
	    [MT_LEAK_DEFINITE] = "definite",
	    [MT_LEAK_INDIRECT] = "indirect",
	    [MT_LEAK_POSSIBLE] = "possible",
	    [MT_LEAK_REACHABLE] = "reachable",
	};
	char *save = NULL, *w, q[160];

	list = trim(list);
	*kinds = 0;
	if (!strcmp(list, "all") || !strcmp(list, "none")) {
		*kinds = *list == 'a' ? ALL_KINDS : 0;
		return 0;
	}
	for (w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		unsigned int k;

		w = trim(w);
		for (k = MT_LEAK_DEFINITE; k <= MT_LEAK_CLASSES && strcmp(w, names[k]); k++)
			;
		if (k > MT_LEAK_CLASSES)
			return fail(ps,
				    "match-leak-kinds takes definite, indirect, possible and "
				    "reachable, separated by commas, or all or none, not '%s'",
				    quote(q, sizeof(q), w));
		*kinds |= 1u << k;
	}
	if (!*kinds)
		return fail(ps, "match-leak-kinds names no kind (all, none, or definite, ...)");
	return 0;
}

/* "src:FILE:LINE": the line number cut off the pattern, when there is one. */
static int src_line(struct parser *ps, char *pat, unsigned int *line)
{
	char *colon = strrchr(pat, ':'), *end, q[160];
	unsigned long v;

	*line = 0;
	if (!colon)
		return 0;
	v = strtoul(colon + 1, &end, 10);
	if (colon[1] < '0' || colon[1] > '9' || *end || !v || v > 0xffffffffu)
		return fail(ps, "src: takes FILE or FILE:LINE (a line number from 1), not '%s'",
			    quote(q, sizeof(q), pat));
	*colon = '\0';
	*line = (unsigned int)v;
	return 0;
}

static int add_frame(struct parser *ps, struct mt_supp *sp, char *line)
{
	static const char *const prefixes[] = {
	    [MT_SUPP_FUN] = "fun:", [MT_SUPP_OBJ] = "obj:", [MT_SUPP_SRC] = "src:"};
	struct mt_supp_frame *f = &sp->frames[sp->n_frames];
	char q[160];
	int err;

	if (sp->n_frames == MT_SUPP_MAX_FRAMES)
		return fail(ps, "more than %d frame lines in one suppression (memcheck's limit)",
			    MT_SUPP_MAX_FRAMES);
	if (!strcmp(line, "...")) {
		*f = (struct mt_supp_frame){.kind = MT_SUPP_DOTS};
		sp->n_frames++;
		return 0;
	}
	for (int k = MT_SUPP_FUN; k <= MT_SUPP_SRC; k++) {
		char *pat = line + 4;

		if (strncmp(line, prefixes[k], 4))
			continue;
		if (!*pat)
			return fail(ps, "'%s' needs a pattern after its colon", prefixes[k]);
		err = k == MT_SUPP_SRC ? src_line(ps, pat, &f->line) : 0;
		if (err)
			return err;
		f->kind = k;
		f->pattern = strdup(pat);
		if (!f->pattern)
			return -ENOMEM;
		sp->n_frames++;
		return 0;
	}
	return fail(ps,
		    "'%s' is not a frame line: fun:NAME, obj:PATH, src:FILE[:LINE] or ... "
		    "(or '}' to end the suppression)",
		    quote(q, sizeof(q), line));
}

static void free_supp(struct mt_supp *sp)
{
	free(sp->name);
	for (size_t i = 0; i < sp->n_frames; i++)
		free(sp->frames[i].pattern);
}

static int unclosed(struct parser *ps, unsigned int open)
{
	return fail(ps, "the suppression opened at line %u has no '}'", open);
}

/* A suppression set aside: its lines up to "}". */
static int skip_rest(struct parser *ps, unsigned int open)
{
	char *line;

	while ((line = next_line(ps)) && strcmp(line, "}"))
		if (!strcmp(line, "{"))
			return unclosed(ps, open);
	if (!line)
		return unclosed(ps, open);
	ps->ss->skipped++;
	return 0;
}

/* The lines of a Memcheck:Leak suppression after its kind's, into sp. */
static int leak_lines(struct parser *ps, struct mt_supp *sp, unsigned int open)
{
	char *line = next_line(ps);
	int err = 0;

	if (line && !strncmp(line, "match-leak-kinds:", 17)) {
		err = leak_kinds(ps, line + 17, &sp->kinds);
		line = next_line(ps);
	}
	for (; !err && line && strcmp(line, "}"); line = next_line(ps))
		err = !strcmp(line, "{") ? unclosed(ps, open) : add_frame(ps, sp, line);
	if (err)
		return err;
	if (!line)
		return unclosed(ps, open);
	if (!sp->n_frames)
		return fail(ps,
			    "the suppression opened at line %u has no frame line (fun:, obj:, "
			    "src: or ...)",
			    open);
	return 0;
}

/* One suppression, its "{" read at line open. */
static int parse_one(struct parser *ps, unsigned int open)
{
	struct mt_supp sp = {.kinds = ALL_KINDS, .file = ps->ss->n_files - 1};
	char *name = next_line(ps), *kind;
	int err;

	if (!name)
		return unclosed(ps, open);
	sp.line = ps->lineno; /* memcheck's used_suppression names the line of the name */
	if (!strcmp(name, "}") || !strcmp(name, "{"))
		return fail(ps, "the suppression opened at line %u has no name (its first line)",
			    open);
	sp.name = strdup(name);
	if (!sp.name)
		return -ENOMEM;
	kind = next_line(ps);
	err = !kind ? unclosed(ps, open) : tool_kind(ps, kind);
	if (err == 0)
		err = skip_rest(ps, open);
	else if (err == 1)
		err = leak_lines(ps, &sp, open);
	if (!err && sp.n_frames)
		err = MT_GROW(ps->ss->v, ps->ss->cap, ps->ss->n + 1, 16);
	if (err || !sp.n_frames) {
		free_supp(&sp);
		return err;
	}
	ps->ss->v[ps->ss->n++] = sp;
	return 0;
}

static int parse_all(struct parser *ps)
{
	char *line, q[160];
	int err;

	while ((line = next_line(ps))) {
		if (strcmp(line, "{"))
			return fail(ps,
				    "'%s' is outside a suppression: each starts with a '{' line",
				    quote(q, sizeof(q), line));
		err = parse_one(ps, ps->lineno);
		if (err)
			return err;
	}
	return 0;
}

/* The suppressions from index n on, and the last file, taken back after an error. */
static void roll_back(struct mt_suppressions *ss, size_t n, size_t skipped)
{
	while (ss->n > n)
		free_supp(&ss->v[--ss->n]);
	ss->skipped = skipped;
	free(ss->files[--ss->n_files]);
}

int mt_supp_parse(struct mt_suppressions *ss, const char *name, const char *buf, size_t len,
		  char *err, size_t errlen)
{
	struct parser ps = {.ss = ss, .name = name, .err = err, .errlen = errlen};
	size_t n = ss->n, skipped = ss->skipped;
	const char *nul = memchr(buf, '\0', len);
	char *text;
	int ret;

	if (nul) {
		for (const char *c = buf; c < nul; c++)
			ps.lineno += *c == '\n';
		ps.lineno++;
		return fail(&ps, "a NUL byte: a suppressions file is text");
	}
	text = malloc(len + 1);
	if (!text)
		return -ENOMEM;
	memcpy(text, buf, len);
	text[len] = '\0';
	ps.p = text;
	ps.end = text + len;
	ret = mt_strv_add(&ss->files, &ss->n_files, name);
	if (ret) {
		free(text);
		return ret;
	}
	ret = parse_all(&ps);
	if (ret)
		roll_back(ss, n, skipped);
	free(text);
	return ret;
}

int mt_supp_read(struct mt_suppressions *ss, const char *path, char *err, size_t errlen)
{
	char p[MT_PRINTABLE_MAX], why[256], *buf = NULL;
	size_t len = 0, cap = 0, got;
	/* /dev/null (no suppressions) and the stdin the shell gave (< FILE) are read too. */
	int ret = 0, fd = mt_regfile_open(path, MT_REGFILE_DEV_NULL | MT_REGFILE_OWN_STREAM, why,
					  sizeof(why));
	FILE *f = fd < 0 ? NULL : fdopen(fd, "r");

	if (fd >= 0 && !f) {
		int e = errno;

		snprintf(why, sizeof(why), "%s", strerror(e));
		close(fd);
		fd = -e;
	}
	if (!f) {
		mt_errbuf(err, errlen, "%s: cannot read the suppressions: %s",
			  mt_printable(p, sizeof(p), path), why);
		return fd;
	}
	do {
		if (MT_GROW(buf, cap, len + 65536, 65536)) {
			ret = -ENOMEM;
			break;
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
	} while (got && len <= MAX_FILE);
	if (!ret && ferror(f))
		ret = mt_errbuf(err, errlen, "%s: cannot read the suppressions: %s",
				mt_printable(p, sizeof(p), path), strerror(errno));
	else if (!ret && len > MAX_FILE)
		ret = mt_errbuf(err, errlen, "%s: more than %u MiB: not a suppressions file",
				mt_printable(p, sizeof(p), path), MAX_FILE >> 20);
	else if (!ret)
		ret = mt_supp_parse(ss, path, buf, len, err, errlen);
	fclose(f);
	free(buf);
	return ret;
}

struct mt_suppressions *mt_supp_new(void)
{
	return calloc(1, sizeof(struct mt_suppressions));
}

void mt_supp_free(struct mt_suppressions *ss)
{
	if (!ss)
		return;
	for (size_t i = 0; i < ss->n; i++)
		free_supp(&ss->v[i]);
	free(ss->v);
	mt_strv_free(ss->files, ss->n_files);
	free(ss);
}
