// SPDX-License-Identifier: BSD-2-Clause
/* Fuzz target: the redis parser fed scripted chunks and holes (see fuzz_l7.h). */
#include "fuzz_l7.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_l7(REEL_PROTO_REDIS, data, size);
}
