// SPDX-License-Identifier: BSD-2-Clause
/* Record helpers: type names, PROC payloads, per-block record statistics. */
#include <errno.h>
#include <stdlib.h>
#include <strings.h>

#include "format_internal.h"

static const char *const type_names[REEL_REC_MAX_KNOWN + 1] = {
	[REEL_REC_SAMPLE] = "SAMPLE",	[REEL_REC_LOST] = "LOST",   [REEL_REC_DROP] = "DROP",
	[REEL_REC_PROC] = "PROC",	[REEL_REC_CLOCK] = "CLOCK", [REEL_REC_STATS] = "STATS",
	[REEL_REC_NOTE] = "NOTE",	[REEL_REC_FILL] = "FILL",   [REEL_REC_TLSLIB] = "TLSLIB",
	[REEL_REC_TLSPROC] = "TLSPROC", [REEL_REC_LEVEL] = "LEVEL",
};

const char *reel_rec_type_name(uint16_t type)
{
	if (type > REEL_REC_MAX_KNOWN)
		return NULL;
	return type_names[type];
}

int reel_rec_type_parse(const char *name)
{
	if (!name)
		return -EINVAL;
	for (int t = 1; t <= REEL_REC_MAX_KNOWN; t++)
		if (type_names[t] && !strcasecmp(name, type_names[t]))
			return t;
	return -EINVAL;
}

int reel_proc_encode(void *buf, size_t cap, const struct reel_proc *fixed, const char *exe,
		     uint32_t exe_len, const char *cmdline, uint32_t cmdline_len,
		     const char *cgroup, uint32_t cgroup_len)
{
	struct reel_proc p;
	uint8_t *o = buf;
	uint64_t need;

	if (!fixed || (!buf && cap))
		return -EINVAL;
	if (!exe)
		exe_len = 0;
	if (!cmdline)
		cmdline_len = 0;
	if (!cgroup)
		cgroup_len = 0;
	need = (uint64_t)sizeof(p) + exe_len + cmdline_len + cgroup_len;
	if (need > REEL_REC_MAX_PAYLOAD)
		return -E2BIG;
	if (need > cap)
		return -ENOSPC;
	p = *fixed;
	p.exe_len = exe_len;
	p.cmdline_len = cmdline_len;
	p.cgroup_len = cgroup_len;
	p.reserved = 0;
	memcpy(o, &p, sizeof(p));
	o += sizeof(p);
	if (exe_len)
		memcpy(o, exe, exe_len);
	o += exe_len;
	if (cmdline_len)
		memcpy(o, cmdline, cmdline_len);
	o += cmdline_len;
	if (cgroup_len)
		memcpy(o, cgroup, cgroup_len);
	return (int)need;
}

int reel_proc_decode(const void *data, uint32_t len, struct reel_proc *fixed, const char **exe,
		     const char **cmdline, const char **cgroup)
{
	const char *p = data;
	struct reel_proc f;
	uint64_t need;

	if (!data || len < sizeof(f))
		return -EBADMSG;
	memcpy(&f, p, sizeof(f));
	need = (uint64_t)sizeof(f) + f.exe_len + f.cmdline_len + f.cgroup_len;
	if (need > len)
		return -EBADMSG;
	if (fixed)
		*fixed = f;
	p += sizeof(f);
	if (exe)
		*exe = p;
	p += f.exe_len;
	if (cmdline)
		*cmdline = p;
	p += f.cmdline_len;
	if (cgroup)
		*cgroup = p;
	return 0;
}

void reel_blkstat_reset(struct reel_blkstat *s)
{
	if (s->cpu_counts && s->cpu_hi)
		memset(s->cpu_counts, 0, s->cpu_hi * sizeof(*s->cpu_counts));
	s->cpu_hi = 0;
	s->cpu_none = 0;
	s->cpu_other = 0;
	s->ts_min = UINT64_MAX;
	s->ts_max = 0;
	s->records = 0;
	memset(s->type_counts, 0, sizeof(s->type_counts));
}

static int grow_cpus(struct reel_blkstat *s, uint32_t cpu)
{
	uint32_t cap = s->cpu_cap ? s->cpu_cap : 64;
	uint32_t *n;

	while (cap <= cpu)
		cap *= 2;
	if (cap > REEL_MAX_INDEX_CPUS)
		cap = REEL_MAX_INDEX_CPUS;
	n = realloc(s->cpu_counts, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	memset(n + s->cpu_cap, 0, (cap - s->cpu_cap) * sizeof(*n));
	s->cpu_counts = n;
	s->cpu_cap = cap;
	return 0;
}

int reel_blkstat_add(struct reel_blkstat *s, uint16_t type, uint32_t cpu, uint64_t ts)
{
	s->records++;
	s->type_counts[type < REEL_INDEX_TYPES ? type : 0]++;
	if (ts < s->ts_min)
		s->ts_min = ts;
	if (ts > s->ts_max)
		s->ts_max = ts;
	if (cpu == REEL_CPU_NONE) {
		s->cpu_none++;
		return 0;
	}
	if (cpu >= REEL_MAX_INDEX_CPUS) {
		s->cpu_other++;
		return 0;
	}
	if (cpu >= s->cpu_cap && grow_cpus(s, cpu)) {
		s->cpu_other++;
		return -ENOMEM;
	}
	s->cpu_counts[cpu]++;
	if (cpu >= s->cpu_hi)
		s->cpu_hi = cpu + 1;
	return 0;
}

uint32_t reel_blkstat_ncpu(const struct reel_blkstat *s)
{
	uint32_t n = !!s->cpu_none + !!s->cpu_other;

	for (uint32_t i = 0; i < s->cpu_hi; i++)
		n += !!s->cpu_counts[i];
	return n;
}

size_t reel_blkstat_put_cpus(const struct reel_blkstat *s, uint8_t *out)
{
	size_t o = 0;

	for (uint32_t i = 0; i < s->cpu_hi; i++) {
		if (!s->cpu_counts[i])
			continue;
		wr32(out + o, i);
		wr32(out + o + 4, s->cpu_counts[i]);
		o += 8;
	}
	if (s->cpu_other) {
		wr32(out + o, REEL_CPU_OTHER);
		wr32(out + o + 4, s->cpu_other);
		o += 8;
	}
	if (s->cpu_none) {
		wr32(out + o, REEL_CPU_NONE);
		wr32(out + o + 4, s->cpu_none);
		o += 8;
	}
	return o;
}

void reel_blkstat_free(struct reel_blkstat *s)
{
	free(s->cpu_counts);
	s->cpu_counts = NULL;
	s->cpu_cap = 0;
	s->cpu_hi = 0;
}
