/* cgroup v2 "cpu" controller files, used when the whole system runs cgroup v2. */
#include <stdio.h>

#include "qos/kernel/cgroup.h"

int qos_cgroup_v2_set_quota(struct qos_cgroup *cg, const char *name, uint64_t period_us,
		uint64_t quota_us) {
	char p[4096], v[64];
	qos_cgroup_path(cg, true, name, "cpu.max", p, sizeof(p));
	/* Unlimited: the period is left alone, as it may be one the kernel
	 * refuses (over 1 s) and matters to no one without a quota. */
	if (quota_us == 0) {
		snprintf(v, sizeof(v), "max");
	} else {
		snprintf(v, sizeof(v), "%llu %llu", (unsigned long long)quota_us,
				(unsigned long long)period_us);
	}
	return qos_cgroup_write(cg, p, v);
}

int qos_cgroup_v2_set_nice_weight(struct qos_cgroup *cg, const char *name, int nice) {
	/* cpu.weight is 1..10000 with 100 for nice 0; scale from the kernel's load weights. */
	char p[4096], v[32];
	long w = ((long)qos_cgroup_nice_to_weight(nice) * 100 + 512) / 1024;
	if (w < 1) {
		w = 1;
	}
	if (w > 10000) {
		w = 10000;
	}
	qos_cgroup_path(cg, true, name, "cpu.weight", p, sizeof(p));
	snprintf(v, sizeof(v), "%ld", w);
	return qos_cgroup_write(cg, p, v);
}
