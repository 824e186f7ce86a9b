// SPDX-License-Identifier: GPL-2.0
/* The benchmarks of `memtrack exec-harness -`, read from JSON (harness.h, docs/HARNESS.md). */
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "base/errbuf.h"
#include "harness/harness.h"
#include "harness/harness_duration.h"

struct limit_field {
	const char *key;
	bool rounds; /* a positive integer; otherwise a duration */
	size_t has_off, val_off;
};

/* The walltime_args keys, each mapped onto its has_ flag and value in struct mt_bench_limits. */
#define LIMIT_OFFSETS(h, v) offsetof(struct mt_bench_limits, h), offsetof(struct mt_bench_limits, v)

static const struct limit_field limit_fields[] = {
    {"warmup_time", false, LIMIT_OFFSETS(has_warmup, warmup_ns)},
    {"max_time", false, LIMIT_OFFSETS(has_max_time, max_time_ns)},
    {"min_time", false, LIMIT_OFFSETS(has_min_time, min_time_ns)},
    {"max_rounds", true, LIMIT_OFFSETS(has_max_rounds, max_rounds)},
    {"min_rounds", true, LIMIT_OFFSETS(has_min_rounds, min_rounds)},
};

static int parse_limit(struct json_object *v, const struct limit_field *f, size_t idx,
		       struct mt_bench_limits *l, char *err, size_t errlen)
{
	bool *has = (bool *)((char *)l + f->has_off);
	uint64_t *val = (uint64_t *)((char *)l + f->val_off);
	char derr[MT_HARNESS_ERRLEN];

	if (!v) /* JSON null: keep the command-line value or the default */
		return 0;
	if (f->rounds) {
		/* A u64 for serde: 0 included, no sign, no fraction, no exponent. */
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
			return mt_errbuf(err, errlen,
					 "benchmark %zu: walltime_args.%s must be a non-negative "
					 "integer or null",
					 idx, f->key);
		*val = json_object_get_uint64(v);
	} else {
		/* A JSON number is seconds, like a bare number on the command line. */
		if (!json_object_is_type(v, json_type_string) &&
		    !json_object_is_type(v, json_type_int) &&
		    !json_object_is_type(v, json_type_double))
			return mt_errbuf(
			    err, errlen,
			    "benchmark %zu: walltime_args.%s must be a duration such as \"1s\", "
			    "or null",
			    idx, f->key);
		if (mt_harness_parse_duration(json_object_get_string(v), val, derr, sizeof(derr)))
			return mt_errbuf(err, errlen, "benchmark %zu: walltime_args.%s: %s", idx,
					 f->key, derr);
	}
	*has = true;
	return 0;
}

static void warn_unknown(size_t idx, const char *where, const char *key)
{
	fprintf(stderr, MT_HARNESS_PROG ": warning: benchmark %zu: unknown key \"%s%s\" ignored\n",
		idx, where, key);
}

static int parse_walltime_args(struct json_object *o, size_t idx, struct mt_bench_limits *l,
			       char *err, size_t errlen)
{
	size_t i;
	int ret;

	if (!o)
		return 0;
	if (!json_object_is_type(o, json_type_object))
		return mt_errbuf(err, errlen,
				 "benchmark %zu: \"walltime_args\" must be an object or null", idx);
	json_object_object_foreach(o, key, val)
	{
		for (i = 0; i < sizeof(limit_fields) / sizeof(limit_fields[0]); i++) {
			if (!strcmp(key, limit_fields[i].key))
				break;
		}
		/*
		 * CodSpeed ignores keys it does not know, and newer runners add some: ignore
		 * them too, but say so, since a misspelt limit would otherwise go unnoticed.
		 */
		if (i == sizeof(limit_fields) / sizeof(limit_fields[0])) {
			warn_unknown(idx, "walltime_args.", key);
			continue;
		}
		ret = parse_limit(val, &limit_fields[i], idx, l, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

/* A JSON string usable as a C string: no embedded NUL. */
static const char *json_cstring(struct json_object *v)
{
	const char *s;

	if (!v || !json_object_is_type(v, json_type_string))
		return NULL;
	s = json_object_get_string(v);
	return strlen(s) == (size_t)json_object_get_string_len(v) ? s : NULL;
}

static int parse_command(struct json_object *o, size_t idx, struct mt_bench *b, char *err,
			 size_t errlen)
{
	size_t n = 0, i;

	if (o && json_object_is_type(o, json_type_array))
		n = json_object_array_length(o);
	if (!n)
		return mt_errbuf(err, errlen,
				 "benchmark %zu: \"command\" must be a non-empty array of strings",
				 idx);
	free(b->argv);
	b->argv = calloc(n + 1, sizeof(*b->argv));
	if (!b->argv)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const char *s = json_cstring(json_object_array_get_idx(o, i));

		if (!s)
			return mt_errbuf(
			    err, errlen,
			    "benchmark %zu: \"command\" must be an array of strings without "
			    "NUL bytes",
			    idx);
		b->argv[i] = strdup(s);
		if (!b->argv[i])
			return -ENOMEM;
	}
	if (!b->argv[0][0])
		return mt_errbuf(err, errlen, "benchmark %zu: the program in \"command\" is empty",
				 idx);
	return 0;
}

static int parse_name(struct json_object *o, size_t idx, struct mt_bench *b, char *err,
		      size_t errlen)
{
	const char *s;

	if (!o)
		return 0;
	s = json_cstring(o);
	if (!s)
		return mt_errbuf(
		    err, errlen,
		    "benchmark %zu: \"name\" must be a string without NUL bytes, or null", idx);
	free(b->name);
	b->name = strdup(s);
	return b->name ? 0 : -ENOMEM;
}

static int parse_bench(struct json_object *o, size_t idx, struct mt_bench *b, char *err,
		       size_t errlen)
{
	int ret = 0;

	if (!json_object_is_type(o, json_type_object))
		return mt_errbuf(err, errlen, "benchmark %zu is not a JSON object", idx);
	json_object_object_foreach(o, key, val)
	{
		if (!strcmp(key, "command"))
			ret = parse_command(val, idx, b, err, errlen);
		else if (!strcmp(key, "name"))
			ret = parse_name(val, idx, b, err, errlen);
		else if (!strcmp(key, "walltime_args"))
			ret = parse_walltime_args(val, idx, &b->limits, err, errlen);
		else
			warn_unknown(idx, "", key);
		if (ret)
			return ret;
	}
	if (!b->argv)
		return mt_errbuf(err, errlen, "benchmark %zu has no \"command\"", idx);
	return 0;
}

static bool only_blanks(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (!strchr(" \t\r\n", s[i]))
			return false;
	}
	return true;
}

static int parse_root(const char *text, size_t len, struct json_tokener *tok,
		      struct json_object **root, char *err, size_t errlen)
{
	enum json_tokener_error jerr;
	size_t end;

	if (only_blanks(text, len))
		return mt_errbuf(err, errlen, "no input: expected a JSON array of benchmarks");
	*root = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	if (jerr == json_tokener_continue)
		return mt_errbuf(err, errlen,
				 "invalid JSON: the input ends before the array is closed");
	if (jerr != json_tokener_success)
		return mt_errbuf(err, errlen, "invalid JSON at byte %zu: %s", end,
				 json_tokener_error_desc(jerr));
	if (!only_blanks(text + end, len - end))
		return mt_errbuf(err, errlen,
				 "invalid JSON at byte %zu: text after the benchmark array", end);
	if (!json_object_is_type(*root, json_type_array))
		return mt_errbuf(err, errlen, "expected a JSON array of benchmarks");
	if (!json_object_array_length(*root))
		return mt_errbuf(err, errlen, "the JSON array holds no benchmark");
	return 0;
}

int mt_harness_json_parse(const char *text, size_t len, const struct mt_bench_limits *defaults,
			  struct mt_bench_list *out, char *err, size_t errlen)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *root = NULL;
	size_t i, n;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!tok)
		return -ENOMEM;
	/* Benchmark lists come from programs: refuse the leniencies (trailing commas...) of json-c.
	 */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	if (len > INT_MAX) {
		ret = mt_errbuf(err, errlen, "the JSON input is larger than 2 GiB");
		goto cleanup;
	}
	ret = parse_root(text, len, tok, &root, err, errlen);
	if (ret)
		goto cleanup;
	n = json_object_array_length(root);
	out->v = calloc(n, sizeof(*out->v));
	if (!out->v) {
		ret = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < n; i++) {
		out->n = i + 1;
		out->v[i].limits = *defaults;
		ret =
		    parse_bench(json_object_array_get_idx(root, i), i + 1, &out->v[i], err, errlen);
		if (ret)
			goto cleanup;
	}
cleanup:
	json_object_put(root);
	json_tokener_free(tok);
	if (ret)
		mt_bench_list_free(out);
	return ret;
}

void mt_bench_list_free(struct mt_bench_list *l)
{
	size_t i;
	char **a;

	for (i = 0; i < l->n; i++) {
		for (a = l->v[i].argv; a && *a; a++)
			free(*a);
		free(l->v[i].argv);
		free(l->v[i].name);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}
