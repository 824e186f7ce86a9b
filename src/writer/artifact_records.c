// SPDX-License-Identifier: GPL-2.0
/*
 * The artifact's records other than events and the header and footer, each laid out as
 * docs/FORMAT.md says, in the frame artifact.c keeps (artifact_int.h).
 */
#include <stdint.h>
#include <string.h>

#include "writer/artifact_format.h"
#include "writer/artifact_int.h"

int mt_artifact_write_process(struct mt_artifact_writer *w, const struct mt_artifact_process *pr)
{
	size_t elen = field_len(pr->exe, sizeof(pr->exe) - 1);
	size_t plen = field_len(pr->position, sizeof(pr->position) - 1);
	size_t payload = MT_ARTIFACT_PROCESS_FIXED + 4 + elen + 4 + plen;
	uint8_t *p;
	int err = 0;

	p = artifact_record_begin(w, MT_REC_PROCESS, payload, &err);
	if (!p)
		return err;
	put_u32(&p, pr->pid);
	put_u32(&p, pr->parent);
	put_u32(&p, (uint32_t)pr->exit_status);
	put_u8(&p, pr->exited ? 1 : 0);
	put_bytes(&p, "\0\0\0", 3);
	put_str(&p, pr->exe, elen);
	put_str(&p, pr->position, plen);
	return artifact_record_end(w, p);
}

int mt_artifact_write_file(struct mt_artifact_writer *w, const struct mt_artifact_file *f)
{
	size_t blen = field_len(f->build_id, sizeof(f->build_id) - 1);
	size_t plen = field_len(f->path, sizeof(f->path) - 1);
	size_t payload = MT_ARTIFACT_FILE_FIXED + 4 + blen + 4 + plen + 12;
	uint8_t *p;
	int err = 0;

	p = artifact_record_begin(w, MT_REC_FILE, payload, &err);
	if (!p)
		return err;
	put_u16(&p, f->file_id);
	/* Version 1's 16-bit count, saturated; the exact count follows the path. */
	put_u16(&p, f->probes > UINT16_MAX ? UINT16_MAX : (uint16_t)f->probes);
	put_u8(&p, f->family);
	put_bytes(&p, "\0\0\0", 3);
	put_str(&p, f->build_id, blen);
	put_str(&p, f->path, plen);
	put_u32(&p, f->probes);
	put_u32(&p, f->unwind_rows);
	put_u32(&p, (uint32_t)f->unwind_error);
	return artifact_record_end(w, p);
}

int mt_artifact_write_stack(struct mt_artifact_writer *w, const struct mt_artifact_stack *s)
{
	uint32_t n = s->n < MT_ARTIFACT_STACK_FRAMES ? s->n : MT_ARTIFACT_STACK_FRAMES;
	uint8_t *p;
	int err = 0;

	p = artifact_record_begin(w, MT_REC_STACK, MT_ARTIFACT_STACK_FIXED + 8 * n, &err);
	if (!p)
		return err;
	put_u32(&p, s->id);
	put_u32(&p, s->stop);
	put_u32(&p, n);
	for (uint32_t i = 0; i < n; i++)
		put_u64(&p, s->frames[i]);
	return artifact_record_end(w, p);
}

int mt_artifact_write_unprobed(struct mt_artifact_writer *w, const struct mt_artifact_unprobed *u)
{
	size_t plen = field_len(u->path, sizeof(u->path) - 1);
	size_t flen = field_len(u->function, sizeof(u->function) - 1);
	size_t rlen = field_len(u->reason, sizeof(u->reason) - 1);
	size_t payload = MT_ARTIFACT_UNPROBED_FIXED + 4 + plen + 4 + flen + 4 + rlen;
	uint8_t *p;
	int err = 0;

	p = artifact_record_begin(w, MT_REC_UNPROBED, payload, &err);
	if (!p)
		return err;
	put_u32(&p, (uint32_t)u->error);
	put_u32(&p, 0);
	put_str(&p, u->path, plen);
	put_str(&p, u->function, flen);
	put_str(&p, u->reason, rlen);
	return artifact_record_end(w, p);
}

int mt_artifact_write_handoff(struct mt_artifact_writer *w, const struct mt_artifact_handoff *h)
{
	size_t tlen = field_len(h->text, sizeof(h->text) - 1);
	uint8_t *p;
	int err = 0;

	p = artifact_record_begin(w, MT_REC_HANDOFF, MT_ARTIFACT_HANDOFF_FIXED + 4 + tlen, &err);
	if (!p)
		return err;
	put_u32(&p, h->pid);
	put_u8(&p, h->what);
	put_u8(&p, h->flags);
	put_u16(&p, h->file_id);
	put_str(&p, h->text, tlen);
	return artifact_record_end(w, p);
}

int mt_artifact_write_mapping(struct mt_artifact_writer *w, const struct mt_artifact_mapping *m)
{
	size_t nlen = field_len(m->name, MT_ARTIFACT_MAPPING_NAME);
	uint8_t *p;
	int err = 0;

	p = artifact_record_begin(w, MT_REC_MAPPING, MT_ARTIFACT_MAPPING_FIXED + 4 + nlen, &err);
	if (!p)
		return err;
	put_u64(&p, m->ts_ns);
	put_u32(&p, m->pid);
	put_u32(&p, m->tid);
	put_u8(&p, m->what);
	put_u8(&p, m->origin);
	put_u16(&p, 0);
	put_u32(&p, (uint32_t)m->error);
	put_u32(&p, m->prot);
	put_u32(&p, m->flags);
	put_u64(&p, m->addr);
	put_u64(&p, m->len);
	put_u64(&p, m->old_addr);
	put_u64(&p, m->old_len);
	put_u64(&p, m->offset);
	put_u64(&p, m->dev);
	put_u64(&p, m->ino);
	put_str(&p, m->name, nlen);
	return artifact_record_end(w, p);
}

int mt_artifact_write_rss(struct mt_artifact_writer *w, const struct mt_artifact_rss *r)
{
	uint8_t *p;
	int err = 0;

	p = artifact_record_begin(w, MT_REC_RSS, MT_ARTIFACT_RSS_SIZE, &err);
	if (!p)
		return err;
	put_u64(&p, r->ts_ns);
	put_u32(&p, r->pid);
	put_u8(&p, r->why);
	put_u8(&p, 0);
	put_u16(&p, 0);
	put_u64(&p, r->anon);
	put_u64(&p, r->file);
	put_u64(&p, r->shmem);
	put_u64(&p, r->hwm);
	return artifact_record_end(w, p);
}

int mt_artifact_write_bench(struct mt_artifact_writer *w, const struct mt_artifact_bench *b)
{
	size_t ulen = field_len(b->uri, MT_ARTIFACT_BENCH_URI_MAX);
	bool marker = b->what == MT_BENCH_MARKER;
	uint8_t *p;
	int err = 0;

	/* A marker's timestamp after the URI: records of the other kinds stay as they were. */
	p = artifact_record_begin(w, MT_REC_BENCH, MT_ARTIFACT_BENCH_FIXED + 4 + ulen + 8 * marker,
				  &err);
	if (!p)
		return err;
	put_u64(&p, b->ts_ns);
	put_u32(&p, (uint32_t)b->pid);
	put_u8(&p, b->what);
	put_u8(&p, marker ? b->marker : 0);
	put_u16(&p, 0);
	put_str(&p, b->uri, ulen);
	if (marker)
		put_u64(&p, b->marker_ts_ns);
	return artifact_record_end(w, p);
}

/* One record of a leak scan: blocks [first, first + n) of l, as chunk `chunk`. */
static int write_leak_chunk(struct mt_artifact_writer *w, const struct mt_artifact_leaks *l,
			    uint32_t chunk, uint32_t first, uint32_t n)
{
	uint8_t *p;
	int err = 0;

	p = artifact_record_begin(w, MT_REC_LEAKS,
				  MT_ARTIFACT_LEAKS_FIXED + MT_ARTIFACT_LEAK_ENTRY * n, &err);
	if (!p)
		return err;
	put_u32(&p, l->pid);
	put_u32(&p, chunk);
	put_u32(&p, chunk ? 0 : l->flags);
	put_u32(&p, chunk ? 0 : l->threads);
	put_u32(&p, chunk ? 0 : l->regions);
	put_u32(&p, chunk ? 0 : l->unreadable_regions);
	put_u64(&p, chunk ? 0 : l->unreadable_bytes);
	put_u64(&p, chunk ? 0 : l->scanned_bytes);
	put_u64(&p, chunk ? 0 : l->scan_ns);
	put_u64(&p, chunk ? 0 : l->scan_cpu_ns);
	put_u32(&p, n);
	put_u32(&p, 0);
	for (uint32_t i = first; i < first + n; i++) {
		put_u64(&p, l->blocks[i].addr);
		put_u64(&p, l->blocks[i].size);
		put_u32(&p, l->blocks[i].stack);
		put_u8(&p, l->blocks[i].cls);
		put_bytes(&p, "\0\0\0", 3);
	}
	return artifact_record_end(w, p);
}

int mt_artifact_write_leaks(struct mt_artifact_writer *w, const struct mt_artifact_leaks *l)
{
	uint32_t chunk = 0, first = 0;
	int err;

	do {
		uint32_t n =
		    l->n - first < MT_ARTIFACT_LEAKS_PER ? l->n - first : MT_ARTIFACT_LEAKS_PER;

		err = write_leak_chunk(w, l, chunk++, first, n);
		first += n;
	} while (!err && first < l->n);
	return err;
}
