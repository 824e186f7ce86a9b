/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Growing an array: the one way memtrack makes room in a heap array that it appends to. The
 * capacity doubles (from a first size the caller picks), so n appends cost O(n) copies in all.
 */
#ifndef MT_GROW_H
#define MT_GROW_H

#include <stddef.h>

/*
 * Make room for need elements of size bytes in the array at *arrp (a pointer to any object
 * pointer), which has room for *cap: nothing when it has, else a realloc to the first capacity of
 * first, 2 * first, 4 * first ... (or of 2 * *cap, 4 * *cap ...) that holds need. 0, or -ENOMEM
 * (the array and *cap then unchanged, also when the size would overflow).
 */
int mt_grow_array(void *arrp, size_t *cap, size_t need, size_t size, size_t first);

/* MT_GROW(arr, cap, need, first): mt_grow_array on an array lvalue and its size_t capacity. */
#define MT_GROW(arr, cap, need, first)                                                             \
	mt_grow_array(&(arr), &(cap), (need), sizeof(*(arr)), (first))

#endif
