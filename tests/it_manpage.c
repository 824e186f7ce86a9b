// SPDX-License-Identifier: GPL-2.0
/*
 * What `make install` puts beside the binary, used as a person uses it: the manual page read
 * with `man -l`, which must describe every option that `memtrack SUBCOMMAND --help` shows, in
 * that subcommand's section, and name every subcommand; the bash completion, driven as bash
 * drives a completion function; and `memtrack help [SUBCOMMAND]`, the same text as --help.
 * The lists are read from the built binary, so that an option added to --help and not to the
 * page fails here.
 */
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mtrun.h"
#include "lib/suite.h"

#define MAX_WORDS 128

struct words {
	int n;
	char *w[MAX_WORDS];
};

static void words_add(struct words *ws, const char *s, size_t len)
{
	for (int i = 0; i < ws->n; i++)
		if (strlen(ws->w[i]) == len && strncmp(ws->w[i], s, len) == 0)
			return;
	ck_assert_int_lt(ws->n, MAX_WORDS);
	ws->w[ws->n++] = strndup(s, len);
}

static void words_free(struct words *ws)
{
	for (int i = 0; i < ws->n; i++)
		free(ws->w[i]);
	ws->n = 0;
}

static void install_into(const char *dir)
{
	struct mt_out o;

	ck_assert_int_eq(mt_make_install(dir, &o), 0);
	ck_assert_msg(o.code == 0, "make install failed (%d): %s%s", o.code, o.out, o.err);
	mt_out_free(&o);
}

/* What `man -l PAGE` prints, without hyphenation or justification, in plain ASCII. */
static char *man_page(const char *page)
{
	const char *argv[] = {"man", "--nh", "--nj", "-l", page, NULL};
	const char *env[] = {"MANWIDTH=200", "MANPAGER=cat", "PAGER=cat", "LC_ALL=C", NULL};
	struct mt_out o;
	char *text;

	ck_assert_int_eq(mt_run(argv, env, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "man -l %s failed (%d): %s", page, o.code, o.err);
	text = o.out;
	o.out = NULL;
	mt_out_free(&o);
	return text;
}

/* The text of the page's section TITLE (a line of its own, flush left), up to the next one. */
static char *section(const char *text, const char *title)
{
	const char *s = text, *end;
	size_t len = strlen(title);

	for (;;) {
		s = strstr(s, title);
		ck_assert_msg(s, "the manual page has no section %s", title);
		if ((s == text || s[-1] == '\n') && s[len] == '\n')
			break;
		s += len;
	}
	s += len;
	for (end = s; (end = strchr(end, '\n')); end++)
		if (isupper((unsigned char)end[1]))
			break;
	return strndup(s, end ? (size_t)(end - s) : strlen(s));
}

/* Whether word stands in text as a whole word (an option: not a prefix of a longer one). */
static bool has_word(const char *text, const char *word)
{
	size_t len = strlen(word);

	for (const char *s = text; (s = strstr(s, word)); s++) {
		bool starts = s == text || !(isalnum((unsigned char)s[-1]) || s[-1] == '-');
		bool ends = !(isalnum((unsigned char)s[len]) || s[len] == '-');

		if (starts && ends)
			return true;
	}
	return false;
}

static char *help_of(const char *sub)
{
	const char *argv[] = {MEMTRACK, sub, "--help", NULL};
	struct mt_out o;
	char *text;

	if (!sub) {
		argv[1] = "--help";
		argv[2] = NULL;
	}
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 30, &o), 0);
	ck_assert_msg(o.code == 0, "memtrack %s --help exited %d", sub ? sub : "", o.code);
	text = o.out;
	o.out = NULL;
	mt_out_free(&o);
	return text;
}

/*
 * The options a --help text defines: on each line that starts (after blanks) with a dash, up to
 * its description (two blanks), every -x and --name.
 */
static void help_options(const char *help, struct words *ws)
{
	for (const char *l = help; *l; l = strchrnul(l, '\n') + (l[strcspn(l, "\n")] != 0)) {
		const char *s = l, *end;

		while (*s == ' ')
			s++;
		if (s == l || *s != '-')
			continue;
		end = strstr(s, "  ");
		if (!end || end > strchrnul(s, '\n'))
			end = strchrnul(s, '\n');
		for (const char *p = s; p < end; p++) {
			size_t n = 0;

			if (*p != '-' || (p > s && !strchr(" ,[", p[-1])))
				continue;
			n = p[1] == '-' ? 2 : 1;
			if (!isalpha((unsigned char)p[n]))
				continue;
			while (p + n < end && (isalnum((unsigned char)p[n]) || p[n] == '-'))
				n++;
			words_add(ws, p, n);
			p += n - 1;
		}
	}
}

/* The subcommands memtrack --help lists: lines "  NAME  description". */
static void subcommands(const char *help, struct words *ws)
{
	for (const char *l = help; *l; l = strchrnul(l, '\n') + (l[strcspn(l, "\n")] != 0)) {
		size_t n;

		if (strncmp(l, "  ", 2) != 0 || !islower((unsigned char)l[2]))
			continue;
		n = strspn(l + 2, "abcdefghijklmnopqrstuvwxyz-");
		if (strncmp(l + 2 + n, "  ", 2) == 0)
			words_add(ws, l + 2, n);
	}
}

START_TEST(manual_page_describes_every_option_of_every_subcommand)
{
	char dir[64], page[128], *text, *main_help, *cmds;
	struct words subs = {0};

	mt_tmpdir(dir);
	install_into(dir);
	snprintf(page, sizeof(page), "%s/usr/share/man/man1/memtrack.1", dir);
	text = man_page(page);
	ck_assert_msg(strstr(text, "memtrack - record every heap allocation"), "%.300s", text);

	main_help = help_of(NULL);
	subcommands(main_help, &subs);
	ck_assert_msg(subs.n >= 3, "memtrack --help lists %d subcommands: %s", subs.n, main_help);
	cmds = section(text, "COMMANDS");
	for (int i = 0; i < subs.n; i++) {
		struct words opts = {0};
		char title[64], *sub_help, *sect;

		ck_assert_msg(has_word(cmds, subs.w[i]), "COMMANDS does not describe '%s'",
			      subs.w[i]);
		snprintf(title, sizeof(title), "%s OPTIONS", subs.w[i]);
		for (char *c = title; *c; c++)
			*c = toupper((unsigned char)*c);
		sub_help = help_of(subs.w[i]);
		help_options(sub_help, &opts);
		ck_assert_msg(opts.n >= 2, "memtrack %s --help defines %d options", subs.w[i],
			      opts.n);
		sect = section(text, title);
		for (int j = 0; j < opts.n; j++)
			ck_assert_msg(has_word(sect, opts.w[j]),
				      "memtrack %s --help shows %s, the manual's %s does not",
				      subs.w[i], opts.w[j], title);
		free(sect);
		free(sub_help);
		words_free(&opts);
	}
	{
		char *global = section(text, "GLOBAL OPTIONS");

		ck_assert(strstr(main_help, "--help") && strstr(main_help, "--version"));
		ck_assert(has_word(global, "--help") && has_word(global, "--version"));
		free(global);
	}
	words_free(&subs);
	free(cmds);
	free(main_help);
	free(text);
}
END_TEST

/* Run the installed completion as bash does for `words...` (the last one being completed). */
static char *complete(const char *dir, const char *words)
{
	char script[1024];
	const char *argv[] = {"bash", "--norc", "-c", script, NULL};
	struct mt_out o;
	char *said;

	snprintf(script, sizeof(script),
		 "source %s/usr/share/bash-completion/completions/memtrack && "
		 "COMP_WORDS=(%s) && COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) && "
		 "_memtrack && printf '%%s\\n' \"${COMPREPLY[@]}\" | sort | tr '\\n' ' '",
		 dir, words);
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 30, &o), 0);
	ck_assert_msg(o.code == 0, "bash failed (%d): %s", o.code, o.err);
	said = o.out;
	o.out = NULL;
	mt_out_free(&o);
	return said;
}

/* The completion of `BIN WORDS...` (BIN installed in dir) is want. */
static void expect_completion(const char *dir, const char *bin, const char *words, const char *want)
{
	char line[256], *said;

	snprintf(line, sizeof(line), "%s/usr/bin/%s %s", dir, bin, words);
	said = complete(dir, line);
	ck_assert_msg(!strcmp(said, want), "%s %s: '%s', not '%s'", bin, words, said, want);
	free(said);
}

START_TEST(bash_completion_completes_subcommands_and_their_options)
{
	char dir[64];

	mt_tmpdir(dir);
	install_into(dir);
	expect_completion(dir, "memtrack", "r", "report run ");
	expect_completion(dir, "memtrack", "run --st", "--stacks --stop-at --strict ");
	expect_completion(dir, "memtrack", "-q report --fold", "--folded ");
	expect_completion(dir, "memtrack", "help e", "exec-harness ");
	expect_completion(dir, "memtrack", "a", "attach ");
	expect_completion(dir, "memtrack", "attach --t", "--tree ");
	/* Installed as exec-harness, the link completes exec-harness's options. */
	expect_completion(dir, "exec-harness", "--max", "--max-rounds --max-time ");
	/* After --, wherever it stands: a command (a shell builtin here, the same on any host). */
	expect_completion(dir, "memtrack", "run -q -- ulimi", "ulimit ");
	expect_completion(dir, "memtrack", "--version -- ulimi", "ulimit ");
	/* An option's values, as the binary names them when it refuses one; '=' split or not. */
	expect_completion(dir, "memtrack", "run --watcher ''", "auto fentry tracepoint ");
	expect_completion(dir, "memtrack", "run --watcher=tr", "tracepoint ");
	expect_completion(dir, "memtrack", "run --stacks = ''", "kernel none ");
	expect_completion(dir, "memtrack", "run --probe-scope ''", "system tree ");
	expect_completion(dir, "memtrack", "report --sites-by ''",
			  "allocations bytes live peak temporary ");
	expect_completion(dir, "memtrack", "exec-harness -m ''", "memory simulation walltime ");
	expect_completion(dir, "exec-harness", "--mode ''", "memory simulation walltime ");
}
END_TEST

START_TEST(help_is_the_same_text_as_dash_dash_help)
{
	const char *subs[] = {"run", "attach", "report", "exec-harness"};

	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		const char *argv[] = {MEMTRACK, "help", subs[i], NULL};
		char *want = help_of(subs[i]);
		struct mt_out o;

		ck_assert_int_eq(mt_run(argv, NULL, NULL, 30, &o), 0);
		ck_assert_int_eq(o.code, 0);
		ck_assert_str_eq(o.out, want);
		mt_out_free(&o);
		free(want);
	}
	{
		const char *argv[] = {MEMTRACK, "help", NULL};
		char *want = help_of(NULL);
		struct mt_out o;

		ck_assert_int_eq(mt_run(argv, NULL, NULL, 30, &o), 0);
		ck_assert_int_eq(o.code, 0);
		ck_assert_str_eq(o.out, want);
		mt_out_free(&o);
		free(want);
	}
	{
		const char *argv[] = {MEMTRACK, "help", "frobnicate", NULL};
		struct mt_out o;

		ck_assert_int_eq(mt_run(argv, NULL, NULL, 30, &o), 0);
		ck_assert_int_eq(o.code, 2);
		ck_assert_str_eq(o.out, "");
		ck_assert_msg(strstr(o.err, "no subcommand 'frobnicate'"), "%s", o.err);
		mt_out_free(&o);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("manpage");
	TCase *tc = tcase_create("installed");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, manual_page_describes_every_option_of_every_subcommand);
	tcase_add_test(tc, bash_completion_completes_subcommands_and_their_options);
	tcase_add_test(tc, help_is_the_same_text_as_dash_dash_help);
	suite_add_tcase(s, tc);
	return mt_run_suite(s);
}
