// SPDX-License-Identifier: BSD-2-Clause
/* JSON tree and structural diff (replay/regress/jsondiff.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jsondiff.h"

struct diffs {
	int n;
	char text[16][700];
};

static bool collect(void *ctx, enum reel_jdiff_kind kind, const char *path, const char *a,
		    const char *b)
{
	struct diffs *d = ctx;
	static const char *const kinds[] = {"value", "missing", "added", "type"};

	if (d->n < 16)
		snprintf(d->text[d->n], sizeof(d->text[0]), "%s %s %s|%s", kinds[kind], path, a, b);
	d->n++;
	return true;
}

static struct reel_jdoc *parse(const char *s)
{
	char err[128];
	struct reel_jdoc *j = reel_jdoc_parse((const uint8_t *)s, strlen(s), err, sizeof(err));

	if (!j)
		fail_msg("parse %s: %s", s, err);
	return j;
}

static int diff(const char *x, const char *y, const char *const *ign, int nign, struct diffs *d)
{
	struct reel_jdoc *a = parse(x), *b = parse(y);
	unsigned n;

	memset(d, 0, sizeof(*d));
	n = reel_jdoc_diff(a, b, ign, nign, collect, d);
	reel_jdoc_free(a);
	reel_jdoc_free(b);
	assert_int_equal(n, d->n);
	return d->n;
}

static void test_structural(void **state)
{
	struct diffs d;

	(void)state;
	/* member order, whitespace, number spelling and escapes do not matter */
	assert_int_equal(diff("{\"a\":1,\"b\":[true,null,\"x\"]}",
			      " { \"b\" : [ true , null , \"\\u0078\" ] , \"a\" : 1.0 } ", NULL, 0,
			      &d),
			 0);
	assert_int_equal(diff("{\"a\":1,\"b\":{\"c\":\"x\",\"d\":[1,2]},\"e\":0}",
			      "{\"a\":2,\"b\":{\"c\":\"y\",\"d\":[1]},\"f\":0}", NULL, 0, &d),
			 5);
	assert_string_equal(d.text[0], "value $.a 1|2");
	assert_string_equal(d.text[1], "value $.b.c \"x\"|\"y\"");
	assert_string_equal(d.text[2], "missing $.b.d[1] 2|");
	assert_string_equal(d.text[3], "missing $.e 0|");
	assert_string_equal(d.text[4], "added $.f |0");
	assert_int_equal(diff("[1]", "{\"a\":1}", NULL, 0, &d), 1);
	assert_string_equal(d.text[0], "type $ [1 elements]|{1 members}");
	/* duplicates: the last one counts */
	assert_int_equal(diff("{\"a\":1,\"a\":2}", "{\"a\":2}", NULL, 0, &d), 0);
}

static void test_ignore(void **state)
{
	const char *ign[] = {"$.ts", ".items[*].id", "[\"we.ird\"]", ".deep.*"};
	struct diffs d;

	(void)state;
	assert_int_equal(
		diff("{\"ts\":1,\"items\":[{\"id\":1,\"v\":1},{\"id\":2}],\"we.ird\":1,\"deep\":{"
		     "\"x\":1},\"k\":1}",
		     "{\"ts\":2,\"items\":[{\"id\":9,\"v\":2},{\"id\":8}],\"we.ird\":2,\"deep\":{"
		     "\"y\":1},\"k\":1}",
		     ign, 4, &d),
		1);
	assert_string_equal(d.text[0], "value $.items[0].v 1|2");
	assert_int_equal(reel_jdoc_pattern_check("$.a[3].b[*].*"), 0);
	assert_int_equal(reel_jdoc_pattern_check(".a"), 0);
	assert_int_equal(reel_jdoc_pattern_check("a"), -EINVAL);
	assert_int_equal(reel_jdoc_pattern_check("$.a["), -EINVAL);
	assert_int_equal(reel_jdoc_pattern_check("$."), -EINVAL);
	assert_int_equal(reel_jdoc_pattern_check(""), -EINVAL);
}

static void test_bad(void **state)
{
	static const char *const bad[] = {
		"",    "{",   "[1,]",  "{\"a\"}",  "01",	 "1.", "\"\\x\"",
		"\"a", "tru", "[1] 2", "\"\x01\"", "{\"a\":1,}", "-",  "1e",
	};
	char err[128];
	char deep[200];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct reel_jdoc *j =
			reel_jdoc_parse((const uint8_t *)bad[i], strlen(bad[i]), err, sizeof(err));

		if (j)
			fail_msg("accepted %s", bad[i]);
		assert_int_equal(errno, EINVAL);
		assert_true(!strncmp(err, "byte ", 5));
	}
	memset(deep, '[', 100);
	memset(deep + 100, ']', 100);
	assert_null(reel_jdoc_parse((const uint8_t *)deep, 200, err, sizeof(err)));
	assert_int_equal(errno, E2BIG);
	assert_non_null(strstr(err, "nested deeper than 64"));
}

static void test_many_members(void **state)
{
	/* 20000 members in reverse order: compared by sorted names, not pairwise */
	size_t cap = 20000 * 24 + 16, la = 0, lb = 0;
	char *x = malloc(cap), *y = malloc(cap);
	struct diffs d;

	(void)state;
	x[la++] = '{';
	y[lb++] = '{';
	for (int i = 0; i < 20000; i++) {
		la += (size_t)sprintf(x + la, "%s\"k%d\":%d", i ? "," : "", i, i);
		lb += (size_t)sprintf(y + lb, "%s\"k%d\":%d", i ? "," : "", 19999 - i,
				      19999 - i == 777 ? 0 : 19999 - i);
	}
	x[la++] = '}';
	y[lb++] = '}';
	x[la] = y[lb] = '\0';
	assert_int_equal(diff(x, y, NULL, 0, &d), 1);
	assert_string_equal(d.text[0], "value $.k777 777|0");
	free(x);
	free(y);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_structural),
		cmocka_unit_test(test_ignore),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_many_members),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
