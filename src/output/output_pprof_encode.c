// SPDX-License-Identifier: GPL-2.0
/*
 * A pprof profile built (output_pprof.c) encoded: the mappings placed in address ranges, the
 * message assembled over the builder's arrays, encoded by protobuf-c and gzip'd by zlib.
 */
#include <errno.h>
#include <stdlib.h>

#include <zlib.h>

#include "output/output_pprof_int.h"

/* Where the first file's range starts: not 0, which reads as "no address". */
#define MAPPING_BASE  0x10000ULL
#define MAPPING_ALIGN 0x1000ULL

/* ---- the profile's header: what the values are ----------------------------------------------- */

static const char *const sample_types[TYPES_LEAKS][2] = {
    {"alloc_objects", "count"},
    {"alloc_space", "bytes"},
    {"inuse_objects", "count"},
    {"inuse_space", "bytes"},
    /* The loss records' (aggregate/leaks.h), suppressed ones left out. */
    {"definitely_lost_objects", "count"},
    {"definitely_lost_space", "bytes"},
    {"indirectly_lost_objects", "count"},
    {"indirectly_lost_space", "bytes"},
};

/* How many sample types the profile has. */
static size_t n_types(const struct mt_report *rep)
{
	return mt_leaks_any(rep->leaks) ? TYPES_LEAKS : TYPES;
}

/* ---- assembling and writing ------------------------------------------------------------------ */

/*
 * Once every location is known: the mappings' ranges, the addresses, the pointers. A file's range
 * covers the pages of its locations, as the mapping of its code would: pprof matches a mapping's
 * file offset and size with the file's executable segment before it names anything in it.
 */
static void place(struct builder *b)
{
	uint64_t start = MAPPING_BASE;

	for (size_t i = 0; i < b->n_maps; i++) {
		struct mapping *m = &b->maps[i];
		uint64_t first = m->lo / MAPPING_ALIGN * MAPPING_ALIGN;
		uint64_t past = (m->end + MAPPING_ALIGN - 1) / MAPPING_ALIGN * MAPPING_ALIGN;

		m->m.memory_start = start;
		m->m.memory_limit = start + (past > first ? past - first : MAPPING_ALIGN);
		m->m.file_offset = first;
		start = m->m.memory_limit;
	}
	for (size_t i = 0; i < b->n_locs; i++) {
		struct loc *l = &b->locs[i];

		l->lines[0] = &l->line;
		l->m.line = l->lines;
		if (l->n_inlined) {
			for (size_t k = 0; k < l->n_inlined; k++)
				l->all[k] = &l->inlined[k];
			l->all[l->n_inlined] = &l->line;
			l->m.line = l->all;
		}
		l->m.mapping_id = l->mapping;
		if (l->mapping) {
			const MtPprof__Mapping *m = &b->maps[l->mapping - 1].m;

			l->m.address = m->memory_start + l->offset - m->file_offset;
		} else {
			l->m.address = l->offset;
		}
	}
	for (size_t i = 0; i < b->n_samples; i++) {
		struct sample *s = &b->samples[i];

		for (size_t k = 0; k < s->m.n_label; k++)
			s->labels[k] = &s->label[k];
		s->m.label = s->labels;
		s->m.value = s->values;
		s->m.n_value = n_types(b->rep);
	}
}

/* protobuf-c's output sink: the bytes deflated into a gzip stream on a FILE. */
struct gz_sink {
	ProtobufCBuffer base;
	z_stream z;
	FILE *out;
	int err;
};

static void gz_deflate(struct gz_sink *g, int flush)
{
	unsigned char chunk[16384];
	int zr;

	do {
		size_t have;

		g->z.next_out = chunk;
		g->z.avail_out = sizeof(chunk);
		zr = deflate(&g->z, flush);
		if (zr == Z_STREAM_ERROR) {
			g->err = -EIO;
			return;
		}
		have = sizeof(chunk) - g->z.avail_out;
		errno = 0;
		if (have && fwrite(chunk, 1, have, g->out) != have) {
			g->err = errno ? -errno : -EIO;
			return;
		}
	} while (flush == Z_FINISH ? zr != Z_STREAM_END : !g->z.avail_out);
}

static void gz_append(ProtobufCBuffer *buf, size_t len, const uint8_t *data)
{
	struct gz_sink *g = (struct gz_sink *)buf;

	while (len && !g->err) {
		uInt n = len > (1u << 30) ? 1u << 30 : (uInt)len;

		g->z.next_in = (Bytef *)data;
		g->z.avail_in = n;
		gz_deflate(g, Z_NO_FLUSH);
		data += n;
		len -= n;
	}
}

static int write_gzip(const MtPprof__Profile *p, FILE *out)
{
	struct gz_sink g = {.base = {.append = gz_append}, .out = out};

	/* windowBits 15 + 16: a gzip header and trailer around the deflate stream. */
	if (deflateInit2(&g.z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	mt_pprof__profile__pack_to_buffer(p, &g.base);
	if (!g.err)
		gz_deflate(&g, Z_FINISH);
	deflateEnd(&g.z);
	if (g.err)
		return g.err;
	return ferror(out) ? -EIO : 0;
}

/* The message over the builder's arrays (pointers into them, freed with it). */
int pprof_encode(struct builder *b, FILE *out)
{
	MtPprof__Profile p = MT_PPROF__PROFILE__INIT;
	MtPprof__ValueType types[TYPES_LEAKS], period = MT_PPROF__VALUE_TYPE__INIT;
	MtPprof__ValueType *type_ptrs[TYPES_LEAKS];
	size_t nt = n_types(b->rep);
	void **ptrs = calloc(b->n_samples + b->n_maps + b->n_locs + b->n_funcs + 1, sizeof(*ptrs));
	size_t k = 0;
	int err = 0;

	if (!ptrs)
		return -ENOMEM;
	for (size_t i = 0; i < nt && !err; i++) {
		mt_pprof__value_type__init(&types[i]);
		type_ptrs[i] = &types[i];
		err = pprof_intern(&b->st, sample_types[i][0], &types[i].type) ||
		      pprof_intern(&b->st, sample_types[i][1], &types[i].unit);
	}
	if (err || pprof_intern(&b->st, "space", &period.type) ||
	    pprof_intern(&b->st, "bytes", &period.unit) ||
	    pprof_intern(&b->st, "alloc_space", &p.default_sample_type)) {
		free(ptrs);
		return -ENOMEM;
	}
	place(b);
	p.n_sample_type = nt;
	p.sample_type = type_ptrs;
	p.sample = (MtPprof__Sample **)&ptrs[k];
	for (size_t i = 0; i < b->n_samples; i++)
		ptrs[k + p.n_sample++] = &b->samples[i].m;
	k += p.n_sample;
	p.mapping = (MtPprof__Mapping **)&ptrs[k];
	for (size_t i = 0; i < b->n_maps; i++)
		ptrs[k + p.n_mapping++] = &b->maps[i].m;
	k += p.n_mapping;
	p.location = (MtPprof__Location **)&ptrs[k];
	for (size_t i = 0; i < b->n_locs; i++)
		ptrs[k + p.n_location++] = &b->locs[i].m;
	k += p.n_location;
	p.function = (MtPprof__Function **)&ptrs[k];
	for (size_t i = 0; i < b->n_funcs; i++)
		ptrs[k + p.n_function++] = &b->funcs[i];
	p.n_string_table = b->st.n;
	p.string_table = b->st.v;
	p.time_nanos = (int64_t)b->rep->start_time_ns;
	if (b->rep->has_footer && b->rep->footer.end_mono_ns > b->rep->start_mono_ns)
		p.duration_nanos = (int64_t)(b->rep->footer.end_mono_ns - b->rep->start_mono_ns);
	p.period_type = &period;
	p.period = 1; /* every allocation: nothing is sampled */
	p.n_comment = b->n_comments;
	p.comment = b->comments;
	err = write_gzip(&p, out);
	free(ptrs);
	return err;
}
