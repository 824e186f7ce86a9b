/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The artifact writer's private part (artifact.c, artifact_records.c): the little-endian field
 * writers every record uses, and the record frame artifact.c keeps (its buffer, its lock, the
 * event block a record may go into). artifact_records.c lays out each record type in it.
 */
#ifndef MT_WRITER_ARTIFACT_INT_H
#define MT_WRITER_ARTIFACT_INT_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "writer/artifact.h"

static inline void put_u8(uint8_t **p, uint8_t v)
{
	*(*p)++ = v;
}

static inline void put_u16(uint8_t **p, uint16_t v)
{
	v = htole16(v);
	memcpy(*p, &v, sizeof(v));
	*p += sizeof(v);
}

static inline void put_u32(uint8_t **p, uint32_t v)
{
	v = htole32(v);
	memcpy(*p, &v, sizeof(v));
	*p += sizeof(v);
}

static inline void put_u64(uint8_t **p, uint64_t v)
{
	v = htole64(v);
	memcpy(*p, &v, sizeof(v));
	*p += sizeof(v);
}

static inline void put_bytes(uint8_t **p, const void *s, size_t n)
{
	memcpy(*p, s, n);
	*p += n;
}

static inline void put_str(uint8_t **p, const char *s, size_t len)
{
	put_u32(p, (uint32_t)len);
	put_bytes(p, s, len);
}

/* Length of a string field clamped to what the format allows. */
static inline size_t field_len(const char *s, size_t max)
{
	return s ? strnlen(s, max) : 0;
}

/*
 * A record of type and payload bytes begun under the writer's lock: where its payload goes, or
 * NULL (lock released, *err set) when the recording has stopped. artifact_record_end() commits
 * what was written up to p and unlocks.
 */
uint8_t *artifact_record_begin(struct mt_artifact_writer *w, uint32_t type, size_t payload,
			       int *err);
int artifact_record_end(struct mt_artifact_writer *w, const uint8_t *p);

#endif
