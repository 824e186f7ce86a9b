// SPDX-License-Identifier: GPL-2.0
/*
 * What the walk of the kernel's BTF found (tracker_btf.c: the CO-RE target, the attach targets),
 * kept for the rest of the boot in a file root alone may write, so that a run after the first
 * reads 45 KB instead of walking 5.5 MB of the kernel's types (about 4 ms of a short run's
 * start-up, docs/PERFORMANCE.md section 4).
 *
 * What the walk finds depends on the kernel's BTF and on memtrack's object, nothing else: the
 * kernel's BTF does not change while the kernel runs (the boot's id names it; the file's size is
 * checked as well), and memtrack's object is in memtrack's own file (its build id names it). A
 * file that says otherwise, or that does not hold what its checksum says, is not used, and the
 * walk's result replaces it.
 *
 * The target decides which kernel fields the programs read and which tracepoints they attach to:
 * only root reads or writes it, in a directory of root's alone (DIR/core-BUILDID.btf, DIR
 * /run/memtrack or $MEMTRACK_RUNTIME_DIR, empty for none). A memtrack with more privilege than
 * its invoker (file capabilities, set-user-ID) never uses it: the invoker's environment and
 * files choose nothing the programs do.
 */

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/build_id.h"
#include "tracker/tracker_int.h"

#define CACHE_MAGIC  "mtcore1"
#define BUILD_ID_MAX 32
#define TARGET_MAX   (4u << 20)

static const char default_dir[] = "/run/memtrack";
static const char boot_id_path[] = "/proc/sys/kernel/random/boot_id";
static const char vmlinux_path[] = "/sys/kernel/btf/vmlinux";

/* What names the walk's result: the kernel (boot, BTF size) and memtrack's object (build id). */
struct cache_key {
	char boot_id[40];
	uint8_t build_id[BUILD_ID_MAX];
	uint32_t build_id_len;
	uint64_t vmlinux_size;
};

struct cache_head {
	char magic[8];
	struct cache_key key;
	struct mt_core_found found;
	uint64_t target_len;
	uint64_t sum; /* of found and the target */
};

static int note_build_id(struct dl_phdr_info *info, size_t size, void *data)
{
	struct cache_key *k = data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr),
			   *end = p + ph->p_memsz;

		if (ph->p_type != PT_NOTE)
			continue;
		while (end - p >= (long)sizeof(ElfW(Nhdr))) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			size_t name = (n->n_namesz + 3) & ~3u, desc = (n->n_descsz + 3) & ~3u;

			if ((size_t)(end - p) - sizeof(*n) < name + desc)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    !memcmp(p + sizeof(*n), "GNU", 4) && n->n_descsz <= BUILD_ID_MAX) {
				memcpy(k->build_id, p + sizeof(*n) + name, n->n_descsz);
				k->build_id_len = n->n_descsz;
			}
			p += sizeof(*n) + name + desc;
		}
	}
	return 1; /* the first object is the program itself */
}

static int read_key(struct cache_key *k)
{
	struct stat st;
	ssize_t n;
	int fd;

	memset(k, 0, sizeof(*k));
	dl_iterate_phdr(note_build_id, k);
	if (!k->build_id_len || stat(vmlinux_path, &st))
		return -ENOENT;
	k->vmlinux_size = (uint64_t)st.st_size;
	fd = open(boot_id_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, k->boot_id, sizeof(k->boot_id) - 1);
	close(fd);
	return n >= 32 ? 0 : -ENOENT;
}

/* The directory, when root alone runs memtrack and owns it; -1 otherwise. */
static int open_dir(const char **path, bool make)
{
	const char *dir = getenv("MEMTRACK_RUNTIME_DIR");
	struct stat st;
	int fd;

	if (getuid() || geteuid()) /* not root, or elevated beyond a user who is not */
		return -1;
	*path = dir ? dir : default_dir;
	if (!**path)
		return -1;
	if (make && mkdir(*path, 0700) && errno != EEXIST)
		return -1;
	fd = open(*path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || st.st_uid || st.st_mode & 077) {
		close(fd);
		return -1;
	}
	return fd;
}

static void file_name(const struct cache_key *k, char *name, size_t size)
{
	char hex[2 * sizeof(k->build_id) + 1];

	mt_build_id_hex(k->build_id, k->build_id_len, hex, sizeof(hex));
	snprintf(name, size, "core-%s.btf", hex);
}

/* FNV-1a, 64 bits: a torn or truncated file, not an attacker (root alone writes it). */
static uint64_t checksum(uint64_t h, const void *data, size_t size)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < size; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t sum_of(const struct mt_core_found *f, const void *target, size_t len)
{
	return checksum(checksum(0xcbf29ce484222325ull, f, sizeof(*f)), target, len);
}

static int read_all(int fd, void *buf, size_t size)
{
	for (size_t done = 0; done < size;) {
		ssize_t n = read(fd, (char *)buf + done, size - done);

		if (n <= 0)
			return n ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* The file's head and target, when it is root's, whole, and for this kernel and memtrack. */
static int read_file(int dfd, const char *name, const struct cache_key *k, struct mt_core_found *f,
		     void **target, size_t *len)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), err;
	struct cache_head h;
	struct stat st;
	void *buf = NULL;

	if (fd < 0)
		return -errno;
	err = fstat(fd, &st) ? -errno : 0;
	if (!err && (!S_ISREG(st.st_mode) || st.st_uid || st.st_mode & 022 ||
		     (size_t)st.st_size < sizeof(h) || (size_t)st.st_size > sizeof(h) + TARGET_MAX))
		err = -EPERM;
	err = err ?: read_all(fd, &h, sizeof(h));
	if (!err &&
	    (memcmp(h.magic, CACHE_MAGIC, sizeof(h.magic)) || memcmp(&h.key, k, sizeof(*k)) ||
	     h.target_len != (size_t)st.st_size - sizeof(h) ||
	     (unsigned int)h.found.n_attach > MT_MAX_ATTACH))
		err = -ESTALE;
	if (!err && !(buf = malloc(h.target_len ? h.target_len : 1)))
		err = -ENOMEM;
	err = err ?: read_all(fd, buf, h.target_len);
	if (!err && sum_of(&h.found, buf, h.target_len) != h.sum)
		err = -EBADMSG;
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	*f = h.found;
	*target = buf;
	*len = h.target_len;
	return 0;
}

int tracker_btf_cache_read(struct mt_core_found *f, void **target, size_t *len, char *path,
			   size_t path_size)
{
	struct cache_key k;
	const char *dir;
	char name[2 * BUILD_ID_MAX + 16];
	int dfd = open_dir(&dir, false), err;

	if (dfd < 0)
		return -ENOENT;
	err = read_key(&k);
	if (!err) {
		file_name(&k, name, sizeof(name));
		snprintf(path, path_size, "%s/%s", dir, name);
		err = read_file(dfd, name, &k, f, target, len);
	}
	close(dfd);
	return err;
}

static int write_all(int fd, const struct iovec *iov, int n)
{
	for (int i = 0; i < n; i++)
		for (size_t done = 0; done < iov[i].iov_len;) {
			ssize_t w =
			    write(fd, (const char *)iov[i].iov_base + done, iov[i].iov_len - done);

			if (w < 0)
				return -errno;
			done += (size_t)w;
		}
	return 0;
}

/*
 * Each build of memtrack keeps its own file (a test build beside the installed one would
 * otherwise replace each other's at every run): those no run has written for a day go.
 */
static void remove_stale(int dfd, const char *keep)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	time_t now = time(NULL);
	struct dirent *e;
	struct stat st;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "core-", 5) && strcmp(e->d_name, keep) &&
		    !fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode) &&
		    st.st_mtime < now - 24 * 3600)
			unlinkat(dfd, e->d_name, 0);
	closedir(d);
}

int tracker_btf_cache_write(const struct mt_core_found *f, const struct iovec *target, int n,
			    char *path, size_t path_size)
{
	struct cache_head h = {.magic = CACHE_MAGIC, .found = *f};
	struct iovec all[1 + MT_CORE_PARTS];
	char name[2 * BUILD_ID_MAX + 16], tmp[sizeof(name) + 24];
	const char *dir;
	int dfd, fd, err;

	if (n > MT_CORE_PARTS)
		return -E2BIG;
	dfd = open_dir(&dir, true);
	if (dfd < 0)
		return -ENOENT;
	err = read_key(&h.key);
	if (err)
		goto out;
	h.sum = checksum(0xcbf29ce484222325ull, f, sizeof(*f));
	for (int i = 0; i < n; i++) {
		h.target_len += target[i].iov_len;
		h.sum = checksum(h.sum, target[i].iov_base, target[i].iov_len);
	}
	all[0] = (struct iovec){&h, sizeof(h)};
	memcpy(all + 1, target, (size_t)n * sizeof(*target));
	file_name(&h.key, name, sizeof(name));
	snprintf(tmp, sizeof(tmp), "%s.%d", name, (int)getpid());
	snprintf(path, path_size, "%s/%s", dir, name);
	/* Written aside and renamed: a run reading it meanwhile sees the old file or the new one.
	 */
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	err = write_all(fd, all, n + 1);
	if (close(fd) && !err)
		err = -errno;
	if (!err && renameat(dfd, tmp, dfd, name))
		err = -errno;
	if (err)
		unlinkat(dfd, tmp, 0);
	else
		remove_stale(dfd, name);
out:
	close(dfd);
	return err;
}
