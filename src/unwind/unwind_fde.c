// SPDX-License-Identifier: GPL-2.0
/*
 * Where a file's FDEs start (unwind_table_int.h): libdw evaluates the CFI but must be told the
 * FDEs' initial locations, which .eh_frame_hdr's search table lists, or, without one, a walk of
 * .eh_frame's or .debug_frame's entries finds.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "unwind/unwind_table_int.h"

/* Append x to a. 0 or -ENOMEM. */
static int unwind_addr_push(struct addr_vec *a, uint64_t x)
{
	if (MT_GROW(a->v, a->cap, a->n + 1, 1024))
		return -ENOMEM;
	a->v[a->n++] = x;
	return 0;
}

/* The encodings of .eh_frame pointers (LSB: DW_EH_PE_*; not in dwarf.h's older releases). */
#define EH_PE_OMIT    0xff
#define EH_PE_FORMAT  0x0f
#define EH_PE_APPLY   0x70
#define EH_PE_ABSPTR  0x00
#define EH_PE_UDATA2  0x02
#define EH_PE_UDATA4  0x03
#define EH_PE_UDATA8  0x04
#define EH_PE_SDATA2  0x0a
#define EH_PE_SDATA4  0x0b
#define EH_PE_SDATA8  0x0c
#define EH_PE_PCREL   0x10
#define EH_PE_DATAREL 0x30

/* ---- reading encoded pointers (the .eh_frame_hdr table, .eh_frame FDEs) ---- */

/*
 * Decode the pointer at *p (encoding enc; field_addr: the field's own virtual address, for
 * pcrel; data_base: for datarel) and advance *p. Returns 0 or -EINVAL.
 */
static int read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t field_addr,
			uint64_t data_base, uint64_t *out)
{
	size_t len;
	uint64_t v = 0;

	switch (enc & EH_PE_FORMAT) {
	case EH_PE_ABSPTR:
	case EH_PE_UDATA8:
	case EH_PE_SDATA8:
		len = 8;
		break;
	case EH_PE_UDATA4:
	case EH_PE_SDATA4:
		len = 4;
		break;
	case EH_PE_UDATA2:
	case EH_PE_SDATA2:
		len = 2;
		break;
	default:
		return -EINVAL;
	}
	if ((size_t)(end - *p) < len)
		return -EINVAL;
	memcpy(&v, *p, len); /* x86-64: the file is little-endian, as is the host */
	if ((enc & EH_PE_FORMAT) == EH_PE_SDATA4)
		v = (uint64_t)(int64_t)(int32_t)v;
	else if ((enc & EH_PE_FORMAT) == EH_PE_SDATA2)
		v = (uint64_t)(int64_t)(int16_t)v;
	*p += len;
	switch (enc & EH_PE_APPLY) {
	case 0:
		break;
	case EH_PE_PCREL:
		v += field_addr;
		break;
	case EH_PE_DATAREL:
		v += data_base;
		break;
	default:
		return -EINVAL;
	}
	*out = v;
	return 0;
}

Elf_Scn *unwind_find_section(Elf *elf, const char *name, GElf_Shdr *shdr)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, shdr) || shdr->sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, shdr->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/*
 * The FDE starts of .eh_frame from .eh_frame_hdr's binary search table (version 1, the table
 * datarel sdata4 as every linker writes it). Returns 0, or -ENOENT when there is no usable table.
 */
int unwind_starts_from_eh_frame_hdr(struct cfi_source *src)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = unwind_find_section(src->elf, ".eh_frame_hdr", &shdr);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	const uint8_t *p, *end;
	uint64_t ignored, count;
	uint8_t ptr_enc, count_enc, table_enc;

	if (!d || d->d_size < 4)
		return -ENOENT;
	p = d->d_buf;
	end = p + d->d_size;
	if (p[0] != 1)
		return -ENOENT;
	ptr_enc = p[1];
	count_enc = p[2];
	table_enc = p[3];
	p += 4;
	if (table_enc != (EH_PE_DATAREL | EH_PE_SDATA4) || count_enc == EH_PE_OMIT)
		return -ENOENT;
	if (read_encoded(&p, end, ptr_enc, shdr.sh_addr + 4, shdr.sh_addr, &ignored) ||
	    read_encoded(&p, end, count_enc, shdr.sh_addr + (p - (const uint8_t *)d->d_buf),
			 shdr.sh_addr, &count))
		return -ENOENT;
	if (count > (uint64_t)(end - p) / 8)
		return -ENOENT;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t loc;
		int err;

		if (read_encoded(&p, end, table_enc, 0, shdr.sh_addr, &loc))
			return -ENOENT;
		p += 4; /* the FDE's address: libdw finds it itself */
		err = unwind_addr_push(&src->starts, loc);
		if (err)
			return err;
	}
	return 0;
}

/* The FDE pointer encoding a CIE's augmentation declares ('R'), absptr when it declares none. */
static uint8_t cie_fde_encoding(const Dwarf_CIE *cie)
{
	const char *aug = cie->augmentation;
	const uint8_t *d = cie->augmentation_data;
	const uint8_t *end = d ? d + cie->augmentation_data_size : NULL;

	if (!aug || aug[0] != 'z' || !d)
		return EH_PE_ABSPTR;
	for (aug++; *aug && d < end; aug++) {
		switch (*aug) {
		case 'R':
			return *d;
		case 'L':
			d++;
			break;
		case 'P': {
			uint8_t enc = *d++;
			uint64_t ignored;

			if (read_encoded(&d, end, enc & 0x7f, 0, 0, &ignored))
				return EH_PE_OMIT;
			break;
		}
		case 'S':
		case 'B':
			break;
		default:
			return EH_PE_OMIT;
		}
	}
	return EH_PE_ABSPTR;
}

/*
 * The FDE starts of a CFI section, walking it entry by entry: .debug_frame, and .eh_frame when
 * it has no .eh_frame_hdr table. CIEs come before the FDEs that use them in what compilers and
 * linkers write; an FDE whose CIE was not seen yet is looked up by offset.
 */
int unwind_starts_from_section(struct cfi_source *src, const char *name, bool eh)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = unwind_find_section(src->elf, name, &shdr);
	Elf_Data *d;
	const unsigned char *ident;
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry e;

	if (!scn)
		return 0;
	if ((shdr.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
		return 0;
	d = elf_getdata(scn, NULL);
	ident = (const unsigned char *)elf_getident(src->elf, NULL);
	if (!d || !ident)
		return 0;
	while (dwarf_next_cfi(ident, d, eh, off, &next, &e) == 0) {
		Dwarf_CFI_Entry cie;
		Dwarf_Off cie_next;
		const uint8_t *p;
		uint64_t loc;
		uint8_t enc;
		int err;

		if (e.CIE_id == DW_CIE_ID_64 ||
		    dwarf_next_cfi(ident, d, eh, e.fde.CIE_pointer, &cie_next, &cie) != 0 ||
		    cie.CIE_id != DW_CIE_ID_64)
			goto next;
		enc = eh ? cie_fde_encoding(&cie.cie) : EH_PE_UDATA8;
		p = e.fde.start;
		if (enc == EH_PE_OMIT ||
		    read_encoded(&p, e.fde.end, enc, shdr.sh_addr + (p - (const uint8_t *)d->d_buf),
				 0, &loc))
			goto next;
		err = unwind_addr_push(&src->starts, loc);
		if (err)
			return err;
	next:
		off = next;
	}
	return 0;
}
