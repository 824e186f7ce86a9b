// SPDX-License-Identifier: GPL-2.0
/* Duration parsing and formatting (see duration.h). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "errbuf.h"
#include "duration.h"

#define NSEC_PER_SEC	1000000000ULL
/* More fraction digits than this cannot matter below a nanosecond for any unit we accept. */
#define MAX_FRAC_DIGITS 18

struct duration_unit {
	const char *name;
	uint64_t ns;
};

static const struct duration_unit units[] = {
    {"ns", 1ULL},
    {"us", 1000ULL},
    {"ms", 1000000ULL},
    {"s", NSEC_PER_SEC},
    {"m", 60ULL * NSEC_PER_SEC},
    {"h", 3600ULL * NSEC_PER_SEC},
};

/* The unit spelled by [s, end), or NULL. No unit at all means seconds. */
static const struct duration_unit *find_unit(const char *s, const char *end)
{
	size_t len = (size_t)(end - s);
	size_t i;

	if (len == 0)
		return &units[3];
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strlen(units[i].name) == len && memcmp(units[i].name, s, len) == 0)
			return &units[i];
	}
	return NULL;
}

struct decimal {
	uint64_t whole;
	uint64_t frac;	   /* the first fraction digits, as an integer */
	uint64_t frac_div; /* 10^(number of digits in frac) */
	bool overflow;
	int digits;
};

/* Reads [0-9]*(.[0-9]*)? from *p, advancing it. */
static void read_decimal(const char **p, struct decimal *d)
{
	const char *s = *p;
	int nfrac = 0;

	memset(d, 0, sizeof(*d));
	d->frac_div = 1;
	for (; isdigit((unsigned char)*s); s++, d->digits++) {
		if (__builtin_mul_overflow(d->whole, 10, &d->whole) ||
		    __builtin_add_overflow(d->whole, (uint64_t)(*s - '0'), &d->whole))
			d->overflow = true;
	}
	if (*s == '.') {
		for (s++; isdigit((unsigned char)*s); s++, d->digits++) {
			if (nfrac++ >= MAX_FRAC_DIGITS)
				continue;
			d->frac = d->frac * 10 + (uint64_t)(*s - '0');
			d->frac_div *= 10;
		}
	}
	*p = s;
}

int mt_parse_duration(const char *s, uint64_t *ns, char *err, size_t errlen)
{
	const char *p = s, *end;
	const struct duration_unit *u;
	struct decimal d;
	uint64_t whole_ns, frac_ns;

	while (isspace((unsigned char)*p))
		p++;
	end = p + strlen(p);
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	if (p == end)
		return mt_errbuf(err, errlen, "empty duration");

	read_decimal(&p, &d);
	if (d.digits == 0)
		return mt_errbuf(
		    err, errlen,
		    "invalid duration '%s': expected seconds (0.5) or a number with a unit "
		    "ns, us, ms, s, m or h (500ms)",
		    s);
	u = find_unit(p, end);
	if (!u)
		return mt_errbuf(
		    err, errlen,
		    "invalid duration '%s': unknown unit '%.*s' (use ns, us, ms, s, m or h)", s,
		    (int)(end - p), p);

	/* 128 bits: up to 18 fraction digits times an hour in nanoseconds needs 82 bits. */
	frac_ns = (uint64_t)((unsigned __int128)d.frac * u->ns / d.frac_div);
	if (d.overflow || __builtin_mul_overflow(d.whole, u->ns, &whole_ns) ||
	    __builtin_add_overflow(whole_ns, frac_ns, ns)) {
		mt_errbuf(err, errlen, "duration '%s' is too large", s);
		return -ERANGE;
	}
	return 0;
}

char *mt_format_duration(double ns, char *buf, size_t len)
{
	static const char *const names[] = {"ns", "us", "ms", "s"};
	unsigned int i = 0;
	double v = ns;

	while (i < 3 && v >= 1000.0) {
		v /= 1000.0;
		i++;
	}
	/* Three significant digits: enough to compare rounds, short enough for a table. */
	if (i == 0 || v >= 100.0)
		snprintf(buf, len, "%.0f %s", v, names[i]);
	else if (v >= 10.0)
		snprintf(buf, len, "%.1f %s", v, names[i]);
	else
		snprintf(buf, len, "%.2f %s", v, names[i]);
	return buf;
}
