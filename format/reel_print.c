// SPDX-License-Identifier: BSD-2-Clause
/*
 * The print callback: the one way the libraries (format/, replay/) report
 * anything. Set and read atomically, as libbpf does, so a program may swap it
 * while another thread reports.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "format_internal.h"

static int default_print(enum reel_print_level level, const char *fmt, va_list ap)
{
	if (level == REEL_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static reel_print_fn_t print_fn = default_print;

reel_print_fn_t reel_set_print(reel_print_fn_t fn)
{
	return __atomic_exchange_n(&print_fn, fn, __ATOMIC_RELAXED);
}

reel_print_fn_t reel_get_print(void)
{
	return __atomic_load_n(&print_fn, __ATOMIC_RELAXED);
}

void reel_pr(enum reel_print_level level, const char *fmt, ...)
{
	reel_print_fn_t fn = reel_get_print();
	va_list ap;
	int saved = errno;

	if (!fn)
		return;
	va_start(ap, fmt);
	fn(level, fmt, ap);
	va_end(ap);
	errno = saved;
}
