/*
 * Overrun events of reserves whose limit the kernel holds by itself, and
 * billing, in a manager over a fake cgroup tree: the group's cpu.stat, which
 * the test writes, stands for what the members ran.  A CFS ceiling is looked
 * at lazily, at the 1 s pass, until it is watched
 * (qos_manager_watch_overruns); watched, it raises OVERRUN once in the
 * period its slice is used and RESTORED at the next, and freezes nothing
 * (the kernel holds it).  A bill past the slice raises OVERRUN at once and
 * freezes the group until the debt is paid, watched or not.  bill_pid
 * charges whole processes only.
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fake_tree.h"
#include "qos/policy/core.h"
#include "qos/reserve/reserve.h"
#include "qos/qos.h"

#define MAX_SEEN 64

struct seen {
	struct qos_manager *mgr;
	int n;
	enum qos_event_type type[MAX_SEEN];
	char reserve[MAX_SEEN][QOS_NAME_MAX + 1];
	uint64_t used[MAX_SEEN];
	int watch_refused; /* watch calls the callback made that were refused */
	int queried; /* reserve_info calls from the callback that worked */
};

static void record(void *data, const struct qos_event *ev) {
	struct seen *s = data;
	if (ev->type != QOS_EVENT_OVERRUN && ev->type != QOS_EVENT_RESTORED) {
		return;
	}
	if (s->n < MAX_SEEN) {
		s->type[s->n] = ev->type;
		snprintf(s->reserve[s->n], sizeof(s->reserve[0]), "%s", ev->reserve);
		s->used[s->n] = ev->used_us;
		s->n++;
	}
	struct qos_reserve_info info;
	if (qos_manager_reserve_info(s->mgr, ev->reserve, &info)) {
		s->queried++;
	}
	if (!qos_manager_watch_overruns(s->mgr, ev->reserve, false)) {
		s->watch_refused++;
	}
}

static int count(const struct seen *s, enum qos_event_type type, const char *reserve) {
	int n = 0;
	for (int i = 0; i < s->n; i++) {
		n += s->type[i] == type && strcmp(s->reserve[i], reserve) == 0;
	}
	return n;
}

/* The last event of this type for the reserve, or -1. */
static int last(const struct seen *s, enum qos_event_type type, const char *reserve) {
	for (int i = s->n - 1; i >= 0; i--) {
		if (s->type[i] == type && strcmp(s->reserve[i], reserve) == 0) {
			return i;
		}
	}
	return -1;
}

static char *group_file(struct qos_manager *mgr, const char *reserve, const char *file) {
	static char p[1024];
	struct qos_manager_info mi;
	struct qos_reserve_info ri;
	qos_manager_get_info(mgr, &mi);
	CHECK(qos_manager_reserve_at(mgr, 0, &ri));
	for (size_t i = 0; qos_manager_reserve_at(mgr, i, &ri); i++) {
		if (strcmp(ri.name, reserve) == 0) {
			break;
		}
	}
	snprintf(p, sizeof(p), "%s/%s/%s", mi.v2_root, ri.group, file);
	return p;
}

/* What the members ran, as the kernel's cpu.stat would say. */
static void set_usage(struct qos_manager *mgr, const char *reserve, uint64_t usec) {
	FILE *f = fopen(group_file(mgr, reserve, "cpu.stat"), "w");
	CHECK(f != NULL);
	if (f) {
		fprintf(f, "usage_usec %llu\nuser_usec 0\nsystem_usec 0\n", (unsigned long long)usec);
		fclose(f);
	}
}

static bool frozen(struct qos_manager *mgr, const char *reserve) {
	char buf[8] = "";
	FILE *f = fopen(group_file(mgr, reserve, "cgroup.freeze"), "r");
	if (f) {
		if (!fgets(buf, sizeof(buf), f)) {
			buf[0] = '\0';
		}
		fclose(f);
	}
	return buf[0] == '1';
}

/* Dispatches until an event of this type for the reserve arrives (at most 5 s). */
static bool wait_for(struct qos_manager *mgr, struct seen *s, enum qos_event_type type,
		const char *reserve) {
	int before = count(s, type, reserve);
	for (int i = 0; i < 1000; i++) {
		qos_manager_dispatch(mgr);
		if (count(s, type, reserve) > before) {
			return true;
		}
		usleep(5000);
	}
	return false;
}

static void *sleep_forever(void *arg) {
	(void)arg;
	for (;;) {
		pause();
	}
	return NULL;
}

/* A child with a second thread; its tid in *tid. */
static pid_t two_threads(pid_t *tid) {
	pid_t pid = fork();
	if (pid == 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, sleep_forever, NULL) != 0) {
			_exit(1);
		}
		sleep_forever(NULL);
	}
	*tid = 0;
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	for (int i = 0; i < 500 && !*tid; i++) {
		DIR *d = opendir(dir);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			pid_t t = atoi(e->d_name);
			if (t > 0 && t != pid) {
				*tid = t;
			}
		}
		if (d) {
			closedir(d);
		}
		if (!*tid) {
			usleep(2000);
		}
	}
	return pid;
}

static struct qos_params ceiling(void) {
	struct qos_params p;
	qos_params_init(&p);
	p.policy = QOS_POLICY_OTHER;
	p.fallback = QOS_POLICY_PAUSE;
	p.period_us = 1000000;
	p.slice_us = 200000;
	return p;
}

int main(void) {
	char base[] = "/tmp/qos-watch-XXXXXX";
	if (!fake_tree_create(base)) {
		return 1;
	}
	struct seen s = { 0 };
	struct qos_manager_config cfg;
	fake_tree_config(&cfg, base, "qosway-watch");
	cfg.event = record;
	cfg.event_data = &s;
	char err[256];
	pid_t tid = 0;
	pid_t a = fake_tree_sleeper(), b = fake_tree_sleeper(), c = two_threads(&tid);
	pid_t d = fake_tree_sleeper();
	struct qos_manager *mgr = qos_manager_create(&cfg, err, sizeof(err));
	CHECK(mgr != NULL);
	if (!mgr) {
		fprintf(stderr, "%s\n", err);
		goto out;
	}
	s.mgr = mgr;
	struct qos_params p = ceiling();
	struct qos_reserve_info info;
	CHECK(qos_reserve_set(mgr, "ceil", &p, true, false, err, sizeof(err)));
	CHECK(!qos_manager_watch_overruns(mgr, "no-such", true));
	CHECK(qos_manager_join(mgr, "ceil", a, 0, err, sizeof(err)));
	struct qos_reserve *r = qos_reserve_find(mgr, "ceil");

	/* Unwatched: looked at at the 1 s pass only, so nothing is seen now. */
	set_usage(mgr, "ceil", 250000);
	qos_manager_dispatch(mgr);
	CHECK(r && r->fb.next_check_us >= mgr->housekeeping_us);
	CHECK_EQ_U(count(&s, QOS_EVENT_OVERRUN, "ceil"), 0);

	/* Watched: the slice is used up in this period, seen at once, once. */
	CHECK(qos_manager_watch_overruns(mgr, "ceil", true));
	CHECK(qos_manager_watch_overruns(mgr, "ceil", true));
	/* In its fallback until the period ends, and looked at then. */
	CHECK(r && r->fb.next_check_us <= qos_police_period_end_us(&r->police));
	CHECK_EQ_U(count(&s, QOS_EVENT_OVERRUN, "ceil"), 1);
	int i = last(&s, QOS_EVENT_OVERRUN, "ceil");
	CHECK(i >= 0 && s.used[i] == 250000);
	/* The kernel holds the ceiling: nothing is frozen. */
	CHECK(!frozen(mgr, "ceil"));
	CHECK(qos_manager_reserve_info(mgr, "ceil", &info) && info.in_fallback);
	set_usage(mgr, "ceil", 260000);
	CHECK(wait_for(mgr, &s, QOS_EVENT_RESTORED, "ceil"));
	CHECK_EQ_U(count(&s, QOS_EVENT_OVERRUN, "ceil"), 1);
	i = last(&s, QOS_EVENT_RESTORED, "ceil");
	/* Unless the boundary came between the two writes: 10 ms more in that period. */
	CHECK(i >= 0 && (s.used[i] == 260000 || s.used[i] == 250000));
	CHECK(qos_manager_reserve_info(mgr, "ceil", &info) && !info.in_fallback && info.overruns == 1 &&
			info.last_billed_us == 0);
	/* The callback may query, but not change the watch. */
	CHECK(s.watch_refused == s.n && s.queried == s.n);

	/*
	 * Off: lazy again.  With 1 ms of the slice left, a reserve looked at as
	 * periods pass would be looked at again within 1 ms; a lazy one waits
	 * for the pass (unless that is as close).
	 */
	CHECK(qos_manager_watch_overruns(mgr, "ceil", true));
	set_usage(mgr, "ceil", 260000 + 199000);
	CHECK(qos_manager_reserve_info(mgr, "ceil", &info) && !info.in_fallback);
	CHECK(r && r->fb.next_check_us <= qos_sys_now_us() + 1000);
	CHECK(qos_manager_watch_overruns(mgr, "ceil", false));
	if (mgr->housekeeping_us > qos_sys_now_us() + 2000) {
		CHECK(r && r->fb.next_check_us == mgr->housekeeping_us);
	}

	/*
	 * A bill past the slice of a sleeping member's unwatched ceiling: the
	 * overrun at once, and a freeze, since the kernel knows nothing of
	 * the bill; the restore and the thaw once the debt is paid.
	 */
	CHECK(qos_reserve_set(mgr, "billed", &p, true, false, err, sizeof(err)));
	CHECK(!qos_manager_bill(mgr, "billed", 1000)); /* no members: no period runs */
	CHECK(qos_manager_join(mgr, "billed", b, 0, err, sizeof(err)));
	set_usage(mgr, "billed", 0);
	CHECK(qos_manager_bill(mgr, "billed", 0));
	CHECK_EQ_U(count(&s, QOS_EVENT_OVERRUN, "billed"), 0);
	CHECK(qos_manager_bill_pid(mgr, b, 120000));
	CHECK_EQ_U(count(&s, QOS_EVENT_OVERRUN, "billed"), 0);
	CHECK(qos_manager_bill(mgr, "billed", 130000));
	CHECK_EQ_U(count(&s, QOS_EVENT_OVERRUN, "billed"), 1);
	i = last(&s, QOS_EVENT_OVERRUN, "billed");
	CHECK(i >= 0 && s.used[i] == 250000);
	CHECK(frozen(mgr, "billed"));
	CHECK(qos_manager_reserve_info(mgr, "billed", &info) && info.billed_us == 250000 &&
			info.used_us == 250000 && info.in_fallback);
	CHECK(wait_for(mgr, &s, QOS_EVENT_RESTORED, "billed"));
	CHECK(!frozen(mgr, "billed"));
	CHECK(qos_manager_reserve_info(mgr, "billed", &info));
	CHECK_EQ_U(info.last_used_us, 250000);
	CHECK_EQ_U(info.last_billed_us, 250000);
	CHECK_EQ_U(info.billed_us, 0);
	CHECK_EQ_U(info.used_us, 50000); /* owed: 250 ms billed against a 200 ms slice */
	CHECK_EQ_U(count(&s, QOS_EVENT_OVERRUN, "billed"), 1);

	/*
	 * A process only a thread of which is a member is billed nothing
	 * through its pid: the work may have been for its other threads.  By
	 * name, the thread's reserve is billed; as a whole process, by pid.
	 */
	struct qos_params other;
	qos_params_init(&other);
	CHECK(qos_reserve_set(mgr, "threads", &other, true, false, err, sizeof(err)));
	CHECK(tid > 0 && qos_manager_join(mgr, "threads", c, tid, err, sizeof(err)));
	CHECK(!qos_manager_bill_pid(mgr, c, 1000));
	CHECK(qos_manager_bill(mgr, "threads", 1000));
	CHECK(qos_manager_join(mgr, "threads", c, 0, err, sizeof(err)));
	CHECK(qos_manager_bill_pid(mgr, c, 2000));
	CHECK(qos_manager_reserve_info(mgr, "threads", &info) && info.billed_us == 3000);
	CHECK(!qos_manager_bill_pid(mgr, d, 1000));

	/* A pause reserve (no limit) only reports a bill. */
	struct qos_params pause;
	qos_params_init(&pause);
	pause.policy = QOS_POLICY_PAUSE;
	CHECK(qos_reserve_set(mgr, "stop", &pause, true, false, err, sizeof(err)));
	CHECK(qos_manager_join(mgr, "stop", d, 0, err, sizeof(err)));
	CHECK(qos_manager_bill_pid(mgr, d, 5000000));
	CHECK(qos_manager_watch_overruns(mgr, "stop", true));
	CHECK(qos_manager_reserve_info(mgr, "stop", &info) && info.billed_us == 5000000 &&
			!info.in_fallback);
	CHECK_EQ_U(count(&s, QOS_EVENT_OVERRUN, "stop"), 0);

	qos_manager_destroy(mgr);
out:
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	kill(c, SIGKILL);
	kill(d, SIGKILL);
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);
	waitpid(c, NULL, 0);
	waitpid(d, NULL, 0);
	fake_tree_remove(base);
	return check_report("test_watch");
}
