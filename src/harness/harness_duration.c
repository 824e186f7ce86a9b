// SPDX-License-Identifier: GPL-2.0
/*
 * Durations and round counts as CodSpeed's exec-harness reads them (see harness_duration.h).
 * The grammar is Rust's f64 first and humantime 2.3's parse_duration second; each step below
 * names the rule of those parsers that it reproduces.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "base/utf8.h"
#include "harness/harness_duration.h"

#define NSEC_PER_SEC 1000000000ULL
#define MICRO_SIGN   0xb5 /* U+00B5, the only non-ASCII unit character humantime takes */

/* Rust's char::is_whitespace: the White_Space property of Unicode. */
static bool rust_whitespace(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0d) || c == 0x20 || c == 0x85 || c == 0xa0 || c == 0x1680 ||
	       (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
	       c == 0x205f || c == 0x3000;
}

/* ---- Reading code points -------------------------------------------------------------------- */

struct text {
	const char *s;
	size_t len, i; /* i: byte offset of the next code point */
};

/* The next code point, or 0 at the end. Invalid bytes end the text (the callers validated it). */
static bool next_cp(struct text *t, uint32_t *cp)
{
	size_t n;

	if (t->i >= t->len)
		return false;
	n = mt_utf8_seq((const unsigned char *)t->s + t->i, t->len - t->i, cp);
	if (!n)
		return false;
	t->i += n;
	return true;
}

/* [*start, *end) of s without the white space str::trim removes. */
static void trim(const char *s, size_t *start, size_t *end)
{
	struct text t = {s, strlen(s), 0};
	size_t last = 0;
	uint32_t c;
	bool seen = false;

	*start = *end = 0;
	for (;;) {
		size_t at = t.i;

		if (!next_cp(&t, &c))
			break;
		if (rust_whitespace(c))
			continue;
		if (!seen)
			*start = at;
		seen = true;
		last = t.i;
	}
	*end = seen ? last : *start;
}

/* ---- Step 1: a Rust f64 of seconds ---------------------------------------------------------- */

static bool ieq(const char *s, size_t len, const char *word)
{
	return strlen(word) == len && !strncasecmp(s, word, len);
}

/* Whether [s, s + len) is Rust's f64 grammar; *special: 1 inf, 2 nan, 0 a decimal. */
static bool rust_f64_syntax(const char *s, size_t len, int *special)
{
	size_t i = 0, digits = 0;

	*special = 0;
	if (i < len && (s[i] == '+' || s[i] == '-'))
		i++;
	if (ieq(s + i, len - i, "inf") || ieq(s + i, len - i, "infinity")) {
		*special = 1;
		return true;
	}
	if (ieq(s + i, len - i, "nan")) {
		*special = 2;
		return true;
	}
	for (; i < len && isdigit((unsigned char)s[i]); i++)
		digits++;
	if (i < len && s[i] == '.')
		for (i++; i < len && isdigit((unsigned char)s[i]); i++)
			digits++;
	if (!digits)
		return false;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		size_t exp_digits = 0;

		i++;
		if (i < len && (s[i] == '+' || s[i] == '-'))
			i++;
		for (; i < len && isdigit((unsigned char)s[i]); i++)
			exp_digits++;
		if (!exp_digits)
			return false;
	}
	return i == len;
}

/* Rust's `(seconds * 1_000_000_000.0) as u64`: truncation, saturating at both ends, NaN is 0. */
static uint64_t seconds_as_u64_ns(double seconds)
{
	double ns = seconds * 1e9;

	if (ns != ns || ns <= 0.0)
		return 0;
	if (ns >= 18446744073709551616.0)
		return UINT64_MAX;
	return (uint64_t)ns;
}

static bool parse_seconds(const char *s, size_t len, uint64_t *ns)
{
	char buf[512], *end;
	int special;
	double v;

	if (!rust_f64_syntax(s, len, &special))
		return false;
	if (special) {
		/* -inf and nan convert to 0, inf to the largest u64. */
		*ns = special == 1 && s[0] != '-' ? UINT64_MAX : 0;
		return true;
	}
	if (len >= sizeof(buf)) {
		char *copy = strndup(s, len);

		if (!copy)
			return false;
		v = strtod(copy, &end);
		free(copy);
	} else {
		memcpy(buf, s, len);
		buf[len] = '\0';
		/* glibc's strtod rounds correctly, as Rust's parser does. */
		v = strtod(buf, &end);
	}
	*ns = seconds_as_u64_ns(v);
	return true;
}

/* ---- Step 2: humantime 2.3's parse_duration ------------------------------------------------- */

enum ht_error {
	HT_OK,
	HT_EMPTY,
	HT_NUMBER_EXPECTED,
	HT_INVALID_CHAR,
	HT_UNKNOWN_UNIT,
	HT_OVERFLOW
};

struct ht_unit {
	const char *names[6];
	uint64_t sec, nsec; /* one unit: whole seconds, or nanoseconds below a second */
};

/* humantime's Unit::from_str and the lengths of its units (a month is 30.44 days). */
static const struct ht_unit ht_units[] = {
    {{"nanos", "nsec", "ns"}, 0, 1},
    {{"usec", "us", "µs"}, 0, 1000},
    {{"millis", "msec", "ms"}, 0, 1000000},
    {{"seconds", "second", "secs", "sec", "s"}, 1, 0},
    {{"minutes", "minute", "min", "mins", "m"}, 60, 0},
    {{"hours", "hour", "hr", "hrs", "h"}, 3600, 0},
    {{"days", "day", "d"}, 86400, 0},
    {{"weeks", "week", "wk", "wks", "w"}, 604800, 0},
    {{"months", "month", "M"}, 2630016, 0},
    {{"years", "year", "yr", "yrs", "y"}, 31557600, 0},
};

struct ht_frac {
	bool present;
	uint64_t num, den;
};

struct ht_total {
	uint64_t sec, nsec;
};

static const struct ht_unit *ht_find_unit(const char *s, size_t len)
{
	size_t u, k;

	for (u = 0; u < sizeof(ht_units) / sizeof(ht_units[0]); u++) {
		for (k = 0; ht_units[u].names[k]; k++) {
			if (strlen(ht_units[u].names[k]) == len &&
			    !memcmp(ht_units[u].names[k], s, len))
				return &ht_units[u];
		}
	}
	return NULL;
}

static bool is_unit_char(uint32_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == MICRO_SIGN;
}

/* humantime's add_current: seconds and nanoseconds added with overflow checks, then carried. */
static enum ht_error ht_add(struct ht_total *out, uint64_t sec, uint64_t nsec)
{
	uint64_t n;

	if (__builtin_add_overflow(out->nsec, nsec, &n))
		return HT_OVERFLOW;
	if (__builtin_add_overflow(sec, n / NSEC_PER_SEC, &sec) ||
	    __builtin_add_overflow(out->sec, sec, &out->sec))
		return HT_OVERFLOW;
	out->nsec = n % NSEC_PER_SEC;
	return HT_OK;
}

/* humantime's div: only an exact quotient is accepted. */
static enum ht_error ht_exact(uint64_t n, uint64_t mul, uint64_t den, uint64_t *q)
{
	if (__builtin_mul_overflow(n, mul, &n) || n % den)
		return HT_OVERFLOW;
	*q = n / den;
	return HT_OK;
}

static enum ht_error ht_span(const char *s, size_t start, size_t end, uint64_t n,
			     const struct ht_frac *f, struct ht_total *out)
{
	const struct ht_unit *u = ht_find_unit(s + start, end - start);
	uint64_t whole, part;
	enum ht_error e;

	if (!u)
		return HT_UNKNOWN_UNIT;
	if (__builtin_mul_overflow(n, u->sec ? u->sec : u->nsec, &whole))
		return HT_OVERFLOW;
	e = u->sec ? ht_add(out, whole, 0) : ht_add(out, 0, whole);
	if (e || !f->present)
		return e;
	/* A fraction of nanoseconds cannot be represented; below a minute it is in nanoseconds. */
	if (u->nsec == 1)
		return HT_OVERFLOW;
	if (u->nsec || u->sec == 1 || u->sec == 60) {
		e = ht_exact(f->num, u->nsec ? u->nsec : u->sec * NSEC_PER_SEC, f->den, &part);
		return e ? e : ht_add(out, 0, part);
	}
	e = ht_exact(f->num, u->sec, f->den, &part);
	return e ? e : ht_add(out, part, 0);
}

/* The first digit of a number after white space: 1, 0 at the end, -1 when something else. */
static int ht_first_digit(struct text *t, uint64_t *n)
{
	uint32_t c;

	while (next_cp(t, &c)) {
		if (c >= '0' && c <= '9') {
			*n = c - '0';
			return 1;
		}
		if (!rust_whitespace(c))
			return -1;
	}
	return 0;
}

/* Digits after the point; *off follows the last character read, as in humantime. */
static enum ht_error ht_fraction(struct text *t, size_t *off, struct ht_frac *f)
{
	bool zeros = true;
	uint32_t c;

	f->present = true;
	f->num = 0;
	f->den = 1;
	while (next_cp(t, &c)) {
		if (c >= '0' && c <= '9') {
			if (__builtin_mul_overflow(f->den, 10, &f->den))
				return HT_OVERFLOW;
			if (c != '0')
				zeros = false;
			if (!zeros && (__builtin_mul_overflow(f->num, 10, &f->num) ||
				       __builtin_add_overflow(f->num, c - '0', &f->num)))
				return HT_OVERFLOW;
		} else if (is_unit_char(c)) {
			break;
		} else if (!rust_whitespace(c)) {
			return HT_INVALID_CHAR;
		}
		*off = t->i;
	}
	/* "1." has no digit after the point. */
	return f->den == 1 ? HT_INVALID_CHAR : HT_OK;
}

static enum ht_error ht_parse(struct text *t, struct ht_total *out)
{
	struct ht_frac f = {false, 0, 1};
	size_t off, start;
	uint64_t n;
	uint32_t c;
	enum ht_error e;
	int r = ht_first_digit(t, &n);

	if (r <= 0)
		return r ? HT_NUMBER_EXPECTED : HT_EMPTY;
	for (;;) {
		/* The number: digits, white space skipped, up to the first unit character. */
		f.present = false;
		off = t->i;
		while (next_cp(t, &c)) {
			if (c >= '0' && c <= '9') {
				if (__builtin_mul_overflow(n, 10, &n) ||
				    __builtin_add_overflow(n, c - '0', &n))
					return HT_OVERFLOW;
			} else if (is_unit_char(c)) {
				break;
			} else if (c == '.') {
				e = ht_fraction(t, &off, &f);
				if (e)
					return e;
				break;
			} else if (!rust_whitespace(c)) {
				return HT_INVALID_CHAR;
			}
			off = t->i;
		}
		/* The unit: letters up to white space, or up to the digit of the next span. */
		start = off;
		off = t->i;
		while (next_cp(t, &c)) {
			if (c >= '0' && c <= '9')
				break;
			if (rust_whitespace(c))
				break;
			if (!is_unit_char(c))
				return HT_INVALID_CHAR;
			off = t->i;
		}
		e = ht_span(t->s, start, off, n, &f, out);
		if (e)
			return e;
		if (off < t->i && c >= '0' && c <= '9') {
			n = c - '0';
			continue;
		}
		r = ht_first_digit(t, &n);
		if (r <= 0)
			return r ? HT_NUMBER_EXPECTED : HT_OK;
	}
}

static const char *ht_message(enum ht_error e)
{
	switch (e) {
	case HT_EMPTY:
		return "value was empty";
	case HT_NUMBER_EXPECTED:
		return "expected a number";
	case HT_INVALID_CHAR:
		return "invalid character";
	case HT_UNKNOWN_UNIT:
		return "unknown or missing time unit (ns, us/µs, ms, s/sec, m/min, h, d, w, M, y)";
	case HT_OVERFLOW:
		return "number too large, or a fraction below one nanosecond";
	case HT_OK:
		break;
	}
	return "";
}

int mt_harness_parse_duration(const char *s, uint64_t *ns, char *err, size_t errlen)
{
	struct ht_total out = {0, 0};
	size_t start, end;
	struct text t;
	enum ht_error e;

	trim(s, &start, &end);
	if (parse_seconds(s + start, end - start, ns))
		return 0;
	t.s = s + start;
	t.len = end - start;
	t.i = 0;
	e = ht_parse(&t, &out);
	if (e)
		return mt_errbuf(err, errlen,
				 "invalid duration '%s': %s; expected a duration like '1s', "
				 "'500ms', '2m', '1h' or a number of seconds",
				 s, ht_message(e));
	/* Duration::as_nanos() as u64: the 128-bit count keeps its low 64 bits. */
	*ns = (uint64_t)((unsigned __int128)out.sec * NSEC_PER_SEC + out.nsec);
	return 0;
}

int mt_harness_parse_count(const char *s, uint64_t *v)
{
	const char *p = s;
	uint64_t n = 0;

	if (*p == '+')
		p++;
	if (!*p)
		return -EINVAL;
	for (; *p; p++) {
		if (!isdigit((unsigned char)*p) || __builtin_mul_overflow(n, 10, &n) ||
		    __builtin_add_overflow(n, (uint64_t)(*p - '0'), &n))
			return -EINVAL;
	}
	*v = n;
	return 0;
}
