/* SPDX-License-Identifier: GPL-2.0 */
/* Reading memtrack's JSON (report --json, exec-harness results) in tests: a missing key fails. */
#ifndef MT_TEST_JSON_H
#define MT_TEST_JSON_H

#include <stdint.h>

#include <json-c/json.h>

/* The value of key in object o; the test fails when there is none. */
struct json_object *mt_json_get(struct json_object *o, const char *key);
/* The integer value of key. */
int64_t mt_json_i64(struct json_object *o, const char *key);
/* The number (integer or not) value of key; the test fails on anything else. */
double mt_json_double(struct json_object *o, const char *key);

#endif
