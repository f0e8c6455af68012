// SPDX-License-Identifier: BSD-2-Clause
/*
 * DT_NEEDED lookup in ld.so's order (contract in ldpath.h).
 */
#include <errno.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ldpath.h"

#define CONF_DIRS_MAX 64

static char *conf_dirs[CONF_DIRS_MAX];
static int nconf_dirs;
static pthread_once_t conf_once = PTHREAD_ONCE_INIT;

static void conf_add(const char *d)
{
	for (int i = 0; i < nconf_dirs; i++)
		if (!strcmp(conf_dirs[i], d))
			return;
	if (nconf_dirs < CONF_DIRS_MAX && (conf_dirs[nconf_dirs] = strdup(d)))
		nconf_dirs++;
}

static void conf_read(const char *path, int depth)
{
	FILE *f = fopen(path, "re");
	char line[512];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, " \t");
		size_t l;

		p[strcspn(p, "#\n")] = 0;
		l = strlen(p);
		while (l && (p[l - 1] == ' ' || p[l - 1] == '\t'))
			p[--l] = 0;
		if (!l)
			continue;
		if (!strncmp(p, "include", 7) && (p[7] == ' ' || p[7] == '\t')) {
			glob_t g;

			p += 8 + strspn(p + 8, " \t");
			if (depth < 4 && !glob(p, 0, NULL, &g)) {
				for (size_t i = 0; i < g.gl_pathc; i++)
					conf_read(g.gl_pathv[i], depth + 1);
				globfree(&g);
			}
		} else if (*p == '/') {
			conf_add(p);
		}
	}
	fclose(f);
}

/* /etc/ld.so.conf's directories, then the defaults (x86-64). Read once: a
 * capture does not follow later ldconfig changes. */
static void conf_load(void)
{
	conf_read("/etc/ld.so.conf", 0);
	conf_add("/lib/x86_64-linux-gnu");
	conf_add("/usr/lib/x86_64-linux-gnu");
	conf_add("/lib64");
	conf_add("/usr/lib64");
	conf_add("/lib");
	conf_add("/usr/lib");
}

/* dir (one search path element) + "/" + name, with $ORIGIN/$LIB/$PLATFORM
 * expanded; 0 when the file exists. */
static int try_dir(const struct ldpath_ctx *c, const char *dir, size_t dlen, const char *name,
		   char *out, size_t outlen)
{
	char d[1024];
	size_t n = 0;

	for (size_t i = 0; i < dlen && n < sizeof(d) - 1;) {
		const char *var = NULL;
		size_t skip = 0;

		if (dir[i] == '$') {
			static const struct {
				const char *name, *braced;
			} vars[] = {{"$ORIGIN", "${ORIGIN}"},
				    {"$LIB", "${LIB}"},
				    {"$PLATFORM", "${PLATFORM}"}};
			for (size_t k = 0; k < 3 && !skip; k++) {
				const char *v[2] = {vars[k].braced, vars[k].name};

				for (int j = 0; j < 2 && !skip; j++)
					if (dlen - i >= strlen(v[j]) &&
					    !strncmp(dir + i, v[j], strlen(v[j]))) {
						skip = strlen(v[j]);
						var = k == 0   ? c->origin
						      : k == 1 ? "lib64"
							       : "x86_64";
					}
			}
		}
		if (skip) {
			int w = snprintf(d + n, sizeof(d) - n, "%s", var ? var : "");

			n += w > 0 ? (size_t)w : 0;
			if (n >= sizeof(d))
				return -ENOENT;
			i += skip;
		} else {
			d[n++] = dir[i++];
		}
	}
	d[n] = 0;
	if (!n || d[0] != '/')
		return -ENOENT; /* relative entries name the cwd: not ours to guess */
	if (snprintf(out, outlen, "%s%s/%s", c->root ? c->root : "", d, name) >= (int)outlen)
		return -ENOENT;
	return access(out, R_OK) ? -ENOENT : 0;
}

static int try_list(const struct ldpath_ctx *c, const char *list, const char *name, char *out,
		    size_t outlen)
{
	const char *p = list;

	while (p && *p) {
		size_t n = strcspn(p, ":;");

		if (n && !try_dir(c, p, n, name, out, outlen))
			return 0;
		p += n;
		if (*p)
			p++;
	}
	return -ENOENT;
}

int ldpath_find(const struct ldpath_ctx *c, const char *name, char *out, size_t outlen)
{
	if (strchr(name, '/')) {
		if (name[0] != '/' ||
		    snprintf(out, outlen, "%s%s", c->root ? c->root : "", name) >= (int)outlen)
			return -ENOENT;
		return access(out, R_OK) ? -ENOENT : 0;
	}
	if (c->runpath && c->is_rpath && !try_list(c, c->runpath, name, out, outlen))
		return 0;
	if (c->ld_library_path && !try_list(c, c->ld_library_path, name, out, outlen))
		return 0;
	if (c->runpath && !c->is_rpath && !try_list(c, c->runpath, name, out, outlen))
		return 0;
	pthread_once(&conf_once, conf_load);
	for (int i = 0; i < nconf_dirs; i++)
		if (!try_dir(c, conf_dirs[i], strlen(conf_dirs[i]), name, out, outlen))
			return 0;
	return -ENOENT;
}
