/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The HTML report's parts (output_html.c): the data its script draws from (output_html_data.c),
 * the callers and callees tables (output_html_calls.c); the page's frame, which the comparison's
 * page (output_diff.c) shares.
 */
#ifndef MT_OUTPUT_HTML_INT_H
#define MT_OUTPUT_HTML_INT_H

#include <stdio.h>

#include "output/output.h"

/* s as a JSON string inside a <script> element: UTF-8, and no '<' that could end the element. */
void mt_html_jstr(FILE *out, const char *s);
/*
 * A page's beginning, to its <body> and heading: the title "memtrack: " and words, the style
 * sheet, the Content-Security-Policy that forbids loading anything.
 */
void mt_html_begin(FILE *out, const char *const *words, int n);
/* Its end: the script (which draws from an element id="mt-data"), then </html>. 0 or -EIO. */
int mt_html_end(FILE *out);
/* The page's data, one <script type="application/json" id="mt-data">. 0 or -ENOMEM. */
int mt_html_data(const struct mt_report *rep, FILE *out);
/*
 * The frames of an allocation stack, innermost first (the allocator, then its callers), folded
 * under its first caller; a sentence when there is none.
 */
void mt_html_stack(const struct mt_report *rep, uint32_t stack_id, FILE *out);
/* The leaks view (output_html_leaks.c): a run's leak scans, with their own script. 0 or -ENOMEM. */
int mt_html_leaks(const struct mt_report *rep, FILE *out);
/*
 * The comparison's differential flamegraph (output_diff_flame.c): the new run's sites colored by
 * their change against the base's, with its own script. 0, -ENOMEM or -EIO.
 */
int mt_html_diff_flame(const struct mt_diff_view *v, FILE *out);
/*
 * A function's name as the page shows it: C++'s template arguments shortened
 * (unwind_shorten.h), the whole name on hover (a title) when it was.
 */
void mt_html_function(FILE *out, const char *name);
/* The functions that allocate, with their callers and callees. 0 or -ENOMEM. */
int mt_html_calls(const struct mt_report *rep, FILE *out);
/* memtrack bench's benchmarks and their data (output_html_bench.c); nothing when none. */
void mt_html_bench(const struct mt_report *rep, const struct mt_bench_split *bench, FILE *out);

#endif
