/* cgroup v1 "cpu" controller files, used in the hybrid layout. */
#include <errno.h>
#include <stdio.h>

#include "qos/kernel/cgroup.h"

/* The kernel's sched_prio_to_weight table: the load weight of one task per nice level. */
static const int nice_weight[40] = {
	88761,
	71755,
	56483,
	46273,
	36291,
	29154,
	23254,
	18705,
	14949,
	11916,
	9548,
	7620,
	6100,
	4904,
	3906,
	3121,
	2501,
	1991,
	1586,
	1277,
	1024,
	820,
	655,
	526,
	423,
	335,
	272,
	215,
	172,
	137,
	110,
	87,
	70,
	56,
	45,
	36,
	29,
	23,
	18,
	15,
};

int qos_cgroup_nice_to_weight(int nice) {
	if (nice < -20) {
		nice = -20;
	}
	if (nice > 19) {
		nice = 19;
	}
	return nice_weight[nice + 20];
}

static int put(struct qos_cgroup *cg, const char *name, const char *file, long long v) {
	char p[4096], s[32];
	qos_cgroup_path(cg, true, name, file, p, sizeof(p));
	snprintf(s, sizeof(s), "%lld", v);
	return qos_cgroup_write(cg, p, s);
}

int qos_cgroup_v1_set_quota(struct qos_cgroup *cg, const char *name, uint64_t period_us,
		uint64_t quota_us) {
	if (quota_us == 0) {
		return put(cg, name, "cpu.cfs_quota_us", -1);
	}
	int r = put(cg, name, "cpu.cfs_period_us", (long long)period_us);
	if (r < 0) {
		return r;
	}
	return put(cg, name, "cpu.cfs_quota_us", (long long)quota_us);
}

int qos_cgroup_v1_set_nice_weight(struct qos_cgroup *cg, const char *name, int nice) {
	return put(cg, name, "cpu.shares", qos_cgroup_nice_to_weight(nice));
}

int qos_cgroup_v1_set_rt(struct qos_cgroup *cg, const char *name, uint64_t period_us,
		uint64_t runtime_us) {
	/*
	 * runtime must never exceed period, and each write is checked against the
	 * other value already in place, so the order depends on the direction.
	 */
	int r = put(cg, name, "cpu.rt_period_us", (long long)period_us);
	if (r == 0) {
		r = put(cg, name, "cpu.rt_runtime_us", (long long)runtime_us);
	}
	if (r == 0) {
		return 0;
	}
	r = put(cg, name, "cpu.rt_runtime_us", (long long)runtime_us);
	if (r == 0) {
		r = put(cg, name, "cpu.rt_period_us", (long long)period_us);
	}
	if (r == 0) {
		return 0;
	}
	/* Last resort when neither order is valid from the current values. */
	if (put(cg, name, "cpu.rt_runtime_us", 0) < 0) {
		return r;
	}
	r = put(cg, name, "cpu.rt_period_us", (long long)period_us);
	if (r == 0) {
		r = put(cg, name, "cpu.rt_runtime_us", (long long)runtime_us);
	}
	return r;
}
