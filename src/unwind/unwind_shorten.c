// SPDX-License-Identifier: GPL-2.0
/*
 * Short function names (unwind_shorten.h). One pass over the name at its top level: each
 * bracketed group is found by its pair, then kept, elided or shortened inside (a parameter
 * list, a Rust qualified path), to a bounded depth; the output is a buffer that can be rewound,
 * so that a parameter list is written shortened first and replaced by "(...)" when too long.
 */
#include <stdbool.h>
#include <string.h>

#include "unwind/unwind_shorten.h"

/* Groups shortened inside one another past this depth are kept as they are. */
#define MAX_DEPTH 32

struct out {
	char *buf;
	size_t n;   /* bytes of buf, the last one for the NUL */
	size_t len; /* bytes written (at most n - 1) */
};

static void put(struct out *o, const char *s, size_t k)
{
	size_t room = o->n - 1 - o->len;

	k = k < room ? k : room;
	memcpy(o->buf + o->len, s, k);
	o->len += k;
}

static bool is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '$' || c == '.';
}

/* The operators' symbols, longer first where one begins another. */
static const char *const operator_symbols[] = {
    "()", "[]", "<<=", ">>=", "<=>", "->*", "<<", ">>", "<=", ">=", "==", "!=", "&&",
    "||", "++", "--",  "->",  "+=",  "-=",  "*=", "/=", "%=", "&=", "|=", "^=", "<",
    ">",  "+",	"-",   "*",   "/",   "%",   "^",  "&",	"|",  "~",  "!",  "=",	",",
};

/*
 * The length of an operator's name at s[i] ("operator<<", "operator()", "operator->*"), whose
 * symbols are no brackets; 0 when no operator starts there. Its symbol is one operator's, the
 * longest that fits: "operator+<char>" is operator+ and its template arguments. "operator new"
 * and a conversion operator ("operator bool") are words: only "operator" is taken.
 */
static size_t operator_len(const char *s, size_t len, size_t i)
{
	static const char word[] = "operator";
	size_t k = sizeof(word) - 1, j;

	if (len - i < k || memcmp(s + i, word, k) || (i && is_ident(s[i - 1])))
		return 0;
	j = i + k;
	if (j < len && is_ident(s[j]))
		return 0;
	for (size_t o = 0; o < sizeof(operator_symbols) / sizeof(operator_symbols[0]); o++) {
		size_t n = strlen(operator_symbols[o]);

		if (len - j >= n && !memcmp(s + j, operator_symbols[o], n))
			return k + n;
	}
	return k;
}

static char closer(char c)
{
	return c == '<' ? '>' : c == '(' ? ')' : c == '[' ? ']' : '}';
}

/* The index of the bracket that closes the one at s[i]; len when none does. */
static size_t pair_of(const char *s, size_t len, size_t i)
{
	char stack[256];
	size_t depth = 0;

	for (size_t j = i; j < len; j++) {
		size_t op = operator_len(s, len, j);

		if (op) {
			j += op - 1;
			continue;
		}
		if (strchr("<([{", s[j]) && s[j]) {
			if (depth == sizeof(stack))
				return len;
			stack[depth++] = closer(s[j]);
		} else if (strchr(">)]}", s[j]) && s[j]) {
			if (!depth || stack[depth - 1] != s[j])
				return len;
			if (!--depth)
				return j;
		}
	}
	return len;
}

/* No list or parenthesis inside: a template argument list that can be read at a glance. */
static bool flat(const char *s, size_t len)
{
	for (size_t j = 0; j < len; j++)
		if (s[j] == '<' || s[j] == '(')
			return false;
	return true;
}

static void shorten(struct out *o, const char *s, size_t len, int depth);

/* The group s[i .. j] (its brackets included) as the rules say. */
static void group(struct out *o, const char *s, size_t i, size_t j, int depth)
{
	const char *inner = s + i + 1;
	size_t n_inner = j - i - 1, at;

	if (depth >= MAX_DEPTH || s[i] == '[' || s[i] == '{') {
		put(o, s + i, j - i + 1);
	} else if (s[i] == '<' && (!i || s[i - 1] == ':' || s[i - 1] == ' ' || s[i - 1] == '<')) {
		/* Rust's <T as Trait> or <T>: the path itself. */
		put(o, "<", 1);
		shorten(o, inner, n_inner, depth + 1);
		put(o, ">", 1);
	} else if (s[i] == '<') {
		if (flat(inner, n_inner) && n_inner <= MT_SHORT_TEMPLATE_ARGS)
			put(o, s + i, j - i + 1);
		else
			put(o, "<...>", 5);
	} else {
		at = o->len;
		put(o, "(", 1);
		shorten(o, inner, n_inner, depth + 1);
		put(o, ")", 1);
		if (o->len - at - 2 > MT_SHORT_PARAMS) {
			o->len = at;
			put(o, "(...)", 5);
		}
	}
}

static void shorten(struct out *o, const char *s, size_t len, int depth)
{
	for (size_t i = 0; i < len; i++) {
		size_t op = operator_len(s, len, i), j;

		if (op) {
			put(o, s + i, op);
			i += op - 1;
			continue;
		}
		if (!strchr("<([{", s[i]) || !s[i]) {
			put(o, s + i, 1);
			continue;
		}
		j = pair_of(s, len, i);
		if (j == len) {
			put(o, s + i, len - i);
			return;
		}
		group(o, s, i, j, depth);
		i = j;
	}
}

/*
 * Where the function's own name starts in s: past a return type, the last space at the top
 * level before the parameter list (the first group opened right after a name), unless that
 * space is an operator's ("operator new", "operator bool").
 */
static size_t name_start(const char *s, size_t len)
{
	size_t start = 0;

	for (size_t i = 0; i < len; i++) {
		size_t op = operator_len(s, len, i), j;

		if (op) {
			i += op - 1;
			/* The word after "operator" is the operator's. */
			if (i + 1 < len && s[i + 1] == ' ')
				i++;
			continue;
		}
		if (s[i] == ' ') {
			start = i + 1;
			continue;
		}
		if (!strchr("<([{", s[i]) || !s[i])
			continue;
		if (s[i] == '(' && i && (is_ident(s[i - 1]) || strchr(">]", s[i - 1])))
			return start;
		j = pair_of(s, len, i);
		if (j == len)
			return 0;
		i = j;
	}
	return 0;
}

const char *mt_short_name(char *buf, size_t n, const char *name)
{
	struct out o = {buf, n, 0};
	size_t len = strlen(name), start;

	shorten(&o, name, len, 0);
	buf[o.len] = '\0';
	start = name_start(buf, o.len);
	if (start)
		memmove(buf, buf + start, o.len - start + 1);
	return buf;
}
