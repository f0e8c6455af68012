// SPDX-License-Identifier: BSD-2-Clause
/* The processes in a capture's scope (procscope.h): an open-addressing set. */
#include <errno.h>
#include <stdlib.h>

#include "procscope.h"

static uint64_t key(uint32_t host, uint32_t tgid)
{
	return ((uint64_t)host << 32 | tgid) + 1;
}

static size_t home(uint64_t k, size_t cap)
{
	return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static void put(uint64_t *slot, size_t cap, uint64_t k)
{
	size_t i = home(k, cap);

	while (slot[i] && slot[i] != k)
		i = (i + 1) & (cap - 1);
	slot[i] = k;
}

bool reel_procscope_has(const struct reel_procscope *s, uint32_t host, uint32_t tgid)
{
	uint64_t k = key(host, tgid);

	if (!s->cap)
		return false;
	for (size_t i = home(k, s->cap); s->slot[i]; i = (i + 1) & (s->cap - 1))
		if (s->slot[i] == k)
			return true;
	return false;
}

int reel_procscope_add(struct reel_procscope *s, uint32_t host, uint32_t tgid)
{
	if (reel_procscope_has(s, host, tgid))
		return 0;
	if ((s->n + 1) * 2 > s->cap) { /* at most half full */
		size_t cap = s->cap ? s->cap * 2 : 64;
		uint64_t *slot = calloc(cap, sizeof(*slot));

		if (!slot)
			return -ENOMEM;
		for (size_t i = 0; i < s->cap; i++)
			if (s->slot[i])
				put(slot, cap, s->slot[i]);
		free(s->slot);
		s->slot = slot;
		s->cap = cap;
	}
	put(s->slot, s->cap, key(host, tgid));
	s->n++;
	return 0;
}

void reel_procscope_free(struct reel_procscope *s)
{
	free(s->slot);
	s->slot = NULL;
	s->cap = s->n = 0;
}
