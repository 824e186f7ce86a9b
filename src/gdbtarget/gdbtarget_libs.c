// SPDX-License-Identifier: GPL-2.0
/*
 * The shared library list of the process served to gdb (qXfer:libraries-svr4:read, docs/GDB.md):
 * the dynamic loader's own list, read from the process's memory the way gdb would read it itself
 * (the program's PT_DYNAMIC from its program headers, which the auxiliary vector locates; its
 * DT_DEBUG entry, the loader's r_debug; r_map's chain of link_map), in one request instead of
 * hundreds of memory reads. Before the loader has filled DT_DEBUG the list is empty. Every library
 * is in the default namespace, whose id (lmid) is its r_debug's address, as the manual says.
 */

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gdbtarget/gdbtarget.h"

/* The longest chain walked: a loop in a corrupt list ends here. */
#define MAX_LIBRARIES 4096

struct mem {
	int fd;
};

static bool peek(struct mem *m, uint64_t addr, void *buf, size_t len)
{
	return pread(m->fd, buf, len, (off_t)addr) == (ssize_t)len;
}

static bool auxv_value(pid_t pid, unsigned long type, uint64_t *val)
{
	char path[64];
	Elf64_auxv_t a;
	bool found = false;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	while (read(fd, &a, sizeof(a)) == sizeof(a) && a.a_type != AT_NULL) {
		if (a.a_type == type) {
			*val = a.a_un.a_val;
			found = true;
			break;
		}
	}
	close(fd);
	return found;
}

/* The address of the program's dynamic section in memory, 0 when it has none (static). */
static uint64_t program_dynamic(struct mem *m, pid_t pid)
{
	uint64_t phdr_at, phnum, bias = 0, dyn = 0;
	Elf64_Phdr ph;

	if (!auxv_value(pid, AT_PHDR, &phdr_at) || !auxv_value(pid, AT_PHNUM, &phnum))
		return 0;
	for (uint64_t i = 0; i < phnum; i++) {
		if (!peek(m, phdr_at + i * sizeof(ph), &ph, sizeof(ph)))
			return 0;
		if (ph.p_type == PT_PHDR)
			bias = phdr_at - ph.p_vaddr;
		else if (ph.p_type == PT_DYNAMIC)
			dyn = ph.p_vaddr;
	}
	return dyn ? bias + dyn : 0;
}

/* The address of the DT_DEBUG entry's value (where the loader puts r_debug's), 0: none. */
static uint64_t debug_slot(struct mem *m, uint64_t dynamic)
{
	Elf64_Dyn d;

	for (uint64_t at = dynamic; peek(m, at, &d, sizeof(d)) && d.d_tag != DT_NULL;
	     at += sizeof(d))
		if (d.d_tag == DT_DEBUG)
			return at + offsetof(Elf64_Dyn, d_un);
	return 0;
}

/* r_debug's address from DT_DEBUG, 0 before the loader set it. */
static uint64_t loader_debug(struct mem *m, uint64_t dynamic)
{
	uint64_t slot = debug_slot(m, dynamic), debug = 0;

	if (slot)
		peek(m, slot, &debug, sizeof(debug));
	return debug;
}

static int open_mem(struct mem *m, pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	m->fd = open(path, O_RDONLY | O_CLOEXEC);
	return m->fd < 0 ? -errno : 0;
}

int mt_gdbt_debug_slot(pid_t pid, uint64_t *addr)
{
	struct mem m;
	uint64_t dynamic;
	int err = open_mem(&m, pid);

	if (err)
		return err;
	dynamic = program_dynamic(&m, pid);
	*addr = dynamic ? debug_slot(&m, dynamic) : 0;
	close(m.fd);
	return *addr ? 0 : -ENOENT;
}

/* text, XML-escaped, appended at buf + *n (never past len). */
static void put_escaped(char *buf, size_t len, size_t *n, const char *text)
{
	for (; *text && *n + 7 < len; text++) {
		const char *e = *text == '&'   ? "&amp;"
				: *text == '<' ? "&lt;"
				: *text == '>' ? "&gt;"
				: *text == '"' ? "&quot;"
					       : NULL;

		if (e) {
			memcpy(buf + *n, e, strlen(e));
			*n += strlen(e);
		} else {
			buf[(*n)++] = *text;
		}
	}
}

static void put(char *buf, size_t len, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
	va_list ap;

	if (*n >= len)
		return;
	va_start(ap, fmt);
	*n += (size_t)vsnprintf(buf + *n, len - *n, fmt, ap);
	va_end(ap);
}

/* One link_map entry after the program's: <library name=... lm=... l_addr=... l_ld=.../>. */
static void put_library(struct mem *m, char *buf, size_t len, size_t *n, uint64_t lm,
			const struct link_map *e, uint64_t lmid)
{
	char name[4096] = "";

	peek(m, (uint64_t)e->l_name, name, sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	put(buf, len, n, "<library name=\"");
	put_escaped(buf, len, n, name);
	put(buf, len, n, "\" lm=\"0x%llx\" l_addr=\"0x%llx\" l_ld=\"0x%llx\" lmid=\"0x%llx\"/>\n",
	    (unsigned long long)lm, (unsigned long long)e->l_addr,
	    (unsigned long long)(uintptr_t)e->l_ld, (unsigned long long)lmid);
}

ssize_t mt_gdbt_libraries(pid_t pid, char *buf, size_t len)
{
	struct mem m;
	uint64_t dynamic, debug, lm = 0, main_lm = 0, vdso;
	struct link_map e;
	size_t n = 0;
	int err = open_mem(&m, pid);

	if (err)
		return err;
	dynamic = program_dynamic(&m, pid);
	debug = dynamic ? loader_debug(&m, dynamic) : 0;
	if (debug)
		peek(&m, debug + offsetof(struct r_debug, r_map), &main_lm, sizeof(main_lm));
	put(buf, len, &n, "<library-list-svr4 version=\"1.0\"");
	if (main_lm)
		put(buf, len, &n, " main-lm=\"0x%llx\"", (unsigned long long)main_lm);
	put(buf, len, &n, ">\n");
	/* The first entry is the program itself: gdb knows it as main-lm. */
	if (main_lm && peek(&m, main_lm, &e, sizeof(e)))
		lm = (uint64_t)e.l_next;
	if (!auxv_value(pid, AT_SYSINFO_EHDR, &vdso))
		vdso = 0;
	for (int i = 0; lm && i < MAX_LIBRARIES && peek(&m, lm, &e, sizeof(e)); i++) {
		/* The vdso has no file: gdb would list it as a library it cannot read. */
		if ((uint64_t)e.l_addr != vdso)
			put_library(&m, buf, len, &n, lm, &e, debug);
		lm = (uint64_t)e.l_next;
	}
	put(buf, len, &n, "</library-list-svr4>\n");
	close(m.fd);
	return n < len ? (ssize_t)n : -E2BIG;
}
