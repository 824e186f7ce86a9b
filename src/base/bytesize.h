/* SPDX-License-Identifier: GPL-2.0 */
/* Byte counts for people, in binary units: the one formatter of the text outputs. */
#ifndef MT_BYTESIZE_H
#define MT_BYTESIZE_H

#include <stddef.h>
#include <stdint.h>

/* "512 B", "1.5 MiB": for tables, where exact byte counts do not fit. Returns buf. */
const char *mt_bytesize_human(char *buf, size_t n, uint64_t v);

/* 2^k bytes written exactly (k < 70): "512 B", "1 KiB", "16 EiB". Returns buf. */
const char *mt_bytesize_pow2(char *buf, size_t n, unsigned int k);

#endif
