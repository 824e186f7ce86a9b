// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's BTF, read without libbpf parsing it (tracker_kbtf.h). libbpf 1.1 would copy the
 * kernel's 5.5 MB of BTF (a page fault costs about 5 us in a VM: 7 ms for the copy) and index it;
 * here one walk of the kernel's own mapping indexes the types.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/grow.h"
#include "tracker/tracker_kbtf.h"

/* The bytes of a type's record; 0 for a kind this file does not know. */
__u32 tracker_kbtf_record_size(const struct btf_type *t)
{
	__u32 v = btf_vlen(t), base = sizeof(*t);

	switch (btf_kind(t)) {
	case BTF_KIND_INT:
	case BTF_KIND_VAR:
	case BTF_KIND_DECL_TAG:
		return base + 4;
	case BTF_KIND_ARRAY:
		return base + sizeof(struct btf_array);
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		return base + v * sizeof(struct btf_member);
	case BTF_KIND_ENUM:
		return base + v * sizeof(struct btf_enum);
	case BTF_KIND_ENUM64:
		return base + v * sizeof(struct btf_enum64);
	case BTF_KIND_FUNC_PROTO:
		return base + v * sizeof(struct btf_param);
	case BTF_KIND_DATASEC:
		return base + v * sizeof(struct btf_var_secinfo);
	case BTF_KIND_PTR:
	case BTF_KIND_FWD:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_FUNC:
	case BTF_KIND_FLOAT:
	case BTF_KIND_TYPE_TAG:
		return base;
	default:
		return 0;
	}
}

/* Index the types; -EINVAL for a BTF this file cannot walk (libbpf's own way is taken then). */
static int index_types(struct mt_kbtf *k)
{
	const struct btf_header *h = (const struct btf_header *)k->data;
	__u32 at = 0;

	if (k->size < sizeof(*h) || h->magic != BTF_MAGIC || h->version != BTF_VERSION ||
	    h->hdr_len > k->size || h->type_off + h->type_len > k->size - h->hdr_len ||
	    h->str_off + h->str_len > k->size - h->hdr_len || !h->str_len)
		return -EINVAL;
	k->types = k->data + h->hdr_len + h->type_off;
	k->types_len = h->type_len;
	k->strs = k->data + h->hdr_len + h->str_off;
	k->strs_len = h->str_len;
	if (MT_GROW(k->off, k->cap, 1, 1u << 17))
		return -ENOMEM;
	k->off[0] = 0; /* void */
	k->n = 1;
	while (at < k->types_len) {
		__u32 size;

		if (k->types_len - at < sizeof(struct btf_type))
			return -EINVAL;
		size = tracker_kbtf_record_size((const struct btf_type *)(k->types + at));
		if (!size || size > k->types_len - at)
			return -EINVAL;
		if (MT_GROW(k->off, k->cap, k->n + 1, 1u << 17))
			return -ENOMEM;
		k->off[k->n++] = at;
		at += size;
	}
	return 0;
}

/* The file in one mapping (6.16 and later), else read (sysfs serves it a page at a time). */
static int read_vmlinux(struct mt_kbtf *k)
{
	struct stat st;
	int fd = open(MT_VMLINUX_BTF, O_RDONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_size <= 0) {
		err = -EINVAL;
		goto out;
	}
	k->size = (size_t)st.st_size;
	k->data = mmap(NULL, k->size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	k->mapped = k->data != MAP_FAILED;
	if (k->mapped)
		goto out;
	k->data = malloc(k->size);
	if (!k->data) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t done = 0; done < k->size;) {
		ssize_t n = read(fd, k->data + done, k->size - done);

		if (n <= 0) {
			err = n ? -errno : -EIO;
			goto out;
		}
		done += (size_t)n;
	}
out:
	close(fd);
	return err;
}

/* The types and their index go; what was found in them (the attach targets) stays. */
void tracker_kbtf_drop_types(struct mt_kbtf *k)
{
	if (k->mapped)
		munmap(k->data, k->size);
	else
		free(k->data);
	free(k->off);
	k->data = NULL;
	k->off = NULL;
	k->types = k->strs = NULL;
	k->types_len = k->strs_len = 0;
	k->n = k->cap = 0;
}

void tracker_kbtf_free(struct mt_kbtf *k)
{
	if (!k)
		return;
	tracker_kbtf_drop_types(k);
	free(k);
}

int tracker_kbtf_read(struct mt_kbtf *k)
{
	return read_vmlinux(k) ?: index_types(k);
}
