// SPDX-License-Identifier: GPL-2.0
/* Reading memtrack's JSON in tests (mtjson.h). */
#include <check.h>

#include "mtjson.h"

struct json_object *mt_json_get(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "no key \"%s\" in %s", key,
		      json_object_to_json_string(o));
	return v;
}

int64_t mt_json_i64(struct json_object *o, const char *key)
{
	return json_object_get_int64(mt_json_get(o, key));
}

double mt_json_double(struct json_object *o, const char *key)
{
	struct json_object *v = mt_json_get(o, key);

	ck_assert_msg(json_object_is_type(v, json_type_double) ||
			  json_object_is_type(v, json_type_int),
		      "\"%s\" is not a number", key);
	return json_object_get_double(v);
}
