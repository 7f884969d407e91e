/*
 * qos/cglimit.h - the CPU limit of a process's own cgroup, and that group's
 * CPU time, for charging work done on the group's behalf that the kernel
 * cannot see (the compositor's rendering for a client in no reserve).
 *
 * The limit is the nearest group, from the process's own up to (not
 * including) the hierarchy's root, with a CPU bandwidth limit: cgroup v2
 * cpu.max, or v1 cpu.cfs_quota_us / cpu.cfs_period_us.  A group the caller
 * itself is in is skipped: the kernel already counts the caller's time
 * there, so charging it again would count it twice.
 */
#ifndef QOS_CGLIMIT_H
#define QOS_CGLIMIT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum qos_cglimit_usage {
	QOS_CGLIMIT_USAGE_V2, /* cpu.stat usage_usec of the group */
	QOS_CGLIMIT_USAGE_CPUACCT, /* v1 cpuacct.usage of the same group path */
	QOS_CGLIMIT_USAGE_TASKS, /* v1 without cpuacct there: its tasks' schedstat */
};

struct qos_cglimit {
	char dir[PATH_MAX]; /* the limited group's directory */
	char usage_dir[PATH_MAX]; /* where its CPU time is read (usage) */
	enum qos_cglimit_usage usage;
	uint64_t quota_us; /* CPU time allowed ... */
	uint64_t period_us; /* ... in each period of this length */
};

/*
 * The limit of pid's cgroup under base (NULL: /sys/fs/cgroup), skipping
 * groups process `self` is in (0: none).  False when no group is limited
 * or the files cannot be read.
 */
bool qos_cglimit_of(const char *base, pid_t pid, pid_t self, struct qos_cglimit *out);

/*
 * The same from the text of /proc/PID/cgroup for the process and for self
 * (NULL: none), for callers (and tests) that have it at hand.
 */
bool qos_cglimit_from(const char *base, const char *proc_cgroup, const char *self_cgroup,
		struct qos_cglimit *out);

/* The group's CPU time so far, in microseconds; false if unreadable. */
bool qos_cglimit_usage_us(const struct qos_cglimit *limit, uint64_t *us);

#endif
