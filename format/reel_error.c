// SPDX-License-Identifier: BSD-2-Clause
/* Error strings: errno values and the reserved REEL_ERR_* range. */
#include <string.h>

#include "format_internal.h"

const char *reel_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return "success";
	case REEL_ERR_MAGIC:
		return "not a reel file";
	case REEL_ERR_VERSION:
		return "unsupported reel format version";
	case REEL_ERR_TRUNCATED:
		return "file ends inside a frame";
	case REEL_ERR_CHECKSUM:
		return "checksum mismatch";
	case REEL_ERR_CORRUPT:
		return "corrupt frame or record structure";
	}
	return strerror(err);
}
