/*
 * A fake cgroup2 tree for unit tests that run a whole manager
 * (cfg.fake_files): a temporary directory with the root's control files.
 */
#ifndef QOS_TEST_FAKE_TREE_H
#define QOS_TEST_FAKE_TREE_H

#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

static inline void fake_tree_touch(const char *dir, const char *file, const char *text)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	FILE *f = fopen(p, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* Makes base (a mkdtemp template) a fake tree with the cpu controller. */
static inline bool fake_tree_create(char *base)
{
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return false;
	}
	fake_tree_touch(base, "cgroup.controllers", "cpu");
	fake_tree_touch(base, "cgroup.subtree_control", "cpu");
	fake_tree_touch(base, "cgroup.procs", "");
	return true;
}

static inline int fake_tree_remove_entry(const char *path, const struct stat *sb, int flag,
	struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static inline void fake_tree_remove(const char *base)
{
	nftw(base, fake_tree_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
