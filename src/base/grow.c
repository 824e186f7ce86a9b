// SPDX-License-Identifier: GPL-2.0
/* Growing an array (grow.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"

int mt_grow_array(void *arrp, size_t *cap, size_t need, size_t size, size_t first)
{
	size_t c = *cap ? *cap : (first ? first : 1);
	void *v, *p;

	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			return -ENOMEM;
		c *= 2;
	}
	if (size && c > SIZE_MAX / size)
		return -ENOMEM;
	/* arrp points to an object pointer of any type: read and written as bytes, not as void *.
	 */
	memcpy(&v, arrp, sizeof(v));
	p = realloc(v, c * size);
	if (!p)
		return -ENOMEM;
	memcpy(arrp, &p, sizeof(p));
	*cap = c;
	return 0;
}
