/*
 * A reload (qos_manager_set_rules) in a manager over a fake cgroup tree: a
 * reserve still as the old rules defined it takes the new definition; one
 * changed at run time keeps that change; and the embedder's may_redefine
 * veto keeps a reserve with members as it was, with an error event.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fake_tree.h"
#include "qos/qos.h"
#include "qos/rules.h"

/* Refuses anything that pauses members, as the compositor does for its session. */
static bool no_pausing(void *data, const char *reserve, const struct qos_params *p, char *err,
		size_t err_len) {
	(void)data;
	if (p->policy != QOS_POLICY_PAUSE && p->fallback != QOS_POLICY_PAUSE) {
		return true;
	}
	snprintf(err, err_len, "'%s' holds a process that must not be paused", reserve);
	return false;
}

static int nice_of(struct qos_manager *mgr, const char *name) {
	struct qos_reserve_info info;
	return qos_manager_reserve_info(mgr, name, &info) ? info.params.nice : 99;
}

int main(void) {
	struct fake_tree_events errors = { .type = QOS_EVENT_ERROR };
	char base[] = "/tmp/qos-redefine-XXXXXX";
	if (!fake_tree_create(base)) {
		return 1;
	}
	struct qos_manager_config cfg;
	fake_tree_config(&cfg, base, "qosway-redefine");
	cfg.event = fake_tree_count_event;
	cfg.event_data = &errors;
	cfg.may_redefine = no_pausing;
	char err[256];
	pid_t a = fake_tree_sleeper(), b = fake_tree_sleeper();
	struct qos_manager *mgr = qos_manager_create(&cfg, err, sizeof(err));
	CHECK(mgr != NULL);
	if (!mgr) {
		fprintf(stderr, "%s\n", err);
		goto out;
	}
	CHECK(qos_manager_set_rules(mgr,
			fake_tree_rules(
					"reserve bg policy=other nice=3\n"
					"reserve kept policy=other nice=2\nreserve held policy=other nice=1\n")));
	CHECK(qos_manager_join(mgr, "bg", a, 0, err, sizeof(err)));
	CHECK(qos_manager_join(mgr, "held", b, 0, err, sizeof(err)));
	struct qos_params p;
	qos_params_init(&p);
	p.nice = 5;
	/* made at run time with other parameters than the file's */
	CHECK(qos_reserve_set(mgr, "kept", &p, true, false, err, sizeof(err)));
	CHECK(nice_of(mgr, "bg") == 3 && nice_of(mgr, "kept") == 5 && nice_of(mgr, "held") == 1);

	CHECK(qos_manager_set_rules(mgr,
			fake_tree_rules("reserve bg policy=other nice=8\n"
							"reserve kept policy=other nice=9\nreserve held policy=pause\n")));
	/* as qosrc made it: the edit; changed at run time: kept */
	CHECK(nice_of(mgr, "bg") == 8);
	CHECK(getpriority(PRIO_PROCESS, (id_t)a) == 8);
	CHECK(nice_of(mgr, "kept") == 5);
	/* vetoed: as it was, and said why */
	struct qos_reserve_info info;
	CHECK(qos_manager_reserve_info(mgr, "held", &info) && info.params.policy == QOS_POLICY_OTHER &&
			info.params.nice == 1);
	CHECK(errors.count == 1 && strstr(errors.last, "must not be paused") != NULL);
	if (errors.count != 1) {
		fprintf(stderr, "%d errors, last: %s\n", errors.count, errors.last);
	}

	/* The period a vblank reserve took from its output is no user's change. */
	CHECK(qos_manager_set_rules(mgr,
			fake_tree_rules(
					"reserve frame policy=other period=vblank slice=4ms fallback=idle nice=1\n")));
	CHECK(qos_manager_join(mgr, "frame", a, 0, err, sizeof(err)));
	CHECK(qos_manager_vblank(mgr, "frame", 0, 8333, err, sizeof(err)));
	CHECK(qos_manager_reserve_info(mgr, "frame", &info) && info.params.period_us == 8333 &&
			info.params.slice_us == 1999);
	CHECK(qos_manager_set_rules(mgr,
			fake_tree_rules(
					"reserve frame policy=other period=vblank slice=4ms fallback=idle nice=6\n")));
	CHECK(nice_of(mgr, "frame") == 6);
	qos_manager_destroy(mgr);
out:
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);
	fake_tree_remove(base);
	return check_report("test_redefine");
}
