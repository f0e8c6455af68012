// SPDX-License-Identifier: BSD-2-Clause
/*
 * Corpus replay driver: runs LLVMFuzzerTestOneInput over every file named on
 * the command line (directories are walked one level), so CI replays each
 * fuzz corpus without libFuzzer. Exit status 0 only if every input ran.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "%s: cannot size: %s\n", path, strerror(errno));
		fclose(f);
		return -1;
	}
	/* Exact-size heap copy so ASan catches any read past the input. */
	buf = malloc(n ? (size_t)n : 1);
	if (!buf || (n && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
		fprintf(stderr, "%s: read failed\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int runs = 0, err = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		DIR *d;
		struct dirent *de;

		if (stat(argv[i], &st)) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			return 2;
		}
		if (!S_ISDIR(st.st_mode)) {
			err |= run_file(argv[i]);
			runs++;
			continue;
		}
		d = opendir(argv[i]);
		if (!d) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			return 2;
		}
		while ((de = readdir(d))) {
			char path[4096];

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			err |= run_file(path);
			runs++;
		}
		closedir(d);
	}
	printf("%d inputs replayed\n", runs);
	if (!runs) {
		fprintf(stderr, "no corpus inputs found\n");
		return 2;
	}
	return err ? 1 : 0;
}
