/*
 * A reload (qos_manager_set_rules) after the starvation watchdog demoted
 * qosrc's real-time reserves, in a manager over a fake cgroup tree with an
 * external canary left silent (no real starvation).  The demotion is the
 * watchdog's, not a user's: a reserve demoted as qosrc made it takes the
 * file's definition at a reload after the cool-down (real-time again, an
 * edit made meanwhile included), while a reload during the cool-down leaves
 * it demoted and says so.  A user's change after the demotion is kept by a
 * reload, as any run-time change is.  Root (or an RLIMIT_RTPRIO) is needed to
 * make the members SCHED_FIFO; without it the test skips.
 */
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fake_tree.h"
#include "qos/qos.h"
#include "qos/rules.h"

static uint64_t now_ms(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Runs the manager's loop for ms, feeding the canary every 100 ms if asked. */
static void run(struct qos_manager *mgr, unsigned ms, bool feed) {
	uint64_t end = now_ms() + ms;
	for (uint64_t t = now_ms(); t < end; t = now_ms()) {
		if (feed) {
			qos_manager_watchdog_feed(mgr);
		}
		uint64_t left = end - t;
		struct pollfd p = { .fd = qos_manager_get_fd(mgr), .events = POLLIN };
		if (poll(&p, 1, (int)(left < 100 ? left : 100)) > 0) {
			qos_manager_dispatch(mgr);
		}
	}
}

static bool cooling_down(struct qos_manager *mgr) {
	struct qos_manager_info mi;
	qos_manager_get_info(mgr, &mi);
	return mi.watchdog_cooldown;
}

static struct qos_params params_of(struct qos_manager *mgr, const char *name) {
	struct qos_reserve_info info;
	if (!qos_manager_reserve_info(mgr, name, &info)) {
		info.params.policy = QOS_POLICY_PAUSE; /* matches nothing the test wants */
	}
	return info.params;
}

/* The task's class, without SCHED_RESET_ON_FORK (the manager sets it with fifo). */
static int policy_of(pid_t pid) {
	int pol = sched_getscheduler(pid);
	return pol < 0 ? pol : pol & ~SCHED_RESET_ON_FORK;
}

static bool rt_allowed(void) {
	if (geteuid() == 0) {
		return true;
	}
	struct rlimit rl;
	return getrlimit(RLIMIT_RTPRIO, &rl) == 0 && rl.rlim_cur >= 10;
}

#define GAME "reserve game policy=fifo priority=10 period=100ms cpu=20% fallback=other\n"
#define MINE "reserve mine policy=fifo priority=5 period=100ms cpu=10% fallback=other\n"
#define GAME11 "reserve game policy=fifo priority=11 period=100ms cpu=20% fallback=other\n"

int main(void) {
	struct fake_tree_events wd = { .type = QOS_EVENT_WATCHDOG };
	if (!rt_allowed()) {
		printf("test_watchdog_reload: skipped: SCHED_FIFO needs root or RLIMIT_RTPRIO\n");
		return 0;
	}
	char base[] = "/tmp/qos-wdreload-XXXXXX";
	if (!fake_tree_create(base)) {
		return 1;
	}
	struct qos_manager_config cfg;
	fake_tree_config(&cfg, base, "qosway-wdreload");
	cfg.event = fake_tree_count_event;
	cfg.event_data = &wd;
	cfg.watchdog_external_canary = true;
	cfg.watchdog_timeout_us = 1000000;
	cfg.watchdog_cooldown_us = 2500000;
	char err[256];
	pid_t a = fake_tree_sleeper(), b = fake_tree_sleeper();
	struct qos_manager *mgr = qos_manager_create(&cfg, err, sizeof(err));
	CHECK(mgr != NULL);
	if (!mgr) {
		fprintf(stderr, "%s\n", err);
		goto out;
	}
	qos_manager_watchdog_feed(mgr);
	CHECK(qos_manager_set_rules(mgr, fake_tree_rules(GAME MINE)));
	CHECK(qos_manager_join(mgr, "game", a, 0, err, sizeof(err)));
	CHECK(qos_manager_join(mgr, "mine", b, 0, err, sizeof(err)));
	CHECK(params_of(mgr, "game").policy == QOS_POLICY_FIFO);
	CHECK(policy_of(a) == SCHED_FIFO);

	/* The canary falls silent: the alarm demotes both. */
	uint64_t give_up = now_ms() + 4000;
	while (!cooling_down(mgr) && now_ms() < give_up) {
		run(mgr, 100, false);
	}
	CHECK(cooling_down(mgr));
	CHECK(params_of(mgr, "game").policy == QOS_POLICY_OTHER);
	CHECK(params_of(mgr, "mine").policy == QOS_POLICY_OTHER);
	CHECK(policy_of(a) == SCHED_OTHER && policy_of(b) == SCHED_OTHER);
	CHECK(wd.count == 2);

	/* A user's own change after the demotion: a run-time change like any. */
	struct qos_params p;
	qos_params_init(&p);
	p.nice = 4;
	CHECK(qos_reserve_set(mgr, "mine", &p, false, true, err, sizeof(err)));

	/* A reload during the cool-down, game edited: nothing real-time yet. */
	int before = wd.count;
	CHECK(qos_manager_set_rules(mgr, fake_tree_rules(GAME11 MINE)));
	CHECK(cooling_down(mgr));
	CHECK(params_of(mgr, "game").policy == QOS_POLICY_OTHER);
	CHECK(policy_of(a) == SCHED_OTHER);
	CHECK(wd.count == before + 1 && strstr(wd.last, "game: ") == wd.last &&
			strstr(wd.last, "cool-down") != NULL);
	if (wd.count != before + 1) {
		fprintf(stderr, "%d watchdog events, last: %s\n", wd.count, wd.last);
	}

	/* After the cool-down, the same file again: game takes the edit, real-time. */
	give_up = now_ms() + 5000;
	while (cooling_down(mgr) && now_ms() < give_up) {
		run(mgr, 100, true);
	}
	CHECK(!cooling_down(mgr));
	CHECK(qos_manager_set_rules(mgr, fake_tree_rules(GAME11 MINE)));
	struct qos_params g = params_of(mgr, "game");
	CHECK(g.policy == QOS_POLICY_FIFO && g.priority == 11 && g.fallback == QOS_POLICY_OTHER);
	struct sched_param sp = { 0 };
	CHECK(policy_of(a) == SCHED_FIFO && sched_getparam(a, &sp) == 0 && sp.sched_priority == 11);
	/* mine keeps the user's change; no alarm since */
	struct qos_params m = params_of(mgr, "mine");
	CHECK(m.policy == QOS_POLICY_OTHER && m.nice == 4);
	CHECK(policy_of(b) == SCHED_OTHER && getpriority(PRIO_PROCESS, (id_t)b) == 4);
	struct qos_manager_info mi;
	qos_manager_get_info(mgr, &mi);
	CHECK_EQ_U(mi.watchdog_alarms, 1);

	/* Restored, game is as qosrc made it again: a later edit applies as usual. */
	CHECK(qos_manager_set_rules(mgr, fake_tree_rules(GAME MINE)));
	CHECK(params_of(mgr, "game").priority == 10);
	qos_manager_destroy(mgr);
out:
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);
	fake_tree_remove(base);
	return check_report("test_watchdog_reload");
}
