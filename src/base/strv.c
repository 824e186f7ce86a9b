// SPDX-License-Identifier: GPL-2.0
/* Owned strings (strv.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/strv.h"

int mt_strv_add(char ***v, size_t *n, const char *s)
{
	char **grown = realloc(*v, (*n + 1) * sizeof(**v));

	if (!grown)
		return -ENOMEM;
	*v = grown;
	grown[*n] = strdup(s);
	if (!grown[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

bool mt_strv_has(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

void mt_strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int mt_str_replace(char **dst, const char *s)
{
	char *copy = strdup(s);

	if (!copy)
		return -ENOMEM;
	free(*dst);
	*dst = copy;
	return 0;
}
