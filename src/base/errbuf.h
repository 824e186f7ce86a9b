/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Parsers that report one sentence to their caller write it into a caller's buffer: this is the
 * one way they do it.
 */
#ifndef MT_ERRBUF_H
#define MT_ERRBUF_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Format the sentence into err when there is one. */
static inline void mt_errbuf_v(char *err, size_t errlen, const char *fmt, va_list ap)
{
	if (err && errlen)
		vsnprintf(err, errlen, fmt, ap);
}

/* Format the sentence into err (when there is one) and return -EINVAL. */
__attribute__((format(printf, 3, 4))) static inline int mt_errbuf(char *err, size_t errlen,
								  const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mt_errbuf_v(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* The same, returning e (a negative errno) instead: the sentence says why that error came. */
__attribute__((format(printf, 4, 5))) static inline int mt_errbuf_err(char *err, size_t errlen,
								      int e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mt_errbuf_v(err, errlen, fmt, ap);
	va_end(ap);
	return e;
}

#endif
