/* qos/cglimit.h over fake cgroup trees (v1 hybrid and pure v2) and real tasks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "qos/cglimit.h"

static char base[512];

static void put(const char *rel, const char *text) {
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", base, rel);
	/* Make every directory on the way. */
	for (char *p = path + strlen(base) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void make_base(const char *name) {
	const char *tmp = getenv("QOSWAY_TEST_TMP");
	snprintf(base, sizeof(base), "%s/cglimit-%s-%d", tmp ? tmp : "/tmp", name, (int)getpid());
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0) {
		fprintf(stderr, "cannot clean %s\n", base);
	}
	mkdir(base, 0755);
}

static void remove_base(void) {
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0) {
		fprintf(stderr, "cannot remove %s\n", base);
	}
}

static void test_v1_hybrid(void) {
	make_base("v1");
	/* cpu and cpuacct apart, as on this machine kind. */
	put("cpu/cpu.cfs_quota_us", "-1\n");
	put("cpu/app.slice/cpu.cfs_quota_us", "20000\n");
	put("cpu/app.slice/cpu.cfs_period_us", "100000\n");
	put("cpu/app.slice/game.scope/cpu.cfs_quota_us", "-1\n");
	put("cpu/app.slice/game.scope/cpu.cfs_period_us", "100000\n");
	put("cpu/app.slice/game.scope/tasks", "1\n");
	put("cpu/session/cpu.cfs_quota_us", "50000\n");
	put("cpu/session/cpu.cfs_period_us", "100000\n");
	const char *game = "12:cpuacct:/\n11:cpu:/app.slice/game.scope\n0::/app.slice/game.scope\n";
	struct qos_cglimit l;
	/* The scope is unlimited, its slice is: the nearest limited group. */
	CHECK(qos_cglimit_from(base, game, NULL, &l));
	char want[1024];
	snprintf(want, sizeof(want), "%s/cpu/app.slice", base);
	CHECK_STR(l.dir, want);
	CHECK_EQ_U(l.quota_us, 20000);
	CHECK_EQ_U(l.period_us, 100000);
	CHECK(l.usage == QOS_CGLIMIT_USAGE_TASKS);
	/* The caller in that slice too: its own time is there already. */
	const char *self = "11:cpu:/app.slice/compositor\n";
	CHECK(!qos_cglimit_from(base, game, self, &l));
	/* A caller in a sibling group does not hide it. */
	const char *sibling = "11:cpu:/app.slicex\n";
	CHECK(qos_cglimit_from(base, game, sibling, &l));
	/* Co-mounted cpu,cpuacct: cpuacct.usage of the same group. */
	const char *co = "4:cpu,cpuacct:/session\n";
	CHECK(qos_cglimit_from(base, co, NULL, &l));
	CHECK(l.usage == QOS_CGLIMIT_USAGE_CPUACCT && l.quota_us == 50000);
	put("cpu/session/cpuacct.usage", "123456789\n");
	uint64_t us = 0;
	CHECK(qos_cglimit_usage_us(&l, &us) && us == 123456);
	/* The root itself never counts; no cpu line at all: none. */
	CHECK(!qos_cglimit_from(base, "11:cpu:/\n", NULL, &l));
	CHECK(!qos_cglimit_from(base, "3:memory:/x\n0::/x\n", NULL, &l));
	/* Damaged text and files. */
	CHECK(!qos_cglimit_from(base, "", NULL, &l));
	CHECK(!qos_cglimit_from(base, "garbage", NULL, &l));
	CHECK(!qos_cglimit_from(base, "11:cpu:relative\n", NULL, &l));
	CHECK(!qos_cglimit_from(base, NULL, NULL, &l));
	put("cpu/bad/cpu.cfs_quota_us", "lots\n");
	put("cpu/bad/cpu.cfs_period_us", "100000\n");
	CHECK(!qos_cglimit_from(base, "11:cpu:/bad\n", NULL, &l));
	/* Usage from the tasks' schedstat: this process is one of them. */
	char tasks[32];
	snprintf(tasks, sizeof(tasks), "%d\n999999999\n", (int)getpid());
	put("cpu/app.slice/tasks", tasks);
	CHECK(qos_cglimit_from(base, game, NULL, &l));
	volatile unsigned long spin = 0;
	for (unsigned long i = 0; i < 50000000ul; i++) {
		spin += i;
	}
	CHECK(qos_cglimit_usage_us(&l, &us) && us > 0);
	remove_base();
}

static void test_v2(void) {
	make_base("v2");
	put("cgroup.controllers", "cpu memory\n");
	put("user.slice/cpu.max", "max 100000\n");
	put("user.slice/app-game.scope/cpu.max", "25000 50000\n");
	put("user.slice/app-game.scope/cpu.stat",
			"usage_usec 4242\nuser_usec 4000\n"
			"system_usec 242\n");
	put("user.slice/app-idle.scope/cpu.max", "max 100000\n");
	struct qos_cglimit l;
	CHECK(qos_cglimit_from(base, "0::/user.slice/app-game.scope\n", NULL, &l));
	CHECK(l.usage == QOS_CGLIMIT_USAGE_V2 && l.quota_us == 25000 && l.period_us == 50000);
	uint64_t us = 0;
	CHECK(qos_cglimit_usage_us(&l, &us) && us == 4242);
	/* "max" all the way up: no limit. */
	CHECK(!qos_cglimit_from(base, "0::/user.slice/app-idle.scope\n", NULL, &l));
	/* The v1 lines of a hybrid system do not count on a pure v2 one. */
	CHECK(!qos_cglimit_from(base, "11:cpu:/user.slice/app-game.scope\n", NULL, &l));
	put("user.slice/app-game.scope/cpu.stat", "nothing useful\n");
	CHECK(qos_cglimit_from(base, "0::/user.slice/app-game.scope\n", NULL, &l));
	CHECK(!qos_cglimit_usage_us(&l, &us));
	remove_base();
}

static void test_real_processes(void) {
	struct qos_cglimit l;
	/* Whatever this machine's groups are, these must not fail wrongly. */
	CHECK(!qos_cglimit_of(NULL, -1, 0, &l));
	CHECK(!qos_cglimit_of(NULL, 0, 0, &l));
	CHECK(!qos_cglimit_of(NULL, 999999999, 0, &l));
	/* A process is never limited by a group it shares with itself. */
	CHECK(!qos_cglimit_of(NULL, getpid(), getpid(), &l));
}

int main(void) {
	test_v1_hybrid();
	test_v2();
	test_real_processes();
	return check_report("test_cglimit");
}
