// SPDX-License-Identifier: GPL-2.0
/* A page as a browser draws it (browser.h). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "browser.h"
#include "mtrun.h"

char *mt_browser_run(const char *url, const char *what, const char *netlog)
{
	char profile_dir[64], profile[96], log[256];
	const char *argv[] = {"chromium",
			      "--headless",
			      "--no-sandbox",
			      "--disable-gpu",
			      "--no-first-run",
			      "--disable-background-networking",
			      "--disable-sync",
			      "--window-size=1200,1500",
			      "--proxy-server=http://127.0.0.1:9",
			      profile,
			      what,
			      netlog ? log : url,
			      url,
			      NULL};
	const char *env[] = {"HOME=/tmp", NULL};
	struct mt_out o;
	char *out;

	mt_tmpdir(profile_dir);
	snprintf(profile, sizeof(profile), "--user-data-dir=%s", profile_dir);
	snprintf(log, sizeof(log), "--log-net-log=%s", netlog ? netlog : "");
	if (!netlog)
		argv[12] = NULL;
	ck_assert_msg(mt_run(argv, env, NULL, 120, &o) == 0, "cannot run chromium");
	ck_assert_msg(o.code == 0, "chromium failed (%d): %.2000s", o.code, o.err);
	out = o.out;
	o.out = NULL;
	mt_out_free(&o);
	mt_run((const char *[]){"rm", "-rf", profile_dir, NULL}, NULL, NULL, 30, &o);
	mt_out_free(&o);
	return out;
}

char *mt_browser_dom(const char *url)
{
	return mt_browser_run(url, "--dump-dom", NULL);
}

char *mt_html_attr(const char *text, const char *tag, const char *name)
{
	const char *t = strstr(text, tag), *end, *a;
	char want[64];

	ck_assert_msg(t, "no %s in %.2000s", tag, text);
	end = strchr(t, '>');
	snprintf(want, sizeof(want), " %s=\"", name);
	a = strstr(t, want);
	ck_assert_msg(a && a < end, "%s has no %s: %.300s", tag, name, t);
	a += strlen(want);
	return strndup(a, strcspn(a, "\""));
}
