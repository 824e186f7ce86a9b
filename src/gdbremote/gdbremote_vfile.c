// SPDX-License-Identifier: GPL-2.0
/*
 * Host I/O, the vFile packets (gdb manual, "Host I/O Packets"): gdb reads the program and its
 * libraries from the target ("target:" sysroot) instead of warning that the target "does not
 * support file transfer" and reading its own machine's files. Read only: open for anything but
 * reading is refused (EACCES), and pwrite, unlink and the like get the empty reply.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "gdbremote/gdbremote_int.h"

/* gdb's errno values (File-I/O's "Errno Values"): Linux's, but ENAMETOOLONG; others EUNKNOWN. */
static unsigned int gdb_errno(int err)
{
	static const int same[] = {EPERM,  ENOENT, EINTR,  EBADF,   EACCES, EFAULT,
				   EBUSY,  EEXIST, ENODEV, ENOTDIR, EISDIR, EINVAL,
				   ENFILE, EMFILE, EFBIG,  ENOSPC,  ESPIPE, EROFS};

	if (err < 0)
		err = -err;
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
		if (same[i] == err)
			return (unsigned int)err;
	return err == ENAMETOOLONG ? 91 : 9999;
}

/* F RESULT, or F-1,ERRNO for a negative result. */
static void reply_result(struct mt_gdb *g, long long result)
{
	if (result < 0)
		return mt_gdb_reply_fmt(g, "F-1,%x", gdb_errno((int)result));
	mt_gdb_reply_fmt(g, "F%llx", result);
}

/* A hex-encoded path into g->scratch as a C string; false when malformed or too long. */
static bool parse_path(struct mt_gdb *g, const char **p)
{
	size_t n = strcspn(*p, ",");

	if (n % 2 || n / 2 >= sizeof(g->scratch) || !mt_gdb_decode_hex(*p, n, g->scratch, n / 2) ||
	    memchr(g->scratch, 0, n / 2))
		return false;
	g->scratch[n / 2] = '\0';
	*p += n;
	return true;
}

/* open:PATH,FLAGS,MODE */
static void do_open(struct mt_gdb *g, const char *p)
{
	uint64_t flags, mode;

	if (!parse_path(g, &p) || *p++ != ',' || !mt_gdb_parse_range(&p, &flags, &mode, 0) || *p)
		return mt_gdb_reply_error(g, EINVAL);
	/* File-I/O's O_RDONLY is 0; any other flag writes, creates or truncates. */
	if (flags != 0)
		return reply_result(g, -EACCES);
	reply_result(
	    g, g->ops->file_open(g->ctx, (const char *)g->scratch, O_RDONLY, (unsigned int)mode));
}

/* pread:FD,COUNT,OFFSET: F N;DATA, the data escaped. */
static void do_pread(struct mt_gdb *g, const char *p)
{
	uint64_t fd, count, off;
	ssize_t n;

	if (!mt_gdb_parse_range(&p, &fd, &count, ',') || !mt_gdb_parse_hex(&p, &off) || *p ||
	    fd > INT32_MAX)
		return mt_gdb_reply_error(g, EINVAL);
	/* Escaping may double the bytes. */
	if (count > (MT_GDB_PACKET_MAX - 32) / 2)
		count = (MT_GDB_PACKET_MAX - 32) / 2;
	n = g->ops->file_pread(g->ctx, (int)fd, g->scratch, count, off);
	reply_result(g, n);
	if (n < 0)
		return;
	/* The end of the file too has its (empty) data: gdb takes "F0" without it for an error. */
	mt_gdb_reply_str(g, ";");
	mt_gdb_reply_binary(g, g->scratch, (size_t)n);
}

static void put_be(uint8_t **p, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--)
		*(*p)++ = (uint8_t)(v >> (8 * i));
}

/* File-I/O's struct stat: its fields in order, big-endian, 64 bytes. */
static void encode_stat(const struct mt_gdb_file_stat *st, uint8_t *raw)
{
	const struct {
		uint64_t v;
		int bytes;
	} fields[] = {{st->dev, 4},	{st->ino, 4},	 {st->mode, 4},	 {st->nlink, 4},
		      {st->uid, 4},	{st->gid, 4},	 {st->rdev, 4},	 {st->size, 8},
		      {st->blksize, 8}, {st->blocks, 8}, {st->atime, 4}, {st->mtime, 4},
		      {st->ctime, 4}};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		put_be(&raw, fields[i].v, fields[i].bytes);
}

/* fstat:FD: F 40;STRUCT, File-I/O's struct stat, big-endian. */
static void do_fstat(struct mt_gdb *g, const char *p)
{
	struct mt_gdb_file_stat st = {0};
	uint8_t raw[64];
	uint64_t fd;
	int err;

	if (!mt_gdb_parse_hex(&p, &fd) || *p || fd > INT32_MAX)
		return mt_gdb_reply_error(g, EINVAL);
	err = g->ops->file_fstat(g->ctx, (int)fd, &st);
	if (err)
		return reply_result(g, err);
	encode_stat(&st, raw);
	reply_result(g, sizeof(raw));
	mt_gdb_reply_str(g, ";");
	mt_gdb_reply_binary(g, raw, sizeof(raw));
}

/* readlink:PATH: F N;TARGET */
static void do_readlink(struct mt_gdb *g, const char *p)
{
	char target[4096];
	ssize_t n;

	if (!g->ops->file_readlink)
		return;
	if (!parse_path(g, &p) || *p)
		return mt_gdb_reply_error(g, EINVAL);
	n = g->ops->file_readlink(g->ctx, (const char *)g->scratch, target, sizeof(target));
	reply_result(g, n);
	if (n < 0)
		return;
	/* The end of the file too has its (empty) data: gdb takes "F0" without it for an error. */
	mt_gdb_reply_str(g, ";");
	mt_gdb_reply_binary(g, (const uint8_t *)target, (size_t)n);
}

void mt_gdb_do_vfile(struct mt_gdb *g, char *pkt, size_t len)
{
	const char *rest;
	uint64_t v;

	(void)len; /* no request served here carries binary data (pwrite would) */
	if (!g->ops->file_open)
		return;
	if (mt_gdb_starts(pkt, "vFile:setfs:", &rest)) {
		/* Every file is opened as the served process sees it, whichever gdb names. */
		if (!mt_gdb_parse_hex(&rest, &v) || *rest)
			return mt_gdb_reply_error(g, EINVAL);
		return reply_result(g, 0);
	}
	if (mt_gdb_starts(pkt, "vFile:open:", &rest))
		return do_open(g, rest);
	if (mt_gdb_starts(pkt, "vFile:pread:", &rest))
		return do_pread(g, rest);
	if (mt_gdb_starts(pkt, "vFile:close:", &rest)) {
		if (!mt_gdb_parse_hex(&rest, &v) || *rest || v > INT32_MAX)
			return mt_gdb_reply_error(g, EINVAL);
		return reply_result(g, g->ops->file_close(g->ctx, (int)v));
	}
	if (mt_gdb_starts(pkt, "vFile:fstat:", &rest))
		return do_fstat(g, rest);
	if (mt_gdb_starts(pkt, "vFile:readlink:", &rest))
		return do_readlink(g, rest);
	/* pwrite, unlink and the rest: the empty reply, not supported. */
}
