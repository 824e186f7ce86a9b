// SPDX-License-Identifier: GPL-2.0
/* CodSpeed's ExecutionTimestamps (codspeed_stamps.h): noted, taken from marks, written. */
#include <errno.h>
#include <limits.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codspeed/codspeed_stamps.h"
#include "base/grow.h"
#include "base/outfile.h"
#include "reader/artifact_read.h"

int mt_codspeed_stamps_uri(struct mt_codspeed_stamps *s, uint64_t ts_ns, const char *uri)
{
	char *copy = strdup(uri);

	if (!copy || MT_GROW(s->uris, s->cap_uris, s->n_uris + 1, 16)) {
		free(copy);
		return -ENOMEM;
	}
	s->uris[s->n_uris++] = (struct mt_codspeed_uri){ts_ns, copy};
	return 0;
}

int mt_codspeed_stamps_added(struct mt_codspeed_stamps *s, enum mt_codspeed_marker_kind kind,
			     uint64_t ts_ns)
{
	if (MT_GROW(s->markers, s->cap_markers, s->n_markers + 1, 16))
		return -ENOMEM;
	s->markers[s->n_markers++] = (struct mt_codspeed_marker){kind, ts_ns};
	return 0;
}

int mt_codspeed_stamps_marker(struct mt_codspeed_stamps *s, enum mt_codspeed_marker_kind kind,
			      uint64_t ts_ns)
{
	if (mt_codspeed_stamps_added(s, kind, ts_ns))
		return -ENOMEM;
	if (kind == MT_CS_SAMPLE_END) {
		if (s->n_windows)
			s->windows[s->n_windows - 1].end_ns = ts_ns;
		return 0;
	}
	if (MT_GROW(s->windows, s->cap_windows, s->n_windows + 1, 16))
		return -ENOMEM;
	s->windows[s->n_windows++] = (struct mt_codspeed_window){ts_ns, UINT64_MAX};
	return 0;
}

void mt_codspeed_stamps_free(struct mt_codspeed_stamps *s)
{
	for (size_t i = 0; i < s->n_uris; i++)
		free(s->uris[i].uri);
	free(s->uris);
	free(s->markers);
	free(s->windows);
	memset(s, 0, sizeof(*s));
}

/* An AddMarker's marker as the artifact records it, as MarkerType's variant. */
static const enum mt_codspeed_marker_kind marker_kinds[] = {
    [MT_BENCH_SAMPLE_START] = MT_CS_SAMPLE_START,
    [MT_BENCH_SAMPLE_END] = MT_CS_SAMPLE_END,
    [MT_BENCH_ROUND_START] = MT_CS_ROUND_START,
    [MT_BENCH_ROUND_END] = MT_CS_ROUND_END,
};

/*
 * handle_fifo_messages' benchmark_started: one SampleStart until its SampleEnd. An AddMarker's
 * marker goes into the same list, as it came, whatever its kind: the runner pushes it there
 * without looking at it (nor at benchmark_started).
 */
static int take_mark(struct mt_codspeed_stamps *s, const struct mt_artifact_bench *b, bool *open)
{
	switch (b->what) {
	case MT_BENCH_START:
		if (*open)
			return 0;
		*open = true;
		return mt_codspeed_stamps_marker(s, MT_CS_SAMPLE_START, b->ts_ns);
	case MT_BENCH_STOP:
		if (!*open)
			return 0;
		*open = false;
		return mt_codspeed_stamps_marker(s, MT_CS_SAMPLE_END, b->ts_ns);
	case MT_BENCH_URI:
		return mt_codspeed_stamps_uri(s, b->ts_ns, b->uri);
	case MT_BENCH_MARKER:
		if (b->marker >= sizeof(marker_kinds) / sizeof(marker_kinds[0]))
			return 0; /* a kind this version does not know */
		return mt_codspeed_stamps_added(s, marker_kinds[b->marker], b->marker_ts_ns);
	}
	return 0;
}

int mt_codspeed_stamps_of(const char *mtk, struct mt_codspeed_stamps *s, char *err, size_t errlen)
{
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	bool open = false;
	int ret = mt_artifact_open(&r, mtk, err, errlen);

	if (ret)
		return ret;
	while ((ret = mt_artifact_next(r, &it)) > 0)
		if (it.type == MT_ITEM_BENCH && (ret = take_mark(s, it.bench, &open)) < 0)
			break;
	if (ret < 0)
		snprintf(err, errlen, "%s",
			 ret == -ENOMEM ? "out of memory" : mt_artifact_error(r));
	mt_artifact_close(r);
	return ret < 0 ? ret : 0;
}

static void pack(msgpack_packer *pk, const struct mt_codspeed_stamps *s)
{
	/* The variants' names, as serde writes them (the aliases BenchmarkStart and BenchmarkEnd
	 * are only read). */
	static const char *const names[] = {[MT_CS_SAMPLE_START] = "SampleStart",
					    [MT_CS_SAMPLE_END] = "SampleEnd",
					    [MT_CS_ROUND_START] = "RoundStart",
					    [MT_CS_ROUND_END] = "RoundEnd"};

	msgpack_pack_map(pk, 2);
	mt_codspeed_pack_str(pk, "uri_by_ts");
	msgpack_pack_array(pk, s->n_uris);
	for (size_t i = 0; i < s->n_uris; i++) {
		msgpack_pack_array(pk, 2);
		msgpack_pack_uint64(pk, s->uris[i].ts_ns);
		mt_codspeed_pack_str(pk, s->uris[i].uri);
	}
	mt_codspeed_pack_str(pk, "markers");
	msgpack_pack_array(pk, s->n_markers);
	for (size_t i = 0; i < s->n_markers; i++) {
		/* serde's externally tagged enum: a map of one variant to its value */
		msgpack_pack_map(pk, 1);
		mt_codspeed_pack_str(pk, names[s->markers[i].kind]);
		msgpack_pack_uint64(pk, s->markers[i].ts_ns);
	}
}

int mt_codspeed_write_stamps(const char *path, const struct mt_codspeed_stamps *s,
			     const struct mt_identity *owner, char *err, size_t errlen)
{
	char tmp[PATH_MAX + 80];
	const char *slash;
	int dir_len;
	msgpack_sbuffer buf;
	msgpack_packer pk;
	FILE *f = NULL;
	int ret = 0, fd;

	err[0] = '\0';
	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	slash = strrchr(path, '/');
	dir_len = slash ? (int)(slash - path + 1) : 0;

	/* A name without "ExecutionTimestamps" until it is whole: the runner reads any such. */
	snprintf(tmp, sizeof(tmp), "%.*s.memtrack-%d-timestamps.tmp", dir_len, path, (int)getpid());
	msgpack_sbuffer_init(&buf);
	msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
	pack(&pk, s);
	fd = mt_outfile_open(tmp, MT_OUTFILE_REPLACE, owner, err, errlen);
	if (fd >= 0 && !(f = fdopen(fd, "w")))
		close(fd);
	if (!f)
		ret = fd < 0 ? fd : -ENOMEM;
	else if (fwrite(buf.data, 1, buf.size, f) != buf.size)
		ret = -EIO;
	if (f && fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret) {
		unlink(tmp);
		if (!err[0])
			snprintf(err, errlen, "%s", strerror(-ret));
	}
	msgpack_sbuffer_destroy(&buf);
	return ret;
}
