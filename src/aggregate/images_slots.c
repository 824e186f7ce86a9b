// SPDX-License-Identifier: GPL-2.0
/*
 * The replay's packed block slots (images_int.h): kept in the order of their keys, so that the
 * table grows in place (mremap) by half or less, at most 85 % full, every block moving forward
 * and none back. images_blocks.c finds and fills them; this file keeps their order and size.
 */
#include <errno.h>
#include <stdlib.h>

#include "aggregate/images_int.h"

/* The address whose packed_key is key, of high half high: the multipliers' inverses mod 2^32. */
uint64_t img_packed_key_addr(uint32_t key, uint32_t high)
{
	uint32_t x = key;

	x ^= x >> 16;
	x *= 0x43021123U;
	x ^= x >> 15 ^ x >> 30;
	x *= 0x1d69e2a5U;
	x ^= x >> 16;
	return (uint64_t)high << 32 | (x ^ high_fold(high));
}

/*
 * At most 85 % of the homes used; they grow by half the power of two at or below them (16, 24,
 * 32, 48, 64, ...): 9.4 to 14.1 bytes a packed block, where doubling at 75 % was 10.7 to 21.3.
 * Growing by a quarter (16, 20, 24, 28, 32, ...) moved the blocks twice as often: 6 to 14 %
 * more of report's CPU time at 10 million blocks. The tail takes the runs that reach the end:
 * as many slots as the homes, at most 1024, counted from the end of the last run when it
 * passes the homes.
 */
#define PACKED_LOAD_PCT	 85
#define PACKED_MIN_HOMES 16
#define PACKED_MAX_TAIL	 1024

static bool packed_fit(size_t homes, size_t n)
{
	return n * 100 <= homes * PACKED_LOAD_PCT;
}

static size_t packed_next(size_t homes)
{
	size_t top = PACKED_MIN_HOMES;

	if (homes < PACKED_MIN_HOMES)
		return PACKED_MIN_HOMES;
	while (top * 2 <= homes)
		top *= 2;
	return homes + top / 2;
}

static size_t packed_slots(size_t homes)
{
	return homes + (homes < PACKED_MAX_TAIL ? homes : PACKED_MAX_TAIL);
}

/*
 * Block b put at slot e, the run from it moved one slot on (each slot taking the one before it):
 * 0, or -ENOSPC when the last slot is taken, where the run from e could reach past the tail.
 */
int img_packed_insert(struct block_slots *t, struct packed_block *e, struct packed_block b)
{
	struct packed_block *s = t->slot;

	if (s[t->n - 1].cls)
		return -ENOSPC;
	for (;; e++) {
		struct packed_block was = *e;

		*e = b;
		if (!was.cls)
			break;
		b = was;
	}
	t->used++;
	return 0;
}

/* Slot e emptied: the blocks after it that are past their home move back one. */
void img_packed_erase(struct block_slots *t, struct packed_block *e)
{
	struct packed_block *s = t->slot, *end = s + t->n;

	for (; e + 1 < end && e[1].cls && packed_home(t, e[1].key) <= (size_t)(e - s); e++)
		*e = e[1];
	*e = (struct packed_block){0};
	t->used--;
}

/* Slots visited per chunk while the table grows: each chunk's place is known before its move. */
#define PACKED_CHUNK 4096u

/*
 * Where the blocks of t go with homes homes, in order: the first slot from its home after the
 * block before it. The first free slot before each chunk of PACKED_CHUNK into carry; returns
 * the first free slot after the last block.
 */
static size_t packed_plan(const struct block_slots *t, size_t homes, size_t *carry)
{
	const struct block_slots g = {.homes = homes};
	const struct packed_block *s = t->slot;
	size_t next = 0;

	for (size_t i = 0; i < t->n; i++) {
		size_t h;

		if (i % PACKED_CHUNK == 0)
			carry[i / PACKED_CHUNK] = next;
		if (!s[i].cls)
			continue;
		h = packed_home(&g, s[i].key);
		next = (h > next ? h : next) + 1;
	}
	return next;
}

/*
 * The blocks moved to where packed_plan put them, the chunks from the last one and each from its
 * last block: a block never goes back, so it moves into a slot whose block has moved already.
 */
static void packed_move(struct block_slots *t, const size_t *carry, size_t old_n)
{
	struct packed_block *s = t->slot;
	uint32_t to[PACKED_CHUNK];

	for (size_t c = (old_n + PACKED_CHUNK - 1) / PACKED_CHUNK; c-- > 0;) {
		size_t start = c * PACKED_CHUNK, stop = start + PACKED_CHUNK, next = carry[c];

		if (stop > old_n)
			stop = old_n;
		for (size_t i = start; i < stop; i++) {
			size_t h;

			if (!s[i].cls)
				continue;
			h = packed_home(t, s[i].key);
			to[i - start] = (uint32_t)(h > next ? h : next);
			next = to[i - start] + 1;
		}
		for (size_t i = stop; i-- > start;) {
			if (!s[i].cls || to[i - start] == i)
				continue;
			s[to[i - start]] = s[i];
			s[i] = (struct packed_block){0};
		}
	}
}

/*
 * t grown in place until need blocks fit, with a whole tail after the last run (its homes kept
 * when they hold need already: a run reached the last slot, one of blocks that share a key, or
 * of many keys at the end): 0, or -ENOMEM (unchanged).
 */
int img_packed_grow(struct block_slots *t, size_t need)
{
	size_t homes = t->homes, old_n = t->n, chunks = (old_n + PACKED_CHUNK - 1) / PACKED_CHUNK;
	size_t one = 0, *carry = chunks > 1 ? calloc(chunks, sizeof(*carry)) : &one;
	size_t n, end;
	int err = -ENOMEM;

	if (!carry)
		return -ENOMEM;
	if (!homes)
		homes = PACKED_MIN_HOMES;
	while (!packed_fit(homes, need))
		if ((homes = packed_next(homes)) > UINT32_MAX)
			goto out;
	end = packed_plan(t, homes, carry);
	n = packed_slots(homes);
	if (end + (n - homes) > n)
		n = end + (n - homes);
	if (n > UINT32_MAX ||
	    mt_slots_resize(&t->slot, &t->mapped, old_n * sizeof(struct packed_block),
			    n * sizeof(struct packed_block)))
		goto out;
	t->homes = homes;
	t->n = n;
	if (old_n)
		packed_move(t, carry, old_n);
	err = 0;
out:
	if (carry != &one)
		free(carry);
	return err;
}

int img_packed_reserve(struct block_slots *t, size_t need)
{
	if (t->slot && packed_fit(t->homes, need))
		return 0;
	return img_packed_grow(t, need);
}

void img_packed_free(struct block_slots *t)
{
	mt_slots_free(t->slot, t->mapped);
	*t = (struct block_slots){0};
}
