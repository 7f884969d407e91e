/* The CPU limit of a process's own cgroup (cglimit.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qos/cglimit.h"

#define DEFAULT_BASE "/sys/fs/cgroup"

static bool read_small(const char *path, char *buf, size_t len) {
	FILE *f = fopen(path, "re");
	if (!f) {
		return false;
	}
	size_t n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	return n > 0;
}

static bool read_proc_cgroup(pid_t pid, char *buf, size_t len) {
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	return read_small(path, buf, len);
}

/*
 * The path (relative to the hierarchy's root, starting with '/') of the line
 * of /proc/PID/cgroup whose controller list holds `controller` ("" for the
 * cgroup2 line "0::"), copied to out.  *with is set when the same line also
 * lists `with` (a co-mounted controller).
 */
static bool hierarchy_path(const char *text, const char *controller, const char *with,
		bool *with_too, char *out, size_t len) {
	const char *line = text;
	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);
		char copy[PATH_MAX + 128];
		if (n < sizeof(copy)) {
			memcpy(copy, line, n);
			copy[n] = '\0';
			char *c1 = strchr(copy, ':');
			char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
			if (c2 && c2[1] == '/') {
				*c1 = '\0';
				*c2 = '\0';
				const char *ctls = c1 + 1;
				bool match = false, other = false;
				if (!controller[0]) {
					match = strcmp(copy, "0") == 0 && !ctls[0];
				} else {
					char list[256];
					snprintf(list, sizeof(list), "%s", ctls);
					char *save = NULL;
					for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
						match = match || strcmp(t, controller) == 0;
						other = other || (with && strcmp(t, with) == 0);
					}
				}
				if (match && strlen(c2 + 1) < len) {
					strcpy(out, c2 + 1);
					if (with_too) {
						*with_too = other;
					}
					return true;
				}
			}
		}
		line = end ? end + 1 : NULL;
	}
	return false;
}

/* Whether group `rel` is `self` or one of its ancestors. */
static bool holds(const char *rel, const char *self) {
	if (!self) {
		return false;
	}
	size_t n = strlen(rel);
	return strncmp(self, rel, n) == 0 && (self[n] == '\0' || self[n] == '/');
}

/* Cuts the last component of a relative group path; false at the root. */
static bool parent_rel(char *rel) {
	char *slash = strrchr(rel, '/');
	if (!slash || slash == rel) {
		return false;
	}
	*slash = '\0';
	return true;
}

static bool read_u64(const char *path, int64_t *v) {
	char buf[64];
	if (!read_small(path, buf, sizeof(buf))) {
		return false;
	}
	char *end;
	errno = 0;
	long long x = strtoll(buf, &end, 10);
	if (errno || end == buf) {
		return false;
	}
	*v = x;
	return true;
}

/* v2 cpu.max: "max PERIOD" or "QUOTA PERIOD". */
static bool v2_limit(const char *dir, uint64_t *quota, uint64_t *period) {
	char path[PATH_MAX + 16], buf[64];
	snprintf(path, sizeof(path), "%s/cpu.max", dir);
	if (!read_small(path, buf, sizeof(buf))) {
		return false;
	}
	unsigned long long q, p;
	if (sscanf(buf, "%llu %llu", &q, &p) != 2 || p == 0) {
		return false; /* "max ..." or unreadable: no limit */
	}
	*quota = q;
	*period = p;
	return true;
}

static bool v1_limit(const char *dir, uint64_t *quota, uint64_t *period) {
	char path[PATH_MAX + 24];
	int64_t q, p;
	snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", dir);
	if (!read_u64(path, &q) || q <= 0) {
		return false;
	}
	snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", dir);
	if (!read_u64(path, &p) || p <= 0) {
		return false;
	}
	*quota = (uint64_t)q;
	*period = (uint64_t)p;
	return true;
}

bool qos_cglimit_from(const char *base, const char *proc_cgroup, const char *self_cgroup,
		struct qos_cglimit *out) {
	if (!base) {
		base = DEFAULT_BASE;
	}
	if (!proc_cgroup) {
		return false;
	}
	char probe[PATH_MAX];
	snprintf(probe, sizeof(probe), "%s/cgroup.controllers", base);
	bool pure_v2 = access(probe, F_OK) == 0;
	const char *ctl = pure_v2 ? "" : "cpu";
	char rel[PATH_MAX], self_rel[PATH_MAX];
	bool cpuacct_too = false, unused;
	if (!hierarchy_path(proc_cgroup, ctl, pure_v2 ? NULL : "cpuacct", &cpuacct_too, rel,
				sizeof(rel))) {
		return false;
	}
	bool have_self = self_cgroup &&
			hierarchy_path(self_cgroup, ctl, NULL, &unused, self_rel, sizeof(self_rel));
	do {
		if (strcmp(rel, "/") == 0 || holds(rel, have_self ? self_rel : NULL)) {
			continue;
		}
		char dir[PATH_MAX];
		int n = pure_v2 ? snprintf(dir, sizeof(dir), "%s%s", base, rel)
						: snprintf(dir, sizeof(dir), "%s/cpu%s", base, rel);
		if (n < 0 || (size_t)n >= sizeof(dir)) {
			return false;
		}
		uint64_t quota, period;
		if (!(pure_v2 ? v2_limit(dir, &quota, &period) : v1_limit(dir, &quota, &period))) {
			continue;
		}
		memcpy(out->dir, dir, sizeof(out->dir));
		out->quota_us = quota;
		out->period_us = period;
		if (pure_v2) {
			out->usage = QOS_CGLIMIT_USAGE_V2;
			memcpy(out->usage_dir, dir, sizeof(out->usage_dir));
		} else if (cpuacct_too) {
			/* Co-mounted: the same group keeps cpuacct.usage. */
			out->usage = QOS_CGLIMIT_USAGE_CPUACCT;
			memcpy(out->usage_dir, dir, sizeof(out->usage_dir));
		} else {
			/* A separate cpuacct hierarchy groups tasks its own way. */
			out->usage = QOS_CGLIMIT_USAGE_TASKS;
			memcpy(out->usage_dir, dir, sizeof(out->usage_dir));
		}
		return true;
	} while (parent_rel(rel));
	return false;
}

bool qos_cglimit_of(const char *base, pid_t pid, pid_t self, struct qos_cglimit *out) {
	char text[8192], self_text[8192];
	if (pid <= 0 || !read_proc_cgroup(pid, text, sizeof(text))) {
		return false;
	}
	bool have_self = self > 0 && read_proc_cgroup(self, self_text, sizeof(self_text));
	return qos_cglimit_from(base, text, have_self ? self_text : NULL, out);
}

/* Sum of the run times of the group's threads (v1 `tasks`). */
static bool tasks_usage_us(const char *dir, uint64_t *us) {
	char path[PATH_MAX + 8];
	snprintf(path, sizeof(path), "%s/tasks", dir);
	FILE *f = fopen(path, "re");
	if (!f) {
		return false;
	}
	uint64_t ns = 0;
	int tid;
	while (fscanf(f, "%d", &tid) == 1) {
		char stat[64], buf[128];
		snprintf(stat, sizeof(stat), "/proc/%d/schedstat", tid);
		unsigned long long run;
		if (read_small(stat, buf, sizeof(buf)) && sscanf(buf, "%llu", &run) == 1) {
			ns += run;
		}
	}
	fclose(f);
	*us = ns / 1000;
	return true;
}

bool qos_cglimit_usage_us(const struct qos_cglimit *limit, uint64_t *us) {
	char path[PATH_MAX + 16], buf[512];
	switch (limit->usage) {
	case QOS_CGLIMIT_USAGE_V2: {
		snprintf(path, sizeof(path), "%s/cpu.stat", limit->usage_dir);
		if (!read_small(path, buf, sizeof(buf))) {
			return false;
		}
		const char *p = strstr(buf, "usage_usec ");
		unsigned long long v;
		if (!p || sscanf(p + 11, "%llu", &v) != 1) {
			return false;
		}
		*us = v;
		return true;
	}
	case QOS_CGLIMIT_USAGE_CPUACCT: {
		int64_t ns;
		snprintf(path, sizeof(path), "%s/cpuacct.usage", limit->usage_dir);
		if (!read_u64(path, &ns) || ns < 0) {
			return false;
		}
		*us = (uint64_t)ns / 1000;
		return true;
	}
	case QOS_CGLIMIT_USAGE_TASKS:
		return tasks_usage_us(limit->usage_dir, us);
	}
	return false;
}
