// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the artifact reader and the report over arbitrary bytes. Each input is read
 * twice, from memory and through a file descriptor (the two sources of the reader), and the two
 * readings must agree; the aggregates must be consistent with each other; every output is
 * rendered, the pprof profile (--pprof) among them, its sites unsymbolised. The same bytes, taken
 * as the entries of an event block (and as the five streams of a compressed one), must decode to
 * events that encode and decode back to themselves. Built and run by tools/fuzz.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "writer/evblock.h"
#include "output/output.h"

static FILE *devnull;

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_artifact: invariant broken: %s\n", what);
		abort();
	}
}

/* Sums that hold whatever the input: each event is counted once at every level. */
static void check_sums(const struct mt_report *rep)
{
	uint64_t pa = 0, ia = 0, iu = 0, fa = 0, ff = 0, hist = 0, fam = 0;
	size_t i;

	for (i = 0; i < rep->n_processes; i++)
		pa += rep->processes[i].t.allocations;
	for (i = 0; i < rep->n_images; i++) {
		const struct mt_image *g = &rep->images[i];

		ia += g->c.allocations;
		iu += g->c.unmatched_frees;
		check(g->parent < (int64_t)i, "an image's parent appeared before it");
		check(g->first <= i, "an image's process started before it");
		check(g->end != MT_IMAGE_RUNNING || !g->released.blocks,
		      "only an ended image released blocks");
	}
	check(ia == rep->totals.allocations && iu == rep->totals.unmatched_frees,
	      "image counts sum to the total");
	for (i = 0; i < rep->n_files; i++) {
		fa += rep->files[i].t.allocations;
		ff += rep->files[i].t.frees;
	}
	for (i = 0; i < MT_REPORT_HIST_BUCKETS; i++)
		hist += rep->histogram[i];
	for (i = 0; i <= MT_FAM_MAX; i++)
		fam += rep->families[i].allocations;
	check(pa == rep->totals.allocations, "process allocations sum to the total");
	check(fa == rep->totals.allocations && fam == fa, "file and family allocations");
	check(ff == rep->totals.frees, "file frees sum to the total");
	check(hist == rep->totals.allocations + rep->totals.reallocs, "histogram total");
	/* free(NULL) is the only event that counts nowhere. */
	check(rep->totals.allocations + rep->totals.frees + rep->totals.reallocs +
		      rep->totals.failed + rep->unknown_events <=
		  rep->events,
	      "events counted at most once");
	check(rep->totals.frees + rep->totals.unmatched_frees <= rep->events,
	      "frees counted at most once");
	check(rep->totals.live_blocks <= rep->totals.allocations + rep->totals.reallocs,
	      "live blocks bounded by blocks handed out");
}

/* The same bytes through a file descriptor: must give the same result as from memory. */
static void check_fd_path(const uint8_t *data, size_t size, int mem_ret,
			  const struct mt_report *mem)
{
	char path[64], err[MT_ARTIFACT_ERRLEN];
	struct mt_report *rep;
	int fd = memfd_create("fuzz_artifact", MFD_CLOEXEC), ret;

	if (fd < 0)
		return;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ret = mt_report_load(path, &rep, err, sizeof(err));
	close(fd);
	check(ret == mem_ret, "memory and fd readings return the same");
	if (ret)
		return;
	check(!memcmp(&rep->totals, &mem->totals, sizeof(rep->totals)), "same totals");
	check(rep->truncated == mem->truncated && rep->events == mem->events, "same shape");
	mt_report_free(rep);
}

/* A site counts calls the totals count, and never more live blocks than it made. */
static void check_sites(const struct mt_report *rep)
{
	uint64_t calls = 0;

	for (size_t i = 0; i < mt_sites_count(rep->sites); i++) {
		const struct mt_site *site = mt_sites_get(rep->sites, i);

		calls += site->allocations;
		check(site->live_blocks <= site->allocations, "a site's live blocks it made");
	}
	check(calls <= rep->totals.allocations + rep->totals.reallocs,
	      "sites count calls the totals count");
}

/* The heap over time and the sites at the peak follow the replay's own peak. */
static void check_peak(const struct mt_report *rep)
{
	const struct mt_timeline *tl = rep->timeline;
	uint64_t most = 0, at_peak = 0;

	check(tl->n_buckets <= MT_TIMELINE_MAX_BUCKETS && tl->tree.n == tl->n_buckets,
	      "the tree's line has a point per bucket, at most the maximum");
	for (size_t b = 0; b < tl->tree.n; b++)
		most = tl->tree.max[b] > most ? tl->tree.max[b] : most;
	check(most == rep->totals.peak_bytes && tl->peak_bytes == most,
	      "the tree's line reaches the peak");
	for (size_t i = 0; i < mt_sites_count(rep->sites); i++)
		at_peak += mt_sites_get(rep->sites, i)->peak_bytes;
	check(at_peak <= rep->totals.peak_bytes, "sites hold at most the peak at the peak");
}

/* Whatever events the bytes decode to, the encoder writes them so that they decode the same. */
static void check_evblock(const uint8_t *data, size_t size)
{
	struct mt_evblock_state dec, enc, back;
	uint8_t out[MT_EVBLOCK_EVENT_MAX];
	size_t pos = 0;

	mt_evblock_reset(&dec);
	mt_evblock_reset(&enc);
	mt_evblock_reset(&back);
	while (pos < size) {
		struct mt_event e, again;
		size_t used, len, used2;
		enum mt_evblock_result res =
		    mt_evblock_get(&dec, data + pos, size - pos, &e, &used);

		if (res == MT_EVB_SKIPPED) {
			pos += used;
			continue;
		}
		if (res != MT_EVB_EVENT)
			return;
		pos += used;
		len = mt_evblock_put(&enc, out, &e);
		check(len <= MT_EVBLOCK_EVENT_MAX, "an encoded event fits its maximum");
		check(mt_evblock_get(&back, out, len, &again, &used2) == MT_EVB_EVENT &&
			  used2 == len,
		      "an encoded event decodes");
		check(!memcmp(&e, &again, sizeof(e)), "an event survives encoding");
	}
}

/* The state at the start of a block of version 5, 6 (columns) or 7 (columns in microseconds). */
static void reset_block(struct mt_evblock_state *s, int version)
{
	if (version >= 7)
		mt_evblock_reset_columns_us(s);
	else if (version == 6)
		mt_evblock_reset_columns(s);
	else
		mt_evblock_reset(s);
}

/*
 * The same for a compressed block's streams: the bytes cut in equal parts, decoded as the streams
 * of one block of version 5, 6 or 7, each event encoded into streams again and decoded back.
 */
static void check_evblock_split(const uint8_t *data, size_t size, int version)
{
	static const unsigned int most[MT_EVB_STREAMS] = MT_EVB_STREAM_MAX;
	static struct mt_evblock_state dec, enc, back;
	struct mt_evblock_cursor c;
	enum mt_evblock_result res;
	struct mt_event e, again;

	for (int k = 0; k < MT_EVB_STREAMS; k++) {
		c.p[k] = data + size * (size_t)k / MT_EVB_STREAMS;
		c.left[k] =
		    size * (size_t)(k + 1) / MT_EVB_STREAMS - size * (size_t)k / MT_EVB_STREAMS;
	}
	reset_block(&dec, version);
	reset_block(&enc, version);
	reset_block(&back, version);
	while (c.left[MT_EVB_S_TAG] && (res = mt_evblock_get_split(&dec, &c, &e)) != MT_EVB_SHORT &&
	       res != MT_EVB_CORRUPT && res != MT_EVB_REQUIRED) {
		uint8_t out[MT_EVB_STREAMS][MT_EVBLOCK_EVENT_MAX];
		struct mt_evblock_split at;
		struct mt_evblock_cursor again_c;

		if (res == MT_EVB_SKIPPED)
			continue;
		for (int k = 0; k < MT_EVB_STREAMS; k++)
			at.p[k] = out[k];
		mt_evblock_put_split(&enc, &at, &e);
		for (int k = 0; k < MT_EVB_STREAMS; k++) {
			again_c.p[k] = out[k];
			again_c.left[k] = (size_t)(at.p[k] - out[k]);
			check(again_c.left[k] <= most[k],
			      "a stream's share of an event fits its maximum");
		}
		check(mt_evblock_get_split(&back, &again_c, &again) == MT_EVB_EVENT,
		      "an event encoded into streams decodes");
		for (int k = 0; k < MT_EVB_STREAMS; k++)
			check(!again_c.left[k], "an event's streams are read whole");
		check(!memcmp(&e, &again, sizeof(e)), "an event survives encoding into streams");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[MT_ARTIFACT_ERRLEN] = "";
	struct mt_report *rep;
	int ret;

	if (!devnull)
		devnull = fopen("/dev/null", "w");
	check_evblock(data, size);
	for (int version = 5; version <= 7; version++)
		check_evblock_split(data, size, version);
	ret = mt_report_load_mem(data, size, &rep, err, sizeof(err));
	if (ret) {
		check(ret < 0 && err[0], "an error comes with a message");
		check_fd_path(data, size, ret, NULL);
		return 0;
	}
	check_sums(rep);
	check_sites(rep);
	check_peak(rep);
	check_fd_path(data, size, 0, rep);
	mt_output_text(rep, devnull, 3);
	mt_output_json(rep, devnull);
	mt_output_sites(rep, devnull, 3, MT_FOLDED_LIVE);
	mt_output_folded(rep, MT_FOLDED_BYTES, devnull);
	mt_output_svg(rep, devnull);
	mt_output_html(rep, devnull, 3);
	mt_output_pprof(rep, devnull);
	mt_report_free(rep);
	return 0;
}
