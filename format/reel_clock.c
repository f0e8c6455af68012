// SPDX-License-Identifier: BSD-2-Clause
/* The clocks of a capture: CLOCK_MONOTONIC stamps records (the clock of
 * bpf_ktime_get_ns), CLOCK_REALTIME pairs with it in CLOCK records. */
#include <time.h>

#include "format_internal.h"

static uint64_t now_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t reel_now_mono_ns(void)
{
	return now_ns(CLOCK_MONOTONIC);
}

uint64_t reel_now_real_ns(void)
{
	return now_ns(CLOCK_REALTIME);
}
