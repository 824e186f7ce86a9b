/* SPDX-License-Identifier: GPL-2.0 */
/* A page as a browser draws it: Debian's chromium, headless, with no way out of the machine. */
#ifndef MT_TEST_BROWSER_H
#define MT_TEST_BROWSER_H

/*
 * chromium --headless on url with what (--dump-dom, --screenshot=FILE): its stdout (to free).
 * netlog, when not NULL, gets the browser's network log (--log-net-log).
 */
char *mt_browser_run(const char *url, const char *what, const char *netlog);

/*
 * The DOM of url once its scripts ran (chromium --headless --dump-dom), to free. The browser
 * goes through a proxy on a port where nothing listens, with a profile of its own; the test
 * fails when it cannot run or fails. A test that calls it is added with
 * mt_tcase_add_tool_test(..., "chromium").
 */
char *mt_browser_dom(const char *url);

/*
 * The value of attribute name in the first start tag of text that begins with tag (to free);
 * the test fails when there is none.
 */
char *mt_html_attr(const char *text, const char *tag, const char *name);

#endif
