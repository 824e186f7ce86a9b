// SPDX-License-Identifier: GPL-2.0
/*
 * The artifact reader's lowest file: its source (a file descriptor through a read buffer, or a
 * caller's memory) and its errors, which the record decoders above it share.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reader/artifact_read_int.h"

/* ---- errors --------------------------------------------------------------------------------- */

int __attribute__((format(printf, 3, 4)))
mt_artread_fail(struct mt_artifact_reader *r, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	r->err = err;
	return err;
}

int mt_artread_corrupt(struct mt_artifact_reader *r, uint64_t at, const char *what)
{
	return mt_artread_fail(r, -EBADMSG, "corrupt artifact at offset %llu: %s",
			       (unsigned long long)at, what);
}

/* ---- the source ----------------------------------------------------------------------------- */

static ssize_t fd_refill(struct mt_artifact_reader *r)
{
	for (;;) {
		ssize_t k = read(r->fd, r->rbuf, READ_BUF_SIZE);

		if (k >= 0 || errno != EINTR)
			return k < 0 ? -errno : k;
	}
}

/*
 * Copy up to n bytes to dst. Returns how many were copied, fewer than n only at the end of the
 * file, or a negative errno (with the message set).
 */
ssize_t mt_artread_src_read(struct mt_artifact_reader *r, void *dst, size_t n)
{
	uint8_t *d = dst;
	size_t got = 0;

	while (got < n) {
		size_t k;

		if (r->src_pos == r->src_len) {
			ssize_t f;

			if (r->fd < 0)
				break;
			f = fd_refill(r);
			if (f < 0)
				return mt_artread_fail(r, (int)f, "read error: %s",
						       strerror((int)-f));
			if (f == 0)
				break;
			r->src = r->rbuf;
			r->src_len = (size_t)f;
			r->src_pos = 0;
		}
		k = r->src_len - r->src_pos;
		if (k > n - got)
			k = n - got;
		memcpy(d + got, r->src + r->src_pos, k);
		r->src_pos += k;
		got += k;
	}
	r->offset += got;
	return (ssize_t)got;
}

/*
 * Read len bytes into r->payload, growing it as bytes arrive so that a length lying about a short
 * file allocates no more than the file holds. Returns how many were read, or a negative errno.
 */
ssize_t mt_artread_payload(struct mt_artifact_reader *r, size_t len)
{
	size_t got = 0;

	while (got < len) {
		size_t want = len - got < GROW_STEP ? len - got : GROW_STEP;
		ssize_t k;

		if (r->payload_cap < got + want) {
			uint8_t *p = realloc(r->payload, got + want);

			if (!p)
				return mt_artread_fail(r, -ENOMEM, "out of memory");
			r->payload = p;
			r->payload_cap = got + want;
		}
		k = mt_artread_src_read(r, r->payload + got, want);
		if (k < 0)
			return k;
		got += (size_t)k;
		if ((size_t)k < want)
			break;
	}
	return (ssize_t)got;
}
