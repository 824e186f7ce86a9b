/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The HTML report's parts (output_html.c): the data its script draws from (output_html_data.c)
 * and the callers and callees tables (output_html_calls.c).
 */
#ifndef MT_OUTPUT_HTML_INT_H
#define MT_OUTPUT_HTML_INT_H

#include <stdio.h>

#include "output/output.h"

/* s as a JSON string inside a <script> element: UTF-8, and no '<' that could end the element. */
void mt_html_jstr(FILE *out, const char *s);
/* The page's data, one <script type="application/json" id="mt-data">. 0 or -ENOMEM. */
int mt_html_data(const struct mt_report *rep, FILE *out);
/* The functions that allocate, with their callers and callees. 0 or -ENOMEM. */
int mt_html_calls(const struct mt_report *rep, FILE *out);

#endif
