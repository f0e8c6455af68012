// SPDX-License-Identifier: BSD-2-Clause
/*
 * replay/output/workq.c (the JSON worker's queue) and replay/output/outq.c
 * (the pcapng writer's): items run in order with their exact bytes across ring
 * wraps and full-ring waits; drain waits for everything before it; outq writes
 * every buffer in order and reports a write error.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "outq.h"
#include "workq.h"

struct sink {
	uint32_t next; /* id expected next */
	uint32_t flushes;
	uint64_t bytes;
	unsigned int delay; /* spin per item: makes the ring fill up */
};

static size_t item_len(uint32_t id, size_t max)
{
	/* 0, small, odd, near the maximum */
	switch (id % 7) {
	case 0:
		return 4;
	case 1:
		return max;
	case 2:
		return 4 + id % 61;
	default:
		return 4 + (id * 2654435761u) % (max - 3);
	}
}

static uint8_t byte_of(uint32_t id, size_t k)
{
	return (uint8_t)(id * 31u + k * 7u);
}

static void run(void *ctx, const void *item, size_t len)
{
	struct sink *s = ctx;
	const uint8_t *p = item;
	uint32_t id;

	if (!item) {
		s->flushes++;
		return;
	}
	assert_true(len >= 4);
	memcpy(&id, p, 4);
	assert_int_equal(id, s->next);
	for (size_t k = 4; k < len; k++)
		if (p[k] != byte_of(id, k))
			fail_msg("item %u byte %zu", id, k);
	s->next++;
	s->bytes += len;
	for (volatile unsigned int i = 0; i < s->delay; i++)
		;
}

static void push_items(struct reel_workq *q, uint32_t from, uint32_t n, size_t max)
{
	for (uint32_t id = from; id < from + n; id++) {
		size_t len = item_len(id, max);
		uint8_t *p = reel_workq__reserve(q, len);

		assert_non_null(p);
		memcpy(p, &id, 4);
		for (size_t k = 4; k < len; k++)
			p[k] = byte_of(id, k);
		reel_workq__commit(q);
	}
}

static void test_order_wrap(void **state)
{
	/* a 4 KiB ring with items up to 1 KiB: wraps and waits all the time */
	for (unsigned int delay = 0; delay <= 2000; delay += 2000) {
		struct sink s = {.delay = delay};
		struct reel_workq *q = reel_workq__new(4096, run, &s);
		size_t max;

		(void)state;
		assert_non_null(q);
		max = reel_workq__max_item(q);
		assert_true(max >= 1000);
		assert_null(reel_workq__reserve(q, max + 1));
		push_items(q, 0, 20000, max);
		reel_workq__drain(q);
		/* drained: everything ran, and the flush after it */
		assert_int_equal(s.next, 20000);
		assert_int_equal(s.flushes, 1);
		push_items(q, 20000, 5000, max);
		reel_workq__free(q);
		assert_int_equal(s.next, 25000);
		assert_int_equal(s.flushes, 2);
	}
}

static void test_drain_idle(void **state)
{
	struct sink s = {0};
	struct reel_workq *q = reel_workq__new(1u << 20, run, &s);

	(void)state;
	assert_non_null(q);
	reel_workq__drain(q); /* nothing queued */
	assert_int_equal(s.flushes, 1);
	for (uint32_t i = 0; i < 100; i++) {
		push_items(q, i, 1, 64); /* below the batch size: no wakeup */
		reel_workq__drain(q);
		assert_int_equal(s.next, i + 1);
	}
	reel_workq__free(q);
	assert_int_equal(s.flushes, 102);
}

static void test_outq(void **state)
{
	char path[] = "/tmp/reel-outq-XXXXXX";
	int fd = mkstemp(path);
	struct reel_outq *q;
	uint8_t *b, *back;
	size_t total = 0;
	off_t size;

	(void)state;
	assert_true(fd >= 0);
	q = reel_outq__new(fd, 1000, 2);
	assert_non_null(q);
	b = reel_outq__buf(q);
	/* buffers of 1..999 bytes, each keeping a tail for the next one */
	for (uint32_t i = 0; i < 3000; i++) {
		size_t n = 1 + i % 900, keep = i % 50;

		for (size_t k = 0; k < n + keep; k++)
			b[k] = (uint8_t)(total + k);
		b = reel_outq__swap(q, n, keep);
		total += n;
		for (size_t k = 0; k < keep; k++)
			assert_int_equal(b[k], (uint8_t)(total + k));
	}
	assert_int_equal(reel_outq__drain(q), 0);
	assert_int_equal(reel_outq__free(q), 0);
	size = lseek(fd, 0, SEEK_END);
	assert_int_equal((size_t)size, total);
	back = malloc(total);
	assert_int_equal(pread(fd, back, total, 0), (ssize_t)total);
	for (size_t k = 0; k < total; k++)
		if (back[k] != (uint8_t)k)
			fail_msg("byte %zu", k);
	free(back);
	close(fd);
	unlink(path);

	/* a full device: the error comes back, later buffers are dropped */
	fd = open("/dev/full", O_WRONLY);
	if (fd >= 0) {
		q = reel_outq__new(fd, 4096, 3);
		assert_non_null(q);
		for (int i = 0; i < 10; i++) {
			memset(reel_outq__buf(q), 'x', 4096);
			reel_outq__swap(q, 4096, 0);
		}
		assert_int_equal(reel_outq__drain(q), -ENOSPC);
		assert_int_equal(reel_outq__free(q), -ENOSPC);
		close(fd);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_wrap),
		cmocka_unit_test(test_drain_idle),
		cmocka_unit_test(test_outq),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
