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
#include <unistd.h>

#include "check.h"
#include "qos/qos.h"
#include "qos/rules.h"

static inline void fake_tree_touch(const char *dir, const char *file, const char *text) {
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
static inline bool fake_tree_create(char *base) {
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
		struct FTW *ftw) {
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static inline void fake_tree_remove(const char *base) {
	nftw(base, fake_tree_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A manager's config over the fake tree at base: control files faked, no guardian. */
static inline void fake_tree_config(struct qos_manager_config *cfg, const char *base,
		const char *root_name) {
	qos_manager_config_init(cfg);
	cfg->cgroup_base = base;
	cfg->root_name = root_name;
	cfg->fake_files = true;
	cfg->guardian = false;
}

/* The events of one type a manager sent (its config's event_data). */
struct fake_tree_events {
	enum qos_event_type type;
	int count;
	char last[512]; /* "reserve: message" of the last one */
};

static inline void fake_tree_count_event(void *data, const struct qos_event *ev) {
	struct fake_tree_events *e = data;
	if (ev->type != e->type || !ev->message) {
		return;
	}
	e->count++;
	snprintf(e->last, sizeof(e->last), "%s: %s", ev->reserve ? ev->reserve : "", ev->message);
}

/* A child that sleeps until killed, to be a member. */
static inline pid_t fake_tree_sleeper(void) {
	pid_t pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

/* Rules parsed from text, which must be valid. */
static inline struct qos_rules *fake_tree_rules(const char *text) {
	struct qos_rules *r = qos_rules_create();
	CHECK(r && qos_rules_parse_string(r, "t", text, NULL, NULL) == 0);
	return r;
}

#endif
