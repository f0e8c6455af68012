// SPDX-License-Identifier: BSD-2-Clause
/*
 * TLSLIB and TLSPROC record payloads (FORMAT.md section 4, types 14 and 15):
 * the TLS report reelcap writes, encoded and checked here so that every
 * reader parses them the same way.
 */
#include <errno.h>
#include <string.h>

#include "reel_format.h"

static uint32_t slen(const char *s)
{
	return s ? (uint32_t)strnlen(s, 4096) : 0;
}

int reel_tlslib_encode(void *buf, size_t cap, const struct reel_tlslib *fixed, const char *path,
		       const char *version, const char *note)
{
	struct reel_tlslib t = *fixed;
	uint8_t *o = buf;
	uint64_t need;

	t.path_len = slen(path);
	t.version_len = slen(version);
	t.note_len = slen(note);
	t.reserved = 0;
	need = (uint64_t)sizeof(t) + t.path_len + t.version_len + t.note_len;
	if (need > cap)
		return -ENOSPC;
	memcpy(o, &t, sizeof(t));
	o += sizeof(t);
	if (t.path_len)
		memcpy(o, path, t.path_len);
	o += t.path_len;
	if (t.version_len)
		memcpy(o, version, t.version_len);
	o += t.version_len;
	if (t.note_len)
		memcpy(o, note, t.note_len);
	return (int)need;
}

int reel_tlslib_decode(const void *data, uint32_t len, struct reel_tlslib *fixed, const char **path,
		       const char **version, const char **note)
{
	const char *p = data;
	struct reel_tlslib t;

	if (!data || len < sizeof(t))
		return -EBADMSG;
	memcpy(&t, p, sizeof(t));
	if ((uint64_t)sizeof(t) + t.path_len + t.version_len + t.note_len > len)
		return -EBADMSG;
	if (fixed)
		*fixed = t;
	p += sizeof(t);
	if (path)
		*path = p;
	p += t.path_len;
	if (version)
		*version = p;
	p += t.version_len;
	if (note)
		*note = p;
	return 0;
}

int reel_tlsproc_encode(void *buf, size_t cap, const struct reel_tlsproc *fixed,
			const struct reel_tlsref *refs, uint32_t n, const char *exe)
{
	struct reel_tlsproc t = *fixed;
	uint64_t rl = (uint64_t)n * sizeof(*refs), need;

	t.nrefs = n;
	t.exe_len = slen(exe);
	need = sizeof(t) + rl + t.exe_len;
	if (need > cap)
		return -ENOSPC;
	memcpy(buf, &t, sizeof(t));
	if (n)
		memcpy((uint8_t *)buf + sizeof(t), refs, rl);
	if (t.exe_len)
		memcpy((uint8_t *)buf + sizeof(t) + rl, exe, t.exe_len);
	return (int)need;
}

int reel_tlsproc_decode(const void *data, uint32_t len, struct reel_tlsproc *fixed,
			const void **refs, const char **exe)
{
	struct reel_tlsproc t;

	if (!data || len < sizeof(t))
		return -EBADMSG;
	memcpy(&t, data, sizeof(t));
	if ((uint64_t)sizeof(t) + (uint64_t)t.nrefs * sizeof(struct reel_tlsref) + t.exe_len > len)
		return -EBADMSG;
	if (fixed)
		*fixed = t;
	if (refs)
		*refs = (const uint8_t *)data + sizeof(t);
	if (exe)
		*exe = (const char *)data + sizeof(t) + t.nrefs * sizeof(struct reel_tlsref);
	return 0;
}

const char *reel_tls_kind_name(uint32_t kind)
{
	switch (kind) {
	case REEL_TLS_OPENSSL:
		return "OpenSSL";
	case REEL_TLS_BORINGSSL:
		return "BoringSSL";
	case REEL_TLS_GNUTLS:
		return "GnuTLS";
	case REEL_TLS_GO:
		return "Go crypto/tls";
	default:
		return "?";
	}
}

const char *reel_tls_status_name(uint32_t status)
{
	switch (status) {
	case REEL_TLSS_ATTACHED:
		return "attached";
	case REEL_TLSS_DISABLED:
		return "disabled";
	case REEL_TLSS_FAILED:
		return "failed";
	case REEL_TLSS_UNSUPPORTED:
		return "unsupported";
	default:
		return "?";
	}
}
